//! Ctrl-C (SIGINT) and SIGTERM. A single run removes the temporary files it made, says
//! "interrupted" and exits with 128 + the signal's number, as a shell reports a program the
//! signal ended. `batch` asks to end by itself instead ([`defer`]): it starts no more files,
//! lets those under way finish, and writes the report of what finished, marked incomplete. A
//! second signal ends a batch at once.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The signal received, 0 before any.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// Whether the command ends by itself on a first signal ([`defer`]).
static DEFERRED: AtomicBool = AtomicBool::new(false);

/// Starts listening for the two signals, on a thread of its own. Where the system has no
/// such signals, a run ends as the system ends it.
pub fn install() {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else { return };
        std::thread::spawn(move || {
            for signal in signals.forever() {
                let first = RECEIVED.swap(signal, Ordering::SeqCst) == 0;
                if !(first && DEFERRED.load(Ordering::SeqCst)) {
                    end_now(signal);
                }
            }
        });
    }
}

/// The command ends by itself on a first signal, looking at [`received`].
pub fn defer() {
    DEFERRED.store(true, Ordering::SeqCst);
}

/// The signal received so far, if any.
pub fn received() -> Option<i32> {
    let signal = RECEIVED.load(Ordering::SeqCst);
    (signal != 0).then_some(signal)
}

/// The exit status of a run ended by `signal`.
pub fn exit_status(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(130)
}

/// Removes this run's temporary files and ends the process.
fn end_now(signal: i32) -> ! {
    crate::output::abandon_temporaries();
    eprintln!("xaifbooster: interrupted");
    std::process::exit(i32::from(exit_status(signal)))
}
