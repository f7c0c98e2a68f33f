//! The validator over everything the shared folder holds: no false alarms on valid documents,
//! and the broken ones refused with the reason.

mod common;

use std::path::PathBuf;

use common::*;
use xaifbooster::xaif::validate::{ValidateOptions, check_activity, validate};
use xaifbooster::xaif::{Diagnostic, Severity};

/// The errors of one file; front-end inputs (`*.in.xaif`) without the activity check, which
/// only outputs must pass.
fn errors(path: &std::path::Path) -> Vec<Diagnostic> {
    let bytes = std::fs::read(path).expect("readable");
    let input = path.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".in.xaif"));
    let options = if input { ValidateOptions { strict: false, activity: false } } else { ValidateOptions::default() };
    validate(&bytes, &short_name(path), &options).into_iter().filter(|d| d.severity == Severity::Error).collect()
}

/// Adjoint reference outputs written by an older engine, in a format the schema never had
/// (`AliasSetList`, `DUUDSetList`): the facts file lists these examples as older-engine output.
const OLD_FORMAT: &[&str] = &[
    "Loop_simple_4a/adm-joint.ref.xaif",
    "Loop_simple_4b/adm-joint.ref.xaif",
    "Loop_simple_4b/adm-split.ref.xaif",
    "Select_2/adm-joint.ref.xaif",
    "Select_2/adm-split.ref.xaif",
    "readWrite2/adm-joint.ref.xaif",
    "readWrite2/adm-split.ref.xaif",
];

#[test]
fn corpus_inputs_and_reference_outputs_validate() {
    let mut files: Vec<PathBuf> = Vec::new();
    for name in ["tlm.in.xaif", "adm.in.xaif", "tlm.ref.xaif", "adm-joint.ref.xaif", "adm-split.ref.xaif"] {
        files.extend(corpus_files(name));
    }
    let shared = shared_dir();
    for stage in ["Identity", "Linearization", "BasicBlockPreaccumulation", "BasicBlockPreaccumulationTape"] {
        files.extend(files_in(&shared.join("xaif/stage-outputs").join(stage), "xaif"));
    }
    let mut false_alarms = Vec::new();
    let mut old_format = 0;
    for file in &files {
        let found = errors(file);
        let name = short_name(file);
        if OLD_FORMAT.contains(&name.as_str()) {
            assert!(
                found.iter().any(|d| d.message == "missing required child AliasSetMap"),
                "{name}: old-format file not refused: {found:?}"
            );
            old_format += 1;
        } else if let Some(first) = found.first() {
            false_alarms.push(first.to_string());
        }
    }
    eprintln!("validated {} files, {old_format} old-format files refused", files.len());
    assert!(files.len() > 900, "only {} files", files.len());
    assert_eq!(old_format, OLD_FORMAT.len());
    assert!(false_alarms.is_empty(), "errors on valid documents: {false_alarms:#?}");
}

#[test]
fn examples_validate_except_the_broken_ones() {
    let broken = [
        ("if_ex_1c.xaif", "examples/if_ex_1c.xaif:100:12: Intrinsic: duplicate vertex_id '3' in AssignmentRHS"),
        (
            "joint_rescp.xb.xaif",
            "examples/joint_rescp.xb.xaif:57:9: SubroutineCall: symbol 'sub2' is not declared in scope 1",
        ),
        (
            "uwe_ex_1_d.xaif",
            "examples/uwe_ex_1_d.xaif:54:8: ArgumentSymbolReference: symbol '0' is not declared in scope 2",
        ),
    ];
    for file in files_in(&shared_dir().join("xaif/examples"), "xaif") {
        let found = errors(&file);
        let name = file.file_name().expect("name").to_string_lossy().into_owned();
        match broken.iter().find(|(b, _)| *b == name) {
            Some((_, expected)) => {
                assert!(found.iter().any(|d| d.to_string() == *expected), "{name}: expected {expected}, got {found:?}")
            }
            None => assert!(found.is_empty(), "{name}: {found:?}"),
        }
    }
}

/// The examples whose front-end inputs pass a real of one activity where the callee expects
/// the other, or an active real to an external routine: what the TypeChange pass converts. The
/// reference outputs of all of them pass the check (the original engine converted, the older
/// engine too, with `convert_a2p_*` / `convert_p2a_*`).
const INPUTS_WITH_ACTIVITY_MISMATCHES: &[&str] = &[
    "IfStatement_3",
    "argumentArrayIndex2",
    "argumentConversionSaveIndex2",
    "argumentConversion_2",
    "argumentConversion_3",
    "argumentConversion_4",
    "argumentConversion_4a",
    "argumentConversion_4b",
    "argumentConversion_4c",
    "argumentConversion_4e",
    "argumentConversion_4f",
    "argumentConversion_4g",
    "argumentConversion_5",
    "argumentConversion_6",
    "argumentShapeMismatch1",
    "externalCalls1",
    "externalCalls2",
    "funcCanonModule",
    "funcCanonStandalone",
    "globalActiveSideEffect",
    "globalActive_7",
    "inactive1",
    "noDefaultInit_argumentConversion_3",
    "passiveMix2",
    "passiveMix3",
];

/// The examples whose `name` files have activity findings, and how many findings in all.
fn activity_findings(name: &str) -> (Vec<String>, usize) {
    let mut examples = Vec::new();
    let mut count = 0;
    for file in corpus_files(name) {
        let findings = check_activity(&std::fs::read(&file).expect("readable"), &short_name(&file));
        if !findings.is_empty() {
            count += findings.len();
            examples.push(short_name(&file).split('/').next().expect("example").to_owned());
        }
    }
    (examples, count)
}

#[test]
fn every_reference_output_passes_the_activity_check() {
    for name in ["tlm.ref.xaif", "adm-joint.ref.xaif", "adm-split.ref.xaif"] {
        let mut flagged = Vec::new();
        for file in corpus_files(name) {
            let findings = check_activity(&std::fs::read(&file).expect("readable"), &short_name(&file));
            flagged.extend(findings.iter().map(ToString::to_string));
        }
        assert!(flagged.is_empty(), "{name}: {flagged:#?}");
    }
}

/// The check bites where it should: on exactly the inputs with mismatches (42 findings in the
/// 25 tangent inputs, 41 in the 24 adjoint ones; argumentConversion_6 has no adjoint input).
#[test]
fn the_activity_check_flags_the_inputs_type_change_converts() {
    let (examples, count) = activity_findings("tlm.in.xaif");
    assert_eq!(examples, INPUTS_WITH_ACTIVITY_MISMATCHES);
    assert_eq!(count, 42);
    let (examples, count) = activity_findings("adm.in.xaif");
    let expected: Vec<&str> =
        INPUTS_WITH_ACTIVITY_MISMATCHES.iter().copied().filter(|e| *e != "argumentConversion_6").collect();
    assert_eq!(examples, expected);
    assert_eq!(count, 41);
}
