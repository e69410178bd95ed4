//! A plain SGD step on one leaf, as an eager step writes it in separate ops:
//!
//! ```text
//! w.grad += incoming            (backward's accumulation, when .grad already exists)
//! w += alpha * (w.grad op s)    (w.sub_(lr * w.grad): a temporary, then an in-place add)
//! w.grad[:] = zero              (w.grad.zero_())
//! ```
//!
//! Here in one pass of small blocks, with each element computed by the same
//! expressions as the separate kernels (`add_in_place`, `elementwise::scalar`,
//! `fill`), so the bits are the eager step's. `rustgrad.compile` replays it.

use super::elementwise as ew;
use crate::dtype::Float;
use crate::kernels::elementwise::ScalarOp;

/// Elements per block: the block of every operand stays in L1 between the steps.
const BLOCK: usize = 1024;

/// The step's numbers, each already an element of the leaf's type.
#[derive(Clone, Copy, Debug)]
pub struct LeafSgd<T> {
    pub scale_op: ScalarOp,
    pub scale: T,
    pub alpha: T,
}

/// How the step uses the gradient.
pub enum GradUse<'a, T> {
    /// Read only: nothing is accumulated into it nor zeroed.
    Read(&'a [T]),
    /// Written: `incoming` is added first, if given; `zero` is written last, if given.
    Write { grad: &'a mut [T], incoming: Option<&'a [T]>, zero: Option<T> },
    /// Known to hold `value` everywhere, and to hold it again after the step (it is
    /// zeroed with `value`): `value + incoming` is computed without reading or writing it.
    Filled { value: T, incoming: &'a [T] },
}

/// One step over `weight` and its gradient. Panics if the slices' lengths differ
/// (the caller checks the shapes).
pub fn leaf_sgd<T: Float>(grad: GradUse<'_, T>, weight: &mut [T], c: &LeafSgd<T>) {
    let n = weight.len();
    let mut scaled = [T::ZERO; BLOCK];
    match grad {
        GradUse::Read(g) => {
            assert_eq!(g.len(), n, "leaf_sgd: gradient and weight of different lengths");
            for (w, g) in weight.chunks_mut(BLOCK).zip(g.chunks(BLOCK)) {
                update(w, g, &mut scaled[..g.len()], c);
            }
        }
        GradUse::Filled { value, incoming } => {
            assert_eq!(incoming.len(), n, "leaf_sgd: gradient and weight of different lengths");
            for (w, inc) in weight.chunks_mut(BLOCK).zip(incoming.chunks(BLOCK)) {
                let sum = &mut scaled[..inc.len()];
                sum.iter_mut().zip(inc).for_each(|(o, &v)| {
                    *o = value;
                    *o += v;
                });
                update_scaled(w, sum, c);
            }
        }
        GradUse::Write { grad, incoming, zero } => {
            assert!(grad.len() == n && incoming.is_none_or(|i| i.len() == n), "leaf_sgd: slices of different lengths");
            for (k, (w, g)) in weight.chunks_mut(BLOCK).zip(grad.chunks_mut(BLOCK)).enumerate() {
                if let Some(incoming) = incoming {
                    let inc = &incoming[k * BLOCK..k * BLOCK + g.len()];
                    g.iter_mut().zip(inc).for_each(|(o, &v)| *o += v);
                }
                update(w, g, &mut scaled[..g.len()], c);
                if let Some(z) = zero {
                    g.fill(z);
                }
            }
        }
    }
}

/// `w += alpha * (g op s)` for one block, through `scaled`.
#[inline(always)]
fn update<T: Float>(w: &mut [T], g: &[T], scaled: &mut [T], c: &LeafSgd<T>) {
    scaled.copy_from_slice(g);
    update_scaled(w, scaled, c);
}

/// `w += alpha * (g op s)` for one block whose `g` is in `scaled` (which it overwrites).
#[inline(always)]
fn update_scaled<T: Float>(w: &mut [T], scaled: &mut [T], c: &LeafSgd<T>) {
    ew::scalar_in_place(c.scale_op, scaled, c.scale);
    if c.alpha == T::ONE {
        w.iter_mut().zip(scaled.iter()).for_each(|(o, &v)| *o += v);
    } else {
        w.iter_mut().zip(scaled.iter()).for_each(|(o, &v)| *o += c.alpha * v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn separate(grad: &mut [f32], incoming: &[f32], weight: &mut [f32], c: &LeafSgd<f32>) {
        grad.iter_mut().zip(incoming).for_each(|(o, &v)| *o += v);
        let scaled = ew::scalar(c.scale_op, grad, c.scale);
        weight.iter_mut().zip(&scaled).for_each(|(o, &v)| *o += c.alpha * v);
        grad.fill(0.0);
    }

    #[test]
    fn one_pass_gives_the_bits_of_the_separate_kernels_across_blocks() {
        let n = 3 * BLOCK + 17;
        let values = |seed: f32| (0..n).map(|i| ((i as f32 + seed) * 0.37).sin() * 1e3).collect::<Vec<f32>>();
        let c = LeafSgd { scale_op: ScalarOp::Mul, scale: 1e-6f64 as f32, alpha: -1.0 };
        let (mut g1, inc, mut w1) = (values(1.0), values(2.0), values(3.0));
        let (mut g2, mut w2) = (g1.clone(), w1.clone());
        separate(&mut g1, &inc, &mut w1, &c);
        leaf_sgd(GradUse::Write { grad: &mut g2, incoming: Some(&inc), zero: Some(0.0) }, &mut w2, &c);
        assert_eq!(
            w1.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            w2.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        assert!(g2.iter().all(|&v| v == 0.0));
    }

    #[test]
    fn a_gradient_known_to_be_zero_gives_the_bits_of_adding_to_zeros() {
        let n = BLOCK + 5;
        let inc: Vec<f32> = (0..n).map(|i| if i % 7 == 0 { -0.0 } else { (i as f32 * 0.61).cos() }).collect();
        let c = LeafSgd { scale_op: ScalarOp::Mul, scale: 1e-3, alpha: -1.0 };
        let (mut g, mut w1) = (vec![0.0f32; n], vec![-0.0f32; n]);
        let mut w2 = w1.clone();
        separate(&mut g, &inc, &mut w1, &c);
        leaf_sgd(GradUse::Filled { value: 0.0, incoming: &inc }, &mut w2, &c);
        assert_eq!(
            w1.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            w2.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_read_only_gradient_is_left_as_it_was() {
        let g = vec![2.0f64; 5];
        let mut w = vec![1.0f64; 5];
        leaf_sgd(GradUse::Read(&g), &mut w, &LeafSgd { scale_op: ScalarOp::Div, scale: 4.0, alpha: 1.0 });
        assert_eq!((w, g), (vec![1.5; 5], vec![2.0; 5]));
    }
}
