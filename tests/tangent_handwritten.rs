//! Tangent-linear code for hand-written inputs (`testdata/tangent/`) with constructs the corpus
//! lacks: every output is valid XAIF (the output schema and our validator), differentiates
//! correctly, and has the structure each input is about.

mod common;

use std::path::Path;

use xaifbooster::interp::verify::{Mode, Status, VerifyConfig, read_program, verify};
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::validate::{ValidateOptions, validate};
use xaifbooster::xaif::{self, ReadOptions, Severity, WriteOptions};

const XAIF: &str = "http://www.mcs.anl.gov/XAIF";

/// Transforms `testdata/tangent/<name>`, checks the output against the output schema and our
/// validator, verifies its derivatives against finite differences, and returns it.
fn transform_and_check(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/tangent").join(name);
    let input = std::fs::read(&path).expect("test input");
    let mut cg = xaif::read(&input, name, &ReadOptions::default()).expect("test input reads").call_graph;
    xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &xaifbooster::pipeline::Config::default())
        .expect("tangent");
    let output = xaif::write(&cg, &WriteOptions::default());

    let findings: Vec<String> = validate(&output, name, &ValidateOptions::default())
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.to_string())
        .collect();
    assert!(findings.is_empty(), "{name}: our validator refuses the output: {findings:#?}");
    let dir = tempfile::tempdir().expect("temp dir");
    let written = dir.path().join(name);
    std::fs::write(&written, &output).expect("write output");
    let invalid = common::xmllint_failures(&[written]);
    assert!(invalid.is_empty(), "{name}: output schema: {invalid:#?}");

    let original = read_program(&input, name).expect("original lowers");
    let transformed = read_program(&output, name).expect("output lowers");
    let report = verify(&original, &transformed, &VerifyConfig { mode: Mode::Tangent, ..VerifyConfig::default() });
    assert!(matches!(report.status, Status::Ok), "{name}: {:?}", report.status);
    String::from_utf8(output).expect("UTF-8 output")
}

fn is(node: &roxmltree::Node, name: &str) -> bool {
    node.is_element() && node.tag_name().namespace() == Some(XAIF) && node.tag_name().name() == name
}

/// The symbol a variable reference (or an assignment's left-hand side) names.
fn referenced_symbol<'a>(reference: &roxmltree::Node<'a, '_>) -> &'a str {
    reference
        .children()
        .find(|c| is(c, "SymbolReference"))
        .and_then(|s| s.attribute("symbol_id"))
        .expect("a reference names a symbol")
}

/// Temporaries of elemental operations on sections whose bounds are intrinsic calls
/// (`x(1:size(x))`, `x(lbound(x,1):n)`, `m(2, 1:size(m,2))`), written without `rShape`, are
/// arrays; without bounds known at compile time, each is allocated like the section before
/// its first assignment (`oad_AllocateMatching`).
#[test]
fn temporaries_of_sections_with_intrinsic_bounds_are_arrays() {
    let output = transform_and_check("section_bounds.xaif");
    let document = roxmltree::Document::parse(&output).expect("output parses");
    let temporaries: Vec<roxmltree::Node> = document
        .descendants()
        .filter(|n| is(n, "Symbol") && n.attribute("temp") == Some("1"))
        .filter(|n| n.attribute("symbol_id").is_some_and(|id| id.starts_with("OpenAD_")))
        .collect();
    let named = |kind: &str| temporaries.iter().filter(|t| t.attribute("symbol_id").unwrap().contains(kind)).count();
    assert!(named("_lin_") >= 5 && named("_aux_") >= 1, "too few temporaries: {temporaries:?}");
    for temporary in &temporaries {
        let id = temporary.attribute("symbol_id").unwrap();
        assert_eq!(temporary.attribute("shape"), Some("vector"), "{id} is declared {:?}", temporary.attribute("shape"));
        assert!(!temporary.children().any(|c| is(&c, "DimensionBounds")), "{id}: bounds known only at run time");
        // Document order: the allocation comes before the first statement that assigns it.
        let allocation = document.descendants().position(|n| {
            is(&n, "InlinableSubroutineCall")
                && n.attribute("subroutine_name") == Some("oad_AllocateMatching")
                && n.descendants().find(|a| is(a, "VariableReference")).is_some_and(|r| referenced_symbol(&r) == id)
        });
        let assignment = document
            .descendants()
            .position(|n| (is(&n, "AssignmentLHS") || is(&n, "Tgt") || is(&n, "Y")) && referenced_symbol(&n) == id);
        assert!(allocation.is_some(), "{id} is never allocated");
        assert!(allocation < assignment, "{id} is assigned before it is allocated");
    }
}

/// `y.d = reshape(x.d, shp)`: a direct action takes the derivatives of its active arguments
/// only; the integer shape vector keeps its value. A direct action of passive arguments only
/// (`c = transpose(p)`) gives a zero derivative instead of a statement reading `p.d`.
#[test]
fn direct_actions_pass_passive_arguments_by_value() {
    let output = transform_and_check("direct_action_passive.xaif");
    let document = roxmltree::Document::parse(&output).expect("output parses");
    let mut derivatives = Vec::new();
    for statement in document.descendants().filter(|n| is(n, "Assignment")) {
        let id = statement.attribute("statement_id").unwrap();
        let Some(original) = id.strip_prefix("_derivative_") else { continue };
        derivatives.push(original.to_owned());
        let rhs = statement.children().find(|c| is(c, "AssignmentRHS")).expect("right-hand side");
        for argument in rhs.children().filter(|c| is(c, "VariableReference")) {
            let symbol = referenced_symbol(&argument);
            let expected = if ["X", "A", "D"].contains(&symbol) { "1" } else { "0" };
            assert_eq!(argument.attribute("deriv"), Some(expected), "{id}: argument {symbol}");
        }
    }
    assert_eq!(derivatives, ["a", "b", "y"]);
    assert!(
        document.descendants().any(|n| is(&n, "ZeroDeriv") && referenced_symbol(&n) == "C"),
        "the derivative of c = transpose(p) is not zeroed"
    );
}

/// `b = transpose(2 a)`: a direct action whose active argument is an expression has no
/// derivative statement to give (no statement computes the expression's derivative); the
/// transformation refuses it instead of applying the action to the expression's operands.
#[test]
fn direct_action_of_an_active_expression_is_refused() {
    let name = "direct_action_of_expression.xaif";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/tangent").join(name);
    let input = std::fs::read(&path).expect("test input");
    let mut cg = xaif::read(&input, name, &ReadOptions::default()).expect("test input reads").call_graph;
    let error =
        xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &xaifbooster::pipeline::Config::default())
            .expect_err("an action on an expression is refused");
    assert_eq!(
        error.to_string(),
        "routine head: statement b: intrinsic 'transpose_arr' acts directly on derivatives, so its active \
arguments must be variables, not expressions"
    );
}
