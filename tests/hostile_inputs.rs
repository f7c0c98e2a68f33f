//! Hostile inputs made here, run through the real binary (issue 63): every input ends, under a
//! 4 GiB address-space limit, in exit 0 with schema-valid output or exit 1 with a located
//! message (`file:line:column: element: message`). Two classes once took time that grew with
//! the square of their size and are held to the 10 seconds: the attributes of one
//! element (roxmltree compares each with all before it) and the nesting depth of scopes (each
//! scope climbed to the root, per routine).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The bound: every input ends within this (checked where a class was once slow).
const TEN_SECONDS: Duration = Duration::from_secs(10);

/// How long a run may take before it is taken for a hang and killed: a guard, not a speed
/// assertion (two cores shared with other builds can make anything slow).
const HANG_GUARD: Duration = Duration::from_secs(120);

/// Runs the binary in `dir` under `ulimit -v 4194304` (4 GiB of address space), killing it
/// after [`HANG_GUARD`]; a hang, a panic, an abort or a signal fails the test.
fn xaifbooster(dir: &Path, args: &[&str]) -> common::Guarded {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("ulimit -v 4194304 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_xaifbooster"))
        .args(args)
        .current_dir(dir);
    let outcome = common::run_guarded(command, &format!("xaifbooster {}", args.join(" ")), HANG_GUARD);
    assert!(
        matches!(outcome.code, Some(0 | 1)) && !outcome.stderr.contains("panicked"),
        "xaifbooster {}: exit {:?}\n{}",
        args.join(" "),
        outcome.code,
        short(&outcome.stderr)
    );
    outcome
}

/// The first lines of a long message.
fn short(text: &str) -> String {
    text.lines().take(5).collect::<Vec<_>>().join("\n")
}

/// Whether a line is a located finding: `file:line:column: element: message`.
fn is_located(line: &str, file: &str) -> bool {
    let Some(rest) = line.strip_prefix(file).and_then(|r| r.strip_prefix(':')) else { return false };
    let mut parts = rest.splitn(3, ':');
    let number = |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    number(parts.next()) && number(parts.next()) && parts.next().is_some_and(|m| m.starts_with(' ') && m.contains(": "))
}

fn example() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/examples/head.xaif"))
        .expect("testdata/examples/head.xaif")
}

/// The example with `n` more attributes on the first `x` symbol (line 15, column 9).
fn crowded_symbol(n: usize) -> String {
    let attributes: String = (0..n).map(|i| format!(" a{i}=\"{i}\"")).collect();
    example().replacen("<xaif:Symbol symbol_id=\"x\"/>", &format!("<xaif:Symbol symbol_id=\"x\"{attributes}/>"), 1)
}

/// The example with `n` more attributes on the `CallGraph` (line 3, column 1), all named alike.
fn crowded_call_graph(n: usize) -> String {
    example().replacen("prefix=\"OpenAD_\"", &format!("prefix=\"OpenAD_\"{}", " a=\"1\"".repeat(n)), 1)
}

/// The example with `n` more scopes, each nested in the one before, the first in the
/// routine's body scope.
fn nested_scopes(n: usize) -> String {
    let scopes: String = (3..n + 3)
        .map(|v| format!("    <xaif:Scope vertex_id=\"{v}\">\n      <xaif:SymbolTable/>\n    </xaif:Scope>\n"))
        .collect();
    let edges: String = (3..n + 3)
        .map(|v| format!("    <xaif:ScopeEdge edge_id=\"{v}\" source=\"{v}\" target=\"{}\"/>\n", v - 1))
        .collect();
    let edge = "    <xaif:ScopeEdge edge_id=\"1\" source=\"2\" target=\"1\"/>\n";
    example().replacen(edge, &format!("{edge}{edges}"), 1).replacen(
        "  </xaif:ScopeHierarchy>",
        &format!("{scopes}  </xaif:ScopeHierarchy>"),
        1,
    )
}

/// The example with `sin` applied `n` times to `t` in the second statement.
fn deep_expression(n: usize) -> String {
    let mut vertices = String::from(
        "<xaif:VariableReference vertex_id=\"1\">\
         <xaif:SymbolReference vertex_id=\"1\" symbol_id=\"t\" scope_id=\"2\"/></xaif:VariableReference>\n",
    );
    let mut edges = String::new();
    for v in 2..n + 2 {
        vertices.push_str(&format!("<xaif:Intrinsic vertex_id=\"{v}\" name=\"sin_scal\"/>\n"));
        edges.push_str(&format!(
            "<xaif:ExpressionEdge edge_id=\"{v}\" source=\"{}\" target=\"{v}\" position=\"1\"/>\n",
            v - 1
        ));
    }
    let text = example();
    let rhs = text.rfind("<xaif:AssignmentRHS>").expect("second right-hand side") + "<xaif:AssignmentRHS>".len();
    let end = text.rfind("</xaif:AssignmentRHS>").expect("its end");
    format!("{}\n{vertices}{edges}{}", &text[..rhs], &text[end..])
}

/// The example with `n` copies of its routine, each under a name of its own.
fn many_routines(n: usize) -> String {
    let text = example();
    let start = text.find("  <xaif:ControlFlowGraph").expect("routine");
    let end = text.find("</xaif:CallGraph>").expect("end");
    let routine = &text[start..end];
    let symbols: String = (0..n)
        .map(|i| format!("        <xaif:Symbol symbol_id=\"copy{i}\" kind=\"subroutine\" type=\"void\"/>\n"))
        .collect();
    let copies: String = (0..n)
        .map(|i| {
            routine.replace("symbol_id=\"head\"", &format!("symbol_id=\"copy{i}\"")).replace(
                "<xaif:ControlFlowGraph vertex_id=\"1\"",
                &format!("<xaif:ControlFlowGraph vertex_id=\"{}\"", i + 2),
            )
        })
        .collect();
    let head_symbol = "        <xaif:Symbol symbol_id=\"head\" kind=\"subroutine\" type=\"void\"/>\n";
    format!("{}{copies}{}", &text[..end], &text[end..]).replacen(head_symbol, &format!("{head_symbol}{symbols}"), 1)
}

/// Numbers too large for any type the reader keeps them in, in every kind of attribute that
/// holds one.
fn huge_numbers() -> Vec<(&'static str, String)> {
    let huge = "184467440737095516160000";
    let text = example();
    vec![
        ("huge_vertex_id.xaif", text.replacen("<xaif:Entry vertex_id=\"1\"", &format!("<xaif:Entry vertex_id=\"{huge}\""), 1)),
        ("huge_position.xaif", text.replacen("position=\"2\" symbol_id=\"y\"", &format!("position=\"{huge}\" symbol_id=\"y\""), 1)),
        ("huge_alias_key.xaif", text.replacen("<xaif:AliasSet key=\"0\"/>", &format!("<xaif:AliasSet key=\"{huge}\"/>"), 1)),
        ("huge_scope_id.xaif", text.replacen("scope_id=\"1\" controlflowgraph", &format!("scope_id=\"{huge}\" controlflowgraph"), 1)),
        ("huge_edge_id.xaif", text.replacen("<xaif:ControlFlowEdge edge_id=\"1\"", &format!("<xaif:ControlFlowEdge edge_id=\"{huge}\""), 1)),
        ("huge_expression_position.xaif", text.replacen("target=\"3\" position=\"2\"", &format!("target=\"3\" position=\"{huge}\""), 1)),
        ("huge_line_number.xaif", text.replacen("<xaif:Assignment statement_id=\"s1\"", &format!("<xaif:Assignment statement_id=\"s1\" lineNumber=\"{huge}\""), 1)),
        (
            "huge_dimension.xaif",
            text.replacen(
                "<xaif:Symbol symbol_id=\"t\"/>",
                &format!("<xaif:Symbol symbol_id=\"t\" shape=\"vector\"><xaif:DimensionBounds lower=\"1\" upper=\"{huge}\"/></xaif:Symbol>"),
                1,
            ),
        ),
    ]
}

#[test]
fn an_element_with_more_attributes_than_xaif_allows_is_refused_located_in_every_mode() {
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::write(dir.path().join("symbol.xaif"), crowded_symbol(100_000)).expect("write");
    std::fs::write(dir.path().join("root.xaif"), crowded_call_graph(100_000)).expect("write");
    let bound = "more than the 64 any XAIF or catalogue element may have";
    for (file, expected) in [
        ("symbol.xaif", format!("symbol.xaif:15:9: Symbol: 100001 attributes, {bound}")),
        ("root.xaif", format!("root.xaif:3:1: CallGraph: 100005 attributes, {bound}")),
    ] {
        for args in [
            vec!["identity", file, "-o", "out.xaif"],
            vec!["tangent", file, "-o", "out.xaif"],
            vec!["adjoint", file, "-o", "out.xaif"],
            vec!["analyze", file],
            vec!["validate", file],
            vec!["run", file],
        ] {
            let outcome = xaifbooster(dir.path(), &args);
            let what = args.join(" ");
            assert_eq!(outcome.code, Some(1), "{what} accepted it: {}", short(&outcome.stderr));
            assert!(
                outcome.stderr.lines().any(|l| l == expected),
                "{what}: wanted {expected}\n{}",
                short(&outcome.stderr)
            );
            assert!(outcome.stderr.lines().all(|l| is_located(l, file)), "{what}: {}", short(&outcome.stderr));
            assert!(outcome.took < TEN_SECONDS, "{what} took {:?}", outcome.took);
            assert!(!dir.path().join("out.xaif").exists(), "{what} wrote an output");
        }
    }
    // Within the bound, unknown attributes are dropped with a warning, as ever.
    std::fs::write(dir.path().join("some.xaif"), crowded_symbol(60)).expect("write");
    let outcome = xaifbooster(dir.path(), &["identity", "some.xaif", "-o", "some.id.xaif"]);
    assert_eq!(outcome.code, Some(0), "{}", short(&outcome.stderr));
    assert!(
        outcome.stderr.contains("15:9: warning: Symbol: unknown attribute 'a59' (dropped)"),
        "{}",
        short(&outcome.stderr)
    );
}

#[test]
fn a_catalogue_element_with_too_many_attributes_is_refused_located() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let builtin = include_str!("../schema/intrinsics/inlinable_intrinsics.xaif");
    let tag = "<xaifii:InlinableIntrinsic ";
    let at = builtin.find(tag).expect("an intrinsic");
    let line = builtin[..at].matches('\n').count() + 1;
    let column = at - builtin[..at].rfind('\n').map_or(0, |n| n + 1) + 1;
    let attributes: String = (0..100_000).map(|i| format!("a{i}=\"1\" ")).collect();
    std::fs::write(dir.path().join("crowded.xaif"), builtin.replacen(tag, &format!("{tag}{attributes}"), 1))
        .expect("write");
    std::fs::write(dir.path().join("in.xaif"), example()).expect("write");
    let outcome = xaifbooster(dir.path(), &["tangent", "-c", "crowded.xaif", "in.xaif", "-o", "out.xaif"]);
    assert_eq!(outcome.code, Some(1), "{}", short(&outcome.stderr));
    let count = 100_000 + builtin[at..].split('>').next().expect("tag").matches('=').count();
    let expected = format!(
        "crowded.xaif:{line}:{column}: InlinableIntrinsic: {count} attributes, more than the 64 any XAIF or catalogue element may have"
    );
    assert!(outcome.stderr.lines().any(|l| l == expected), "wanted {expected}\n{}", short(&outcome.stderr));
    assert!(outcome.took < TEN_SECONDS, "took {:?}", outcome.took);
    assert!(!dir.path().join("out.xaif").exists());
}

#[test]
fn deep_scope_nesting_is_transformed_and_analysed_in_linear_time() {
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::write(dir.path().join("deep.xaif"), nested_scopes(30_000)).expect("write");
    for args in [
        vec!["analyze", "deep.xaif"],
        vec!["adjoint", "deep.xaif", "-o", "deep.adm.xaif"],
        vec!["tangent", "deep.xaif", "-o", "deep.tlm.xaif"],
    ] {
        let outcome = xaifbooster(dir.path(), &args);
        let what = args.join(" ");
        assert_eq!(outcome.code, Some(0), "{what}: {}", short(&outcome.stderr));
        assert!(outcome.took < TEN_SECONDS, "{what} took {:?} (was 57 s for analyze, 18 s for adjoint)", outcome.took);
    }
    let failures = common::xmllint_failures(&[dir.path().join("deep.adm.xaif"), dir.path().join("deep.tlm.xaif")]);
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Every hostile input in every mode: exit 0 with schema-valid output, or exit 1 with every
/// line of the message located in the input (or in the catalogue, for catalogue inputs).
#[test]
fn every_hostile_input_ends_in_valid_output_or_a_located_refusal_under_4_gib() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut inputs: Vec<(String, String)> = vec![
        ("attributes.xaif".into(), crowded_symbol(100_000)),
        ("root_attributes.xaif".into(), crowded_call_graph(100_000)),
        ("scopes.xaif".into(), nested_scopes(5_000)),
        ("expression.xaif".into(), deep_expression(20_000)),
        ("routines.xaif".into(), many_routines(1_000)),
    ];
    for (name, text) in huge_numbers() {
        assert!(text.contains("184467440737095516160000"), "{name}: the number was put in");
        inputs.push((name.to_owned(), text));
    }
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz");
    let mut catalogues = Vec::new();
    for path in common::files_in(&fuzz, "xaif") {
        let name = path.file_name().expect("name").to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).expect("fuzz regression");
        if text.contains("InlinableIntrinsicDefinitions") {
            catalogues.push(name.clone());
        }
        inputs.push((name, text));
    }
    assert!(!catalogues.is_empty(), "the fuzz regressions hold catalogues");
    for (name, text) in &inputs {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    std::fs::write(dir.path().join("example.xaif"), example()).expect("write");
    let mut written: Vec<PathBuf> = Vec::new();
    let mut runs = 0;
    for (name, _) in &inputs {
        let stem = name.trim_end_matches(".xaif");
        let outputs = [format!("{stem}.id.xaif"), format!("{stem}.tlm.xaif"), format!("{stem}.adm.xaif")];
        let mut commands: Vec<(Vec<String>, Option<&str>)> = vec![
            (vec!["identity".into(), name.clone(), "-o".into(), outputs[0].clone()], Some(&outputs[0])),
            (vec!["tangent".into(), name.clone(), "-o".into(), outputs[1].clone()], Some(&outputs[1])),
            (vec!["adjoint".into(), name.clone(), "-o".into(), outputs[2].clone()], Some(&outputs[2])),
            (vec!["validate".into(), name.clone()], None),
            (vec!["analyze".into(), name.clone()], None),
            (vec!["run".into(), name.clone()], None),
        ];
        if catalogues.contains(name) {
            // A catalogue is input to the modes that take one.
            commands = ["tangent", "adjoint"]
                .iter()
                .map(|mode| {
                    (
                        vec![
                            mode.to_string(),
                            "-c".into(),
                            name.clone(),
                            "example.xaif".into(),
                            "-o".into(),
                            "c.xaif".into(),
                        ],
                        None,
                    )
                })
                .collect();
        }
        for (args, output) in commands {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let outcome = xaifbooster(dir.path(), &args);
            runs += 1;
            let what = args.join(" ");
            match outcome.code {
                Some(0) => written.extend(output.map(|o| dir.path().join(o))),
                _ => {
                    let messages: Vec<&str> = outcome
                        .stderr
                        .lines()
                        .filter(|l| !l.contains(": warning: ") && !l.starts_with("xaifbooster: note: "))
                        .collect();
                    assert!(!messages.is_empty(), "{what}: refused without a message");
                    assert!(
                        messages
                            .iter()
                            .all(|l| is_located(l, name) || l.starts_with("xaifbooster: ") && located_inside(l, name)),
                        "{what}: unlocated refusal\n{}",
                        short(&outcome.stderr)
                    );
                    if let Some(output) = output {
                        assert!(!dir.path().join(output).exists(), "{what}: a refused run left {output}");
                    }
                }
            }
        }
    }
    assert!(runs >= 6 * (inputs.len() - catalogues.len()), "every mode ran");
    assert!(written.iter().any(|p| p.ends_with("scopes.adm.xaif")), "deep nesting transformed");
    let failures = common::xmllint_failures(&written);
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Whether an error line of the program (`xaifbooster: …`) holds a location in `file`.
fn located_inside(line: &str, file: &str) -> bool {
    line.find(&format!("{file}:")).is_some_and(|at| is_located(&line[at..], file))
}
