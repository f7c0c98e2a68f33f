//! Tangent-linear mode over the corpus: every input transforms, and every output is valid XAIF.

mod common;

use common::*;
use xaifbooster::passes::tangent::{Preaccumulation, TangentConfig};
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

fn transform_corpus(config: &TangentConfig) -> (Vec<std::path::PathBuf>, Vec<String>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut written = Vec::new();
    let mut failures = Vec::new();
    for input in corpus_files("tlm.in.xaif") {
        let bytes = std::fs::read(&input).expect("readable");
        let name = short_name(&input);
        let mut cg = match xaif::read(&bytes, &name, &ReadOptions::default()) {
            Ok(read) => read.call_graph,
            Err(error) => {
                failures.push(format!("{name}: {error}"));
                continue;
            }
        };
        if let Err(error) = xaifbooster::pipeline::tangent(
            &mut cg,
            Catalogue::builtin(),
            &xaifbooster::pipeline::Config::with_tangent(config.clone()),
        ) {
            failures.push(format!("{name}: {error}"));
            continue;
        }
        let out = dir.path().join(name.replace('/', "__"));
        std::fs::write(&out, xaif::write(&cg, &WriteOptions::default())).expect("write output");
        written.push(out);
    }
    (written, failures, dir)
}

#[test]
fn every_corpus_input_transforms_to_schema_valid_tangent_code() {
    for preaccumulation in [Preaccumulation::BasicBlock, Preaccumulation::Statement] {
        let config = TangentConfig { preaccumulation, ..TangentConfig::default() };
        let (written, failures, _dir) = transform_corpus(&config);
        assert!(failures.is_empty(), "{preaccumulation:?}: transformation failures: {failures:#?}");
        assert!(written.len() >= 190, "{preaccumulation:?}: {} outputs", written.len());
        let invalid = xmllint_failures(&written);
        assert!(invalid.is_empty(), "{preaccumulation:?}: invalid outputs: {invalid:#?}");
    }
}

#[test]
fn tangent_output_is_deterministic() {
    let inputs = corpus_files("tlm.in.xaif");
    for input in inputs.iter().step_by(11) {
        let bytes = std::fs::read(input).expect("readable");
        let run = || {
            let mut cg = xaif::read(&bytes, "x", &ReadOptions::default()).expect("read").call_graph;
            xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &xaifbooster::pipeline::Config::default())
                .expect("tangent");
            xaif::write(&cg, &WriteOptions::default())
        };
        assert!(run() == run(), "{}: two runs differ", short_name(input));
    }
}
