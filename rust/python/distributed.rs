//! Bindings for static mode's collectives (issue 17): the communicator a process group's
//! graphs use, and the graph nodes `rustgrad.distributed._static` adds. The MPI calls
//! themselves live in the core (`crate::distributed`); the fallback over mpi4py, for when
//! the core cannot reach MPI directly, is the only code here that calls MPI (through Python).

use super::errors::{external, guard};
use super::static_graph::PyGraph;
use super::tensor::PyTensor;
use crate::distributed::dl::{Handles, MpiCommunicator};
use crate::distributed::reduce::Summation;
use crate::distributed::{take_collective_time, Communicator};
use crate::error::Result;
use crate::graph::NodeId;
use crate::op::Op;
use crate::ops::collective::{AllreduceMean, BroadcastFused, Fused, Unfuse};
use crate::ops::{TableOp, TableOps};
use crate::tensor::Tensor;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList};
use std::sync::Arc;

/// The communicator of a process group, as static graphs' collectives use it.
#[pyclass(name = "Communicator", module = "rustgrad._rustgrad", frozen)]
pub struct PyCommunicator {
    inner: Arc<dyn Communicator>,
}

fn summation(deterministic: bool) -> Summation {
    if deterministic {
        Summation::RankOrder
    } else {
        Summation::Mpi
    }
}

#[pymethods]
impl PyCommunicator {
    #[getter]
    fn rank(&self) -> usize {
        self.inner.rank()
    }

    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }

    /// How the collectives reach MPI: directly from Rust, or through mpi4py.
    #[getter]
    fn transport(&self) -> String {
        self.inner.transport()
    }

    /// The mean over the ranks of `tensors`, fused into one flat buffer (what a graph's
    /// `HorovodAllreduce` node computes), with the GIL released: for benchmarks and tests.
    #[pyo3(signature = (tensors, deterministic=true))]
    fn allreduce_mean(
        &self,
        py: Python<'_>,
        tensors: Vec<Bound<'_, PyTensor>>,
        deterministic: bool,
    ) -> PyResult<PyTensor> {
        let inputs: Vec<Tensor> = tensors.iter().map(|t| t.get().inner.clone()).collect();
        let names: Arc<[String]> = (0..inputs.len()).map(|i| format!("tensors[{i}]")).collect();
        let op =
            AllreduceMean { fused: Fused { comm: self.inner.clone(), names }, summation: summation(deterministic) };
        let out = guard(|| {
            Ok(py.detach(|| {
                let refs: Vec<&Tensor> = inputs.iter().collect();
                op.forward(&refs)
            })?)
        })?;
        Ok(PyTensor::wrap(out))
    }
}

/// A communicator calling MPI from Rust: `comm`, `byte`, `float`, `double` and `sum` are
/// mpi4py's `MPI._handleof` of the communicator, `MPI.BYTE`, `MPI.FLOAT`, `MPI.DOUBLE`
/// and `MPI.SUM`; `handle_bytes` is `MPI._sizeof(MPI.Comm)`; `library` the libmpi path
/// (None: the loaded library named like libmpi).
#[pyfunction]
#[pyo3(signature = (comm, handle_bytes, byte, float, double, sum, library=None))]
pub fn _mpi_communicator(
    comm: u64,
    handle_bytes: usize,
    byte: u64,
    float: u64,
    double: u64,
    sum: u64,
    library: Option<String>,
) -> PyResult<PyCommunicator> {
    let handles = Handles { comm, byte, float, double, sum };
    let inner = guard(|| Ok(MpiCommunicator::new(handles, handle_bytes, library.as_deref())?))?;
    Ok(PyCommunicator { inner: Arc::new(inner) })
}

/// The fallback: collectives through an mpi4py communicator, taking the GIL for each.
struct Mpi4pyCommunicator {
    comm: Py<PyAny>,
    mpi: Py<PyAny>,
    rank: usize,
    size: usize,
}

impl Mpi4pyCommunicator {
    /// Calls `comm.<method>(send, recv, *more)` on copies of the buffers, then copies `recv` back.
    fn call(&self, method: &str, send: &[u8], recv: &mut [u8], typed: Option<&str>) -> Result<()> {
        Python::attach(|py| -> PyResult<()> {
            let (s, r) = (PyBytes::new(py, send), PyByteArray::new(py, recv));
            let comm = self.comm.bind(py);
            match typed {
                Some(kind) => {
                    let (mpi, datatype) = (self.mpi.bind(py), if kind == "d" { "DOUBLE" } else { "FLOAT" });
                    let t = mpi.getattr(datatype)?;
                    let (sb, rb) = (PyList::new(py, [s.as_any(), &t])?, PyList::new(py, [r.as_any(), &t])?);
                    comm.call_method1(method, (sb, rb, mpi.getattr("SUM")?))?;
                }
                None => {
                    comm.call_method1(method, (s, r.clone()))?;
                }
            }
            recv.copy_from_slice(&r.to_vec());
            Ok(())
        })
        .map_err(external)
    }
}

impl Communicator for Mpi4pyCommunicator {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn allgather(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        self.call("Allgather", send, recv, None)
    }
    fn alltoall(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        self.call("Alltoall", send, recv, None)
    }
    fn broadcast(&self, buffer: &mut [u8], root: usize) -> Result<()> {
        Python::attach(|py| -> PyResult<()> {
            let b = PyByteArray::new(py, buffer);
            self.comm.bind(py).call_method1("Bcast", (b.clone(), root))?;
            buffer.copy_from_slice(&b.to_vec());
            Ok(())
        })
        .map_err(external)
    }
    fn allreduce_sum(&self, send: &[u8], recv: &mut [u8], f64: bool) -> Result<()> {
        self.call("Allreduce", send, recv, Some(if f64 { "d" } else { "f" }))
    }
    fn transport(&self) -> String {
        "mpi4py (Python fallback)".into()
    }
}

/// A communicator over the mpi4py communicator `comm` (`mpi` is mpi4py's `MPI` module).
#[pyfunction]
pub fn _mpi4py_communicator(comm: &Bound<'_, PyAny>, mpi: &Bound<'_, PyAny>) -> PyResult<PyCommunicator> {
    let rank: usize = comm.call_method0("Get_rank")?.extract()?;
    let size: usize = comm.call_method0("Get_size")?.extract()?;
    let inner = Mpi4pyCommunicator { comm: comm.clone().unbind(), mpi: mpi.clone().unbind(), rank, size };
    Ok(PyCommunicator { inner: Arc::new(inner) })
}

/// How many collective nodes ran and the seconds they took (waits included) since the last call.
#[pyfunction]
pub fn _collective_seconds() -> (u64, f64) {
    take_collective_time()
}

fn fused(comm: &PyCommunicator, names: Vec<String>) -> Fused {
    Fused { comm: comm.inner.clone(), names: names.into() }
}

/// Adds a `HorovodAllreduce` node: the mean over the ranks of `inputs`, one flat buffer.
#[pyfunction]
#[pyo3(signature = (graph, comm, inputs, names, deterministic=true, name=None))]
pub fn _static_allreduce(
    graph: &Bound<'_, PyGraph>,
    comm: &PyCommunicator,
    inputs: Vec<NodeId>,
    names: Vec<String>,
    deterministic: bool,
    name: Option<String>,
) -> PyResult<NodeId> {
    let op = AllreduceMean { fused: fused(comm, names), summation: summation(deterministic) };
    graph.get().with_mut(|g| g.op(Op::Table(TableOps::HorovodAllreduce(op)), inputs, name.as_deref()))
}

/// Adds a `HorovodBroadcast` node: rank `root`'s values of `inputs`, one flat buffer.
#[pyfunction]
#[pyo3(signature = (graph, comm, inputs, names, root, name=None))]
pub fn _static_broadcast(
    graph: &Bound<'_, PyGraph>,
    comm: &PyCommunicator,
    inputs: Vec<NodeId>,
    names: Vec<String>,
    root: usize,
    name: Option<String>,
) -> PyResult<NodeId> {
    let op = BroadcastFused { fused: fused(comm, names), root };
    graph.get().with_mut(|g| g.op(Op::Table(TableOps::HorovodBroadcast(op)), inputs, name.as_deref()))
}

/// Adds a node viewing `shape`'s worth of elements from `offset` of the fused buffer `input`.
#[pyfunction]
#[pyo3(signature = (graph, input, offset, shape, name=None))]
pub fn _static_unfuse(
    graph: &Bound<'_, PyGraph>,
    input: NodeId,
    offset: usize,
    shape: Vec<usize>,
    name: Option<String>,
) -> PyResult<NodeId> {
    let op = Unfuse { offset, shape };
    graph.get().with_mut(|g| g.op(Op::Table(TableOps::Unfuse(op)), vec![input], name.as_deref()))
}
