//! Whether a mid-size product runs on the calling thread alone or on all
//! threads, chosen per shape by timing both.
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

/// Calls of a shape between two re-measurements of the choice it does not use.
const RETRY_EVERY: u32 = 512;
/// Calls per measurement of the choice not in use. The first is not counted: it
/// may wake sleeping helpers.
const BURST: u32 = 4;
/// Weight of the newest timing in a choice's running estimate.
const NEWEST_WEIGHT: f64 = 0.25;
/// Shapes tracked at once (a training step multiplies a handful).
const SHAPES: usize = 32;

type Shape3 = (usize, usize, usize);

/// The timings of one product shape and what it is measuring now.
#[derive(Clone, Copy, Debug)]
struct Tuning {
    shape: Shape3,
    /// Running estimates in nanoseconds, once measured: [serial, parallel].
    estimate: [Option<f64>; 2],
    calls: u32,
    /// The choice being measured and how many of its calls are left.
    measuring: Option<(bool, u32)>,
}

impl Tuning {
    fn new(shape: Shape3) -> Tuning {
        Tuning { shape, estimate: [None, None], calls: 0, measuring: None }
    }

    fn faster_is_parallel(&self) -> bool {
        match self.estimate {
            [Some(serial), Some(parallel)] => parallel <= serial,
            _ => true,
        }
    }

    /// Whether the next call runs in parallel, and whether its time should be recorded.
    fn choose(&mut self) -> (bool, bool) {
        self.calls = self.calls.wrapping_add(1);
        if self.measuring.is_none() {
            let unmeasured = self.estimate.iter().position(Option::is_none);
            self.measuring = match unmeasured {
                Some(choice) => Some((choice == 1, BURST)),
                None if self.calls.is_multiple_of(RETRY_EVERY) => Some((!self.faster_is_parallel(), BURST)),
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
        let slot = &mut self.estimate[parallel as usize];
        *slot = Some(slot.map_or(nanos, |old| old + NEWEST_WEIGHT * (nanos - old)));
    }
}

static TABLE: Mutex<Vec<Tuning>> = Mutex::new(Vec::new());

/// `RUSTGRAD_THREAD_CHOICE=fixed` always runs mid-size products on all threads
/// (to measure what the choice brings).
fn choice_is_fixed() -> bool {
    static FIXED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FIXED.get_or_init(|| std::env::var("RUSTGRAD_THREAD_CHOICE").as_deref() == Ok("fixed"))
}

/// Runs `product(parallel)` for an m×k by k×n product, choosing `parallel` as above.
pub fn run_timed(shape: Shape3, product: impl FnOnce(bool)) {
    if choice_is_fixed() {
        return product(true);
    }
    let (parallel, counted) = {
        let mut table = TABLE.lock();
        match table.iter_mut().find(|t| t.shape == shape) {
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
        }
    };
    let started = counted.then(std::time::Instant::now);
    product(parallel);
    if let Some(started) = started {
        let nanos = started.elapsed().as_nanos() as f64;
        if let Some(tuning) = TABLE.lock().iter_mut().find(|t| t.shape == shape) {
            tuning.record(parallel, nanos);
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
        assert!(parallel_calls >= 2000 - 4 * BURST, "only {parallel_calls} of 2000 calls ran in parallel");
        // Two threads become slower than one: re-measurements notice within a few retries.
        simulate(&mut tuning, 4 * RETRY_EVERY, 60.0, 100.0);
        assert!(!tuning.faster_is_parallel());
        let parallel_calls = simulate(&mut tuning, 2000, 60.0, 100.0);
        assert!(parallel_calls <= 4 * BURST, "{parallel_calls} of 2000 calls ran in parallel");
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
