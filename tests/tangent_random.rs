//! Random programs, differentiated and verified: the tangent-linear transformation of every
//! generated program (loops, branches, loop-subscripted elements, calls with conversions; see
//! `interp_support`) must give the Jacobian finite differences give.

#[path = "interp_support/mod.rs"]
mod support;

use proptest::prelude::*;
use xaifbooster::interp::verify::{Mode, Status, VerifyConfig, read_program, verify};
use xaifbooster::passes::tangent::{Preaccumulation, TangentConfig};
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

fn differentiate(source: &str, preaccumulation: Preaccumulation) -> Vec<u8> {
    let mut cg =
        xaif::read(source.as_bytes(), "random", &ReadOptions::default()).expect("generated XAIF reads").call_graph;
    xaifbooster::pipeline::tangent(
        &mut cg,
        Catalogue::builtin(),
        &xaifbooster::pipeline::Config::with_tangent(TangentConfig { preaccumulation, ..TangentConfig::default() }),
    )
    .expect("tangent transformation");
    xaif::write(&cg, &WriteOptions::default())
}

proptest! {
    // Failures shrink far: a reproducer worth saving is a small one.
    #![proptest_config(ProptestConfig { cases: 256, max_shrink_iters: 4096, ..ProptestConfig::default() })]
    #[test]
    fn random_programs_differentiate_correctly(p in support::program()) {
        let source = p.to_xaif();
        let original = read_program(source.as_bytes(), "random").expect("original runs");
        for preaccumulation in [Preaccumulation::BasicBlock, Preaccumulation::Statement] {
            let transformed = differentiate(&source, preaccumulation);
            let transformed = read_program(&transformed, "random tangent").expect("tangent output loads");
            let config = VerifyConfig { mode: Mode::Tangent, rtol: 1e-5, ..VerifyConfig::default() };
            let report = verify(&original, &transformed, &config);
            // A generated program can leave its domain (a value squared in a loop until it
            // overflows): the original itself fails there, which says nothing of the
            // transformation; such a case is discarded, never passed.
            prop_assume!(!matches!(&report.status, Status::Unsupported(why) if why.starts_with("original program fails")));
            prop_assert!(matches!(report.status, Status::Ok), "{:?}: {}\n{}", preaccumulation, report.final_line(), source);
        }
    }
}
