//! Executor unit tests: hand-written XAIF in testdata/interp with results known by hand, and
//! random programs (loops, branches, calls) checked against their direct Rust evaluation.

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
    let x = |i| GenExpr::Var(GenVar::Elem(GenArray::X, GenIndex::Const(i)));
    // y(1) = x(1); do 3 times: y(1) = x(2) * x(1)
    let p = GenProgram {
        n: 2,
        m: 1,
        temps: 0,
        passive: Vec::new(),
        body: vec![
            GenStmt::Assign(GenVar::Elem(GenArray::Y, GenIndex::Const(0)), x(0)),
            GenStmt::Loop(
                3,
                vec![GenStmt::Assign(
                    GenVar::Elem(GenArray::Y, GenIndex::Const(0)),
                    GenExpr::Binary("mul_scal_scal", Box::new(x(1)), Box::new(x(0))),
                )],
            ),
        ],
        sub: None,
    };
    // The loop body multiplies x(2) by x(1) each time (y is overwritten): y = x2 * x1.
    assert_eq!(p.eval(&[0.5, 3.0]), vec![1.5]);
    assert_eq!(run(&p.to_xaif(), &[0.5, 3.0]), vec![1.5]);
}

#[test]
fn generated_branch_and_call_program_by_hand() {
    use xaifbooster::interp::testgen::*;
    let elem = |a, i| GenVar::Elem(a, i);
    let var = |v| Box::new(GenExpr::Var(v));
    let loop_index = GenIndex::Loop { depth: 0, offset: 0 };
    let (b, c, s0, t0) = (
        GenVar::Scalar(GenScalar::B),
        GenVar::Scalar(GenScalar::C),
        GenVar::Scalar(GenScalar::T(0)),
        GenVar::Scalar(GenScalar::T(0)),
    );
    // sub(A, B, C): S_0 = A(1) * C; B = B + S_0; do I_0 = 1, 2: A(I_0) = A(I_0) + A(I_0)
    let sub = GenSub {
        locals: 1,
        body: vec![
            GenStmt::Assign(s0, GenExpr::Binary("mul_scal_scal", var(elem(GenArray::A, GenIndex::Const(0))), var(c))),
            GenStmt::Assign(b, GenExpr::Binary("add_scal_scal", var(b), var(s0))),
            GenStmt::Loop(
                2,
                vec![GenStmt::Assign(
                    elem(GenArray::A, loop_index),
                    GenExpr::Binary(
                        "add_scal_scal",
                        var(elem(GenArray::A, loop_index)),
                        var(elem(GenArray::A, loop_index)),
                    ),
                )],
            ),
        ],
    };
    // head: P_0 = 0.5; do I_0 = 1, 2: Y(I_0) = X(I_0) * X(I_0); T_0 = X(2)
    //       if (T_0 - 1 > 0) then call sub(X, T_0, P_0) else Y(1) = -1 endif
    //       Y(2) = Y(2) + T_0; Y(1) = Y(1) + X(1)
    let p = GenProgram {
        n: 2,
        m: 2,
        temps: 1,
        passive: vec![0.5],
        body: vec![
            GenStmt::Loop(
                2,
                vec![GenStmt::Assign(
                    elem(GenArray::Y, loop_index),
                    GenExpr::Binary(
                        "mul_scal_scal",
                        var(elem(GenArray::X, loop_index)),
                        var(elem(GenArray::X, loop_index)),
                    ),
                )],
            ),
            GenStmt::Assign(t0, GenExpr::Var(elem(GenArray::X, GenIndex::Const(1)))),
            GenStmt::If(
                GenExpr::Binary("sub_scal_scal", var(t0), Box::new(GenExpr::Const(1.0))),
                vec![GenStmt::Call { array: GenArray::X, b: t0, c: GenArg::Var(GenVar::Scalar(GenScalar::P(0))) }],
                vec![GenStmt::Assign(elem(GenArray::Y, GenIndex::Const(0)), GenExpr::Const(-1.0))],
            ),
            GenStmt::Assign(
                elem(GenArray::Y, GenIndex::Const(1)),
                GenExpr::Binary("add_scal_scal", var(elem(GenArray::Y, GenIndex::Const(1))), var(t0)),
            ),
            GenStmt::Assign(
                elem(GenArray::Y, GenIndex::Const(0)),
                GenExpr::Binary(
                    "add_scal_scal",
                    var(elem(GenArray::Y, GenIndex::Const(0))),
                    var(elem(GenArray::X, GenIndex::Const(0))),
                ),
            ),
        ],
        sub: Some(sub),
    };
    // x = (0.5, 3): Y = (0.25, 9), T_0 = 3 > 1: S_0 = 0.25, T_0 = 3.25, X = (1, 6);
    // Y(2) = 12.25, Y(1) = 0.25 + 1.
    assert_eq!(p.eval(&[0.5, 3.0]), vec![1.25, 12.25]);
    assert_eq!(run(&p.to_xaif(), &[0.5, 3.0]), vec![1.25, 12.25]);
    // x = (0.5, 0.5): T_0 = 0.5 < 1: Y(1) = -1, Y(2) = 0.25 + 0.5, Y(1) = -1 + 0.5.
    assert_eq!(p.eval(&[0.5, 0.5]), vec![-0.5, 0.75]);
    assert_eq!(run(&p.to_xaif(), &[0.5, 0.5]), vec![-0.5, 0.75]);
    assert_eq!(p.trace(&[0.5, 3.0]).decisions, vec![true]);
    // The condition X(2) - 1 is zero at x = (0.5, 1): finite differences there would cross it.
    assert!(p.branches_stable_at(&[0.5, 3.0]));
    assert!(!p.branches_stable_at(&[0.5, 1.0]));
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
    assert_eq!(
        err.to_string(),
        "unsupported: external routine ext__9 (--black-boxes runs it as a black box that changes nothing) (at routine head, vertex '2', statement 'e1')"
    );
    // As a black box it changes nothing, so the program runs (and computes nothing).
    let config = DriverConfig { black_boxes: true, ..DriverConfig::default() };
    let driver = Driver::new(&prog, &config).expect("driver");
    assert_eq!(driver.run(&[0.5, 1.0], Sweep::Plain).expect("runs").y, vec![0.0; 3]);
}

/// `passive_store.xaif` computes `y = (x(k) * x(2), sin(x(1)))` after a call of a routine
/// without code, with `k` set by a passive store the front end left out as a Marker. Without
/// a value for the store `k` stays 0, out of bounds; with one, every store the du-ud chains
/// attribute to the Marker puts it in; the routine without code runs only as a black box.
#[test]
fn passive_stores_left_out_and_black_boxes() {
    let prog = program(&testdata("passive_store.xaif"));
    assert_eq!(prog.passive_stores(), vec![("head".to_owned(), "m1".to_owned(), vec!["K".to_owned()])]);
    assert_eq!(prog.called_without_code(), vec!["ext__9".to_owned()]);
    let x = [0.5, 3.0];
    let run = |config: DriverConfig| Driver::new(&prog, &config).expect("driver").run(&x, Sweep::Plain);
    let refused = run(DriverConfig { passive_store_value: Some(2), ..DriverConfig::default() }).unwrap_err();
    assert!(refused.to_string().contains("call of ext__9 which has no control flow graph"), "{refused}");
    let missing = run(DriverConfig { black_boxes: true, ..DriverConfig::default() }).unwrap_err();
    assert!(missing.to_string().contains("index 0 of dimension 1 of X out of bounds 1:2"), "{missing}");
    for (k, y1) in [(1, 0.5 * 3.0), (2, 3.0 * 3.0)] {
        let y = run(DriverConfig { black_boxes: true, passive_store_value: Some(k), ..DriverConfig::default() })
            .expect("runs")
            .y;
        assert_eq!(y, vec![y1, 0.5f64.sin()], "k = {k}");
    }
    // The inferred driver makes both choices and says so; with a value given it guesses none.
    let (driver, _) = xaifbooster::interp::verify::infer_driver(&prog, &DriverConfig::default()).expect("inferred");
    assert_eq!((driver.passive_store_value, driver.black_boxes), (Some(1), true));
    let notes = driver.guesses.join("; ");
    assert!(notes.contains("K = 1 (in every element) guessed for the passive stores"), "{notes}");
    assert!(notes.contains("calls of ext__9, which has no code in the XAIF, run as black boxes"), "{notes}");
    let given = DriverConfig { passive_store_value: Some(2), ..DriverConfig::default() };
    let (driver, _) = xaifbooster::interp::verify::infer_driver(&prog, &given).expect("inferred");
    assert_eq!((driver.passive_store_value, driver.black_boxes), (Some(2), true));
    assert!(!driver.guesses.join("; ").contains("guessed for the passive stores"), "{:?}", driver.guesses);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn random_programs_match_direct_evaluation(p in support::program()) {
        let x = p.test_point();
        let want = p.eval(&x);
        let got = run(&p.to_xaif(), &x);
        prop_assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            prop_assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "got {} want {}", g, w);
        }
    }
}

/// A substring reads as the front end writes it, a 0-based offset and a length:
/// `S(offset 1, length 2)` of 'abcd' is 'bc', which picks the branch `y = 2x` (before, the
/// executor refused substrings; read as `S(1:2)` or as `[1, 2)` it would pick `y = 3x`).
#[test]
fn substring_reads_offset_and_length() {
    assert_eq!(run(&testdata("substring.xaif"), &[5.0]), vec![10.0]);
}

/// A global passed as an actual argument and changed by its own name during the call has no
/// one meaning in Fortran (copy-in/copy-out gives y = x, association y = 2x): the executor
/// refuses it, naming the global and the dummy, instead of running it by reference (before,
/// it gave y = 2x, and the tangent code, which copies converted actuals in and out, then
/// looked wrong: argumentConversion_6).
#[test]
fn a_global_changed_by_name_while_associated_is_refused() {
    let prog = program(&testdata("aliased_global.xaif"));
    let driver = Driver::new(&prog, &DriverConfig { x: Some(vec![5.0]), ..DriverConfig::default() }).expect("driver");
    let error = driver.run(&[5.0], Sweep::Plain).expect_err("non-conforming program");
    assert!(error.is_unsupported(), "{error}");
    let why = error.to_string();
    assert!(
        why.contains("non-conforming program: global G is modified by its own name while it is associated with dummy argument A of foo"),
        "{why}"
    );
}

/// An array element passed to an array dummy declared without bounds passes the rest of its
/// array (sequence association): foo(X(2)) sets its A(2), which is X(3). Before, the executor
/// refused the call as an assumed-shape argument of another rank (argumentShapeMismatch1).
#[test]
fn an_element_passed_to_an_array_dummy_passes_the_rest_of_its_array() {
    assert_eq!(run(&testdata("sequence_association.xaif"), &[1.0, 2.0, 3.0]), vec![1.0, 2.0, 9.0]);
}
