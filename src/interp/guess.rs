//! What the verifier guesses when the document does not say: other test points when the
//! default one is outside the function's domain, and values for integer arguments of the top
//! routine. An XAIF file carries the numerical core of a program but not its driver, so a few
//! inputs must be chosen; each choice here is deterministic and is named in the verdict, so a
//! person can repeat it with `--x` or `--arg` and judge it.
//!
//! A guess never relaxes the check: whatever point or arguments are chosen, the transformed
//! program's derivatives are compared with finite differences of the original at that same
//! point with the same tolerance.

use std::fmt::Write as _;

/// How many values of a point a verdict lists before it elides the rest.
const SHOWN_VALUES: usize = 8;

/// Test points to try, in order, when the default `x(i) = i/2` is outside the domain. The
/// default is an arithmetic progression, which makes matrices built from the inputs singular
/// (a determinant of zero, a division by it); these points are irregular, with three
/// decimals so that `--x` repeats them exactly:
/// 1. the default perturbed by up to ±0.2 (its scale kept),
/// 2. values in (0.2, 0.8), inside the domain of `asin`, `acos`, `log(1 - x)`,
/// 3. values in (1, 2).
pub fn fallback_points(n: usize) -> Vec<Vec<f64>> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut uniform = move || {
        // xorshift64: fixed seed, so every run tries the same points.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let round = |v: f64| (v * 1000.0).round() / 1000.0;
    let perturbed: Vec<f64> = (1..=n).map(|i| round(i as f64 / 2.0 + 0.4 * uniform() - 0.2)).collect();
    let unit: Vec<f64> = (0..n).map(|_| round(0.2 + 0.6 * uniform())).collect();
    let above_one: Vec<f64> = (0..n).map(|_| round(1.0 + uniform())).collect();
    vec![perturbed, unit, above_one]
}

/// The verdict's note on a fallback point: the point (as `--x` takes it) and why the default
/// was not used.
pub fn describe_fallback(x: &[f64], why_not_default: &str) -> String {
    let mut out = String::from("at the test point x = ");
    for (k, v) in x.iter().take(SHOWN_VALUES).enumerate() {
        if k > 0 {
            out.push(',');
        }
        let _ = write!(out, "{v}");
    }
    if x.len() > SHOWN_VALUES {
        let _ = write!(out, ",… ({} values)", x.len());
    }
    // The default's verdict advises `--x`; this note is what that advice led to.
    let why = why_not_default.trim_end_matches(" (give other inputs with --x)");
    let _ = write!(out, " chosen by the verifier, since at x(i) = i/2: {why}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_points_are_irregular_and_repeatable() {
        let points = fallback_points(6);
        assert_eq!(points, fallback_points(6));
        assert_eq!(points.len(), 3);
        for x in &points {
            assert_eq!(x.len(), 6);
            // Not an arithmetic progression: consecutive differences are not all equal.
            let steps: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
            assert!(steps.windows(2).any(|s| (s[0] - s[1]).abs() > 1e-3), "{x:?}");
            // Three decimals, so `--x` repeats the point exactly.
            assert!(x.iter().all(|v| ((v * 1000.0).round() / 1000.0 - v).abs() < 1e-12));
        }
        assert!(points[1].iter().all(|v| (0.2..=0.8).contains(v)));
        assert!(points[2].iter().all(|v| (1.0..=2.0).contains(v)));
    }

    #[test]
    fn a_long_point_is_elided_in_the_verdict() {
        let note = describe_fallback(&[0.5; 10], "why");
        assert!(note.contains("0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,… (10 values)"), "{note}");
        assert!(note.ends_with("since at x(i) = i/2: why"), "{note}");
    }
}
