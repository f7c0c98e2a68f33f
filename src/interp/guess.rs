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

use super::lower::Program;
use super::verify::{ArgValue, Driver, DriverConfig, Sweep};

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

/// The values tried for integer arguments, in order. Integer arguments of a top routine are
/// sizes, counts and indices: a value above one exercises loops and neighbouring elements,
/// and a small one keeps the run short and inside the arrays the program declares.
const INTEGER_CANDIDATES: [i64; 4] = [4, 3, 2, 1];

/// The largest element count tried for an array argument declared without bounds.
const MAX_COUNT: usize = 64;

/// The largest extent tried for a local array whose allocation the XAIF leaves out.
const MAX_EXTENT: usize = 16;

/// The values tried for what the passive stores the XAIF leaves out put in, in order: they
/// are mostly indices and sizes, and the least that runs stays inside the arrays.
const PASSIVE_STORE_CANDIDATES: [i64; 4] = [1, 2, 3, 4];

/// What the driver needs and the document does not say.
#[derive(Clone, Debug, Default)]
pub struct Unknowns {
    /// `(position, name)` of each integer scalar argument without a given value.
    pub integers: Vec<(u32, String)>,
    /// `(position, name)` of each input or output vector declared without bounds.
    pub arrays: Vec<(u32, String)>,
    /// Local and module arrays declared without bounds (allocatable or automatic): the front end drops
    /// `allocate`, a passive call, so their size may be nowhere in the document.
    pub locals: Vec<String>,
    /// The variables set by passive stores the XAIF leaves out as Markers
    /// ([`super::lower::PassiveStore`]): without them such a variable keeps its initial
    /// value, often an index of 0.
    pub passive_stores: Vec<String>,
    /// The routines without code the program calls.
    pub black_boxes: Vec<String>,
}

impl Unknowns {
    /// What `prog` leaves unknown whatever its driver: its left-out stores and its routines
    /// without code.
    pub fn of_program(prog: &Program) -> Unknowns {
        let mut passive_stores: Vec<String> =
            prog.passive_stores().into_iter().flat_map(|(_, _, names)| names).collect();
        passive_stores.sort();
        passive_stores.dedup();
        Unknowns {
            locals: unshaped_locals(prog),
            passive_stores,
            black_boxes: prog.called_without_code(),
            ..Unknowns::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.integers.is_empty()
            && self.arrays.is_empty()
            && self.locals.is_empty()
            && self.passive_stores.is_empty()
            && self.black_boxes.is_empty()
    }
}

/// The local and module arrays of `prog` declared without bounds, formals (which take their
/// actual's shape) excepted.
pub fn unshaped_locals(prog: &Program) -> Vec<String> {
    let formals: std::collections::HashSet<_> =
        prog.routines.iter().flat_map(|r| r.formals.iter().map(|&(_, sym)| sym.into_raw().into_u32())).collect();
    prog.syms
        .iter()
        .enumerate()
        .filter(|(k, info)| info.rank > 0 && info.bounds.is_none() && !formals.contains(&(*k as u32)))
        .map(|(_, info)| info.name.clone())
        .collect()
}

/// Completes `driver` with guesses for `unknowns` and returns them, worded for the verdict.
///
/// Every integer argument gets the same value, the first of `INTEGER_CANDIDATES` with which
/// the original program runs at the default point; with it, every vector argument without
/// bounds gets the same element count, the smallest (up to `MAX_COUNT`) with which it runs:
/// the least the program indexes. Local arrays without bounds get an extent only if the
/// program cannot run without one, again the smallest that runs (up to `MAX_EXTENT`). Only
/// if nothing runs without them do the passive stores left out as Markers get a value (the
/// first of `PASSIVE_STORE_CANDIDATES`) and routines without code run as black boxes. If no
/// guess runs but one stops at a construct the executor does not support, that guess is
/// kept, so that the verdict names the construct rather than the guess.
pub fn complete_driver(prog: &Program, driver: &mut DriverConfig, unknowns: &Unknowns) -> Result<Vec<String>, String> {
    let values: &[i64] = if unknowns.integers.is_empty() { &[0] } else { &INTEGER_CANDIDATES };
    let counts = if unknowns.arrays.is_empty() { 0..=0 } else { 1..=MAX_COUNT };
    let extents: Vec<Option<usize>> = if unknowns.locals.is_empty() {
        vec![None]
    } else {
        std::iter::once(None).chain((1..=MAX_EXTENT).map(Some)).collect()
    };
    // Black boxes and left-out stores are tried last, outermost: a program that runs
    // without them gets the same guesses as if it had none.
    let black_boxes: &[bool] = if unknowns.black_boxes.is_empty() { &[false] } else { &[false, true] };
    let stores: Vec<Option<i64>> = if unknowns.passive_stores.is_empty() {
        vec![None]
    } else {
        std::iter::once(None).chain(PASSIVE_STORE_CANDIDATES.iter().copied().map(Some)).collect()
    };
    let guesses = black_boxes.iter().flat_map(|&black_box| {
        let (stores, extents, counts) = (&stores, &extents, &counts);
        stores.iter().flat_map(move |&store| {
            values.iter().flat_map(move |&value| {
                counts.clone().flat_map(move |count| {
                    extents.iter().map(move |&extent| Guess { value, count, extent, store, black_box })
                })
            })
        })
    });
    let mut last_failure = String::new();
    let mut stopped: Option<(DriverConfig, Vec<String>, bool)> = None;
    for guess in guesses {
        let mut trial = driver.clone();
        for (position, _) in &unknowns.integers {
            trial.fixed_args.push((*position, ArgValue::Int(guess.value)));
        }
        trial.counts.extend(unknowns.arrays.iter().map(|(position, _)| (*position, guess.count)));
        trial.local_extent = guess.extent;
        if !unknowns.passive_stores.is_empty() {
            trial.passive_store_value = guess.store;
        }
        if !unknowns.black_boxes.is_empty() {
            trial.black_boxes = guess.black_box;
        }
        let outcome = Driver::new(prog, &trial).and_then(|d| d.run(&d.default_x(), Sweep::Plain));
        match outcome {
            Ok(_) => {
                *driver = trial;
                return Ok(describe(unknowns, &guess));
            }
            Err(e) if e.is_unsupported() => {
                // A stop at an array the guess left unsized says less than a stop past it:
                // the later construct is what the verdict should name.
                let unsized_array = e.reason().contains("without a declared shape");
                if stopped.as_ref().is_none_or(|(_, _, earlier)| *earlier && !unsized_array) {
                    let mut notes = describe(unknowns, &guess);
                    if !notes.is_empty() {
                        notes.push("unchecked guesses: the original program stops at a construct the executor does not support".to_owned());
                    }
                    stopped = Some((trial, notes, unsized_array));
                }
            }
            Err(e) => last_failure = e.reason(),
        }
    }
    match stopped {
        Some((trial, notes, _)) => {
            *driver = trial;
            Ok(notes)
        }
        // Sizes of local arrays alone are no reason to refuse the driver: the verdict names
        // what the original program runs into without them.
        None if unknowns.integers.is_empty() && unknowns.arrays.is_empty() => Ok(Vec::new()),
        None => Err(format!("the original program fails with every value tried ({last_failure})")),
    }
}

/// One combination of guesses [`complete_driver`] tries.
struct Guess {
    value: i64,
    count: usize,
    extent: Option<usize>,
    store: Option<i64>,
    black_box: bool,
}

/// The verdict's notes on the guesses made.
fn describe(unknowns: &Unknowns, guess: &Guess) -> Vec<String> {
    let &Guess { value, count, extent, store, black_box } = guess;
    let mut notes = Vec::new();
    if !unknowns.integers.is_empty() {
        let names: Vec<String> =
            unknowns.integers.iter().map(|(p, name)| format!("{name} (argument {p}) = {value}")).collect();
        let tried: Vec<String> = INTEGER_CANDIDATES.iter().map(i64::to_string).collect();
        notes.push(format!(
            "{} guessed: the first of {} given to every integer argument with which the original program runs",
            names.join(", "),
            tried.join(", ")
        ));
    }
    let arrays: Vec<&str> = unknowns.arrays.iter().map(|(_, name)| name.as_str()).collect();
    if !arrays.is_empty() {
        notes.push(format!(
            "{count} elements of {} guessed: the fewest with which the original program runs",
            arrays.join(" and ")
        ));
    }
    if let Some(extent) = extent {
        notes.push(format!(
            "extent {extent} in every dimension of the arrays declared without bounds ({}) guessed: the XAIF leaves their allocation out, and it is the least with which the original program runs",
            unknowns.locals.join(", ")
        ));
    }
    if let Some(store) = store {
        let tried: Vec<String> = PASSIVE_STORE_CANDIDATES.iter().map(i64::to_string).collect();
        notes.push(format!(
            "{} = {store} (in every element) guessed for the passive stores the XAIF leaves out as Markers: the first of {} with which the original program runs",
            unknowns.passive_stores.join(", "),
            tried.join(", ")
        ));
    }
    if black_box {
        let (names, has) = match unknowns.black_boxes.as_slice() {
            [one] => (one.clone(), "has"),
            many => (many.join(", "), "have"),
        };
        notes.push(format!(
            "calls of {names}, which {has} no code in the XAIF, run as black boxes that change nothing: the transformations assume an external routine has no effect on derivatives"
        ));
    }
    notes
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
