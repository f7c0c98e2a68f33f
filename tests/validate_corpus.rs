//! The validator over everything the shared folder holds: no false alarms on valid documents,
//! and the broken ones refused with the reason.

mod common;

use std::path::PathBuf;

use common::*;
use xaifbooster::xaif::validate::{ValidateOptions, validate};
use xaifbooster::xaif::{Diagnostic, Severity};

fn errors(path: &std::path::Path) -> Vec<Diagnostic> {
    let bytes = std::fs::read(path).expect("readable");
    validate(&bytes, &short_name(path), &ValidateOptions::default())
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .collect()
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
