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

/// Tells mimalloc to hand no more freed memory back to the kernel: for the end of a run, once
/// nothing large will be allocated again, where the kernel takes the whole address space back
/// at exit anyway.
///
/// mimalloc hands freed pages back (`madvise`) some time after they are freed (the purge delay
/// among the binary's options, `OPTIONS` in the source), when a later allocation or a thread's
/// exit looks for expired ones, and a thread's exit purges every arena's. At the end of a
/// streamed run the thread that moves the routines behind the head, and the one that wrote them, exit
/// after the last routines were freed:
/// the copy thread's exit on a 16 MiB tangent made 67 `madvise` calls for 30 MiB (`strace -f`)
/// while the command waited to join it, the only work left then. Without them, from the
/// output's `fallocate` to its rename: median 21.0 → 19.0 ms over 12 runs each
/// (`scripts/end_phase.sh`, with `MIMALLOC_PURGE_DELAY=-1` in the environment); the process's
/// exit, which now frees those pages, took no longer (median 5.5 against 5.6 ms). The peak is
/// reached before, while routines are built and freed, and is unchanged.
///
/// Only for the end of a process's last large work: a process that goes on to other inputs
/// (`batch`, which does not call it) would keep every input's freed memory to the end.
pub fn keep_freed_memory() {
    #[cfg(target_os = "linux")]
    // SAFETY: `mi_option_set` only stores a value in mimalloc's option table; threads running
    // meanwhile read the purge delay, an aligned machine word, as the old value or the new
    // one, and either is a valid delay.
    unsafe {
        mi_option_set(mimalloc_options::MI_OPTION_PURGE_DELAY, -1);
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
/// fastest, behind a start region (`StartRegion`, below) that serves the driving thread's small
/// blocks.
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

/// The driving thread's small blocks, carved side by side out of one static region and kept on
/// a free list per size class when freed.
///
/// Why: mimalloc keeps each size class on pages of its own, so a small file's run, about
/// 380 requests of 29 size classes, touched 53 pages of its arena (its first block in a class
/// costs a page or two, besides the arena's own set-up), at 2.5–3.3 µs a page fault. Here all
/// classes share the region's pages. Only the thread that called [`own_start_region`] uses it
/// (so its lists need no synchronization); other threads, blocks aligned to more than 16 bytes
/// or larger than [`StartRegion::LARGEST`], and whatever the region has no room for go to
/// mimalloc. A region block freed by another thread is not reused. (A region bumped through
/// without free lists saved mini1 23 faults but cost larger files more than it saved.)
struct StartRegion {
    bytes: std::cell::UnsafeCell<RegionBytes>,
    /// The offset of the first byte never handed out.
    top: std::cell::Cell<usize>,
    /// Per size class, the last block freed (each free block holds the next one's address).
    free: std::cell::UnsafeCell<[*mut u8; StartRegion::CLASSES]>,
}

/// The region's bytes, page aligned (so every block, carved at a multiple of 16 bytes from its
/// start, is aligned to 16).
#[repr(C, align(4096))]
struct RegionBytes([u8; StartRegion::SIZE]);

// SAFETY: only the owning thread reads or writes `top`, `free` and the blocks on the free
// lists (see `owner`); other threads only compare addresses with the region's.
unsafe impl Sync for StartRegion {}

/// Zero-initialized, so it lies in `.bss`: no part of it is in the binary, and a page of it
/// costs memory only once touched.
static START_REGION: StartRegion = StartRegion {
    bytes: std::cell::UnsafeCell::new(RegionBytes([0; StartRegion::SIZE])),
    top: std::cell::Cell::new(0),
    free: std::cell::UnsafeCell::new([std::ptr::null_mut(); StartRegion::CLASSES]),
};

thread_local! {
    /// Whether this thread is the one that uses the start region.
    static OWNER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a thread has taken the start region: one thread ever does.
static CLAIMED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes the calling thread the one whose small blocks come from the start region (the
/// command's driving thread, first thing), unless a thread did before: whether it does.
pub fn own_start_region() -> bool {
    use std::sync::atomic::Ordering;
    let claimed = CLAIMED.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_ok();
    if claimed {
        OWNER.with(|owner| owner.set(true));
    }
    claimed
}

#[inline(always)]
fn owner() -> bool {
    OWNER.with(|owner| owner.get())
}

impl StartRegion {
    const SIZE: usize = 1 << 20;
    /// Larger requests (an input file, an output buffer) go straight to mimalloc.
    const LARGEST: usize = 32 * 1024;
    /// Every 16 bytes up to 1 KiB, then powers of two up to `LARGEST`.
    const CLASSES: usize = 64 + 5;

    /// The size class of a request of `size` bytes (at most `LARGEST`), and its block size.
    #[inline(always)]
    fn class(size: usize) -> (usize, usize) {
        if size <= 1024 {
            let class = size.div_ceil(16).max(1) - 1;
            (class, (class + 1) * 16)
        } else {
            let block = size.next_power_of_two();
            (64 + block.trailing_zeros() as usize - 11, block)
        }
    }

    #[inline(always)]
    fn base(&self) -> usize {
        self.bytes.get() as usize
    }

    /// Whether `ptr` lies in the region.
    #[inline(always)]
    fn holds(&self, ptr: *mut u8) -> bool {
        (ptr as usize).wrapping_sub(self.base()) < Self::SIZE
    }

    /// A block for `layout` from the region, or null where it does not serve it.
    #[inline(always)]
    fn take(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.size() > Self::LARGEST || layout.align() > 16 || !owner() {
            return std::ptr::null_mut();
        }
        let (class, block_size) = Self::class(layout.size());
        // SAFETY: the owning thread alone touches the lists; a listed block is free, at least a
        // word long and word aligned, and holds the next one's address.
        unsafe {
            let head = &mut (*self.free.get())[class];
            if !head.is_null() {
                let block = *head;
                *head = block.cast::<*mut u8>().read();
                return block;
            }
        }
        let start = self.top.get();
        if start + block_size > Self::SIZE {
            return std::ptr::null_mut();
        }
        self.top.set(start + block_size);
        (self.base() + start) as *mut u8
    }

    /// Takes back a region block of a request of `size` bytes: onto its class's list on the
    /// owning thread, nowhere on another.
    #[inline(always)]
    fn give_back(&self, ptr: *mut u8, size: usize) {
        if !owner() {
            return;
        }
        let (class, _) = Self::class(size);
        // SAFETY: as in `take`; `ptr` is a free block of this class, 16-byte aligned.
        unsafe {
            let head = &mut (*self.free.get())[class];
            ptr.cast::<*mut u8>().write(*head);
            *head = ptr;
        }
    }

    // This and what it calls are inlined into the allocator's entry points (`__rust_alloc`,
    // `__rust_dealloc`): a call of its own, with its register saves, had been a third of
    // a region block's cost (2 MiB: 2% of the tangent's driving thread).
    #[inline(always)]
    fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let block = self.take(layout);
        if block.is_null() { mimalloc::alloc(layout) } else { block }
    }

    fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        let block = self.take(layout);
        if block.is_null() {
            return mimalloc::alloc_zeroed(layout);
        }
        // A block given back and handed out again holds what was written to it.
        // SAFETY: the block is at least `layout.size()` bytes the region just handed out.
        unsafe { block.write_bytes(0, layout.size()) };
        block
    }

    /// # Safety
    /// `ptr` came from this region's `alloc`, `alloc_zeroed` or `realloc` with `layout`, and is
    /// not used again.
    #[inline(always)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        if self.holds(ptr) {
            self.give_back(ptr, layout.size());
        } else {
            // SAFETY: a block not in the region came from mimalloc.
            unsafe { mimalloc::free(ptr) }
        }
    }

    /// # Safety
    /// As `GlobalAlloc::realloc`, for a block of this region's `alloc`, `alloc_zeroed` or
    /// `realloc`.
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if !self.holds(ptr) {
            // SAFETY: a block not in the region came from mimalloc, with `layout`.
            return unsafe { mimalloc::realloc(ptr, layout, new_size) };
        }
        // A region block is as large as its class: a new size of the same class fits it.
        if new_size <= Self::LARGEST && Self::class(new_size).0 == Self::class(layout.size()).0 {
            return ptr;
        }
        // SAFETY: `layout.align()` is a valid alignment and `new_size`, rounded up to it, does
        // not overflow (`GlobalAlloc::realloc`'s contract).
        let new_layout = unsafe { std::alloc::Layout::from_size_align_unchecked(new_size, layout.align()) };
        let block = self.alloc(new_layout);
        if !block.is_null() {
            // SAFETY: both blocks hold at least the smaller size and are disjoint, the old one
            // being still handed out.
            unsafe { std::ptr::copy_nonoverlapping(ptr, block, layout.size().min(new_size)) };
            self.give_back(ptr, layout.size());
        }
        block
    }
}

/// mimalloc's entries, chosen by alignment.
mod mimalloc {
    use super::WORD;
    use std::alloc::Layout;

    // Each function: mimalloc returns null or a block of at least the size asked for, aligned
    // to a word (the plain entries, used only for alignments of a word or less) or to the
    // alignment asked for (the aligned entries); `mi_free` takes blocks from either, and
    // `mi_realloc` and `mi_realloc_aligned` keep the contents up to the smaller size.

    pub(super) fn alloc(layout: Layout) -> *mut u8 {
        // SAFETY: plain FFI calls; a null result is passed on, as `GlobalAlloc` expects.
        unsafe {
            if layout.align() <= WORD {
                libmimalloc_sys::mi_malloc(layout.size()).cast()
            } else {
                libmimalloc_sys::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    pub(super) fn alloc_zeroed(layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if layout.align() <= WORD {
                libmimalloc_sys::mi_zalloc(layout.size()).cast()
            } else {
                libmimalloc_sys::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    /// # Safety
    /// `ptr` came from mimalloc (any entry) and is not used again.
    pub(super) unsafe fn free(ptr: *mut u8) {
        // SAFETY: the caller's.
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    /// # Safety
    /// `ptr` came from this module's `alloc` or `alloc_zeroed` with `layout`.
    pub(super) unsafe fn realloc(ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came through the same kind of entry as chosen here from the same
        // alignment.
        unsafe {
            if layout.align() <= WORD {
                libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast()
            } else {
                libmimalloc_sys::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
            }
        }
    }
}

// SAFETY: the start region hands out disjoint blocks of at least the size asked for, aligned
// to 16 bytes (it takes no stricter alignment), and passes everything else to mimalloc (see
// `mimalloc`); a block goes back to where it came from, told apart by its address.
unsafe impl std::alloc::GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        START_REGION.alloc(layout)
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        START_REGION.alloc_zeroed(layout)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: the caller's: `ptr` came from this allocator with `layout`.
        unsafe { START_REGION.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's.
        unsafe { START_REGION.realloc(ptr, layout, new_size) }
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
        // At the end of a run, freed memory is no longer handed back: no purge delay at all.
        super::keep_freed_memory();
        listing.clear();
        // SAFETY: as above.
        unsafe { mi_options_print_out(gather, (&raw mut listing).cast()) };
        let expected = "option 'purge_delay': -1 ";
        assert!(listing.lines().any(|line| line.starts_with(expected)), "no line `{expected}` in:\n{listing}");
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

    /// The start region, on the one thread that takes it: blocks aligned, kept apart and
    /// reused by size class, growing out of their class keeping their contents, zero when
    /// handed out zeroed again; other threads' blocks come from mimalloc, and one of its blocks
    /// freed by another thread is not reused; when full, the region passes requests to
    /// mimalloc.
    #[test]
    fn the_start_region_serves_its_thread_and_passes_the_rest_to_mimalloc() {
        use super::{START_REGION, StartRegion, own_start_region};
        std::thread::spawn(|| {
            assert!(own_start_region(), "no other test takes the region");
            assert!(!own_start_region(), "taken once");
            // SAFETY: every block is used within its size and freed once, with its layout.
            unsafe {
                let layout = |size, align| Layout::from_size_align(size, align).expect("layout");
                let a = Allocator.alloc(layout(40, 8));
                let b = Allocator.alloc(layout(40, 8));
                assert!(START_REGION.holds(a) && START_REGION.holds(b));
                assert_eq!((a as usize % 16, (b as usize).abs_diff(a as usize)), (0, 48));
                Allocator.dealloc(a, layout(40, 8));
                assert_eq!(Allocator.alloc(layout(33, 16)), a, "reused within its class");
                // Growing within its class stays; out of it, moves with the contents.
                for i in 0..33 {
                    *a.add(i) = i as u8;
                }
                assert_eq!(Allocator.realloc(a, layout(33, 16), 48), a);
                let grown = Allocator.realloc(a, layout(48, 16), 5000);
                assert!(START_REGION.holds(grown) && grown != a);
                assert!((0..33).all(|i| *grown.add(i) == i as u8));
                let large = Allocator.realloc(grown, layout(5000, 16), 100_000);
                assert!(!START_REGION.holds(large));
                assert!((0..33).all(|i| *large.add(i) == i as u8));
                Allocator.dealloc(large, layout(100_000, 16));
                // `a`'s block is back on its list, dirty: handed out zeroed, it is zero.
                let zeroed = Allocator.alloc_zeroed(layout(40, 8));
                assert_eq!(zeroed, a);
                assert!(std::slice::from_raw_parts(zeroed, 40).iter().all(|&b| b == 0));
                // Stricter alignments go to mimalloc.
                let strict = Allocator.alloc(layout(64, 64));
                assert!(!START_REGION.holds(strict) && (strict as usize).is_multiple_of(64));
                Allocator.dealloc(strict, layout(64, 64));
                // Another thread: mimalloc's blocks; freeing a region block there keeps it
                // off the lists.
                let (theirs, freed) = (b as usize, Allocator.alloc(layout(40, 8)) as usize);
                let other = std::thread::spawn(move || {
                    Allocator.dealloc(freed as *mut u8, layout(40, 8));
                    let block = Allocator.alloc(layout(40, 8));
                    let outside = !START_REGION.holds(block);
                    Allocator.dealloc(block, layout(40, 8));
                    outside
                });
                assert!(other.join().expect("thread"), "another thread's block from mimalloc");
                assert_ne!(Allocator.alloc(layout(40, 8)) as usize, freed, "not reused");
                Allocator.dealloc(theirs as *mut u8, layout(40, 8));
                Allocator.dealloc(zeroed, layout(40, 8));
                // Filled to the end, the region passes requests on; blocks keep their bytes.
                let mut blocks = Vec::new();
                loop {
                    let block = Allocator.alloc(layout(1000, 8));
                    block.write_bytes(blocks.len() as u8, 1000);
                    let inside = START_REGION.holds(block);
                    blocks.push(block);
                    if !inside {
                        break;
                    }
                }
                assert!(blocks.len() > StartRegion::SIZE / 1024 / 2, "{} blocks", blocks.len());
                for (i, &block) in blocks.iter().enumerate() {
                    assert!(std::slice::from_raw_parts(block, 1000).iter().all(|&b| b == i as u8));
                    Allocator.dealloc(block, layout(1000, 8));
                }
            }
        })
        .join()
        .expect("the region's thread");
    }

    /// Size classes: every size up to the largest the region serves fits its class's block,
    /// and classes are numbered within the lists.
    #[test]
    fn size_classes_hold_their_sizes() {
        use super::StartRegion;
        for size in 1..=StartRegion::LARGEST {
            let (class, block) = StartRegion::class(size);
            assert!(size <= block && class < StartRegion::CLASSES, "size {size}: class {class}, block {block}");
            assert!(block.is_multiple_of(16));
            if size > 1 {
                assert!(StartRegion::class(size - 1).0 <= class);
            }
        }
    }
}
