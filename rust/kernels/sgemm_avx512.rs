//! A float32 matrix product for AVX-512 machines, tuned for the mid-size
//! products of small networks (e.g. 64×1000×100), where general GEMM libraries
//! spend much of their time packing and waking threads.
//!
//! It reads A through any strides (so transposed views cost nothing) and B
//! rows directly when they are contiguous. Output rows are split into one share
//! per thread, run in bands of a fixed height (`Shares`); short, deep products
//! run as two halves of their depth instead, at every thread count
//! (`sgemm_in_depth_halves`). Every output element is summed over k in the same
//! order whatever the number of threads, so results are bitwise identical at any
//! thread count.

#![allow(clippy::too_many_arguments)]

use super::matmul::{MatRef, SecondOutput, Store};
use super::sgemm_edge_rows::EDGE_BY_ROWS;
use super::sgemm_panel_edge::micro_with_edge;
use smallvec::SmallVec;
use std::arch::x86_64::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Rows per microkernel call and columns per microkernel call (two zmm registers).
pub(super) const MR: usize = 8;
pub(super) const NR: usize = 32;
/// Output rows per parallel task, at most. Smaller products are cut into at
/// least four bands so both cores get work; the cut depends only on the shape.
const MAX_BAND_ROWS: usize = 64;

fn band_rows(m: usize) -> usize {
    m.div_ceil(4).next_multiple_of(MR).clamp(MR, MAX_BAND_ROWS)
}

/// Whether this CPU runs the kernel (it has avx512f and avx512vl, for the narrow tail's
/// 8-lane vectors). `RUSTGRAD_DISABLE_AVX512=1` says no, so that the
/// portable path a machine without AVX-512 takes can be tested on one that has it.
pub fn available() -> bool {
    static DISABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let disabled =
        *DISABLED.get_or_init(|| std::env::var("RUSTGRAD_DISABLE_AVX512").is_ok_and(|v| v != "0" && !v.is_empty()));
    !disabled && std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vl")
}

/// A raw pointer to an output (or to the scratch sums of `sgemm_in_depth_halves`) that may
/// be sent to the workers writing it.
#[derive(Copy, Clone)]
pub(super) struct OutPtr(pub(super) *mut f32);
// SAFETY: the workers sharing one write disjoint parts of it (bands of rows of the output, or
// one half of the sums each), and `spin_pool::run` returns only when all of them are done.
unsafe impl Send for OutPtr {}
// SAFETY: as for Send: shared only among workers that write disjoint parts.
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// The element `offset` (a method, so that closures capture the whole `OutPtr`, which is
    /// `Sync`, and not its raw pointer field).
    pub(super) fn element(self, offset: usize) -> *mut f32 {
        self.0.wrapping_add(offset)
    }
}

/// `out = a·b` stored as `store` says from `init` (for `Scaled`, `beta·init +
/// alpha·a·b`), where `init` and `out` are row-major m×n (they may be the same
/// memory). Every output element is written; `out` is read only when it is `init`.
/// When `outs[1]` is not null the result is also stored there, as `second` says (a
/// copy, or an activation of it): a second store, not another pass over memory.
///
/// # Safety
/// `outs[0]` (and a non-null `outs[1]`) must be valid for m×n writes and `init` for m×n
/// reads (when `beta != 0`); requires `b.col_stride == 1` and `available()`.
pub unsafe fn sgemm_from(
    a: MatRef<'_, f32>,
    b: MatRef<'_, f32>,
    init: *const f32,
    outs: [*mut f32; 2],
    second: SecondOutput,
    store: Store<f32>,
    parallel: bool,
) {
    debug_assert!(b.col_stride == 1 && available());
    if super::crate_gemm::always_in_depth_halves(a.rows, a.cols, b.cols) {
        // SAFETY: the caller's contract, passed on.
        return unsafe { sgemm_in_depth_halves(a, b, init, outs, second, store, parallel) };
    }
    let (m, n) = (a.rows, b.cols);
    let (ptr, init, copy) = (OutPtr(outs[0]), OutPtr(init.cast_mut()), OutPtr(outs[1]));
    let height = band_rows(m);
    let band = move |start: usize, rows: usize| {
        let (ptr, init, copy) = (ptr, init, copy);
        // SAFETY: `Shares::work_through` gives start < start + rows ≤ m, so row `start` lies
        // inside the caller's m×n outputs.
        let copy_band = unsafe { offset_unless_null(copy.0, start * n) };
        // SAFETY: as above, for `init` (m×n readable) and `outs[0]` (m×n writable).
        let c = unsafe { [init.0.add(start * n), ptr.0.add(start * n), copy_band] };
        // SAFETY: avx512f and avx512vl were detected (`available`), the band's rows are in bounds, and
        // `a` and `b` address only elements inside their slices (checked by `MatRef::new`).
        unsafe { band_kernel(a, b, c, second, start, rows, store) }
    };
    let workers = if parallel { super::threads::num_threads().min(m.div_ceil(height)) } else { 1 };
    let shares = Shares::new(m, workers, height);
    super::spin_pool::run(workers, &|worker| shares.work_through(worker, &band));
}

/// The output rows of a product split among `workers`: worker w owns rows w·m/workers ..
/// (w+1)·m/workers, the parts that `split_writes` cuts a weight's update into (for the
/// seed step's 1000×100 weight, rows 0..500 and 500..1000), so in a
/// training step each core writes (in the weight gradient) and reads (in the forward
/// product's halves of the depth, `sgemm_in_depth_halves`) the rows of a weight that stay in
/// its cache. Each worker runs its rows in bands of `height`, then helps with the bands that
/// others have not started (a helper that starts late, or not at all, is no cost). Which
/// thread computes a band never changes its result.
pub(super) struct Shares {
    m: usize,
    workers: usize,
    height: usize,
    /// The next band each worker's rows have to give, counted in bands from the first row
    /// (inline for up to four workers: no allocation for the products of a training step).
    next_band: SmallVec<[AtomicUsize; 4]>,
}

impl Shares {
    pub(super) fn new(m: usize, workers: usize, height: usize) -> Shares {
        let next_band = (0..workers).map(|_| AtomicUsize::new(0)).collect();
        Shares { m, workers, height, next_band }
    }

    fn rows_of(&self, worker: usize) -> (usize, usize) {
        (worker * self.m / self.workers, (worker + 1) * self.m / self.workers)
    }

    /// Runs `band(first_row, rows)` over the bands of `worker`'s rows, then of the others'.
    pub(super) fn work_through(&self, worker: usize, band: &impl Fn(usize, usize)) {
        for owner in (0..self.workers).map(|i| (worker + i) % self.workers) {
            let (first, end) = self.rows_of(owner);
            loop {
                let start = first + self.next_band[owner].fetch_add(1, Ordering::Relaxed) * self.height;
                if start >= end {
                    break;
                }
                band(start, self.height.min(end - start));
            }
        }
    }
}

/// `sgemm_from` for a short, deep product (`crate_gemm::always_in_depth_halves`): the
/// plain products over the two halves of the depth, on two threads when `parallel` (one
/// after the other otherwise, so the bits do not depend on the threads), each into a
/// buffer of its own; then their sum, stored as `store` and `second` say.
///
/// # Safety
/// As `sgemm_from`.
unsafe fn sgemm_in_depth_halves(
    a: MatRef<'_, f32>,
    b: MatRef<'_, f32>,
    init: *const f32,
    outs: [*mut f32; 2],
    second: SecondOutput,
    store: Store<f32>,
    parallel: bool,
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let (len, half) = (m * n, k / 2);
    let mut sums: Vec<f32> = crate::storage::vec_with_capacity(2 * len);
    let sums_at = OutPtr(sums.as_mut_ptr());
    let half_product = |part: usize| {
        let (first, depth) = if part == 0 { (0, half) } else { (half, k - half) };
        // Inside `sums`, which has room for 2·len values.
        let out = sums_at.element(part * len);
        let plain = Store::Scaled { alpha: 1.0, beta: 0.0 };
        let (a_half, b_half) = (a.column_band(first, depth), b.row_band(first, depth));
        // SAFETY: avx512f and avx512vl were detected (`available`); `out` has room for the m×n
        // sums, which beta 0 does not read; the halves address only elements of `a` and `b`.
        unsafe { band_kernel(a_half, b_half, [out, out, std::ptr::null_mut()], SecondOutput::Copy, 0, m, plain) }
    };
    if parallel {
        super::spin_pool::run(2, &half_product);
    } else {
        (0..2).for_each(half_product);
    }
    let halves = [sums.as_ptr(), sums.as_ptr().wrapping_add(len)];
    // SAFETY: both halves of `sums` were written above (m×n each); the caller's contract on
    // `init` and `outs`; avx512f was detected (`available`).
    unsafe { store_sum_of_halves(halves, len, init, outs, second, store) }
}

/// Stores `halves[0] + halves[1]` (`len` values each) as `store` says from `init` into
/// `outs[0]`, and as `second` says into a non-null `outs[1]`: as the kernel's tiles store
/// their sums.
///
/// # Safety
/// `halves` and `init` (when the store reads it) must be readable for `len` values, `outs[0]`
/// and a non-null `outs[1]` writable; the CPU must have avx512f.
#[target_feature(enable = "avx512f")]
unsafe fn store_sum_of_halves(
    halves: [*const f32; 2],
    len: usize,
    init: *const f32,
    outs: [*mut f32; 2],
    second: SecondOutput,
    store: Store<f32>,
) {
    let sum_at = |mask, start: usize| {
        // SAFETY: the masked lanes, start.. at most len, lie inside both halves (caller's contract).
        let [first, second_half] = halves.map(|half| unsafe { _mm512_maskz_loadu_ps(mask, half.add(start)) });
        _mm512_add_ps(first, second_half)
    };
    // SAFETY: the caller's contract, passed on.
    unsafe { store_sums(len, sum_at, init, outs, second, store) }
}

/// Stores `sum_at(mask, start)` for the 16 values from each `start` (`len` in all), as the
/// kernel's tiles store their sums.
///
/// # Safety
/// `init` (when the store reads it) must be readable for `len` values, `outs[0]` and a non-null
/// `outs[1]` writable; `sum_at` must read only the masked lanes; the CPU must have avx512f.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn store_sums(
    len: usize,
    sum_at: impl Fn(__mmask16, usize) -> __m512,
    init: *const f32,
    outs: [*mut f32; 2],
    second: SecondOutput,
    store: Store<f32>,
) {
    for start in (0..len).step_by(16) {
        let mask = column_masks(len - start)[0];
        let sum = sum_at(mask, start);
        // SAFETY: start < len: inside a non-null second output, as in the caller's contract.
        let copy = unsafe { offset_unless_null(outs[1], start) };
        let at = [init.wrapping_add(start), outs[0].wrapping_add(start).cast_const(), copy.cast_const()];
        // The masked lanes from `start` (at most len) of `init` (when the store reads it),
        // `outs[0]` and a non-null second output lie inside them (caller's contract).
        store_tile!(
            [[sum]], [mask, 0], at, 0, second, store,
            lanes: 16, load: _mm512_maskz_loadu_ps, put: _mm512_mask_storeu_ps, stored: stored, second_of: second_of
        );
    }
}

/// `p + count`, or null when `p` is (the absent second output).
///
/// # Safety
/// A non-null `p + count` must stay inside `p`'s allocation.
pub(super) unsafe fn offset_unless_null(p: *mut f32, count: usize) -> *mut f32 {
    if p.is_null() {
        p
    } else {
        // SAFETY: the caller keeps `p + count` inside `p`'s allocation.
        unsafe { p.add(count) }
    }
}

/// Output rows `row0..row0 + rows` of `a·b`, tile by tile over the whole depth, stored as
/// `store` says from `c_in` into `c` (and as `second` says into a non-null `c_copy`), where
/// `c_in`, `c` and `c_copy` point at row `row0` of outputs with b.cols columns.
///
/// # Safety
/// As `sgemm_from`, for those rows; the CPU must have avx512f and avx512vl.
#[target_feature(enable = "avx512f,avx512vl")]
pub(super) unsafe fn band_kernel(
    a: MatRef<'_, f32>,
    b: MatRef<'_, f32>,
    [c_in, c, c_copy]: [*mut f32; 3],
    second: SecondOutput,
    row0: usize,
    rows: usize,
    store: Store<f32>,
) {
    let (k, n) = (a.cols, b.cols);
    // SAFETY: row `row0` of `a` (row0 < a.rows) starts inside `a.data`, checked by `MatRef::new`.
    let a_base = unsafe { a.data.as_ptr().offset(a.offset as isize + row0 as isize * a.row_stride) };
    // SAFETY: `MatRef::new` checked that b's first element lies inside `b.data`.
    let b_base = unsafe { b.data.as_ptr().add(b.offset) };
    let mut j = 0;
    while j < n {
        let cols = panel_width(n - j, a.row_stride != 1);
        let mut i = 0;
        while i < rows {
            // SAFETY: row0 + i < a.rows, so this row of `a` lies inside `a.data`.
            let a_tile = unsafe { a_base.offset(i as isize * a.row_stride) };
            let offset = i * n + j;
            // SAFETY: i < rows and j < n: the tile's first element is inside the band's outputs.
            let copy_tile = unsafe { offset_unless_null(c_copy, offset) };
            // SAFETY: as above, for the band's `init` and output rows.
            let c_tile = unsafe { [c_in.add(offset).cast_const(), c.add(offset).cast_const(), copy_tile.cast_const()] };
            let tile = Tile { rows: MR.min(rows - i), cols, k, a_strides: [a.row_stride, a.col_stride] };
            // SAFETY: j < n = b.cols, and b's rows are contiguous (col_stride 1), inside `b.data`; the
            // tile's rows and columns lie inside a, b and the outputs (clipped above), over its whole
            // depth (`Partial::NONE`, as a tile wider than NR needs); avx512f and avx512vl detected.
            unsafe { run_tile(tile, a_tile, (b_base.add(j), b.row_stride), c_tile, n, second, store, Partial::NONE) };
            i += MR;
        }
        j += cols;
    }
}

/// The columns of the panel that starts `left` columns before the product's last: NR, or all
/// of them when at most NR. A last whole panel and a narrow edge of at most 8 columns after it
/// run as one panel (`sgemm_panel_edge`): the edge's FMAs then reuse the panel's broadcasts of
/// A. With A's columns contiguous (A transposed), an edge of at most `EDGE_BY_ROWS` columns stays
/// apart for `edge_by_rows`, which runs it faster.
fn panel_width(left: usize, a_rows_contiguous: bool) -> usize {
    let edge = left.saturating_sub(NR);
    if (1..=8).contains(&edge) && (a_rows_contiguous || edge > EDGE_BY_ROWS) {
        left
    } else {
        NR.min(left)
    }
}

/// The extent of one microkernel call: at most MR rows and NR columns of the output (NR + 8
/// for a merged last panel, `panel_width`), over a depth of k, with A's row and column strides.
#[derive(Copy, Clone)]
pub(super) struct Tile {
    pub rows: usize,
    pub cols: usize,
    pub k: usize,
    pub a_strides: [isize; 2],
}

/// Sums over part of the depth kept between the microkernel calls of a product cut into
/// blocks of its depth (`sgemm_packed.rs`), or summed elsewhere and only stored by a tile of
/// depth 0 (`sgemm_edge_rows.rs`): a tile resumes from the sums stored at `sums`
/// (rows `ld` apart) when `resume`, and stores its sums there instead of the output unless
/// `finish`. A float32 stored and loaded back is the same value, so a product summed block
/// by block gives the bits of one summed in a single call.
#[derive(Copy, Clone)]
pub(super) struct Partial {
    pub sums: *mut f32,
    pub ld: usize,
    pub resume: bool,
    pub finish: bool,
}

impl Partial {
    /// A tile summed over its whole depth in one call.
    pub const NONE: Partial = Partial { sums: std::ptr::null_mut(), ld: 0, resume: false, finish: true };
}

/// One microkernel call on `tile`: A from `a_tile` through the tile's strides, B from
/// `b_tile` with rows `b_rs` apart (contiguous columns), the outputs as `micro` takes them.
///
/// # Safety
/// The tile's rows and columns over its depth must lie inside A, B and the outputs (and
/// `partial.sums` when it is used); a tile wider than NR (at most NR + 8 columns) must be
/// summed over its whole depth (`Partial::NONE`); the CPU must have avx512f and avx512vl.
#[target_feature(enable = "avx512f,avx512vl")]
#[inline]
pub(super) unsafe fn run_tile(
    tile: Tile,
    a_tile: *const f32,
    (b_tile, b_rs): (*const f32, isize),
    c_tile: [*const f32; 3],
    ldc: usize,
    second: SecondOutput,
    store: Store<f32>,
    partial: Partial,
) {
    if tile.cols <= EDGE_BY_ROWS && tile.a_strides[0] == 1 && !partial.resume && partial.finish {
        // SAFETY: this function's contract.
        unsafe { super::sgemm_edge_rows::edge_by_rows(tile, a_tile, (b_tile, b_rs), c_tile, ldc, second, store) };
        return;
    }
    debug_assert!(tile.cols <= NR + 8 && (tile.cols <= NR || !partial.resume && partial.finish));
    let (k, a_strides, masks) = (tile.k, tile.a_strides, column_masks(tile.cols));
    let width = tile.cols;
    macro_rules! tile {
        ($kernel:ident, $h:literal, $v:literal, $full:literal, $masks:expr) => {
            // SAFETY: the tile's H rows and V masked vectors of columns (all lanes when FULL) lie
            // inside a, b, the outputs and the partial sums (this function's contract); avx512f
            // and avx512vl are enabled here.
            unsafe { $kernel::<$h, $v, $full>(k, a_tile, a_strides, b_tile, b_rs, c_tile, ldc, $masks, second, store, partial) }
        };
        // Full tiles load B unmasked: Zen 4 runs the masked loads of the loop over k slower
        // (see "Full tiles load B unmasked" in docs/performance.md).
        ($kernel:ident, $h:literal, $v:literal, lanes $lanes:literal, $masks:expr) => {
            if width == $lanes {
                tile!($kernel, $h, $v, true, $masks)
            } else {
                tile!($kernel, $h, $v, false, $masks)
            }
        };
        ($h:literal) => {
            if width > NR {
                let edge_mask = column_masks(width - NR)[0] as __mmask8;
                // SAFETY: as above, with NR + at most 8 columns summed over the whole depth
                // (this function's contract).
                unsafe { micro_with_edge::<$h>(k, a_tile, a_strides, b_tile, b_rs, c_tile, ldc, edge_mask, second, store) }
            } else if width <= 8 {
                tile!(micro_narrow, $h, 1, lanes 8, [masks[0] as __mmask8, 0])
            } else if width <= 16 {
                tile!(micro, $h, 1, lanes 16, masks)
            } else {
                tile!(micro, $h, 2, lanes 32, masks)
            }
        };
    }
    match tile.rows {
        8 => tile!(8),
        7 => tile!(7),
        6 => tile!(6),
        5 => tile!(5),
        4 => tile!(4),
        3 => tile!(3),
        2 => tile!(2),
        _ => tile!(1),
    }
}

fn column_masks(width: usize) -> [__mmask16; 2] {
    let lane = |w: usize| if w >= 16 { 0xFFFF } else { ((1u32 << w) - 1) as __mmask16 };
    [lane(width), lane(width.saturating_sub(16))]
}

/// Stores a tile's sums `acc` (H rows of V vectors of `lanes` lanes, `masks` saying which are
/// the tile's) as `store` says from `init` into `out`, and as `second` says into `copy` unless
/// it is null, where `[init, out, copy]` is `c_tile` and rows are `ldc` apart. Written once for
/// every microkernel; a macro because, as a function, it was not inlined into the 32 instances
/// of `micro`, and the call took the tile's sums through memory (2.5–4 µs more on 1000×64×96ᵀ
/// and 64×1000×100). Used inside an unsafe function whose contract puts the masked lanes of the
/// tile's rows inside the outputs.
macro_rules! store_tile {
    (
        $acc:expr, $masks:expr, $c_tile:expr, $ldc:expr, $second:expr, $store:expr,
        lanes: $lanes:literal, load: $load:ident, put: $put:ident, stored: $stored:ident, second_of: $second_of:ident $(,)?
    ) => {{
        let ([c_in, c, c_copy], masks, ldc): ([*const f32; 3], _, usize) = ($c_tile, $masks, $ldc);
        for (r, row) in $acc.iter().enumerate() {
            // Row r < H of the tile and its columns: inside the outputs by the caller's contract,
            // as long as only masked lanes are touched. Pointer arithmetic wraps (never reads).
            let (src, dst) = (c_in.wrapping_add(r * ldc), c.wrapping_add(r * ldc).cast_mut());
            for (half, &sum) in row.iter().enumerate() {
                let (q, p) = (src.wrapping_add($lanes * half), dst.wrapping_add($lanes * half));
                // SAFETY: the masked lanes of `q` lie inside `init` (caller's contract).
                let init = || unsafe { $load(masks[half], q) };
                let result = $stored(sum, init, $store);
                // SAFETY: the masked lanes of `p` lie inside the output (caller's contract).
                unsafe { $put(p, masks[half], result) };
                if !c_copy.is_null() {
                    let copy_at = c_copy.wrapping_add(r * ldc + $lanes * half).cast_mut();
                    // SAFETY: the masked lanes of `copy_at` lie inside the second output (caller's contract).
                    unsafe { $put(copy_at, masks[half], $second_of(result, $second)) };
                }
            }
        }
    }};
}
pub(super) use store_tile;

/// The microkernel and its store, written once for a vector type: `micro` and `stored`
/// on 16-lane zmm vectors, `micro_narrow` and `stored_narrow` on 8-lane ymm vectors for a
/// last tile of at most 8 columns (Zen 4 runs a 16-lane FMA as two 8-lane halves, so an
/// 8-column edge on a 16-lane vector would pay for 8 lanes that are masked off). Each lane
/// computes the same operations in the same order either way, so the bits are the same.
macro_rules! microkernel {
    (
        $micro:ident, $stored:ident, $second_of:ident, $features:literal, $vector:ty, $mask:ty, lanes: $lanes:literal,
        zero: $zero:ident, splat: $splat:ident, load: $load:ident, load_all: $load_all:ident, store: $store:ident, fmadd: $fmadd:ident,
        add: $add:ident, mul: $mul:ident, div: $div:ident, max: $max:ident, cmp: $cmp:ident, keep: $keep:ident $(,)?
    ) => {
        /// C[H×LV] = the product of A[H×k] and B[k×LV] (L lanes per vector), stored as `store`
        /// says, with H ≤ 8 rows, V ≤ 2 vectors of columns (one for narrow edges, so masked-off
        /// lanes waste less work), masked columns. FULL says all V·L columns are the tile's: B
        /// is then loaded without masks in the loop over k, the only difference.
        #[target_feature(enable = $features)]
        #[inline]
        unsafe fn $micro<const H: usize, const V: usize, const FULL: bool>(
            k: usize,
            a: *const f32,
            [a_rs, a_cs]: [isize; 2],
            b: *const f32,
            b_rs: isize,
            c_tile: [*const f32; 3],
            ldc: usize,
            masks: [$mask; 2],
            second: SecondOutput,
            store: Store<f32>,
            partial: Partial,
        ) {
            let mut acc = [[$zero(); V]; H];
            if partial.resume {
                for (r, row) in acc.iter_mut().enumerate() {
                    for (v, lane) in row.iter_mut().enumerate() {
                        // SAFETY: the masked lanes of row r < H of the partial sums lie inside
                        // them (caller's contract); masked-off lanes are not read.
                        *lane = unsafe { $load(masks[v], partial.sums.add(r * partial.ld + $lanes * v)) };
                    }
                }
            }
            let mut b_row = b;
            let mut a_col = a;
            for _ in 0..k {
                let mut bv = [$zero(); V];
                for (v, slot) in bv.iter_mut().enumerate() {
                    *slot = if FULL {
                        // SAFETY: with FULL every lane of the tile's V vectors lies inside B's row
                        // (caller's contract).
                        unsafe { $load_all(b_row.add($lanes * v)) }
                    } else {
                        // SAFETY: the caller guarantees the masked lanes of B's row lie inside B;
                        // masked-off lanes are not read.
                        unsafe { $load(masks[v], b_row.add($lanes * v)) }
                    };
                }
                for (r, row) in acc.iter_mut().enumerate() {
                    // SAFETY: r < H rows of A, inside A by the caller's contract.
                    let av = $splat(unsafe { *a_col.offset(r as isize * a_rs) });
                    for (lane, &b_lane) in row.iter_mut().zip(&bv) {
                        *lane = $fmadd(av, b_lane, *lane);
                    }
                }
                // The last step points one stride past the matrix, never read: wrapping arithmetic
                // keeps computing that address defined.
                b_row = b_row.wrapping_offset(b_rs);
                a_col = a_col.wrapping_offset(a_cs);
            }
            if !partial.finish {
                for (r, row) in acc.iter().enumerate() {
                    for (v, &sum) in row.iter().enumerate() {
                        // SAFETY: as for the loads of the partial sums above.
                        unsafe { $store(partial.sums.add(r * partial.ld + $lanes * v), masks[v], sum) };
                    }
                }
                return;
            }
            store_tile!(
                acc, masks, c_tile, ldc, second, store,
                lanes: $lanes, load: $load, put: $store, stored: $stored, second_of: $second_of
            );
        }

        /// What the second output holds where the first holds `result`.
        #[target_feature(enable = $features)]
        #[inline]
        pub(super) fn $second_of(result: $vector, second: SecondOutput) -> $vector {
            match second {
                SecondOutput::Copy => result,
                // max(c, v) is v when v is NaN, and c only when c > v: numpy's maximum(v, c).
                SecondOutput::AtLeast(c) => $max($splat(c as f32), result),
                // Kept where v > 0 or v is NaN ("not less or equal, unordered"), else +0.
                SecondOutput::Relu => $keep($cmp::<_CMP_NLE_UQ>(result, $zero()), result),
            }
        }

        /// The value `store` makes of the product `sum`, reading `init` only where it needs it.
        #[target_feature(enable = $features)]
        #[inline]
        pub(super) fn $stored(sum: $vector, init: impl Fn() -> $vector, store: Store<f32>) -> $vector {
            match store {
                Store::Scaled { alpha, beta } => {
                    let value = if alpha == 1.0 { sum } else { $mul($splat(alpha), sum) };
                    if beta == 0.0 {
                        value
                    } else {
                        $fmadd($splat(beta), init(), value)
                    }
                }
                Store::SgdStep { zero, scale, divide, alpha } => {
                    let grad = $add($splat(zero), sum);
                    let scaled = if divide { $div(grad, $splat(scale)) } else { $mul(grad, $splat(scale)) };
                    let step = if alpha == 1.0 { scaled } else { $mul($splat(alpha), scaled) };
                    $add(init(), step)
                }
            }
        }
    };
}

microkernel!(
    micro, stored, second_of, "avx512f", __m512, __mmask16, lanes: 16,
    zero: _mm512_setzero_ps, splat: _mm512_set1_ps, load: _mm512_maskz_loadu_ps, load_all: _mm512_loadu_ps, store: _mm512_mask_storeu_ps,
    fmadd: _mm512_fmadd_ps, add: _mm512_add_ps, mul: _mm512_mul_ps, div: _mm512_div_ps, max: _mm512_max_ps,
    cmp: _mm512_cmp_ps_mask, keep: _mm512_maskz_mov_ps,
);

microkernel!(
    micro_narrow, stored_narrow, second_of_narrow, "avx512f,avx512vl", __m256, __mmask8, lanes: 8,
    zero: _mm256_setzero_ps, splat: _mm256_set1_ps, load: _mm256_maskz_loadu_ps, load_all: _mm256_loadu_ps, store: _mm256_mask_storeu_ps,
    fmadd: _mm256_fmadd_ps, add: _mm256_add_ps, mul: _mm256_mul_ps, div: _mm256_div_ps, max: _mm256_max_ps,
    cmp: _mm256_cmp_ps_mask, keep: _mm256_maskz_mov_ps,
);

#[cfg(test)]
#[path = "sgemm_avx512_tests.rs"]
mod tests;
