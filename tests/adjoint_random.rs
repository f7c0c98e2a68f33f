//! Random programs, reversed and verified: the adjoint of every generated program (loops,
//! branches, loop-subscripted elements, calls with checkpoints and conversions; see
//! `interp_support`) must give the Jacobian finite differences give, under both reversal
//! templates. Minimized failures live in `testdata/random` (`random_regressions.rs`).

#[path = "interp_support/mod.rs"]
mod support;

use proptest::prelude::*;
use xaifbooster::interp::Template;
use xaifbooster::interp::verify::{DriverConfig, Mode, Status, VerifyConfig, read_program, verify};
use xaifbooster::pipeline::Config;
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

fn reverse(source: &str) -> Vec<u8> {
    let mut cg =
        xaif::read(source.as_bytes(), "random", &ReadOptions::default()).expect("generated XAIF reads").call_graph;
    xaifbooster::pipeline::adjoint(&mut cg, Catalogue::builtin(), &Config::default()).expect("adjoint transformation");
    xaif::write(&cg, &WriteOptions::default())
}

proptest! {
    // Failures shrink far: a reproducer worth saving is a small one.
    #![proptest_config(ProptestConfig { cases: 256, max_shrink_iters: 4096, ..ProptestConfig::default() })]
    #[test]
    fn random_programs_reverse_correctly(p in support::program()) {
        let source = p.to_xaif();
        let original = read_program(source.as_bytes(), "random").expect("original runs");
        let transformed = reverse(&source);
        let transformed = read_program(&transformed, "random adjoint").expect("adjoint output loads");
        for template in [Template::Joint, Template::Split] {
            let config = VerifyConfig {
                mode: Mode::Adjoint,
                rtol: 1e-5,
                driver: DriverConfig { template, ..DriverConfig::default() },
            };
            let report = verify(&original, &transformed, &config);
            // A generated program can leave its domain (a value squared in a loop until it
            // overflows): the original itself fails there, which says nothing of the
            // transformation; such a case is discarded, never passed.
            prop_assume!(!matches!(&report.status, Status::Unsupported(why) if why.starts_with("original program fails")));
            prop_assert!(matches!(report.status, Status::Ok), "{:?}: {}\n{}", template, report.final_line(), source);
        }
    }
}
