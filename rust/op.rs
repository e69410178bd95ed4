//! The op enum: the one vocabulary shared by the eager tape, the derivative
//! rules and the static graph executor.

use crate::dtype::{DType, Scalar};
use crate::kernels::elementwise::{BinaryOp, CmpOp, ScalarOp, UnaryOp};
use std::fmt;
use std::sync::Arc;

/// One entry of an index key (`x[key]`), as the key parser gives it.
#[derive(Clone, Debug, PartialEq)]
pub enum IndexItem {
    Int(isize),
    Slice {
        start: Option<isize>,
        stop: Option<isize>,
        step: isize,
    },
    NewAxis,
    /// `...`: as many full slices as the dims the other items leave, known when the rank is.
    Ellipsis,
    /// `True`/`False`: numpy's 0-d bool index, a new dim of size 1 or 0 (see `indexing`).
    Bool(bool),
    /// An index tensor: the next of the op's index inputs, in key order. Integer tensors
    /// pick along one dim, bool (and, as in torch, uint8) masks along as many dims as
    /// they have; a key holding any is advanced (`indexing::advanced`).
    Tensor,
}

/// A user-defined op whose backward lives outside the core (a Python
/// `autograd.Function`). The binding layer implements it.
pub trait CustomBackward: Send + Sync {
    fn name(&self) -> &str;
    /// Gradients for each forward input, given one gradient per forward output.
    fn backward(&self, grads: Vec<crate::tensor::Tensor>) -> crate::error::Result<Vec<Option<crate::tensor::Tensor>>>;
    /// `backward` in a pass that records itself (`create_graph=True`); `node` is this
    /// function's own tape node, whose outputs the values it saved may be.
    fn backward_recorded(
        &self,
        grads: Vec<crate::tensor::Tensor>,
        _node: &std::sync::Arc<crate::autograd::node::Node>,
    ) -> crate::error::Result<Vec<Option<crate::tensor::Tensor>>> {
        self.backward(grads)
    }
    /// Frees what the forward saved; called when the graph is released after backward.
    fn release(&self) {}
}

#[derive(Clone)]
pub enum Op {
    Unary(UnaryOp),
    /// `x op s` for a number `s`, whose category takes part in promotion (`int + 0.5` is float).
    Scalar(ScalarOp, Scalar),
    Clamp {
        min: Option<f64>,
        max: Option<f64>,
    },
    Binary(BinaryOp),
    Compare(CmpOp),
    /// `where(cond, x, y)`, broadcasting all three.
    Where,
    /// Product of op(a) and op(b), where op transposes the last two dims when asked:
    /// two matrices, or batches of them whose leading dims broadcast (numpy's matmul).
    MatMul {
        transpose_a: bool,
        transpose_b: bool,
    },
    /// `dims == None` reduces everything.
    Sum {
        dims: Option<Vec<isize>>,
        keepdim: bool,
    },
    Mean {
        dims: Option<Vec<isize>>,
        keepdim: bool,
    },
    /// Largest (or smallest) element over `dims`; NaN wins, as in numpy.
    Extreme {
        largest: bool,
        dims: Option<Vec<isize>>,
        keepdim: bool,
    },
    Reshape(Vec<isize>),
    Transpose(isize, isize),
    /// Basic indexing: ints, slices and new axes. The result is a view.
    Index(Vec<IndexItem>),
    /// `x[mask]`: the elements where the bool mask is true, as a 1-D tensor.
    MaskedSelect,
    Cast(DType),
    /// A fresh copy (`clone()`, `identity`).
    Copy,
    /// A copy through which no gradient flows (`detach`, `stop_gradient`).
    StopGradient,

    // Ops that derivative rules emit. They take a reference tensor whose shape
    // (and dtype) is read at run time, so static graphs with unknown dims work.
    /// (g, like): sums broadcast dims of g away and casts to like's dtype.
    SumToLike,
    /// (g, like): broadcasts g to like's shape.
    BroadcastLike,
    /// (g, like): reshapes g to like's shape.
    ReshapeLike,
    /// (g, like): the gradient of a sum or mean over `dims` of like.
    ExpandReduced {
        dims: Option<Vec<isize>>,
        keepdim: bool,
        mean: bool,
    },
    /// (like): a tensor of like's shape and dtype filled with the value.
    FullLike(f64),
    /// (g, x): g where x > 0, else 0.
    ReluBackward,
    /// (g, x): g where min <= x <= max, else 0.
    ClampBackward {
        min: Option<f64>,
        max: Option<f64>,
    },
    /// (g, like): zeros of like's shape with g written at `like[index]`.
    IndexBackward(Vec<IndexItem>),
    /// (g, mask, like): zeros of like's shape with g written where mask is true.
    MaskedScatter,
    /// (g, like): g unchanged, once checked to have like's shape: `grad_ys[index]`
    /// of a static `gradients` call whose shapes are only known at run time.
    CheckGradShape(usize),

    /// An op of the table (`crate::ops`) other than the unary ones.
    Table(crate::ops::TableOps),

    /// A user-defined Function; its node carries the backward.
    Custom(Arc<dyn CustomBackward>),
}

impl Op {
    /// The cheaper op a call of this one runs when some inputs are plain numbers (`x ** 2`
    /// stays a scalar op, see `TableOp::with_numbers`), and the inputs it keeps, by index;
    /// None for a call without numbers or an op without such a form.
    pub fn with_numbers(&self, numbers: &[Option<Scalar>]) -> Option<(Op, Vec<usize>)> {
        match self {
            Op::Table(table) if numbers.iter().any(Option::is_some) => table.with_numbers(numbers),
            _ => None,
        }
    }

    /// The name used in `grad_fn` reprs and error messages, e.g. `MulBackward`.
    pub fn name(&self) -> String {
        let base: &str = match self {
            Op::Unary(u) => u.name(),
            Op::Scalar(s, _) => s.name(),
            Op::Clamp { .. } => "clamp",
            Op::Binary(b) => b.name(),
            Op::Compare(c) => c.name(),
            Op::Where => "where",
            Op::MatMul { .. } => "mm",
            Op::Sum { .. } => "sum",
            Op::Mean { .. } => "mean",
            Op::Extreme { largest: true, .. } => "amax",
            Op::Extreme { largest: false, .. } => "amin",
            Op::Reshape(_) => "reshape",
            Op::Transpose(..) => "transpose",
            Op::Index(_) => "index",
            Op::MaskedSelect => "masked_select",
            Op::Cast(_) => "to",
            Op::Copy => "clone",
            Op::StopGradient => "stop_gradient",
            Op::SumToLike => "sum_to",
            Op::BroadcastLike => "expand",
            Op::ReshapeLike => "reshape_as",
            Op::ExpandReduced { .. } => "expand_reduced",
            Op::FullLike(_) => "full_like",
            Op::ReluBackward => "threshold_backward",
            Op::ClampBackward { .. } => "clamp_backward",
            Op::IndexBackward(_) => "index_backward",
            Op::MaskedScatter => "masked_scatter",
            Op::CheckGradShape(_) => "check_grad_shape",
            Op::Table(t) => t.spec().name,
            Op::Custom(c) => return c.name().to_string(),
        };
        base.to_string()
    }

    /// `MulBackward0`-style name, as PyTorch shows in `grad_fn`.
    pub fn backward_name(&self) -> String {
        match self {
            Op::Custom(c) => format!("{}Backward", c.name()),
            _ => {
                let name = self.name();
                let mut camel = String::with_capacity(name.len() + 9);
                for part in name.split('_') {
                    let mut chars = part.chars();
                    if let Some(first) = chars.next() {
                        camel.extend(first.to_uppercase());
                        camel.push_str(chars.as_str());
                    }
                }
                camel + "Backward0"
            }
        }
    }

    /// Whether the output shares storage with the first input.
    pub fn is_view(&self) -> bool {
        match self {
            Op::Reshape(_) | Op::Transpose(..) | Op::Index(_) => true,
            Op::Table(t) => t.is_view(),
            _ => false,
        }
    }
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}
