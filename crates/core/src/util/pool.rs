//! The worker thread pool shared by reading and replaying.

use crate::error::{Error, Result};

/// A rayon pool of `jobs` threads (0: one per core).
pub fn pool(jobs: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| Error::Usage(format!("cannot start {jobs} worker threads: {e}")))
}
