//! Command line of xaifbooster: parses the arguments, hands them to their command
//! (`xaifbooster::cli`) and turns what it ends with into the exit status.

use std::io::Write;

use xaifbooster::cli::args::{Cli, Command};
use xaifbooster::cli::{Reported, analyze, batch, dot, drivers, execute, manual, trace_diff, transform, validate};
use xaifbooster::output::OutputError;

/// The exit status of a run whose reader went away (`| head`): what a shell reports for a
/// program ended by SIGPIPE, as the original engine or any C filter would be; no message.
const BROKEN_PIPE: u8 = 128 + 13;

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(run())
}

/// Runs the command line's command; its exit status.
fn run() -> u8 {
    xaifbooster::cli::interrupt::install();
    // Called as OpenAD's oadDriver, the driver's directory names the subcommand.
    let cli = Cli::parse_with_hidden_switches(drivers::command_line(std::env::args_os().collect()));
    let result = match cli.command {
        Command::Identity(args) => transform::identity(&args),
        Command::Trace(args) => transform::trace(&args),
        Command::Validate(args) => validate::run(&args),
        Command::Tangent(args) => transform::tangent(&args),
        Command::Adjoint(args) => transform::adjoint(&args),
        Command::Run(args) => execute::run(&args),
        Command::Verify(args) => execute::verify(&args),
        Command::Analyze(args) => analyze::run(&args),
        Command::Batch(args) => batch::command::run(&args),
        Command::Completions(args) => manual::completions(&args),
        Command::Man => manual::man(),
        Command::Dot(args) => dot::command::run(&args),
        Command::InstallDrivers(args) => drivers::install(&args),
        Command::TraceDiff(args) => trace_diff::run(&args),
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
