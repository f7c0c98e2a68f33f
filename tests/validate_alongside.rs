//! Validation alongside the transformation (large inputs: the validator's checks run on a
//! second thread while the command reads, transforms and writes routines without waiting for
//! them, and keeps the output only once they have all passed) gives exactly what validation
//! first gives: the same exit code, the same messages, the same output or none.
//! `XAIFBOOSTER_VALIDATE_ALONGSIDE_FROM` moves the size from which the concurrent path is
//! taken, so every small test input can take it too; the modes
//! then also stream routine by routine (`XAIFBOOSTER_STREAM_FROM`, the same size; below it the
//! whole-document path runs), reading on a thread of their own (`XAIFBOOSTER_PIPELINE_FROM`),
//! the routines transformed on that thread or by workers (`XAIFBOOSTER_WORKERS`; in the
//! adjoint, its passes after the first), the adjoint in two or three passes.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, PartialEq)]
struct Outcome {
    code: Option<i32>,
    stderr: String,
    output: Option<Vec<u8>>,
}

/// Runs `mode input -o out.xaif` in a fresh directory, validation alongside, streamed and
/// reading on a thread of its own from `threshold` bytes, routines transformed by `workers`
/// workers.
fn run(mode: &str, input: &Path, threshold: u64, workers: usize) -> Outcome {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(env!("CARGO_BIN_EXE_xaifbooster"))
        .current_dir(dir.path())
        .env("XAIFBOOSTER_VALIDATE_ALONGSIDE_FROM", threshold.to_string())
        .env("XAIFBOOSTER_PIPELINE_FROM", threshold.to_string())
        .env("XAIFBOOSTER_STREAM_FROM", threshold.to_string())
        .env("XAIFBOOSTER_WORKERS", workers.to_string())
        .args([mode, "-o", "out.xaif"])
        .arg(input)
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{mode} {}: {stderr}", input.display());
    Outcome { code: output.status.code(), stderr, output: std::fs::read(dir.path().join("out.xaif")).ok() }
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

#[test]
fn validating_alongside_changes_nothing_on_test_inputs() {
    let mut inputs = testdata_inputs();
    // Every fifth corpus input of each kind, for real routines in numbers.
    for name in ["tlm.in.xaif", "adm.in.xaif"] {
        inputs.extend(common::corpus_files(name).into_iter().step_by(5));
    }
    let (mut compared, mut refused) = (0, 0);
    for input in &inputs {
        for mode in ["identity", "tangent", "adjoint"] {
            let first = run(mode, input, u64::MAX, 0);
            let alongside = run(mode, input, 0, 0);
            assert_eq!(alongside, first, "{mode} {}", input.display());
            if mode != "identity" {
                assert_eq!(run(mode, input, 0, 2), first, "{mode} {}, two workers", input.display());
            }
            compared += 1;
            refused += usize::from(first.code == Some(1));
        }
    }
    eprintln!("{compared} runs compared, {refused} of them refused");
    assert!(inputs.len() > 100 && refused > 30, "{} inputs, {refused} refused", inputs.len());
}

/// Above the default threshold the concurrent path is taken without being asked; its output is
/// the sequential one's, and an error the checks find in a routine in the middle of the
/// document stops the run with their findings and no output.
#[test]
fn large_inputs_validate_alongside_with_the_same_results() {
    let dir = tempfile::tempdir().expect("temp dir");
    let valid = dir.path().join("large.xaif");
    common::synthetic_input(&valid, "3", 7);
    let bytes = std::fs::read(&valid).expect("generated");
    assert!(bytes.len() > 2 << 20, "the input is above the default threshold");
    for mode in ["identity", "tangent", "adjoint"] {
        let sequential = run(mode, &valid, u64::MAX, 0);
        assert_eq!(sequential.code, Some(0), "{mode}: {}", sequential.stderr);
        for workers in [0, 3] {
            assert_eq!(run(mode, &valid, 1 << 20, workers), sequential, "{mode}, {workers} workers");
        }
    }
    // A control flow graph halfway through gets an element the schema does not allow in it
    // (an error for the checks, which the reader passes over).
    let text = String::from_utf8(bytes).expect("utf-8");
    let middle = text.len() / 2;
    let at = middle + text[middle..].find("<xaif:BasicBlock ").expect("a block after the middle");
    let broken = dir.path().join("broken.xaif");
    std::fs::write(&broken, format!("{}<xaif:Marker statement_id=\"m\"/>{}", &text[..at], &text[at..]))
        .expect("written");
    for mode in ["identity", "tangent", "adjoint"] {
        let sequential = run(mode, &broken, u64::MAX, 0);
        assert_eq!(sequential.code, Some(1), "{mode}: the checks refuse it: {}", sequential.stderr);
        assert!(sequential.stderr.contains("Marker: unexpected element"), "{}", sequential.stderr);
        assert!(sequential.output.is_none());
        for workers in [0, 3] {
            assert_eq!(run(mode, &broken, 1 << 20, workers), sequential, "{mode}, {workers} workers");
        }
    }
}
