//! Transforms every corpus input in adjoint mode, repeatedly: a target for profilers
//! (`perf record`, `valgrind --tool=callgrind`). Usage: adjoint_corpus CORPUS_DIR [REPEATS]
use xaifbooster::passes::adjoint::AdjointConfig;
use xaifbooster::pipeline::Config;
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

fn main() {
    let corpus = std::env::args().nth(1).expect("usage: adjoint_corpus CORPUS_DIR [REPEATS]");
    let repeats: usize = std::env::args().nth(2).and_then(|r| r.parse().ok()).unwrap_or(1);
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&corpus)
        .expect("corpus directory")
        .filter_map(|e| {
            let path = e.ok()?.path().join("adm.in.xaif");
            Some((path.display().to_string(), std::fs::read(&path).ok()?))
        })
        .collect();
    inputs.sort();
    let config =
        Config { adjoint: AdjointConfig { all_intents_inout: true, ..Default::default() }, ..Config::default() };
    let mut total = 0;
    for _ in 0..repeats {
        for (name, bytes) in &inputs {
            let Ok(read) = xaif::read(bytes, name, &ReadOptions::default()) else { continue };
            let mut cg = read.call_graph;
            if xaifbooster::pipeline::adjoint(&mut cg, Catalogue::builtin(), &config).is_ok() {
                total += xaif::write(&cg, &WriteOptions::default()).len();
            }
        }
    }
    println!("{total}");
}
