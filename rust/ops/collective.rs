//! Static mode's collectives (Horovod's `HorovodAllreduce` and `HorovodBroadcast`):
//! internal table ops that `rustgrad.distributed.DistributedOptimizer` and
//! `broadcast_global_variables` put into a graph. Each takes a list of tensors (Horovod's
//! tensor fusion: many small gradients in one buffer, one collective), checks that every
//! rank passes the same layout (`distributed::agree`), and gives the result as one flat
//! buffer; `Unfuse` nodes take each tensor back out of it as a view.
//!
//! They run inside `Session.run`'s single call into the core, without the GIL. They are
//! stateful in that they talk to the other ranks, but the planner needs nothing special:
//! plans run nodes in node-id order (so every rank that built the same graph runs its
//! collectives in the same order), never merge two nodes, never fold a node whose inputs
//! are not constants into a constant, and prune only nodes the fetches do not need (as
//! for a rank that does not run the training op, every rank must fetch alike).

use super::{internal, no_double_backward, nth, Args, Input, Meta, Spec, TableOp};
use crate::distributed::agree::{self, Layout};
use crate::distributed::reduce::{self, Summable, Summation};
use crate::distributed::{as_bytes_mut, record_collective, Communicator, Plain};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::PartialShape;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::storage::Element;
use crate::tensor::Tensor;
use std::sync::Arc;

const TENSORS: &[Input] = &[Input { torch: "tensors", tf: "tensors", list: true }];

/// What a fused collective works on: the communicator and the tensors' names (for errors).
#[derive(Clone)]
pub struct Fused {
    pub comm: Arc<dyn Communicator>,
    pub names: Arc<[String]>,
}

impl std::fmt::Debug for Fused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} tensors over {}", self.names.len(), self.comm.transport())
    }
}

impl Fused {
    fn check(&self, op: &str, extra: i64, inputs: &[&Tensor]) -> Result<()> {
        let tensors = inputs.iter().map(|t| (t.dtype(), t.shape())).collect();
        agree::check(&*self.comm, &Layout { op, extra, names: &self.names, tensors })
    }
}

/// The one dtype of a fused collective's inputs, all of known size; their total count.
fn common_meta(op: &str, names: &[String], inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
    let (_, dtype) = *nth(inputs, 0, op)?;
    let mut total = Some(0usize);
    for (i, (shape, d)) in inputs.iter().enumerate() {
        let name = names.get(i).map_or("?", String::as_str);
        if *d != dtype {
            return Err(Error::DType(format!(
                "{op}: tensors fused into one buffer must share a dtype, but '{name}' is {} and the first is {}",
                d.name(),
                dtype.name()
            )));
        }
        let numel = shape.as_ref().and_then(|dims| dims.iter().copied().product::<Option<usize>>());
        total = total.zip(numel).map(|(t, n)| t + n);
    }
    Ok((Some(vec![total]), dtype))
}

/// The inputs' values one after the other, in their dtype's element type.
fn concatenated<T: Element + Plain>(inputs: &[&Tensor]) -> Result<Vec<T>> {
    let total = inputs.iter().map(|t| t.numel()).sum();
    let mut flat = crate::buffer_pool::take::<T>(total).unwrap_or_else(|| Vec::with_capacity(total));
    for t in inputs {
        t.with_contiguous(|values: &[T]| flat.extend_from_slice(values))?;
    }
    Ok(flat)
}

fn timed<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    let started = std::time::Instant::now();
    let out = f();
    record_collective(started.elapsed());
    out
}

/// `HorovodAllreduce`: the mean over the ranks of its (float) inputs, as one flat buffer.
#[derive(Clone, Debug)]
pub struct AllreduceMean {
    pub fused: Fused,
    pub summation: Summation,
}

const ALLREDUCE: &str = "HorovodAllreduce";

impl AllreduceMean {
    fn run<T: Summable + Element>(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let average = |flat: &[T]| reduce::average(&*self.fused.comm, flat, self.summation);
        // One contiguous tensor (a gradient above the fusion threshold) is sent from its own memory.
        let out = match inputs {
            [one] if one.is_contiguous() => one.with_contiguous(average)??,
            _ => {
                let flat = concatenated::<T>(inputs)?;
                let out = average(&flat)?;
                crate::buffer_pool::give(flat);
                out
            }
        };
        let n = out.len();
        Tensor::from_vec(out, vec![n])
    }
}

impl TableOp for AllreduceMean {
    const SPEC: Spec = internal("horovod_allreduce", TENSORS);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("horovod_allreduce is built by rustgrad.distributed.DistributedOptimizer".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        timed(|| {
            self.fused.check(ALLREDUCE, 0, inputs)?;
            let dtype = nth(inputs, 0, ALLREDUCE)?.dtype();
            match dtype {
                DType::F32 => self.run::<f32>(inputs),
                DType::F64 => self.run::<f64>(inputs),
                other => Err(Error::DType(format!(
                    "{ALLREDUCE}: averages float32 or float64 gradients, got {}",
                    other.name()
                ))),
            }
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = common_meta(ALLREDUCE, &self.fused.names, inputs)?;
        if !dtype.is_float() {
            return Err(Error::DType(format!(
                "{ALLREDUCE}: averages float32 or float64 gradients, got {}",
                dtype.name()
            )));
        }
        Ok((shape, dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Err(no_double_backward(ALLREDUCE))
    }

    fn tf_type(&self) -> &'static str {
        ALLREDUCE
    }
}

/// `HorovodBroadcast`: rank `root`'s values of its inputs, as one flat buffer.
#[derive(Clone, Debug)]
pub struct BroadcastFused {
    pub fused: Fused,
    pub root: usize,
}

const BROADCAST: &str = "HorovodBroadcast";

impl BroadcastFused {
    fn run<T: Plain + Element>(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let mut flat = concatenated::<T>(inputs)?;
        self.fused.comm.broadcast(as_bytes_mut(&mut flat), self.root)?;
        let n = flat.len();
        Tensor::from_vec(flat, vec![n])
    }
}

impl TableOp for BroadcastFused {
    const SPEC: Spec = internal("horovod_broadcast", TENSORS);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("horovod_broadcast is built by rustgrad.distributed.broadcast_global_variables".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        timed(|| {
            self.fused.check(BROADCAST, self.root as i64, inputs)?;
            match nth(inputs, 0, BROADCAST)?.dtype() {
                DType::F32 => self.run::<f32>(inputs),
                DType::F64 => self.run::<f64>(inputs),
                DType::I64 => self.run::<i64>(inputs),
                DType::I32 => self.run::<i32>(inputs),
                DType::U8 => self.run::<u8>(inputs),
                // bool has invalid bit patterns: it travels as 0/1 bytes.
                DType::Bool => {
                    let bytes: Vec<Tensor> =
                        inputs.iter().map(|t| crate::forward::as_dtype(t, DType::U8)).collect::<Result<_>>()?;
                    let refs: Vec<&Tensor> = bytes.iter().collect();
                    crate::forward::as_dtype(&self.run::<u8>(&refs)?, DType::Bool)
                }
            }
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        common_meta(BROADCAST, &self.fused.names, inputs)
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Err(no_double_backward(BROADCAST))
    }

    fn tf_type(&self) -> &'static str {
        BROADCAST
    }
}

/// One tensor of a fused buffer: `shape`'s worth of elements from `offset`, as a view.
#[derive(Clone, Debug)]
pub struct Unfuse {
    pub offset: usize,
    pub shape: Vec<usize>,
}

const UNFUSE: &str = "unfuse";

impl TableOp for Unfuse {
    const SPEC: Spec = internal(UNFUSE, &[Input { torch: "input", tf: "input", list: false }]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("unfuse is built by rustgrad.distributed's static collectives".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let flat = *nth(inputs, 0, UNFUSE)?;
        let numel: usize = self.shape.iter().product();
        if flat.rank() != 1 || self.offset + numel > flat.numel() {
            return Err(Error::Shape(format!(
                "{UNFUSE}: {numel} elements from {} do not fit a fused buffer of shape {}",
                self.offset,
                crate::shape::fmt_shape(flat.shape())
            )));
        }
        let flat = if flat.is_contiguous() { flat.alias() } else { flat.contiguous()? };
        let strides = crate::shape::contiguous_strides(&self.shape);
        flat.view_as_layout(self.shape.clone(), strides, flat.offset() + self.offset)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (_, dtype) = *nth(inputs, 0, UNFUSE)?;
        Ok((crate::graph::known(&self.shape), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Err(no_double_backward(UNFUSE))
    }

    fn is_view(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::reduce::tests::on_thread_ranks;

    fn fused(comm: Arc<dyn Communicator>, names: &[&str]) -> Fused {
        Fused { comm, names: names.iter().map(|n| n.to_string()).collect() }
    }

    #[test]
    fn one_rank_averages_to_its_own_values_and_unfuse_views_each_tensor() {
        let op = AllreduceMean {
            fused: fused(Arc::new(crate::distributed::Alone), &["a", "b"]),
            summation: Summation::RankOrder,
        };
        let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], vec![2, 2]).unwrap();
        let b = Tensor::from_vec(vec![5.0f32], vec![1]).unwrap();
        let flat = op.forward(&[&a, &b]).unwrap();
        assert_eq!(flat.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
        let back = Unfuse { offset: 4, shape: vec![1] }.forward(&[&flat]).unwrap();
        assert_eq!(back.to_vec::<f32>().unwrap(), vec![5.0]);
        assert!(back.shares_storage(&flat));
        assert!(Unfuse { offset: 4, shape: vec![2] }.forward(&[&flat]).is_err());
    }

    #[test]
    fn broadcast_gives_every_rank_the_roots_values() {
        let out = on_thread_ranks(3, |comm| {
            let values = Tensor::from_vec(vec![comm.rank() as i64; 3], vec![3]).unwrap();
            let mut flat = concatenated::<i64>(&[&values]).unwrap();
            comm.broadcast(as_bytes_mut(&mut flat), 1).unwrap();
            flat
        });
        assert!(out.iter().all(|v| v == &vec![1i64; 3]));
    }
}
