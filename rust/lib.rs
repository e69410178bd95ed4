//! rustgrad's core: tensors, kernels, derivative rules, the eager tape and the
//! static graph executor. Nothing outside `python/` knows about Python.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod autograd;
pub mod buffer_pool;
pub mod compile;
pub mod distributed;
pub mod dtype;
pub mod error;
pub mod forward;
pub mod graph;
pub mod indexing;
pub mod interrupt;
pub mod kernels;
pub mod op;
pub mod ops;
pub mod random;
pub mod rules;
pub mod shape;
pub mod storage;
pub mod tensor;

#[cfg(feature = "python")]
mod python;
