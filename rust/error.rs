//! The one error type of the Rust core. The binding layer (`python/errors.rs`)
//! turns each variant into the matching Python exception class, in one place.

use std::any::Any;
use std::fmt;

#[derive(Debug)]
pub enum Error {
    /// Shapes that do not fit together (matmul, broadcasting, reshape, ragged data).
    Shape(String),
    /// A dtype an op does not accept, or an unknown dtype name.
    DType(String),
    /// An index outside a dimension's bounds.
    Index(String),
    /// An allocation that could not be satisfied.
    OutOfMemory(String),
    /// Misuse of backward: freed graphs, stale saved tensors, nothing requiring grad.
    Gradient(String),
    /// A bad argument that is not about shapes or dtypes.
    InvalidArgument(String),
    /// An integer division or remainder by zero (torch raises "ZeroDivisionError").
    DivisionByZero(String),
    /// Static mode: something used before it was ready (uninitialised variable, closed session).
    FailedPrecondition(String),
    /// The user interrupted a long run (Ctrl-C).
    Interrupted,
    /// A broken invariant inside rustgrad (a bug): reported instead of risking memory safety.
    Internal(String),
    /// An error raised by user code (a custom Function's backward) that must reach
    /// the caller unchanged. The binding layer knows what is inside.
    External(Box<dyn Any + Send>),
}

pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Shape(m)
            | Error::DType(m)
            | Error::Index(m)
            | Error::OutOfMemory(m)
            | Error::Gradient(m)
            | Error::InvalidArgument(m)
            | Error::DivisionByZero(m)
            | Error::FailedPrecondition(m)
            | Error::Internal(m) => f.write_str(m),
            Error::Interrupted => f.write_str("interrupted"),
            Error::External(_) => f.write_str("error raised by user code"),
        }
    }
}

impl std::error::Error for Error {}

/// Shorthand constructors keep call sites on one line.
pub fn shape_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Shape(msg.into()))
}

pub fn dtype_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::DType(msg.into()))
}

pub fn grad_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Gradient(msg.into()))
}
