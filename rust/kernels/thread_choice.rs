//! Whether a mid-size product runs on the calling thread alone or on all
//! threads, chosen per shape by timing both. Opt-in: `RUSTGRAD_THREAD_CHOICE=measure`;
//! by default every such product runs on all threads.
//!
//! Two threads usually halve a product's time. On a shared virtual machine they
//! sometimes do not: when the two vCPUs sit far apart, the data one thread wrote
//! (a weight update) must travel to the other's cache before the next product
//! reads it. Measured in the seed training step in such a state, its two large
//! products took 77 and 104 µs on two threads against 60 and 64 µs on one.
//! The choice is measured, not guessed: each shape is timed both ways, keeps the
//! faster, and now and then re-times the other (machine states change).
//! Results do not depend on the choice: products are cut into the same bands.

use parking_lot::Mutex;

/// Calls of a shape between two re-measurements of the choice it does not use,
/// once it has been called this often; before, it re-measures after 16, 32, 64, ...
/// calls, so a choice made on the noisy first calls of a process is soon revisited.
const RETRY_EVERY: u32 = 512;
/// Calls per measurement of the choice not in use. The first is not counted: it
/// may wake sleeping helpers.
const BURST: u32 = 4;
/// Timings kept per choice; its estimate is their median, which a few slow calls
/// (a preempted helper, an interrupt) do not move.
const KEPT_TIMINGS: usize = 9;
/// Shapes tracked at once (a training step multiplies a handful).
const SHAPES: usize = 32;

type Shape3 = (usize, usize, usize);

/// The timings of one product shape and what it is measuring now.
#[derive(Clone, Debug)]
struct Tuning {
    shape: Shape3,
    /// The latest timings in nanoseconds: [serial, parallel].
    timings: [Timings; 2],
    calls: u32,
    /// The choice being measured and how many of its calls are left.
    measuring: Option<(bool, u32)>,
}

impl Tuning {
    fn new(shape: Shape3) -> Tuning {
        Tuning { shape, timings: [Timings::default(), Timings::default()], calls: 0, measuring: None }
    }

    fn estimate(&self, parallel: bool) -> Option<f64> {
        self.timings[parallel as usize].median()
    }

    fn faster_is_parallel(&self) -> bool {
        match (self.estimate(false), self.estimate(true)) {
            (Some(serial), Some(parallel)) => parallel <= serial,
            _ => true,
        }
    }

    fn is_time_to_retry(&self) -> bool {
        let early = self.calls < RETRY_EVERY && self.calls >= 16 && self.calls.is_power_of_two();
        early || self.calls.is_multiple_of(RETRY_EVERY)
    }

    /// Whether the next call runs in parallel, and whether its time should be recorded.
    fn choose(&mut self) -> (bool, bool) {
        self.calls = self.calls.wrapping_add(1);
        if self.measuring.is_none() {
            let unmeasured = self.timings.iter().position(|t| t.len == 0);
            self.measuring = match unmeasured {
                Some(choice) => Some((choice == 1, BURST)),
                None if self.is_time_to_retry() => {
                    // The retried choice is judged on fresh timings alone: its old ones may be stale.
                    let retried = !self.faster_is_parallel();
                    self.timings[retried as usize].clear();
                    Some((retried, BURST))
                }
                None => None,
            };
        }
        match &mut self.measuring {
            Some((parallel, left)) => {
                *left -= 1;
                let counted = *left < BURST - 1;
                let parallel = *parallel;
                if *left == 0 {
                    self.measuring = None;
                }
                (parallel, counted)
            }
            // The choice in use is timed on every call, so its estimate follows the machine.
            None => (self.faster_is_parallel(), true),
        }
    }

    fn record(&mut self, parallel: bool, nanos: f64) {
        self.timings[parallel as usize].push(nanos);
    }
}

/// The last `KEPT_TIMINGS` timings of one choice, in a ring.
#[derive(Clone, Debug, Default)]
struct Timings {
    values: [f64; KEPT_TIMINGS],
    len: usize,
    next: usize,
}

impl Timings {
    fn push(&mut self, nanos: f64) {
        self.values[self.next] = nanos;
        self.next = (self.next + 1) % KEPT_TIMINGS;
        self.len = (self.len + 1).min(KEPT_TIMINGS);
    }

    fn clear(&mut self) {
        *self = Timings::default();
    }

    fn median(&self) -> Option<f64> {
        let mut kept = self.values;
        let kept = &mut kept[..self.len];
        kept.sort_by(f64::total_cmp);
        kept.get(kept.len().saturating_sub(1) / 2).copied()
    }
}

static TABLE: Mutex<Vec<Tuning>> = Mutex::new(Vec::new());

/// Whether the choice is measured: only with `RUSTGRAD_THREAD_CHOICE=measure`. By default
/// (and with `fixed`) mid-size products always run on all threads, so a step takes the
/// same path on every run; the measured choice did not win clearly enough to be the
/// default (docs/performance.md has the figures).
fn choice_is_measured() -> bool {
    static MEASURED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *MEASURED.get_or_init(|| std::env::var("RUSTGRAD_THREAD_CHOICE").is_ok_and(|v| v.trim() == "measure"))
}

/// Runs `product(parallel)` for an m×k by k×n product, choosing `parallel` as above.
pub fn run_timed(shape: Shape3, product: impl FnOnce(bool)) {
    if !choice_is_measured() {
        return product(true);
    }
    // Never waits for the table: another thread may hold it, or have held it when
    // this process was forked (then nobody ever releases it here).
    let Some(mut table) = TABLE.try_lock() else {
        return product(true);
    };
    let (parallel, counted) = {
        let choice = match table.iter_mut().find(|t| t.shape == shape) {
            Some(tuning) => tuning.choose(),
            None => {
                if table.len() >= SHAPES {
                    table.remove(0);
                }
                let mut tuning = Tuning::new(shape);
                let choice = tuning.choose();
                table.push(tuning);
                choice
            }
        };
        drop(table);
        choice
    };
    let started = counted.then(std::time::Instant::now);
    product(parallel);
    if let Some(started) = started {
        let nanos = started.elapsed().as_nanos() as f64;
        if let Some(mut table) = TABLE.try_lock() {
            if let Some(tuning) = table.iter_mut().find(|t| t.shape == shape) {
                tuning.record(parallel, nanos);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `calls` calls of a tuning where serial calls take `serial` ns and
    /// parallel ones `parallel` ns; returns how many ran in parallel.
    fn simulate(tuning: &mut Tuning, calls: u32, serial: f64, parallel: f64) -> u32 {
        let mut in_parallel = 0;
        for _ in 0..calls {
            let (p, counted) = tuning.choose();
            in_parallel += p as u32;
            if counted {
                tuning.record(p, if p { parallel } else { serial });
            }
        }
        in_parallel
    }

    #[test]
    fn each_shape_keeps_the_faster_choice_and_follows_a_change_of_machine_state() {
        let mut tuning = Tuning::new((64, 1000, 100));
        // Both choices are measured first (a burst each), then the faster one stays.
        simulate(&mut tuning, 2 * BURST, 60.0, 30.0);
        assert!(tuning.faster_is_parallel());
        let parallel_calls = simulate(&mut tuning, 2000, 60.0, 30.0);
        // Retries: at 16, 32, ..., 256 calls, then every 512.
        assert!(parallel_calls >= 2000 - 10 * BURST, "only {parallel_calls} of 2000 calls ran in parallel");
        // Two threads become slower than one: re-measurements notice within a few retries.
        simulate(&mut tuning, 4 * RETRY_EVERY, 60.0, 100.0);
        assert!(!tuning.faster_is_parallel());
        let parallel_calls = simulate(&mut tuning, 2000, 60.0, 100.0);
        assert!(parallel_calls <= 4 * BURST, "{parallel_calls} of 2000 calls ran in parallel");
    }

    #[test]
    fn a_few_slow_calls_do_not_change_the_choice() {
        let mut tuning = Tuning::new((64, 1000, 100));
        simulate(&mut tuning, 2 * BURST, 60.0, 30.0);
        for _ in 0..3 {
            let (parallel, counted) = tuning.choose();
            assert!(parallel && counted);
            tuning.record(true, 400.0);
        }
        assert!(tuning.faster_is_parallel());
    }

    #[test]
    fn a_choice_made_on_slow_first_calls_is_revisited_soon() {
        let mut tuning = Tuning::new((64, 1000, 100));
        // Threads that are still starting make the first parallel calls look slow.
        simulate(&mut tuning, 2 * BURST, 60.0, 500.0);
        assert!(!tuning.faster_is_parallel());
        simulate(&mut tuning, 40, 60.0, 30.0);
        assert!(tuning.faster_is_parallel(), "still serial after 48 calls");
    }

    #[test]
    fn a_new_shape_is_timed_serially_then_in_parallel_without_each_bursts_first_call() {
        let mut tuning = Tuning::new((1, 2, 3));
        let choices: Vec<(bool, bool)> = (0..2 * BURST)
            .map(|_| {
                let (parallel, counted) = tuning.choose();
                if counted {
                    tuning.record(parallel, 1.0);
                }
                (parallel, counted)
            })
            .collect();
        let burst = BURST as usize;
        assert_eq!(choices[0], (false, false));
        assert!(choices[1..burst].iter().all(|&c| c == (false, true)));
        assert_eq!(choices[burst], (true, false));
        assert!(choices[burst + 1..].iter().all(|&c| c == (true, true)));
    }
}
