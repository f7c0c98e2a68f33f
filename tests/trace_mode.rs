//! Trace mode (the original's TraceDiff): on the 17 examples the original engine's stage
//! outputs hold, the same trace calls with the same arguments in the same places, compared by
//! structure; schema-valid output for every corpus input; the streamed path writes what the
//! whole tree writes; `batch trace` and the command's refusal of bad input.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use xaifbooster::driver::stream::{self, Concurrency};
use xaifbooster::driver::{self, Mode, Options};
use xaifbooster::pipeline::{self, Config};
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

/// `input` traced through the one driver, as the command line runs it.
fn traced(input: &[u8], file: &str) -> Vec<u8> {
    let options = Options {
        catalogue: Catalogue::builtin(),
        strict: false,
        config: Config::default(),
        schema_location: Mode::Trace.schema().to_owned(),
        threads: false,
    };
    let mut output = Vec::new();
    let run = driver::run(Mode::Trace, input, file, &mut output, &options);
    assert!(run.is_ok(), "{file}: {:?}", run.err());
    output
}

/// One trace call: the routine called and its arguments, a constant as its value, a variable
/// as its symbol's name, or `temporary` for a symbol the engine made (loop counters, saved
/// subscripts), whose names differ between engines.
type Call = (String, Vec<String>);

/// Where the trace calls of one block of placeholder 2 stand: for a block of the input, its
/// vertex id; for a block the transformation added, the input vertices before and after it
/// (through other added blocks).
type Place = (String, String, String);

/// The statement ids of a document.
fn statement_ids(text: &str) -> std::collections::HashSet<String> {
    let doc = roxmltree::Document::parse(text).expect("well-formed XML");
    doc.descendants().filter_map(|n| n.attribute("statement_id")).map(str::to_owned).collect()
}

/// Per routine, its trace calls by place (blocks added on the same edge in order), each block's
/// with the input's statements among them (`statement <id>`, of the ids in `input_ids`), so
/// that a call's trace is seen to stand around the call.
fn trace_calls(
    text: &str,
    input_ids: &std::collections::HashSet<String>,
) -> BTreeMap<String, BTreeMap<Place, Vec<Vec<Call>>>> {
    let doc = roxmltree::Document::parse(text).expect("well-formed XML");
    let is = |n: &roxmltree::Node, name: &str| n.is_element() && n.tag_name().name() == name;
    let temporaries: std::collections::HashSet<&str> = doc
        .descendants()
        .filter(|n| is(n, "Symbol") && matches!(n.attribute("temp"), Some("1" | "true")))
        .filter_map(|n| n.attribute("symbol_id"))
        .collect();
    let mut routines = BTreeMap::new();
    for list in doc.descendants().filter(|n| is(n, "ReplacementList")) {
        let symbol = list.attribute("symbol_id").expect("symbol_id").to_owned();
        let placeholder =
            |number: &str| list.children().find(|n| is(n, "Replacement") && n.attribute("placeholder") == Some(number));
        let original_ids: std::collections::HashSet<&str> = placeholder("1")
            .expect("placeholder 1")
            .children()
            .filter(|n| n.is_element() && !is(n, "ControlFlowEdge"))
            .filter_map(|n| n.attribute("vertex_id"))
            .collect();
        let traced = placeholder("2").expect("placeholder 2");
        let edges: Vec<(&str, &str)> = traced
            .children()
            .filter(|n| is(n, "ControlFlowEdge"))
            .map(|n| (n.attribute("source").expect("source"), n.attribute("target").expect("target")))
            .collect();
        // Through added blocks (one edge in, one edge out) to the input's vertex.
        let walk = |start: &str, back: bool| -> String {
            let mut v = start.to_owned();
            for _ in 0..=edges.len() {
                if original_ids.contains(v.as_str()) {
                    return v;
                }
                let next = edges.iter().find(|(s, t)| if back { *t == v } else { *s == v });
                match next {
                    Some((s, t)) => v = (if back { *s } else { *t }).to_owned(),
                    None => break,
                }
            }
            format!("(dangling {v})")
        };
        let mut places: BTreeMap<Place, Vec<Vec<Call>>> = BTreeMap::new();
        for block in traced.children().filter(|n| is(n, "BasicBlock")) {
            let calls: Vec<Call> = block
                .children()
                .filter(|n| {
                    (is(n, "InlinableSubroutineCall")
                        && n.attribute("subroutine_name").is_some_and(|s| s.starts_with("oad_trace")))
                        || (n.is_element() && n.attribute("statement_id").is_some_and(|id| input_ids.contains(id)))
                })
                .map(|call| {
                    if !is(&call, "InlinableSubroutineCall") {
                        let id = call.attribute("statement_id").unwrap_or("");
                        return (format!("statement {id}"), Vec::new());
                    }
                    let arguments = call
                        .children()
                        .filter(|n| is(n, "Argument"))
                        .map(|argument| {
                            let value = argument.children().find(|n| n.is_element()).expect("argument value");
                            if is(&value, "Constant") {
                                value.attribute("value").unwrap_or("").to_owned()
                            } else {
                                let symbol = value
                                    .descendants()
                                    .find(|n| is(n, "SymbolReference"))
                                    .and_then(|n| n.attribute("symbol_id"))
                                    .expect("a variable argument names a symbol");
                                if temporaries.contains(symbol) { "temporary".to_owned() } else { symbol.to_owned() }
                            }
                        })
                        .collect();
                    (call.attribute("subroutine_name").unwrap_or("").to_owned(), arguments)
                })
                .collect();
            let id = block.attribute("vertex_id").expect("vertex_id");
            let place = if original_ids.contains(id) {
                (id.to_owned(), String::new(), String::new())
            } else {
                (String::new(), walk(id, true), walk(id, false))
            };
            if calls.iter().any(|(name, _)| name.starts_with("oad_trace")) || place.0.is_empty() {
                places.entry(place).or_default().push(calls);
            }
        }
        for blocks in places.values_mut() {
            blocks.sort();
        }
        routines.insert(symbol, places);
    }
    routines
}

fn examples_with_stage_outputs() -> Vec<PathBuf> {
    files_in(&shared_dir().join("xaif/stage-outputs/TraceDiff"), "xaif")
}

/// The original's trace calls, for every routine it wrote a tracing replacement list for: the
/// same names and arguments in the same blocks, and added blocks on the same edges. One stage
/// output (loop_continue, a loop with a `cycle` Goto) holds the input untransformed, no
/// replacement list at all; there the output is only checked to be traced and valid.
#[test]
fn trace_calls_match_the_original_on_its_stage_outputs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let stage_outputs = examples_with_stage_outputs();
    assert_eq!(stage_outputs.len(), 17, "the original's TraceDiff outputs");
    let (mut written, mut untraced, mut compared) = (Vec::new(), Vec::new(), 0);
    for expected_path in &stage_outputs {
        let name = expected_path.file_name().expect("file name").to_string_lossy().into_owned();
        let input_path = shared_dir().join("xaif/examples").join(&name);
        let input = std::fs::read(&input_path).expect("example input");
        let input_ids = statement_ids(std::str::from_utf8(&input).expect("UTF-8"));
        let output = traced(&input, &name);
        let out = dir.path().join(&name);
        std::fs::write(&out, &output).expect("write output");
        written.push(out);
        let ours = trace_calls(std::str::from_utf8(&output).expect("UTF-8"), &input_ids);
        let expected_text = std::fs::read_to_string(expected_path).expect("stage output");
        let theirs = trace_calls(&expected_text, &input_ids);
        if theirs.is_empty() {
            untraced.push(name.clone());
            assert!(!ours.is_empty(), "{name}: no tracing replacement list written");
            continue;
        }
        assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>(), "{name}: routines");
        for (routine, places) in &theirs {
            assert_eq!(&ours[routine], places, "{name}: routine {routine}: trace calls by place");
            compared += places.values().flatten().flatten().filter(|(name, _)| name.starts_with("oad_trace")).count();
        }
    }
    assert_eq!(untraced, ["loop_continue.xaif"], "stage outputs without a tracing replacement list");
    // Calls, arguments and indices, loops and branches: 55 trace calls in the original's outputs.
    assert!(compared >= 50, "only {compared} trace calls compared");
    let invalid = xmllint_failures(&written);
    assert!(invalid.is_empty(), "outputs not valid against xaif_output.xsd: {invalid:#?}");
}

#[test]
fn every_corpus_input_traces_to_schema_valid_output() {
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = corpus_files("tlm.in.xaif");
    assert!(inputs.len() >= 190, "{} corpus inputs", inputs.len());
    let (mut written, mut with_traces, mut enclosed) = (Vec::new(), 0, 0);
    for input in &inputs {
        let name = short_name(input);
        let output = traced(&std::fs::read(input).expect("readable"), &name);
        let text = String::from_utf8(output).expect("UTF-8");
        assert!(text.contains("template_name=\"tracing_subroutine_template\""), "{name}: no tracing list");
        with_traces += usize::from(text.contains("subroutine_name=\"oad_trace_"));
        enclosed += conversions_inside_call_traces(&name, &text);
        // Our own reader takes it back, renamed non-smooth intrinsics and all.
        xaif::read(text.as_bytes(), &name, &ReadOptions::default()).expect("the output reads back");
        let out = dir.path().join(name.replace('/', "__"));
        std::fs::write(&out, text).expect("write output");
        written.push(out);
    }
    // Most corpus programs call routines with bodies, branch or loop on active values.
    assert!(with_traces >= 100, "only {with_traces} outputs trace anything");
    assert!(enclosed >= 10, "only {enclosed} traced calls with conversions around them");
    let invalid = xmllint_failures(&written);
    assert!(invalid.is_empty(), "outputs not valid against xaif_output.xsd: {invalid:#?}");
}

/// As in the original, a traced call's `oad_trace_call` … `oad_trace_ecall` encloses the
/// conversions TypeChange put around it: in placeholder 2, the statements between a traced
/// call and its trace events are TypeChange's (`oad_convert` and the like) only. Returns how
/// many traced calls have such statements; panics where another statement stands between.
fn conversions_inside_call_traces(name: &str, text: &str) -> usize {
    let doc = roxmltree::Document::parse(text).expect("well-formed XML");
    let is = |n: &roxmltree::Node, tag: &str| n.is_element() && n.tag_name().name() == tag;
    let trace = |n: &roxmltree::Node| n.attribute("subroutine_name").is_some_and(|s| s.starts_with("oad_trace_"));
    let made_by_type_change = |n: &roxmltree::Node| {
        let id = n.attribute("statement_id").unwrap_or("");
        matches!(id, "oad_convert_prior" | "oad_allocate_matching" | "oad_shape_test" | "oad_convert_post")
            || id.starts_with("assignment_to_temporary_for_saving_value_across_statement")
    };
    let mut enclosed = 0;
    for replacement in doc.descendants().filter(|n| is(n, "Replacement") && n.attribute("placeholder") == Some("2")) {
        for block in replacement.children().filter(|n| is(n, "BasicBlock")) {
            let statements: Vec<_> = block.children().filter(|n| n.is_element()).collect();
            for (k, call) in statements.iter().enumerate().filter(|(_, n)| is(n, "SubroutineCall")) {
                let before: Vec<_> = statements[..k].iter().rev().take_while(|n| !trace(n)).collect();
                let after: Vec<_> = statements[k + 1..].iter().take_while(|n| !trace(n)).collect();
                let traced = statements[k + 1..]
                    .iter()
                    .find(|n| trace(n))
                    .is_some_and(|n| n.attribute("subroutine_name") == Some("oad_trace_ecall"));
                if !traced {
                    continue;
                }
                let id = call.attribute("statement_id").unwrap_or("");
                assert!(
                    before.iter().chain(&after).all(|n| made_by_type_change(n)),
                    "{name}: call {id}: a statement other than a conversion between the call and its trace"
                );
                // Nor does a conversion for it stand outside, before its `oad_trace_call`.
                let opening = statements[..k]
                    .iter()
                    .rposition(|n| n.attribute("subroutine_name") == Some("oad_trace_call"))
                    .expect("a traced call's oad_trace_call");
                let outside = opening.checked_sub(1).map(|j| statements[j]);
                assert!(
                    !outside.is_some_and(|n| made_by_type_change(&n)
                        && n.attribute("statement_id") != Some("oad_convert_post")
                        && n.attribute("statement_id") != Some("oad_shape_test")),
                    "{name}: call {id}: a conversion before the call's trace"
                );
                enclosed += usize::from(!before.is_empty() || !after.is_empty());
            }
        }
    }
    enclosed
}

fn whole_tree(bytes: &[u8]) -> Vec<u8> {
    let mut cg = xaif::read(bytes, "whole", &ReadOptions::default()).expect("readable").call_graph;
    pipeline::trace(&mut cg, Catalogue::builtin(), &Config::default()).expect("trace");
    xaif::write(&cg, &WriteOptions { schema_location: Mode::Trace.schema().into() })
}

fn streamed(bytes: &[u8], pipelined: bool) -> Vec<u8> {
    let write = WriteOptions { schema_location: Mode::Trace.schema().into() };
    let mut body = Vec::new();
    let concurrency = Concurrency { gate: None, pipelined, workers: 0 };
    let run = stream::trace(
        bytes,
        "streamed",
        &ReadOptions::default(),
        Catalogue::builtin(),
        &Config::default(),
        &write,
        &mut body,
        concurrency,
    );
    match run {
        Ok(streamed) => streamed.bytes(&body),
        Err(error) => panic!("not streamed: {error}"),
    }
}

/// Routine by routine, on the driver's thread or reading on a second one, the output is the
/// whole tree's byte for byte: over the corpus, the examples, and a synthetic input with its
/// routines written callers first.
#[test]
fn streamed_trace_equals_the_whole_tree() {
    let dir = tempfile::tempdir().expect("temp dir");
    let synthetic = dir.path().join("synthetic.xaif");
    synthetic_input(&synthetic, "1", 5);
    let reversed = dir.path().join("reversed.xaif");
    let text = std::fs::read_to_string(&synthetic).expect("synthetic input");
    std::fs::write(&reversed, reverse_routines(&text)).expect("reversed input");
    let mut inputs = corpus_files("tlm.in.xaif");
    inputs.extend(
        examples_with_stage_outputs()
            .iter()
            .map(|p| shared_dir().join("xaif/examples").join(p.file_name().expect("file name"))),
    );
    inputs.push(synthetic);
    inputs.push(reversed);
    let mut traced_loops = 0;
    for input in &inputs {
        let bytes = std::fs::read(input).expect("readable");
        let whole = whole_tree(&bytes);
        traced_loops += usize::from(whole.windows(14).any(|w| w == b"oad_trace_loop"));
        for pipelined in [false, true] {
            assert!(
                streamed(&bytes, pipelined) == whole,
                "{}: pipelined {pipelined}: streamed differs",
                input.display()
            );
        }
        assert!(whole_tree(&bytes) == whole, "{}: two runs differ", input.display());
    }
    assert!(traced_loops >= 2, "only {traced_loops} inputs with a traced loop");
}

/// What the trace mode adds to the paths through the binary: `batch trace` writes for each
/// input what `trace` writes for it, whatever the number of threads, and a bad input gets a
/// located error, exit 1 and no output.
#[test]
fn batch_trace_and_the_command_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let corpus = dir.path().join("corpus");
    let names = ["IfStatement_1", "Loop_simple_4a", "speelpenning", "DoubleArrayIndex"];
    for name in names {
        std::fs::create_dir_all(corpus.join(name)).expect("dir");
        std::fs::copy(
            shared_dir().join("corpus").join(name).join("tlm.in.xaif"),
            corpus.join(name).join("tlm.in.xaif"),
        )
        .expect("copy");
    }
    let binary = env!("CARGO_BIN_EXE_xaifbooster");
    let mut outputs = Vec::new();
    for jobs in ["1", "2"] {
        let out = dir.path().join(format!("out{jobs}"));
        let status = std::process::Command::new(binary)
            .args(["batch", "trace", "-q", "-j", jobs, "--out-dir"])
            .arg(&out)
            .arg(&corpus)
            .status()
            .expect("batch runs");
        assert!(status.success(), "batch trace -j {jobs}: {status}");
        outputs.push(out);
    }
    for name in names {
        let single = dir.path().join(format!("{name}.xaif"));
        let input = corpus.join(name).join("tlm.in.xaif");
        let status = std::process::Command::new(binary)
            .args(["trace", "-q", "-i"])
            .arg(&input)
            .arg("-o")
            .arg(&single)
            .status()
            .expect("trace runs");
        assert!(status.success(), "trace {name}: {status}");
        let expected = std::fs::read(&single).expect("trace output");
        for out in &outputs {
            let batched = std::fs::read(out.join(name).join("tlm.out.xaif")).expect("batch output");
            assert!(batched == expected, "{name}: batch output differs from trace's ({})", out.display());
        }
    }
    // A broken input: located, exit 1, nothing written.
    let broken = dir.path().join("broken.xaif");
    let text = std::fs::read_to_string(corpus.join("speelpenning/tlm.in.xaif")).expect("input");
    let cut = text.find("<xaif:ControlFlowGraph ").expect("a routine");
    std::fs::write(&broken, &text[..cut + 40]).expect("write");
    let target = dir.path().join("never.xaif");
    let output = std::process::Command::new(binary)
        .args(["trace", "-i"])
        .arg(&broken)
        .arg("-o")
        .arg(&target)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let prefix = format!("{}:", broken.display());
    let located = stderr.lines().any(|line| {
        line.strip_prefix(&prefix).is_some_and(|rest| rest.split(':').take(2).all(|n| n.parse::<u32>().is_ok()))
    });
    assert!(located, "not located as file:line:column: {stderr}");
    assert!(!Path::new(&target).exists(), "a failed run wrote its output");
}

/// The emitted XAIF of a small program with a branch and a loop on active values, a call with
/// an array argument and a non-smooth intrinsic whose operand's subscript is an expression,
/// held as a reviewed snapshot (`cargo insta review`).
#[test]
fn trace_of_a_branch_a_loop_and_a_call() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/trace/branch_loop_call.xaif");
    let input = std::fs::read(&path).expect("testdata input");
    let output = String::from_utf8(traced(&input, "branch_loop_call.xaif")).expect("UTF-8");
    insta::assert_snapshot!(output);
}
