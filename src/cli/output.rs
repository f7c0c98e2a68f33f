//! Where a command's results go, and how they get there without harm.
//!
//! A run has up to three outputs (the document, `--stats`, the debug log). They are written in
//! three steps so that a run which fails writes nothing: [`prepare`] every destination before
//! the work starts (a missing directory or a read-only file is found before anything is
//! computed), [`Pending::stage`] the bytes of each (for a regular file: into a temporary file
//! beside it), then [`Pending::commit`] them all, which only renames (or swaps names, for large
//! files) and copies.
//!
//! Only regular files are replaced by a rename, and only files the user may write; a replaced
//! file keeps its mode (and, where permitted, its owner). Everything else is written as it is: devices such as `/dev/null`,
//! named pipes, the descriptors behind `/dev/stdout` or `/dev/fd/N`, a file with several hard
//! links (truncated and rewritten, so every link sees the new contents). A symbolic link is
//! written through: its target is replaced, the link stays.

mod direct;

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};

/// An output named on the command line: `-` is standard output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    Stdout,
    /// Not nameable on the command line but as `/dev/stderr`: where a debug log goes by default.
    Stderr,
    Path(PathBuf),
}

impl From<OsString> for Destination {
    fn from(arg: OsString) -> Self {
        if arg == "-" { Destination::Stdout } else { Destination::Path(PathBuf::from(arg)) }
    }
}

impl Destination {
    /// How messages name this destination.
    pub fn shown(&self) -> String {
        match self {
            Destination::Stdout => "standard output".to_owned(),
            Destination::Stderr => "standard error".to_owned(),
            Destination::Path(path) => path.display().to_string(),
        }
    }
}

/// Why an output could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {shown}")]
pub struct OutputError {
    /// The destination as the user named it.
    pub shown: String,
    #[source]
    pub source: io::Error,
}

impl OutputError {
    /// The reader went away (`| head`): not a failure to report.
    pub fn is_broken_pipe(&self) -> bool {
        self.source.kind() == io::ErrorKind::BrokenPipe
    }
}

/// The routines of a streamed output, written as they are done (see [`Pending::body`]).
#[derive(Debug)]
pub enum Body {
    /// The output's own temporary file from `at` on, where the head is expected to end: the
    /// routines are moved behind the head once its length is known (`move_behind`).
    Behind {
        writer: BodyWriter,
        at: u64,
    },
    /// The output's own temporary file, the head already written ([`Pending::direct_body`]).
    Direct(BodyWriter),
    /// An unnamed temporary file, for a destination that is written only in order and only
    /// once the run has succeeded (standard output, a pipe, a device, a file kept in place):
    /// it holds the routines, and then the head and the tail behind them, until the commit
    /// copies the three out in their order (`Spilled`).
    Spill(BodyWriter),
    Memory(Vec<u8>),
}

impl Write for Body {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Body::Behind { writer, .. } | Body::Direct(writer) | Body::Spill(writer) => writer.write(bytes),
            Body::Memory(memory) => memory.write(bytes),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Body::Behind { writer, .. } | Body::Direct(writer) | Body::Spill(writer) => writer.write_all(bytes),
            Body::Memory(memory) => memory.write_all(bytes),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Body::Behind { .. } | Body::Direct(_) | Body::Spill(_) | Body::Memory(_) => Ok(()),
        }
    }
}

impl crate::streaming::RoutineSink for Body {
    fn lend(&mut self) -> Option<&mut Vec<u8>> {
        match self {
            Body::Behind { writer, .. } | Body::Direct(writer) | Body::Spill(writer) => Some(&mut writer.chunk),
            Body::Memory(memory) => Some(memory),
        }
    }

    fn appended(&mut self) -> io::Result<()> {
        match self {
            Body::Behind { writer, .. } | Body::Direct(writer) | Body::Spill(writer)
                if writer.gathered() >= BODY_CHUNK =>
            {
                writer.pass_on()
            }
            Body::Behind { .. } | Body::Direct(_) | Body::Spill(_) | Body::Memory(_) => Ok(()),
        }
    }
}

/// How many bytes a [`BodyWriter`] gathers before its thread writes them. The streaming driver
/// writes each routine straight into the chunk being gathered (`RoutineSink::lend`), so a
/// chunk grows past this by up to a routine: chunks are made with room for twice this
/// ([`CHUNK_CAPACITY`]; pages not written to cost no memory), so that the routine that crosses
/// the mark does not make the chunk grow by a copy of what it holds (2 MiB identity: 2.4% of
/// the driver's instructions). One that grew past that is given back at that size once written,
/// so that a few large routines do not keep three large chunks.
const BODY_CHUNK: usize = 1 << 20;

/// The room a body's chunk is made with.
const CHUNK_CAPACITY: usize = 2 * BODY_CHUNK;

/// How far ahead a body's blocks are allocated ([`allocate`]).
const ALLOCATE_AHEAD: u64 = 64 << 20;

/// Allocates the blocks of `len` bytes of `file` from `offset` before they are written, without
/// changing its size; false where the file system cannot. ext4 otherwise reserves each page's
/// block as it is written: allocated beforehand, writing 263 MiB in 1 MiB pieces took 43 instead
/// of 58 ms, and the kernel's copy of a 263 MiB spill file into the output 68–71 instead of
/// 92–102 ms (a C model of both, three runs each).
fn allocate(file: &File, offset: u64, len: u64) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else { return false };
        // SAFETY: a plain system call on a descriptor this function borrows; it changes no
        // memory of ours.
        unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, offset, len) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, offset, len);
        false
    }
}

/// The room left for the head before a [`BodyWriter`]'s routines, filled with zeros a piece
/// at a time by the body's thread whenever it has no chunk to write (most of a run): the
/// head's pages and those the routines move to at the end ([`move_behind`]) are then in the
/// page cache already, and the end, which both cores work through with nothing else to do,
/// overwrites them instead of asking for fresh ones. On this virtual machine a fresh page of
/// page cache cost 0.8 µs where memory had just been freed and 4–5 µs after a few idle seconds
/// (the host takes freed memory back), against 0.4 µs to overwrite one. At 64 MiB the end
/// took 49–174 ms, four runs of twelve above 150, and now 52–60 ms (`scripts/end_phase.sh`).
struct Room<'f> {
    file: &'f File,
    filled: u64,
    len: u64,
    zeros: Vec<u8>,
}

impl<'f> Room<'f> {
    fn new(file: &'f File, len: u64) -> Room<'f> {
        if len > 0 {
            // Blocks first, as for the routines: written into without them, ext4 reserves one
            // a page.
            allocate(file, 0, len);
        }
        Room { file, filled: 0, len, zeros: Vec::new() }
    }

    /// Fills the next piece; false once all is filled.
    fn fill_next(&mut self) -> io::Result<bool> {
        if self.filled >= self.len {
            return Ok(false);
        }
        let piece = (self.len - self.filled).min(ROOM_PIECE);
        self.zeros.resize(piece as usize, 0);
        write_at(self.file, &self.zeros, self.filled)?;
        self.filled += piece;
        Ok(true)
    }
}

/// How much of the room [`Room`] fills per write: 32 KiB, from offset 0, so that each write
/// makes one page cache folio of eight pages, the largest the kernel keeps on its per-processor
/// lists of recently freed pages. Pieces of 1 MiB made folios of 256 pages, which must come
/// from larger blocks of free memory, likely those the host had taken back: whole 64 MiB tangents,
/// 30 alternating rounds, median +81 ms against no filling; pieces of 32, 60 and 252 KiB, 20
/// rounds: medians 759.8, 749.5 and 816.6 ms against 816.4 ms (release builds, a noisy hour).
const ROOM_PIECE: u64 = 32 << 10;

/// A file the routines are written to by a thread of its own, a chunk at a time. The streaming
/// driver is a large run's critical path (16 MiB tangent: 72% of the CPU time on its thread,
/// the reader and validation share the other core); the kernel's side of writing the routines
/// (page cache allocation, copying, ext4's block reservation) was a seventh of the driver's
/// time, and the other core had room for it. At most three chunks exist at once: the one being
/// filled, one queued and one being written.
///
/// Writing past the page cache (`BodyWriter::direct`), each chunk's text begins at an
/// aligned address, after `skip` bytes of the vector, and only whole aligned blocks of it are
/// handed to the thread: the bytes after the last whole block begin the next chunk.
#[derive(Debug)]
pub struct BodyWriter {
    chunk: Vec<u8>,
    /// Where the text of `chunk` begins (0 but for direct writes).
    skip: usize,
    /// The thread writes past the page cache, whole aligned blocks only.
    direct: bool,
    to_thread: Option<std::sync::mpsc::SyncSender<(Vec<u8>, usize)>>,
    written: std::sync::mpsc::Receiver<Vec<u8>>,
    thread: Option<std::thread::JoinHandle<io::Result<Written>>>,
}

/// Whether the disk keeps pace with the driver, judged on a body's thread over its direct
/// writes. Past the page cache the routines go at the disk's pace: here about 1 GB/s, faster
/// than the driver makes them (the thread sleeps for the disk 30–40% of the time at 64 MiB in
/// either mode, about half at 16 MiB), but a disk of 125 MB/s (a cloud volume's base rate,
/// imitated with the block I/O controller) made a 16 MiB tangent take 0.67 s instead of
/// 0.18 s, where the page cache takes the output at memory speed and writes it out later. So
/// once the thread has slept for the disk ([`ThreadClock`]) more than [`PACE_BUSY`] of the
/// time since the first chunk came, after at least [`PACE_FROM`] chunks, the rest goes
/// through the page cache and the output takes the move, reading back from the disk what went
/// past it. Judged all along, not over the first chunks only: the controller let the first
/// 20 MiB through at once and then held each write for 65–85 ms, and a trial of 32 chunks
/// once kept direct writes for a 64 MiB tangent that then took 2.9 s instead of 0.6 s. Over
/// the whole run a stall moves the share little, so a fast disk's hiccup does not send a
/// large output the long way; and by the time the share passes the mark, reading back what
/// was written costs about as long as writing it took.
#[derive(Debug)]
struct Pace {
    chunks: usize,
    writing: std::time::Duration,
    /// The share of its time the thread may sleep for the disk: [`PACE_BUSY`] but in tests.
    busy: f64,
}

impl Default for Pace {
    fn default() -> Pace {
        Pace { chunks: 0, writing: std::time::Duration::ZERO, busy: PACE_BUSY }
    }
}

impl Pace {
    /// Whether the disk keeps up, once the thread slept `took` for the chunk just written
    /// and `elapsed` has passed since the first chunk came.
    fn keeps_up(&mut self, took: std::time::Duration, elapsed: std::time::Duration) -> bool {
        self.chunks += 1;
        self.writing += took;
        self.chunks < PACE_FROM || self.writing.as_secs_f64() <= self.busy * elapsed.as_secs_f64()
    }
}

/// The time the calling thread has spent on a core or waiting for one, from the scheduler's
/// account (`/proc/thread-self/schedstat`: time run, time runnable but waiting). A write's time
/// less what this grew by is what the thread slept for the disk: on two cores, beside the
/// reader, the driver and the validator, a write's thread also waits to run, and counted as
/// the disk's, that time once sent the 64 MiB adjoint's output through the page cache from its
/// twelfth chunk (2.35 s against 1.3 s).
struct ThreadClock(Option<File>);

impl ThreadClock {
    /// The calling thread's clock; without the scheduler's account, a write's whole time is
    /// taken for the disk's.
    fn open() -> ThreadClock {
        ThreadClock(File::open("/proc/thread-self/schedstat").ok())
    }

    /// Time run plus time waiting to run, so far.
    fn scheduled(&self) -> Option<std::time::Duration> {
        let mut text = [0u8; 96];
        #[cfg(unix)]
        let read = std::os::unix::fs::FileExt::read_at(self.0.as_ref()?, &mut text, 0).ok()?;
        #[cfg(not(unix))]
        let read = 0;
        let mut fields = std::str::from_utf8(&text[..read]).ok()?.split_ascii_whitespace();
        let (run, wait) = (fields.next()?.parse::<u64>().ok()?, fields.next()?.parse::<u64>().ok()?);
        Some(std::time::Duration::from_nanos(run.saturating_add(wait)))
    }

    /// How long the thread slept for the disk since `started`, when it had been `scheduled`.
    fn waited_for_the_disk(
        &self,
        started: std::time::Instant,
        scheduled: Option<std::time::Duration>,
    ) -> std::time::Duration {
        let took = started.elapsed();
        match (scheduled, self.scheduled()) {
            (Some(before), Some(after)) => took.saturating_sub(after.saturating_sub(before)),
            _ => took,
        }
    }
}

/// Chunks (of [`BODY_CHUNK`]) before the disk may be found slow ([`Pace`]): the first chunk
/// alone keeps the thread busy all of its time, and the share moved between 30% and 90% over
/// the next three.
const PACE_FROM: usize = 8;

/// The share of its time the thread may sleep for the disk ([`Pace`]): a disk that keeps up
/// leaves it waiting for chunks; one that does not keeps it asleep in its writes.
const PACE_BUSY: f64 = 0.75;

/// What a [`BodyWriter`]'s thread leaves: its file, where its writes end, and whether they
/// all went past the page cache.
#[derive(Debug)]
struct Written {
    file: File,
    end: u64,
    direct: bool,
}

/// A finished [`BodyWriter`] ([`BodyWriter::finish`]).
struct Finished {
    /// The thread's file: for direct writes, the descriptor that writes past the page cache.
    file: File,
    /// Where what the thread wrote ends.
    end: u64,
    /// Every byte the thread wrote went past the page cache.
    direct: bool,
    /// The last bytes, short of a whole block, which the thread did not write.
    rest: Vec<u8>,
    /// The chunks left over, emptied: memory already faulted in, which the copy behind the
    /// head takes its pieces through (a fresh 1 MiB buffer is 256 page faults on each
    /// copying thread, just as the copy begins). The fullest last.
    spares: Vec<Vec<u8>>,
}

impl BodyWriter {
    /// Starts the thread that writes to `file` at its position; `None` where no thread can be
    /// started. With `ahead_from` (the position), the file gets its blocks [`ALLOCATE_AHEAD`] at
    /// a time before they are written: what is allocated past its end goes when its length is
    /// set ([`Pending::stage_streamed`] does, and a file given up is removed); and the room
    /// before it, left for the head, is allocated at once and filled while the thread waits
    /// for chunks ([`Room`]).
    fn new(file: File, ahead_from: Option<u64>) -> Option<BodyWriter> {
        Self::start(false, move |chunks, give_back| {
            let start = ahead_from.unwrap_or(0);
            let (mut end, mut allocated, mut ahead) = (start, start, ahead_from.is_some());
            let mut room = Room::new(&file, start);
            loop {
                let (chunk, _) = match chunks.try_recv() {
                    Ok(chunk) => chunk,
                    Err(std::sync::mpsc::TryRecvError::Empty) if room.fill_next()? => continue,
                    Err(std::sync::mpsc::TryRecvError::Empty) => match chunks.recv() {
                        Ok(chunk) => chunk,
                        Err(_) => break,
                    },
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => break,
                };
                end += chunk.len() as u64;
                if ahead && end > allocated {
                    ahead = allocate(&file, allocated, ALLOCATE_AHEAD);
                    allocated += ALLOCATE_AHEAD;
                }
                (&file).write_all(&chunk)?;
                Self::give_back(&give_back, chunk);
            }
            let end = (&file).stream_position()?;
            Ok(Written { file, end, direct: false })
        })
    }

    /// Starts the thread that writes to `file`, a descriptor that writes past the page cache
    /// ([`direct::open`]), from `at` (aligned) on. Where the file system refuses a direct
    /// write after all, or the disk does not keep up with the driver ([`Pace`]), the thread
    /// writes through the page cache from there on, and says so.
    fn direct(file: File, at: u64) -> Option<BodyWriter> {
        Self::direct_at_pace(file, at, Pace::default())
    }

    /// [`BodyWriter::direct`], judging the disk by `pace`.
    fn direct_at_pace(file: File, at: u64, mut pace: Pace) -> Option<BodyWriter> {
        Self::start(true, move |chunks, give_back| {
            let (mut end, mut direct, mut staging, mut first) = (at, true, None, None);
            let clock = ThreadClock::open();
            while let Ok((chunk, skip)) = chunks.recv() {
                let text = &chunk[skip..];
                if direct {
                    let since = *first.get_or_insert_with(std::time::Instant::now);
                    let (writing, scheduled) = (std::time::Instant::now(), clock.scheduled());
                    match direct::write(&file, text, end, &mut staging) {
                        Ok(()) => {
                            let waited = clock.waited_for_the_disk(writing, scheduled);
                            // The disk does not keep up: the page cache from the next chunk on.
                            if !pace.keeps_up(waited, since.elapsed()) {
                                direct = !direct::through_page_cache(&file);
                            }
                        }
                        Err(error)
                            if error.raw_os_error() == Some(libc::EINVAL) && direct::through_page_cache(&file) =>
                        {
                            direct = false;
                            write_at(&file, text, end)?;
                        }
                        Err(error) => return Err(error),
                    }
                } else {
                    write_at(&file, text, end)?;
                }
                end += text.len() as u64;
                Self::give_back(&give_back, chunk);
            }
            Ok(Written { file, end, direct })
        })
    }

    fn start(
        direct: bool,
        write: impl FnOnce(
            std::sync::mpsc::Receiver<(Vec<u8>, usize)>,
            std::sync::mpsc::Sender<Vec<u8>>,
        ) -> io::Result<Written>
        + Send
        + 'static,
    ) -> Option<BodyWriter> {
        let (to_thread, chunks) = std::sync::mpsc::sync_channel::<(Vec<u8>, usize)>(1);
        let (give_back, written) = std::sync::mpsc::channel();
        let thread =
            std::thread::Builder::new().name("body".to_owned()).spawn(move || write(chunks, give_back)).ok()?;
        let mut writer = BodyWriter {
            chunk: Vec::new(),
            skip: 0,
            direct,
            to_thread: Some(to_thread),
            written,
            thread: Some(thread),
        };
        writer.begin_chunk(Self::new_chunk(), &[]);
        Some(writer)
    }

    fn new_chunk() -> Vec<u8> {
        Vec::with_capacity(CHUNK_CAPACITY + direct::ALIGNMENT)
    }

    /// Gives a written chunk back to the driver, at its usual size.
    fn give_back(to: &std::sync::mpsc::Sender<Vec<u8>>, mut chunk: Vec<u8>) {
        if chunk.capacity() > CHUNK_CAPACITY + direct::ALIGNMENT {
            chunk = Self::new_chunk();
        }
        // The driver may have finished or given up: its chunks are then not needed.
        let _ = to.send(chunk);
    }

    /// Makes `chunk` the one being filled, its text beginning with `carried`.
    fn begin_chunk(&mut self, mut chunk: Vec<u8>, carried: &[u8]) {
        chunk.clear();
        self.skip = if self.direct { chunk.as_ptr().align_offset(direct::ALIGNMENT).min(direct::ALIGNMENT) } else { 0 };
        chunk.resize(self.skip, b' ');
        chunk.extend_from_slice(carried);
        self.chunk = chunk;
    }

    /// How much text the chunk being filled holds.
    fn gathered(&self) -> usize {
        self.chunk.len() - self.skip
    }

    /// Hands the filled chunk to the thread and takes an empty one: one it wrote, or a new
    /// one while fewer than three exist. Writing past the page cache, only its whole blocks
    /// go: the bytes after them begin the next chunk.
    fn pass_on(&mut self) -> io::Result<()> {
        let next = self.written.try_recv().unwrap_or_else(|_| Self::new_chunk());
        let whole = if self.direct { self.gathered() / direct::ALIGNMENT * direct::ALIGNMENT } else { self.gathered() };
        let (skip, cut) = (self.skip, self.skip + whole);
        let mut full = std::mem::take(&mut self.chunk);
        self.begin_chunk(next, &full[cut..]);
        full.truncate(cut);
        if whole == 0 {
            return Ok(());
        }
        let sent = self.to_thread.as_ref().map(|thread| thread.send((full, skip)));
        match sent {
            Some(Ok(())) => Ok(()),
            // The thread stopped: its result says why.
            _ => Err(self.stop().err().unwrap_or_else(|| io::Error::other("the body's writing thread stopped"))),
        }
    }

    /// Waits for the thread to write what it was given and returns what it left, or its
    /// error.
    fn stop(&mut self) -> io::Result<Written> {
        self.to_thread = None;
        match self.thread.take() {
            Some(thread) => thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            None => Err(io::Error::other("the body's writing thread stopped")),
        }
    }

    /// The file, once everything is written, positioned after it (through the page cache
    /// only: a direct writer leaves bytes short of a block to [`BodyWriter::finish`]'s
    /// caller).
    fn into_file(self) -> io::Result<File> {
        let finished = self.finish()?;
        if !finished.rest.is_empty() {
            return Err(io::Error::other("internal error: a body's last bytes left unwritten"));
        }
        Ok(finished.file)
    }

    /// Everything handed over written, the thread stopped.
    fn finish(mut self) -> io::Result<Finished> {
        if self.gathered() > 0 {
            self.pass_on()?;
        }
        let Written { file, end, direct } = self.stop()?;
        let rest = self.chunk[self.skip..].to_vec();
        let mut spares: Vec<Vec<u8>> = self.written.try_iter().collect();
        let mut last = std::mem::take(&mut self.chunk);
        last.clear();
        spares.push(last);
        // The fullest last, where `pop` takes them: their pages were written to, and so are
        // in memory.
        spares.sort_by_key(Vec::len);
        Ok(Finished { file, end, direct, rest, spares })
    }
}

impl Write for BodyWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes).map(|()| bytes.len())
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let room = BODY_CHUNK.saturating_sub(self.gathered()).max(1);
            let (now, rest) = bytes.split_at(room.min(bytes.len()));
            self.chunk.extend_from_slice(now);
            bytes = rest;
            if self.gathered() >= BODY_CHUNK {
                self.pass_on()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for BodyWriter {
    /// A body dropped unfinished (a failed run): the thread writes what it has to the
    /// unnamed file, which then vanishes; joining it leaves no thread behind.
    fn drop(&mut self) {
        self.to_thread = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A file in the temporary directory (`TMPDIR`, else `/tmp`) that no name leads to, so that
/// it vanishes when closed, however the run ends: created unnamed where Linux's file system
/// can (`O_TMPFILE`), otherwise created and its name removed at once.
fn spill_file() -> io::Result<File> {
    let dir = std::env::temp_dir();
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let unnamed = OpenOptions::new().read(true).write(true).mode(0o600).custom_flags(libc::O_TMPFILE).open(&dir);
        if let Ok(file) = unnamed {
            return Ok(file);
        }
    }
    let (path, file) = create_temp(&dir.join("xaifbooster-spill"))?;
    fs::remove_file(&path)?;
    Ok(file)
}

/// A streamed output staged in a temporary file ([`Body::Spill`]): the routines, then the
/// head, then the tail, which [`Spilled::copy_out`] sends head first.
#[derive(Debug)]
struct Spilled {
    file: File,
    /// Head, routines and tail, in the order the destination gets them.
    pieces: [std::ops::Range<u64>; 3],
}

impl Spilled {
    /// Sends the pieces to `out` in order: by the kernel from file to `descriptor` where it
    /// can (`sendfile`, no copy through our memory), otherwise read and written a piece at a
    /// time.
    fn copy_out(&self, out: &mut dyn Write, descriptor: Option<i32>) -> io::Result<()> {
        let mut buffer = Vec::new();
        let mut by_kernel = descriptor;
        for piece in &self.pieces {
            let mut at = piece.start;
            if let Some(to) = by_kernel {
                match send_file(&self.file, to, piece.start, piece.end) {
                    Ok(()) => at = piece.end,
                    Err((_, e)) if e.kind() == io::ErrorKind::BrokenPipe => return Err(e),
                    // Not for this destination (appending, or no such call): by hand from
                    // where the kernel stopped.
                    Err((stopped, _)) => {
                        by_kernel = None;
                        at = stopped;
                    }
                }
            }
            while at < piece.end {
                let len = (piece.end - at).min(SPILL_PIECE) as usize;
                buffer.resize(len, 0);
                read_at(&self.file, &mut buffer, at)?;
                out.write_all(&buffer)?;
                at += len as u64;
            }
            out.flush()?;
        }
        Ok(())
    }
}

/// What [`Pending::stage_written`] writes for a destination other than a replaced file:
/// memory up to [`SPILL_OVER_FROM`] bytes (a small output, most of them, costs no file), then
/// an unnamed temporary file ([`spill_file`]) from the first byte on, so that a large output
/// made from the whole document is not held twice, as text beside its model. Memory where no
/// temporary file can be had.
#[derive(Default)]
struct SpillOver {
    memory: Vec<u8>,
    file: Option<io::BufWriter<File>>,
    /// No temporary file could be made: memory to the end.
    unspillable: bool,
}

impl Write for SpillOver {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.file.is_none() && !self.unspillable && cfg!(unix) && self.memory.len() + bytes.len() > SPILL_OVER_FROM {
            match spill_file() {
                Ok(file) => {
                    // Kept before it is written to, so that a failure names its directory.
                    let file = self.file.insert(io::BufWriter::with_capacity(WRITE_BUFFER, file));
                    file.write_all(&std::mem::take(&mut self.memory))?;
                }
                Err(_) => self.unspillable = true,
            }
        }
        match &mut self.file {
            Some(file) => file.write(bytes),
            None => self.memory.write(bytes),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), Write::flush)
    }
}

/// From how many bytes a [`SpillOver`] moves to a temporary file: its three system calls and
/// the copy out are nothing beside writing a megabyte of XAIF (about 5 ms), and every
/// megabyte held costs the peak as much.
const SPILL_OVER_FROM: usize = 1 << 20;

/// How much [`Spilled::copy_out`] reads at a time where the kernel cannot copy.
const SPILL_PIECE: u64 = 1 << 20;

/// Copies `from`'s bytes `at..end` to the descriptor `to` with `sendfile`; where it cannot
/// go on, the offset it got to and why.
#[cfg(target_os = "linux")]
fn send_file(from: &File, to: i32, mut at: u64, end: u64) -> Result<(), (u64, io::Error)> {
    use std::os::fd::AsRawFd;
    while at < end {
        let Ok(mut offset) = libc::off_t::try_from(at) else {
            return Err((at, io::Error::from(io::ErrorKind::InvalidInput)));
        };
        let count = usize::try_from(end - at).unwrap_or(usize::MAX).min(1 << 30);
        // SAFETY: a system call on two descriptors this function borrows and an offset it
        // owns; it changes no other memory of ours.
        let sent = unsafe { libc::sendfile(to, from.as_raw_fd(), &mut offset, count) };
        match sent {
            0 => return Err((at, io::Error::new(io::ErrorKind::UnexpectedEof, "the temporary file ended early"))),
            n if n > 0 => at += n as u64,
            _ => {
                let error = io::Error::last_os_error();
                if error.kind() != io::ErrorKind::Interrupted {
                    return Err((at, error));
                }
            }
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn send_file(_from: &File, _to: i32, at: u64, _end: u64) -> Result<(), (u64, io::Error)> {
    Err((at, io::Error::from(io::ErrorKind::Unsupported)))
}

/// The descriptor behind `of`, for [`send_file`].
#[cfg(unix)]
fn raw_descriptor(of: &impl std::os::fd::AsRawFd) -> Option<i32> {
    Some(of.as_raw_fd())
}

#[cfg(not(unix))]
fn raw_descriptor<T>(_of: &T) -> Option<i32> {
    None
}

/// Bodies expected to be smaller than this stay in memory ([`Pending::body`]).
const BODY_FILE_FROM: usize = 4 << 20;

/// A prepared destination; dropping it before [`Pending::commit`] leaves no trace.
#[derive(Debug)]
pub struct Pending {
    shown: String,
    how: How,
    bytes: Vec<u8>,
    /// A [`Pending::direct_body`] was handed out: its writes must go before anything staged.
    direct: bool,
    /// A streamed output staged in a temporary file rather than in `bytes` ([`Body::Spill`]).
    spilled: Option<Spilled>,
    /// The output is being put together in the temporary directory ([`Body::Spill`] handed
    /// out, or [`SpillOver`] past its memory), until the commit.
    spilling: bool,
}

#[derive(Debug)]
enum How {
    Stdout,
    Stderr,
    /// Devices, pipes, descriptor aliases: opened when prepared, written when committed.
    Direct(File),
    /// A regular file (or a new one): the bytes go to `temp` in the same directory, which is
    /// renamed to `target` on commit. `temp` is `None` once renamed.
    Replace {
        target: PathBuf,
        temp: Option<PathBuf>,
        file: File,
        /// Whether `target` existed when prepared: its name is then swapped with `temp`'s
        /// ([`replace`]).
        replaces: bool,
    },
    /// A regular file that must keep its inode (hard links, or a directory we may not write):
    /// truncated and written on commit.
    InPlace(File),
}

/// Prepares a destination: resolves symbolic links, decides how it will be written, and opens
/// or creates what that needs. Nothing visible changes yet except a temporary file, which a
/// dropped [`Pending`] removes.
pub fn prepare(destination: &Destination) -> Result<Pending, OutputError> {
    let shown = destination.shown();
    let how = match destination {
        Destination::Stdout => Ok(How::Stdout),
        Destination::Stderr => Ok(How::Stderr),
        Destination::Path(path) => prepare_path(path),
    };
    match how {
        Ok(how) => Ok(Pending { shown, how, bytes: Vec::new(), direct: false, spilled: None, spilling: false }),
        Err(source) => Err(OutputError { shown, source }),
    }
}

impl Pending {
    /// `source`, a failure of this destination's writing (here, or on a streamed body's
    /// thread), as the error that names the destination, and the temporary directory while
    /// the output is being put together there ([`Body::Spill`]): a full temporary directory
    /// is not the destination's fault.
    pub fn failed(&self, source: io::Error) -> OutputError {
        let shown = if self.spilling {
            format!("{} (put together in the temporary directory {})", self.shown, std::env::temp_dir().display())
        } else {
            self.shown.clone()
        };
        OutputError { shown, source }
    }

    /// A [`Body::Spill`] on an unnamed temporary file and a thread of its own (`None` where
    /// either cannot be had), its directory noted for [`Pending::failed`].
    fn spill_body(&mut self) -> Option<Body> {
        if !cfg!(unix) {
            return None;
        }
        let writer = BodyWriter::new(spill_file().ok()?, None)?;
        self.spilling = true;
        Some(Body::Spill(writer))
    }

    /// Sets the bytes to write. For a file replaced by a rename they are written to its
    /// temporary file now, so that committing cannot run out of space half way.
    pub fn stage(&mut self, bytes: Vec<u8>) -> Result<(), OutputError> {
        (self.spilled, self.spilling) = (None, false);
        let result = match &mut self.how {
            How::Replace { file, .. } => Self::discard_direct(file, &mut self.direct)
                .and_then(|()| file.write_all(&bytes))
                .and_then(|()| file.flush()),
            How::Stdout | How::Stderr | How::Direct(_) | How::InPlace(_) => {
                self.bytes = bytes;
                Ok(())
            }
        };
        result.map_err(|source| self.failed(source))
    }

    /// Where the streaming driver writes routines as they are done, before the head that must
    /// precede them is known: a body of about `expected` bytes, the head expected to take up
    /// to `head_room`. For a file replaced by a rename, that file itself from `head_room` on,
    /// so the output never sits in memory: the routines are moved behind the head when it is
    /// written (`move_behind`). Where the head will end on a block boundary (`aligned_head`,
    /// [`crate::xaif::write::WriteOptions::align_head`]) and the file system can, they are
    /// written past the page cache from an aligned room on, and the file system moves their
    /// blocks instead (`output/direct.rs`). Any other destination (standard output, a pipe, a device, a
    /// file kept in place) gets an unnamed temporary file instead ([`Body::Spill`]), copied out
    /// on commit. Small bodies, and every body where no thread or temporary file can be had,
    /// stay in memory: for a small one the thread, its writes and the move (a dozen system
    /// calls) cost more than holding the bytes. Elsewhere than on Unix, where reads and writes
    /// at an offset are not written, memory.
    pub fn body(&mut self, expected: usize, head_room: u64, aligned_head: bool) -> Body {
        if expected < BODY_FILE_FROM {
            return Body::Memory(Vec::with_capacity(expected));
        }
        match &self.how {
            _ if !cfg!(unix) => {}
            How::Replace { file, temp: Some(temp), .. }
                if aligned_head && let Some(direct) = direct::open(temp, file) =>
            {
                let at = head_room.next_multiple_of(direct::ALIGNMENT as u64);
                if let Some(writer) = BodyWriter::direct(direct, at) {
                    self.direct = true;
                    return Body::Behind { writer, at };
                }
            }
            _ => {}
        }
        match &self.how {
            _ if !cfg!(unix) => {}
            How::Replace { file, .. } => {
                if let Ok(mut behind) = file.try_clone()
                    && behind.seek(io::SeekFrom::Start(head_room)).is_ok()
                    && let Some(writer) = BodyWriter::new(behind, Some(head_room))
                {
                    // What the body writes is discarded if the output is staged otherwise.
                    self.direct = true;
                    return Body::Behind { writer, at: head_room };
                }
            }
            How::Stdout | How::Stderr | How::Direct(_) | How::InPlace(_) => {
                if let Some(body) = self.spill_body() {
                    return body;
                }
            }
        }
        Body::Memory(Vec::new())
    }

    /// Removes what a [`Pending::direct_body`] or [`Pending::body`] wrote to `file` before the
    /// output was staged otherwise (a streamed run that gave way to the whole-document path).
    fn discard_direct(file: &mut File, direct: &mut bool) -> io::Result<()> {
        if std::mem::take(direct) {
            file.set_len(0)?;
            file.seek(io::SeekFrom::Start(0))?;
        }
        Ok(())
    }

    /// A body for an output whose routines come after their head, both written to it: for a
    /// file replaced by a rename, its temporary file itself, written on a thread of its own
    /// ([`BodyWriter`]); for any other destination, an unnamed temporary file copied out on
    /// commit ([`Body::Spill`]); memory where neither can be had. [`Pending::stage_streamed`]
    /// then adds the tail (its head writes nothing); [`Pending::stage`] instead discards what
    /// the body wrote.
    pub fn direct_body(&mut self) -> Body {
        match &self.how {
            How::Replace { file, .. } => {
                if let Some(writer) = file.try_clone().ok().and_then(|file| BodyWriter::new(file, None)) {
                    self.direct = true;
                    return Body::Direct(writer);
                }
            }
            How::Stdout | How::Stderr | How::Direct(_) | How::InPlace(_) => {
                if let Some(body) = self.spill_body() {
                    return body;
                }
            }
        }
        Body::Memory(Vec::new())
    }

    /// [`Pending::stage`] for a streamed output: what `head` writes, then what went to `body`,
    /// then `tail`. A file replaced by a rename has its routines already: they are moved
    /// behind the head, at the same time as it is written where it fits before them
    /// (`move_behind`), or, for a [`Pending::direct_body`], behind the head already, and
    /// gets the tail.
    pub fn stage_streamed(&mut self, head: Head<'_>, body: Body, tail: Vec<u8>) -> Result<(), OutputError> {
        let Head { write: head, len: head_len } = head;
        let result = (|| -> io::Result<()> {
            match (&mut self.how, body) {
                (How::Replace { file, .. }, Body::Direct(body)) => {
                    // The body shares the file's offset, which is now after what it wrote.
                    let mut misplaced = Vec::new();
                    head(&mut misplaced)?;
                    if !misplaced.is_empty() {
                        return Err(io::Error::other("internal error: a head for a body that holds its own"));
                    }
                    drop(body.into_file()?);
                    file.write_all(&tail)?;
                    file.flush()
                }
                (How::Replace { file, .. }, Body::Behind { writer, at: from }) => {
                    // Its descriptor of the file is closed here.
                    let Finished { file: written, end: written_end, direct, rest, mut spares } = writer.finish()?;
                    let claimed = head_len();
                    // Past the page cache, the routines' whole blocks go behind the head by the
                    // file system; then their last bytes follow, and the head is written in
                    // front of them.
                    let placed = match claimed {
                        Some(len) if direct && direct::place(file, from, len) => Some(len),
                        _ => None,
                    };
                    let whole = written_end
                        .checked_sub(from)
                        .ok_or_else(|| io::Error::other("internal error: the routines end before they begin"))?;
                    let routines = whole + rest.len() as u64;
                    let at = match placed {
                        Some(len) => {
                            write_at(file, &rest, len + whole)?;
                            if direct::write_head(&written, len, head, &mut spares)? {
                                len
                            } else {
                                // Miscounted: the routines are whole behind where the head was
                                // to end, and move to fit it.
                                move_behind(file, head, None, len, routines, spares)?
                            }
                        }
                        None => {
                            write_at(file, &rest, written_end)?;
                            drop(written);
                            move_behind(file, head, claimed, from, routines, spares)?
                        }
                    };
                    let end = at + routines;
                    write_at(file, &tail, end)?;
                    // Also gives back the blocks allocated ahead past the end.
                    file.set_len(end + tail.len() as u64)?;
                    file.seek(io::SeekFrom::End(0))?;
                    Ok(())
                }
                (How::Replace { file, .. }, Body::Memory(bytes)) => {
                    head(file)?;
                    file.write_all(&bytes)?;
                    file.write_all(&tail)?;
                    file.flush()
                }
                (_, Body::Spill(body)) => {
                    let mut file = body.into_file()?;
                    // Behind the routines: the head, then the tail; the commit copies the
                    // head first.
                    let routines = file.stream_position()?;
                    let mut buffered = io::BufWriter::with_capacity(WRITE_BUFFER, &file);
                    head(&mut buffered)?;
                    buffered.flush()?;
                    drop(buffered);
                    let head_end = file.stream_position()?;
                    file.write_all(&tail)?;
                    let end = head_end + tail.len() as u64;
                    self.bytes = Vec::new();
                    self.spilled = Some(Spilled { file, pieces: [routines..head_end, 0..routines, head_end..end] });
                    Ok(())
                }
                (_, body) => {
                    let mut head_bytes = Vec::new();
                    head(&mut head_bytes)?;
                    let body = match body {
                        Body::Memory(bytes) => bytes,
                        Body::Direct(_) | Body::Behind { .. } | Body::Spill(_) => {
                            return Err(io::Error::other("internal error: a body in a file elsewhere"));
                        }
                    };
                    self.bytes = [head_bytes, body, tail].concat();
                    Ok(())
                }
            }
        })();
        result.map_err(|source| self.failed(source))
    }

    /// [`Pending::stage`] for an output written in order by `write`, in pieces: a file
    /// replaced by a rename gets them straight into its temporary file (64 KiB at a time),
    /// with no room left and nothing moved; other destinations get them in memory, and past
    /// 1 MiB in an unnamed temporary file (`SpillOver`), written on commit. For outputs whose
    /// head is known before their routines are written (a whole document transformed before
    /// writing).
    pub fn stage_written(
        &mut self,
        write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), OutputError> {
        (self.spilled, self.spilling) = (None, false);
        let result = match &mut self.how {
            How::Replace { file, .. } => Self::discard_direct(file, &mut self.direct).and_then(|()| {
                let mut buffered = io::BufWriter::with_capacity(WRITE_BUFFER, &*file);
                write(&mut buffered).and_then(|()| buffered.flush())
            }),
            How::Stdout | How::Stderr | How::Direct(_) | How::InPlace(_) => {
                let mut sink = SpillOver::default();
                let written = write(&mut sink).and_then(|()| sink.flush());
                self.spilling = sink.file.is_some();
                written.and_then(|()| match sink.file {
                    None => {
                        self.bytes = sink.memory;
                        Ok(())
                    }
                    Some(file) => {
                        let mut file = file.into_inner().map_err(io::IntoInnerError::into_error)?;
                        let end = file.stream_position()?;
                        self.spilled = Some(Spilled { file, pieces: [0..0, 0..end, end..end] });
                        Ok(())
                    }
                })
            }
        };
        result.map_err(|source| self.failed(source))
    }

    /// Makes the staged bytes visible at the destination.
    pub fn commit(mut self) -> Result<(), OutputError> {
        let bytes = std::mem::take(&mut self.bytes);
        // From here on a failure is the destination's.
        self.spilling = false;
        if let Some(spilled) = self.spilled.take() {
            let result = match &mut self.how {
                How::Stdout => {
                    let mut out = io::stdout().lock();
                    out.flush().and_then(|()| spilled.copy_out(&mut out, raw_descriptor(&io::stdout())))
                }
                How::Stderr => spilled.copy_out(&mut io::stderr().lock(), raw_descriptor(&io::stderr())),
                How::Direct(file) => {
                    let descriptor = raw_descriptor(&*file);
                    spilled.copy_out(file, descriptor)
                }
                How::InPlace(file) => file.set_len(0).and_then(|()| {
                    let descriptor = raw_descriptor(&*file);
                    spilled.copy_out(file, descriptor)
                }),
                How::Replace { .. } => Err(io::Error::other("internal error: a replaced file's output spilled")),
            };
            return result.map_err(|source| self.failed(source));
        }
        let result = match &mut self.how {
            How::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(&bytes).and_then(|()| out.flush())
            }
            How::Stderr => {
                let mut out = io::stderr().lock();
                out.write_all(&bytes).and_then(|()| out.flush())
            }
            How::Direct(file) => file.write_all(&bytes).and_then(|()| file.flush()),
            How::InPlace(file) => file.set_len(0).and_then(|()| file.write_all(&bytes)),
            How::Replace { target, temp, replaces, .. } => match temp.take() {
                Some(from) => replace(&from, target, *replaces).inspect_err(|_| {
                    let _ = fs::remove_file(&from);
                }),
                None => Ok(()),
            },
        };
        result.map_err(|source| self.failed(source))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let How::Replace { temp: Some(temp), .. } = &self.how {
            let _ = fs::remove_file(temp);
        }
    }
}

/// What goes before a streamed output's routines ([`Pending::stage_streamed`]).
#[derive(Clone, Copy)]
pub struct Head<'h> {
    /// Writes it.
    pub write: &'h dyn Fn(&mut dyn Write) -> io::Result<()>,
    /// How many bytes `write` writes, where that can be known without writing them; asked
    /// only where the routines were written behind room for the head ([`Body::Behind`]).
    pub len: &'h dyn Fn() -> Option<u64>,
}

/// Moves the `routines` bytes at `from` in `file` to where `head` ends, writes `head` in front
/// of them and returns where they begin. `claimed` is the head's length, counted beforehand
/// (`xaif::write::head_len`, under a millisecond).
///
/// The routines were written from `from` on while the head was unknown (the passes add
/// temporaries to its symbol tables to the end), into the output itself rather than a spill
/// file beside it: the move reads and writes pages the output already has, where a spill file's
/// copy had to fill as many fresh ones and then free the spill file's (16 MiB tangent, 81 MB of
/// routines behind a 10 MB head, a C model of both on one thread, the routines' writing
/// included, five runs: 31–37 ms against 37–67 ms of CPU time).
///
/// Where the head fits before `from`, as the callers' room is meant to let it, the two overlap:
/// this thread writes the head while another moves the routines down, and then moves too (on a
/// 16 MiB tangent the head takes 8–10 ms). Where it does not, the routines move up first and
/// the head follows. A head whose length differs from `claimed` (a fault of the count) is
/// never let past it: the move completes, the head is made in memory and the routines are
/// moved again to fit it.
fn move_behind(
    file: &File,
    head: &dyn Fn(&mut dyn Write) -> io::Result<()>,
    claimed: Option<u64>,
    from: u64,
    routines: u64,
    mut spares: Vec<Vec<u8>>,
) -> io::Result<u64> {
    // Without a count the head is made in memory first, for its length.
    let made = match claimed {
        Some(_) => None,
        None => {
            let mut text = Vec::new();
            head(&mut text)?;
            Some(text)
        }
    };
    let len = made.as_ref().map_or(claimed.unwrap_or(0), |text| text.len() as u64);
    // The blocks before `from` were allocated when the body began ([`Room`]), or by the move
    // before this one; a head longer than that needs the rest.
    if len > from {
        allocate(file, from, len - from);
    }
    let moving = Move::new(file, from, len, routines);
    let theirs = spares.pop().unwrap_or_default();
    let mut pieces = Pieces { file, buffer: spares.pop().unwrap_or_default(), at: 0, limit: len, over: false };
    let written = if made.is_none() && len <= from {
        // The head lies before both places of the routines: written while they move.
        let ((written, here), there) = moving.beside(theirs, || {
            let written = pieces.write_head(head);
            if written.is_err() {
                // The run fails: the move is not needed.
                moving.give_up();
            }
            (written, moving.take_pieces(std::mem::take(&mut pieces.buffer)))
        });
        here.and(there)?;
        written?
    } else {
        // The head's place is free once the routines have left it.
        let (here, there) = moving.beside(theirs, || moving.take_pieces(std::mem::take(&mut pieces.buffer)));
        here.and(there)?;
        match &made {
            Some(text) => write_at(file, text, 0).map(|()| true)?,
            None => pieces.write_head(head)?,
        }
    };
    if written {
        return Ok(len);
    }
    // The routines are whole at `len` (a head that did not fit its length wrote none of them
    // over).
    move_behind(file, head, None, len, routines, spares)
}

/// Writes all of `bytes` to `file` at `offset`, leaving its position alone.
fn write_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.write_all_at(bytes, offset)
    }
    #[cfg(not(unix))]
    {
        let _ = (file, bytes, offset);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// Reads exactly `buffer.len()` bytes of `file` at `offset`, leaving its position alone.
fn read_at(file: &File, buffer: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(buffer, offset)
    }
    #[cfg(not(unix))]
    {
        let _ = (file, buffer, offset);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// How much of a [`Move`] one thread takes at a time.
const MOVE_PIECE: u64 = 1 << 20;

/// The head's writer in [`move_behind`]: writes at `at` in pieces of at least [`MOVE_PIECE`]
/// bytes, gathered in `buffer` (a body's chunk, whose pages are in memory already: a
/// `BufWriter`'s fresh 1 MiB buffer took 206 page faults on the head's thread), and nothing
/// at or past `limit`, where the routines are (a head longer than counted sets `over`).
/// Fewer, larger writes also wait less at the file's lock for the move's pieces.
struct Pieces<'f> {
    file: &'f File,
    buffer: Vec<u8>,
    at: u64,
    limit: u64,
    over: bool,
}

impl Pieces<'_> {
    /// Writes what `head` writes; `Ok(false)` where that was not `limit` bytes.
    fn write_head(&mut self, head: &dyn Fn(&mut dyn Write) -> io::Result<()>) -> io::Result<bool> {
        self.buffer.clear();
        match head(self).and_then(|()| self.flush()) {
            Ok(()) => Ok(!self.over && self.at == self.limit),
            Err(_) if self.over => Ok(false),
            Err(error) => Err(error),
        }
    }
}

impl Write for Pieces<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes).map(|()| bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= MOVE_PIECE as usize {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        let end = self.at + self.buffer.len() as u64;
        if end > self.limit {
            self.over = true;
            return Err(io::Error::other("internal error: the head is longer than counted"));
        }
        write_at(self.file, &self.buffer, self.at)?;
        self.at = end;
        self.buffer.clear();
        Ok(())
    }
}

/// A move of `len` bytes of one file from `from` to `to`, in pieces of [`MOVE_PIECE`] that any
/// number of threads take in turn ([`Move::take_pieces`]), leaving the file's position alone.
///
/// Where the two ranges overlap, a piece is written only once every piece whose place it
/// takes has been read: the pieces are taken in the order the move goes (from the bottom when
/// it goes down, from the top when it goes up), so those were taken earlier, and the lowest
/// (highest) piece taken waits for none. Through a buffer rather than the kernel's copy
/// (`copy_file_range`, which refuses overlapping ranges of one file and copies a pipe's worth,
/// 64 KiB, at a time).
struct Move<'f> {
    file: &'f File,
    from: u64,
    to: u64,
    len: u64,
    /// How many pieces have been taken.
    taken: std::sync::atomic::AtomicU64,
    /// Which pieces have been read, by their place in the file.
    read: Box<[std::sync::atomic::AtomicBool]>,
    /// A thread failed: the others stop at their next piece.
    failed: std::sync::atomic::AtomicBool,
}

impl<'f> Move<'f> {
    fn new(file: &'f File, from: u64, to: u64, len: u64) -> Self {
        let pieces = if from == to { 0 } else { len.div_ceil(MOVE_PIECE) };
        Move {
            file,
            from,
            to,
            len,
            taken: std::sync::atomic::AtomicU64::new(0),
            read: (0..pieces).map(|_| std::sync::atomic::AtomicBool::new(false)).collect(),
            failed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Runs `here` on this thread while a second one takes pieces through `buffer`, and gives
    /// both results (the second `Ok` where no thread could be started: `here` is to take
    /// pieces too, and then takes them all).
    fn beside<T>(&self, buffer: Vec<u8>, here: impl FnOnce() -> T) -> (T, io::Result<()>) {
        std::thread::scope(|scope| {
            let helper =
                std::thread::Builder::new().name("move".into()).spawn_scoped(scope, || self.take_pieces(buffer));
            let result = here();
            let there = match helper {
                Ok(helper) => helper.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(_) => Ok(()),
            };
            (result, there)
        })
    }

    /// Stops every thread at its next piece.
    fn give_up(&self) {
        self.failed.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Moves pieces no thread has taken yet, through `buffer`, until none are left; an error
    /// stops every thread at its next piece (a file shorter than the move is one).
    fn take_pieces(&self, mut buffer: Vec<u8>) -> io::Result<()> {
        use std::sync::atomic::Ordering::Relaxed;
        let pieces = self.read.len() as u64;
        loop {
            let turn = self.taken.fetch_add(1, Relaxed);
            if turn >= pieces || self.failed.load(Relaxed) {
                return Ok(());
            }
            let piece = if self.to < self.from { turn } else { pieces - 1 - turn };
            let moved = self.piece(&mut buffer, piece);
            if moved.is_err() {
                self.give_up();
                return moved;
            }
        }
    }

    fn piece(&self, buffer: &mut Vec<u8>, piece: u64) -> io::Result<()> {
        use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
        let start = piece * MOVE_PIECE;
        let len = usize::try_from((self.len - start).min(MOVE_PIECE)).map_err(io::Error::other)?;
        buffer.resize(len, 0);
        read_at(self.file, buffer, self.from + start)?;
        self.read[piece as usize].store(true, Release);
        // The pieces whose places this one's destination covers.
        let (first, last) = (self.to + start, self.to + start + len as u64 - 1);
        let covered = |offset: u64| offset.checked_sub(self.from).map(|o| o / MOVE_PIECE);
        let lowest = covered(first.max(self.from)).unwrap_or(0);
        let highest = covered(last).map_or(0, |p| p.min(self.read.len() as u64 - 1));
        if last >= self.from && first < self.from + self.len {
            for other in lowest..=highest {
                while !self.read[other as usize].load(Acquire) {
                    if self.failed.load(Relaxed) {
                        return Ok(());
                    }
                    std::thread::yield_now();
                }
            }
        }
        write_at(self.file, buffer, self.to + start)
    }
}

fn prepare_path(path: &Path) -> io::Result<How> {
    let path = follow_links(path)?;
    if let Some(fd) = descriptor_alias(&path) {
        return Ok(match fd {
            Some(1) => How::Stdout,
            Some(2) => How::Stderr,
            // Another descriptor: opening its alias reaches the same file, pipe or terminal.
            // Behind a regular file, append, so a shell's `3>>log` keeps what it holds (and
            // `3>log` is empty anyway).
            _ => {
                let regular = fs::metadata(&path)?.is_file();
                How::Direct(OpenOptions::new().write(true).append(regular).open(&path)?)
            }
        });
    }
    match fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => Err(io::Error::new(io::ErrorKind::IsADirectory, "is a directory")),
        Ok(meta) if meta.is_file() => prepare_regular(&path, &meta),
        // Character and block devices, named pipes: never replaced, written as they are.
        Ok(_) => Ok(How::Direct(OpenOptions::new().write(true).open(&path)?)),
        Err(e) if e.kind() == io::ErrorKind::NotFound && path.file_name().is_none() => {
            Err(io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let (temp, file) = create_temp(&path)?;
            Ok(How::Replace { target: path, temp: Some(temp), file, replaces: false })
        }
        Err(e) => Err(e),
    }
}

/// The buffer in front of a replaced file that [`Pending::stage_written`] writes in pieces.
const WRITE_BUFFER: usize = 1 << 16;

/// Puts the staged file `temp` in the place of `target`, which existed when the output was
/// prepared (`replaces`) or did not.
///
/// A rename over an existing file costs ext4 more than the file's writing did: it allocates the
/// new file's blocks and starts writing them before the rename returns (its safeguard for
/// programs that replace a file without syncing it: 35–60 ms of the tangent of a 16 MiB
/// input, about 0.15 s of its adjoint), or, when they were allocated beforehand, they must be
/// freed (and, on a file system mounted with `discard`, discarded) when the next run replaces
/// the file. So a file that replaces an existing one swaps names with it (`renameat2` with
/// `RENAME_EXCHANGE`, atomic like a rename: the name shows the old contents or the new ones,
/// never neither) and the old contents, now under the temporary name, are removed; the kernel
/// writes the new file back later, as it does any file. For a 29 KB output written over the
/// previous run's, the writing and the replacement took 0.10 ms that way against 0.16–0.19 ms
/// for blocks allocated beforehand and a rename (a C model, 200 runs each with 2 ms between
/// them); a corpus file's tangent, one process each, 0.15 ms less. What the swap gives up is
/// that safeguard: the new contents surviving a power failure in the seconds after the run,
/// which no output of ours promised (a run syncs nothing).
fn replace(temp: &Path, target: &Path, replaces: bool) -> io::Result<()> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if replaces && swap_names(temp, target).is_ok() {
        match fs::remove_file(temp) {
            Ok(()) => return Ok(()),
            // Not a file any more (something replaced `target` while the run worked): the
            // names go back, and the rename below fails or succeeds as it would have.
            Err(_) => swap_names(temp, target)?,
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = replaces;
    fs::rename(temp, target)
}

/// Exchanges what two paths of one file system name, atomically.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn swap_names(a: &Path, b: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other);
    let (a, b) = (c_path(a)?, c_path(b)?);
    // SAFETY: both are NUL-terminated paths that outlive the call; the call reads nothing else.
    let result =
        unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE) };
    if result == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// An existing regular file: replaced by a rename unless other names share its inode or its
/// directory refuses a new file.
fn prepare_regular(path: &Path, meta: &fs::Metadata) -> io::Result<How> {
    // A file we may not write stays as it is, although its directory would let a rename
    // replace it: as for any program that opens its output.
    let in_place = OpenOptions::new().write(true).open(path)?;
    if links(meta) > 1 {
        return Ok(How::InPlace(in_place));
    }
    match create_temp(path) {
        Ok((temp, file)) => {
            // The replacement looks like the file it replaces: mode always, owner where the
            // system lets us (as root, or when nothing changes).
            let keep = file.set_permissions(meta.permissions()).and_then(|()| keep_owner(&file, meta));
            if let Err(e) = keep {
                let _ = fs::remove_file(&temp);
                return Err(e);
            }
            Ok(How::Replace { target: path.to_path_buf(), temp: Some(temp), file, replaces: true })
        }
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Ok(How::InPlace(in_place)),
        Err(e) => Err(e),
    }
}

/// The end of a chain of symbolic links (the path itself if it is none); a dangling link gives
/// the path it names, which will be created.
fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut path = path.to_path_buf();
    // Linux's own limit on links followed in one lookup.
    for _ in 0..40 {
        // `/dev/stdout` leads to `/proc/self/fd/1`, whose "target" is `pipe:[…]` or the like:
        // stop at the alias and let the kernel resolve it.
        if descriptor_alias(&path).is_some() {
            return Ok(path);
        }
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = fs::read_link(&path)?;
                path = match path.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// For the names under which the system shows a process its open descriptors (`/dev/stdout`,
/// `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`): `Some(Some(N))`, or `Some(None)` when the
/// number is not known from the name alone.
fn descriptor_alias(path: &Path) -> Option<Option<u32>> {
    let number = |rest: &OsStr| rest.to_str().and_then(|n| n.parse::<u32>().ok());
    if path == Path::new("/dev/stdout") {
        return Some(Some(1));
    }
    if path == Path::new("/dev/stderr") {
        return Some(Some(2));
    }
    for dir in ["/dev/fd", "/proc/self/fd", "/proc/thread-self/fd"] {
        if path.parent() == Some(Path::new(dir)) {
            return Some(path.file_name().and_then(number));
        }
    }
    None
}

/// The directory `target` is named in (`.` for a bare file name).
fn directory_of(target: &Path) -> &Path {
    match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Creates a new, empty temporary file beside `target` with the default mode for new files.
fn create_temp(target: &Path) -> io::Result<(PathBuf, File)> {
    let dir = directory_of(target);
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let pid = std::process::id();
    for attempt in 0..100 {
        let temp = dir.join(format!(".{name}.{pid}.{attempt}.tmp"));
        // Readable too: streamed routines are moved within it (`move_behind`).
        match OpenOptions::new().read(true).write(true).create_new(true).open(&temp) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, "no free temporary file name"))
}

#[cfg(unix)]
fn links(meta: &fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(meta)
}

#[cfg(not(unix))]
fn links(_meta: &fs::Metadata) -> u64 {
    1
}

#[cfg(unix)]
fn keep_owner(file: &File, meta: &fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let (uid, gid) = (meta.uid(), meta.gid());
    let new = file.metadata()?;
    if new.uid() == uid && new.gid() == gid {
        return Ok(());
    }
    // Not permitted for an ordinary user replacing another user's file in a directory they may
    // write; the new file is then theirs, as with any editor that saves by renaming.
    match std::os::unix::fs::fchown(file, Some(uid), Some(gid)) {
        Err(e) if e.kind() != io::ErrorKind::PermissionDenied => Err(e),
        _ => Ok(()),
    }
}

#[cfg(not(unix))]
fn keep_owner(_file: &File, _meta: &fs::Metadata) -> io::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};

    fn write(destination: &Destination, bytes: &str) -> Result<(), OutputError> {
        let mut pending = prepare(destination)?;
        pending.stage(bytes.as_bytes().to_vec())?;
        pending.commit()
    }

    /// `out.xaif` in `dir`, holding "old" under a second name too (`other.xaif`): a file
    /// written in place, as standard output, pipes and devices are.
    fn file_with_two_names(dir: &Path) -> PathBuf {
        let path = dir.join("out.xaif");
        fs::write(&path, "old").unwrap();
        fs::hard_link(&path, dir.join("other.xaif")).unwrap();
        path
    }

    /// Writes pieces of `sizes` into `body`, written and appended to the chunk it lends in
    /// turn, then stages it behind a head of `head_text` (claimed to be `claimed` bytes long)
    /// with the tail "tail" and commits; `expected` gains the routines and the tail.
    fn stream_pieces(
        mut pending: Pending,
        mut body: Body,
        sizes: &[usize],
        head_text: &[u8],
        claimed: Option<u64>,
        expected: &mut Vec<u8>,
    ) {
        use crate::streaming::RoutineSink;
        for (i, &size) in sizes.iter().enumerate() {
            let piece: Vec<u8> = (0..size).map(|j| (i * 31 + j % 251) as u8).collect();
            if i % 2 == 0 {
                body.write_all(&piece).unwrap();
            } else {
                body.lend().expect("a body in a file lends its chunk").extend_from_slice(&piece);
                body.appended().unwrap();
            }
            expected.extend_from_slice(&piece);
        }
        expected.extend_from_slice(b"tail");
        let write_head = |sink: &mut dyn Write| head_text.chunks(65_537).try_for_each(|part| sink.write_all(part));
        let head = Head { write: &write_head, len: &|| claimed };
        pending.stage_streamed(head, body, b"tail".to_vec()).unwrap();
        pending.commit().unwrap();
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[test]
    fn a_new_file_appears_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.xaif");
        let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
        pending.stage(b"document".to_vec()).unwrap();
        assert!(!path.exists());
        pending.commit().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "document");
        assert_eq!(entries(dir.path()), ["out.xaif"]);
    }

    /// A streamed output's routines go through the body's thread in chunks: writes and
    /// appends to the lent chunk, smaller than a chunk, larger than several, and ending exactly
    /// on a chunk's end, all arrive in order between the head and the tail, whether the head
    /// fits the room left for it or not, and whether its length was counted right or not.
    #[test]
    fn a_streamed_body_arrives_whole_and_in_order() {
        // A head of more than two pieces, written in uneven parts as the writer drains.
        let large_head: Vec<u8> = (0..2 * MOVE_PIECE as usize + 70_001).map(|j| (j % 241) as u8).collect();
        let large = large_head.len() as u64;
        // The head's length not known (made in memory, then the routines moved), known
        // (written while they move, or after they moved up), and counted wrongly either way
        // (moved again: the same file); room for the head too little, exact and plenty.
        for (head_text, claimed, room) in [
            (&b"head"[..], None, 0),
            (b"head", None, 100),
            (b"head", Some(4), 0),
            (b"head", Some(4), 4),
            (b"head", Some(4), 3 * MOVE_PIECE),
            (b"head", Some(2), 10),
            (b"head", Some(9), 10),
            (b"head", Some(9), 0),
            (b"head", Some(0), 10),
            (&large_head, Some(large), large + 1),
            (&large_head, Some(large), large),
            (&large_head, Some(large), MOVE_PIECE / 2),
            (&large_head, Some(large - 1), large + 5),
            (&large_head, Some(large + 1), 7),
            (&large_head, None, 0),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("out.xaif");
            let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
            let body = pending.body(BODY_FILE_FROM, room, false);
            assert!(matches!(body, Body::Behind { .. }), "the output's file and a thread should be available here");
            let mut expected = head_text.to_vec();
            let sizes = [1, 7, BODY_CHUNK - 8, 3 * BODY_CHUNK + 5, BODY_CHUNK - 5, 100_000];
            stream_pieces(pending, body, &sizes, head_text, claimed, &mut expected);
            assert!(
                fs::read(&path).unwrap() == expected,
                "the committed file differs from what was written ({claimed:?}, room {room})"
            );
            assert_eq!(entries(dir.path()), ["out.xaif"]);
            // The blocks allocated ahead of the routines and before them are given back: the
            // output holds no more than its length.
            #[cfg(unix)]
            {
                let allocated = std::os::unix::fs::MetadataExt::blocks(&fs::metadata(&path).unwrap()) * 512;
                let len = expected.len() as u64;
                assert!(allocated <= len.next_multiple_of(1 << 16), "{allocated} bytes allocated for {len}");
            }
        }
    }

    /// What goes through [`Pieces`] arrives whole and in order at its place, whatever the
    /// buffer held before and however the parts fall across the pieces; nothing is written
    /// at or past its limit.
    #[test]
    fn pieces_write_what_they_gather_and_stop_at_their_limit() {
        let text: Vec<u8> = (0..3 * MOVE_PIECE as usize + 12_345).map(|j| (j % 239) as u8).collect();
        let len = text.len() as u64;
        for part in [1, 4_096, 65_537, MOVE_PIECE as usize - 1, 2 * MOVE_PIECE as usize + 3] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("pieces");
            let file = File::create(&path).unwrap();
            let mut pieces = Pieces { file: &file, buffer: b"stale".to_vec(), at: 0, limit: len, over: false };
            let fitted = pieces.write_head(&|sink| text.chunks(part).try_for_each(|chunk| sink.write_all(chunk)));
            assert!(fitted.unwrap(), "parts of {part}: the text is as long as its limit");
            assert!(pieces.buffer.is_empty());
            assert!(fs::read(&path).unwrap() == text, "parts of {part}");

            // One byte too many: refused at the limit, and the file holds only whole pieces
            // below it.
            let file = File::create(&path).unwrap();
            let mut pieces = Pieces { file: &file, buffer: Vec::new(), at: 0, limit: len - 1, over: false };
            let fitted = pieces.write_head(&|sink| text.chunks(part).try_for_each(|chunk| sink.write_all(chunk)));
            assert!(!fitted.unwrap(), "parts of {part}: longer than the limit");
            assert!(pieces.over);
            assert!(fs::metadata(&path).unwrap().len() < len, "parts of {part}: written past the limit");
            // One byte too few: written, and reported short.
            let mut pieces = Pieces { file: &file, buffer: Vec::new(), at: 0, limit: len + 1, over: false };
            assert!(!pieces.write_head(&|sink| sink.write_all(&text)).unwrap());
            assert!(!pieces.over);
        }
    }

    /// The room before the routines is filled with zeros, piece by piece, exactly to its end,
    /// and filling it changes nothing past it. (Unix only: elsewhere no body has a room.)
    #[cfg(unix)]
    #[test]
    fn the_room_fills_with_zeros_to_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("room");
        for len in [0, 1, ROOM_PIECE - 1, ROOM_PIECE, 3 * ROOM_PIECE + 5] {
            let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
            // What the body wrote behind the room, which filling must leave alone.
            file.seek(io::SeekFrom::Start(len)).unwrap();
            file.write_all(b"routines").unwrap();
            write_at(&file, &vec![b'x'; len as usize], 0).unwrap();
            let mut room = Room::new(&file, len);
            let mut pieces = 0;
            while room.fill_next().unwrap() {
                pieces += 1;
            }
            assert_eq!(pieces, len.div_ceil(ROOM_PIECE));
            assert!(!room.fill_next().unwrap(), "a filled room stays filled");
            let mut expected = vec![0; len as usize];
            expected.extend_from_slice(b"routines");
            assert!(fs::read(&path).unwrap() == expected, "room of {len} bytes");
        }
    }

    /// Whether this machine's temporary directory takes direct writes and moves blocks
    /// ([`direct::open`]): the file system the tests' outputs are written to. CI runs where
    /// it does, and there a test that needs it fails rather than skip.
    fn temporary_directory_moves_blocks() -> bool {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("probe");
        let file = File::create(&path).unwrap();
        let moves = direct::open(&path, &file).is_some();
        assert!(moves || std::env::var_os("CI").is_none(), "CI's temporary directory should take direct writes");
        moves
    }

    /// Behind a head that ends on a block boundary, the routines are written past the page
    /// cache and put behind the head by moving blocks: out of room left over, into room that
    /// was short, with none to move. A head counted wrong (on a block boundary or not, longer
    /// or shorter) or not counted takes the move of bytes instead. Every way, what arrives is
    /// the head, every piece in order (written and appended, some shorter than a block, some
    /// longer than a chunk, the last ending short of a block) and the tail.
    #[test]
    fn a_body_behind_an_aligned_head_arrives_whole_and_in_order() {
        let block = direct::ALIGNMENT as u64;
        let moves_blocks = temporary_directory_moves_blocks();
        let large = 2 * MOVE_PIECE + 3 * block;
        for (head_len, claimed, room) in [
            (block, Some(block), 0),
            (block, Some(block), block),
            (3 * block, Some(3 * block), 100 * block + 5),
            (large, Some(large), MOVE_PIECE / 2),
            (large, Some(large), 4 * MOVE_PIECE),
            (block, Some(block + 1), 10 * block),
            (block, Some(2 * block), 10 * block),
            (2 * block, Some(block), 10 * block),
            (large, Some(large - block), large),
            (block, None, 10 * block),
            (0, Some(0), 3 * block),
        ] {
            let head_text: Vec<u8> = (0..head_len).map(|j| (j % 239) as u8).collect();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("out.xaif");
            let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
            let body = pending.body(BODY_FILE_FROM, room, true);
            let Body::Behind { writer, .. } = &body else { panic!("the output's file and a thread should be here") };
            assert_eq!(writer.direct, moves_blocks, "written past the page cache where blocks can be moved");
            let mut expected = head_text.clone();
            let sizes = [1, 7, BODY_CHUNK - 8, 3 * BODY_CHUNK + 5, 4_096, BODY_CHUNK - 5, 100_001];
            stream_pieces(pending, body, &sizes, &head_text, claimed, &mut expected);
            assert!(
                fs::read(&path).unwrap() == expected,
                "the committed file differs from what was written (head {head_len}, {claimed:?}, room {room})"
            );
            assert_eq!(entries(dir.path()), ["out.xaif"]);
        }
    }

    /// A body behind an aligned head that gets no routines at all (a document of symbols
    /// only): the head and the tail arrive, nothing between.
    #[test]
    fn an_empty_body_behind_an_aligned_head_leaves_the_head_and_the_tail() {
        let block = direct::ALIGNMENT as u64;
        for room in [0, block, 5 * block] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("out.xaif");
            let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
            let body = pending.body(BODY_FILE_FROM, room, true);
            let head_text = vec![b'h'; 2 * block as usize];
            let write_head = |sink: &mut dyn Write| sink.write_all(&head_text);
            let head = Head { write: &write_head, len: &|| Some(2 * block) };
            pending.stage_streamed(head, body, b"tail".to_vec()).unwrap();
            pending.commit().unwrap();
            assert!(fs::read(&path).unwrap() == [&head_text[..], b"tail"].concat(), "room {room}");
        }
    }

    /// A direct body whose writes the file system refuses after all (here: an unaligned
    /// start) writes through the page cache from there on, says so, and loses nothing.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_refused_direct_write_goes_through_the_page_cache() {
        if !temporary_directory_moves_blocks() {
            return;
        }
        let at = direct::ALIGNMENT as u64 + 1;
        let finished = write_direct_body(at, Pace::default(), 3 * BODY_CHUNK + 12_345);
        assert!(!finished.direct, "the refused write should have gone through the page cache");
        assert!(finished.rest.len() < direct::ALIGNMENT, "only the last bytes short of a block are left");
    }

    /// Writes `len` bytes through a direct body from `at` on, judged by `pace`, and checks
    /// that what reached the file and what was left to write make them up, in order.
    #[cfg(target_os = "linux")]
    fn write_direct_body(at: u64, pace: Pace, len: usize) -> Finished {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("direct");
        let file = File::create(&path).unwrap();
        let mut writer = BodyWriter::direct_at_pace(direct::open(&path, &file).unwrap(), at, pace).unwrap();
        let text: Vec<u8> = (0..len).map(|j| (j % 247) as u8).collect();
        writer.write_all(&text).unwrap();
        let finished = writer.finish().unwrap();
        let written = (finished.end - at) as usize;
        assert_eq!(written + finished.rest.len(), text.len());
        let on_disk = fs::read(&path).unwrap();
        assert!(on_disk[at as usize..] == text[..written] && finished.rest[..] == text[written..]);
        finished
    }

    /// The disk is found slow when writes keep the thread busy, not before [`PACE_FROM`]
    /// chunks, also late in a run, but not for one stall of a fast disk.
    #[test]
    fn a_disk_is_found_slow_when_writes_keep_the_thread_busy() {
        use std::time::Duration;
        let ms = Duration::from_millis;
        // The chunk (counted from 1) at which the disk is first found slow, if any, where the
        // driver makes a chunk every 3 ms and the j-th write takes `took(j)`: the thread waits
        // for a chunk only when it is ahead of the driver.
        let found_slow = |took: &dyn Fn(usize) -> Duration| {
            let (mut pace, mut elapsed) = (Pace::default(), Duration::ZERO);
            (1..=200).find(|&j| {
                elapsed = (elapsed + took(j)).max(ms(3 * j as u64));
                !pace.keeps_up(took(j), elapsed)
            })
        };
        // A slow disk: all of the thread's time goes in writes.
        assert_eq!(found_slow(&|_| ms(5)), Some(PACE_FROM));
        // A fast disk: the thread waits twice as long as it writes.
        assert_eq!(found_slow(&|_| ms(1)), None);
        // Busy only at the start (the first write takes twice as long as the driver takes
        // for a chunk): kept.
        assert_eq!(found_slow(&|j| if j == 1 { ms(6) } else { ms(1) }), None);
        // A stall of 40 ms once 50 chunks went by, on a fast disk: kept.
        assert_eq!(found_slow(&|j| if j == 50 { ms(40) } else { ms(1) }), None);
        // A disk that lets the first 30 chunks through at once, then holds every one: found
        // slow, and not long after it began to hold them.
        let slow = found_slow(&|j| if j <= 30 { ms(1) } else { ms(10) }).unwrap();
        assert!((31..=50).contains(&slow), "found slow at chunk {slow}");
    }

    /// The scheduler's account tells sleeping (as for the disk) from running or waiting to
    /// run: a sleep counts as waiting for the disk, a spin of the same length does not.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_clock_counts_sleep_as_waiting_for_the_disk() {
        use std::time::{Duration, Instant};
        let clock = ThreadClock::open();
        assert!(clock.scheduled().is_some(), "Linux keeps /proc/thread-self/schedstat");
        let (started, scheduled) = (Instant::now(), clock.scheduled());
        std::thread::sleep(Duration::from_millis(30));
        let slept = clock.waited_for_the_disk(started, scheduled);
        assert!(slept >= Duration::from_millis(25), "slept 30 ms, counted {slept:?}");
        let (started, scheduled) = (Instant::now(), clock.scheduled());
        while started.elapsed() < Duration::from_millis(30) {
            std::hint::spin_loop();
        }
        let spun = clock.waited_for_the_disk(started, scheduled);
        assert!(spun < Duration::from_millis(10), "spun 30 ms, counted {spun:?} as waiting");
    }

    /// A direct body on a disk found slow (here: any write is too slow, even one that did not
    /// sleep) writes through the page cache from there on, says so, and loses nothing.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_body_on_a_slow_disk_goes_through_the_page_cache() {
        if !temporary_directory_moves_blocks() {
            return;
        }
        let pace = Pace { busy: -1.0, ..Pace::default() };
        let finished = write_direct_body(2 * direct::ALIGNMENT as u64, pace, (PACE_FROM + 3) * BODY_CHUNK + 777);
        assert!(!finished.direct, "the disk should have been found slow");
    }

    /// A head that fails while the routines are moved behind it fails the output: its error,
    /// not the move's outcome, is reported, and the file the output was to replace stays.
    #[test]
    fn a_failing_head_fails_the_streamed_output() {
        for (room, aligned) in [(0, false), (4, false), (100, false), (0, true), (8_192, true)] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("out.xaif");
            fs::write(&path, "old").unwrap();
            let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
            let mut body = pending.body(BODY_FILE_FROM, room, aligned);
            body.write_all(&vec![b'r'; 5 * MOVE_PIECE as usize + 3]).unwrap();
            let head = Head {
                write: &|sink| {
                    sink.write_all(b"he")?;
                    Err(io::Error::other("the head failed"))
                },
                len: &|| Some(if aligned { direct::ALIGNMENT as u64 } else { 4 }),
            };
            let failed = pending.stage_streamed(head, body, b"tail".to_vec()).expect_err("the head failed");
            assert_eq!(failed.source.to_string(), "the head failed");
            drop(pending);
            assert_eq!(fs::read(&path).unwrap(), b"old");
            assert_eq!(entries(dir.path()), ["out.xaif"]);
        }
    }

    /// Moves `len` bytes of a file holding `before` bytes and then the bytes to move, from
    /// `from` to `to`, on `threads` threads, and returns the file's bytes and position.
    fn moved(from: u64, to: u64, len: u64, threads: usize) -> (Vec<u8>, Vec<u8>, u64) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("moved");
        let bytes: Vec<u8> = (0..from + len).map(|i| (i % 253) as u8 ^ (i / 253 % 7) as u8).collect();
        fs::write(&path, &bytes).unwrap();
        let mut file = OpenOptions::new().read(true).write(true).open(&path).unwrap();
        file.seek(io::SeekFrom::Start(3)).unwrap();
        let moving = Move::new(&file, from, to, len);
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(|| moving.take_pieces(Vec::new()))).collect();
            moving.take_pieces(vec![7; 3]).unwrap();
            helpers.into_iter().for_each(|helper| helper.join().unwrap().unwrap());
        });
        let position = file.stream_position().unwrap();
        (fs::read(&path).unwrap(), bytes[from as usize..].to_vec(), position)
    }

    /// A move lands where it is asked to, down or up, by less than a piece, by more, by whole
    /// pieces, overlapping itself or not, whether one thread or several take its pieces (the
    /// last one short), and leaves the file's position alone.
    #[test]
    fn a_move_lands_where_asked() {
        let p = MOVE_PIECE;
        let len = 3 * p + 17;
        for (from, to) in
            [(10, 3), (p + 10, 10), (3 * p, 0), (4 * p + 1, 0), (0, 5), (10, p + 10), (0, 2 * p), (5, 5 * p), (7, 7)]
        {
            for threads in [1, 2, 3] {
                let (file, moving, position) = moved(from, to, len, threads);
                assert_eq!(position, 3, "the position moved");
                let at = to as usize;
                assert!(file[at..at + len as usize] == moving[..], "{from} -> {to}, {threads} threads");
            }
        }
        // A file shorter than the move is an error for every thread.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short");
        fs::write(&path, vec![1; 2 * p as usize]).unwrap();
        let file = OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let short = Move::new(&file, 0, 10, 3 * p);
        std::thread::scope(|scope| {
            let helper = scope.spawn(|| short.take_pieces(Vec::new()));
            let here = short.take_pieces(Vec::new());
            let there = helper.join().unwrap();
            assert!(here.is_err() || there.is_err(), "a file shorter than the move");
        });
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Any move, on any number of threads, leaves the moved bytes at their new place.
        #[test]
        fn any_move_lands_where_asked(from in 0..3 * MOVE_PIECE, to in 0..3 * MOVE_PIECE, len in 1..4 * MOVE_PIECE, threads in 1usize..4) {
            let (file, moving, _) = moved(from, to, len, threads);
            let at = to as usize;
            proptest::prop_assert!(file[at..at + len as usize] == moving[..]);
        }
    }

    /// A direct body is the output itself: what it was given, then the tail, nothing copied.
    /// Given up (the run took another path), what it wrote is gone from what is staged then.
    #[test]
    fn a_direct_body_is_the_output_and_can_be_given_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.xaif");
        fs::write(&path, "old").unwrap();
        let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
        let mut body = pending.direct_body();
        assert!(matches!(body, Body::Direct(_)));
        let routines = vec![b'r'; 2 * BODY_CHUNK + 3];
        body.write_all(b"head").unwrap();
        body.write_all(&routines).unwrap();
        pending.stage_streamed(Head { write: &|_| Ok(()), len: &|| Some(0) }, body, b"tail".to_vec()).unwrap();
        pending.commit().unwrap();
        let written = fs::read(&path).unwrap();
        assert!(written == [&b"head"[..], &routines, b"tail"].concat(), "the direct body's output differs");

        let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
        let mut body = pending.direct_body();
        body.write_all(&routines).unwrap();
        drop(body);
        pending.stage(b"whole".to_vec()).unwrap();
        pending.commit().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "whole");
        assert_eq!(entries(dir.path()), ["out.xaif"]);
    }

    /// A body written behind room for the head, given up (the run took the whole-document
    /// path), leaves nothing of itself in what is staged then, whether staged whole or
    /// written in order.
    #[test]
    fn a_body_behind_the_head_can_be_given_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.xaif");
        for written in [false, true] {
            let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
            let mut body = pending.body(BODY_FILE_FROM, 1_000, false);
            assert!(matches!(body, Body::Behind { .. }));
            body.write_all(&vec![b'r'; 2 * BODY_CHUNK + 3]).unwrap();
            drop(body);
            if written {
                pending.stage_written(&mut |sink| sink.write_all(b"whole")).unwrap();
            } else {
                pending.stage(b"whole".to_vec()).unwrap();
            }
            pending.commit().unwrap();
            assert_eq!(fs::read_to_string(&path).unwrap(), "whole", "written in order: {written}");
            assert_eq!(entries(dir.path()), ["out.xaif"]);
        }
        // A small body stays in memory.
        let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
        assert!(matches!(pending.body(BODY_FILE_FROM - 1, 0, false), Body::Memory(_)));
    }

    /// A destination written in place (here a file with two names; standard output, pipes and
    /// devices alike) gets its routines through an unnamed temporary file: head, routines and
    /// tail arrive in that order on commit, copied by the kernel or, where it cannot (a
    /// descriptor opened for appending), by hand; nothing arrives before the commit, and a body
    /// given up leaves the destination as it was.
    #[test]
    fn a_body_for_a_destination_written_in_place_goes_through_a_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_with_two_names(dir.path());
        let appended = dir.path().join("log");
        fs::write(&appended, "before ").unwrap();
        let log = OpenOptions::new().append(true).open(&appended).unwrap();
        let alias = PathBuf::from(format!("/dev/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&log)));
        let routines: Vec<u8> = (0..3 * BODY_CHUNK + 11).map(|j| (j % 253) as u8).collect();
        let head_text: Vec<u8> = (0..SPILL_PIECE as usize + 5).map(|j| (j % 239) as u8).collect();
        for (destination, before) in [(&path, &b""[..]), (&alias, b"before ")] {
            let mut pending = prepare(&Destination::Path(destination.clone())).unwrap();
            for mut body in [pending.body(BODY_FILE_FROM, 0, false), pending.direct_body()] {
                assert!(matches!(body, Body::Spill(_)), "{}", destination.display());
                body.write_all(&routines).unwrap();
            }
            let mut body = pending.body(BODY_FILE_FROM, 0, false);
            body.write_all(&routines).unwrap();
            let write_head = |sink: &mut dyn Write| sink.write_all(&head_text);
            pending.stage_streamed(Head { write: &write_head, len: &|| None }, body, b"tail".to_vec()).unwrap();
            let written = if destination == &path { &path } else { &appended };
            let unchanged = if destination == &path { &b"old"[..] } else { b"before " };
            assert_eq!(fs::read(written).unwrap(), unchanged, "nothing before the commit");
            pending.commit().unwrap();
            let expected = [before, &head_text, &routines, b"tail"].concat();
            assert!(fs::read(written).unwrap() == expected, "{} differs", destination.display());
        }
        assert_eq!(fs::read(dir.path().join("other.xaif")).unwrap(), fs::read(&path).unwrap());
        assert_eq!(entries(dir.path()), ["log", "other.xaif", "out.xaif"]);
        // A small body stays in memory.
        let mut pending = prepare(&Destination::Stdout).unwrap();
        assert!(matches!(pending.body(BODY_FILE_FROM - 1, 0, false), Body::Memory(_)));
        assert!(matches!(pending.body(BODY_FILE_FROM, 0, false), Body::Spill(_)));
    }

    /// An output written in order for a destination written in place stays in memory while
    /// small and moves to a temporary file once past [`SPILL_OVER_FROM`]; either way the
    /// destination gets all of it, in order, on commit and not before.
    #[test]
    fn a_large_output_written_in_order_moves_to_a_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_with_two_names(dir.path());
        let mut before = b"old".to_vec();
        for size in [10, SPILL_OVER_FROM, SPILL_OVER_FROM + 1, 3 * SPILL_OVER_FROM + 12_345] {
            let text: Vec<u8> = (0..size).map(|j| (j % 251) as u8).collect();
            let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
            pending.stage_written(&mut |sink| text.chunks(70_001).try_for_each(|part| sink.write_all(part))).unwrap();
            assert_eq!(pending.spilled.is_some(), size > SPILL_OVER_FROM, "size {size}");
            assert!(fs::read(&path).unwrap() == before, "nothing before the commit (size {size})");
            pending.commit().unwrap();
            before.clone_from(&text);
            assert!(fs::read(&path).unwrap() == text, "size {size}");
        }
        assert_eq!(entries(dir.path()), ["other.xaif", "out.xaif"]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Writes of any sizes, whichever side of the spill-over they fall, arrive whole and in
        /// order; only an output past [`SPILL_OVER_FROM`] goes through a temporary file.
        #[test]
        fn any_output_written_in_order_arrives_whole(sizes in proptest::collection::vec(0usize..600_000, 0..8)) {
            let dir = tempfile::tempdir().unwrap();
            let path = file_with_two_names(dir.path());
            let pieces: Vec<Vec<u8>> =
                sizes.iter().enumerate().map(|(i, &n)| (0..n).map(|j| ((i * 7 + j) % 251) as u8).collect()).collect();
            let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
            pending.stage_written(&mut |sink| pieces.iter().try_for_each(|piece| sink.write_all(piece))).unwrap();
            let total: usize = sizes.iter().sum();
            proptest::prop_assert_eq!(pending.spilled.is_some(), total > SPILL_OVER_FROM);
            pending.commit().unwrap();
            proptest::prop_assert!(fs::read(&path).unwrap() == pieces.concat());
        }
    }

    /// A body's thread whose writes fail passes its error to the writer (at a later chunk or at
    /// the end), and a dropped body leaves no thread waiting.
    #[test]
    fn a_failing_body_writer_reports_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("read-only");
        fs::write(&path, "").unwrap();
        let mut writer = BodyWriter::new(File::open(&path).unwrap(), Some(0)).unwrap();
        let piece = vec![b'x'; BODY_CHUNK];
        let failed = (0..4).map(|_| writer.write_all(&piece)).find_map(Result::err);
        let error = match failed {
            Some(error) => error,
            None => writer.into_file().unwrap_err(),
        };
        assert_ne!(error.kind(), io::ErrorKind::Other, "the file's own error should arrive, not {error}");
        let dropped = BodyWriter::new(File::open(&path).unwrap(), None).unwrap();
        drop(dropped);
    }

    #[test]
    fn an_abandoned_output_leaves_nothing_and_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.xaif");
        fs::write(&path, "old").unwrap();
        let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
        pending.stage(b"new".to_vec()).unwrap();
        drop(pending);
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(entries(dir.path()), ["out.xaif"]);
    }

    #[test]
    fn a_replaced_file_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.xaif");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        write(&Destination::Path(path.clone()), "new").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o7777, 0o640);
    }

    /// A file that replaces an existing one swaps names with it and removes the old contents:
    /// the new contents, the old mode, nothing else left in the directory. One whose target is
    /// new is renamed.
    #[test]
    fn replacements_leave_only_the_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.xaif");
        for size in [10, 1 << 20, 3 << 20] {
            let contents = "x".repeat(size);
            fs::write(&path, "old").unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
            write(&Destination::Path(path.clone()), &contents).unwrap();
            assert!(fs::read_to_string(&path).unwrap() == contents, "size {size}");
            assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o7777, 0o640, "size {size}");
            assert_eq!(entries(dir.path()), ["out.xaif"], "size {size}");
            fs::remove_file(&path).unwrap();
            write(&Destination::Path(path.clone()), &contents).unwrap();
            assert!(fs::read_to_string(&path).unwrap() == contents, "new file, size {size}");
            assert_eq!(entries(dir.path()), ["out.xaif"], "new file, size {size}");
        }
    }

    /// An output written in pieces that replaces a file, below, at and past the size of the
    /// buffer in front of the file, in pieces and with a flush half way: the file holds exactly
    /// what was written, in order, with no block allocated past its end.
    #[test]
    fn written_replacements_arrive_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.xaif");
        let limit = WRITE_BUFFER;
        for (size, flush_at) in
            [(10, None), (limit - 1, None), (limit, None), (limit + 70_000, Some(5)), (3 << 20, None)]
        {
            fs::write(&path, "old").unwrap();
            let expected: Vec<u8> = (0..size).map(|j| (j % 253) as u8).collect();
            let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
            pending
                .stage_written(&mut |sink| {
                    for (k, piece) in expected.chunks(40_000).enumerate() {
                        sink.write_all(piece)?;
                        if flush_at == Some(k) {
                            sink.flush()?;
                        }
                    }
                    Ok(())
                })
                .unwrap();
            pending.commit().unwrap();
            assert!(fs::read(&path).unwrap() == expected, "size {size}: the file differs from what was written");
            assert_eq!(entries(dir.path()), ["out.xaif"], "size {size}");
            let allocated = fs::metadata(&path).unwrap().blocks() * 512;
            assert!(allocated <= (size as u64).next_multiple_of(1 << 16), "size {size}: {allocated} bytes allocated");
        }
    }

    /// A replacement whose target became a directory while the run worked fails as a rename
    /// onto a directory fails, and leaves the directory and its contents where they were.
    #[test]
    fn a_replacement_does_not_swap_with_a_directory() {
        for size in [10, 2 << 20] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("out.xaif");
            fs::write(&path, "old").unwrap();
            let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
            pending.stage(vec![b'x'; size]).unwrap();
            fs::remove_file(&path).unwrap();
            fs::create_dir(&path).unwrap();
            fs::write(path.join("inside"), "kept").unwrap();
            assert!(pending.commit().is_err(), "size {size}");
            assert!(fs::metadata(&path).unwrap().is_dir(), "size {size}");
            assert_eq!(fs::read_to_string(path.join("inside")).unwrap(), "kept", "size {size}");
            assert_eq!(entries(dir.path()), ["out.xaif"], "size {size}");
        }
    }

    /// A replacement whose target was removed while the run worked (nothing to swap with) is
    /// renamed into its place.
    #[test]
    fn a_replacement_whose_target_vanished_is_renamed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.xaif");
        fs::write(&path, "old").unwrap();
        let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
        pending.stage(b"new".to_vec()).unwrap();
        fs::remove_file(&path).unwrap();
        pending.commit().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(entries(dir.path()), ["out.xaif"]);
    }

    #[test]
    fn a_symlink_is_written_through() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("real")).unwrap();
        let target = dir.path().join("real/out.xaif");
        fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.xaif");
        std::os::unix::fs::symlink("real/out.xaif", &link).unwrap();
        write(&Destination::Path(link.clone()), "new").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
    }

    #[test]
    fn a_dangling_symlink_creates_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link.xaif");
        std::os::unix::fs::symlink("made.xaif", &link).unwrap();
        write(&Destination::Path(link.clone()), "new").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(fs::read_to_string(dir.path().join("made.xaif")).unwrap(), "new");
    }

    #[test]
    fn hard_links_all_see_the_new_contents() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("a.xaif");
        let second = dir.path().join("b.xaif");
        fs::write(&first, "old contents, longer than the new").unwrap();
        fs::hard_link(&first, &second).unwrap();
        let inode = fs::metadata(&first).unwrap().ino();
        write(&Destination::Path(first.clone()), "new").unwrap();
        assert_eq!(fs::read_to_string(&second).unwrap(), "new");
        assert_eq!(fs::metadata(&first).unwrap().ino(), inode);
    }

    #[test]
    fn a_device_stays_a_device() {
        // A private copy of /dev/null first (where the system lets us make one), so that a
        // regression fails there rather than replacing the machine's /dev/null.
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("null");
        let made =
            std::process::Command::new("mknod").arg(&private).args(["c", "1", "3"]).status().is_ok_and(|s| s.success());
        let devices = if made { vec![private, PathBuf::from("/dev/null")] } else { vec![PathBuf::from("/dev/null")] };
        for device in devices {
            write(&Destination::Path(device.clone()), "discarded").unwrap();
            assert!(fs::metadata(&device).unwrap().file_type().is_char_device(), "{}", device.display());
        }
    }

    #[test]
    fn a_missing_directory_fails_when_prepared() {
        let dir = tempfile::tempdir().unwrap();
        let error = prepare(&Destination::Path(dir.path().join("missing/x.json"))).unwrap_err();
        assert_eq!(error.source.kind(), io::ErrorKind::NotFound);
        assert!(error.to_string().ends_with("missing/x.json"), "{error}");
    }

    #[test]
    fn a_directory_or_an_empty_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(prepare(&Destination::Path(dir.path().to_path_buf())).is_err());
        assert!(prepare(&Destination::Path(PathBuf::new())).is_err());
        assert_eq!(entries(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn descriptor_aliases_are_recognised() {
        assert_eq!(descriptor_alias(Path::new("/dev/stdout")), Some(Some(1)));
        assert_eq!(descriptor_alias(Path::new("/dev/fd/7")), Some(Some(7)));
        assert_eq!(descriptor_alias(Path::new("/proc/self/fd/2")), Some(Some(2)));
        assert_eq!(descriptor_alias(Path::new("/dev/null")), None);
        assert_eq!(descriptor_alias(Path::new("/dev/shm/out.xaif")), None);
        assert_eq!(Destination::from(OsString::from("-")), Destination::Stdout);
    }
}
