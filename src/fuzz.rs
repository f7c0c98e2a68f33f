//! The robustness contract of every entry point, as one check per entry point: on any input
//! the engine either succeeds with output that reads back, or refuses with findings located
//! at `line:column` — never a panic, a hang or an exhausted machine — and what `validate`
//! accepts no mode refuses except with a located error. Shared by the cargo-fuzz targets
//! (`fuzz/`, nightly) and the bounded mutation test that CI runs (`tests/mutation.rs`).
//!
//! A check returns `Err` with what broke the contract. A panic is not caught here: cargo-fuzz
//! reports it as a crash, the mutation test catches it with `catch_unwind`.

use crate::driver::stream::{self, Concurrency, StreamError};
use crate::interp::verify::{Driver, DriverConfig, Sweep};
use crate::pipeline::{self, Config, PipelineError};
use crate::xaif::intrinsics::Catalogue;
use crate::xaif::validate::{ValidateOptions, validate};
use crate::xaif::{self, Diagnostic, ReadOptions, Severity, WriteOptions};

/// An entry point under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Read,
    Validate,
    Identity,
    Tangent,
    Adjoint,
    /// The streaming driver's tangent and adjoint, with no checks beside it: it transforms
    /// routines before the checks have passed them.
    Streamed,
    Run,
    /// A user-supplied intrinsics catalogue (`-c`, `-N`): read as inlinable and as
    /// non-inlinable, each accepted or refused with a located error; what is accepted
    /// evaluates every partial without a panic.
    Catalogue,
}

impl Target {
    pub const ALL: [Target; 8] = [
        Target::Read,
        Target::Validate,
        Target::Identity,
        Target::Tangent,
        Target::Adjoint,
        Target::Streamed,
        Target::Run,
        Target::Catalogue,
    ];
}

/// How an input fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Accepted,
    Refused,
}

const FILE: &str = "fuzz.xaif";

/// Runs `target` on `input` and checks the contract.
pub fn check(target: Target, input: &[u8]) -> Result<Outcome, String> {
    match target {
        Target::Read => read(input).map(|r| if r.is_some() { Outcome::Accepted } else { Outcome::Refused }),
        Target::Validate => check_validate(input),
        Target::Identity => identity(input),
        Target::Tangent => transform(input, Mode::Tangent),
        Target::Adjoint => transform(input, Mode::Adjoint),
        Target::Streamed => streamed(input),
        Target::Run => run(input),
        Target::Catalogue => catalogue(input),
    }
}

fn located(d: &Diagnostic) -> bool {
    d.line >= 1 && d.column >= 1 && !d.message.is_empty()
}

/// Reads; a refusal must have at least one error and every error located.
fn read(input: &[u8]) -> Result<Option<crate::ir::CallGraph>, String> {
    match xaif::read(input, FILE, &ReadOptions::default()) {
        Ok(read) => Ok(Some(read.call_graph)),
        Err(error) => located_refusal("read", &error).map(|()| None),
    }
}

/// A reader's refusal (`who`'s) must hold an error, and every error be located.
fn located_refusal(who: &str, error: &xaif::ReadError) -> Result<(), String> {
    let errors: Vec<&Diagnostic> = error.findings().iter().filter(|d| d.severity == Severity::Error).collect();
    if errors.is_empty() {
        return Err(format!("{who} refused the input without an error"));
    }
    match errors.iter().find(|d| !located(d)) {
        Some(d) => Err(format!("unlocated {who} error: {d}")),
        None => Ok(()),
    }
}

/// Every finding located; an input without errors must read, and every mode must either
/// succeed or refuse with a located error.
fn check_validate(input: &[u8]) -> Result<Outcome, String> {
    let findings = validate(input, FILE, &ValidateOptions::default());
    if let Some(d) = findings.iter().find(|d| !located(d)) {
        return Err(format!("unlocated validate finding: {d}"));
    }
    if findings.iter().any(|d| d.severity == Severity::Error) {
        return Ok(Outcome::Refused);
    }
    if read(input)?.is_none() {
        return Err("validate accepted what read refuses".into());
    }
    for target in [Target::Identity, Target::Tangent, Target::Adjoint] {
        check(target, input).map_err(|e| format!("validate accepted, {target:?}: {e}"))?;
    }
    Ok(Outcome::Accepted)
}

/// Read, write, read again, write again: the second write equals the first.
fn identity(input: &[u8]) -> Result<Outcome, String> {
    let Some(mut cg) = read(input)? else { return Ok(Outcome::Refused) };
    pipeline::identity(&mut cg, &Config::default());
    let first = xaif::write(&cg, &WriteOptions::default());
    let again = xaif::read(&first, "written.xaif", &ReadOptions::default())
        .map_err(|e| format!("identity output does not read back: {}", e.diagnostic()))?;
    let second = xaif::write(&again.call_graph, &WriteOptions::default());
    if first != second {
        return Err("identity is not a fixed point: writing what it wrote differs".into());
    }
    Ok(Outcome::Accepted)
}

#[derive(Clone, Copy)]
enum Mode {
    Tangent,
    Adjoint,
    Trace,
}

/// A mode's output must read back; its refusal must name the statement at fault.
fn transform(input: &[u8], mode: Mode) -> Result<Outcome, String> {
    let Some(mut cg) = read(input)? else { return Ok(Outcome::Refused) };
    let catalogue = Catalogue::builtin();
    let config = Config::default();
    let result = match mode {
        Mode::Tangent => pipeline::tangent(&mut cg, catalogue, &config),
        Mode::Adjoint => pipeline::adjoint(&mut cg, catalogue, &config),
        Mode::Trace => pipeline::trace(&mut cg, catalogue, &config),
    };
    match result {
        Ok(_) => {
            let output = xaif::write(&cg, &WriteOptions::default());
            xaif::read(&output, "output.xaif", &ReadOptions::default())
                .map_err(|e| format!("output does not read back: {}", e.diagnostic()))?;
            Ok(Outcome::Accepted)
        }
        Err(error) => located_failure(input, &error).map(|()| Outcome::Refused),
    }
}

/// The streaming driver must keep the contract on any input, in the tangent, adjoint and trace
/// modes (it runs ahead of the checks, `driver::stream`): its output reads back, and where it stops, it stops with a located
/// error or a reason to take the whole-document path. Where the checks accept the input and
/// the whole-document path transforms it, the two outputs are the same. It reads on a second
/// thread; the adjoint transforms on no worker or on one or two (which, the input's length
/// decides, so that a mutation test meets all three).
fn streamed(input: &[u8]) -> Result<Outcome, String> {
    let catalogue = Catalogue::builtin();
    let config = Config::default();
    let (options, write) = (ReadOptions::default(), WriteOptions::default());
    let workers = input.len() % 3;
    let concurrency = Concurrency { gate: None, pipelined: true, workers };
    let mut outcome = Outcome::Accepted;
    let mut valid = None;
    for mode in [Mode::Tangent, Mode::Adjoint, Mode::Trace] {
        let mut body = Vec::new();
        let run = match mode {
            Mode::Tangent => stream::tangent(input, FILE, &options, catalogue, &config, &write, &mut body, concurrency),
            Mode::Adjoint => stream::adjoint(input, FILE, &options, catalogue, &config, &write, &mut body, concurrency),
            Mode::Trace => stream::trace(input, FILE, &options, catalogue, &config, &write, &mut body, concurrency),
        };
        let streamed = match run {
            Ok(streamed) => streamed.bytes(&body),
            Err(StreamError::WholeTree(_)) => {
                outcome = Outcome::Refused;
                continue;
            }
            Err(StreamError::Read(error)) => {
                located_refusal("streamed read", &error)?;
                outcome = Outcome::Refused;
                continue;
            }
            Err(StreamError::Pipeline(error)) => {
                located_failure(input, &error)?;
                outcome = Outcome::Refused;
                continue;
            }
            Err(error) => return Err(format!("streamed run failed: {error}")),
        };
        xaif::read(&streamed, "output.xaif", &ReadOptions::default())
            .map_err(|e| format!("streamed output does not read back: {}", e.diagnostic()))?;
        let valid = *valid.get_or_insert_with(|| {
            !validate(input, FILE, &ValidateOptions::default()).iter().any(|d| d.severity == Severity::Error)
        });
        if !valid {
            continue;
        }
        let Some(mut cg) = read(input)? else {
            return Err("validate and the streamed read accepted what read refuses".into());
        };
        let whole = match mode {
            Mode::Tangent => pipeline::tangent(&mut cg, catalogue, &config).map(drop),
            Mode::Adjoint => pipeline::adjoint(&mut cg, catalogue, &config).map(drop),
            Mode::Trace => pipeline::trace(&mut cg, catalogue, &config).map(drop),
        };
        if whole.is_ok() && xaif::write(&cg, &write) != streamed {
            return Err("the streamed output differs from the whole document's".into());
        }
    }
    Ok(outcome)
}

fn located_failure(input: &[u8], error: &PipelineError) -> Result<(), String> {
    let Some((routine, statement)) = error.location() else {
        return Err(format!("unlocated refusal: {error}"));
    };
    let d = xaif::validate::locate(input, FILE, routine, None, statement, error.to_string());
    if located(&d) { Ok(()) } else { Err(format!("refusal not found in the input: {d}")) }
}

/// Reads `input` as an inlinable catalogue and as a non-inlinable one merged into the built-in
/// catalogue: each either succeeds or refuses with a located error. Every partial of an
/// accepted catalogue evaluates (to a value or `None`) and every name is found again.
fn catalogue(input: &[u8]) -> Result<Outcome, String> {
    let located_error = |who: &str, error: &crate::xaif::intrinsics::CatalogueError| {
        let d = error.diagnostic();
        if d.severity == Severity::Error && located(d) { Ok(()) } else { Err(format!("unlocated {who} refusal: {d}")) }
    };
    let mut outcome = Outcome::Refused;
    match Catalogue::parse(input, FILE) {
        Ok(catalogue) => {
            outcome = Outcome::Accepted;
            for name in catalogue.names() {
                let Some(definition) = catalogue.get(name) else {
                    return Err(format!("intrinsic '{name}' of the catalogue is not found"));
                };
                let args = vec![0.5; definition.arity];
                for partial in definition.partials.iter() {
                    let _ = partial.eval(&args, Some(0.25));
                }
            }
        }
        Err(error) => located_error("catalogue", &error)?,
    }
    let mut merged = Catalogue::builtin().clone();
    match merged.merge_noninlinable(input, FILE) {
        Ok(()) => {
            outcome = Outcome::Accepted;
            if merged.names().any(|name| merged.get(name).is_none()) {
                return Err("a name of the merged catalogue is not found".into());
            }
        }
        Err(error) => located_error("non-inlinable catalogue", &error)?,
    }
    Ok(outcome)
}

/// Lowers and runs the top routine once with small limits: any failure is fine, a panic or
/// an exhausted machine is not.
fn run(input: &[u8]) -> Result<Outcome, String> {
    let Ok(program) = crate::interp::verify::read_program(input, FILE) else { return Ok(Outcome::Refused) };
    let config = DriverConfig { step_limit: 200_000, max_memory: 64 << 20, ..DriverConfig::default() };
    let Ok(driver) = Driver::new(&program, &config) else { return Ok(Outcome::Refused) };
    let x = driver.default_x();
    Ok(if driver.run(&x, Sweep::Plain).is_ok() { Outcome::Accepted } else { Outcome::Refused })
}
