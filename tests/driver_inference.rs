//! `run` and `verify` through the real binary, on how they call the top routine: without
//! driver flags the driver is inferred from the routine's interface and printed; a zero
//! Jacobian or an independent that reaches no dependent is warned about; `--entry` that names
//! nothing lists the routines; a run-time failure is located at its statement or vertex with
//! the source line; every line of `testdata/drivers.txt` works as flags.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

fn xaifbooster(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xaifbooster")).args(args).output().expect("binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn corpus(example: &str, file: &str) -> String {
    let path: PathBuf = common::shared_dir().join("corpus").join(example).join(file);
    path.to_str().expect("UTF-8 path").to_owned()
}

fn verify_tangent(example: &str, flags: &[&str]) -> Output {
    let (original, transformed) = (corpus(example, "tlm.in.xaif"), corpus(example, "tlm.ref.xaif"));
    let mut args = vec!["verify", "--original", &original, "--transformed", &transformed, "--mode", "tangent"];
    args.extend(flags);
    xaifbooster(&args)
}

/// `F(i, j)` of the regression driver's ad.out.
fn ad_out(example: &str, n: usize, m: usize) -> Vec<f64> {
    common::ad_out(&common::shared_dir().join("corpus").join(example), n, m).expect("ad.out")
}

/// The `derivative code` column of verify's table, row-major.
fn table_jacobian(stdout: &str) -> Vec<(usize, usize, f64)> {
    stdout
        .lines()
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            match words.as_slice() {
                [i, j, ad, _, _, ..] => Some((i.parse().ok()?, j.parse().ok()?, ad.parse().ok()?)),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn simple2_is_inferred_as_two_by_two_and_matches_the_regression_driver() {
    let output = verify_tangent("simple2", &[]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "driver inferred from head__24's interface: independents X1_1 (argument 1), X2_2 (argument 2); \
dependents Y1_3 (argument 3), Y2_4 (argument 4) (as --inputs 1,2 --outputs 3,4)"
        ),
        "{stderr}"
    );
    assert!(stdout.contains("verify: OK 2x2 jacobian"), "{stdout}");
    // At OpenAD's test point the Jacobian is the regression driver's.
    let at_driver_point = verify_tangent("simple2", &["--x", "1.0,2.0"]);
    let entries = table_jacobian(&text(&at_driver_point.stdout));
    assert_eq!(entries.len(), 4);
    let reference = ad_out("simple2", 2, 2);
    for (i, j, ad) in entries {
        let r = reference[(i - 1) * 2 + (j - 1)];
        assert!((ad - r).abs() <= 1e-9 * r.abs().max(1.0), "F({i},{j}) = {ad}, ad.out {r}");
    }
    // Explicit flags are taken as they are, with no note.
    let explicit = verify_tangent("simple2", &["--inputs", "1", "--outputs", "3"]);
    assert!(text(&explicit.stdout).contains("verify: OK 1x1"), "{}", text(&explicit.stdout));
    assert!(!text(&explicit.stderr).contains("driver inferred"));
    // Adjoint outputs (replacement lists: no side-effect lists, intents made inout) are driven
    // alike, from what their original code reads and writes; run prints the 2x2 Jacobian.
    let run = xaifbooster(&["run", &corpus("simple2", "adm-joint.ref.xaif"), "--x", "1.0,2.0"]);
    let (stdout, stderr) = (text(&run.stdout), text(&run.stderr));
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("(as --inputs 1,2 --outputs 3,4)"), "{stderr}");
    assert!(stdout.starts_with("head__24: 2 inputs, 2 outputs\n"), "{stdout}");
    let reference = ad_out("simple2", 2, 2);
    for (i, j) in [(1, 1), (1, 2), (2, 1), (2, 2)] {
        let line = stdout.lines().find(|l| l.starts_with(&format!("dy({i})/dx({j}) = "))).expect("entry printed");
        let value: f64 = line.rsplit(' ').next().unwrap().parse().expect("number");
        let r = reference[(i - 1) * 2 + (j - 1)];
        assert!((value - r).abs() <= 1e-9 * r.abs().max(1.0), "dy({i})/dx({j}) = {value}, ad.out {r}");
    }
    // -q silences the note.
    assert!(!text(&verify_tangent("simple2", &["-q"]).stderr).contains("driver inferred"));
}

#[test]
fn a_zero_jacobian_is_warned_about() {
    // Loop_simple_10's Jacobian is 9 in OpenAD (ad.out), but its XAIF leaves the stores that
    // fill the array it multiplies by out as Markers: here it is zero, and the warning says why.
    let output = verify_tangent("Loop_simple_10", &[]);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("independents X_1 (argument 1); dependents Y_2 (argument 2)"),
        "the driver is the regression driver's head(x, y): {stderr}"
    );
    assert!(
        stderr.contains(
            "warning: the 1x1 Jacobian is entirely zero: no independent reaches a dependent at this point \
(the XAIF leaves 2 passive stores out as Markers"
        ),
        "{stderr}"
    );
    // And through run on the tangent output.
    let run = xaifbooster(&["run", &corpus("Loop_simple_10", "tlm.ref.xaif")]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(text(&run.stderr).contains("Jacobian is entirely zero"), "{}", text(&run.stderr));
    // A Jacobian that is not zero raises no warning.
    assert!(!text(&verify_tangent("simple2", &[]).stderr).contains("warning"));
}

#[test]
fn an_independent_that_reaches_no_dependent_is_warned_about() {
    // bratu's f is intent(inout) and read before it is written: inferred as an independent
    // too, but its first element is overwritten before it is used.
    let output = verify_tangent("bratu", &[]);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("independents X_1 (argument 1), F_2 (argument 2); dependents F_2 (argument 2)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "warning: independent x(10) = F_2(1) reaches no dependent at this point (its column of the Jacobian is zero)"
        ),
        "{stderr}"
    );
}

#[test]
fn globals_are_inferred_when_no_formal_is_active() {
    let output = verify_tangent("globalActive_4", &[]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(stderr.contains("independents X_23 (global); dependents Y_24 (global)"), "{stderr}");
    assert!(stdout.contains("verify: OK 1x2"), "{stdout}");
}

/// Integer arguments (here the grid's sizes) and the vectors whose bounds depend on them are
/// guessed by running the original; the verdict names the values and why.
#[test]
fn integer_arguments_and_unbounded_vectors_are_guessed_and_named() {
    let output = verify_tangent("dfdcfj_MemOps", &[]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("verify: OK 16x16 jacobian"), "{stdout}");
    assert!(
        stdout.contains(
            "; NX_1 (argument 1) = 4, NY_2 (argument 2) = 4 guessed: the first of 4, 3, 2, 1 given to every \
integer argument with which the original program runs; 16 elements of X_5 and FVEC_6 guessed: the fewest with \
which the original program runs"
        ),
        "{stdout}"
    );
    assert!(stderr.contains("NX_1 (argument 1) = 4"), "{stderr}");
    // What the user gives is not guessed.
    let output = verify_tangent("dfdcfj_MemOps", &["--arg", "1=3", "--arg", "2=2", "--n", "6", "--m", "6"]);
    let stdout = text(&output.stdout);
    assert!(stdout.contains("verify: OK 6x6 jacobian"), "{stdout}");
    assert!(!stdout.contains("guessed"), "{stdout}");
}

#[test]
fn an_entry_that_matches_nothing_lists_the_routines() {
    for command in ["run", "verify"] {
        let file = corpus("Loop_simple_10", "tlm.in.xaif");
        let output = if command == "run" {
            xaifbooster(&["run", &file, "--entry", "nosuch"])
        } else {
            verify_tangent("Loop_simple_10", &["--entry", "nosuch"])
        };
        assert_eq!(output.status.code(), Some(1), "{command}");
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains(
                "no routine named nosuch; the routines are: oad_intrinsics__20 (no code), all_globals_mod__22 (no code), foo__24, head__29"
            ),
            "{command}: {stderr}"
        );
    }
    // With explicit driver flags too.
    let output = xaifbooster(&["run", &corpus("simple2", "tlm.in.xaif"), "--entry", "nosuch", "--inputs", "1"]);
    assert!(text(&output.stderr).contains("the routines are: "), "{}", text(&output.stderr));
}

#[test]
fn run_time_failures_are_located_with_their_source_line() {
    // RoehFlux with only its first argument as input: a NaN reaches a branch condition.
    let file = corpus("RoehFlux", "tlm.in.xaif");
    let flags = ["--entry", "ad_roehf5", "--inputs", "1", "--outputs", "2"];
    let run = xaifbooster(&[&["run", file.as_str()][..], &flags[..]].concat());
    assert_eq!(run.status.code(), Some(1));
    let expected = format!(
        "{file}:2002:5: Branch: comparison with NaN (at routine ad_roehf5__24, vertex '116') (source line 174)"
    );
    assert_eq!(text(&run.stderr).trim_end(), expected);
    // verify names the same place (the original fails).
    let verify = verify_tangent("RoehFlux", &flags);
    assert_eq!(verify.status.code(), Some(1));
    assert!(text(&verify.stderr).contains(&format!("{file}:2002:5: Branch: ")), "{}", text(&verify.stderr));
    assert!(text(&verify.stderr).contains("(source line 174)"), "{}", text(&verify.stderr));
    // A failing statement: its element, statement id and source line (an explicit driver
    // guesses no value for the store the XAIF leaves out, so the index stays 0).
    let int_max = corpus("intMaxVal", "tlm.in.xaif");
    let run = xaifbooster(&["run", &int_max, "--inputs", "1", "--outputs", "2"]);
    assert_eq!(run.status.code(), Some(1));
    let stderr = text(&run.stderr);
    let last = stderr.lines().last().unwrap_or("");
    assert_eq!(
        last,
        format!(
            "{int_max}:197:7: Assignment: index 0 of dimension 1 of X_1 out of bounds 1:2 (at routine head__24, vertex '8', statement '36') (source line 22)"
        )
    );
}

#[test]
fn every_line_of_drivers_txt_works_as_flags() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/drivers.txt");
    let lines: Vec<String> = std::fs::read_to_string(path)
        .expect("drivers.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    assert!(lines.len() >= 16);
    let mut failures = Vec::new();
    for line in &lines {
        let mut words = line.split_whitespace();
        let example = words.next().expect("example name");
        let flags: Vec<&str> = words.collect();
        let params = common::params(&common::shared_dir().join("corpus").join(example));
        for (mode, input, output) in
            [("tangent", "tlm.in.xaif", "tlm.ref.xaif"), ("adjoint", "adm.in.xaif", "adm-joint.ref.xaif")]
        {
            let (original, transformed) = (corpus(example, input), corpus(example, output));
            let mut args = vec!["verify", "--original", &original, "--transformed", &transformed, "--mode", mode];
            args.extend(&flags);
            let result = xaifbooster(&args);
            let stdout = text(&result.stdout);
            // The regression driver's Jacobian size (params.conf).
            let wanted = format!("verify: OK {}x{} jacobian", params.m, params.n);
            if !result.status.success() || !stdout.contains(&wanted) {
                failures.push(format!(
                    "{example} ({mode}): wanted {wanted}: {}{}",
                    stdout.lines().last().unwrap_or(""),
                    text(&result.stderr)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn batch_verify_infers_the_driver_as_verify_does() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input_dir = dir.path().join("in").join("simple2");
    std::fs::create_dir_all(&input_dir).expect("dir");
    std::fs::copy(corpus("simple2", "tlm.in.xaif"), input_dir.join("tlm.in.xaif")).expect("copy");
    let (out, report) = (dir.path().join("out"), dir.path().join("report.json"));
    let input_root = dir.path().join("in");
    let args = [
        "batch",
        "tangent",
        "--verify",
        input_root.to_str().unwrap(),
        "--out-dir",
        out.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ];
    let output = xaifbooster(&args);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("JSON");
    let detail = report["files"][0]["verify"]["detail"].as_str().expect("detail").to_owned();
    assert!(detail.starts_with("verify: OK 2x2 jacobian"), "{detail}");
}

/// A program that cannot run from its XAIF alone (an index set by a passive store the front
/// end left out, a call of a routine without code) verifies through the binary with both
/// choices named, repeatable as flags; a broken partial under those choices is still found.
#[test]
fn left_out_stores_and_routines_without_code_are_guessed_and_named() {
    let original = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/interp/passive_store.xaif");
    let dir = tempfile::tempdir().expect("temp dir");
    let tangent = dir.path().join("tangent.xaif");
    let tangent = tangent.to_str().expect("UTF-8 path");
    let made = xaifbooster(&["tangent", "-i", original, "-o", tangent]);
    assert!(made.status.success(), "{}", text(&made.stderr));
    let verify = |transformed: &str, flags: &[&str]| {
        let mut args = vec!["verify", "--original", original, "--transformed", transformed, "--mode", "tangent"];
        args.extend(flags);
        xaifbooster(&args)
    };
    let output = verify(tangent, &[]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("verify: OK 2x2 jacobian"), "{stdout}");
    assert!(stdout.contains("K = 1 (in every element) guessed for the passive stores"), "{stdout}");
    assert!(stdout.contains("calls of ext__9, which has no code in the XAIF, run as black boxes"), "{stdout}");
    assert!(stderr.contains("(as --inputs 1 --outputs 2 --passive-stores 1 --black-boxes)"), "{stderr}");
    // The flags repeat the run; another value is another program: dy(1)/dx(2) = 2 x(2) = 2.
    let output = verify(tangent, &["--inputs", "1", "--outputs", "2", "--passive-stores", "2", "--black-boxes"]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(table_jacobian(&stdout).iter().any(|&(i, j, v)| (i, j) == (1, 2) && (v - 2.0).abs() < 1e-12), "{stdout}");
    // Without them an explicit driver says what is missing and which flag supplies it.
    let output = verify(tangent, &["--inputs", "1", "--outputs", "2"]);
    assert!(!output.status.success());
    assert!(text(&output.stdout).contains("--black-boxes runs it as a black box"), "{}", text(&output.stdout));
    // A wrong partial (cos -> sin) is a mismatch whatever was guessed.
    let broken = dir.path().join("broken.xaif");
    let source = std::fs::read_to_string(tangent).expect("tangent output");
    assert_eq!(source.matches("cos_scal").count(), 1, "one partial of sin");
    std::fs::write(&broken, source.replace("cos_scal", "sin_scal")).expect("write");
    let output = verify(broken.to_str().expect("UTF-8 path"), &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stdout).contains("verify: MISMATCH"), "{}", text(&output.stdout));
}
