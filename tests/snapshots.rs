//! The emitted XAIF of a few small hand-written programs, held as reviewed snapshots
//! (`tests/snapshots/`): a change to any pass shows up here as a readable diff of the code it
//! writes. Review a change with `cargo insta review` (or rerun with `INSTA_UPDATE=always` and
//! read `git diff`); CI refuses a snapshot that differs.

use std::path::Path;

use xaifbooster::driver::{self, Mode, Options};
use xaifbooster::pipeline::Config;
use xaifbooster::xaif::intrinsics::Catalogue;

/// `testdata/<file>` run through the one driver in `mode`, as the command line runs it.
fn emitted(file: &str, mode: Mode) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata").join(file);
    let input = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let options = Options {
        catalogue: Catalogue::builtin(),
        strict: false,
        config: Config::default(),
        schema_location: mode.schema().to_owned(),
        threads: false,
    };
    let mut output = Vec::new();
    let run = driver::run(mode, &input, file, &mut output, &options);
    assert!(run.is_ok(), "{file} ({mode:?}): {:?}", run.err());
    String::from_utf8(output).expect("the writer writes UTF-8")
}

#[test]
fn identity_of_the_readme_example() {
    insta::assert_snapshot!(emitted("examples/head.xaif", Mode::Identity));
}

#[test]
fn tangent_of_the_readme_example() {
    insta::assert_snapshot!(emitted("examples/head.xaif", Mode::Tangent));
}

#[test]
fn adjoint_of_the_readme_example() {
    insta::assert_snapshot!(emitted("examples/head.xaif", Mode::Adjoint));
}

#[test]
fn tangent_of_a_passive_direct_action() {
    insta::assert_snapshot!(emitted("tangent/direct_action_passive.xaif", Mode::Tangent));
}

#[test]
fn adjoint_of_unstructured_control_flow() {
    insta::assert_snapshot!(emitted("adjoint/unstructured.xaif", Mode::Adjoint));
}
