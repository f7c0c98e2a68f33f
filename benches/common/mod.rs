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
