//! The `looptune` binary: everything is in the library's `cli` module.

// Parsing allocates a string per record and frees it after the replay:
// mimalloc takes about a fifth off the CPU time of a one-core replay
// against the system allocator (benches/README.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (v2 and v3; the
/// crate names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// No transparent huge pages: mimalloc advises them for its whole 1 GiB
/// arena, so each first touch of a 2 MB stretch zeroed all of it (a 1,000 x
/// 10,000 sweep zeroed about 1.3 GB for a 400 MB peak; a quarter of its
/// samples). With 4 KB pages: sys time 1.2 -> 0.5 s, wall -7%, peaks 400 ->
/// 377 MB and 41 -> 31 MB on one core (benches/README.md). Run as a
/// constructor, before the runtime's first allocation reserves and touches
/// that arena: from `main` it came too late for the first 2 MB (0.5 ms of
/// every run's start).
#[cfg(target_os = "linux")]
extern "C" fn no_huge_pages() {
    // SAFETY: prctl with integer arguments only; applies to later faults in
    // existing mappings too.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
}

#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static NO_HUGE_PAGES: extern "C" fn() = no_huge_pages;

fn main() {
    std::process::exit(looptune::cli::main_with(|work| {
        let delay = match work {
            // Keep freed pages instead of handing them back to the OS after
            // 10 ms: files are parsed and dropped one after another, and each
            // file's pages came back zeroed by the kernel again (4,000+ page
            // faults, 7% of a one-core replay).
            looptune::cli::Workload::Streaming => -1,
            // Hand them back at once: kept, the pages a sweep's threads freed
            // while reading (long-lived results among short-lived parses)
            // were a third of its peak (1,000 configurations over 20,000
            // real-shaped sessions: 87 -> 53 MB), for about 30% more time
            // (benches/README.md).
            looptune::cli::Workload::Holding => 0,
        };
        // `MIMALLOC_PURGE_DELAY` in the environment (milliseconds; -1:
        // never) is the user's choice, speed or memory: mimalloc read it.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            // SAFETY: sets a plain integer option; mimalloc reads it at each purge.
            unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, delay) };
        }
    }));
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// The test harness never calls `main`: only the constructor can have
    /// turned huge pages off.
    #[test]
    fn huge_pages_are_off_before_main() {
        // SAFETY: prctl with integer arguments only.
        let off = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        assert_eq!(off, 1, "PR_SET_THP_DISABLE not set before main");
    }
}
