//! How a command reads its input file.

use std::fs::File;
use std::io::{self, Read, Seek};
use std::path::Path;

/// From this size on, a regular file is read in parts on several threads ([`read_file`]).
const PARTS_FROM: u64 = 4 << 20;

/// The most threads a file is read on.
const MOST_PARTS: usize = 4;

/// Reads a whole file. Reading a large file into fresh memory is mostly the kernel's work of
/// providing that memory (a page fault and a zeroed page per 4 KiB, more than the copy from
/// the page cache itself), and nothing else can start before the input is in: a regular file
/// from 4 MiB on is read in parts, each on its own thread (16 MiB on two cores: 12–13 ms for
/// one `read`, 7 ms for the slower of two `pread`s, `strace -T`). A file that changes while it is read gets what
/// a plain read would: parts that come up short (the file shrank) make it read again from the
/// start, and what was appended is read after the parts.
pub fn read_file(path: &Path) -> io::Result<Vec<u8>> {
    let mut file = File::open(path)?;
    let meta = file.metadata()?;
    let parts = if meta.is_file() && meta.len() >= PARTS_FROM { crate::cores().min(MOST_PARTS) } else { 1 };
    let Ok(len) = usize::try_from(meta.len()) else { return Err(io::Error::from(io::ErrorKind::OutOfMemory)) };
    let mut bytes = Vec::new();
    if parts > 1 {
        bytes.try_reserve_exact(len.saturating_add(1)).map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        if read_in_parts(&file, &mut bytes, len, parts)? {
            file.seek(io::SeekFrom::Start(len as u64))?;
        } else {
            bytes.clear();
            file.rewind()?;
        }
    } else {
        bytes.try_reserve_exact(len).map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
    }
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Fills `bytes` (empty, with room for `len`) with the first `len` bytes of `file`, in
/// `parts` parts read at once; false, with `bytes` left empty, when the file ended before.
#[cfg(unix)]
fn read_in_parts(file: &File, bytes: &mut Vec<u8>, len: usize, parts: usize) -> io::Result<bool> {
    debug_assert!(bytes.is_empty() && bytes.capacity() >= len);
    let part = len.div_ceil(parts);
    let base = bytes.as_mut_ptr() as usize;
    let read_part = |index: usize| -> io::Result<bool> {
        let start = (index * part).min(len);
        let end = (start + part).min(len);
        populate(base + start, base + end);
        let mut at = start;
        while at < end {
            // SAFETY: `base + at .. base + end` lies within the vector's allocation (its
            // capacity is at least `len`), each part writes only its own range, and the
            // vector is neither read nor moved until every part is done. The kernel writes
            // plain bytes there; nothing reads them as initialized before `set_len`.
            let read = unsafe {
                libc::pread(
                    std::os::fd::AsRawFd::as_raw_fd(file),
                    (base + at) as *mut libc::c_void,
                    end - at,
                    at as libc::off_t,
                )
            };
            match read {
                0 => return Ok(false),
                n if n > 0 => at += n as usize,
                _ => {
                    let error = io::Error::last_os_error();
                    if error.kind() != io::ErrorKind::Interrupted {
                        return Err(error);
                    }
                }
            }
        }
        Ok(true)
    };
    let results: Vec<io::Result<bool>> = std::thread::scope(|scope| {
        // A part whose thread cannot be started is read on this one.
        let others: Vec<_> = (1..parts)
            .map(|index| (index, std::thread::Builder::new().spawn_scoped(scope, move || read_part(index)).ok()))
            .collect();
        let first = read_part(0);
        std::iter::once(first)
            .chain(others.into_iter().map(|(index, other)| match other {
                Some(other) => other.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                None => read_part(index),
            }))
            .collect()
    });
    let mut whole = true;
    for result in results {
        whole &= result?;
    }
    if whole {
        // SAFETY: every part read its whole range, so the first `len` bytes are written.
        unsafe { bytes.set_len(len) };
    }
    Ok(whole)
}

/// Has the kernel provide the whole pages between `from` and `to` (addresses inside a
/// vector's allocation) before a part is read into them: the same pages, zeroed as before, but
/// without a trap into the kernel for each 4 KiB as the read first writes it. 16 MiB on two
/// cores, twelve runs each (`strace -T`): each half's `pread` took 5.4–9.4 ms (median 6.8);
/// populated, 3.1–4.2 ms for the pages and 1.7–2.2 ms for the `pread`. Ordinary pages: huge
/// ones fault once per 2 MiB, but on this machine's virtual machine they came slowly whenever
/// the host had to back them (the halves' reads 3–31 ms, ARCHITECTURE.md).
///
/// In calls of [`POPULATE_STEP`] each: a call holds the process's address-space lock while it
/// populates, and a thread that is starting maps and unmaps memory (the C library's arena for
/// it), which waits for that lock. Populated in one call, the first part held it for all of its
/// 32 MiB (12–17 ms at 64 MiB, `strace -f -T`), and the second part's thread began its reading
/// only then: both parts were in after 26–40 ms, now after 23–29 ms (16 MiB: a median of 8.5 ms
/// before, 6.0 ms now, eight runs each).
#[cfg(target_os = "linux")]
fn populate(from: usize, to: usize) {
    const PAGE: usize = 4096;
    let (mut first, end) = (from.next_multiple_of(PAGE), to / PAGE * PAGE);
    while end > first {
        let step = (end - first).min(POPULATE_STEP);
        // SAFETY: the pages lie inside the vector's allocation, owned by this process and
        // written by no one else until the part is read; populating writes nothing into them
        // (a page not provided yet arrives zeroed, as a first write would have it). A kernel
        // without MADV_POPULATE_WRITE (before 5.14) refuses it, and the read faults them in.
        let refused = unsafe { libc::madvise(first as *mut libc::c_void, step, libc::MADV_POPULATE_WRITE) } != 0;
        if refused {
            return;
        }
        first += step;
    }
}

/// How much of a part [`populate`] provides per call: about half a millisecond of the lock on
/// this machine (fresh memory at about 1.5 µs a page).
#[cfg(target_os = "linux")]
const POPULATE_STEP: usize = 1 << 20;

#[cfg(not(target_os = "linux"))]
fn populate(_: usize, _: usize) {}

#[cfg(not(unix))]
fn read_in_parts(_file: &File, _bytes: &mut Vec<u8>, _len: usize, _parts: usize) -> io::Result<bool> {
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files above and below the size read in parts, and sizes that do not divide evenly,
    /// come back as they are.
    #[test]
    fn large_and_small_files_are_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        for len in [0, 1, 4095, PARTS_FROM as usize - 1, PARTS_FROM as usize, PARTS_FROM as usize * 2 + 7] {
            let path = dir.path().join(format!("{len}.xaif"));
            let contents: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
            std::fs::write(&path, &contents).unwrap();
            let read = read_file(&path).unwrap();
            assert!(read == contents, "a file of {len} bytes was read wrong ({} bytes)", read.len());
        }
    }

    /// A file that shrank since its size was taken is read again from the start, and the
    /// parts' short reads are not mistaken for its contents.
    #[cfg(unix)]
    #[test]
    fn a_shrunk_file_is_read_as_it_is_now() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shrinking.xaif");
        let len = PARTS_FROM as usize * 2;
        std::fs::write(&path, vec![b'a'; len / 2]).unwrap();
        let file = File::open(&path).unwrap();
        let mut bytes = Vec::with_capacity(len + 1);
        assert!(!read_in_parts(&file, &mut bytes, len, 3).unwrap());
        assert!(bytes.is_empty());
        assert_eq!(read_file(&path).unwrap().len(), len / 2);
    }

    #[test]
    fn a_missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_file(&dir.path().join("missing")).unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
