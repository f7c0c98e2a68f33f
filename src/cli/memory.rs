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

/// One of the binary's mimalloc options, both ways mimalloc takes it: as an environment
/// variable for `setenv` (`name`, `text`), and as its number in `mi_option_t` with its value
/// for `mi_option_set` (`number`, `value`; sizes in KiB).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct MimallocOption {
    name: &'static std::ffi::CStr,
    text: &'static std::ffi::CStr,
    number: i32,
    value: std::ffi::c_long,
}

macro_rules! option {
    ($name:literal = $text:literal, $number:expr, $value:expr) => {
        MimallocOption {
            name: c_string(concat!($name, "\0")),
            text: c_string(concat!($text, "\0")),
            number: $number,
            value: $value,
        }
    };
}

const fn c_string(text: &'static str) -> &'static std::ffi::CStr {
    match std::ffi::CStr::from_bytes_with_nul(text.as_bytes()) {
        Ok(string) => string,
        Err(_) => panic!("one NUL, at the end"),
    }
}

/// The options the binary gives mimalloc. The numbers come from the bundled `mimalloc.h`
/// (see `build.rs`).
///
/// `MIMALLOC_PURGE_DELAY=10`: freed memory goes back to the kernel 10 ms after it is freed
/// rather than a second later (its default here). The streaming modes free each routine's graphs
/// once it is written; with the default delay, the pages of many routines were still resident
/// when the next ones were built: peak RSS on a 16 MiB input in tangent mode was 49 MB with it,
/// 40 MB with 10 ms (39.7 MB with no delay, which on a small corpus file made 31 `madvise` calls
/// instead of 7).
///
/// `MIMALLOC_ARENA_RESERVE=64MiB`: address space reserved 64 MiB at a time rather than 1 GiB at
/// once. Reserving costs nothing, but the arena's bitmaps, sized by the reservation, are written
/// at start: about 40 of the 300 page faults of a run on a small corpus file. Large inputs get
/// further arenas as they grow (16 MiB input: the same time and peak memory).
///
/// `MIMALLOC_DESTROY_ON_EXIT=2`: at exit mimalloc does nothing (any other value: it collects
/// its heaps and hands their pages back, 12 `madvise` calls and 20 page faults on a small
/// corpus file, for memory the kernel takes back anyway a moment later: 0.3 ms of the 1.4 ms a
/// tangent run cost above `/bin/true`). Statistics asked for with `MIMALLOC_SHOW_STATS` are
/// printed at exit too, so they need `MIMALLOC_DESTROY_ON_EXIT=0` beside them.
const OPTIONS: [MimallocOption; 3] = {
    use mimalloc_options::*;
    [
        option!("MIMALLOC_PURGE_DELAY" = "10", MI_OPTION_PURGE_DELAY, 10),
        option!("MIMALLOC_ARENA_RESERVE" = "64MiB", MI_OPTION_ARENA_RESERVE, 64 << 10),
        option!("MIMALLOC_DESTROY_ON_EXIT" = "2", MI_OPTION_DESTROY_ON_EXIT, 2),
    ]
};

mod mimalloc_options {
    include!(concat!(env!("OUT_DIR"), "/mimalloc_options.rs"));
}

#[cfg(target_os = "linux")]
unsafe extern "C" {
    /// mimalloc's own (libmimalloc-sys declares it only with a feature that brings more).
    fn mi_option_set(option: i32, value: std::ffi::c_long);
}

/// Gives mimalloc the binary's options (`MIMALLOC_PURGE_DELAY=10`, `MIMALLOC_ARENA_RESERVE=64MiB`,
/// `MIMALLOC_DESTROY_ON_EXIT=2`: why, at `OPTIONS` in the source) before it reads its options,
/// unless the environment says otherwise. Called from a constructor that runs before the allocator's (see
/// [`disable_transparent_huge_pages`]); [`restore_environment`] must be called after it, first
/// thing in `main` (mimalloc's constructor has no priority, so it runs after every one that has).
///
/// mimalloc looks each of its fifty options up in the environment when it starts, comparing
/// every variable with each option's name without regard to case: 155,000 instructions with a
/// 35-variable environment, 6% of a tangent run on a small corpus file, and still 81,000 with
/// the binary's three options as the whole environment. When no variable names a mimalloc
/// option (none begins with `MIMALLOC_`, in any case), every lookup would fail but those of the
/// binary's options; so these are set directly (`mi_option_set`, which spares mimalloc their
/// lookup) and, while mimalloc starts, the environment it sees is empty: its options then cost
/// 31,000 instructions, and a corpus file's tangent, one process each, 0.2 ms less (18 fewer
/// page faults on SeqOfLoops). Otherwise the binary's options the environment lacks are added
/// to it, and mimalloc reads the whole of it as usual.
pub fn configure_allocator() {
    #[cfg(target_os = "linux")]
    // SAFETY: runs in a constructor, before `main` and before any thread exists, so nothing
    // reads or changes the environment concurrently. `environ` is a null-terminated array of
    // NUL-terminated strings (or null); the one put in its place is a static of that form (a
    // lone null), and the original is kept until `restore_environment` puts it back.
    // `mi_option_set` only stores a value in mimalloc's option table, which needs no
    // initialization, and every number given to it is a member of `mi_option_t`.
    unsafe {
        let mut variable = environ;
        let mut named = false;
        while !variable.is_null() && !(*variable).is_null() {
            let name = std::ffi::CStr::from_ptr(*variable).to_bytes();
            named |= name.len() >= 9 && name[..9].eq_ignore_ascii_case(b"MIMALLOC_");
            variable = variable.add(1);
        }
        if named {
            for option in OPTIONS {
                libc::setenv(option.name.as_ptr(), option.text.as_ptr(), 0);
            }
        } else {
            for option in OPTIONS {
                mi_option_set(option.number, option.value);
            }
            SAVED_ENVIRONMENT = Some(environ);
            environ = (&raw mut EMPTY_ENVIRONMENT).cast();
        }
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    // SAFETY: as above, a constructor before any thread exists; the strings are NUL-terminated.
    unsafe {
        for option in OPTIONS {
            libc::setenv(option.name.as_ptr(), option.text.as_ptr(), 0);
        }
    }
}

/// Puts back the environment [`configure_allocator`] replaced while mimalloc started: the first
/// thing `main` does, before anything reads the environment.
pub fn restore_environment() {
    #[cfg(target_os = "linux")]
    // SAFETY: called first in `main`, before any thread exists; the saved pointer is the
    // environment as the process started with it, untouched since.
    unsafe {
        if let Some(saved) = SAVED_ENVIRONMENT {
            environ = saved;
            SAVED_ENVIRONMENT = None;
        }
    }
}

#[cfg(target_os = "linux")]
unsafe extern "C" {
    static mut environ: *mut *mut std::ffi::c_char;
}

/// The environment mimalloc sees while it starts: none.
#[cfg(target_os = "linux")]
static mut EMPTY_ENVIRONMENT: [*mut std::ffi::c_char; 1] = [std::ptr::null_mut()];

/// The process's environment while [`EMPTY_ENVIRONMENT`] stands in for it.
#[cfg(target_os = "linux")]
static mut SAVED_ENVIRONMENT: Option<*mut *mut std::ffi::c_char> = None;

/// mimalloc as the global allocator, each request made through the entry point that serves it
/// fastest.
///
/// The `mimalloc` crate's allocator asks for every block with `mi_malloc_aligned`, whatever the
/// alignment. Above 1 KiB, where a block's size class is not a power of two, mimalloc cannot
/// vouch for the alignment of such a request, so it takes a block larger by the alignment and
/// marks its page as holding interior pointers, which sends every later free on that page down a
/// slower path; below, the aligned entry checks before it takes its fast path. Every block
/// mimalloc hands out is aligned to a machine word, so requests aligned to a word or less (all
/// but a few of the crate's) go to `mi_malloc`, `mi_zalloc` and `mi_realloc`; a request
/// aligned more strictly always goes to the aligned entries, so a block is reallocated through
/// the same kind of entry it was allocated through.
pub struct Allocator;

/// The alignment every mimalloc block has (its size classes are whole words).
const WORD: usize = std::mem::size_of::<usize>();

// SAFETY: mimalloc returns null or a block of at least the size asked for, aligned to a word
// (the plain entries, used only for alignments of a word or less) or to the alignment asked for
// (the aligned entries); `mi_free` takes blocks from either, and `mi_realloc` and
// `mi_realloc_aligned` keep the contents up to the smaller size.
unsafe impl std::alloc::GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: plain FFI calls; a null result is passed on, as `GlobalAlloc` expects.
        unsafe {
            if layout.align() <= WORD {
                libmimalloc_sys::mi_malloc(layout.size()).cast()
            } else {
                libmimalloc_sys::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if layout.align() <= WORD {
                libmimalloc_sys::mi_zalloc(layout.size()).cast()
            } else {
                libmimalloc_sys::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc.
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout`, so through the same kind of
        // entry as chosen here from the same alignment.
        unsafe {
            if layout.align() <= WORD {
                libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast()
            } else {
                libmimalloc_sys::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Allocator;
    use std::alloc::{GlobalAlloc, Layout};

    /// The numbers `build.rs` found for the options the binary sets name those options:
    /// mimalloc's own listing of its options, by name, shows the values set through them.
    #[cfg(target_os = "linux")]
    #[test]
    fn option_numbers_name_the_options_set() {
        use std::ffi::{CStr, c_char, c_void};
        unsafe extern "C" {
            fn mi_options_print_out(out: extern "C" fn(*const c_char, *mut c_void), arg: *mut c_void);
        }
        extern "C" fn gather(message: *const c_char, into: *mut c_void) {
            // SAFETY: mimalloc passes a NUL-terminated message and the `arg` given below, a
            // `String` that outlives the call.
            unsafe { (*into.cast::<String>()).push_str(&CStr::from_ptr(message).to_string_lossy()) }
        }
        let mut listing = String::new();
        // SAFETY: setting options only stores values in mimalloc's table (this test binary does
        // not allocate through mimalloc); the listing calls `gather` with `listing`, alive here.
        unsafe {
            for option in super::OPTIONS {
                super::mi_option_set(option.number, option.value);
            }
            mi_options_print_out(gather, (&raw mut listing).cast());
        }
        for expected in
            ["option 'purge_delay': 10 ", "option 'arena_reserve': 65536 KiB", "option 'destroy_on_exit': 2 "]
        {
            assert!(listing.lines().any(|line| line.starts_with(expected)), "no line `{expected}` in:\n{listing}");
        }
    }

    /// Blocks of every size up to 3 KiB and a few large ones, at every alignment from 1 to
    /// 4096, come back aligned, keep their contents through growing and shrinking, and are
    /// zeroed when asked.
    #[test]
    fn blocks_are_aligned_and_keep_their_contents() {
        let sizes = (1..=3072).step_by(7).chain([4096, 65536, 100_000, 1 << 20, 3 << 20]);
        for size in sizes {
            for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
                let layout = Layout::from_size_align(size, align).expect("layout");
                // SAFETY: a non-zero size; every block is freed with the layout it has.
                unsafe {
                    let block = Allocator.alloc_zeroed(layout);
                    assert!(!block.is_null());
                    assert_eq!(block as usize % align, 0, "size {size}, alignment {align}");
                    assert!(std::slice::from_raw_parts(block, size).iter().all(|&b| b == 0));
                    for i in 0..size {
                        *block.add(i) = i as u8;
                    }
                    let grown = Allocator.realloc(block, layout, size * 3);
                    assert_eq!(grown as usize % align, 0, "grown: size {size}, alignment {align}");
                    assert!((0..size).all(|i| *grown.add(i) == i as u8));
                    let grown_layout = Layout::from_size_align(size * 3, align).expect("layout");
                    let shrunk = Allocator.realloc(grown, grown_layout, size.div_ceil(2));
                    assert_eq!(shrunk as usize % align, 0, "shrunk: size {size}, alignment {align}");
                    assert!((0..size.div_ceil(2)).all(|i| *shrunk.add(i) == i as u8));
                    Allocator.dealloc(shrunk, Layout::from_size_align(size.div_ceil(2), align).expect("layout"));
                    let plain = Allocator.alloc(layout);
                    assert_eq!(plain as usize % align, 0, "size {size}, alignment {align}");
                    Allocator.dealloc(plain, layout);
                }
            }
        }
    }
}
