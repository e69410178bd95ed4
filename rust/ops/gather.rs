//! Index ops along one dim: torch's `gather`, `scatter`, `scatter_add`,
//! `index_select` (TF1's `gather`), `index_add` and `take`. Each reads or writes
//! through a `Pick` (`picks.rs`); their derivative rules emit `index`/`index_put`
//! (`indexing.rs`), which read the index at run time.

use super::indexing::{keep_indices_from, pick, pick_rule, picked, put, Combine, Onto, PutRows};
use super::picks::{check_index_dtype, infer_pick, Pick};
use super::{no_double_backward, nth, Args, Input, Kind, Meta, Param, Role, Spec, TableOp, TableOps, TF_SEMANTICS};
use crate::dtype::{DType, Scalar};
use crate::error::{dtype_err, Error, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::kernels::elementwise::ScalarOp;
use crate::op::{IndexItem, Op};
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

/// torch's `dim`, TF's `axis`, required on both fronts.
pub const DIM: Param =
    Param { torch: "dim", tf: "axis", tf_aliases: &[], kind: Kind::Int, torch_default: None, tf_default: None };

const INPUT: Input = Input { torch: "input", tf: "params", list: false };
const INDEX: Input = Input { torch: "index", tf: "indices", list: false };
const DATA_INDEX: &[Role] = &[Role::Data, Role::Index];
const DATA_INDEX_DATA: &[Role] = &[Role::Data, Role::Index, Role::Data];

/// The input and index metadata of a pick op, with the index's dtype checked.
fn pick_infer(op: &str, pick: &Pick, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
    let (x, dtype) = *nth(inputs, 0, op)?;
    Ok((infer_pick(op, pick, x, &inputs[1..])?, dtype))
}

/// A pick op's forward: the elements of its first input that its index names.
fn pick_forward(op: &str, which: &Pick, inputs: &[&Tensor]) -> Result<Tensor> {
    let x = *nth(inputs, 0, op)?;
    nth(inputs, 1, op)?;
    pick(op, which, x, &inputs[1..])
}

/// A pick op's rule: the gradient goes back where each element was picked, added up.
fn pick_vjp<D: Differentiator>(d: &mut D, which: &Pick, a: &RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
    let mut grads = vec![None; a.inputs.len()];
    grads[0] = Some(pick_rule(d, which, a)?);
    Ok(grads)
}

/// torch's `gather`: `out[i][j] = input[index[i][j]][j]` (for `dim` 0), one element per index element.
#[derive(Clone, Debug)]
pub struct Gather {
    dim: isize,
}

impl Gather {
    fn pick(&self) -> Pick {
        Pick::Elementwise { dim: self.dim }
    }
}

impl TableOp for Gather {
    const SPEC: Spec = Spec {
        name: "gather",
        torch_aliases: &[],
        tf: &["gather_elements"],
        doc: "One element along `dim` per index element: out[i][j] = input[index[i][j]][j] for dim 0.",
        differentiable: true,
        inputs: &[INPUT, INDEX],
        params: &[DIM],
    };
    const ROLES: &'static [Role] = DATA_INDEX;
    const TORCH_ORDER: &'static [&'static str] = &["input", "dim", "index"];

    fn build(args: &Args) -> Result<Self> {
        Ok(Gather { dim: args.int(0)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        pick_forward("gather", &self.pick(), inputs)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        pick_infer("gather", &self.pick(), inputs)
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        keep_indices_from(1, needs)
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        pick_vjp(d, &self.pick(), &a)
    }
}

/// torch's `index_select(input, dim, index)` and TF1's `gather(params, indices, axis, batch_dims)`:
/// whole slices along `dim`, one per index element.
#[derive(Clone, Debug)]
pub struct IndexSelect {
    dim: Option<isize>,
    batch_dims: isize,
    tf: bool,
}

impl IndexSelect {
    /// TF's `gather(params, i)` of a 0-d index `i`: row `i` of params (how a gradient loop
    /// reads one iteration's value from a stack, see `graph::while_gradients`).
    pub fn row() -> IndexSelect {
        IndexSelect { dim: Some(0), batch_dims: 0, tf: true }
    }

    /// Whether this is `row()` (with a 0-d index, it reads one row).
    pub fn is_row(&self) -> bool {
        matches!(self.dim, None | Some(0)) && self.batch_dims == 0 && self.tf
    }

    fn pick(&self) -> Pick {
        Pick::Along { dim: self.dim, batch_dims: self.batch_dims, scalar_as_vector: !self.tf }
    }

    /// torch's `index_select` takes a vector (or one index) and a dim.
    fn check_torch_index(&self, rank: Option<usize>) -> Result<()> {
        if self.tf {
            return Ok(());
        }
        if self.dim.is_none() {
            return Err(Error::InvalidArgument("index_select: argument 'dim' is required (an int)".into()));
        }
        match rank {
            Some(r) if r > 1 => Err(Error::Index(format!(
                "index_select(): Index is supposed to be a vector, got {r} dims; use gather (rustgrad.static.gather) \
                 or advanced indexing for an index of any shape"
            ))),
            _ => Ok(()),
        }
    }
}

impl TableOp for IndexSelect {
    const SPEC: Spec = Spec {
        name: "index_select",
        torch_aliases: &[],
        tf: &["gather"],
        doc: "Whole slices along `dim`, one per index element (TF1's gather: any index shape, batch_dims).",
        differentiable: true,
        inputs: &[INPUT, INDEX],
        params: &[
            Param {
                torch: "dim",
                tf: "axis",
                tf_aliases: &[],
                kind: Kind::OptInt,
                torch_default: None,
                tf_default: Some("None"),
            },
            Param {
                torch: "",
                tf: "batch_dims",
                tf_aliases: &[],
                kind: Kind::Int,
                torch_default: None,
                tf_default: Some("0"),
            },
            TF_SEMANTICS,
        ],
    };
    const ROLES: &'static [Role] = DATA_INDEX;
    const TORCH_ORDER: &'static [&'static str] = &["input", "dim", "index"];

    fn tf_type(&self) -> &'static str {
        "GatherV2"
    }

    fn build(args: &Args) -> Result<Self> {
        Ok(IndexSelect { dim: args.opt_int(0)?, batch_dims: args.int(1)?, tf: args.flag(2)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.check_torch_index(Some(nth(inputs, 1, "index_select")?.rank()))?;
        pick_forward(self.name(), &self.pick(), inputs)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        self.check_torch_index(nth(inputs, 1, "gather")?.0.as_ref().map(Vec::len))?;
        pick_infer(self.name(), &self.pick(), inputs)
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        keep_indices_from(1, needs)
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        pick_vjp(d, &self.pick(), &a)
    }
}

impl IndexSelect {
    fn name(&self) -> &'static str {
        if self.tf {
            "gather"
        } else {
            "index_select"
        }
    }
}

/// torch's `take`: elements of the input as if it were flattened.
#[derive(Clone, Debug)]
pub struct Take;

impl TableOp for Take {
    const SPEC: Spec = Spec {
        name: "take",
        torch_aliases: &[],
        tf: &[],
        doc: "Elements of the input as if it were 1-D, in the shape of `index` (negative ones count from the end).",
        differentiable: true,
        inputs: &[INPUT, INDEX],
        params: &[],
    };
    const ROLES: &'static [Role] = DATA_INDEX;

    fn build(_args: &Args) -> Result<Self> {
        Ok(Take)
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        pick_forward("take", &Pick::Flat, inputs)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        pick_infer("take", &Pick::Flat, inputs)
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        keep_indices_from(1, needs)
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        pick_vjp(d, &Pick::Flat, &a)
    }
}

/// torch's `scatter(input, dim, index, src, reduce=None)`: a copy of the input with
/// `src[i][j]` written at `[index[i][j]][j]` (for dim 0); `src` may be a number.
#[derive(Clone, Debug)]
pub struct Scatter {
    dim: isize,
    combine: Combine,
}

/// torch's `scatter_add(input, dim, index, src)`: `scatter` adding instead of writing.
#[derive(Clone, Debug)]
pub struct ScatterAdd {
    dim: isize,
}

const SRC: Input = Input { torch: "src", tf: "updates", list: false };

/// The values a scatter writes: a number (0-d) as it is, else `src` cut to the index's shape.
fn scatter_values(op: &str, src: &Tensor, index: &Tensor) -> Result<Tensor> {
    if src.rank() == 0 {
        return Ok(src.clone());
    }
    let fits = src.rank() == index.rank() && src.shape().iter().zip(index.shape()).all(|(s, i)| s >= i);
    if !fits {
        return Err(Error::Shape(format!(
            "{op}: Expected index {} to be smaller than src {} in every dimension (and of its rank)",
            fmt_shape(index.shape()),
            fmt_shape(src.shape())
        )));
    }
    let corner: Vec<IndexItem> =
        index.shape().iter().map(|&n| IndexItem::Slice { start: Some(0), stop: Some(n as isize), step: 1 }).collect();
    forward::index(src, &corner)
}

fn scatter_forward(op: &str, dim: isize, combine: Combine, inputs: &[&Tensor]) -> Result<Tensor> {
    let (x, index, src) = (*nth(inputs, 0, op)?, *nth(inputs, 1, op)?, *nth(inputs, 2, op)?);
    if x.dtype() != src.dtype() && src.rank() > 0 {
        return dtype_err(format!(
            "{op}(): Expected self.dtype to be equal to src.dtype ({} and {}); convert one first",
            x.dtype().name(),
            src.dtype().name()
        ));
    }
    let values = scatter_values(op, src, index)?;
    let out = forward::copy(x)?;
    put(op, &Pick::Elementwise { dim }, &out, &[index], &values, combine)?;
    Ok(out)
}

fn scatter_infer(op: &str, dim: isize, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
    let (x, dtype) = *nth(inputs, 0, op)?;
    let (index, index_dtype) = *nth(inputs, 1, op)?;
    let (_, src_dtype) = *nth(inputs, 2, op)?;
    check_index_dtype(op, index_dtype)?;
    if src_dtype != dtype {
        return dtype_err(format!("{op}: src has dtype {} but the input has {}", src_dtype.name(), dtype.name()));
    }
    infer_pick(op, &Pick::Elementwise { dim }, x, &[(index, index_dtype)])?;
    Ok((x.clone(), dtype))
}

/// The gradients of a scatter: the input's is `g` (with zeros where values were
/// written, unless they were added), the source's is `g` where each value landed.
fn scatter_vjp<D: Differentiator>(
    d: &mut D,
    dim: isize,
    combine: Combine,
    a: &RuleArgs<'_, D::Value>,
) -> Result<Vec<Option<D::Value>>> {
    let (index, src) = (nth(a.inputs, 1, "scatter")?, nth(a.inputs, 2, "scatter")?);
    let which = Pick::Elementwise { dim };
    let need = |i: usize| a.needs.get(i).copied().unwrap_or(false);
    let mut grads = vec![None, None, None];
    if combine == Combine::Mul {
        return Err(no_double_backward("ScatterBackward0 (reduce='multiply')"));
    }
    if need(0) {
        grads[0] = Some(match combine {
            Combine::Set => {
                let zeros = d.zeros_like(index)?;
                let put = PutRows { pick: which.clone(), combine: Combine::Set, onto: Onto::Copy };
                d.apply(Op::Table(TableOps::PutRows(put)), &[a.grad, &zeros, index])?
            }
            _ => a.grad.clone(),
        });
    }
    if need(2) {
        let g = picked(d, &which, a.grad, std::slice::from_ref(index))?;
        grads[2] = Some(
            d.apply(Op::Table(TableOps::ScatterSourceGrad(super::scatter_source::ScatterSourceGrad)), &[&g, src])?,
        );
    }
    Ok(grads)
}

fn scatter_saves(needs: &[bool]) -> Saves {
    keep_indices_from(1, needs)
}

const SCATTER_DOC: &str = "A copy of the input with src[i][j] (or a number) written at [index[i][j]][j] for dim 0.";

impl TableOp for Scatter {
    const SPEC: Spec = Spec {
        name: "scatter",
        torch_aliases: &[],
        tf: &["scatter_elements"],
        doc: SCATTER_DOC,
        differentiable: true,
        inputs: &[INPUT, INDEX, SRC],
        params: &[
            DIM,
            Param {
                torch: "reduce",
                tf: "reduction",
                tf_aliases: &[],
                kind: Kind::OptStr,
                torch_default: Some("None"),
                tf_default: Some("None"),
            },
        ],
    };
    const ROLES: &'static [Role] = DATA_INDEX_DATA;
    const TORCH_ORDER: &'static [&'static str] = &["input", "dim", "index", "src", "reduce"];

    fn build(args: &Args) -> Result<Self> {
        let combine = match args.opt_text(1)? {
            None | Some("none") => Combine::Set,
            Some("add") | Some("sum") => Combine::Add,
            Some("multiply") | Some("mul") => Combine::Mul,
            Some(other) => {
                return Err(Error::InvalidArgument(format!(
                    "scatter: reduce argument must be either add or multiply, got '{other}'"
                )))
            }
        };
        Ok(Scatter { dim: args.int(0)?, combine })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        scatter_forward("scatter", self.dim, self.combine, inputs)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        scatter_infer("scatter", self.dim, inputs)
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        scatter_saves(needs)
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        scatter_vjp(d, self.dim, self.combine, &a)
    }
}

impl TableOp for ScatterAdd {
    const SPEC: Spec = Spec {
        name: "scatter_add",
        torch_aliases: &[],
        tf: &["scatter_elements_add"],
        doc: "A copy of the input with src[i][j] added at [index[i][j]][j] for dim 0 (in order: deterministic).",
        differentiable: true,
        inputs: &[INPUT, INDEX, SRC],
        params: &[DIM],
    };
    const ROLES: &'static [Role] = DATA_INDEX_DATA;
    const TORCH_ORDER: &'static [&'static str] = &["input", "dim", "index", "src"];

    fn build(args: &Args) -> Result<Self> {
        Ok(ScatterAdd { dim: args.int(0)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        scatter_forward("scatter_add", self.dim, Combine::Add, inputs)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        scatter_infer("scatter_add", self.dim, inputs)
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        scatter_saves(needs)
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        scatter_vjp(d, self.dim, Combine::Add, &a)
    }
}

/// torch's `index_add(input, dim, index, source, alpha=1)`: a copy of the input with
/// `alpha · source` added along `dim` at the index's positions, in order.
#[derive(Clone, Debug)]
pub struct IndexAdd {
    dim: isize,
    alpha: f64,
}

impl IndexAdd {
    fn pick(&self) -> Pick {
        Pick::Along { dim: Some(self.dim), batch_dims: 0, scalar_as_vector: true }
    }
}

impl TableOp for IndexAdd {
    const SPEC: Spec = Spec {
        name: "index_add",
        torch_aliases: &[],
        tf: &[],
        doc: "A copy of the input with alpha * source added along `dim` at `index` (in order: deterministic).",
        differentiable: true,
        inputs: &[INPUT, INDEX, Input { torch: "source", tf: "source", list: false }],
        params: &[
            DIM,
            Param {
                torch: "alpha",
                tf: "alpha",
                tf_aliases: &[],
                kind: Kind::Float,
                torch_default: Some("1"),
                tf_default: Some("1"),
            },
        ],
    };
    const ROLES: &'static [Role] = DATA_INDEX_DATA;
    const TORCH_ORDER: &'static [&'static str] = &["input", "dim", "index", "source", "alpha"];

    fn build(args: &Args) -> Result<Self> {
        Ok(IndexAdd { dim: args.int(0)?, alpha: args.float(1)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let op = "index_add";
        let (x, index, source) = (*nth(inputs, 0, op)?, *nth(inputs, 1, op)?, *nth(inputs, 2, op)?);
        if index.rank() > 1 {
            return Err(Error::Index(format!("{op}_(): Index is supposed to be a vector, got {} dims", index.rank())));
        }
        let out = forward::copy(x)?;
        let plan = super::picks::plan(op, &self.pick(), &out, &[index])?;
        if source.shape() != &plan.shape[..] {
            return Err(Error::Shape(format!(
                "{op}: source of shape {} does not fit: expected {} (the input's shape with {} indices along dim {})",
                fmt_shape(source.shape()),
                fmt_shape(&plan.shape),
                index.numel(),
                self.dim
            )));
        }
        let scaled;
        let values = if self.alpha == 1.0 {
            source
        } else {
            scaled = forward::scalar(ScalarOp::Mul, source, Scalar::Float(self.alpha))?;
            &scaled
        };
        super::indexing::put_planned(op, &plan, &out, values, Combine::Add)?;
        Ok(out)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (x, dtype) = *nth(inputs, 0, "index_add")?;
        let (_, source_dtype) = *nth(inputs, 2, "index_add")?;
        if source_dtype != dtype {
            return dtype_err(format!(
                "index_add: source has dtype {} but the input has {}",
                source_dtype.name(),
                dtype.name()
            ));
        }
        infer_pick("index_add", &self.pick(), x, &inputs[1..2])?;
        Ok((x.clone(), dtype))
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        keep_indices_from(1, needs)
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let index = nth(a.inputs, 1, "index_add")?;
        let need = |i: usize| a.needs.get(i).copied().unwrap_or(false);
        let mut grads = vec![None, None, None];
        if need(0) {
            grads[0] = Some(a.grad.clone());
        }
        if need(2) {
            let g = picked(d, &self.pick(), a.grad, std::slice::from_ref(index))?;
            grads[2] = Some(if self.alpha == 1.0 { g } else { d.scalar(&g, ScalarOp::Mul, self.alpha)? });
        }
        Ok(grads)
    }
}
