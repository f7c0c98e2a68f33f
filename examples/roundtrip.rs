//! Reads and writes one XAIF file in a loop: a target for profilers (`valgrind --tool=callgrind`).
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

fn main() {
    let path = std::env::args().nth(1).expect("usage: roundtrip FILE [REPEATS]");
    let repeats: usize = std::env::args().nth(2).and_then(|r| r.parse().ok()).unwrap_or(1);
    let bytes = std::fs::read(&path).expect("readable file");
    let mut total = 0;
    for _ in 0..repeats {
        let cg = xaif::read(&bytes, &path, &ReadOptions::default()).expect("valid input").call_graph;
        total += xaif::write(&cg, &WriteOptions::default()).len();
    }
    println!("{total}");
}
