//! The tests of `binary.rs`: the split float32 paths of its entries against their scalar kernels.

use super::*;

/// xlogy's float32 paths (two dense operands, and a number against a tensor either way)
/// against its scalar kernel, bit for bit, with second operands its `ln` is rare for (zeros,
/// negatives, subnormals, infinities, NaN) in vectors of common ones, and zeros for x.
#[test]
fn xlogy_s_split_paths_give_the_bits_of_its_kernel() {
    let rare = [0.0f32, -0.0, -1.0, 1e-40, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX];
    let n = 4099;
    let y: Vec<f32> = (0..n)
        .map(|i| if i % 13 == 3 { rare[(i / 13) % rare.len()] } else { 0.1 + (i as f32 * 0.7).sin().abs() * 50.0 })
        .collect();
    let x: Vec<f32> = (0..n).map(|i| if i % 7 == 2 { 0.0 } else { (i as f32 * 0.3).cos() * 4.0 }).collect();
    let tensor = |v: Vec<f32>| Tensor::from_vec(v, vec![n]).unwrap();
    let run = |a: &Tensor, b: &Tensor| Xlogy.forward(&[a, b]).unwrap().to_vec::<f32>().unwrap();
    let same = |got: Vec<f32>, want: &dyn Fn(usize) -> f32, what: &str| {
        for (i, g) in got.into_iter().enumerate() {
            let w = want(i);
            assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{what} at {i}: {g} against {w}");
        }
    };
    same(run(&tensor(x.clone()), &tensor(y.clone())), &|i| x[i].xlogy(y[i]), "two tensors");
    for a in [0.0f32, 2.5, -1.5] {
        same(
            run(&Tensor::scalar(a as f64, DType::F32), &tensor(y.clone())),
            &|i| a.xlogy(y[i]),
            "a number and a tensor",
        );
    }
    for b in rare.into_iter().chain([0.5, 3.0]) {
        same(
            run(&tensor(x.clone()), &Tensor::scalar(b as f64, DType::F32)),
            &|i| x[i].xlogy(b),
            "a tensor and a number",
        );
    }
}
