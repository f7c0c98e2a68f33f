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
