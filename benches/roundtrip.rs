//! Reading XAIF into the object model and writing it back, side by side with quick-xml merely
//! tokenizing the same bytes (events read and dropped: the floor for any XML tool). Inputs: the
//! largest corpus files, the large example, and synthetic files of 1, 10 and 100 MiB made by
//! `scripts/gen_xaif.py`, so the growth of the cost with the size is visible.

mod common;

use std::path::{Path, PathBuf};

use common::{interleaved_ratio, shared, tokenize};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

/// A synthetic file of about `mb` MiB, generated once into target/.
fn synthetic(mb: u32) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/synthetic-{mb}mb.xaif"));
    if !path.exists() {
        let status = std::process::Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen_xaif.py"))
            .args(["--mb", &mb.to_string(), "--seed", "1", "-o"])
            .arg(&path)
            .status()
            .expect("python3 runs the generator");
        assert!(status.success(), "generator failed");
    }
    path
}

fn read_write(bytes: &[u8]) -> usize {
    let cg = xaif::read(bytes, "bench", &ReadOptions::default()).expect("valid input").call_graph;
    xaif::write(&cg, &WriteOptions::default()).len()
}

fn bench(c: &mut Criterion) {
    let shared = shared();
    let mut inputs = vec![
        ("graphEx2", shared.join("corpus/graphEx2/tlm.in.xaif")),
        ("RoehFlux", shared.join("corpus/RoehFlux/tlm.in.xaif")),
        ("whole_box_model", shared.join("xaif/examples/whole_box_model.xaif")),
        ("synthetic_1mb", synthetic(1)),
        ("synthetic_10mb", synthetic(10)),
    ];
    if std::env::var_os("XAIF_BENCH_100MB").is_some() {
        inputs.push(("synthetic_100mb", synthetic(100)));
    }
    let mut group = c.benchmark_group("roundtrip");
    for (name, path) in inputs {
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if bytes.len() < 5 << 20 {
            let ratio = interleaved_ratio(|| tokenize(&bytes), || read_write(&bytes));
            eprintln!("roundtrip/{name}: read_write / tokenize = {ratio:.2} (interleaved, median of 31 rounds)");
        }
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.sample_size(if bytes.len() > 5 << 20 { 10 } else { 30 });
        group.bench_with_input(BenchmarkId::new("tokenize", name), &bytes, |b, bytes| b.iter(|| tokenize(bytes)));
        group.bench_with_input(BenchmarkId::new("read_write", name), &bytes, |b, bytes| b.iter(|| read_write(bytes)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
