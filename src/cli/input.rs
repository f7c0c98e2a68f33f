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
        advise_huge_pages(&mut bytes, len);
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

/// Asks for transparent huge pages under the first `len` bytes of `bytes`' allocation, where
/// the process may have them (`cli::memory::disable_transparent_huge_pages`): the read fills
/// every byte, so a 2 MiB page costs one fault and one zeroing instead of 512 of each, and no
/// memory the run would not use (only whole 2 MiB pages inside those bytes are advised). 16 MiB
/// tangent: 2,700 fewer page faults, the same peak RSS.
#[cfg(target_os = "linux")]
fn advise_huge_pages(bytes: &mut Vec<u8>, len: usize) {
    const HUGE_PAGE: usize = 2 << 20;
    debug_assert!(bytes.capacity() >= len);
    let start = bytes.as_mut_ptr() as usize;
    let (first, end) = (start.next_multiple_of(HUGE_PAGE), (start + len) / HUGE_PAGE * HUGE_PAGE);
    if end > first {
        // SAFETY: `first..end` lies inside the vector's allocation, which this process owns;
        // the advice changes only how the kernel backs those pages, not what they hold, and a
        // failure (no huge pages here) leaves them as they were.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_: &mut Vec<u8>, _: usize) {}

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

    /// The whole 2 MiB pages inside a large input's bytes are advised to be huge pages (what
    /// the kernel then does depends on its settings and the process's).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_large_inputs_buffer_is_advised_huge_pages() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("large.xaif");
        std::fs::write(&path, vec![b'x'; PARTS_FROM as usize + (5 << 20)]).unwrap();
        let read = read_file(&path).unwrap();
        let inside = (read.as_ptr() as usize).next_multiple_of(2 << 20);
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut flags = None;
        let mut holds = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().and_then(|range| range.split_once('-'));
            if let Some((from, to)) = range.filter(|(from, _)| !from.ends_with(':')) {
                let parse = |hex: &str| usize::from_str_radix(hex, 16).ok();
                if let (Some(from), Some(to)) = (parse(from), parse(to)) {
                    holds = (from..to).contains(&inside);
                    continue;
                }
            }
            if holds && let Some(vm_flags) = line.strip_prefix("VmFlags:") {
                flags = Some(vm_flags.split_whitespace().map(str::to_owned).collect::<Vec<_>>());
            }
        }
        let flags = flags.expect("the buffer's mapping in /proc/self/smaps");
        assert!(flags.iter().any(|flag| flag == "hg"), "VmFlags {flags:?}");
    }

    #[test]
    fn a_missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_file(&dir.path().join("missing")).unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
