//! Softmax, log-softmax and the class losses declared in the table: `softmax`,
//! `log_softmax`, `cross_entropy` (fused with log-softmax: one log-sum-exp per row) and
//! `nll_loss`, with the internal gradient ops their rules emit. Kernels are in
//! `kernels/losses.rs`.

use super::{internal, nth, Args, Input, Kind, Meta, Param, Role, Spec, TableOp, TableOps};
use super::{reduce::float_only, TorchFront};
use crate::dtype::{float_dispatch, DType};
use crate::error::{shape_err, Error, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::kernels::elementwise::{BinaryOp, UnaryOp};
use crate::kernels::losses::{self, ClassLoss, Factor, Reduction, Rows, Targets};
use crate::op::Op;
use crate::rules::{vjp_of_composite, Differentiator, RuleArgs, Saves};
use crate::shape::{fmt_shape, normalize_dim};
use crate::storage::Element;
use crate::tensor::Tensor;

/// torch's required `dim`; TF's `axis` (None: the last), with TF1's deprecated `dim`.
const SOFTMAX_DIM: Param = Param {
    torch: "dim",
    tf: "axis",
    tf_aliases: &["dim"],
    kind: Kind::OptInt,
    torch_default: None,
    tf_default: Some("None"),
};
const LOGITS: &[Input] = &[Input { torch: "input", tf: "logits", list: false }];

/// Softmax (`log`: log-softmax) along one dim, computed stably.
#[derive(Clone, Debug)]
pub struct Softmax<const LOG: bool> {
    dim: Option<isize>,
}

impl<const LOG: bool> Softmax<LOG> {
    const NAME: &'static str = if LOG { "log_softmax" } else { "softmax" };

    fn rows(&self, shape: &[usize]) -> Result<Rows> {
        let dim = normalize_dim(Self::NAME, self.dim.unwrap_or(-1), shape.len())?;
        Ok(Rows::around(shape, dim))
    }
}

impl<const LOG: bool> TableOp for Softmax<LOG> {
    const SPEC: Spec = Spec {
        name: Self::NAME,
        torch_aliases: &[],
        tf: if LOG {
            &["nn.log_softmax(logits)", "math.log_softmax(logits)"]
        } else {
            &["nn.softmax(logits)", "math.softmax(logits)"]
        },
        doc: if LOG {
            "log(softmax(x)) along `dim`, computed stably as x - logsumexp(x) (TF's axis defaults to the last)."
        } else {
            "exp(x) / sum(exp(x)) along `dim`, computed stably (TF's axis defaults to the last)."
        },
        differentiable: true,
        inputs: LOGITS,
        params: &[SOFTMAX_DIM],
    };
    const TORCH_FRONT: TorchFront = TorchFront::EVERYWHERE;

    fn build(args: &Args) -> Result<Self> {
        Ok(Softmax { dim: args.opt_int(0)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, Self::NAME)?;
        let rows = self.rows(x.shape())?;
        float_dispatch!(x.dtype(), Self::NAME, |T| {
            let y = x.with_contiguous(|s: &[T]| losses::softmax(s, rows, LOG))?;
            Tensor::from_vec(y, x.shape())
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 0, Self::NAME)?;
        if let Some(dims) = shape {
            normalize_dim(Self::NAME, self.dim.unwrap_or(-1), dims.len())?;
        }
        Ok((shape.clone(), float_only(Self::NAME, dtype)?))
    }

    fn tf_type(&self) -> &'static str {
        if LOG {
            "LogSoftmax"
        } else {
            "Softmax"
        }
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: true }
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let grad = SoftmaxGrad { dim: self.dim, log: LOG };
        Ok(vec![Some(d.apply(Op::Table(TableOps::SoftmaxGrad(grad)), &[a.grad, a.output])?)])
    }
}

/// The gradient of softmax or log-softmax from (output gradient, output).
#[derive(Clone, Debug)]
pub struct SoftmaxGrad {
    dim: Option<isize>,
    log: bool,
}

impl TableOp for SoftmaxGrad {
    const SPEC: Spec = internal("softmax_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("softmax_backward is built by softmax's rule only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let g = *nth(inputs, 0, "softmax_backward")?;
        let y = *nth(inputs, 1, "softmax_backward")?;
        let dim = normalize_dim("softmax_backward", self.dim.unwrap_or(-1), y.rank())?;
        let rows = Rows::around(y.shape(), dim);
        let g = forward::as_dtype(&forward::broadcast_to(g, y.shape())?, y.dtype())?;
        float_dispatch!(y.dtype(), "softmax_backward", |T| {
            let out = g.with_contiguous(|gs: &[T]| {
                y.with_contiguous(|ys: &[T]| losses::softmax_backward(gs, ys, rows, self.log))
            })??;
            Tensor::from_vec(out, y.shape())
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 1, "softmax_backward")?;
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        // Only recorded when a backward is (create_graph): its rule reads both.
        Saves { inputs: 0b11, output: false }
    }

    /// Through the composite `y ⊙ (g − Σ g⊙y)` (log-softmax: `g − eʸ Σ g`), sums along `dim`.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let (dim, log) = (self.dim.unwrap_or(-1), self.log);
        vjp_of_composite(d, a, |t, ins| {
            let (g, y) = (&ins[0], &ins[1]);
            let along = Op::Sum { dims: Some(vec![dim]), keepdim: true };
            if log {
                let e = t.unary(UnaryOp::Exp, y)?;
                let total = t.apply(along, &[g])?;
                let spread = t.mul(&e, &total)?;
                t.apply(Op::Binary(BinaryOp::Sub), &[g, &spread])
            } else {
                let gy = t.mul(g, y)?;
                let total = t.apply(along, &[&gy])?;
                let centred = t.apply(Op::Binary(BinaryOp::Sub), &[g, &total])?;
                t.mul(y, &centred)
            }
        })
    }
}

const CLASS_INPUTS: &[Input] = &[
    Input { torch: "input", tf: "input", list: false },
    Input { torch: "target", tf: "target", list: false },
    Input { torch: "weight", tf: "weight", list: false },
];
const IGNORE_INDEX: Param = Param {
    torch: "ignore_index",
    tf: "ignore_index",
    tf_aliases: &[],
    kind: Kind::Int,
    torch_default: Some("-100"),
    tf_default: Some("-100"),
};
const REDUCTION: Param = Param {
    torch: "reduction",
    tf: "reduction",
    tf_aliases: &[],
    kind: Kind::Str,
    torch_default: Some("'mean'"),
    tf_default: Some("'mean'"),
};
const LABEL_SMOOTHING: Param = Param {
    torch: "label_smoothing",
    tf: "label_smoothing",
    tf_aliases: &[],
    kind: Kind::Float,
    torch_default: Some("0.0"),
    tf_default: Some("0.0"),
};

/// A class loss's settings: shared by `cross_entropy` (`logits`), `nll_loss` and their gradient.
#[derive(Clone, Debug)]
pub struct ClassSettings {
    op: &'static str,
    logits: bool,
    ignore_index: i64,
    reduction: Reduction,
    label_smoothing: f64,
}

impl ClassSettings {
    fn build(args: &Args, op: &'static str, logits: bool) -> Result<Self> {
        let label_smoothing = if logits { args.float(2)? } else { 0.0 };
        if !(0.0..=1.0).contains(&label_smoothing) {
            return Err(Error::InvalidArgument(format!(
                "{op}: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"
            )));
        }
        Ok(ClassSettings {
            op,
            logits,
            ignore_index: args.int(0)? as i64,
            reduction: Reduction::parse(op, args.text(1)?)?,
            label_smoothing,
        })
    }

    /// The class dim of an input of `rank` (1 for a batch, 0 for one unbatched sample).
    fn class_dim(&self, rank: usize) -> Result<usize> {
        match rank {
            0 => shape_err(format!("{}: input must have a class dimension, got a 0-d tensor", self.op)),
            1 => Ok(0),
            _ => Ok(1),
        }
    }

    /// The target shape an input shape asks for: the input's without its class dim.
    fn target_shape<T: Copy>(&self, input: &[T]) -> Result<Vec<T>> {
        let dim = self.class_dim(input.len())?;
        Ok(input.iter().enumerate().filter(|&(i, _)| i != dim).map(|(_, &d)| d).collect())
    }

    /// Checks the shapes and dtypes of (input, target, weight); the targets as int64.
    fn operands(&self, inputs: &[&Tensor]) -> Result<(Rows, Tensor, Option<Tensor>)> {
        let x = *nth(inputs, 0, self.op)?;
        let target = *nth(inputs, 1, self.op)?;
        let weight = *nth(inputs, 2, self.op)?;
        let expected = self.target_shape(x.shape())?;
        if target.shape() != expected.as_slice() {
            return shape_err(format!(
                "{}: expected target of shape {} for input of shape {}, got {}",
                self.op,
                fmt_shape(&expected),
                fmt_shape(x.shape()),
                fmt_shape(target.shape())
            ));
        }
        check_target_dtype(self.op, target.dtype())?;
        let rows = Rows::around(x.shape(), self.class_dim(x.rank())?);
        let weight = match weight.numel() {
            0 => None,
            _ if weight.shape() != [rows.classes] => {
                return shape_err(format!(
                    "{}: weight must hold one value per class, shape [{}], got {}",
                    self.op,
                    rows.classes,
                    fmt_shape(weight.shape())
                ))
            }
            _ => Some(forward::as_dtype(weight, x.dtype())?),
        };
        Ok((rows, forward::as_dtype(target, DType::I64)?, weight))
    }

    /// The loss of `rows` against the targets `indices` (checked here: a failed call computes nothing).
    fn loss<'a, T>(&self, rows: Rows, indices: &'a [i64], weight: Option<&'a [T]>) -> Result<ClassLoss<'a, T>> {
        Ok(ClassLoss {
            op: self.op,
            logits: self.logits,
            rows,
            target: Targets::check(self.op, indices, rows.classes, self.ignore_index)?,
            weight,
            label_smoothing: self.label_smoothing,
        })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, self.op)?;
        let (rows, target, weight) = self.operands(inputs)?;
        target.with_contiguous(|indices: &[i64]| {
            float_dispatch!(x.dtype(), self.op, |T| {
                let w: Option<Vec<T>> = weight.as_ref().map(|w| w.to_vec()).transpose()?;
                let loss = self.loss(rows, indices, w.as_deref())?;
                let losses = x.with_contiguous(|s: &[T]| loss.forward(s))?;
                let out = match self.reduction {
                    Reduction::None => {
                        let each: Vec<T> = losses.iter().map(|&v| T::from_f64(v)).collect();
                        Tensor::from_vec(each, self.target_shape(x.shape())?)
                    }
                    Reduction::Sum => Tensor::from_vec(vec![T::from_f64(losses::total(&losses))], Vec::<usize>::new()),
                    // All ignored: 0 / 0 is NaN, as torch gives.
                    Reduction::Mean => {
                        let mean = losses::total(&losses) / loss.total_weight();
                        Tensor::from_vec(vec![T::from_f64(mean)], Vec::<usize>::new())
                    }
                };
                crate::buffer_pool::give(losses);
                out
            })
        })?
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (x, dtype) = *nth(inputs, 0, self.op)?;
        let (target, target_dtype) = *nth(inputs, 1, self.op)?;
        check_target_dtype(self.op, target_dtype)?;
        let expected = x.as_ref().map(|s| self.target_shape(s)).transpose()?;
        if let (Some(want), Some(got)) = (&expected, target) {
            let fits =
                want.len() == got.len() && want.iter().zip(got).all(|(a, b)| a.is_none() || b.is_none() || a == b);
            if !fits {
                return shape_err(format!(
                    "{}: expected target of shape {} for input of shape {}, got {}",
                    self.op,
                    crate::graph::fmt_partial(&expected),
                    crate::graph::fmt_partial(x),
                    crate::graph::fmt_partial(target)
                ));
            }
        }
        let dtype = float_only(self.op, dtype)?;
        match self.reduction {
            Reduction::None => Ok((expected.or_else(|| target.clone()), dtype)),
            _ => Ok((Some(vec![]), dtype)),
        }
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = nth(a.inputs, 0, self.op)?;
        let target = nth(a.inputs, 1, self.op)?;
        let weight = nth(a.inputs, 2, self.op)?;
        let operands = [a.grad, x, target, weight];
        let mut grad = |wrt_weight: bool| {
            let op = ClassLossGrad { settings: self.clone(), wrt_weight };
            d.apply(Op::Table(TableOps::ClassLossGrad(op)), &operands)
        };
        let gx = if a.needs.first().copied().unwrap_or(false) { Some(grad(false)?) } else { None };
        let gw = if a.needs.get(2).copied().unwrap_or(false) { Some(grad(true)?) } else { None };
        Ok(vec![gx, None, gw])
    }

    /// The gradient of the input (`wrt_weight`: of the class weights) from (output gradient,
    /// input, target, weight). An empty weight (no weights) gets an empty gradient.
    fn gradient(&self, inputs: &[&Tensor], wrt_weight: bool) -> Result<Tensor> {
        let g = *nth(inputs, 0, self.op)?;
        let x = *nth(inputs, 1, self.op)?;
        let (rows, target, weight) = self.operands(&inputs[1..])?;
        let g = forward::as_dtype(g, DType::F64)?.to_vec::<f64>()?;
        target.with_contiguous(|indices: &[i64]| {
            float_dispatch!(x.dtype(), self.op, |T| {
                let w: Option<Vec<T>> = weight.as_ref().map(|w| w.to_vec()).transpose()?;
                let loss = self.loss(rows, indices, w.as_deref())?;
                let first = g.first().copied().unwrap_or(0.0);
                if wrt_weight {
                    return self.weight_gradient(&loss, x, &g, first);
                }
                let scale = match self.reduction {
                    Reduction::None => Factor::Each(&g),
                    Reduction::Sum => Factor::Same(first),
                    Reduction::Mean => Factor::Same(first / loss.total_weight()),
                };
                Tensor::from_vec(x.with_contiguous(|s: &[T]| loss.backward(s, scale))?, x.shape())
            })
        })?
    }
}

impl ClassSettings {
    /// nll's mean gradient (of the input, or `wrt_weight` of the class weights) from its
    /// operands `(g, x, target, weight)`, written with the summed loss and its gradients:
    /// the mean is N/Z, with N the summed loss and Z the summed weight of the targets (the
    /// loss of −1 everywhere without smoothing), so `g·∇ₓ(N/Z) = ∇ₓN·(g/Z)` and
    /// `g·∇_w(N/Z) = ∇_w N·(g/Z) − ∇_w Z·(g/Z)(N/Z)`.
    fn mean_as_sums<D: Differentiator>(&self, t: &mut D, ins: &[D::Value], wrt_weight: bool) -> Result<D::Value> {
        let op = self.op;
        let (g, x, target, w) = (nth(ins, 0, op)?, nth(ins, 1, op)?, nth(ins, 2, op)?, nth(ins, 3, op)?);
        let sums = ClassSettings { reduction: Reduction::Sum, ..self.clone() };
        let counts = ClassSettings { label_smoothing: 0.0, ..sums.clone() };
        let loss = |t: &mut D, settings: &ClassSettings, x: &D::Value| {
            t.apply(Op::Table(TableOps::NllLoss(NllLoss(settings.clone()))), &[x, target, w])
        };
        let grad = |t: &mut D, settings: &ClassSettings, wrt_weight: bool, g: &D::Value, x: &D::Value| {
            let op = ClassLossGrad { settings: settings.clone(), wrt_weight };
            t.apply(Op::Table(TableOps::ClassLossGrad(op)), &[g, x, target, w])
        };
        let minus_ones = t.apply(Op::FullLike(-1.0), &[x])?;
        let total = loss(t, &counts, &minus_ones)?;
        let scaled = t.div(g, &total)?;
        if !wrt_weight {
            return grad(t, &sums, false, &scaled, x);
        }
        let summed = loss(t, &sums, x)?;
        let mean = t.div(&summed, &total)?;
        let through_total = t.mul(&scaled, &mean)?;
        let direct = grad(t, &sums, true, &scaled, x)?;
        let via_total = grad(t, &counts, true, &through_total, &minus_ones)?;
        t.apply(Op::Binary(BinaryOp::Sub), &[&direct, &via_total])
    }

    fn weight_gradient<T: losses::FastExp>(
        &self,
        loss: &ClassLoss<'_, T>,
        x: &Tensor,
        g: &[f64],
        first: f64,
    ) -> Result<Tensor> {
        if loss.weight.is_none() {
            return Tensor::zeros(&[0], x.dtype());
        }
        let gw = match self.reduction {
            Reduction::None => x.with_contiguous(|s: &[T]| loss.weight_backward(s, Factor::Each(g), None))?,
            Reduction::Sum => x.with_contiguous(|s: &[T]| loss.weight_backward(s, Factor::Same(first), None))?,
            Reduction::Mean => {
                let total = loss.total_weight();
                let value = x.with_contiguous(|s: &[T]| losses::total(&loss.forward(s)))? / total;
                let k = first / total;
                x.with_contiguous(|s: &[T]| loss.weight_backward(s, Factor::Same(k), Some((first, value, total))))?
            }
        };
        Tensor::from_vec(gw.into_iter().map(T::from_f64).collect::<Vec<T>>(), vec![loss.rows.classes])
    }
}

fn check_target_dtype(op: &str, dtype: DType) -> Result<()> {
    match dtype {
        DType::I64 | DType::I32 => Ok(()),
        other => crate::error::dtype_err(format!(
            "{op}: expected target of class indices as int64 (or int32), got {}; use class probabilities of the \
             input's shape for soft targets",
            other.name()
        )),
    }
}

/// Cross-entropy of logits `input` (N, C, d1, ...) against class indices `target` (N, d1, ...),
/// with log-softmax fused in: one log-sum-exp per row forward, softmax − one-hot backward.
#[derive(Clone, Debug)]
pub struct CrossEntropy(ClassSettings);

/// The negative log-likelihood of class indices under log-probabilities.
#[derive(Clone, Debug)]
pub struct NllLoss(ClassSettings);

const CLASS_ROLES: &[Role] = &[Role::Data, Role::Index, Role::Data];

impl TableOp for CrossEntropy {
    const SPEC: Spec = Spec {
        name: "cross_entropy",
        torch_aliases: &[],
        tf: &[],
        doc: "Cross-entropy of logits (N, C, d1, ...) and class indices (N, d1, ...), with class weights \
              (an empty weight: none), ignore_index, reduction and label_smoothing as torch; log-softmax fused in.",
        differentiable: true,
        inputs: CLASS_INPUTS,
        params: &[IGNORE_INDEX, REDUCTION, LABEL_SMOOTHING],
    };
    const ROLES: &'static [Role] = CLASS_ROLES;
    const TORCH_FRONT: TorchFront = TorchFront::FUNCTIONAL;

    fn build(args: &Args) -> Result<Self> {
        Ok(CrossEntropy(ClassSettings::build(args, "cross_entropy", true)?))
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.0.forward(inputs)
    }
    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        self.0.infer(inputs)
    }
    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0b111, output: false }
    }
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        self.0.vjp(d, a)
    }
}

impl TableOp for NllLoss {
    const SPEC: Spec = Spec {
        name: "nll_loss",
        torch_aliases: &[],
        tf: &[],
        doc: "Negative log-likelihood of class indices (N, d1, ...) under log-probabilities (N, C, d1, ...), \
              with class weights (an empty weight: none), ignore_index and reduction as torch.",
        differentiable: true,
        inputs: CLASS_INPUTS,
        params: &[IGNORE_INDEX, REDUCTION],
    };
    const ROLES: &'static [Role] = CLASS_ROLES;
    const TORCH_FRONT: TorchFront = TorchFront::FUNCTIONAL;

    fn build(args: &Args) -> Result<Self> {
        Ok(NllLoss(ClassSettings::build(args, "nll_loss", false)?))
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.0.forward(inputs)
    }
    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        self.0.infer(inputs)
    }
    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0b111, output: false }
    }
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        self.0.vjp(d, a)
    }
}

/// The gradient of a class loss with respect to its input, or (`wrt_weight`) to its class weights.
#[derive(Clone, Debug)]
pub struct ClassLossGrad {
    settings: ClassSettings,
    wrt_weight: bool,
}

impl TableOp for ClassLossGrad {
    const SPEC: Spec = internal("class_loss_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("class_loss_backward is built by the class losses' rules only".into()))
    }
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.settings.gradient(inputs, self.wrt_weight)
    }
    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, if self.wrt_weight { 3 } else { 1 }, "class_loss_backward")?;
        Ok((shape.clone(), dtype))
    }
    fn saves(&self, _needs: &[bool]) -> Saves {
        // Only recorded when a backward is (create_graph): its rule reads them all.
        Saves { inputs: 0b1111, output: false }
    }

    /// Summed or per position, nll's loss N(x, w) is bilinear in its input and class weights,
    /// so its two gradients are each other's rules: `g·∇ₓN(·, w)` does not depend on x and
    /// `g·∇_w N(x, ·)` not on w, and each is linear in g, with the loss as the adjoint in g.
    /// nll's mean is a sum over a sum (`mean_as_sums`); cross-entropy's gradients are nll's
    /// after log-softmax. Both are differentiated as those composites.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let name = if self.settings.logits { "CrossEntropyBackward0" } else { "NllLossBackward0" };
        let wrt_weight = self.wrt_weight;
        if self.settings.logits {
            let x = nth(a.inputs, 1, name)?;
            let rank = d.rank(x).ok_or_else(|| {
                Error::Gradient(format!(
                    "{name}: differentiating it twice needs the input's rank known when it is built"
                ))
            })?;
            let dim = Some(self.settings.class_dim(rank)? as isize);
            let nll = ClassLossGrad { settings: ClassSettings { logits: false, ..self.settings.clone() }, wrt_weight };
            return vjp_of_composite(d, a, |t, ins| {
                let log_probs = t.apply(Op::Table(TableOps::LogSoftmax(Softmax { dim })), &[&ins[1]])?;
                let operands = [&ins[0], &log_probs, &ins[2], &ins[3]];
                let c = t.apply(Op::Table(TableOps::ClassLossGrad(nll)), &operands)?;
                if wrt_weight {
                    return Ok(c);
                }
                t.apply(Op::Table(TableOps::SoftmaxGrad(SoftmaxGrad { dim, log: true })), &[&c, &log_probs])
            });
        }
        if self.settings.reduction == Reduction::Mean {
            let settings = self.settings.clone();
            return vjp_of_composite(d, a, |t, ins| settings.mean_as_sums(t, ins, wrt_weight));
        }
        let need = |i: usize| a.needs.get(i).copied().unwrap_or(false);
        let (g, x, target, weight) =
            (nth(a.inputs, 0, name)?, nth(a.inputs, 1, name)?, nth(a.inputs, 2, name)?, nth(a.inputs, 3, name)?);
        let loss = Op::Table(TableOps::NllLoss(NllLoss(self.settings.clone())));
        let grad = |wrt_weight: bool| {
            Op::Table(TableOps::ClassLossGrad(ClassLossGrad { settings: self.settings.clone(), wrt_weight }))
        };
        let mut grads = vec![None, None, None, None];
        if !wrt_weight {
            if need(0) {
                grads[0] = Some(d.apply(loss, &[a.grad, target, weight])?);
            }
            if need(3) {
                grads[3] = Some(d.apply(grad(true), &[g, a.grad, target, weight])?);
            }
        } else {
            if need(0) {
                grads[0] = Some(d.apply(loss, &[x, target, a.grad])?);
            }
            if need(1) {
                grads[1] = Some(d.apply(grad(false), &[g, x, target, a.grad])?);
            }
        }
        Ok(grads)
    }
}
