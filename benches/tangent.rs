//! Tangent-linear transformation of the whole corpus (read, transform, write), side by side
//! with quick-xml merely tokenizing the same files: the floor any XML-to-XML tool pays.

mod common;

use common::{corpus_inputs, interleaved_ratio, tokenize};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

fn transform(bytes: &[u8]) -> usize {
    let mut cg = xaif::read(bytes, "bench", &ReadOptions::default()).expect("corpus input").call_graph;
    xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &xaifbooster::pipeline::Config::default())
        .expect("tangent");
    xaif::write(&cg, &WriteOptions::default()).len()
}

/// The same routine by routine (`driver::stream`), routines written to a buffer as they are done.
fn stream(bytes: &[u8]) -> usize {
    let mut body = Vec::with_capacity(bytes.len() * 2);
    let streamed = xaifbooster::driver::stream::tangent(
        bytes,
        "bench",
        &ReadOptions::default(),
        Catalogue::builtin(),
        &xaifbooster::pipeline::Config::default(),
        &WriteOptions::default(),
        &mut body,
        Default::default(),
    )
    .expect("tangent");
    streamed.bytes(&body).len()
}

fn bench(c: &mut Criterion) {
    let inputs = corpus_inputs("tlm.in.xaif");
    let total: u64 = inputs.iter().map(|b| b.len() as u64).sum();
    let floor = || inputs.iter().map(|i| tokenize(i)).sum::<usize>();
    let ratio = interleaved_ratio(floor, || inputs.iter().map(|i| transform(i)).sum::<usize>());
    eprintln!("tangent_corpus: read_tangent_write / tokenize = {ratio:.2} (interleaved, median of 31 rounds)");
    let ratio = interleaved_ratio(floor, || inputs.iter().map(|i| stream(i)).sum::<usize>());
    eprintln!("tangent_corpus: stream_tangent / tokenize = {ratio:.2} (interleaved, median of 31 rounds)");
    let mut group = c.benchmark_group("tangent_corpus");
    group.throughput(Throughput::Bytes(total));
    group.sample_size(20);
    group.bench_function("tokenize", |b| b.iter(|| inputs.iter().map(|i| tokenize(i)).sum::<usize>()));
    group.bench_function("read_write", |b| {
        b.iter(|| {
            inputs
                .iter()
                .map(|i| {
                    let cg = xaif::read(i, "bench", &ReadOptions::default()).expect("corpus input").call_graph;
                    xaif::write(&cg, &WriteOptions::default()).len()
                })
                .sum::<usize>()
        })
    });
    group.bench_function("read_tangent_write", |b| b.iter(|| inputs.iter().map(|i| transform(i)).sum::<usize>()));
    group.bench_function("stream_tangent", |b| b.iter(|| inputs.iter().map(|i| stream(i)).sum::<usize>()));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
