//! Products of operands of rank ≥ 2 with numpy's `matmul` semantics: the last two
//! dims are the matrices (transposed when asked), the leading dims are a batch
//! that broadcasts. Each product of the batch is read in place through the
//! operands' strides; nothing is copied.

use super::elementwise::{as_dtype_ref, promoted};
use super::matmul::matmul2d;
use crate::dtype::{float_dispatch, Float};
use crate::error::{shape_err, Error, Result};
use crate::kernels::batched_matmul::batched_matmul_into;
use crate::kernels::matmul::{self, MatRef};
use crate::shape::{fmt_shape, Shape};
use crate::storage::{ensure_allocatable, Element};
use crate::tensor::Tensor;

/// `op(a)·op(b)`: the 2-D product of two matrices, or a batch of them (see the module doc).
pub fn matmul(a: &Tensor, b: &Tensor, transpose_a: bool, transpose_b: bool) -> Result<Tensor> {
    if a.rank() == 2 && b.rank() == 2 {
        return matmul2d(a, b, transpose_a, transpose_b);
    }
    let shape = batched_shape(a, b, transpose_a, transpose_b)?;
    let dtype = promoted(a, b);
    ensure_allocatable(&shape.out, dtype)?;
    let (a, b) = (as_dtype_ref(a, dtype)?, as_dtype_ref(b, dtype)?);
    float_dispatch!(dtype, "matmul", |T| {
        let mut out = crate::storage::overwritable_vec::<T>(crate::shape::numel(&shape.out));
        let (ga, gb) = (a.storage().read(), b.storage().read());
        let mismatch = || Error::DType("internal dtype mismatch in a matrix product".into());
        let (da, db) = (T::slice(&ga).ok_or_else(mismatch)?, T::slice(&gb).ok_or_else(mismatch)?);
        let (sa, sb) = (Side::new(&a, da, &shape.batch, transpose_a), Side::new(&b, db, &shape.batch, transpose_b));
        multiply(&sa, &sb, &shape.batch, &mut out)?;
        Tensor::from_vec(out, shape.out)
    })
}

/// The batch dims and the output shape of a checked batched product.
struct BatchedShape {
    batch: Shape,
    out: Shape,
}

fn batched_shape(a: &Tensor, b: &Tensor, transpose_a: bool, transpose_b: bool) -> Result<BatchedShape> {
    let shapes = || format!("{} and {}", fmt_shape(a.shape()), fmt_shape(b.shape()));
    if a.rank() < 2 || b.rank() < 2 {
        return shape_err(format!(
            "matmul: both operands need at least 2 dimensions, got shapes {}; reshape a vector to a matrix first",
            shapes()
        ));
    }
    let (ra, rb) = (a.rank(), b.rank());
    let batch = crate::shape::broadcast_shapes("matmul", &a.shape()[..ra - 2], &b.shape()[..rb - 2]).map_err(|_| {
        Error::Shape(format!(
            "matmul: the batch dimensions (all but the last two) of shapes {} do not broadcast; each pair must \
             be equal, or one of them 1",
            shapes()
        ))
    })?;
    let ((m, k), (k2, n)) = (matrix_dims(a, transpose_a), matrix_dims(b, transpose_b));
    if k != k2 {
        return shape_err(format!(
            "matmul: mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n}) in the batched product of \
             shapes {}; the inner dimensions must agree",
            shapes()
        ));
    }
    let mut out = batch.clone();
    out.extend([m, n]);
    Ok(BatchedShape { batch, out })
}

/// The (rows, cols) of op(t)'s matrices: its last two dims, swapped when transposed.
fn matrix_dims(t: &Tensor, transpose: bool) -> (usize, usize) {
    let r = t.rank();
    let (rows, cols) = (t.shape()[r - 2], t.shape()[r - 1]);
    if transpose {
        (cols, rows)
    } else {
        (rows, cols)
    }
}

/// One operand of a batched product: its storage, and how to find the matrix of each batch index.
struct Side<'a, T> {
    data: &'a [T],
    offset: usize,
    /// The strides of the batch dims, broadcast to the output's batch (0 where broadcast).
    batch_strides: Vec<isize>,
    /// op(t)'s matrix dims and strides.
    dims: (usize, usize),
    strides: (isize, isize),
}

impl<'a, T> Side<'a, T> {
    fn new(t: &Tensor, data: &'a [T], batch: &[usize], transpose: bool) -> Side<'a, T> {
        let r = t.rank();
        let batch_strides = crate::shape::broadcast_strides(&t.shape()[..r - 2], &t.strides()[..r - 2], batch);
        let (rs, cs) = (t.strides()[r - 2], t.strides()[r - 1]);
        let strides = if transpose { (cs, rs) } else { (rs, cs) };
        Side { data, offset: t.offset(), batch_strides, dims: matrix_dims(t, transpose), strides }
    }

    /// The matrix at row-major batch index `index`.
    fn matrix(&self, batch: &[usize], index: usize) -> Result<MatRef<'a, T>> {
        let (mut rest, mut offset) = (index, self.offset as isize);
        for (&size, &stride) in batch.iter().zip(&self.batch_strides).rev() {
            offset += (rest % size) as isize * stride;
            rest /= size;
        }
        self.mat_ref(offset, self.dims)
    }

    fn mat_ref(&self, offset: isize, dims: (usize, usize)) -> Result<MatRef<'a, T>> {
        let offset = usize::try_from(offset).ok();
        offset
            .and_then(|offset| MatRef::new(self.data, offset, dims, self.strides))
            .ok_or_else(|| Error::Internal("matmul: a batch of matrices reaches outside its storage".into()))
    }

    /// The whole batch as one matrix of batch·rows rows, when the batch dims and the rows
    /// are laid out as one dim (a contiguous batch whose rows follow each other evenly).
    fn rows_of_all_batches(&self, batch: &[usize]) -> Option<MatRef<'a, T>> {
        let mut dims: Vec<(usize, isize)> = batch.iter().copied().zip(self.batch_strides.iter().copied()).collect();
        dims.push((self.dims.0, self.strides.0));
        dims.retain(|&(size, _)| size != 1);
        let evenly = dims.windows(2).all(|w| w[0].1 == w[1].1.checked_mul(w[1].0 as isize).unwrap_or(0) && w[0].1 != 0);
        if !evenly {
            return None;
        }
        let row_stride = dims.last().map_or(self.strides.0, |&(_, stride)| stride);
        let rows = crate::shape::numel(batch).checked_mul(self.dims.0)?;
        let strides = (row_stride, self.strides.1);
        MatRef::new(self.data, self.offset, (rows, self.dims.1), strides)
    }

    /// Whether every batch index reads the same matrix.
    fn is_shared(&self, batch: &[usize]) -> bool {
        batch.iter().zip(&self.batch_strides).all(|(&size, &stride)| size == 1 || stride == 0)
    }
}

/// Writes every product of the batch into `out` (row-major batch×m×n).
fn multiply<T: Float>(a: &Side<'_, T>, b: &Side<'_, T>, batch: &[usize], out: &mut [T]) -> Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    // Empty matrices (k = 0) may have any offsets and strides: nothing of them is read.
    if a.dims.1 == 0 {
        out.fill(T::ZERO);
        return Ok(());
    }
    // A shared right operand under a batch laid out as rows (x @ w for a batch of
    // inputs x): one tall product, which the 2-D kernels run better than many short ones.
    if b.is_shared(batch) {
        if let Some(tall) = a.rows_of_all_batches(batch) {
            matmul::matmul_into(tall, b.matrix(batch, 0)?, out, T::ONE, T::ZERO);
            return Ok(());
        }
    }
    let mn = a.dims.0 * b.dims.1;
    for (chunk, products) in out.chunks_mut(PRODUCTS_PER_CALL.saturating_mul(mn)).enumerate() {
        let first = chunk * PRODUCTS_PER_CALL;
        let indices = first..first + products.len() / mn;
        let pairs = indices.map(|i| Ok((a.matrix(batch, i)?, b.matrix(batch, i)?))).collect::<Result<Vec<_>>>()?;
        batched_matmul_into(&pairs, products);
    }
    Ok(())
}

/// Products per call of the batch kernel: bounds the list of matrix views it takes
/// (about 100 bytes a product) for batches of very many small matrices.
const PRODUCTS_PER_CALL: usize = 4096;
