//! The op table: each op declared once, with what both fronts need to expose it.
//!
//! A declaration gives the op's forward evaluation, its derivative rule and what
//! the rule reads, its static shape and dtype inference, and its names and
//! arguments on both fronts: the torch function (and `Tensor` method) and the TF1
//! names in `rustgrad.static`. The bindings publish the table as
//! `rustgrad._rustgrad.ops`; `python tools/generate.py` writes the Python
//! functions, methods, stubs and API docs of both fronts from it.
//!
//! Two kinds of declaration:
//! - `unary.rs`: one-tensor elementwise ops, one macro entry each;
//! - everything else: a type implementing [`TableOp`] in its family's file
//!   (`scan.rs`, ...), listed once in the `table!` invocation below. Families
//!   with many alike ops declare them with a macro of their own (`binary.rs`).
//!
//! `docs/contributing.md` walks through adding an op.

pub mod activation;
pub mod args;
pub mod binary;
pub mod bmm;
// mpistatic (issue 17): static mode's collectives.
pub mod collective;
pub mod compare;
pub mod conv;
pub mod creation;
pub mod einsum;
pub mod gather;
pub mod indexing;
pub mod introspect;
pub mod layers;
pub mod layout;
pub mod logical;
pub mod losses;
pub mod matrix;
pub mod moments;
pub mod nd;
pub mod norm;
pub mod norms;
pub mod ordering;
pub mod overwrite;
pub mod pad;
pub mod picks;
pub mod pool;
pub mod products;
pub mod reduce;
pub mod reorder;
pub mod reshapes;
pub mod scan;
pub mod scatter_source;
pub mod select;
pub mod shape;
pub mod slicing;
pub mod spatial;
pub mod unary;
mod unary_macro;
pub mod views;

pub use args::{Args, Kind, Param};

use crate::dtype::{result_type, DType, Participant, Scalar};
use crate::error::Result;
use crate::graph::PartialShape;
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::tensor::Tensor;

/// What a derivative rule reads, so the eager tape keeps only that.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Keeps {
    Nothing,
    Input,
    Output,
}

/// A tensor argument of an op: its torch and TF1 names.
#[derive(Debug)]
pub struct Input {
    pub torch: &'static str,
    pub tf: &'static str,
    /// A sequence of any number of tensors (`cat`'s `tensors`); then it is the op's only
    /// tensor argument, and the op is a function only, not a `Tensor` method.
    pub list: bool,
}

/// A parameter that no front spells: each front passes its own default, so the op knows
/// which front's semantics to follow where they differ beyond argument names (TF1's
/// `squeeze` refuses a named dim that is not 1; torch's `cumsum` gives integers int64).
pub const TF_SEMANTICS: Param = Param {
    torch: "",
    tf: "",
    tf_aliases: &[],
    kind: Kind::Bool,
    torch_default: Some("False"),
    tf_default: Some("True"),
};

/// The one input of a unary op: torch's `input`, TF's `x`.
pub const ONE_INPUT: &[Input] = &[Input { torch: "input", tf: "x", list: false }];

/// What a tensor input of an op holds. Index and mask inputs take no gradient, and a
/// static graph makes a Python value given for one an integer constant (int32 for
/// Python ints, as TF1) or a bool one, where a data input takes the dtype of the
/// op's first data tensor.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    Data,
    /// An int64 or int32 tensor of positions.
    Index,
    /// A bool tensor.
    Mask,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Data => "data",
            Role::Index => "index",
            Role::Mask => "mask",
        }
    }
}

/// What an elementwise op does with an integer tensor, as torch: `Promote` computes
/// in float32 (`sin`, `exp`, `sqrt`, ...), `Keep` has integer kernels and keeps the
/// dtype (`abs`, `neg`, `sign`, `square`, `relu`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ints {
    Promote,
    Keep,
}

/// How one op is named on each front, what it takes, and what its docs say.
#[derive(Debug)]
pub struct Spec {
    /// The core's name: the torch function and `Tensor` method, and the node name (`SinBackward0`).
    pub name: &'static str,
    /// More torch names for the same op (`arcsin` for `asin`).
    pub torch_aliases: &'static [&'static str],
    /// TF1 names in `rustgrad.static`, dotted for submodules (`math.sin`, `nn.relu`).
    /// Empty: TF1 has no such op, and `rustgrad.static` offers it under its torch name.
    pub tf: &'static [&'static str],
    /// One line for the docs and docstrings.
    pub doc: &'static str,
    /// Whether the op has a derivative (`floor` has a zero one, which still counts).
    pub differentiable: bool,
    /// The tensor arguments, first in both signatures.
    pub inputs: &'static [Input],
    /// The other arguments, after the tensors, in torch's order.
    pub params: &'static [Param],
}

/// The spec of an op that only derivative rules emit: no front names it.
pub const fn internal(name: &'static str, inputs: &'static [Input]) -> Spec {
    Spec { name, torch_aliases: &[], tf: &[], doc: "", differentiable: false, inputs, params: &[] }
}

/// The error for differentiating an internal op that has no rule of its own.
pub fn no_double_backward(name: &str) -> crate::error::Error {
    crate::error::Error::Gradient(format!(
        "{name}: differentiating this op is not supported (no double backward through it)"
    ))
}

/// Input `i` of an op, or an error naming the op when it has fewer.
pub fn nth<'a, T>(inputs: &'a [T], i: usize, op: &str) -> Result<&'a T> {
    inputs.get(i).ok_or_else(|| {
        crate::error::Error::InvalidArgument(format!("{op}: expected at least {} inputs, got {}", i + 1, inputs.len()))
    })
}

/// An input of an eager call of a table op: a tensor, or a Python number.
pub enum Operand {
    Tensor(Tensor),
    Number(Scalar),
}

/// The tensors an eager call runs on. Data inputs are promoted together as torch does: a
/// number is "weak" (`atan2(x, 2)` of a float32 `x` is float32, but a float number beside int
/// or bool tensors makes the call float32), and every data input is cast to the result dtype.
/// Index and mask inputs (`roles`; data when absent) keep their dtype: the op checks it.
/// None: data inputs are given, and none of them is a tensor.
pub fn numbers_as_tensors(inputs: Vec<Operand>, roles: &[Role]) -> Result<Option<Vec<Tensor>>> {
    let is_data = |i: usize| roles.get(i).is_none_or(|&r| r == Role::Data);
    let participants: Vec<Participant> = inputs
        .iter()
        .enumerate()
        .filter(|&(i, _)| is_data(i))
        .map(|(_, input)| match input {
            Operand::Tensor(t) => Participant::tensor(t.dtype(), t.rank()),
            Operand::Number(s) => Participant::Number(s.kind()),
        })
        .collect();
    let numbers_only = participants.iter().all(|p| matches!(p, Participant::Number(_)));
    if numbers_only && !participants.is_empty() {
        return Ok(None);
    }
    let dtype = if numbers_only { DType::F32 } else { result_type(&participants) };
    inputs
        .into_iter()
        .enumerate()
        .map(|(i, input)| match input {
            Operand::Tensor(t) if is_data(i) => crate::forward::as_dtype(&t, dtype),
            Operand::Tensor(t) => Ok(t),
            Operand::Number(s) => Ok(Tensor::scalar(s, dtype)),
        })
        .collect::<Result<Vec<Tensor>>>()
        .map(Some)
}

/// The op and the inputs after the destination that an in-place call `dst.NAME_(others...)`
/// runs. A number is weak beside `dst`, as out of place: `int_tensor.pow_(0.5)` computes in
/// float32, which the destination then refuses to hold. Where the op has a cheaper form for a
/// number (`x.pow_(2)`) that keeps `dst` first, that form runs, so the bits are those of `x.pow(2)`.
pub fn in_place_operands(op: Op, dst: &Tensor, others: Vec<Operand>) -> (Op, Vec<Tensor>) {
    let numbers: Vec<Option<Scalar>> = std::iter::once(None)
        .chain(others.iter().map(|o| if let Operand::Number(v) = o { Some(*v) } else { None }))
        .collect();
    let weak_dtype =
        |value: Scalar| result_type(&[Participant::tensor(dst.dtype(), dst.rank()), Participant::Number(value.kind())]);
    let others: Vec<Tensor> = others
        .into_iter()
        .map(|other| match other {
            Operand::Tensor(t) => t,
            Operand::Number(value) => Tensor::scalar(value, weak_dtype(value)),
        })
        .collect();
    match op.with_numbers(&numbers) {
        Some((cheaper, keep)) if keep.first() == Some(&0) => {
            let kept = keep[1..].iter().filter_map(|&i| others.get(i.wrapping_sub(1)).cloned()).collect();
            (cheaper, kept)
        }
        _ => (op, others),
    }
}

/// A graph node's shape and dtype, as static inference sees them.
pub type Meta<'a> = (&'a PartialShape, DType);

/// Where an op's torch name lives: `torch.NAME`, `Tensor.NAME`, `torch.nn.functional.NAME`,
/// and the in-place method `Tensor.NAME_`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TorchFront {
    pub function: bool,
    pub method: bool,
    pub functional: bool,
    pub in_place: bool,
}

impl TorchFront {
    /// `torch.sin` and `Tensor.sin` (the default).
    pub const FUNCTION_AND_METHOD: TorchFront =
        TorchFront { function: true, method: true, functional: false, in_place: false };
    /// `torch.relu`, `Tensor.relu` and `F.relu`.
    pub const EVERYWHERE: TorchFront = TorchFront { function: true, method: true, functional: true, in_place: false };
    /// `torch.conv2d` and `F.conv2d`, no method.
    pub const FUNCTION_AND_FUNCTIONAL: TorchFront =
        TorchFront { function: true, method: false, functional: true, in_place: false };
    /// Only `F.gelu`.
    pub const FUNCTIONAL: TorchFront = TorchFront { function: false, method: false, functional: true, in_place: false };

    /// This front with torch's in-place method `Tensor.NAME_` (`pow_`, `lerp_`), whose
    /// result is written into the tensor it is called on; only for an op that is a method.
    pub const fn with_in_place(self) -> TorchFront {
        assert!(self.method, "an in-place method needs the op to be a method");
        TorchFront { in_place: true, ..self }
    }
}

/// An op of the table other than the unary ones: its whole behaviour in one place.
pub trait TableOp: Clone + std::fmt::Debug + Send + Sync + Sized + 'static {
    const SPEC: Spec;
    /// The role of each tensor input, in order; empty (the default) when all are data.
    const ROLES: &'static [Role] = &[];
    /// torch's order of the arguments, by name, when a param comes between tensors
    /// (`gather(input, dim, index)`); empty (the default): the tensors, then the params.
    const TORCH_ORDER: &'static [&'static str] = &[];
    /// Where torch offers the op (see [`TorchFront`]).
    const TORCH_FRONT: TorchFront = TorchFront::FUNCTION_AND_METHOD;
    /// The op from its arguments (`SPEC.params`, converted by kind).
    fn build(args: &Args) -> Result<Self>;
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor>;
    /// The output's shape and dtype; an error when the inputs certainly do not fit.
    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)>;
    /// What `vjp` reads, given which inputs need a gradient.
    fn saves(&self, needs: &[bool]) -> Saves;
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>>;
    /// Whether the output may share its first input's storage (a view such as `permute`):
    /// static plans then give it no buffer of its own.
    fn is_view(&self) -> bool {
        false
    }

    /// TF's node type (`op.type`, and the default node name) where TF has the op and its type
    /// is not the CamelCase of `SPEC.name`: `ConcatV2` for `cat`, `IsNan` for `isnan`, `MirrorPad`
    /// for a reflecting `pad`. Empty (the default): the CamelCase of the name.
    fn tf_type(&self) -> &'static str {
        ""
    }

    /// A cheaper core op for a call whose inputs are partly plain numbers (`numbers[i]` is
    /// `Some(v)` when input i is the Python number v), with the inputs that op takes: `x ** 2`
    /// stays a scalar op. None: each number becomes a tensor of the other inputs' dtype.
    fn with_numbers(&self, _numbers: &[Option<Scalar>]) -> Option<(crate::op::Op, Vec<usize>)> {
        None
    }
}

macro_rules! table {
    (
        public: [$($variant:ident($ty:ty)),* $(,)?],
        internal: [$($ivariant:ident($ity:ty)),* $(,)?] $(,)?
    ) => {
        /// Every `TableOp`, as one enum the core's `Op` carries.
        #[derive(Clone, Debug)]
        pub enum TableOps {
            $($variant($ty),)*
            $($ivariant($ity),)*
        }

        /// Builds one op of the table from its arguments.
        pub type Builder = fn(&Args) -> Result<TableOps>;

        /// Each public table op's spec and builder, in declaration order. Internal ops
        /// (ones derivative rules emit, such as `cat`'s slicing of its gradient) are not listed.
        pub const TABLE: &[(&Spec, Builder)] = &[
            $((&<$ty as TableOp>::SPEC, |args| Ok(TableOps::$variant(<$ty as TableOp>::build(args)?)))),*
        ];

        /// The roles of each public table op's inputs, its torch argument order and where torch
        /// offers it, in the order of `TABLE`.
        pub const TABLE_EXTRAS: &[(&[Role], &[&str], TorchFront)] = &[$((
            <$ty as TableOp>::ROLES,
            <$ty as TableOp>::TORCH_ORDER,
            <$ty as TableOp>::TORCH_FRONT,
        )),*];

        /// Each table op's variant name and size, largest first.
        #[cfg(test)]
        pub fn variant_sizes() -> Vec<(&'static str, usize)> {
            let mut v = vec![$((stringify!($variant), std::mem::size_of::<$ty>()),)* $((stringify!($ivariant), std::mem::size_of::<$ity>()),)*];
            v.sort_by_key(|p| std::cmp::Reverse(p.1));
            v
        }

        impl TableOps {
            pub fn spec(&self) -> &'static Spec {
                match self {
                    $(TableOps::$variant(_) => &<$ty as TableOp>::SPEC,)*
                    $(TableOps::$ivariant(_) => &<$ity as TableOp>::SPEC,)*
                }
            }

            pub fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                match self {
                    $(TableOps::$variant(op) => op.forward(inputs),)*
                    $(TableOps::$ivariant(op) => op.forward(inputs),)*
                }
            }

            pub fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                match self {
                    $(TableOps::$variant(op) => op.infer(inputs),)*
                    $(TableOps::$ivariant(op) => op.infer(inputs),)*
                }
            }

            /// TF's node type when it is not the CamelCase of the op's name; empty otherwise.
            pub fn tf_type(&self) -> &'static str {
                match self {
                    $(TableOps::$variant(op) => op.tf_type(),)*
                    $(TableOps::$ivariant(op) => op.tf_type(),)*
                }
            }

            pub fn is_view(&self) -> bool {
                match self {
                    $(TableOps::$variant(op) => op.is_view(),)*
                    $(TableOps::$ivariant(op) => op.is_view(),)*
                }
            }

            pub fn saves(&self, needs: &[bool]) -> Saves {
                match self {
                    $(TableOps::$variant(op) => op.saves(needs),)*
                    $(TableOps::$ivariant(op) => op.saves(needs),)*
                }
            }

            pub fn with_numbers(&self, numbers: &[Option<Scalar>]) -> Option<(crate::op::Op, Vec<usize>)> {
                match self {
                    $(TableOps::$variant(op) => op.with_numbers(numbers),)*
                    $(TableOps::$ivariant(op) => op.with_numbers(numbers),)*
                }
            }

            pub fn vjp<D: Differentiator>(
                &self,
                d: &mut D,
                a: RuleArgs<'_, D::Value>,
            ) -> Result<Vec<Option<D::Value>>> {
                match self {
                    $(TableOps::$variant(op) => op.vjp(d, a),)*
                    $(TableOps::$ivariant(op) => op.vjp(d, a),)*
                }
            }
        }
    };
}

table! {
    public: [
        Cumsum(scan::Cumsum),
        Logsumexp(reduce::Logsumexp),
        Cat(shape::Cat),
        Stack(shape::Stack),
        Permute(views::Permute),
        Movedim(views::Movedim),
        Swapaxes(views::Swapaxes),
        Expand(views::Expand),
        ExpandAs(views::ExpandAs),
        Squeeze(reshapes::Squeeze),
        Unsqueeze(reshapes::Unsqueeze),
        Flatten(reshapes::Flatten),
        Unflatten(reshapes::Unflatten),
        ViewAs(reshapes::ViewAs),
        ReshapeAs(reshapes::ReshapeAs),
        Narrow(slicing::Narrow),
        Select(slicing::Select),
        Diagonal(slicing::Diagonal),
        Flip(reorder::Flip),
        Fliplr(reorder::Fliplr),
        Flipud(reorder::Flipud),
        Roll(reorder::Roll),
        Repeat(reorder::Repeat),
        Tile(reorder::Tile),
        Pad(pad::Pad),
        Diag(matrix::Diag),
        DiagEmbed(matrix::DiagEmbed),
        Trace(matrix::Trace),
        Tril(matrix::Tril),
        Triu(matrix::Triu),
        BandPart(matrix::BandPart),
        Atan2(binary::Atan2),
        Hypot(binary::Hypot),
        Fmod(binary::Fmod),
        Pow(binary::Pow),
        Copysign(binary::Copysign),
        Xlogy(binary::Xlogy),
        SquaredDifference(binary::SquaredDifference),
        Logaddexp(binary::Logaddexp),
        Fmax(binary::Fmax),
        Fmin(binary::Fmin),
        ClampMin(binary::ClampMin),
        ClampMax(binary::ClampMax),
        Lerp(binary::Lerp),
        LogicalAnd(logical::LogicalAnd),
        LogicalOr(logical::LogicalOr),
        LogicalXor(logical::LogicalXor),
        LogicalNot(logical::LogicalNot),
        IsNan(logical::IsNan),
        IsInf(logical::IsInf),
        IsPosInf(logical::IsPosInf),
        IsNegInf(logical::IsNegInf),
        IsFinite(logical::IsFinite),
        NanToNum(logical::NanToNum),
        Eq(compare::Eq),
        Ne(compare::Ne),
        Lt(compare::Lt),
        Le(compare::Le),
        Gt(compare::Gt),
        Ge(compare::Ge),
        IsClose(compare::IsClose),
        Prod(reduce::Prod),
        Cumprod(scan::Cumprod),
        Var(moments::Var),
        Std(moments::Std),
        Norm(norm::Norm),
        All(reduce::All),
        Any(reduce::Any),
        CountNonzero(reduce::CountNonzero),
        Argmax(ordering::ArgExtreme<true>),
        Argmin(ordering::ArgExtreme<false>),
        Argsort(ordering::Argsort),
        TakeAlongDim(ordering::TakeAlongDim),
        Gather(gather::Gather),
        Scatter(gather::Scatter),
        ScatterAdd(gather::ScatterAdd),
        IndexSelect(gather::IndexSelect),
        IndexAdd(gather::IndexAdd),
        Take(gather::Take),
        MaskedFill(select::MaskedFill),
        Argwhere(select::Argwhere),
        OneHot(select::OneHot),
        BooleanMask(select::BooleanMask),
        GatherNd(nd::GatherNd),
        ScatterNd(nd::ScatterNd),
        Einsum(products::Einsum),
        Tensordot(products::Tensordot),
        Outer(products::Outer),
        Dot(products::Dot),
        Mv(products::Mv),
        Addmm(products::Addmm),
        Addmv(products::Addmv),
        Baddbmm(products::Baddbmm),
        Softmax(losses::Softmax<false>),
        LogSoftmax(losses::Softmax<true>),
        CrossEntropy(losses::CrossEntropy),
        NllLoss(losses::NllLoss),
        Conv1d(conv::Conv1d),
        Conv2d(conv::Conv2d),
        ConvTranspose2d(conv::ConvTranspose2d),
        MaxPool2d(pool::MaxPool2d),
        MaxPool2dIndices(pool::MaxPool2dIndices),
        AvgPool2d(pool::AvgPool2d),
        AdaptiveAvgPool2d(pool::AdaptiveAvgPool2d),
        Gelu(activation::Gelu),
        LeakyRelu(activation::LeakyRelu),
        Elu(activation::Elu),
        Softplus(activation::Softplus),
        Hardtanh(activation::Hardtanh),
        LayerNorm(norms::LayerNorm),
        GroupNorm(norms::GroupNorm),
        BatchNorm(norms::BatchNorm),
        Linear(layers::Linear),
        Embedding(layers::Embedding),
    ],
    internal: [
        CatGrad(shape::CatGrad),
        WindowGrad(slicing::WindowGrad),
        DiagGrad(matrix::DiagGrad),
        TraceGrad(matrix::TraceGrad),
        TileGrad(reorder::TileGrad),
        PadGrad(pad::PadGrad),
        ProdGrad(reduce::ProdGrad),
        CumprodGrad(scan::CumprodGrad),
        VarGrad(moments::VarGrad),
        TakeAlongDimGrad(ordering::TakeAlongDimGrad),
        PickRows(indexing::PickRows),
        PutRows(indexing::PutRows),
        ScatterSourceGrad(scatter_source::ScatterSourceGrad),
        ScatterSourceCorner(scatter_source::ScatterSourceCorner),
        Range(creation::Range),
        Fill(creation::Fill),
        EinsumGrad(products::EinsumGrad),
        ShapeOf(introspect::ShapeOf),
        SizeOf(introspect::SizeOf),
        RankOf(introspect::RankOf),
        ReshapeTo(introspect::ReshapeTo),
        Bmm(bmm::Bmm),
        Zero(overwrite::Zero),
        FillWith(overwrite::FillWith),
        SoftmaxGrad(losses::SoftmaxGrad),
        ClassLossGrad(losses::ClassLossGrad),
        ConvInputGrad(conv::ConvInputGrad),
        ConvWeightGrad(conv::ConvWeightGrad),
        PoolGrad(pool::PoolGrad),
        MaxPoolGrad(pool::MaxPoolGrad),
        ActivationBackward(activation::ActivationBackward),
        NormBackward(norms::NormBackward),
        LinearBackward(layers::LinearBackward),
        EmbeddingBackward(layers::EmbeddingBackward),
        // mpistatic (issue 17): static mode's collectives.
        HorovodAllreduce(collective::AllreduceMean),
        HorovodBroadcast(collective::BroadcastFused),
        Unfuse(collective::Unfuse),
    ],
}

#[cfg(test)]
mod tests {
    /// Recording an op moves it into its tape node through three calls; at more than 64 bytes
    /// each move was a `memcpy` call (a one-element add spent ~90 instructions on them).
    /// Large arguments go behind a `Box` in the op's struct (as pooling and convolution do).
    #[test]
    fn an_op_stays_small_enough_to_move_cheaply() {
        let size = std::mem::size_of::<crate::op::Op>();
        let largest = &super::variant_sizes()[..3];
        assert!(size <= 64, "Op is {size} bytes; the largest table ops: {largest:?}");
    }
}
