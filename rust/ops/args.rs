//! The non-tensor arguments of table ops: how each is declared, and the values an
//! op is built from. The bindings convert Python values by their declared kind,
//! so no op parses its own arguments.

use crate::error::{Error, Result};

/// What an argument takes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One int (a dim, a count).
    Int,
    /// None (every dim), an int or a sequence of ints.
    OptDims,
    Bool,
    Float,
    /// An int or a sequence of ints (sizes, dims, repeats); None where the op allows it. A
    /// method whose only argument this is also takes the ints one by one (`x.permute(1, 0)`).
    Ints,
    /// None, or a sequence of `(before, after)` int pairs (TF's `paddings`), flattened.
    Pairs,
    /// None or a bool (torch's `unbiased`, which must know whether it was given).
    OptBool,
    /// None or a number (torch's `correction`).
    OptFloat,
    /// A number or a name (`norm`'s `p`: 2, inf or 'fro').
    NumberOrName,
    /// A string (a mode's name, TF's `direction='ASCENDING'`).
    Str,
    /// A string or None (a mode's name).
    OptStr,
    /// An int or None.
    OptInt,
    /// None or a dtype (TF's `output_type`).
    OptDType,
    /// `tensordot`'s dims: an int (how many trailing dims of `a` meet leading dims of `b`), or
    /// two sequences of dims (or two dims) paired in order.
    Axes,
    /// A convolution's or pooling's padding: a name (`'same'`, `'VALID'`), an int, a sequence of
    /// ints, or a sequence of `(before, after)` pairs (TF's explicit paddings), flattened.
    Padding,
}

impl Kind {
    /// The Python annotation of an argument of this kind.
    pub fn annotation(self) -> &'static str {
        match self {
            Kind::Int => "int",
            Kind::OptDims => "Union[int, Sequence[int], None]",
            Kind::Bool => "bool",
            Kind::Float => "float",
            Kind::Ints => "Union[int, Sequence[int]]",
            Kind::Pairs => "Optional[Sequence[Sequence[int]]]",
            Kind::OptBool => "Optional[bool]",
            Kind::OptFloat => "Optional[float]",
            Kind::NumberOrName => "Union[float, str]",
            Kind::Str => "str",
            Kind::OptStr => "Optional[str]",
            Kind::OptInt => "Optional[int]",
            Kind::OptDType => "Any",
            Kind::Axes => "Union[int, Sequence[Union[int, Sequence[int]]]]",
            Kind::Padding => "Union[int, str, Sequence[int], Sequence[Sequence[int]]]",
        }
    }
}

/// One non-tensor argument, named on each front.
#[derive(Debug)]
pub struct Param {
    /// torch's name.
    pub torch: &'static str,
    /// TF1's name; empty when TF1's function does not take it. A front that does not take
    /// an argument passes its own default when it has one, else the other front's.
    pub tf: &'static str,
    /// Deprecated TF1 spellings still accepted (`reduction_indices`, `keep_dims`).
    pub tf_aliases: &'static [&'static str],
    pub kind: Kind,
    /// torch's default as a Python literal; None: required.
    pub torch_default: Option<&'static str>,
    /// TF1's default as a Python literal; None: required.
    pub tf_default: Option<&'static str>,
}

/// A `Param` with no deprecated TF1 spellings, for the tables' `const`s.
pub const fn param(
    torch: &'static str,
    tf: &'static str,
    kind: Kind,
    torch_default: Option<&'static str>,
    tf_default: Option<&'static str>,
) -> Param {
    Param { torch, tf, tf_aliases: &[], kind, torch_default, tf_default }
}

/// One converted argument.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(isize),
    Dims(Option<Vec<isize>>),
    Bool(bool),
    Float(f64),
    OptBool(Option<bool>),
    OptFloat(Option<f64>),
    NumberOrName(NumberOrName),
    Str(String),
    OptStr(Option<String>),
    OptInt(Option<isize>),
    DType(Option<crate::dtype::DType>),
    Axes(Axes),
    Padding(Padding),
}

/// A padding argument, as `Kind::Padding` takes it.
#[derive(Clone, Debug, PartialEq)]
pub enum Padding {
    Name(String),
    /// The ints, and whether they were given as `(before, after)` pairs.
    Ints(Vec<isize>, bool),
}

/// `tensordot`'s dims, as `Kind::Axes` takes them.
#[derive(Clone, Debug, PartialEq)]
pub enum Axes {
    Count(isize),
    Lists(Vec<isize>, Vec<isize>),
}

/// A number or a name, as `Kind::NumberOrName` takes.
#[derive(Clone, Debug, PartialEq)]
pub enum NumberOrName {
    Number(f64),
    Name(String),
}

/// An op's converted arguments, in the order its spec declares them.
#[derive(Debug, Default)]
pub struct Args {
    pub op: &'static str,
    pub values: Vec<Value>,
}

impl Args {
    fn get(&self, i: usize) -> Result<&Value> {
        self.values.get(i).ok_or_else(|| Error::InvalidArgument(format!("{}: missing argument {i}", self.op)))
    }

    fn mismatch(&self, i: usize, expected: &str) -> Error {
        Error::Internal(format!("{}: argument {i} was converted to {:?}, not {expected}", self.op, self.values.get(i)))
    }

    pub fn int(&self, i: usize) -> Result<isize> {
        match self.get(i)? {
            Value::Int(v) => Ok(*v),
            _ => Err(self.mismatch(i, "an int")),
        }
    }

    pub fn dims(&self, i: usize) -> Result<Option<Vec<isize>>> {
        match self.get(i)? {
            Value::Dims(v) => Ok(v.clone()),
            _ => Err(self.mismatch(i, "dims")),
        }
    }

    pub fn flag(&self, i: usize) -> Result<bool> {
        match self.get(i)? {
            Value::Bool(v) => Ok(*v),
            _ => Err(self.mismatch(i, "a bool")),
        }
    }

    pub fn float(&self, i: usize) -> Result<f64> {
        match self.get(i)? {
            Value::Float(v) => Ok(*v),
            _ => Err(self.mismatch(i, "a float")),
        }
    }

    pub fn opt_flag(&self, i: usize) -> Result<Option<bool>> {
        match self.get(i)? {
            Value::OptBool(v) => Ok(*v),
            _ => Err(self.mismatch(i, "an optional bool")),
        }
    }

    pub fn text(&self, i: usize) -> Result<&str> {
        match self.get(i)? {
            Value::Str(v) => Ok(v),
            _ => Err(self.mismatch(i, "a str")),
        }
    }

    /// An `Ints` argument that the op requires: None is refused, naming the argument.
    pub fn required_ints(&self, i: usize, name: &str) -> Result<Vec<isize>> {
        self.dims(i)?.ok_or_else(|| {
            Error::InvalidArgument(format!("{}: argument '{name}' is required (an int or a sequence of ints)", self.op))
        })
    }

    pub fn opt_int(&self, i: usize) -> Result<Option<isize>> {
        match self.get(i)? {
            Value::OptInt(v) => Ok(*v),
            _ => Err(self.mismatch(i, "an int or None")),
        }
    }

    pub fn opt_float(&self, i: usize) -> Result<Option<f64>> {
        match self.get(i)? {
            Value::OptFloat(v) => Ok(*v),
            _ => Err(self.mismatch(i, "a float or None")),
        }
    }

    pub fn opt_text(&self, i: usize) -> Result<Option<&str>> {
        match self.get(i)? {
            Value::OptStr(v) => Ok(v.as_deref()),
            _ => Err(self.mismatch(i, "a str or None")),
        }
    }

    pub fn opt_dtype(&self, i: usize) -> Result<Option<crate::dtype::DType>> {
        match self.get(i)? {
            Value::DType(v) => Ok(*v),
            _ => Err(self.mismatch(i, "an optional dtype")),
        }
    }

    pub fn axes(&self, i: usize) -> Result<Axes> {
        match self.get(i)? {
            Value::Axes(v) => Ok(v.clone()),
            _ => Err(self.mismatch(i, "tensordot dims")),
        }
    }

    pub fn padding(&self, i: usize) -> Result<Padding> {
        match self.get(i)? {
            Value::Padding(v) => Ok(v.clone()),
            _ => Err(self.mismatch(i, "a padding")),
        }
    }

    pub fn number_or_name(&self, i: usize) -> Result<NumberOrName> {
        match self.get(i)? {
            Value::NumberOrName(v) => Ok(v.clone()),
            _ => Err(self.mismatch(i, "a number or a name")),
        }
    }
}
