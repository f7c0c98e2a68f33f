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
