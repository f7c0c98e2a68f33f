//! The end of a streamed run's output, as the command writes it (`cli::output`): the routines
//! go to the output's temporary file behind room for the head as they are done, then the head
//! is written in front while they move behind it, then the file takes the output's name. Beside
//! it, the same bytes written in order into the same kind of file (`Pending::stage_written`,
//! what a whole-document output does): the floor any way of writing them stands on. The sizes
//! are a 16 MiB tangent's scaled by 0.4 (routines 32 MiB, head 4 MiB); every run replaces the
//! previous run's file, as a repeated command does. A head that ends on a block boundary (as
//! a transformed document's does from 1 MiB of input) has the routines written past the page
//! cache and their blocks moved behind it by the file system instead, where it can.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::io::Write;
use std::path::Path;
use xaifbooster::cli::output::{self, Destination, Head};

const ROUTINES: usize = 32 << 20;
const HEAD: usize = 4 << 20;
/// What the driver writes at a time: about one routine's text.
const ROUTINE: usize = 64 << 10;

fn text(len: usize, seed: usize) -> Vec<u8> {
    let line = b"<xaif:Assignment statement_id=\"s\"/>\n";
    (0..len).map(|i| line[(i + seed) % line.len()]).collect()
}

fn in_order(path: &Path, head: &[u8], routines: &[u8]) {
    let mut pending = output::prepare(&Destination::Path(path.to_path_buf())).expect("prepared");
    pending
        .stage_written(&mut |sink| {
            sink.write_all(head)?;
            routines.chunks(ROUTINE).try_for_each(|routine| sink.write_all(routine))?;
            sink.write_all(b"tail")
        })
        .expect("staged");
    pending.commit().expect("committed");
}

fn moved(path: &Path, head: &[u8], routines: &[u8], room: u64, aligned_head: bool) {
    let mut pending = output::prepare(&Destination::Path(path.to_path_buf())).expect("prepared");
    let mut body = pending.body(routines.len(), room, aligned_head);
    assert!(matches!(body, output::Body::Behind { .. }), "the routines should go behind room for the head");
    for routine in routines.chunks(ROUTINE) {
        body.write_all(routine).expect("written");
    }
    let write = |sink: &mut dyn Write| head.chunks(ROUTINE).try_for_each(|part| sink.write_all(part));
    let len = || Some(head.len() as u64);
    pending.stage_streamed(Head { write: &write, len: &len }, body, b"tail".to_vec()).expect("staged");
    pending.commit().expect("committed");
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let path = dir.path().join("out.xaif");
    let (head, routines) = (text(HEAD, 0), text(ROUTINES, 7));
    let mut group = c.benchmark_group("streamed_output");
    group.sample_size(20);
    group.throughput(Throughput::Bytes((HEAD + ROUTINES) as u64));
    group.bench_function("written_in_order", |b| b.iter(|| in_order(&path, &head, &routines)));
    // Room as the command leaves it: more than the head takes (moved down, the head written
    // meanwhile); and none (moved up first, then the head).
    group.bench_function("moved_behind_the_head", |b| {
        b.iter(|| moved(&path, &head, &routines, (HEAD + HEAD / 2) as u64, false))
    });
    group.bench_function("moved_up_before_the_head", |b| b.iter(|| moved(&path, &head, &routines, 0, false)));
    // The head (4 MiB) on a block boundary: the room's rest taken out, or the room put in.
    group.bench_function("blocks_moved_behind_the_head", |b| {
        b.iter(|| moved(&path, &head, &routines, (HEAD + HEAD / 2) as u64, true))
    });
    group.bench_function("blocks_moved_up_before_the_head", |b| b.iter(|| moved(&path, &head, &routines, 0, true)));
    group.finish();
    let mut expected = head.clone();
    expected.extend_from_slice(&routines);
    expected.extend_from_slice(b"tail");
    assert!(std::fs::read(&path).expect("written") == expected, "the output differs from what was written");
}

criterion_group!(benches, bench);
criterion_main!(benches);
