//! Keeps helpers off the CPU the caller runs on.
//!
//! The caller computes part 0 itself, so its CPU stays busy. Linux tends to wake
//! a helper on the waker's CPU, where it then waits behind the caller until the
//! load balancer moves it, which on an otherwise idle (virtual) machine took tens
//! of milliseconds: measured here, 512³ products ran on one core for the first 30
//! calls. Excluding the caller's CPU from the helper's affinity mask (re-done only
//! when the caller has moved) made a woken helper start within 25 µs every time.

#[cfg(target_os = "linux")]
pub use linux::{current_cpu, Placement};
#[cfg(not(target_os = "linux"))]
pub use other::{current_cpu, Placement};

#[cfg(target_os = "linux")]
mod linux {
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
mod other {
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
