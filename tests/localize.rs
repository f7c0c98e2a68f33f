//! Locating a wrong derivative (`interp::localize`): the dual-number run of the original is
//! itself checked against the verified Jacobians of the corpus, localization must name nothing
//! where the derivatives are right, and through the binary `verify` must name the statement
//! (tangent) or the routine (adjoint) a mutation broke.

mod common;

use std::path::{Path, PathBuf};

use xaifbooster::interp::Template;
use xaifbooster::interp::localize::{self, Localization};
use xaifbooster::interp::verify::{Driver, Mode, Status, VerifyConfig, read_program, verify};
use xaifbooster::passes::adjoint::AdjointConfig;
use xaifbooster::pipeline::Config;
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

/// Our tangent (or joint adjoint, `-I`) output of a corpus example, or `None` when the
/// transformation refuses it.
fn transform(dir: &Path, mode: Mode) -> Option<Vec<u8>> {
    let name = if mode == Mode::Tangent { "tlm.in.xaif" } else { "adm.in.xaif" };
    let bytes = std::fs::read(dir.join(name)).ok()?;
    let mut cg = xaif::read(&bytes, name, &ReadOptions::default()).ok()?.call_graph;
    match mode {
        Mode::Tangent => {
            xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &Config::default()).ok()?;
        }
        Mode::Adjoint => {
            let config = Config {
                adjoint: AdjointConfig { all_intents_inout: true, ..AdjointConfig::default() },
                ..Config::default()
            };
            xaifbooster::pipeline::adjoint(&mut cg, Catalogue::builtin(), &config).ok()?;
        }
    }
    Some(xaif::write(&cg, &WriteOptions::default()))
}

fn example_dirs(input: &str) -> Vec<PathBuf> {
    common::corpus_files(input).iter().map(|f| f.parent().expect("example folder").to_owned()).collect()
}

fn name(dir: &Path) -> String {
    dir.file_name().expect("example folder").to_string_lossy().into_owned()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-8 * a.abs().max(b.abs()).max(1.0)
}

/// On every example whose tangent verifies, the original run with dual numbers gives the same
/// Jacobian as the tangent program (an independent check of the dual numbers: no
/// transformation is involved in them), and localization in every direction finds nothing.
#[test]
fn dual_numbers_agree_with_every_verified_tangent() {
    let (mut checked, mut directions) = (0, 0);
    let mut failures = Vec::new();
    for dir in example_dirs("tlm.in.xaif") {
        let example = name(&dir);
        let Some(output) = transform(&dir, Mode::Tangent) else { continue };
        let original = read_program(&std::fs::read(dir.join("tlm.in.xaif")).unwrap(), &example).expect("reads");
        let transformed = read_program(&output, &example).expect("output reads");
        let config = common::verify_config(&dir, &original, Mode::Tangent, Template::Joint);
        let report = verify(&original, &transformed, &config);
        if report.status != Status::Ok {
            continue;
        }
        assert!(report.localized.is_none(), "{example}: localized though OK");
        let orig = Driver::new(&original, &config.driver).expect("driver");
        let trans = Driver::new(&transformed, &config.driver).expect("driver");
        let x = orig.default_x();
        let dual = match localize::dual_jacobian(&orig, &x) {
            Ok(j) => j,
            Err(e) => {
                failures.push(format!("{example}: dual run fails: {e}"));
                continue;
            }
        };
        let verified = report.jacobian();
        assert_eq!(dual.len(), verified.len());
        if let Some(k) = (0..dual.len()).find(|&k| !close(dual[k], verified[k])) {
            failures.push(format!("{example}: entry {k}: dual {} vs verified {}", dual[k], verified[k]));
            continue;
        }
        checked += 1;
        for direction in 0..orig.n {
            directions += 1;
            match localize::tangent(&orig, &trans, &x, direction, config.rtol) {
                Localization::NotFound { reason } if reason.contains("agree") => {}
                other => failures.push(format!("{example}: direction {direction}: {other}")),
            }
        }
    }
    eprintln!("dual Jacobians checked on {checked} examples, {directions} directions localized to nothing");
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(checked >= 150, "only {checked} tangent-OK examples checked");
}

/// On every example whose joint adjoint verifies, every routine call passes the dot-product
/// test against exact tangents.
#[test]
fn every_routine_of_a_verified_adjoint_passes_the_dot_product_test() {
    let (mut checked, mut failures) = (0, Vec::new());
    for dir in example_dirs("adm.in.xaif") {
        let example = name(&dir);
        let Some(output) = transform(&dir, Mode::Adjoint) else { continue };
        let original = read_program(&std::fs::read(dir.join("adm.in.xaif")).unwrap(), &example).expect("reads");
        let transformed = read_program(&output, &example).expect("output reads");
        let config: VerifyConfig = common::verify_config(&dir, &original, Mode::Adjoint, Template::Joint);
        if verify(&original, &transformed, &config).status != Status::Ok {
            continue;
        }
        let orig = Driver::new(&original, &config.driver).expect("driver");
        let adj = Driver::new(&transformed, &config.driver).expect("driver");
        match localize::adjoint(&orig, &adj, &orig.default_x(), config.rtol) {
            Localization::NotFound { reason } if reason.contains("passes") => checked += 1,
            other => failures.push(format!("{example}: {other}")),
        }
    }
    eprintln!("per-routine dot-product tests pass on {checked} adjoint-OK examples");
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(checked >= 140, "only {checked} adjoint-OK examples checked");
}
