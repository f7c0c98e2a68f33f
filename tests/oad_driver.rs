//! xaifbooster as a drop-in for OpenAD's `oadDriver` binaries (issue 63): `install-drivers`
//! links the binary into the driver directories OpenAD calls
//! (`$XAIFBOOSTERROOT/xaifBooster/algorithms/<Algorithm>/driver/oadDriver`), and called through
//! a link with the original's switches and no subcommand it writes exactly what the
//! subcommand of that driver writes.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn xaifbooster() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xaifbooster"))
}

fn install(root: &Path) -> Output {
    xaifbooster().arg("install-drivers").arg(root).output().expect("the binary runs")
}

fn driver(root: &Path, algorithm_dir: &str) -> PathBuf {
    root.join(algorithm_dir).join("driver/oadDriver")
}

/// The reference catalogue OpenAD passes with -c.
fn catalogue() -> PathBuf {
    common::shared_dir().join("xaif/intrinsics/inlinable_intrinsics.xaif")
}

#[test]
fn a_driver_link_writes_what_its_subcommand_writes() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let root = dir.path().join("XAIFBOOSTERROOT");
    let installed = install(&root);
    assert!(installed.status.success(), "{}", String::from_utf8_lossy(&installed.stderr));
    let example = common::shared_dir().join("corpus/ConsFold");
    let cases: [(&str, &str, &str, &[&str]); 5] = [
        ("xaifBooster/system", "identity", "tlm.in.xaif", &[]),
        ("xaifBooster/algorithms/BasicBlockPreaccumulation", "tangent", "tlm.in.xaif", &[]),
        ("xaifBooster/algorithms/BasicBlockPreaccumulationReverse", "adjoint", "adm.in.xaif", &[]),
        ("xaifBooster/algorithms/BasicBlockPreaccumulationReverse", "adjoint", "adm.in.xaif", &["-I", "-P", "-f"]),
        ("xaifBooster/algorithms/TraceDiff", "trace", "tlm.in.xaif", &[]),
    ];
    for (algorithm, mode, input, extra) in cases {
        let link = driver(&root, algorithm);
        assert!(std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()), "{}", link.display());
        let (by_link, by_command) = (dir.path().join("by_link.xaif"), dir.path().join("by_command.xaif"));
        // As OpenAD's `openad` script calls a driver: -c -s -i -o, no subcommand.
        let switches = |out: &Path| {
            let mut args = vec!["-c".into(), catalogue().into_os_string(), "-s".into(), "/opt/xaif/schema".into()];
            args.extend(["-i".into(), example.join(input).into_os_string(), "-o".into(), out.as_os_str().to_owned()]);
            args.extend(extra.iter().map(Into::into));
            args
        };
        let linked = Command::new(&link).args(switches(&by_link)).output().expect("the link runs");
        assert!(linked.status.success(), "{mode} by link: {}", String::from_utf8_lossy(&linked.stderr));
        let direct = xaifbooster().arg(mode).args(switches(&by_command)).output().expect("the binary runs");
        assert!(direct.status.success(), "{mode}: {}", String::from_utf8_lossy(&direct.stderr));
        let (a, b) = (std::fs::read(&by_link).expect("link output"), std::fs::read(&by_command).expect("output"));
        assert!(!a.is_empty() && a == b, "{mode} {extra:?}: the link's output differs from the subcommand's");
        assert!(String::from_utf8_lossy(&a).contains(" /opt/xaif/schema/xaif"), "-s was taken");
    }
    // Called by a relative path from its own directory, as a Makefile might.
    let tangent_dir = root.join("xaifBooster/algorithms/BasicBlockPreaccumulation/driver");
    let relative = Command::new("./oadDriver")
        .current_dir(&tangent_dir)
        .args(["-i".as_ref(), example.join("tlm.in.xaif").as_os_str(), "-o".as_ref(), "rel.xaif".as_ref()])
        .output()
        .expect("the link runs");
    assert!(relative.status.success(), "{}", String::from_utf8_lossy(&relative.stderr));
    let text = std::fs::read_to_string(tangent_dir.join("rel.xaif")).expect("output");
    assert!(text.contains("DerivativePropagator"), "the relative call ran the tangent mode");
}

#[test]
fn installing_again_renews_the_links_and_never_replaces_another_file() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let root = dir.path().join("root");
    assert!(install(&root).status.success());
    let again = install(&root);
    assert!(again.status.success(), "a second install: {}", String::from_utf8_lossy(&again.stderr));
    // An original engine's binary in one place: refused, that file untouched, nothing added.
    let other = dir.path().join("other");
    let original = driver(&other, "xaifBooster/algorithms/BasicBlockPreaccumulationReverse");
    std::fs::create_dir_all(original.parent().expect("dir")).expect("mkdir");
    std::fs::write(&original, b"the original engine").expect("write");
    let refused = install(&other);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains(&format!("{} exists and is not a link to", original.display())), "{stderr}");
    assert_eq!(std::fs::read(&original).expect("kept"), b"the original engine");
    assert!(!driver(&other, "xaifBooster/system").exists(), "nothing installed after a refusal");
    let leftovers: Vec<_> = std::fs::read_dir(original.parent().expect("dir")).expect("list").collect();
    assert_eq!(leftovers.len(), 1, "no temporary link left");
}

#[test]
fn a_driver_of_an_algorithm_we_lack_says_so() {
    let dir = tempfile::tempdir().expect("temporary directory");
    // OpenAD builds other algorithms' drivers too (MemOpsTradeoffPreaccumulation, …).
    let other = driver(dir.path(), "xaifBooster/algorithms/MemOpsTradeoffPreaccumulation");
    std::fs::create_dir_all(other.parent().expect("dir")).expect("mkdir");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_xaifbooster"), &other).expect("link");
    let output = Command::new(&other).args(["-i", "in.xaif"]).output().expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("MemOpsTradeoffPreaccumulation driver") && stderr.contains("TraceDiff"), "{stderr}");
}
