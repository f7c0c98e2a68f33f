//! The random-program generator itself (`xaifbooster::interp::testgen` and the strategies in
//! `interp_support`): its documents are valid XAIF (the shared schema through xmllint, and our
//! validator), and its programs do contain the constructs the random tests are meant to cover.

mod common;
#[path = "interp_support/mod.rs"]
mod support;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use xaifbooster::interp::testgen::{GenArg, GenExpr, GenIndex, GenProgram, GenScalar, GenStmt, GenVar};
use xaifbooster::xaif::validate::{ValidateOptions, validate};

/// `count` programs from the deterministic runner.
fn sample(count: usize) -> Vec<GenProgram> {
    let mut runner = TestRunner::deterministic();
    let strategy = support::program();
    (0..count).map(|_| strategy.new_tree(&mut runner).expect("a program").current()).collect()
}

#[test]
fn generated_programs_are_schema_valid() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let schema = common::shared_dir().join("xaif/schema/xaif.xsd");
    let programs = sample(64);
    let mut files = Vec::new();
    for (k, p) in programs.iter().enumerate() {
        let text = p.to_xaif();
        // Inputs pass passive reals for active formals: no activity check (see ValidateOptions).
        let options = ValidateOptions { strict: true, activity: false };
        let findings = validate(text.as_bytes(), "generated", &options);
        assert!(findings.is_empty(), "our validator rejects program {k}: {findings:?}\n{text}");
        let path = dir.path().join(format!("p{k}.xaif"));
        std::fs::write(&path, text).expect("write");
        files.push(path);
    }
    let output = std::process::Command::new(common::xmllint())
        .arg("--noout")
        .arg("--schema")
        .arg(&schema)
        .args(&files)
        .output()
        .expect("xmllint runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    for (file, p) in files.iter().zip(&programs) {
        let shown = file.display().to_string();
        assert!(
            stderr.lines().any(|l| l == format!("{shown} validates")),
            "xmllint rejects a generated program:\n{}\n{}",
            stderr.lines().filter(|l| l.starts_with(&shown)).collect::<Vec<_>>().join("\n"),
            p.to_xaif()
        );
    }
}

#[derive(Debug, Default)]
struct Coverage {
    loops: usize,
    branches: usize,
    calls: usize,
    loop_subscripts: usize,
    passive_actuals: usize,
    constant_actuals: usize,
}

impl Coverage {
    fn var(&mut self, v: &GenVar) {
        if let GenVar::Elem(_, GenIndex::Loop { .. }) = v {
            self.loop_subscripts += 1;
        }
    }

    fn expr(&mut self, e: &GenExpr) {
        match e {
            GenExpr::Var(v) => self.var(v),
            GenExpr::Const(_) => {}
            GenExpr::Unary(_, a) => self.expr(a),
            GenExpr::Binary(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
        }
    }

    fn stmts(&mut self, stmts: &[GenStmt]) {
        for s in stmts {
            match s {
                GenStmt::Assign(v, e) => {
                    self.var(v);
                    self.expr(e);
                }
                GenStmt::Loop(_, body) => {
                    self.loops += 1;
                    self.stmts(body);
                }
                GenStmt::If(c, then, otherwise) => {
                    self.branches += 1;
                    self.expr(c);
                    self.stmts(then);
                    self.stmts(otherwise);
                }
                GenStmt::Call { b, c, .. } => {
                    self.calls += 1;
                    self.var(b);
                    match c {
                        GenArg::Var(GenVar::Scalar(GenScalar::P(_))) => self.passive_actuals += 1,
                        GenArg::Var(v) => self.var(v),
                        GenArg::Const(_) => self.constant_actuals += 1,
                    }
                }
            }
        }
    }
}

#[test]
fn generated_programs_cover_the_constructs() {
    let mut coverage = Coverage::default();
    for p in sample(100) {
        coverage.stmts(&p.body);
        if let Some(sub) = &p.sub {
            coverage.stmts(&sub.body);
        }
    }
    let Coverage { loops, branches, calls, loop_subscripts, passive_actuals, constant_actuals } = coverage;
    for (what, count) in [
        ("loops", loops),
        ("branches", branches),
        ("calls", calls),
        ("loop subscripts", loop_subscripts),
        ("passive actuals", passive_actuals),
        ("constant actuals", constant_actuals),
    ] {
        assert!(count >= 10, "only {count} {what} in 100 programs: {coverage:?}");
    }
}

/// Finite differences cannot judge an output too large for a step to move it, nor one computed
/// through such a value: `y = x + 1e16` and `y = (x + 1e16) - 1e16` have derivative 1, yet both
/// central differences read 0 and agree. Such programs are not reliable; `y = x + 1` is.
#[test]
fn values_too_large_for_a_step_make_differences_unreliable() {
    use xaifbooster::interp::testgen::GenArray;
    let x = || Box::new(GenExpr::Var(GenVar::Elem(GenArray::X, GenIndex::Const(0))));
    let plus = |a: Box<GenExpr>, c: f64| GenExpr::Binary("add_scal_scal", a, Box::new(GenExpr::Const(c)));
    let program = |rhs: GenExpr| GenProgram {
        n: 1,
        m: 1,
        temps: 0,
        passive: Vec::new(),
        body: vec![GenStmt::Assign(GenVar::Elem(GenArray::Y, GenIndex::Const(0)), rhs)],
        sub: None,
    };
    assert!(support::differences_reliable(&program(plus(x(), 1.0))));
    assert!(!support::differences_reliable(&program(plus(x(), 1e16))));
    assert!(!support::differences_reliable(&program(plus(Box::new(plus(x(), 1e16)), -1e16))));
}
