//! How long a helper spins after a job before it parks: the setting (`RUSTGRAD_SPIN_US`,
//! `set_spin_us`) and the rule that ends a spin early when the helper has lost its core.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a helper spins after a job when neither `RUSTGRAD_SPIN_US` nor `set_spin_us` says otherwise.
pub const DEFAULT_SPIN_US: u64 = 300;
/// The longest spin `set_spin_us` and `RUSTGRAD_SPIN_US` accept: one second.
pub const MAX_SPIN_US: u64 = 1_000_000;
/// `SPIN_US` before the environment has been read.
const SPIN_UNREAD: u64 = u64::MAX;
static SPIN_US: AtomicU64 = AtomicU64::new(SPIN_UNREAD);

/// Microseconds a helper spins after a job before it parks.
pub fn spin_us() -> u64 {
    let us = SPIN_US.load(Ordering::Relaxed);
    if us != SPIN_UNREAD {
        return us;
    }
    let from_env = spin_us_from_env().ok().flatten().unwrap_or(DEFAULT_SPIN_US);
    // A `set_spin_us` that ran meanwhile wins over the environment.
    match SPIN_US.compare_exchange(SPIN_UNREAD, from_env, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => from_env,
        Err(current) => current,
    }
}

/// Sets the spin after each job, 0 ≤ us ≤ `MAX_SPIN_US`; 0 parks helpers right after each job.
pub fn set_spin_us(requested: i64) -> Result<()> {
    let us = u64::try_from(requested)
        .ok()
        .filter(|&us| us <= MAX_SPIN_US)
        .ok_or_else(|| spin_range_error(&requested.to_string()))?;
    SPIN_US.store(us, Ordering::Relaxed);
    Ok(())
}

/// `set_spin_us`'s error for a value (shown as given) outside 0..=`MAX_SPIN_US`.
pub fn spin_range_error(shown: &str) -> Error {
    Error::InvalidArgument(format!(
        "set_spin_us: the spin time must be between 0 and {MAX_SPIN_US} microseconds, got {shown}"
    ))
}

/// The spin `RUSTGRAD_SPIN_US` asks for: None when it is unset or empty, and a message
/// when it is not a whole number of microseconds in 0..=`MAX_SPIN_US`.
fn spin_us_from_env() -> std::result::Result<Option<u64>, String> {
    match std::env::var("RUSTGRAD_SPIN_US") {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(raw)) => Err(spin_env_message(&raw.to_string_lossy())),
        Ok(text) => parse_spin_us(&text).map_err(|()| spin_env_message(&text)),
    }
}

fn parse_spin_us(text: &str) -> std::result::Result<Option<u64>, ()> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<u64>().ok().filter(|&us| us <= MAX_SPIN_US).map(Some).ok_or(())
}

fn spin_env_message(text: &str) -> String {
    format!(
        "RUSTGRAD_SPIN_US must be a whole number of microseconds between 0 and {MAX_SPIN_US}, got {text:?}; \
         using the default of {DEFAULT_SPIN_US}"
    )
}

/// What is wrong with `RUSTGRAD_SPIN_US`, if anything (it is then ignored): the package warns with it at import.
/// Also settles the spin from the variable now, so that no helper reads the environment later.
pub fn spin_env_problem() -> Option<String> {
    spin_us();
    spin_us_from_env().err()
}

/// A spinning helper that finds this long passed between two looks at its slot has lost its
/// core: its yield gave the core to a thread that did not give it back soon (a yield with no
/// other thread waiting returns within microseconds). Shorter gaps, of 50–100 µs, come about
/// 60 times a second on an idle 2-core VM, nearly all with no switch to another thread
/// (interrupts; `benchmarks/yield_gaps.py`).
const LOST_THE_CORE: Duration = Duration::from_micros(100);

/// After losing its core to another program's thread twice within `REPEATED`, a helper parks
/// right after each job for this long, instead of spinning. That thread (OpenBLAS's worker
/// spins for about 0.1 s after each of numpy's products) then keeps the core, and each of our
/// jobs wakes the helper, which the scheduler lets run at once; a spinning helper that yields
/// waits a whole slice. A core lost to our own rayon pool's work (`threads::pool_mark`) does
/// not count: those threads yield the core back when their job ends, and parking would only
/// cost wake-ups.
const BACK_OFF: Duration = Duration::from_millis(100);

/// Two lost cores this close together mean a program that competes for the core; one alone
/// is an accident. An idle machine also takes a yielding thread's core for more than 0.1 ms,
/// 2–3 times a second on a 2-core VM (`benchmarks/yield_gaps.py`), and backing off at each
/// such gap cost every step of the next `BACK_OFF` a wake-up (see "Mixed with numpy" in
/// docs/performance.md). A competing program takes the core again within a slice once the
/// back-off has ended, which is why this is longer than `BACK_OFF`.
const REPEATED: Duration = Duration::from_millis(200);

/// When a helper with nothing to do stops spinning and parks: at the end of the spin time
/// after its last job, at once when it has lost its core to another program for the second
/// time within `REPEATED`, and right after every job for `BACK_OFF` after that.
pub(super) struct SpinWindow {
    idle_since: Instant,
    last_look: Instant,
    /// `threads::pool_mark()` at the last look.
    pool_at_last_look: Option<u64>,
    backing_off_until: Instant,
    /// When it last lost its core to another program.
    last_lost: Option<Instant>,
}

impl SpinWindow {
    pub(super) fn new(now: Instant) -> SpinWindow {
        SpinWindow { idle_since: now, last_look: now, pool_at_last_look: None, backing_off_until: now, last_lost: None }
    }

    /// A job has just ended: the spin time starts again.
    pub(super) fn job_done(&mut self, now: Instant) {
        self.idle_since = now;
        self.last_look = now;
        self.pool_at_last_look = None;
    }

    /// Back from `park` with no job (a stale wake-up): the spin time stays over.
    pub(super) fn woke(&mut self, now: Instant) {
        self.last_look = now;
        self.pool_at_last_look = None;
    }

    /// Whether to look at the slot again (spinning) rather than park, at `now`, when our rayon
    /// pool's mark is `pool` (`threads::pool_mark`).
    pub(super) fn keep_spinning(&mut self, now: Instant, pool: Option<u64>, spin: Duration) -> bool {
        let long_gap = now.saturating_duration_since(self.last_look) > LOST_THE_CORE;
        let our_pool_idle = pool.is_some() && pool == self.pool_at_last_look;
        self.last_look = now;
        self.pool_at_last_look = pool;
        if long_gap && our_pool_idle {
            if self.last_lost.is_some_and(|last| now.saturating_duration_since(last) < REPEATED) {
                self.backing_off_until = now.checked_add(BACK_OFF).unwrap_or(now);
            }
            self.last_lost = Some(now);
        }
        now >= self.backing_off_until && now.saturating_duration_since(self.idle_since) < spin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spin_setting_is_bounded_and_the_variable_parsed() {
        for bad in [-1, 1_000_001, i64::MIN] {
            let err = set_spin_us(bad).unwrap_err().to_string();
            assert!(
                err.contains("set_spin_us") && err.contains("between 0 and 1000000") && err.contains(&bad.to_string()),
                "{err}"
            );
        }
        assert_eq!(parse_spin_us(" 250 "), Ok(Some(250)));
        assert_eq!(parse_spin_us("0"), Ok(Some(0)));
        assert_eq!(parse_spin_us("1000000"), Ok(Some(1_000_000)));
        assert_eq!(parse_spin_us(""), Ok(None));
        for bad in ["-1", "1000001", "3.5", "fast", "1e3"] {
            assert_eq!(parse_spin_us(bad), Err(()), "{bad}");
        }
        assert!(spin_env_message("fast").contains("RUSTGRAD_SPIN_US") && spin_env_message("fast").contains("\"fast\""));
    }

    #[test]
    fn a_helper_spins_through_its_window_and_backs_off_once_another_program_took_its_core_twice() {
        let us = Duration::from_micros;
        let (start, spin) = (Instant::now(), us(300));
        let idle = Some(7); // our rayon pool's mark, unchanged: none of its jobs ran
        let mut window = SpinWindow::new(start);
        // Looking every microsecond, it spins to the end of the window, and not past it.
        for t in 1..300 {
            assert!(window.keep_spinning(start + us(t), idle, spin), "at {t} µs");
        }
        assert!(!window.keep_spinning(start + us(300), idle, spin));
        // After a stale wake-up the window stays closed; a job opens it again.
        window.woke(start + us(500));
        assert!(!window.keep_spinning(start + us(501), idle, spin));
        window.job_done(start + us(600));
        assert!(window.keep_spinning(start + us(601), idle, spin));
        // A long gap while our pool ran a job, or started one, is our own work: it spins on.
        let gap = LOST_THE_CORE + us(1);
        assert!(window.keep_spinning(start + us(601) + gap, None, spin));
        assert!(window.keep_spinning(start + us(602) + gap, Some(8), spin));
        assert!(window.keep_spinning(start + us(603) + gap * 2, Some(9), spin));
        // One long gap with our pool idle throughout is an accident: it spins on ...
        let first_loss = start + us(604) + gap * 3;
        window.job_done(first_loss - gap - us(1));
        assert!(window.keep_spinning(first_loss - gap, Some(9), spin));
        assert!(window.keep_spinning(first_loss, Some(9), spin));
        // ... and so is another one later than REPEATED after it,
        let later = first_loss + REPEATED;
        window.job_done(later - gap - us(1));
        assert!(window.keep_spinning(later - gap, Some(9), spin));
        assert!(window.keep_spinning(later, Some(9), spin));
        // but a second one within REPEATED parks it ...
        let lost_at = later + REPEATED - us(1);
        window.job_done(lost_at - gap - us(1));
        assert!(window.keep_spinning(lost_at - gap, Some(9), spin));
        assert!(!window.keep_spinning(lost_at, Some(9), spin));
        // ... and for BACK_OFF it parks right after each job,
        for after in [us(1), BACK_OFF / 2, BACK_OFF - us(1)] {
            window.job_done(lost_at + after);
            assert!(!window.keep_spinning(lost_at + after, idle, spin), "{after:?} after losing its core");
        }
        // then spins again.
        window.job_done(lost_at + BACK_OFF);
        assert!(window.keep_spinning(lost_at + BACK_OFF + us(1), idle, spin));
        // Spin 0 parks at once.
        assert!(!SpinWindow::new(start).keep_spinning(start, idle, Duration::ZERO));
    }
}
