//! `run` and `verify`: execute a routine in the interpreter, as a given or inferred driver
//! calls it, and print its outputs and derivatives, or compare the derivatives of a
//! transformed file with finite differences of the original.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::args::{DriverArgs, RunArgs, VerifyArgs};
use super::{Outcome, Reported, print_findings, print_stdout, read_input};
use crate::interp::lower::Body;
use crate::interp::tracing::{TraceRuns, TraceSink};
use crate::interp::verify::{self, DriverConfig};
use crate::interp::{Location, Program, Template};
use crate::output::{Destination, Output};
use crate::xaif::Diagnostic;
use crate::xaif::validate::{locate, locate_symbol};

pub fn run(args: &RunArgs) -> Outcome {
    use crate::interp::verify::{Driver, Sweep};
    let program = match load_program(&args.file)? {
        Ok(p) => p,
        // The reader's findings are printed, located.
        Err(_) => return Ok(Err(Reported(1))),
    };
    let config = match args.driver.resolve(&program) {
        Ok(config) => config,
        Err(reported) => return Ok(Err(reported)),
    };
    // The trace's destination is checked before any work, like every output.
    let trace = match &args.trace {
        Some(path) => Some(TraceOnce(std::cell::RefCell::new(Some(Output::create(&Destination::from(path.clone()))?)))),
        None => None,
    };
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    let outcome = Driver::new(&program, &config).and_then(|driver| {
        let driver = match &trace {
            Some(trace) => driver.traced(trace, "run"),
            None => driver,
        };
        let x = driver.default_x();
        // What the file holds decides, never its name: an untransformed program's derivatives
        // would be zeros that say nothing about it.
        let transformed = program.has_derivative_code();
        let plain = driver.run(&x, Sweep::Plain)?;
        let mut text = format!("{}: {} inputs, {} outputs\n", driver.entry_name(), driver.n, driver.m);
        for (i, v) in plain.y.iter().enumerate() {
            text.push_str(&format!("y({}) = {v:.16e}\n", i + 1));
        }
        if transformed {
            let adjoint = program.routines.iter().any(|r| matches!(r.body, Body::Template(_)));
            let mode = if adjoint { verify::Mode::Adjoint } else { verify::Mode::Tangent };
            let j = verify::jacobian(&driver, mode, &x)?.jacobian;
            warnings = verify::zero_jacobian_warnings(
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
        } else {
            notes.push(format!(
                "{} has no derivative code (no derivative propagators or replacement lists): only its outputs \
                 are printed; transform it with `xaifbooster tangent` or `adjoint` for derivatives",
                args.file.display()
            ));
        }
        Ok(text)
    });
    match outcome {
        Ok(text) => {
            args.driver.warn(&warnings);
            args.driver.note(&notes);
            // A trace on standard output has it to itself.
            if args.trace.as_ref().is_none_or(|path| path != "-") {
                print_stdout(text)?;
            }
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

/// `run --trace FILE`: the trace of the first run (the plain run) goes to FILE.
struct TraceOnce(std::cell::RefCell<Option<Output>>);

impl TraceRuns for TraceOnce {
    fn open(&self, _label: &str) -> std::io::Result<Option<Box<dyn TraceSink>>> {
        Ok(self.0.borrow_mut().take().map(|output| Box::new(TraceOutput(output)) as Box<dyn TraceSink>))
    }
}

/// `verify --trace DIR`: one file per run, named by the run's label.
struct TraceDir(PathBuf);

impl TraceRuns for TraceDir {
    fn open(&self, label: &str) -> std::io::Result<Option<Box<dyn TraceSink>>> {
        let path = self.0.join(format!("{label}.xml"));
        let output = Output::create(&Destination::Path(path)).map_err(std::io::Error::other)?;
        Ok(Some(Box::new(TraceOutput(output))))
    }
}

/// A trace written through `Output`: renamed into place only when its run succeeded.
struct TraceOutput(Output);

impl Write for TraceOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl TraceSink for TraceOutput {
    fn commit(self: Box<Self>) -> std::io::Result<()> {
        self.0.commit().map_err(std::io::Error::other)
    }
}

pub fn verify(args: &VerifyArgs) -> Outcome {
    use crate::interp::verify::{Mode, Side, Status, VerifyConfig, VerifyReport, dot_product_test, verify_traced};
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
            let traces = match &args.trace {
                Some(dir) => {
                    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
                    Some(TraceDir(dir.clone()))
                }
                None => None,
            };
            let mut report = verify_traced(&original, &transformed, &config, traces.as_ref().map(|t| t as _));
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
                                    // Which routine's adjoint disagrees with exact tangents, if one does.
                                    report.localized = localize_adjoint(&original, a, &config);
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
    // The statement or routine found wrong, located in the original where its source is.
    if let Some(localized) = &report.localized {
        use crate::interp::localize::Localization;
        let at = match localized {
            Localization::Statement(s) => Some((s.routine.clone(), Some(s.statement.clone()))),
            Localization::Routine(r) => Some((r.routine.clone(), None)),
            Localization::ControlFlow { .. } | Localization::NotFound { .. } => None,
        };
        if let Some((routine, statement)) = at {
            let at = Location { routine, vertex: None, statement, symbol: None };
            if let Some(finding) = locate_in(&args.original, &at, localized.at_location()) {
                print_findings(&[finding]);
            }
        }
    }
    args.driver.warn(&report.warnings);
    print_stdout(if args.json { format!("{}\n", report.json()) } else { report.table() })?;
    Ok(if report.status == Status::Ok { Ok(()) } else { Err(Reported(1)) })
}

/// The routine whose adjoint fails the dot-product test against exact tangents.
fn localize_adjoint(
    original: &Program,
    adjoint: &Program,
    config: &verify::VerifyConfig,
) -> Option<crate::interp::localize::Localization> {
    let orig = verify::Driver::new(original, &config.driver).ok()?;
    let adj = verify::Driver::new(adjoint, &config.driver).ok()?;
    Some(crate::interp::localize::adjoint(&orig, &adj, &orig.default_x(), config.rtol))
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
    fn resolve(&self, program: &Program) -> Result<DriverConfig, Reported> {
        let given = self.config();
        if self.explicit() {
            return Ok(given);
        }
        match verify::infer_driver(program, &given) {
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

    fn note(&self, notes: &[String]) {
        if !self.quiet {
            let mut stderr = std::io::stderr().lock();
            for note in notes {
                let _ = writeln!(stderr, "xaifbooster: note: {note}");
            }
        }
    }

    fn config(&self) -> DriverConfig {
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
            step_limit: self.max_steps,
            counts: Vec::new(),
            local_extent: None,
            passive_store_value: self.passive_stores,
            black_boxes: self.black_boxes,
            guesses: Vec::new(),
        }
    }
}

/// Reads and lowers a program for `run` and `verify`; prints what the reader found.
fn load_program(path: &Path) -> Result<Result<Program, String>> {
    let (bytes, name) = read_input(path)?;
    Ok(match verify::load_program(&bytes, &name) {
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

/// A run-time failure located in the file at the statement (or vertex) where execution
/// stopped, with the front end's source line.
fn locate_in(path: &Path, at: &Location, message: String) -> Option<Diagnostic> {
    let (input, file) = read_input(path).ok()?;
    if let Some((scope, symbol)) = at.symbol.as_ref().filter(|_| at.routine.is_empty()) {
        return Some(locate_symbol(&input, &file, scope, symbol, message));
    }
    let (vertex, statement) = (at.vertex.as_deref(), at.statement.as_deref());
    Some(locate(&input, &file, &at.routine, vertex, statement, message))
}
