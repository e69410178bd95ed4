//! MPI called directly from Rust, without the GIL and without MPI at build time: the
//! `MPI_*` functions are resolved with `dlsym` from the libmpi that mpi4py already
//! loaded into the process (`dlopen` with `RTLD_NOLOAD`, which finds a loaded library
//! and never loads one; `RTLD_DEFAULT` does not see it, since Python loads extensions
//! with `RTLD_LOCAL`). The communicator, datatype and op handles come from mpi4py
//! (`MPI._handleof`). They are C `int`s on MPICH's own ABI and pointers on Open MPI's
//! and on the MPI-5 standard ABI: `HandleWidth` says which, from `MPI._sizeof`, and
//! the functions are called through pointers of the matching C signature.

use super::Communicator;
use crate::error::{Error, Result};
use std::ffi::{c_int, c_void, CStr, CString};

/// The C type of MPI's handles in the loaded library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandleWidth {
    /// `typedef int MPI_Comm` (MPICH, Intel MPI, MVAPICH).
    Int,
    /// A pointer (Open MPI, the MPI-5 ABI).
    Pointer,
}

impl HandleWidth {
    /// From the handle size in bytes that `MPI._sizeof(MPI.Comm)` gives.
    pub fn from_size(bytes: usize) -> Result<HandleWidth> {
        match bytes {
            4 => Ok(HandleWidth::Int),
            n if n == std::mem::size_of::<*mut c_void>() => Ok(HandleWidth::Pointer),
            n => Err(Error::InvalidArgument(format!(
                "MPI handles of {n} bytes are neither C ints nor pointers on this platform"
            ))),
        }
    }
}

/// The handles a communicator's collectives use, as mpi4py gives them (`MPI._handleof`).
#[derive(Clone, Copy, Debug)]
pub struct Handles {
    pub comm: u64,
    pub byte: u64,
    pub float: u64,
    pub double: u64,
    pub sum: u64,
}

/// A handle passed by value: `c_int` or a pointer-sized integer. A pointer-sized integer
/// is passed exactly as a pointer argument in the C calling conventions of the platforms
/// MPI wheels exist for (both are INTEGER class, one register).
trait Handle: Copy + Send + Sync + 'static {
    fn from_bits(bits: u64) -> Result<Self>;
}

impl Handle for c_int {
    fn from_bits(bits: u64) -> Result<Self> {
        // mpi4py may show an int handle as unsigned (MPICH's 0x84000000 and up): keep the bits.
        u32::try_from(bits)
            .map(|b| b as c_int)
            .or_else(|_| i32::try_from(bits as i64).map_err(|_| bad_handle(bits, "a C int")))
    }
}

impl Handle for usize {
    fn from_bits(bits: u64) -> Result<Self> {
        usize::try_from(bits).map_err(|_| bad_handle(bits, "a pointer"))
    }
}

fn bad_handle(bits: u64, what: &str) -> Error {
    Error::InvalidArgument(format!("MPI handle {bits:#x} does not fit {what}"))
}

type GatherFn<H> = unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, c_int, H, H) -> c_int;
type BcastFn<H> = unsafe extern "C" fn(*mut c_void, c_int, H, c_int, H) -> c_int;
type AllreduceFn<H> = unsafe extern "C" fn(*const c_void, *mut c_void, c_int, H, H, H) -> c_int;
type CommIntFn<H> = unsafe extern "C" fn(H, *mut c_int) -> c_int;

/// The MPI functions, typed for handles of type `H`.
struct Functions<H> {
    allgather: GatherFn<H>,
    alltoall: GatherFn<H>,
    bcast: BcastFn<H>,
    allreduce: AllreduceFn<H>,
    comm_rank: CommIntFn<H>,
    comm_size: CommIntFn<H>,
}

/// The loaded libmpi: the path it was found at and its `dlopen` handle (never closed, so
/// the library, which mpi4py keeps loaded anyway, cannot go away under the pointers).
struct Library {
    path: String,
    handle: usize,
}

impl Library {
    /// The address of `symbol` in the library; None when it does not define it.
    fn symbol(&self, symbol: &str) -> Option<*mut c_void> {
        let name = CString::new(symbol).ok()?;
        // SAFETY: `handle` came from a successful dlopen and is never closed; `name` is a
        // NUL-terminated string that lives across the call.
        let address = unsafe { libc::dlsym(self.handle as *mut c_void, name.as_ptr()) };
        (!address.is_null()).then_some(address)
    }

    fn function<F: Copy>(&self, symbol: &str) -> Result<F> {
        let address = self.symbol(symbol).ok_or_else(|| {
            Error::InvalidArgument(format!("{} does not define {symbol}; is it an MPI library?", self.path))
        })?;
        if std::mem::size_of::<F>() != std::mem::size_of::<*mut c_void>() {
            return Err(Error::Internal(format!("{symbol}: a function pointer is not pointer-sized")));
        }
        // SAFETY: the sizes were checked just above; `F` is one of the `extern "C"` function
        // pointer types of this module, spelled after the MPI standard's C prototype of
        // `symbol`, with handles of the width `HandleWidth` determined for this library.
        Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) })
    }
}

impl<H: Handle> Functions<H> {
    fn resolve(library: &Library) -> Result<Functions<H>> {
        Ok(Functions {
            allgather: library.function("MPI_Allgather")?,
            alltoall: library.function("MPI_Alltoall")?,
            bcast: library.function("MPI_Bcast")?,
            allreduce: library.function("MPI_Allreduce")?,
            comm_rank: library.function("MPI_Comm_rank")?,
            comm_size: library.function("MPI_Comm_size")?,
        })
    }
}

/// The libraries loaded into this process whose file name looks like an MPI library.
#[cfg(target_os = "linux")]
fn loaded_mpi_libraries() -> Vec<String> {
    unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: libc::size_t, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid `info` for the duration of the call, and
        // `data` is the `&mut Vec<String>` given below, not aliased while it runs.
        let (info, found) = unsafe { (&*info, &mut *data.cast::<Vec<String>>()) };
        if !info.dlpi_name.is_null() {
            // SAFETY: a non-null `dlpi_name` is a NUL-terminated path owned by the loader.
            let path = unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy().into_owned();
            let file = path.rsplit('/').next().unwrap_or_default();
            if file.starts_with("libmpi") || file.starts_with("libmpich") {
                found.push(path);
            }
        }
        0
    }
    let mut found: Vec<String> = vec![];
    // SAFETY: `visit` matches the callback type, reads only what the loader hands it,
    // and `found` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&mut found as *mut Vec<String>).cast()) };
    found
}

#[cfg(not(target_os = "linux"))]
fn loaded_mpi_libraries() -> Vec<String> {
    vec![]
}

/// Finds the loaded library that defines `MPI_Allreduce`: `path` when given, else the
/// loaded libraries named like libmpi. Never loads a library.
fn find_library(path: Option<&str>) -> Result<Library> {
    let candidates = match path {
        Some(p) => vec![p.to_string()],
        None => loaded_mpi_libraries(),
    };
    for candidate in &candidates {
        let Ok(name) = CString::new(candidate.as_str()) else { continue };
        // SAFETY: `name` is NUL-terminated and outlives the call; RTLD_NOLOAD only returns a
        // library that is already loaded (so no initialiser runs), adding one reference.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_NOW) };
        if handle.is_null() {
            continue;
        }
        let library = Library { path: candidate.clone(), handle: handle as usize };
        if library.symbol("MPI_Allreduce").is_some() {
            return Ok(library);
        }
    }
    Err(Error::InvalidArgument(match path {
        Some(p) => format!("{p} is not loaded in this process or does not define MPI_Allreduce"),
        None => format!(
            "no loaded library defines MPI_Allreduce (libraries named like libmpi: {candidates:?}); import mpi4py's \
             MPI first"
        ),
    }))
}

/// A communicator whose collectives call the MPI library directly.
pub struct MpiCommunicator {
    rank: usize,
    size: usize,
    path: String,
    width: HandleWidth,
    calls: Calls,
}

enum Calls {
    Int(Typed<c_int>),
    Pointer(Typed<usize>),
}

struct Typed<H> {
    functions: Functions<H>,
    comm: H,
    byte: H,
    float: H,
    double: H,
    sum: H,
}

/// An MPI count (a C int) for `bytes` bytes.
fn count(bytes: usize, what: &str) -> Result<c_int> {
    c_int::try_from(bytes)
        .map_err(|_| Error::InvalidArgument(format!("{what}: {bytes} bytes is more than one MPI call moves (2 GiB)")))
}

fn checked(code: c_int, what: &str) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(Error::Internal(format!("{what} failed with MPI error code {code}")))
    }
}

impl<H: Handle> Typed<H> {
    fn new(functions: Functions<H>, handles: &Handles) -> Result<Typed<H>> {
        Ok(Typed {
            functions,
            comm: H::from_bits(handles.comm)?,
            byte: H::from_bits(handles.byte)?,
            float: H::from_bits(handles.float)?,
            double: H::from_bits(handles.double)?,
            sum: H::from_bits(handles.sum)?,
        })
    }

    fn rank_and_size(&self) -> Result<(usize, usize)> {
        let (mut rank, mut size): (c_int, c_int) = (-1, -1);
        // SAFETY: the function was resolved from the library under its standard prototype,
        // `comm` is a live communicator handle of that library (mpi4py's), and the out
        // pointers are valid for the calls.
        checked(unsafe { (self.functions.comm_rank)(self.comm, &mut rank) }, "MPI_Comm_rank")?;
        // SAFETY: as above.
        checked(unsafe { (self.functions.comm_size)(self.comm, &mut size) }, "MPI_Comm_size")?;
        match (usize::try_from(rank), usize::try_from(size)) {
            (Ok(r), Ok(s)) if r < s => Ok((r, s)),
            _ => Err(Error::Internal(format!("MPI gave rank {rank} of {size}"))),
        }
    }

    fn gather(&self, alltoall: bool, send: &[u8], recv: &mut [u8], size: usize) -> Result<()> {
        let what = if alltoall { "MPI_Alltoall" } else { "MPI_Allgather" };
        let block = if alltoall { send.len() / size.max(1) } else { send.len() };
        if recv.len() != block * size || (alltoall && block * size != send.len()) {
            return Err(Error::Internal(format!("{what}: {} bytes sent, {} received", send.len(), recv.len())));
        }
        let n = count(block, what)?;
        let f = if alltoall { self.functions.alltoall } else { self.functions.allgather };
        let (send, recv) = (send.as_ptr().cast(), recv.as_mut_ptr().cast());
        // SAFETY: `f` has the standard prototype; `send` holds `block` bytes (allgather) or
        // `size` blocks (alltoall) and `recv` `size` blocks, as checked above, both valid and
        // not overlapping (one is shared, the other exclusive); the handles are live.
        let code = unsafe { f(send, n, self.byte, recv, n, self.byte, self.comm) };
        checked(code, what)
    }

    fn bcast(&self, buffer: &mut [u8], root: usize, size: usize) -> Result<()> {
        let root = c_int::try_from(root).ok().filter(|&r| (r as usize) < size).ok_or_else(|| {
            Error::InvalidArgument(format!("MPI_Bcast: root {root} is not a rank of this group of {size}"))
        })?;
        let n = count(buffer.len(), "MPI_Bcast")?;
        // SAFETY: standard prototype; `buffer` holds `n` writable bytes; the handles are live.
        checked(
            unsafe { (self.functions.bcast)(buffer.as_mut_ptr().cast(), n, self.byte, root, self.comm) },
            "MPI_Bcast",
        )
    }

    fn allreduce(&self, send: &[u8], recv: &mut [u8], f64: bool) -> Result<()> {
        let width = if f64 { 8 } else { 4 };
        if send.len() != recv.len() || !send.len().is_multiple_of(width) {
            return Err(Error::Internal(format!("MPI_Allreduce: {} bytes sent, {} received", send.len(), recv.len())));
        }
        let n = count(send.len() / width, "MPI_Allreduce")?;
        let dtype = if f64 { self.double } else { self.float };
        // SAFETY: standard prototype; `send` and `recv` each hold `n` values of `dtype`
        // (checked above) and do not overlap; the handles are live.
        checked(
            unsafe {
                (self.functions.allreduce)(
                    send.as_ptr().cast(),
                    recv.as_mut_ptr().cast(),
                    n,
                    dtype,
                    self.sum,
                    self.comm,
                )
            },
            "MPI_Allreduce",
        )
    }
}

impl MpiCommunicator {
    /// Binds to the communicator `handles.comm` of the loaded MPI library (`library`, or
    /// the loaded one named like libmpi), whose handles are `handle_bytes` wide.
    pub fn new(handles: Handles, handle_bytes: usize, library: Option<&str>) -> Result<MpiCommunicator> {
        let width = HandleWidth::from_size(handle_bytes)?;
        let lib = find_library(library)?;
        let calls = match width {
            HandleWidth::Int => Calls::Int(Typed::new(Functions::resolve(&lib)?, &handles)?),
            HandleWidth::Pointer => Calls::Pointer(Typed::new(Functions::resolve(&lib)?, &handles)?),
        };
        let (rank, size) = match &calls {
            Calls::Int(t) => t.rank_and_size()?,
            Calls::Pointer(t) => t.rank_and_size()?,
        };
        Ok(MpiCommunicator { rank, size, path: lib.path, width, calls })
    }
}

macro_rules! on_calls {
    ($self:ident, |$t:ident| $body:expr) => {
        match &$self.calls {
            Calls::Int($t) => $body,
            Calls::Pointer($t) => $body,
        }
    };
}

impl Communicator for MpiCommunicator {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn allgather(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        on_calls!(self, |t| t.gather(false, send, recv, self.size))
    }
    fn alltoall(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        on_calls!(self, |t| t.gather(true, send, recv, self.size))
    }
    fn broadcast(&self, buffer: &mut [u8], root: usize) -> Result<()> {
        on_calls!(self, |t| t.bcast(buffer, root, self.size))
    }
    fn allreduce_sum(&self, send: &[u8], recv: &mut [u8], f64: bool) -> Result<()> {
        on_calls!(self, |t| t.allreduce(send, recv, f64))
    }
    fn transport(&self) -> String {
        let width = match self.width {
            HandleWidth::Int => "int",
            HandleWidth::Pointer => "pointer",
        };
        format!("MPI from Rust ({}, {width} handles)", self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_loaded_mpi_library_binding_fails_with_a_clear_error() {
        let handles = Handles { comm: 0, byte: 0, float: 0, double: 0, sum: 0 };
        let err = MpiCommunicator::new(handles, 4, Some("/nonexistent/libmpi.so.12")).err().unwrap();
        assert!(err.to_string().contains("is not loaded in this process"), "{err}");
        assert!(HandleWidth::from_size(2).is_err());
        assert_eq!(c_int::from_bits(0x8400_0000).unwrap(), 0x8400_0000u32 as c_int);
    }
}
