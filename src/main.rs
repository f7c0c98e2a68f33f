//! Command line of xaifbooster. Parses arguments, runs the library, prints; nothing else.
// On Linux with glibc the binary has its own entry point: see `xaifbooster::cli::process`.
#![cfg_attr(all(target_os = "linux", target_env = "gnu", not(test)), no_main)]

use std::borrow::Cow;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, CommandFactory, Parser, Subcommand};

use rayon::prelude::*;
use xaifbooster::cli::log::{self, DebugLog, Group, summarise};
use xaifbooster::cli::output::{self, Destination, OutputError, Pending};
use xaifbooster::ir::{CallGraph, RoutineId};
use xaifbooster::passes::elimination::Method;
use xaifbooster::passes::passivate::Passivation;
use xaifbooster::passes::tangent::{Preaccumulation, TangentConfig};
use xaifbooster::streaming::{self, StreamError};
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::read::{ReadError, ReadOutput};
use xaifbooster::xaif::validate::{
    Progress, ValidateOptions, validate, validate_without_reader, validate_without_reader_progressively,
    with_reader_findings,
};
use xaifbooster::xaif::{self, Diagnostic, ReadOptions, Severity, WriteOptions};

/// The object model is many small allocations (expression vertices, references, names);
/// mimalloc serves them markedly faster than the system allocator.
#[global_allocator]
static ALLOCATOR: xaifbooster::cli::memory::Allocator = xaifbooster::cli::memory::Allocator;

/// Runs before mimalloc's own constructor maps its first arena and reads its options (a
/// prioritized `.init_array` slot; mimalloc's has no priority, so it runs after): see
/// [`xaifbooster::cli::memory::disable_transparent_huge_pages`] and
/// [`xaifbooster::cli::memory::configure_allocator`].
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array.00101")]
static BEFORE_ALLOCATOR: extern "C" fn() = {
    extern "C" fn before_allocator() {
        xaifbooster::cli::memory::disable_transparent_huge_pages();
        xaifbooster::cli::memory::configure_allocator();
    }
    before_allocator
};

#[derive(Parser, Debug)]
#[command(
    name = "xaifbooster",
    version,
    about = "Transformation engine for XAIF, the XML format of the OpenAD automatic differentiation toolchain",
    long_about = "Transformation engine for XAIF, the XML format of the OpenAD automatic differentiation \
toolchain. Reads XAIF, runs the passes of a mode and writes XAIF in the conventions of the original \
xaifBooster, so it can stand in for OpenAD's oadDriver binaries.\n\n\
Exit codes: 0 success, 1 bad input or unwritable output (each finding printed as \
file:line:column: element: message; a failed run writes no output), 2 usage error, 141 the reader \
of standard output or of a pipe went away (as for a program ended by SIGPIPE)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Each subcommand's arguments are built only when it runs (or when help, completions or the
/// manual ask for them): building all of them cost about 0.4 M instructions per process, a
/// tenth of transforming a small corpus file. (Deferred, an `Args` struct's doc comment would
/// replace its subcommand's description: theirs are plain comments.)
#[derive(Subcommand, Debug)]
#[command(defer = true)]
enum Command {
    /// Parse and unparse: the original engine's "system" driver
    Identity(TransformArgs),
    /// Check XAIF files without transforming them; prints every finding
    Validate(ValidateArgs),
    /// Tangent-linear mode: the original BasicBlockPreaccumulation driver
    Tangent(TangentArgs),
    /// Adjoint mode: the original BasicBlockPreaccumulationReverse driver (one replacement list
    /// per routine for OpenAD's joint or split reversal templates)
    Adjoint(AdjointArgs),
    /// Execute a routine of an XAIF file and print its outputs (and derivatives of a
    /// transformed file)
    Run(RunArgs),
    /// Compare the derivatives of a transformed XAIF file with finite differences of the original
    Verify(VerifyArgs),
    /// Activity, to-be-recorded and linearity analysis of an XAIF file, per routine
    Analyze(AnalyzeArgs),
    /// Transform many files (or directories of them) on every core, with a progress display
    /// and a JSON report; outputs mirror the inputs' paths under --out-dir
    Batch(BatchArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions(CompletionsArgs),
    /// Print the manual page (roff) on standard output: `xaifbooster man | man -l -`
    Man,
    /// Graphviz views: the call graph, a routine's control flow graph (each placeholder's for an
    /// adjoint output), a statement's expression graph, or the linearized computational graphs
    /// of the tangent pass before and after elimination, with the elimination order
    Dot(DotArgs),
}

#[derive(Args, Debug)]
struct AnalyzeArgs {
    /// XAIF file (`-` standard input)
    file: PathBuf,
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
    /// Independent variables, comma separated (default: the top routines' real formals of
    /// intent in or inout)
    #[arg(long, value_delimiter = ',')]
    independents: Vec<String>,
    /// Dependent variables, comma separated (default: the top routines' real formals of
    /// intent out or inout)
    #[arg(long, value_delimiter = ',')]
    dependents: Vec<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum DotWhat {
    /// Routines and who calls whom (external routines dashed)
    Callgraph,
    /// A routine's control flow graph with its statements
    Cfg,
    /// A statement's expression graph (--statement)
    Expression,
    /// The linearized computational graphs of a routine's sequences (or of --block,
    /// --statement), before and after elimination
    Lcg,
}

#[derive(Args, Debug)]
struct DotArgs {
    /// XAIF file (`-` standard input)
    #[arg(value_name = "INPUT")]
    file: PathBuf,
    /// Which graph
    #[arg(long, value_enum, default_value = "callgraph")]
    what: DotWhat,
    /// The routine (default: the routine named head…, or the only one nothing calls); `foo`
    /// matches the front end's `foo__24`
    #[arg(long, value_name = "NAME")]
    routine: Option<String>,
    /// The statement (statement_id) of an expression graph, or whose sequence an lcg shows
    #[arg(long, value_name = "ID")]
    statement: Option<String>,
    /// lcg: only the sequences of this basic block (vertex_id); without --routine, --block and
    /// --statement an lcg view shows every sequence of every routine
    #[arg(long, value_name = "ID")]
    block: Option<String>,
    /// cfg of a replacement list: only this placeholder (1 original, 2 taping, 3 adjoint, …)
    #[arg(long, value_name = "N")]
    placeholder: Option<String>,
    /// lcg: preaccumulation per statement or per basic block, as in `tangent`
    #[arg(long, value_enum, default_value = "basic-block")]
    preaccumulation: PreaccumulationArg,
    /// lcg: the elimination method, as in `tangent`
    #[arg(long, value_enum, value_name = "METHOD", default_value = "best")]
    elimination: EliminationArg,
    /// Render SVG through Graphviz's `dot` program instead of writing DOT
    #[arg(long)]
    svg: bool,
    /// Output file; `-` or none: standard output
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<Destination>,
    /// No warnings on standard error
    #[arg(short = 'q', long)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct TangentArgs {
    #[command(flatten)]
    common: TransformArgs,
    /// Where Jacobians are preaccumulated: per statement (-S of the original) or per basic block
    #[arg(long, value_enum, default_value = "basic-block")]
    preaccumulation: PreaccumulationArg,
    /// Statement-level preaccumulation, as the original engine's -S
    #[arg(short = 'S')]
    statement_level: bool,
    /// Write per-sequence statistics (graph sizes, operation counts, propagator entries) as JSON
    /// (`-` standard output); written like -o
    #[arg(long, value_name = "FILE")]
    stats: Option<Destination>,
    /// How elimination sequences are chosen: one method; the best of the heuristics that win on
    /// the corpus and synthetic inputs (best: greedy and edge elimination); or of all ten (every)
    #[arg(long, value_enum, value_name = "METHOD", default_value = "best")]
    elimination: EliminationArg,
    #[command(flatten)]
    original: PreaccumulationSwitches,
}

#[derive(Args, Debug)]
struct AdjointArgs {
    /// The common switches; -I and -P (in them) act here
    #[command(flatten)]
    common: TransformArgs,
    /// Statement-level preaccumulation, as the original engine's -S
    #[arg(short = 'S')]
    statement_level: bool,
    /// Write what the adjoint pushes (static counts per kind, per routine totals) and what
    /// TypeChange converted, as JSON
    #[arg(long, value_name = "FILE")]
    stats: Option<Destination>,
    /// What the forward sweep tapes for each sequence: its Jacobian factors, the values its
    /// partials read that may be overwritten (the reverse sweep computes the partials again),
    /// per sequence whichever pushes fewer words (best), or the values only where computing
    /// again costs at most two operations per word it saves (balanced)
    #[arg(long, value_enum, value_name = "STRATEGY", default_value = "balanced")]
    tape: xaifbooster::passes::adjoint::TapeStrategy,
    /// Tape every subscript and value as if anything could overwrite it (no to-be-recorded
    /// analysis), as the original engine does
    #[arg(long)]
    no_tbr: bool,
    /// Which loops the reverse sweep runs backwards from their bounds instead of counting
    /// their iterations: every loop whose shape allows it, or only those the front end marked
    /// `reversal="explicit"` (the original's simple loops)
    #[arg(long, value_enum, value_name = "POLICY", default_value = "structural")]
    loop_reversal: xaifbooster::passes::adjoint::address::LoopPolicy,
    #[command(flatten)]
    original: PreaccumulationSwitches,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum EliminationArg {
    Forward,
    Reverse,
    Markowitz,
    MarkowitzForward,
    Sibling,
    Edge,
    ForwardEdge,
    ReverseEdge,
    Face,
    Best,
    Every,
    Exact,
    Greedy,
}

impl EliminationArg {
    fn method(self) -> Method {
        match self {
            EliminationArg::Forward => Method::Forward,
            EliminationArg::Reverse => Method::Reverse,
            EliminationArg::Markowitz => Method::Markowitz,
            EliminationArg::MarkowitzForward => Method::MarkowitzForward,
            EliminationArg::Sibling => Method::Sibling,
            EliminationArg::Edge => Method::Edge,
            EliminationArg::ForwardEdge => Method::ForwardEdge,
            EliminationArg::ReverseEdge => Method::ReverseEdge,
            EliminationArg::Face => Method::Face,
            EliminationArg::Best => Method::Best,
            EliminationArg::Every => Method::Every,
            EliminationArg::Exact => Method::Exact,
            EliminationArg::Greedy => Method::Greedy,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum PreaccumulationArg {
    Statement,
    BasicBlock,
}

// How the top routine is called (shared by `run` and `verify`).
#[derive(Args, Debug)]
struct DriverArgs {
    /// Top routine (default: the routine whose symbol starts with `head`)
    #[arg(long)]
    entry: Option<String>,
    /// Input values, comma separated (default: x(i) = i/2)
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    x: Option<Vec<f64>>,
    /// Argument positions of the inputs, comma separated [default: 1, none with --input-globals]
    #[arg(long, value_delimiter = ',')]
    inputs: Option<Vec<u32>>,
    /// Argument positions of the outputs, comma separated [default: 2, none with --output-globals]
    #[arg(long, value_delimiter = ',')]
    outputs: Option<Vec<u32>>,
    /// Global (module) variables that are inputs, after the input arguments, comma separated
    #[arg(long, value_delimiter = ',')]
    input_globals: Vec<String>,
    /// Global (module) variables that are outputs, after the output arguments, comma separated
    #[arg(long, value_delimiter = ',')]
    output_globals: Vec<String>,
    /// A value for another argument, as POS=VALUE (integer, real, true/false); repeatable
    #[arg(long = "arg", value_parser = xaifbooster::interp::verify::parse_fixed_arg)]
    fixed_args: Vec<(u32, xaifbooster::interp::verify::ArgValue)>,
    /// Number of inputs, for an input argument declared without bounds
    #[arg(long)]
    n: Option<usize>,
    /// Number of outputs, for an output argument declared without bounds
    #[arg(long)]
    m: Option<usize>,
    /// Reversal template for adjoint files
    #[arg(long, value_parser = ["joint", "split"], default_value = "joint")]
    template: String,
    /// The most memory variables and tapes of one run may take: bytes, or with a unit K, M, G, T
    #[arg(long, value_name = "SIZE", default_value = "2G", value_parser = xaifbooster::interp::memory::parse_memory_size)]
    max_memory: usize,
    /// No notes or warnings on standard error (the inferred driver, zero Jacobians)
    #[arg(short = 'q', long)]
    quiet: bool,
}

impl DriverArgs {
    /// Whether the command line says which arguments or globals are the inputs and outputs;
    /// otherwise the driver is inferred from the top routine's interface.
    fn explicit(&self) -> bool {
        self.inputs.is_some()
            || self.outputs.is_some()
            || !self.input_globals.is_empty()
            || !self.output_globals.is_empty()
    }

    /// The driver of a run: as given, or inferred from `program` (what was inferred is
    /// printed on standard error). An inference that fails is reported.
    fn resolve(
        &self,
        program: &xaifbooster::interp::Program,
    ) -> Result<xaifbooster::interp::verify::DriverConfig, Reported> {
        let given = self.config();
        if self.explicit() {
            return Ok(given);
        }
        match xaifbooster::interp::verify::infer_driver(program, &given) {
            Ok((config, inferred)) => {
                if !self.quiet {
                    let _ = writeln!(std::io::stderr(), "xaifbooster: note: {inferred}");
                }
                Ok(config)
            }
            Err(why) => {
                let _ = writeln!(std::io::stderr(), "xaifbooster: {why}");
                Err(Reported(1))
            }
        }
    }

    fn warn(&self, warnings: &[String]) {
        if !self.quiet {
            let mut stderr = std::io::stderr().lock();
            for warning in warnings {
                let _ = writeln!(stderr, "xaifbooster: warning: {warning}");
            }
        }
    }

    fn config(&self) -> xaifbooster::interp::verify::DriverConfig {
        use xaifbooster::interp::{Template, verify::DriverConfig};
        DriverConfig {
            entry: self.entry.clone(),
            x: self.x.clone(),
            input_args: self.inputs.clone().unwrap_or(if self.input_globals.is_empty() { vec![1] } else { vec![] }),
            output_args: self.outputs.clone().unwrap_or(if self.output_globals.is_empty() { vec![2] } else { vec![] }),
            input_globals: self.input_globals.clone(),
            output_globals: self.output_globals.clone(),
            fixed_args: self.fixed_args.clone(),
            n: self.n,
            m: self.m,
            template: if self.template == "split" { Template::Split } else { Template::Joint },
            max_memory: self.max_memory,
            ..DriverConfig::default()
        }
    }
}

#[derive(Args, Debug)]
struct RunArgs {
    /// XAIF file (original, tangent-linear or adjoint)
    file: PathBuf,
    #[command(flatten)]
    driver: DriverArgs,
}

#[derive(Args, Debug)]
struct VerifyArgs {
    /// The original program (tlm.in.xaif / adm.in.xaif)
    #[arg(long)]
    original: PathBuf,
    /// The transformed program
    #[arg(long)]
    transformed: PathBuf,
    /// What the transformed program is
    #[arg(long, value_parser = ["tangent", "adjoint"])]
    mode: String,
    /// A second transformed program of the other mode, for the dot-product test
    #[arg(long)]
    dot: Option<PathBuf>,
    /// Relative tolerance of the comparison
    #[arg(long, default_value_t = 1e-5)]
    rtol: f64,
    /// Print JSON instead of a table
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    driver: DriverArgs,
}

// The switches of the original oadDriver binaries, so OpenAD's scripts can call us unchanged.
#[derive(Args, Debug)]
struct TransformArgs {
    /// Input XAIF file; `-` reads standard input
    #[arg(short = 'i', long = "input", value_name = "FILE", conflicts_with = "input_file")]
    input: Option<PathBuf>,
    /// The input file, given without -i
    #[arg(value_name = "INPUT", required_unless_present = "input")]
    input_file: Option<PathBuf>,
    /// Output file; `-` or none: standard output. A regular file is replaced (by a rename,
    /// keeping its mode) only when the run succeeds; devices and pipes are written as they are
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<Destination>,
    /// Inlinable intrinsics catalogue (default: the catalogue built into the binary)
    #[arg(short = 'c', value_name = "FILE")]
    catalogue: Option<PathBuf>,
    /// Non-inlinable intrinsics catalogue
    #[arg(short = 'N', value_name = "FILE")]
    noninlinable_catalogue: Option<PathBuf>,
    /// Schema directory: the output's schemaLocation becomes DIR/<schema file>
    #[arg(short = 's', value_name = "DIR")]
    schema_dir: Option<String>,
    /// Validate the input against the schema, as the original's -v. Every run does: each
    /// finding is reported; what the original tolerated is a warning
    #[arg(short = 'v')]
    validate: bool,
    /// Strict input checking: refuse what older front ends wrote and the reference toolchain
    /// tolerated (a SubroutineCall without formalArgCount, duplicate edge ids, unknown
    /// attributes, statement ids naming no statement)
    #[arg(long)]
    strict: bool,
    /// Verbose output; the alias, du-ud and DO maps are always written (the schema requires them)
    #[arg(short = 'V')]
    verbose: bool,
    /// Force these variables passive (space separated names, without case; the front end's
    /// `_N` decoration is ignored unless -F NO_STYLE): their symbols and references become
    /// passive before TypeChange, which then converts at every call they take part in
    #[arg(short = 'p', value_name = "NAMES")]
    passive: Option<String>,
    /// Pessimistic black boxes: no effect, the transformations already assume an external
    /// routine may change what it is passed
    #[arg(short = 'b')]
    pessimistic_black_boxes: bool,
    /// Zero the derivatives of active local variables at routine entry, in a block after Entry
    /// (for OpenAD runtimes without default initialization)
    #[arg(short = 'D')]
    init_derivatives: bool,
    /// Make passive the locals our activity analysis proves passive (no independent reaches
    /// them, or they reach no dependent) though the front end flagged them active
    #[arg(long)]
    activity_analysis: bool,
    /// Routines with hand-written wrappers (space separated names): calls of these external
    /// routines go to <prefix>name with their arguments unconverted
    #[arg(short = 'w', value_name = "NAMES")]
    wrappers: Option<String>,
    /// Rename every routine with a body to <prefix>name, and the calls to it
    #[arg(short = 'r')]
    rename_all: bool,
    /// Name decoration style of the front end: OPEN64_STYLE (names end in `_N`, the default)
    /// or NO_STYLE; decides how -p names match symbols
    #[arg(short = 'F', value_name = "STYLE", value_parser = ["OPEN64_STYLE", "NO_STYLE"])]
    decoration_style: Option<String>,
    /// No warnings or notes on standard error (errors still; the debug log keeps everything)
    #[arg(short = 'q', long)]
    quiet: bool,
    #[command(flatten)]
    debug: DebugArgs,
    #[command(flatten)]
    reverse: ReverseSwitches,
}

// The original engine's debugging switches.
#[derive(Args, Debug)]
struct DebugArgs {
    /// Debug log file (`-` standard output): warnings, what each pass did, timings
    #[arg(short = 'd', value_name = "FILE")]
    debug_file: Option<Destination>,
    /// Debug groups to log, a sum of 1 WARNING, 4 DATA, 16 TIMING, 64 METRIC (errors always;
    /// 2, 8 and 32 log nothing here) [default with -d: 85, all]. Without -d, to standard error
    #[arg(short = 'g', value_name = "MASK")]
    debug_mask: Option<u32>,
    /// Narrow the debug log to these stages (space separated: cli validate read passivate
    /// init_derivatives type_change tangent adjoint write)
    #[arg(short = 'T', value_name = "TAGS")]
    tags: Option<String>,
    /// Format of the original's debugging graphs; xaifbooster draws none: no effect
    #[arg(short = 'G', value_name = "FORMAT", value_parser = ["ps", "svg"])]
    graphics_format: Option<String>,
    /// Viewer of the original's debugging graphs; no effect
    #[arg(short = 'B', value_name = "VIEWER")]
    viewer: Option<String>,
}

// Switches of the original's reversal algorithms, accepted by every transforming command so
// scripts run unchanged; -I and -P act in the adjoint mode, the others nowhere yet.
#[derive(Args, Debug)]
struct ReverseSwitches {
    /// Every formal argument intent(inout), as OpenAD's joint reversal wants (otherwise only the
    /// active ones); adjoint mode
    #[arg(short = 'I')]
    all_intents_inout: bool,
    /// Checkpoint formal arguments even where every call passes them a constant; adjoint mode
    #[arg(short = 'P')]
    checkpoint_constant_formals: bool,
    /// Restore checkpoints in the order they were stored (for a file-based, first-in-first-out
    /// checkpoint runtime; the default reverse order suits OpenAD's stacks and our verifier)
    #[arg(short = 'f')]
    file_order: bool,
    /// Ask about each variable violating the simple-loop restrictions (the original's address
    /// arithmetic; ours decides from the loop nest: no effect)
    #[arg(short = 'u')]
    ask: bool,
    /// Ignore all variables violating the simple-loop restrictions (the original's address
    /// arithmetic; ours decides from the loop nest: no effect)
    #[arg(short = 'U')]
    ignore_violations: bool,
    /// Top routine for the quasi-constant check (the original's address arithmetic; ours pushes
    /// quasi-constants once per loop nest: no effect)
    #[arg(short = 't', value_name = "NAME")]
    top_routine: Option<String>,
}

// Switches of the original's preaccumulation; the ones that tuned its elimination library are
// accepted with no effect.
#[derive(Args, Debug)]
struct PreaccumulationSwitches {
    /// N-ary Sax propagators: one Sax per propagated derivative over all its in-edges
    #[arg(short = 'n')]
    nary_sax: bool,
    /// Propagators as inlinable calls of OpenAD's runtime (setderiv_s0_s0, saxpy_s0_s0_s0, …);
    /// tangent only
    #[arg(short = 'H')]
    inline_propagators: bool,
    /// Runtime operation counters: each basic block ends with countmult(n) and countadd(n), its
    /// preaccumulation's multiplications and additions; tangent only
    #[arg(short = 'C')]
    counters: bool,
    /// Awareness of unit (1) and constant (2) edges in the original's elimination library: no
    /// effect
    #[arg(short = 'A', value_name = "LEVEL", value_parser = clap::value_parser!(u8).range(0..=2))]
    awareness: Option<u8>,
    /// Allow eliminations that keep the nontrivial edge count (original's library): no effect
    #[arg(short = 'm')]
    maintaining: bool,
    /// No alias check among left-hand sides of a sequence: a(i) after a(j) does not end it
    #[arg(short = 'Q')]
    no_alias_check: bool,
    /// Randomized heuristics of the original's library: no effect
    #[arg(short = 'a')]
    randomized: bool,
    /// Metric of the original's library, 0 operations or 1 scarcity: no effect (see --elimination)
    #[arg(short = 'M', value_name = "METRIC", value_parser = clap::value_parser!(u8).range(0..=1))]
    metric: Option<u8>,
    /// Reroutings in the original's library: no effect
    #[arg(short = 'R')]
    reroutings: bool,
}

#[derive(Args, Debug)]
struct ValidateArgs {
    /// XAIF files to check (`-` standard input); every file is checked even when one cannot be read
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Strict: report what lenient reading forgives as errors
    #[arg(long)]
    strict: bool,
    /// Skip the activity check (real arguments as active as their formals, only passive reals
    /// passed to external routines, derivatives only of active symbols). Every output must pass
    /// it; front-end inputs (tlm.in.xaif, adm.in.xaif) need not, their mismatches are what the
    /// TypeChange pass converts
    #[arg(long)]
    skip_activity: bool,
    /// Errors only: no warnings
    #[arg(short = 'q', long)]
    quiet: bool,
}

/// The transforming commands, for what depends on which one runs.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Mode {
    Identity,
    Tangent,
    Adjoint,
}

/// A failure already reported to the user; carries the exit code.
struct Reported(u8);

type Outcome = Result<Result<(), Reported>>;

/// The exit status of a run whose reader went away (`| head`): what a shell reports for a
/// program ended by SIGPIPE, as the original engine or any C filter would be; no message.
const BROKEN_PIPE: u8 = 128 + 13;

/// The exit status of a panic, as the standard library's entry point gives it.
#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
const PANICKED: u8 = 101;

/// The entry point on Linux with glibc, in place of the standard library's, whose start-up
/// costs a small file's run a tenth of its time: see `xaifbooster::cli::process`.
#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: std::ffi::c_int, _argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    xaifbooster::cli::process::start();
    // The panic hook has printed the message by the time the panic is caught.
    let status = std::panic::catch_unwind(run).unwrap_or(PANICKED);
    let _ = std::io::stdout().flush();
    status.into()
}

#[cfg(not(all(target_os = "linux", target_env = "gnu", not(test))))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(run())
}

/// The command lines a build system or a script runs once per file — `tangent IN -o OUT` or
/// `tangent -i IN -o OUT`, the same for `identity` and `adjoint`, and any of them with `-I`
/// (the joint reversal's adjoint) — parsed without building clap's command. Building it (some
/// fifty switches of the original's drivers) and matching against it took 0.29 M of the 1.1 M
/// instructions of a small corpus file's whole run, and 75 KB of allocations whose first touch
/// of each page is a page fault: without it, 32 fewer faults per process. Anything else,
/// including other spellings of these (`--output`, `-oOUT`, `--`, a value that looks like a
/// switch, a repeated switch), goes to clap, which stays the one definition of the interface:
/// a test holds the two to the same result on every command line it tries.
mod quick {
    use super::*;
    use std::ffi::OsString;

    /// What a plain command line says; every other switch is at its default.
    #[derive(Default)]
    struct Plain {
        /// The input, and whether it came as `-i FILE` (as OpenAD's scripts give it).
        input: Option<(PathBuf, bool)>,
        output: Option<Destination>,
        /// `-I`, every formal inout: the joint reversal's adjoint (every mode accepts it).
        all_intents_inout: bool,
    }

    /// The command of `args` (without the program's name) when it is one of the plain forms,
    /// with every other switch at its default; `None` sends the command line to clap.
    pub(super) fn parse(mut args: impl Iterator<Item = OsString>) -> Option<Cli> {
        let mode = match args.next()?.to_str()? {
            "identity" => Mode::Identity,
            "tangent" => Mode::Tangent,
            "adjoint" => Mode::Adjoint,
            _ => return None,
        };
        let mut plain = Plain::default();
        while let Some(arg) = args.next() {
            let repeated = match arg.to_str()? {
                "-I" => std::mem::replace(&mut plain.all_intents_inout, true),
                "-o" => plain.output.replace(Destination::from(value(args.next())?)).is_some(),
                "-i" => plain.input.replace((PathBuf::from(value(args.next())?), true)).is_some(),
                _ => plain.input.replace((PathBuf::from(value(Some(arg))?), false)).is_some(),
            };
            if repeated {
                return None;
            }
        }
        let common = transform_args(plain)?;
        let command = match mode {
            Mode::Identity => Command::Identity(common),
            Mode::Tangent => Command::Tangent(TangentArgs {
                common,
                preaccumulation: PreaccumulationArg::BasicBlock,
                statement_level: false,
                stats: None,
                elimination: EliminationArg::Best,
                original: preaccumulation_switches(),
            }),
            Mode::Adjoint => Command::Adjoint(AdjointArgs {
                common,
                statement_level: false,
                stats: None,
                tape: xaifbooster::passes::adjoint::TapeStrategy::Balanced,
                no_tbr: false,
                loop_reversal: xaifbooster::passes::adjoint::address::LoopPolicy::Structural,
                original: preaccumulation_switches(),
            }),
        };
        Some(Cli { command })
    }

    /// `arg` when clap would take it as a value as it is: not empty (clap refuses an empty
    /// path), valid UTF-8, and not a switch (`-` alone is standard input or output).
    fn value(arg: Option<OsString>) -> Option<OsString> {
        arg.filter(|arg| arg.to_str().is_some_and(|arg| arg == "-" || !(arg.is_empty() || arg.starts_with('-'))))
    }

    fn transform_args(plain: Plain) -> Option<TransformArgs> {
        let (input, input_file) = match plain.input? {
            (input, true) => (Some(input), None),
            (input, false) => (None, Some(input)),
        };
        Some(TransformArgs {
            input,
            input_file,
            output: plain.output,
            catalogue: None,
            noninlinable_catalogue: None,
            schema_dir: None,
            validate: false,
            strict: false,
            verbose: false,
            passive: None,
            pessimistic_black_boxes: false,
            init_derivatives: false,
            activity_analysis: false,
            wrappers: None,
            rename_all: false,
            decoration_style: None,
            quiet: false,
            debug: DebugArgs { debug_file: None, debug_mask: None, tags: None, graphics_format: None, viewer: None },
            reverse: ReverseSwitches {
                all_intents_inout: plain.all_intents_inout,
                checkpoint_constant_formals: false,
                file_order: false,
                ask: false,
                ignore_violations: false,
                top_routine: None,
            },
        })
    }

    fn preaccumulation_switches() -> PreaccumulationSwitches {
        PreaccumulationSwitches {
            nary_sax: false,
            inline_propagators: false,
            counters: false,
            awareness: None,
            maintaining: false,
            no_alias_check: false,
            randomized: false,
            metric: None,
            reroutings: false,
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use clap::Parser;

        /// What clap makes of `words`, as text, or `None` where it refuses them.
        fn by_clap(words: &[&str]) -> Option<String> {
            let argv = std::iter::once("xaifbooster").chain(words.iter().copied());
            Cli::try_parse_from(argv).ok().map(|cli| format!("{cli:?}"))
        }

        fn by_quick(words: &[&str]) -> Option<String> {
            parse(words.iter().map(OsString::from)).map(|cli| format!("{cli:?}"))
        }

        /// Every command line of up to five words over a vocabulary of modes, files, switches
        /// and traps: where the quick parse takes one, clap takes it and makes the same command
        /// of it (defaults included); and it does take the plain forms.
        #[test]
        fn the_quick_parse_agrees_with_clap() {
            let vocabulary = [
                "tangent", "adjoint", "identity", "validate", "in.xaif", "-", "-o", "out.xaif", "-I", "--", "", "-oout",
            ];
            let mut taken = 0;
            for length in 1..=5u32 {
                for mut index in 0..vocabulary.len().pow(length) {
                    let mut words = Vec::new();
                    for _ in 0..length {
                        words.push(vocabulary[index % vocabulary.len()]);
                        index /= vocabulary.len();
                    }
                    if let Some(quick) = by_quick(&words) {
                        assert_eq!(Some(&quick), by_clap(&words).as_ref(), "command line {words:?}");
                        taken += 1;
                    }
                }
            }
            for plain in [
                &["tangent", "in.xaif", "-o", "out.xaif"][..],
                &["adjoint", "-o", "-", "in.xaif"],
                &["identity", "-"],
                &["tangent", "-i", "in.xaif", "-o", "out.xaif"],
                &["adjoint", "-I", "in.xaif", "-o", "out.xaif"],
            ] {
                assert!(by_quick(plain).is_some(), "{plain:?} not taken");
            }
            assert!(taken > 100, "only {taken} command lines taken");
        }
    }
}

/// Runs the command line's command; its exit status.
fn run() -> u8 {
    // mimalloc's constructor, which comes after every prioritized one, has run by now.
    xaifbooster::cli::memory::restore_environment();
    let _ = xaifbooster::cli::memory::own_start_region();
    let cli = quick::parse(std::env::args_os().skip(1)).unwrap_or_else(Cli::parse);
    let result = match cli.command {
        Command::Identity(args) => run_identity(&args),
        Command::Validate(args) => run_validate(&args),
        Command::Tangent(args) => run_tangent(&args),
        Command::Adjoint(args) => run_adjoint(&args),
        Command::Run(args) => run_run(&args),
        Command::Verify(args) => run_verify(&args),
        Command::Analyze(args) => run_analyze(&args),
        Command::Batch(args) => run_batch(&args),
        Command::Completions(args) => run_completions(&args),
        Command::Man => run_man(),
        Command::Dot(args) => run_dot(&args),
    };
    match result {
        Ok(Ok(())) => 0,
        Ok(Err(Reported(code))) => code,
        Err(error) if broken_pipe(&error) => BROKEN_PIPE,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "xaifbooster: {error:#}");
            1
        }
    }
}

fn broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<OutputError>().is_some_and(OutputError::is_broken_pipe)
            || cause.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Usage error (exit 2) unless at most one output of a subcommand goes to standard output.
fn one_stdout_user(subcommand: &str, users: &[(&str, bool)]) {
    let on_stdout: Vec<&str> = users.iter().filter(|(_, stdout)| *stdout).map(|(name, _)| *name).collect();
    if on_stdout.len() > 1 {
        let message =
            format!("only one of {} can write to standard output (-o does when not given)", on_stdout.join(", "));
        let mut command = Cli::command();
        command.build();
        let command = command.find_subcommand_mut(subcommand).expect("a subcommand of ours");
        command.error(clap::error::ErrorKind::ArgumentConflict, message).exit();
    }
}

/// Reads an input file, `-` standard input; also returns the name messages use.
fn read_input(path: &Path) -> Result<(Vec<u8>, String)> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin().lock().read_to_end(&mut bytes).context("cannot read standard input")?;
        return Ok((bytes, "<stdin>".to_owned()));
    }
    let bytes = xaifbooster::cli::input::read_file(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok((bytes, path.display().to_string()))
}

/// Writes text to standard output, as the commands without `-o` do.
fn print_stdout(text: String) -> Result<()> {
    let mut out = output::prepare(&Destination::Stdout)?;
    out.stage(text.into_bytes())?;
    Ok(out.commit()?)
}

fn run_validate(args: &ValidateArgs) -> Outcome {
    let mut failed = false;
    let mut stderr = std::io::stderr().lock();
    for file in &args.files {
        let (input, name) = match read_input(file) {
            Ok(read) => read,
            Err(error) => {
                let _ = writeln!(stderr, "xaifbooster: {error:#}");
                failed = true;
                continue;
            }
        };
        let options = ValidateOptions { strict: args.strict, activity: !args.skip_activity };
        let findings = validate(&input, &name, &options);
        for line in summarise(&findings, args.quiet) {
            let _ = writeln!(stderr, "{line}");
        }
        failed |= findings.iter().any(|f| f.severity == Severity::Error);
    }
    Ok(if failed { Err(Reported(1)) } else { Ok(()) })
}

/// The messages of one transforming run: to standard error (warnings and notes unless `-q`)
/// and to the debug log, which is written at the end whether the run succeeds or not.
struct Session {
    quiet: bool,
    log: Option<(DebugLog, Pending)>,
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
                let pending = output::prepare(&destination)?;
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

    fn timing(&mut self, stage: &str, since: Instant) {
        self.log(Group::Timing, stage, format_args!("{:.3} ms", since.elapsed().as_secs_f64() * 1e3));
    }

    /// Writes the debug log (with the run's error, if it failed) and passes the outcome on.
    fn finish(mut self, outcome: Outcome) -> Outcome {
        if let Err(error) = &outcome {
            self.log(Group::Error, "cli", format_args!("{error:#}"));
        }
        if let Some((log, mut pending)) = self.log {
            let written = pending.stage(log.into_bytes()).and_then(|()| pending.commit());
            if let (Err(error), Ok(_)) = (written, &outcome) {
                return Err(error.into());
            }
        }
        outcome
    }
}

impl TransformArgs {
    fn input(&self) -> &Path {
        // clap requires one of the two.
        self.input.as_deref().or(self.input_file.as_deref()).unwrap_or(Path::new("-"))
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
    fn pipeline_config(&self, tangent: TangentConfig) -> xaifbooster::pipeline::Config {
        use xaifbooster::passes::adjoint::AdjointConfig;
        use xaifbooster::passes::passivate::Decorations;
        use xaifbooster::passes::type_change::TypeChangeConfig;
        let words = |list: &Option<String>| -> Vec<String> {
            list.as_deref().map(|l| l.split_whitespace().map(str::to_owned).collect()).unwrap_or_default()
        };
        xaifbooster::pipeline::Config {
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

/// From this input size on, validation runs on a second thread while the command reads and
/// transforms (below it, a thread costs more than it saves). The environment variable
/// `XAIFBOOSTER_VALIDATE_ALONGSIDE_FROM` (bytes) moves the threshold, so tests can take the
/// concurrent path on small inputs and hold it to the sequential one's results.
fn validate_alongside_from() -> usize {
    std::env::var("XAIFBOOSTER_VALIDATE_ALONGSIDE_FROM").ok().and_then(|v| v.parse().ok()).unwrap_or(1 << 20)
}

/// From this input size on, the streaming modes read on a second thread while the first
/// transforms and writes (`streaming::Concurrency::pipelined`), where the machine has the cores
/// for it ([`concurrency`]). `XAIFBOOSTER_PIPELINE_FROM` (bytes) moves the threshold and, when
/// set, takes the pipeline whatever the cores, so tests can hold it to the one-thread results
/// (on documents that stream: [`streams_from`]).
fn pipeline_from() -> Option<usize> {
    std::env::var("XAIFBOOSTER_PIPELINE_FROM").ok().and_then(|v| v.parse().ok())
}

/// From this input size on, the commands stream routine by routine (`streaming::{identity,
/// tangent, adjoint}`); below it they read the whole document, transform it and write it. Both
/// paths give the same bytes (`tests/streaming.rs`). Streaming pays in memory on large inputs
/// and costs a first pass over the document: the tokenizing survey (tangent; 5% of
/// a tangent run on a median corpus file, SeqOfLoops: 2.35 M instructions streamed, 2.23 M
/// whole) or a second reading (the adjoint; graphEx2: 85.7 M instructions whole, 100.8 M
/// streamed). `XAIFBOOSTER_STREAM_FROM` (bytes) moves the threshold, so tests can take the
/// streamed path on small inputs.
fn streams_from() -> usize {
    std::env::var("XAIFBOOSTER_STREAM_FROM").ok().and_then(|v| v.parse().ok()).unwrap_or(1 << 20)
}

/// `Err` for a document below [`streams_from`], which then takes the whole-document path (the
/// debug log gives the reason).
fn worth_streaming(bytes: usize) -> Result<(), StreamError> {
    if bytes < streams_from() {
        return Err(StreamError::WholeDocument("a small document: its first pass costs more than streaming saves"));
    }
    Ok(())
}

/// The body a document's routines stream to, sized for `ratio` times its `bytes`. The head
/// they go behind is given room for `bytes`: the transformed head declares every temporary,
/// and on 16 MiB synthetic inputs takes 0.61 (tangent) and 0.67 (adjoint) times the input;
/// room it does not fill costs the output a fresh page per 4 KiB, a head longer than its room
/// a move of the routines before it is written (`output::Pending::body`). A document that
/// takes the whole-document path ([`worth_streaming`]) writes none: it gets an empty one,
/// which costs no buffer and no thread. `options` say whether the head will end on a block
/// boundary, which lets the file system put the routines behind it.
fn streamed_body(output: &mut Pending, bytes: usize, ratio: usize, options: &WriteOptions) -> output::Body {
    output.body(if worth_streaming(bytes).is_ok() { bytes * ratio } else { 0 }, bytes as u64, options.align_head)
}

/// How the streaming modes use threads on an input of `bytes` bytes. `cores_needed`: from how
/// many cores reading apart pays. The tangent's transformation is the larger part of its work,
/// so reading beside it pays from two cores (16 MiB: 0.53 instead of 0.60 s); identity only
/// writes, and validation already takes the second core (16 MiB on two cores: no faster).
/// `workers`: how many workers transform routines on how many cores ([`Workers`]).
fn concurrency(
    gate: Option<&xaifbooster::xaif::validate::Progress>,
    bytes: usize,
    cores_needed: usize,
    workers: Workers,
) -> streaming::Concurrency<'_> {
    let pipelined = match pipeline_from() {
        Some(from) => bytes >= from,
        None => bytes >= 1 << 20 && xaifbooster::cores() >= cores_needed,
    };
    // Only a pipelined run has workers: asking for the cores reads a dozen cgroup and proc
    // files, which a small input need not pay for.
    let workers = match (pipelined, workers_set()) {
        (false, _) => 0,
        (true, Some(workers)) => workers,
        (true, None) => workers.on(xaifbooster::cores(), bytes),
    };
    // `XAIFBOOSTER_WRITER` writes on a thread of its own whatever the cores;
    // `XAIFBOOSTER_PLANNER` plans on one (by default a pipelined run without workers does: it
    // has two cores).
    let writer = pipelined
        && switch_set("XAIFBOOSTER_WRITER")
            .unwrap_or_else(|| bytes >= WRITER_FROM && xaifbooster::cores() >= WRITER_CORES);
    let planner = pipelined && workers == 0 && switch_set("XAIFBOOSTER_PLANNER").unwrap_or(true);
    streaming::Concurrency { gate, pipelined, workers, writer, planner }
}

/// An environment switch (0 or 1), when set.
fn switch_set(name: &str) -> Option<bool> {
    std::env::var(name).ok().and_then(|v| v.parse::<u8>().ok()).map(|v| v != 0)
}

/// From how many cores a pipelined run writes its routines on a thread of their own
/// (`streaming::writer`), which takes writing and freeing the routines off the driving
/// thread, the critical path: on the 2 MiB synthetic input the driver's instructions fell
/// from 127 to 102 M. On two cores there is no core for it: the reader and the checks already
/// share the second, and on a shared machine other processes too. The 16 MiB tangent took
/// 0.40 s with it against 0.39 without (median of 7 alternating runs), and 10% more CPU time
/// (the writer's copy of the names and symbols, frees on a thread other than the allocating one).
const WRITER_CORES: usize = 3;

/// From how many bytes of input a run writes on a thread of its own: its copy of the head and
/// the routines waiting for it cost memory the input's size does not pay for below that. The
/// tangent's peak (`/usr/bin/time`): 16 MiB 41.9 → 49.2 MB with it (2.5 → 3.0 times the input,
/// at the bound of three), 64 MiB 132 → 156 MB (2.0 → 2.4 times).
const WRITER_FROM: usize = 32 << 20;

/// How many workers a pipelined mode transforms routines on by default; `XAIFBOOSTER_WORKERS`
/// (0: the driver's thread) overrides it.
#[derive(Clone, Copy)]
enum Workers {
    /// None: identity transforms nothing.
    None,
    /// The tangent: from four cores and 64 MiB of input, the cores but two (the reader's and
    /// validation's), at most four. Each worker (and the driver's copy beside them) costs
    /// memory the input's size does not pay for below that: at 16 MiB two workers took the
    /// peak from 2.6 to 3.9 times the input and six to 5.0, past the bound of three; at 64 MiB
    /// (2.1 without workers) two took 2.6 and six 3.0 (`/usr/bin/time`, measured on two cores:
    /// memory does not depend on them). On two cores the reader and validation already keep
    /// both busy beside the driver: two workers were no faster (16 MiB: median 0.54 s against
    /// 0.52 s on the driver's thread, +5% instructions for putting routines back), nor was one
    /// beside the driver transforming too (min 558–595 ms against 558 ms).
    Tangent,
    /// The adjoint's passes after the first: from two cores one worker, and from 8 MiB of
    /// input one per core but the driver's, at most three, beside the driver's thread, which
    /// transforms too once it has put back and written the routines before. Validation is
    /// over by then (it runs beside the first pass). 16 MiB on two cores: 1.31 s on the
    /// driver's thread alone, 1.09 s with two workers that left the driver waiting on the
    /// slower one, 1.03 s with one worker and the driver sharing out the routines (min of 5
    /// alternating runs). Each worker (the driver's too) adds its thread's allocator pages and
    /// copies of the head and the facts; the routines in flight stay about the same whatever
    /// their number (`adjoint_routines_per_worker`) but on small documents, where each worker
    /// takes at least one. Peak at 16 MiB, against the bound of five times the input: 3.0 on
    /// the driver's thread, 4.4 with one worker, 4.6 with three, 4.7 with six, 4.9 with
    /// fourteen (`/usr/bin/time`, two cores); at 2 MiB three took the heap to 4.5–5.0 times
    /// the input (one: 3.9), so small documents keep one.
    Adjoint,
}

impl Workers {
    /// On `cores` cores, for an input of `bytes` bytes.
    fn on(self, cores: usize, bytes: usize) -> usize {
        match self {
            Workers::None => 0,
            Workers::Tangent if cores >= 4 && bytes >= 64 << 20 => (cores - 2).min(4),
            Workers::Tangent => 0,
            Workers::Adjoint if cores >= 2 && bytes >= 8 << 20 => (cores - 1).min(3),
            Workers::Adjoint if cores >= 2 => 1,
            Workers::Adjoint => 0,
        }
    }
}

/// `XAIFBOOSTER_WORKERS`, when set.
fn workers_set() -> Option<usize> {
    std::env::var("XAIFBOOSTER_WORKERS").ok().and_then(|v| v.parse().ok())
}

/// A transforming command's input and its validation. The validator's checks that need no
/// reader run first, or alongside the command's own read ([`Checked::validating`]); their
/// errors end the run; their warnings wait in `findings` for the reader's, which complete the
/// validation ([`Checked::report`]). The document is read once, not once to validate and once
/// to transform.
struct Checked {
    input: Vec<u8>,
    file: String,
    options: ValidateOptions,
    findings: Vec<Diagnostic>,
}

impl Checked {
    fn read(args: &TransformArgs) -> Result<Checked> {
        let (input, file) = read_input(args.input())?;
        // Inputs come from the front end: their call-site activity mismatches are for the
        // TypeChange pass to convert, so the activity check is for outputs only.
        let options = ValidateOptions { strict: args.strict, activity: false };
        Ok(Checked { input, file, options, findings: Vec::new() })
    }

    /// Runs `work` (the command's read, or its streamed run) with the checks that need no
    /// reader: before it on small inputs, alongside it on large ones, where `work` gets the
    /// checks' [`Progress`] and must stop once they have found an error; it may transform
    /// routines they have not passed yet (the reader and the passes keep the robustness
    /// contract on any input, `fuzz`), as its result is kept only when they found none.
    /// `None` when the checks found an error; their findings are then reported, whatever
    /// `work` gave.
    fn validating<T>(
        &mut self,
        session: &mut Session,
        work: impl FnOnce(&[u8], &str, Option<&Progress>) -> T,
    ) -> Option<T> {
        let (input, file, options) = (&self.input[..], &self.file[..], &self.options);
        let (findings, result) = if input.len() < validate_alongside_from() {
            let findings = validate_without_reader(input, file, options);
            report_validation_errors(session, &findings)?;
            let result = work(input, file, None);
            (findings, result)
        } else {
            let progress = Progress::default();
            std::thread::scope(|scope| {
                let checks = scope.spawn(|| validate_without_reader_progressively(input, file, options, &progress));
                let result = work(input, file, Some(&progress));
                let findings = checks.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (findings, result)
            })
        };
        report_validation_errors(session, &findings)?;
        self.findings = findings;
        Some(result)
    }

    /// Reports the findings of a whole read with the checks' and passes its call graph on.
    fn report_read(
        &mut self,
        session: &mut Session,
        read: Result<ReadOutput, ReadError>,
    ) -> Result<CallGraph, Reported> {
        match read {
            Ok(read) => self.report(session, read.warnings).map(|()| read.call_graph),
            Err(error) => self.report(session, error.findings().to_vec()).and(Err(Reported(1))),
        }
    }

    /// Reports the validation's findings once the command's reader has run: `from_reader` is
    /// its warnings, or the findings of its failed read. `Err` when there is an error among them.
    fn report(&mut self, session: &mut Session, from_reader: Vec<Diagnostic>) -> Result<(), Reported> {
        report_validation(session, &with_reader_findings(std::mem::take(&mut self.findings), from_reader))
    }

    /// Reports the validation's findings when the command failed before its reader finished (a
    /// transformation error while streaming): the document is read again for them, as
    /// `validate` reads it. `Err` when there is an error among them, which then stands for the
    /// run's failure.
    fn report_after_failure(&mut self, session: &mut Session) -> Result<(), Reported> {
        self.findings.clear();
        report_validation(session, &validate(&self.input, &self.file, &self.options))
    }
}

/// Prints the findings of checks that found an error (`None`); without one, they wait to be
/// printed with the reader's.
fn report_validation_errors(session: &mut Session, findings: &[Diagnostic]) -> Option<()> {
    if findings.iter().any(|f| f.severity == Severity::Error) {
        session.findings("validate", findings);
        return None;
    }
    Some(())
}

/// Prints validation findings; `Err` when there is an error among them.
fn report_validation(session: &mut Session, findings: &[Diagnostic]) -> Result<(), Reported> {
    session.findings("validate", findings);
    if findings.iter().any(|f| f.severity == Severity::Error) { Err(Reported(1)) } else { Ok(()) }
}

/// Reads a validated input whole (after a streamed run declined it); the validation's
/// findings are reported with the reader's.
fn read_whole(
    args: &TransformArgs,
    catalogue: &Catalogue,
    session: &mut Session,
    mut checked: Checked,
) -> Result<Result<CallGraph, Reported>> {
    let started = Instant::now();
    let read = xaif::read(&checked.input, &checked.file, &ReadOptions { strict: args.strict, catalogue });
    session.timing("read", started);
    Ok(checked.report_read(session, read))
}

/// The intrinsics catalogue of a run: `-c` (and `-N`) or the embedded one, borrowed (a copy of
/// it was 2% of a small corpus file's tangent).
fn catalogue(args: &TransformArgs, session: &mut Session) -> Result<Result<Cow<'static, Catalogue>, Reported>> {
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

fn run_identity(args: &TransformArgs) -> Outcome {
    one_stdout_user(
        "identity",
        &[("-o", args.output() == Destination::Stdout), ("-d", args.debug.debug_file == Some(Destination::Stdout))],
    );
    let mut session = Session::start(args)?;
    let outcome = identity(args, &mut session);
    session.finish(outcome)
}

fn identity(args: &TransformArgs, session: &mut Session) -> Outcome {
    for note in args.no_effect_notes(Mode::Identity) {
        session.note(&note);
    }
    let mut output = output::prepare(&args.output())?;
    let catalogue = match catalogue(args, session)? {
        Ok(catalogue) => catalogue,
        Err(reported) => return Ok(Err(reported)),
    };
    let mut checked = Checked::read(args)?;
    let config = args.pipeline_config(TangentConfig::default());
    let options = WriteOptions { schema_location: schema_location(args, "xaif.xsd"), align_head: false };
    let started = Instant::now();
    let read_options = ReadOptions { strict: args.strict, catalogue: &catalogue };
    // Identity writes the head first: the routines go straight to the output.
    let mut body = match worth_streaming(checked.input.len()) {
        Ok(()) => output.direct_body(),
        Err(_) => output::Body::Memory(Vec::new()),
    };
    let streamed = checked.validating(session, |input, file, gate| {
        worth_streaming(input.len())?;
        let concurrency = concurrency(gate, input.len(), 3, Workers::None);
        streaming::identity(input, file, &read_options, &config, &options, &mut body, concurrency)
    });
    let Some(streamed) = streamed else { return Ok(Err(Reported(1))) };
    match streamed {
        Ok(mut streamed) => {
            // Every routine is written: what is freed from here on stays the process's
            // ([`xaifbooster::cli::memory::keep_freed_memory`]).
            xaifbooster::cli::memory::keep_freed_memory();
            session.timing("read, transform and write, routine by routine", started);
            if let Err(reported) = checked.report(session, std::mem::take(&mut streamed.warnings)) {
                return Ok(Err(reported));
            }
            let tail = std::mem::take(&mut streamed.tail);
            let head = output::Head { write: &|sink| streamed.write_head(sink), len: &|| Some(streamed.head_len()) };
            output.stage_streamed(head, body, tail)?;
            output.commit()?;
            return Ok(Ok(()));
        }
        Err(StreamError::WholeDocument(why)) => {
            // What the body has is discarded when the whole document is staged.
            drop(body);
            session.log(Group::Timing, "stream", format!("whole document: {why}"))
        }
        Err(StreamError::Read(error)) => {
            return Ok(checked.report(session, error.findings().to_vec()).and(Err(Reported(1))));
        }
        Err(StreamError::Pipeline(error)) => {
            if let Err(reported) = checked.report_after_failure(session) {
                return Ok(Err(reported));
            }
            session.error("identity", &error.to_string());
            return Ok(Err(Reported(1)));
        }
        Err(StreamError::Io(error)) => return Err(output.failed(error).into()),
        // The checks stop the run only with an error among their findings, which
        // `validating` reports instead.
        Err(StreamError::Invalid) => anyhow::bail!("internal error: validation stopped the run without a finding"),
    }
    let mut call_graph = match read_whole(args, &catalogue, session, checked)? {
        Ok(call_graph) => call_graph,
        Err(reported) => return Ok(Err(reported)),
    };
    let passivation = xaifbooster::pipeline::identity(&mut call_graph, &config);
    report_passivation(args, session, &passivation);
    let started = Instant::now();
    output.stage(xaif::write(&call_graph, &options))?;
    session.timing("write", started);
    output.commit()?;
    Ok(Ok(()))
}

fn run_tangent(args: &TangentArgs) -> Outcome {
    let common = &args.common;
    one_stdout_user(
        "tangent",
        &[
            ("-o", common.output() == Destination::Stdout),
            ("--stats", args.stats == Some(Destination::Stdout)),
            ("-d", common.debug.debug_file == Some(Destination::Stdout)),
        ],
    );
    let mut session = Session::start(common)?;
    let outcome = tangent(args, &mut session);
    session.finish(outcome)
}

fn tangent(args: &TangentArgs, session: &mut Session) -> Outcome {
    let common = &args.common;
    for note in common.no_effect_notes(Mode::Tangent).into_iter().chain(args.original.no_effect_notes(Mode::Tangent)) {
        session.note(&note);
    }
    // Every destination is ready before any work, and nothing is written before all of it
    // succeeded.
    let mut output = output::prepare(&common.output())?;
    let stats = args.stats.as_ref().map(output::prepare).transpose()?;
    let catalogue = match catalogue(common, session)? {
        Ok(catalogue) => catalogue,
        Err(reported) => return Ok(Err(reported)),
    };
    let mut checked = Checked::read(common)?;
    let preaccumulation = match (args.statement_level, args.preaccumulation) {
        (true, _) | (false, PreaccumulationArg::Statement) => Preaccumulation::Statement,
        (false, PreaccumulationArg::BasicBlock) => Preaccumulation::BasicBlock,
    };
    let elimination = args.elimination.method();
    // Comparing every method costs planning time; it is only worth it when statistics are
    // written.
    let config = common.pipeline_config(TangentConfig {
        preaccumulation,
        elimination,
        compare_methods: args.stats.is_some(),
        nary_sax: args.original.nary_sax,
        inline_propagators: args.original.inline_propagators,
        runtime_counters: args.original.counters,
        permit_aliased_lhs: args.original.no_alias_check,
        ..TangentConfig::default()
    });
    let started = Instant::now();
    let options = WriteOptions::transformed(schema_location(common, "xaif_output.xsd"), checked.input.len());
    let read_options = ReadOptions { strict: common.strict, catalogue: &catalogue };
    // The tangent code is about three times the input.
    let mut body = streamed_body(&mut output, checked.input.len(), 3, &options);
    let streamed = checked.validating(session, |input, file, gate| {
        worth_streaming(input.len())?;
        let concurrency = concurrency(gate, input.len(), 2, Workers::Tangent);
        streaming::tangent(input, file, &read_options, &catalogue, &config, &options, &mut body, concurrency)
    });
    let Some(streamed) = streamed else { return Ok(Err(Reported(1))) };
    let label = "read, tangent and write, routine by routine";
    let (output, stats) = match finish_streamed(
        Mode::Tangent,
        common,
        session,
        &mut checked,
        streamed,
        started,
        label,
        body,
        output,
        stats,
    ) {
        Streaming::Done(outcome) => {
            left_to_exit(checked);
            return outcome;
        }
        Streaming::WholeDocument(output, stats) => (output, stats),
    };
    let input_len = checked.input.len();
    let mut call_graph = match read_whole(common, &catalogue, session, checked)? {
        Ok(call_graph) => call_graph,
        Err(reported) => return Ok(Err(reported)),
    };
    let started = Instant::now();
    let report = match xaifbooster::pipeline::tangent(&mut call_graph, &catalogue, &config) {
        Ok(report) => report,
        Err(error) => {
            session.error("tangent", &located_failure(common, &error));
            return Ok(Err(Reported(1)));
        }
    };
    session.timing("tangent", started);
    report_passivation(common, session, &report.passivation);
    if let Some((log, _)) = &mut session.log {
        log.report(&report);
    }
    let stats = stats.map(|pending| (pending, report.tangent.to_json()));
    write_transformed(common, session, call_graph, input_len, output, stats)
}

/// How a streamed tangent or adjoint run ended: done (written, or its failure reported), or
/// declined, its destinations handed back for the whole-document path.
enum Streaming {
    Done(Outcome),
    WholeDocument(Pending, Option<Pending>),
}

/// Reports a streamed transformation's run and, if it succeeded, commits its output and
/// statistics; a document it declined goes back to the caller with its destinations.
#[allow(clippy::too_many_arguments)]
fn finish_streamed(
    mode: Mode,
    common: &TransformArgs,
    session: &mut Session,
    checked: &mut Checked,
    streamed: Result<streaming::Streamed, StreamError>,
    started: Instant,
    label: &str,
    body: output::Body,
    output: Pending,
    stats: Option<Pending>,
) -> Streaming {
    let name = if mode == Mode::Adjoint { "adjoint" } else { "tangent" };
    let outcome = match streamed {
        Ok(mut streamed) => {
            // Every routine is transformed and written: what is freed from here on stays the
            // process's ([`xaifbooster::cli::memory::keep_freed_memory`]).
            xaifbooster::cli::memory::keep_freed_memory();
            session.timing(label, started);
            if let Err(reported) = checked.report(session, std::mem::take(&mut streamed.warnings)) {
                return Streaming::Done(Ok(Err(reported)));
            }
            report_passivation(common, session, &streamed.report.passivation);
            if let Some((log, _)) = &mut session.log {
                log.report(&streamed.report);
                if mode == Mode::Adjoint {
                    log.adjoint_report(&streamed.report);
                }
            }
            let json = |report: &xaifbooster::pipeline::Report| {
                if mode == Mode::Adjoint { report.adjoint_json() } else { report.tangent.to_json() }
            };
            let stats = stats.map(|pending| (pending, json(&streamed.report)));
            let tail = std::mem::take(&mut streamed.tail);
            let head = output::Head { write: &|sink| streamed.write_head(sink), len: &|| Some(streamed.head_len()) };
            let committed = commit_outputs(head, body, tail, output, stats);
            left_to_exit(streamed);
            committed
        }
        Err(StreamError::WholeDocument(why)) => {
            session.log(Group::Timing, "stream", format!("whole document: {why}"));
            return Streaming::WholeDocument(output, stats);
        }
        Err(StreamError::Read(error)) => Ok(checked.report(session, error.findings().to_vec()).and(Err(Reported(1)))),
        Err(StreamError::Pipeline(error)) => match checked.report_after_failure(session) {
            Err(reported) => Ok(Err(reported)),
            Ok(()) => {
                session.error(name, &located_failure(common, &error));
                Ok(Err(Reported(1)))
            }
        },
        Err(StreamError::Io(error)) => Err(output.failed(error).into()),
        // The checks stop the run only with an error among their findings, which
        // `validating` reports instead.
        Err(StreamError::Invalid) => {
            Err(anyhow::anyhow!("internal error: validation stopped the run without a finding"))
        }
    };
    Streaming::Done(outcome)
}

/// Leaves what a streamed run held to the process's exit instead of freeing it now: the
/// streamed run is the command's last work, and its input and head (16 MiB tangent: the
/// 16 MiB input, the symbols of every temporary and their names) took 2.8–3.9 ms to free piece
/// by piece at the end, where no other thread works (`strace -tt`: from the output's commit to
/// `exit_group`; 0.1–0.2 ms now), while the kernel takes the whole address space back at exit
/// anyway. Only for values whose drop does nothing but free memory.
fn left_to_exit<T>(value: T) {
    std::mem::forget(value);
}

/// Writes a transformed call graph and its statistics: both staged, then both committed, so a
/// failure leaves neither half-written. A large output's head (scopes, symbol tables, maps) is
/// final once the whole document is transformed, so it goes first and the routines follow it
/// straight into the output's temporary file, each freed once written: the output text (the adjoint's
/// is about 18 times the input on large inputs) is never whole in memory, and the graphs
/// shrink as it grows. (Streamed outputs write their routines first, behind room for the head,
/// which is known last: `output::Pending::body`.)
fn write_transformed(
    common: &TransformArgs,
    session: &mut Session,
    mut call_graph: CallGraph,
    input_len: usize,
    mut output: Pending,
    stats: Option<(Pending, String)>,
) -> Outcome {
    let started = Instant::now();
    let options = WriteOptions::transformed(schema_location(common, "xaif_output.xsd"), input_len);
    // An output expected under 1 MiB is put together in one buffer sized for it and written at
    // once: no buffer in front of the file, no buffer per routine growing as it is written (a
    // corpus file's tangent, one process each: 0.09–0.1 ms less, 10 fewer page faults).
    if call_graph.size_hint < 1 << 20 {
        output.stage(xaif::write(&call_graph, &options))?;
        let outcome = commit_staged(output, stats);
        session.timing("write", started);
        return outcome;
    }
    output.stage_written(&mut |sink: &mut dyn Write| {
        xaif::write::write_head_to(&call_graph, &options, sink)?;
        let routines: Vec<_> = call_graph.routines.iter().map(|(id, _)| id).collect();
        // Writing only reads the call graph: on large documents a few routines at a time are
        // written on every core, then go out in document order (the same bytes as one at a
        // time) and are freed. A few, not all: the adjoint's text is many times its model. On
        // small ones starting the threads would cost more than it saves.
        let window = if call_graph.size_hint >= 1 << 20 { 2 * rayon::current_num_threads() } else { 1 };
        let write = |call_graph: &CallGraph, routine: RoutineId| {
            let mut text = Vec::new();
            xaif::write::write_routine(call_graph, routine, &mut text);
            text
        };
        for routines in routines.chunks(window) {
            let texts: Vec<Vec<u8>> = if window > 1 {
                routines.par_iter().map(|&r| write(&call_graph, r)).collect()
            } else {
                routines.iter().map(|&r| write(&call_graph, r)).collect()
            };
            for (&routine, text) in routines.iter().zip(texts) {
                sink.write_all(&text)?;
                call_graph.routines[routine].drop_graphs();
            }
        }
        let mut tail = Vec::new();
        xaif::write::write_tail(&call_graph, &mut tail);
        sink.write_all(&tail)
    })?;
    let outcome = commit_staged(output, stats);
    session.timing("write", started);
    outcome
}

/// Stages an output and its statistics, then commits both, so a failure leaves neither
/// half-written.
fn commit_outputs(
    head: output::Head<'_>,
    body: output::Body,
    tail: Vec<u8>,
    mut output: Pending,
    stats: Option<(Pending, String)>,
) -> Outcome {
    output.stage_streamed(head, body, tail)?;
    commit_staged(output, stats)
}

/// Stages the statistics beside an output already staged, then commits both.
fn commit_staged(output: Pending, stats: Option<(Pending, String)>) -> Outcome {
    let stats = match stats {
        Some((mut pending, json)) => {
            pending.stage(json.into_bytes())?;
            Some(pending)
        }
        None => None,
    };
    output.commit()?;
    if let Some(stats) = stats {
        stats.commit()?;
    }
    Ok(Ok(()))
}

/// Names given to -p that match no variable are most likely typos: say so.
fn report_passivation(args: &TransformArgs, session: &mut Session, passivation: &Passivation) {
    for name in &passivation.unmatched {
        session
            .warning("passivate", &format!("{}: warning: -p {name}: no variable of that name", args.input().display()));
    }
}

fn run_adjoint(args: &AdjointArgs) -> Outcome {
    let common = &args.common;
    one_stdout_user(
        "adjoint",
        &[("-o", common.output() == Destination::Stdout), ("-d", common.debug.debug_file == Some(Destination::Stdout))],
    );
    let mut session = Session::start(common)?;
    let outcome = adjoint(args, &mut session);
    session.finish(outcome)
}

fn adjoint(args: &AdjointArgs, session: &mut Session) -> Outcome {
    let common = &args.common;
    let notes = common.no_effect_notes(Mode::Adjoint);
    for note in notes.into_iter().chain(args.original.no_effect_notes(Mode::Adjoint)) {
        session.note(&note);
    }
    let mut output = output::prepare(&common.output())?;
    let stats = args.stats.as_ref().map(output::prepare).transpose()?;
    let catalogue = match catalogue(common, session)? {
        Ok(catalogue) => catalogue,
        Err(reported) => return Ok(Err(reported)),
    };
    let mut checked = Checked::read(common)?;
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
    let started = Instant::now();
    let options = WriteOptions::transformed(schema_location(common, "xaif_output.xsd"), checked.input.len());
    let read_options = ReadOptions { strict: common.strict, catalogue: &catalogue };
    // The adjoint code is about 18 times the input on large inputs, 7 on the corpus.
    let mut body = streamed_body(&mut output, checked.input.len(), 8, &options);
    let streamed = checked.validating(session, |input, file, gate| {
        worth_streaming(input.len())?;
        let concurrency = concurrency(gate, input.len(), 2, Workers::Adjoint);
        streaming::adjoint(input, file, &read_options, &catalogue, &config, &options, &mut body, concurrency)
    });
    let Some(streamed) = streamed else { return Ok(Err(Reported(1))) };
    let label = "read, adjoint and write, routine by routine (two passes)";
    let (output, stats) = match finish_streamed(
        Mode::Adjoint,
        common,
        session,
        &mut checked,
        streamed,
        started,
        label,
        body,
        output,
        stats,
    ) {
        Streaming::Done(outcome) => {
            left_to_exit(checked);
            return outcome;
        }
        Streaming::WholeDocument(output, stats) => (output, stats),
    };
    let input_len = checked.input.len();
    let mut call_graph = match read_whole(common, &catalogue, session, checked)? {
        Ok(call_graph) => call_graph,
        Err(reported) => return Ok(Err(reported)),
    };
    let started = Instant::now();
    let report = match xaifbooster::pipeline::adjoint(&mut call_graph, &catalogue, &config) {
        Ok(report) => report,
        Err(error) => {
            session.error("adjoint", &located_failure(common, &error));
            return Ok(Err(Reported(1)));
        }
    };
    session.timing("adjoint", started);
    report_passivation(common, session, &report.passivation);
    if let Some((log, _)) = &mut session.log {
        log.report(&report);
        log.adjoint_report(&report);
    }
    let stats = stats.map(|pending| (pending, report.adjoint_json()));
    write_transformed(common, session, call_graph, input_len, output, stats)
}

fn schema_location(args: &TransformArgs, file: &str) -> String {
    match &args.schema_dir {
        Some(dir) => format!("{}/{file}", dir.trim_end_matches('/')),
        None => file.to_owned(),
    }
}

/// A transformation's refusal, located at its statement where it names one (the input is read
/// again, on this failure only).
fn located_failure(args: &TransformArgs, error: &xaifbooster::pipeline::PipelineError) -> String {
    let file = args.input().display().to_string();
    match (error.location(), std::fs::read(args.input())) {
        (Some((routine, statement)), Ok(input)) => {
            xaifbooster::xaif::validate::locate(&input, &file, routine, None, statement, error.to_string()).to_string()
        }
        _ => format!("{file}: {error}"),
    }
}

/// Prints findings on standard error, repeated ones summarised.
fn print_findings(findings: &[Diagnostic]) {
    let mut stderr = std::io::stderr().lock();
    for line in summarise(findings, false) {
        let _ = writeln!(stderr, "{line}");
    }
}

/// Reads and lowers a program for `run` and `verify`; prints what the reader found.
fn load_program(path: &Path) -> Result<Result<xaifbooster::interp::Program, String>> {
    let (bytes, name) = read_input(path)?;
    Ok(match xaifbooster::interp::verify::load_program(&bytes, &name) {
        Ok((program, warnings)) => {
            print_findings(&warnings);
            Ok(program)
        }
        Err(error) => {
            print_findings(error.findings());
            Err(format!("unreadable: {}", error.diagnostic()))
        }
    })
}

fn run_analyze(args: &AnalyzeArgs) -> Outcome {
    let (bytes, name) = read_input(&args.file)?;
    let call_graph = match xaifbooster::xaif::read(&bytes, &name, &xaifbooster::xaif::ReadOptions::default()) {
        Ok(read) => {
            print_findings(&read.warnings);
            read.call_graph
        }
        Err(error) => {
            print_findings(error.findings());
            return Ok(Err(Reported(1)));
        }
    };
    let catalogue = xaifbooster::xaif::intrinsics::Catalogue::builtin();
    let report = xaifbooster::analysis::report::analyze(&call_graph, catalogue, &args.independents, &args.dependents)?;
    let text = if args.json { serde_json::to_string_pretty(&report)? + "\n" } else { report.render() };
    print_stdout(text)?;
    Ok(Ok(()))
}

fn run_run(args: &RunArgs) -> Outcome {
    use xaifbooster::interp::verify::{Driver, Sweep};
    let program = match load_program(&args.file)? {
        Ok(p) => p,
        // The reader's findings are printed, located.
        Err(_) => return Ok(Err(Reported(1))),
    };
    let config = match args.driver.resolve(&program) {
        Ok(config) => config,
        Err(reported) => return Ok(Err(reported)),
    };
    let mut warnings = Vec::new();
    let outcome = Driver::new(&program, &config).and_then(|driver| {
        let x = driver.default_x();
        let transformed =
            program.routines.iter().any(|r| matches!(r.body, xaifbooster::interp::lower::Body::Template(_)))
                || args.file.to_string_lossy().contains("tlm");
        let plain = driver.run(&x, Sweep::Plain)?;
        let mut text = format!("{}: {} inputs, {} outputs\n", driver.entry_name(), driver.n, driver.m);
        for (i, v) in plain.y.iter().enumerate() {
            text.push_str(&format!("y({}) = {v:.16e}\n", i + 1));
        }
        if transformed {
            let adjoint =
                program.routines.iter().any(|r| matches!(r.body, xaifbooster::interp::lower::Body::Template(_)));
            let mode = if adjoint {
                xaifbooster::interp::verify::Mode::Adjoint
            } else {
                xaifbooster::interp::verify::Mode::Tangent
            };
            let j = xaifbooster::interp::verify::jacobian(&driver, mode, &x)?.jacobian;
            warnings = xaifbooster::interp::verify::zero_jacobian_warnings(
                &j,
                driver.n,
                driver.m,
                &driver.input_labels(),
                program.passive_stores_left_out,
            );
            for i in 0..driver.m {
                for k in 0..driver.n {
                    text.push_str(&format!("dy({})/dx({}) = {:.16e}\n", i + 1, k + 1, j[i * driver.n + k]));
                }
            }
        }
        Ok(text)
    });
    match outcome {
        Ok(text) => {
            args.driver.warn(&warnings);
            print_stdout(text)?;
            Ok(Ok(()))
        }
        // Located at the statement (or vertex) where execution stopped.
        Err(e) => {
            match e.location().and_then(|at| locate_in(&args.file, at, e.to_string())) {
                Some(finding) => print_findings(&[finding]),
                None => {
                    let _ = writeln!(std::io::stderr(), "xaifbooster: {e}");
                }
            }
            Ok(Err(Reported(1)))
        }
    }
}

/// A run-time failure located in the file at the statement (or vertex) where execution
/// stopped, with the front end's source line.
fn locate_in(path: &Path, at: &xaifbooster::interp::Location, message: String) -> Option<Diagnostic> {
    let (input, file) = read_input(path).ok()?;
    if let Some((scope, symbol)) = at.symbol.as_ref().filter(|_| at.routine.is_empty()) {
        return Some(xaifbooster::xaif::validate::locate_symbol(&input, &file, scope, symbol, message));
    }
    let (vertex, statement) = (at.vertex.as_deref(), at.statement.as_deref());
    Some(xaifbooster::xaif::validate::locate(&input, &file, &at.routine, vertex, statement, message))
}

fn run_verify(args: &VerifyArgs) -> Outcome {
    use xaifbooster::interp::verify::{Mode, Side, Status, VerifyConfig, VerifyReport, dot_product_test, verify};
    let mode = if args.mode == "adjoint" { Mode::Adjoint } else { Mode::Tangent };
    let report = match (load_program(&args.original)?, load_program(&args.transformed)?) {
        (Ok(original), Ok(transformed)) => {
            // The original program's interface says how to call it; the transformed one is
            // called the same way.
            let driver = match args.driver.resolve(&original) {
                Ok(driver) => driver,
                Err(reported) => return Ok(Err(reported)),
            };
            let config = VerifyConfig { driver, mode, rtol: args.rtol };
            let mut report = verify(&original, &transformed, &config);
            if let (Some(dot), Status::Ok) = (&args.dot, &report.status) {
                match load_program(dot)? {
                    Ok(other) => {
                        let (t, a) =
                            if mode == Mode::Tangent { (&transformed, &other) } else { (&other, &transformed) };
                        match dot_product_test(t, a, &config) {
                            Ok(d) => {
                                if !d.ok {
                                    report.status =
                                        Status::Mismatch(format!("dot-product test error {:.2e}", d.rel_err));
                                }
                                report.dot = Some(d);
                            }
                            Err(e) => report.status = Status::Unsupported(format!("dot-product test: {e}")),
                        }
                    }
                    Err(why) => report.status = Status::Unsupported(why),
                }
            }
            report
        }
        (Err(why), _) | (_, Err(why)) => VerifyReport::unsupported(why, mode),
    };
    if let Some((side, at)) = &report.failure {
        let file = if *side == Side::Original { &args.original } else { &args.transformed };
        let reason = match &report.status {
            Status::Ok => String::new(),
            Status::Mismatch(why) | Status::Unsupported(why) => why.clone(),
        };
        if let Some(finding) = locate_in(file, at, reason) {
            print_findings(&[finding]);
        }
    }
    args.driver.warn(&report.warnings);
    print_stdout(if args.json { format!("{}\n", report.json()) } else { report.table() })?;
    Ok(if report.status == Status::Ok { Ok(()) } else { Err(Reported(1)) })
}

#[derive(Args, Debug)]
struct BatchArgs {
    /// What to do to every input
    #[arg(value_enum)]
    mode: BatchModeArg,
    /// Input files and directories; a directory is searched, recursively, for the files --name
    /// matches
    #[arg(value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// A file listing inputs (files or directories), one a line; `#` comments and blank lines
    /// skipped; `-` standard input
    #[arg(long, value_name = "FILE")]
    list: Option<PathBuf>,
    /// Where outputs go: each input's path relative to the directory given (or, for files named
    /// one by one, to their common directory), `.in.xaif`/`.xaif` becoming `.out.xaif`
    #[arg(long, value_name = "DIR", required = true)]
    out_dir: PathBuf,
    /// File names a directory's files must match (`*`, `?`); repeatable [default: tlm.in.xaif
    /// for tangent, adm.in.xaif for adjoint, *.xaif for identity]
    #[arg(long, value_name = "PATTERN")]
    name: Vec<String>,
    /// Write the JSON report here (`-` standard output): per file its status, located error,
    /// time, sizes, operation counts and pushes (and the verifier's verdict)
    #[arg(long, value_name = "FILE")]
    report: Option<Destination>,
    /// Verify each output's derivatives against finite differences of its input, as `verify`
    /// does without driver flags (tangent and adjoint)
    #[arg(long)]
    verify: bool,
    /// Reversal template the verifier runs adjoint outputs with
    #[arg(long, value_parser = ["joint", "split"], default_value = "joint")]
    template: String,
    /// Relative tolerance of the verifier
    #[arg(long, default_value_t = 1e-5)]
    rtol: f64,
    /// Only the K-th of N slices of the inputs (sorted by path, every N-th from the K-th): for
    /// job arrays and machines sharing a corpus
    #[arg(long, value_name = "K/N")]
    shard: Option<xaifbooster::cli::batch::Shard>,
    /// Threads [default: one per core]; the outputs are the same for any number
    #[arg(short = 'j', long, value_name = "N")]
    jobs: Option<usize>,
    /// No progress display and no notes (the summary and failures are still printed)
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Inlinable intrinsics catalogue (default: the catalogue built into the binary)
    #[arg(short = 'c', value_name = "FILE")]
    catalogue: Option<PathBuf>,
    /// Non-inlinable intrinsics catalogue
    #[arg(short = 'N', value_name = "FILE")]
    noninlinable_catalogue: Option<PathBuf>,
    /// Schema directory: the outputs' schemaLocation becomes DIR/<schema file>
    #[arg(short = 's', value_name = "DIR")]
    schema_dir: Option<String>,
    /// Strict input checking, as for the single-file commands
    #[arg(long)]
    strict: bool,
    /// Force these variables passive (space separated names), as for the single-file commands
    #[arg(short = 'p', value_name = "NAMES")]
    passive: Option<String>,
    /// Name decoration style of the front end (OPEN64_STYLE or NO_STYLE), for -p
    #[arg(short = 'F', value_name = "STYLE", value_parser = ["OPEN64_STYLE", "NO_STYLE"])]
    decoration_style: Option<String>,
    /// Zero the derivatives of active local variables at routine entry (tangent, adjoint)
    #[arg(short = 'D')]
    init_derivatives: bool,
    /// Make passive the locals activity analysis proves passive (tangent, adjoint), as for the
    /// single-file commands
    #[arg(long)]
    activity_analysis: bool,
    /// Routines with hand-written wrappers (space separated names)
    #[arg(short = 'w', value_name = "NAMES")]
    wrappers: Option<String>,
    /// Rename every routine with a body to <prefix>name, and the calls to it
    #[arg(short = 'r')]
    rename_all: bool,
    /// Statement-level preaccumulation (tangent, adjoint)
    #[arg(short = 'S')]
    statement_level: bool,
    /// How elimination sequences are chosen (tangent)
    #[arg(long, value_enum, value_name = "METHOD", default_value = "best")]
    elimination: EliminationArg,
    /// Every formal argument intent(inout) (adjoint)
    #[arg(short = 'I')]
    all_intents_inout: bool,
    /// Checkpoint formals only ever passed constants (adjoint)
    #[arg(short = 'P')]
    checkpoint_constant_formals: bool,
    /// Restore checkpoints in store order (adjoint)
    #[arg(short = 'f')]
    file_order: bool,
    /// What the forward sweep tapes for each sequence, as for `adjoint`
    #[arg(long, value_enum, value_name = "STRATEGY", default_value = "balanced")]
    tape: xaifbooster::passes::adjoint::TapeStrategy,
    /// No to-be-recorded analysis, as for `adjoint`
    #[arg(long)]
    no_tbr: bool,
    /// Which loops the reverse sweep runs backwards from their bounds, as for `adjoint`
    #[arg(long, value_enum, value_name = "POLICY", default_value = "structural")]
    loop_reversal: xaifbooster::passes::adjoint::address::LoopPolicy,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum BatchModeArg {
    Identity,
    Tangent,
    Adjoint,
}

#[derive(Args, Debug)]
struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

fn run_batch(args: &BatchArgs) -> Outcome {
    use std::io::IsTerminal;
    use xaifbooster::cli::batch::{self, FileStatus, Settings, Sources, VerifySettings};
    use xaifbooster::interp::Template;
    use xaifbooster::passes::adjoint::AdjointConfig;
    use xaifbooster::passes::passivate::Decorations;
    use xaifbooster::passes::type_change::TypeChangeConfig;

    let mode = match args.mode {
        BatchModeArg::Identity => batch::Mode::Identity,
        BatchModeArg::Tangent => batch::Mode::Tangent,
        BatchModeArg::Adjoint => batch::Mode::Adjoint,
    };
    let usage = |message: String| -> ! {
        let mut command = Cli::command();
        command.build();
        let command = command.find_subcommand_mut("batch").expect("a subcommand of ours");
        command.error(clap::error::ErrorKind::ArgumentConflict, message).exit()
    };
    if args.verify && mode == batch::Mode::Identity {
        usage("--verify needs derivatives: use it with tangent or adjoint".into());
    }
    if args.inputs.iter().any(|p| p.as_os_str() == "-") {
        usage("batch reads named files; give their names on standard input with --list -".into());
    }
    let mut notes = Vec::new();
    if mode != batch::Mode::Adjoint {
        for (given, switch) in [
            (args.all_intents_inout, "-I"),
            (args.checkpoint_constant_formals, "-P"),
            (args.file_order, "-f"),
            (args.no_tbr, "--no-tbr"),
        ] {
            if given {
                notes.push(format!("{switch} matters only to the adjoint mode: no effect"));
            }
        }
    }
    if mode == batch::Mode::Identity
        && (args.init_derivatives
            || args.activity_analysis
            || args.wrappers.is_some()
            || args.rename_all
            || args.statement_level)
    {
        notes.push("-D, --activity-analysis, -w, -r and -S act in tangent and adjoint only: no effect".into());
    }
    if !args.quiet {
        for note in &notes {
            let _ = writeln!(std::io::stderr(), "xaifbooster: note: {note}");
        }
    }

    // Everything that can fail for the whole batch fails before any file is transformed; the
    // output directory is made before the report is prepared, which may go into it.
    if std::fs::metadata(&args.out_dir).is_ok_and(|m| !m.is_dir()) {
        return Err(batch::BatchError::OutDir { path: args.out_dir.clone() }.into());
    }
    let mut catalogue = match &args.catalogue {
        Some(path) => {
            let (bytes, name) = read_input(path)?;
            Catalogue::parse(&bytes, &name).map_err(|e| anyhow::anyhow!("{e}"))?
        }
        None => Catalogue::builtin().clone(),
    };
    if let Some(path) = &args.noninlinable_catalogue {
        let (bytes, name) = read_input(path)?;
        catalogue.merge_noninlinable(&bytes, &name).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let mut paths = args.inputs.clone();
    if let Some(list) = &args.list {
        let (bytes, name) = read_input(list)?;
        let text = String::from_utf8(bytes).with_context(|| format!("{name}: not UTF-8 text"))?;
        paths.extend(batch::parse_list(&text));
    }
    let sources = Sources { paths, patterns: args.name.clone() };
    let mut jobs = batch::collect(&sources, mode, &args.out_dir)?;
    let total_inputs = jobs.len();
    if let Some(shard) = args.shard {
        jobs = batch::shard(jobs, shard);
    }
    std::fs::create_dir_all(&args.out_dir).with_context(|| format!("cannot create {}", args.out_dir.display()))?;
    let report_output = args.report.as_ref().map(output::prepare).transpose()?;

    let words = |list: &Option<String>| -> Vec<String> {
        list.as_deref().map(|l| l.split_whitespace().map(str::to_owned).collect()).unwrap_or_default()
    };
    let pipeline = xaifbooster::pipeline::Config {
        passive: words(&args.passive),
        decorations: match args.decoration_style.as_deref() {
            Some("NO_STYLE") => Decorations::None,
            _ => Decorations::Open64,
        },
        initialize_derivatives: args.init_derivatives,
        activity_analysis: args.activity_analysis,
        type_change: TypeChangeConfig { wrappers: words(&args.wrappers), rename_all: args.rename_all },
        tangent: TangentConfig {
            preaccumulation: if args.statement_level {
                Preaccumulation::Statement
            } else {
                Preaccumulation::BasicBlock
            },
            elimination: args.elimination.method(),
            ..TangentConfig::default()
        },
        adjoint: AdjointConfig {
            all_intents_inout: args.all_intents_inout,
            checkpoint_constant_formals: args.checkpoint_constant_formals,
            file_order_restore: args.file_order,
            tape: args.tape,
            record_everything: args.no_tbr,
            loops: args.loop_reversal,
            ..Default::default()
        },
    };
    let settings = Settings {
        mode,
        pipeline,
        catalogue: &catalogue,
        strict: args.strict,
        schema_dir: args.schema_dir.clone(),
        verify: args.verify.then(|| VerifySettings {
            template: if args.template == "split" { Template::Split } else { Template::Joint },
            rtol: args.rtol,
        }),
    };

    // A bar on a terminal; otherwise one line per file, for logs of cluster jobs.
    let total = jobs.len() as u64;
    let bar = (!args.quiet && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} ({eta}) {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let done = std::sync::atomic::AtomicU64::new(0);
    let progress = |file: &batch::FileReport| {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let failed = file.status == FileStatus::Failed;
        match &bar {
            Some(bar) => {
                if failed {
                    bar.println(format!("FAILED {}", file.input.display()));
                }
                bar.set_message(file.input.display().to_string());
                bar.inc(1);
            }
            None if !args.quiet || failed => {
                let verdict = file.verify.as_ref().map(|v| format!(" verify {}", v.status)).unwrap_or_default();
                let status = if failed { "FAILED" } else { "ok" };
                let _ = writeln!(
                    std::io::stderr(),
                    "[{n}/{total}] {status} {} ({:.1} ms){verdict}",
                    file.input.display(),
                    file.elapsed_ms
                );
            }
            None => {}
        }
    };
    let report = batch::run(&jobs, &settings, args.jobs.unwrap_or(0), args.shard, &progress)?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    print_batch_summary(&report, total_inputs);
    if let Some(mut pending) = report_output {
        pending.stage(report.json().into_bytes())?;
        pending.commit()?;
    }
    Ok(if report.failed() { Err(Reported(1)) } else { Ok(()) })
}

/// One screen: totals, the verifier's verdicts, and the first failures with their errors.
fn print_batch_summary(report: &xaifbooster::cli::batch::BatchReport, total_inputs: usize) {
    use xaifbooster::cli::batch::FileStatus;
    const SHOWN: usize = 10;
    let s = &report.summary;
    let mut text = String::new();
    let shard =
        report.shard.map(|sh| format!(" (shard {}/{} of {total_inputs})", sh.index, sh.count)).unwrap_or_default();
    text.push_str(&format!(
        "batch {}: {} files{shard}, {} ok, {} failed in {:.2} s on {} threads; {:.1} MB read, {:.1} MB written\n",
        serde_json::to_value(report.mode).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default(),
        s.files,
        s.ok,
        s.failed,
        s.elapsed_ms / 1e3,
        report.jobs,
        s.input_bytes as f64 / 1e6,
        s.output_bytes as f64 / 1e6,
    ));
    if let Some(verdicts) = &s.verified {
        let parts: Vec<String> = verdicts.iter().map(|(word, n)| format!("{n} {word}")).collect();
        text.push_str(&format!(
            "verify: {}\n",
            if parts.is_empty() { "nothing verified".into() } else { parts.join(", ") }
        ));
        let mismatches: Vec<_> =
            report.files.iter().filter(|f| f.verify.as_ref().is_some_and(|v| v.is_mismatch())).collect();
        for file in mismatches.iter().take(SHOWN) {
            let detail = file.verify.as_ref().map(|v| v.detail.as_str()).unwrap_or_default();
            text.push_str(&format!("  {}: {detail}\n", file.output.display()));
        }
    }
    let failed: Vec<_> = report.files.iter().filter(|f| f.status == FileStatus::Failed).collect();
    for file in failed.iter().take(SHOWN) {
        let first = file.error.as_deref().and_then(|e| e.lines().next()).unwrap_or("failed");
        let more = file.error.as_deref().map_or(0, |e| e.lines().count().saturating_sub(1));
        let more = if more > 0 { format!(" (and {more} more findings)") } else { String::new() };
        text.push_str(&format!("  {first}{more}\n"));
    }
    if failed.len() > SHOWN {
        text.push_str(&format!("  … and {} more failed files (see --report)\n", failed.len() - SHOWN));
    }
    let _ = std::io::stderr().write_all(text.as_bytes());
}

fn run_completions(args: &CompletionsArgs) -> Outcome {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "xaifbooster", &mut script);
    print_stdout(String::from_utf8_lossy(&script).into_owned())?;
    Ok(Ok(()))
}

fn run_man() -> Outcome {
    let mut roff = Vec::new();
    let mut command = Cli::command();
    // Builds the subcommands' deferred arguments (see `Command`).
    command.build();
    clap_mangen::Man::new(command.clone()).render(&mut roff)?;
    // Each subcommand's synopsis and switches follow the main page, so one page documents
    // every switch.
    for sub in command.get_subcommands().filter(|sub| sub.get_name() != "help") {
        let sub = sub.clone().bin_name(format!("xaifbooster {}", sub.get_name()));
        let title = sub.get_name().to_uppercase();
        let about = sub.get_long_about().or(sub.get_about()).map(|a| a.to_string()).unwrap_or_default();
        writeln!(roff, ".SH \"{title}\"\n{}", roff_escape(&about))?;
        let man = clap_mangen::Man::new(sub);
        man.render_synopsis_section(&mut roff)?;
        man.render_options_section(&mut roff)?;
    }
    print_stdout(String::from_utf8_lossy(&roff).into_owned())?;
    Ok(Ok(()))
}

/// Text for a roff paragraph: a backslash doubled, a leading dot or quote protected.
fn roff_escape(text: &str) -> String {
    text.lines()
        .map(|line| {
            let line = line.replace('\\', "\\e");
            if line.starts_with('.') || line.starts_with('\'') { format!("\\&{line}") } else { line }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn run_dot(args: &DotArgs) -> Outcome {
    use xaifbooster::cli::dot;
    let mut output = output::prepare(&args.output.clone().unwrap_or(Destination::Stdout))?;
    let (input, name) = read_input(&args.file)?;
    let catalogue = Catalogue::builtin();
    let mut call_graph = match xaif::read(&input, &name, &ReadOptions { strict: false, catalogue }) {
        Ok(read) => {
            if !args.quiet {
                print_findings(&read.warnings);
            }
            read.call_graph
        }
        Err(error) => {
            print_findings(error.findings());
            return Ok(Err(Reported(1)));
        }
    };
    let failed = |error: dot::DotError| -> Outcome {
        let _ = writeln!(std::io::stderr(), "xaifbooster: {name}: {error}");
        Ok(Err(Reported(1)))
    };
    let routine = match args.routine.as_deref().map(|r| dot::find_routine(&call_graph, r)).transpose() {
        Ok(routine) => routine,
        Err(error) => return failed(error),
    };
    let text = match args.what {
        DotWhat::Callgraph => dot::call_graph(&call_graph),
        DotWhat::Cfg => {
            let routine = match routine.map_or_else(|| dot::top_routine(&call_graph), Ok) {
                Ok(routine) => routine,
                Err(error) => return failed(error),
            };
            match dot::control_flow(&call_graph, routine, args.placeholder.as_deref()) {
                Ok(text) => text,
                Err(error) => return failed(error),
            }
        }
        DotWhat::Expression => {
            let Some(statement) = &args.statement else {
                return failed(dot::DotError::NoStatement {
                    id: String::new(),
                    place: " (give --statement ID)".into(),
                });
            };
            match dot::expression_graph(&call_graph, routine, statement) {
                Ok(text) => text,
                Err(error) => return failed(error),
            }
        }
        DotWhat::Lcg => {
            // Without --routine: every routine's sequences.
            let routine_name = routine.map(|r| call_graph.symbol_name(call_graph.routines[r].symbol()).to_owned());
            let preaccumulation = match args.preaccumulation {
                PreaccumulationArg::Statement => Preaccumulation::Statement,
                PreaccumulationArg::BasicBlock => Preaccumulation::BasicBlock,
            };
            let config = xaifbooster::pipeline::Config::with_tangent(TangentConfig {
                preaccumulation,
                elimination: args.elimination.method(),
                record_graphs: true,
                ..TangentConfig::default()
            });
            let report = match xaifbooster::pipeline::tangent(&mut call_graph, catalogue, &config) {
                Ok(report) => report,
                Err(error) => {
                    let _ = writeln!(std::io::stderr(), "xaifbooster: {name}: {error}");
                    return Ok(Err(Reported(1)));
                }
            };
            match dot::select_sequences(
                &report.tangent.sequences,
                routine_name.as_deref(),
                args.block.as_deref(),
                args.statement.as_deref(),
            ) {
                Ok(sequences) => dot::linearized_graphs(&sequences),
                Err(error) => return failed(error),
            }
        }
    };
    let bytes = if args.svg {
        match dot::render_svg(&text) {
            Ok(svg) => svg,
            Err(error) => return failed(error),
        }
    } else {
        text.into_bytes()
    };
    output.stage(bytes)?;
    output.commit()?;
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    /// clap checks its definitions (unique short switches among them) only in debug builds;
    /// this checks them in every build.
    #[test]
    fn the_switches_are_consistent() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }

    /// The default workers keep the memory bounds: the tangent's three times the input below
    /// 64 MiB, where its workers would break it, on any number of cores; the adjoint's five
    /// times with at most three workers, one below 8 MiB.
    #[test]
    fn default_workers_follow_the_memory_bounds() {
        use super::Workers;
        const MIB: usize = 1 << 20;
        for cores in [1, 2, 4, 8, 64] {
            assert_eq!(Workers::Tangent.on(cores, 16 * MIB), 0, "{cores} cores");
            assert_eq!(Workers::None.on(cores, 256 * MIB), 0, "{cores} cores");
            assert_eq!(Workers::Adjoint.on(cores, 256 * MIB), cores.saturating_sub(1).min(3), "{cores} cores");
            assert_eq!(Workers::Adjoint.on(cores, 2 * MIB), usize::from(cores >= 2), "{cores} cores");
        }
        assert_eq!(Workers::Tangent.on(2, 64 * MIB), 0);
        assert_eq!(Workers::Tangent.on(4, 64 * MIB), 2);
        assert_eq!(Workers::Tangent.on(64, 1024 * MIB), 4);
    }
}
