//! The end of a run's output, as the command writes it (`xaifbooster::output`): a file output
//! goes to a temporary file beside its destination, which takes the destination's name once
//! the run has succeeded. A streamed run knows its head only after its last routine, so its
//! routines wait in a spill (in memory up to 8 MiB, then in an unnamed temporary file) and
//! are copied behind the head; beside it, the same bytes written in order (what the
//! whole-tree path does): the floor any way of writing them stands on, and what the spill
//! costs above it. The sizes are a 16 MiB tangent's scaled by 0.4 (routines 32 MiB, head
//! 4 MiB); every run replaces the previous run's file, as a repeated command does.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::io::Write;
use std::path::Path;
use xaifbooster::output::{Destination, Output, Spill};

const ROUTINES: usize = 32 << 20;
const HEAD: usize = 4 << 20;
/// What the driver writes at a time: about one routine's text.
const ROUTINE: usize = 64 << 10;
const TAIL: &[u8] = b"tail";

/// A way of writing a head and routines to an output at a path.
type Writing = fn(&Path, &[u8], &[u8]);

fn text(len: usize, seed: usize) -> Vec<u8> {
    let line = b"<xaif:Assignment statement_id=\"s\"/>\n";
    (0..len).map(|i| line[(i + seed) % line.len()]).collect()
}

/// Head, routines and tail written to the output in order, then committed.
fn in_order(path: &Path, head: &[u8], routines: &[u8]) {
    let mut output = Output::create(&Destination::Path(path.to_path_buf())).expect("prepared");
    output.write_all(head).expect("head written");
    routines.chunks(ROUTINE).for_each(|routine| output.write_all(routine).expect("routine written"));
    output.write_all(TAIL).expect("tail written");
    output.commit().expect("committed");
}

/// The routines written to a spill as they are done, then the head, the spill's contents and
/// the tail to the output, then committed.
fn spilled(path: &Path, head: &[u8], routines: &[u8]) {
    let mut output = Output::create(&Destination::Path(path.to_path_buf())).expect("prepared");
    let mut spill = Spill::new();
    routines.chunks(ROUTINE).for_each(|routine| spill.write_all(routine).expect("routine spilled"));
    output.write_all(head).expect("head written");
    let copied = spill.copy_into(&mut output).expect("routines copied");
    assert_eq!(copied, routines.len() as u64, "the spill gives back what it took");
    output.write_all(TAIL).expect("tail written");
    output.commit().expect("committed");
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let path = dir.path().join("out.xaif");
    let (head, routines) = (text(HEAD, 0), text(ROUTINES, 7));
    let mut expected = head.clone();
    expected.extend_from_slice(&routines);
    expected.extend_from_slice(TAIL);
    let mut group = c.benchmark_group("output");
    group.sample_size(20);
    group.throughput(Throughput::Bytes((HEAD + ROUTINES) as u64));
    let runs: [(&str, Writing); 2] = [("written_in_order", in_order), ("routines_spilled_behind_the_head", spilled)];
    for (name, run) in runs {
        group.bench_function(name, |b| b.iter(|| run(&path, &head, &routines)));
        assert!(std::fs::read(&path).expect("written") == expected, "{name}: the output differs from what was written");
        let left = std::fs::read_dir(dir.path()).expect("the scratch directory").count();
        assert_eq!(left, 1, "{name}: a temporary file was left beside the output");
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
