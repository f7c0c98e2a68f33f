//! The checks beside the transformation give exactly what checking first gives: the same
//! findings, the same output or none. From `driver::THREADS_FROM` of input on (with
//! `Options::threads`, as the command line runs), the driver runs the validator's checks on a
//! thread of their own while it reads (on another thread), transforms and writes routines
//! without waiting for them, and keeps the output only once they have passed everything;
//! below it, it checks first.
//!
//! Small inputs are held to it through `driver::stream` with the checks' `Progress` as the
//! gate, as the driver runs it beside; and through `driver::run` itself once padded past the
//! threshold. A large synthetic input, valid and broken halfway, goes through `driver::run` with
//! and without threads and through the binary.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use xaifbooster::driver::stream::{self, Concurrency, StreamError};
use xaifbooster::driver::{self, Failure, Mode};
use xaifbooster::pipeline::Config;
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::validate::{
    Progress, ValidateOptions, validate_without_reader, validate_without_reader_progressively,
};
use xaifbooster::xaif::{Diagnostic, ReadOptions, Severity, WriteOptions};

const MODES: [Mode; 4] = [Mode::Identity, Mode::Tangent, Mode::Adjoint, Mode::Trace];

/// The checks the driver runs (those that need no reader; lenient).
const CHECKS: ValidateOptions = ValidateOptions { strict: false, activity: false };

const FILE: &str = "input.xaif";

fn has_error(findings: &[Diagnostic]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Error)
}

/// What a routine-by-routine run came to, in a form that compares.
#[derive(Debug, PartialEq)]
enum Streamed {
    Output {
        bytes: Vec<u8>,
        warnings: Vec<Diagnostic>,
    },
    WholeTree(&'static str),
    Unreadable(Vec<Diagnostic>),
    Failed(String),
    /// The checks beside it found an error.
    Stopped,
}

fn stream_run(mode: Mode, input: &[u8], concurrency: Concurrency) -> Streamed {
    let (options, config, catalogue) = (ReadOptions::default(), Config::default(), Catalogue::builtin());
    let write = WriteOptions { schema_location: mode.schema().into() };
    let mut body = Vec::new();
    let run = match mode {
        Mode::Identity => stream::identity(input, FILE, &options, &config, &write, &mut body, concurrency),
        Mode::Tangent => stream::tangent(input, FILE, &options, catalogue, &config, &write, &mut body, concurrency),
        Mode::Adjoint => stream::adjoint(input, FILE, &options, catalogue, &config, &write, &mut body, concurrency),
        Mode::Trace => stream::trace(input, FILE, &options, catalogue, &config, &write, &mut body, concurrency),
    };
    match run {
        Ok(streamed) => Streamed::Output { bytes: streamed.bytes(&body), warnings: streamed.warnings },
        Err(StreamError::WholeTree(why)) => Streamed::WholeTree(why),
        Err(StreamError::Read(error)) => Streamed::Unreadable(error.findings().to_vec()),
        Err(StreamError::Pipeline(error)) => Streamed::Failed(error.to_string()),
        Err(StreamError::Invalid) => Streamed::Stopped,
        Err(StreamError::Io(error)) => panic!("writing to memory failed: {error}"),
    }
}

/// The checks first, and the run on this thread only if they found no error (the driver
/// below the threshold).
fn checked_first(mode: Mode, input: &[u8]) -> (Vec<Diagnostic>, Option<Streamed>) {
    let findings = validate_without_reader(input, FILE, &CHECKS);
    if has_error(&findings) {
        return (findings, None);
    }
    (findings, Some(stream_run(mode, input, Concurrency::default())))
}

/// The checks on a thread of their own, the run pipelined beside them with their progress
/// as its gate (the driver from the threshold on), the adjoint's later passes on `workers`.
fn checked_beside(mode: Mode, input: &[u8], workers: usize) -> (Vec<Diagnostic>, Streamed) {
    let progress = Progress::default();
    std::thread::scope(|scope| {
        let checking = scope.spawn(|| validate_without_reader_progressively(input, FILE, &CHECKS, &progress));
        let streamed = stream_run(mode, input, Concurrency { gate: Some(&progress), pipelined: true, workers });
        (checking.join().expect("the checks do not panic"), streamed)
    })
}

fn testdata_inputs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&root).expect("testdata") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files.extend(common::files_in(&path, "xaif"));
        }
    }
    files.sort();
    files
}

/// The test inputs (valid and invalid) and every fifth corpus input of each kind, for real
/// routines in numbers.
fn test_inputs() -> Vec<PathBuf> {
    let mut inputs = testdata_inputs();
    for name in ["tlm.in.xaif", "adm.in.xaif"] {
        inputs.extend(common::corpus_files(name).into_iter().step_by(5));
    }
    inputs
}

/// Beside the run, the checks find what they find first, and where they find no error the run
/// comes to the same end (output, warnings, reason for the whole tree, reader's or pass's
/// failure) whether they run first or beside it, the adjoint's later passes on no worker, one
/// (the driver's) or two. Where they find an error, the run beside them keeps no output: it
/// stops, or fails on its own.
#[test]
fn checking_beside_the_routines_changes_nothing_on_test_inputs() {
    let inputs = test_inputs();
    let (mut compared, mut refused, mut stopped) = (0, 0, 0);
    for input in &inputs {
        let bytes = std::fs::read(input).expect("readable");
        for mode in MODES {
            let (findings, first) = checked_first(mode, &bytes);
            let workers: &[usize] = if mode == Mode::Adjoint { &[0, 1, 2] } else { &[0] };
            for &workers in workers {
                let name = format!("{} {} ({workers} workers)", mode.name(), input.display());
                let (beside_findings, beside) = checked_beside(mode, &bytes, workers);
                assert_eq!(beside_findings, findings, "{name}: the checks beside found otherwise");
                match &first {
                    Some(first) => assert_eq!(&beside, first, "{name}"),
                    None => {
                        assert!(
                            !matches!(beside, Streamed::Output { .. }),
                            "{name}: finished though the checks found an error"
                        );
                        stopped += usize::from(beside == Streamed::Stopped);
                    }
                }
                compared += 1;
            }
            refused += usize::from(first.is_none());
        }
    }
    eprintln!(
        "{compared} runs compared; the checks refused {refused} inputs in a mode, {stopped} runs stopped by them"
    );
    assert!(inputs.len() > 100, "{} inputs", inputs.len());
    assert!(refused > 30 && stopped > 0, "{refused} refused, {stopped} stopped: the invalid inputs are missing");
}

/// What `driver::run` came to, in a form that compares.
#[derive(Debug, PartialEq)]
enum Driven {
    Output { bytes: Vec<u8>, warnings: Vec<Diagnostic>, whole_tree: Option<&'static str>, statistics: String },
    Invalid(Vec<Diagnostic>),
    Transform { error: String, warnings: Vec<Diagnostic> },
}

fn drive(mode: Mode, input: &[u8], threads: bool) -> Driven {
    let options = driver::Options {
        catalogue: Catalogue::builtin(),
        strict: false,
        config: Config::default(),
        schema_location: mode.schema().into(),
        threads,
    };
    let mut bytes = Vec::new();
    match driver::run(mode, input, FILE, &mut bytes, &options) {
        Ok(run) => {
            let report = &run.report;
            let statistics = format!("{}\n{}", report.tangent.to_json(), report.adjoint_json());
            Driven::Output { bytes, warnings: run.warnings, whole_tree: run.whole_tree, statistics }
        }
        Err(failure) => {
            assert!(bytes.is_empty(), "a failed run wrote {} bytes", bytes.len());
            match failure {
                Failure::Invalid(findings) => Driven::Invalid(findings),
                Failure::Transform { error, warnings } => Driven::Transform { error: error.to_string(), warnings },
                other => panic!("writing to memory failed: {other}"),
            }
        }
    }
}

/// `input` with a comment after its root element, long enough that the whole reaches the
/// threshold of the driver's threads. What follows the root moves no finding within it.
fn padded(mut input: Vec<u8>) -> Vec<u8> {
    input.extend_from_slice(b"\n<!-- ");
    input.resize(input.len().max(driver::THREADS_FROM), b'x');
    input.extend_from_slice(b" -->\n");
    input
}

/// Every test input, padded past the threshold, comes to the same end through the driver with
/// its threads (checks beside, reader on its own thread, the adjoint's worker) as without:
/// output, warnings, statistics and the whole tree's reason, or the same findings, or the same
/// failure.
#[test]
fn padded_test_inputs_come_to_the_same_end_with_the_drivers_threads() {
    if xaifbooster::cores() < 2 {
        eprintln!("one core: the driver takes no threads, both runs are the same path");
    }
    let (mut outputs, mut invalid) = (0, 0);
    for input in test_inputs() {
        let bytes = padded(std::fs::read(&input).expect("readable"));
        assert!(bytes.len() >= driver::THREADS_FROM);
        for mode in MODES {
            let alone = drive(mode, &bytes, false);
            let threads = drive(mode, &bytes, true);
            assert_eq!(threads, alone, "{} {}", mode.name(), input.display());
            outputs += usize::from(matches!(alone, Driven::Output { .. }));
            invalid += usize::from(matches!(alone, Driven::Invalid(_)));
        }
    }
    eprintln!("{outputs} outputs, {invalid} refused by the checks or the reader");
    assert!(outputs > 200 && invalid > 30, "{outputs} outputs, {invalid} refused");
}

/// Runs `mode input -o out.xaif` in a fresh directory: exit code, standard error and the output,
/// if any.
fn run_binary(mode: Mode, input: &Path) -> (Option<i32>, String, Option<Vec<u8>>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(env!("CARGO_BIN_EXE_xaifbooster"))
        .current_dir(dir.path())
        .args([mode.name(), "-o", "out.xaif"])
        .arg(input)
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{} {}: {stderr}", mode.name(), input.display());
    (output.status.code(), stderr, std::fs::read(dir.path().join("out.xaif")).ok())
}

/// A large input takes the driver's threads without being asked: its output is the one
/// without threads, and the binary's. An error the checks find in a routine in the middle of
/// the document stops the run with their findings (those without threads) and no output.
#[test]
fn large_inputs_check_beside_with_the_same_results() {
    let dir = tempfile::tempdir().expect("temp dir");
    let valid = dir.path().join("large.xaif");
    common::synthetic_input(&valid, "3", 7);
    let bytes = std::fs::read(&valid).expect("generated");
    assert!(bytes.len() > 2 * driver::THREADS_FROM, "the input is above the threshold");
    for mode in MODES {
        let alone = drive(mode, &bytes, false);
        let Driven::Output { bytes: expected, whole_tree, .. } = &alone else { panic!("{}: {alone:?}", mode.name()) };
        assert_eq!(*whole_tree, None, "{}: the synthetic input streams", mode.name());
        assert_eq!(drive(mode, &bytes, true), alone, "{}", mode.name());
        let (code, stderr, output) = run_binary(mode, &valid);
        assert_eq!(code, Some(0), "{}: {stderr}", mode.name());
        assert!(output.as_ref() == Some(expected), "{}: the binary's output differs", mode.name());
    }
    // A control flow graph halfway through gets an element the schema does not allow in it
    // (an error for the checks, which the reader passes over).
    let text = String::from_utf8(bytes).expect("utf-8");
    let middle = text.len() / 2;
    let at = middle + text[middle..].find("<xaif:BasicBlock ").expect("a block after the middle");
    let broken_text = format!("{}<xaif:Marker statement_id=\"m\"/>{}", &text[..at], &text[at..]);
    let broken = dir.path().join("broken.xaif");
    std::fs::write(&broken, &broken_text).expect("written");
    for mode in MODES {
        let alone = drive(mode, broken_text.as_bytes(), false);
        let Driven::Invalid(findings) = &alone else { panic!("{}: the checks refuse it: {alone:?}", mode.name()) };
        assert!(findings.iter().any(|f| f.to_string().contains("Marker: unexpected element")), "{findings:?}");
        assert_eq!(drive(mode, broken_text.as_bytes(), true), alone, "{}", mode.name());
        let (code, stderr, output) = run_binary(mode, &broken);
        assert_eq!(code, Some(1), "{}: {stderr}", mode.name());
        assert!(stderr.contains("Marker: unexpected element"), "{stderr}");
        assert!(output.is_none(), "{}: a refused run wrote its output", mode.name());
    }
}
