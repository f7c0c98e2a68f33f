//! Helpers shared by the benchmarks.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use quick_xml::Reader;
use quick_xml::events::Event;

/// The shared reference material: `XAIF_SHARED`, else `../shared` beside the crate.
pub fn shared() -> PathBuf {
    let dir = std::env::var_os("XAIF_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    assert!(dir.join("corpus").is_dir(), "reference material not found at {} (set XAIF_SHARED)", dir.display());
    dir
}

/// The bytes of `<shared>/corpus/*/<file>`, in path order.
pub fn corpus_inputs(file: &str) -> Vec<Vec<u8>> {
    let corpus = shared().join("corpus");
    let entries = std::fs::read_dir(&corpus).unwrap_or_else(|e| panic!("{}: {e} (set XAIF_SHARED)", corpus.display()));
    let mut paths: Vec<_> = entries.map(|e| e.expect("entry").path().join(file)).filter(|p| p.is_file()).collect();
    paths.sort();
    paths.iter().map(|p| std::fs::read(p).expect("readable input")).collect()
}

/// quick-xml merely tokenizing: every event read and dropped (the floor for any XML tool).
pub fn tokenize(bytes: &[u8]) -> usize {
    let mut reader = Reader::from_reader(bytes);
    let mut events = 0;
    loop {
        match reader.read_event() {
            Ok(Event::Eof) | Err(_) => return events,
            Ok(_) => events += 1,
        }
    }
}

/// The time of `work` relative to `floor`, measured in alternation (31 rounds of batches of
/// about 20 ms each, median of the per-round ratios): on a shared machine whose speed drifts,
/// timing the two in separate criterion runs can shift their ratio by a third; alternating
/// exposes both to the same drift.
pub fn interleaved_ratio(mut floor: impl FnMut() -> usize, mut work: impl FnMut() -> usize) -> f64 {
    use std::time::Instant;
    let once = |f: &mut dyn FnMut() -> usize| {
        let start = Instant::now();
        std::hint::black_box(f());
        start.elapsed().as_secs_f64()
    };
    // Batches long enough to time reliably.
    let batch = ((0.02 / once(&mut work).max(1e-6)) as usize).clamp(1, 10_000);
    let mut ratios: Vec<f64> = (0..31)
        .map(|_| {
            let a: f64 = (0..batch).map(|_| once(&mut floor)).sum();
            let b: f64 = (0..batch).map(|_| once(&mut work)).sum();
            b / a
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios[ratios.len() / 2]
}
