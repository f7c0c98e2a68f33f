//! Hand-made bad inputs (`testdata/invalid/*.xaif`, one fault each, made by
//! `scripts/gen_invalid_cases.py`): the validator reports exactly the expected located message,
//! the reader refuses the input too, and the command line exits with 1, prints the message and
//! writes no output file (an existing one stays untouched).

use std::path::{Path, PathBuf};
use std::process::Command;

use xaifbooster::xaif::validate::{ValidateOptions, validate};
use xaifbooster::xaif::{self, ReadOptions, Severity};

fn cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/invalid");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("testdata/invalid exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "xaif"))
        .collect();
    cases.sort();
    cases
}

fn name(case: &Path) -> String {
    case.file_name().expect("file name").to_string_lossy().into_owned()
}

fn strict(case: &Path) -> bool {
    name(case).starts_with("strict_")
}

fn expected(case: &Path) -> String {
    let path = case.with_extension("expected");
    std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("{} is missing", path.display())).trim_end().to_owned()
}

#[test]
fn there_are_enough_distinct_faults() {
    assert!(cases().len() >= 28, "only {} cases", cases().len());
}

#[test]
fn the_validator_reports_the_expected_message_first() {
    for case in cases() {
        let bytes = std::fs::read(&case).expect("readable case");
        let findings = validate(&bytes, &name(&case), &ValidateOptions { strict: strict(&case), activity: false });
        let first = findings.iter().find(|f| f.severity == Severity::Error);
        assert_eq!(first.map(ToString::to_string), Some(expected(&case)), "{}", name(&case));
    }
}

#[test]
fn the_reader_refuses_what_the_validator_refuses() {
    for case in cases() {
        let bytes = std::fs::read(&case).expect("readable case");
        let result = xaif::read(&bytes, &name(&case), &ReadOptions { strict: strict(&case), ..ReadOptions::default() });
        assert!(result.is_err(), "{}: the reader accepted it", name(&case));
    }
}

#[test]
fn the_command_line_fails_cleanly_and_writes_nothing() {
    let binary = env!("CARGO_BIN_EXE_xaifbooster");
    let dir = tempfile::tempdir().expect("temp dir");
    let fresh = dir.path().join("fresh.xaif");
    let existing = dir.path().join("existing.xaif");
    for case in cases() {
        for (output, previous) in [(&fresh, None), (&existing, Some("previous contents"))] {
            if let Some(text) = previous {
                std::fs::write(output, text).expect("prepare output");
            }
            let mut command = Command::new(binary);
            command.current_dir(case.parent().expect("folder")).arg("identity");
            if strict(&case) {
                command.arg("--strict");
            }
            let result = command.arg("-i").arg(name(&case)).arg("-o").arg(output).output().expect("binary runs");
            let stderr = String::from_utf8_lossy(&result.stderr);
            assert_eq!(result.status.code(), Some(1), "{}: {stderr}", name(&case));
            assert!(stderr.lines().any(|l| l == expected(&case)), "{}: stderr was {stderr}", name(&case));
            match previous {
                None => assert!(!output.exists(), "{}: an output file appeared", name(&case)),
                Some(text) => assert_eq!(std::fs::read_to_string(output).expect("still there"), text),
            }
        }
        let leftovers: Vec<_> =
            std::fs::read_dir(dir.path()).expect("dir").map(|e| e.expect("entry").file_name()).collect();
        assert!(leftovers.len() <= 1, "{}: temporary files left behind: {leftovers:?}", name(&case));
    }
}
