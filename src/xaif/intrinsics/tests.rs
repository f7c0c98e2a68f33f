//! Checks of the embedded catalogue (consistency, mathematics by finite differences,
//! agreement with the reference catalogue, coverage of the corpus) and of the reader's errors.

use std::path::PathBuf;

use super::*;

fn shared_dir() -> PathBuf {
    let dir = std::env::var_os("XAIF_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared")));
    assert!(
        dir.join("xaif/intrinsics").is_dir(),
        "reference material not found at {} (set XAIF_SHARED to the shared directory)",
        dir.display()
    );
    dir
}

fn read_shared(relative: &str) -> Vec<u8> {
    let path = shared_dir().join(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A small deterministic generator (no dependency, same points on every run).
struct Lcg(u64);

impl Lcg {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A point where every intrinsic of the catalogue is smooth and defined: the first
    /// argument in (0.2, 0.9) (inside the domain of arcsin, arccos, ln, sqrt, away from the
    /// kink of abs), the second in (1.1, 3) (positive for sign, larger than the first so
    /// that mod's quotient is far from an integer).
    fn point(&mut self) -> [f64; 2] {
        [0.2 + 0.7 * self.unit(), 1.1 + 1.9 * self.unit()]
    }
}

/// Intrinsics over complex numbers: their partials (all `linear_one`) are conventions for
/// the real and imaginary parts, not derivatives of a real function.
const COMPLEX: [&str; 2] = ["complex_scal", "imag_scal"];

#[test]
fn embedded_catalogue_parses_and_is_consistent() {
    let catalogue = Catalogue::builtin();
    let inlinable = catalogue.names().filter(|n| catalogue.get(n).unwrap().inlinable).count();
    assert_eq!(inlinable, 50, "inlinable intrinsics");
    assert_eq!(catalogue.len() - inlinable, 2, "non-inlinable intrinsics");
    let names: Vec<&str> = catalogue.names().collect();
    assert!(names.windows(2).all(|w| w[0] < w[1]), "names are sorted and unique");
    for name in catalogue.names() {
        let definition = catalogue.get(name).expect("listed name");
        assert_eq!(definition.name, name);
        if !definition.inlinable {
            assert!(definition.partials.is_empty(), "{name}");
            assert!(matches!(definition.function, FunctionDefinition::DirectAction { .. }), "{name}");
            continue;
        }
        assert_eq!(definition.arity, definition.partials.len(), "{name}");
        assert!(matches!(definition.function, FunctionDefinition::Builtin { .. }), "{name}");
        for (i, partial) in definition.partials.iter().enumerate() {
            // The classification and the expression say the same thing, both ways.
            assert_eq!(
                partial.expression.implied_kind(),
                Some(partial.kind),
                "{name} partial {}: classified {} but the expression is {:?}",
                i + 1,
                partial.kind.as_str(),
                partial.expression
            );
        }
        // Real-valued intrinsics over reals can be evaluated.
        if definition.returns_real() && !COMPLEX.contains(&name) {
            let args = &[0.5, 2.0][..definition.arity];
            assert!(eval_intrinsic(name, args).is_some_and(f64::is_finite), "{name} has no value");
        }
    }
}

/// Every non-passive partial of a real intrinsic against central finite differences of the
/// intrinsic's value: this is what proves the mathematics of the catalogue.
#[test]
fn partials_match_finite_differences() {
    let catalogue = Catalogue::builtin();
    let mut random = Lcg(7);
    let (mut checked, mut nonlinear) = (0, 0);
    for name in catalogue.names() {
        let definition = catalogue.get(name).expect("listed name");
        for (i, partial) in definition.partials.iter().enumerate() {
            if partial.kind == PartialKind::Passive || COMPLEX.contains(&name) {
                continue;
            }
            nonlinear += usize::from(partial.kind == PartialKind::Nonlinear);
            for _ in 0..5 {
                let point = random.point();
                let args = &point[..definition.arity];
                let value = |x: &[f64]| eval_intrinsic(name, x).unwrap_or_else(|| panic!("{name} has no value"));
                let analytic = partial
                    .eval(args, Some(value(args)))
                    .unwrap_or_else(|| panic!("{name}: partial {} cannot be evaluated", i + 1));
                let h = 1e-5 * args[i].abs().max(1.0);
                let (mut up, mut down) = (args.to_vec(), args.to_vec());
                up[i] += h;
                down[i] -= h;
                let numeric = (value(&up) - value(&down)) / (2.0 * h);
                let error = (analytic - numeric).abs() / numeric.abs().max(1.0);
                assert!(error < 1e-6, "{name} partial {} at {args:?}: {analytic} vs {numeric}", i + 1);
                checked += 1;
            }
        }
    }
    // 22 nonlinear partials (those of mul, div and pow count twice) plus the linear ones.
    assert_eq!(nonlinear, 22, "nonlinear partials checked");
    // The 7 others: add (2), sub (2), minus, real, mod's first argument.
    assert_eq!(checked, 5 * (22 + 7));
}

/// The passive partials are the reference's convention for functions that are locally
/// constant (int, nint) or whose derivative the engine deliberately drops (max, min,
/// reductions): where the value is locally constant the convention is also the truth.
#[test]
fn passive_partials_of_rounding_are_derivatives() {
    for name in ["int_scal", "nint_scal"] {
        for x in [0.3, 1.2, -2.7] {
            let slope =
                (eval_intrinsic(name, &[x + 1e-6]).unwrap() - eval_intrinsic(name, &[x - 1e-6]).unwrap()) / 2e-6;
            assert_eq!(slope, 0.0, "{name} at {x}");
        }
    }
    let definition = Catalogue::builtin().get("nc_max_scal_scal").unwrap();
    assert!(definition.non_smooth);
    assert!(definition.partials.iter().all(|p| p.kind == PartialKind::Passive));
}

fn reference() -> Catalogue {
    let mut reference =
        Catalogue::parse(&read_shared("xaif/intrinsics/inlinable_intrinsics.xaif"), "inlinable_intrinsics.xaif")
            .unwrap_or_else(|e| panic!("the reference catalogue does not read: {e}"));
    reference
        .merge_noninlinable(
            &read_shared("xaif/intrinsics/noninlinable_intrinsics.xaif"),
            "noninlinable_intrinsics.xaif",
        )
        .unwrap_or_else(|e| panic!("the reference non-inlinable catalogue does not read: {e}"));
    reference
}

/// The reference catalogue reads with our reader, defines nothing we lack, and its partials
/// have the same classification and the same values as ours, for every intrinsic and
/// argument, at random points.
#[test]
fn reference_catalogue_reads_and_agrees_with_ours() {
    let reference = reference();
    let ours = Catalogue::builtin();
    let mut random = Lcg(11);
    let (mut compared, mut evaluated) = (0, 0);
    for name in reference.names() {
        let theirs = reference.get(name).expect("listed");
        let mine = ours.get(name).unwrap_or_else(|| panic!("our catalogue lacks {name}"));
        assert_eq!(theirs.arity, mine.arity, "{name}");
        assert_eq!(theirs.inlinable, mine.inlinable, "{name}");
        assert_eq!(theirs.non_smooth, mine.non_smooth, "{name}");
        assert_eq!(theirs.builtin_name, mine.builtin_name, "{name}");
        assert_eq!(theirs.partials.len(), mine.partials.len(), "{name}");
        for (i, (a, b)) in theirs.partials.iter().zip(mine.partials.iter()).enumerate() {
            assert_eq!(a.kind, b.kind, "{name} partial {}", i + 1);
            assert_eq!(a.non_value_inquiry, b.non_value_inquiry, "{name} partial {}", i + 1);
            for _ in 0..4 {
                let point = random.point();
                let args = &point[..theirs.arity];
                let result = eval_intrinsic(name, args);
                let (Some(x), Some(y)) = (a.eval(args, result), b.eval(args, result)) else {
                    panic!("{name} partial {} not evaluable at {args:?}", i + 1)
                };
                assert!((x - y).abs() <= 1e-12 * x.abs().max(1.0), "{name} partial {} at {args:?}: {x} vs {y}", i + 1);
                compared += 1;
                evaluated += usize::from(matches!(a.kind, PartialKind::Nonlinear | PartialKind::Linear));
            }
        }
    }
    assert!(compared >= 4 * 60 && evaluated == 4 * 22, "{compared} comparisons, {evaluated} evaluated");
}

/// The reference's classifications agree with its expressions except for `real_scal`,
/// whose `linear_one` partial carries the constant -1 (the classification is what the
/// engine uses; ours writes 1).
#[test]
fn reference_classifications_agree_with_its_expressions_but_one() {
    let reference = reference();
    let mut disagreements = Vec::new();
    for name in reference.names() {
        for (i, partial) in reference.get(name).unwrap().partials.iter().enumerate() {
            if partial.expression.implied_kind() != Some(partial.kind) {
                disagreements.push(format!("{name}/{}", i + 1));
            }
        }
    }
    assert_eq!(disagreements, ["real_scal/1"]);
}

/// The names our catalogue adds to the reference: intrinsics the corpus uses that the
/// reference does not define.
#[test]
fn our_catalogue_extends_the_reference_only_by_corpus_needs() {
    let reference = reference();
    let extra: Vec<&str> = Catalogue::builtin().names().filter(|n| reference.get(n).is_none()).collect();
    assert_eq!(extra, ["allocated", "present"]);
}

/// Every intrinsic name used by an `xaif:Intrinsic` vertex of the corpus and the examples.
fn corpus_intrinsic_names() -> std::collections::BTreeSet<String> {
    let shared = shared_dir();
    let mut files = Vec::new();
    for dir in [shared.join("corpus"), shared.join("xaif/examples")] {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                for inner in std::fs::read_dir(&path).expect("example directory") {
                    files.push(inner.expect("directory entry").path());
                }
            } else {
                files.push(path);
            }
        }
    }
    let mut names = std::collections::BTreeSet::new();
    let mut scanned = 0;
    for file in files.iter().filter(|p| p.extension().is_some_and(|e| e == "xaif")) {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        scanned += 1;
        for (start, _) in text.match_indices("<xaif:Intrinsic") {
            let tag = &text[start..];
            let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
            if !tag["<xaif:Intrinsic".len()..].starts_with(char::is_whitespace) {
                continue;
            }
            let name = tag
                .split_whitespace()
                .find_map(|attribute| attribute.strip_prefix("name=\""))
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_else(|| panic!("{}: Intrinsic without a name: {tag}", file.display()));
            names.insert(name.to_owned());
        }
    }
    assert!(scanned > 900, "only {scanned} XAIF files found");
    names
}

#[test]
fn every_intrinsic_of_the_corpus_is_defined() {
    let names = corpus_intrinsic_names();
    let catalogue = Catalogue::builtin();
    let missing: Vec<&String> = names.iter().filter(|n| catalogue.get(n).is_none()).collect();
    assert!(missing.is_empty(), "intrinsics used in the corpus but not in our catalogue: {missing:?}");
    assert!(names.len() >= 30, "only {} names found", names.len());
}

#[test]
fn noninlinable_example_merges() {
    let mut catalogue = Catalogue::builtin().clone();
    catalogue
        .merge_noninlinable(&read_shared("xaif/intrinsics/noninlinable_intrinsics_example.xaif"), "example.xaif")
        .unwrap_or_else(|e| panic!("{e}"));
    let definition = catalogue.get("myEJfun").expect("merged");
    assert!(!definition.inlinable);
    assert_eq!(definition.return_type.as_deref(), Some("real"));
    let FunctionDefinition::ExplicitJacobian { jacobian, entries } = &definition.function else {
        panic!("not an explicit Jacobian: {:?}", definition.function)
    };
    assert_eq!(jacobian, "myEJjac");
    assert_eq!(entries.len(), 4);
    assert_eq!(entries[1], JacobianEntry { dep: 2, indep: 2, partial: 5 });
    assert_eq!(catalogue.get("transpose_arr").unwrap().builtin_name.as_deref(), Some("transpose_arr"));
    assert_eq!(catalogue.len(), Catalogue::builtin().len() + 2);
}

#[test]
fn partial_values_use_the_result_and_user_functions() {
    // A user catalogue: sq(x) = x*x by expression, d tan(x)/dx = 1 + tan(x)^2 through argument 0.
    let text = r#"<ii:InlinableIntrinsicDefinitions xmlns:ii="http://www.mcs.anl.gov/XAIFInlinableIntrinsics" xmlns:x="http://www.mcs.anl.gov/XAIF" language="F90">
  <ii:InlinableIntrinsic name="mul_scal_scal" nr_arguments="2">
    <ii:Function type="builtin" builtin_name="*"/>
    <ii:Partial partial_id="1"><ii:ArgumentReference argument="2"/></ii:Partial>
    <ii:Partial partial_id="2"><ii:ArgumentReference argument="1"/></ii:Partial>
  </ii:InlinableIntrinsic>
  <ii:InlinableIntrinsic name="add_scal_scal" nr_arguments="2">
    <ii:Function type="builtin" builtin_name="+"/>
    <ii:Partial partial_id="1" partial_type="linear_one"><x:Constant type="integer" value="1"/></ii:Partial>
    <ii:Partial partial_id="2" partial_type="linear_one"><x:Constant type="integer" value="1"/></ii:Partial>
  </ii:InlinableIntrinsic>
  <ii:InlinableIntrinsic name="sq" nr_arguments="1">
    <ii:Function>
      <x:Intrinsic vertex_id="1" name="mul_scal_scal"/>
      <ii:ArgumentReference vertex_id="2" argument="1"/>
      <x:ExpressionEdge edge_id="1" source="2" target="1" position="1"/>
      <x:ExpressionEdge edge_id="2" source="2" target="1" position="2"/>
    </ii:Function>
    <ii:Partial partial_id="1">
      <x:Intrinsic vertex_id="1" name="mul_scal_scal"/>
      <x:Constant vertex_id="2" type="real" value="2.0d0"/>
      <ii:ArgumentReference vertex_id="3" argument="1"/>
      <x:ExpressionEdge edge_id="1" source="2" target="1" position="1"/>
      <x:ExpressionEdge edge_id="2" source="3" target="1" position="2"/>
    </ii:Partial>
  </ii:InlinableIntrinsic>
  <ii:InlinableIntrinsic name="tan_scal" nr_arguments="1">
    <ii:Function type="builtin" builtin_name="tan"/>
    <ii:Partial partial_id="1">
      <x:Intrinsic vertex_id="1" name="add_scal_scal"/>
      <x:Constant vertex_id="2" type="integer" value="1"/>
      <x:Intrinsic vertex_id="3" name="sq"/>
      <ii:ArgumentReference vertex_id="4" argument="0"/>
      <x:ExpressionEdge edge_id="1" source="2" target="1" position="1"/>
      <x:ExpressionEdge edge_id="2" source="3" target="1" position="2"/>
      <x:ExpressionEdge edge_id="3" source="4" target="3" position="1"/>
    </ii:Partial>
  </ii:InlinableIntrinsic>
</ii:InlinableIntrinsicDefinitions>"#;
    let catalogue = Catalogue::parse(text.as_bytes(), "user.xaif").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(catalogue.value("sq", &[3.0]), Some(9.0));
    let tan = catalogue.get("tan_scal").unwrap();
    let partial = &tan.partials[0];
    assert!(partial.expression.uses_result());
    let x: f64 = 0.4;
    let value = partial.expression.eval_in(&[x], Some(x.tan()), &catalogue).unwrap();
    assert!((value - 1.0 / x.cos().powi(2)).abs() < 1e-12);
    // Without the catalogue, `sq` is unknown.
    assert_eq!(partial.expression.eval(&[x], Some(x.tan())), None);
    assert_eq!(catalogue.get("sq").unwrap().partials[0].eval(&[1.5], None), Some(3.0));
}

#[test]
fn eval_intrinsic_follows_fortran() {
    assert_eq!(eval_intrinsic("mod_scal_scal", &[-7.0, 3.0]), Some(-1.0));
    assert_eq!(eval_intrinsic("sign_scal_scal", &[-2.0, 0.0]), Some(2.0));
    assert_eq!(eval_intrinsic("sign_scal_scal", &[2.0, -1.0]), Some(-2.0));
    assert_eq!(eval_intrinsic("nint_scal", &[-2.5]), Some(-3.0));
    assert_eq!(eval_intrinsic("int_scal", &[-2.7]), Some(-2.0));
    assert_eq!(eval_intrinsic("nc_maxval", &[1.0, 4.0, -2.0]), Some(4.0));
    assert_eq!(eval_intrinsic("sum_arr", &[1.0, 4.0, -2.0]), Some(3.0));
    assert_eq!(eval_intrinsic("nc_minval", &[]), None);
    assert_eq!(eval_intrinsic("sin_scal", &[1.0, 2.0]), None);
    assert_eq!(eval_intrinsic("imag_scal", &[1.0]), None);
    assert_eq!(eval_intrinsic("size", &[1.0, 1.0]), None);
}

fn error_of(text: &str) -> String {
    Catalogue::parse(text.as_bytes(), "bad.xaif").expect_err("malformed catalogue").to_string()
}

fn noninlinable_error_of(text: &str) -> String {
    let mut catalogue = Catalogue::builtin().clone();
    let error = catalogue.merge_noninlinable(text.as_bytes(), "bad.xaif").expect_err("malformed catalogue");
    assert_eq!(catalogue.len(), Catalogue::builtin().len(), "a failed merge changes nothing");
    error.to_string()
}

const HEAD: &str = r#"<ii:InlinableIntrinsicDefinitions xmlns:ii="http://www.mcs.anl.gov/XAIFInlinableIntrinsics" xmlns:x="http://www.mcs.anl.gov/XAIF" language="F90">"#;
const TAIL: &str = "</ii:InlinableIntrinsicDefinitions>";
const NII: &str = r#"<n:NonInlinableIntrinsicDefinitions xmlns:n="http://www.mcs.anl.gov/XAIFNonInlinableIntrinsics">"#;

/// One intrinsic `f(x)` whose single partial has the given body (lines 2.. of the document).
fn with_partial(attributes: &str, body: &str) -> String {
    format!(
        "{HEAD}\n<ii:InlinableIntrinsic name=\"f\" nr_arguments=\"1\">\n<ii:Function type=\"builtin\" builtin_name=\"f\"/>\n<ii:Partial partial_id=\"1\"{attributes}>\n{body}</ii:Partial></ii:InlinableIntrinsic>{TAIL}"
    )
}

#[test]
fn malformed_catalogues_give_located_errors() {
    let cases: Vec<(String, &str)> = vec![
        (
            format!("{HEAD}\n<ii:InlinableIntrinsic nr_arguments=\"1\"/>{TAIL}"),
            "bad.xaif:2:1: InlinableIntrinsic: missing required attribute 'name'",
        ),
        (
            format!(
                "{HEAD}\n<ii:InlinableIntrinsic name=\"f\" nr_arguments=\"1\">\n<ii:Function type=\"builtin\" builtin_name=\"f\"/>\n</ii:InlinableIntrinsic>{TAIL}"
            ),
            "bad.xaif:2:1: InlinableIntrinsic: missing partial for argument 1",
        ),
        (
            format!("{HEAD}\n<ii:InlinableIntrinsic name=\"f\" nr_arguments=\"two\"/>{TAIL}"),
            "bad.xaif:2:1: InlinableIntrinsic: attribute 'nr_arguments' has value 'two', expected a positive integer",
        ),
        (
            with_partial(
                "",
                "  <x:Intrinsic vertex_id=\"1\" name=\"f\"/>\n  <x:ExpressionEdge edge_id=\"1\" source=\"2\" target=\"1\" position=\"1\"/>\n",
            ),
            "bad.xaif:6:3: ExpressionEdge: source '2' names no vertex of this expression",
        ),
        (
            with_partial(" partial_type=\"steep\"", "<x:Constant type=\"integer\" value=\"1\"/>\n"),
            "bad.xaif:4:1: Partial: attribute 'partial_type' has value 'steep', expected one of passive, linear_one, linear_minus_one, linear, nonlinear",
        ),
        (
            with_partial("", "<ii:ArgumentReference argument=\"2\"/>\n"),
            "bad.xaif:5:1: ArgumentReference: argument 2 exceeds nr_arguments 1",
        ),
        (
            with_partial("", "<x:Constant type=\"real\" value=\"one\"/>\n"),
            "bad.xaif:5:1: Constant: constant 'one' is not a number",
        ),
        (
            with_partial(
                "",
                "<x:Intrinsic vertex_id=\"1\" name=\"sin_scal\"/><ii:ArgumentReference vertex_id=\"2\" argument=\"1\"/>\n<x:ExpressionEdge edge_id=\"1\" source=\"2\" target=\"1\" position=\"1\"/>\n",
            ),
            "bad.xaif:5:1: Intrinsic: intrinsic 'sin_scal' is not defined in this catalogue",
        ),
        (
            with_partial(
                "",
                "<x:Intrinsic vertex_id=\"1\" name=\"f\"/><ii:ArgumentReference vertex_id=\"2\" argument=\"1\"/>\n<x:ExpressionEdge edge_id=\"1\" source=\"2\" target=\"1\" position=\"1\"/>\n<x:ExpressionEdge edge_id=\"2\" source=\"2\" target=\"1\" position=\"2\"/>\n",
            ),
            "bad.xaif:5:1: Intrinsic: intrinsic 'f' takes 1 arguments, this one has 2",
        ),
        (
            with_partial(
                "",
                "<x:Intrinsic vertex_id=\"1\" name=\"f\"/><ii:ArgumentReference vertex_id=\"2\" argument=\"1\"/>\n<x:ExpressionEdge edge_id=\"1\" source=\"2\" target=\"1\" position=\"2\"/>\n",
            ),
            "bad.xaif:6:1: ExpressionEdge: operand position 1 is missing (found 2)",
        ),
        (
            with_partial(
                "",
                "<x:Intrinsic vertex_id=\"1\" name=\"f\"/><x:Intrinsic vertex_id=\"2\" name=\"f\"/>\n<x:ExpressionEdge edge_id=\"1\" source=\"2\" target=\"1\" position=\"1\"/>\n<x:ExpressionEdge edge_id=\"2\" source=\"1\" target=\"2\" position=\"1\"/>\n",
            ),
            "bad.xaif:4:1: Partial: the expression has no root (every vertex has an outgoing edge)",
        ),
        (
            with_partial(
                "",
                "<x:Constant vertex_id=\"1\" type=\"integer\" value=\"1\"/>\n<x:Constant vertex_id=\"2\" type=\"integer\" value=\"2\"/>\n",
            ),
            "bad.xaif:6:1: Constant: the expression has more than one root vertex",
        ),
        (
            with_partial(
                "",
                "<x:Intrinsic vertex_id=\"1\" name=\"f\"/><ii:ArgumentReference vertex_id=\"2\" argument=\"1\"/>\n<x:Intrinsic vertex_id=\"3\" name=\"f\"/><x:Intrinsic vertex_id=\"4\" name=\"f\"/>\n<x:ExpressionEdge edge_id=\"1\" source=\"2\" target=\"1\" position=\"1\"/>\n<x:ExpressionEdge edge_id=\"2\" source=\"3\" target=\"4\" position=\"1\"/>\n<x:ExpressionEdge edge_id=\"3\" source=\"4\" target=\"3\" position=\"1\"/>\n",
            ),
            "bad.xaif:6:1: Intrinsic: vertex not connected to the expression's root (or on a cycle)",
        ),
        (with_partial("", ""), "bad.xaif:4:1: Partial: a nonlinear partial needs an expression"),
        (
            with_partial("", "<x:Variable/>\n"),
            "bad.xaif:5:1: Variable: unexpected element in Partial, expected Constant, Intrinsic, ArgumentReference or ExpressionEdge",
        ),
        (
            format!(
                "{HEAD}\n<ii:InlinableIntrinsic name=\"f\" nr_arguments=\"1\">\n<ii:Function type=\"builtin\"/>\n</ii:InlinableIntrinsic>{TAIL}"
            ),
            "bad.xaif:3:1: Function: missing required attribute 'builtin_name'",
        ),
        (
            format!("{HEAD}{TAIL}").replace(" language=\"F90\"", ""),
            "bad.xaif:1:1: InlinableIntrinsicDefinitions: missing required attribute 'language'",
        ),
        (format!("{HEAD}{TAIL}"), "bad.xaif:1:1: InlinableIntrinsicDefinitions: the catalogue defines no intrinsic"),
        (
            format!("{NII}</n:NonInlinableIntrinsicDefinitions>"),
            "bad.xaif:1:1: NonInlinableIntrinsicDefinitions: unexpected element as the document root, expected InlinableIntrinsicDefinitions in namespace http://www.mcs.anl.gov/XAIFInlinableIntrinsics",
        ),
        (
            "<!DOCTYPE x [<!ENTITY a \"b\">]><x/>".to_owned(),
            "bad.xaif:1:1: document: DOCTYPE declarations are refused (no entity expansion)",
        ),
        (
            format!("{HEAD}\n<ii:InlinableIntrinsic>"),
            "bad.xaif:1:1: document: malformed XML: the root node was opened but never closed",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(error_of(&text), expected, "for input\n{text}");
    }
    let not_utf8 = Catalogue::parse(b"<a>\n\xff</a>", "bad.xaif").expect_err("invalid UTF-8");
    assert_eq!(not_utf8.to_string(), "bad.xaif:2:1: document: the input is not valid UTF-8");
    assert_eq!(not_utf8.diagnostic().line, 2);
}

#[test]
fn malformed_noninlinable_catalogues_give_located_errors() {
    let cases = [
        (
            format!(
                "{NII}\n<n:DirectAction name=\"sin_scal\" derivAction=\"cos\"/></n:NonInlinableIntrinsicDefinitions>"
            ),
            "bad.xaif:2:1: DirectAction: intrinsic 'sin_scal' is already defined as inlinable",
        ),
        (
            format!("{NII}\n<n:DirectAction name=\"g\"/></n:NonInlinableIntrinsicDefinitions>"),
            "bad.xaif:2:1: DirectAction: missing required attribute 'derivAction'",
        ),
        (
            format!(
                "{NII}\n<n:DirectAction name=\"g\" derivAction=\"g\"/>\n<n:DirectAction name=\"g\" derivAction=\"g\"/></n:NonInlinableIntrinsicDefinitions>"
            ),
            "bad.xaif:3:1: DirectAction: intrinsic 'g' is defined twice",
        ),
        (
            format!(
                "{NII}\n<n:ExplicitJacobian name=\"g\" jacobian=\"gj\">\n  <n:Partial dep=\"0\" indep=\"1\" partial=\"3\"/>\n</n:ExplicitJacobian></n:NonInlinableIntrinsicDefinitions>"
            ),
            "bad.xaif:3:3: Partial: attribute 'dep' has value '0', expected a positive integer",
        ),
        (
            format!("{NII}\n<n:ExplicitJacobian name=\"g\" jacobian=\"gj\"/></n:NonInlinableIntrinsicDefinitions>"),
            "bad.xaif:2:1: ExplicitJacobian: an ExplicitJacobian needs at least one Partial",
        ),
        (
            format!("{NII}\n<n:Other name=\"g\"/></n:NonInlinableIntrinsicDefinitions>"),
            "bad.xaif:2:1: Other: unexpected element in NonInlinableIntrinsicDefinitions, expected DirectAction or ExplicitJacobian",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(noninlinable_error_of(&text), expected, "for input\n{text}");
    }
}

/// An intrinsic `f` of `nr_arguments` arguments, builtin, with no partials (lines 2.. of the
/// document).
fn with_arity(nr_arguments: &str) -> String {
    format!(
        "{HEAD}\n<ii:InlinableIntrinsic name=\"f\" nr_arguments=\"{nr_arguments}\">\n<ii:Function type=\"builtin\" builtin_name=\"f\"/>\n</ii:InlinableIntrinsic>{TAIL}"
    )
}

/// Numbers that count or name arguments are bounded (`parse::MAX_ARGUMENTS`): one would size
/// an allocation of that many partials (100000000 exhausted memory, the largest integer
/// overflowed a capacity).
#[test]
fn argument_counts_and_indices_are_bounded() {
    let too_many = "more than the 255 arguments an intrinsic may take";
    for n in ["256", "100000000", "18446744073709551615"] {
        assert_eq!(
            error_of(&with_arity(n)),
            format!("bad.xaif:2:1: InlinableIntrinsic: attribute 'nr_arguments' has value {n}, {too_many}")
        );
    }
    for n in ["-1", "18446744073709551616", "0"] {
        assert_eq!(
            error_of(&with_arity(n)),
            format!(
                "bad.xaif:2:1: InlinableIntrinsic: attribute 'nr_arguments' has value '{n}', expected a positive integer"
            )
        );
    }
    // 255 arguments is within bounds: the refusal is the missing partial, not the count.
    assert_eq!(error_of(&with_arity("255")), "bad.xaif:2:1: InlinableIntrinsic: missing partial for argument 1");
    // A partial and an argument reference beyond the bound, or beyond the arity.
    assert_eq!(
        error_of(&with_partial("", "").replace("partial_id=\"1\"", "partial_id=\"18446744073709551615\"")),
        format!("bad.xaif:4:1: Partial: attribute 'partial_id' has value 18446744073709551615, {too_many}")
    );
    assert_eq!(
        error_of(&with_partial("", "").replace("partial_id=\"1\"", "partial_id=\"9\"")),
        "bad.xaif:4:1: Partial: partial_id 9 exceeds nr_arguments 1"
    );
    assert_eq!(
        error_of(&with_partial("", "<ii:ArgumentReference argument=\"100000000\"/>\n")),
        format!("bad.xaif:5:1: ArgumentReference: attribute 'argument' has value 100000000, {too_many}")
    );
    assert_eq!(
        error_of(&with_partial("", "<ii:ArgumentReference argument=\"2\"/>\n")),
        "bad.xaif:5:1: ArgumentReference: argument 2 exceeds nr_arguments 1"
    );
    // An ExplicitJacobian's dep and indep name arguments too.
    for attribute in ["dep", "indep"] {
        let entry = "<n:Partial dep=\"1\" indep=\"1\" partial=\"3\"/>"
            .to_owned()
            .replace(&format!(" {attribute}=\"1\""), &format!(" {attribute}=\"4294967296\""));
        assert_eq!(
            noninlinable_error_of(&format!(
                "{NII}\n<n:ExplicitJacobian name=\"g\" jacobian=\"gj\">\n  {entry}\n</n:ExplicitJacobian></n:NonInlinableIntrinsicDefinitions>"
            )),
            format!("bad.xaif:3:3: Partial: attribute '{attribute}' has value 4294967296, {too_many}")
        );
    }
}

/// A partial `f(x)` of one `name` intrinsic applied `levels` times, as a chain of vertices.
fn chain(levels: usize) -> String {
    let mut body = String::new();
    for v in 1..=levels {
        body.push_str(&format!("<x:Intrinsic vertex_id=\"{v}\" name=\"f\"/>\n"));
    }
    body.push_str(&format!("<ii:ArgumentReference vertex_id=\"{}\" argument=\"1\"/>\n", levels + 1));
    for v in 1..=levels {
        body.push_str(&format!(
            "<x:ExpressionEdge edge_id=\"{v}\" source=\"{}\" target=\"{v}\" position=\"1\"/>\n",
            v + 1
        ));
    }
    with_partial("", &body)
}

/// An expression's tree is bounded in depth (it is built and evaluated recursively: a long
/// chain overflowed the stack) and in size (shared vertices are copied at each use: a graph
/// doubling at each vertex expands beyond memory), `parse::MAX_EXPRESSION_DEPTH` and
/// `parse::MAX_EXPRESSION_NODES`.
#[test]
fn expressions_are_bounded_in_depth_and_size() {
    // 63 intrinsics and the argument: 64 levels, accepted.
    Catalogue::parse(chain(63).as_bytes(), "ok.xaif").expect("64 levels");
    // The 65th level is refused at the vertex, line 5 + 64.
    assert_eq!(error_of(&chain(64)), "bad.xaif:69:1: ArgumentReference: the expression is deeper than 64 levels");
    // A million levels: a located refusal, not a stack overflow.
    assert!(error_of(&chain(1_000_000)).ends_with("Intrinsic: the expression is deeper than 64 levels"));
    // Each vertex adds its successor to itself (f(x) = x + x nested 40 times: 2^40 leaves).
    let mut body = String::new();
    let levels = 40;
    for v in 1..=levels {
        body.push_str(&format!("<x:Intrinsic vertex_id=\"{v}\" name=\"g\"/>\n"));
    }
    body.push_str(&format!("<ii:ArgumentReference vertex_id=\"{}\" argument=\"1\"/>\n", levels + 1));
    for v in 1..=levels {
        for position in 1..=2 {
            body.push_str(&format!(
                "<x:ExpressionEdge edge_id=\"{v}.{position}\" source=\"{}\" target=\"{v}\" position=\"{position}\"/>\n",
                v + 1
            ));
        }
    }
    let text = with_partial("", &body).replace(
        TAIL,
        &format!(
            "<ii:InlinableIntrinsic name=\"g\" nr_arguments=\"2\"><ii:Function type=\"builtin\" builtin_name=\"g\"/><ii:Partial partial_id=\"1\" partial_type=\"linear_one\"/><ii:Partial partial_id=\"2\" partial_type=\"linear_one\"/></ii:InlinableIntrinsic>{TAIL}"
        ),
    );
    let error = error_of(&text);
    assert!(
        error.starts_with("bad.xaif:")
            && error
                .ends_with("Intrinsic: the expression has more than 1024 nodes (shared vertices counted at each use)"),
        "{error}"
    );
}

/// Bytes that are not a catalogue never make the reader panic.
#[test]
fn arbitrary_inputs_do_not_panic() {
    let valid = BUILTIN_INLINABLE_XML.as_bytes();
    let mut random = Lcg(3);
    for _ in 0..300 {
        let mut bytes = valid[..valid.len().min(3000)].to_vec();
        for _ in 0..4 {
            let at = (random.unit() * bytes.len() as f64) as usize;
            bytes[at] = b"<>\"=/ x1\xff"[(random.unit() * 9.0) as usize];
        }
        let _ = Catalogue::parse(&bytes, "fuzz.xaif");
        let mut catalogue = Catalogue::default();
        let _ = catalogue.merge_noninlinable(&bytes, "fuzz.xaif");
    }
}

/// Which intrinsics act element by element decides the shape of temporaries for array
/// statements: arithmetic and elementary functions do; reductions and inquiries do not.
#[test]
fn elemental_intrinsics_are_told_from_reductions_and_inquiries() {
    let catalogue = Catalogue::builtin();
    for name in ["add_scal_scal", "mul_scal_scal", "sin_scal", "exp_scal", "pow_scal_scal", "abs_scal", "real_scal"] {
        assert!(catalogue.get(name).unwrap().is_elemental(), "{name}");
    }
    for name in ["size", "lbound", "ubound", "len", "present", "nc_maxval", "nc_minval", "sum_arr", "transpose_arr"] {
        assert!(!catalogue.get(name).unwrap().is_elemental(), "{name}");
    }
}

/// Rust source constructing `catalogue`'s definitions: what `builtin.rs` holds, so that the
/// binary starts without parsing XML (the parse took 2.3 M instructions, more than reading a
/// small corpus file).
fn render_builtin_source(catalogue: &Catalogue) -> String {
    use std::fmt::Write as _;

    fn string(text: &str) -> String {
        format!("{text:?}")
    }
    fn option(text: Option<&str>) -> String {
        text.map_or_else(|| "None".to_owned(), |t| format!("Some(s({}))", string(t)))
    }
    fn expression(e: &PartialExpr) -> String {
        match e {
            PartialExpr::Constant { value, ty } => format!("c({}, ConstantKind::{ty:?})", string(value)),
            PartialExpr::Argument(i) => format!("a({i})"),
            PartialExpr::Intrinsic { name, arguments } => {
                let arguments: Vec<String> = arguments.iter().map(expression).collect();
                format!("f({}, const {{ &[{}] }})", string(name), arguments.join(", "))
            }
        }
    }
    fn function(f: &FunctionDefinition) -> String {
        match f {
            FunctionDefinition::Builtin { builtin_name } => {
                format!("FunctionDefinition::Builtin {{ builtin_name: s({}) }}", string(builtin_name))
            }
            FunctionDefinition::UserDefined { builtin_name, expression: e } => format!(
                "FunctionDefinition::UserDefined {{ builtin_name: {}, expression: {} }}",
                option(builtin_name.as_deref()),
                e.as_ref().map_or_else(|| "None".to_owned(), |e| format!("Some({})", expression(e)))
            ),
            FunctionDefinition::DirectAction { deriv_action } => {
                format!("FunctionDefinition::DirectAction {{ deriv_action: s({}) }}", string(deriv_action))
            }
            FunctionDefinition::ExplicitJacobian { jacobian, entries } => {
                let entries: Vec<String> = entries
                    .iter()
                    .map(|e| format!("JacobianEntry {{ dep: {}, indep: {}, partial: {} }}", e.dep, e.indep, e.partial))
                    .collect();
                format!(
                    "FunctionDefinition::ExplicitJacobian {{ jacobian: s({}), entries: Cow::Borrowed(&[{}]) }}",
                    string(jacobian),
                    entries.join(", ")
                )
            }
        }
    }

    let mut out = String::from(
        "//! The built-in intrinsics catalogue as Rust, generated from `schema/intrinsics/*.xaif` by the\n\
         //! test `builtin_source_is_current` (which rewrites this file when the catalogue changes and\n\
         //! fails until the result is committed): do not edit by hand.\n\n\
         use super::*;\n\n\
         const fn s(text: &'static str) -> Text {\n    Cow::Borrowed(text)\n}\n\n\
         const fn a(argument: usize) -> PartialExpr {\n    PartialExpr::Argument(argument)\n}\n\n\
         const fn c(value: &'static str, ty: ConstantKind) -> PartialExpr {\n    PartialExpr::Constant { value: s(value), ty }\n}\n\n\
         const fn f(name: &'static str, arguments: &'static [PartialExpr]) -> PartialExpr {\n    PartialExpr::Intrinsic { name: s(name), arguments: Cow::Borrowed(arguments) }\n}\n\n\
         const fn p(kind: PartialKind, expression: PartialExpr, non_value_inquiry: bool) -> Partial {\n    Partial { kind, expression, non_value_inquiry }\n}\n\n\
         /// Every definition of the built-in catalogue, inlinable and non-inlinable, sorted by name.\n\
         pub(super) static DEFINITIONS: &[IntrinsicDefinition] = &[\n",
    );
    for name in catalogue.names() {
        let d = catalogue.get(name).expect("listed");
        let partials: Vec<String> = d
            .partials
            .iter()
            .map(|p| format!("p(PartialKind::{:?}, {}, {})", p.kind, expression(&p.expression), p.non_value_inquiry))
            .collect();
        writeln!(
            out,
            "    IntrinsicDefinition {{\n        name: s({}),\n        arity: {},\n        \
             return_type: {},\n        function: {},\n        builtin_name: {},\n        \
             partials: Cow::Borrowed(&[{}]),\n        inlinable: {},\n        non_smooth: {},\n        \
             shape_change: ShapeChange::{:?},\n    }},",
            string(&d.name),
            d.arity,
            option(d.return_type.as_deref()),
            function(&d.function),
            option(d.builtin_name.as_deref()),
            partials.join(", "),
            d.inlinable,
            d.non_smooth,
            d.shape_change,
        )
        .expect("writing to a String");
    }
    out.push_str("];\n\n");
    let index = index_of(&catalogue.definitions);
    out.push_str(
        "/// Where each name is among `DEFINITIONS` (`index_of`: by `name_hash`, each slot empty or a\n\
         /// position plus one).\n\
         pub(super) static INDEX: &[u32] = &[",
    );
    for (i, entry) in index.iter().enumerate() {
        out.push_str(if i % 16 == 0 { "\n    " } else { " " });
        write!(out, "{entry},").expect("writing to a String");
    }
    out.push_str("\n];\n");
    out
}

/// `builtin.rs` is what the catalogue files say: parsed here, rendered, compared. A stale file
/// is rewritten (so the next build has it) and the test fails until it is committed.
#[test]
fn builtin_source_is_current() {
    let mut parsed = Catalogue::parse(BUILTIN_INLINABLE_XML.as_bytes(), "inlinable_intrinsics.xaif").expect("parses");
    parsed.merge_noninlinable(BUILTIN_NONINLINABLE_XML.as_bytes(), "noninlinable_intrinsics.xaif").expect("merges");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/xaif/intrinsics/builtin.rs");
    let expected = render_builtin_source(&parsed);
    let current = std::fs::read_to_string(path).unwrap_or_default();
    if current != expected {
        std::fs::write(path, &expected).expect("rewriting builtin.rs");
        panic!("{path} was stale and has been rewritten: rebuild and commit it");
    }
    assert_eq!(parsed.definitions, Catalogue::builtin().definitions, "builtin() builds what the files say");
    assert_eq!(parsed.index, Catalogue::builtin().index, "and indexes them as a parsed catalogue is");
}

/// The index finds every definition by its name and nothing else, in the built-in catalogue
/// (a generated table) and in one read from files (a table built on reading).
#[test]
fn index_finds_every_name_and_only_those() {
    let mut parsed = Catalogue::parse(BUILTIN_INLINABLE_XML.as_bytes(), "inlinable_intrinsics.xaif").expect("parses");
    parsed.merge_noninlinable(BUILTIN_NONINLINABLE_XML.as_bytes(), "noninlinable_intrinsics.xaif").expect("merges");
    for catalogue in [Catalogue::builtin(), &parsed] {
        assert!(catalogue.len() > 50, "{} definitions", catalogue.len());
        for definition in catalogue.definitions.iter() {
            let found = catalogue.get(&definition.name).expect("indexed");
            assert!(std::ptr::eq(found, definition), "{}", definition.name);
            for other in [format!("{}_", definition.name), format!("_{}", definition.name)] {
                match catalogue.get(&other) {
                    Some(found) => assert_eq!(*found.name, other),
                    None => assert!(catalogue.definitions.iter().all(|d| *d.name != other), "{other} not found"),
                }
            }
        }
        for absent in ["", "a", "add_scal", "ADD_SCAL_SCAL", "zzz_unknown_intrinsic"] {
            assert!(catalogue.get(absent).is_none(), "{absent:?}");
        }
    }
    assert!(Catalogue::default().get("add_scal_scal").is_none());
}
