//! The seedable random source behind `randn`, `rand` and `manual_seed`.

use crate::dtype::DType;
use crate::error::Result;
use crate::shape::checked_numel;
use crate::storage::Buffer;
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

/// Samples from the global generator, or from a private one seeded with `seed`.
pub fn sample(shape: &[usize], dtype: DType, dist: Distribution, seed: Option<u64>) -> Result<Tensor> {
    let n = checked_numel(shape)?;
    let template = Tensor::zeros(shape, DType::F64)?; // fails cleanly before any sampling when too large
    drop(template);
    let mut local;
    let mut global;
    let rng: &mut StdRng = match seed {
        Some(s) => {
            local = StdRng::seed_from_u64(s);
            &mut local
        }
        None => {
            global = generator().lock();
            &mut global
        }
    };
    let buffer = match dtype {
        DType::F32 => Buffer::F32((0..n).map(|_| draw(rng, dist) as f32).collect()),
        DType::F64 => Buffer::F64((0..n).map(|_| draw(rng, dist)).collect()),
        DType::Bool => Buffer::Bool((0..n).map(|_| draw(rng, dist) >= 0.5).collect()),
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
}
