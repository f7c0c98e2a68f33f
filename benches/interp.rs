//! Interpreter throughput on the largest corpus example: executed statements and control flow
//! steps per second for the original program and its tangent-linear reference output.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use xaifbooster::interp::verify::{Driver, DriverConfig, Sweep, read_program};

fn largest_example() -> std::path::PathBuf {
    let shared = std::env::var("XAIF_SHARED")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared")));
    let corpus = shared.join("corpus");
    let dirs = std::fs::read_dir(&corpus).unwrap_or_else(|e| panic!("{}: {e} (set XAIF_SHARED)", corpus.display()));
    dirs.map(|e| e.expect("entry").path())
        .filter(|p| p.join("tlm.ref.xaif").exists())
        .max_by_key(|p| std::fs::metadata(p.join("tlm.ref.xaif")).map(|m| m.len()).unwrap_or(0))
        .expect("a corpus example")
}

fn bench(c: &mut Criterion) {
    let dir = largest_example();
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(dir.join("params.conf")).expect("params.conf");
    let mut lines = text.lines().map(str::trim);
    let n: usize = lines.next().and_then(|l| l.parse().ok()).expect("n");
    let m: usize = lines.next().and_then(|l| l.parse().ok()).expect("m");
    let config = DriverConfig { n: Some(n), m: Some(m), ..DriverConfig::default() };
    for (file, tangent) in [("tlm.in.xaif", false), ("tlm.ref.xaif", true)] {
        let bytes = std::fs::read(dir.join(file)).expect("readable");
        let prog = read_program(&bytes, file).expect("readable xaif");
        let driver = Driver::new(&prog, &config).expect("driver");
        let x = driver.default_x();
        let seed: Vec<f64> = (0..driver.n).map(|k| if k == 0 { 1.0 } else { 0.0 }).collect();
        let sweep = if tangent { Sweep::Tangent(&seed) } else { Sweep::Plain };
        let steps = driver.run(&x, sweep).expect("runs").steps;
        let mut group = c.benchmark_group(format!("interp/{name}"));
        group.throughput(Throughput::Elements(steps));
        group.bench_function(file, |b| b.iter(|| driver.run(&x, sweep).expect("runs").steps));
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
