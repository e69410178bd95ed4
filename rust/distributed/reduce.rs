//! Summing over the ranks in a fixed order: element i of the result is
//! `((x₀ + x₁) + x₂) + …`, the ranks' values added in rank order, on every rank and in
//! every rerun. `MPI_Allreduce` promises neither (its order depends on the algorithm the
//! library picks for the size, and may differ between ranks).
//!
//! Small buffers are allgathered and summed locally (one collective, `size` copies of
//! the buffer). Larger ones are reduced as a ring allreduce would move them, in two
//! collectives: an alltoall gives each rank every rank's part of its own block, which it
//! sums in rank order, and an allgather hands the summed blocks to everyone. Each rank then
//! sends and receives 2(p−1)/p of the buffer, as with MPI's own large-message allreduce.

use super::{as_bytes, as_bytes_mut, Communicator, Plain};
use crate::error::Result;
use std::ops::{AddAssign, Div};

/// Up to this many bytes gathered (the buffer times the ranks), a sum allgathers.
pub const GATHER_LIMIT: usize = 256 * 1024;
/// Buffers are summed in segments of at most this many bytes (MPI counts are `int`).
pub const SEGMENT_BYTES: usize = 256 * 1024 * 1024;

/// How an allreduce sums over the ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Summation {
    /// In rank order (see the module docs): bitwise reproducible.
    RankOrder,
    /// `MPI_Allreduce` with `MPI_SUM`: the library's order.
    Mpi,
}

/// An element type an allreduce can average.
pub trait Summable: Plain + AddAssign + Div<Output = Self> {
    const IS_F64: bool;
    fn from_count(count: usize) -> Self;
}

impl Summable for f32 {
    const IS_F64: bool = false;
    fn from_count(count: usize) -> Self {
        count as f32
    }
}

impl Summable for f64 {
    const IS_F64: bool = true;
    fn from_count(count: usize) -> Self {
        count as f64
    }
}

/// A vector of `n` elements, from the buffer pool when it holds one (no page faults).
pub fn pooled<T: Plain>(n: usize) -> Vec<T> {
    let mut v = crate::buffer_pool::take::<T>(n).unwrap_or_else(|| Vec::with_capacity(n));
    v.resize(n, T::default());
    v
}

/// The mean of `values` over the ranks (the sum divided by the number of ranks).
pub fn average<T: Summable>(comm: &dyn Communicator, values: &[T], summation: Summation) -> Result<Vec<T>> {
    let mut out = pooled(values.len());
    let per_segment = (SEGMENT_BYTES / std::mem::size_of::<T>()).max(1);
    for (part, out_part) in values.chunks(per_segment).zip(out.chunks_mut(per_segment)) {
        match summation {
            Summation::RankOrder => sum_in_rank_order(comm, part, out_part, true)?,
            Summation::Mpi => {
                comm.allreduce_sum(as_bytes(part), as_bytes_mut(out_part), T::IS_F64)?;
                divide(out_part, comm.size());
            }
        }
    }
    Ok(out)
}

fn divide<T: Summable>(values: &mut [T], ranks: usize) {
    if ranks > 1 {
        let ranks = T::from_count(ranks);
        values.iter_mut().for_each(|v| *v = *v / ranks);
    }
}

/// Sums `values` over the ranks into `out`, in rank order; with `mean`, divides by the number of ranks.
pub fn sum_in_rank_order<T: Summable>(comm: &dyn Communicator, values: &[T], out: &mut [T], mean: bool) -> Result<()> {
    let (ranks, n) = (comm.size(), values.len());
    if ranks <= 1 || n == 0 {
        out.copy_from_slice(values);
        return Ok(());
    }
    if n * ranks * std::mem::size_of::<T>() <= GATHER_LIMIT {
        let mut gathered = pooled(n * ranks);
        comm.allgather(as_bytes(values), as_bytes_mut(&mut gathered))?;
        sum_blocks(&gathered, n, out);
        crate::buffer_pool::give(gathered);
        if mean {
            divide(out, ranks);
        }
        return Ok(());
    }
    let block = n.div_ceil(ranks);
    let mut send = pooled(block * ranks);
    send[..n].copy_from_slice(values);
    let mut received = pooled(block * ranks);
    comm.alltoall(as_bytes(&send), as_bytes_mut(&mut received))?;
    let mut mine = pooled(block);
    sum_blocks(&received, block, &mut mine);
    if mean {
        divide(&mut mine, ranks);
    }
    if out.len() == block * ranks {
        comm.allgather(as_bytes(&mine), as_bytes_mut(out))?;
    } else {
        comm.allgather(as_bytes(&mine), as_bytes_mut(&mut send))?;
        out.copy_from_slice(&send[..n]);
    }
    for v in [send, received, mine] {
        crate::buffer_pool::give(v);
    }
    Ok(())
}

/// `out[i] = blocks[i] + blocks[n + i] + …`, added in block order.
fn sum_blocks<T: Summable>(blocks: &[T], n: usize, out: &mut [T]) {
    out.copy_from_slice(&blocks[..n]);
    for block in blocks[n..].chunks_exact(n) {
        out.iter_mut().zip(block).for_each(|(o, &b)| *o += b);
    }
}

#[cfg(test)]
#[path = "reduce_tests.rs"]
pub(crate) mod tests;
