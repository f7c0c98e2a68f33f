//! The analyses on the papers' own examples (built as XAIF in testdata/analysis/ by
//! scripts/gen_analysis_tests.py), and `analyze` over the whole corpus.

mod common;

use std::path::Path;

use xaifbooster::analysis::linearity::Dependence;
use xaifbooster::analysis::report::{AnalysisReport, RoutineReport, analyze};
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions};

fn report(name: &str) -> AnalysisReport {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/analysis").join(name);
    let bytes = std::fs::read(&path).expect("test program");
    let cg = xaif::read(&bytes, name, &ReadOptions::default()).expect("reads").call_graph;
    analyze(&cg, Catalogue::builtin(), &[], &[]).expect("analyzes")
}

fn head(report: &AnalysisReport) -> &RoutineReport {
    report.routines.iter().find(|r| r.name == "head").expect("head")
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// Strout and Hovland, Table 1: the dependences of the loop of their Fig. 1.
#[test]
fn linearity_reproduces_table_1_of_the_paper() {
    use Dependence::{Linear, Nonlinear};
    let report = report("linearity_fig1.xaif");
    let l = &head(&report).linearity;
    let row = |x: &str| -> Vec<(String, Dependence)> {
        l.dependences.get(x).map(|d| d.iter().map(|(v, c)| (v.clone(), *c)).collect()).unwrap_or_default()
    };
    let expect = |list: &[(&str, Dependence)]| -> Vec<(String, Dependence)> {
        list.iter().map(|(v, c)| ((*v).to_owned(), *c)).collect()
    };
    assert_eq!(row("F"), expect(&[("A", Nonlinear), ("F", Linear), ("T", Linear), ("X", Nonlinear)]));
    assert_eq!(row("T"), expect(&[("A", Nonlinear), ("X", Nonlinear)]));
    assert_eq!(row("A"), expect(&[("A", Linear), ("X", Nonlinear)]));
    assert_eq!(row("X"), expect(&[]));
    // a = 0, f = 0 and f = f + t have constant partials; a += x*x and t = sin(a) do not.
    assert_eq!((l.linear_statements, l.statements), (3, 5));
    // Only linear loop-carried dependences (a on a, f on f): the adjoint may be fused.
    assert_eq!(l.loops.len(), 1);
    assert!(l.loops[0].fusable, "{:?}", l.loops[0].nonlinear_carried);
}

/// Hascoët, Naumann and Pascual, Fig. 1 and section 2: Req(x(i) = j + sin(x(i))) = {x, i},
/// Req(x(j) = j*cos(x(j)) + a) = {x, j}; x, i and j are overwritten later and recorded; a,
/// though overwritten in every iteration, is in no Req set and is not recorded.
#[test]
fn tbr_reproduces_the_papers_example() {
    let report = report("tbr_fig1.xaif");
    let tbr = &head(&report).tbr;
    let statement = |id: &str| tbr.statements.iter().find(|s| s.statement == id).expect("statement");
    assert_eq!(statement("4").required, names(&["I", "X"]));
    assert_eq!(statement("4").recorded, names(&["I", "X"]));
    assert_eq!(statement("5").required, names(&["J", "X"]));
    assert_eq!(statement("5").recorded, names(&["J", "X"]));
    assert_eq!(tbr.recorded, names(&["I", "J", "X"]));
    assert!(!tbr.required.contains(&"A".to_owned()));
    // x(j) = j*cos(x(j)) + a: x depends on itself nonlinearly across iterations.
    assert!(!head(&report).linearity.loops[0].fusable);
}

/// Strout and Hovland, section 2: in `x = 3*z + y**2 + w/(y*y)`, x depends linearly on z and
/// nonlinearly on y and w.
#[test]
fn linearity_reproduces_the_papers_statement_example() {
    use Dependence::{Linear, Nonlinear};
    let report = report("linearity_statement.xaif");
    let l = &head(&report).linearity;
    let row: Vec<(String, Dependence)> = l.dependences["X"].iter().map(|(v, c)| (v.clone(), *c)).collect();
    assert_eq!(row, vec![("W".to_owned(), Nonlinear), ("Y".to_owned(), Nonlinear), ("Z".to_owned(), Linear)]);
    assert_eq!((l.linear_statements, l.statements), (0, 1));
    // Its adjoint needs y and w (arguments of the square, the product and the quotient), not z.
    assert_eq!(head(&report).tbr.required, names(&["W", "Y"]));
}

/// Strout and Hovland, Fig. 8 and section 2.2: c depends on b nonlinearly (through b(i)*x(i)),
/// but the dependence the loop carries (c(i) on b(i-1)) is linear, so the loop has no nonlinear
/// loop-carried dependence. The paper's formulation (pairs of variables in a loop-carried
/// dependence) cannot prove it; ours asks whether a carried variable depends on itself
/// nonlinearly (b depends on x only), and finds the loop fusable.
#[test]
fn linearity_on_figure_8_finds_no_nonlinear_carried_dependence() {
    use Dependence::{Linear, Nonlinear};
    let report = report("linearity_fig8.xaif");
    let l = &head(&report).linearity;
    assert_eq!(l.dependences["C"].get("B"), Some(&Nonlinear));
    assert_eq!(l.dependences["C"].get("X"), Some(&Nonlinear));
    assert_eq!(l.dependences["B"].iter().map(|(v, c)| (v.as_str(), *c)).collect::<Vec<_>>(), vec![("X", Linear)]);
    assert_eq!(l.loops.len(), 1);
    assert!(l.loops[0].fusable, "{:?}", l.loops[0].nonlinear_carried);
}

/// Hascoët, Naumann and Pascual, section 6 and appendix B (the Bratu loop, canonicalized): the
/// temporaries exp5..exp10 are used nonlinearly in active terms and overwritten by the next
/// iteration, so they are recorded; f(i-1), f(i), f(i+1) enter no partial and are not; x and prm
/// are required but never overwritten (appendix B pushes neither).
#[test]
fn tbr_reproduces_the_bratu_case_study() {
    let report = report("tbr_bratu.xaif");
    let tbr = &head(&report).tbr;
    let temporaries: Vec<String> = (5..=10).map(|k| format!("EXP{k}")).collect();
    for t in &temporaries {
        assert!(tbr.recorded.contains(t), "{t} not recorded: {tbr:?}");
    }
    assert!(!tbr.required.contains(&"F".to_owned()), "{tbr:?}");
    assert!(!tbr.recorded.contains(&"F".to_owned()), "{tbr:?}");
    for v in ["PRM", "X"] {
        assert!(tbr.not_recorded.contains(&v.to_owned()), "{v}: {tbr:?}");
    }
    // exp(exp5) needs exp5; h*h*prm(1)/12.0*exp6 needs exp6 (and h, prm, and the subscript i).
    let statement = |id: &str| tbr.statements.iter().find(|s| s.statement == id).expect("statement");
    assert_eq!(statement("4").required, names(&["EXP5"]));
    assert_eq!(statement("5").required, names(&["EXP6", "H", "I", "PRM"]));
}

/// The alias map: g and h name one storage (a common block declared differently in two
/// routines). foo's adjoint needs g, and foo1 overwrites that storage as h after foo returns,
/// so g is recorded and the values strategy pushes it; h, read after g = x, carries x (active).
#[test]
fn analyses_follow_the_alias_map() {
    use xaifbooster::analysis::activity;
    use xaifbooster::analysis::effects::Effects;
    use xaifbooster::analysis::linearity::Linearity;
    use xaifbooster::passes::adjoint::{AdjointConfig, TapeStrategy};
    use xaifbooster::pipeline::Config;

    let report = report("common_block.xaif");
    let foo = report.routines.iter().find(|r| r.name == "foo").expect("foo");
    assert_eq!(foo.tbr.statements.len(), 1, "{:?}", foo.tbr);
    assert_eq!(foo.tbr.statements[0].required, names(&["G"]));
    assert_eq!(foo.tbr.statements[0].recorded, names(&["G"]));

    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/analysis/common_block.xaif");
    let cg = xaif::read(&std::fs::read(&path).expect("file"), "common_block", &ReadOptions::default())
        .expect("reads")
        .call_graph;
    let effects = Effects::of(&cg);
    let linearity = Linearity::of(&cg, Catalogue::builtin(), &effects);
    let (independents, dependents) = activity::default_seeds(&cg, &effects);
    let active = activity::activity(&cg, &effects, &linearity, independents, dependents);
    let h = cg.symbols.iter().find(|(_, s)| cg.name(s.name) == "H").map(|(id, _)| id).expect("h");
    assert!(active.is_active(&cg, h), "h shares g's storage, which holds x");

    let mut adjoint = cg.clone();
    let config = Config {
        adjoint: AdjointConfig { tape: TapeStrategy::Values, ..AdjointConfig::default() },
        ..Config::default()
    };
    xaifbooster::pipeline::adjoint(&mut adjoint, Catalogue::builtin(), &config).expect("adjoint");
    let output = String::from_utf8(xaif::write(&adjoint, &xaif::WriteOptions::default())).expect("utf-8");
    assert!(output.contains("push_s0"), "the values strategy must push g");
}

/// Varied and useful: q never depends on x, r never reaches y, though the front end flagged
/// both active.
#[test]
fn activity_is_more_precise_than_the_front_ends_flags() {
    let report = report("activity.xaif");
    let activity = &head(&report).activity;
    assert_eq!(report.independents, names(&["X"]));
    assert_eq!(report.dependents, names(&["Y"]));
    assert_eq!(activity.active, names(&["P", "X", "Y"]));
    assert_eq!(activity.more_precise, names(&["Q", "R"]));
    assert!(activity.disagreements.is_empty());
    // Naming the seeds: with y depending on x only through p.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/analysis/activity.xaif");
    let cg = xaif::read(&std::fs::read(&path).expect("file"), "activity", &ReadOptions::default()).expect("reads");
    let named = analyze(&cg.call_graph, Catalogue::builtin(), &names(&["x"]), &names(&["p"])).expect("named seeds");
    assert_eq!(head(&named).activity.active, names(&["P", "X"]));
    let error = analyze(&cg.call_graph, Catalogue::builtin(), &names(&["nothing"]), &[]).expect_err("unknown name");
    assert!(error.to_string().contains("nothing"), "{error}");
}

/// `analyze` on every corpus input, in process, and its JSON through the binary on a sample.
#[test]
fn analyze_runs_on_every_corpus_input() {
    let mut inputs = common::corpus_files("tlm.in.xaif");
    inputs.extend(common::corpus_files("adm.in.xaif"));
    assert!(inputs.len() >= 360, "only {} corpus inputs", inputs.len());
    let (mut analyzed, mut more_precise, mut recorded, mut required) = (0, 0, 0, 0);
    for input in &inputs {
        let name = input.display().to_string();
        let bytes = std::fs::read(input).expect("input");
        let Ok(read) = xaif::read(&bytes, &name, &ReadOptions::default()) else { continue };
        let report = analyze(&read.call_graph, Catalogue::builtin(), &[], &[]).expect("analyzes");
        serde_json::to_string(&report).expect("serializes");
        assert!(!report.render().is_empty());
        analyzed += 1;
        for r in &report.routines {
            more_precise += r.activity.more_precise.len();
            recorded += r.tbr.recorded.len();
            required += r.tbr.required.len();
            for s in &r.tbr.statements {
                assert!(s.recorded.iter().all(|v| s.required.contains(v)), "{name}: {s:?}");
            }
        }
    }
    eprintln!(
        "analyzed {analyzed} inputs: {more_precise} variables flagged active by the front end are passive here; \
         {recorded} of {required} required variables to be recorded"
    );
    assert!(analyzed >= 360, "only {analyzed} inputs analyzed");

    let binary = env!("CARGO_BIN_EXE_xaifbooster");
    let sample = common::shared_dir().join("corpus/Loop_simple_2a/adm.in.xaif");
    let output = std::process::Command::new(binary).args(["analyze", "--json"]).arg(&sample).output().expect("runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let routines = json["routines"].as_array().expect("routines");
    let head = routines.iter().find(|r| r["name"].as_str().is_some_and(|n| n.starts_with("head"))).expect("head");
    for key in ["activity", "tbr", "linearity"] {
        assert!(head[key].is_object(), "{key} missing: {head}");
    }
    assert!(head["linearity"]["loops"].as_array().is_some_and(|l| !l.is_empty()));
}

/// `--activity-analysis` passivates the locals the analysis proves passive; wherever that
/// changes a corpus input, both modes' outputs still verify (the same driver as the
/// calibration tests), and on the hand-made example it removes q and r.
#[test]
fn passivating_by_activity_analysis_keeps_every_output_verifying() {
    use xaifbooster::interp::Template;
    use xaifbooster::interp::verify::{Mode, Status, read_program, verify};
    use xaifbooster::pipeline::Config;
    let config = Config { activity_analysis: true, ..Config::default() };

    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/analysis/activity.xaif");
    let mut cg = xaif::read(&std::fs::read(&path).expect("file"), "activity", &ReadOptions::default())
        .expect("reads")
        .call_graph;
    let report = xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &config).expect("tangent");
    assert_eq!(report.passivation.passivated, names(&["Q", "R"]));

    let mut changed = Vec::new();
    for (input, mode) in [("tlm.in.xaif", Mode::Tangent), ("adm.in.xaif", Mode::Adjoint)] {
        for file in common::corpus_files(input) {
            let dir = file.parent().expect("example");
            let bytes = std::fs::read(&file).expect("input");
            let Ok(read) = xaif::read(&bytes, "corpus", &ReadOptions::default()) else { continue };
            let mut cg = read.call_graph;
            let report = match mode {
                Mode::Tangent => xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &config),
                Mode::Adjoint => xaifbooster::pipeline::adjoint(&mut cg, Catalogue::builtin(), &config),
            }
            .expect("transforms");
            if report.passivation.passivated.is_empty() {
                continue;
            }
            let output = xaif::write(&cg, &xaif::WriteOptions::default());
            let original = read_program(&bytes, "original").expect("original lowers");
            let transformed = read_program(&output, "transformed").expect("output lowers");
            let result = verify(&original, &transformed, &common::verify_config(dir, &original, mode, Template::Split));
            let example = dir.file_name().expect("name").to_string_lossy().into_owned();
            assert!(
                !matches!(result.status, Status::Mismatch(_)),
                "{example} ({mode:?}) with {:?} passive: {:?}",
                report.passivation.passivated,
                result.status
            );
            changed.push(format!("{example} ({mode:?}): {:?} {}", report.passivation.passivated, result.status.word()));
        }
    }
    eprintln!("passivated by activity analysis: {changed:#?}");
}
