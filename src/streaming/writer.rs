//! Where the streaming driver's routines are written: on its own thread, or on one of their
//! own.
//!
//! On a large run the driver's thread is the critical path: the reader and the checks share
//! the other core, which has room to spare (16 MiB tangent on two cores: the driver busy for
//! 340 of 412 ms, the others for about 250). Writing each routine's text and freeing its
//! graphs was a sixth of the driver's time; a writing thread takes both over. It costs work
//! of its own and memory (the copy below), so the command line asks for it only where a core
//! is free for it and the input is large (`WRITER_CORES`, `WRITER_FROM` in `main.rs`).
//!
//! It writes from a copy of the call graph that follows the driver's, as the transforming side
//! follows the reader's ([`super::read_pipelined`]). The head is copied with the first routine;
//! after that the driver adds nothing to it but names and symbols (temporaries), both numbered
//! in the order they come, so each routine goes over with the names and symbols made since the
//! last one, and the copy numbers them as the driver did. The output is the same byte for
//! byte (`tests/streaming.rs`).

use std::io::{self, Write};
use std::sync::mpsc::{Receiver, SyncSender};

use crate::ir::{CallGraph, NameBatch, Routine, RoutineId, Symbol};
use crate::xaif::write::{WriteOptions, write_head_to, write_routine, write_routine_value};

use super::{RoutineSink, StreamError, put_graphs, take_graphs};

/// Where the driver's routines go.
pub(super) enum Output<'b> {
    /// Written on the driver's thread, through `buffer` where `body` lends none.
    Here { body: &'b mut dyn RoutineSink, buffer: Vec<u8> },
    /// Handed to the writing thread ([`spawn`]).
    Thread(Handle),
}

impl Output<'_> {
    pub(super) fn here(body: &mut dyn RoutineSink) -> Output<'_> {
        Output::Here { body, buffer: Vec::new() }
    }

    /// Writes `routine` and frees its graphs; its head stays in `cg`.
    pub(super) fn write_routine(&mut self, cg: &mut CallGraph, routine: RoutineId) -> Result<(), StreamError> {
        match self {
            Output::Here { body, buffer } => {
                if let Some(lent) = body.lend() {
                    write_routine(cg, routine, lent);
                    body.appended()?;
                } else {
                    buffer.clear();
                    write_routine(cg, routine, buffer);
                    body.write_all(buffer)?;
                }
                cg.routines[routine].drop_graphs();
                Ok(())
            }
            Output::Thread(handle) => Ok(handle.send_routine(cg, routine)?),
        }
    }

    /// Writes what goes before the routines (identity).
    pub(super) fn write_head(&mut self, cg: &CallGraph, options: &WriteOptions) -> io::Result<()> {
        match self {
            Output::Here { body, .. } => write_head_to(cg, options, *body),
            Output::Thread(handle) => write_head_to(cg, options, handle),
        }
    }
}

/// What the driver hands the writing thread.
enum Message {
    /// Text to write as it is.
    Text(Vec<u8>),
    /// The driver's call graph when the first routine was written: the head, every name and
    /// symbol made so far.
    Head(Box<CallGraph>),
    /// A routine, with the names and symbols the driver made since the last one, and how
    /// many of each it then had in all.
    Routine { routine: Box<Routine>, names: NameBatch, names_len: usize, symbols: Vec<Symbol>, symbols_len: usize },
}

/// The driver's end of the writing thread.
pub(super) struct Handle {
    sender: SyncSender<Message>,
    /// How many of the driver's names and symbols the thread's copy has; `None` before the
    /// head went over.
    sent: Option<(usize, usize)>,
    /// How many scopes and alias, du-ud and DO sets it has: where the driver's differ (no
    /// pass adds any in these modes), the whole head goes over again.
    head_shape: [usize; 4],
}

fn head_shape(cg: &CallGraph) -> [usize; 4] {
    [cg.scopes.len(), cg.alias_sets.len(), cg.duud_sets.len(), cg.do_sets.len()]
}

/// The writing thread, in `scope`, writing to `body`; the thread's result is the body's first
/// error. The thread ends once the [`Handle`] is dropped and what it sent is written.
pub(super) fn spawn<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    body: &'scope mut (dyn RoutineSink + Send),
) -> (Handle, std::thread::ScopedJoinHandle<'scope, io::Result<()>>) {
    // Two routines may wait: the driver goes on with the next while the thread writes.
    let (sender, receiver) = std::sync::mpsc::sync_channel(2);
    let thread = scope.spawn(move || write_all(receiver, body));
    (Handle { sender, sent: None, head_shape: [0; 4] }, thread)
}

/// Sending to the writing thread found its channel closed: the thread stopped at an error of
/// the body, which its result gives (`with_output` in `streaming.rs` reports that one).
fn stopped() -> io::Error {
    io::Error::other("the thread writing the routines stopped")
}

impl Handle {
    fn send(&self, message: Message) -> io::Result<()> {
        self.sender.send(message).map_err(|_| stopped())
    }

    fn send_routine(&mut self, cg: &mut CallGraph, id: RoutineId) -> io::Result<()> {
        // The graphs go over; a copy of the head stays, as a written routine's does.
        let graphs = take_graphs(&mut cg.routines[id]);
        let mut routine = cg.routines[id].clone();
        put_graphs(&mut routine, graphs);
        let (names_from, symbols_from) = match self.sent {
            Some(sent) if self.head_shape == head_shape(cg) => sent,
            _ => {
                self.send(Message::Head(Box::new(cg.clone())))?;
                self.head_shape = head_shape(cg);
                (cg.names.len(), cg.symbols.len())
            }
        };
        let names = cg.names.batch_since(names_from);
        let symbols = cg.symbols.since(symbols_from).to_vec();
        self.sent = Some((cg.names.len(), cg.symbols.len()));
        self.send(Message::Routine {
            routine: Box::new(routine),
            names,
            names_len: cg.names.len(),
            symbols,
            symbols_len: cg.symbols.len(),
        })
    }
}

impl Write for Handle {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.send(Message::Text(bytes.to_vec()))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The writing thread: writes what comes, in order, until the channel closes or `body` fails.
fn write_all(messages: Receiver<Message>, body: &mut (dyn RoutineSink + Send)) -> io::Result<()> {
    let out_of_step = |what: &str| io::Error::other(format!("the writing thread's copy of the {what} is out of step"));
    let mut copy: Option<Box<CallGraph>> = None;
    let mut buffer = Vec::new();
    for message in messages {
        match message {
            Message::Text(text) => body.write_all(&text)?,
            Message::Head(head) => copy = Some(head),
            Message::Routine { routine, names, names_len, symbols, symbols_len } => {
                let cg = copy.as_deref_mut().ok_or_else(|| out_of_step("head"))?;
                cg.names.append_batch(&names);
                if cg.names.len() != names_len {
                    return Err(out_of_step("names"));
                }
                for symbol in symbols {
                    cg.symbols.alloc(symbol);
                }
                if cg.symbols.len() != symbols_len {
                    return Err(out_of_step("symbols"));
                }
                if let Some(lent) = body.lend() {
                    write_routine_value(cg, &routine, lent);
                    body.appended()?;
                } else {
                    buffer.clear();
                    write_routine_value(cg, &routine, &mut buffer);
                    body.write_all(&buffer)?;
                }
            }
        }
    }
    Ok(())
}
