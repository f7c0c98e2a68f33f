//! Adjoint transformation of the whole corpus (read, adjoint, write), side by side with
//! quick-xml merely tokenizing the same files, and of a large synthetic input.

mod common;

use common::{interleaved_ratio, shared, tokenize};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use xaifbooster::passes::adjoint::AdjointConfig;
use xaifbooster::pipeline::Config;
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

fn corpus_inputs() -> Vec<Vec<u8>> {
    let corpus = shared().join("corpus");
    let entries = std::fs::read_dir(&corpus).unwrap_or_else(|e| panic!("{}: {e} (set XAIF_SHARED)", corpus.display()));
    let mut paths: Vec<_> =
        entries.map(|e| e.expect("entry").path().join("adm.in.xaif")).filter(|p| p.is_file()).collect();
    paths.sort();
    paths.iter().map(|p| std::fs::read(p).expect("readable input")).collect()
}

fn transform(bytes: &[u8]) -> usize {
    let Ok(read) = xaif::read(bytes, "bench", &ReadOptions::default()) else { return 0 };
    let mut cg = read.call_graph;
    let config =
        Config { adjoint: AdjointConfig { all_intents_inout: true, ..Default::default() }, ..Config::default() };
    xaifbooster::pipeline::adjoint(&mut cg, Catalogue::builtin(), &config).expect("adjoint");
    xaif::write(&cg, &WriteOptions::default()).len()
}

fn bench(c: &mut Criterion) {
    let inputs = corpus_inputs();
    let total: u64 = inputs.iter().map(|b| b.len() as u64).sum();
    let floor = || inputs.iter().map(|i| tokenize(i)).sum::<usize>();
    let ratio = interleaved_ratio(floor, || inputs.iter().map(|i| transform(i)).sum::<usize>());
    eprintln!("adjoint_corpus: read_adjoint_write / tokenize = {ratio:.2} (interleaved, median of 31 rounds)");
    let mut group = c.benchmark_group("adjoint_corpus");
    group.throughput(Throughput::Bytes(total));
    group.sample_size(20);
    group.bench_function("tokenize", |b| b.iter(|| inputs.iter().map(|i| tokenize(i)).sum::<usize>()));
    group.bench_function("read_adjoint_write", |b| b.iter(|| inputs.iter().map(|i| transform(i)).sum::<usize>()));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
