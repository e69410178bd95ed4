//! Samplers that are more than independent draws of one distribution: random
//! permutations (`randperm`, TF's `random_shuffle`), coin flips with a tensor of
//! probabilities (`bernoulli`), categorical samples (`multinomial`) and normal
//! samples with tensors of means and standard deviations (`normal`).

use super::generator::{Generator, Streams};
use super::{sample, Distribution};
use crate::dtype::{dispatch, float_dispatch, DType};
use crate::error::{dtype_err, shape_err, Error, Result};
use crate::forward;
use crate::interrupt::Poller;
use crate::kernels::elementwise::BinaryOp;
use crate::kernels::PARALLEL_MIN_ELEMENTS;
use crate::shape::{broadcast_shapes, fmt_shape};
use crate::storage::{ensure_allocatable, try_alloc, Element};
use crate::tensor::Tensor;
use rand::Rng;
use rand_chacha::ChaCha12Rng;
use rayon::prelude::*;

/// The most categories `multinomial` takes, as torch (more would blur the cumulative sums).
const MAX_CATEGORIES: usize = 1 << 24;

fn invalid<T>(msg: String) -> Result<T> {
    Err(Error::InvalidArgument(msg))
}

/// A uniformly random permutation of `0..n` (Fisher–Yates), from one stream.
fn permutation(n: usize, rng: &mut ChaCha12Rng) -> Result<Vec<usize>> {
    ensure_allocatable(&[n], DType::I64)?;
    let mut perm: Vec<usize> = crate::storage::vec_with_capacity(n);
    perm.extend(0..n);
    let poller = Poller::here();
    for i in (1..n).rev() {
        if i % (1 << 16) == 0 {
            poller.poll();
        }
        perm.swap(i, rng.random_range(0..=i));
    }
    Ok(perm)
}

fn drawn_permutation(n: usize, generator: &Generator) -> Result<Vec<usize>> {
    generator.draw(|streams| Ok((permutation(n, &mut streams.stream(0))?, 1)))
}

/// `randperm(n)`: the integers `0..n` in random order, in `dtype`.
pub fn randperm(n: usize, dtype: DType, generator: &Generator) -> Result<Tensor> {
    if dtype == DType::Bool {
        return dtype_err("randperm: a permutation cannot be bool; use an integer or float dtype");
    }
    let (_, max) = super::exact_integers(dtype);
    if n > 0 && (n - 1) as i128 > max {
        return invalid(format!(
            "randperm: n is too large for result tensor type {}: n = {n}, and {} holds the integers up to {max}; \
             use int64",
            dtype.name(),
            dtype.name()
        ));
    }
    ensure_allocatable(&[n], dtype)?;
    let perm = drawn_permutation(n, generator)?;
    dispatch!(dtype, |T| Tensor::from_vec(perm.iter().map(|&i| T::from_i64(i as i64)).collect::<Vec<T>>(), vec![n]))
}

/// `x` with its first dim in random order (TF's `random_shuffle`); a 0-d tensor is returned as it is.
pub fn shuffle_rows(x: &Tensor, generator: &Generator) -> Result<Tensor> {
    let Some(&rows) = x.shape().first() else { return forward::copy(x) };
    ensure_allocatable(x.shape(), x.dtype())?;
    let perm = drawn_permutation(rows, generator)?;
    let row_len: usize = x.shape()[1..].iter().product();
    dispatch!(x.dtype(), |T| {
        let data = x.to_vec::<T>()?;
        let mut out: Vec<T> = crate::storage::vec_with_capacity(data.len());
        for &r in &perm {
            out.extend_from_slice(&data[r * row_len..(r + 1) * row_len]);
        }
        Tensor::from_vec(out, x.shape())
    })
}

/// `bernoulli(p)`: 1 where a uniform draw falls below `p`, else 0, in `p`'s shape and float dtype.
pub fn bernoulli(p: &Tensor, generator: &Generator) -> Result<Tensor> {
    float_dispatch!(p.dtype(), "bernoulli", |T| {
        let probabilities = p.to_vec::<T>()?;
        if let Some((i, bad)) = probabilities.iter().enumerate().find(|(_, v)| !(0.0..=1.0).contains(&v.to_f64())) {
            return invalid(format!(
                "bernoulli: expected every probability in [0, 1], but element {i} is {}",
                bad.to_f64()
            ));
        }
        let mut out = try_alloc(probabilities.len(), T::default(), p.shape())?;
        generator.draw(|streams| {
            let used = streams.fill_blocks(&mut out, |rng, start, block| {
                for (v, &q) in block.iter_mut().zip(&probabilities[start..]) {
                    *v = T::from_i64(i64::from(rng.random::<f64>() < q.to_f64()));
                }
            });
            Ok(((), used))
        })?;
        Tensor::from_vec(out, p.shape())
    })
}

/// `dst.bernoulli_(p)`: `dst` overwritten with coin flips of the probabilities `p`,
/// broadcast to `dst`'s shape (one flip per element of `dst`).
pub fn bernoulli_into(dst: &Tensor, p: &Tensor, generator: &Generator) -> Result<()> {
    let p = if p.shape() == dst.shape() { p.clone() } else { forward::broadcast_to(p, dst.shape())? };
    let flips = bernoulli(&p, generator)?;
    crate::autograd::in_place::overwrite(dst, &flips, "bernoulli_")
}

/// `normal(mean, std)` for tensors: one draw per element of their broadcast shape.
pub fn normal(mean: &Tensor, std: &Tensor, generator: &Generator) -> Result<Tensor> {
    for (name, t) in [("mean", mean), ("std", std)] {
        if !t.dtype().is_float() {
            return dtype_err(format!(
                "normal expects a floating point {name}, but got a {} tensor; convert it with .float()",
                t.dtype().name()
            ));
        }
    }
    let shape = broadcast_shapes("normal", mean.shape(), std.shape())?;
    if std.to_f64_vec().iter().any(|s| s.is_nan() || *s < 0.0) {
        return invalid("normal expects all elements of std >= 0.0".into());
    }
    let dtype = forward::promoted(mean, std);
    let z = sample("normal", &shape, dtype, Distribution::Normal { mean: 0.0, std: 1.0 }, generator)?;
    let spread = forward::binary(BinaryOp::Mul, &forward::as_dtype(std, dtype)?, &z)?;
    forward::binary(BinaryOp::Add, &forward::as_dtype(mean, dtype)?, &spread)
}

/// `multinomial(weights, num_samples, replacement)`: for each row of weights (a 1-D
/// tensor is one row), `num_samples` category indices drawn with probabilities
/// proportional to the weights; int64, shaped `[num_samples]` or `[rows, num_samples]`.
pub fn multinomial(weights: &Tensor, num_samples: usize, replacement: bool, generator: &Generator) -> Result<Tensor> {
    let (rows, categories) = match *weights.shape() {
        [c] => (1, c),
        [r, c] => (r, c),
        _ => {
            return shape_err(format!(
                "multinomial: prob_dist must be 1 or 2 dim, got shape {}",
                fmt_shape(weights.shape())
            ))
        }
    };
    if !weights.dtype().is_float() {
        return dtype_err(format!(
            "multinomial only supports floating-point dtypes for input, got {}; convert the weights with .float()",
            weights.dtype().name()
        ));
    }
    if num_samples == 0 {
        return invalid("multinomial: cannot sample n_sample <= 0 samples".into());
    }
    if categories > MAX_CATEGORIES {
        return invalid(format!("multinomial: number of categories cannot exceed 2^24, got {categories}"));
    }
    if !replacement && num_samples > categories {
        return invalid(format!(
            "multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement \
             ({num_samples} samples from {categories} categories); pass replacement=True"
        ));
    }
    let out_shape: Vec<usize> = if weights.rank() == 1 { vec![num_samples] } else { vec![rows, num_samples] };
    ensure_allocatable(&out_shape, DType::I64)?;
    let w = weights.to_f64_vec();
    for row in w.chunks(categories.max(1)).take(rows) {
        check_weights(row, num_samples, replacement)?;
    }
    let mut out = try_alloc(rows * num_samples, 0i64, &out_shape)?;
    generator.draw(|streams| {
        draw_rows(streams, &w, categories, num_samples, replacement, &mut out);
        Ok(((), rows as u64))
    })?;
    Tensor::from_vec(out, out_shape)
}

/// torch's checks of one row of weights.
fn check_weights(row: &[f64], num_samples: usize, replacement: bool) -> Result<()> {
    if row.iter().any(|w| !w.is_finite() || *w < 0.0) {
        return invalid("multinomial: probability tensor contains either `inf`, `nan` or element < 0".into());
    }
    if row.iter().sum::<f64>() <= 0.0 {
        return invalid("multinomial: invalid multinomial distribution (sum of probabilities <= 0)".into());
    }
    let nonzero = row.iter().filter(|&&w| w > 0.0).count();
    if !replacement && nonzero < num_samples {
        return invalid(format!(
            "multinomial: invalid multinomial distribution (with replacement=False, not enough non-negative \
             category to sample): {num_samples} samples asked for, {nonzero} categories have a weight above 0"
        ));
    }
    Ok(())
}

/// Row `r` draws from stream `r`, so the rows may run in parallel.
fn draw_rows(streams: &Streams, w: &[f64], categories: usize, num_samples: usize, replacement: bool, out: &mut [i64]) {
    let poller = Poller::here();
    let run = |(r, samples): (usize, &mut [i64])| {
        poller.poll();
        let row = &w[r * categories..(r + 1) * categories];
        let rng = &mut streams.stream(r as u64);
        if replacement {
            with_replacement(row, rng, samples);
        } else {
            without_replacement(row, rng, samples);
        }
    };
    if out.len() + w.len() >= PARALLEL_MIN_ELEMENTS && crate::kernels::threads::num_threads() > 1 {
        crate::kernels::threads::install(|| out.par_chunks_mut(num_samples).enumerate().for_each(run));
    } else {
        out.chunks_mut(num_samples).enumerate().for_each(run);
    }
}

/// Inverts the cumulative sums: the first category whose running total exceeds a uniform draw.
fn with_replacement(row: &[f64], rng: &mut ChaCha12Rng, samples: &mut [i64]) {
    let mut running = 0.0;
    let cumulative: Vec<f64> = row
        .iter()
        .map(|w| {
            running += w;
            running
        })
        .collect();
    let total = running;
    // A draw that rounds up to the total would fall past the end: it takes the last category with weight.
    let last = row.iter().rposition(|&w| w > 0.0).unwrap_or(0);
    for s in samples {
        let x = rng.random::<f64>() * total;
        *s = cumulative.partition_point(|&c| c <= x).min(last) as i64;
    }
}

/// The categories with the largest keys `w / e`, `e` exponential: the order in which
/// drawing one at a time without replacement would pick them (Efraimidis–Spirakis).
fn without_replacement(row: &[f64], rng: &mut ChaCha12Rng, samples: &mut [i64]) {
    let mut keyed: Vec<(f64, usize)> = row
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            let e = -(1.0 - rng.random::<f64>()).ln();
            (if w > 0.0 { w / e } else { -1.0 }, i)
        })
        .collect();
    let k = samples.len();
    let by_key_descending = |a: &(f64, usize), b: &(f64, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if k < keyed.len() {
        keyed.select_nth_unstable_by(k, by_key_descending);
    }
    keyed[..k].sort_unstable_by(by_key_descending);
    for (s, &(_, i)) in samples.iter_mut().zip(&keyed) {
        *s = i as i64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn randperm_is_a_permutation_and_repeats_with_its_seed() {
        let a = randperm(1000, DType::I64, &Generator::new(4)).unwrap().to_vec::<i64>().unwrap();
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<i64>>());
        assert_eq!(a, randperm(1000, DType::I64, &Generator::new(4)).unwrap().to_vec::<i64>().unwrap());
        assert!(randperm(300, DType::U8, &Generator::new(4)).is_err());
        assert!(randperm(256, DType::U8, &Generator::new(4)).is_ok());
    }

    #[test]
    fn multinomial_without_replacement_gives_distinct_categories_with_weight() {
        let w = Tensor::from_vec(vec![0.0f64, 5.0, 1.0, 0.0, 2.0], vec![5]).unwrap();
        let s = multinomial(&w, 3, false, &Generator::new(1)).unwrap().to_vec::<i64>().unwrap();
        let mut sorted = s.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![1, 2, 4]);
        assert!(multinomial(&w, 4, false, &Generator::new(1)).is_err());
    }

    #[test]
    fn multinomial_with_replacement_never_picks_a_category_without_weight() {
        let w = Tensor::from_vec(vec![0.0f32, 1.0, 0.0, 3.0, 0.0], vec![1, 5]).unwrap();
        let s = multinomial(&w, 2000, true, &Generator::new(2)).unwrap().to_vec::<i64>().unwrap();
        assert!(s.iter().all(|&i| i == 1 || i == 3));
        let threes = s.iter().filter(|&&i| i == 3).count();
        assert!((1350..1650).contains(&threes), "{threes}");
    }

    #[test]
    fn shuffled_rows_keep_their_contents() {
        let x = Tensor::from_vec((0..12).collect::<Vec<i64>>(), vec![6, 2]).unwrap();
        let y = shuffle_rows(&x, &Generator::new(3)).unwrap().to_vec::<i64>().unwrap();
        let mut rows: Vec<[i64; 2]> = y.chunks(2).map(|r| [r[0], r[1]]).collect();
        rows.sort_unstable();
        assert_eq!(rows, (0..6).map(|i| [2 * i, 2 * i + 1]).collect::<Vec<_>>());
    }
}
