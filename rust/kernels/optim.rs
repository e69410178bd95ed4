//! Fused optimizer updates: one pass over a parameter, its gradient and its state per
//! step, instead of one pass (and one temporary) per arithmetic op.

use super::{threads, PARALLEL_MIN_ELEMENTS};
use crate::dtype::{nan_max, Float};
use rayon::prelude::*;

const CHUNK: usize = PARALLEL_MIN_ELEMENTS / 4;

/// Adam's constants for one parameter's step, rounded to the parameter's type once, as
/// the composed ops round their Python-number operands. Options that are off take values
/// that change nothing exactly (a factor of one), so the loop has no branches.
#[derive(Clone, Copy, Debug)]
pub struct AdamConstants<T> {
    pub beta1: T,
    pub one_minus_beta1: T,
    pub beta2: T,
    pub one_minus_beta2: T,
    pub bias_correction2_sqrt: T,
    pub eps: T,
    /// `-lr / (1 - beta1^step)`.
    pub neg_step_size: T,
    /// -1 to maximize, else 1.
    pub grad_sign: T,
    /// L2 weight decay added to the gradient (Adam), if any.
    pub l2_decay: Option<T>,
    /// Decoupled weight decay (AdamW) scales the parameter by this first; 1 for none.
    pub decay_factor: T,
}

/// The slices one Adam step reads and writes, all of one length.
pub struct AdamSlices<'a, T> {
    pub param: &'a mut [T],
    pub grad: &'a [T],
    pub exp_avg: &'a mut [T],
    pub exp_avg_sq: &'a mut [T],
    /// AMSGrad's running maximum of `exp_avg_sq`.
    pub max_exp_avg_sq: Option<&'a mut [T]>,
}

/// One Adam (or AdamW, AMSGrad) step over `s`, in parallel for large parameters.
/// Elementwise, so the result does not depend on the thread count.
pub fn adam<T: Float>(s: AdamSlices<'_, T>, c: &AdamConstants<T>) {
    let n = s.param.len();
    // invariant: the caller checked every slice has the parameter's length.
    let same = s.grad.len() == n && s.exp_avg.len() == n && s.exp_avg_sq.len() == n;
    assert!(same && s.max_exp_avg_sq.as_ref().is_none_or(|m| m.len() == n), "adam: slices of different lengths");
    if n < PARALLEL_MIN_ELEMENTS || threads::num_threads() == 1 {
        return adam_chunk(s, c);
    }
    let max_chunks: Vec<Option<&mut [T]>> = match s.max_exp_avg_sq {
        Some(m) => m.chunks_mut(CHUNK).map(Some).collect(),
        None => std::iter::repeat_with(|| None).take(n.div_ceil(CHUNK)).collect(),
    };
    let chunks: Vec<AdamSlices<'_, T>> = s
        .param
        .chunks_mut(CHUNK)
        .zip(s.grad.chunks(CHUNK))
        .zip(s.exp_avg.chunks_mut(CHUNK))
        .zip(s.exp_avg_sq.chunks_mut(CHUNK))
        .zip(max_chunks)
        .map(|((((param, grad), exp_avg), exp_avg_sq), max_exp_avg_sq)| AdamSlices {
            param,
            grad,
            exp_avg,
            exp_avg_sq,
            max_exp_avg_sq,
        })
        .collect();
    threads::install(|| chunks.into_par_iter().for_each(|chunk| adam_chunk(chunk, c)));
}

fn adam_chunk<T: Float>(s: AdamSlices<'_, T>, c: &AdamConstants<T>) {
    match c.l2_decay {
        Some(_) => adam_chunk_with::<T, true>(s, c),
        None => adam_chunk_with::<T, false>(s, c),
    }
}

/// The loop, compiled once with and once without L2 decay so that it has no branches
/// and vectorizes.
fn adam_chunk_with<T: Float, const L2: bool>(s: AdamSlices<'_, T>, c: &AdamConstants<T>) {
    let AdamSlices { param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq } = s;
    let elements = param.iter_mut().zip(grad).zip(exp_avg.iter_mut()).zip(exp_avg_sq.iter_mut());
    match max_exp_avg_sq {
        None => elements.for_each(|(((p, &g), m), v)| {
            update_moments::<T, L2>(p, g, m, v, c);
            apply_step(p, *m, *v, c);
        }),
        Some(max) => elements.zip(max.iter_mut()).for_each(|((((p, &g), m), v), max)| {
            update_moments::<T, L2>(p, g, m, v, c);
            *max = nan_max(*max, *v);
            apply_step(p, *m, *max, c);
        }),
    }
}

#[inline(always)]
fn update_moments<T: Float, const L2: bool>(p: &mut T, g: T, m: &mut T, v: &mut T, c: &AdamConstants<T>) {
    let mut g = g * c.grad_sign;
    *p = *p * c.decay_factor;
    if L2 {
        g += *p * c.l2_decay.unwrap_or(T::ZERO);
    }
    *m = *m * c.beta1 + g * c.one_minus_beta1;
    *v = *v * c.beta2 + (g * g) * c.one_minus_beta2;
}

#[inline(always)]
fn apply_step<T: Float>(p: &mut T, m: T, second: T, c: &AdamConstants<T>) {
    let denom = second.sqrt() / c.bias_correction2_sqrt + c.eps;
    *p += (m / denom) * c.neg_step_size;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn constants(grad_sign: f64, decay_factor: f64) -> AdamConstants<f64> {
        AdamConstants {
            beta1: 0.9,
            one_minus_beta1: 0.1,
            beta2: 0.999,
            one_minus_beta2: 1.0 - 0.999,
            bias_correction2_sqrt: (1.0f64 - 0.999).sqrt(),
            eps: 1e-8,
            neg_step_size: -0.01 / (1.0 - 0.9),
            grad_sign,
            l2_decay: None,
            decay_factor,
        }
    }

    #[test]
    fn the_first_step_moves_each_parameter_by_about_lr_against_its_gradient() {
        let (mut p, g, mut m, mut v) = (vec![1.0, 1.0], vec![0.5, -2.0], vec![0.0; 2], vec![0.0; 2]);
        let s = AdamSlices { param: &mut p, grad: &g, exp_avg: &mut m, exp_avg_sq: &mut v, max_exp_avg_sq: None };
        adam(s, &constants(1.0, 1.0));
        assert!((p[0] - 0.99).abs() < 1e-6 && (p[1] - 1.01).abs() < 1e-6, "{p:?}");
    }

    #[test]
    fn a_large_parameter_splits_into_chunks_with_the_same_result() {
        let n = PARALLEL_MIN_ELEMENTS + 3;
        let g: Vec<f64> = (0..n).map(|i| (i as f64).sin()).collect();
        let run = |parallel: bool| {
            let (mut p, mut m, mut v, mut max) = (vec![1.0; n], vec![0.1; n], vec![0.2; n], vec![0.3; n]);
            let s = AdamSlices {
                param: &mut p,
                grad: &g,
                exp_avg: &mut m,
                exp_avg_sq: &mut v,
                max_exp_avg_sq: Some(&mut max),
            };
            if parallel {
                adam(s, &constants(-1.0, 0.99));
            } else {
                adam_chunk(s, &constants(-1.0, 0.99));
            }
            (p, m, v, max)
        };
        assert_eq!(run(true), run(false));
    }
}
