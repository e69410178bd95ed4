//! The op table: each op declared once, with what both fronts need to expose it.
//!
//! A declaration gives the op's kernel, its derivative rule and what the rule
//! reads, and its names: the torch function (and `Tensor` method) and the TF1
//! names in `rustgrad.static`. The bindings publish the table as
//! `rustgrad._rustgrad.ops`; `python tools/generate.py` writes the Python
//! functions, methods, stubs and API docs of both fronts from it.
//!
//! `docs/contributing.md` walks through adding an op.

pub mod unary;

/// What a derivative rule reads, so the eager tape keeps only that.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Keeps {
    Nothing,
    Input,
    Output,
}

/// What an elementwise op does with an integer tensor, as torch: `Promote` computes
/// in float32 (`sin`, `exp`, `sqrt`, ...), `Keep` has integer kernels and keeps the
/// dtype (`abs`, `neg`, `sign`, `square`, `relu`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ints {
    Promote,
    Keep,
}

/// How one op is named on each front, and what its docs say.
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
}
