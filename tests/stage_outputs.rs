//! Stage conformance: our tangent-linear output against the original engine's
//! BasicBlockPreaccumulation stage outputs, compared structurally. Temporaries are named and
//! counted differently (we fold constant partials and eliminate where it pays), so the
//! comparison is per basic block: the original statements in the same order, the same
//! original variables whose derivatives the propagators write (less the locals the du-ud map
//! says only later statements of the block use, whose derivatives we do not carry out of the
//! sequence; the reference does), and no derivative read that the reference does not read.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

#[derive(Debug, Default, PartialEq)]
struct BlockShape {
    statements: Vec<String>,
    written: BTreeSet<String>,
    read: BTreeSet<String>,
    /// The routine's formals (whose derivatives must always be written).
    formals: BTreeSet<String>,
}

/// Basic blocks by (routine, vertex id).
fn shapes(text: &str, prefix: &str) -> BTreeMap<(String, String), BlockShape> {
    let doc = roxmltree::Document::parse(text).expect("well-formed output");
    let mut blocks = BTreeMap::new();
    let is_temporary = |name: &str| !prefix.is_empty() && name.starts_with(prefix);
    for cfg in doc.descendants().filter(|n| n.has_tag_name((common::XAIF, "ControlFlowGraph"))) {
        let routine = cfg.attribute("symbol_id").unwrap_or_default().to_owned();
        let formals: BTreeSet<String> = cfg
            .descendants()
            .filter(|n| n.has_tag_name((common::XAIF, "ArgumentSymbolReference")))
            .filter_map(|n| n.attribute("symbol_id").map(str::to_owned))
            .collect();
        for block in cfg.children().filter(|n| n.has_tag_name((common::XAIF, "BasicBlock"))) {
            let mut shape = BlockShape { formals: formals.clone(), ..BlockShape::default() };
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
        xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &xaifbooster::pipeline::Config::default())
            .expect("tangent");
        let ours = String::from_utf8(xaif::write(&cg, &WriteOptions::default())).expect("UTF-8");
        let theirs = std::fs::read_to_string(reference).expect("reference");
        let (ours, theirs) = (shapes(&ours, &prefix), shapes(&theirs, &prefix));
        assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>(), "{}", short_name(reference));
        for (block, expected) in &theirs {
            let got = &ours[block];
            let name = short_name(reference);
            assert_eq!(got.statements, expected.statements, "{name}: statements of basic block {block:?}");
            assert!(
                got.written.is_subset(&expected.written),
                "{name}: derivatives written in basic block {block:?}: {:?}, reference {:?}",
                got.written,
                expected.written
            );
            let formals_written: BTreeSet<&String> = expected.written.intersection(&expected.formals).collect();
            assert!(
                formals_written.iter().all(|f| got.written.contains(*f)),
                "{name}: block {block:?} writes the derivatives of formals {formals_written:?}, we {:?}",
                got.written
            );
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

/// Per original statement: the partials the reference's Linearization stage computes at run
/// time (`_elementary_partial_*` assignments since the previous original statement whose
/// right-hand side is not a lone constant).
fn reference_partials(text: &str) -> BTreeMap<(String, String), usize> {
    let doc = roxmltree::Document::parse(text).expect("well-formed stage output");
    let mut partials = BTreeMap::new();
    for cfg in doc.descendants().filter(|n| n.has_tag_name((common::XAIF, "ControlFlowGraph"))) {
        let routine = cfg.attribute("symbol_id").unwrap_or_default().to_owned();
        for block in cfg.children().filter(|n| n.has_tag_name((common::XAIF, "BasicBlock"))) {
            let mut pending = 0;
            for statement in block.children().filter(|n| n.has_tag_name((common::XAIF, "Assignment"))) {
                let id = statement.attribute("statement_id").unwrap_or_default();
                if id.starts_with("_elementary_partial_") {
                    let rhs = statement.children().find(|c| c.has_tag_name((common::XAIF, "AssignmentRHS")));
                    let vertices: Vec<_> =
                        rhs.into_iter().flat_map(|r| r.children().filter(|c| c.is_element())).collect();
                    let constant = vertices.len() == 1 && vertices[0].tag_name().name() == "Constant";
                    pending += usize::from(!constant);
                } else if !id.starts_with('_') {
                    let id = id.split(':').next().unwrap_or(id).to_owned();
                    partials.insert((routine.clone(), id), std::mem::take(&mut pending));
                }
            }
        }
    }
    partials
}

/// Our linearization of every assignment of `input`: the partials left to compute at run time
/// (constant ones are folded, as the reference folds them).
fn our_partials(input: &str) -> BTreeMap<(String, String), usize> {
    use xaifbooster::ir::build::Temporaries;
    use xaifbooster::ir::{CfgVertexKind, Statement};
    use xaifbooster::passes::linearize::{Partial, RefKeys, is_active_reference, linearize_assignment};
    let mut cg = xaif::read(input.as_bytes(), "input", &ReadOptions::default()).expect("example reads").call_graph;
    let mut temporaries = Temporaries::default();
    let mut keys = RefKeys::default();
    let mut partials = BTreeMap::new();
    let blocks: Vec<(String, xaifbooster::ir::ScopeId, Vec<Statement>)> = cg
        .cfgs()
        .flat_map(|(_, cfg)| {
            let routine = cg.symbol_name(cfg.symbol).to_owned();
            cfg.graph.vertices.iter().filter_map(move |(_, v)| match &v.kind {
                CfgVertexKind::BasicBlock(b) => Some((routine.clone(), b.scope, b.statements.clone())),
                _ => None,
            })
        })
        .collect();
    for (routine, scope, statements) in blocks {
        for statement in statements {
            let Statement::Assignment(assignment) = statement else { continue };
            let id = cg.name(assignment.id).to_owned();
            let count = if is_active_reference(&cg, &assignment.lhs) {
                let linearized = linearize_assignment(
                    &mut cg,
                    Catalogue::builtin(),
                    &mut temporaries,
                    &mut keys,
                    scope,
                    assignment.clone(),
                )
                .expect("linearizes");
                // We sum the partials of parallel edges (`t*t` reads one vertex twice) into
                // one; the reference computes one per edge. Count ours per original edge.
                let edges = &assignment.rhs.edges;
                let pairs: BTreeSet<_> = edges.iter().map(|e| (e.source, e.target)).collect();
                let parallel = edges.len() - pairs.len();
                linearized.graph.edges.iter().filter(|e| matches!(e.partial, Partial::Variable(_))).count() + parallel
            } else {
                0
            };
            partials.insert((routine.clone(), id), count);
        }
    }
    partials
}

/// The Linearization stage: for every assignment of the examples, we compute exactly the
/// run-time partials the original engine computes (the same local Jacobian edges that are not
/// compile-time constants), whatever their names and the auxiliaries that hold shared values.
/// (Parallel edges, whose partials we sum into one, count once per edge.)
#[test]
fn linearization_matches_the_reference_stage_partial_for_partial() {
    let stage = shared_dir().join("xaif/stage-outputs/Linearization");
    let references = files_in(&stage, "xaif");
    assert!(references.len() >= 17, "expected the Linearization stage outputs, found {}", references.len());
    let (mut statements, mut partial_total, mut differences) = (0, 0, Vec::new());
    for reference in &references {
        let name = reference.file_name().expect("file name").to_string_lossy().into_owned();
        let input = std::fs::read_to_string(shared_dir().join("xaif/examples").join(&name)).expect("example input");
        let theirs = reference_partials(&std::fs::read_to_string(reference).expect("stage output"));
        let ours = our_partials(&input);
        for (key, &count) in &theirs {
            statements += 1;
            partial_total += count;
            match ours.get(key) {
                Some(&mine) if mine == count => {}
                mine => differences.push(format!("{name}: {key:?}: reference {count} partials, ours {mine:?}")),
            }
        }
    }
    eprintln!("linearization: {statements} statements, {partial_total} run-time partials compared");
    assert!(statements >= 150 && partial_total >= 80, "too little compared: {statements} / {partial_total}");
    assert!(differences.is_empty(), "{} differences:\n{}", differences.len(), differences.join("\n"));
}
