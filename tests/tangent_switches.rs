//! The original engine's propagator switches of the tangent mode, through the binary: `-n`
//! (n-ary Sax), `-H` (propagators as inlinable runtime calls), `-C` (runtime operation
//! counters) and `-Q` (no alias check among a sequence's left-hand sides). Each changes the
//! output as the original did, the output stays schema-valid and verifies numerically, and
//! the adjoint mode takes `-n` and `-Q` and notes that `-H` and `-C` are the tangent's.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

fn xaifbooster() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xaifbooster"))
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn input(example: &str) -> PathBuf {
    shared_dir().join("corpus").join(example).join("tlm.in.xaif")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

/// `tangent SWITCHES` of a corpus example into `dir`; the output's text.
fn tangent(dir: &Path, example: &str, switches: &[&str]) -> (PathBuf, String) {
    let out = dir.join(format!("{example}{}.xaif", switches.concat()));
    let result = xaifbooster()
        .args(["tangent", "-q", "-i", path(&input(example)), "-o", path(&out)])
        .args(switches)
        .output()
        .expect("binary runs");
    assert!(result.status.success(), "{example} {switches:?}: {}", stderr(&result));
    let text = std::fs::read_to_string(&out).expect("output written");
    (out, text)
}

/// `verify --mode tangent` of a transformed example must say OK.
fn assert_verifies(example: &str, transformed: &Path) {
    let result = xaifbooster()
        .args(["verify", "-q", "--mode", "tangent", "--original", path(&input(example))])
        .args(["--transformed", path(transformed)])
        .output()
        .expect("binary runs");
    let text = format!("{}{}", String::from_utf8_lossy(&result.stdout), stderr(&result));
    assert!(result.status.success() && text.contains("verify: OK"), "{}: {text}", transformed.display());
}

/// `validate` accepts the output.
fn assert_valid(transformed: &Path) {
    let result = xaifbooster().args(["validate", "-q", path(transformed)]).output().expect("binary runs");
    assert!(result.status.success(), "{}: {}", transformed.display(), stderr(&result));
}

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

/// The subroutine names of the output's inlinable calls.
fn call_names(text: &str) -> Vec<&str> {
    text.split("subroutine_name=\"").skip(1).filter_map(|rest| rest.split('"').next()).collect()
}

const EXAMPLES: [&str; 5] = ["simple1", "bratu", "arrayAdd", "Loop_simple_12", "RoehFlux"];

#[test]
fn minus_n_makes_one_sax_per_propagated_derivative() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut outputs = Vec::new();
    for example in EXAMPLES {
        let (_, plain) = tangent(dir.path(), example, &[]);
        let (out, nary) = tangent(dir.path(), example, &["-n"]);
        // Unit edges become Sax factors: no IncDeriv, DecDeriv or SetNegDeriv is left, and a
        // SetDeriv only saves an independent's derivative the propagator overwrites.
        for element in ["<xaif:IncDeriv", "<xaif:DecDeriv", "<xaif:SetNegDeriv", "<xaif:Saxpy"] {
            assert_eq!(count(&nary, element), 0, "{example}: {element}");
        }
        assert!(count(&nary, "<xaif:Sax>") > 0, "{example}");
        // Every target gets one entry: never more Sax than before, with more terms each.
        let entries = |t: &str| count(t, "<xaif:Sax>") + count(t, "<xaif:Saxpy>") + count(t, "<xaif:SetDeriv");
        assert!(entries(&nary) <= entries(&plain), "{example}");
        if example == "simple1" {
            // z = x*y: one Sax with both terms.
            assert!(
                nary.split("<xaif:Sax>")
                    .skip(1)
                    .any(|sax| count(sax.split("</xaif:Sax>").next().unwrap(), "<xaif:A>") >= 2)
            );
        }
        outputs.push(out.clone());
        assert_valid(&out);
        assert_verifies(example, &out);
    }
    assert!(xmllint_failures(&outputs).is_empty(), "{:?}", xmllint_failures(&outputs));
}

#[test]
fn minus_capital_h_prints_the_propagators_as_runtime_calls() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut outputs = Vec::new();
    for example in EXAMPLES {
        let (out, text) = tangent(dir.path(), example, &["-H"]);
        assert_eq!(count(&text, "<xaif:DerivativePropagator"), 0, "{example}");
        let names = call_names(&text);
        let runtime = ["setderiv", "set_neg_deriv", "inc_deriv", "dec_deriv", "zero_deriv", "sax", "saxpy"];
        let propagators: Vec<&&str> = names
            .iter()
            .filter(|name| {
                runtime.iter().any(|r| **name == *r || name.strip_prefix(r).is_some_and(|s| s.starts_with("_s")))
            })
            .collect();
        assert!(!propagators.is_empty(), "{example}: {names:?}");
        outputs.push(out.clone());
        assert_valid(&out);
        assert_verifies(example, &out);
    }
    // Scalars: shape-suffixed names, target first (`setderiv_s0_s0(y, x)`), the (a, x) pairs
    // then y for `sax_s0_s0_s0(a, x, y)`.
    let (_, simple) = tangent(dir.path(), "simple1", &["-H"]);
    let names = call_names(&simple);
    assert!(names.iter().any(|n| n.starts_with("sax_s0_s0_s0") || n.starts_with("saxpy_s0_s0_s0")), "{names:?}");
    // Array sections have no shaped routine: the plain name.
    let (_, sections) = tangent(dir.path(), "arrayAdd", &["-H"]);
    assert!(call_names(&sections).contains(&"sax"), "{:?}", call_names(&sections));
    // With -n too: one n-ary call per target.
    let (out, both) = tangent(dir.path(), "simple1", &["-H", "-n"]);
    assert!(call_names(&both).iter().any(|n| n.starts_with("sax_s0_s0_s0_s0_s0")), "{:?}", call_names(&both));
    assert_verifies("simple1", &out);
    outputs.push(out);
    assert!(xmllint_failures(&outputs).is_empty(), "{:?}", xmllint_failures(&outputs));
}

#[test]
fn minus_capital_c_ends_every_basic_block_with_the_operation_counters() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut outputs = Vec::new();
    for example in EXAMPLES {
        let (_, plain) = tangent(dir.path(), example, &[]);
        let (out, counted) = tangent(dir.path(), example, &["-C"]);
        let blocks = count(&plain, "<xaif:BasicBlock ");
        assert!(blocks > 0, "{example}");
        assert_eq!(count(&counted, "subroutine_name=\"countmult\""), blocks, "{example}");
        assert_eq!(count(&counted, "subroutine_name=\"countadd\""), blocks, "{example}");
        // Each is the block's last two statements, countmult first.
        for block in counted.split("<xaif:BasicBlock ").skip(1) {
            let block = block.split("</xaif:BasicBlock>").next().unwrap();
            let calls = call_names(block);
            assert_eq!(&calls[calls.len() - 2..], ["countmult", "countadd"], "{example}");
        }
        outputs.push(out.clone());
        assert_valid(&out);
        assert_verifies(example, &out);
    }
    // RoehFlux's accumulation multiplies: some block counts a nonzero number.
    let (_, roe) = tangent(dir.path(), "RoehFlux", &["-C"]);
    let counts: Vec<&str> = roe
        .split("subroutine_name=\"countmult\"")
        .skip(1)
        .filter_map(|rest| rest.split("value=\"").nth(1)?.split('"').next())
        .collect();
    assert!(counts.iter().any(|c| *c != "0"), "{counts:?}");
    assert!(xmllint_failures(&outputs).is_empty(), "{:?}", xmllint_failures(&outputs));
}

#[test]
fn minus_capital_q_lets_left_hand_sides_that_may_alias_share_a_sequence() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut outputs = Vec::new();
    let mut fewer = 0;
    for example in EXAMPLES {
        let (_, plain) = tangent(dir.path(), example, &[]);
        let (out, merged) = tangent(dir.path(), example, &["-Q"]);
        let propagators = |t: &str| count(t, "<xaif:DerivativePropagator");
        assert!(propagators(&merged) <= propagators(&plain), "{example}");
        if propagators(&merged) < propagators(&plain) {
            fewer += 1;
        }
        outputs.push(out.clone());
        assert_valid(&out);
        assert_verifies(example, &out);
    }
    // Loop_simple_12 assigns elements under different subscripts in one block.
    assert!(fewer >= 1, "-Q merged no sequences");
    assert!(xmllint_failures(&outputs).is_empty(), "{:?}", xmllint_failures(&outputs));
}

#[test]
fn the_adjoint_takes_minus_n_and_minus_capital_q_and_notes_the_tangent_only_switches() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("adjoint.xaif");
    let plain = dir.path().join("plain.xaif");
    let example = input("simple1");
    let result = xaifbooster().args(["adjoint", "-i", path(&example), "-o", path(&plain)]).output().expect("runs");
    assert!(result.status.success(), "{}", stderr(&result));
    let result = xaifbooster()
        .args(["adjoint", "-n", "-Q", "-H", "-C", "-i", path(&example), "-o", path(&out)])
        .output()
        .expect("binary runs");
    assert!(result.status.success(), "{}", stderr(&result));
    let notes = stderr(&result);
    assert_eq!(notes.lines().count(), 2, "{notes}");
    assert!(notes.contains("-H") && notes.contains("-C") && notes.contains("tangent mode only"), "{notes}");
    let text = std::fs::read_to_string(&out).expect("written");
    assert!(!call_names(&text).iter().any(|n| n.starts_with("count") || n.starts_with("sax_")), "{text}");
    let result = xaifbooster()
        .args(["verify", "-q", "--mode", "adjoint", "--original", path(&example), "--transformed", path(&out)])
        .output()
        .expect("binary runs");
    let text = format!("{}{}", String::from_utf8_lossy(&result.stdout), stderr(&result));
    assert!(result.status.success() && text.contains("verify: OK"), "{text}");
}
