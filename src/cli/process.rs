//! How the binary starts on Linux with glibc, where it has its own entry point instead of the
//! standard library's (`#![no_main]` in `src/main.rs`).
//!
//! Why: the standard library's start-up, before `main`, reads `/proc/self/maps` (glibc's way of
//! finding the main thread's stack, which it parses with `sscanf`) to place a guard for its
//! stack-overflow message, maps an alternate signal stack, installs two signal handlers and names
//! the main thread; at exit it takes the alternate stack down again. For a small corpus file,
//! one process per file, that was 18 system calls, 19 page faults and 0.2–0.28 ms of a 2.0–2.3 ms
//! process (190 corpus inputs five times, alternating, median per file; `perf stat -r 300` on
//! SeqOfLoops: 2.08 → 1.84–1.90 ms). What of it matters here is redone by [`start`] and by the
//! entry point: descriptors 0–2 made valid, SIGPIPE ignored (so a closed pipe is an error the
//! commands report, exit status 141), a panic turned into exit status 101 after the panic hook
//! printed it, standard output flushed at the end. What is given up: a stack overflow ends the
//! process by SIGSEGV without the standard library's message (the readers and passes bound
//! their recursion, so none is expected), and a panic names the main thread `<unnamed>`.
//!
//! `std::env::args` needs no start-up of the standard library on glibc: it takes the arguments
//! from glibc's constructor call. Other platforms keep the standard entry point.

/// What the standard library's start-up does that the commands rely on: descriptors 0, 1 and 2
/// are valid (a closed one is opened on `/dev/null`, so that no file the run opens takes its
/// number and receives what is meant for standard output), and SIGPIPE is ignored.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn start() {
    use std::ffi::c_int;
    // SAFETY: plain system calls on the process's own descriptors and signal disposition,
    // before any thread exists; the path is a NUL-terminated static.
    unsafe {
        let mut fds = [0, 1, 2].map(|fd: c_int| libc::pollfd { fd, events: 0, revents: 0 });
        let closed: [bool; 3] = if libc::poll(fds.as_mut_ptr(), 3, 0) >= 0 {
            fds.map(|fd| fd.revents & libc::POLLNVAL != 0)
        } else {
            // poll can fail (no memory, a signal); ask each descriptor instead.
            [0, 1, 2].map(|fd| {
                libc::fcntl(fd, libc::F_GETFD) == -1
                    && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
            })
        };
        for (fd, closed) in (0..).zip(closed) {
            // The lowest free number is the one closed, as no lower one is.
            if closed && libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) != fd {
                libc::abort();
            }
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}
