//! The activity check on hand-written documents (`testdata/validate/*.xaif`): each seeded
//! fault gives exactly the findings of `<case>.expected`, `clean.xaif` gives none, and every
//! case is otherwise valid — no other finding, and (outside the check's rules, which no schema
//! expresses) valid against the output schema. The command line runs the check by default and
//! skips it with `--skip-activity`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use xaifbooster::xaif::validate::{ValidateOptions, check_activity, validate};

fn cases() -> Vec<PathBuf> {
    common::files_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/validate"), "xaif")
}

fn name(case: &Path) -> String {
    case.file_name().expect("file name").to_string_lossy().into_owned()
}

/// The expected findings, one a line; none for a case without an `.expected` file.
fn expected(case: &Path) -> Vec<String> {
    let path = case.with_extension("expected");
    match std::fs::read_to_string(&path) {
        Ok(text) => text.lines().map(str::to_owned).collect(),
        Err(_) => Vec::new(),
    }
}

fn rendered(findings: &[xaifbooster::xaif::Diagnostic]) -> Vec<String> {
    findings.iter().map(ToString::to_string).collect()
}

#[test]
fn every_finding_is_exactly_the_expected_one() {
    let cases = cases();
    assert!(cases.len() >= 5, "only {} cases", cases.len());
    assert!(cases.iter().any(|c| name(c) == "clean.xaif"), "the clean case is missing");
    for case in &cases {
        let bytes = std::fs::read(case).expect("readable case");
        let strict = ValidateOptions { strict: true, activity: true };
        assert_eq!(rendered(&validate(&bytes, &name(case), &strict)), expected(case), "{}", name(case));
        assert_eq!(rendered(&check_activity(&bytes, &name(case))), expected(case), "{}", name(case));
    }
}

#[test]
fn without_the_activity_check_every_case_is_valid() {
    for case in cases() {
        let bytes = std::fs::read(&case).expect("readable case");
        let findings = validate(&bytes, &name(&case), &ValidateOptions { strict: true, activity: false });
        assert_eq!(rendered(&findings), Vec::<String>::new(), "{}", name(&case));
    }
}

#[test]
fn every_case_is_valid_against_the_output_schema() {
    let invalid = common::xmllint_failures(&cases());
    assert!(invalid.is_empty(), "{invalid:#?}");
}

#[test]
fn the_command_line_runs_the_check_unless_skipped() {
    let binary = env!("CARGO_BIN_EXE_xaifbooster");
    for case in cases() {
        let run = |skip: bool| {
            let mut command = Command::new(binary);
            command.current_dir(case.parent().expect("folder")).arg("validate");
            if skip {
                command.arg("--skip-activity");
            }
            command.arg(name(&case)).output().expect("binary runs")
        };
        let checked = run(false);
        let stderr = String::from_utf8_lossy(&checked.stderr);
        let lines: Vec<String> = stderr.lines().map(str::to_owned).collect();
        assert_eq!(lines, expected(&case), "{}", name(&case));
        let code = if expected(&case).is_empty() { 0 } else { 1 };
        assert_eq!(checked.status.code(), Some(code), "{}", name(&case));
        let skipped = run(true);
        assert_eq!(skipped.status.code(), Some(0), "{}: {}", name(&case), String::from_utf8_lossy(&skipped.stderr));
        assert!(skipped.stderr.is_empty(), "{}", name(&case));
    }
}
