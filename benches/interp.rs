//! Interpreter throughput on the largest corpus example: executed statements and control flow
//! steps per second for the original program and its tangent-linear reference output.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use xaifbooster::interp::verify::{Driver, DriverConfig, Sweep, read_program};

/// Corpus examples by the size of their tangent reference output, largest first.
fn examples_by_size() -> Vec<std::path::PathBuf> {
    let shared = std::env::var("XAIF_SHARED")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared")));
    let corpus = shared.join("corpus");
    let dirs = std::fs::read_dir(&corpus).unwrap_or_else(|e| panic!("{}: {e} (set XAIF_SHARED)", corpus.display()));
    let mut dirs: Vec<_> = dirs.map(|e| e.expect("entry").path()).filter(|p| p.join("tlm.ref.xaif").exists()).collect();
    dirs.sort_by_key(|p| std::cmp::Reverse(std::fs::metadata(p.join("tlm.ref.xaif")).map(|m| m.len()).unwrap_or(0)));
    dirs
}

fn config(dir: &std::path::Path) -> DriverConfig {
    let text = std::fs::read_to_string(dir.join("params.conf")).expect("params.conf");
    let mut lines = text.lines().map(str::trim);
    let n: usize = lines.next().and_then(|l| l.parse().ok()).expect("n");
    let m: usize = lines.next().and_then(|l| l.parse().ok()).expect("m");
    DriverConfig { n: Some(n), m: Some(m), ..DriverConfig::default() }
}

fn bench(c: &mut Criterion) {
    // The largest example the executor runs with the default driver (the largest ones need
    // their own drivers' inputs).
    let mut chosen = None;
    for dir in examples_by_size() {
        let bytes = std::fs::read(dir.join("tlm.ref.xaif")).expect("readable");
        let Ok(prog) = read_program(&bytes, "tlm.ref.xaif") else { continue };
        let Ok(driver) = Driver::new(&prog, &config(&dir)) else { continue };
        if driver.run(&driver.default_x(), Sweep::Plain).is_ok() {
            chosen = Some(dir);
            break;
        }
    }
    let dir = chosen.expect("a corpus example that runs");
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    for (file, tangent) in [("tlm.in.xaif", false), ("tlm.ref.xaif", true)] {
        let bytes = std::fs::read(dir.join(file)).expect("readable");
        let prog = read_program(&bytes, file).expect("readable xaif");
        let driver = Driver::new(&prog, &config(&dir)).expect("driver");
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
