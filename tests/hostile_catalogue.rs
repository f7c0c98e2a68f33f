//! A catalogue given with `-c` (or `-N`) is input like any other (issue 63): numbers in it that
//! would size an allocation or an index beyond the reader's bounds are refused with a located
//! message (`file:line:column: element: message`), exit 1 and no output, never an abort (134)
//! or a panic (101). The hostile catalogues are the built-in catalogue's text with one
//! number replaced.

use std::path::Path;
use std::process::Command;

const BUILTIN: &str = include_str!("../schema/intrinsics/inlinable_intrinsics.xaif");

fn example() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/examples/head.xaif").to_owned()
}

/// The built-in catalogue with the first `from` replaced by `to`, and the line and column of
/// the element holding it (1-based; the element's `<`).
fn hostile(from: &str, to: &str) -> (String, usize, usize) {
    let at = BUILTIN.find(from).unwrap_or_else(|| panic!("'{from}' in the built-in catalogue"));
    let start = BUILTIN[..at].rfind('<').expect("an element holds the attribute");
    let line = BUILTIN[..start].matches('\n').count() + 1;
    let column = start - BUILTIN[..start].rfind('\n').map_or(0, |n| n + 1) + 1;
    (BUILTIN.replacen(from, to, 1), line, column)
}

/// Runs `tangent -c` (or `-N`) with `catalogue` and checks the refusal: exit 1, nothing
/// written, the message located at `line:column` of the catalogue and ending in `message`.
fn refused(option: &str, catalogue: &str, line: usize, column: usize, element: &str, message: &str) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("hostile.xaif");
    std::fs::write(&path, catalogue).expect("catalogue written");
    let out = dir.path().join("out.xaif");
    let output = Command::new(env!("CARGO_BIN_EXE_xaifbooster"))
        .arg("tangent")
        .arg(option)
        .arg(&path)
        .arg(example())
        .arg("-o")
        .arg(&out)
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{option} {message}: exit {:?}, stderr:\n{stderr}", output.status);
    assert!(output.stdout.is_empty(), "no output on standard output");
    assert!(!Path::new(&out).exists(), "no output file");
    let expected = format!("{}:{line}:{column}: {element}: {message}", path.display());
    assert!(stderr.lines().any(|l| l == expected), "expected\n{expected}\nin\n{stderr}");
}

#[test]
fn huge_and_negative_argument_counts_are_refused_with_their_location() {
    let bound = "more than the 255 arguments an intrinsic may take";
    for n in ["100000000", "18446744073709551615"] {
        let (text, line, column) = hostile("nr_arguments=\"2\"", &format!("nr_arguments=\"{n}\""));
        let message = format!("attribute 'nr_arguments' has value {n}, {bound}");
        refused("-c", &text, line, column, "InlinableIntrinsic", &message);
    }
    for n in ["-1", "18446744073709551616"] {
        let (text, line, column) = hostile("nr_arguments=\"2\"", &format!("nr_arguments=\"{n}\""));
        let message = format!("attribute 'nr_arguments' has value '{n}', expected a positive integer");
        refused("-c", &text, line, column, "InlinableIntrinsic", &message);
    }
}

#[test]
fn partials_and_arguments_beyond_the_arity_are_refused_with_their_location() {
    // The first two-argument intrinsic's second partial, renamed the ninth.
    let (text, line, column) = hostile("partial_id=\"2\"", "partial_id=\"9\"");
    refused("-c", &text, line, column, "Partial", "partial_id 9 exceeds nr_arguments 2");
    let (text, line, column) = hostile("partial_id=\"2\"", "partial_id=\"18446744073709551615\"");
    let message =
        "attribute 'partial_id' has value 18446744073709551615, more than the 255 arguments an intrinsic may take";
    refused("-c", &text, line, column, "Partial", message);
    let (text, line, column) = hostile("argument=\"1\"", "argument=\"100000000\"");
    let message = "attribute 'argument' has value 100000000, more than the 255 arguments an intrinsic may take";
    refused("-c", &text, line, column, "ArgumentReference", message);
}

#[test]
fn a_hostile_noninlinable_catalogue_is_refused_with_its_location() {
    let text = concat!(
        "<n:NonInlinableIntrinsicDefinitions xmlns:n=\"http://www.mcs.anl.gov/XAIFNonInlinableIntrinsics\">\n",
        "  <n:ExplicitJacobian name=\"g\" jacobian=\"gj\">\n",
        "    <n:Partial dep=\"18446744073709551615\" indep=\"1\" partial=\"3\"/>\n",
        "  </n:ExplicitJacobian>\n",
        "</n:NonInlinableIntrinsicDefinitions>\n",
    );
    let message = "attribute 'dep' has value 18446744073709551615, more than the 255 arguments an intrinsic may take";
    refused("-N", text, 3, 5, "Partial", message);
}

#[test]
fn empty_and_garbage_catalogues_are_refused_with_their_location() {
    for option in ["-c", "-N"] {
        let message = "malformed XML: the document does not have a root node";
        refused(option, "", 1, 1, "document", message);
        refused(option, "\n\u{0}\u{1}garbage", 2, 1, "document", "malformed XML: unknown token at 2:1");
    }
}

/// The built-in catalogue with user-defined functions added at its end, each `(name, calls)`:
/// `name(x)` is the sum of the named functions applied to x (x itself for none). Returns the
/// text and the line of each added function's element (column 3).
fn with_functions(functions: &[(String, Vec<String>)]) -> (String, Vec<usize>) {
    let end = BUILTIN.rfind("</xaifii:InlinableIntrinsicDefinitions>").expect("the root's end");
    let mut text = BUILTIN[..end].to_owned();
    let mut lines = Vec::new();
    for (name, calls) in functions {
        lines.push(text.matches('\n').count() + 1);
        let mut body = String::new();
        match calls.as_slice() {
            [] => body.push_str("<xaifii:ArgumentReference vertex_id=\"1\" argument=\"1\"/>"),
            [only] => body.push_str(&format!(
                "<xaif:Intrinsic vertex_id=\"1\" name=\"{only}\"/><xaifii:ArgumentReference vertex_id=\"2\" argument=\"1\"/>\
                 <xaif:ExpressionEdge edge_id=\"1\" source=\"2\" target=\"1\" position=\"1\"/>"
            )),
            [a, b] => body.push_str(&format!(
                "<xaif:Intrinsic vertex_id=\"1\" name=\"add_scal_scal\"/>\
                 <xaif:Intrinsic vertex_id=\"2\" name=\"{a}\"/><xaif:Intrinsic vertex_id=\"3\" name=\"{b}\"/>\
                 <xaifii:ArgumentReference vertex_id=\"4\" argument=\"1\"/>\
                 <xaif:ExpressionEdge edge_id=\"1\" source=\"2\" target=\"1\" position=\"1\"/>\
                 <xaif:ExpressionEdge edge_id=\"2\" source=\"3\" target=\"1\" position=\"2\"/>\
                 <xaif:ExpressionEdge edge_id=\"3\" source=\"4\" target=\"2\" position=\"1\"/>\
                 <xaif:ExpressionEdge edge_id=\"4\" source=\"4\" target=\"3\" position=\"1\"/>"
            )),
            _ => unreachable!("at most two calls"),
        }
        text.push_str(&format!(
            "  <xaifii:InlinableIntrinsic name=\"{name}\" nr_arguments=\"1\">\n    <xaifii:Function type=\"user_defined\">{body}</xaifii:Function>\n    \
             <xaifii:Partial partial_id=\"1\" partial_type=\"linear_one\"><xaif:Constant type=\"integer\" value=\"1\"/></xaifii:Partial>\n  </xaifii:InlinableIntrinsic>\n"
        ));
    }
    text.push_str(&BUILTIN[end..]);
    (text, lines)
}

fn calls(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn functions_defined_through_themselves_are_refused_with_their_location() {
    let (text, lines) = with_functions(&[("f".into(), calls(&["g"])), ("g".into(), calls(&["f"]))]);
    refused("-c", &text, lines[0], 3, "InlinableIntrinsic", "function 'f' is defined through itself (f -> g -> f)");
    let (text, lines) = with_functions(&[("h".into(), calls(&["h", "h"]))]);
    refused("-c", &text, lines[0], 3, "InlinableIntrinsic", "function 'h' is defined through itself (h -> h)");
}

#[test]
fn functions_whose_unfolded_work_is_too_large_are_refused_with_their_location() {
    // f0 calls f1 twice, f1 f2 twice, …: f(n) applies no intrinsic, and k levels above it a
    // function applies 3 (an add and two calls) plus twice the next: 3 * 2^k - 3 in all.
    let n = 30;
    let mut functions: Vec<(String, Vec<String>)> =
        (0..n).map(|i| (format!("f{i}"), vec![format!("f{}", i + 1), format!("f{}", i + 1)])).collect();
    functions.push((format!("f{n}"), Vec::new()));
    let (text, lines) = with_functions(&functions);
    // The first function past the bound, walking up from the last: 3 * 2^k - 3 > 1,000,000.
    let k = (0..).find(|k| 3u64 * (1 << k) - 3 > 1_000_000).expect("a k");
    let message = format!(
        "evaluating function 'f{}' takes {} intrinsic evaluations, the functions it calls unfolded, more than 1000000",
        n - k,
        3u64 * (1 << k) - 3
    );
    refused("-c", &text, lines[n - k], 3, "InlinableIntrinsic", &message);
    // A few levels of the same are accepted, and the tangent runs with the catalogue.
    let (text, _) = with_functions(&functions[n - 3..]);
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::write(dir.path().join("small.xaif"), text).expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_xaifbooster"))
        .args(["tangent", "-c"])
        .arg(dir.path().join("small.xaif"))
        .arg(example())
        .arg("-o")
        .arg(dir.path().join("out.xaif"))
        .output()
        .expect("runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}
