//! Minimized programs on which the random tests (`tangent_random.rs`, `adjoint_random.rs`) failed,
//! kept in `testdata/random/` with a comment saying what went wrong. Each is transformed in
//! tangent mode (both preaccumulations) and adjoint mode (both reversal templates) and verified
//! against finite differences; a check listed as known-failing must still fail with today's
//! verify line (FIXME entries: flip them to passing when the pass is fixed), every other check
//! must pass.

use xaifbooster::interp::Template;
use xaifbooster::interp::verify::{DriverConfig, Mode, Status, VerifyConfig, read_program, verify};
use xaifbooster::passes::tangent::{Preaccumulation, TangentConfig};
use xaifbooster::pipeline::Config;
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    Tangent(Preaccumulation),
    Adjoint(Template),
}

const CHECKS: [Check; 4] = [
    Check::Tangent(Preaccumulation::BasicBlock),
    Check::Tangent(Preaccumulation::Statement),
    Check::Adjoint(Template::Joint),
    Check::Adjoint(Template::Split),
];

/// Every file of `testdata/random` with the checks that fail today and their verify lines.
const CASES: &[(&str, &[(Check, &str)])] = &[
    // The split adjoint pushed the subscript of a call's array-element argument before the
    // call and popped it before the callee's adjoint, trading values with whatever the callee
    // taped on the integer tape (loop counts, branches). Fixed: pushed after the call.
    ("split_call_subscript_wrong_jacobian", &[]),
    ("split_call_subscript_out_of_bounds", &[]),
    ("split_call_subscript_branch_edge", &[]),
];

/// The verify line of one check; `Ok` carries the line too, for the failure message.
fn run(source: &[u8], check: Check) -> (bool, String) {
    let original = read_program(source, "original").expect("original runs");
    let mut cg = xaif::read(source, "random", &ReadOptions::default()).expect("reproducer reads").call_graph;
    let (mode, template) = match check {
        Check::Tangent(preaccumulation) => {
            let config = Config::with_tangent(TangentConfig { preaccumulation, ..TangentConfig::default() });
            xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &config).expect("tangent transformation");
            (Mode::Tangent, Template::Joint)
        }
        Check::Adjoint(template) => {
            xaifbooster::pipeline::adjoint(&mut cg, Catalogue::builtin(), &Config::default())
                .expect("adjoint transformation");
            (Mode::Adjoint, template)
        }
    };
    let transformed = read_program(&xaif::write(&cg, &WriteOptions::default()), "transformed").expect("output loads");
    let config = VerifyConfig { mode, rtol: 1e-5, driver: DriverConfig { template, ..DriverConfig::default() } };
    let report = verify(&original, &transformed, &config);
    (matches!(report.status, Status::Ok), report.final_line())
}

#[test]
fn reproducers_behave_as_recorded() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/random");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("testdata/random")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "xaif"))
        .map(|p| p.file_stem().expect("file name").to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut listed: Vec<&str> = CASES.iter().map(|(name, _)| *name).collect();
    listed.sort_unstable();
    assert_eq!(names, listed, "every reproducer in testdata/random needs an entry in CASES");
    let mut problems = Vec::new();
    for (name, failing) in CASES {
        let source = std::fs::read(format!("{dir}/{name}.xaif")).expect("reproducer");
        for check in CHECKS {
            let (ok, line) = run(&source, check);
            match failing.iter().find(|(c, _)| *c == check) {
                None if !ok => problems.push(format!("{name} {check:?}: {line}")),
                Some((_, expected)) if ok || line != *expected => {
                    problems.push(format!("{name} {check:?}: recorded as failing with `{expected}`, now: {line}"))
                }
                _ => {}
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
