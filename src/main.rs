//! The `looptune` binary: everything is in the library's `cli` module.

// Parsing allocates a string per record and frees it after the replay:
// mimalloc takes about a fifth off the CPU time of a one-core replay
// against the system allocator (benches/README.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (v2 and v3; the
/// crate names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() {
    // Keep freed pages instead of handing them back to the OS after 10 ms:
    // files are parsed and dropped one after another, and each file's pages
    // came back zeroed by the kernel again (4,000+ page faults, 7% of a
    // one-core replay). Peak memory is what it was; it is just not returned
    // before exit.
    // SAFETY: sets a plain integer option; mimalloc reads it at each purge.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    std::process::exit(looptune::cli::main());
}
