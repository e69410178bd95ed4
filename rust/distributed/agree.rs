//! Before a collective moves data, the ranks check that they agree on what it moves:
//! which collective, on how many tensors, of which dtypes and shapes. A small header is
//! allgathered on every call (one latency); only when the headers differ do the ranks
//! exchange their whole layouts, to name the first tensor they disagree on. Every rank
//! raises the same error, so none is left waiting in the collective.

use super::{as_bytes, as_bytes_mut, Communicator};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::fmt_shape;

/// What one rank passes to a collective.
pub struct Layout<'a> {
    /// The collective (`HorovodAllreduce`, `HorovodBroadcast`).
    pub op: &'a str,
    /// A number every rank must pass alike (the broadcast's root).
    pub extra: i64,
    /// The tensors' names, for messages.
    pub names: &'a [String],
    pub tensors: Vec<(DType, &'a [usize])>,
}

/// Dims beyond this many are folded into one in the exchanged record (for messages only).
const MAX_DIMS: usize = 8;
const TENSOR_RECORD: usize = 2 + MAX_DIMS;

fn dtype_code(dtype: DType) -> i64 {
    DType::ALL.iter().position(|&d| d == dtype).map_or(-1, |p| p as i64)
}

/// FNV-1a: the same on every rank and in every process (unlike std's seeded hasher).
fn fnv(values: impl IntoIterator<Item = i64>) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for v in values {
        for byte in v.to_le_bytes() {
            hash = (hash ^ byte as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash as i64
}

impl Layout<'_> {
    fn tensor_record(&self, i: usize) -> [i64; TENSOR_RECORD] {
        let mut record = [-1; TENSOR_RECORD];
        if let Some((dtype, shape)) = self.tensors.get(i) {
            record[0] = dtype_code(*dtype);
            record[1] = shape.len() as i64;
            for (slot, &d) in record[2..].iter_mut().zip(shape.iter()) {
                *slot = d as i64;
            }
        }
        record
    }

    fn header(&self) -> [i64; 4] {
        let records = (0..self.tensors.len()).flat_map(|i| self.tensor_record(i));
        let full_shapes = self.tensors.iter().flat_map(|(_, s)| s.iter().map(|&d| d as i64));
        [fnv(self.op.bytes().map(i64::from)), self.extra, self.tensors.len() as i64, fnv(records.chain(full_shapes))]
    }
}

fn describe(record: &[i64]) -> String {
    if record[0] < 0 {
        return "no tensor".into();
    }
    let dtype = DType::ALL.get(record[0] as usize).map_or("?", |d| d.name());
    let ndim = record[1].max(0) as usize;
    let dims: Vec<usize> = record[2..2 + ndim.min(MAX_DIMS)].iter().map(|&d| d as usize).collect();
    let more = if ndim > MAX_DIMS { " (more dims)" } else { "" };
    format!("{dtype} {}{more}", fmt_shape(&dims))
}

/// Checks that every rank calls the same collective on the same layout; the same error on
/// every rank when not.
pub fn check(comm: &dyn Communicator, layout: &Layout<'_>) -> Result<()> {
    let size = comm.size();
    if size <= 1 {
        return Ok(());
    }
    let header = layout.header();
    let mut headers = vec![0i64; 4 * size];
    comm.allgather(as_bytes(&header), as_bytes_mut(&mut headers))?;
    let headers: Vec<&[i64]> = headers.chunks_exact(4).collect();
    if headers.iter().all(|h| *h == headers[0]) {
        return Ok(());
    }
    let op = layout.op;
    if headers.iter().any(|h| h[0] != headers[0][0]) {
        return Err(Error::InvalidArgument(format!(
            "{op} on rank {}: the ranks ran different collectives at the same point; every rank must build the \
             same graph and run the same fetches",
            comm.rank()
        )));
    }
    if headers.iter().any(|h| h[1] != headers[0][1]) {
        let values: Vec<String> = headers.iter().enumerate().map(|(r, h)| format!("rank {r}: {}", h[1])).collect();
        return Err(Error::InvalidArgument(format!(
            "{op}: the ranks passed different roots ({}); pass the same root_rank on every rank",
            values.join("; ")
        )));
    }
    // The ranks know each other's tensor counts now: all exchange that many records.
    let most = headers.iter().map(|h| h[2].max(0) as usize).max().unwrap_or(0);
    let mine: Vec<i64> = (0..most).flat_map(|i| layout.tensor_record(i)).collect();
    let mut all = vec![0i64; mine.len() * size];
    comm.allgather(as_bytes(&mine), as_bytes_mut(&mut all))?;
    let record = |rank: usize, i: usize| {
        let start = (rank * most + i) * TENSOR_RECORD;
        &all[start..start + TENSOR_RECORD]
    };
    let differs = (0..most).find(|&i| (1..size).any(|r| record(r, i) != record(0, i)));
    let Some(i) = differs else {
        let counts: Vec<String> = headers.iter().enumerate().map(|(r, h)| format!("rank {r}: {}", h[2])).collect();
        return Err(Error::Shape(format!(
            "{op}: the ranks' tensors differ in dims beyond the {MAX_DIMS}th or in their number ({}); every rank \
             must pass the same tensors",
            counts.join("; ")
        )));
    };
    let name = layout.names.get(i).map_or_else(|| format!("tensor {i}"), |n| format!("'{n}'"));
    let per_rank: Vec<String> = (0..size).map(|r| format!("rank {r}: {}", describe(record(r, i)))).collect();
    let dtypes_differ = (1..size).any(|r| record(r, i)[0] != record(0, i)[0]);
    let message = format!(
        "{op}: the ranks disagree on {name} ({}); every rank must build the same graph, with the same shapes \
         and dtypes",
        per_rank.join("; ")
    );
    Err(if dtypes_differ { Error::DType(message) } else { Error::Shape(message) })
}

#[cfg(test)]
mod tests {
    use super::super::reduce::tests::on_thread_ranks;
    use super::*;

    #[test]
    fn ranks_that_disagree_on_a_shape_all_get_an_error_naming_the_tensor_and_the_ranks() {
        let names = vec!["w".to_string(), "b".to_string()];
        let errors = on_thread_ranks(3, |comm| {
            let b_shape = [if comm.rank() == 2 { 4 } else { 3 }];
            let layout = Layout {
                op: "HorovodAllreduce",
                extra: 0,
                names: &names,
                tensors: vec![(DType::F32, &[2, 3][..]), (DType::F32, &b_shape[..])],
            };
            check(comm, &layout).unwrap_err().to_string()
        });
        for e in errors {
            assert!(
                e.contains("HorovodAllreduce: the ranks disagree on 'b' (rank 0: float32 [3]; rank 1: float32 [3]; rank 2: float32 [4])"),
                "{e}"
            );
        }
    }

    #[test]
    fn ranks_that_agree_pass() {
        let names = vec!["w".to_string()];
        let results = on_thread_ranks(2, |comm| {
            check(
                comm,
                &Layout { op: "HorovodAllreduce", extra: 0, names: &names, tensors: vec![(DType::F64, &[5][..])] },
            )
            .is_ok()
        });
        assert_eq!(results, vec![true, true]);
    }
}
