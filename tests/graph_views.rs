//! `xaifbooster dot` through the real binary: every kind of view over several corpus inputs
//! (and adjoint outputs) is DOT that Graphviz parses, `--svg` renders, a machine without
//! Graphviz is told how to install it, and labels with quotes and backslashes stay DOT.
//!
//! Graphviz is installed by `.ci/run`; with `CI=true` its absence is a failure, elsewhere the
//! tests that need it say so and stop.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use xaifbooster::ir::{CfgVertexKind, Routine, Statement};

fn xaifbooster(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xaifbooster")).args(args).output().expect("binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether Graphviz's `dot` runs here; in CI it must.
fn graphviz() -> bool {
    let found = Command::new("dot").arg("-V").output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "Graphviz is not installed (apt-get install graphviz)");
        eprintln!("Graphviz is not installed: the DOT is not checked (apt-get install graphviz)");
    }
    found
}

/// Graphviz's verdict on a DOT text: `Ok(svg)` or its complaint.
fn parse_with_dot(dot: &str) -> Result<String, String> {
    use std::io::Write;
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dot runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = dot.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("dot ends");
    writer.join().expect("writer").expect("dot read its input");
    let stderr = text(&output.stderr);
    // dot prints syntax errors as "Error: …" (and warnings for what it only tolerates).
    if output.status.success() && !stderr.contains("Error") && !stderr.contains("syntax") {
        Ok(text(&output.stdout))
    } else {
        Err(stderr)
    }
}

fn corpus(example: &str, file: &str) -> PathBuf {
    common::shared_dir().join("corpus").join(example).join(file)
}

/// A routine and the id of an assignment in it (the top routine's first, else any routine's),
/// for an expression view.
fn some_assignment(path: &Path) -> (String, String) {
    let bytes = std::fs::read(path).expect("input");
    let catalogue = xaifbooster::xaif::intrinsics::Catalogue::builtin();
    let read = xaifbooster::xaif::read(&bytes, "input", &xaifbooster::xaif::ReadOptions { strict: false, catalogue })
        .expect("readable");
    let cg = read.call_graph;
    let top = xaifbooster::cli::dot::top_routine(&cg).expect("a top routine");
    let mut order: Vec<_> = cg.routines.iter().map(|(id, _)| id).collect();
    order.sort_by_key(|id| *id != top);
    for id in order {
        let graphs: Vec<&xaifbooster::ir::FlowGraph> = match &cg.routines[id] {
            Routine::ControlFlowGraph(cfg) => vec![&cfg.graph],
            Routine::ReplacementList(list) => list.replacements.iter().map(|r| &r.graph).collect(),
        };
        for graph in graphs {
            for (_, vertex) in graph.vertices.iter() {
                let CfgVertexKind::BasicBlock(block) = &vertex.kind else { continue };
                for statement in &block.statements {
                    if let Statement::Assignment(a) = statement {
                        return (cg.symbol_name(cg.routines[id].symbol()).to_owned(), cg.name(a.id).to_owned());
                    }
                }
            }
        }
    }
    panic!("{}: no assignment", path.display())
}

#[test]
fn every_view_of_several_inputs_parses_with_graphviz() {
    let have_dot = graphviz();
    let out = tempfile::tempdir().expect("temp dir");
    // Branches and loops (RoehFlux, Loop_simple_10), many statements and eliminations
    // (graphEx2), several routines (Loop_simple_10), globals (globalActive_4).
    let examples = ["simple2", "graphEx2", "RoehFlux", "Loop_simple_10", "globalActive_4", "bratu"];
    let mut inputs: Vec<PathBuf> = examples.iter().map(|e| corpus(e, "tlm.in.xaif")).collect();
    // Adjoint outputs: replacement lists with taping and adjoint placeholders.
    for example in ["simple2", "Loop_simple_10", "RoehFlux"] {
        let adjoint = out.path().join(format!("{example}.adm.xaif"));
        let input = corpus(example, "adm.in.xaif");
        let made = xaifbooster(&["adjoint", "-i", input.to_str().unwrap(), "-o", adjoint.to_str().unwrap()]);
        assert!(made.status.success(), "{example}: adjoint: {}", text(&made.stderr));
        inputs.push(adjoint);
    }
    let mut checked = 0;
    for input in &inputs {
        let file = input.to_str().unwrap();
        let (routine, statement) = some_assignment(input);
        let transformed = file.ends_with(".adm.xaif");
        let mut views: Vec<Vec<&str>> = vec![
            vec!["dot", file],
            vec!["dot", file, "--what", "cfg"],
            vec!["dot", file, "--what", "expression", "--routine", &routine, "--statement", &statement],
        ];
        if transformed {
            views.push(vec!["dot", file, "--what", "cfg", "--placeholder", "2"]);
            views.push(vec!["dot", file, "--what", "cfg", "--placeholder", "3"]);
        } else {
            views.push(vec!["dot", file, "--what", "lcg"]);
            views.push(vec!["dot", file, "--what", "lcg", "--preaccumulation", "statement"]);
            views.push(vec!["dot", file, "--what", "lcg", "--elimination", "forward"]);
        }
        for args in views {
            let output = xaifbooster(&args);
            let what = args[2..].join(" ");
            assert!(output.status.success(), "{file} {what}: {}", text(&output.stderr));
            let dot = text(&output.stdout);
            assert!(dot.starts_with("digraph \"") && dot.ends_with("}\n"), "{file} {what}: not a digraph:\n{dot}");
            if have_dot {
                if let Err(complaint) = parse_with_dot(&dot) {
                    panic!("{file} {what}: dot refuses the graph: {complaint}\n{dot}");
                }
                checked += 1;
            }
        }
    }
    if have_dot {
        assert_eq!(checked, inputs.len() * 5 + 6);
    }
}

#[test]
fn views_show_what_they_promise() {
    let graph_ex2 = corpus("graphEx2", "tlm.in.xaif");
    let file = graph_ex2.to_str().unwrap();
    // The call graph names the routines and who calls whom.
    let loops = corpus("Loop_simple_10", "tlm.in.xaif");
    let call_graph = text(&xaifbooster(&["dot", loops.to_str().unwrap()]).stdout);
    assert!(call_graph.contains("label=\"head__29\"") && call_graph.contains("label=\"foo__24\""), "{call_graph}");
    assert!(call_graph.lines().filter(|l| l.contains(" -> ")).count() == 1, "{call_graph}");
    // The linearized graphs: before and after, eliminations numbered and listed.
    let lcg = text(&xaifbooster(&["dot", file, "--what", "lcg"]).stdout);
    for expected in ["before elimination", "after elimination (remainder)", "elimination order:", "1. "] {
        assert!(lcg.contains(expected), "lcg lacks {expected:?}");
    }
    assert!(lcg.contains("eliminate vertex") || lcg.contains("eliminate edge") || lcg.contains("face"), "{lcg}");
    // One statement's sequence only: the first statement of the first sequence.
    let title = lcg.lines().find(|l| l.contains(": statements ")).expect("a sequence title");
    let statement = title.split(": statements ").nth(1).unwrap().split([',', ' ']).next().unwrap().to_owned();
    let one = text(&xaifbooster(&["dot", file, "--what", "lcg", "--statement", &statement]).stdout);
    assert_eq!(one.matches("subgraph cluster_s").count(), 3, "one sequence, two parts: {one}");
    // An adjoint output shows its taping and adjoint sweeps.
    let out = tempfile::tempdir().expect("temp dir");
    let adjoint = out.path().join("adm.xaif");
    let input = corpus("simple2", "adm.in.xaif");
    assert!(xaifbooster(&["adjoint", "-i", input.to_str().unwrap(), "-o", adjoint.to_str().unwrap()]).status.success());
    let cfg = text(&xaifbooster(&["dot", adjoint.to_str().unwrap(), "--what", "cfg"]).stdout);
    assert!(cfg.contains("placeholder 2: taping") && cfg.contains("placeholder 3: adjoint"), "{cfg}");
    assert!(cfg.contains("push_s0") || cfg.contains("pop_s0"), "the sweeps' tape calls are shown: {cfg}");
}

#[test]
fn svg_renders_through_graphviz() {
    if !graphviz() {
        return;
    }
    let out = tempfile::tempdir().expect("temp dir");
    let svg = out.path().join("cfg.svg");
    let input = corpus("RoehFlux", "tlm.in.xaif");
    let output = xaifbooster(&["dot", input.to_str().unwrap(), "--what", "cfg", "--svg", "-o", svg.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let written = std::fs::read_to_string(&svg).expect("svg written");
    assert!(written.contains("<svg") && written.contains("</svg>"), "{written}");
}

#[test]
fn svg_without_graphviz_says_how_to_install_it_and_writes_nothing() {
    let out = tempfile::tempdir().expect("temp dir");
    let empty = out.path().join("no-programs");
    std::fs::create_dir(&empty).expect("dir");
    let svg = out.path().join("graph.svg");
    let input = corpus("simple2", "tlm.in.xaif");
    let output = Command::new(env!("CARGO_BIN_EXE_xaifbooster"))
        .env("PATH", &empty)
        .args(["dot", input.to_str().unwrap(), "--svg", "-o", svg.to_str().unwrap()])
        .output()
        .expect("binary runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("Graphviz") && stderr.contains("apt-get install graphviz"), "{stderr}");
    assert!(!svg.exists(), "a failed run writes nothing");
}

#[test]
fn labels_with_quotes_and_backslashes_stay_dot() {
    // A symbol whose name holds a quote and a backslash (the schema allows any string).
    let original = std::fs::read_to_string(corpus("simple2", "tlm.in.xaif")).expect("input");
    let odd = original.replace("symbol_id=\"X1_1\"", "symbol_id=\"X1&quot;\\n_1\"");
    assert_ne!(odd, original);
    let out = tempfile::tempdir().expect("temp dir");
    let file = out.path().join("odd.xaif");
    std::fs::write(&file, odd).expect("write");
    let file = file.to_str().unwrap();
    for args in [
        vec!["dot", file, "--what", "cfg"],
        vec!["dot", file, "--what", "expression", "--statement", "17"],
        vec!["dot", file, "--what", "lcg"],
    ] {
        let output = xaifbooster(&args);
        assert!(output.status.success(), "{args:?}: {}", text(&output.stderr));
        let dot = text(&output.stdout);
        assert!(dot.contains(r#"X1\"\\n_1"#), "{args:?}: escaped name missing:\n{dot}");
        if graphviz() {
            let svg = parse_with_dot(&dot).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            // Rendered as written: a quote and a backslash, no line break.
            assert!(svg.contains("X1&quot;\\n_1"), "{args:?}: {svg}");
        }
    }
}

#[test]
fn a_selection_that_matches_nothing_says_what_there_is() {
    let input = corpus("Loop_simple_10", "tlm.in.xaif");
    let file = input.to_str().unwrap();
    let routine = xaifbooster(&["dot", file, "--what", "cfg", "--routine", "nosuch"]);
    assert_eq!(routine.status.code(), Some(1));
    let stderr = text(&routine.stderr);
    assert!(stderr.contains("no routine named nosuch; the routines are: ") && stderr.contains("foo__24"), "{stderr}");
    // `foo` names `foo__24`.
    assert!(xaifbooster(&["dot", file, "--what", "cfg", "--routine", "foo"]).status.success());
    let statement = xaifbooster(&["dot", file, "--what", "expression", "--statement", "no-such-id"]);
    assert_eq!(statement.status.code(), Some(1));
    assert!(text(&statement.stderr).contains("no statement with statement_id 'no-such-id'"));
    let missing = xaifbooster(&["dot", file, "--what", "expression"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("--statement"), "{}", text(&missing.stderr));
}
