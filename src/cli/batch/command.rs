//! The `batch` command: its switches made into [`Settings`], a progress display (a bar on a
//! terminal, one line per file otherwise, for the logs of cluster jobs) and the summary.

use std::io::{IsTerminal, Write};

use anyhow::Context;

use super::{BatchReport, FileStatus, Settings, Sources, VerifySettings};
use crate::cli::args::{BatchArgs, BatchModeArg};
use crate::cli::{Outcome, Reported, batch, commit_bytes, read_input, usage_error};
use crate::interp::Template;
use crate::output::Output;
use crate::passes::adjoint::AdjointConfig;
use crate::passes::passivate::Decorations;
use crate::passes::tangent::{Preaccumulation, TangentConfig};
use crate::passes::type_change::TypeChangeConfig;
use crate::pipeline;
use crate::xaif::intrinsics::Catalogue;

pub fn run(args: &BatchArgs) -> Outcome {
    let mode = match args.mode {
        BatchModeArg::Identity => batch::Mode::Identity,
        BatchModeArg::Tangent => batch::Mode::Tangent,
        BatchModeArg::Adjoint => batch::Mode::Adjoint,
        BatchModeArg::Trace => batch::Mode::Trace,
    };
    if args.verify && matches!(mode, batch::Mode::Identity | batch::Mode::Trace) {
        usage_error("batch", "--verify needs derivatives: use it with tangent or adjoint".into());
    }
    if args.inputs.iter().any(|p| p.as_os_str() == "-") {
        usage_error("batch", "batch reads named files; give their names on standard input with --list -".into());
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
    if mode == batch::Mode::Trace && (args.init_derivatives || args.statement_level) {
        notes.push("-D and -S act in tangent and adjoint only: no effect".into());
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
    let pipeline = pipeline::Config {
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
            max_steps: args.max_steps,
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
    // A first signal lets the files under way finish and the report say what did.
    crate::cli::interrupt::defer();
    let report = batch::run(&jobs, &settings, args.jobs.unwrap_or(0), args.shard, &progress)?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let interrupted = crate::cli::interrupt::received().filter(|_| report.incomplete);
    if interrupted.is_some() {
        let _ = writeln!(std::io::stderr(), "xaifbooster: interrupted: the report lists the files that finished");
    }
    print_batch_summary(&report, total_inputs);
    if let Some(pending) = report_output {
        commit_bytes(pending, report.json().as_bytes())?;
    }
    if let Some(signal) = interrupted {
        return Ok(Err(Reported(crate::cli::interrupt::exit_status(signal))));
    }
    Ok(if report.failed() { Err(Reported(1)) } else { Ok(()) })
}

/// A size as people read it: bytes, KB or MB (decimal units), whichever keeps it short.
fn size(bytes: u64) -> String {
    match bytes {
        0..1_000 => format!("{bytes} bytes"),
        1_000..1_000_000 => format!("{:.1} KB", bytes as f64 / 1e3),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

/// One screen: totals, the verifier's verdicts, and the first failures with their errors.
fn print_batch_summary(report: &BatchReport, total_inputs: usize) {
    const SHOWN: usize = 10;
    let s = &report.summary;
    let mut text = String::new();
    let shard =
        report.shard.map(|sh| format!(" (shard {}/{} of {total_inputs})", sh.index, sh.count)).unwrap_or_default();
    text.push_str(&format!(
        "batch {}: {} files{shard}, {} ok, {} failed in {:.2} s on {} threads; {} read, {} written\n",
        serde_json::to_value(report.mode).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default(),
        s.files,
        s.ok,
        s.failed,
        s.elapsed_ms / 1e3,
        report.jobs,
        size(s.input_bytes),
        size(s.output_bytes),
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

#[cfg(test)]
mod tests {
    use super::size;

    #[test]
    fn a_size_that_is_not_zero_never_reads_as_zero() {
        for bytes in [1, 999, 1_000, 1_049, 999_999, 1_000_000, 1_049_999, u64::MAX] {
            let shown = size(bytes);
            let number: f64 = shown.split(' ').next().and_then(|n| n.parse().ok()).expect("a number first");
            assert!(number > 0.0, "{bytes} bytes shown as {shown}");
        }
        assert_eq!(size(0), "0 bytes");
    }
}
