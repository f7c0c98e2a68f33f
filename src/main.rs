//! Command line of xaifbooster. Parses arguments, runs the library, prints; nothing else.

use std::borrow::Cow;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, CommandFactory, Parser, Subcommand};

use xaifbooster::cli::log::{self, DebugLog, Group, summarise};
use xaifbooster::driver::{self, Failure, Mode};
use xaifbooster::output::{self, Destination, Output, OutputError};
use xaifbooster::pipeline::Config;
use xaifbooster::passes::elimination::Method;
use xaifbooster::passes::passivate::Passivation;
use xaifbooster::passes::tangent::{Preaccumulation, TangentConfig};
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::validate::{ValidateOptions, validate};
use xaifbooster::xaif::{self, Diagnostic, ReadOptions, Severity};

/// The object model is many small allocations (expression vertices, references, names);
/// mimalloc serves them faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

/// A failure already reported to the user; carries the exit code.
struct Reported(u8);

type Outcome = Result<Result<(), Reported>>;

/// The exit status of a run whose reader went away (`| head`): what a shell reports for a
/// program ended by SIGPIPE, as the original engine or any C filter would be; no message.
const BROKEN_PIPE: u8 = 128 + 13;

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(run())
}

/// Runs the command line's command; its exit status.
fn run() -> u8 {
    let cli = Cli::parse();
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
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok((bytes, path.display().to_string()))
}

/// Writes text to standard output, as the commands without `-o` do.
fn print_stdout(text: String) -> Result<()> {
    Ok(commit_bytes(Output::create(&Destination::Stdout)?, text.as_bytes())?)
}

/// Writes `bytes` to a prepared output and commits it.
fn commit_bytes(mut output: Output, bytes: &[u8]) -> Result<(), OutputError> {
    if let Err(error) = output.write_all(bytes) {
        return Err(output.error(error));
    }
    output.commit()
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
    let config = args.pipeline_config(TangentConfig::default());
    transform(Mode::Identity, args, config, Vec::new(), None)
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

fn run_adjoint(args: &AdjointArgs) -> Outcome {
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

/// Runs a transforming mode through the driver, with the run's messages and debug log.
fn transform(
    mode: Mode,
    args: &TransformArgs,
    config: Config,
    notes: Vec<String>,
    stats: Option<&Destination>,
) -> Outcome {
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
    let mut output = Output::create(&args.output())?;
    let stats = stats.map(Output::create).transpose()?;
    let catalogue = match catalogue(args, session)? {
        Ok(catalogue) => catalogue,
        Err(reported) => return Ok(Err(reported)),
    };
    let (input, file) = read_input(args.input())?;
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
    }
    let mut outputs = vec![output];
    if let Some(mut stats) = stats {
        let json = if mode == Mode::Adjoint { run.report.adjoint_json() } else { run.report.tangent.to_json() };
        if let Err(error) = stats.write_all(json.as_bytes()) {
            return Err(stats.error(error).into());
        }
        outputs.push(stats);
    }
    output::commit_all(outputs)?;
    Ok(Ok(()))
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
fn located_failure(input: &[u8], file: &str, error: &xaifbooster::pipeline::PipelineError) -> String {
    match error.location() {
        Some((routine, statement)) => {
            xaifbooster::xaif::validate::locate(input, file, routine, None, statement, error.to_string()).to_string()
        }
        None => format!("{file}: {error}"),
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
    let report_output = args.report.as_ref().map(Output::create).transpose()?;

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
    if let Some(pending) = report_output {
        commit_bytes(pending, report.json().as_bytes())?;
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
    let output = Output::create(&args.output.clone().unwrap_or(Destination::Stdout))?;
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
    commit_bytes(output, &bytes)?;
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
