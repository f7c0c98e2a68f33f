//! The command line as scripts meet it: the original engine's switches, files, devices, pipes,
//! standard input and output, failures that write nothing, and what reaches standard error.
//! Every test runs the real binary.

mod common;

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::*;

fn xaifbooster() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xaifbooster"))
}

fn run(args: &[&str]) -> Output {
    xaifbooster().args(args).output().expect("binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The small example every README reader tries.
fn example() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/examples/head.xaif").to_owned()
}

/// What `tangent` writes for the example, through a plain new file.
fn expected_tangent() -> Vec<u8> {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.xaif");
    let result = run(&["tangent", "-i", &example(), "-o", path(&out)]);
    assert!(result.status.success(), "{}", stderr(&result));
    fs::read(&out).expect("output written")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).expect("dir").map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// The example with two schema faults on different elements.
fn two_faults(dir: &Path) -> PathBuf {
    let text = fs::read_to_string(example()).expect("example");
    let text = text
        .replace(r#"<xaif:Symbol symbol_id="x"/>"#, r#"<xaif:Symbol symbol_id="x" active="maybe"/>"#)
        .replace(r#"<xaif:Symbol symbol_id="t"/>"#, r#"<xaif:Symbol symbol_id="t" type="int"/>"#);
    let file = dir.join("two_faults.xaif");
    fs::write(&file, text).expect("write input");
    file
}

/// A corpus input with its calls' `formalArgCount` removed: five identical warnings.
fn five_warnings(dir: &Path) -> PathBuf {
    let input = shared_dir().join("corpus/inactive1/tlm.in.xaif");
    let text = fs::read_to_string(input).expect("corpus input");
    let mut stripped = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(" formalArgCount=\"") {
        stripped.push_str(&rest[..at]);
        let after = &rest[at + " formalArgCount=\"".len()..];
        rest = &after[after.find('"').expect("closing quote") + 1..];
    }
    stripped.push_str(rest);
    let file = dir.join("no_formal_arg_count.xaif");
    fs::write(&file, stripped).expect("write input");
    file
}

// 1. -v is the original's input validation; strictness is --strict.

/// The regression suite calls every driver with `-v -V`: every input the original accepts
/// must pass.
#[test]
fn minus_v_minus_capital_v_accepts_every_corpus_input_the_original_accepts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.xaif");
    let mut failures = Vec::new();
    for input in corpus_files("tlm.in.xaif") {
        let result = run(&["tangent", "-v", "-V", "-q", "-i", path(&input), "-o", path(&out)]);
        if !result.status.success() {
            failures.push(format!("{}: {}", short_name(&input), stderr(&result)));
        }
    }
    // The inputs the original adjoint driver refuses (no formalArgCount, no Do information).
    let refused = [
        "Loop_simple_4b",
        "argArrayIndexOverwrite0",
        "argArrayIndexOverwrite1",
        "argArrayIndexOverwrite2",
        "argArrayIndexOverwrite3",
        "argArrayIndexOverwrite5",
        "argArrayIndexOverwrite6",
        "argumentConversion_indexOverwrite",
        "Loop_simple_9b",
    ];
    let adm: Vec<PathBuf> = corpus_files("adm.in.xaif")
        .into_iter()
        .filter(|f| !refused.iter().any(|r| short_name(f) == format!("{r}/adm.in.xaif")))
        .collect();
    assert!(adm.len() >= 160, "{} adm inputs", adm.len());
    for input in &adm {
        let result = run(&["identity", "-v", "-V", "-q", "-i", path(input), "-o", path(&out)]);
        if !result.status.success() {
            failures.push(format!("{}: {}", short_name(input), stderr(&result)));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn strict_checking_is_asked_for_with_strict() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = five_warnings(dir.path());
    let out = dir.path().join("out.xaif");
    let lenient = run(&["tangent", "-v", "-i", path(&input), "-o", path(&out)]);
    assert!(lenient.status.success(), "{}", stderr(&lenient));
    fs::remove_file(&out).expect("written");
    let strict = run(&["tangent", "--strict", "-i", path(&input), "-o", path(&out)]);
    assert_eq!(strict.status.code(), Some(1));
    assert!(stderr(&strict).contains("SubroutineCall: missing required attribute 'formalArgCount'"));
    assert!(!out.exists());
}

#[test]
fn a_schema_invalid_input_gets_every_finding_and_no_output() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = two_faults(dir.path());
    let out = dir.path().join("out.xaif");
    let result = run(&["tangent", "-v", "-V", "-i", path(&input), "-o", path(&out)]);
    assert_eq!(result.status.code(), Some(1));
    let text = stderr(&result);
    assert!(text.contains(":15:9: Symbol: attribute 'active' has value 'maybe'"), "{text}");
    assert!(text.contains(":17:9: Symbol: attribute 'type' has value 'int'"), "{text}");
    assert_eq!(entries(dir.path()), ["two_faults.xaif"]);
}

// 2. Every switch of the original is accepted.

#[test]
fn every_switch_of_the_original_is_accepted_and_those_without_effect_say_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.xaif");
    let log = dir.path().join("debug.log");
    let catalogues = shared_dir().join("xaif/intrinsics");
    let inlinable = catalogues.join("inlinable_intrinsics.xaif");
    let noninlinable = catalogues.join("noninlinable_intrinsics.xaif");
    // Switches that do something: no note.
    let effective: Vec<Vec<&str>> = vec![
        vec!["-v"],
        vec!["-V"],
        vec!["-r"],
        vec!["-w", "foo"],
        vec!["-p", "t"],
        vec!["-D"],
        vec!["-F", "NO_STYLE"],
        vec!["-S"],
        vec!["-s", "/opt/xaif/schema"],
        vec!["-c", path(&inlinable)],
        vec!["-N", path(&noninlinable)],
        vec!["-d", path(&log)],
        vec!["-d", path(&log), "-g", "64"],
        vec!["-d", path(&log), "-T", "tangent"],
        // The original's propagator switches (tests/tangent_switches.rs checks what they do).
        vec!["-n"],
        vec!["-H"],
        vec!["-C"],
        vec!["-Q"],
    ];
    for switches in &effective {
        let result = xaifbooster()
            .args(["tangent", "-i", &example(), "-o", path(&out)])
            .args(switches)
            .output()
            .expect("binary runs");
        assert!(result.status.success(), "{switches:?}: {}", stderr(&result));
        // -v also names the intrinsics catalogue in use (issue 63), in one note.
        let text = stderr(&result);
        if switches[0] == "-v" {
            assert_eq!(text.lines().count(), 1, "{text}");
            assert!(text.starts_with("xaifbooster: note: inlinable intrinsics catalogue: the built-in one"), "{text}");
        } else {
            assert_eq!(text, "", "{switches:?}");
        }
    }
    // Switches of the original's elimination library and of the adjoint mode: accepted, with a
    // one-line note naming the switch.
    let without_effect: Vec<Vec<&str>> = vec![
        vec!["-I"],
        vec!["-P"],
        vec!["-f"],
        vec!["-u"],
        vec!["-U"],
        vec!["-t", "head"],
        vec!["-b"],
        vec!["-A", "2"],
        vec!["-m"],
        vec!["-a"],
        vec!["-M", "0"],
        vec!["-R"],
        vec!["-G", "svg"],
        vec!["-B", "firefox"],
        vec!["-T", "tangent"],
    ];
    let mut all = Vec::new();
    for switches in &without_effect {
        let result = xaifbooster()
            .args(["tangent", "-i", &example(), "-o", path(&out)])
            .args(switches)
            .output()
            .expect("binary runs");
        assert!(result.status.success(), "{switches:?}: {}", stderr(&result));
        let text = stderr(&result);
        assert_eq!(text.lines().count(), 1, "{switches:?}: {text}");
        assert!(text.starts_with("xaifbooster: note: ") && text.contains(switches[0]), "{switches:?}: {text}");
        all.extend(switches.iter().copied());
    }
    // -q silences the notes; all of them together still transform.
    let quiet = xaifbooster()
        .args(["tangent", "-q", "-i", &example(), "-o", path(&out)])
        .args(&all)
        .output()
        .expect("binary runs");
    assert!(quiet.status.success(), "{}", stderr(&quiet));
    assert_eq!(stderr(&quiet), "");
    assert_eq!(fs::read(&out).expect("written"), expected_tangent());
    // Values are checked as the original did.
    for bad in [["-A", "3"], ["-M", "2"], ["-G", "png"], ["-F", "FANCY"]] {
        let result = xaifbooster().args(["tangent", "-i", &example()]).args(bad).output().expect("binary runs");
        assert_eq!(result.status.code(), Some(2), "{bad:?}");
    }
    let help = run(&["tangent", "-h"]);
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage:"));
}

#[test]
fn the_adjoint_mode_takes_the_same_switches_and_acts_on_minus_capital_i_and_p() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.xaif");
    let log = dir.path().join("debug.log");
    let result = run(&["adjoint", "-v", "-V", "-I", "-P", "-i", &example(), "-o", path(&out), "-d", path(&log)]);
    assert!(result.status.success(), "{}", stderr(&result));
    // Only -v's note naming the catalogue (issue 63).
    let text = stderr(&result);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("xaifbooster: note: inlinable intrinsics catalogue: "), "{text}");
    assert!(fs::read_to_string(&out).expect("out").contains("reverse_subroutine_template"));
    assert!(fs::read_to_string(&log).expect("log").contains("METRIC adjoint: "));
    // These act in adjoint mode: no note.
    for switches in [vec!["-f"], vec!["-D"], vec!["-S"], vec!["-n"], vec!["-Q"]] {
        let result = xaifbooster()
            .args(["adjoint", "-i", &example(), "-o", path(&out)])
            .args(&switches)
            .output()
            .expect("binary runs");
        assert!(result.status.success(), "{switches:?}: {}", stderr(&result));
        assert_eq!(stderr(&result), "", "{switches:?}");
    }
    // -H and -C shape the tangent's output only, as in the original.
    for switches in [vec!["-u"], vec!["-U"], vec!["-t", "head"], vec!["-b"], vec!["-H"], vec!["-C"]] {
        let result = xaifbooster()
            .args(["adjoint", "-i", &example(), "-o", path(&out)])
            .args(&switches)
            .output()
            .expect("binary runs");
        assert!(result.status.success(), "{switches:?}: {}", stderr(&result));
        let text = stderr(&result);
        assert_eq!(text.lines().count(), 1, "{switches:?}: {text}");
        assert!(text.starts_with("xaifbooster: note: ") && text.contains(switches[0]), "{switches:?}: {text}");
    }
}

#[test]
fn the_debug_log_says_what_the_passes_did_filtered_by_mask_and_tags() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.xaif");
    let log = dir.path().join("debug.log");
    let read_log = |extra: &[&str]| {
        let result = xaifbooster()
            .args(["tangent", "-p", "nosuchvariable", "-i", &example(), "-o", path(&out), "-d", path(&log)])
            .args(extra)
            .output()
            .expect("binary runs");
        assert!(result.status.success(), "{}", stderr(&result));
        fs::read_to_string(&log).expect("log written")
    };
    let everything = read_log(&[]);
    assert!(everything.starts_with("# xaifbooster "), "{everything}");
    for expected in
        ["WARNING passivate: ", "METRIC tangent: ", "METRIC type_change: ", "DATA tangent: ", "TIMING read: "]
    {
        assert!(everything.contains(expected), "{expected} missing from {everything}");
    }
    let metric = read_log(&["-g", "64"]);
    assert!(metric.lines().skip(1).all(|l| l.starts_with("METRIC ")), "{metric}");
    assert!(metric.contains("METRIC tangent: "), "{metric}");
    let tagged = read_log(&["-T", "tangent type_change"]);
    assert!(tagged.lines().skip(1).all(|l| l.contains(" tangent: ") || l.contains(" type_change: ")), "{tagged}");
    // Without -d, -g logs to standard error.
    let result = run(&["tangent", "-i", &example(), "-o", path(&out), "-g", "64"]);
    assert!(result.status.success());
    assert!(stderr(&result).contains("METRIC tangent: "), "{}", stderr(&result));
    // A failing run writes its log, with the errors, and no output.
    fs::remove_file(&out).expect("written");
    let input = two_faults(dir.path());
    let result = run(&["tangent", "-i", path(&input), "-o", path(&out), "-d", path(&log)]);
    assert_eq!(result.status.code(), Some(1));
    let failed = fs::read_to_string(&log).expect("log written");
    assert_eq!(failed.lines().filter(|l| l.starts_with("ERROR validate: ")).count(), 2, "{failed}");
    assert!(!out.exists());
}

// 3. Files and streams.

#[test]
fn a_device_is_written_not_replaced() {
    // A regression here, run as root, would replace the machine's /dev/null with a regular
    // file: try a private copy of the device first, so that the test fails before that.
    let dir = tempfile::tempdir().expect("temp dir");
    let private = dir.path().join("null");
    let made = Command::new("mknod").arg(&private).args(["c", "1", "3"]).status().is_ok_and(|s| s.success());
    let mut devices = vec![PathBuf::from("/dev/null")];
    if made {
        devices.insert(0, private);
    }
    for device in &devices {
        let device = path(device);
        let result = run(&["tangent", "-i", &example(), "-o", device, "--stats", device]);
        assert!(result.status.success(), "{}", stderr(&result));
        assert!(fs::metadata(device).expect("device").file_type().is_char_device(), "{device}");
        let result = run(&["identity", "-i", &example(), "-o", device, "-d", device]);
        assert!(result.status.success(), "{}", stderr(&result));
        assert!(fs::metadata(device).expect("device").file_type().is_char_device(), "{device}");
    }
    let expected: Vec<String> = if made { vec!["null".into()] } else { vec![] };
    assert_eq!(entries(dir.path()), expected);
}

#[test]
fn a_symlink_is_written_through_and_stays_a_symlink() {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::create_dir(dir.path().join("real")).expect("mkdir");
    let target = dir.path().join("real/out.xaif");
    fs::write(&target, "previous").expect("write");
    let link = dir.path().join("link.xaif");
    std::os::unix::fs::symlink("real/out.xaif", &link).expect("symlink");
    let result = run(&["tangent", "-i", &example(), "-o", path(&link)]);
    assert!(result.status.success(), "{}", stderr(&result));
    assert!(fs::symlink_metadata(&link).expect("link").file_type().is_symlink());
    assert_eq!(fs::read(&target).expect("target"), expected_tangent());
    assert_eq!(entries(&dir.path().join("real")), ["out.xaif"]);
    // --stats alike.
    let stats_target = dir.path().join("real/stats.json");
    fs::write(&stats_target, "previous").expect("write");
    let stats_link = dir.path().join("stats.json");
    std::os::unix::fs::symlink("real/stats.json", &stats_link).expect("symlink");
    let result = run(&["tangent", "-i", &example(), "-o", path(&link), "--stats", path(&stats_link)]);
    assert!(result.status.success(), "{}", stderr(&result));
    assert!(fs::symlink_metadata(&stats_link).expect("link").file_type().is_symlink());
    assert!(fs::read_to_string(&stats_target).expect("stats").contains("\"totals\""));
    assert_eq!(entries(&dir.path().join("real")), ["out.xaif", "stats.json"]);
}

#[test]
fn an_existing_file_keeps_its_mode_and_hard_links() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.xaif");
    fs::write(&out, "previous").expect("write");
    fs::set_permissions(&out, fs::Permissions::from_mode(0o640)).expect("chmod");
    let result = run(&["tangent", "-i", &example(), "-o", path(&out)]);
    assert!(result.status.success(), "{}", stderr(&result));
    assert_eq!(fs::metadata(&out).expect("out").permissions().mode() & 0o7777, 0o640);
    assert_eq!(fs::read(&out).expect("out"), expected_tangent());
    let other = dir.path().join("other_name.xaif");
    fs::hard_link(&out, &other).expect("hard link");
    let result = run(&["identity", "-i", &example(), "-o", path(&out)]);
    assert!(result.status.success(), "{}", stderr(&result));
    assert_eq!(fs::read(&other).expect("other"), fs::read(&out).expect("out"));
    assert!(fs::read_to_string(&other).expect("other").contains("xaif.xsd"));
}

#[test]
fn a_named_pipe_is_written_not_replaced() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fifo = dir.path().join("pipe");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs").success());
    let child = xaifbooster()
        .args(["tangent", "-i", &example(), "-o", path(&fifo)])
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let mut received = Vec::new();
    fs::File::open(&fifo).expect("open fifo").read_to_end(&mut received).expect("read fifo");
    let result = child.wait_with_output().expect("binary ends");
    assert!(result.status.success(), "{}", stderr(&result));
    assert_eq!(received, expected_tangent());
    assert!(fs::metadata(&fifo).expect("fifo").file_type().is_fifo());
    assert_eq!(entries(dir.path()), ["pipe"]);
}

/// `-o >(cmd)` and `--stats >(cmd)` as a shell user writes them: bash passes `/dev/fd/N`, the
/// write end of a pipe to `cmd`.
#[test]
fn process_substitution_writes_into_the_pipe() {
    if !Command::new("bash").arg("-c").arg("true").status().is_ok_and(|s| s.success()) {
        eprintln!("bash is not installed: process substitution is not tried");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (out, stats) = (dir.path().join("out.xaif"), dir.path().join("stats.json"));
    // `wait` waits for the substituted processes (bash 4.4 and later), so both files are
    // complete when bash exits; bash's status is the binary's.
    let script = r#"B=$1; shift; "$B" tangent -i "$1" -o >(cat > "$2") --stats >(cat > "$3"); s=$?; wait; exit $s"#;
    let result = Command::new("bash")
        .args(["-c", script, "bash", env!("CARGO_BIN_EXE_xaifbooster"), &example(), path(&out), path(&stats)])
        .output()
        .expect("bash runs");
    assert!(result.status.success(), "{}", stderr(&result));
    assert_eq!(stderr(&result), "");
    assert_eq!(fs::read(&out).expect("out"), expected_tangent());
    assert!(fs::read_to_string(&stats).expect("stats").contains("\"totals\""));
    assert_eq!(entries(dir.path()), ["out.xaif", "stats.json"]);
}

#[test]
fn descriptor_aliases_write_to_the_open_descriptor() {
    let expected = expected_tangent();
    for alias in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
        let result = run(&["tangent", "-i", &example(), "-o", alias]);
        assert!(result.status.success(), "{alias}: {}", stderr(&result));
        assert_eq!(result.stdout, expected, "{alias}");
    }
    // Standard output redirected to a regular file: the file the shell opened receives the
    // document (not a replacement under its name).
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("redirected.xaif");
    let handle = fs::File::create(&file).expect("create");
    let status = xaifbooster()
        .args(["tangent", "-i", &example(), "-o", "/dev/stdout"])
        .stdout(handle)
        .status()
        .expect("binary runs");
    assert!(status.success());
    assert_eq!(fs::read(&file).expect("file"), expected);
}

#[test]
fn standard_input_and_output_and_the_long_forms() {
    let expected = expected_tangent();
    let input = fs::read(example()).expect("example");
    for args in [vec!["tangent", "-i", "-"], vec!["tangent", "-", "-o", "-"], vec!["tangent", "--input", "-"]] {
        let mut child = xaifbooster()
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("binary runs");
        child.stdin.take().expect("stdin").write_all(&input).expect("feed input");
        let result = child.wait_with_output().expect("binary ends");
        assert!(result.status.success(), "{args:?}: {}", stderr(&result));
        assert_eq!(result.stdout, expected, "{args:?}");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.xaif");
    let result = run(&["tangent", &example(), "--output", path(&out), "--stats", "-"]);
    assert!(result.status.success(), "{}", stderr(&result));
    assert_eq!(fs::read(&out).expect("out"), expected);
    assert!(String::from_utf8_lossy(&result.stdout).contains("\"totals\""));
    // Two outputs on standard output is a usage error.
    let result = run(&["tangent", &example(), "--stats", "-"]);
    assert_eq!(result.status.code(), Some(2), "{}", stderr(&result));
    assert!(result.stdout.is_empty());
}

#[test]
fn a_closed_pipe_ends_the_run_quietly_with_status_141() {
    let input = fs::read(example()).expect("example");
    for command in ["tangent", "identity"] {
        let mut child = xaifbooster()
            .args([command, "-i", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("binary runs");
        // The reader goes away before anything is written.
        drop(child.stdout.take());
        child.stdin.take().expect("stdin").write_all(&input).expect("feed input");
        let result = child.wait_with_output().expect("binary ends");
        assert_eq!(result.status.code(), Some(141), "{command}: {}", stderr(&result));
        assert_eq!(stderr(&result), "", "{command}");
    }
}

/// Standard input, output and error closed when the binary starts (`<&- >&- 2>&-`): they are
/// opened on `/dev/null`, so no file the run opens takes their numbers. An input with warnings
/// gives the same output file as with them open (the warnings would otherwise have gone into
/// whatever file took descriptor 2), and a document written to the closed standard output is
/// discarded without an error.
#[test]
fn closed_standard_descriptors_stand_for_dev_null() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = five_warnings(dir.path());
    let (open, closed) = (dir.path().join("open.xaif"), dir.path().join("closed.xaif"));
    let result = run(&["tangent", path(&input), "-o", path(&open)]);
    assert!(result.status.success(), "{}", stderr(&result));
    assert!(stderr(&result).contains("warning"), "the input gives warnings: {}", stderr(&result));
    let closed_run = |redirections: &str, args: &[&str]| {
        Command::new("sh")
            .arg("-c")
            .arg(format!(r#"exec "$0" "$@" {redirections}"#))
            .arg(env!("CARGO_BIN_EXE_xaifbooster"))
            .args(args)
            .status()
            .expect("sh runs")
    };
    // With standard error alone closed, the output's temporary file would be descriptor 2.
    for redirections in ["2>&-", "<&- >&- 2>&-"] {
        let _ = fs::remove_file(&closed);
        let status = closed_run(redirections, &["tangent", path(&input), "-o", path(&closed)]);
        assert!(status.success(), "{redirections}: {status}");
        let same = fs::read(&closed).expect("output written") == fs::read(&open).expect("output written");
        assert!(same, "{redirections}: the output differs from the run with every descriptor open");
    }
    let status = closed_run(">&-", &["identity", path(&input)]);
    assert!(status.success(), "{status}");
}

#[test]
fn a_failing_stats_output_writes_no_document() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.xaif");
    let stats = dir.path().join("missing/dir/stats.json");
    let result = run(&["tangent", "-i", &example(), "-o", path(&out), "--stats", path(&stats)]);
    assert_eq!(result.status.code(), Some(1));
    assert!(stderr(&result).contains("cannot write"), "{}", stderr(&result));
    assert_eq!(entries(dir.path()), Vec::<String>::new());
    fs::write(&out, "previous").expect("write");
    let result = run(&["tangent", "-i", &example(), "-o", path(&out), "--stats", path(&stats)]);
    assert_eq!(result.status.code(), Some(1));
    assert_eq!(fs::read_to_string(&out).expect("out"), "previous");
    assert_eq!(entries(dir.path()), ["out.xaif"]);
}

/// An output whose writing fails part way (here at a file size limit of 4 MiB, with `SIGXFSZ`
/// ignored so that the write returns `EFBIG`): the message names the output as every other
/// output error does, the run fails, and the file it would have replaced is left as it was,
/// with nothing beside it. In each mode, on inputs that stream (every input does) to outputs
/// past the limit.
#[test]
fn a_streamed_output_that_cannot_be_written_is_named_and_leaves_the_old_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("large.xaif");
    // Its tangent's and adjoint's outputs are several times the limit.
    synthetic_input(&input, "1.5", 2);
    let out_dir = dir.path().join("out");
    fs::create_dir(&out_dir).expect("out dir");
    let out = out_dir.join("out.xaif");
    // Identity's output is about its input.
    let larger = dir.path().join("larger.xaif");
    synthetic_input(&larger, "4.5", 2);
    for (mode, input) in [("tangent", &input), ("adjoint", &input), ("identity", &larger)] {
        fs::write(&out, "previous").expect("write");
        let result = Command::new("bash")
            .arg("-c")
            .arg(r#"trap '' XFSZ; ulimit -f 4096; exec "$0" "$@""#)
            .arg(env!("CARGO_BIN_EXE_xaifbooster"))
            .args([mode, path(input), "-o", path(&out)])
            .output()
            .expect("bash runs");
        assert_eq!(result.status.code(), Some(1), "{mode}: {}", stderr(&result));
        let text = stderr(&result);
        assert!(text.contains(&format!("cannot write {}", out.display())), "{mode}: {text}");
        assert_eq!(fs::read_to_string(&out).expect("out"), "previous", "{mode}");
        assert_eq!(entries(&out_dir), ["out.xaif"], "{mode}");
    }
}

/// Runs the binary with `args` and `TMPDIR` set to `temp`, its standard output a pipe:
/// what it printed and its exit status.
fn run_piped(args: &[&str], temp: &Path) -> (Vec<u8>, Option<i32>) {
    let output = xaifbooster().args(args).env("TMPDIR", temp).stderr(Stdio::null()).output().expect("binary runs");
    (output.stdout, output.status.code())
}

/// Standard output (and a pipe, a device, a file kept in place) cannot take a large run's
/// routines before their head, which is known last: they wait in an unnamed file in the
/// temporary directory until the run has succeeded (`tests/standard_output.rs` holds its
/// memory to the file output's). The output is the file output's bytes; nothing is left in
/// the temporary directory; a run that fails at its last routine, or because the temporary
/// file cannot grow, prints nothing (the latter says where); and where no temporary file can
/// be made the run still succeeds, in memory.
#[test]
fn large_runs_to_standard_output_wait_in_a_temporary_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("large.xaif");
    synthetic_input(&input, "4", 3);
    let temp = dir.path().join("tmp");
    fs::create_dir(&temp).expect("temp dir");
    let out = dir.path().join("out.xaif");
    let mut tangent = Vec::new();
    for mode in ["identity", "tangent", "adjoint"] {
        let (printed, code) = run_piped(&[mode, path(&input)], &temp);
        assert_eq!(code, Some(0), "{mode}");
        let (_, code) = run_piped(&[mode, path(&input), "-o", path(&out)], &temp);
        assert_eq!(code, Some(0), "{mode}");
        assert!(printed == fs::read(&out).expect("written"), "{mode}: standard output differs from the file");
        assert_eq!(entries(&temp), Vec::<String>::new(), "{mode}");
        if mode == "tangent" {
            tangent = printed;
        }
    }
    // No temporary directory: memory, the same bytes.
    let (printed, code) = run_piped(&["tangent", path(&input)], &dir.path().join("missing"));
    assert_eq!(code, Some(0));
    assert!(printed == tangent, "without a temporary directory the output differs");
    // A temporary file that cannot grow (a file size limit, `SIGXFSZ` ignored) fails the run,
    // which says where, prints nothing and leaves nothing.
    let limited = Command::new("bash")
        .arg("-c")
        .arg(r#"trap '' XFSZ; ulimit -f 4096; exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_xaifbooster"))
        .args(["tangent", path(&input)])
        .env("TMPDIR", &temp)
        .output()
        .expect("bash runs");
    assert_eq!(limited.status.code(), Some(1), "{}", stderr(&limited));
    let expected = format!("cannot write standard output (put together in the temporary directory {})", temp.display());
    assert!(stderr(&limited).contains(&expected), "{}", stderr(&limited));
    assert!(limited.stdout.is_empty(), "{} bytes printed by a failed run", limited.stdout.len());
    assert_eq!(entries(&temp), Vec::<String>::new());
    // The last routine names a symbol nobody declares: found after the others were written.
    let text = fs::read_to_string(&input).expect("generated");
    let at = text.rfind("<xaif:SymbolReference").expect("a reference");
    let name = at + text[at..].find("symbol_id=\"").expect("a symbol") + "symbol_id=\"".len();
    let end = name + text[name..].find('"').expect("quoted");
    let broken = dir.path().join("broken.xaif");
    fs::write(&broken, format!("{}no_such_symbol{}", &text[..name], &text[end..])).expect("write");
    for mode in ["identity", "tangent", "adjoint"] {
        let (printed, code) = run_piped(&[mode, path(&broken)], &temp);
        assert_eq!(code, Some(1), "{mode}");
        assert!(printed.is_empty(), "{mode}: {} bytes printed by a failed run", printed.len());
        assert_eq!(entries(&temp), Vec::<String>::new(), "{mode}");
    }
}

#[test]
fn validate_checks_every_file_even_when_one_cannot_be_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let faulty = two_faults(dir.path());
    let missing = dir.path().join("missing.xaif");
    let a_directory = dir.path();
    let result = run(&["validate", path(&missing), path(&faulty), path(a_directory), &example()]);
    assert_eq!(result.status.code(), Some(1));
    let text = stderr(&result);
    assert!(text.contains(&format!("cannot read {}", missing.display())), "{text}");
    assert!(text.contains(&format!("cannot read {}", a_directory.display())), "{text}");
    assert_eq!(text.lines().filter(|l| l.contains("two_faults.xaif:")).count(), 2, "{text}");
    let result = run(&["validate", path(&missing), &example()]);
    assert_eq!(result.status.code(), Some(1));
    let result = run(&["validate", &example()]);
    assert!(result.status.success(), "{}", stderr(&result));
}

#[test]
fn repeated_warnings_are_summarised_and_quiet_silences_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = five_warnings(dir.path());
    let out = dir.path().join("out.xaif");
    for command in [vec!["tangent", "-o", path(&out)], vec!["validate", "--skip-activity"]] {
        let result = xaifbooster().args(&command).arg(&input).output().expect("binary runs");
        assert!(result.status.success(), "{command:?}: {}", stderr(&result));
        let text = stderr(&result);
        assert_eq!(text.lines().count(), 1, "{command:?}: {text}");
        assert!(
            text.contains(
                "warning: SubroutineCall: missing required attribute 'formalArgCount' (inferred) (5 ×, first shown)"
            ),
            "{command:?}: {text}"
        );
        let quiet = xaifbooster().args(&command).arg("-q").arg(&input).output().expect("binary runs");
        assert!(quiet.status.success());
        assert_eq!(stderr(&quiet), "", "{command:?}");
    }
    // Errors are never silenced.
    let faulty = two_faults(dir.path());
    let result = run(&["validate", "-q", path(&faulty)]);
    assert_eq!(stderr(&result).lines().count(), 2);
}

/// Line and column just past the end of `text`, as findings count them (from 1, in characters).
fn end_of(text: &str) -> (usize, usize) {
    let line = text.matches('\n').count() + 1;
    let column = text[text.rfind('\n').map_or(0, |p| p + 1)..].chars().count() + 1;
    (line, column)
}

#[test]
fn a_truncated_file_is_reported_where_it_was_cut() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = fs::read_to_string(example()).expect("example");
    let at = |needle: &str, extra: usize| text.find(needle).expect("needle in the example") + extra;
    let cuts = [
        ("inside_an_attribute_value", at(r#"<xaif:Symbol symbol_id="x"/>"#, r#"<xaif:Symbol symbol_id="x"#.len())),
        ("inside_an_attribute_name", at(r#"<xaif:Symbol symbol_id="x"/>"#, "<xaif:Symbol symb".len())),
        ("after_an_element_name", at(r#"<xaif:Symbol symbol_id="x"/>"#, "<xaif:Symbol ".len())),
        ("between_elements", at(r#"<xaif:Symbol symbol_id="x"/>"#, r#"<xaif:Symbol symbol_id="x"/>"#.len())),
        ("inside_the_root_start_tag", at("<xaif:CallGraph", "<xaif:Call".len())),
        ("before_the_last_end_tag", at("</xaif:CallGraph>", 0)),
    ];
    let out = dir.path().join("out.xaif");
    let mut files = Vec::new();
    for (name, offset) in cuts {
        let cut = &text[..offset];
        let file = dir.path().join(format!("{name}.xaif"));
        fs::write(&file, cut).expect("write input");
        let (line, column) = end_of(cut);
        assert!(line > 1, "{name}: the cut is past the first line");
        // The validator (which every transforming run starts with) and the reader (which `dot`
        // runs alone) word it differently; both say where.
        let location = format!("{}:{line}:{column}: ", file.display());
        for command in [vec!["validate"], vec!["tangent", "-o", path(&out)], vec!["dot"]] {
            let result = xaifbooster().args(&command).arg(&file).output().expect("binary runs");
            assert_eq!(result.status.code(), Some(1), "{name} {command:?}");
            let text = stderr(&result);
            assert!(
                text.lines().any(|l| l.starts_with(&location)),
                "{name} {command:?}: wanted {location}…, got {text}"
            );
            assert!(!out.exists(), "{name}: {command:?} wrote an output");
        }
        files.push(file);
    }
    // validate over all of them reports each cut.
    let result = xaifbooster().arg("validate").args(&files).output().expect("binary runs");
    assert_eq!(result.status.code(), Some(1));
    assert_eq!(stderr(&result).lines().filter(|l| l.contains(": document: malformed XML: ")).count(), files.len());
}

/// A large document (above `driver::THREADS_FROM`) takes the driver's threads: the checks
/// beside the transformation, the reader on a thread of its own and, in the adjoint, a worker.
/// Its outputs, streamed (the routines held back until the head is written in front of them),
/// are the same bytes as the library writes from the whole tree, to a replaced file and to
/// standard output, in both transforming modes.
#[test]
fn large_outputs_are_the_libraries_whole_tree_bytes() {
    use xaifbooster::pipeline::{self, Config};
    use xaifbooster::xaif::{self, ReadOptions, WriteOptions, intrinsics::Catalogue};
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("large.xaif");
    synthetic_input(&input, "1.5", 7);
    let bytes = fs::read(&input).expect("generated");
    assert!(bytes.len() >= xaifbooster::driver::THREADS_FROM, "the input takes the driver's threads");
    for mode in ["tangent", "adjoint"] {
        let mut cg = xaif::read(&bytes, "large", &ReadOptions::default()).expect("readable").call_graph;
        let config = Config::default();
        if mode == "tangent" {
            pipeline::tangent(&mut cg, Catalogue::builtin(), &config).expect("tangent");
        } else {
            pipeline::adjoint(&mut cg, Catalogue::builtin(), &config).expect("adjoint");
        }
        let expected = xaif::write(&cg, &WriteOptions { schema_location: "xaif_output.xsd".into() });
        assert!(expected.len() > 4 << 20, "the {mode} output should be large: {} bytes", expected.len());
        let out = dir.path().join("out.xaif");
        fs::write(&out, b"old contents").expect("an output to replace");
        let replaced = run(&[mode, path(&input), "-o", path(&out)]);
        assert!(replaced.status.success(), "{}", stderr(&replaced));
        assert!(fs::read(&out).expect("written") == expected, "the replaced file differs ({mode})");
        assert_eq!(entries(dir.path()), ["large.xaif", "out.xaif"], "{mode}");
        let piped = run(&[mode, path(&input)]);
        assert!(piped.status.success(), "{}", stderr(&piped));
        assert!(piped.stdout == expected, "standard output differs ({mode})");
    }
}

/// Every input streams routine by routine, whatever its size: a small corpus file's output is,
/// byte for byte, what the library writes from the whole tree (`pipeline` then `xaif::write`)
/// in each mode, and the debug log says it went routine by routine. Forced passivation (`-p`)
/// takes the whole tree, the log says why, and the output is the library's again.
#[test]
fn a_small_input_streams_to_the_whole_trees_bytes() {
    use xaifbooster::pipeline::{self, Config};
    use xaifbooster::xaif::{self, ReadOptions, WriteOptions, intrinsics::Catalogue};
    let input = shared_dir().join("corpus/graphEx2/tlm.in.xaif");
    let bytes = fs::read(&input).expect("corpus input");
    assert!(bytes.len() < xaifbooster::driver::THREADS_FROM, "the input is small");
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("debug.log");
    let passive = Config { passive: vec!["nothing_of_that_name".into()], ..Config::default() };
    for mode in ["identity", "tangent", "adjoint"] {
        for config in [Config::default(), passive.clone()] {
            let mut cg = xaif::read(&bytes, "small", &ReadOptions::default()).expect("readable").call_graph;
            let catalogue = Catalogue::builtin();
            let schema_location = match mode {
                "identity" => {
                    pipeline::identity(&mut cg, &config);
                    "xaif.xsd"
                }
                "tangent" => {
                    pipeline::tangent(&mut cg, catalogue, &config).expect("tangent");
                    "xaif_output.xsd"
                }
                _ => {
                    pipeline::adjoint(&mut cg, catalogue, &config).expect("adjoint");
                    "xaif_output.xsd"
                }
            };
            let expected = xaif::write(&cg, &WriteOptions { schema_location: schema_location.into() });
            let mut command = assert_cmd::Command::new(env!("CARGO_BIN_EXE_xaifbooster"));
            command.args([mode, "-q", path(&input), "-d", path(&log)]);
            let forced = !config.passive.is_empty();
            if forced {
                command.args(["-p", &config.passive[0]]);
            }
            let printed = command.assert().success().get_output().stdout.clone();
            assert!(printed == expected, "{mode} (-p: {forced}): the output differs from the whole tree's");
            let text = fs::read_to_string(&log).expect("debug log written");
            let (streamed, whole) = (text.contains("routine by routine"), text.contains("whole tree: "));
            assert_eq!((streamed, whole), (!forced, forced), "{mode} (-p: {forced}): the log says {text}");
        }
    }
}

/// The outputs of one run are kept together or not at all: where a side output (statistics,
/// the debug log) cannot be written, the main output is not written either, and an older file
/// at its place stays as it was; nothing is left in the directory.
#[test]
fn a_side_output_that_fails_leaves_no_main_output() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.xaif");
    for (mode, side) in [("tangent", "--stats"), ("tangent", "-d"), ("adjoint", "--stats"), ("adjoint", "-d")] {
        let failed = run(&[mode, &example(), "-o", path(&out), side, "/dev/full"]);
        assert_eq!(failed.status.code(), Some(1), "{mode} {side}: {}", stderr(&failed));
        assert!(stderr(&failed).contains("/dev/full"), "{mode} {side}: {}", stderr(&failed));
        assert_eq!(entries(dir.path()), Vec::<String>::new(), "{mode} {side}: nothing written");
        fs::write(&out, "older").expect("writable");
        let failed = run(&[mode, &example(), "-o", path(&out), side, "/dev/full"]);
        assert_eq!(failed.status.code(), Some(1), "{mode} {side}");
        assert_eq!(fs::read_to_string(&out).expect("kept"), "older", "{mode} {side}: the older file stays");
        assert_eq!(entries(dir.path()), ["out.xaif"], "{mode} {side}: no temporary left");
        fs::remove_file(&out).expect("removable");
        // Both written where both can be.
        let log = dir.path().join("side.out");
        let ok = run(&[mode, &example(), "-o", path(&out), side, path(&log)]);
        assert!(ok.status.success(), "{mode} {side}: {}", stderr(&ok));
        assert!(fs::metadata(&out).is_ok() && fs::metadata(&log).is_ok(), "{mode} {side}");
        fs::remove_file(&out).expect("removable");
        fs::remove_file(&log).expect("removable");
    }
}

/// Runs the binary with `input` on its standard input.
fn run_with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = xaifbooster()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().expect("binary ends");
    writer.join().expect("writer");
    output
}

/// `-o` naming the input file (the same path, another spelling of it, a symbolic or a hard
/// link) is refused with exit 1 and the input left as it was; `--force` allows it.
#[test]
fn output_naming_the_input_is_refused_unless_forced() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("in.xaif");
    let original = fs::read(example()).expect("example");
    fs::write(&input, &original).expect("write input");
    std::os::unix::fs::symlink("in.xaif", dir.path().join("soft.xaif")).expect("symlink");
    fs::hard_link(&input, dir.path().join("hard.xaif")).expect("hard link");
    let other_spelling = dir.path().join(".").join("in.xaif");
    for mode in ["identity", "tangent", "adjoint"] {
        for output in
            [input.clone(), other_spelling.clone(), dir.path().join("soft.xaif"), dir.path().join("hard.xaif")]
        {
            let refused = run(&[mode, "-i", path(&input), "-o", path(&output)]);
            assert_eq!(refused.status.code(), Some(1), "{mode} {output:?}: {}", stderr(&refused));
            assert!(stderr(&refused).contains("is the input file"), "{mode}: {}", stderr(&refused));
            assert!(stderr(&refused).contains("--force"), "{mode}: {}", stderr(&refused));
            assert_eq!(fs::read(&input).expect("input"), original, "{mode} {output:?}: input untouched");
            assert_eq!(entries(dir.path()), ["hard.xaif", "in.xaif", "soft.xaif"], "{mode}: nothing left");
        }
    }
    let forced = run(&["tangent", path(&input), "-o", path(&input), "--force"]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_eq!(fs::read(&input).expect("input"), expected_tangent());
}

/// Transforming an output of a transformation again warns, naming the file and what shows it;
/// `-q` silences the warning, and a front end's file gets none.
#[test]
fn an_already_transformed_input_warns() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tangent = dir.path().join("tangent.xaif");
    fs::write(&tangent, expected_tangent()).expect("write");
    let adjoint = dir.path().join("adjoint.xaif");
    let made = run(&["adjoint", &example(), "-o", path(&adjoint)]);
    assert!(made.status.success(), "{}", stderr(&made));
    let clean = run(&["tangent", &example()]);
    assert!(!stderr(&clean).contains("already transformed"), "{}", stderr(&clean));
    for (file, found) in [(&tangent, "DerivativePropagator elements"), (&adjoint, "ReplacementList elements")] {
        for mode in ["tangent", "adjoint"] {
            let again = run(&[mode, path(file)]);
            assert!(again.status.success(), "{mode}: {}", stderr(&again));
            let warning = stderr(&again);
            let line = warning.lines().find(|l| l.contains("already transformed")).expect("a warning");
            assert!(line.starts_with(&format!("{}: warning:", path(file))), "{line}");
            assert!(line.contains(found) && line.contains("OpenAD_ temporaries"), "{line}");
            let quiet = run(&[mode, "-q", path(file)]);
            assert!(quiet.status.success() && quiet.stderr.is_empty(), "{mode}: {}", stderr(&quiet));
        }
    }
}

/// With no input named, the transforming modes read standard input when it is not a terminal
/// (a filter); with a terminal there, a usage error instead of waiting for typed XAIF.
#[test]
fn no_input_named_reads_standard_input() {
    let input = fs::read(example()).expect("example");
    let piped = run_with_stdin(&["tangent"], &input);
    assert!(piped.status.success(), "{}", stderr(&piped));
    assert_eq!(piped.stdout, expected_tangent());
    let identity = run_with_stdin(&["identity", "-q"], &input);
    assert!(identity.status.success(), "{}", stderr(&identity));
    assert!(!identity.stdout.is_empty());
    // A terminal on standard input, through script(1) where it is installed.
    if Path::new("/usr/bin/script").exists() {
        let command = format!("{} tangent", env!("CARGO_BIN_EXE_xaifbooster"));
        let terminal = Command::new("/usr/bin/script")
            .args(["-qec", &command, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .expect("script runs");
        let text = String::from_utf8_lossy(&terminal.stdout).into_owned();
        assert_eq!(terminal.status.code(), Some(2), "{text}");
        assert!(text.contains("no input file"), "{text}");
    }
}

/// `batch` whose inputs are all inside the (skipped) output directory says so, rather than "no
/// input files".
#[test]
fn batch_says_the_inputs_are_inside_the_output_directory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    fs::create_dir(&out).expect("mkdir");
    fs::copy(example(), out.join("a.xaif")).expect("copy");
    let inside = run(&["batch", "identity", path(&out), "--out-dir", path(&out)]);
    assert_eq!(inside.status.code(), Some(1), "{}", stderr(&inside));
    assert!(stderr(&inside).contains("inside the output directory"), "{}", stderr(&inside));
    assert!(stderr(&inside).contains("which is skipped"), "{}", stderr(&inside));
}

/// `dot --what expression` without `--statement` is a usage error that names the switch.
#[test]
fn dot_expression_requires_a_statement() {
    let dot = run(&["dot", "--what", "expression", &example()]);
    assert_eq!(dot.status.code(), Some(2), "{}", stderr(&dot));
    assert!(stderr(&dot).contains("--statement is required with --what expression"), "{}", stderr(&dot));
}

/// The batch summary gives sizes in units that fit them: a small corpus is not "0.0 MB".
#[test]
fn batch_summary_sizes_fit_their_units() {
    let dir = tempfile::tempdir().expect("temp dir");
    let batch = run(&["batch", "tangent", &example(), "--out-dir", path(&dir.path().join("b")), "-q"]);
    assert!(batch.status.success(), "{}", stderr(&batch));
    let summary = String::from_utf8_lossy(&batch.stdout).into_owned() + &stderr(&batch);
    assert!(!summary.contains("0.0 MB"), "{summary}");
    assert!(summary.contains(" KB read") && summary.contains(" KB written"), "{summary}");
}

/// Help wraps at the terminal's width (COLUMNS where standard output is no terminal, else 100
/// columns), and the usage line shows no switch as required.
#[test]
fn help_wraps_and_its_usage_line_requires_nothing() {
    for mode in ["identity", "tangent", "adjoint"] {
        for (columns, widest) in [(Some("72"), 72), (None, 100)] {
            let mut command = xaifbooster();
            command.args([mode, "--help"]).env_remove("COLUMNS");
            if let Some(columns) = columns {
                command.env("COLUMNS", columns);
            }
            let help = command.output().expect("binary runs");
            assert!(help.status.success(), "{}", stderr(&help));
            let text = String::from_utf8_lossy(&help.stdout).into_owned();
            let long = text.lines().find(|l| l.chars().count() > widest);
            assert!(long.is_none(), "{mode} {columns:?}: {long:?}");
            let usage = text.lines().find(|l| l.starts_with("Usage:")).expect("a usage line");
            assert_eq!(usage, format!("Usage: xaifbooster {mode} [OPTIONS] [INPUT]"));
        }
    }
}
