//! Adam with its step counts held in 0-d tensors (torch's `capturable=True`): the eager
//! binding and a replay run this same function, so a compiled step needs no baked count.

use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::forward::optim::{adam_update, AdamHyper, AdamParam};
use crate::tensor::Tensor;

/// One parameter group's tensors: `max_exp_avg_sqs` only with amsgrad; `steps` are 0-d
/// counts; `lr`, a one-element learning rate that a scheduler changes in place (read when
/// the update runs, so a replay takes the current value).
pub struct AdamTensors {
    pub params: Vec<Tensor>,
    pub grads: Vec<Tensor>,
    pub exp_avgs: Vec<Tensor>,
    pub exp_avg_sqs: Vec<Tensor>,
    pub max_exp_avg_sqs: Option<Vec<Tensor>>,
    pub steps: Vec<Tensor>,
    pub lr: Option<Tensor>,
}

impl AdamTensors {
    /// Every tensor, in a fixed order (the tracer's inputs).
    pub fn all(&self) -> Vec<&Tensor> {
        let lists = [&self.params, &self.grads, &self.exp_avgs, &self.exp_avg_sqs, &self.steps];
        let mut all: Vec<&Tensor> = lists.iter().flat_map(|l| l.iter()).collect();
        all.extend(self.max_exp_avg_sqs.iter().flatten());
        all.extend(&self.lr);
        all
    }

    /// Rebuilds the lists from `all()`'s order.
    pub fn from_all(mut all: Vec<Tensor>, n: usize, amsgrad: bool, tensor_lr: bool) -> AdamTensors {
        let lr = if tensor_lr { all.pop() } else { None };
        let mut chunks = all.chunks(n).map(<[Tensor]>::to_vec);
        let mut next = || chunks.next().unwrap_or_default();
        let (params, grads, exp_avgs, exp_avg_sqs, steps) = (next(), next(), next(), next(), next());
        let max_exp_avg_sqs = amsgrad.then(&mut next);
        AdamTensors { params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr }
    }
}

/// The learning rate a tensor holds.
pub fn lr_value(lr: &Tensor) -> Result<f64> {
    match lr.to_f64_vec().as_slice() {
        [v] if lr.dtype().is_float() => Ok(*v),
        _ => Err(Error::InvalidArgument(format!(
            "Adam: a tensor learning rate must be a one-element float tensor, got a {} tensor of shape {:?}",
            lr.dtype().name(),
            lr.shape()
        ))),
    }
}

/// Adds one to each step count and runs `adam_update` with it; the counts are written
/// only when the update succeeded.
pub fn adam_update_counted(t: &AdamTensors, hyper: &AdamHyper) -> Result<()> {
    let hyper = &AdamHyper { lr: t.lr.as_ref().map_or(Ok(hyper.lr), lr_value)?, ..*hyper };
    let counts = t
        .steps
        .iter()
        .map(|s| match s.to_f64_vec().as_slice() {
            [v] if *v >= 0.0 => Ok(*v as u64 + 1),
            _ => Err(Error::InvalidArgument(format!(
                "Adam: a step count must be a one-element tensor holding a count, got shape {:?}",
                s.shape()
            ))),
        })
        .collect::<Result<Vec<u64>>>()?;
    let slots: Vec<AdamParam<'_>> = (0..t.params.len())
        .map(|i| AdamParam {
            param: &t.params[i],
            grad: &t.grads[i],
            exp_avg: &t.exp_avgs[i],
            exp_avg_sq: &t.exp_avg_sqs[i],
            max_exp_avg_sq: t.max_exp_avg_sqs.as_ref().map(|m| &m[i]),
            step: counts[i],
        })
        .collect();
    adam_update(&slots, hyper)?;
    for (s, count) in t.steps.iter().zip(counts) {
        crate::forward::fill(s, Scalar::Float(count as f64))?;
    }
    Ok(())
}
