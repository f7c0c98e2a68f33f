//! Executor unit tests: hand-written XAIF in testdata/interp with results known by hand, and
//! random straight-line/loop programs checked against their direct Rust evaluation.

#[path = "interp_support/mod.rs"]
mod support;

use proptest::prelude::*;
use xaifbooster::interp::verify::{Driver, DriverConfig, Sweep, read_program};

fn program(text: &str) -> xaifbooster::interp::Program {
    read_program(text.as_bytes(), "test.xaif").unwrap_or_else(|e| panic!("{e}"))
}

fn run(text: &str, x: &[f64]) -> Vec<f64> {
    let prog = program(text);
    let driver = Driver::new(&prog, &DriverConfig { x: Some(x.to_vec()), ..DriverConfig::default() }).expect("driver");
    driver.run(x, Sweep::Plain).expect("run").y
}

fn testdata(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/interp/").to_owned() + name;
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn generated_loop_program_by_hand() {
    use xaifbooster::interp::testgen::*;
    // y(1) = x(1); do 3 times: y(1) = y(1) * x(2)   → x1 * x2^3
    let p = GenProgram {
        n: 2,
        m: 1,
        temps: 0,
        body: vec![
            GenStmt::Assign(GenVar::Y(0), GenExpr::X(0)),
            GenStmt::Loop(
                3,
                vec![GenStmt::Assign(
                    GenVar::Y(0),
                    GenExpr::Binary("mul_scal_scal", Box::new(GenExpr::X(1)), Box::new(GenExpr::X(0))),
                )],
            ),
        ],
    };
    // The loop body multiplies x(2) by x(1) each time (y is overwritten): y = x2 * x1.
    assert_eq!(run(&p.to_xaif(), &[0.5, 3.0]), vec![1.5]);
}

#[test]
fn constructs_by_hand() {
    // branches (multi-way), integer division, non-unit lower bounds, calls with sections,
    // nested loops: see the comments in the file for the expected values.
    let y = run(&testdata("constructs.xaif"), &[2.0, 3.0]);
    assert_eq!(y, vec![2.0 * 3.0 + 3.0, 7.0, 2.0 + 3.0 + 10.0]);
}

#[test]
fn matrix_bounds_are_read_last_dimension_first() {
    // See the file's comment: T(1,2) is in bounds and column-major sequence association
    // passes T(1,1), T(1,2) as A(1), A(2).
    assert_eq!(run(&testdata("matrix_bounds.xaif"), &[2.0, 3.0]), vec![9.0, 18.0]);
}

#[test]
fn transpose_reads_rows_as_columns() {
    // See the file's comment: a 2x3 matrix transposed into a 3x2 one (reading B at A's
    // positions instead would give 24 and 44).
    assert_eq!(run(&testdata("transpose.xaif"), &[2.0, 3.0]), vec![26.0, 42.0]);
}

#[test]
fn unshaped_local_arrays_take_the_shape_of_their_first_whole_assignment() {
    // See the file's comment: Z from the section 1:size(X), W from the right-hand side Z.
    let text = testdata("automatic_array.xaif");
    assert_eq!(run(&text, &[2.0, 3.0]), vec![6.0, 12.0]);
    // An element store into such an array cannot tell its shape: reported, never guessed.
    let element_store = text.replacen(
        r#"symbol_id="W"/></xaif:AssignmentLHS>"#,
        r#"symbol_id="W"/><xaif:ArrayElementReference vertex_id="2"><xaif:IndexTriplet><xaif:Index><xaif:Constant vertex_id="1" type="integer" value="1"/></xaif:Index></xaif:IndexTriplet></xaif:ArrayElementReference><xaif:VariableReferenceEdge edge_id="1" source="1" target="2"/></xaif:AssignmentLHS>"#,
        1,
    );
    assert_ne!(element_store, text);
    let prog = program(&element_store);
    let driver = Driver::new(&prog, &DriverConfig::default()).expect("driver");
    let err = driver.run(&[2.0, 3.0], Sweep::Plain).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unsupported: array W without a declared shape (allocatable or automatic) (at routine head, vertex '2', statement 'a2')"
    );
}

#[test]
fn external_routine_is_unsupported_by_name() {
    let prog = program(&testdata("external.xaif"));
    let driver = Driver::new(&prog, &DriverConfig::default()).expect("driver");
    let err = driver.run(&[0.5, 1.0], Sweep::Plain).unwrap_err();
    assert_eq!(err.to_string(), "unsupported: external routine ext__9 (at routine head, vertex '2', statement 'e1')");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn random_programs_match_direct_evaluation(p in support::program()) {
        let x: Vec<f64> = (1..=p.n).map(|i| i as f64 / 2.0).collect();
        let want = p.eval(&x);
        let got = run(&p.to_xaif(), &x);
        prop_assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            prop_assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "got {} want {}", g, w);
        }
    }
}
