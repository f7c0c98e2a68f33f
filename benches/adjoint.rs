//! Adjoint transformation of the whole corpus (read, adjoint, write), side by side with
//! quick-xml merely tokenizing the same files.

mod common;

use common::{corpus_inputs, interleaved_ratio, tokenize};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use xaifbooster::passes::adjoint::{AdjointConfig, TapeStrategy};
use xaifbooster::pipeline::Config;
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

/// The default strategy, as `xaifbooster adjoint` runs it.
fn transform(bytes: &[u8]) -> usize {
    transform_with(bytes, TapeStrategy::default())
}

fn transform_with(bytes: &[u8], tape: TapeStrategy) -> usize {
    let Ok(read) = xaif::read(bytes, "bench", &ReadOptions::default()) else { return 0 };
    let mut cg = read.call_graph;
    let config =
        Config { adjoint: AdjointConfig { all_intents_inout: true, tape, ..Default::default() }, ..Config::default() };
    xaifbooster::pipeline::adjoint(&mut cg, Catalogue::builtin(), &config).expect("adjoint");
    xaif::write(&cg, &WriteOptions::default()).len()
}

fn bench(c: &mut Criterion) {
    let inputs = corpus_inputs("adm.in.xaif");
    let total: u64 = inputs.iter().map(|b| b.len() as u64).sum();
    let floor = || inputs.iter().map(|i| tokenize(i)).sum::<usize>();
    let ratio = interleaved_ratio(floor, || inputs.iter().map(|i| transform(i)).sum::<usize>());
    eprintln!("adjoint_corpus: read_adjoint_write / tokenize = {ratio:.2} (interleaved, median of 31 rounds)");
    // What the to-be-recorded analysis and the values strategy cost over taping factors.
    let factors = || inputs.iter().map(|i| transform_with(i, TapeStrategy::Factors)).sum::<usize>();
    let best = || inputs.iter().map(|i| transform_with(i, TapeStrategy::Best)).sum::<usize>();
    let strategies = interleaved_ratio(factors, best);
    eprintln!("adjoint_corpus: --tape best / --tape factors = {strategies:.2} (interleaved, median of 31 rounds)");
    let mut group = c.benchmark_group("adjoint_corpus");
    group.throughput(Throughput::Bytes(total));
    group.sample_size(20);
    group.bench_function("tokenize", |b| b.iter(|| inputs.iter().map(|i| tokenize(i)).sum::<usize>()));
    group.bench_function("read_adjoint_write", |b| b.iter(|| inputs.iter().map(|i| transform(i)).sum::<usize>()));
    group.bench_function("read_adjoint_write_tape_factors", |b| {
        b.iter(|| inputs.iter().map(|i| transform_with(i, TapeStrategy::Factors)).sum::<usize>())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
