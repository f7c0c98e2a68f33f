//! Our tangent-linear outputs must pass the activity check: every real argument as active as
//! its formal, only passive reals to external routines, derivatives only of active symbols —
//! otherwise the unparsed Fortran does not compile. The front end leaves mismatches at calls
//! (see `INPUTS_WITH_ACTIVITY_MISMATCHES` in `validate_corpus.rs`); the TypeChange pass is what
//! removes them with `oad_convert` conversions.

mod common;

use common::*;
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::validate::check_activity;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

#[test]
fn tangent_outputs_pass_the_activity_check() {
    let inputs = corpus_files("tlm.in.xaif");
    assert!(inputs.len() >= 190, "only {} inputs", inputs.len());
    let mut flagged = Vec::new();
    let mut count = 0;
    for input in &inputs {
        let name = short_name(input);
        let bytes = std::fs::read(input).expect("readable");
        let mut cg = xaif::read(&bytes, &name, &ReadOptions::default()).expect("corpus inputs read").call_graph;
        xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &xaifbooster::pipeline::Config::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let output = xaif::write(&cg, &WriteOptions::default());
        let findings = check_activity(&output, &format!("tangent of {name}"));
        if !findings.is_empty() {
            count += findings.len();
            let lines: Vec<String> = findings.iter().map(|f| format!("  {f}")).collect();
            flagged.push(format!("{name}: {} findings\n{}", findings.len(), lines.join("\n")));
        }
    }
    assert!(
        flagged.is_empty(),
        "{count} activity findings in {} of {} tangent outputs:\n{}",
        flagged.len(),
        inputs.len(),
        flagged.join("\n")
    );
}
