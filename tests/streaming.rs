//! The routine-by-routine driver (`driver::stream`) writes what the whole-tree path writes,
//! byte for byte, over the corpus and on synthetic inputs, reading on the same thread or on a
//! second one (pipelined), the adjoint's passes after the first transformed on that thread or
//! by one to three workers; where it declines a document, it says why.

mod common;

use std::collections::BTreeMap;

use xaifbooster::driver::stream::{self, Concurrency, StreamError};
use xaifbooster::pipeline::{self, Config};
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

fn whole_identity(bytes: &[u8]) -> Vec<u8> {
    let mut cg = xaif::read(bytes, "whole", &ReadOptions::default()).expect("readable").call_graph;
    pipeline::identity(&mut cg, &Config::default());
    xaif::write(&cg, &WriteOptions { schema_location: "xaif.xsd".into() })
}

/// The tangent output and its statistics, or the pipeline's error message.
fn whole_tangent(bytes: &[u8], config: &Config) -> Result<(Vec<u8>, String), String> {
    let mut cg = xaif::read(bytes, "whole", &ReadOptions::default()).expect("readable").call_graph;
    let report = pipeline::tangent(&mut cg, Catalogue::builtin(), config).map_err(|e| e.to_string())?;
    Ok((xaif::write(&cg, &WriteOptions::default()), statistics(&report)))
}

/// What a run reports: the tangent's statistics (`--stats`) and the passes' counts the debug
/// log gives (derivatives zeroed, TypeChange's conversions and every formal's uses). A streamed
/// run once counted the derivatives of every routine read so far at each routine.
fn statistics(report: &pipeline::Report) -> String {
    let t = &report.type_change;
    let uses: Vec<_> = t.formal_uses.iter().map(|(id, uses)| (id.into_raw().into_u32(), uses.clone())).collect();
    format!(
        "{}\n{} zeroed; conversions {} {} {} {} {} {}; formal uses {uses:?}",
        report.tangent.to_json(),
        report.initialized_derivatives,
        t.conversions,
        t.external_conversions,
        t.saved_indices,
        t.allocations,
        t.wrapped_calls,
        t.renamed_routines,
    )
}

/// Reading on the driver's thread, then on a second one; then, pipelined, the adjoint's
/// passes after the first transformed by one, two and three workers (each number puts routines
/// back in windows of its own size).
const READINGS: [Concurrency<'static>; 5] = [
    Concurrency { gate: None, pipelined: false, workers: 0 },
    Concurrency { gate: None, pipelined: true, workers: 0 },
    Concurrency { gate: None, pipelined: true, workers: 1 },
    Concurrency { gate: None, pipelined: true, workers: 2 },
    Concurrency { gate: None, pipelined: true, workers: 3 },
];

/// The readings that differ for identity and the tangent, which have no workers: on one
/// thread and pipelined.
fn readings_without_workers() -> impl Iterator<Item = Concurrency<'static>> {
    READINGS.into_iter().filter(|concurrency| concurrency.workers == 0)
}

fn streamed_identity(bytes: &[u8], concurrency: Concurrency) -> Result<Vec<u8>, StreamError> {
    let write = WriteOptions { schema_location: "xaif.xsd".into() };
    let mut body = Vec::new();
    let options = ReadOptions::default();
    stream::identity(bytes, "streamed", &options, &Config::default(), &write, &mut body, concurrency)
        .map(|s| assembled(&s, &body))
}

fn streamed_tangent(
    bytes: &[u8],
    config: &Config,
    concurrency: Concurrency,
) -> Result<Result<(Vec<u8>, String), String>, &'static str> {
    let mut body = Vec::new();
    let options = ReadOptions::default();
    match stream::tangent(
        bytes,
        "streamed",
        &options,
        Catalogue::builtin(),
        config,
        &WriteOptions::default(),
        &mut body,
        concurrency,
    ) {
        Ok(s) => Ok(Ok((assembled(&s, &body), statistics(&s.report)))),
        Err(StreamError::WholeTree(why)) => Err(why),
        Err(StreamError::Pipeline(e)) => Ok(Err(e.to_string())),
        Err(StreamError::Read(e)) => panic!("streamed reading failed where whole reading did not: {e}"),
        Err(StreamError::Io(e)) => panic!("writing to memory failed: {e}"),
        Err(StreamError::Invalid) => panic!("no validation ran alongside"),
    }
}

/// A streamed run's output: head, body, tail. The driver puts it together as it writes it
/// (`Streamed::write_head`, then the body and the tail): that must be what `Streamed::bytes`
/// gives, the output these tests compare.
fn assembled(s: &stream::Streamed, body: &[u8]) -> Vec<u8> {
    let bytes = s.bytes(body);
    let mut written = Vec::new();
    s.write_head(&mut written).expect("writing to memory");
    written.extend_from_slice(body);
    written.extend_from_slice(&s.tail);
    assert!(written == bytes, "the head the driver writes differs: {}", first_difference(&bytes, &written));
    bytes
}

fn first_difference(a: &[u8], b: &[u8]) -> String {
    let at = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
    let line = a[..at].iter().filter(|b| **b == b'\n').count() + 1;
    format!("first difference at byte {at} (line {line}); lengths {} and {}", a.len(), b.len())
}

#[test]
fn identity_streamed_equals_whole_tree_over_the_corpus() {
    let mut files = common::corpus_files("tlm.in.xaif");
    files.extend(common::corpus_files("adm.in.xaif"));
    assert!(files.len() > 100, "corpus too small: {}", files.len());
    let mut failures = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file).expect("readable");
        if xaif::read(&bytes, "whole", &ReadOptions::default()).is_err() {
            continue;
        }
        let whole = whole_identity(&bytes);
        for concurrency in readings_without_workers() {
            let name = format!("{} (pipelined: {})", common::short_name(file), concurrency.pipelined);
            match streamed_identity(&bytes, concurrency) {
                Ok(streamed) if streamed == whole => {}
                Ok(streamed) => failures.push(format!("{name}: {}", first_difference(&whole, &streamed))),
                Err(e) => failures.push(format!("{name}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} differ:\n{}", failures.len(), files.len(), failures.join("\n"));
}

fn tangent_over_corpus(config: &Config) {
    let files = common::corpus_files("tlm.in.xaif");
    let mut failures = Vec::new();
    let mut declined: BTreeMap<&str, usize> = BTreeMap::new();
    let mut streamed_count = 0;
    for file in &files {
        let bytes = std::fs::read(file).expect("readable");
        if xaif::read(&bytes, "whole", &ReadOptions::default()).is_err() {
            continue;
        }
        let whole = whole_tangent(&bytes, config);
        for concurrency in readings_without_workers() {
            let name = format!("{} ({concurrency:?})", common::short_name(file));
            match streamed_tangent(&bytes, config, concurrency) {
                Err(why) => *declined.entry(why).or_default() += 1,
                Ok(streamed) => {
                    streamed_count += 1;
                    match (&whole, &streamed) {
                        (Ok(w), Ok(s)) if w == s => {}
                        (Ok(w), Ok(s)) if w.0 == s.0 => failures.push(format!("{name}: statistics differ")),
                        (Ok(w), Ok(s)) => failures.push(format!("{name}: {}", first_difference(&w.0, &s.0))),
                        (Err(w), Err(s)) if w == s => {}
                        _ => failures.push(format!(
                            "{name}: whole {:?} streamed {:?}",
                            whole.as_ref().err(),
                            streamed.as_ref().err()
                        )),
                    }
                }
            }
        }
    }
    // Each file in every way of reading.
    let runs = readings_without_workers().count() * files.len();
    eprintln!("streamed {streamed_count} of {runs} runs over the corpus; declined: {declined:?}");
    assert!(failures.is_empty(), "{} differ:\n{}", failures.len(), failures.join("\n"));
    // Most front-end output is streamed; only the documented reasons decline it.
    assert!(streamed_count * 10 >= runs * 8, "only {streamed_count} of {runs} streamed: {declined:?}");
}

#[test]
fn tangent_streamed_equals_whole_tree_over_the_corpus() {
    tangent_over_corpus(&Config::default());
}

/// The switches that change what a sequence's plan turns into (`-C` counters at the end of
/// every block, `-H` propagators as calls, `-n` n-ary `Sax`, each sequence's graph and its
/// elimination kept in the statistics): streamed, the plan cache is shared across routines
/// read one at a time, and the sequences must come out as the whole tree's.
#[test]
fn tangent_streamed_equals_whole_tree_with_propagator_switches() {
    let mut config = Config::default();
    config.tangent.runtime_counters = true;
    config.tangent.inline_propagators = true;
    config.tangent.record_graphs = true;
    tangent_over_corpus(&config);
    let mut config = Config::default();
    config.tangent.nary_sax = true;
    config.tangent.preaccumulation = xaifbooster::passes::tangent::Preaccumulation::Statement;
    tangent_over_corpus(&config);
}

#[test]
fn tangent_streamed_equals_whole_tree_with_derivative_initialization() {
    tangent_over_corpus(&Config { initialize_derivatives: true, ..Config::default() });
}

/// A synthetic document of many routines (callers after their callees) and one where every
/// caller comes before its callee (routines wait for theirs).
#[test]
fn streamed_equals_whole_tree_on_synthetic_inputs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("synthetic.xaif");
    common::synthetic_input(&path, "0.5", 3);
    let forward = std::fs::read_to_string(&path).expect("generated");
    let reversed = common::reverse_routines(&forward);
    assert_ne!(forward, reversed);
    for text in [&forward, &reversed] {
        let bytes = text.as_bytes();
        let whole = whole_tangent(bytes, &Config::default()).expect("tangent");
        for concurrency in readings_without_workers() {
            let identity = streamed_identity(bytes, concurrency).expect("streamed");
            assert!(identity == whole_identity(bytes), "identity differs ({concurrency:?})");
            let streamed =
                streamed_tangent(bytes, &Config::default(), concurrency).expect("streamed").expect("tangent");
            assert!(
                whole.0 == streamed.0,
                "tangent differs ({concurrency:?}): {}",
                first_difference(&whole.0, &streamed.0)
            );
            assert_eq!(whole.1, streamed.1, "statistics differ ({concurrency:?})");
        }
    }
}

/// A statement id repeated in a routine (the lenient reader renames it, so the survey of the
/// document's ids cannot know them) declines streaming, on one thread and pipelined.
#[test]
fn a_repeated_statement_id_declines_either_way() {
    let bytes = std::fs::read(common::corpus_files("tlm.in.xaif")[0].clone()).expect("readable");
    let text = String::from_utf8(bytes).expect("text");
    let ids: Vec<&str> = text
        .match_indices("<xaif:Assignment ")
        .filter_map(|(at, _)| {
            let tag = &text[at..at + text[at..].find('>')?];
            let start = tag.find("statement_id=\"")? + "statement_id=\"".len();
            Some(&tag[start..start + tag[start..].find('"')?])
        })
        .collect();
    assert!(ids.len() >= 2, "two assignments to work with");
    let repeated = text.replacen(&format!("statement_id=\"{}\"", ids[1]), &format!("statement_id=\"{}\"", ids[0]), 1);
    for concurrency in readings_without_workers() {
        assert!(
            matches!(
                streamed_tangent(repeated.as_bytes(), &Config::default(), concurrency),
                Err("a statement id repeats in a routine")
            ),
            "{concurrency:?}"
        );
    }
}

/// The switches whose effect spans routines (forced passivation, activity analysis,
/// TypeChange's renaming of every routine) leave the document to the whole tree in every mode
/// that takes them, before anything is written, and the reason names the switch.
#[test]
fn declines_what_needs_the_whole_tree() {
    let bytes = std::fs::read(common::corpus_files("tlm.in.xaif")[0].clone()).expect("readable");
    let passive = Config { passive: vec!["x".into()], ..Config::default() };
    let analysed = Config { activity_analysis: true, ..Config::default() };
    let mut renaming = Config::default();
    renaming.type_change.rename_all = true;
    let (options, write, catalogue) = (ReadOptions::default(), WriteOptions::default(), Catalogue::builtin());
    let mut cases = vec![("identity", "-p", passive.clone())];
    for mode in ["tangent", "adjoint"] {
        cases.extend([(mode, "-p", passive.clone()), (mode, "--activity-analysis", analysed.clone())]);
        cases.push((mode, "-r", renaming.clone()));
    }
    for (mode, switch, config) in cases {
        for concurrency in READINGS {
            let mut body = Vec::new();
            let run = match mode {
                "identity" => stream::identity(&bytes, "f", &options, &config, &write, &mut body, concurrency),
                "tangent" => stream::tangent(&bytes, "f", &options, catalogue, &config, &write, &mut body, concurrency),
                _ => stream::adjoint(&bytes, "f", &options, catalogue, &config, &write, &mut body, concurrency),
            };
            match run {
                Err(StreamError::WholeTree(why)) => {
                    assert!(why.contains(switch), "{mode} {switch}: the reason does not name it: {why}")
                }
                Err(other) => panic!("{mode} {switch}: failed instead of declining: {other}"),
                Ok(_) => panic!("{mode} {switch}: streamed ({concurrency:?})"),
            }
            assert!(body.is_empty(), "{mode} {switch}: {} bytes written before declining", body.len());
        }
    }
}

/// The adjoint output and its statistics, or the pipeline's error message.
fn whole_adjoint(bytes: &[u8], config: &Config) -> Result<(Vec<u8>, String), String> {
    let mut cg = xaif::read(bytes, "whole", &ReadOptions::default()).expect("readable").call_graph;
    let report = pipeline::adjoint(&mut cg, Catalogue::builtin(), config).map_err(|e| e.to_string())?;
    Ok((xaif::write(&cg, &WriteOptions::default()), report.adjoint_json()))
}

/// The streamed adjoint's output and statistics, or why it declined the document.
fn streamed_adjoint(
    bytes: &[u8],
    config: &Config,
    concurrency: Concurrency,
) -> Result<(Vec<u8>, String), &'static str> {
    let mut body = Vec::new();
    let options = ReadOptions::default();
    let write = WriteOptions::default();
    match stream::adjoint(bytes, "streamed", &options, Catalogue::builtin(), config, &write, &mut body, concurrency) {
        Ok(s) => Ok((assembled(&s, &body), s.report.adjoint_json())),
        Err(StreamError::WholeTree(why)) => Err(why),
        Err(e) => panic!("streamed adjoint failed where it should have declined: {e}"),
    }
}

/// The adjoint's configurations the corpus runs through: the defaults, every intent inout
/// (the joint template's), the smallest tape, derivative initialization, and the original's
/// recording of everything.
fn adjoint_configs() -> Vec<(&'static str, Config)> {
    let mut configs = vec![("default", Config::default())];
    let mut joint = Config::default();
    joint.adjoint.all_intents_inout = true;
    configs.push(("-I", joint));
    let mut best = Config::default();
    best.adjoint.tape = xaifbooster::passes::adjoint::TapeStrategy::Best;
    configs.push(("--tape best", best));
    configs.push(("-D", Config { initialize_derivatives: true, ..Config::default() }));
    let mut everything = Config::default();
    everything.adjoint.record_everything = true;
    configs.push(("--no-tbr", everything));
    configs
}

#[test]
fn adjoint_streamed_equals_whole_tree_over_the_corpus() {
    let files = common::corpus_files("adm.in.xaif");
    let configs = adjoint_configs();
    let mut failures = Vec::new();
    let mut declined: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut streamed_count, mut runs) = (0, 0);
    for file in &files {
        let bytes = std::fs::read(file).expect("readable");
        if xaif::read(&bytes, "whole", &ReadOptions::default()).is_err() {
            continue;
        }
        for (switches, config) in &configs {
            let whole = whole_adjoint(&bytes, config);
            for concurrency in &READINGS {
                runs += 1;
                let name = format!(
                    "{} {switches} (pipelined: {}, workers: {})",
                    common::short_name(file),
                    concurrency.pipelined,
                    concurrency.workers
                );
                match streamed_adjoint(&bytes, config, *concurrency) {
                    Err(why) => *declined.entry(why).or_default() += 1,
                    Ok(streamed) => {
                        streamed_count += 1;
                        match &whole {
                            Ok(w) if *w == streamed => {}
                            Ok(w) if w.0 == streamed.0 => failures.push(format!("{name}: statistics differ")),
                            Ok(w) => failures.push(format!("{name}: {}", first_difference(&w.0, &streamed.0))),
                            Err(e) => failures.push(format!("{name}: streamed where the whole tree fails: {e}")),
                        }
                    }
                }
            }
        }
    }
    eprintln!("streamed {streamed_count} of {runs} adjoint runs over the corpus; declined: {declined:?}");
    assert!(failures.is_empty(), "{} differ:\n{}", failures.len(), failures.join("\n"));
    // Every document streams, in whichever order its routines come, but those whose
    // transformation fails (the whole-tree path reports them).
    assert!(streamed_count * 100 >= runs * 95, "only {streamed_count} of {runs} streamed: {declined:?}");
    let reasons: Vec<&&str> = declined.keys().collect();
    assert!(
        reasons.iter().all(|r| ["a transformation failed", stream::SAVED_INDICES].contains(r)),
        "declined for other reasons: {declined:?}"
    );
}

/// The adjoint streams and writes the whole-tree bytes in both routine orders: callees
/// first in two passes, callers first in three (a caller's restores depend on its callees'
/// reversal, which the pass in between finds).
#[test]
fn adjoint_streams_synthetic_inputs_in_both_routine_orders() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("synthetic.xaif");
    common::synthetic_input(&path, "0.5", 5);
    let forward = std::fs::read_to_string(&path).expect("generated");
    let reversed = common::reverse_routines(&forward);
    for (switches, config) in adjoint_configs().into_iter().take(2) {
        let whole = whole_adjoint(forward.as_bytes(), &config).expect("adjoint");
        for concurrency in &READINGS {
            let streamed = streamed_adjoint(forward.as_bytes(), &config, *concurrency).expect("streamed");
            assert!(whole.0 == streamed.0, "{switches} {concurrency:?}: {}", first_difference(&whole.0, &streamed.0));
            assert_eq!(whole.1, streamed.1, "{switches} {concurrency:?}: statistics differ");
            let whole = whole_adjoint(reversed.as_bytes(), &config).expect("adjoint");
            let streamed = streamed_adjoint(reversed.as_bytes(), &config, *concurrency).expect("streamed");
            assert!(
                whole.0 == streamed.0,
                "callers first, {switches} {concurrency:?}: {}",
                first_difference(&whole.0, &streamed.0)
            );
            assert_eq!(whole.1, streamed.1, "callers first, {switches} {concurrency:?}: statistics differ");
        }
    }
}

/// The adjoint's first pass reads of each right-hand side only its variable references, without
/// their array indices (`read_streaming_for_summaries`): over the corpus's adjoint inputs, every
/// routine's summary (the alias keys of all its references included) is the full read's.
#[test]
fn the_first_pass_read_summarizes_as_a_full_read() {
    use xaifbooster::analysis::effects::RoutineSummary;
    use xaifbooster::ir::Routine;
    let mut compared = 0;
    for path in common::corpus_files("adm.in.xaif") {
        let bytes = std::fs::read(&path).expect("readable");
        let Ok(full) = xaif::read(&bytes, "full", &ReadOptions::default()) else { continue };
        let expected: Vec<String> =
            full.call_graph.cfgs().map(|(_, cfg)| format!("{:?}", RoutineSummary::of(cfg, true))).collect();
        let mut summarized = Vec::new();
        let mut sink = |cg: &mut xaifbooster::ir::CallGraph, id, _end| {
            if let Routine::ControlFlowGraph(cfg) = &cg.routines[id] {
                summarized.push(format!("{:?}", RoutineSummary::of(cfg, true)));
            }
            true
        };
        xaif::read::read_streaming_for_summaries(&bytes, "first pass", &ReadOptions::default(), &mut sink)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(summarized, expected, "{}", path.display());
        compared += expected.len();
    }
    assert!(compared > 300, "only {compared} routines compared");
}

/// TypeChange saves an index a callee may overwrite in a `<prefix>Symbol_N` temporary, in the
/// series the adjoint's own temporaries take their numbers from; the whole-tree path makes
/// all of TypeChange's first, so the streamed adjoint leaves such a document to it. The input
/// is the one the mutation test found: a corpus input whose call passes `x(k)` with the
/// reference's edge turned back to its symbol, so that the call passes the whole array and
/// converts it, saving `k` in the caller, which comes after a routine with an adjoint
/// temporary of its own.
#[test]
fn the_streamed_adjoint_leaves_saved_indices_to_the_whole_tree() {
    let seed = common::shared_dir().join("corpus/argArrayIndexOverwrite1/tlm.in.xaif");
    let text = std::fs::read_to_string(&seed).expect("the corpus input");
    let call = text.find("<xaif:SubroutineCall").expect("a call");
    const EDGE: &str = "source=\"1\" target=\"2\"";
    let edge = call + text[call..].find(EDGE).expect("the argument's edge");
    let mutant = format!("{}source=\"1\" target=\"1\"{}", &text[..edge], &text[edge + EDGE.len()..]);
    let (_, statistics) = whole_adjoint(mutant.as_bytes(), &Config::default()).expect("the whole tree transforms");
    assert!(!statistics.contains("\"saved_indices\": 0"), "TypeChange saves an index: {statistics}");
    for concurrency in &READINGS {
        assert_eq!(
            streamed_adjoint(mutant.as_bytes(), &Config::default(), *concurrency).err(),
            Some(stream::SAVED_INDICES),
            "{concurrency:?}"
        );
    }
    // The seed itself saves none and streams.
    assert!(streamed_adjoint(text.as_bytes(), &Config::default(), READINGS[1]).is_ok());
    // The mutation test's check: the tangent streams, the adjoint declines.
    let check = xaifbooster::fuzz::check(xaifbooster::fuzz::Target::Streamed, mutant.as_bytes());
    assert_eq!(check, Ok(xaifbooster::fuzz::Outcome::Refused));
}
