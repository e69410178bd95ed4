//! A tiny pool for splitting one kernel call across cores with low latency.
//!
//! Rayon workers go to sleep between the short products of a training step,
//! and waking them costs about as much as the work they would do. These helper
//! threads instead spin for a short while after each job (as BLAS libraries'
//! threads do), so a product that follows within that window starts on all
//! cores at once. After `IDLE_SPIN` without work a helper parks.
//!
//! `run(parts, f)` calls `f(0)` on the calling thread and `f(1..parts)` on
//! helpers, and returns when all have finished.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

const IDLE_SPIN: Duration = Duration::from_micros(300);

/// One call's work, shared with the helpers for the duration of `run`.
struct Job {
    task: *const (dyn Fn(usize) + Sync),
    remaining: AtomicUsize,
    /// What a helper's part panicked (or unwound) with, re-raised on the caller.
    panicked: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

struct Helper {
    /// The job to run and the part number, published by `run`; null when idle.
    slot: AtomicPtr<(*const Job, usize)>,
    thread: Thread,
    placement: placement::Placement,
}

struct Pool {
    helpers: Vec<Arc<Helper>>,
    /// The process that started the helpers: a forked child has none of them.
    pid: u32,
    /// One `run` at a time: concurrent callers would otherwise race for helpers.
    busy: Mutex<()>,
}

fn helper_loop(me: Arc<Helper>) {
    let mut idle_since = Instant::now();
    loop {
        let published = me.slot.swap(std::ptr::null_mut(), Ordering::Acquire);
        if published.is_null() {
            if idle_since.elapsed() < IDLE_SPIN {
                // Yield now and then, so a busy machine loses little to the spinning.
                thread::yield_now();
            } else {
                thread::park_timeout(Duration::from_millis(50));
            }
            continue;
        }
        // SAFETY: `run` keeps the job alive until `remaining` reaches 0, which happens only
        // after this part's decrement; the boxed pair was published for exactly one taker.
        unsafe { run_published(published) };
        idle_since = Instant::now();
    }
}

/// Runs a published (job, part) pair and marks it done.
///
/// # Safety
/// `published` must come from `run`'s `Box::into_raw` and be taken exactly once, while
/// its job is alive.
unsafe fn run_published(published: *mut (*const Job, usize)) {
    // SAFETY: the caller guarantees `published` came from `Box::into_raw` and is taken once.
    let (job, part) = unsafe { *Box::from_raw(published) };
    // SAFETY: the caller guarantees the job is alive; `run` waits for `remaining` to reach 0.
    let job = unsafe { &*job };
    // SAFETY: `task` lives in `run`'s frame, which outlives the job (see `WaitForHelpers`).
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { (*job.task)(part) }));
    if let Err(payload) = outcome {
        job.panicked.lock().get_or_insert(payload);
    }
    job.remaining.fetch_sub(1, Ordering::Release);
}

fn pool() -> Option<&'static Pool> {
    static POOL: OnceLock<Option<Pool>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let helpers = thread::available_parallelism().map_or(1, |n| n.get()).saturating_sub(1);
        let mut list = Vec::new();
        for i in 0..helpers {
            let (tx, rx) = std::sync::mpsc::channel();
            let spawned = thread::Builder::new().name(format!("rustgrad-spin-{i}")).spawn(move || {
                let me = Arc::new(Helper {
                    slot: AtomicPtr::new(std::ptr::null_mut()),
                    thread: thread::current(),
                    placement: placement::Placement::of_current_thread(),
                });
                if tx.send(me.clone()).is_ok() {
                    helper_loop(me);
                }
            });
            match spawned.ok().and_then(|_| rx.recv().ok()) {
                Some(helper) => list.push(helper),
                None => break,
            }
        }
        (!list.is_empty()).then_some(Pool { helpers: list, pid: std::process::id(), busy: Mutex::new(()) })
    });
    pool.as_ref().filter(|p| p.pid == std::process::id())
}

/// Runs `task(0)..task(parts - 1)`: parts 1..=h on the h helpers, the rest on this
/// thread. Runs every part here when there are no helpers (or another run holds them).
///
/// Helpers see `task` through a lifetime-erased pointer, so this function must not
/// return, or unwind, before every helper is done with it: `WaitForHelpers` waits on
/// every exit path, including a panic in the caller's own parts.
pub fn run(parts: usize, task: &(dyn Fn(usize) + Sync)) {
    let serial = || (0..parts).for_each(task);
    if parts <= 1 {
        return serial();
    }
    let Some(pool) = pool() else { return serial() };
    let Some(_guard) = pool.busy.try_lock() else { return serial() };
    let helped = (parts - 1).min(pool.helpers.len());
    // SAFETY: erasing the lifetime is sound because `wait` below (a drop guard, so it runs
    // on return and on unwind alike) keeps this frame, the job and `task` alive until
    // `remaining` reaches 0, i.e. until no helper can touch them any more.
    let task_static = unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), &'static (dyn Fn(usize) + Sync)>(task) };
    let job = Job { task: task_static, remaining: AtomicUsize::new(helped), panicked: Mutex::new(None) };
    let wait = WaitForHelpers { job: &job, helpers: &pool.helpers[..helped] };
    let caller_cpu = placement::current_cpu();
    for (i, helper) in wait.helpers.iter().enumerate() {
        helper.placement.avoid(caller_cpu);
        let pair = Box::into_raw(Box::new((&job as *const Job, i + 1)));
        helper.slot.store(pair, Ordering::Release);
        helper.thread.unpark();
    }
    task(0);
    (helped + 1..parts).for_each(task);
    drop(wait);
    // A helper's panic (or allocation failure) goes on unwinding on the caller, where
    // `storage::catch_kernel_unwind` or the binding's guard handles it.
    let helper_panic = job.panicked.lock().take();
    if let Some(payload) = helper_panic {
        std::panic::resume_unwind(payload);
    }
}

/// Waits, when dropped, until every helper has finished its part of `job`.
struct WaitForHelpers<'a> {
    job: &'a Job,
    helpers: &'a [Arc<Helper>],
}

impl Drop for WaitForHelpers<'_> {
    fn drop(&mut self) {
        // A helper that has not picked its part up yet (descheduled on a busy machine) gives it
        // back; while unwinding the part is not run, only counted as done.
        let unwinding = thread::panicking();
        for helper in self.helpers {
            let unclaimed = helper.slot.swap(std::ptr::null_mut(), Ordering::Acquire);
            if unclaimed.is_null() {
                continue;
            }
            if unwinding {
                // SAFETY: taken back from the slot, so no helper has it; the box came from `run`.
                drop(unsafe { Box::from_raw(unclaimed) });
                self.job.remaining.fetch_sub(1, Ordering::Release);
            } else {
                // SAFETY: taken back from the slot, so no helper has it; the job is alive.
                unsafe { run_published(unclaimed) };
            }
        }
        while self.job.remaining.load(Ordering::Acquire) != 0 {
            thread::yield_now();
        }
    }
}

/// Keeps helpers off the CPU the caller runs on.
///
/// The caller computes part 0 itself, so its CPU stays busy. Linux tends to wake
/// a helper on the waker's CPU, where it then waits behind the caller until the
/// load balancer moves it, which on an otherwise idle (virtual) machine took tens
/// of milliseconds: measured here, 512³ products ran on one core for the first 30
/// calls. Excluding the caller's CPU from the helper's affinity mask (re-done only
/// when the caller has moved) made a woken helper start within 25 µs every time.
#[cfg(target_os = "linux")]
mod placement {
    use std::sync::atomic::{AtomicI32, Ordering};

    pub struct Placement {
        tid: libc::pid_t,
        /// The CPUs the helper may use (the process's mask when it started).
        allowed: libc::cpu_set_t,
        /// The CPU currently excluded from its mask, or -1.
        avoiding: AtomicI32,
    }

    impl Placement {
        pub fn of_current_thread() -> Placement {
            // SAFETY: plain syscalls on this thread, writing only into the zeroed set.
            unsafe {
                let mut allowed: libc::cpu_set_t = std::mem::zeroed();
                if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed) != 0 {
                    allowed = std::mem::zeroed();
                }
                // The raw syscall rather than gettid(), which needs glibc 2.30 (wheels target older ones).
                let tid = libc::syscall(libc::SYS_gettid) as libc::pid_t;
                Placement { tid, allowed, avoiding: AtomicI32::new(-1) }
            }
        }

        pub fn avoid(&self, cpu: Option<usize>) {
            let Some(cpu) = cpu.filter(|&c| c < libc::CPU_SETSIZE as usize) else { return };
            if self.avoiding.swap(cpu as i32, Ordering::Relaxed) == cpu as i32 {
                return;
            }
            let mut mask = self.allowed;
            // SAFETY: cpu < CPU_SETSIZE; the syscall only reads the mask. If it fails
            // (or the mask would be empty) the helper keeps its current placement.
            unsafe {
                libc::CPU_CLR(cpu, &mut mask);
                if libc::CPU_COUNT(&mask) > 0 {
                    libc::sched_setaffinity(self.tid, std::mem::size_of::<libc::cpu_set_t>(), &mask);
                }
            }
        }
    }

    pub fn current_cpu() -> Option<usize> {
        // SAFETY: no arguments; returns -1 on failure.
        usize::try_from(unsafe { libc::sched_getcpu() }).ok()
    }
}

#[cfg(not(target_os = "linux"))]
mod placement {
    pub struct Placement;

    impl Placement {
        pub fn of_current_thread() -> Placement {
            Placement
        }

        pub fn avoid(&self, _cpu: Option<usize>) {}
    }

    pub fn current_cpu() -> Option<usize> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_runs_exactly_once() {
        for parts in 1..4 {
            let hits: Vec<AtomicUsize> = (0..parts).map(|_| AtomicUsize::new(0)).collect();
            for _ in 0..100 {
                run(parts, &|p| {
                    hits[p].fetch_add(1, Ordering::Relaxed);
                });
            }
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 100));
        }
    }

    /// The caller's own part panics while a helper is still working on its part: `run` must
    /// not unwind past the helper's use of the job (and of data borrowed from this frame).
    #[test]
    fn a_panic_in_the_callers_part_waits_for_slow_helpers() {
        use std::time::Duration;
        if pool().is_none() {
            return; // one CPU: no helpers, nothing to wait for
        }
        let finished = AtomicUsize::new(0);
        for _ in 0..5 {
            let data = vec![1u64; 1024];
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run(2, &|part| {
                    if part == 0 {
                        panic!("the caller's share fails");
                    }
                    std::thread::sleep(Duration::from_millis(30));
                    // Reads the caller's frame after the caller has panicked.
                    assert_eq!(data.iter().sum::<u64>(), 1024);
                    finished.fetch_add(1, Ordering::SeqCst);
                });
            }));
            assert!(outcome.is_err());
            drop(data);
        }
        // Each helper part either ran to completion before `run` returned, or was never started.
        let done = finished.load(Ordering::SeqCst);
        assert!(done <= 5);
        // Without the wait, `finished` would still be changing here; it must be stable now.
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(finished.load(Ordering::SeqCst), done);
    }
}
