//! The thread-local switch that decides whether ops are recorded.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// How many threads have grad mode off. Every op asks whether grad mode is on,
/// and reaching a thread-local from a shared library costs a call; while no
/// thread has turned it off (most of the time) the answer needs no thread-local.
static THREADS_WITHOUT_GRAD: AtomicUsize = AtomicUsize::new(0);

pub fn is_enabled() -> bool {
    // A thread that turned grad mode off counted itself first, so it sees its own switch.
    THREADS_WITHOUT_GRAD.load(Ordering::Relaxed) == 0 || GRAD_ENABLED.with(|g| g.get())
}

pub fn set_enabled(enabled: bool) {
    let was = GRAD_ENABLED.with(|g| g.replace(enabled));
    match (was, enabled) {
        (true, false) => {
            THREADS_WITHOUT_GRAD.fetch_add(1, Ordering::Relaxed);
        }
        (false, true) => {
            THREADS_WITHOUT_GRAD.fetch_sub(1, Ordering::Relaxed);
        }
        _ => {}
    }
}

/// Sets grad mode for a scope and restores the previous mode when dropped.
pub struct GradModeGuard {
    previous: bool,
}

impl GradModeGuard {
    pub fn new(enabled: bool) -> GradModeGuard {
        let previous = is_enabled();
        set_enabled(enabled);
        GradModeGuard { previous }
    }
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        set_enabled(self.previous);
    }
}
