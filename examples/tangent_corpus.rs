//! Transforms every corpus input in tangent mode, repeatedly: a target for profilers
//! (`perf record`, `valgrind --tool=callgrind`). Usage: tangent_corpus CORPUS_DIR [REPEATS]
//! [identity] — with `identity`, read and write only.
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

fn main() {
    let corpus = std::env::args().nth(1).expect("usage: tangent_corpus CORPUS_DIR [REPEATS]");
    let repeats: usize = std::env::args().nth(2).and_then(|r| r.parse().ok()).unwrap_or(1);
    let identity = std::env::args().nth(3).as_deref() == Some("identity");
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&corpus)
        .expect("corpus directory")
        .filter_map(|e| {
            let path = e.ok()?.path().join("tlm.in.xaif");
            Some((path.display().to_string(), std::fs::read(&path).ok()?))
        })
        .collect();
    inputs.sort();
    let mut total = 0;
    for _ in 0..repeats {
        for (name, bytes) in &inputs {
            let Ok(read) = xaif::read(bytes, name, &ReadOptions::default()) else { continue };
            let mut cg = read.call_graph;
            if identity
                || xaifbooster::pipeline::tangent(
                    &mut cg,
                    Catalogue::builtin(),
                    &xaifbooster::pipeline::Config::default(),
                )
                .is_ok()
            {
                total += xaif::write(&cg, &WriteOptions::default()).len();
            }
        }
    }
    println!("{total}");
}
