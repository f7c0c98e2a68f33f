//! Stage conformance: our tangent-linear output against the original engine's
//! BasicBlockPreaccumulation stage outputs, compared structurally. Temporaries are named and
//! counted differently (we fold constant partials and eliminate where it pays), so the
//! comparison is per basic block: the original statements in the same order, the same
//! original variables whose derivatives the propagators write, and no derivative read that the
//! reference does not read.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use xaifbooster::passes::tangent::TangentConfig;
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

#[derive(Debug, Default, PartialEq)]
struct BlockShape {
    statements: Vec<String>,
    written: BTreeSet<String>,
    read: BTreeSet<String>,
}

/// Basic blocks by (routine, vertex id).
fn shapes(text: &str, prefix: &str) -> BTreeMap<(String, String), BlockShape> {
    let doc = roxmltree::Document::parse(text).expect("well-formed output");
    let mut blocks = BTreeMap::new();
    let is_temporary = |name: &str| !prefix.is_empty() && name.starts_with(prefix);
    for cfg in doc.descendants().filter(|n| n.has_tag_name((common::XAIF, "ControlFlowGraph"))) {
        let routine = cfg.attribute("symbol_id").unwrap_or_default().to_owned();
        for block in cfg.children().filter(|n| n.has_tag_name((common::XAIF, "BasicBlock"))) {
            let mut shape = BlockShape::default();
            for statement in block.children().filter(|n| n.is_element()) {
                let id = statement.attribute("statement_id").unwrap_or_default();
                let name = statement.tag_name().name();
                // The reference renames a statement whose left-hand side it assigns late
                // ("ass1: delayed LHS assignment …"); our partials read the operands before
                // the statement, so we never need to.
                if matches!(name, "Assignment" | "SubroutineCall" | "Marker") && !id.starts_with('_') {
                    shape.statements.push(id.split(':').next().unwrap_or(id).to_owned());
                }
                if name != "DerivativePropagator" {
                    continue;
                }
                for operand in statement.descendants().filter(|n| n.attribute("deriv") == Some("1")) {
                    let Some(symbol) = operand.children().find(|c| c.has_tag_name((common::XAIF, "SymbolReference")))
                    else {
                        continue;
                    };
                    let variable = symbol.attribute("symbol_id").unwrap_or_default().to_owned();
                    if is_temporary(&variable) {
                        continue;
                    }
                    match operand.tag_name().name() {
                        "Tgt" | "Y" | "ZeroDeriv" => shape.written.insert(variable),
                        _ => shape.read.insert(variable),
                    };
                }
            }
            blocks.insert((routine.clone(), block.attribute("vertex_id").unwrap_or_default().to_owned()), shape);
        }
    }
    blocks
}

#[test]
fn tangent_matches_the_basic_block_preaccumulation_stage_structurally() {
    let shared = shared_dir();
    let references = files_in(&shared.join("xaif/stage-outputs/BasicBlockPreaccumulation"), "xaif");
    assert!(!references.is_empty());
    let mut compared = 0;
    for reference in &references {
        let input = shared.join("xaif/examples").join(reference.file_name().expect("name"));
        let bytes = std::fs::read(&input).expect("example input");
        let mut cg = xaif::read(&bytes, "in", &ReadOptions::default()).expect("example reads").call_graph;
        let prefix = cg.name(cg.prefix).to_owned();
        xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &TangentConfig::default()).expect("tangent");
        let ours = String::from_utf8(xaif::write(&cg, &WriteOptions::default())).expect("UTF-8");
        let theirs = std::fs::read_to_string(reference).expect("reference");
        let (ours, theirs) = (shapes(&ours, &prefix), shapes(&theirs, &prefix));
        assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>(), "{}", short_name(reference));
        for (block, expected) in &theirs {
            let got = &ours[block];
            let name = short_name(reference);
            assert_eq!(got.statements, expected.statements, "{name}: statements of basic block {block:?}");
            assert_eq!(got.written, expected.written, "{name}: derivatives written in basic block {block:?}");
            // We may flatten across statements the reference keeps apart (it splits sequences
            // at every possible alias), so we read at most the derivatives it reads.
            assert!(
                got.read.is_subset(&expected.read),
                "{name}: block {block:?} reads {:?}, reference {:?}",
                got.read,
                expected.read
            );
            compared += 1;
        }
    }
    eprintln!("stage BasicBlockPreaccumulation: {} files, {compared} basic blocks compared", references.len());
}
