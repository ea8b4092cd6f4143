//! Limits that keep hostile or mistaken input from exhausting the machine,
//! each checked before work starts and each naming the flag that raises it.

use crate::error::{Error, Result};

/// Default `--max-configs`: configurations a sweep grid may expand to.
pub const DEFAULT_MAX_CONFIGS: usize = 100_000;

/// What one configuration of a sweep costs in memory, about: its expanded
/// parameters, ids and labels, its share of the plan, its scores and its
/// rows in every output (a sweep of 200,000 configurations over one session
/// peaked at 3.0 GB, 15 KiB each).
pub const BYTES_PER_CONFIG: u64 = 16 << 10;

/// Memory assumed where the machine's cannot be read.
const ASSUMED_MEMORY: u64 = 16 << 30;

/// The memory this process may use: the machine's (`MemTotal`), or its
/// control group's limit when lower (Linux); 16 GiB elsewhere.
pub fn memory_bytes() -> u64 {
    let mut best: Option<u64> = None;
    if let Ok(text) = std::fs::read_to_string("/proc/meminfo") {
        best = text
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb.saturating_mul(1024));
    }
    for limit in [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ] {
        if let Some(b) = std::fs::read_to_string(limit)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
        {
            best = Some(best.map_or(b, |m| m.min(b)));
        }
    }
    best.filter(|&b| b > 0).unwrap_or(ASSUMED_MEMORY)
}

/// The ceiling of `--max-configs` on a machine with `memory` bytes: as many
/// configurations as fit in it at [`BYTES_PER_CONFIG`] each (1,572,864 on a
/// 24 GiB machine), and never below the default.
pub fn max_configs_ceiling(memory: u64) -> usize {
    let fit = (memory / BYTES_PER_CONFIG).min(usize::MAX as u64) as usize;
    fit.max(DEFAULT_MAX_CONFIGS)
}

/// Check `--max-configs` (0 = the default) against the ceiling this
/// machine's memory allows; the cap to use.
pub fn check_max_configs(requested: usize) -> Result<usize> {
    if requested == 0 {
        return Ok(DEFAULT_MAX_CONFIGS);
    }
    let memory = memory_bytes();
    let ceiling = max_configs_ceiling(memory);
    if requested > ceiling {
        return Err(Error::Usage(format!(
            "--max-configs {requested}: more than the {ceiling} configurations this machine's memory holds ({} MiB at about {} KiB per configuration); use --max-configs {ceiling} or fewer, or split the grid",
            memory >> 20,
            BYTES_PER_CONFIG >> 10
        )));
    }
    Ok(requested)
}

/// Bytes a run may hold at once for decompressed input, shared by all its
/// workers: each file's buffer is taken from it as it grows and given back
/// when the file is parsed. A file that would pass it is an error naming the
/// file, where the kernel would otherwise kill the whole run.
pub struct MemoryBudget {
    limit: u64,
    used: std::sync::atomic::AtomicU64,
}

impl MemoryBudget {
    /// A budget of `limit` bytes.
    pub const fn new(limit: u64) -> MemoryBudget {
        MemoryBudget {
            limit,
            used: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Its size in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes held now.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn used(&self) -> u64 {
        self.used.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A holder of nothing yet, which grows with [`Held::grow_to`].
    pub fn hold(&'static self) -> Held {
        Held {
            budget: self,
            bytes: 0,
        }
    }
}

/// A share of a [`MemoryBudget`], given back on drop.
pub struct Held {
    budget: &'static MemoryBudget,
    bytes: u64,
}

impl Held {
    /// Hold `bytes` in all (more than now); false, holding what it held,
    /// when the budget has not that much left.
    pub fn grow_to(&mut self, bytes: u64) -> bool {
        use std::sync::atomic::Ordering;
        let more = bytes.saturating_sub(self.bytes);
        let b = self.budget;
        let taken = b
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(more).filter(|&t| t <= b.limit)
            })
            .is_ok();
        if taken {
            self.bytes += more;
        }
        taken
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget
            .used
            .fetch_sub(self.bytes, std::sync::atomic::Ordering::AcqRel);
    }
}

/// The run's budget for decompressed input: half the memory
/// ([`memory_bytes`]). Debug builds read `LOOPTUNE_TEST_MEMORY_BUDGET`
/// (bytes) instead, so the tests can reach it with small files.
pub fn run_budget() -> &'static MemoryBudget {
    static B: std::sync::OnceLock<MemoryBudget> = std::sync::OnceLock::new();
    B.get_or_init(|| {
        #[cfg(debug_assertions)]
        if let Some(b) = std::env::var("LOOPTUNE_TEST_MEMORY_BUDGET")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            return MemoryBudget::new(b);
        }
        MemoryBudget::new(memory_bytes() / 2)
    })
}

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
    fn max_configs_has_a_ceiling_from_memory() {
        assert_eq!(max_configs_ceiling(24 << 30), 1_572_864);
        // Never below the default, however small the machine.
        assert_eq!(max_configs_ceiling(64 << 20), DEFAULT_MAX_CONFIGS);
        assert_eq!(check_max_configs(0).unwrap(), DEFAULT_MAX_CONFIGS);
        assert_eq!(check_max_configs(5).unwrap(), 5);
        let ceiling = max_configs_ceiling(memory_bytes());
        assert_eq!(check_max_configs(ceiling).unwrap(), ceiling);
        let e = check_max_configs(ceiling + 1).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("--max-configs {}:", ceiling + 1)),
            "{e}"
        );
        assert!(e.contains("memory"), "{e}");
    }
}
