//! The seed step's forward product, 64×1000×96 float32 (the 100 columns less the edge that our
//! own kernel computes), on the `gemm` crate alone on two threads, split three ways: bands of
//! 32 rows, bands of 48 columns, and halves of the depth (500 each, the second half into a
//! buffer of its own that is added to the output after). Each split is timed as it is and after
//! each thread rewrote its half of B's rows, as the weight gradient's bands of rows do when
//! they update the weight in place between two forward products.
//!
//!     cargo run --release --example crate_splits [rounds]
//!
//! Prints µs per product, the median over the rounds of each round's median call (best round
//! in brackets). The figures in docs/performance.md ("Halves of the depth") come from it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

const M: usize = 64;
const K: usize = 1000;
const N: usize = 96;
const CALLS: usize = 3000;

#[derive(Copy, Clone, PartialEq, Debug)]
enum Split {
    Rows,
    Columns,
    Depth,
}

/// The operands and outputs that both threads work on, each thread on its own part; after
/// `Shared` points into them, they are touched only through it.
struct Operands {
    a: Vec<f32>,
    b: Vec<f32>,
    out: Vec<f32>,
    second_half: Vec<f32>,
}

/// Raw pointers to the operands, shared by the two threads.
#[derive(Copy, Clone)]
struct Shared {
    a: *const f32,
    b: *mut f32,
    out: *mut f32,
    second_half: *mut f32,
}
// SAFETY: the two parts of every job touch disjoint elements of `b`, `out` and `second_half`
// (`run_part`), and the main thread waits for the helper's part before it reads them.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

/// `c = a·b` on the crate on this thread: a is m×k with row stride `lda`, b is k×n and c m×n with
/// row stride N.
///
/// # Safety
/// The m×k, k×n and m×n elements must lie inside the allocations, and nothing else may touch c.
unsafe fn product(m: usize, k: usize, n: usize, a: *const f32, lda: usize, b: *const f32, c: *mut f32) {
    let (lda, ld) = (lda as isize, N as isize);
    // SAFETY: the caller's contract; beta (the crate's `alpha`) is 0, so c is not read.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c,
            1,
            ld,
            false,
            a,
            1,
            lda,
            b,
            1,
            ld,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    }
}

/// Part `part` (0 or 1) of one product split as `split`, or of the update of B's rows.
///
/// # Safety
/// `s` points at `Operands` of the sizes above, and the other part runs the same job.
unsafe fn run_part(s: Shared, split: Split, update: bool, part: usize) {
    if update {
        let rows = K / 2;
        // SAFETY: rows part·500 .. part·500 + 500 of B, this part's alone.
        let half = unsafe { std::slice::from_raw_parts_mut(s.b.add(part * rows * N), rows * N) };
        half.iter_mut().for_each(|v| *v = *v * 0.999_999 + 1e-9);
        return;
    }
    match split {
        Split::Rows => {
            let (a, out) = (s.a.wrapping_add(part * M / 2 * K), s.out.wrapping_add(part * M / 2 * N));
            // SAFETY: rows part·32 .. part·32 + 32 of A and of the output, this part's alone, and all of B.
            unsafe { product(M / 2, K, N, a, K, s.b, out) }
        }
        Split::Columns => {
            let (b, out) = (s.b.wrapping_add(part * N / 2), s.out.wrapping_add(part * N / 2));
            // SAFETY: columns part·48 .. part·48 + 48 of B and of the output, this part's alone, and all of A.
            unsafe { product(M, K, N / 2, s.a, K, b, out) }
        }
        Split::Depth => {
            let (a, b) = (s.a.wrapping_add(part * K / 2), s.b.wrapping_add(part * K / 2 * N));
            let target = if part == 0 { s.out } else { s.second_half };
            // SAFETY: columns part·500 .. of A and rows part·500 .. of B, 500 each; each part its own output.
            unsafe { product(M, K / 2, N, a, K, b, target) }
        }
    }
}

/// A second thread that runs part 1 of each job the main thread posts, spinning in between.
struct Helper {
    posted: AtomicUsize,
    done: AtomicUsize,
    stop: AtomicBool,
    job: AtomicUsize,
}

fn encode(split: Split, update: bool) -> usize {
    split as usize * 2 + usize::from(update)
}

fn decode(job: usize) -> (Split, bool) {
    ([Split::Rows, Split::Columns, Split::Depth][job / 2], job % 2 == 1)
}

impl Helper {
    fn serve(&self, s: Shared) {
        let mut seen = 0;
        while !self.stop.load(Ordering::Acquire) {
            let posted = self.posted.load(Ordering::Acquire);
            if posted == seen {
                std::hint::spin_loop();
                continue;
            }
            seen = posted;
            let (split, update) = decode(self.job.load(Ordering::Acquire));
            // SAFETY: the main thread runs part 0 of the same job and waits for this one.
            unsafe { run_part(s, split, update, 1) };
            self.done.store(seen, Ordering::Release);
        }
    }

    /// Runs both parts of a job, part 0 here, and returns when both are done.
    fn run(&self, s: Shared, split: Split, update: bool) {
        self.job.store(encode(split, update), Ordering::Release);
        let ticket = self.posted.fetch_add(1, Ordering::AcqRel) + 1;
        // SAFETY: the helper runs part 1 of the same job; this waits for it below.
        unsafe { run_part(s, split, update, 0) };
        while self.done.load(Ordering::Acquire) != ticket {
            std::hint::spin_loop();
        }
    }
}

/// The median µs of `CALLS` products split as `split`, each after an update of B when `update`.
fn median_us(helper: &Helper, s: Shared, split: Split, update: bool) -> f64 {
    let mut times = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        if update {
            helper.run(s, split, true);
        }
        let start = Instant::now();
        helper.run(s, split, false);
        if split == Split::Depth {
            // SAFETY: both parts are done (`run` returned), so this thread alone touches the outputs.
            let (out, second_half) = unsafe {
                (std::slice::from_raw_parts_mut(s.out, M * N), std::slice::from_raw_parts(s.second_half, M * N))
            };
            out.iter_mut().zip(second_half).for_each(|(total, &rest)| *total += rest);
        }
        times.push(start.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    times[CALLS / 2]
}

fn main() {
    let rounds: usize = std::env::args().nth(1).map_or(5, |r| r.parse().expect("rounds: a number"));
    let mut operands = Operands {
        a: (0..M * K).map(|i| (i as f32 * 0.37).sin()).collect(),
        b: (0..K * N).map(|i| (i as f32 * 0.11).cos()).collect(),
        out: vec![0.0; M * N],
        second_half: vec![0.0; M * N],
    };
    let s = Shared {
        a: operands.a.as_ptr(),
        b: operands.b.as_mut_ptr(),
        out: operands.out.as_mut_ptr(),
        second_half: operands.second_half.as_mut_ptr(),
    };
    let helper = Helper {
        posted: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        job: AtomicUsize::new(0),
    };
    let configurations: Vec<(Split, bool)> =
        [Split::Rows, Split::Columns, Split::Depth].iter().flat_map(|&split| [(split, false), (split, true)]).collect();
    let mut times = vec![Vec::new(); configurations.len()];
    std::thread::scope(|scope| {
        scope.spawn(|| helper.serve(s));
        for _ in 0..rounds {
            for (slot, &(split, update)) in times.iter_mut().zip(&configurations) {
                slot.push(median_us(&helper, s, split, update));
            }
        }
        helper.stop.store(true, Ordering::Release);
    });
    println!("{M}×{K}×{N} on two threads, µs per product: median of {rounds} rounds (best round)");
    for (slot, (split, update)) in times.iter_mut().zip(configurations) {
        slot.sort_by(f64::total_cmp);
        let after = if update { "after an update of B by rows" } else { "as it is" };
        println!("  {:<8} {after:<30} {:7.1} ({:7.1})", format!("{split:?}"), slot[slot.len() / 2], slot[0]);
    }
}
