//! The worker threads of one command, shared by reading, replaying,
//! scoring and writing.

use crate::error::{Error, Result};
use std::sync::Arc;

/// A rayon pool of `jobs` threads (0: one per core).
fn pool(jobs: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| Error::Usage(format!("cannot start {jobs} worker threads: {e}")))
}

/// `--jobs` resolved once per command: one pool, lent to every stage that
/// runs in parallel (reading, replay, scoring, writing the outputs), so no
/// stage builds its own. Cloning shares the pool.
#[derive(Debug, Clone)]
pub struct Workers(Option<Arc<rayon::ThreadPool>>);

impl Workers {
    /// A pool of `jobs` threads (0: one per core).
    pub fn new(jobs: usize) -> Result<Workers> {
        Ok(Workers(Some(Arc::new(pool(jobs)?))))
    }

    /// The threads the caller already runs on (rayon's global pool, or the
    /// pool it is inside): no pool is built. For library callers and tests.
    pub fn current() -> Workers {
        Workers(None)
    }

    /// Run `op` on these threads: parallel iterators inside it use them.
    pub fn install<R: Send>(&self, op: impl FnOnce() -> R + Send) -> R {
        match &self.0 {
            Some(pool) => pool.install(op),
            None => op(),
        }
    }

    /// How many threads `install` runs on.
    pub fn threads(&self) -> usize {
        match &self.0 {
            Some(pool) => pool.current_num_threads(),
            None => rayon::current_num_threads(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pool_is_shared_by_every_clone_and_runs_what_it_installs() {
        let w = Workers::new(2).unwrap();
        let c = w.clone();
        assert_eq!(c.threads(), 2);
        assert_eq!(c.install(rayon::current_num_threads), 2);
        assert!(Arc::ptr_eq(w.0.as_ref().unwrap(), c.0.as_ref().unwrap()));
        let inner = w.install(|| Workers::current().threads());
        assert_eq!(inner, 2, "current() inside a pool is that pool");
    }
}
