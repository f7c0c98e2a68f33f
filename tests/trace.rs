//! Control-flow traces: `run --trace` of the original engine's traced programs (TraceDiff stage
//! outputs) against their untraced examples, `trace-diff` on perturbed programs, malformed and
//! truncated traces, `verify --trace`, and the comparison's memory on long generated traces.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use common::shared_dir;
use proptest::prelude::*;
use xaifbooster::trace::diff::{self, Outcome, What};
use xaifbooster::trace::{Event, Kind, Open, Reader, Writer};

fn xaifbooster() -> Command {
    Command::cargo_bin("xaifbooster").expect("the binary is built")
}

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/trace").join(name)
}

/// `run -q --trace OUT FILE FLAGS…`: the failure's standard error, if it fails.
fn trace_run(file: &Path, out: &Path, flags: &[&str]) -> Result<(), String> {
    let output = xaifbooster()
        .arg("run")
        .arg("-q")
        .arg("--trace")
        .arg(out)
        .arg(file)
        .args(flags)
        .output()
        .expect("the binary runs");
    if output.status.success() {
        assert!(out.is_file(), "{} was not written", out.display());
        Ok(())
    } else {
        assert!(!out.exists(), "a failed run left its trace {}", out.display());
        Err(String::from_utf8_lossy(&output.stderr).lines().last().unwrap_or("").to_owned())
    }
}

/// `trace-diff [--json] A B`: exit code and standard output.
fn trace_diff(a: &Path, b: &Path, json: bool) -> (i32, String, String) {
    let mut command = xaifbooster();
    command.arg("trace-diff");
    if json {
        command.arg("--json");
    }
    let output = command.arg(a).arg(b).output().expect("the binary runs");
    (
        output.status.code().expect("an exit code"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The driver of `whole_box_model`'s top routine, as inferred from the original (the traced
/// version's replacement list lists no side effects to infer it from).
const BOX_MODEL: &[&str] = &[
    "--entry",
    "box_model_body__136",
    "--input-globals",
    "UVEL_72,RHO_50,S_54,SNEW_55,SNOW_56,SOLD_57,T_60,TNEW_65,TNOW_66,TOLD_67,XX_76",
    "--output-globals",
    "UVEL_72,RHO_50,S_54,SNEW_55,SNOW_56,SOLD_57,T_60,TNEW_65,TNOW_66,TOLD_67",
];

#[test]
fn stage_outputs_trace_as_their_untraced_examples() {
    let shared = shared_dir();
    let dir = tempfile::tempdir().unwrap();
    let stage = shared.join("xaif/stage-outputs/TraceDiff");
    let mut names: Vec<String> = std::fs::read_dir(&stage)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".xaif").to_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 17, "the 17 TraceDiff stage outputs");
    let (mut equal, mut with_events, mut not_run) = (Vec::new(), Vec::new(), Vec::new());
    for name in &names {
        let flags: &[&str] = if name == "whole_box_model" { BOX_MODEL } else { &[] };
        let original = shared.join(format!("xaif/examples/{name}.xaif"));
        let traced = stage.join(format!("{name}.xaif"));
        let (a, b) = (dir.path().join(format!("{name}.a.xml")), dir.path().join(format!("{name}.b.xml")));
        match (trace_run(&original, &a, flags), trace_run(&traced, &b, flags)) {
            (Ok(()), Ok(())) => {
                let (code, out, err) = trace_diff(&a, &b, false);
                assert_eq!(code, 0, "{name}: the traces differ:\n{out}{err}");
                assert!(out.starts_with("traces are equal"), "{name}: {out}");
                equal.push(name.clone());
                if std::fs::read_to_string(&b).unwrap().lines().count() > 2 {
                    with_events.push(name.clone());
                }
            }
            (Err(why), _) => not_run.push(format!("{name} (example): {why}")),
            (_, Err(why)) => not_run.push(format!("{name} (stage output): {why}")),
        }
    }
    eprintln!("equal traces: {} of 17; not run: {not_run:#?}", equal.len());
    // Two cannot run: uwe_ex_3's loop has no exit edge, vecref_ex's argument has no shape.
    for expected in [
        "add_mul_ex",
        "add_mul_ex1",
        "add_mul_ex2",
        "add_mul_ex_duud_lineUp",
        "add_mul_ex_no_duud",
        "goto_label_1",
        "loop_continue",
        "loop_exit",
        "select_case",
        "uwe_ex_1",
        "uwe_ex_2",
        "uwe_ex_2_explicit",
        "uwe_ex_4",
        "uwe_ex_5",
        "whole_box_model",
    ] {
        assert!(equal.iter().any(|n| n == expected), "{expected} was not compared: {not_run:?}");
    }
    // Not vacuous: the programs the original engine put trace calls into write events, from
    // their own calls (stage output) and from the executor (example) alike. loop_continue's
    // stage output is a plain control flow graph (no tracing template, no trace calls): the
    // executor traces both sides of it.
    assert_eq!(with_events, ["goto_label_1", "loop_continue", "loop_exit", "select_case", "whole_box_model"]);
}

/// Runs `loop_branch.xaif` with `edit` applied to its text, traced.
fn perturbed_trace(dir: &Path, name: &str, from: &str, to: &str) -> PathBuf {
    let text = std::fs::read_to_string(testdata("loop_branch.xaif")).unwrap();
    assert_eq!(text.matches(from).count(), 1, "{from} occurs once");
    let program = dir.join(format!("{name}.xaif"));
    std::fs::write(&program, text.replace(from, to)).unwrap();
    let trace = dir.join(format!("{name}.xml"));
    trace_run(&program, &trace, &[]).unwrap();
    trace
}

#[test]
fn a_perturbed_branch_is_named_with_its_call_iteration_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("original.xml");
    trace_run(&testdata("loop_branch.xaif"), &original, &[]).unwrap();
    // The branch in `sub` goes 0, 0, 1, 1; with 0.7 for 1.2 it goes 0, 1, 1, 1.
    let perturbed = perturbed_trace(dir.path(), "branch", "value=\"1.2\"", "value=\"0.7\"");
    let (code, json, _) = trace_diff(&original, &perturbed, true);
    assert_eq!(code, 1);
    let report: serde_json::Value = serde_json::from_str(&json).expect("--json is JSON");
    assert_eq!(report["equal"], false);
    let d = &report["divergence"];
    assert_eq!(d["what"], "branch");
    assert_eq!(d["path"][0]["element"], "Loop");
    assert_eq!(d["path"][0]["line"], 10);
    assert_eq!(d["path"][0]["iteration"], 2);
    assert_eq!(d["path"][1]["element"], "Call");
    assert_eq!(d["path"][1]["name"], "sub");
    assert_eq!(d["path"][1]["line"], 12);
    assert_eq!(d["path"][2]["element"], "Branch");
    assert_eq!(d["path"][2]["line"], 21);
    assert_eq!(d["a"]["event"], "<Cfval val=\"0\"/>");
    assert_eq!(d["b"]["event"], "<Cfval val=\"1\"/>");
    assert!(!d["before"].as_array().unwrap().is_empty() && !d["a"]["next"].as_array().unwrap().is_empty());
    let (code, text, _) = trace_diff(&original, &perturbed, false);
    assert_eq!(code, 1);
    for needle in ["branch taken", "Loop (line 10), iteration 2", "Call sub (line 12)", "Branch (line 21)"] {
        assert!(text.contains(needle), "{needle:?} not in:\n{text}");
    }
}

#[test]
fn a_perturbed_trip_count_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("original.xml");
    trace_run(&testdata("loop_branch.xaif"), &original, &[]).unwrap();
    // X(2)*3.0 instead of X(2)*4.0: three iterations instead of four.
    let perturbed = perturbed_trace(dir.path(), "trips", "value=\"4.0\"", "value=\"3.0\"");
    let (code, json, _) = trace_diff(&original, &perturbed, true);
    assert_eq!(code, 1);
    let d = &serde_json::from_str::<serde_json::Value>(&json).unwrap()["divergence"];
    assert_eq!(d["what"], "control_flow");
    assert_eq!(d["path"][0]["line"], 10);
    assert_eq!(d["path"][0]["iteration"], 3);
    assert_eq!(d["a"]["event"], "<Call name=\"sub\" line=\"12\">");
    assert_eq!(d["b"]["event"], "<Cfval val=\"3\"/>");
    assert!(d["message"].as_str().unwrap().contains("longer in A"), "{d}");
}

#[test]
fn a_perturbed_corpus_condition_is_named_with_its_call_and_line() {
    let shared = shared_dir();
    let dir = tempfile::tempdir().unwrap();
    let program = shared.join("corpus/passiveMix3/tlm.in.xaif");
    let text = std::fs::read_to_string(&program).unwrap();
    // The one `<` in the program: OAD_S_MIN_D_20's branch at line 11.
    assert_eq!(text.matches("name=\"less_than\"").count(), 1);
    let perturbed = dir.path().join("perturbed.xaif");
    std::fs::write(&perturbed, text.replace("name=\"less_than\"", "name=\"greater_or_equal\"")).unwrap();
    let (a, b) = (dir.path().join("a.xml"), dir.path().join("b.xml"));
    trace_run(&program, &a, &[]).unwrap();
    trace_run(&perturbed, &b, &[]).unwrap();
    let (code, json, _) = trace_diff(&a, &b, true);
    assert_eq!(code, 1);
    let d = &serde_json::from_str::<serde_json::Value>(&json).unwrap()["divergence"];
    assert_eq!(d["what"], "branch");
    assert_eq!(d["path"][0]["element"], "Call");
    assert_eq!(d["path"][0]["name"], "OAD_S_MIN_D_20");
    assert_eq!(d["path"][0]["line"], 46);
    assert_eq!(d["path"][1]["element"], "Branch");
    assert_eq!(d["path"][1]["line"], 11);
}

#[test]
fn different_programs_are_reported_at_the_first_differing_call() {
    let shared = shared_dir();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.xml"), dir.path().join("b.xml"));
    trace_run(&shared.join("corpus/passiveMix3/tlm.in.xaif"), &a, &[]).unwrap();
    trace_run(&testdata("loop_branch.xaif"), &b, &[]).unwrap();
    let (code, text, _) = trace_diff(&a, &b, false);
    assert_eq!(code, 1);
    let first = text.lines().next().unwrap();
    assert!(first.contains("traces differ at event 1: different programs"), "{text}");
    assert!(text.lines().count() < 30, "a short report, not a flood:\n{text}");
}

#[test]
fn malformed_and_truncated_traces_get_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.xml");
    trace_run(&testdata("loop_branch.xaif"), &good, &[]).unwrap();
    let text = std::fs::read_to_string(&good).unwrap();
    // Cut in the middle of line 12's tag.
    let cut: usize = text.lines().take(11).map(|l| l.len() + 1).sum::<usize>() + 8;
    let truncated = dir.path().join("truncated.xml");
    std::fs::write(&truncated, &text[..cut]).unwrap();
    let (code, out, err) = trace_diff(&good, &truncated, false);
    assert_eq!(code, 1);
    assert!(out.is_empty(), "no report for a malformed trace: {out}");
    let located = format!("{}:12:9: ", truncated.display());
    assert!(err.starts_with(&located) && err.contains("truncated"), "{err}");
    // Cut after a whole line: the trace ends inside the elements still open.
    let cut: usize = text.lines().take(20).map(|l| l.len() + 1).sum();
    std::fs::write(&truncated, &text[..cut]).unwrap();
    let (code, _, err) = trace_diff(&truncated, &truncated, false);
    assert_eq!(code, 1);
    assert!(err.starts_with(&format!("{}:21:1: ", truncated.display())) && err.contains("truncated"), "{err}");
    // An end tag that closes the wrong element.
    let malformed = dir.path().join("malformed.xml");
    std::fs::write(&malformed, text.replacen("</Branch>", "</Loop>", 1)).unwrap();
    let line = text.lines().position(|l| l == "</Branch>").unwrap() + 1;
    let (code, _, err) = trace_diff(&good, &malformed, true);
    assert_eq!(code, 1);
    assert!(err.starts_with(&format!("{}:{line}:1: Loop: </Loop> closes the Branch", malformed.display())), "{err}");
}

#[test]
fn verify_traces_every_run_and_the_tangent_traces_as_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let tangent = dir.path().join("tangent.xaif");
    xaifbooster().arg("tangent").arg("-i").arg(testdata("loop_branch.xaif")).arg("-o").arg(&tangent).assert().success();
    let traces = dir.path().join("traces");
    xaifbooster()
        .args(["verify", "-q", "--mode", "tangent", "--original"])
        .arg(testdata("loop_branch.xaif"))
        .arg("--transformed")
        .arg(&tangent)
        .arg("--trace")
        .arg(&traces)
        .assert()
        .success();
    let mut files: Vec<String> =
        std::fs::read_dir(&traces).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    // One plain run, then central differences for two inputs with one-sided retries.
    assert!(files.iter().any(|f| f == "original-001-plain.xml"), "{files:?}");
    assert_eq!(files.iter().filter(|f| f.starts_with("transformed-")).count(), 2, "{files:?}");
    assert!(files.iter().any(|f| f == "transformed-002-tangent.xml"), "{files:?}");
    let (code, out, _) =
        trace_diff(&traces.join("original-001-plain.xml"), &traces.join("transformed-001-tangent.xml"), false);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("48 events"), "{out}");
}

#[test]
fn traces_are_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.xml"), dir.path().join("b.xml"));
    trace_run(&testdata("loop_branch.xaif"), &a, &[]).unwrap();
    trace_run(&testdata("loop_branch.xaif"), &b, &[]).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

/// A long trace made as it is read: a loop of `iterations` calls, each with a branch, never
/// held in memory.
struct LongTrace {
    iterations: u64,
    done: u64,
    pending: Vec<u8>,
    at: usize,
    ended: bool,
}

impl LongTrace {
    fn new(iterations: u64) -> LongTrace {
        LongTrace {
            iterations,
            done: 0,
            pending: b"<Trace number=\"1\">\n<Loop line=\"3\">\n".to_vec(),
            at: 0,
            ended: false,
        }
    }
}

impl Read for LongTrace {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.pending.len() {
            self.pending.clear();
            self.at = 0;
            if self.done < self.iterations {
                let branch = self.done % 3;
                self.pending.extend_from_slice(
                    format!(
                        "<Call name=\"f\" line=\"4\">\n<Arg name=\"x\">\n<Index val=\"{}\"/>\n</Arg>\n<Branch line=\"5\">\n<Cfval val=\"{branch}\"/>\n</Branch>\n</Call>\n",
                        self.done
                    )
                    .as_bytes(),
                );
                self.done += 1;
            } else if !self.ended {
                self.pending
                    .extend_from_slice(format!("<Cfval val=\"{}\"/>\n</Loop>\n</Trace>\n", self.iterations).as_bytes());
                self.ended = true;
            } else {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.pending.len() - self.at);
        buf[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn memory_is_bounded_by_nesting_depth_not_length() {
    let compare = |iterations| {
        let mut a = Reader::new(LongTrace::new(iterations), "a.xml");
        let mut b = Reader::new(LongTrace::new(iterations), "b.xml");
        let (outcome, stats) = diff::diff(&mut a, &mut b, 5).unwrap();
        assert_eq!(outcome, Outcome::Equal { events: 1 + 8 * iterations + 2 });
        (stats.max_depth, a.max_depth())
    };
    let short = compare(10);
    let long = compare(300_000);
    assert_eq!(short, long, "the stack grows with nesting only");
    assert_eq!(long, (3, 3), "Loop > Call > Branch");
}

/// Random well-formed traces: nested elements and leaves.
fn events() -> impl Strategy<Value = Vec<Event>> {
    let leaf = prop_oneof![
        (-5i64..50).prop_map(Event::Index),
        (0i64..4).prop_map(Event::Cfval),
        (-2i64..2).prop_map(Event::Tan),
    ]
    .prop_map(|e| vec![e]);
    leaf.prop_recursive(6, 200, 6, |inner| {
        (
            prop_oneof![
                ("[a-z<&\"]{1,6}", 0i64..100).prop_map(|(n, l)| Open::call(&n, l)),
                "[a-z]{1,4}".prop_map(|n| Open::arg(&n)),
                (0i64..100).prop_map(|l| Open::with_line(Kind::Loop, l)),
                (0i64..100).prop_map(|l| Open::with_line(Kind::Branch, l)),
                Just(Open::bare(Kind::Condition)),
            ],
            prop::collection::vec(inner, 0..5),
        )
            .prop_map(|(open, children)| {
                let kind = open.kind;
                let mut out = vec![Event::Open(open)];
                out.extend(children.into_iter().flatten());
                out.push(Event::Close(kind));
                out
            })
    })
}

fn written(events: &[Event]) -> Vec<u8> {
    let mut writer = Writer::new(Vec::new(), 1).unwrap();
    for e in events {
        writer.event(e).unwrap();
    }
    writer.finish().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn a_trace_equals_itself_and_a_changed_value_is_found(events in events(), pick in any::<prop::sample::Index>()) {
        let bytes = written(&events);
        prop_assert_eq!(xaifbooster::trace::format::read_all(&bytes[..], "t.xml").unwrap(), events.clone());
        let (outcome, _) = diff::diff(&mut Reader::new(&bytes[..], "a"), &mut Reader::new(&bytes[..], "b"), 3).unwrap();
        prop_assert_eq!(outcome, Outcome::Equal { events: events.len() as u64 });
        // Change one leaf's value: the divergence is that event.
        let leaves: Vec<usize> = events.iter().enumerate()
            .filter(|(_, e)| matches!(e, Event::Index(_) | Event::Cfval(_) | Event::Tan(_))).map(|(k, _)| k).collect();
        if !leaves.is_empty() {
            let k = leaves[pick.index(leaves.len())];
            let mut changed = events.clone();
            changed[k] = match &changed[k] {
                Event::Index(v) => Event::Index(v + 1),
                Event::Cfval(v) => Event::Cfval(v + 1),
                Event::Tan(v) => Event::Tan(v + 1),
                other => other.clone(),
            };
            let other = written(&changed);
            let (outcome, _) = diff::diff(&mut Reader::new(&bytes[..], "a"), &mut Reader::new(&other[..], "b"), 3).unwrap();
            match outcome {
                Outcome::Differ(d) => {
                    prop_assert_eq!(d.event, k as u64 + 1);
                    prop_assert!(matches!(d.what, What::Index | What::Branch | What::TripCount | What::ControlFlowValue | What::Tan));
                }
                Outcome::Equal { .. } => prop_assert!(false, "the change was not found"),
            }
        }
    }
}

#[test]
fn a_trace_pipes_from_run_to_trace_diff() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file.xml");
    trace_run(&testdata("loop_branch.xaif"), &file, &[]).unwrap();
    // `--trace -`: standard output carries the trace alone.
    let piped = xaifbooster().args(["run", "-q", "--trace", "-"]).arg(testdata("loop_branch.xaif")).output().unwrap();
    assert!(piped.status.success());
    assert_eq!(piped.stdout, std::fs::read(&file).unwrap());
    xaifbooster()
        .args(["trace-diff", "-"])
        .arg(&file)
        .write_stdin(piped.stdout)
        .assert()
        .success()
        .stdout("traces are equal: 48 events\n");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Any bytes: the reader either reads a trace or says where it is malformed, inside the
    /// input; it never panics.
    #[test]
    fn damaged_traces_are_refused_where_they_break(events in events(), cut in any::<prop::sample::Index>(), byte in any::<u8>(), at in any::<prop::sample::Index>()) {
        let mut bytes = written(&events);
        let k = at.index(bytes.len());
        bytes[k] = byte;
        bytes.truncate(cut.index(bytes.len() + 1));
        let lines = bytes.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        match xaifbooster::trace::format::read_all(&bytes[..], "t.xml") {
            Ok(_) => {}
            Err(error) => {
                prop_assert!(error.line >= 1 && error.line <= lines, "{error}");
                prop_assert!(error.column >= 1, "{error}");
                let located = format!("t.xml:{}:{}: ", error.line, error.column);
                prop_assert!(error.to_string().starts_with(&located), "{}", error);
            }
        }
    }
}

/// One run's trace kept in memory.
struct InMemory(std::rc::Rc<std::cell::RefCell<Option<Vec<u8>>>>);

struct Buffer(Vec<u8>, std::rc::Rc<std::cell::RefCell<Option<Vec<u8>>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl xaifbooster::interp::tracing::TraceSink for Buffer {
    fn commit(self: Box<Self>) -> std::io::Result<()> {
        *self.1.borrow_mut() = Some(self.0);
        Ok(())
    }
}

impl xaifbooster::interp::tracing::TraceRuns for InMemory {
    fn open(&self, _label: &str) -> std::io::Result<Option<Box<dyn xaifbooster::interp::tracing::TraceSink>>> {
        Ok(Some(Box::new(Buffer(Vec::new(), self.0.clone()))))
    }
}

/// The plain run's trace of `program` as the corpus's parameters call it.
fn plain_trace(
    program: &xaifbooster::interp::Program,
    driver: &xaifbooster::interp::verify::DriverConfig,
) -> Result<Vec<u8>, String> {
    use xaifbooster::interp::verify::{Driver, Sweep};
    let kept = std::rc::Rc::new(std::cell::RefCell::new(None));
    let runs = InMemory(kept.clone());
    let driver = Driver::new(program, driver).map_err(|e| e.to_string())?.traced(&runs, "run");
    driver.run(&driver.default_x(), Sweep::Plain).map_err(|e| e.to_string())?;
    let trace = kept.borrow_mut().take().expect("a successful run keeps its trace");
    Ok(trace)
}

/// Our tangent of every corpus program the executor runs traces as the original: the tangent
/// adds propagators and partials, never control flow or calls.
#[test]
fn tangent_outputs_trace_as_their_originals_over_the_corpus() {
    use xaifbooster::interp::verify::{Mode, read_program};
    use xaifbooster::xaif::{self, ReadOptions, WriteOptions};
    let (mut equal, mut with_events, mut differ, mut not_run) = (0, 0, Vec::new(), 0);
    for file in common::corpus_files("tlm.in.xaif") {
        let dir = file.parent().unwrap();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let input = std::fs::read(&file).unwrap();
        let Ok(original) = read_program(&input, &name) else {
            not_run += 1;
            continue;
        };
        let config = common::verify_config(dir, &original, Mode::Tangent, xaifbooster::interp::Template::Joint).driver;
        let mut cg = xaif::read(&input, "in", &ReadOptions::default()).expect("corpus inputs read").call_graph;
        xaifbooster::pipeline::tangent(
            &mut cg,
            xaifbooster::xaif::intrinsics::Catalogue::builtin(),
            &xaifbooster::pipeline::Config::default(),
        )
        .expect("tangent transformation");
        let tangent = read_program(&xaif::write(&cg, &WriteOptions::default()), &name).expect("our output lowers");
        let (Ok(a), Ok(b)) = (plain_trace(&original, &config), plain_trace(&tangent, &config)) else {
            not_run += 1;
            continue;
        };
        let (outcome, _) = diff::diff(&mut Reader::new(&a[..], "original"), &mut Reader::new(&b[..], "tangent"), 3)
            .expect("traces we wrote read back");
        match outcome {
            Outcome::Equal { events } => {
                equal += 1;
                with_events += usize::from(events > 0);
            }
            Outcome::Differ(d) => differ.push(format!("{name}: {}", d.message)),
        }
    }
    eprintln!(
        "corpus tangents: {equal} equal traces ({with_events} with events), {not_run} not run, differ: {differ:#?}"
    );
    // signIntrinsic once differed here: linearization hoists `x(2)` of `sign(x(1), x(2))` into
    // a temporary; the executor traces a hoisted temporary as the expression assigned to it.
    assert!(differ.is_empty(), "{differ:#?}");
    assert!(equal >= 178, "{equal} equal");
    assert!(with_events >= 97, "{with_events} with events");
}
