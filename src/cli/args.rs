//! The command line's switches, as clap reads them: every subcommand's arguments and the values
//! they take. What a command does with them lives in its own module; the help text and the
//! manual come from the comments here.

// The field comments are help text first: `<prefix>name` and `DIR/<schema file>` are meant
// literally there, not as HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::output::Destination;
use crate::passes::elimination::Method;

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
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Switches that act only in the adjoint mode (or, `-u -U -t`, only in the original's).
const ADJOINT_ONLY: [&str; 6] =
    ["all_intents_inout", "checkpoint_constant_formals", "file_order", "ask", "ignore_violations", "top_routine"];
/// Switches that act only in the tangent mode.
const TANGENT_ONLY: [&str; 2] = ["inline_propagators", "counters"];
/// Pass switches that act in the differentiating modes, not in `identity`.
const DIFFERENTIATION_ONLY: [&str; 4] = ["init_derivatives", "activity_analysis", "wrappers", "rename_all"];

/// The command line as clap reads it, each mode's help showing only the switches that act in
/// it. The others are still accepted, as the original drivers accept every switch, and a
/// note says they do nothing; `tangent --help` listing `-I` would only mislead.
pub fn command() -> clap::Command {
    fn hidden(mut command: clap::Command, ids: &[&[&str]]) -> clap::Command {
        for id in ids.iter().flat_map(|list| list.iter()) {
            if command.get_arguments().any(|a| a.get_id() == *id) {
                command = command.mut_arg(*id, |a| a.hide(true));
            }
        }
        command
    }
    // Each keeps its subcommand's arguments deferred (see `Command`).
    fn identity(c: clap::Command) -> clap::Command {
        hidden(TransformArgs::augment_args(c), &[&ADJOINT_ONLY, &DIFFERENTIATION_ONLY])
    }
    fn tangent(c: clap::Command) -> clap::Command {
        hidden(TangentArgs::augment_args(c), &[&ADJOINT_ONLY])
    }
    fn adjoint(c: clap::Command) -> clap::Command {
        hidden(AdjointArgs::augment_args(c), &[&TANGENT_ONLY])
    }
    fn trace(c: clap::Command) -> clap::Command {
        hidden(TransformArgs::augment_args(c), &[&ADJOINT_ONLY, &["init_derivatives"]])
    }
    <Cli as clap::CommandFactory>::command()
        .mut_subcommand("identity", |c| c.defer(identity))
        .mut_subcommand("tangent", |c| c.defer(tangent))
        .mut_subcommand("adjoint", |c| c.defer(adjoint))
        .mut_subcommand("trace", |c| c.defer(trace))
}

impl Cli {
    /// Parses `args` with [`command`]; a usage error ends the process (exit 2), as clap does.
    pub fn parse_with_hidden_switches(args: Vec<std::ffi::OsString>) -> Cli {
        let matches = command().get_matches_from(args);
        <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

/// Each subcommand's arguments are built only when it runs (or when help, completions or the
/// manual ask for them): building all of them cost about 0.4 M instructions per process, a
/// tenth of transforming a small corpus file. (Deferred, an `Args` struct's doc comment would
/// replace its subcommand's description: theirs are plain comments.)
#[derive(Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Parse and unparse: the original engine's "system" driver
    Identity(TransformArgs),
    /// Check XAIF files without transforming them; prints every finding
    Validate(ValidateArgs),
    /// Tangent-linear mode: the original BasicBlockPreaccumulation driver
    Tangent(TangentArgs),
    /// Adjoint mode: the original BasicBlockPreaccumulationReverse driver (one replacement list
    /// per routine for OpenAD's joint or split reversal templates)
    Adjoint(AdjointArgs),
    /// Trace mode: the original TraceDiff driver. Inserts calls of OpenAD's tracing routines
    /// (oad_trace_call, _loop, _branch, _CFval, …), so that running the program writes an XML
    /// trace of its calls, loops and branches; one replacement list per routine for the
    /// tracing_subroutine_template
    Trace(TransformArgs),
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
    /// Compare two control-flow traces (OpenAD's OAD_trace format, as `run --trace` writes
    /// them) and report the first divergence: the path to it, what differs and the events
    /// around it. Exit 0 when they are equal, 1 when they differ or one is malformed
    TraceDiff(TraceDiffArgs),
    /// Stand in for OpenAD's drivers: link this binary as oadDriver into the identity, tangent,
    /// adjoint and trace driver directories below DIR ($XAIFBOOSTERROOT); called through such a
    /// link, it runs that driver's mode with the original's switches
    InstallDrivers(InstallDriversArgs),
}

#[derive(Args, Debug)]
pub struct InstallDriversArgs {
    /// OpenAD's $XAIFBOOSTERROOT: the links go to DIR/xaifBooster/system/driver/oadDriver and
    /// DIR/xaifBooster/algorithms/{BasicBlockPreaccumulation,BasicBlockPreaccumulationReverse,
    /// TraceDiff}/driver/oadDriver. A file
    /// already there that is not such a link is left alone, and nothing is installed
    #[arg(value_name = "DIR")]
    pub(crate) dir: PathBuf,
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// XAIF file (`-` standard input)
    pub(crate) file: PathBuf,
    /// Print JSON instead of text
    #[arg(long)]
    pub(crate) json: bool,
    /// Independent variables, comma separated (default: the top routines' real formals of
    /// intent in or inout)
    #[arg(long, value_delimiter = ',')]
    pub(crate) independents: Vec<String>,
    /// Dependent variables, comma separated (default: the top routines' real formals of
    /// intent out or inout)
    #[arg(long, value_delimiter = ',')]
    pub(crate) dependents: Vec<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DotWhat {
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
pub struct DotArgs {
    /// XAIF file (`-` standard input)
    #[arg(value_name = "INPUT")]
    pub(crate) file: PathBuf,
    /// Which graph
    #[arg(long, value_enum, default_value = "callgraph")]
    pub(crate) what: DotWhat,
    /// The routine (default: the routine named head…, or the only one nothing calls); `foo`
    /// matches the front end's `foo__24`
    #[arg(long, value_name = "NAME")]
    pub(crate) routine: Option<String>,
    /// The statement (statement_id) of an expression graph, or whose sequence an lcg shows
    #[arg(long, value_name = "ID")]
    pub(crate) statement: Option<String>,
    /// lcg: only the sequences of this basic block (vertex_id); without --routine, --block and
    /// --statement an lcg view shows every sequence of every routine
    #[arg(long, value_name = "ID")]
    pub(crate) block: Option<String>,
    /// cfg of a replacement list: only this placeholder (1 original, 2 taping, 3 adjoint, …)
    #[arg(long, value_name = "N")]
    pub(crate) placeholder: Option<String>,
    /// lcg: preaccumulation per statement or per basic block, as in `tangent`
    #[arg(long, value_enum, default_value = "basic-block")]
    pub(crate) preaccumulation: PreaccumulationArg,
    /// lcg: the elimination method, as in `tangent`
    #[arg(long, value_enum, value_name = "METHOD", default_value = "best")]
    pub(crate) elimination: EliminationArg,
    /// Render SVG through Graphviz's `dot` program instead of writing DOT
    #[arg(long)]
    pub(crate) svg: bool,
    /// Output file; `-` or none: standard output
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<Destination>,
    /// No warnings on standard error
    #[arg(short = 'q', long)]
    pub(crate) quiet: bool,
}

#[derive(Args, Debug)]
pub struct TangentArgs {
    #[command(flatten)]
    pub(crate) common: TransformArgs,
    /// Where Jacobians are preaccumulated: per statement (-S of the original) or per basic block
    #[arg(long, value_enum, default_value = "basic-block")]
    pub(crate) preaccumulation: PreaccumulationArg,
    /// Statement-level preaccumulation, as the original engine's -S
    #[arg(short = 'S')]
    pub(crate) statement_level: bool,
    /// Write per-sequence statistics (graph sizes, operation counts, propagator entries) as JSON
    /// (`-` standard output); written like -o
    #[arg(long, value_name = "FILE")]
    pub(crate) stats: Option<Destination>,
    /// How elimination sequences are chosen: one method; the best of the heuristics that win on
    /// the corpus and synthetic inputs (best: greedy and edge elimination); or of all ten (every)
    #[arg(long, value_enum, value_name = "METHOD", default_value = "best")]
    pub(crate) elimination: EliminationArg,
    #[command(flatten)]
    pub(crate) original: PreaccumulationSwitches,
}

#[derive(Args, Debug)]
pub struct AdjointArgs {
    /// The common switches; -I and -P (in them) act here
    #[command(flatten)]
    pub(crate) common: TransformArgs,
    /// Statement-level preaccumulation, as the original engine's -S
    #[arg(short = 'S')]
    pub(crate) statement_level: bool,
    /// Write what the adjoint pushes (static counts per kind, per routine totals) and what
    /// TypeChange converted, as JSON
    #[arg(long, value_name = "FILE")]
    pub(crate) stats: Option<Destination>,
    /// What the forward sweep tapes for each sequence: its Jacobian factors, the values its
    /// partials read that may be overwritten (the reverse sweep computes the partials again),
    /// per sequence whichever pushes fewer words (best), or the values only where computing
    /// again costs at most two operations per word it saves (balanced)
    #[arg(long, value_enum, value_name = "STRATEGY", default_value = "balanced")]
    pub(crate) tape: crate::passes::adjoint::TapeStrategy,
    /// Tape every subscript and value as if anything could overwrite it (no to-be-recorded
    /// analysis), as the original engine does
    #[arg(long)]
    pub(crate) no_tbr: bool,
    /// Which loops the reverse sweep runs backwards from their bounds instead of counting
    /// their iterations: every loop whose shape allows it, or only those the front end marked
    /// `reversal="explicit"` (the original's simple loops)
    #[arg(long, value_enum, value_name = "POLICY", default_value = "structural")]
    pub(crate) loop_reversal: crate::passes::adjoint::address::LoopPolicy,
    #[command(flatten)]
    pub(crate) original: PreaccumulationSwitches,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub(crate) enum EliminationArg {
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
    pub(crate) fn method(self) -> Method {
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
pub(crate) enum PreaccumulationArg {
    Statement,
    BasicBlock,
}

// How the top routine is called (shared by `run` and `verify`).
#[derive(Args, Debug)]
pub(crate) struct DriverArgs {
    /// Top routine (default: the routine whose symbol starts with `head`)
    #[arg(long)]
    pub(crate) entry: Option<String>,
    /// Input values, comma separated (default: x(i) = i/2)
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub(crate) x: Option<Vec<f64>>,
    /// Argument positions of the inputs, comma separated [default: 1, none with --input-globals]
    #[arg(long, value_delimiter = ',')]
    pub(crate) inputs: Option<Vec<u32>>,
    /// Argument positions of the outputs, comma separated [default: 2, none with --output-globals]
    #[arg(long, value_delimiter = ',')]
    pub(crate) outputs: Option<Vec<u32>>,
    /// Global (module) variables that are inputs, after the input arguments, comma separated
    #[arg(long, value_delimiter = ',')]
    pub(crate) input_globals: Vec<String>,
    /// Global (module) variables that are outputs, after the output arguments, comma separated
    #[arg(long, value_delimiter = ',')]
    pub(crate) output_globals: Vec<String>,
    /// A value for another argument, as POS=VALUE (integer, real, true/false); repeatable
    #[arg(long = "arg", value_parser = crate::interp::verify::parse_fixed_arg)]
    pub(crate) fixed_args: Vec<(u32, crate::interp::verify::ArgValue)>,
    /// Number of inputs, for an input argument declared without bounds
    #[arg(long)]
    pub(crate) n: Option<usize>,
    /// Number of outputs, for an output argument declared without bounds
    #[arg(long)]
    pub(crate) m: Option<usize>,
    /// The value the passive stores the XAIF leaves out as Markers put in every element of
    /// the variables they define (by the du-ud chains) [default: none; guessed only if the
    /// original program cannot run without]
    #[arg(long, value_name = "VALUE", allow_hyphen_values = true)]
    pub(crate) passive_stores: Option<i64>,
    /// Run calls of routines without code as black boxes that change nothing [default: only
    /// if the original program cannot run otherwise]
    #[arg(long)]
    pub(crate) black_boxes: bool,
    /// Reversal template for adjoint files
    #[arg(long, value_parser = ["joint", "split"], default_value = "joint")]
    pub(crate) template: String,
    /// The most memory variables and tapes of one run may take: bytes, or with a unit K, M, G, T
    #[arg(long, value_name = "SIZE", default_value = "2G", value_parser = crate::interp::memory::parse_memory_size)]
    pub(crate) max_memory: usize,
    /// The most statements and control flow steps one run of the top routine may take: a loop
    /// that does not end stops there, named
    #[arg(long, value_name = "N", default_value_t = crate::interp::exec::DEFAULT_MAX_STEPS)]
    pub(crate) max_steps: u64,
    /// No notes or warnings on standard error (the inferred driver, zero Jacobians)
    #[arg(short = 'q', long)]
    pub(crate) quiet: bool,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// XAIF file (original, tangent-linear or adjoint)
    pub(crate) file: PathBuf,
    /// Write the control-flow trace of the run (the plain run of the top routine) to FILE, in
    /// OpenAD's OAD_trace format (`-` for standard output, which then carries only the trace):
    /// a traced program writes its own events, any other program the same events at the same
    /// points
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<std::ffi::OsString>,
    #[command(flatten)]
    pub(crate) driver: DriverArgs,
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The original program (tlm.in.xaif / adm.in.xaif)
    #[arg(long)]
    pub(crate) original: PathBuf,
    /// The transformed program
    #[arg(long)]
    pub(crate) transformed: PathBuf,
    /// What the transformed program is
    #[arg(long, value_parser = ["tangent", "adjoint"])]
    pub(crate) mode: String,
    /// A second transformed program of the other mode, for the dot-product test
    #[arg(long)]
    pub(crate) dot: Option<PathBuf>,
    /// Relative tolerance of the comparison
    #[arg(long, default_value_t = 1e-5)]
    pub(crate) rtol: f64,
    /// Print JSON instead of a table
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the control-flow trace of every run the verifier makes into DIR (created if
    /// missing), one file per run that completes: original-NNN-plain.xml for the original,
    /// transformed-NNN-tangent.xml or transformed-NNN-adjoint.xml for the transformed program,
    /// numbered in the order they run
    #[arg(long, value_name = "DIR")]
    pub(crate) trace: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) driver: DriverArgs,
}

#[derive(Args, Debug)]
pub struct TraceDiffArgs {
    /// The first trace (`-` for standard input)
    pub(crate) a: PathBuf,
    /// The second trace
    pub(crate) b: PathBuf,
    /// Print the report as JSON
    #[arg(long)]
    pub(crate) json: bool,
    /// Events of context shown before and after the divergence
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub(crate) context: usize,
}

// The switches of the original oadDriver binaries, so OpenAD's scripts can call us unchanged.
#[derive(Args, Debug)]
pub struct TransformArgs {
    /// Input XAIF file; `-` reads standard input
    #[arg(short = 'i', long = "input", value_name = "FILE", conflicts_with = "input_file")]
    pub(crate) input: Option<PathBuf>,
    /// The input file, given without -i; with neither, standard input when it is not a terminal
    #[arg(value_name = "INPUT")]
    pub(crate) input_file: Option<PathBuf>,
    /// Output file; `-` or none: standard output. A regular file is replaced (by a rename,
    /// keeping its mode) only when the run succeeds; devices and pipes are written as they are.
    /// The input file itself is refused unless --force
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<Destination>,
    /// Let -o replace the input file
    #[arg(long)]
    pub(crate) force: bool,
    /// Inlinable intrinsics catalogue (default: the catalogue built into the binary)
    #[arg(short = 'c', value_name = "FILE")]
    pub(crate) catalogue: Option<PathBuf>,
    /// Non-inlinable intrinsics catalogue
    #[arg(short = 'N', value_name = "FILE")]
    pub(crate) noninlinable_catalogue: Option<PathBuf>,
    /// Schema directory: the output's schemaLocation becomes DIR/<schema file>
    #[arg(short = 's', value_name = "DIR")]
    pub(crate) schema_dir: Option<String>,
    /// Validate the input against the schema, as the original's -v. Every run does: each
    /// finding is reported; what the original tolerated is a warning. Also names the
    /// inlinable intrinsics catalogue in use, and why outputs may differ without -c
    #[arg(short = 'v')]
    pub(crate) validate: bool,
    /// Strict input checking: refuse what older front ends wrote and the reference toolchain
    /// tolerated (a SubroutineCall without formalArgCount, duplicate edge ids, unknown
    /// attributes, statement ids naming no statement)
    #[arg(long)]
    pub(crate) strict: bool,
    /// Verbose output; the alias, du-ud and DO maps are always written (the schema requires them)
    #[arg(short = 'V')]
    pub(crate) verbose: bool,
    /// Force these variables passive (space separated names, without case; the front end's
    /// `_N` decoration is ignored unless -F NO_STYLE): their symbols and references become
    /// passive before TypeChange, which then converts at every call they take part in
    #[arg(short = 'p', value_name = "NAMES")]
    pub(crate) passive: Option<String>,
    /// Pessimistic black boxes: no effect, the transformations already assume an external
    /// routine may change what it is passed
    #[arg(short = 'b')]
    pub(crate) pessimistic_black_boxes: bool,
    /// Zero the derivatives of active local variables at routine entry, in a block after Entry
    /// (for OpenAD runtimes without default initialization)
    #[arg(short = 'D')]
    pub(crate) init_derivatives: bool,
    /// Make passive the locals our activity analysis proves passive (no independent reaches
    /// them, or they reach no dependent) though the front end flagged them active
    #[arg(long)]
    pub(crate) activity_analysis: bool,
    /// Routines with hand-written wrappers (space separated names): calls of these external
    /// routines go to <prefix>name with their arguments unconverted
    #[arg(short = 'w', value_name = "NAMES")]
    pub(crate) wrappers: Option<String>,
    /// Rename every routine with a body to <prefix>name, and the calls to it
    #[arg(short = 'r')]
    pub(crate) rename_all: bool,
    /// Name decoration style of the front end: OPEN64_STYLE (names end in `_N`, the default)
    /// or NO_STYLE; decides how -p names match symbols
    #[arg(short = 'F', value_name = "STYLE", value_parser = ["OPEN64_STYLE", "NO_STYLE"])]
    pub(crate) decoration_style: Option<String>,
    /// No warnings or notes on standard error (errors still; the debug log keeps everything)
    #[arg(short = 'q', long)]
    pub(crate) quiet: bool,
    #[command(flatten)]
    pub(crate) debug: DebugArgs,
    #[command(flatten)]
    pub(crate) reverse: ReverseSwitches,
}

// The original engine's debugging switches.
#[derive(Args, Debug)]
pub(crate) struct DebugArgs {
    /// Debug log file (`-` standard output): warnings, what each pass did, timings
    #[arg(short = 'd', value_name = "FILE")]
    pub(crate) debug_file: Option<Destination>,
    /// Debug groups to log, a sum of 1 WARNING, 4 DATA, 16 TIMING, 64 METRIC (errors always;
    /// 2, 8 and 32 log nothing here) [default with -d: 85, all]. Without -d, to standard error
    #[arg(short = 'g', value_name = "MASK")]
    pub(crate) debug_mask: Option<u32>,
    /// Narrow the debug log to these stages (space separated: cli validate read passivate
    /// init_derivatives type_change tangent adjoint write)
    #[arg(short = 'T', value_name = "TAGS")]
    pub(crate) tags: Option<String>,
    /// Format of the original's debugging graphs; xaifbooster draws none: no effect
    #[arg(short = 'G', value_name = "FORMAT", value_parser = ["ps", "svg"])]
    pub(crate) graphics_format: Option<String>,
    /// Viewer of the original's debugging graphs; no effect
    #[arg(short = 'B', value_name = "VIEWER")]
    pub(crate) viewer: Option<String>,
}

// Switches of the original's reversal algorithms, accepted by every transforming command so
// scripts run unchanged; -I and -P act in the adjoint mode, the others nowhere yet.
#[derive(Args, Debug)]
pub(crate) struct ReverseSwitches {
    /// Every formal argument intent(inout), as OpenAD's joint reversal wants (otherwise only the
    /// active ones); adjoint mode
    #[arg(short = 'I')]
    pub(crate) all_intents_inout: bool,
    /// Checkpoint formal arguments even where every call passes them a constant; adjoint mode
    #[arg(short = 'P')]
    pub(crate) checkpoint_constant_formals: bool,
    /// Restore checkpoints in the order they were stored (for a file-based, first-in-first-out
    /// checkpoint runtime; the default reverse order suits OpenAD's stacks and our verifier)
    #[arg(short = 'f')]
    pub(crate) file_order: bool,
    /// Ask about each variable violating the simple-loop restrictions (the original's address
    /// arithmetic; ours decides from the loop nest: no effect)
    #[arg(short = 'u')]
    pub(crate) ask: bool,
    /// Ignore all variables violating the simple-loop restrictions (the original's address
    /// arithmetic; ours decides from the loop nest: no effect)
    #[arg(short = 'U')]
    pub(crate) ignore_violations: bool,
    /// Top routine for the quasi-constant check (the original's address arithmetic; ours pushes
    /// quasi-constants once per loop nest: no effect)
    #[arg(short = 't', value_name = "NAME")]
    pub(crate) top_routine: Option<String>,
}

// Switches of the original's preaccumulation; the ones that tuned its elimination library are
// accepted with no effect.
#[derive(Args, Debug)]
pub(crate) struct PreaccumulationSwitches {
    /// N-ary Sax propagators: one Sax per propagated derivative over all its in-edges
    #[arg(short = 'n')]
    pub(crate) nary_sax: bool,
    /// Propagators as inlinable calls of OpenAD's runtime (setderiv_s0_s0, saxpy_s0_s0_s0, …);
    /// tangent only
    #[arg(short = 'H')]
    pub(crate) inline_propagators: bool,
    /// Runtime operation counters: each basic block ends with countmult(n) and countadd(n), its
    /// preaccumulation's multiplications and additions; tangent only
    #[arg(short = 'C')]
    pub(crate) counters: bool,
    /// Awareness of unit (1) and constant (2) edges in the original's elimination library: no
    /// effect
    #[arg(short = 'A', value_name = "LEVEL", value_parser = clap::value_parser!(u8).range(0..=2))]
    pub(crate) awareness: Option<u8>,
    /// Allow eliminations that keep the nontrivial edge count (original's library): no effect
    #[arg(short = 'm')]
    pub(crate) maintaining: bool,
    /// No alias check among left-hand sides of a sequence: a(i) after a(j) does not end it
    #[arg(short = 'Q')]
    pub(crate) no_alias_check: bool,
    /// Randomized heuristics of the original's library: no effect
    #[arg(short = 'a')]
    pub(crate) randomized: bool,
    /// Metric of the original's library, 0 operations or 1 scarcity: no effect (see --elimination)
    #[arg(short = 'M', value_name = "METRIC", value_parser = clap::value_parser!(u8).range(0..=1))]
    pub(crate) metric: Option<u8>,
    /// Reroutings in the original's library: no effect
    #[arg(short = 'R')]
    pub(crate) reroutings: bool,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// XAIF files to check (`-` standard input); every file is checked even when one cannot be read
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Strict: report what lenient reading forgives as errors
    #[arg(long)]
    pub(crate) strict: bool,
    /// Skip the activity check (real arguments as active as their formals, only passive reals
    /// passed to external routines, derivatives only of active symbols). Every output must pass
    /// it; front-end inputs (tlm.in.xaif, adm.in.xaif) need not, their mismatches are what the
    /// TypeChange pass converts
    #[arg(long)]
    pub(crate) skip_activity: bool,
    /// Errors only: no warnings
    #[arg(short = 'q', long)]
    pub(crate) quiet: bool,
}

#[derive(Args, Debug)]
pub struct BatchArgs {
    /// What to do to every input
    #[arg(value_enum)]
    pub(crate) mode: BatchModeArg,
    /// Input files and directories; a directory is searched, recursively, for the files --name
    /// matches
    #[arg(value_name = "INPUT")]
    pub(crate) inputs: Vec<PathBuf>,
    /// A file listing inputs (files or directories), one a line; `#` comments and blank lines
    /// skipped; `-` standard input
    #[arg(long, value_name = "FILE")]
    pub(crate) list: Option<PathBuf>,
    /// Where outputs go: each input's path relative to the directory given (or, for files named
    /// one by one, to their common directory), `.in.xaif`/`.xaif` becoming `.out.xaif`
    #[arg(long, value_name = "DIR", required = true)]
    pub(crate) out_dir: PathBuf,
    /// File names a directory's files must match (`*`, `?`); repeatable [default: tlm.in.xaif
    /// for tangent, adm.in.xaif for adjoint, *.xaif for identity]
    #[arg(long, value_name = "PATTERN")]
    pub(crate) name: Vec<String>,
    /// Write the JSON report here (`-` standard output): per file its status, located error,
    /// time, sizes, operation counts and pushes (and the verifier's verdict)
    #[arg(long, value_name = "FILE")]
    pub(crate) report: Option<Destination>,
    /// Verify each output's derivatives against finite differences of its input, as `verify`
    /// does without driver flags (tangent and adjoint)
    #[arg(long)]
    pub(crate) verify: bool,
    /// Reversal template the verifier runs adjoint outputs with
    #[arg(long, value_parser = ["joint", "split"], default_value = "joint")]
    pub(crate) template: String,
    /// Relative tolerance of the verifier
    #[arg(long, default_value_t = 1e-5)]
    pub(crate) rtol: f64,
    /// The most statements and control flow steps one run of the verifier may take
    #[arg(long, value_name = "N", default_value_t = crate::interp::exec::DEFAULT_MAX_STEPS)]
    pub(crate) max_steps: u64,
    /// Only the K-th of N slices of the inputs (sorted by path, every N-th from the K-th): for
    /// job arrays and machines sharing a corpus
    #[arg(long, value_name = "K/N")]
    pub(crate) shard: Option<crate::cli::batch::Shard>,
    /// Threads [default: one per core]; the outputs are the same for any number
    #[arg(short = 'j', long, value_name = "N")]
    pub(crate) jobs: Option<usize>,
    /// No progress display and no notes (the summary and failures are still printed)
    #[arg(short = 'q', long)]
    pub(crate) quiet: bool,
    /// Inlinable intrinsics catalogue (default: the catalogue built into the binary)
    #[arg(short = 'c', value_name = "FILE")]
    pub(crate) catalogue: Option<PathBuf>,
    /// Non-inlinable intrinsics catalogue
    #[arg(short = 'N', value_name = "FILE")]
    pub(crate) noninlinable_catalogue: Option<PathBuf>,
    /// Schema directory: the outputs' schemaLocation becomes DIR/<schema file>
    #[arg(short = 's', value_name = "DIR")]
    pub(crate) schema_dir: Option<String>,
    /// Strict input checking, as for the single-file commands
    #[arg(long)]
    pub(crate) strict: bool,
    /// Force these variables passive (space separated names), as for the single-file commands
    #[arg(short = 'p', value_name = "NAMES")]
    pub(crate) passive: Option<String>,
    /// Name decoration style of the front end (OPEN64_STYLE or NO_STYLE), for -p
    #[arg(short = 'F', value_name = "STYLE", value_parser = ["OPEN64_STYLE", "NO_STYLE"])]
    pub(crate) decoration_style: Option<String>,
    /// Zero the derivatives of active local variables at routine entry (tangent, adjoint)
    #[arg(short = 'D')]
    pub(crate) init_derivatives: bool,
    /// Make passive the locals activity analysis proves passive (tangent, adjoint), as for the
    /// single-file commands
    #[arg(long)]
    pub(crate) activity_analysis: bool,
    /// Routines with hand-written wrappers (space separated names)
    #[arg(short = 'w', value_name = "NAMES")]
    pub(crate) wrappers: Option<String>,
    /// Rename every routine with a body to <prefix>name, and the calls to it
    #[arg(short = 'r')]
    pub(crate) rename_all: bool,
    /// Statement-level preaccumulation (tangent, adjoint)
    #[arg(short = 'S')]
    pub(crate) statement_level: bool,
    /// How elimination sequences are chosen (tangent)
    #[arg(long, value_enum, value_name = "METHOD", default_value = "best")]
    pub(crate) elimination: EliminationArg,
    /// Every formal argument intent(inout) (adjoint)
    #[arg(short = 'I')]
    pub(crate) all_intents_inout: bool,
    /// Checkpoint formals only ever passed constants (adjoint)
    #[arg(short = 'P')]
    pub(crate) checkpoint_constant_formals: bool,
    /// Restore checkpoints in store order (adjoint)
    #[arg(short = 'f')]
    pub(crate) file_order: bool,
    /// What the forward sweep tapes for each sequence, as for `adjoint`
    #[arg(long, value_enum, value_name = "STRATEGY", default_value = "balanced")]
    pub(crate) tape: crate::passes::adjoint::TapeStrategy,
    /// No to-be-recorded analysis, as for `adjoint`
    #[arg(long)]
    pub(crate) no_tbr: bool,
    /// Which loops the reverse sweep runs backwards from their bounds, as for `adjoint`
    #[arg(long, value_enum, value_name = "POLICY", default_value = "structural")]
    pub(crate) loop_reversal: crate::passes::adjoint::address::LoopPolicy,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BatchModeArg {
    Identity,
    Tangent,
    Adjoint,
    Trace,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

#[cfg(test)]
mod tests {
    /// clap checks its definitions (unique short switches among them) only in debug builds;
    /// this checks them in every build.
    #[test]
    fn the_switches_are_consistent() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }
}
