//! The tests of `activation.rs`: each activation from its number, the split loops' bits against the
//! plain scalar forms, and the slopes against central differences.

use super::*;

/// One of each activation, `Hardtanh` (which has kinks) last.
const EVERY_ACT: [Act; 9] = [
    Act::Silu,
    Act::Selu,
    Act::LogSigmoid,
    Act::Gelu,
    Act::GeluTanh,
    Act::LeakyRelu { slope: 0.1 },
    Act::Elu { alpha: 1.3 },
    Act::Softplus { beta: 2.0, threshold: 20.0 },
    Act::Hardtanh { min: -0.5, max: 6.0 },
];

#[test]
fn each_activation_comes_back_from_its_number() {
    for act in EVERY_ACT {
        let (number, a, b) = act.number();
        assert_eq!(numbered(number, a, b), act);
        let x: Vec<f32> = (0..5000).map(|i| (i as f32 - 2500.0) / 400.0).collect();
        let plain: Vec<f32> = x.iter().map(|&v| act.value(v)).collect();
        assert_eq!(values(act, &x), plain, "{act:?}");
    }
}

/// Values, slopes times a gradient, and slopes times a single gradient over float32 inputs
/// whose every 11th element is an argument one of the split functions is rare for: each
/// loop's bits must be the plain scalar form's.
#[test]
fn split_loops_give_the_bits_of_the_plain_activations() {
    let rare = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1e-40,
        -1e-40,
        44.5,
        -44.5,
        89.0,
        -89.0,
        104.0,
        -104.0,
        15.0,
        -15.0,
        300.0,
        -300.0,
        20.5,
    ];
    let n = 2 * crate::kernels::PARALLEL_MIN_ELEMENTS + 21;
    let x: Vec<f32> =
        (0..n).map(|i| if i % 11 == 5 { rare[(i / 11) % rare.len()] } else { (i as f32 * 0.37).sin() * 6.0 }).collect();
    let g: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
    let same_bits = |got: &[f32], want: &[f32], what: &str| {
        assert_eq!(got.len(), want.len(), "{what}");
        let differs = got.iter().zip(want).position(|(a, b)| a.to_bits() != b.to_bits());
        assert!(differs.is_none(), "{what}: at x = {}", x[differs.unwrap_or(0)]);
    };
    let shape = [n];
    let operand = |data| Operand { data, strides: &[1], offset: 0, dense: true };
    let single = Operand { data: &g[..1], strides: &[0], offset: 0, dense: false };
    let more = [Act::Softplus { beta: 0.5, threshold: 20.0 }, Act::Softplus { beta: 30.0, threshold: 5.0 }];
    for act in EVERY_ACT.into_iter().chain(more) {
        let plain: Vec<f32> = x.iter().map(|&v| act.value(v)).collect();
        same_bits(&values(act, &x), &plain, &format!("{act:?} values"));
        let plain: Vec<f32> = x.iter().zip(&g).map(|(&v, &gv)| gv * act.slope(v)).collect();
        let got = grad_times_slope(act, &shape, &operand(&g), &operand(&x));
        same_bits(&got, &plain, &format!("{act:?} slopes"));
        let plain: Vec<f32> = x.iter().map(|&v| g[0] * act.slope(v)).collect();
        let got = grad_times_slope(act, &shape, &single, &operand(&x));
        same_bits(&got, &plain, &format!("{act:?} slopes with a single gradient"));
    }
}

#[test]
fn slopes_match_central_differences() {
    for act in &EVERY_ACT[..8] {
        let act = *act;
        for &x in &[-3.1, -0.7, 0.3, 1.9] {
            let h = 1e-6;
            let numeric = (act.value(x + h) - act.value(x - h)) / (2.0 * h);
            assert!((numeric - act.slope(x)).abs() < 1e-6, "{act:?} at {x}: {numeric} vs {}", act.slope(x));
        }
    }
}
