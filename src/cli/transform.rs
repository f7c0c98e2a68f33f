//! The transforming commands, `identity`, `tangent`, `adjoint` and `trace`: their switches made
//! into the library's configuration, notes for the switches that do nothing in a mode, and one
//! run of the driver with its messages and debug log (a `Session`).

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::Result;

use super::args::{AdjointArgs, PreaccumulationArg, PreaccumulationSwitches, TangentArgs, TransformArgs};
use super::log::{self, DebugLog, Group, summarise};
use super::{Outcome, Reported, commit_bytes, one_stdout_user, read_input};
use crate::driver::{self, Failure, Mode};
use crate::output::{self, Destination, Output, OutputError};
use crate::passes::adjoint::AdjointConfig;
use crate::passes::passivate::{Decorations, Passivation};
use crate::passes::tangent::{Preaccumulation, TangentConfig};
use crate::passes::type_change::TypeChangeConfig;
use crate::pipeline::{Config, PipelineError};
use crate::xaif::Diagnostic;
use crate::xaif::intrinsics::Catalogue;
use crate::xaif::validate::locate;

pub fn identity(args: &TransformArgs) -> Outcome {
    one_stdout_user(
        "identity",
        &[("-o", args.output() == Destination::Stdout), ("-d", args.debug.debug_file == Some(Destination::Stdout))],
    );
    let config = args.pipeline_config(TangentConfig::default());
    transform(Mode::Identity, args, config, Vec::new(), None)
}

pub fn trace(args: &TransformArgs) -> Outcome {
    one_stdout_user(
        "trace",
        &[("-o", args.output() == Destination::Stdout), ("-d", args.debug.debug_file == Some(Destination::Stdout))],
    );
    let mut config = args.pipeline_config(TangentConfig::default());
    let mut notes = Vec::new();
    if config.initialize_derivatives {
        config.initialize_derivatives = false;
        notes.push("-D (initialize derivatives) matters only to the tangent and adjoint modes: no effect".into());
    }
    transform(Mode::Trace, args, config, notes, None)
}

pub fn tangent(args: &TangentArgs) -> Outcome {
    let common = &args.common;
    one_stdout_user(
        "tangent",
        &[
            ("-o", common.output() == Destination::Stdout),
            ("--stats", args.stats == Some(Destination::Stdout)),
            ("-d", common.debug.debug_file == Some(Destination::Stdout)),
        ],
    );
    let preaccumulation = match (args.statement_level, args.preaccumulation) {
        (true, _) | (false, PreaccumulationArg::Statement) => Preaccumulation::Statement,
        (false, PreaccumulationArg::BasicBlock) => Preaccumulation::BasicBlock,
    };
    // Comparing every method costs planning time; it is only worth it when statistics are
    // written.
    let config = common.pipeline_config(TangentConfig {
        preaccumulation,
        elimination: args.elimination.method(),
        compare_methods: args.stats.is_some(),
        nary_sax: args.original.nary_sax,
        inline_propagators: args.original.inline_propagators,
        runtime_counters: args.original.counters,
        permit_aliased_lhs: args.original.no_alias_check,
        ..TangentConfig::default()
    });
    let notes = args.original.no_effect_notes(Mode::Tangent);
    transform(Mode::Tangent, common, config, notes, args.stats.as_ref())
}

pub fn adjoint(args: &AdjointArgs) -> Outcome {
    let common = &args.common;
    one_stdout_user(
        "adjoint",
        &[
            ("-o", common.output() == Destination::Stdout),
            ("--stats", args.stats == Some(Destination::Stdout)),
            ("-d", common.debug.debug_file == Some(Destination::Stdout)),
        ],
    );
    let preaccumulation = if args.statement_level { Preaccumulation::Statement } else { Preaccumulation::BasicBlock };
    // -n and -Q shape the sequences and propagators the adjoint reverses, as in the original.
    let mut config = common.pipeline_config(TangentConfig {
        preaccumulation,
        nary_sax: args.original.nary_sax,
        permit_aliased_lhs: args.original.no_alias_check,
        ..TangentConfig::default()
    });
    config.adjoint.tape = args.tape;
    config.adjoint.record_everything = args.no_tbr;
    config.adjoint.loops = args.loop_reversal;
    let notes = args.original.no_effect_notes(Mode::Adjoint);
    transform(Mode::Adjoint, common, config, notes, args.stats.as_ref())
}

/// The messages of one transforming run: to standard error (warnings and notes unless `-q`)
/// and to the debug log, which is written at the end whether the run succeeds or not.
struct Session {
    quiet: bool,
    log: Option<(DebugLog, Output)>,
}

impl Session {
    /// Prepares the debug log's destination (`-d`; `-g` alone: standard error).
    fn start(args: &TransformArgs) -> Result<Session> {
        let debug = &args.debug;
        let destination = match (&debug.debug_file, debug.debug_mask) {
            (Some(file), _) => Some(file.clone()),
            (None, Some(_)) => Some(Destination::Stderr),
            (None, None) => None,
        };
        let log = match destination {
            Some(destination) => {
                let pending = Output::create(&destination)?;
                let command: Vec<String> =
                    std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
                let header = format!("xaifbooster {}: {}", env!("CARGO_PKG_VERSION"), command.join(" "));
                let mask = debug.debug_mask.unwrap_or(log::ALL_LOGGED);
                Some((DebugLog::new(mask, debug.tags.as_deref(), &header), pending))
            }
            None => None,
        };
        Ok(Session { quiet: args.quiet, log })
    }

    fn log(&mut self, group: Group, stage: &str, text: impl std::fmt::Display) {
        if let Some((log, _)) = &mut self.log {
            log.log(group, stage, text);
        }
    }

    fn note(&mut self, text: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr(), "xaifbooster: note: {text}");
        }
        self.log(Group::Warning, "cli", format_args!("note: {text}"));
    }

    fn warning(&mut self, stage: &str, text: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr(), "{text}");
        }
        self.log(Group::Warning, stage, text);
    }

    fn error(&mut self, stage: &str, text: &str) {
        let _ = writeln!(std::io::stderr(), "{text}");
        self.log(Group::Error, stage, text);
    }

    fn findings(&mut self, stage: &str, findings: &[Diagnostic]) {
        let mut stderr = std::io::stderr().lock();
        for line in summarise(findings, self.quiet) {
            let _ = writeln!(stderr, "{line}");
        }
        if let Some((log, _)) = &mut self.log {
            log.findings(stage, findings);
        }
    }

    fn timing(&mut self, stage: &str, took: std::time::Duration) {
        self.log(Group::Timing, stage, format_args!("{:.3} ms", took.as_secs_f64() * 1e3));
    }

    /// Writes the debug log (with the run's error, if it failed) and passes the outcome on.
    fn finish(mut self, outcome: Outcome) -> Outcome {
        if let Err(error) = &outcome {
            self.log(Group::Error, "cli", format_args!("{error:#}"));
        }
        if let Some((log, pending)) = self.log {
            let written = commit_bytes(pending, &log.into_bytes());
            if let (Err(error), Ok(_)) = (written, &outcome) {
                return Err(error.into());
            }
        }
        outcome
    }
}

impl TransformArgs {
    /// The input: `-i`, the positional, or (with neither) standard input.
    fn input(&self) -> &Path {
        self.input.as_deref().or(self.input_file.as_deref()).unwrap_or(Path::new("-"))
    }

    /// Usage error (exit 2) when no input is named and standard input is a terminal: reading
    /// it would wait for typed XAIF.
    fn require_input(&self, mode: Mode) {
        if self.input.is_none() && self.input_file.is_none() && std::io::stdin().is_terminal() {
            super::usage_error(
                mode.name(),
                "no input file: name one (INPUT or -i FILE), or pipe XAIF into standard input".to_owned(),
            );
        }
    }

    fn output(&self) -> Destination {
        self.output.clone().unwrap_or(Destination::Stdout)
    }

    /// One line for each switch given that has no effect in this mode.
    fn no_effect_notes(&self, mode: Mode) -> Vec<String> {
        let mut notes = Vec::new();
        let reverse = &self.reverse;
        let adjoint = mode == Mode::Adjoint;
        let reversal_switches = [
            (self.pessimistic_black_boxes, "-b (pessimistic black boxes, already assumed)", false),
            (reverse.all_intents_inout, "-I (all argument intents inout)", true),
            (reverse.checkpoint_constant_formals, "-P (checkpoint formals only passed constants)", true),
            (reverse.file_order, "-f (restore checkpoints in file order)", true),
            (reverse.ask, "-u (ask about simple-loop violations)", false),
            (reverse.ignore_violations, "-U (ignore simple-loop violations)", false),
            (reverse.top_routine.is_some(), "-t (top routine for the quasi-constant check)", false),
        ];
        for (_, switch, built) in reversal_switches.iter().filter(|(given, _, _)| *given) {
            match (adjoint, built) {
                (true, true) => {}
                (true, false) => notes.push(format!("{switch} has no effect in this engine (see the README)")),
                (false, _) => notes.push(format!("{switch} matters only to the adjoint mode: no effect")),
            }
        }

        let debug = &self.debug;
        if debug.graphics_format.is_some() || debug.viewer.is_some() {
            notes.push(
                "-G and -B chose how the original displayed debugging graphs; xaifbooster draws none: no effect".into(),
            );
        }
        if debug.tags.is_some() && debug.debug_file.is_none() && debug.debug_mask.is_none() {
            notes.push("-T narrows the debug log, which only -d or -g turn on: no effect".into());
        }
        notes
    }

    /// The library's configuration from the switches.
    fn pipeline_config(&self, tangent: TangentConfig) -> Config {
        let words = |list: &Option<String>| -> Vec<String> {
            list.as_deref().map(|l| l.split_whitespace().map(str::to_owned).collect()).unwrap_or_default()
        };
        Config {
            passive: words(&self.passive),
            decorations: match self.decoration_style.as_deref() {
                Some("NO_STYLE") => Decorations::None,
                _ => Decorations::Open64,
            },
            initialize_derivatives: self.init_derivatives,
            activity_analysis: self.activity_analysis,
            type_change: TypeChangeConfig { wrappers: words(&self.wrappers), rename_all: self.rename_all },
            tangent,
            adjoint: AdjointConfig {
                all_intents_inout: self.reverse.all_intents_inout,
                checkpoint_constant_formals: self.reverse.checkpoint_constant_formals,
                file_order_restore: self.reverse.file_order,
                ..Default::default()
            },
        }
    }
}

impl PreaccumulationSwitches {
    /// Notes for the switches given that have no effect in `mode`.
    fn no_effect_notes(&self, mode: Mode) -> Vec<String> {
        let library = "tuned the original's elimination library (ANGEL): no effect";
        // The original printed these in its tangent output only; its reverse mode printed its
        // own sweeps.
        let tangent_only = "applies to the tangent mode only (as in the original): no effect";
        let adjoint = mode == Mode::Adjoint;
        [
            (self.inline_propagators && adjoint, "-H (propagators as inlinable calls)", tangent_only),
            (self.counters && adjoint, "-C (runtime operation counters)", tangent_only),
            (self.awareness.is_some(), "-A (unit/constant edge awareness)", library),
            (self.maintaining, "-m (count-maintaining eliminations)", library),
            (self.randomized, "-a (randomized heuristics)", library),
            (self.metric.is_some(), "-M (preaccumulation metric)", library),
            (self.reroutings, "-R (reroutings)", library),
        ]
        .into_iter()
        .filter(|(given, _, _)| *given)
        .map(|(_, switch, why)| format!("{switch} {why}"))
        .collect()
    }
}

/// Which inlinable intrinsics catalogue a run uses, said at `-v`: the built-in one and the
/// reference toolchain's `inlinable_intrinsics.xaif` write some partials differently, so the
/// same input can give different (equally correct) code with and without `-c`.
fn catalogue_note(given: Option<&std::path::Path>) -> String {
    match given {
        Some(path) => format!("inlinable intrinsics catalogue: {} (-c)", path.display()),
        None => "inlinable intrinsics catalogue: the built-in one (no -c). OpenAD passes its reference \
                 inlinable_intrinsics.xaif with -c, which writes some partials differently (exp, sqrt, tan and \
                 tanh through the intrinsic's result, integer constants, d(a/b)/db and d log10(x)/dx in other \
                 forms): outputs can differ with and without -c, and both are correct"
            .to_owned(),
    }
}

/// The intrinsics catalogue of a run: `-c` (and `-N`) or the embedded one, borrowed (a copy of
/// it was 2% of a small corpus file's tangent).
fn catalogue(args: &TransformArgs, session: &mut Session) -> Result<Result<Cow<'static, Catalogue>, Reported>> {
    if args.validate {
        session.note(&catalogue_note(args.catalogue.as_deref()));
    }
    let mut catalogue = match &args.catalogue {
        Some(path) => Cow::Owned({
            let (bytes, name) = read_input(path)?;
            match Catalogue::parse(&bytes, &name) {
                Ok(catalogue) => catalogue,
                Err(error) => {
                    session.error("read", &error.to_string());
                    return Ok(Err(Reported(1)));
                }
            }
        }),
        None => Cow::Borrowed(Catalogue::builtin()),
    };
    if let Some(path) = &args.noninlinable_catalogue {
        let (bytes, name) = read_input(path)?;
        if let Err(error) = catalogue.to_mut().merge_noninlinable(&bytes, &name) {
            session.error("read", &error.to_string());
            return Ok(Err(Reported(1)));
        }
    }
    Ok(Ok(catalogue))
}

/// Runs a transforming mode through the driver, with the run's messages and debug log.
fn transform(
    mode: Mode,
    args: &TransformArgs,
    config: Config,
    notes: Vec<String>,
    stats: Option<&Destination>,
) -> Outcome {
    args.require_input(mode);
    let mut session = Session::start(args)?;
    let outcome = transform_in(mode, args, config, notes, stats, &mut session);
    session.finish(outcome)
}

/// Every destination is made ready before any work, and none is written before all of the
/// work succeeded: the output and its statistics are committed together.
fn transform_in(
    mode: Mode,
    args: &TransformArgs,
    config: Config,
    notes: Vec<String>,
    stats: Option<&Destination>,
    session: &mut Session,
) -> Outcome {
    for note in args.no_effect_notes(mode).into_iter().chain(notes) {
        session.note(&note);
    }
    if let Some(refusal) = replaces_input(args) {
        session.error("cli", &refusal);
        return Ok(Err(Reported(1)));
    }
    let mut output = Output::create(&args.output())?;
    let stats = stats.map(Output::create).transpose()?;
    let catalogue = match catalogue(args, session)? {
        Ok(catalogue) => catalogue,
        Err(reported) => return Ok(Err(reported)),
    };
    let (input, file) = read_input(args.input())?;
    if mode != Mode::Identity
        && let Some(found) = transformed_marks(&input)
    {
        session.warning("read", &format!("{file}: warning: the input looks already transformed: it contains {found}"));
    }
    let options = driver::Options {
        catalogue: &catalogue,
        strict: args.strict,
        config,
        schema_location: schema_location(args, mode.schema()),
        threads: true,
    };
    let run = match driver::run(mode, &input, &file, &mut output, &options) {
        Ok(run) => run,
        Err(Failure::Invalid(findings)) => {
            session.findings("validate", &findings);
            return Ok(Err(Reported(1)));
        }
        Err(Failure::Transform { error, warnings }) => {
            session.findings("validate", &warnings);
            session.error(mode.name(), &located_failure(&input, &file, &error));
            return Ok(Err(Reported(1)));
        }
        Err(Failure::Write(error)) => return Err(output.error(error).into()),
        Err(Failure::Spill(error)) => return Err(OutputError::in_spill(&args.output(), error).into()),
    };
    session.findings("validate", &run.warnings);
    for (stage, took) in &run.timings {
        session.timing(stage, *took);
    }
    if let Some(why) = run.whole_tree {
        session.log(Group::Timing, "driver", format_args!("whole tree: {why}"));
    }
    report_passivation(args, session, &run.report.passivation);
    if let Some((log, _)) = &mut session.log {
        log.report(&run.report);
        if mode == Mode::Adjoint {
            log.adjoint_report(&run.report);
        }
        if mode == Mode::Trace {
            log.trace_report(&run.report.trace);
        }
    }
    let mut outputs = vec![output];
    if let Some(mut stats) = stats {
        let json = if mode == Mode::Adjoint { run.report.adjoint_json() } else { run.report.tangent.to_json() };
        if let Err(error) = stats.write_all(json.as_bytes()) {
            return Err(stats.error(error).into());
        }
        outputs.push(stats);
    }
    // The debug log is complete once the run has succeeded: it is committed with the outputs,
    // so that a log that cannot be written leaves no output behind either.
    if let Some((log, mut pending)) = session.log.take() {
        if let Err(error) = pending.write_all(&log.into_bytes()) {
            return Err(pending.error(error).into());
        }
        outputs.push(pending);
    }
    output::commit_all(outputs)?;
    Ok(Ok(()))
}

/// The refusal when `-o` names the input file (the same file after following links, or a hard
/// link to it) and `--force` is not given: the input would be replaced by its transformation.
fn replaces_input(args: &TransformArgs) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let (Destination::Path(output), false) = (args.output(), args.force) else { return None };
    let input = args.input();
    if input.as_os_str() == "-" {
        return None;
    }
    let (Ok(a), Ok(b)) = (std::fs::metadata(input), std::fs::metadata(&output)) else { return None };
    (a.dev() == b.dev() && a.ino() == b.ino()).then(|| {
        format!(
            "xaifbooster: -o {} is the input file {}: refusing to replace it (--force to do so)",
            output.display(),
            input.display()
        )
    })
}

/// What in an input shows that it is already an output of a transformation: ReplacementList or
/// DerivativePropagator elements, symbols named with the `OpenAD_` prefix of our temporaries.
fn transformed_marks(input: &[u8]) -> Option<String> {
    let element = |name: &str| {
        memchr::memmem::find_iter(input, name.as_bytes()).any(|at| {
            let before = at.checked_sub(1).map(|i| input[i]);
            let after = input.get(at + name.len()).copied();
            matches!(before, Some(b'<' | b':')) && matches!(after, Some(b' ' | b'>' | b'/' | b'\t' | b'\n' | b'\r'))
        })
    };
    let mut found = Vec::new();
    if element("ReplacementList") {
        found.push("ReplacementList elements");
    }
    if element("DerivativePropagator") {
        found.push("DerivativePropagator elements");
    }
    if memchr::memmem::find(input, b"symbol_id=\"OpenAD_").is_some() {
        found.push("OpenAD_ temporaries");
    }
    (!found.is_empty()).then(|| found.join(", "))
}

/// Names given to -p that match no variable are most likely typos: say so.
fn report_passivation(args: &TransformArgs, session: &mut Session, passivation: &Passivation) {
    for name in &passivation.unmatched {
        session
            .warning("passivate", &format!("{}: warning: -p {name}: no variable of that name", args.input().display()));
    }
}

fn schema_location(args: &TransformArgs, file: &str) -> String {
    match &args.schema_dir {
        Some(dir) => format!("{}/{file}", dir.trim_end_matches('/')),
        None => file.to_owned(),
    }
}

/// A transformation's refusal, located at its statement where it names one.
fn located_failure(input: &[u8], file: &str, error: &PipelineError) -> String {
    match error.location() {
        Some((routine, statement)) => locate(input, file, routine, None, statement, error.to_string()).to_string(),
        None => format!("{file}: {error}"),
    }
}
