//! Issue 62 over the corpus: `run --trace` of a program the `trace` mode made and of its
//! untraced original give equal traces under `trace-diff`. The traced program writes its events
//! through its own `oad_trace_*` calls; the original is traced by the executor, which follows the
//! pass's rules (`passes::trace`). Both go through the binary, as a user would run them.

mod common;

use std::path::Path;

use assert_cmd::Command;

fn xaifbooster() -> Command {
    Command::cargo_bin("xaifbooster").expect("the binary is built")
}

/// Why the executor cannot run a corpus original, as a class (the message says more).
fn reason_class(message: &str) -> &'static str {
    const CLASSES: [(&str, &str); 6] = [
        ("which has no control flow graph", "calls a routine without a body"),
        ("out of bounds", "an index out of bounds with the default inputs"),
        ("without a declared shape", "an array without a declared shape"),
        ("non-conforming program", "a non-conforming alias of a global"),
        ("of type opaque", "a variable of opaque type"),
        ("has no active real inputs", "no active real inputs to differentiate"),
    ];
    CLASSES
        .iter()
        .find(|(needle, _)| message.contains(needle))
        .map(|(_, class)| *class)
        .unwrap_or_else(|| panic!("a run failed for a reason not classified: {message}"))
}

/// The driver flags the executor inferred for a run (its note ends `(as FLAGS)`). A traced
/// program whose inputs are globals needs them: its replacement lists carry no side-effect
/// lists to infer them from.
fn inferred_flags(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .find(|l| l.contains("driver inferred from"))
        .and_then(|l| l.rsplit_once("(as ").map(|(_, flags)| flags.trim_end_matches(')').to_owned()))
        .map(|flags| flags.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// `run --trace OUT FILE FLAGS…`: standard error, and whether it succeeded.
fn traced_run(file: &Path, out: &Path, flags: &[String]) -> (bool, String) {
    let output = xaifbooster().arg("run").arg("--trace").arg(out).arg(file).args(flags).output().expect("runs");
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn traced_corpus_programs_trace_as_their_originals() {
    let dir = tempfile::tempdir().unwrap();
    let (mut equal, mut with_events) = (0usize, 0usize);
    let (mut differ, mut traced_failed, mut not_run) = (Vec::new(), Vec::new(), Vec::new());
    let files = common::corpus_files("tlm.in.xaif");
    assert!(files.len() >= 190, "{} corpus examples", files.len());
    for file in &files {
        let name = file.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
        let traced = dir.path().join(format!("{name}.tr.xaif"));
        let out = xaifbooster().args(["trace", "-q", "-i"]).arg(file).arg("-o").arg(&traced).output().unwrap();
        assert!(out.status.success(), "trace of {name}: {}", String::from_utf8_lossy(&out.stderr));
        let (a, b) = (dir.path().join(format!("{name}.a.xml")), dir.path().join(format!("{name}.b.xml")));
        let (ok, stderr) = traced_run(file, &a, &[]);
        if !ok {
            let message = stderr.lines().last().unwrap_or("").to_owned();
            not_run.push((name, reason_class(&message)));
            continue;
        }
        let (mut ok, mut traced_stderr) = traced_run(&traced, &b, &[]);
        if !ok && traced_stderr.contains("has no active real inputs") {
            (ok, traced_stderr) = traced_run(&traced, &b, &inferred_flags(&stderr));
        }
        if !ok {
            traced_failed.push(format!("{name}: {}", traced_stderr.lines().last().unwrap_or("")));
            continue;
        }
        let diff = xaifbooster().arg("trace-diff").arg(&a).arg(&b).output().unwrap();
        match diff.status.code() {
            Some(0) => {
                equal += 1;
                let events = std::fs::read_to_string(&a).unwrap();
                with_events += usize::from(["<Call", "<Loop", "<Branch"].iter().any(|e| events.contains(e)));
            }
            _ => differ.push(format!("{name}: {}", String::from_utf8_lossy(&diff.stdout))),
        }
    }
    eprintln!("traced corpus: {equal} equal ({with_events} with events), not run: {not_run:#?}");
    // Every original that runs has a traced version that runs with the same driver and traces
    // the same.
    assert!(differ.is_empty(), "{differ:#?}");
    assert!(traced_failed.is_empty(), "{traced_failed:#?}");
    assert!(equal >= 186, "{equal} equal");
    assert!(with_events >= 98, "{with_events} with events");
    // The originals the executor cannot run, by reason (none of them is about tracing).
    let count = |class: &str| not_run.iter().filter(|(_, c)| *c == class).count();
    // Calls of routines without a body run as black boxes, and indices set by stores the XAIF
    // leaves out get a guessed value (each named in the run's note).
    assert!(not_run.len() <= 4, "{not_run:#?}");
    assert_eq!(count("calls a routine without a body"), 0, "{not_run:#?}");
    assert_eq!(count("an index out of bounds with the default inputs"), 0, "{not_run:#?}");
    assert_eq!(count("an array without a declared shape"), 1, "{not_run:#?}");
    assert_eq!(count("a non-conforming alias of a global"), 1, "{not_run:#?}");
    assert_eq!(count("a variable of opaque type"), 1, "{not_run:#?}");
    assert_eq!(count("no active real inputs to differentiate"), 1, "{not_run:#?}");
}

/// The `oad_<intrinsic>` functions the trace mode renames non-smooth intrinsics to compute the
/// intrinsic's value: the traced program prints the original's outputs.
#[test]
fn renamed_non_smooth_intrinsics_compute_the_same_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let mut compared = 0;
    for name in ["abs_f_arg", "cast1", "mod_f_arg", "passiveStatement", "signIntrinsic", "transfer"] {
        let file = common::shared_dir().join("corpus").join(name).join("tlm.in.xaif");
        let traced = dir.path().join(format!("{name}.tr.xaif"));
        let out = xaifbooster().args(["trace", "-q", "-i"]).arg(&file).arg("-o").arg(&traced).output().unwrap();
        assert!(out.status.success(), "trace of {name}");
        let text = std::fs::read_to_string(&traced).unwrap();
        assert!(text.contains("name=\"oad_"), "{name}: no renamed intrinsic");
        let run = |path: &Path| {
            let out = xaifbooster().args(["run", "-q"]).arg(path).output().unwrap();
            assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let (original, renamed) = (run(&file), run(&traced));
        assert!(original.contains(" = "), "{name} printed no outputs: {original}");
        assert_eq!(original, renamed, "{name}");
        compared += 1;
    }
    assert_eq!(compared, 6);
}
