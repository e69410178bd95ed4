//! Compute kernels: pure functions over slices and layouts. They know nothing of
//! autograd, graphs or Python, so a faster kernel can replace one here without
//! touching the tape.

#[macro_use]
mod widest;

pub mod activation;
pub mod batched_matmul;
pub mod binary;
mod broadcast;
pub mod conv;
mod crate_gemm;
#[cfg(target_arch = "x86_64")]
mod edge_columns;
pub mod elementwise;
#[cfg(target_arch = "x86_64")]
mod extreme_f32;
mod float32;
pub mod fold;
pub mod gather;
pub mod layout;
pub mod leaf_sgd;
pub mod logical;
pub mod losses;
pub mod matmul;
pub mod moments;
pub mod norm;
pub mod optim;
pub mod ordering;
pub mod pool;
mod power;
pub mod product;
pub mod reduce;
pub mod scan;
#[cfg(target_arch = "x86_64")]
pub mod sgemm_avx512;
#[cfg(target_arch = "x86_64")]
mod sgemm_edge_rows;
#[cfg(target_arch = "x86_64")]
pub mod sgemm_packed;
#[cfg(target_arch = "x86_64")]
mod sgemm_panel_edge;
#[cfg(target_arch = "x86_64")]
mod sgemm_swapped;
pub mod sort;
pub mod spin_pool;
pub mod split_writes;
pub mod thread_choice;
pub mod threads;
mod transpose8;
pub mod vecmath;

/// Elementwise work below this many elements runs on the calling thread: these
/// kernels are memory-bound, and waking the pool costs more than it saves.
pub const PARALLEL_MIN_ELEMENTS: usize = 1 << 18;
