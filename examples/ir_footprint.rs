//! What the object model costs in memory: reads each file given into a whole-document model and
//! reports, per input byte, the heap the model holds once read, the allocations reading made,
//! and the same after the tangent and after the adjoint transformation (each from a fresh
//! read). Counted with a global allocator that tallies every allocation, so the numbers depend
//! only on the program and the input, not on the machine.
//!
//! Usage: `cargo run --release --example ir_footprint FILE.xaif...`
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use xaifbooster::pipeline::{self, Config};
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Heap bytes held and allocations made while `run` runs, and what it returns.
fn measure<T>(run: impl FnOnce() -> T) -> (T, usize, usize) {
    let (live, count) = (LIVE.load(Ordering::Relaxed), ALLOCATIONS.load(Ordering::Relaxed));
    let value = run();
    let held = LIVE.load(Ordering::Relaxed).saturating_sub(live);
    (value, held, ALLOCATIONS.load(Ordering::Relaxed) - count)
}

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    assert!(!files.is_empty(), "usage: ir_footprint FILE.xaif...");
    let catalogue = Catalogue::builtin();
    println!(
        "file\tbytes\tread: model/byte\tallocs/KiB\ttangent: model/byte\tallocs/KiB\tadjoint: model/byte\tallocs/KiB"
    );
    for file in files {
        let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let read = || xaif::read(&bytes, &file, &ReadOptions::default()).expect("valid input").call_graph;
        let per_byte = |held: usize| held as f64 / bytes.len() as f64;
        let per_kib = |count: usize| count as f64 * 1024.0 / bytes.len() as f64;
        let (model, held, count) = measure(read);
        drop(model);
        let (tangent, tangent_held, tangent_count) = measure(|| {
            let mut cg = read();
            pipeline::tangent(&mut cg, catalogue, &Config::default()).expect("tangent");
            cg
        });
        drop(tangent);
        let (adjoint, adjoint_held, adjoint_count) = measure(|| {
            let mut cg = read();
            pipeline::adjoint(&mut cg, catalogue, &Config::default()).expect("adjoint");
            cg
        });
        drop(adjoint);
        println!(
            "{file}\t{}\t{:.2}\t{:.1}\t{:.2}\t{:.1}\t{:.2}\t{:.1}",
            bytes.len(),
            per_byte(held),
            per_kib(count),
            per_byte(tangent_held),
            per_kib(tangent_count),
            per_byte(adjoint_held),
            per_kib(adjoint_count)
        );
    }
}
