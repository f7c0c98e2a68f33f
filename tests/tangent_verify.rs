//! Our tangent-linear outputs, executed: every corpus example whose reference tangent verifies
//! must verify with ours too, and the multiplication count must stay below the reference's.

mod common;

use std::path::PathBuf;

use xaifbooster::interp::Template;
use xaifbooster::interp::verify::{Mode, Status, read_program, verify};
use xaifbooster::passes::tangent::{Preaccumulation, TangentConfig};
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

fn verify_bytes(dir: &std::path::Path, transformed: &[u8]) -> Status {
    let name = dir.display().to_string();
    let original = match read_program(&std::fs::read(dir.join("tlm.in.xaif")).expect("input"), &name) {
        Ok(program) => program,
        Err(why) => return Status::Unsupported(why),
    };
    let transformed = match read_program(transformed, &name) {
        Ok(program) => program,
        Err(why) => return Status::Unsupported(why),
    };
    verify(&original, &transformed, &common::verify_config(dir, &original, Mode::Tangent, Template::Joint)).status
}

/// With the reference engine's own catalogue (`-c`), whose partials are written differently
/// (some in terms of the intrinsic's value), the outputs must verify just the same.
#[test]
fn tangent_code_verifies_with_the_reference_catalogue() {
    let shared = common::shared_dir();
    let bytes = std::fs::read(shared.join("xaif/intrinsics/inlinable_intrinsics.xaif")).expect("reference catalogue");
    let mut catalogue = Catalogue::parse(&bytes, "reference catalogue").expect("reference catalogue parses");
    let bytes = std::fs::read(shared.join("xaif/intrinsics/noninlinable_intrinsics.xaif")).expect("catalogue");
    catalogue.merge_noninlinable(&bytes, "reference catalogue").expect("non-inlinable catalogue parses");
    check_corpus(&catalogue, &TangentConfig::default());
}

#[test]
fn our_tangent_code_verifies_wherever_the_reference_does() {
    for preaccumulation in [Preaccumulation::BasicBlock, Preaccumulation::Statement] {
        let config = TangentConfig { preaccumulation, ..TangentConfig::default() };
        check_corpus(Catalogue::builtin(), &config);
    }
}

/// Each elimination method's code, not only the one best-of picks, must be right.
#[test]
fn every_elimination_method_generates_correct_code() {
    use xaifbooster::passes::elimination::ALL;
    for elimination in ALL {
        let config = TangentConfig { elimination, ..TangentConfig::default() };
        check_corpus(Catalogue::builtin(), &config);
    }
}

fn check_corpus(catalogue: &Catalogue, config: &TangentConfig) {
    {
        let preaccumulation = config.preaccumulation;
        let mut ours_ok = 0;
        let mut reference_ok = 0;
        let mut regressions = Vec::new();
        let dirs: Vec<PathBuf> =
            common::corpus_files("tlm.in.xaif").iter().map(|f| f.parent().unwrap().to_owned()).collect();
        for dir in &dirs {
            let input = std::fs::read(dir.join("tlm.in.xaif")).expect("input");
            let mut cg = xaif::read(&input, "in", &ReadOptions::default()).expect("corpus inputs read").call_graph;
            xaifbooster::pipeline::tangent(
                &mut cg,
                catalogue,
                &xaifbooster::pipeline::Config::with_tangent(config.clone()),
            )
            .expect("tangent transformation");
            let ours = verify_bytes(dir, &xaif::write(&cg, &WriteOptions::default()));
            let reference = verify_bytes(dir, &std::fs::read(dir.join("tlm.ref.xaif")).expect("reference"));
            let ok = |s: &Status| matches!(s, Status::Ok);
            ours_ok += usize::from(ok(&ours));
            reference_ok += usize::from(ok(&reference));
            if ok(&reference) && !ok(&ours) {
                regressions.push(format!("{}: {ours:?}", dir.file_name().unwrap().to_string_lossy()));
            }
        }
        eprintln!(
            "{preaccumulation:?} {:?}: ours OK {ours_ok}/{}, reference OK {reference_ok}",
            config.elimination,
            dirs.len()
        );
        assert!(regressions.is_empty(), "{config:?}: reference verifies but ours does not: {regressions:#?}");
        assert!(ours_ok >= reference_ok);
    }
}

/// The executor's hand-written programs (branches, calls with sections, matrices, arrays
/// without declared bounds, transpose): our tangent code of each verifies.
#[test]
fn hand_written_programs_differentiate_correctly() {
    use xaifbooster::interp::verify::VerifyConfig;
    for name in ["constructs.xaif", "matrix_bounds.xaif", "automatic_array.xaif", "transpose.xaif"] {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/interp/").to_owned() + name;
        let input = std::fs::read(&path).expect("test program");
        let mut cg = xaif::read(&input, name, &ReadOptions::default()).expect("test program reads").call_graph;
        xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &xaifbooster::pipeline::Config::default())
            .expect("tangent");
        let original = read_program(&input, name).expect("original lowers");
        let transformed = read_program(&xaif::write(&cg, &WriteOptions::default()), name).expect("output lowers");
        let report = verify(&original, &transformed, &VerifyConfig { mode: Mode::Tangent, ..VerifyConfig::default() });
        assert!(matches!(report.status, Status::Ok), "{name}: {:?}", report.status);
    }
}

/// The README's example, end to end through the command line: transform, then verify.
#[test]
fn readme_example_differentiates_and_verifies_through_the_cli() {
    let binary = env!("CARGO_BIN_EXE_xaifbooster");
    let input = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/examples/head.xaif");
    let dir = tempfile::tempdir().expect("temp dir");
    let output = dir.path().join("head.tlm.xaif");
    let stats = dir.path().join("stats.json");
    let status = std::process::Command::new(binary)
        .args(["tangent", "-i", input, "-o"])
        .arg(&output)
        .arg("--stats")
        .arg(&stats)
        .status()
        .expect("binary runs");
    assert!(status.success());
    let stats = std::fs::read_to_string(&stats).expect("stats written");
    assert!(stats.contains("\"totals\""), "{stats}");
    let verify = std::process::Command::new(binary)
        .args(["verify", "--original", input, "--transformed"])
        .arg(&output)
        .args(["--mode", "tangent"])
        .output()
        .expect("binary runs");
    let text = String::from_utf8_lossy(&verify.stdout);
    assert!(verify.status.success(), "{text}");
    assert!(text.lines().last().is_some_and(|l| l.starts_with("verify: OK")), "{text}");
}

/// Multiplications per derivative direction the transformation adds: mul/div intrinsics of the
/// output minus those of the input, plus one per `AX` term of the propagators.
fn tangent_cost(input: &str, output: &str) -> i64 {
    let multiplications = |text: &str| {
        text.matches("<xaif:Intrinsic")
            .zip(text.split("<xaif:Intrinsic").skip(1))
            .filter(|(_, rest)| {
                let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
                tag.contains("name=\"mul_scal_scal\"") || tag.contains("name=\"div_scal_scal\"")
            })
            .count() as i64
    };
    multiplications(output) - multiplications(input) + output.matches("<xaif:AX>").count() as i64
}

#[test]
fn tangent_code_costs_at_most_eight_tenths_of_the_reference() {
    let (mut ours, mut reference) = (0, 0);
    for input in common::corpus_files("tlm.in.xaif") {
        let dir = input.parent().expect("example folder");
        let source = std::fs::read_to_string(&input).expect("input");
        let mut cg = xaif::read(source.as_bytes(), "in", &ReadOptions::default()).expect("reads").call_graph;
        xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &xaifbooster::pipeline::Config::default())
            .expect("tangent");
        let output = String::from_utf8(xaif::write(&cg, &WriteOptions::default())).expect("UTF-8");
        ours += tangent_cost(&source, &output);
        reference += tangent_cost(&source, &std::fs::read_to_string(dir.join("tlm.ref.xaif")).expect("reference"));
    }
    eprintln!("tangent cost: ours {ours}, reference {reference}, ratio {:.3}", ours as f64 / reference as f64);
    assert!(ours * 10 <= reference * 8, "ours {ours} vs reference {reference}");
}
