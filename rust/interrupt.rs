//! Ctrl-C inside a long kernel.
//!
//! Python handles SIGINT by setting a flag that only the main thread reads, between
//! bytecodes; a kernel running for seconds with the GIL released would make the user
//! wait for it. So while the main thread runs a long op (`Armed`), a SIGINT also sets
//! `REQUESTED`, and kernels that fill a new output poll it between chunks (a relaxed
//! load, a few nanoseconds per chunk of thousands of elements).
//!
//! Whether a kernel may stop is decided on the thread that starts it (`Poller::here`):
//! work that another thread runs at the same time, and a commit that must not stop
//! halfway (`HoldOff`), go on to their end. In-place ops are never armed: stopping one
//! halfway would leave a tensor half updated.
//!
//! A poll that sees the flag unwinds with `Interrupted` to `storage::catch_kernel_unwind`
//! or the binding's guard, which return `Error::Interrupted`; the binding then lets
//! Python run its own handler (KeyboardInterrupt by default).
//!
//! The SIGINT handler is chained in front of Python's (it sets the flag, then calls
//! Python's), and re-chained whenever Python has replaced it (`signal.signal`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);
/// How many long ops of the main thread are running: only they can be interrupted.
static ARMED: AtomicUsize = AtomicUsize::new(0);

/// What an interrupted kernel unwinds with.
#[derive(Debug)]
pub struct Interrupted;

/// Whether a kernel may stop on Ctrl-C: taken on the thread that starts the kernel,
/// and checked (`poll`) by every thread that runs a part of it.
#[derive(Clone, Copy)]
pub struct Poller {
    armed: bool,
}

impl Poller {
    /// Armed when this is the main thread running an armed op, outside a `HoldOff`.
    #[inline]
    pub fn here() -> Poller {
        // The atomic first: without an armed op no thread-local is read.
        Poller { armed: ARMED.load(Ordering::Relaxed) != 0 && is_main_thread() && !HELD_OFF.get() }
    }

    /// Unwinds with `Interrupted` when Ctrl-C was pressed and this poller is armed.
    #[inline]
    pub fn poll(self) {
        if self.armed && REQUESTED.load(Ordering::Relaxed) {
            stop();
        }
    }
}

thread_local! {
    static HELD_OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Keeps the kernels this thread starts from stopping on Ctrl-C while it lives: for work
/// that must not stop halfway, such as a commit phase that writes into variables.
pub struct HoldOff {
    was: bool,
}

impl HoldOff {
    pub fn new() -> HoldOff {
        HoldOff { was: HELD_OFF.replace(true) }
    }
}

impl Default for HoldOff {
    fn default() -> Self {
        HoldOff::new()
    }
}

impl Drop for HoldOff {
    fn drop(&mut self) {
        HELD_OFF.set(self.was);
    }
}

#[cold]
#[inline(never)]
fn stop() -> ! {
    std::panic::resume_unwind(Box::new(Interrupted))
}

/// Makes the polls of the kernels it spans honour Ctrl-C; it is created by the main
/// thread around a long op (the binding decides which ops are long).
pub struct Armed(());

impl Armed {
    /// Arms the polls when called on the main thread (the only one Ctrl-C interrupts).
    pub fn on_main_thread() -> Option<Armed> {
        is_main_thread().then(Armed::new)
    }

    pub fn new() -> Armed {
        signal::chain_sigint();
        if ARMED.fetch_add(1, Ordering::Relaxed) == 0 {
            // A Ctrl-C from before this op is Python's to handle, not ours.
            REQUESTED.store(false, Ordering::Relaxed);
        }
        Armed(())
    }
}

impl Default for Armed {
    fn default() -> Self {
        Armed::new()
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        ARMED.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(target_os = "linux")]
fn is_main_thread() -> bool {
    thread_local! {
        // Two syscalls, once per thread: long ops ask on every call.
        static IS_MAIN: bool = {
            // SAFETY: plain syscalls without arguments; the main thread's id is the process id.
            unsafe { libc::syscall(libc::SYS_gettid) == libc::getpid() as libc::c_long }
        };
    }
    IS_MAIN.with(|is_main| *is_main)
}

#[cfg(not(target_os = "linux"))]
fn is_main_thread() -> bool {
    false
}

/// Sets the flag as SIGINT would (for tests).
pub fn request_for_test() {
    REQUESTED.store(true, Ordering::Relaxed);
}

#[cfg(unix)]
mod signal {
    use super::REQUESTED;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn since_start() -> std::time::Duration {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        START.get_or_init(std::time::Instant::now).elapsed()
    }

    /// The handler ours chains to (Python's), as a `sa_handler` address; 0 while none.
    static PREVIOUS: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn on_sigint(signal: libc::c_int) {
        REQUESTED.store(true, Ordering::Relaxed);
        let previous = PREVIOUS.load(Ordering::Relaxed);
        if previous != 0 {
            // SAFETY: `previous` is the address of the plain signal handler that was installed
            // for SIGINT before ours (checked to be neither SIG_DFL nor SIG_IGN when saved).
            let handler: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(previous) };
            handler(signal);
        }
    }

    /// Puts `on_sigint` in front of the current SIGINT handler, unless it is already
    /// there or the current one is not a plain function (default action, ignored, or
    /// a three-argument handler that we could not call correctly).
    pub fn chain_sigint() {
        // Asking the kernel costs a syscall: look again only every 100 ms (Python replaces
        // our handler only when the program calls signal.signal).
        static LAST_CHECK_MS: AtomicUsize = AtomicUsize::new(usize::MAX);
        let now_ms = since_start().as_millis() as usize;
        let last = LAST_CHECK_MS.load(Ordering::Relaxed);
        if last != usize::MAX && now_ms.wrapping_sub(last) < 100 {
            return;
        }
        LAST_CHECK_MS.store(now_ms, Ordering::Relaxed);
        // SAFETY: zeroed `sigaction` is a valid value to be filled by the query below.
        let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: querying only (null new action); `current` is a valid out-pointer.
        if unsafe { libc::sigaction(libc::SIGINT, std::ptr::null(), &mut current) } != 0 {
            return;
        }
        let ours = on_sigint as extern "C" fn(libc::c_int) as usize;
        let plain = current.sa_flags & libc::SA_SIGINFO == 0;
        if current.sa_sigaction == ours || !plain || matches!(current.sa_sigaction, libc::SIG_DFL | libc::SIG_IGN) {
            return;
        }
        PREVIOUS.store(current.sa_sigaction, Ordering::Relaxed);
        let mut chained = current;
        chained.sa_sigaction = ours;
        // SAFETY: installs a handler that only stores to an atomic and calls the handler it
        // replaced (async-signal-safe); the mask and flags are the previous handler's.
        unsafe { libc::sigaction(libc::SIGINT, &chained, std::ptr::null_mut()) };
    }
}

#[cfg(not(unix))]
mod signal {
    pub fn chain_sigint() {}
}
