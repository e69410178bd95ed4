//! Basic indexing with numpy's rules: ints, slices (any non-zero step, any
//! bounds), `None`, one `...` and bool scalars. The result is always a view,
//! described by its layout; eager tensors and static shape inference share it.
//! Keys with index tensors are `advanced`.

pub mod advanced;

use crate::error::{Error, Result};
use crate::op::IndexItem;
use crate::shape::{Shape, Strides};

/// The elements a slice picks from a dim of `size`: the first index and the
/// count, as Python's `slice.indices` computes them. Bounds beyond the dim are
/// clamped and a step below `-isize::MAX` counts as `-isize::MAX`, as in CPython,
/// so no value can overflow. The caller has rejected a zero step.
pub fn slice_span(start: Option<isize>, stop: Option<isize>, step: isize, size: usize) -> (isize, usize) {
    let step = step.max(-isize::MAX);
    // invariant: a dim never holds more than isize::MAX elements (allocations are checked).
    let n = isize::try_from(size).unwrap_or(isize::MAX);
    let backwards = step < 0;
    let adjust = |v: isize| {
        if v < 0 {
            // v >= isize::MIN and n >= 0, so the sum cannot overflow.
            match v + n {
                w if w < 0 => -(backwards as isize),
                w => w,
            }
        } else if v >= n {
            n - backwards as isize
        } else {
            v
        }
    };
    let first = adjust(start.unwrap_or(if backwards { isize::MAX } else { 0 }));
    let end = adjust(stop.unwrap_or(if backwards { isize::MIN } else { isize::MAX }));
    // Both ends now lie in [-1, n], so the differences below cannot overflow.
    let len = match backwards {
        true if end < first => (first - end - 1) / -step + 1,
        false if first < end => (end - first - 1) / step + 1,
        _ => 0,
    };
    (first, len as usize)
}

/// One step of an index after `...` has been expanded: what it does to which input dim.
enum Step {
    /// Picks one element of the dim, which disappears.
    Pick {
        dim: usize,
        index: isize,
    },
    Slice {
        dim: usize,
        start: Option<isize>,
        stop: Option<isize>,
        step: isize,
    },
    NewAxis,
}

struct Plan {
    steps: Vec<Step>,
    /// Input dims the steps read; the rest are kept as they are.
    consumed: usize,
    /// The dim that bool scalars add: (its position in the output, its size).
    bool_dim: Option<(usize, usize)>,
}

/// Checks what a key's structure decides without a shape: at most one `...`.
/// Key parsing calls it too, so a static graph of unknown rank rejects `x[..., ...]`.
pub fn check_key(items: &[IndexItem]) -> Result<()> {
    if items.iter().filter(|i| matches!(i, IndexItem::Ellipsis)).count() > 1 {
        return Err(Error::Index("an index can only have a single ellipsis ('...')".into()));
    }
    Ok(())
}

/// Checks the key's structure against the rank and expands `...`.
///
/// Bool scalars follow numpy: they (with the ints beside them) are one advanced
/// index, which adds a dim of size 1 (all true) or 0 (any false). That dim takes
/// the place of the first of them when they are adjacent in the key, else it
/// comes first.
fn plan(items: &[IndexItem], rank: usize) -> Result<Plan> {
    check_key(items)?;
    let indexed = items.iter().filter(|i| matches!(i, IndexItem::Int(_) | IndexItem::Slice { .. })).count();
    if indexed > rank {
        return Err(Error::Index(format!("too many indices for tensor of dimension {rank} (got {indexed})")));
    }
    let advanced: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, i)| matches!(i, IndexItem::Int(_) | IndexItem::Bool(_)))
        .map(|(p, _)| p)
        .collect();
    let adjacent =
        advanced.last().zip(advanced.first()).is_some_and(|(last, first)| last - first + 1 == advanced.len());
    let (mut steps, mut dim, mut out_dims, mut bool_at) = (Vec::with_capacity(items.len()), 0, 0, 0);
    for (position, item) in items.iter().enumerate() {
        if adjacent && advanced.first() == Some(&position) {
            bool_at = out_dims;
        }
        match *item {
            IndexItem::Int(index) => {
                steps.push(Step::Pick { dim, index });
                dim += 1;
            }
            IndexItem::Slice { start, stop, step } => {
                steps.push(Step::Slice { dim, start, stop, step });
                (dim, out_dims) = (dim + 1, out_dims + 1);
            }
            IndexItem::NewAxis => {
                steps.push(Step::NewAxis);
                out_dims += 1;
            }
            IndexItem::Ellipsis => {
                for _ in indexed..rank {
                    steps.push(Step::Slice { dim, start: None, stop: None, step: 1 });
                    (dim, out_dims) = (dim + 1, out_dims + 1);
                }
            }
            IndexItem::Bool(_) => {}
            IndexItem::Tensor => {
                return Err(Error::Internal("a key with index tensors reached basic indexing".into()));
            }
        }
    }
    let mut bools = items.iter().filter_map(|i| if let IndexItem::Bool(b) = i { Some(*b) } else { None }).peekable();
    let bool_dim = bools.peek().is_some().then(|| (bool_at, bools.all(|b| b) as usize));
    Ok(Plan { steps, consumed: dim, bool_dim })
}

fn zero_step() -> Error {
    Error::InvalidArgument("slice step cannot be zero".into())
}

/// `index` normalised against a dim of `size`, or the out-of-bounds error.
fn pick(index: isize, dim: usize, size: usize) -> Result<isize> {
    let n = isize::try_from(size).unwrap_or(isize::MAX);
    let j = if index < 0 { index.saturating_add(n) } else { index };
    if j < 0 || j >= n {
        return Err(Error::Index(format!("index {index} is out of bounds for dimension {dim} with size {size}")));
    }
    Ok(j)
}

/// The layout (shape, strides, offset) of `x[items]` for `x` with this layout.
///
/// An empty result keeps `x`'s offset here (the element it would start at may lie past
/// the end of the storage, as in `zeros(3, 0)[2]`); `Tensor::view_as_layout` then sets
/// the offset of every empty view to 0, since no element of it is ever read.
pub fn layout(
    shape: &[usize],
    strides: &[isize],
    offset: usize,
    items: &[IndexItem],
) -> Result<(Shape, Strides, usize)> {
    let plan = plan(items, shape.len())?;
    let overflow = || Error::Index("index: the view's offset overflows".into());
    let (mut out_shape, mut out_strides) = (Shape::new(), Strides::new());
    let mut start = isize::try_from(offset).map_err(|_| overflow())?;
    for step in &plan.steps {
        match *step {
            Step::Pick { dim, index } => {
                let j = pick(index, dim, shape[dim])?;
                start = j.checked_mul(strides[dim]).and_then(|d| start.checked_add(d)).ok_or_else(overflow)?;
            }
            Step::Slice { dim, start: lo, stop: hi, step } => {
                if step == 0 {
                    return Err(zero_step());
                }
                let (first, len) = slice_span(lo, hi, step, shape[dim]);
                if len > 0 {
                    start = first.checked_mul(strides[dim]).and_then(|d| start.checked_add(d)).ok_or_else(overflow)?;
                }
                // With one element or none the stride is never used (and step·stride may not fit).
                let stride = if len > 1 { strides[dim].checked_mul(step).ok_or_else(overflow)? } else { strides[dim] };
                out_shape.push(len);
                out_strides.push(stride);
            }
            Step::NewAxis => {
                out_shape.push(1);
                out_strides.push(0);
            }
        }
    }
    if let Some((at, size)) = plan.bool_dim {
        out_shape.insert(at, size);
        out_strides.insert(at, 0);
    }
    out_shape.extend_from_slice(&shape[plan.consumed..]);
    out_strides.extend_from_slice(&strides[plan.consumed..]);
    if out_shape.contains(&0) {
        return Ok((out_shape, out_strides, offset));
    }
    Ok((out_shape, out_strides, usize::try_from(start).map_err(|_| overflow())?))
}

/// The shape of `x[items]` when some of x's dims are unknown (static graphs).
/// What the known dims decide (bounds, zero steps) is checked here.
pub fn partial_shape(dims: &[Option<usize>], items: &[IndexItem]) -> Result<Vec<Option<usize>>> {
    let plan = plan(items, dims.len())?;
    let mut out = Vec::with_capacity(dims.len() + 1);
    for step in &plan.steps {
        match *step {
            Step::Pick { dim, index } => {
                if let Some(size) = dims[dim] {
                    pick(index, dim, size)?;
                }
            }
            Step::Slice { dim, start, stop, step } => {
                if step == 0 {
                    return Err(zero_step());
                }
                out.push(dims[dim].map(|size| slice_span(start, stop, step, size).1));
            }
            Step::NewAxis => out.push(Some(1)),
        }
    }
    if let Some((at, size)) = plan.bool_dim {
        out.insert(at, Some(size));
    }
    out.extend_from_slice(&dims[plan.consumed..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: Option<isize>, stop: Option<isize>, step: isize, size: usize) -> (isize, usize) {
        slice_span(start, stop, step, size)
    }

    #[test]
    fn slices_count_as_python_does() {
        assert_eq!(span(None, None, 1, 3), (0, 3));
        assert_eq!(span(None, None, isize::MAX, 3), (0, 1));
        assert_eq!(span(None, None, isize::MIN, 3), (2, 1));
        assert_eq!(span(None, None, -1, 3), (2, 3));
        assert_eq!(span(Some(isize::MIN), Some(isize::MAX), 1, 3), (0, 3));
        assert_eq!(span(Some(isize::MAX), None, 1, 3), (3, 0));
        assert_eq!(span(Some(isize::MIN), None, -1, 3), (-1, 0));
        assert_eq!(span(Some(1), Some(-1), 2, 0), (0, 0));
        assert_eq!(span(Some(-2), None, -2, 5), (3, 2));
    }

    #[test]
    fn bool_scalars_add_one_dim_where_numpy_puts_it() {
        let shape = |items: &[IndexItem]| layout(&[2, 3, 4], &[12, 4, 1], 0, items).unwrap().0.to_vec();
        let full = IndexItem::Slice { start: None, stop: None, step: 1 };
        assert_eq!(shape(&[IndexItem::Bool(true)]), vec![1, 2, 3, 4]);
        assert_eq!(shape(&[IndexItem::Bool(false)]), vec![0, 2, 3, 4]);
        assert_eq!(shape(&[full.clone(), IndexItem::Int(0), IndexItem::Bool(true)]), vec![2, 1, 4]);
        assert_eq!(shape(&[IndexItem::Int(0), full, IndexItem::Bool(true)]), vec![1, 3, 4]);
        assert_eq!(shape(&[IndexItem::Ellipsis, IndexItem::Bool(true)]), vec![2, 3, 4, 1]);
    }

    #[test]
    fn empty_views_keep_the_offset_of_their_base() {
        let (shape, _, offset) = layout(&[3, 0], &[1, 1], 0, &[IndexItem::Int(2)]).unwrap();
        assert_eq!((shape.to_vec(), offset), (vec![0], 0));
    }

    #[test]
    fn a_second_ellipsis_and_a_zero_step_are_refused() {
        assert!(matches!(layout(&[2], &[1], 0, &[IndexItem::Ellipsis, IndexItem::Ellipsis]), Err(Error::Index(_))));
        let zero = IndexItem::Slice { start: None, stop: None, step: 0 };
        assert!(matches!(layout(&[2], &[1], 0, &[zero]), Err(Error::InvalidArgument(_))));
    }
}
