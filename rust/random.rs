//! The seedable random source behind `randn`, `rand` and `manual_seed`.

use crate::dtype::{float_dispatch, DType};
use crate::error::{dtype_err, Result};
use crate::shape::checked_numel;
use crate::storage::{ensure_allocatable, try_alloc, Buffer, Element};
use crate::tensor::Tensor;
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use std::sync::OnceLock;

fn generator() -> &'static Mutex<StdRng> {
    static GENERATOR: OnceLock<Mutex<StdRng>> = OnceLock::new();
    GENERATOR.get_or_init(|| Mutex::new(StdRng::from_os_rng()))
}

pub fn manual_seed(seed: u64) {
    *generator().lock() = StdRng::seed_from_u64(seed);
}

#[derive(Copy, Clone, Debug)]
pub enum Distribution {
    /// Normal with the given mean and standard deviation.
    Normal { mean: f64, std: f64 },
    /// Uniform on [low, high).
    Uniform { low: f64, high: f64 },
}

fn draw(rng: &mut StdRng, dist: Distribution) -> f64 {
    match dist {
        Distribution::Normal { mean, std } => mean + std * rng.sample::<f64, _>(StandardNormal),
        Distribution::Uniform { low, high } => low + (high - low) * rng.random::<f64>(),
    }
}

/// A buffer of `n` draws of `T`, allocated (fallibly) in `T` itself: sampling a
/// float32 tensor needs no float64 buffer, and running out of memory names `T`.
fn sampled<T: Element>(
    n: usize,
    shape: &[usize],
    rng: &mut StdRng,
    mut draw_one: impl FnMut(&mut StdRng) -> T,
) -> Result<Vec<T>> {
    let mut values = try_alloc(n, T::default(), shape)?;
    let poller = crate::interrupt::Poller::here();
    for chunk in values.chunks_mut(1 << 16) {
        poller.poll();
        chunk.iter_mut().for_each(|v| *v = draw_one(rng));
    }
    Ok(values)
}

/// Samples from the global generator, or from a private one seeded with `seed`.
/// Each value is drawn in float64 and rounded to `dtype`, so a seed gives the same
/// values (up to rounding) in every dtype.
pub fn sample(shape: &[usize], dtype: DType, dist: Distribution, seed: Option<u64>) -> Result<Tensor> {
    let n = checked_numel(shape)?;
    if dtype.is_integer() {
        return dtype_err(format!(
            "normal and uniform samples are floats, not {}; draw them as float32 and convert \
             (e.g. (rand(n) * 10).long())",
            dtype.name()
        ));
    }
    // Fails cleanly, before the generator is touched, when the tensor cannot fit.
    ensure_allocatable(shape, dtype)?;
    let draw_all = |rng: &mut StdRng| -> Result<Buffer> {
        if dtype == DType::Bool {
            return Ok(Buffer::Bool(sampled(n, shape, rng, |r| draw(r, dist) >= 0.5)?));
        }
        Ok(float_dispatch!(dtype, "random", |T| T::wrap(sampled(n, shape, rng, |r| T::from_f64(draw(r, dist)))?)))
    };
    let buffer = match seed {
        Some(s) => draw_all(&mut StdRng::seed_from_u64(s))?,
        None => {
            // Drawn from a copy that replaces the generator only when every draw is done:
            // a sampling stopped by Ctrl-C (or out of memory) leaves the stream where it was.
            let mut global = generator().lock();
            let mut rng = global.clone();
            let buffer = draw_all(&mut rng)?;
            *global = rng;
            buffer
        }
    };
    Ok(Tensor::from_buffer(buffer, shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_makes_samples_reproducible() {
        let normal = Distribution::Normal { mean: 0.0, std: 1.0 };
        let a = sample(&[5], DType::F64, normal, Some(7)).unwrap().to_f64_vec();
        let b = sample(&[5], DType::F64, normal, Some(7)).unwrap().to_f64_vec();
        assert_eq!(a, b);
        let u =
            sample(&[1000], DType::F32, Distribution::Uniform { low: 0.0, high: 1.0 }, Some(1)).unwrap().to_f64_vec();
        assert!(u.iter().all(|&v| (0.0..1.0).contains(&v)));
    }

    #[test]
    fn float32_samples_are_the_float64_samples_rounded() {
        let normal = Distribution::Normal { mean: 0.0, std: 1.0 };
        let wide = sample(&[64], DType::F64, normal, Some(3)).unwrap().to_f64_vec();
        let narrow = sample(&[64], DType::F32, normal, Some(3)).unwrap().to_vec::<f32>().unwrap();
        assert!(wide.iter().zip(&narrow).all(|(&w, &n)| w as f32 == n));
    }

    #[test]
    fn a_float32_tensor_too_large_names_float32() {
        let huge = [1usize << 40, 1 << 20];
        let err = sample(&huge, DType::F32, Distribution::Uniform { low: 0.0, high: 1.0 }, Some(1)).unwrap_err();
        assert!(err.to_string().contains("float32"), "{err}");
    }
}
