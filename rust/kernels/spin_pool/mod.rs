//! A tiny pool for splitting one kernel call across cores with low latency.
//!
//! Rayon workers go to sleep between the short products of a training step,
//! and waking them costs about as much as the work they would do. These helper
//! threads instead spin for a short while after each job (as BLAS libraries'
//! threads do), so a product that follows within that window starts on all
//! cores at once. The window is a setting (`spin_us`: `RUSTGRAD_SPIN_US` at
//! start-up, `set_spin_us` later; 0 parks right after each job). After it a helper
//! parks with no timeout, so an idle process has no thread that wakes up. A spinning
//! helper yields between looks at its slot; one that loses its core that way to another
//! program's thread twice in a short time parks right after each job for a while instead
//! (`spin_time`).
//!
//! There are `threads::wanted_threads() - 1` helpers: `set_num_threads(n)` starts
//! or stops helpers to match (a stopped helper exits), and a forked child starts
//! its own (the parent's do not exist in it).
//!
//! `run(parts, f)` calls `f(0)` on the calling thread and `f(1..parts)` on
//! helpers, and returns when all have finished.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

mod placement;
mod spin_time;

use spin_time::SpinWindow;
pub use spin_time::{set_spin_us, spin_env_problem, spin_range_error, spin_us, DEFAULT_SPIN_US, MAX_SPIN_US};

/// How many helpers are parked (or about to park): 0 means every helper is spinning, ready
/// to start a part within a microsecond or so, where a parked one takes 10–25 µs to wake.
static PARKED_HELPERS: AtomicUsize = AtomicUsize::new(0);

/// Whether no helper is parked, so that splitting a short job costs no wake-up. Callers use
/// it only to choose between equal results: it may be out of date by the time they run.
pub fn helpers_awake() -> bool {
    PARKED_HELPERS.load(Ordering::Relaxed) == 0
}

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
    /// Set (with the slot empty) when the pool shrinks: the helper then exits.
    retired: AtomicBool,
    thread: Thread,
    placement: placement::Placement,
    /// How often the helper came back from `park` (the tests check that idle helpers stay parked).
    #[cfg(test)]
    wakeups: AtomicUsize,
}

struct Pool {
    helpers: Vec<Arc<Helper>>,
    /// The helpers' threads, in the same order, joined when the pool shrinks.
    handles: Vec<JoinHandle<()>>,
    /// The process that started the helpers: a forked child has none of them.
    pid: u32,
    /// The size at which starting a thread failed (usize::MAX: none), so `run` does not retry on every call.
    failed_at: usize,
}

/// The helpers. Its lock also makes one `run` at a time: concurrent callers would otherwise race
/// for helpers (a caller that finds it locked runs its parts alone).
static POOL: Mutex<Pool> = Mutex::new(Pool::new());

impl Pool {
    const fn new() -> Pool {
        Pool { helpers: Vec::new(), handles: Vec::new(), pid: 0, failed_at: usize::MAX }
    }

    /// Starts or stops helpers until there are `wanted`; in a forked child, first forgets the parent's.
    fn fit(&mut self, wanted: usize) {
        let pid = std::process::id();
        if self.pid != pid {
            self.forget_helpers();
            self.pid = pid;
        }
        while self.helpers.len() > wanted {
            self.retire_last();
        }
        if self.helpers.len() < wanted && self.failed_at != wanted {
            while self.helpers.len() < wanted {
                if !self.start_helper() {
                    self.failed_at = wanted;
                    break;
                }
            }
        }
    }

    /// Drops the helpers without touching them: in a forked child their threads do not exist, so
    /// they can be neither woken nor joined (nor their handles detached).
    fn forget_helpers(&mut self) {
        std::mem::forget(std::mem::take(&mut self.helpers));
        std::mem::forget(std::mem::take(&mut self.handles));
        self.failed_at = usize::MAX;
        // The parent's parked helpers are not parked here: they do not exist.
        PARKED_HELPERS.store(0, Ordering::Relaxed);
    }

    fn retire_last(&mut self) {
        let (Some(helper), Some(handle)) = (self.helpers.pop(), self.handles.pop()) else { return };
        // The slot is empty: outside `run` (whose lock the caller holds) no job is published.
        helper.retired.store(true, Ordering::Release);
        helper.thread.unpark();
        // A helper catches its parts' panics, so it only ever returns.
        let _ = handle.join();
    }

    fn start_helper(&mut self) -> bool {
        let (tx, rx) = std::sync::mpsc::channel();
        let name = format!("rustgrad-spin-{}", self.helpers.len());
        let spawned = thread::Builder::new().name(name).spawn(move || {
            let me = Arc::new(Helper {
                slot: AtomicPtr::new(std::ptr::null_mut()),
                retired: AtomicBool::new(false),
                thread: thread::current(),
                placement: placement::Placement::of_current_thread(),
                #[cfg(test)]
                wakeups: AtomicUsize::new(0),
            });
            if tx.send(me.clone()).is_ok() {
                helper_loop(&me);
            }
        });
        let Ok(handle) = spawned else { return false };
        match rx.recv() {
            Ok(helper) => {
                self.helpers.push(helper);
                self.handles.push(handle);
                true
            }
            Err(_) => false,
        }
    }
}

fn helper_loop(me: &Helper) {
    let mut window = SpinWindow::new(Instant::now());
    loop {
        let published = me.slot.swap(std::ptr::null_mut(), Ordering::Acquire);
        if !published.is_null() {
            // SAFETY: `run` keeps the job alive until `remaining` reaches 0, which happens only
            // after this part's decrement; the boxed pair was published for exactly one taker.
            unsafe { run_published(published) };
            window.job_done(Instant::now());
            continue;
        }
        if me.retired.load(Ordering::Acquire) {
            return;
        }
        if window.keep_spinning(Instant::now(), super::threads::pool_mark(), Duration::from_micros(spin_us())) {
            // Yield between looks, so a busy machine loses little to the spinning; a yield
            // that costs the core for long ends it (`SpinWindow`).
            thread::yield_now();
        } else {
            // No timeout and no polling: `run` stores the job in the slot (and `retire_last` sets
            // `retired`) before it unparks, and an unpark that comes after the checks above leaves
            // a token that makes this `park` return at once, so no wake-up is lost.
            PARKED_HELPERS.fetch_add(1, Ordering::Relaxed);
            thread::park();
            PARKED_HELPERS.fetch_sub(1, Ordering::Relaxed);
            #[cfg(test)]
            me.wakeups.fetch_add(1, Ordering::Relaxed);
            window.woke(Instant::now());
        }
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

fn wanted_helpers() -> usize {
    super::threads::wanted_threads().saturating_sub(1)
}

/// Starts or stops helpers to match the kernel thread count (`set_num_threads` calls this),
/// waiting for a `run` in progress to finish first. Stopped helpers have exited on return.
pub fn fit_to_thread_count() {
    POOL.lock().fit(wanted_helpers());
}

/// The number of helper threads (the tests check that it follows `set_num_threads`).
pub fn helper_count() -> usize {
    POOL.lock().helpers.len()
}

/// Forgets the parent's helpers in a forked child (their threads do not exist here); the
/// next `run` starts new ones.
pub fn forget_helpers_after_fork() {
    if POOL.is_locked() {
        // A forked child has one thread, this one, which holds no guard of `POOL`; so the lock
        // is held by a parent thread that does not exist here and will never release it.
        // `forget_helpers` below only moves the vectors out and forgets them, whatever their state.
        // SAFETY: no guard of `POOL` exists in this process (see above), so nobody else unlocks it.
        unsafe { POOL.force_unlock() };
    }
    let mut pool = POOL.lock();
    pool.forget_helpers();
    pool.pid = 0;
}

/// Runs `task(0)..task(parts - 1)`: parts 1..=h on the h helpers, the rest on this
/// thread. Runs every part here when there are no helpers (or another run holds them).
///
/// Helpers see `task` through a lifetime-erased pointer, so this function must not
/// return, or unwind, before every helper is done with it: `WaitForHelpers` waits on
/// every exit path, including a panic in the caller's own parts.
pub fn run(parts: usize, task: &(dyn Fn(usize) + Sync)) {
    run_on(&POOL, wanted_helpers(), parts, task);
}

/// Runs `write(start, part)` over `parts` consecutive parts of `dst` (fewer when it is short),
/// part 0 on this thread and the others on the spin pool's helpers.
pub fn split_into<T: Send>(parts: usize, dst: &mut [T], write: impl Fn(usize, &mut [T]) + Sync) {
    if parts <= 1 || dst.len() < 2 {
        return write(0, dst);
    }
    let size = dst.len().div_ceil(parts);
    // One uncontended lock per part: each part is taken by exactly one task.
    let parts: Vec<Mutex<&mut [T]>> = dst.chunks_mut(size).map(Mutex::new).collect();
    run(parts.len(), &|i| write(i * size, &mut parts[i].lock()));
}

/// Writes `f(chunk)` into `out[i]` for the `i`-th `len`-element chunk of `x` (so `out` holds
/// `x.len().div_ceil(len)` items), `parts` consecutive runs of chunks at a time as `split_into` does.
pub fn map_chunks_into<T: Sync, U: Send>(
    parts: usize,
    out: &mut [U],
    x: &[T],
    len: usize,
    f: impl Fn(&[T]) -> U + Sync,
) {
    split_into(parts, out, |first, part| {
        part.iter_mut().zip(x[first * len..].chunks(len)).for_each(|(o, chunk)| *o = f(chunk));
    });
}

/// `f` of each `len`-element chunk of `x`, in order (`x.len().div_ceil(len)` items): on
/// this thread alone for an input below `PARALLEL_MIN_ELEMENTS`, else in `num_threads()`
/// consecutive runs of chunks as `map_chunks_into` does. The runs depend on the thread
/// count, but each chunk's `f` does not, so the items are the same either way.
pub fn map_chunks<T: Sync, U: Copy + Send + 'static>(x: &[T], len: usize, f: impl Fn(&[T]) -> U + Sync) -> Vec<U> {
    let count = x.len().div_ceil(len);
    let parts = if x.len() >= super::PARALLEL_MIN_ELEMENTS { super::threads::num_threads() } else { 1 };
    let mut out = crate::storage::vec_with_capacity(count);
    split_into(parts, &mut out.spare_capacity_mut()[..count], |first, part| {
        for (slot, chunk) in part.iter_mut().zip(x[first * len..].chunks(len)) {
            slot.write(f(chunk));
        }
    });
    // SAFETY: the parts cover all `count` slots, and each part's zip writes every slot of
    // it: the part at `first` has at most `count - first` slots, and `x[first * len..]`
    // exactly `count - first` chunks.
    unsafe { out.set_len(count) };
    out
}

fn run_on(pool: &Mutex<Pool>, wanted: usize, parts: usize, task: &(dyn Fn(usize) + Sync)) {
    let serial = || (0..parts).for_each(task);
    if parts <= 1 {
        return serial();
    }
    // Declared before `wait`, so the lock is held until `wait` has finished (also on unwind):
    // no `fit` can retire a helper that still works on this job.
    let Some(mut pool) = pool.try_lock() else { return serial() };
    pool.fit(wanted);
    let helped = (parts - 1).min(pool.helpers.len());
    if helped == 0 {
        return serial();
    }
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
        // Stored before the unpark: a helper about to park then finds the job, or is woken.
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

    /// A pool of its own, with `helpers` helpers, for tests that must not change the global one.
    fn pool_of(helpers: usize) -> Mutex<Pool> {
        let pool = Mutex::new(Pool::new());
        pool.lock().fit(helpers);
        pool
    }

    #[test]
    fn map_chunks_maps_every_chunk_in_order_including_a_short_last_one() {
        for n in [0, 1, 999, 1000, 1001, crate::kernels::PARALLEL_MIN_ELEMENTS + 1234] {
            let x: Vec<u32> = (0..n as u32).collect();
            let first_and_len = |c: &[u32]| (c[0], c.len());
            let want: Vec<(u32, usize)> = x.chunks(1000).map(first_and_len).collect();
            assert_eq!(map_chunks(&x, 1000, first_and_len), want, "{n} elements");
        }
    }

    /// The caller's own part panics while a helper is still working on its part: `run` must
    /// not unwind past the helper's use of the job (and of data borrowed from this frame).
    #[test]
    fn a_panic_in_the_callers_part_waits_for_slow_helpers() {
        use std::time::Duration;
        let pool = pool_of(1);
        if pool.lock().helpers.is_empty() {
            return; // the OS refused a thread: nothing to wait for
        }
        let finished = AtomicUsize::new(0);
        for _ in 0..5 {
            let data = vec![1u64; 1024];
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run_on(&pool, 1, 2, &|part| {
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

    #[test]
    fn a_pool_grows_and_shrinks_and_stopped_helpers_exit() {
        let pool = pool_of(3);
        assert_eq!(pool.lock().helpers.len(), 3);
        let names: Vec<String> =
            pool.lock().handles.iter().filter_map(|h| h.thread().name().map(String::from)).collect();
        assert_eq!(names, ["rustgrad-spin-0", "rustgrad-spin-1", "rustgrad-spin-2"]);
        let stopped: Vec<_> = pool.lock().helpers[1..].iter().map(Arc::downgrade).collect();
        // Which thread ran each part: the caller, or a helper by name. (A helper that is slow to
        // pick its part up hands it back to the caller, so not every helper need appear.)
        let ran_on: Vec<Mutex<Option<String>>> = (0..4).map(|_| Mutex::new(None)).collect();
        let caller = thread::current().id();
        let record = |p: usize| {
            let me = thread::current();
            let who = if me.id() == caller { "caller".to_string() } else { me.name().unwrap_or("?").to_string() };
            *ran_on[p].lock() = Some(who);
        };
        let runners = |ran_on: &[Mutex<Option<String>>]| -> Vec<String> {
            ran_on.iter().map(|t| t.lock().take().expect("every part ran")).collect()
        };
        run_on(&pool, 3, 4, &record);
        assert!(runners(&ran_on).iter().all(|w| names.contains(w) || w == "caller"));

        // Shrinking joins the stopped helpers: their threads have exited (and dropped their handle),
        // and only the caller and the helper left run parts.
        run_on(&pool, 1, 4, &record);
        assert_eq!(pool.lock().helpers.len(), 1);
        assert!(stopped.iter().all(|h| h.upgrade().is_none()));
        assert!(runners(&ran_on).iter().all(|w| w == "rustgrad-spin-0" || w == "caller"));

        // Growing again, and to none.
        pool.lock().fit(2);
        assert_eq!(pool.lock().helpers.len(), 2);
        let hits = AtomicUsize::new(0);
        run_on(&pool, 0, 3, &|_| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(hits.load(Ordering::Relaxed), 3);
        assert!(pool.lock().helpers.is_empty());
    }

    #[test]
    fn idle_helpers_stay_parked_until_the_next_job() {
        use std::time::Duration;
        let pool = pool_of(1);
        let hits = AtomicUsize::new(0);
        run_on(&pool, 1, 2, &|_| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        // Past the spin window (300 µs by default), the helper parks. Its first `park` may return at
        // once, on the token of the unpark that brought the job, and it parks again; 50 ms covers
        // that. On a loaded machine (the other tests run alongside) the helper may not run for a
        // while, so wait for it to park, up to a bound, before and after those 50 ms.
        let wait_until_parked = || {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while helpers_awake() && std::time::Instant::now() < deadline {
                thread::sleep(Duration::from_millis(5));
            }
        };
        thread::sleep(Duration::from_micros(spin_us()));
        wait_until_parked();
        thread::sleep(Duration::from_millis(50));
        wait_until_parked();
        let wakeups = pool.lock().helpers[0].wakeups.load(Ordering::Relaxed);
        assert!(!helpers_awake(), "a parked helper must count as parked");
        thread::sleep(Duration::from_millis(300));
        assert_eq!(pool.lock().helpers[0].wakeups.load(Ordering::Relaxed), wakeups, "an idle helper woke up");
        // And a job still wakes it.
        run_on(&pool, 1, 2, &|_| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(hits.load(Ordering::Relaxed), 4);
    }
}
