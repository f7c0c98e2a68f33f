//! Messages that say the real cause (issue 63): `run` of a file without derivative code says
//! so instead of printing zero derivatives as if they were the program's, whatever the file
//! is called; `-v` says which intrinsics catalogue a run uses; and the manual names no page
//! that does not exist.

mod common;

use std::process::Command;

fn xaifbooster(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_xaifbooster")).args(args).output().expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn run_of_an_untransformed_file_says_it_has_no_derivative_code() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let original = common::shared_dir().join("corpus/ConsFold/tlm.in.xaif");
    let original = original.to_str().expect("path");
    // Named like a tangent output, but untransformed: outputs only, and the note.
    let run = xaifbooster(&["run", original]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let (stdout, stderr) = (text(&run.stdout), text(&run.stderr));
    assert!(stdout.contains("y(1) = ") && !stdout.contains("dy("), "{stdout}");
    assert!(stderr.contains(&format!("note: {original} has no derivative code")), "{stderr}");
    assert!(!stderr.contains("Jacobian is entirely zero"), "{stderr}");
    // Its tangent, under a name that says nothing, and with the propagators as calls (-H):
    // derivatives, and no such note.
    for (name, switches) in [("plain.xaif", &[][..]), ("calls.xaif", &["-H"][..])] {
        let out = dir.path().join(name);
        let out = out.to_str().expect("path");
        let tangent = xaifbooster(&[&["tangent", original, "-o", out], switches].concat());
        assert!(tangent.status.success(), "{}", text(&tangent.stderr));
        let run = xaifbooster(&["run", out]);
        assert!(run.status.success(), "{}", text(&run.stderr));
        let dy = text(&run.stdout).lines().find(|l| l.starts_with("dy(1)/dx(1) = ")).map(str::to_owned);
        let value: f64 = dy.as_deref().and_then(|l| l.rsplit(' ').next()?.parse().ok()).expect("a derivative");
        assert!(value != 0.0, "{name}: {dy:?}");
        assert!(!text(&run.stderr).contains("no derivative code"), "{}", text(&run.stderr));
    }
    // The adjoint's replacement lists are derivative code too.
    let adm = common::shared_dir().join("corpus/ConsFold/adm-joint.ref.xaif");
    let run = xaifbooster(&["run", adm.to_str().expect("path")]);
    assert!(run.status.success() && text(&run.stdout).contains("dy(1)/dx(1) = "), "{}", text(&run.stderr));
    // -q keeps the note back.
    assert!(text(&xaifbooster(&["run", original, "-q"]).stderr).is_empty());
}

#[test]
fn the_manual_names_no_page_that_does_not_exist() {
    let man = xaifbooster(&["man"]);
    assert!(man.status.success());
    let roff = text(&man.stdout);
    assert!(!roff.contains("xaifbooster\\-"), "a page xaifbooster-<subcommand> named");
    // Every subcommand the manual lists has its section in the same page.
    let listed: Vec<&str> =
        roff.lines().filter_map(|l| l.strip_prefix("\\fBxaifbooster ")?.strip_suffix("\\fR")).collect();
    assert!(listed.contains(&"tangent") && listed.contains(&"install-drivers"), "{listed:?}");
    for name in listed {
        let section = format!(".SH \"{}\"", name.to_uppercase());
        assert!(roff.lines().any(|l| l == section), "{name} is listed but has no section {section}");
    }
}

#[test]
fn verbose_validation_names_the_catalogue_in_use_and_changes_no_output() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let input = common::shared_dir().join("corpus/ConsFold/tlm.in.xaif");
    let reference = common::shared_dir().join("xaif/intrinsics/inlinable_intrinsics.xaif");
    let (input, reference) = (input.to_str().expect("path"), reference.to_str().expect("path"));
    let out = |name: &str| dir.path().join(name).to_str().expect("path").to_owned();
    let builtin = xaifbooster(&["tangent", "-v", input, "-o", &out("v.xaif")]);
    assert!(builtin.status.success(), "{}", text(&builtin.stderr));
    let stderr = text(&builtin.stderr);
    assert!(stderr.contains("note: inlinable intrinsics catalogue: the built-in one (no -c)"), "{stderr}");
    assert!(stderr.contains("outputs can differ with and without -c"), "{stderr}");
    let given = xaifbooster(&["tangent", "-v", "-c", reference, input, "-o", &out("c.xaif")]);
    assert!(given.status.success(), "{}", text(&given.stderr));
    assert!(text(&given.stderr).contains(&format!("note: inlinable intrinsics catalogue: {reference} (-c)")));
    // Without -v, no note; the output is the same bytes either way.
    let quiet = xaifbooster(&["tangent", input, "-o", &out("plain.xaif")]);
    assert!(!text(&quiet.stderr).contains("catalogue"), "{}", text(&quiet.stderr));
    let read = |name: &str| std::fs::read(out(name)).expect("output");
    assert_eq!(read("v.xaif"), read("plain.xaif"));
}

/// The switches a mode's help lists, as `-X` words at the start of a help line.
fn listed_switches(mode: &str) -> Vec<String> {
    let help = xaifbooster(&[mode, "--help"]);
    assert!(help.status.success(), "{mode} --help: {}", text(&help.stderr));
    text(&help.stdout)
        .lines()
        .filter_map(|line| line.trim_start().split([',', ' ']).next().map(str::to_owned))
        .filter(|word| word.len() == 2 && word.starts_with('-'))
        .collect()
}

#[test]
fn each_mode_lists_only_the_switches_that_act_in_it_and_still_accepts_the_others() {
    let adjoint_only = ["-I", "-P", "-f", "-u", "-U", "-t"];
    let tangent_only = ["-H", "-C"];
    let cases: [(&str, &[&str], &[&str]); 4] = [
        ("tangent", &tangent_only, &adjoint_only),
        ("adjoint", &adjoint_only, &tangent_only),
        ("identity", &["-p", "-F"], &["-I", "-D", "-w", "-r", "-H"]),
        ("trace", &["-p", "-w", "-r"], &["-I", "-P", "-f", "-D"]),
    ];
    for (mode, shown, hidden) in cases {
        let listed = listed_switches(mode);
        for switch in shown {
            assert!(listed.iter().any(|s| s == switch), "{mode} --help lacks {switch}: {listed:?}");
        }
        for switch in hidden {
            assert!(!listed.iter().any(|s| s == switch), "{mode} --help lists {switch}: {listed:?}");
        }
    }
    // Hidden is not refused: OpenAD's scripts pass the same switches to every driver.
    let input = common::shared_dir().join("corpus/ConsFold/tlm.in.xaif");
    let tangent = xaifbooster(&["tangent", "-I", "-P", "-i", input.to_str().expect("path"), "-o", "/dev/null"]);
    assert!(tangent.status.success(), "{}", text(&tangent.stderr));
    assert!(text(&tangent.stderr).contains("-I (all argument intents inout) matters only to the adjoint mode"));
}
