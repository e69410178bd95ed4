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
//!   (`scan.rs`, ...), listed once in the `table!` invocation below.
//!
//! `docs/contributing.md` walks through adding an op.

pub mod args;
pub mod creation;
pub mod reduce;
pub mod scan;
pub mod shape;
pub mod unary;

pub use args::{Args, Kind, Param};

use crate::dtype::DType;
use crate::error::Result;
use crate::graph::PartialShape;
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

/// The one input of a unary op: torch's `input`, TF's `x`.
pub const ONE_INPUT: &[Input] = &[Input { torch: "input", tf: "x", list: false }];

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

/// A graph node's shape and dtype, as static inference sees them.
pub type Meta<'a> = (&'a PartialShape, DType);

/// An op of the table other than the unary ones: its whole behaviour in one place.
pub trait TableOp: Clone + std::fmt::Debug + Send + Sync + Sized + 'static {
    const SPEC: Spec;
    /// The op from its arguments (`SPEC.params`, converted by kind).
    fn build(args: &Args) -> Result<Self>;
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor>;
    /// The output's shape and dtype; an error when the inputs certainly do not fit.
    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)>;
    /// What `vjp` reads, given which inputs need a gradient.
    fn saves(&self, needs: &[bool]) -> Saves;
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>>;
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

            pub fn saves(&self, needs: &[bool]) -> Saves {
                match self {
                    $(TableOps::$variant(op) => op.saves(needs),)*
                    $(TableOps::$ivariant(op) => op.saves(needs),)*
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
    ],
    internal: [
        CatGrad(shape::CatGrad),
        Range(creation::Range),
        Fill(creation::Fill),
    ],
}
