//! Fused optimizer steps on tensors: every check first, then one pass per parameter.
//! The optimizers call these under `no_grad`; nothing is recorded.

use super::{copy, write_into};
use crate::dtype::{float_dispatch, Float};
use crate::error::{dtype_err, shape_err, Error, Result};
use crate::kernels::optim::{adam, AdamConstants, AdamSlices};
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

/// Adam's hyperparameters for one parameter group.
#[derive(Clone, Copy, Debug)]
pub struct AdamHyper {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    /// AdamW: decay the parameter itself instead of adding `weight_decay * p` to the gradient.
    pub decoupled: bool,
    pub maximize: bool,
}

/// One parameter's tensors for an Adam step; `step` counts this step (1 for the first).
pub struct AdamParam<'a> {
    pub param: &'a Tensor,
    pub grad: &'a Tensor,
    pub exp_avg: &'a Tensor,
    pub exp_avg_sq: &'a Tensor,
    pub max_exp_avg_sq: Option<&'a Tensor>,
    pub step: u64,
}

impl AdamParam<'_> {
    /// The tensors the step writes.
    fn written(&self) -> impl Iterator<Item = (&'static str, &Tensor)> {
        [("param", Some(self.param)), ("exp_avg", Some(self.exp_avg)), ("exp_avg_sq", Some(self.exp_avg_sq))]
            .into_iter()
            .chain([("max_exp_avg_sq", self.max_exp_avg_sq)])
            .filter_map(|(name, t)| t.map(|t| (name, t)))
    }
}

/// One Adam step for every parameter in `params`. Checks them all before writing any,
/// so a failed call changes nothing.
pub fn adam_update(params: &[AdamParam<'_>], hyper: &AdamHyper) -> Result<()> {
    for (index, p) in params.iter().enumerate() {
        check_adam_param(index, p)?;
    }
    params.iter().try_for_each(|p| adam_one(p, hyper))
}

fn check_adam_param(index: usize, p: &AdamParam<'_>) -> Result<()> {
    let (dtype, shape) = (p.param.dtype(), p.param.shape());
    if !dtype.is_float() {
        return dtype_err(format!(
            "Adam: parameter {index} is {}; only float parameters can be optimized, convert it with .float()",
            dtype.name()
        ));
    }
    if p.step == 0 {
        return Err(Error::InvalidArgument(format!("Adam: parameter {index}'s step count must be at least 1")));
    }
    for (name, t) in [("grad", p.grad)].into_iter().chain(p.written().skip(1)) {
        if t.dtype() != dtype || t.shape() != shape {
            return shape_err(format!(
                "Adam: parameter {index} is {} {} but its {name} is {} {}; a loaded optimizer state must come \
                 from the same parameters, in the same order",
                dtype.name(),
                fmt_shape(shape),
                t.dtype().name(),
                fmt_shape(t.shape())
            ));
        }
    }
    let written: Vec<_> = p.written().collect();
    for (i, (a_name, a)) in written.iter().enumerate() {
        if let Some((b_name, _)) = written[i + 1..].iter().find(|(_, b)| a.shares_storage(b)) {
            return Err(Error::InvalidArgument(format!(
                "Adam: parameter {index}'s {a_name} and {b_name} share memory; each needs its own tensor \
                 (clone the state before loading it)"
            )));
        }
    }
    Ok(())
}

/// `t` when contiguous, else a contiguous copy the caller writes back.
fn dense(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        Ok(t.clone())
    } else {
        copy(t)
    }
}

fn adam_one(p: &AdamParam<'_>, hyper: &AdamHyper) -> Result<()> {
    if p.param.numel() == 0 {
        return Ok(());
    }
    let param = dense(p.param)?;
    let exp_avg = dense(p.exp_avg)?;
    let exp_avg_sq = dense(p.exp_avg_sq)?;
    let max_exp_avg_sq = p.max_exp_avg_sq.map(dense).transpose()?;
    // A gradient sharing memory with a written tensor is read from a copy.
    let shares = p.written().any(|(_, t)| t.shares_storage(p.grad));
    let grad = if shares || !p.grad.is_contiguous() { copy(p.grad)? } else { p.grad.clone() };
    float_dispatch!(param.dtype(), "Adam", |T| {
        let constants = adam_constants::<T>(hyper, p.step);
        run_adam::<T>(&param, &grad, &exp_avg, &exp_avg_sq, max_exp_avg_sq.as_ref(), &constants)
    })?;
    for (dense_copy, target) in [(&param, p.param), (&exp_avg, p.exp_avg), (&exp_avg_sq, p.exp_avg_sq)]
        .into_iter()
        .chain(max_exp_avg_sq.as_ref().zip(p.max_exp_avg_sq))
    {
        if !target.is_contiguous() {
            write_into(target, dense_copy)?;
        }
    }
    Ok(())
}

fn adam_constants<T: Float>(h: &AdamHyper, step: u64) -> AdamConstants<T> {
    let step = i32::try_from(step).unwrap_or(i32::MAX);
    AdamConstants {
        beta1: T::from_f64(h.beta1),
        one_minus_beta1: T::from_f64(1.0 - h.beta1),
        beta2: T::from_f64(h.beta2),
        one_minus_beta2: T::from_f64(1.0 - h.beta2),
        bias_correction2_sqrt: T::from_f64((1.0 - h.beta2.powi(step)).sqrt()),
        eps: T::from_f64(h.eps),
        neg_step_size: T::from_f64(-h.lr / (1.0 - h.beta1.powi(step))),
        grad_sign: if h.maximize { -T::ONE } else { T::ONE },
        l2_decay: (!h.decoupled && h.weight_decay != 0.0).then(|| T::from_f64(h.weight_decay)),
        decay_factor: T::from_f64(if h.decoupled { 1.0 - h.lr * h.weight_decay } else { 1.0 }),
    }
}

/// The element range of a contiguous tensor within its storage.
fn range(t: &Tensor) -> std::ops::Range<usize> {
    t.offset()..t.offset() + t.numel()
}

fn internal_dtype() -> Error {
    Error::DType("internal dtype mismatch in Adam".into())
}

fn run_adam<T: Float>(
    param: &Tensor,
    grad: &Tensor,
    exp_avg: &Tensor,
    exp_avg_sq: &Tensor,
    max_exp_avg_sq: Option<&Tensor>,
    c: &AdamConstants<T>,
) -> Result<()> {
    let mut param_guard = param.storage().write();
    let mut exp_avg_guard = exp_avg.storage().write();
    let mut exp_avg_sq_guard = exp_avg_sq.storage().write();
    let mut max_guard = max_exp_avg_sq.map(|t| t.storage().write());
    let grad_guard = grad.storage().read();
    let max_exp_avg_sq = match (max_guard.as_deref_mut(), max_exp_avg_sq) {
        (Some(buffer), Some(t)) => Some(&mut T::slice_mut(buffer).ok_or_else(internal_dtype)?[range(t)]),
        _ => None,
    };
    let slices = AdamSlices {
        param: &mut T::slice_mut(&mut param_guard).ok_or_else(internal_dtype)?[range(param)],
        grad: &T::slice(&grad_guard).ok_or_else(internal_dtype)?[range(grad)],
        exp_avg: &mut T::slice_mut(&mut exp_avg_guard).ok_or_else(internal_dtype)?[range(exp_avg)],
        exp_avg_sq: &mut T::slice_mut(&mut exp_avg_sq_guard).ok_or_else(internal_dtype)?[range(exp_avg_sq)],
        max_exp_avg_sq,
    };
    adam(slices, c);
    Ok(())
}

/// The scalars of TF1's `ApplyAdam`: the step's β powers, the learning rate, β₁, β₂, ε.
#[derive(Clone, Copy, Debug)]
pub struct TfAdamScalars {
    pub beta1_power: f64,
    pub beta2_power: f64,
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub epsilon: f64,
}

/// TF1's `ApplyAdam` on new tensors: returns the new (var, m, v), leaving the inputs alone.
///
/// ```text
/// lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
/// m = beta1 * m + (1 - beta1) * grad;  v = beta2 * v + (1 - beta2) * grad^2
/// var -= lr_t * m / (sqrt(v) + epsilon)
/// ```
///
/// One pass of the fused Adam kernel: TF's epsilon is added to sqrt(v) without v's bias
/// correction, which is the kernel with a second-moment correction of exactly one.
pub fn tf_apply_adam(
    var: &Tensor,
    m: &Tensor,
    v: &Tensor,
    grad: &Tensor,
    s: &TfAdamScalars,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (dtype, shape) = (var.dtype(), var.shape());
    if !dtype.is_float() {
        return dtype_err(format!("ApplyAdam: var is {}; only float variables can be updated", dtype.name()));
    }
    for (name, t) in [("m", m), ("v", v), ("grad", grad)] {
        if t.dtype() != dtype || t.shape() != shape {
            return Err(Error::InvalidArgument(format!(
                "ApplyAdam: var and {name} must have the same dtype and shape, but var is {} {} and {name} is {} {}",
                dtype.name(),
                fmt_shape(shape),
                t.dtype().name(),
                fmt_shape(t.shape())
            )));
        }
    }
    let (new_var, new_m, new_v) = (copy(var)?, copy(m)?, copy(v)?);
    let grad = if grad.is_contiguous() { grad.clone() } else { copy(grad)? };
    if var.numel() > 0 {
        float_dispatch!(dtype, "ApplyAdam", |T| {
            run_adam::<T>(&new_var, &grad, &new_m, &new_v, None, &tf_adam_constants::<T>(s))
        })?;
    }
    Ok((new_var, new_m, new_v))
}

fn tf_adam_constants<T: Float>(s: &TfAdamScalars) -> AdamConstants<T> {
    let lr_t = s.lr * (1.0 - s.beta2_power).sqrt() / (1.0 - s.beta1_power);
    AdamConstants {
        beta1: T::from_f64(s.beta1),
        one_minus_beta1: T::from_f64(1.0 - s.beta1),
        beta2: T::from_f64(s.beta2),
        one_minus_beta2: T::from_f64(1.0 - s.beta2),
        // sqrt(v) / 1 is sqrt(v) exactly: TF adds epsilon to the uncorrected sqrt(v).
        bias_correction2_sqrt: T::ONE,
        eps: T::from_f64(s.epsilon),
        neg_step_size: T::from_f64(-lr_t),
        grad_sign: T::ONE,
        l2_decay: None,
        decay_factor: T::ONE,
    }
}
