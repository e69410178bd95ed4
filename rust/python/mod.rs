//! The PyO3 bindings: the only code that knows about Python. Exposed as the
//! private module `rustgrad._rustgrad` and re-exported by the Python package.

mod autograd;
// rustgrad.compile (issue 18, compile).
mod compile;
mod convert;
mod creation;
// mpistatic (issue 17): static mode's collectives.
mod distributed;
mod dlpack;
mod errors;
mod hooks;
mod index_key;
mod ops;
mod optim;
mod random;
mod static_debug;
// Static control flow (issue 16, ctrlflow).
mod static_control_flow;
mod static_graph;
mod tensor;
// Kernel threads' spin setting (issue 18, threading).
mod threading;

use pyo3::prelude::*;

#[pymodule]
fn _rustgrad(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<convert::PyDType>()?;
    m.add_class::<convert::PyDevice>()?;
    m.add_class::<autograd::PyNode>()?;
    m.add_class::<autograd::PyAccumulateGrad>()?;
    m.add_class::<hooks::PyRemovableHandle>()?;
    m.add_class::<static_graph::PyGraph>()?;
    m.add_class::<static_graph::PySession>()?;
    m.add_class::<index_key::PyIndexItems>()?;
    m.add_class::<ops::PyOpSpec>()?;
    m.add("ops", ops::op_table(py)?)?;
    for dtype in crate::dtype::DType::ALL {
        m.add(dtype.name(), convert::dtype_object(py, dtype)?)?;
    }
    m.add_function(wrap_pyfunction!(creation::_full, m)?)?;
    m.add_function(wrap_pyfunction!(creation::_range_values, m)?)?;
    m.add_class::<random::PyGenerator>()?;
    m.add("default_generator", random::default_generator(py)?)?;
    m.add_function(wrap_pyfunction!(random::_random, m)?)?;
    m.add_function(wrap_pyfunction!(random::_fill_random, m)?)?;
    m.add_function(wrap_pyfunction!(random::_randperm, m)?)?;
    m.add_function(wrap_pyfunction!(random::_bernoulli, m)?)?;
    m.add_function(wrap_pyfunction!(random::_multinomial, m)?)?;
    m.add_function(wrap_pyfunction!(random::_normal, m)?)?;
    m.add_function(wrap_pyfunction!(creation::_from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(creation::set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(creation::get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(creation::empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(creation::memory_cached, m)?)?;
    m.add_function(wrap_pyfunction!(creation::_after_fork_in_child, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::backward, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::grad, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::_set_detect_anomaly, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::_save_tensors, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::_apply_function, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::_first_changed, m)?)?;
    // higher (issue 16): a Function's saved outputs with their history under create_graph
    m.add_function(wrap_pyfunction!(autograd::_with_history, m)?)?;
    m.add_function(wrap_pyfunction!(hooks::_queue_callback, m)?)?;
    m.add_function(wrap_pyfunction!(errors::_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(index_key::_parse_index_key, m)?)?;
    m.add_function(wrap_pyfunction!(tensor::_matmul, m)?)?;
    m.add_function(wrap_pyfunction!(tensor::_where, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(optim::_adam_update, m)?)?;
    // Kernel threads' spin setting (rust/python/threading.rs).
    m.add_function(wrap_pyfunction!(threading::set_spin_us, m)?)?;
    m.add_function(wrap_pyfunction!(threading::get_spin_us, m)?)?;
    m.add_function(wrap_pyfunction!(threading::_spin_us_env_problem, m)?)?;
    m.add_function(wrap_pyfunction!(threading::_spin_helper_count, m)?)?;
    // mpistatic (issue 17): static mode's collectives.
    m.add_class::<distributed::PyCommunicator>()?;
    m.add_function(wrap_pyfunction!(distributed::_mpi_communicator, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::_mpi4py_communicator, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::_collective_seconds, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::_static_allreduce, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::_static_broadcast, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::_static_unfuse, m)?)?;
    // rustgrad.compile (issue 18, compile).
    m.add_class::<compile::PyProgram>()?;
    m.add_function(wrap_pyfunction!(compile::_compile_begin, m)?)?;
    m.add_function(wrap_pyfunction!(compile::_compile_end, m)?)?;
    m.add_function(wrap_pyfunction!(compile::_compile_abort, m)?)?;
    m.add_function(wrap_pyfunction!(compile::_compile_stop, m)?)?;
    m.add_function(wrap_pyfunction!(compile::_compile_tracing, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
