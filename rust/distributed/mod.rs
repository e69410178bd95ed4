//! Collectives between processes for data-parallel training (static mode's
//! `HorovodAllreduce` and `HorovodBroadcast` nodes, see `ops::collective`).
//!
//! The core only knows the [`Communicator`] trait: byte-level collectives on one
//! communicator. `dl` implements it by calling MPI directly, resolving `MPI_*` from
//! the libmpi that mpi4py already loaded (no MPI at build time, no MPI linked into the
//! wheel); the bindings implement it over mpi4py when that is not possible.
//! `reduce` sums over the ranks in a fixed order, so every rank (and every rerun) gets
//! the same bits; `agree` checks that the ranks call a collective on the same layout.

pub mod agree;
pub mod dl;
pub mod reduce;

use crate::error::Result;
use std::sync::atomic::{AtomicU64, Ordering};

/// One communicator's collectives on raw bytes. `allgather` and `alltoall` take the same
/// number of bytes from every rank: `recv` is `size()` times `send` long. Every rank of the
/// communicator must call the same collectives in the same order.
pub trait Communicator: Send + Sync {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// `recv[r·n..(r+1)·n]` receives rank r's `send` (n bytes).
    fn allgather(&self, send: &[u8], recv: &mut [u8]) -> Result<()>;
    /// Block j of `send` (n/size bytes) goes to rank j; block r of `recv` comes from rank r.
    fn alltoall(&self, send: &[u8], recv: &mut [u8]) -> Result<()>;
    /// Copies rank `root`'s `buffer` into every rank's.
    fn broadcast(&self, buffer: &mut [u8], root: usize) -> Result<()>;
    /// MPI's own `MPI_Allreduce` with `MPI_SUM` on float32 (`f64 == false`) or float64
    /// values, in whatever order the library sums.
    fn allreduce_sum(&self, send: &[u8], recv: &mut [u8], f64: bool) -> Result<()>;
    /// How the collectives reach MPI, for messages and benchmarks.
    fn transport(&self) -> String;
}

/// Values that are plain bytes both ways: no padding, and every bit pattern is a value.
///
/// # Safety
/// Only for types for which that holds (the primitive integers and floats).
pub unsafe trait Plain: Copy + Default + Send + Sync + 'static {}

// SAFETY: primitive numbers: no padding, every bit pattern is a valid value.
unsafe impl Plain for f32 {}
// SAFETY: as above.
unsafe impl Plain for f64 {}
// SAFETY: as above.
unsafe impl Plain for i32 {}
// SAFETY: as above.
unsafe impl Plain for i64 {}
// SAFETY: as above.
unsafe impl Plain for u8 {}

pub fn as_bytes<T: Plain>(values: &[T]) -> &[u8] {
    // SAFETY: `T: Plain` has no padding, so all `size_of_val(values)` bytes are initialised,
    // and the slice borrows `values` for its whole life.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values)) }
}

pub fn as_bytes_mut<T: Plain>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: `T: Plain` accepts every bit pattern, so any bytes written leave valid values;
    // the slice borrows `values` mutably and exclusively for its whole life.
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(values)) }
}

static COLLECTIVE_NANOS: AtomicU64 = AtomicU64::new(0);
static COLLECTIVE_CALLS: AtomicU64 = AtomicU64::new(0);

/// Adds one collective node's run (its wait for the other ranks included) to the totals.
pub fn record_collective(elapsed: std::time::Duration) {
    COLLECTIVE_NANOS.fetch_add(elapsed.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    COLLECTIVE_CALLS.fetch_add(1, Ordering::Relaxed);
}

/// How many collective nodes ran, and the seconds they took, since the last call; resets both.
pub fn take_collective_time() -> (u64, f64) {
    let nanos = COLLECTIVE_NANOS.swap(0, Ordering::Relaxed);
    (COLLECTIVE_CALLS.swap(0, Ordering::Relaxed), nanos as f64 * 1e-9)
}

/// A communicator of one rank, for the tests: every collective copies.
#[cfg(test)]
pub struct Alone;

#[cfg(test)]
impl Communicator for Alone {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn allgather(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        recv.copy_from_slice(send);
        Ok(())
    }
    fn alltoall(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        recv.copy_from_slice(send);
        Ok(())
    }
    fn broadcast(&self, _buffer: &mut [u8], _root: usize) -> Result<()> {
        Ok(())
    }
    fn allreduce_sum(&self, send: &[u8], recv: &mut [u8], _f64: bool) -> Result<()> {
        recv.copy_from_slice(send);
        Ok(())
    }
    fn transport(&self) -> String {
        "one rank".into()
    }
}
