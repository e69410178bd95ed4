//! The spin setting of the kernel helper threads (see rust/kernels/spin_pool/spin_time.rs).

use pyo3::prelude::*;
use pyo3::types::PyInt;

/// Sets how long, in microseconds, kernel helper threads spin after a job before they park
/// (0 to 1,000,000; 0 parks them right after each job). The default is 300, or
/// ``RUSTGRAD_SPIN_US`` at start-up. See docs/performance.md, "Threads".
#[pyfunction]
pub fn set_spin_us(us: &Bound<'_, PyAny>) -> PyResult<()> {
    // An int too large for 64 bits is out of range like any other (not an overflow).
    if us.is_instance_of::<PyInt>() && us.extract::<i64>().is_err() {
        return Err(crate::kernels::spin_pool::spin_range_error(&us.str()?.to_string()).into());
    }
    let us: i64 = super::convert::arg(us, "set_spin_us", "us")?;
    Ok(crate::kernels::spin_pool::set_spin_us(us)?)
}

/// Microseconds kernel helper threads spin after a job before they park (see ``set_spin_us``).
#[pyfunction]
pub fn get_spin_us() -> u64 {
    crate::kernels::spin_pool::spin_us()
}

/// What is wrong with RUSTGRAD_SPIN_US, if anything: the package warns with it at import.
#[pyfunction]
pub fn _spin_us_env_problem() -> Option<String> {
    crate::kernels::spin_pool::spin_env_problem()
}

/// The number of spin helper threads this process runs now (`get_num_threads() - 1`).
#[pyfunction]
pub fn _spin_helper_count() -> usize {
    crate::kernels::spin_pool::helper_count()
}
