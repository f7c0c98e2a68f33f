//! Command line of xaifbooster. Parses arguments, runs the library, prints; nothing else.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use xaifbooster::ir::CallGraph;
use xaifbooster::passes::elimination::Method;
use xaifbooster::passes::tangent::{Preaccumulation, TangentConfig};
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::validate::{ValidateOptions, validate};
use xaifbooster::xaif::{self, Diagnostic, ReadOptions, Severity, WriteOptions};

/// The object model is many small allocations (expression vertices, references, names);
/// mimalloc serves them markedly faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "xaifbooster",
    version,
    about = "Transformation engine for XAIF, the XML format of the OpenAD automatic differentiation toolchain",
    long_about = "Transformation engine for XAIF, the XML format of the OpenAD automatic differentiation \
toolchain. Reads XAIF, runs the passes of a mode and writes XAIF in the conventions of the original \
xaifBooster, so it can stand in for OpenAD's oadDriver binaries.\n\n\
Exit codes: 0 success, 1 bad input (each finding printed as file:line:column: element: message), \
2 usage error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and unparse: the original engine's "system" driver
    Identity(TransformArgs),
    /// Check XAIF files without transforming them; prints every finding
    Validate(ValidateArgs),
    /// Tangent-linear mode: the original BasicBlockPreaccumulation driver
    Tangent(TangentArgs),
    /// Execute a routine of an XAIF file and print its outputs (and derivatives of a
    /// transformed file)
    Run(RunArgs),
    /// Compare the derivatives of a transformed XAIF file with finite differences of the original
    Verify(VerifyArgs),
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
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
    /// How elimination sequences are chosen: one method, or the best of all heuristics
    #[arg(long, value_enum, value_name = "METHOD", default_value = "best")]
    elimination: EliminationArg,
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
    Exact,
    Greedy,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum PreaccumulationArg {
    Statement,
    BasicBlock,
}

/// How the top routine is called (shared by `run` and `verify`).
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
}

impl DriverArgs {
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

/// The switches of the original oadDriver binaries, so OpenAD's scripts can call us unchanged.
#[derive(Args, Debug)]
struct TransformArgs {
    /// Input XAIF file
    #[arg(short = 'i', value_name = "FILE")]
    input: PathBuf,
    /// Output file (default: standard output); written to a temporary file and renamed,
    /// so a failed run leaves an existing file untouched
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Inlinable intrinsics catalogue (default: the catalogue built into the binary)
    #[arg(short = 'c', value_name = "FILE")]
    catalogue: Option<PathBuf>,
    /// Non-inlinable intrinsics catalogue
    #[arg(short = 'N', value_name = "FILE")]
    noninlinable_catalogue: Option<PathBuf>,
    /// Schema directory: the output's schemaLocation becomes DIR/<schema file>
    #[arg(short = 's', value_name = "DIR")]
    schema_dir: Option<String>,
    /// Strict input checking: refuse what older front ends wrote and the reference toolchain
    /// tolerated (a SubroutineCall without formalArgCount, duplicate edge ids, unknown attributes)
    #[arg(short = 'v')]
    strict: bool,
    /// Verbose output; the alias, du-ud and DO maps are always written (the schema requires them)
    #[arg(short = 'V')]
    verbose: bool,
    /// Force these variables passive (space separated names, without case; the front end's
    /// `_N` decoration is ignored unless -F NO_STYLE): their symbols and references become
    /// passive before TypeChange, which then converts at every call they take part in
    #[arg(short = 'p', value_name = "NAMES")]
    passive: Option<String>,
    /// Pessimistic black boxes: external routines may overwrite what they can reach (used by
    /// the adjoint mode; tangent mode and identity say so and ignore it)
    #[arg(short = 'b')]
    pessimistic_black_boxes: bool,
    /// Zero the derivatives of active local variables at routine entry, in a block after Entry
    /// (for OpenAD runtimes without default initialization)
    #[arg(short = 'D')]
    init_derivatives: bool,
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
    /// Debug output file of the original engine; accepted for compatibility (xaifbooster has
    /// no debug output: warnings and errors go to standard error)
    #[arg(short = 'd', value_name = "FILE")]
    debug_file: Option<PathBuf>,
    /// Debug bitmask of the original engine; accepted for compatibility and ignored
    #[arg(short = 'g', value_name = "MASK")]
    debug_mask: Option<u32>,
}

#[derive(Args, Debug)]
struct ValidateArgs {
    /// XAIF files to check
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Strict: report what lenient reading forgives as errors
    #[arg(short = 'v')]
    strict: bool,
    /// Skip the activity check (real arguments as active as their formals, only passive reals
    /// passed to external routines, derivatives only of active symbols). Every output must pass
    /// it; front-end inputs (tlm.in.xaif, adm.in.xaif) need not, their mismatches are what the
    /// TypeChange pass converts
    #[arg(long)]
    skip_activity: bool,
}

/// A failure already reported to the user; carries the exit code.
struct Reported(u8);

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Identity(args) => run_identity(&args),
        Command::Validate(args) => run_validate(&args),
        Command::Tangent(args) => run_tangent(&args),
        Command::Run(args) => run_run(&args),
        Command::Verify(args) => run_verify(&args),
    };
    match result {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(Reported(code))) => ExitCode::from(code),
        Err(error) => {
            eprintln!("xaifbooster: {error:#}");
            ExitCode::from(1)
        }
    }
}

fn print_findings(findings: &[Diagnostic]) {
    let mut stderr = std::io::stderr().lock();
    for finding in findings {
        let _ = writeln!(stderr, "{finding}");
    }
}

fn run_validate(args: &ValidateArgs) -> Result<Result<(), Reported>> {
    let mut failed = false;
    for file in &args.files {
        let input = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let options = ValidateOptions { strict: args.strict, activity: !args.skip_activity };
        let findings = validate(&input, &file.display().to_string(), &options);
        print_findings(&findings);
        failed |= findings.iter().any(|f| f.severity == Severity::Error);
    }
    Ok(if failed { Err(Reported(1)) } else { Ok(()) })
}

/// Validates and reads the input of a transforming command; findings are printed.
fn load(args: &TransformArgs, catalogue: &Catalogue) -> Result<Result<CallGraph, Reported>> {
    let input = std::fs::read(&args.input).with_context(|| format!("cannot read {}", args.input.display()))?;
    let file = args.input.display().to_string();
    // Inputs come from the front end: their call-site activity mismatches are for the
    // TypeChange pass to convert, so the activity check is for outputs only.
    let findings = validate(&input, &file, &ValidateOptions { strict: args.strict, activity: false });
    print_findings(&findings);
    if findings.iter().any(|f| f.severity == Severity::Error) {
        return Ok(Err(Reported(1)));
    }
    match xaif::read(&input, &file, &ReadOptions { strict: args.strict, catalogue }) {
        Ok(read) => Ok(Ok(read.call_graph)),
        Err(error) => {
            print_findings(&[error.diagnostic().clone()]);
            Ok(Err(Reported(1)))
        }
    }
}

/// The intrinsics catalogue of a run: `-c` (and `-N`) or the embedded one.
fn catalogue(args: &TransformArgs) -> Result<Result<Catalogue, Reported>> {
    let mut catalogue = match &args.catalogue {
        Some(path) => {
            let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            match Catalogue::parse(&bytes, &path.display().to_string()) {
                Ok(catalogue) => catalogue,
                Err(error) => {
                    eprintln!("{error}");
                    return Ok(Err(Reported(1)));
                }
            }
        }
        None => Catalogue::builtin().clone(),
    };
    if let Some(path) = &args.noninlinable_catalogue {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        if let Err(error) = catalogue.merge_noninlinable(&bytes, &path.display().to_string()) {
            eprintln!("{error}");
            return Ok(Err(Reported(1)));
        }
    }
    Ok(Ok(catalogue))
}

fn run_identity(args: &TransformArgs) -> Result<Result<(), Reported>> {
    let catalogue = match catalogue(args)? {
        Ok(catalogue) => catalogue,
        Err(reported) => return Ok(Err(reported)),
    };
    let mut call_graph = match load(args, &catalogue)? {
        Ok(call_graph) => call_graph,
        Err(reported) => return Ok(Err(reported)),
    };
    let config = args.pipeline_config(TangentConfig::default());
    let passivation = xaifbooster::pipeline::identity(&mut call_graph, &config);
    report_passivation(&args.input, &passivation);
    let options = WriteOptions { schema_location: schema_location(args, "xaif.xsd") };
    emit(args.output.as_deref(), &xaif::write(&call_graph, &options))?;
    Ok(Ok(()))
}

fn run_tangent(args: &TangentArgs) -> Result<Result<(), Reported>> {
    let common = &args.common;
    let catalogue = match catalogue(common)? {
        Ok(catalogue) => catalogue,
        Err(reported) => return Ok(Err(reported)),
    };
    let mut call_graph = match load(common, &catalogue)? {
        Ok(call_graph) => call_graph,
        Err(reported) => return Ok(Err(reported)),
    };
    let preaccumulation = match (args.statement_level, args.preaccumulation) {
        (true, _) | (false, PreaccumulationArg::Statement) => Preaccumulation::Statement,
        (false, PreaccumulationArg::BasicBlock) => Preaccumulation::BasicBlock,
    };
    let elimination = match args.elimination {
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
        EliminationArg::Exact => Method::Exact,
        EliminationArg::Greedy => Method::Greedy,
    };
    // Comparing every method costs planning time; it is only worth it when statistics are
    // written.
    let config =
        common.pipeline_config(TangentConfig { preaccumulation, elimination, compare_methods: args.stats.is_some() });
    let report = match xaifbooster::pipeline::tangent(&mut call_graph, &catalogue, &config) {
        Ok(report) => report,
        Err(error) => {
            // Located at the statement: the input is read again, on this failure only.
            let input = std::fs::read(&common.input).unwrap_or_default();
            let (routine, statement) = error.statement();
            let file = common.input.display().to_string();
            let message = error.to_string();
            print_findings(&[xaifbooster::xaif::validate::locate(
                &input,
                &file,
                routine,
                None,
                Some(statement),
                message,
            )]);
            return Ok(Err(Reported(1)));
        }
    };
    report_passivation(&common.input, &report.passivation);
    let options = WriteOptions { schema_location: schema_location(common, "xaif_output.xsd") };
    emit(common.output.as_deref(), &xaif::write(&call_graph, &options))?;
    if let Some(path) = &args.stats {
        emit(Some(path), report.tangent.to_json().as_bytes())?;
    }
    Ok(Ok(()))
}

impl TransformArgs {
    /// The library's configuration from the switches; says on standard error which accepted
    /// switches have no effect in this build.
    fn pipeline_config(&self, tangent: TangentConfig) -> xaifbooster::pipeline::Config {
        use xaifbooster::passes::passivate::Decorations;
        use xaifbooster::passes::type_change::TypeChangeConfig;
        let words = |list: &Option<String>| -> Vec<String> {
            list.as_deref().map(|l| l.split_whitespace().map(str::to_owned).collect()).unwrap_or_default()
        };
        if self.pessimistic_black_boxes {
            eprintln!("xaifbooster: note: -b affects only the adjoint mode, which is not built yet; ignored");
        }
        if self.debug_file.is_some() || self.debug_mask.is_some() {
            eprintln!("xaifbooster: note: -d and -g select debug output of the original engine; ignored");
        }
        xaifbooster::pipeline::Config {
            passive: words(&self.passive),
            decorations: match self.decoration_style.as_deref() {
                Some("NO_STYLE") => Decorations::None,
                _ => Decorations::Open64,
            },
            initialize_derivatives: self.init_derivatives,
            type_change: TypeChangeConfig { wrappers: words(&self.wrappers), rename_all: self.rename_all },
            tangent,
        }
    }
}

/// Names given to -p that match no variable are most likely typos: say so.
fn report_passivation(input: &Path, passivation: &xaifbooster::passes::passivate::Passivation) {
    for name in &passivation.unmatched {
        eprintln!("{}: warning: -p {name}: no variable of that name", input.display());
    }
}

fn schema_location(args: &TransformArgs, file: &str) -> String {
    match &args.schema_dir {
        Some(dir) => format!("{}/{file}", dir.trim_end_matches('/')),
        None => file.to_owned(),
    }
}

/// Writes to `path` through a temporary file in the same directory and a rename, so that a
/// reader of `path` never sees a half-written document; without a path, to standard output.
fn emit(path: Option<&Path>, bytes: &[u8]) -> Result<()> {
    let Some(path) = path else {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(bytes).context("cannot write to standard output")?;
        return stdout.flush().context("cannot write to standard output");
    };
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = std::fs::write(&temp, bytes).and_then(|()| std::fs::rename(&temp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.with_context(|| format!("cannot write {}", path.display()))
}

/// Reads and lowers a program for `run` and `verify`; prints what the reader found.
fn load_program(path: &Path) -> Result<Result<xaifbooster::interp::Program, String>> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let file = path.display().to_string();
    Ok(match xaifbooster::interp::verify::load_program(&bytes, &file) {
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

fn run_run(args: &RunArgs) -> Result<Result<(), Reported>> {
    use xaifbooster::interp::verify::{Driver, Sweep};
    let program = match load_program(&args.file)? {
        Ok(p) => p,
        Err(_) => return Ok(Err(Reported(1))),
    };
    let outcome = Driver::new(&program, &args.driver.config()).and_then(|driver| {
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
            let (j, _, _) = xaifbooster::interp::verify::jacobian(&driver, mode, &x)?;
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
            print!("{text}");
            Ok(Ok(()))
        }
        // Located at the statement (or vertex) where execution stopped.
        Err(e) => {
            match e.location() {
                Some(at) => {
                    let input = std::fs::read(&args.file).unwrap_or_default();
                    let file = args.file.display().to_string();
                    let (vertex, statement) = (at.vertex.as_deref(), at.statement.as_deref());
                    let message = e.to_string();
                    let located =
                        xaifbooster::xaif::validate::locate(&input, &file, &at.routine, vertex, statement, message);
                    print_findings(&[located]);
                }
                None => eprintln!("xaifbooster: {e}"),
            }
            Ok(Err(Reported(1)))
        }
    }
}

fn run_verify(args: &VerifyArgs) -> Result<Result<(), Reported>> {
    use xaifbooster::interp::verify::{Mode, Status, VerifyConfig, VerifyReport, dot_product_test, verify};
    let mode = if args.mode == "adjoint" { Mode::Adjoint } else { Mode::Tangent };
    let config = VerifyConfig { driver: args.driver.config(), mode, rtol: args.rtol };
    let report = match (load_program(&args.original)?, load_program(&args.transformed)?) {
        (Ok(original), Ok(transformed)) => {
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
    if args.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.table());
    }
    Ok(if report.status == Status::Ok { Ok(()) } else { Err(Reported(1)) })
}
