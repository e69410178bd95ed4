//! Large float32 products on AVX-512 machines: the tiles of `sgemm_avx512.rs`, run over
//! blocks of B copied into contiguous panels.
//!
//! Unpacked, every 8-row tile streams a strip of B whose rows lie n·4 bytes apart, which
//! leaves the cache once B passes 1 MiB. Here each thread takes a share of B's columns,
//! and cuts it into blocks of up to `BLOCK_COLS` columns and `block_depth(k)` rows of B,
//! copied into panels of 32 columns (one tile's width, rows 128 bytes apart). Every 8-row
//! tile of A then runs across the whole block (its A rows stay in L1, the block in L2 and
//! L3). A tile that is not over the last block of the depth keeps its sums in a buffer of
//! the thread's own, and the next block resumes from them: each output is the same chain of
//! multiply-adds over k as in the unpacked kernel, so the bits are the same as its bits, at
//! any thread count and whichever thread computes a block.

#![allow(clippy::too_many_arguments)]

use super::matmul::{MatRef, SecondOutput, Store};
use super::sgemm_avx512::{offset_unless_null, run_tile, OutPtr, Partial, Shares, Tile, MR, NR};

/// Rows of B per block of a deep product: the depth one tile sums before it moves on to the
/// next panel.
const BLOCK_DEPTH: usize = 512;
/// A depth up to this is summed in one block (up to 4 MiB of B), so that no tile keeps partial
/// sums: storing and reloading the sums of a whole block of rows slowed the weight gradients'
/// products, of depth 1024 (`cargo run --profile quick --example large_products`; see "The
/// whole depth in one block" in docs/performance.md).
const WHOLE_DEPTH_MAX: usize = 1024;
/// Columns of B per block (a multiple of `NR`): with 512 rows of depth, a 2 MiB block.
const BLOCK_COLS: usize = 1024;
/// Output rows whose sums a thread keeps between blocks of the depth, at most: the block's
/// rows are run this many at a time (an 8 MiB buffer of sums per thread).
const BLOCK_ROWS: usize = 2048;

/// The rows of B in each block of a product of depth `k`: all of them up to `WHOLE_DEPTH_MAX`.
fn block_depth(k: usize) -> usize {
    if k <= WHOLE_DEPTH_MAX {
        k.max(1)
    } else {
        BLOCK_DEPTH
    }
}

/// `sgemm_avx512::sgemm_from` for large products (same contract, same bits); on all
/// threads when `parallel`.
///
/// # Safety
/// As `sgemm_avx512::sgemm_from`.
pub unsafe fn sgemm_packed_from(
    a: MatRef<'_, f32>,
    b: MatRef<'_, f32>,
    init: *const f32,
    outs: [*mut f32; 2],
    second: SecondOutput,
    store: Store<f32>,
    parallel: bool,
) {
    debug_assert!(b.col_stride == 1 && super::sgemm_avx512::available());
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let panels = n.div_ceil(NR);
    let workers = if parallel { super::threads::num_threads().min(panels) } else { 1 };
    let panels_per_block = (BLOCK_COLS / NR).min(panels.div_ceil(workers));
    // Taken before anything is written, so that running out of memory changes nothing.
    let buffers: Vec<Buffers> = (0..workers).map(|_| Buffers::new(m, k, panels_per_block)).collect();
    let shares = Shares::new(panels, workers, panels_per_block);
    let outputs = Outputs { init: OutPtr(init.cast_mut()), out: OutPtr(outs[0]), copy: OutPtr(outs[1]) };
    let poller = crate::interrupt::Poller::here();
    super::spin_pool::run(workers, &|worker| {
        let buffers = &buffers[worker];
        shares.work_through(worker, &|first_panel, count| {
            let columns = (first_panel * NR, (first_panel + count).saturating_mul(NR).min(n));
            // SAFETY: the columns lie inside b and the outputs (panels ≤ n.div_ceil(NR));
            // `buffers` are this worker's alone, sized for `count ≤ panels_per_block` panels;
            // the caller's contract on the outputs, a, b and the CPU.
            unsafe { column_block(a, b, outputs, columns, buffers, second, store, poller) }
        });
    });
}

/// The product's outputs, sent to the workers that write disjoint columns of them.
#[derive(Copy, Clone)]
struct Outputs {
    init: OutPtr,
    out: OutPtr,
    copy: OutPtr,
}

/// One worker's panels of B and its sums kept between blocks of the depth: recycled buffers
/// (new memory only on the first large product), given back to the pool when dropped.
struct Buffers {
    panels: OutPtr,
    sums: OutPtr,
    memory: [Vec<f32>; 2],
}

impl Buffers {
    fn new(m: usize, k: usize, panels: usize) -> Buffers {
        let width = panels * NR;
        let sums_len = if block_depth(k) < k { BLOCK_ROWS.min(m) * width } else { 0 };
        let lengths = [block_depth(k) * width, sums_len];
        let mut memory = lengths.map(crate::storage::overwritable_vec::<f32>);
        let [panels, sums] = [0, 1].map(|i| OutPtr(memory[i].as_mut_ptr()));
        Buffers { panels, sums, memory }
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        std::mem::take(&mut self.memory).into_iter().for_each(crate::buffer_pool::give);
    }
}

/// The output columns `columns.0..columns.1` (at most `BLOCK_COLS`), all rows, block by
/// block of rows and depth. Polls for Ctrl-C after each block.
///
/// # Safety
/// The columns must lie inside b and the outputs, `buffers` must be this thread's alone and
/// sized for these columns, plus `sgemm_from`'s contract.
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn column_block(
    a: MatRef<'_, f32>,
    b: MatRef<'_, f32>,
    outputs: Outputs,
    columns: (usize, usize),
    buffers: &Buffers,
    second: SecondOutput,
    store: Store<f32>,
    poller: crate::interrupt::Poller,
) {
    let (m, k) = (a.rows, a.cols);
    for first_row in (0..m).step_by(BLOCK_ROWS) {
        let rows = (first_row, BLOCK_ROWS.min(m - first_row));
        for first in (0..k).step_by(block_depth(k)) {
            let depth = (first, block_depth(k).min(k - first));
            // SAFETY: rows `depth` of b and `columns` lie inside b; the panels hold
            // block_depth(k)·width values (`Buffers::new`).
            unsafe { pack_panels(b, depth, columns, buffers.panels.0) };
            // SAFETY: as this function's contract, for the block just packed.
            unsafe { multiply_block(a, b.cols, outputs, rows, depth, columns, buffers, second, store) };
            poller.poll();
        }
    }
}

/// Copies rows `depth.0..depth.0 + depth.1` of b's `columns` into panels of `NR` columns,
/// one after the other, each `depth.1` rows of `NR` values (the last one's unused lanes left
/// as they were).
///
/// # Safety
/// The rows and columns must lie inside b; `panels` must have room for `depth.1` rows of
/// the columns rounded up to `NR`.
unsafe fn pack_panels(
    b: MatRef<'_, f32>,
    (first, depth): (usize, usize),
    (start, end): (usize, usize),
    panels: *mut f32,
) {
    for (index, column) in (start..end).step_by(NR).enumerate() {
        let width = NR.min(end - column);
        for row in 0..depth {
            let source = b.offset as isize + (first + row) as isize * b.row_stride + column as isize;
            // SAFETY: element (first + row, column) and the `width` after it lie inside b's data
            // (this function's contract; `MatRef::new` checked b's extent); the destination row
            // lies inside `panels`, which nothing else touches during the copy.
            unsafe {
                let target = panels.add((index * depth + row) * NR);
                std::ptr::copy_nonoverlapping(b.data.as_ptr().offset(source), target, width);
            }
        }
    }
}

/// Every tile of output rows `rows` and `columns` over one block of the depth, with B's
/// block packed in `buffers.panels`: tile rows outer, so a tile's rows of A stay in L1
/// while it runs across the block.
///
/// # Safety
/// As `column_block`, with the block of B packed by `pack_panels`.
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn multiply_block(
    a: MatRef<'_, f32>,
    n: usize,
    outputs: Outputs,
    (first_row, rows): (usize, usize),
    (first, depth): (usize, usize),
    (start, end): (usize, usize),
    buffers: &Buffers,
    second: SecondOutput,
    store: Store<f32>,
) {
    let (resume, finish) = (first > 0, first + depth == a.cols);
    let sums_ld = (end - start).next_multiple_of(NR);
    for i in (0..rows).step_by(MR) {
        let row = first_row + i;
        let height = MR.min(rows - i);
        let a_at = a.offset as isize + row as isize * a.row_stride + first as isize * a.col_stride;
        // SAFETY: row < a.rows and first < a.cols: an element of a (`MatRef::new` checked its extent).
        let a_tile = unsafe { a.data.as_ptr().offset(a_at) };
        let a_strides = [a.row_stride, a.col_stride];
        for (index, column) in (start..end).step_by(NR).enumerate() {
            let tile = Tile { rows: height, cols: NR.min(end - column), k: depth, a_strides };
            let offset = row * n + column;
            // SAFETY: row < a.rows and column < n: element `offset` lies inside a non-null second
            // output (the caller's contract).
            let copy = unsafe { offset_unless_null(outputs.copy.0, offset) };
            let c_tile = [outputs.init.element(offset), outputs.out.element(offset), copy].map(<*mut f32>::cast_const);
            let sums = buffers.sums.element(i * sums_ld + index * NR);
            let partial = Partial { sums, ld: sums_ld, resume, finish };
            let b_panel = buffers.panels.element(index * depth * NR).cast_const();
            if resume {
                prefetch_rows(sums.wrapping_add(NR), sums_ld, height);
            }
            // SAFETY: the tile's rows and columns lie inside a, the packed panel, the outputs
            // and this worker's sums (i < rows ≤ BLOCK_ROWS, columns within sums_ld); avx512f
            // and avx512vl are enabled here.
            unsafe { run_tile(tile, a_tile, (b_panel, NR as isize), c_tile, n, second, store, partial) };
        }
    }
}

/// Asks for the `rows` rows of a tile's sums (rows `ld` apart, two cache lines each) to be
/// brought into the cache: the next tile resumes from them at its start. Prefetches never
/// fault, so an address past the sums is harmless.
#[target_feature(enable = "avx512f")]
fn prefetch_rows(tile: *const f32, ld: usize, rows: usize) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    for r in 0..rows {
        let row = tile.wrapping_add(r * ld).cast::<i8>();
        _mm_prefetch::<_MM_HINT_T0>(row);
        _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(64));
    }
}

#[cfg(test)]
#[path = "sgemm_packed_tests.rs"]
mod tests;
