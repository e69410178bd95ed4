//! The contraction engine behind `einsum`, `tensordot` and the fixed products (`outer`,
//! `dot`, `mv`, `addmm`, ...): equations parsed once, resolved against the operands'
//! ranks at run time (so static graphs of unknown shapes work), and evaluated by
//! lowering to existing kernels: diagonal and permuted views, sums, reshapes and the
//! batched matrix product, two operands at a time from the left.

use crate::dtype::DType;
use crate::error::{shape_err, Error, Result};
use crate::graph::PartialShape;
use crate::op::Op;
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

/// A dim's label once ellipses are resolved: a letter's byte, or `ELLIPSIS + j` for the
/// j-th (from the left) of the ellipsis dims, which broadcast right-aligned as numpy's.
pub type Label = u32;
const ELLIPSIS: Label = 256;

/// One subscript of a term.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Sub {
    Letter(u8),
    Ellipsis,
}

/// An einsum equation: each operand's subscripts and the output's (None: implicit, the
/// ellipsis dims then the letters seen once, in alphabetical order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Equation {
    inputs: Vec<Vec<Sub>>,
    output: Option<Vec<Sub>>,
    text: String,
    /// Called by TF1's `einsum`: its messages for a bad equation or operand count.
    tf: bool,
}

/// Labels resolved against the operands' ranks: what the engine contracts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub operands: Vec<Vec<Label>>,
    pub output: Vec<Label>,
}

/// A torch parse message without its `einsum(): ` prefix, for TF1's.
fn tf_detail(message: &str) -> &str {
    message.strip_prefix("einsum(): ").unwrap_or(message)
}

fn invalid<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::InvalidArgument(msg.into()))
}

/// The subscripts of one term; `operand` names it in errors (None: the output).
fn parse_term(text: &str, start: usize, operand: Option<usize>) -> Result<Vec<Sub>> {
    let what = || operand.map_or("the output".to_string(), |k| format!("operand {k}"));
    let bytes = text.as_bytes();
    let (mut subs, mut i) = (Vec::new(), 0);
    while i < bytes.len() {
        match bytes[i] {
            b' ' => {}
            b'.' => {
                if bytes.get(i..i + 3) != Some(b"...") {
                    return invalid(format!("einsum(): found '.' for {} that is not part of any ellipsis", what()));
                }
                if subs.contains(&Sub::Ellipsis) {
                    return invalid(format!(
                        "einsum(): found '.' for {} for which an ellipsis was already found",
                        what()
                    ));
                }
                subs.push(Sub::Ellipsis);
                i += 2;
            }
            c if c.is_ascii_alphabetic() => subs.push(Sub::Letter(c)),
            _ => {
                return invalid(format!(
                    "einsum(): invalid subscript given at index {} in the equation string, subscripts must be in \
                     [a-zA-Z]",
                    start + i
                ))
            }
        }
        i += 1;
    }
    Ok(subs)
}

impl Equation {
    pub fn parse(text: &str) -> Result<Equation> {
        Equation::parse_for(text, false)
    }

    /// The equation, with TF1's messages when `tf` (the bad part named as TF names it).
    pub fn parse_for(text: &str, tf: bool) -> Result<Equation> {
        Equation::parse_torch(text).map(|eq| Equation { tf, ..eq }).map_err(|e| match e {
            Error::InvalidArgument(m) if tf => {
                Error::InvalidArgument(format!("einsum: Indices have incorrect format: {text} ({})", tf_detail(&m)))
            }
            other => other,
        })
    }

    fn parse_torch(text: &str) -> Result<Equation> {
        let (lhs, output) = match text.find("->") {
            Some(at) => (&text[..at], Some(parse_term(&text[at + 2..], at + 2, None)?)),
            None => (text, None),
        };
        let mut inputs = Vec::new();
        let mut start = 0;
        for (k, term) in lhs.split(',').enumerate() {
            inputs.push(parse_term(term, start, Some(k))?);
            start += term.len() + 1;
        }
        if let Some(out) = &output {
            for (i, s) in out.iter().enumerate() {
                if let Sub::Letter(c) = s {
                    if out[..i].contains(s) {
                        return invalid(format!(
                            "einsum(): output subscript {} appears more than once in the output",
                            *c as char
                        ));
                    }
                    if !inputs.iter().any(|t| t.contains(s)) {
                        return invalid(format!(
                            "einsum(): output subscript {} does not appear in the equation for any input operand",
                            *c as char
                        ));
                    }
                }
            }
        }
        Ok(Equation { inputs, output, text: text.to_string(), tf: false })
    }

    /// The rank operand `k` must have when its term has no ellipsis.
    pub fn fixed_rank(&self, k: usize) -> Option<usize> {
        let term = self.inputs.get(k)?;
        (!term.contains(&Sub::Ellipsis)).then_some(term.len())
    }

    pub fn operands(&self) -> usize {
        self.inputs.len()
    }

    fn check_count(&self, given: usize) -> Result<()> {
        if self.tf && given != self.inputs.len() {
            return invalid(format!(
                "einsum: Got {given} arguments for equation \"{}\", expecting {}",
                self.text,
                self.inputs.len()
            ));
        }
        match given.cmp(&self.inputs.len()) {
            std::cmp::Ordering::Greater => {
                invalid("einsum(): more operands were provided than specified in the equation")
            }
            std::cmp::Ordering::Less => {
                invalid("einsum(): fewer operands were provided than specified in the equation")
            }
            std::cmp::Ordering::Equal => Ok(()),
        }
    }

    /// The labels for operands of these ranks.
    pub fn plan(&self, ranks: &[usize]) -> Result<Plan> {
        self.check_count(ranks.len())?;
        let mut widths = Vec::with_capacity(ranks.len());
        for (k, (term, &rank)) in self.inputs.iter().zip(ranks).enumerate() {
            let letters = term.iter().filter(|s| matches!(s, Sub::Letter(_))).count();
            let ellipsis = term.contains(&Sub::Ellipsis);
            if letters > rank || (!ellipsis && letters != rank) {
                let relation = if ellipsis { "is more than" } else { "does not match" };
                let tail = if ellipsis { "" } else { " and no ellipsis was given" };
                return shape_err(format!(
                    "einsum(): the number of subscripts in the equation ({letters}) {relation} the number of \
                     dimensions ({rank}) for operand {k}{tail}"
                ));
            }
            widths.push(rank - letters);
        }
        let width = widths.iter().copied().max().unwrap_or(0);
        let resolve = |term: &[Sub], own: usize| -> Vec<Label> {
            let mut labels = Vec::with_capacity(term.len() + own);
            for s in term {
                match s {
                    Sub::Letter(c) => labels.push(Label::from(*c)),
                    Sub::Ellipsis => labels.extend((width - own..width).map(|j| ELLIPSIS + j as Label)),
                }
            }
            labels
        };
        let operands: Vec<Vec<Label>> = self.inputs.iter().zip(&widths).map(|(t, &w)| resolve(t, w)).collect();
        let output = match &self.output {
            Some(out) => resolve(out, width),
            None => {
                let mut once: Vec<Label> = operands
                    .iter()
                    .flatten()
                    .copied()
                    .filter(|&l| l < ELLIPSIS && operands.iter().flatten().filter(|&&m| m == l).count() == 1)
                    .collect();
                once.sort_unstable();
                (0..width as Label).map(|j| ELLIPSIS + j).chain(once).collect()
            }
        };
        Ok(Plan { operands, output })
    }
}

/// The size of each label over the operands: equal wherever it appears, or 1 (broadcast).
fn label_sizes(plan: &Plan, shapes: &[&[usize]]) -> Result<Vec<(Label, usize)>> {
    let mut sizes: Vec<(Label, usize)> = Vec::new();
    let remapped = || {
        let parts: Vec<String> = shapes.iter().map(|s| fmt_shape(s)).collect();
        parts.join(" ")
    };
    for (k, (labels, shape)) in plan.operands.iter().zip(shapes).enumerate() {
        for (i, (&label, &n)) in labels.iter().zip(shape.iter()).enumerate() {
            if let Some(p) = labels[..i].iter().position(|&l| l == label) {
                if shape[p] != n {
                    return shape_err(format!(
                        "einsum(): subscript {} is repeated for operand {k} but the sizes don't match, {} != {n}",
                        label_name(label),
                        shape[p]
                    ));
                }
            }
            match sizes.iter_mut().find(|(l, _)| *l == label) {
                None => sizes.push((label, n)),
                Some((_, m)) if *m == n || n == 1 => {}
                Some((_, m)) if *m == 1 => *m = n,
                Some(_) => {
                    return shape_err(format!(
                        "einsum(): operands do not broadcast with remapped shapes (original->remapped): {}; \
                         subscript {} has sizes that are neither equal nor 1",
                        remapped(),
                        label_name(label)
                    ))
                }
            }
        }
    }
    Ok(sizes)
}

fn label_name(label: Label) -> String {
    match u8::try_from(label) {
        Ok(c) => (c as char).to_string(),
        Err(_) => "...".to_string(),
    }
}

fn size_of(sizes: &[(Label, usize)], label: Label) -> usize {
    sizes.iter().find(|(l, _)| *l == label).map_or(1, |&(_, n)| n)
}

impl Plan {
    /// The output's static dims, from the operands' partial dims.
    pub fn infer(&self, shapes: &[Vec<Option<usize>>]) -> Result<Vec<Option<usize>>> {
        let mut labels: Vec<Label> = self.operands.iter().flatten().copied().collect();
        labels.sort_unstable();
        labels.dedup();
        let sizes = labels.iter().map(|&l| Ok((l, self.static_size(l, shapes)?))).collect::<Result<Vec<_>>>()?;
        Ok(self.output.iter().map(|l| sizes.iter().find(|(m, _)| m == l).and_then(|&(_, n)| n)).collect())
    }

    /// A label's static size: its known sizes must be equal or 1; None while a 1 may still broadcast.
    fn static_size(&self, label: Label, shapes: &[Vec<Option<usize>>]) -> Result<Option<usize>> {
        let mut known: Option<usize> = None;
        let mut unknown = false;
        for (labels, dims) in self.operands.iter().zip(shapes) {
            for (_, &d) in labels.iter().zip(dims).filter(|(&l, _)| l == label) {
                match (d, known) {
                    (None, _) => unknown = true,
                    (Some(n), Some(m)) if m != n && m != 1 && n != 1 => {
                        let described: Vec<String> =
                            shapes.iter().map(|d| crate::graph::fmt_partial(&Some(d.clone()))).collect();
                        return shape_err(format!(
                            "einsum: Dimensions must be equal, but are {m} and {n} for subscript {} in 'Einsum' \
                             with input shapes: {}",
                            label_name(label),
                            described.join(", ")
                        ));
                    }
                    (Some(_), Some(m)) if m != 1 => {}
                    (Some(n), _) => known = Some(n),
                }
            }
        }
        Ok(match known {
            Some(1) if unknown => None,
            other => other,
        })
    }

    /// The contraction of `operands` (already of one dtype).
    pub fn evaluate(&self, operands: &[&Tensor]) -> Result<Tensor> {
        let shapes: Vec<&[usize]> = operands.iter().map(|t| t.shape()).collect();
        let sizes = label_sizes(self, &shapes)?;
        let dtype = operands.first().map_or(DType::F32, |t| t.dtype());
        let mut terms = operands.iter().zip(&self.operands).map(|(t, labels)| Term::new(t, labels));
        let Some(first) = terms.next() else { return shape_err("einsum(): expected at least one operand") };
        let rest: Vec<Term> = terms.collect();
        let keep_after = |k: usize| -> Vec<Label> {
            let later = rest.iter().skip(k).flat_map(|t| t.labels.iter().copied());
            self.output.iter().copied().chain(later).collect()
        };
        let mut acc = first.diagonals()?.sum_except(&keep_after(0))?;
        for (k, term) in rest.iter().enumerate() {
            let mut keep = keep_after(k + 1);
            let b = term.clone().diagonals()?.sum_except(&[keep.clone(), acc.labels.clone()].concat())?;
            keep.extend(self.output.iter().copied());
            acc = acc.sum_except(&[keep.clone(), b.labels.clone()].concat())?;
            acc = pair(acc, b, &keep)?;
        }
        let out = acc.ordered(&self.output, &sizes)?;
        let out = if out.fresh && out.tensor.is_contiguous() { out.tensor } else { crate::forward::copy(&out.tensor)? };
        if out.dtype() != dtype {
            return crate::forward::cast(&out, dtype);
        }
        Ok(out)
    }
}

/// A tensor with a label per dim; `fresh` when it owns its storage (not a view of an operand).
#[derive(Clone)]
struct Term {
    tensor: Tensor,
    labels: Vec<Label>,
    fresh: bool,
}

impl Term {
    fn new(t: &Tensor, labels: &[Label]) -> Term {
        Term { tensor: t.clone(), labels: labels.to_vec(), fresh: false }
    }

    /// Repeated labels taken along their diagonal (a view): `ii` becomes `i`.
    fn diagonals(mut self) -> Result<Term> {
        while let Some((p, q)) = self.repeated() {
            let label = self.labels[p];
            self.tensor = super::slicing::Diagonal::new(0, p as isize, q as isize).of(&self.tensor)?;
            self.labels = self.labels.iter().enumerate().filter(|&(i, _)| i != p && i != q).map(|(_, &l)| l).collect();
            self.labels.push(label);
        }
        Ok(self)
    }

    fn repeated(&self) -> Option<(usize, usize)> {
        (0..self.labels.len()).find_map(|q| self.labels[..q].iter().position(|&l| l == self.labels[q]).map(|p| (p, q)))
    }

    /// The dims whose labels are not in `keep` summed away.
    fn sum_except(self, keep: &[Label]) -> Result<Term> {
        let gone: Vec<isize> =
            (0..self.labels.len()).filter(|&i| !keep.contains(&self.labels[i])).map(|i| i as isize).collect();
        if gone.is_empty() {
            return Ok(self);
        }
        let labels = self.labels.iter().copied().filter(|l| keep.contains(l)).collect();
        Ok(Term { tensor: crate::forward::sum(&self.tensor, Some(&gone), false, false)?, labels, fresh: true })
    }

    /// Sums the dims `dims` (by position) keeping them as size 1.
    fn sum_keeping(self, dims: &[isize]) -> Result<Term> {
        if dims.is_empty() {
            return Ok(self);
        }
        Ok(Term { tensor: crate::forward::sum(&self.tensor, Some(dims), true, false)?, fresh: true, ..self })
    }

    fn position(&self, label: Label) -> Option<usize> {
        self.labels.iter().position(|&l| l == label)
    }

    /// The view with dims in the order of `labels` (each of this term's labels once).
    fn permuted(&self, labels: &[Label]) -> Result<Tensor> {
        let order: Vec<usize> = labels.iter().filter_map(|&l| self.position(l)).collect();
        let shape: Vec<usize> = order.iter().map(|&i| self.tensor.shape()[i]).collect();
        let strides: Vec<isize> = order.iter().map(|&i| self.tensor.strides()[i]).collect();
        self.tensor.view_as_layout(shape, strides, self.tensor.offset())
    }

    fn sizes(&self, labels: &[Label]) -> Vec<usize> {
        labels.iter().filter_map(|&l| self.position(l)).map(|i| self.tensor.shape()[i]).collect()
    }

    /// The term's dims in the order of `output` (which has exactly its labels), each at its
    /// broadcast size.
    fn ordered(self, output: &[Label], sizes: &[(Label, usize)]) -> Result<Term> {
        let view = self.permuted(output)?;
        let want: Vec<usize> = output.iter().map(|&l| size_of(sizes, l)).collect();
        if view.shape() == want.as_slice() {
            return Ok(Term { tensor: view, labels: output.to_vec(), fresh: self.fresh });
        }
        Ok(Term { tensor: crate::forward::broadcast_to(&view, &want)?, labels: output.to_vec(), fresh: true })
    }
}

/// The contraction of two terms, keeping the labels in `keep`: a batched matrix product with
/// the shared kept labels as the batch, the shared others as the inner dim.
fn pair(a: Term, b: Term, keep: &[Label]) -> Result<Term> {
    let shared = |l: &Label| b.labels.contains(l);
    let batch: Vec<Label> = a.labels.iter().copied().filter(|l| shared(l) && keep.contains(l)).collect();
    let inner: Vec<Label> = a.labels.iter().copied().filter(|l| shared(l) && !keep.contains(l)).collect();
    let left: Vec<Label> = a.labels.iter().copied().filter(|l| !shared(l)).collect();
    let right: Vec<Label> = b.labels.iter().copied().filter(|l| !a.labels.contains(l)).collect();
    // An inner label of size 1 on one side only: the other side's sum over it is all that is left.
    let broadcast_inner = |x: &Term, y: &Term| -> Vec<isize> {
        inner
            .iter()
            .filter_map(|&l| {
                let (i, j) = (x.position(l)?, y.position(l)?);
                (x.tensor.shape()[i] != 1 && y.tensor.shape()[j] == 1).then_some(i as isize)
            })
            .collect()
    };
    let (sum_a, sum_b) = (broadcast_inner(&a, &b), broadcast_inner(&b, &a));
    let (a, b) = (a.sum_keeping(&sum_a)?, b.sum_keeping(&sum_b)?);
    let (m, k, n) =
        (a.sizes(&left).iter().product(), a.sizes(&inner).iter().product::<usize>(), b.sizes(&right).iter().product());
    let matrices = |t: &Term, first: &[Label], second: &[Label], rows: usize, cols: usize| -> Result<Tensor> {
        let view = t.permuted(&[&batch[..], first, second].concat())?;
        let shape: Vec<usize> = [&view.shape()[..batch.len()], &[rows, cols]].concat();
        super::layout::reshaped(&view, &shape)
    };
    let (ma, mb) = (matrices(&a, &left, &inner, m, k)?, matrices(&b, &inner, &right, k, n)?);
    let product = if ma.dtype().is_float() {
        crate::forward::forward(&Op::MatMul { transpose_a: false, transpose_b: false }, &[&ma, &mb])?
    } else {
        integer_product(&ma, &mb)?
    };
    let batch_sizes = &product.shape()[..batch.len()];
    let shape: Vec<usize> = [batch_sizes, &a.sizes(&left), &b.sizes(&right)].concat();
    let tensor = super::layout::reshaped(&product, &shape)?;
    Ok(Term { tensor, labels: [batch, left, right].concat(), fresh: true })
}

/// `a·b` over batches for dtypes the matrix kernels lack: products broadcast, then summed.
fn integer_product(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let column = super::layout::reshaped(a, &[a.shape(), &[1]].concat())?;
    let (r, s) = (b.rank(), b.shape());
    let row = super::layout::reshaped(b, &[&s[..r - 2], &[1], &s[r - 2..]].concat())?;
    let products = crate::forward::binary(crate::kernels::elementwise::BinaryOp::Mul, &column, &row)?;
    crate::forward::sum(&products, Some(&[-2]), false, false)
}

/// The static shape of a contraction: None where a rank is unknown.
pub fn infer_with(plan_for: impl Fn(&[usize]) -> Result<Plan>, shapes: &[&PartialShape]) -> Result<PartialShape> {
    let Some(dims) = shapes.iter().map(|s| s.as_ref().cloned()).collect::<Option<Vec<_>>>() else {
        return Ok(None);
    };
    let ranks: Vec<usize> = dims.iter().map(Vec::len).collect();
    Ok(Some(plan_for(&ranks)?.infer(&dims)?))
}

/// The gradient of a contraction with respect to operand `which`, of `like`'s shape: the
/// contraction of the output's gradient `g` with the other operands, then its labels that
/// only `which` had spread back, broadcast dims summed back, and repeated labels written
/// along their diagonal into zeros.
pub fn gradient(plan: &Plan, which: usize, g: &Tensor, operands: &[&Tensor]) -> Result<Tensor> {
    let like = *super::nth(operands, which, "einsum_backward")?;
    let target = &plan.operands[which];
    let mut unique: Vec<Label> = Vec::new();
    for &l in target {
        if !unique.contains(&l) {
            unique.push(l);
        }
    }
    let others: Vec<usize> = (0..operands.len()).filter(|&k| k != which).collect();
    let present = |l: Label| plan.output.contains(&l) || others.iter().any(|&k| plan.operands[k].contains(&l));
    let found: Vec<Label> = unique.iter().copied().filter(|&l| present(l)).collect();
    let sub = Plan {
        operands: std::iter::once(plan.output.clone())
            .chain(others.iter().map(|&k| plan.operands[k].clone()))
            .collect(),
        output: found.clone(),
    };
    let inputs: Vec<&Tensor> = std::iter::once(g).chain(others.iter().map(|&k| operands[k])).collect();
    let r = sub.evaluate(&inputs)?;
    // The sizes `which` has for its unique labels (repeats are equal: checked by the forward).
    let own: Vec<usize> =
        unique.iter().map(|&l| target.iter().position(|&m| m == l).map_or(1, |i| like.shape()[i])).collect();
    let own_size = |l: Label| unique.iter().position(|&m| m == l).map_or(1, |i| own[i]);
    // Broadcast dims (size 1 in `which`, more in the output) are summed back to 1.
    let summed: Vec<isize> = (found.iter().enumerate())
        .filter(|&(i, &l)| own_size(l) == 1 && r.shape()[i] != 1)
        .map(|(i, _)| i as isize)
        .collect();
    let r = if summed.is_empty() { r } else { crate::forward::sum(&r, Some(&summed), true, false)? };
    // Every unique label as a dim (size 1 where `which` alone had it), then spread to `own`.
    let with_all: Vec<usize> =
        unique.iter().map(|l| found.iter().position(|m| m == l).map_or(1, |i| r.shape()[i])).collect();
    let r = super::layout::reshaped(&r, &with_all)?;
    let spread = if with_all == own { r } else { crate::forward::broadcast_to(&r, &own)? };
    if unique.len() == target.len() {
        return crate::forward::copy(&spread);
    }
    let out = Tensor::zeros(like.shape(), g.dtype())?;
    let strides: Vec<isize> = unique
        .iter()
        .map(|&l| target.iter().enumerate().filter(|&(_, &m)| m == l).map(|(i, _)| out.strides()[i]).sum())
        .collect();
    let diagonal = out.view_as_layout(own, strides, out.offset())?;
    crate::forward::write_into(&diagonal, &spread)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implicit_outputs_put_the_ellipsis_first_then_letters_seen_once_in_order() {
        let plan = Equation::parse("...ba,...cb").unwrap().plan(&[3, 2]).unwrap();
        assert_eq!(plan.operands, vec![vec![ELLIPSIS, 98, 97], vec![99, 98]]);
        assert_eq!(plan.output, vec![ELLIPSIS, 97, 99]);
    }

    #[test]
    fn bad_equations_are_refused() {
        assert!(Equation::parse("i.j").is_err());
        assert!(Equation::parse("i1").is_err());
        assert!(Equation::parse("i->ii").is_err());
        assert!(Equation::parse("i->j").is_err());
        assert!(Equation::parse("ij").unwrap().plan(&[3]).is_err());
    }
}
