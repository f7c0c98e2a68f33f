//! Validation of the whole corpus, as each transformation runs it before reading (the checks
//! that need no reader, without the activity check: `validate_without_reader`) and as
//! `validate` runs it on an output (the activity check included, then the reader), side by
//! side with quick-xml tokenizing the same bytes.

mod common;

use common::{corpus_inputs, interleaved_ratio, tokenize};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use xaifbooster::xaif::validate::{ValidateOptions, validate, validate_without_reader};

fn before_transformation(bytes: &[u8]) -> usize {
    let options = ValidateOptions { strict: false, activity: false };
    validate_without_reader(bytes, "bench", &options).len()
}

fn as_validate_does(bytes: &[u8]) -> usize {
    validate(bytes, "bench", &ValidateOptions::default()).len()
}

fn bench(c: &mut Criterion) {
    let inputs = corpus_inputs("tlm.in.xaif");
    let outputs = corpus_inputs("tlm.ref.xaif");
    let floor = |docs: &[Vec<u8>]| docs.iter().map(|d| tokenize(d)).sum::<usize>();
    let ratio = interleaved_ratio(|| floor(&inputs), || inputs.iter().map(|i| before_transformation(i)).sum());
    eprintln!(
        "validate_corpus: checks before a transformation / tokenize = {ratio:.2} (interleaved, median of 31 rounds)"
    );
    let ratio = interleaved_ratio(|| floor(&outputs), || outputs.iter().map(|o| as_validate_does(o)).sum());
    eprintln!("validate_corpus: validate of the references / tokenize = {ratio:.2} (interleaved, median of 31 rounds)");
    let mut group = c.benchmark_group("validate_corpus");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(inputs.iter().map(|b| b.len() as u64).sum()));
    group.bench_function("tokenize_inputs", |b| b.iter(|| floor(&inputs)));
    group.bench_function("checks_before_transformation", |b| {
        b.iter(|| inputs.iter().map(|i| before_transformation(i)).sum::<usize>())
    });
    group.throughput(Throughput::Bytes(outputs.iter().map(|b| b.len() as u64).sum()));
    group.bench_function("tokenize_references", |b| b.iter(|| floor(&outputs)));
    group.bench_function("validate_references", |b| {
        b.iter(|| outputs.iter().map(|o| as_validate_does(o)).sum::<usize>())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
