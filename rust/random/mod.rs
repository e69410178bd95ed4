//! Random numbers: generators (`generator.rs`), draws from a distribution into a
//! new tensor or in place (this file), and the samplers that need a tensor
//! (`discrete.rs`: permutations, bernoulli of a tensor, multinomial, normal of tensors).
//!
//! Every draw takes the generator it draws from. A value is drawn in float64 and
//! rounded to the tensor's dtype, so one seed gives the same values (up to
//! rounding) in every float dtype.

pub mod discrete;
pub mod generator;

pub use discrete::{bernoulli, multinomial, normal, randperm, shuffle_rows};
pub use generator::{default_generator, Generator, State};

use crate::dtype::{dispatch, DType};
use crate::error::{dtype_err, Error, Result};
use crate::shape::checked_numel;
use crate::storage::{ensure_allocatable, try_alloc, Element};
use crate::tensor::Tensor;
use rand::Rng;
use rand_chacha::ChaCha12Rng;
use rand_distr::StandardNormal;

/// How far from the mean, in standard deviations, truncated normal samples lie at most (TF's).
const TRUNCATION: f64 = 2.0;

#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Distribution {
    /// Normal with the given mean and standard deviation.
    Normal { mean: f64, std: f64 },
    /// Uniform on [low, high).
    Uniform { low: f64, high: f64 },
    /// Normal, with the samples more than two standard deviations from the mean drawn again.
    TruncatedNormal { mean: f64, std: f64 },
    /// Integers uniform on [low, high).
    Integers { low: i64, high: i64 },
    /// 1 with probability `p`, else 0.
    Bernoulli { p: f64 },
}

/// The range of integers a dtype holds exactly, as `(min, max)`.
fn exact_integers(dtype: DType) -> (i128, i128) {
    match dtype {
        DType::F32 => (-(1 << 24), 1 << 24),
        DType::F64 => (-(1 << 53), 1 << 53),
        DType::I64 => (i64::MIN.into(), i64::MAX.into()),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        DType::U8 => (0, 255),
        DType::Bool => (0, 1),
    }
}

impl Distribution {
    /// Refuses parameters that describe no distribution, and dtypes that cannot hold its values.
    pub fn check(self, op: &str, dtype: DType) -> Result<()> {
        let continuous = !matches!(self, Distribution::Integers { .. } | Distribution::Bernoulli { .. });
        if continuous && !dtype.is_float() {
            return dtype_err(format!(
                "{op}: normal and uniform samples are floats, not {}; draw integers with randint, or draw \
                 floats and convert them (e.g. (rand(n) * 10).long())",
                dtype.name()
            ));
        }
        let invalid = |msg: String| Err(Error::InvalidArgument(format!("{op}: {msg}")));
        match self {
            Distribution::Normal { std, .. } | Distribution::TruncatedNormal { std, .. }
                if std.is_nan() || std < 0.0 =>
            {
                invalid(format!("normal expects std >= 0.0, but found std {std}"))
            }
            Distribution::Uniform { low, high } if low.is_nan() || high.is_nan() || low > high => {
                invalid(format!("uniform_ expects to return a [from, to) range, but found from={low} > to={high}"))
            }
            Distribution::Uniform { low, high } if !(high - low).is_finite() => {
                invalid(format!("uniform_ expects a finite range, but found from={low}, to={high}"))
            }
            Distribution::Bernoulli { p } if !(0.0..=1.0).contains(&p) => {
                invalid(format!("bernoulli expects p to be in [0, 1], but got p={p}"))
            }
            Distribution::Integers { low, high } if low >= high => invalid(format!(
                "random_ expects 'from' to be less than 'to', but got from={low} >= to={high}; pass low < high"
            )),
            Distribution::Integers { low, high } => {
                let (min, max) = exact_integers(dtype);
                if i128::from(low) < min || i128::from(high) - 1 > max {
                    return invalid(format!(
                        "the range [{low}, {high}) does not fit in {} (it holds the integers {min} to {max}); \
                         use a wider dtype",
                        dtype.name()
                    ));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// The largest value of `T` below `high`: where a uniform sample rounded up to `high` goes.
fn largest_below<T: Element>(high: f64) -> T {
    if T::DTYPE == DType::F32 {
        let h = high as f32;
        let below = if f64::from(h) >= high { h.next_down() } else { h };
        return T::from_f64(f64::from(below));
    }
    T::from_f64(high.next_down())
}

fn standard_normal(rng: &mut ChaCha12Rng) -> f64 {
    rng.sample(StandardNormal)
}

/// Fills `block` with draws of `dist` from `rng`.
fn fill_block<T: Element>(rng: &mut ChaCha12Rng, block: &mut [T], dist: Distribution) {
    match dist {
        Distribution::Normal { mean, std } => {
            block.iter_mut().for_each(|v| *v = T::from_f64(mean + std * standard_normal(rng)));
        }
        Distribution::Uniform { low, high } => {
            let top = largest_below::<T>(high);
            block.iter_mut().for_each(|v| {
                let x = T::from_f64(low + (high - low) * rng.random::<f64>());
                *v = if x.to_f64() >= high && low < high { top } else { x };
            });
        }
        Distribution::TruncatedNormal { mean, std } => block.iter_mut().for_each(|v| {
            let z = loop {
                let z = standard_normal(rng);
                if z.abs() <= TRUNCATION {
                    break z;
                }
            };
            *v = T::from_f64(mean + std * z);
        }),
        // `check` refused low >= high, the only range `Uniform::new` rejects.
        Distribution::Integers { low, high } => match rand::distr::Uniform::new(low, high) {
            Ok(range) => block.iter_mut().for_each(|v| *v = T::from_i64(rng.sample(range))),
            Err(_) => block.iter_mut().for_each(|v| *v = T::from_i64(low)),
        },
        Distribution::Bernoulli { p } => {
            block.iter_mut().for_each(|v| *v = T::from_i64(i64::from(rng.random::<f64>() < p)));
        }
    }
}

/// A new tensor of draws of `dist` from `generator`; `op` names the call in errors.
pub fn sample(op: &str, shape: &[usize], dtype: DType, dist: Distribution, generator: &Generator) -> Result<Tensor> {
    let n = checked_numel(shape)?;
    // Fails cleanly, before the generator is touched, when the tensor cannot fit.
    ensure_allocatable(shape, dtype)?;
    dist.check(op, dtype)?;
    let buffer = generator.draw(|streams| {
        Ok(dispatch!(dtype, |T| {
            let mut values = try_alloc(n, T::default(), shape)?;
            let used = streams.fill_blocks(&mut values, |rng, _, block| fill_block(rng, block, dist));
            (T::wrap(values), used)
        }))
    })?;
    Ok(Tensor::from_buffer(buffer, shape))
}

/// Overwrites `dst` with draws of `dist` (`uniform_`, `normal_`, `bernoulli_`, `random_`),
/// with the checks and the tape record of an in-place copy.
pub fn fill(op: &str, dst: &Tensor, dist: Distribution, generator: &Generator) -> Result<()> {
    let values = sample(op, dst.shape(), dst.dtype(), dist, generator)?;
    crate::autograd::in_place::overwrite(dst, &values, op)
}

/// A 64-bit seed for the pair of TF1 seeds (graph-level, op-level) of a static random op.
pub fn combine_seeds(graph_seed: u64, op_seed: u64) -> u64 {
    // splitmix64's finaliser over the two words, so nearby pairs give unrelated seeds.
    let mut z = graph_seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ op_seed.rotate_left(29);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What a random node of a static graph computes each time a run reaches it.
#[derive(Clone, Debug, PartialEq)]
pub enum Sampler {
    /// Draws of the distribution in a fixed shape.
    Draw { dist: Distribution, shape: Vec<usize> },
    /// Draws of the distribution in the shape its input holds, a 1-D int32 or int64
    /// tensor (`tf.random_normal(tf.shape(x))`).
    DrawShaped { dist: Distribution },
    /// Its input with the first dim shuffled (TF's `random_shuffle`).
    ShuffleRows,
}

impl Sampler {
    /// TF's op type (`op.type`).
    pub fn type_name(&self) -> &'static str {
        let dist = match self {
            Sampler::Draw { dist, .. } | Sampler::DrawShaped { dist } => dist,
            Sampler::ShuffleRows => return "RandomShuffle",
        };
        match dist {
            Distribution::Normal { .. } => "RandomStandardNormal",
            Distribution::Uniform { .. } => "RandomUniform",
            Distribution::TruncatedNormal { .. } => "TruncatedNormal",
            Distribution::Integers { .. } => "RandomUniformInt",
            Distribution::Bernoulli { .. } => "RandomBernoulli",
        }
    }

    pub fn run(&self, dtype: DType, inputs: &[&Tensor], generator: &Generator) -> Result<Tensor> {
        let op = self.type_name();
        match self {
            Sampler::Draw { dist, shape } => sample(op, shape, dtype, *dist, generator),
            Sampler::DrawShaped { dist } => {
                let shape = crate::ops::creation::dims_values(crate::ops::nth(inputs, 0, op)?, op)?;
                sample(op, &shape, dtype, *dist, generator)
            }
            Sampler::ShuffleRows => shuffle_rows(crate::ops::nth(inputs, 0, op)?, generator),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normal01() -> Distribution {
        Distribution::Normal { mean: 0.0, std: 1.0 }
    }

    #[test]
    fn a_seed_makes_samples_reproducible() {
        let a = sample("t", &[5], DType::F64, normal01(), &Generator::new(7)).unwrap().to_f64_vec();
        let b = sample("t", &[5], DType::F64, normal01(), &Generator::new(7)).unwrap().to_f64_vec();
        assert_eq!(a, b);
        let uniform = Distribution::Uniform { low: 0.0, high: 1.0 };
        let u = sample("t", &[1000], DType::F32, uniform, &Generator::new(1)).unwrap().to_f64_vec();
        assert!(u.iter().all(|&v| (0.0..1.0).contains(&v)));
    }

    #[test]
    fn float32_samples_are_the_float64_samples_rounded() {
        let wide = sample("t", &[64], DType::F64, normal01(), &Generator::new(3)).unwrap().to_f64_vec();
        let narrow = sample("t", &[64], DType::F32, normal01(), &Generator::new(3)).unwrap().to_vec::<f32>().unwrap();
        assert!(wide.iter().zip(&narrow).all(|(&w, &n)| w as f32 == n));
    }

    #[test]
    fn a_float32_tensor_too_large_names_float32() {
        let huge = [1usize << 40, 1 << 20];
        let uniform = Distribution::Uniform { low: 0.0, high: 1.0 };
        let err = sample("t", &huge, DType::F32, uniform, &Generator::new(1)).unwrap_err();
        assert!(err.to_string().contains("float32"), "{err}");
    }

    #[test]
    fn a_uniform_float32_sample_never_reaches_its_upper_bound() {
        assert_eq!(largest_below::<f32>(1.0), 1.0f32.next_down());
        assert_eq!(largest_below::<f64>(1.0), 1.0f64.next_down());
        // 1 - 2**-30 rounds up to 1.0 in float32.
        assert!(largest_below::<f32>(1.0 - 2f64.powi(-30)) < 1.0);
    }

    #[test]
    fn truncated_normal_samples_stay_within_two_standard_deviations() {
        let dist = Distribution::TruncatedNormal { mean: 1.0, std: 3.0 };
        let v = sample("t", &[20_000], DType::F64, dist, &Generator::new(2)).unwrap().to_f64_vec();
        assert!(v.iter().all(|x| (x - 1.0).abs() <= 6.0));
    }

    #[test]
    fn integers_must_fit_the_dtype() {
        assert!(Distribution::Integers { low: 0, high: 256 }.check("t", DType::U8).is_ok());
        assert!(Distribution::Integers { low: 0, high: 257 }.check("t", DType::U8).is_err());
        assert!(Distribution::Integers { low: -1, high: 2 }.check("t", DType::Bool).is_err());
        assert!(Distribution::Integers { low: 3, high: 3 }.check("t", DType::I64).is_err());
    }

    #[test]
    fn combined_seeds_differ_for_swapped_pairs() {
        assert_ne!(combine_seeds(1, 2), combine_seeds(2, 1));
        assert_eq!(combine_seeds(5, 6), combine_seeds(5, 6));
    }
}
