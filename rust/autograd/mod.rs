//! Reverse-mode autograd for eager tensors: grad mode, tape nodes, recording
//! and the reverse pass.

pub mod engine;
pub mod grad_mode;
pub mod hooks;
pub mod id_map;
pub mod in_place;
pub mod node;
pub mod record;
