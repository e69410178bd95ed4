//! The thread-local switch that decides whether ops are recorded.

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

pub fn is_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

pub fn set_enabled(enabled: bool) {
    GRAD_ENABLED.with(|g| g.set(enabled));
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
