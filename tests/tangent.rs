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

/// `best` tries only the heuristics that win somewhere (`elimination::heuristics`): on the
/// corpus and on synthetic input, under the tangent's and the adjoint's cost models, it must
/// find for every sequence a plan as cheap as the best of all ten heuristics (`every`), and the
/// tangent code must be `every`'s byte for byte (its two heuristics come first in the
/// tie-breaking order), so that the smaller set loses nothing on what it was measured on.
#[test]
fn best_plans_every_sequence_as_cheaply_as_every_heuristic() {
    use xaifbooster::passes::elimination::{CostModel, Method};
    let dir = tempfile::tempdir().expect("temp dir");
    let synthetic = dir.path().join("synthetic.xaif");
    synthetic_input(&synthetic, "1", 3);
    let mut inputs = corpus_files("tlm.in.xaif");
    inputs.push(synthetic);
    let transform = |bytes: &[u8], name: &str, tangent: TangentConfig| {
        let mut cg = xaif::read(bytes, name, &ReadOptions::default()).ok()?.call_graph;
        let config = xaifbooster::pipeline::Config { tangent, ..Default::default() };
        let report = xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &config).ok()?;
        Some((report, xaif::write(&cg, &WriteOptions::default())))
    };
    for model in [CostModel::UnitAware, CostModel::Adjoint] {
        let (mut sequences, mut dearer, mut other_code) = (0, Vec::new(), Vec::new());
        for input in &inputs {
            let bytes = std::fs::read(input).expect("readable input");
            let name = short_name(input);
            let compare = TangentConfig { compare_methods: true, cost_model: model, ..TangentConfig::default() };
            let Some((report, best_code)) = transform(&bytes, &name, compare) else { continue };
            for sequence in &report.tangent.sequences {
                let cost = |m: Method| sequence.method_costs.iter().find(|(x, _)| *x == m).map(|&(_, c)| c);
                let (Some(best), Some(every)) = (cost(Method::Best), cost(Method::Every)) else { continue };
                sequences += 1;
                if best != every {
                    dearer.push(format!("{name} {}: best {best}, every {every}", sequence.basic_block));
                }
            }
            if model == CostModel::UnitAware {
                let every = TangentConfig { elimination: Method::Every, ..TangentConfig::default() };
                let every_code = transform(&bytes, &name, every).expect("transforms as with best").1;
                if every_code != best_code {
                    other_code.push(name);
                }
            }
        }
        eprintln!("{model:?}: {sequences} sequences compared, best dearer on {}", dearer.len());
        // The corpus has 478 sequences, the synthetic input about 300.
        assert!(sequences > 700, "{model:?}: only {sequences} sequences compared");
        assert!(dearer.is_empty(), "{model:?}: best costs more than every on {dearer:?}");
        assert!(other_code.is_empty(), "best's tangent code is not every's in {other_code:?}");
    }
}
