//! The command line: its switches (`args`), one module per command, and what the commands
//! share here (reading an input, writing to standard output, a failure already reported). The
//! binary (`src/main.rs`) only parses, dispatches and turns the outcome into the exit status.
//!
//! Three modules are also worth testing without the binary: how findings and the debug log
//! are worded (`log`), batch mode over many inputs (`batch`) and the Graphviz views of a
//! document (`dot`).

use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::output::{Destination, Output, OutputError};
use crate::xaif::Diagnostic;

pub mod analyze;
pub mod args;
pub mod batch;
pub mod dot;
pub mod drivers;
pub mod execute;
pub mod interrupt;
pub mod log;
pub mod manual;
pub mod trace_diff;
pub mod transform;
pub mod validate;

/// A failure already reported to the user; carries the exit code.
pub struct Reported(pub u8);

/// What a command ends with: done, a failure it reported itself (findings, usually), or an
/// error for the binary to print.
pub type Outcome = Result<Result<(), Reported>>;

/// Ends the process with a usage error (exit 2) of `subcommand`, worded and shown as clap
/// shows its own.
pub(crate) fn usage_error(subcommand: &str, message: String) -> ! {
    let mut command = args::Cli::command();
    command.build();
    let command = command.find_subcommand_mut(subcommand).expect("a subcommand of ours");
    command.error(clap::error::ErrorKind::ArgumentConflict, message).exit()
}

/// Usage error (exit 2) unless at most one output of a subcommand goes to standard output.
pub(crate) fn one_stdout_user(subcommand: &str, users: &[(&str, bool)]) {
    let on_stdout: Vec<&str> = users.iter().filter(|(_, stdout)| *stdout).map(|(name, _)| *name).collect();
    if on_stdout.len() > 1 {
        let message =
            format!("only one of {} can write to standard output (-o does when not given)", on_stdout.join(", "));
        usage_error(subcommand, message);
    }
}

/// Reads an input file, `-` standard input; also returns the name messages use.
pub(crate) fn read_input(path: &Path) -> Result<(Vec<u8>, String)> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin().lock().read_to_end(&mut bytes).context("cannot read standard input")?;
        return Ok((bytes, "<stdin>".to_owned()));
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok((bytes, path.display().to_string()))
}

/// Writes text to standard output, as the commands without `-o` do.
pub(crate) fn print_stdout(text: String) -> Result<()> {
    Ok(commit_bytes(Output::create(&Destination::Stdout)?, text.as_bytes())?)
}

/// Writes `bytes` to a prepared output and commits it.
pub(crate) fn commit_bytes(mut output: Output, bytes: &[u8]) -> Result<(), OutputError> {
    if let Err(error) = output.write_all(bytes) {
        return Err(output.error(error));
    }
    output.commit()
}

/// Prints findings on standard error, repeated ones summarised.
pub(crate) fn print_findings(findings: &[Diagnostic]) {
    let mut stderr = std::io::stderr().lock();
    for line in log::summarise(findings, false) {
        let _ = writeln!(stderr, "{line}");
    }
}
