//! Ctrl-C and SIGTERM through the real binary: a single run removes the temporary file of its
//! output, leaves an older output as it was, says "interrupted" and exits 130 or 143; a batch
//! lets the files under way finish, starts no more, and writes a report of what finished,
//! marked incomplete.
#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("readable")
        .map(|e| e.expect("entry").file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill").args([&format!("-{name}"), &pid.to_string()]).status().expect("kill runs");
    assert!(status.success(), "kill -{name}");
}

/// Waits until `dir` holds a file whose name starts with `prefix` (the run's temporary).
fn wait_for_temporary(dir: &Path, prefix: &str) {
    let started = Instant::now();
    while !entries(dir).iter().any(|name| name.starts_with(prefix)) {
        assert!(started.elapsed() < Duration::from_secs(30), "no temporary appeared in {}", dir.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The input is a named pipe nobody writes: the run has made its output's temporary file
/// and waits for its input when the signal comes, every time.
#[test]
fn a_single_run_interrupted_leaves_nothing_behind() {
    for (name, code) in [("INT", 130), ("TERM", 143)] {
        for mode in ["identity", "tangent", "adjoint"] {
            let dir = tempfile::tempdir().expect("temp dir");
            let input = dir.path().join("in.xaif");
            let status = Command::new("mkfifo").arg(&input).status().expect("mkfifo runs");
            assert!(status.success());
            let output = dir.path().join("out.xaif");
            std::fs::write(&output, "older").expect("writable");
            let child = Command::new(env!("CARGO_BIN_EXE_xaifbooster"))
                .args([mode, "-i"])
                .arg(&input)
                .arg("-o")
                .arg(&output)
                .stderr(Stdio::piped())
                .spawn()
                .expect("binary runs");
            wait_for_temporary(dir.path(), ".out.xaif.");
            signal(child.id(), name);
            let ended = child.wait_with_output().expect("ends");
            let stderr = String::from_utf8_lossy(&ended.stderr);
            assert_eq!(ended.status.code(), Some(code), "{mode} {name}: {stderr}");
            assert!(stderr.contains("interrupted"), "{mode} {name}: {stderr}");
            assert_eq!(entries(dir.path()), ["in.xaif", "out.xaif"], "{mode} {name}: a temporary left");
            assert_eq!(std::fs::read_to_string(&output).expect("kept"), "older", "{mode} {name}");
        }
    }
}

/// Six large inputs on one thread: the signal comes once the first has finished, so at least
/// one and fewer than all are in the report, each with its output, and no temporary is left.
#[test]
fn an_interrupted_batch_reports_what_finished_as_incomplete() {
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).expect("dir");
    for seed in 1..=6 {
        common::synthetic_input(&inputs.join(format!("p{seed}.xaif")), "2", seed);
    }
    let (out, report) = (dir.path().join("out"), dir.path().join("report.json"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_xaifbooster"))
        .args(["batch", "adjoint", "-j", "1", "--name", "*.xaif", "--out-dir"])
        .arg(&out)
        .arg("--report")
        .arg(&report)
        .arg(&inputs)
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let first = lines.next().expect("a progress line").expect("text");
    assert!(first.contains(" ok "), "{first}");
    signal(child.id(), "INT");
    let rest: Vec<String> = lines.map(|line| line.expect("text")).collect();
    let status = child.wait().expect("ends");
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert!(rest.iter().any(|line| line.contains("interrupted")), "{rest:?}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).expect("report written")).unwrap();
    assert_eq!(json["incomplete"], true);
    let files = json["files"].as_array().expect("files");
    assert!(!files.is_empty() && files.len() < 6, "{} files reported", files.len());
    for file in files {
        assert_eq!(file["status"], "ok");
        assert!(Path::new(file["output"].as_str().expect("a path")).is_file(), "{file}");
    }
    assert!(!entries(&out).iter().any(|name| name.starts_with('.')), "{:?}", entries(&out));
    assert_eq!(entries(&out).len(), files.len(), "outputs of the finished files only");
}
