//! How the process asks the kernel for memory.

/// Turns transparent huge pages off for this process.
///
/// Where the kernel backs every anonymous mapping with huge pages (`always`), each 2 MiB region
/// mimalloc touches is zeroed whole at the first fault: that was most of the cost of starting
/// (about 1 ms per process on a small corpus file, measured with `perf stat`), and on large
/// inputs it zeroes memory that is never used. Ordinary pages cost neither. Regions mapped
/// before stay as they are, so the binary calls this from a constructor that runs before the
/// allocator's (`main` is too late: mimalloc has mapped its first arena by then).
pub fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and changes no memory we hold;
    // a failure (an old kernel) leaves the default, which is only slower.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Asks mimalloc to return freed memory to the kernel 10 ms after it is freed rather than a
/// second later (its default here): `MIMALLOC_PURGE_DELAY=10`, unless the environment says
/// otherwise. The streaming modes free each routine's graphs once it is written; with the
/// default delay, the pages of many routines were still resident when the next ones were built:
/// peak RSS on a 16 MiB input in tangent mode was 49 MB with it, 40 MB with 10 ms (39.7 MB with
/// no delay, which on a small corpus file made 31 `madvise` calls instead of 7). Like
/// [`disable_transparent_huge_pages`] it must run before mimalloc reads its options, from a
/// constructor (child processes inherit the variable).
pub fn purge_freed_memory_promptly() {
    #[cfg(unix)]
    // SAFETY: runs in a constructor, before `main` and before any thread exists, so nothing
    // reads the environment concurrently; both strings are NUL-terminated literals.
    unsafe {
        libc::setenv(c"MIMALLOC_PURGE_DELAY".as_ptr(), c"10".as_ptr(), 0);
    }
}

/// Asks mimalloc to reserve its address space 64 MiB at a time rather than 1 GiB at once
/// (`MIMALLOC_ARENA_RESERVE=64MiB`, unless the environment says otherwise). Reserving costs
/// nothing, but the arena's bitmaps, sized by the reservation, are written at start: about 40
/// of the 300 page faults of a run on a small corpus file. Large inputs get further arenas as
/// they grow (16 MiB input: the same time and peak memory). Set from the same constructor as
/// [`purge_freed_memory_promptly`].
pub fn reserve_address_space_in_steps() {
    #[cfg(unix)]
    // SAFETY: as in `purge_freed_memory_promptly`: a constructor, before any thread exists.
    unsafe {
        libc::setenv(c"MIMALLOC_ARENA_RESERVE".as_ptr(), c"64MiB".as_ptr(), 0);
    }
}
