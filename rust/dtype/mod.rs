//! Element types: the `DType` enum with its categories and torch's promotion
//! table, the `Scalar` a Python number becomes, the traits kernels are generic
//! over (`Number` for every numeric type, `Float` for the floating ones) and the
//! macros that pick a kernel's element type from a dtype.
//!
//! Code that treats dtypes alike asks for a category (`is_float`, `is_integer`,
//! `kind`) rather than naming dtypes, and picks element types with `dispatch!`
//! (every dtype), `numeric_dispatch!` (every dtype but bool) or
//! `float_dispatch!`: a new dtype (float16, bfloat16, ...) is then added here,
//! in `storage.rs` and in the arms of those macros.

use crate::error::{dtype_err, Result};
use crate::storage::Element;

mod dispatch;
mod number;

pub(crate) use dispatch::{dispatch, float_dispatch, integer_dispatch, numeric_dispatch};
pub use number::{nan_max, nan_min, Float, Number};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F64,
    I64,
    I32,
    U8,
    Bool,
}

/// A dtype's category, in the order torch's promotion ranks them: in a result
/// computed from two values, the higher category decides the category.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Bool,
    Integer,
    Float,
}

impl DType {
    /// Every dtype, in the order the bindings publish them.
    pub const ALL: [DType; 6] = [DType::F32, DType::F64, DType::I64, DType::I32, DType::U8, DType::Bool];

    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::I64 => "int64",
            DType::I32 => "int32",
            DType::U8 => "uint8",
            DType::Bool => "bool",
        }
    }

    /// A dtype from its name or one of torch's aliases (`float`, `double`, `long`, `int`).
    pub fn from_name(name: &str) -> Result<DType> {
        match name {
            "float32" | "float" => Ok(DType::F32),
            "float64" | "double" => Ok(DType::F64),
            "int64" | "long" => Ok(DType::I64),
            "int32" | "int" => Ok(DType::I32),
            "uint8" => Ok(DType::U8),
            "bool" => Ok(DType::Bool),
            other => dtype_err(format!("unknown dtype '{other}'; rustgrad supports {}", supported_names())),
        }
    }

    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::U8 | DType::Bool => 1,
        }
    }

    pub fn kind(self) -> Kind {
        match self {
            DType::F32 | DType::F64 => Kind::Float,
            DType::I64 | DType::I32 | DType::U8 => Kind::Integer,
            DType::Bool => Kind::Bool,
        }
    }

    pub fn is_float(self) -> bool {
        self.kind() == Kind::Float
    }

    /// An integer dtype (bool is not one).
    pub fn is_integer(self) -> bool {
        self.kind() == Kind::Integer
    }

    /// Whether the dtype holds negative values.
    pub fn is_signed(self) -> bool {
        match self.kind() {
            Kind::Float => true,
            Kind::Integer => self != DType::U8,
            Kind::Bool => false,
        }
    }

    /// The dtype torch gives a number of this category when nothing else decides:
    /// float32 for floats, int64 for integers.
    pub fn default_of(kind: Kind) -> DType {
        match kind {
            Kind::Float => DType::F32,
            Kind::Integer => DType::I64,
            Kind::Bool => DType::Bool,
        }
    }

    /// The dtype of a result computed from tensors of dtypes `a` and `b`: torch's
    /// `promote_types`. The higher category wins with its own dtype (int64 and
    /// float32 give float32); within a category the wider dtype wins (uint8 and
    /// int32 give int32).
    pub fn promote(a: DType, b: DType) -> DType {
        use std::cmp::Ordering;
        match a.kind().cmp(&b.kind()) {
            Ordering::Greater => a,
            Ordering::Less => b,
            // Two different dtypes of one category and one size do not exist yet; when
            // they do (float16 and bfloat16, int8 and uint8) torch widens them (to
            // float32, int16), which needs its own arm here.
            Ordering::Equal if b.size_in_bytes() > a.size_in_bytes() => b,
            Ordering::Equal => a,
        }
    }

    /// The dtype of a result computed from a tensor of this dtype and a Python number
    /// of category `scalar`: a number of the tensor's category or below keeps the
    /// tensor's dtype (`int32 + 1` is int32); one above gives its category's default
    /// (`int64 + 0.5` is float32), as in torch.
    pub fn promote_with_scalar(self, scalar: Kind) -> DType {
        if scalar <= self.kind() {
            self
        } else {
            DType::default_of(scalar)
        }
    }

    /// The dtype true division computes in: a float keeps its dtype, anything else
    /// divides in torch's default float, float32.
    pub fn true_division(self) -> DType {
        if self.is_float() {
            self
        } else {
            DType::default_of(Kind::Float)
        }
    }

    /// Whether a value of dtype `from` may be written into a tensor of this dtype by an
    /// in-place op (torch's `can_cast`): not from a higher category (`int += 0.5` is refused).
    pub fn can_hold(self, from: DType) -> bool {
        from.kind() <= self.kind()
    }
}

/// An operand as torch's promotion sees it. Tensors with dimensions decide the
/// result's dtype over 0-d tensors, and those over Python numbers, unless the lower
/// one is of a higher category: `float32 tensor + float64 0-d tensor` is float32,
/// `int32 tensor + float64 0-d tensor` is float64, `int32 tensor + 1` is int32.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Participant {
    Tensor(DType),
    ZeroDim(DType),
    /// A Python number, of its category's default dtype (int64, float32, bool).
    Number(Kind),
}

impl Participant {
    pub fn tensor(dtype: DType, rank: usize) -> Participant {
        if rank == 0 {
            Participant::ZeroDim(dtype)
        } else {
            Participant::Tensor(dtype)
        }
    }
}

/// The dtype of a result computed from `operands` (torch's `result_type`): one
/// promotion per priority class, then the higher class decides unless the lower
/// one's category is higher.
pub fn result_type(operands: &[Participant]) -> DType {
    let mut classes: [Option<DType>; 3] = [None; 3];
    for p in operands {
        let (class, dtype) = match *p {
            Participant::Tensor(d) => (0, d),
            Participant::ZeroDim(d) => (1, d),
            Participant::Number(k) => (2, DType::default_of(k)),
        };
        classes[class] = Some(classes[class].map_or(dtype, |d| DType::promote(d, dtype)));
    }
    let combine = |higher: Option<DType>, lower: Option<DType>| match (higher, lower) {
        (Some(h), Some(l)) if l.kind() > h.kind() => Some(l),
        (Some(h), _) => Some(h),
        (None, l) => l,
    };
    // invariant: callers pass at least one operand; bool is the dtype of nothing at all.
    combine(classes[0], combine(classes[1], classes[2])).unwrap_or(DType::Bool)
}

/// "float32, float64, int64, int32, uint8 and bool", for messages.
pub fn supported_names() -> String {
    let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
    let (last, rest) = names.split_last().map_or(("", &[][..]), |(l, r)| (*l, r));
    format!("{} and {last}", rest.join(", "))
}

/// A Python number as an operand: its category decides promotion, and an int
/// keeps all 64 bits (an f64 would round integers past 2^53).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    pub fn kind(self) -> Kind {
        match self {
            Scalar::Bool(_) => Kind::Bool,
            Scalar::Int(_) => Kind::Integer,
            Scalar::Float(_) => Kind::Float,
        }
    }

    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }

    /// The number as an element of type `T` (a C-style cast, as `Element::from_*`).
    pub fn to_element<T: Element>(self) -> T {
        match self {
            Scalar::Bool(b) => T::from_i64(b as i64),
            Scalar::Int(i) => T::from_i64(i),
            Scalar::Float(f) => T::from_f64(f),
        }
    }

    pub fn is_zero(self) -> bool {
        self.as_f64() == 0.0
    }
}

impl From<f64> for Scalar {
    fn from(v: f64) -> Scalar {
        Scalar::Float(v)
    }
}

impl From<i64> for Scalar {
    fn from(v: i64) -> Scalar {
        Scalar::Int(v)
    }
}

impl From<bool> for Scalar {
    fn from(v: bool) -> Scalar {
        Scalar::Bool(v)
    }
}

impl std::fmt::Display for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_follows_torch() {
        use DType::*;
        assert_eq!(DType::promote(I64, F32), F32);
        assert_eq!(DType::promote(F32, F64), F64);
        assert_eq!(DType::promote(U8, I32), I32);
        assert_eq!(DType::promote(I32, I64), I64);
        assert_eq!(DType::promote(Bool, U8), U8);
        assert_eq!(I32.promote_with_scalar(Kind::Integer), I32);
        assert_eq!(I64.promote_with_scalar(Kind::Float), F32);
        assert_eq!(Bool.promote_with_scalar(Kind::Integer), I64);
        assert_eq!(F64.promote_with_scalar(Kind::Float), F64);
        let (t, z) = (Participant::Tensor, Participant::ZeroDim);
        assert_eq!(result_type(&[t(F32), z(F64)]), F32);
        assert_eq!(result_type(&[t(I32), z(F64)]), F64);
        assert_eq!(result_type(&[t(I32), z(I64)]), I32);
        assert_eq!(result_type(&[t(I32), Participant::Number(Kind::Float)]), F32);
        assert_eq!(result_type(&[z(Bool), Participant::Number(Kind::Integer)]), I64);
    }
}
