//! The `looptune` binary: everything is in the library's `cli` module.

fn main() {
    std::process::exit(looptune::cli::main());
}
