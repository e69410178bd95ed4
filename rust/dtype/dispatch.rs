//! The macros that pick a kernel's element type from a dtype.

/// Runs `$body` with `$T` bound to the element type of `$dtype`, for every dtype.
macro_rules! dispatch {
    ($dtype:expr, |$T:ident| $body:expr) => {
        match $dtype {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::dtype::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::dtype::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::dtype::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::dtype::DType::Bool => {
                type $T = bool;
                $body
            }
        }
    };
}

/// Runs `$body` with `$T` bound to the numeric element type of `$dtype`; bool is an
/// error (returned from the enclosing function) naming `$op`.
macro_rules! numeric_dispatch {
    ($dtype:expr, $op:expr, |$T:ident| $body:expr) => {
        match $dtype {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::dtype::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::dtype::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::dtype::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::dtype::DType::Bool => {
                return $crate::error::dtype_err(format!(
                    "{}: not supported for bool tensors; convert it with .int() or .float() first",
                    $op
                ))
            }
        }
    };
}

/// Runs `$body` with `$T` bound to the float element type of `$dtype`; any other
/// dtype is an error (returned from the enclosing function) naming `$op`.
macro_rules! float_dispatch {
    ($dtype:expr, $op:expr, |$T:ident| $body:expr) => {
        match $dtype {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            other => {
                return $crate::error::dtype_err(format!(
                    "{}: expected a float tensor but got {}; convert it with .float() first",
                    $op,
                    other.name()
                ))
            }
        }
    };
}

/// Runs `$body` with `$T` bound to the integer element type of `$dtype`; any other
/// dtype is an error (returned from the enclosing function) naming `$op`.
macro_rules! integer_dispatch {
    ($dtype:expr, $op:expr, |$T:ident| $body:expr) => {
        match $dtype {
            $crate::dtype::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::dtype::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::dtype::DType::U8 => {
                type $T = u8;
                $body
            }
            other => {
                return $crate::error::dtype_err(format!("{}: expected an integer tensor but got {}", $op, other.name()))
            }
        }
    };
}

pub(crate) use {dispatch, float_dispatch, integer_dispatch, numeric_dispatch};
