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

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
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

/// The routines of a streamed output, written as they are done (see [`Pending::spill`]).
#[derive(Debug)]
pub enum Body {
    /// A spill file: copied into the output behind its head.
    File(Spill),
    /// The output's own temporary file ([`Pending::direct_body`]).
    Direct(Spill),
    Memory(Vec<u8>),
}

impl Write for Body {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Body::File(file) | Body::Direct(file) => file.write(bytes),
            Body::Memory(memory) => memory.write(bytes),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Body::File(file) | Body::Direct(file) => file.write_all(bytes),
            Body::Memory(memory) => memory.write_all(bytes),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Body::File(_) | Body::Direct(_) | Body::Memory(_) => Ok(()),
        }
    }
}

impl crate::streaming::RoutineSink for Body {
    fn lend(&mut self) -> Option<&mut Vec<u8>> {
        match self {
            Body::File(spill) | Body::Direct(spill) => Some(&mut spill.chunk),
            Body::Memory(memory) => Some(memory),
        }
    }

    fn appended(&mut self) -> io::Result<()> {
        match self {
            Body::File(spill) | Body::Direct(spill) if spill.chunk.len() >= SPILL_CHUNK => spill.pass_on(),
            Body::File(_) | Body::Direct(_) | Body::Memory(_) => Ok(()),
        }
    }
}

/// How many bytes a [`Spill`] gathers before its thread writes them. The streaming driver
/// writes each routine straight into the chunk being gathered (`RoutineSink::lend`), so a
/// chunk grows past this by up to a routine: chunks are made with room for twice this
/// ([`CHUNK_CAPACITY`]; pages not written to cost no memory), so that the routine that crosses
/// the mark does not make the chunk grow by a copy of what it holds (2 MiB identity: 2.4% of
/// the driver's instructions). One that grew past that is given back at that size once written,
/// so that a few large routines do not keep three large chunks.
const SPILL_CHUNK: usize = 1 << 20;

/// The room a spill chunk is made with.
const CHUNK_CAPACITY: usize = 2 * SPILL_CHUNK;

/// How far ahead a spill file's blocks are allocated ([`allocate`]).
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

/// A spill file written by a thread of its own, a chunk at a time. The streaming driver is a
/// large run's critical path (16 MiB tangent: 72% of the CPU time on its thread, the reader
/// and validation share the other core); the kernel's side of writing the spill file (page
/// cache allocation, copying, ext4's block reservation) was a seventh of the driver's time,
/// and the other core had room for it. At most three chunks exist at once: the one being
/// filled, one queued and one being written.
#[derive(Debug)]
pub struct Spill {
    chunk: Vec<u8>,
    to_thread: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    written: std::sync::mpsc::Receiver<Vec<u8>>,
    thread: Option<std::thread::JoinHandle<io::Result<File>>>,
}

impl Spill {
    /// Starts the thread that writes to `file`; `None` where no thread can be started. A file
    /// that vanishes when closed (`ahead`) gets its blocks [`ALLOCATE_AHEAD`] at a time before
    /// they are written: what is allocated past its end goes with it.
    fn new(mut file: File, ahead: bool) -> Option<Spill> {
        let (to_thread, chunks) = std::sync::mpsc::sync_channel::<Vec<u8>>(1);
        let (give_back, written) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("spill".to_owned())
            .spawn(move || {
                let (mut end, mut allocated, mut ahead) = (0, 0, ahead);
                for chunk in chunks {
                    end += chunk.len() as u64;
                    if ahead && end > allocated {
                        ahead = allocate(&file, allocated, ALLOCATE_AHEAD);
                        allocated += ALLOCATE_AHEAD;
                    }
                    file.write_all(&chunk)?;
                    let mut chunk = chunk;
                    if chunk.capacity() > CHUNK_CAPACITY {
                        chunk = Vec::with_capacity(CHUNK_CAPACITY);
                    }
                    // The driver may have finished or given up: its chunks are then not needed.
                    let _ = give_back.send(chunk);
                }
                Ok(file)
            })
            .ok()?;
        Some(Spill {
            chunk: Vec::with_capacity(CHUNK_CAPACITY),
            to_thread: Some(to_thread),
            written,
            thread: Some(thread),
        })
    }

    /// Hands the filled chunk to the thread and takes an empty one: one it wrote, or a new
    /// one while fewer than three exist.
    fn pass_on(&mut self) -> io::Result<()> {
        let next = match self.written.try_recv() {
            Ok(mut chunk) => {
                chunk.clear();
                chunk
            }
            Err(_) => Vec::with_capacity(CHUNK_CAPACITY),
        };
        let full = std::mem::replace(&mut self.chunk, next);
        let sent = self.to_thread.as_ref().map(|thread| thread.send(full));
        match sent {
            Some(Ok(())) => Ok(()),
            // The thread stopped: its result says why.
            _ => Err(self.stop().err().unwrap_or_else(|| io::Error::other("the spill thread stopped"))),
        }
    }

    /// Waits for the thread to write what it was given and returns its file, or its error.
    fn stop(&mut self) -> io::Result<File> {
        self.to_thread = None;
        match self.thread.take() {
            Some(thread) => thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            None => Err(io::Error::other("the spill thread stopped")),
        }
    }

    /// The file, once everything is written, positioned after it.
    fn into_file(self) -> io::Result<File> {
        self.into_file_and_spares().map(|(file, _)| file)
    }

    /// [`Spill::into_file`], and the chunks left over once the thread is done: memory
    /// already faulted in, which the copy behind the head takes its pieces through (a fresh
    /// 1 MiB buffer is 256 page faults on each copying thread, just as the copy begins).
    fn into_file_and_spares(mut self) -> io::Result<(File, Vec<Vec<u8>>)> {
        if !self.chunk.is_empty() {
            self.pass_on()?;
        }
        let file = self.stop()?;
        let mut spares: Vec<Vec<u8>> = self.written.try_iter().collect();
        spares.push(std::mem::take(&mut self.chunk));
        // The fullest last, where `pop` takes them: their pages were written to, and so are
        // in memory.
        spares.sort_by_key(Vec::len);
        Ok((file, spares))
    }
}

impl Write for Spill {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes).map(|()| bytes.len())
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let room = SPILL_CHUNK.saturating_sub(self.chunk.len()).max(1);
            let (now, rest) = bytes.split_at(room.min(bytes.len()));
            self.chunk.extend_from_slice(now);
            bytes = rest;
            if self.chunk.len() >= SPILL_CHUNK {
                self.pass_on()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Spill {
    /// A body dropped unfinished (a failed run): the thread writes what it has to the
    /// unnamed file, which then vanishes; joining it leaves no thread behind.
    fn drop(&mut self) {
        self.to_thread = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Bodies expected to be smaller than this stay in memory ([`Pending::body`]).
const SPILL_FROM: usize = 4 << 20;

/// A prepared destination; dropping it before [`Pending::commit`] leaves no trace.
#[derive(Debug)]
pub struct Pending {
    shown: String,
    how: How,
    bytes: Vec<u8>,
    /// A [`Pending::direct_body`] was handed out: its writes must go before anything staged.
    direct: bool,
    /// The spill file, once copied, being closed on a thread of its own ([`close_aside`]).
    closing: Option<std::thread::JoinHandle<()>>,
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
        Ok(how) => Ok(Pending { shown, how, bytes: Vec::new(), direct: false, closing: None }),
        Err(source) => Err(OutputError { shown, source }),
    }
}

impl Pending {
    /// Sets the bytes to write. For a file replaced by a rename they are written to its
    /// temporary file now, so that committing cannot run out of space half way.
    pub fn stage(&mut self, bytes: Vec<u8>) -> Result<(), OutputError> {
        let result = match &mut self.how {
            How::Replace { file, .. } => Self::discard_direct(file, &mut self.direct)
                .and_then(|()| file.write_all(&bytes))
                .and_then(|()| file.flush()),
            How::Stdout | How::Stderr | How::Direct(_) | How::InPlace(_) => {
                self.bytes = bytes;
                Ok(())
            }
        };
        result.map_err(|source| OutputError { shown: self.shown.clone(), source })
    }

    /// Where the streaming driver writes routines as they are done, before the head that
    /// must precede them is known: for a file replaced by a rename, a file beside it that
    /// vanishes when dropped (`spill_file`), so the output never sits in memory; otherwise,
    /// or where no such file can be made, memory.
    pub fn spill(&self) -> Body {
        if let How::Replace { target, .. } = &self.how
            && let Some(spill) = spill_file(target).and_then(|file| Spill::new(file, true))
        {
            return Body::File(spill);
        }
        Body::Memory(Vec::new())
    }

    /// [`Pending::spill`] for a body of about `expected` bytes: small ones stay in memory, where
    /// the unnamed file, its writes and the copy behind the head (a dozen system calls) cost
    /// more than holding the bytes.
    pub fn body(&self, expected: usize) -> Body {
        if expected < SPILL_FROM { Body::Memory(Vec::with_capacity(expected)) } else { self.spill() }
    }

    /// Removes what a [`Pending::direct_body`] wrote to `file` before the output was staged
    /// otherwise (a streamed run that gave way to the whole-document path).
    fn discard_direct(file: &mut File, direct: &mut bool) -> io::Result<()> {
        if std::mem::take(direct) {
            file.set_len(0)?;
            file.seek(io::SeekFrom::Start(0))?;
        }
        Ok(())
    }

    /// A body for an output whose routines come after their head, both written to it: for a
    /// file replaced by a rename, its temporary file itself, written on a thread of its own
    /// ([`Spill`]); otherwise memory. [`Pending::stage_streamed`] then adds the tail (its head
    /// writes nothing); [`Pending::stage`] instead discards what the body wrote.
    pub fn direct_body(&mut self) -> Body {
        if let How::Replace { file, .. } = &self.how
            && let Some(spill) = file.try_clone().ok().and_then(|file| Spill::new(file, false))
        {
            self.direct = true;
            return Body::Direct(spill);
        }
        Body::Memory(Vec::new())
    }

    /// [`Pending::stage`] for a streamed output: what `head` writes, then what went to `body`,
    /// then `tail`. A file replaced by a rename gets the head written straight into it and the
    /// body copied from the spill file, at the same time where the head's length is known
    /// (`copy_behind`), or, for a [`Pending::direct_body`], holds head and routines
    /// already and gets the tail.
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
                (How::Replace { file, .. }, Body::File(spill)) => {
                    let (mut spill, mut spares) = spill.into_file_and_spares()?;
                    let routines = spill.stream_position()?;
                    let start = file.stream_position()?;
                    // The routines are copied behind the head while the head is written,
                    // where its length is known beforehand (see `copy_behind`).
                    let at = match head_len() {
                        Some(len) => {
                            copy_behind(&spill, file, head, start + len, routines, tail.len() as u64, &mut spares)?
                        }
                        None => None,
                    };
                    let at = match at {
                        Some(at) => at,
                        None => {
                            file.set_len(start)?;
                            file.seek(io::SeekFrom::Start(start))?;
                            spill.seek(io::SeekFrom::Start(0))?;
                            head(file)?;
                            // Exactly what the routines and the tail will take (see `allocate`).
                            let at = file.stream_position()?;
                            allocate(file, at, routines + tail.len() as u64);
                            SharedCopy::new(&spill, file, at, routines)
                                .take_pieces(spares.pop().unwrap_or_default())?;
                            at
                        }
                    };
                    self.closing = close_aside(spill);
                    file.seek(io::SeekFrom::Start(at + routines))?;
                    file.write_all(&tail)?;
                    file.flush()
                }
                (How::Replace { file, .. }, Body::Memory(bytes)) => {
                    head(file)?;
                    file.write_all(&bytes)?;
                    file.write_all(&tail)?;
                    file.flush()
                }
                (_, body) => {
                    let mut head_bytes = Vec::new();
                    head(&mut head_bytes)?;
                    let body = match body {
                        Body::Memory(bytes) => bytes,
                        Body::Direct(_) => return Err(io::Error::other("internal error: a direct body elsewhere")),
                        Body::File(spill) => {
                            let mut spill = spill.into_file()?;
                            spill.seek(io::SeekFrom::Start(0))?;
                            let mut bytes = Vec::new();
                            spill.read_to_end(&mut bytes)?;
                            bytes
                        }
                    };
                    self.bytes = [head_bytes, body, tail].concat();
                    Ok(())
                }
            }
        })();
        result.map_err(|source| OutputError { shown: self.shown.clone(), source })
    }

    /// [`Pending::stage`] for an output written in order by `write`, in pieces: a file
    /// replaced by a rename gets them straight into its temporary file (64 KiB at a time),
    /// with no spill file and no copy; other destinations get them in memory, written on
    /// commit. For outputs whose head is known before their routines are written (a whole
    /// document transformed before writing).
    pub fn stage_written(
        &mut self,
        write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), OutputError> {
        let result = match &mut self.how {
            How::Replace { file, .. } => Self::discard_direct(file, &mut self.direct).and_then(|()| {
                let mut buffered = io::BufWriter::with_capacity(WRITE_BUFFER, &*file);
                write(&mut buffered).and_then(|()| buffered.flush())
            }),
            How::Stdout | How::Stderr | How::Direct(_) | How::InPlace(_) => {
                let mut bytes = Vec::new();
                let written = write(&mut bytes);
                self.bytes = bytes;
                written
            }
        };
        result.map_err(|source| OutputError { shown: self.shown.clone(), source })
    }

    /// Makes the staged bytes visible at the destination.
    pub fn commit(mut self) -> Result<(), OutputError> {
        let result = self.commit_staged();
        self.join_closing();
        result
    }

    fn commit_staged(&mut self) -> Result<(), OutputError> {
        let bytes = std::mem::take(&mut self.bytes);
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
        result.map_err(|source| OutputError { shown: self.shown.clone(), source })
    }

    /// Waits until the spill file [`close_aside`] took is closed.
    fn join_closing(&mut self) {
        if let Some(closing) = self.closing.take() {
            let _ = closing.join();
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let How::Replace { temp: Some(temp), .. } = &self.how {
            let _ = fs::remove_file(temp);
        }
        self.join_closing();
    }
}

/// What goes before a streamed output's routines ([`Pending::stage_streamed`]).
#[derive(Clone, Copy)]
pub struct Head<'h> {
    /// Writes it.
    pub write: &'h dyn Fn(&mut dyn Write) -> io::Result<()>,
    /// How many bytes `write` writes, where that can be known without writing them; asked
    /// only where the routines come from a spill file.
    pub len: &'h dyn Fn() -> Option<u64>,
}

/// Copies the `routines` bytes of `spill` to `file` at `at` on a thread of its own while
/// `head` is written at `file`'s position, which must end at `at`; returns where the routines
/// begin, `None` where the head did not end there (nothing is lost: the caller writes both
/// again, one after the other). Once the head is written, this thread copies too.
///
/// The head is the last thing a streamed run makes and the copy follows it, both at the end,
/// where nothing else works: on a 16 MiB tangent 8–10 ms for the head's 10 MB (sorting,
/// spelling, writing) and 27–35 ms for the routines' 81 MB. Knowing the head's length
/// (`xaif::write::head_len`, under a millisecond) lets the two overlap, and the head's thread
/// then takes pieces of the copy: the routines' copy was left alone on one core for most of
/// the end otherwise. The head goes to the file 1 MiB at a time: from the output's `fallocate`
/// to its rename, 16 MiB tangent, alternating runs (`scripts/end_phase.sh`, release builds),
/// pieces of 64 KiB against 1 MiB gathered here: median 20.0 → 17.8 ms (16 runs each); with the
/// head writer's own pieces made 1 MiB instead, 21.5 → 18.5 and 21.8 → 18.3 ms (20 runs), the
/// same, but the writer's buffer then grew for every head, small documents' too. Pieces of
/// 256 KiB or 4 MiB did no better, nor copy pieces of 2 MiB.
fn copy_behind(
    spill: &File,
    file: &mut File,
    head: &dyn Fn(&mut dyn Write) -> io::Result<()>,
    at: u64,
    routines: u64,
    tail: u64,
    spares: &mut Vec<Vec<u8>>,
) -> io::Result<Option<u64>> {
    allocate(file, at, routines + tail);
    let out: &File = file;
    let copy = SharedCopy::new(spill, out, at, routines);
    let (theirs, ours) = (spares.pop().unwrap_or_default(), spares.pop().unwrap_or_default());
    let (written, copied) = std::thread::scope(|scope| {
        let helper = std::thread::Builder::new().name("copy".into()).spawn_scoped(scope, || copy.take_pieces(theirs));
        // In pieces of the copy's size: each of the head's writes waits at the file's lock
        // for the copy's current piece, so fewer, larger writes wait less (see above).
        let mut writer = Pieces { file: out, buffer: ours };
        writer.buffer.clear();
        let written = head(&mut writer).and_then(|()| writer.flush()).and_then(|()| writer.file.stream_position());
        if written.is_err() {
            // The run fails: the copy is not needed.
            copy.give_up();
        }
        // With no thread, the whole copy after the head, on this one.
        let here = copy.take_pieces(writer.buffer);
        let there = match helper {
            Ok(helper) => helper.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => Ok(()),
        };
        (written, here.and(there))
    });
    copied?;
    Ok((written? == at).then_some(at))
}

/// How much of a [`SharedCopy`] one thread takes at a time.
const COPY_PIECE: u64 = 1 << 20;

/// Writes to `file` in pieces of at least [`COPY_PIECE`] bytes, gathered in `buffer` (a
/// spill chunk, whose pages are in memory already: a `BufWriter`'s fresh 1 MiB buffer took
/// 206 page faults on the head's thread).
struct Pieces<'f> {
    file: &'f File,
    buffer: Vec<u8>,
}

impl Write for Pieces<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes).map(|()| bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= COPY_PIECE as usize {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.write_all(&self.buffer)?;
        self.buffer.clear();
        Ok(())
    }
}

/// A copy of `len` bytes from the start of `from` to `to` at `at`, in pieces of [`COPY_PIECE`]
/// that any number of threads take in turn ([`SharedCopy::take_pieces`]), leaving both files'
/// positions where they are (the head is being written at `to`'s).
///
/// Through a buffer rather than the kernel's copy (`copy_file_range`): the kernel copies
/// between two files of ext4 a pipe's worth (64 KiB) at a time, each a write of its own
/// under the output's lock, while 1 MiB read and then written takes larger pages in the
/// page cache and a twentieth of the writes. 81 MB behind a head of 10 MB, a Python model
/// of both on this machine, three runs: 27–30 ms the kernel's copy, 18–30 ms through 1 MiB
/// on one thread, 18–19 ms on two (the reads of one overlap the other's writes; the writes
/// to one file take turns). In the command, head, copy and tail (`strace`, the output's
/// `fallocate` to its rename): 16 MiB tangent 30–41 → 20–24 ms, 16 MiB adjoint (263 MB of
/// routines) 93–114 → 51–58 ms.
struct SharedCopy<'f> {
    from: &'f File,
    to: &'f File,
    at: u64,
    len: u64,
    /// Where the next piece begins, in `from`.
    next: std::sync::atomic::AtomicU64,
    /// A thread failed: the others stop at their next piece.
    failed: std::sync::atomic::AtomicBool,
}

impl<'f> SharedCopy<'f> {
    fn new(from: &'f File, to: &'f File, at: u64, len: u64) -> Self {
        SharedCopy {
            from,
            to,
            at,
            len,
            next: std::sync::atomic::AtomicU64::new(0),
            failed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Stops every thread at its next piece.
    fn give_up(&self) {
        self.failed.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Copies pieces no thread has taken yet, through `buffer`, until none are left; an
    /// error stops every thread at its next piece (a source shorter than `len` is one).
    fn take_pieces(&self, mut buffer: Vec<u8>) -> io::Result<()> {
        use std::sync::atomic::Ordering::Relaxed;
        loop {
            let start = self.next.fetch_add(COPY_PIECE, Relaxed);
            if start >= self.len || self.failed.load(Relaxed) {
                return Ok(());
            }
            let len = usize::try_from((self.len - start).min(COPY_PIECE)).map_err(io::Error::other)?;
            buffer.resize(len, 0);
            let copied = self.piece(&mut buffer, start);
            if copied.is_err() {
                self.give_up();
                return copied;
            }
        }
    }

    fn piece(&self, buffer: &mut [u8], start: u64) -> io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            self.from.read_exact_at(buffer, start)?;
            self.to.write_all_at(buffer, self.at + start)
        }
        #[cfg(not(unix))]
        {
            let _ = (buffer, start, self.from, self.to, self.at);
            Err(io::Error::from(io::ErrorKind::Unsupported))
        }
    }
}

/// Closes a spill file on a thread of its own; `None` where it was closed here (no thread).
///
/// The last close of an unnamed file frees its pages and blocks: 3–4 ms for the 81 MB of a
/// 16 MiB tangent's routines (`strace -T`), at the end of the run, where nothing else works.
/// On its own thread that overlaps the output's rename and the removal of the file it
/// replaces (6–9 ms for the same output). [`Pending`] waits for it before it is done, so the
/// process never ends with the file half closed.
fn close_aside(spill: File) -> Option<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name("spill close".into()).spawn(move || drop(spill)).ok()
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

/// A file beside `target` (on the same file system) for spilled routines, gone once closed:
/// an unnamed file (`O_TMPFILE`) where the file system makes them, else a named one removed as
/// soon as it is open (network and older file systems), so a large output never falls back to
/// memory where a file can be made at all. `None` where neither can be.
fn spill_file(target: &Path) -> Option<File> {
    let dir = directory_of(target);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let unnamed = OpenOptions::new().read(true).write(true).custom_flags(libc::O_TMPFILE).mode(0o600).open(dir);
        if let Ok(file) = unnamed {
            return Some(file);
        }
    }
    named_spill_file(dir)
}

/// [`spill_file`] without `O_TMPFILE`: a new file, removed at once (its contents live on
/// until it is closed).
#[cfg(unix)]
fn named_spill_file(dir: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let pid = std::process::id();
    for attempt in 0..100 {
        let path = dir.join(format!(".xaifbooster-spill.{pid}.{attempt}.tmp"));
        match OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(&path) {
            Ok(file) => return fs::remove_file(&path).ok().map(|()| file),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(_) => return None,
        }
    }
    None
}

/// Elsewhere an open file cannot be removed: the routines stay in memory.
#[cfg(not(unix))]
fn named_spill_file(_dir: &Path) -> Option<File> {
    None
}

/// Creates a new, empty temporary file beside `target` with the default mode for new files.
fn create_temp(target: &Path) -> io::Result<(PathBuf, File)> {
    let dir = directory_of(target);
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let pid = std::process::id();
    for attempt in 0..100 {
        let temp = dir.join(format!(".{name}.{pid}.{attempt}.tmp"));
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
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

    /// A streamed output's routines go through the spill thread in chunks: writes and
    /// appends to the lent chunk, smaller than a chunk, larger than several, and ending exactly
    /// on a chunk's end, all arrive in order between the head and the tail.
    #[test]
    fn a_spilled_body_arrives_whole_and_in_order() {
        // A head of more than two pieces, written in uneven parts as the writer drains.
        let large_head: Vec<u8> = (0..2 * COPY_PIECE as usize + 70_001).map(|j| (j % 241) as u8).collect();
        let large = large_head.len() as u64;
        // The head's length not known (written, then copied), known (copied while written),
        // and claimed wrongly either way (written again, then copied: the same file).
        for (head_text, claimed) in [
            (&b"head"[..], None),
            (b"head", Some(4)),
            (b"head", Some(2)),
            (b"head", Some(9)),
            (b"head", Some(0)),
            (&large_head, Some(large)),
            (&large_head, Some(large - 1)),
            (&large_head, None),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("out.xaif");
            let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
            let mut body = pending.spill();
            assert!(matches!(body, Body::File(_)), "an unnamed file and its thread should be available here");
            let mut expected = head_text.to_vec();
            let sizes = [1, 7, SPILL_CHUNK - 8, 3 * SPILL_CHUNK + 5, SPILL_CHUNK - 5, 100_000];
            for (i, size) in sizes.into_iter().enumerate() {
                let piece: Vec<u8> = (0..size).map(|j| (i * 31 + j % 251) as u8).collect();
                // Written, and appended to the buffer the body lends, in turn.
                if i % 2 == 0 {
                    body.write_all(&piece).unwrap();
                } else {
                    use crate::streaming::RoutineSink;
                    body.lend().expect("a spill lends its chunk").extend_from_slice(&piece);
                    body.appended().unwrap();
                }
                expected.extend_from_slice(&piece);
            }
            expected.extend_from_slice(b"tail");
            let write_head = |sink: &mut dyn Write| head_text.chunks(65_537).try_for_each(|part| sink.write_all(part));
            let head = Head { write: &write_head, len: &|| claimed };
            pending.stage_streamed(head, body, b"tail".to_vec()).unwrap();
            pending.commit().unwrap();
            assert!(
                fs::read(&path).unwrap() == expected,
                "the committed file differs from what was written ({claimed:?})"
            );
            assert_eq!(entries(dir.path()), ["out.xaif"]);
            // Blocks allocated before the copy cover the output and no more.
            #[cfg(unix)]
            {
                let allocated = std::os::unix::fs::MetadataExt::blocks(&fs::metadata(&path).unwrap()) * 512;
                let len = expected.len() as u64;
                assert!(allocated <= len.next_multiple_of(1 << 16), "{allocated} bytes allocated for {len}");
            }
        }
    }

    /// What goes through [`Pieces`] arrives whole and in order, whatever the buffer held
    /// before and however the parts fall across the pieces.
    #[test]
    fn pieces_write_what_they_gather() {
        let text: Vec<u8> = (0..3 * COPY_PIECE as usize + 12_345).map(|j| (j % 239) as u8).collect();
        for part in [1, 4_096, 65_537, COPY_PIECE as usize - 1, 2 * COPY_PIECE as usize + 3] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("pieces");
            let file = File::create(&path).unwrap();
            let mut pieces = Pieces { file: &file, buffer: Vec::new() };
            for chunk in text.chunks(part) {
                pieces.write_all(chunk).unwrap();
                assert!(pieces.buffer.len() < COPY_PIECE as usize, "a full piece waits");
            }
            pieces.flush().unwrap();
            assert!(pieces.buffer.is_empty());
            assert!(fs::read(&path).unwrap() == text, "parts of {part}");
        }
    }

    /// A head that fails while the routines are copied behind it fails the output: its error,
    /// not the copy's outcome, is reported, and the file the output was to replace stays.
    #[test]
    fn a_failing_head_fails_the_spilled_output() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.xaif");
        fs::write(&path, "old").unwrap();
        let mut pending = prepare(&Destination::Path(path.clone())).unwrap();
        let mut body = pending.spill();
        body.write_all(&vec![b'r'; 5 * COPY_PIECE as usize + 3]).unwrap();
        let head = Head {
            write: &|sink| {
                sink.write_all(b"he")?;
                Err(io::Error::other("the head failed"))
            },
            len: &|| Some(4),
        };
        let failed = pending.stage_streamed(head, body, b"tail".to_vec()).expect_err("the head failed");
        assert_eq!(failed.source.to_string(), "the head failed");
        drop(pending);
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert_eq!(entries(dir.path()), ["out.xaif"]);
    }

    /// A range copied behind a head being written lands where it is asked to, whether one
    /// thread or several take its pieces (the last one short), and leaves both files'
    /// positions alone; a source shorter than asked is an error for every thread.
    #[test]
    fn a_range_is_copied_where_asked() {
        let dir = tempfile::tempdir().unwrap();
        let len = 3 * COPY_PIECE + 17;
        let bytes: Vec<u8> = (0..len + 10).map(|i| (i % 253) as u8).collect();
        let from_path = dir.path().join("from");
        fs::write(&from_path, &bytes).unwrap();
        let from = File::open(&from_path).unwrap();
        for threads in [1, 2, 3] {
            let to_path = dir.path().join(format!("to{threads}"));
            let mut to = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&to_path).unwrap();
            to.write_all(b"0123456789").unwrap();
            let copy = SharedCopy::new(&from, &to, 7, len);
            std::thread::scope(|scope| {
                let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(|| copy.take_pieces(Vec::new()))).collect();
                copy.take_pieces(vec![7; 3]).unwrap();
                helpers.into_iter().for_each(|helper| helper.join().unwrap().unwrap());
            });
            assert_eq!(to.stream_position().unwrap(), 10, "the position moved");
            let mut expected = b"0123456".to_vec();
            expected.extend_from_slice(&bytes[..len as usize]);
            assert!(fs::read(&to_path).unwrap() == expected, "{threads} threads");
            let short = SharedCopy::new(&from, &to, 0, bytes.len() as u64 + 1);
            std::thread::scope(|scope| {
                let helper = scope.spawn(|| short.take_pieces(Vec::new()));
                let here = short.take_pieces(Vec::new());
                let there = helper.join().unwrap();
                assert!(here.is_err() || there.is_err(), "a source shorter than asked");
            });
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
        let routines = vec![b'r'; 2 * SPILL_CHUNK + 3];
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

    /// Without unnamed files, the spill file is a named one removed at once: it reads and
    /// writes, and leaves nothing in the directory.
    #[cfg(unix)]
    #[test]
    fn a_named_spill_file_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = named_spill_file(dir.path()).expect("a spill file");
        assert_eq!(entries(dir.path()), Vec::<String>::new());
        file.write_all(b"routines").unwrap();
        file.seek(io::SeekFrom::Start(0)).unwrap();
        let mut back = String::new();
        file.read_to_string(&mut back).unwrap();
        assert_eq!(back, "routines");
    }

    /// A spill thread whose writes fail passes its error to the writer (at a later chunk or at
    /// the end), and a dropped body leaves no thread waiting.
    #[test]
    fn a_failing_spill_reports_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("read-only");
        fs::write(&path, "").unwrap();
        let mut spill = Spill::new(File::open(&path).unwrap(), true).unwrap();
        let piece = vec![b'x'; SPILL_CHUNK];
        let failed = (0..4).map(|_| spill.write_all(&piece)).find_map(Result::err);
        let error = match failed {
            Some(error) => error,
            None => spill.into_file().unwrap_err(),
        };
        assert_ne!(error.kind(), io::ErrorKind::Other, "the file's own error should arrive, not {error}");
        let dropped = Spill::new(File::open(&path).unwrap(), false).unwrap();
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
