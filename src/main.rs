//! The `looptune` binary: everything is in the library's `cli` module.

// Parsing allocates a string per record and frees it after the replay:
// mimalloc takes about a fifth off the CPU time of a one-core replay
// against the system allocator (benches/README.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(looptune::cli::main());
}
