//! Limits that keep hostile or mistaken input from exhausting the machine,
//! each checked before work starts and each naming the flag that raises it.

use crate::error::{Error, Result};

/// Default `--max-configs`: configurations a sweep grid may expand to.
pub const DEFAULT_MAX_CONFIGS: usize = 100_000;

/// `--jobs` may ask for at most this many threads per core: more only adds
/// scheduling and memory (`-j 5000` on 16 sessions took 35 s).
pub const JOBS_PER_CORE: usize = 8;

/// Floor of the `--jobs` cap, so small machines still accept common values.
pub const MIN_JOBS_CAP: usize = 16;

/// The largest `--jobs` accepted on this machine.
pub fn max_jobs() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores * JOBS_PER_CORE).max(MIN_JOBS_CAP)
}

/// Check `--jobs` (0 = all cores) against [`max_jobs`]; exit 2 when over.
pub fn check_jobs(jobs: usize) -> Result<usize> {
    let max = max_jobs();
    if jobs > max {
        return Err(Error::Usage(format!(
            "--jobs {jobs}: more than {max} worker threads ({JOBS_PER_CORE} per core, at least {MIN_JOBS_CAP}) would only slow the run; use --jobs {max} or fewer (0 = all cores)"
        )));
    }
    Ok(jobs)
}

/// Threads for `items` work items: never more threads than items (0 keeps
/// rayon's default of all cores, itself capped by the items).
pub fn threads_for(jobs: usize, items: usize) -> usize {
    let items = items.max(1);
    if jobs == 0 {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        cores.min(items)
    } else {
        jobs.min(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_over_the_cap_is_an_error_naming_the_flag() {
        let e = check_jobs(5000).unwrap_err().to_string();
        assert!(e.starts_with("--jobs 5000:"), "{e}");
        assert_eq!(check_jobs(4).unwrap(), 4);
        assert_eq!(check_jobs(0).unwrap(), 0);
        assert_eq!(check_jobs(max_jobs()).unwrap(), max_jobs());
    }

    #[test]
    fn threads_never_exceed_work_items() {
        assert_eq!(threads_for(64, 3), 3);
        assert_eq!(threads_for(2, 100), 2);
        assert_eq!(threads_for(8, 0), 1);
        assert!(threads_for(0, 1) == 1);
    }
}
