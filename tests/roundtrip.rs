//! Read → write → validate → re-read over every corpus input and example: the foundation's
//! contract that nothing an input says is lost or mangled on the way through.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

/// Examples in the shared folder that are genuinely broken, with the error we must report.
/// (Checked by hand: a repeated expression vertex id with an edge to a vertex that does not
/// exist; symbols used but declared nowhere.)
const BROKEN_EXAMPLES: &[(&str, &str)] = &[
    ("if_ex_1c.xaif", "if_ex_1c.xaif:100:12: Intrinsic: duplicate vertex_id '3' in AssignmentRHS"),
    ("joint_rescp.xb.xaif", "joint_rescp.xb.xaif:57:9: SubroutineCall: symbol 'sub2' is not declared in scope 1"),
    ("uwe_ex_1_d.xaif", "uwe_ex_1_d.xaif:54:8: ArgumentSymbolReference: symbol '0' is not declared in scope 2"),
];

fn inputs() -> Vec<PathBuf> {
    let mut files = corpus_files("tlm.in.xaif");
    files.extend(corpus_files("adm.in.xaif"));
    files.extend(
        files_in(&shared_dir().join("xaif/examples"), "xaif")
            .into_iter()
            .filter(|f| !BROKEN_EXAMPLES.iter().any(|(name, _)| f.ends_with(name))),
    );
    files
}

fn read_file(path: &Path) -> xaifbooster::ir::CallGraph {
    let bytes = std::fs::read(path).expect("readable input");
    match xaif::read(&bytes, &path.display().to_string(), &ReadOptions::default()) {
        Ok(output) => output.call_graph,
        Err(error) => panic!("{}: {error}", short_name(path)),
    }
}

#[test]
fn every_input_round_trips_to_a_schema_valid_fixed_point() {
    let inputs = inputs();
    assert!(inputs.len() >= 390, "expected the whole corpus, found {} inputs", inputs.len());
    let dir = tempfile::tempdir().expect("temp dir");
    let options = WriteOptions::default();
    let mut written = Vec::new();
    let mut not_fixed = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let first = xaif::write(&read_file(input), &options);
        let out = dir.path().join(format!("{i:03}.xaif"));
        std::fs::write(&out, &first).expect("write temp output");
        let second = xaif::write(&read_file(&out), &options);
        if first != second {
            not_fixed.push(short_name(input));
        }
        written.push(out);
    }
    let invalid = xmllint_failures(&written);
    eprintln!(
        "round trip: {} read, {} written, {} xmllint-valid, {} fixed point",
        inputs.len(),
        written.len(),
        written.len() - invalid.len(),
        written.len() - not_fixed.len()
    );
    assert!(not_fixed.is_empty(), "not a fixed point: {not_fixed:?}");
    assert!(invalid.is_empty(), "outputs failing the output schema: {invalid:#?}");
}

#[test]
fn writing_is_deterministic() {
    for input in inputs().iter().step_by(7) {
        let a = xaif::write(&read_file(input), &WriteOptions::default());
        let b = xaif::write(&read_file(input), &WriteOptions::default());
        assert!(a == b, "{}: two runs differ", short_name(input));
    }
}

#[test]
fn broken_examples_are_refused_with_located_messages() {
    let dir = shared_dir().join("xaif/examples");
    for (name, expected) in BROKEN_EXAMPLES {
        let bytes = std::fs::read(dir.join(name)).expect("example exists");
        let error = xaif::read(&bytes, name, &ReadOptions::default()).expect_err(name);
        assert_eq!(error.to_string(), *expected);
    }
}

#[test]
fn identity_matches_the_reference_engine_modulo_formatting() {
    let shared = shared_dir();
    let references = files_in(&shared.join("xaif/stage-outputs/Identity"), "xaif");
    assert!(!references.is_empty());
    let options = WriteOptions { schema_location: "xaif.xsd".into() };
    for reference in &references {
        let input = shared.join("xaif/examples").join(reference.file_name().expect("file name"));
        let ours = String::from_utf8(xaif::write(&read_file(&input), &options)).expect("UTF-8 output");
        let theirs = std::fs::read_to_string(reference).expect("reference output");
        let difference = first_difference(&canonical_lines(&ours), &canonical_lines(&theirs));
        assert!(difference.is_none(), "{}: {}", short_name(reference), difference.unwrap_or_default());
    }
    eprintln!("identity: {} stage outputs matched", references.len());
}

#[test]
fn lenient_reading_infers_formal_arg_count_and_strict_refuses_it() {
    let files: Vec<PathBuf> = corpus_files("adm.in.xaif")
        .into_iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .is_ok_and(|t| t.contains("<xaif:SubroutineCall") && !t.contains("formalArgCount"))
        })
        .collect();
    assert!(!files.is_empty(), "the corpus has calls without formalArgCount");
    for file in &files {
        let bytes = std::fs::read(file).expect("readable");
        let name = short_name(file);
        let lenient = xaif::read(&bytes, &name, &ReadOptions::default()).expect("lenient read");
        assert!(lenient.warnings.iter().any(|w| w.message.contains("formalArgCount")), "{name}: no warning");
        let out = String::from_utf8(xaif::write(&lenient.call_graph, &WriteOptions::default())).expect("UTF-8");
        assert!(!out.contains("formalArgCount=\"4294967295\""), "{name}: count not inferred");
        let strict = xaif::read(&bytes, &name, &ReadOptions { strict: true, ..ReadOptions::default() });
        let error = strict.expect_err("strict read refuses");
        assert!(error.to_string().contains("missing required attribute 'formalArgCount'"), "{error}");
    }
}

/// The reference adjoints made by an older front end name the maps `AliasSetList` /
/// `DUUDSetList`, have no DOSetMap and write array indices without `IndexTriplet`. Lenient
/// reading accepts them (with warnings) and writes today's form, which validates; strict
/// reading refuses them.
#[test]
fn lenient_reading_accepts_the_old_map_and_index_forms() {
    let mut files = corpus_files("adm-joint.ref.xaif");
    files.extend(corpus_files("adm-split.ref.xaif"));
    files.retain(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains("<xaif:AliasSetList")));
    assert!(files.len() >= 7, "the corpus has {} old-format adjoints, expected 7", files.len());
    let mut unwrapped_indices = 0;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut written = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file).expect("readable");
        let name = short_name(file);
        let lenient = xaif::read(&bytes, &name, &ReadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let messages: Vec<&str> = lenient.warnings.iter().map(|w| w.message.as_str()).collect();
        assert!(messages.contains(&"old name of AliasSetMap"), "{name}: {messages:?}");
        assert!(messages.contains(&"old name of DUUDSetMap"), "{name}: {messages:?}");
        unwrapped_indices += messages.iter().filter(|m| **m == "Index outside an IndexTriplet").count();
        let out = xaif::write(&lenient.call_graph, &WriteOptions::default());
        let text = std::str::from_utf8(&out).expect("UTF-8");
        assert!(text.contains("<xaif:AliasSetMap>") && text.contains("<xaif:DOSetMap>"), "{name}");
        assert!(!text.contains("SetList"), "{name}: old names written");
        let path = dir.path().join(format!("{}.xaif", written.len()));
        std::fs::write(&path, &out).expect("write temp output");
        written.push(path);
        let strict = xaif::read(&bytes, &name, &ReadOptions { strict: true, ..ReadOptions::default() })
            .expect_err("strict read refuses");
        assert!(strict.to_string().contains("AliasSetList: old name of AliasSetMap"), "{strict}");
    }
    assert!(unwrapped_indices > 0, "no old-style index was seen");
    let invalid = xmllint_failures(&written);
    assert!(invalid.is_empty(), "rewritten old-format files fail xmllint: {invalid:?}");
}
