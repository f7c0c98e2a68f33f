//! The one driver: runs a mode over a document, from the input's bytes to the output's.
//!
//! Every command that transforms (`identity`, `tangent`, `adjoint`, `trace`, and `batch` for
//! each of its files) calls [`run`]. A run is, in order:
//!
//! 1. **Checks.** The validator's checks that need no reader ([`validate_without_reader`]):
//!    before the transformation on small inputs, beside it on a thread of their own on large
//!    ones ([`Options::threads`]), where the transformation stops once they find an error.
//! 2. **Routine by routine** ([`stream`]): the reader hands each routine over as it closes, the
//!    mode's passes run on it, it is written to a spill buffer and its graphs dropped, so memory
//!    stays near the input's size. The document's head, to which the passes add temporaries,
//!    is written last, in front of the routines.
//! 3. **The whole tree**, only where a result depends on more than one routine and the
//!    routines it calls ([`StreamError::WholeTree`] says why): the document is read whole,
//!    the passes run over every routine at once ([`crate::pipeline`]) and it is written. The
//!    reasons, all decided by the routine-by-routine modes and handled here:
//!    - forced passivation (`-p`) changes references in every routine after symbols;
//!    - activity analysis (`--activity-analysis`) is interprocedural;
//!    - TypeChange's `-r` renames every routine before converting any call;
//!    - statement ids the lenient reader renames (repeated in a routine) or that need decoding
//!      (the survey cannot list them);
//!    - the adjoint, where TypeChange saves indices (numbered before every routine's adjoint
//!      temporaries on the whole tree), where a fact of the first pass names a symbol a pass
//!      made, or where a transformation fails (so that its report names the statement as
//!      the whole tree numbers it).
//! 4. **Output.** Nothing reaches `output` before the checks and the transformation have
//!    succeeded: a failed run writes nothing, whatever the destination. (Identity, whose head
//!    is known before its first routine, writes straight into an output that shows nothing
//!    until it is committed and goes when dropped: a temporary file, which the caller of a
//!    failed run drops.)
//!
//! The output is the same byte for byte whichever path and whatever threads ran
//! (`tests/streaming.rs`, `tests/validate_alongside.rs`).

pub mod stream;

use std::io::{self, Write};
use std::time::{Duration, Instant};

pub use stream::{Concurrency, StreamError, Streamed};

use crate::ir::CallGraph;
use crate::output::{Spill, SpillTarget};
use crate::pipeline::{self, Config, PipelineError, Report};
use crate::xaif::intrinsics::Catalogue;
use crate::xaif::validate::{
    Progress, ValidateOptions, validate, validate_without_reader, validate_without_reader_progressively,
    with_reader_findings,
};
use crate::xaif::write::{write_head_to, write_routine, write_tail};
use crate::xaif::{self, Diagnostic, ReadOptions, Severity, WriteOptions};

/// The engine's modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Parse and unparse, with forced passivation (the original's plain driver).
    Identity,
    /// The tangent-linear model.
    Tangent,
    /// The adjoint model: one replacement list per routine.
    Adjoint,
    /// Calls of the runtime's tracing routines (the original's TraceDiff): one tracing
    /// replacement list per routine.
    Trace,
}

impl Mode {
    /// The schema a document of this mode's output follows.
    pub fn schema(self) -> &'static str {
        match self {
            Mode::Identity => "xaif.xsd",
            Mode::Tangent | Mode::Adjoint | Mode::Trace => "xaif_output.xsd",
        }
    }

    /// The word for the mode in messages and logs.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Identity => "identity",
            Mode::Tangent => "tangent",
            Mode::Adjoint => "adjoint",
            Mode::Trace => "trace",
        }
    }
}

/// How a run reads, transforms and writes.
#[derive(Clone, Debug)]
pub struct Options<'a> {
    pub catalogue: &'a Catalogue,
    /// Refuse what the lenient reader would accept with a warning (`--strict`).
    pub strict: bool,
    /// The passes' switches.
    pub config: Config,
    /// The `xsi:schemaLocation` written into the output.
    pub schema_location: String,
    /// Whether a large run may take threads of its own: the checks, the reader and the
    /// adjoint's worker each on one. `batch`, which runs a file on every core, says no.
    pub threads: bool,
}

/// From this input size on, the checks run beside the transformation and the reader on a
/// thread of its own (with [`Options::threads`]); below it a thread costs more than it saves.
pub const THREADS_FROM: usize = 1 << 20;

/// What a successful run did.
#[derive(Debug, Default)]
pub struct Run {
    pub report: Report,
    /// The checks' and the reader's findings: warnings only.
    pub warnings: Vec<Diagnostic>,
    /// Why the whole tree was built, where it was.
    pub whole_tree: Option<&'static str>,
    /// Wall time per step, for the debug log.
    pub timings: Vec<(&'static str, Duration)>,
}

/// Why a run wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The checks or the reader found an error: every finding, errors and warnings.
    #[error("the input has errors")]
    Invalid(Vec<Diagnostic>),
    /// A pass failed on a valid input; `warnings` are the input's findings.
    #[error("{error}")]
    Transform {
        #[source]
        error: PipelineError,
        warnings: Vec<Diagnostic>,
    },
    /// The routines, written before the document's head, could not be held until it was
    /// known ([`Spill`]: a temporary file past a few megabytes).
    #[error("cannot hold the routines in the temporary directory: {0}")]
    Spill(#[source] io::Error),
    /// The output could not be written.
    #[error(transparent)]
    Write(#[from] io::Error),
}

/// Runs `mode` over `input` (named `file` in messages) and writes the output to `output`.
pub fn run(
    mode: Mode,
    input: &[u8],
    file: &str,
    output: &mut dyn SpillTarget,
    options: &Options,
) -> Result<Run, Failure> {
    let checks = ValidateOptions { strict: options.strict, activity: false };
    let beside = options.threads && input.len() >= THREADS_FROM && crate::cores() >= 2;
    let started = Instant::now();
    let mut spill = Spill::new();
    // Identity's head is complete before its first routine, so where the output shows nothing
    // until it is kept, the whole document goes straight to it, with no spill to copy.
    let straight = mode == Mode::Identity && options.config.passive.is_empty() && output.hidden_until_commit();
    let (findings, streamed) = {
        let body: &mut dyn Write = if straight { &mut *output } else { &mut spill };
        if beside {
            let progress = Progress::default();
            std::thread::scope(|scope| {
                let checking = scope.spawn(|| validate_without_reader_progressively(input, file, &checks, &progress));
                let streamed = stream(mode, input, file, body, options, Some(&progress), true);
                let findings = checking.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (findings, streamed)
            })
        } else {
            let findings = validate_without_reader(input, file, &checks);
            if has_error(&findings) {
                return Err(Failure::Invalid(findings));
            }
            (findings, stream(mode, input, file, body, options, None, false))
        }
    };
    if has_error(&findings) {
        return Err(Failure::Invalid(findings));
    }
    let mut timings = vec![("read, transform and write, routine by routine", started.elapsed())];
    let why = match streamed {
        Ok(mut streamed) => {
            let warnings = with_reader_findings(findings, std::mem::take(&mut streamed.warnings));
            if has_error(&warnings) {
                return Err(Failure::Invalid(warnings));
            }
            let started = Instant::now();
            streamed.write_head(output)?;
            output.append(&mut spill)?;
            output.write_all(&streamed.tail)?;
            output.flush()?;
            timings.push(("write", started.elapsed()));
            return Ok(Run { report: streamed.report, warnings, whole_tree: None, timings });
        }
        Err(StreamError::WholeTree(why)) => why,
        Err(StreamError::Read(error)) => {
            return Err(Failure::Invalid(with_reader_findings(findings, error.findings().to_vec())));
        }
        Err(StreamError::Pipeline(error)) => {
            // The routines after the failing one were not read: the whole document's findings
            // come from a full validation, and an error among them is the run's failure.
            let warnings = validate(input, file, &checks);
            if has_error(&warnings) {
                return Err(Failure::Invalid(warnings));
            }
            return Err(Failure::Transform { error, warnings });
        }
        Err(StreamError::Io(error)) if straight => return Err(Failure::Write(error)),
        Err(StreamError::Io(error)) => return Err(Failure::Spill(error)),
        // The checks stop the run only with an error among their findings, returned above;
        // should they ever stop it without one, the run still fails rather than write.
        Err(StreamError::Invalid) => return Err(Failure::Invalid(findings)),
    };
    drop(spill);
    whole_tree(mode, input, file, output, options, findings, why)
}

fn has_error(findings: &[Diagnostic]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Error)
}

/// The mode's routine-by-routine run, its routines written to `body`.
fn stream(
    mode: Mode,
    input: &[u8],
    file: &str,
    body: &mut dyn Write,
    options: &Options,
    gate: Option<&Progress>,
    threads: bool,
) -> Result<Streamed, StreamError> {
    let read = ReadOptions { strict: options.strict, catalogue: options.catalogue };
    let write = write_options(options);
    // The adjoint's passes after the first transform on a worker beside this thread, which
    // puts the routines back in order (validation is over by then).
    let workers = usize::from(threads && mode == Mode::Adjoint);
    let concurrency = Concurrency { gate, pipelined: threads, workers };
    let (catalogue, config) = (options.catalogue, &options.config);
    match mode {
        Mode::Identity => stream::identity(input, file, &read, config, &write, body, concurrency),
        Mode::Tangent => stream::tangent(input, file, &read, catalogue, config, &write, body, concurrency),
        Mode::Adjoint => stream::adjoint(input, file, &read, catalogue, config, &write, body, concurrency),
        Mode::Trace => stream::trace(input, file, &read, catalogue, config, &write, body, concurrency),
    }
}

fn write_options(options: &Options) -> WriteOptions {
    WriteOptions { schema_location: options.schema_location.clone() }
}

/// The whole-tree path, taken for the reason `why`: read the document whole, run the mode's
/// passes over every routine, write it. `findings` are the checks' (no error among them).
fn whole_tree(
    mode: Mode,
    input: &[u8],
    file: &str,
    output: &mut dyn Write,
    options: &Options,
    findings: Vec<Diagnostic>,
    why: &'static str,
) -> Result<Run, Failure> {
    let mut timings = Vec::new();
    let started = Instant::now();
    let read = xaif::read(input, file, &ReadOptions { strict: options.strict, catalogue: options.catalogue });
    let (mut call_graph, warnings) = match read {
        Ok(read) => (read.call_graph, with_reader_findings(findings, read.warnings)),
        Err(error) => return Err(Failure::Invalid(with_reader_findings(findings, error.findings().to_vec()))),
    };
    if has_error(&warnings) {
        return Err(Failure::Invalid(warnings));
    }
    timings.push(("read", started.elapsed()));
    let started = Instant::now();
    let config = &options.config;
    let transformed = match mode {
        Mode::Identity => Ok(Report { passivation: pipeline::identity(&mut call_graph, config), ..Report::default() }),
        Mode::Tangent => pipeline::tangent(&mut call_graph, options.catalogue, config),
        Mode::Adjoint => pipeline::adjoint(&mut call_graph, options.catalogue, config),
        Mode::Trace => pipeline::trace(&mut call_graph, options.catalogue, config),
    };
    let report = match transformed {
        Ok(report) => report,
        Err(error) => return Err(Failure::Transform { error, warnings }),
    };
    timings.push((mode.name(), started.elapsed()));
    let started = Instant::now();
    write_whole(&mut call_graph, &write_options(options), output)?;
    timings.push(("write", started.elapsed()));
    Ok(Run { report, warnings, whole_tree: Some(why), timings })
}

/// Writes a whole call graph, each routine's graphs freed once written: the output text (the
/// adjoint's is many times the input) is never whole in memory.
fn write_whole(call_graph: &mut CallGraph, options: &WriteOptions, output: &mut dyn Write) -> io::Result<()> {
    write_head_to(call_graph, options, output)?;
    let routines: Vec<_> = call_graph.routines.iter().map(|(id, _)| id).collect();
    let mut text = Vec::new();
    for routine in routines {
        text.clear();
        write_routine(call_graph, routine, &mut text);
        output.write_all(&text)?;
        call_graph.routines[routine].drop_graphs();
    }
    text.clear();
    write_tail(call_graph, &mut text);
    output.write_all(&text)?;
    output.flush()
}
