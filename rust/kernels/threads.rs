//! The thread pool the kernels run on. Its size can change at run time
//! (`set_num_threads`, which also sizes the spin pool: see `spin_pool/`), and it
//! honours RAYON_NUM_THREADS at start-up.

use crate::error::{Error, Result};
use parking_lot::RwLock;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The count `set_num_threads` last set; 0 until it is called.
static CHOSEN: AtomicUsize = AtomicUsize::new(0);

/// The number of kernel threads: the last `set_num_threads`, else RAYON_NUM_THREADS, else
/// the number of CPUs. A forked child keeps its parent's choice.
pub fn wanted_threads() -> usize {
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    match CHOSEN.load(Ordering::Relaxed) {
        0 => *DEFAULT.get_or_init(default_threads),
        chosen => chosen,
    }
}

fn pool_slot() -> &'static RwLock<Option<Arc<ThreadPool>>> {
    static SLOT: OnceLock<RwLock<Option<Arc<ThreadPool>>>> = OnceLock::new();
    SLOT.get_or_init(|| RwLock::new(None))
}

fn default_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn build_pool(threads: usize) -> Option<Arc<ThreadPool>> {
    ThreadPoolBuilder::new().num_threads(threads).thread_name(|i| format!("rustgrad-{i}")).build().ok().map(Arc::new)
}

/// The current pool, built on first use. `None` only if the OS refused to start threads,
/// in which case kernels run on the calling thread.
pub fn pool() -> Option<Arc<ThreadPool>> {
    if let Some(pool) = pool_slot().read().as_ref() {
        return Some(pool.clone());
    }
    let mut slot = pool_slot().write();
    if slot.is_none() {
        *slot = build_pool(wanted_threads());
    }
    slot.clone()
}

pub fn num_threads() -> usize {
    pool().map_or(1, |p| p.current_num_threads())
}

/// The most kernel threads `set_num_threads` accepts: far more than any machine
/// this runs on has cores, and few enough that starting them takes milliseconds.
pub const MAX_THREADS: usize = 1024;

/// Replaces the pool with one of `threads` threads, 1 ≤ threads ≤ `MAX_THREADS`, and
/// starts or stops spin helpers to leave `threads - 1` of them.
pub fn set_num_threads(requested: i64) -> Result<()> {
    let threads = usize::try_from(requested).unwrap_or(0);
    if !(1..=MAX_THREADS).contains(&threads) {
        return Err(Error::InvalidArgument(format!(
            "set_num_threads: the number of threads must be between 1 and {MAX_THREADS}, got {requested}"
        )));
    }
    CHOSEN.store(threads, Ordering::Relaxed);
    let new_pool = build_pool(threads);
    *pool_slot().write() = new_pool;
    super::spin_pool::fit_to_thread_count();
    Ok(())
}

/// Forgets the pools without joining their threads. A forked child calls this: the
/// parent's worker threads do not exist in the child, so the child builds its own
/// (of the parent's size).
pub fn forget_pool_after_fork() {
    super::spin_pool::forget_helpers_after_fork();
    if let Some(slot) = pool_slot().try_write() {
        if let Some(pool) = slot.as_ref() {
            std::mem::forget(pool.clone());
        }
        let mut slot = slot;
        *slot = None;
    }
}

/// Runs `f` inside the pool (so rayon calls in it use the pool's threads).
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match pool() {
        Some(pool) => {
            let _running = PoolJob::start();
            pool.install(f)
        }
        None => f(),
    }
}

/// Jobs started on the pool so far, and how many run now.
static POOL_JOBS_STARTED: AtomicU64 = AtomicU64::new(0);
static POOL_JOBS_RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Counts one job on the pool as running until dropped (also on unwind).
struct PoolJob;

impl PoolJob {
    fn start() -> PoolJob {
        POOL_JOBS_STARTED.fetch_add(1, Ordering::Relaxed);
        POOL_JOBS_RUNNING.fetch_add(1, Ordering::Relaxed);
        PoolJob
    }
}

impl Drop for PoolJob {
    fn drop(&mut self) {
        POOL_JOBS_RUNNING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// None while a job runs on the pool, else the number of jobs started so far: two equal marks
/// mean that none of our pool's work ran between them (a spin helper that lost its core in
/// between lost it to another program's thread, see `spin_pool::spin_time`).
pub fn pool_mark() -> Option<u64> {
    if POOL_JOBS_RUNNING.load(Ordering::Relaxed) > 0 {
        return None;
    }
    Some(POOL_JOBS_STARTED.load(Ordering::Relaxed))
}
