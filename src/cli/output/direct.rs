//! Routines put behind their head by moving the output's blocks, not its bytes.
//!
//! A streamed tangent or adjoint writes its routines before its head, behind room left for it
//! (`Pending::body`), and until now moved them behind the head once its length was known: at
//! 64 MiB of input, 325 MB read back and written again at the end of the run, on both cores,
//! with nothing else to do. Where the head ends on a block boundary
//! ([`crate::xaif::write::WriteOptions::align_head`]) and the room starts on one, the file
//! system can do that move itself: `FALLOC_FL_COLLAPSE_RANGE` takes the unused part of the
//! room out of the file (`FALLOC_FL_INSERT_RANGE` adds what a head longer than its room
//! lacks), shifting the extents behind it, in microseconds.
//!
//! Both calls first write back every dirty page of the file from the range on, and drop it
//! from the page cache: written through the page cache, the routines would go to the disk
//! then, synchronously (365 MB at about 370 MB/s here). So they bypass it (`O_DIRECT`): the
//! body's thread hands the driver's chunks to the disk from our memory, with no copy into the
//! page cache and no fresh page of it to fault in. That was the largest part of the kernel's
//! time in a large run (on this virtual machine a page freed a few seconds before costs the
//! host's fault on its first touch: 365 MB written into such pages took 0.68 s against 0.07 s
//! into pages just freed, `dd`), and it is the same whatever memory the host has taken back.
//! The head is written the same way, once the routines are in place.
//!
//! Direct writes need their memory, offset and length aligned ([`ALIGNMENT`]); the chunks
//! the driver fills begin at an aligned address (`BodyWriter` leaves blanks before it) and
//! hand their unaligned last bytes on to the next chunk, so that nothing is copied but those.
//! Where anything here cannot be had (no Linux, a file system without the calls, a block
//! larger than the alignment), the output takes the move as before.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use crate::xaif::write::HEAD_ALIGNMENT;

/// What direct writes are aligned to: the head's boundary, a multiple of the block sizes
/// this is used on (checked in [`open`]).
pub(super) const ALIGNMENT: usize = HEAD_ALIGNMENT as usize;

/// A second descriptor of the output's temporary file at `path` (`file`), writing past the
/// page cache, where its routines can be put behind the head by moving blocks: the file
/// system takes both `O_DIRECT` and `FALLOC_FL_COLLAPSE_RANGE`, and its blocks divide
/// [`ALIGNMENT`]. `file` must be empty: the probe of the collapse is refused for its
/// arguments (a range past the end) where the call exists, and as unsupported where not.
pub(super) fn open(path: &Path, file: &File) -> Option<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let block = file.metadata().ok()?.blksize();
        if block == 0 || !(ALIGNMENT as u64).is_multiple_of(block) || file.metadata().ok()?.len() != 0 {
            return None;
        }
        // SAFETY: a plain system call on a descriptor this function borrows.
        let probed = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_COLLAPSE_RANGE, 0, ALIGNMENT as i64) };
        if probed == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
            return None;
        }
        std::fs::OpenOptions::new().write(true).custom_flags(libc::O_DIRECT).open(path).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (path, file);
        None
    }
}

/// Makes `file`, a descriptor from [`open`], write through the page cache from now on (a
/// direct write refused after all); false where it cannot.
pub(super) fn through_page_cache(file: &File) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: plain system calls on a descriptor this function borrows.
        unsafe {
            let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
            flags >= 0 && libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_DIRECT) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        false
    }
}

/// Moves everything of `file` from `from` on to `to`, by whole blocks (both aligned): the
/// range before `from` that `to` does not need is taken out, or as much as `to` lacks is
/// put in before it. False where the file system refuses (the caller then moves the bytes).
pub(super) fn place(file: &File, from: u64, to: u64) -> bool {
    if from == to {
        return true;
    }
    if !from.is_multiple_of(HEAD_ALIGNMENT) || !to.is_multiple_of(HEAD_ALIGNMENT) {
        return false;
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (mode, len) = if to < from {
            (libc::FALLOC_FL_COLLAPSE_RANGE, from - to)
        } else {
            (libc::FALLOC_FL_INSERT_RANGE, to - from)
        };
        let Ok(len) = libc::off_t::try_from(len) else { return false };
        // SAFETY: a plain system call on a descriptor this function borrows; it changes no
        // memory of ours.
        unsafe { libc::fallocate(file.as_raw_fd(), mode, 0, len) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        false
    }
}

/// Memory whose first byte is aligned for direct writes: a vector with [`ALIGNMENT`] bytes
/// to spare, used from its first aligned byte on. Its pages are touched only as it fills.
pub(super) struct AlignedBuffer {
    memory: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuffer {
    pub(super) fn new(capacity: usize) -> AlignedBuffer {
        Self::reusing(Vec::new(), capacity)
    }

    /// One made in `memory` where it has the room (a body's chunk, whose pages are in memory
    /// already: fresh buffers for the head had raised a 16 MiB tangent's peak by 3.8 MB).
    fn reusing(mut memory: Vec<u8>, capacity: usize) -> AlignedBuffer {
        if memory.capacity() < capacity + ALIGNMENT {
            memory = Vec::new();
        }
        memory.clear();
        memory.resize(capacity + ALIGNMENT, 0);
        let start = memory.as_ptr().align_offset(ALIGNMENT).min(ALIGNMENT);
        AlignedBuffer { memory, start, len: 0 }
    }

    fn capacity(&self) -> usize {
        self.memory.len() - ALIGNMENT
    }

    pub(super) fn filled(&self) -> &[u8] {
        &self.memory[self.start..self.start + self.len]
    }

    /// Copies as much of `bytes` as fits; how much that was.
    pub(super) fn extend(&mut self, bytes: &[u8]) -> usize {
        let taken = bytes.len().min(self.capacity() - self.len);
        let at = self.start + self.len;
        self.memory[at..at + taken].copy_from_slice(&bytes[..taken]);
        self.len += taken;
        taken
    }

    pub(super) fn is_full(&self) -> bool {
        self.len == self.capacity()
    }

    pub(super) fn clear(&mut self) {
        self.len = 0;
    }
}

/// Writes `bytes` at `offset` through a direct descriptor: straight from `bytes` where they
/// are aligned, else through `staging` a piece at a time (a chunk that grew, and so moved,
/// while the driver filled it). `bytes.len()` and `offset` must be aligned.
pub(super) fn write(file: &File, bytes: &[u8], offset: u64, staging: &mut Option<AlignedBuffer>) -> io::Result<()> {
    if bytes.as_ptr().align_offset(ALIGNMENT) == 0 {
        return super::write_at(file, bytes, offset);
    }
    let staging = staging.get_or_insert_with(|| AlignedBuffer::new(STAGING));
    let mut at = offset;
    for piece in bytes.chunks(STAGING) {
        staging.clear();
        staging.extend(piece);
        super::write_at(file, staging.filled(), at)?;
        at += piece.len() as u64;
    }
    Ok(())
}

/// The piece an unaligned chunk is written in ([`write()`]).
const STAGING: usize = 1 << 20;

/// Writes what `head` writes at `[0, limit)` of `file` (a descriptor from [`open`]), once the
/// routines are in place behind it; `Ok(false)` where that was not `limit` bytes (a head
/// longer than counted is stopped before it writes past `limit`, one shorter is found at the
/// end), and the caller then moves the routines to fit the head it makes again.
///
/// The head is gathered into aligned pieces, which a second thread writes while the next is
/// spelled: a direct write waits for the disk (64 MiB tangent: 40 MB of head, about 20 ms at
/// 2 GB/s), which spelling it keeps busy meanwhile. The pieces are made in `spares` (the body's
/// chunks) where they have the room.
pub(super) fn write_head(
    file: &File,
    limit: u64,
    head: &dyn Fn(&mut dyn Write) -> io::Result<()>,
    spares: &mut Vec<Vec<u8>>,
) -> io::Result<bool> {
    std::thread::scope(|scope| {
        let (to_writer, pieces) = std::sync::mpsc::sync_channel::<(AlignedBuffer, u64)>(1);
        let (give_back, free) = std::sync::mpsc::channel();
        let writer = std::thread::Builder::new().name("head".into()).spawn_scoped(scope, move || {
            for (piece, at) in pieces {
                super::write_at(file, piece.filled(), at)?;
                // The head may have ended already: its buffers are then not needed.
                let _ = give_back.send(piece);
            }
            Ok(())
        });
        let mut gathered = HeadPieces {
            file,
            buffer: AlignedBuffer::reusing(spares.pop().unwrap_or_default(), HEAD_PIECE),
            spares,
            buffers: 1,
            at: 0,
            limit,
            over: false,
            to_writer: writer.is_ok().then_some(to_writer),
            free,
        };
        let written = match head(&mut gathered) {
            Ok(()) if gathered.over || gathered.at + gathered.buffer.filled().len() as u64 != limit => Ok(false),
            Ok(()) => gathered.write_piece().map(|()| true),
            Err(_) if gathered.over => Ok(false),
            Err(error) => Err(error),
        };
        // The thread ends once it has written what it was given.
        drop(gathered);
        let on_thread = match writer {
            Ok(writer) => writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => Ok(()),
        };
        // A failed write on the thread fails the head, with its own error.
        on_thread.and(written)
    })
}

/// The pieces [`write_head`] gathers and hands to its writing thread.
const HEAD_PIECE: usize = 1 << 20;

/// At most this many pieces exist at once: one being filled, one queued, one being written.
const HEAD_BUFFERS: usize = 3;

/// The head's text gathered into aligned pieces for [`write_head`], each written at `at` by
/// the thread behind `to_writer` (here where there is none), none at or past `limit`.
struct HeadPieces<'f, 's> {
    file: &'f File,
    buffer: AlignedBuffer,
    spares: &'s mut Vec<Vec<u8>>,
    /// How many buffers exist.
    buffers: usize,
    at: u64,
    limit: u64,
    over: bool,
    to_writer: Option<std::sync::mpsc::SyncSender<(AlignedBuffer, u64)>>,
    free: std::sync::mpsc::Receiver<AlignedBuffer>,
}

impl HeadPieces<'_, '_> {
    fn write_piece(&mut self) -> io::Result<()> {
        let len = self.buffer.filled().len() as u64;
        if self.at + len > self.limit {
            self.over = true;
            return Err(io::Error::other("internal error: the head is longer than counted"));
        }
        let at = self.at;
        self.at += len;
        let Some(to_writer) = &self.to_writer else {
            super::write_at(self.file, self.buffer.filled(), at)?;
            self.buffer.clear();
            return Ok(());
        };
        let next = match self.free.try_recv() {
            Ok(free) => free,
            Err(_) if self.buffers < HEAD_BUFFERS => {
                self.buffers += 1;
                AlignedBuffer::reusing(self.spares.pop().unwrap_or_default(), HEAD_PIECE)
            }
            Err(_) => self.free.recv().map_err(|_| io::Error::other("the head's writing thread stopped"))?,
        };
        let full = std::mem::replace(&mut self.buffer, next);
        self.buffer.clear();
        // A thread that stopped failed: its error is the head's.
        to_writer.send((full, at)).map_err(|_| io::Error::other("the head's writing thread stopped"))
    }
}

impl Write for HeadPieces<'_, '_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes).map(|()| bytes.len())
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let taken = self.buffer.extend(bytes);
            bytes = &bytes[taken..];
            if self.buffer.is_full() {
                self.write_piece()?;
            }
        }
        Ok(())
    }

    /// The last piece is written by [`write_head`], once the length is known to be right (an
    /// unaligned one cannot be written directly).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
