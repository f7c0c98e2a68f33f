//! TypeChange, forced passivation (-p), derivative initialization (-D), wrappers (-w) and
//! renaming (-r): hand-written programs in testdata/type_change/ whose every call needs a
//! conversion of some kind, and the whole corpus, where no call may be left with an actual
//! whose activity differs from its formal's.

mod common;

use std::path::{Path, PathBuf};

use xaifbooster::interp::verify::{Mode, Status, VerifyConfig, read_program, verify};
use xaifbooster::ir::*;
use xaifbooster::passes::type_change::{TypeChangeConfig, TypeChangeError};
use xaifbooster::pipeline::{self, Config, PipelineError, Report};
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/type_change").join(name)
}

fn transform(input: &[u8], config: &Config) -> Result<(CallGraph, Report), PipelineError> {
    let mut cg = xaif::read(input, "input", &ReadOptions::default()).expect("input reads").call_graph;
    let report = pipeline::tangent(&mut cg, Catalogue::builtin(), config)?;
    Ok((cg, report))
}

/// Every call-site disagreement in type activity: `(routine, statement, position)`. A call of a
/// routine with a body needs each real actual of its formal's activity (a constant is passive);
/// a routine without a body takes only passive actuals.
fn activity_mismatches(cg: &CallGraph) -> Vec<String> {
    let bodies: Vec<(SymbolId, &ControlFlowGraph)> = cg.cfgs().map(|(_, cfg)| (cfg.symbol, cfg)).collect();
    let mut found = Vec::new();
    for (_, cfg) in cg.cfgs() {
        for (_, vertex) in cfg.graph.vertices.iter() {
            let CfgVertexKind::BasicBlock(block) = &vertex.kind else { continue };
            for statement in &block.statements {
                let Statement::SubroutineCall(call) = statement else { continue };
                let callee = bodies.iter().find(|(s, _)| Some(*s) == call.symbol).map(|(_, c)| *c);
                for argument in &call.arguments {
                    let actual = match &argument.value {
                        ArgumentValue::Variable(r) => r.base_symbol().is_some_and(|s| cg.symbols[s].active),
                        ArgumentValue::Constant(_) => false,
                    };
                    let formal = match callee {
                        None => false,
                        Some(callee) => {
                            let Some(formal) =
                                callee.arguments.iter().flatten().find(|f| f.position == argument.position)
                            else {
                                continue;
                            };
                            let formal = &cg.symbols[formal.symbol];
                            if formal.ty != SymbolType::Real {
                                continue;
                            }
                            formal.active
                        }
                    };
                    if actual != formal {
                        found.push(format!(
                            "{} {} argument {}",
                            cg.symbol_name(cfg.symbol),
                            cg.name(call.id),
                            argument.position
                        ));
                    }
                }
            }
        }
    }
    found
}

fn statements_of<'a>(cg: &'a CallGraph, routine: &str) -> Vec<&'a Statement> {
    let (_, cfg) = cg.cfgs().find(|(_, cfg)| cg.symbol_name(cfg.symbol).ends_with(routine)).expect("routine");
    cfg.graph
        .vertices
        .iter()
        .filter_map(|(_, v)| match &v.kind {
            CfgVertexKind::BasicBlock(b) => Some(b.statements.iter()),
            _ => None,
        })
        .flatten()
        .collect()
}

fn reference_names(cg: &CallGraph, value: &ArgumentValue) -> Vec<String> {
    let mut names = Vec::new();
    if let ArgumentValue::Variable(r) = value {
        let mut symbols = Vec::new();
        r.symbols_read(&mut symbols);
        names.extend(symbols.into_iter().map(|s| cg.symbol_name(s).to_owned()));
    }
    names
}

/// The statements around call `id` of `routine`, as `name(arguments)` lines: saved indices,
/// conversions and allocations before, the call, conversions after.
fn around_call(cg: &CallGraph, routine: &str, id: &str) -> Vec<String> {
    let statements = statements_of(cg, routine);
    let at = statements
        .iter()
        .position(|s| matches!(s, Statement::SubroutineCall(c) if cg.name(c.id) == id))
        .expect("call present");
    let describe = |s: &Statement| match s {
        Statement::InlinableSubroutineCall(call) => {
            let args: Vec<String> = call.arguments.iter().map(|a| reference_names(cg, &a.value).join("/")).collect();
            Some(format!("{}({})", cg.name(call.subroutine_name), args.join(",")))
        }
        Statement::Assignment(a) if cg.name(a.id).contains("saving_value") => {
            let lhs = a.lhs.base_symbol().map(|s| cg.symbol_name(s)).unwrap_or_default();
            Some(format!("save {lhs}"))
        }
        Statement::SubroutineCall(call) => {
            let args: Vec<String> = call.arguments.iter().map(|a| reference_names(cg, &a.value).join("/")).collect();
            Some(format!("call({})", args.join(",")))
        }
        _ => None,
    };
    let id_of = |s: &Statement| match s {
        Statement::InlinableSubroutineCall(call) => cg.name(call.id).to_owned(),
        Statement::Assignment(a) => cg.name(a.id).to_owned(),
        _ => String::new(),
    };
    let before = |s: &Statement| {
        let id = id_of(s);
        id.ends_with("prior") || id == "oad_allocate_matching" || id.contains("saving_value")
    };
    let after = |s: &Statement| matches!(id_of(s).as_str(), "oad_convert_post" | "oad_shape_test");
    let first = (0..at).rev().take_while(|&k| before(statements[k])).last().unwrap_or(at);
    let last = (at + 1..statements.len()).take_while(|&k| after(statements[k])).last().unwrap_or(at);
    let lines: Vec<String> = statements[first..=last].iter().filter_map(|s| describe(s)).collect();
    lines
}

fn verifies(original: &[u8], cg: &CallGraph) -> Status {
    let original = read_program(original, "original").expect("original lowers");
    let transformed = read_program(&xaif::write(cg, &WriteOptions::default()), "transformed").expect("output lowers");
    verify(&original, &transformed, &VerifyConfig { mode: Mode::Tangent, ..VerifyConfig::default() }).status
}

/// The output is schema-valid (xmllint) and passes our validator, activity check included.
fn schema_valid(cg: &CallGraph, name: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(format!("{name}.xaif"));
    let bytes = xaif::write(cg, &WriteOptions::default());
    std::fs::write(&path, &bytes).expect("write");
    let failures = common::xmllint_failures(&[path]);
    assert!(failures.is_empty(), "{failures:#?}");
    let findings = xaifbooster::xaif::validate::validate(&bytes, name, &Default::default());
    assert!(findings.iter().all(|f| f.severity != xaifbooster::xaif::Severity::Error), "{findings:#?}");
}

#[test]
fn every_kind_of_mismatch_is_converted_and_the_program_still_differentiates() {
    let input = std::fs::read(testdata("mixed.xaif")).expect("test program");
    let before = xaif::read(&input, "mixed", &ReadOptions::default()).expect("reads").call_graph;
    assert_eq!(activity_mismatches(&before).len(), 6, "{:?}", activity_mismatches(&before));

    let (cg, report) = transform(&input, &Config::default()).expect("transforms");
    assert_eq!(activity_mismatches(&cg), Vec::<String>::new());
    let tc = &report.type_change;
    assert_eq!((tc.conversions, tc.saved_indices, tc.allocations, tc.external_conversions), (6, 1, 0, 0));

    // Element to an array formal: the whole passive array is converted, tmp(1) is passed;
    // intent(in): no copy-back.
    assert_eq!(around_call(&cg, "head", "h4"), ["oad_convert(OpenAD_tyc_0,PA)", "call(OpenAD_tyc_0,S)"]);
    // Passive array and scalar to inout formals: copied in and out; the integer is left alone.
    assert_eq!(
        around_call(&cg, "head", "h5"),
        [
            "oad_convert(OpenAD_tyc_1,PA)",
            "oad_convert(OpenAD_tyc_2,P)",
            "call(OpenAD_tyc_1,OpenAD_tyc_2,I)",
            "oad_convert(PA,OpenAD_tyc_1)",
            "oad_convert(P,OpenAD_tyc_2)",
        ]
    );
    // scale overwrites I: its value is saved, and the copy-back writes PA(saved I).
    assert_eq!(
        around_call(&cg, "head", "h8"),
        [
            "save OpenAD_Symbol_0",
            "oad_convert(OpenAD_tyc_3,PA/I)",
            "call(X,OpenAD_tyc_3,I)",
            "oad_convert(PA/OpenAD_Symbol_0,OpenAD_tyc_3)",
        ]
    );
    // Constant to intent(in): copy-in only; passive to intent(out): copy-back only.
    assert_eq!(around_call(&cg, "head", "h9"), ["oad_convert(OpenAD_tyc_4,)", "call(OpenAD_tyc_4,Y)"]);
    assert_eq!(around_call(&cg, "head", "h10"), ["call(OpenAD_tyc_5)", "oad_convert(Q,OpenAD_tyc_5)"]);
    // Temporaries take the formal's activity and the declared bounds of a whole array.
    let tyc0 = cg.symbols.iter().find(|(_, s)| cg.name(s.name) == "OpenAD_tyc_0").map(|(_, s)| s).expect("tyc_0");
    assert!(tyc0.active && tyc0.temp && tyc0.shape == Shape::Vector && tyc0.dimensions.len() == 1);

    schema_valid(&cg, "mixed");
    // dY/dX = (27 X2, 27 X1, 0): only right if every conversion went both ways where needed
    // (without the saved index the copy-back writes PA(4), out of bounds).
    assert!(matches!(verifies(&input, &cg), Status::Ok), "{:?}", verifies(&input, &cg));
}

#[test]
fn rename_all_renames_routines_and_calls_and_still_differentiates() {
    let input = std::fs::read(testdata("mixed.xaif")).expect("test program");
    let config =
        Config { type_change: TypeChangeConfig { rename_all: true, ..Default::default() }, ..Config::default() };
    let (cg, report) = transform(&input, &config).expect("transforms");
    assert_eq!(report.type_change.renamed_routines, 5);
    for (_, cfg) in cg.cfgs() {
        assert!(cg.symbol_name(cfg.symbol).starts_with("OpenAD_"), "{}", cg.symbol_name(cfg.symbol));
    }
    for statement in statements_of(&cg, "head") {
        if let Statement::SubroutineCall(call) = statement {
            assert!(cg.symbol_name(call.symbol.expect("resolved")).starts_with("OpenAD_"));
        }
    }
    schema_valid(&cg, "renamed");
    assert!(matches!(verifies(&input, &cg), Status::Ok));
}

#[test]
fn external_routines_take_passive_arguments_unless_wrapped() {
    let input = std::fs::read(testdata("externals.xaif")).expect("test program");
    let (cg, report) = transform(&input, &Config::default()).expect("transforms");
    assert_eq!(activity_mismatches(&cg), Vec::<String>::new());
    assert_eq!(report.type_change.external_conversions, 8);
    // X is an intent(in) formal of head: copied in, never back. Y is copied both ways.
    assert_eq!(
        around_call(&cg, "head", "h2"),
        [
            "oad_convert(OpenAD_tyc_0,X)",
            "oad_convert(OpenAD_tyc_1,Y)",
            "call(OpenAD_tyc_0,OpenAD_tyc_1,I)",
            "oad_convert(Y,OpenAD_tyc_1)",
        ]
    );
    // X(I) goes as tmp(I), tmp holding all of X.
    assert_eq!(around_call(&cg, "head", "h3"), ["oad_convert(OpenAD_tyc_2,X)", "call(OpenAD_tyc_2/I,P,I)"]);
    // W has no declared bounds: its temporary is allocated like it and checked after the call.
    assert_eq!(
        around_call(&cg, "head", "h4"),
        [
            "oad_AllocateMatching(OpenAD_tyc_3,W)",
            "oad_convert(OpenAD_tyc_3,W)",
            "call(OpenAD_tyc_3,P,)",
            "oad_ShapeTest(OpenAD_tyc_3,W)",
            "oad_convert(W,OpenAD_tyc_3)",
        ]
    );
    schema_valid(&cg, "externals");

    let wrapped = Config {
        type_change: TypeChangeConfig { wrappers: vec!["WRAPPED".into()], ..Default::default() },
        ..Config::default()
    };
    let (cg, report) = transform(&input, &wrapped).expect("transforms");
    assert_eq!(report.type_change.wrapped_calls, 2);
    assert_eq!(report.type_change.external_conversions, 4);
    assert_eq!(around_call(&cg, "head", "h5"), ["call(X,Y)"]);
    let Some(Statement::SubroutineCall(call)) = statements_of(&cg, "head")
        .into_iter()
        .find(|s| matches!(s, Statement::SubroutineCall(c) if cg.name(c.id) == "h6"))
    else {
        panic!("call h6")
    };
    let wrapper = &cg.symbols[call.symbol.expect("resolved")];
    assert_eq!(cg.name(wrapper.name), "OpenAD_wrapped__8");
    assert!(wrapper.temp && wrapper.kind == SymbolKind::Subroutine);
    schema_valid(&cg, "wrapped");
}

#[test]
fn a_wrapper_called_with_two_activity_patterns_is_refused() {
    let input = std::fs::read(testdata("wrapper_conflict.xaif")).expect("test program");
    let config = Config {
        type_change: TypeChangeConfig { wrappers: vec!["wrapped".into()], ..Default::default() },
        ..Config::default()
    };
    match transform(&input, &config) {
        Err(PipelineError::TypeChange(TypeChangeError::WrapperActivity(w))) => {
            assert_eq!((w.statement.as_str(), w.found.as_str(), w.expected.as_str()), ("h2", "[1]", "[1, 2]"));
        }
        other => panic!("expected a wrapper activity error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn forced_passivation_makes_symbols_and_references_passive_and_converts_at_calls() {
    let input = std::fs::read(testdata("mixed.xaif")).expect("test program");
    let config = Config { passive: vec!["s".into(), "nothere".into()], ..Config::default() };
    let (cg, report) = transform(&input, &config).expect("transforms");
    assert_eq!(report.passivation.passivated, ["S"]);
    assert_eq!(report.passivation.unmatched, ["nothere"]);
    let s = cg.symbols.iter().find(|(_, s)| cg.name(s.name) == "S").map(|(id, _)| id).expect("S");
    assert!(!cg.symbols[s].active);
    let (mut references, mut active_references) = (0, 0);
    let mut cg = cg;
    cg.for_each_reference_mut(&mut |r| {
        if r.base_symbol() == Some(s) {
            references += 1;
            active_references += usize::from(r.active == ActiveUse::True || r.deriv);
        }
    });
    assert!(references >= 3);
    assert_eq!(active_references, 0);
    assert_eq!(activity_mismatches(&cg), Vec::<String>::new());
    // S now passive meets sum3's active intent(out) T: copy-back only.
    assert_eq!(
        around_call(&cg, "head", "h4"),
        ["oad_convert(OpenAD_tyc_0,PA)", "call(OpenAD_tyc_0,OpenAD_tyc_1)", "oad_convert(S,OpenAD_tyc_1)"]
    );
    // S does not depend on X: the derivatives are unchanged.
    assert!(matches!(verifies(&input, &cg), Status::Ok));
}

#[test]
fn initialize_derivatives_zeroes_active_locals_after_entry() {
    for example in ["noDefaultInit_1", "noDefaultInit_argumentConversion_3", "noDefaultInit_cbSideEffects"] {
        let dir = common::shared_dir().join("corpus").join(example);
        let input = std::fs::read(dir.join("tlm.in.xaif")).expect("input");
        let config = Config { initialize_derivatives: true, ..Config::default() };
        let (cg, report) = transform(&input, &config).expect("transforms");
        for (_, cfg) in cg.cfgs() {
            let Some((entry, _)) = cfg.graph.vertices.iter().find(|(_, v)| matches!(v.kind, CfgVertexKind::Entry))
            else {
                continue;
            };
            let out: Vec<&CfgEdge> = cfg.graph.edges.iter().filter(|e| e.source == entry).collect();
            assert_eq!(out.len(), 1, "{example}");
            let block = &cfg.graph.vertices[out[0].target];
            assert_eq!(cg.name(block.id), "_bbp_v_1", "{example}");
            let CfgVertexKind::BasicBlock(block) = &block.kind else { panic!("{example}: a basic block after Entry") };
            let zeroed: Vec<SymbolId> = block
                .statements
                .iter()
                .flat_map(|s| match s {
                    Statement::DerivativePropagator(p) => p.entries.iter().collect::<Vec<_>>(),
                    _ => Vec::new(),
                })
                .map(|e| match e {
                    PropagatorEntry::ZeroDeriv(r) => r.base_symbol().expect("symbol"),
                    other => panic!("{example}: {other:?}"),
                })
                .collect();
            let formals: Vec<SymbolId> = cfg.arguments.iter().flatten().map(|a| a.symbol).collect();
            let expected: Vec<SymbolId> = cg.scopes[cfg.body_scope]
                .symbols
                .iter()
                .copied()
                .filter(|&s| {
                    let sym = &cg.symbols[s];
                    sym.active
                        && !sym.temp
                        && sym.kind == SymbolKind::Variable
                        && sym.ty == SymbolType::Real
                        && !formals.contains(&s)
                })
                .collect();
            assert_eq!(zeroed, expected, "{example} {}", cg.symbol_name(cfg.symbol));
        }
        assert!(report.initialized_derivatives > 0 || example != "noDefaultInit_1");
        let status = {
            let original = read_program(&input, example).expect("lowers");
            let transformed = read_program(&xaif::write(&cg, &WriteOptions::default()), example).expect("lowers");
            verify(&original, &transformed, &common::verify_config(&dir, &original, Mode::Tangent, Default::default()))
                .status
        };
        assert!(matches!(status, Status::Ok), "{example}: {status:?}");
    }
}

/// Over the corpus: the inputs have call-site activity mismatches (the check can fail); our
/// tangent outputs have none.
#[test]
fn no_corpus_output_passes_an_actual_of_the_wrong_activity() {
    let mut inputs_with_mismatches = 0;
    let mut failures = Vec::new();
    let files = common::corpus_files("tlm.in.xaif");
    assert!(files.len() >= 190);
    for input in files {
        let name = common::short_name(&input);
        let bytes = std::fs::read(&input).expect("input");
        let before = xaif::read(&bytes, &name, &ReadOptions::default()).expect("reads").call_graph;
        inputs_with_mismatches += usize::from(!activity_mismatches(&before).is_empty());
        let (cg, _) = transform(&bytes, &Config::default()).expect("transforms");
        let mismatches = activity_mismatches(&cg);
        if !mismatches.is_empty() {
            failures.push(format!("{name}: {mismatches:?}"));
        }
    }
    assert!(inputs_with_mismatches >= 20, "{inputs_with_mismatches}");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Over the corpus, our conversions are the reference engine's: the same number of copy-ins
/// and copy-backs in every file (the reference writes `…Conversion prior` / `… post` ids).
#[test]
fn corpus_conversions_match_the_reference_file_by_file() {
    let mut differences = Vec::new();
    let mut total = (0, 0);
    for input in common::corpus_files("tlm.in.xaif") {
        let dir = input.parent().expect("example folder");
        let name = common::short_name(&input);
        let (cg, _) = transform(&std::fs::read(&input).expect("input"), &Config::default()).expect("transforms");
        let ours = String::from_utf8(xaif::write(&cg, &WriteOptions::default())).expect("utf-8");
        let reference = std::fs::read_to_string(dir.join("tlm.ref.xaif")).expect("reference");
        let count = |text: &str, suffix: &str| {
            text.lines().filter(|l| l.contains("<xaif:InlinableSubroutineCall") && l.contains(suffix)).count()
        };
        let ours =
            (count(&ours, "statement_id=\"oad_convert_prior\""), count(&ours, "statement_id=\"oad_convert_post\""));
        let theirs = (count(&reference, "Conversion prior\""), count(&reference, "Conversion post\""));
        total.0 += ours.0 + ours.1;
        total.1 += theirs.0 + theirs.1;
        if ours != theirs {
            differences.push(format!("{name}: ours {ours:?}, reference {theirs:?}"));
        }
    }
    assert!(total.1 > 40, "the reference has conversions: {total:?}");
    assert!(differences.is_empty(), "{differences:#?}");
}
