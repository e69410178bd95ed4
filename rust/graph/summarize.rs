//! TF's `Tensor::SummarizeValue`: the text `tf.Print` and `tf.Assert` show for a tensor.
//! Elements are separated by spaces, every dimension but the first is bracketed, at most
//! `max_entries` elements are shown (all when negative) and "..." marks what was left out.
//! Floats are written as C's `%g` with 6 significant digits (15 for doubles), or 9 (17)
//! when that does not read back as the same number; bools as 1 and 0.

use crate::dtype::DType;
use crate::tensor::Tensor;

/// TF's `SummarizeValue(max_entries)` of `t`.
pub fn summarize_value(t: &Tensor, max_entries: i64) -> String {
    let elements = element_strings(t, max_entries);
    let num_elts = t.numel();
    let limit = if max_entries < 0 { num_elts } else { num_elts.min(max_entries as usize) };
    // TF's bool case shows nothing at all, not "...", when no element is shown.
    if limit == 0 && t.dtype() == DType::Bool {
        return String::new();
    }
    let mut out = String::new();
    if t.rank() == 0 {
        out.push_str(&elements[..limit].join(" "));
    } else {
        let mut next = 0;
        print_one_dim(0, t.shape(), limit, &elements, &mut next, &mut out);
    }
    if num_elts > limit {
        out.push_str("...");
    }
    out
}

/// TF's `PrintOneDim`: dimension `dim` of the elements from `*next` on.
fn print_one_dim(dim: usize, shape: &[usize], limit: usize, elements: &[String], next: &mut usize, out: &mut String) {
    if *next >= limit {
        return;
    }
    if dim == shape.len() - 1 {
        for i in 0..shape[dim] {
            if *next >= limit {
                if dim != 0 {
                    out.push_str("...");
                }
                return;
            }
            if i > 0 {
                out.push(' ');
            }
            out.push_str(&elements[*next]);
            *next += 1;
        }
        return;
    }
    for _ in 0..shape[dim] {
        let opened = *next < limit;
        if opened {
            out.push('[');
        }
        print_one_dim(dim + 1, shape, limit, elements, next, out);
        if *next < limit || opened {
            out.push(']');
        }
    }
}

/// The first `max_entries` elements (all when negative), each written as TF writes it.
fn element_strings(t: &Tensor, max_entries: i64) -> Vec<String> {
    let n = if max_entries < 0 { t.numel() } else { t.numel().min(max_entries as usize) };
    let strings = match t.dtype() {
        DType::F32 => t.to_vec::<f32>().map(|v| v.iter().take(n).map(|&x| float_string(x)).collect()),
        DType::F64 => t.to_vec::<f64>().map(|v| v.iter().take(n).map(|&x| double_string(x)).collect()),
        DType::I64 => t.to_vec::<i64>().map(|v| v.iter().take(n).map(i64::to_string).collect()),
        DType::I32 => t.to_vec::<i32>().map(|v| v.iter().take(n).map(i32::to_string).collect()),
        DType::U8 => t.to_vec::<u8>().map(|v| v.iter().take(n).map(u8::to_string).collect()),
        DType::Bool => t.to_vec::<bool>().map(|v| v.iter().take(n).map(|&b| u8::from(b).to_string()).collect()),
    };
    // invariant: each arm reads the element type of its own dtype, which cannot fail.
    strings.unwrap_or_default()
}

/// TF's `FloatToBuffer`: `%.6g`, or `%.9g` when that does not read back as `x`.
pub fn float_string(x: f32) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    let short = format_g(f64::from(x), 6);
    if short.parse::<f32>().ok() == Some(x) {
        short
    } else {
        format_g(f64::from(x), 9)
    }
}

/// TF's `DoubleToBuffer`: `%.15g`, or `%.17g` when that does not read back as `x`.
pub fn double_string(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    let short = format_g(x, 15);
    if short.parse::<f64>().ok() == Some(x) {
        short
    } else {
        format_g(x, 17)
    }
}

/// C's `printf("%.{precision}g", x)` for a number that is not NaN.
pub fn format_g(x: f64, precision: usize) -> String {
    if x.is_infinite() {
        return if x < 0.0 { "-inf".into() } else { "inf".into() };
    }
    let precision = precision.max(1);
    // The exponent after rounding to `precision` digits decides the style, as C's %g does.
    let scientific = format!("{:.*e}", precision - 1, x);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= precision as i64 {
        let mantissa = strip_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (precision as i64 - 1 - exponent).max(0) as usize;
        strip_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

/// Drops trailing zeros after a decimal point, and the point when nothing follows it.
fn strip_zeros(s: &str) -> &str {
    if !s.contains('.') {
        return s;
    }
    s.trim_end_matches('0').trim_end_matches('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_g_matches_c() {
        let cases: [(f64, usize, &str); 12] = [
            (0.5, 6, "0.5"),
            (1e-7, 6, "1e-07"),
            (123456789.0, 6, "1.23457e+08"),
            (123456792.0, 9, "123456792"),
            (1e20, 6, "1e+20"),
            (0.0, 6, "0"),
            (-2.0, 6, "-2"),
            (0.0001, 6, "0.0001"),
            (0.00001, 6, "1e-05"),
            (999999.5, 6, "1e+06"),
            (1.0 / 3.0, 17, "0.33333333333333331"),
            (100.0, 3, "100"),
        ];
        for (x, p, want) in cases {
            assert_eq!(format_g(x, p), want, "{x} %.{p}g");
        }
        assert_eq!(float_string(1.0 / 3.0), "0.333333343");
        assert_eq!(float_string(0.1), "0.1");
        assert_eq!(double_string(0.1), "0.1");
    }

    #[test]
    fn nested_dims_are_bracketed_and_cut_after_the_limit() {
        let t = Tensor::from_vec((0..6).collect::<Vec<i64>>(), vec![2, 3]).unwrap();
        assert_eq!(summarize_value(&t, 3), "[0 1 2]...");
        assert_eq!(summarize_value(&t, 2), "[0 1...]...");
        assert_eq!(summarize_value(&t, -1), "[0 1 2][3 4 5]");
        let empty = Tensor::from_vec(Vec::<f32>::new(), vec![0, 3]).unwrap();
        assert_eq!(summarize_value(&empty, 3), "");
    }
}
