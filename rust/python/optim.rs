//! The fused optimizer steps the Python optimizers call: argument conversion only.

use super::errors::guard;
use super::tensor::PyTensor;
use crate::compile::adam::{adam_update_counted, lr_value as adam_lr_value, AdamTensors};
use crate::error::Error;
use crate::forward::optim::{adam_update, AdamHyper, AdamParam};
use crate::tensor::Tensor;
use pyo3::prelude::*;

/// Work below this many elements keeps the GIL: releasing it costs more than the step.
const GIL_RELEASE_MIN_ELEMENTS: usize = 1 << 14;

fn tensors(list: Vec<Bound<'_, PyTensor>>) -> Vec<Tensor> {
    list.iter().map(|t| t.get().inner.clone()).collect()
}

/// One Adam/AdamW step for a parameter group, every parameter in one pass
/// (`rustgrad.optim.Adam` calls this under `no_grad`).
#[pyfunction]
#[pyo3(signature = (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, *, lr, beta1, beta2, eps,
                    weight_decay, decoupled, maximize))]
#[allow(clippy::too_many_arguments)]
pub fn _adam_update(
    py: Python<'_>,
    params: Vec<Bound<'_, PyTensor>>,
    grads: Vec<Bound<'_, PyTensor>>,
    exp_avgs: Vec<Bound<'_, PyTensor>>,
    exp_avg_sqs: Vec<Bound<'_, PyTensor>>,
    max_exp_avg_sqs: Option<Vec<Bound<'_, PyTensor>>>,
    steps: Vec<Bound<'_, PyAny>>,
    lr: Bound<'_, PyAny>,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    decoupled: bool,
    maximize: bool,
) -> PyResult<()> {
    let (params, grads, exp_avgs, exp_avg_sqs) =
        (tensors(params), tensors(grads), tensors(exp_avgs), tensors(exp_avg_sqs));
    let max_exp_avg_sqs = max_exp_avg_sqs.map(tensors);
    // A tensor learning rate (one a scheduler fills in place) is read when the update runs.
    let lr_tensor = lr.cast::<PyTensor>().ok().map(|t| t.get().inner.clone());
    let lr = match &lr_tensor {
        Some(t) => adam_lr_value(t)?,
        None => lr.extract::<f64>()?,
    };
    let hyper = AdamHyper { lr, beta1, beta2, eps, weight_decay, decoupled, maximize };
    let work: usize = params.iter().map(Tensor::numel).sum();
    if steps.first().is_some_and(|s| s.is_instance_of::<PyTensor>()) {
        // capturable: the counts are 0-d tensors, incremented in place.
        let steps = steps.iter().map(|s| Ok(s.cast::<PyTensor>()?.get().inner.clone())).collect::<PyResult<_>>()?;
        let all = AdamTensors { params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr: lr_tensor };
        check_lengths(&all)?;
        crate::compile::adam(&all, &hyper);
        let step = || adam_update_counted(&all, &hyper);
        return guard(|| Ok(if work >= GIL_RELEASE_MIN_ELEMENTS { py.detach(step) } else { step() }?));
    }
    crate::compile::stop(|| {
        "Adam's step count is a Python int that changes every call; create the optimizer with capturable=True \
         to hold it in a tensor"
            .into()
    });
    let steps: Vec<u64> = steps.iter().map(|s| s.extract::<u64>()).collect::<PyResult<_>>()?;
    let n = params.len();
    let lengths = [grads.len(), exp_avgs.len(), exp_avg_sqs.len(), steps.len()];
    if lengths.iter().chain(max_exp_avg_sqs.as_ref().map(Vec::len).as_ref()).any(|&len| len != n) {
        return Err(Error::InvalidArgument(format!(
            "_adam_update: {n} parameters but {lengths:?} gradients, exp_avgs, exp_avg_sqs and steps"
        ))
        .into());
    }
    let slots: Vec<AdamParam<'_>> = (0..n)
        .map(|i| AdamParam {
            param: &params[i],
            grad: &grads[i],
            exp_avg: &exp_avgs[i],
            exp_avg_sq: &exp_avg_sqs[i],
            max_exp_avg_sq: max_exp_avg_sqs.as_ref().map(|m| &m[i]),
            step: steps[i],
        })
        .collect();
    let step = || adam_update(&slots, &hyper);
    guard(|| Ok(if work >= GIL_RELEASE_MIN_ELEMENTS { py.detach(step) } else { step() }?))
}

fn check_lengths(t: &AdamTensors) -> PyResult<()> {
    let n = t.params.len();
    let lengths = [t.grads.len(), t.exp_avgs.len(), t.exp_avg_sqs.len(), t.steps.len()];
    if lengths.iter().chain(t.max_exp_avg_sqs.as_ref().map(Vec::len).as_ref()).any(|&len| len != n) {
        return Err(Error::InvalidArgument(format!(
            "_adam_update: {n} parameters but {lengths:?} gradients, exp_avgs, exp_avg_sqs and steps"
        ))
        .into());
    }
    Ok(())
}
