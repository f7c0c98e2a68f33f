//! Batch mode: one transformation over many inputs, on every core, with a report.
//!
//! A corpus is laid out as one directory per example, each holding files of the same names
//! (`tlm.in.xaif`, `adm.in.xaif`), so outputs cannot be named after the input file alone.
//! They mirror the inputs' paths below `--out-dir` instead:
//!
//! - every input keeps its path relative to the deepest directory holding everything given
//!   (arguments and `--list` entries; a directory counts as itself, a file as its parent):
//!   `batch tangent corpus`, `batch tangent corpus/*` and `batch tangent corpus/*/tlm.in.xaif`
//!   all write `corpus/ConsFold/tlm.in.xaif` to `OUT/ConsFold/tlm.out.xaif`;
//! - the file name loses `.xaif` and a trailing `.in`, and gains `.out.xaif`
//!   (`tlm.in.xaif` → `tlm.out.xaif`, `head.xaif` → `head.out.xaif`).
//!
//! Naming happens before sharding, so a file's output is the same whichever shard runs it,
//! and two inputs that would share an output are refused before any work starts.
//!
//! `--shard K/N` sorts the inputs by path and takes those whose index `i` (from 0) has
//! `i % N == K - 1`: round robin, so shards get a similar mix of large and small examples.
//!
//! Each file is independent of the others (its own call graph, temporaries and plan cache),
//! so its output is the same whatever the number of threads; the report lists the files in
//! sorted order whatever order they finished in.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use crate::driver::{self, Failure};
use crate::interp::Template;
use crate::interp::verify::{self, DriverConfig, Status, VerifyConfig};
use crate::output::{Destination, Output};
use crate::pipeline::{self, PipelineError};
use crate::xaif::intrinsics::Catalogue;
use crate::xaif::validate::locate;
use crate::xaif::{Diagnostic, Severity};

pub mod command;

/// The transformation a batch applies to every input: a mode of the one driver.
pub use crate::driver::Mode;

impl Mode {
    /// The file name OpenAD's scripts give this mode's front-end output: what a directory is
    /// searched for unless `--name` says otherwise.
    pub fn default_pattern(self) -> &'static str {
        match self {
            Mode::Identity => "*.xaif",
            Mode::Tangent => "tlm.in.xaif",
            Mode::Adjoint => "adm.in.xaif",
            Mode::Trace => "tlm.in.xaif",
        }
    }
}

/// A deterministic slice of the inputs: the `index`-th (from 1) of `count`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;

    /// `K/N` with `1 <= K <= N`, as Slurm's `$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`.
    fn from_str(text: &str) -> Result<Shard, String> {
        let (k, n) = text.split_once('/').ok_or_else(|| format!("'{text}' is not K/N"))?;
        let parse = |part: &str| part.trim().parse::<usize>().map_err(|_| format!("'{text}' is not K/N"));
        let (index, count) = (parse(k)?, parse(n)?);
        if count == 0 || index == 0 || index > count {
            return Err(format!("shard {index}/{count}: K must be between 1 and N"));
        }
        Ok(Shard { index, count })
    }
}

/// Where the inputs come from, as the command line gives them.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    /// Files and directories.
    pub paths: Vec<PathBuf>,
    /// File name patterns (`*` and `?`) a directory's files must match; empty: the mode's
    /// default.
    pub patterns: Vec<String>,
}

/// One file to transform and where its output goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    pub input: PathBuf,
    pub output: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("cannot read directory {}", path.display())]
    Directory {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("no input files (directories are searched for {patterns})")]
    NoInputs { patterns: String },
    #[error(
        "no input files: those found ({patterns}) are inside the output directory {}, which is skipped",
        out_dir.display()
    )]
    InsideOutDir { patterns: String, out_dir: PathBuf },
    #[error("{} and {} would both be written to {}", first.display(), second.display(), output.display())]
    SameOutput { first: PathBuf, second: PathBuf, output: PathBuf },
    #[error("the output directory {} is not a directory", path.display())]
    OutDir { path: PathBuf },
}

/// The files to transform, sorted by input path, each with its output under `out_dir`.
pub fn collect(sources: &Sources, mode: Mode, out_dir: &Path) -> Result<Vec<Job>, BatchError> {
    let patterns: Vec<&str> = if sources.patterns.is_empty() {
        vec![mode.default_pattern()]
    } else {
        sources.patterns.iter().map(String::as_str).collect()
    };
    let out_dir_abs = absolute(out_dir);
    // The output directory's own contents are never inputs (a second run over `.` with
    // `--out-dir ./out` must not transform the first run's outputs).
    let skip = std::fs::canonicalize(out_dir).ok();
    // Every input is named relative to the deepest directory holding everything given: a
    // directory counts as itself, a file as its parent.
    let mut found: Vec<PathBuf> = Vec::new();
    let mut anchors: Vec<PathBuf> = Vec::new();
    for path in &sources.paths {
        if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
            anchors.push(absolute(path));
            walk(path, &patterns, skip.as_deref(), &mut found)?;
        } else {
            // Also a missing file: it is reported as failed, with the others transformed.
            anchors.push(absolute(path).parent().map(Path::to_path_buf).unwrap_or_default());
            found.push(path.clone());
        }
    }
    let base = common_directory(&anchors);
    let found: Vec<(PathBuf, PathBuf)> = found
        .into_iter()
        .map(|file| {
            let abs = absolute(&file);
            let relative = abs.strip_prefix(&base).map(Path::to_path_buf).unwrap_or_else(|_| relative_part(&abs));
            (file, relative)
        })
        .collect();
    if found.is_empty() {
        let joined = patterns.join(" ");
        // Say so when the skipped output directory is what held the inputs.
        if skip.is_some() {
            let mut inside = Vec::new();
            for path in sources.paths.iter().filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_dir())) {
                walk(path, &patterns, None, &mut inside)?;
            }
            if !inside.is_empty() {
                return Err(BatchError::InsideOutDir { patterns: joined, out_dir: out_dir.to_path_buf() });
            }
        }
        return Err(BatchError::NoInputs { patterns: joined });
    }
    let mut jobs: Vec<Job> = found
        .into_iter()
        .map(|(input, relative)| Job { output: out_dir_abs.join(output_name(&relative)), input })
        .collect();
    jobs.sort_by(|a, b| a.input.cmp(&b.input).then_with(|| a.output.cmp(&b.output)));
    jobs.dedup();
    let mut outputs: BTreeMap<&Path, &Path> = BTreeMap::new();
    for job in &jobs {
        if let Some(first) = outputs.insert(&job.output, &job.input) {
            return Err(BatchError::SameOutput {
                first: first.to_path_buf(),
                second: job.input.clone(),
                output: job.output.clone(),
            });
        }
    }
    Ok(jobs)
}

/// The jobs of one shard (round robin over the sorted inputs).
pub fn shard(jobs: Vec<Job>, shard: Shard) -> Vec<Job> {
    jobs.into_iter().enumerate().filter(|(i, _)| i % shard.count == shard.index - 1).map(|(_, job)| job).collect()
}

/// Reads `--list`: one path a line; blank lines and lines starting with `#` are skipped.
pub fn parse_list(text: &str) -> Vec<PathBuf> {
    text.lines()
        .map(|line| line.trim_end_matches('\r'))
        .filter(|line| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
        .map(PathBuf::from)
        .collect()
}

/// `tlm.in.xaif` → `tlm.out.xaif`, `head.xaif` → `head.out.xaif`, in the same directory.
pub fn output_name(relative: &Path) -> PathBuf {
    let name = relative.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = name.strip_suffix(".xaif").unwrap_or(&name);
    let stem = stem.strip_suffix(".in").unwrap_or(stem);
    relative.with_file_name(format!("{stem}.out.xaif"))
}

/// `*` any run of characters, `?` one character; nothing else is special.
pub fn matches(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some('*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some('?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

/// Files below `dir` whose names match a pattern. Symbolic links to files are followed,
/// links to directories are not (no cycles).
fn walk(dir: &Path, patterns: &[&str], skip: Option<&Path>, files: &mut Vec<PathBuf>) -> Result<(), BatchError> {
    if skip.is_some() && std::fs::canonicalize(dir).ok().as_deref() == skip {
        return Ok(());
    }
    let error = |source| BatchError::Directory { path: dir.to_path_buf(), source };
    let mut entries: Vec<std::fs::DirEntry> =
        std::fs::read_dir(dir).map_err(error)?.collect::<Result<_, _>>().map_err(error)?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let file_type = entry.file_type().map_err(error)?;
        if file_type.is_dir() {
            walk(&path, patterns, skip, files)?;
        } else if (file_type.is_file() || (file_type.is_symlink() && path.is_file()))
            && patterns.iter().any(|p| matches(p, &entry.file_name().to_string_lossy()))
        {
            files.push(path);
        }
    }
    Ok(())
}

/// The path made absolute against the current directory, `.` and `..` removed lexically
/// (symbolic links are not resolved: outputs mirror the paths the user gave).
fn absolute(path: &Path) -> PathBuf {
    let joined = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut clean = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            other => clean.push(other),
        }
    }
    clean
}

/// The deepest directory holding every one of these absolute directories (their common prefix).
fn common_directory(dirs: &[PathBuf]) -> PathBuf {
    let mut common: Option<PathBuf> = None;
    for dir in dirs {
        let dir = dir.clone();
        common = Some(match common {
            None => dir,
            Some(current) => {
                current.components().zip(dir.components()).take_while(|(a, b)| a == b).map(|(a, _)| a).collect()
            }
        });
    }
    common.unwrap_or_default()
}

/// A path without its root, for the rare file outside the common directory.
fn relative_part(path: &Path) -> PathBuf {
    path.components().filter(|c| matches!(c, Component::Normal(_))).collect()
}

/// How every file of a batch is transformed.
#[derive(Clone, Debug)]
pub struct Settings<'c> {
    pub mode: Mode,
    pub pipeline: pipeline::Config,
    pub catalogue: &'c Catalogue,
    /// `--strict` reading.
    pub strict: bool,
    /// `-s`: the outputs' schema directory.
    pub schema_dir: Option<String>,
    /// `--verify`: check each output's derivatives against the original's finite differences.
    pub verify: Option<VerifySettings>,
}

#[derive(Clone, Debug)]
pub struct VerifySettings {
    pub template: Template,
    pub rtol: f64,
    /// The executor's step limit for one run.
    pub max_steps: u64,
}

/// What happened to one input.
#[derive(Clone, Debug, Serialize)]
pub struct FileReport {
    pub input: PathBuf,
    pub output: PathBuf,
    pub status: FileStatus,
    /// Why it failed, located (`file:line:column: element: message`), one finding a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Warnings the input drew (not printed in batch mode).
    pub warnings: usize,
    /// Wall time of this file: reading, transforming, writing (and verifying).
    pub elapsed_ms: f64,
    pub input_bytes: u64,
    pub output_bytes: u64,
    /// What the passes did; absent when the file failed before they ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<Counts>,
    /// With `--verify`, for files written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyOutcome>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    Ok,
    Failed,
}

/// The pipeline's `Report`, summed over the file.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counts {
    pub passivated: usize,
    pub type_change_conversions: usize,
    pub external_conversions: usize,
    pub saved_indices: usize,
    pub sequences: usize,
    pub statements: usize,
    pub accumulation_multiplications: usize,
    pub accumulation_additions: usize,
    pub propagator_entries: usize,
    pub propagator_multiplications: usize,
    /// Adjoint mode: static pushes in the taping code, by kind (as `AdjointStats`).
    pub factor_pushes: usize,
    pub value_pushes: usize,
    pub index_pushes: usize,
    pub control_pushes: usize,
    pub exit_pushes: usize,
}

impl Counts {
    fn of(report: &pipeline::Report) -> Counts {
        let sequences = &report.tangent.sequences;
        let sum = |f: fn(&crate::passes::tangent::SequenceStats) -> usize| sequences.iter().map(f).sum();
        Counts {
            passivated: report.passivation.passivated.len(),
            type_change_conversions: report.type_change.conversions,
            external_conversions: report.type_change.external_conversions,
            saved_indices: report.type_change.saved_indices,
            sequences: sequences.len(),
            statements: sum(|s| s.statements),
            accumulation_multiplications: sum(|s| s.accumulation_multiplications),
            accumulation_additions: sum(|s| s.accumulation_additions),
            propagator_entries: sum(|s| s.propagator_entries),
            propagator_multiplications: sum(|s| s.propagator_multiplications),
            factor_pushes: report.adjoint.factor_pushes,
            value_pushes: report.adjoint.value_pushes,
            index_pushes: report.adjoint.index_pushes,
            control_pushes: report.adjoint.control_pushes,
            exit_pushes: report.adjoint.exit_pushes,
        }
    }
}

/// The verifier's verdict on one output.
#[derive(Clone, Debug, Serialize)]
pub struct VerifyOutcome {
    /// `OK`, `MISMATCH` or `UNSUPPORTED`, as `verify` prints.
    pub status: String,
    /// `verify`'s last line.
    pub detail: String,
    /// Adjoint mode: words one reverse sweep pushed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tape_words: Option<u64>,
    /// On a mismatch: the first wrong derivative, or the routine whose adjoint is wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub localized: Option<crate::interp::localize::Localization>,
}

impl VerifyOutcome {
    pub fn is_mismatch(&self) -> bool {
        self.status == Status::Mismatch(String::new()).word()
    }
}

/// The whole batch: what `--report` writes.
#[derive(Clone, Debug, Serialize)]
pub struct BatchReport {
    pub version: &'static str,
    pub mode: Mode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    pub jobs: usize,
    /// Interrupted: `files` lists the files that finished, not every input.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
    pub summary: Summary,
    pub files: Vec<FileReport>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub files: usize,
    pub ok: usize,
    pub failed: usize,
    /// With `--verify`: outputs by verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<BTreeMap<String, usize>>,
    pub elapsed_ms: f64,
    pub input_bytes: u64,
    pub output_bytes: u64,
}

impl BatchReport {
    /// Whether the batch should exit with a failure: a file failed, or an output's
    /// derivatives disagree with the original's.
    pub fn failed(&self) -> bool {
        self.summary.failed > 0 || self.files.iter().any(|f| f.verify.as_ref().is_some_and(VerifyOutcome::is_mismatch))
    }

    pub fn json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// Transforms every job on `threads` threads (0: one per core), calling `progress` as each
/// file finishes (from the worker threads, in completion order).
pub fn run(
    jobs: &[Job],
    settings: &Settings<'_>,
    threads: usize,
    shard: Option<Shard>,
    progress: &(dyn Fn(&FileReport) + Sync),
) -> Result<BatchReport, rayon::ThreadPoolBuildError> {
    let started = Instant::now();
    // The executor's recursion budget (6 MiB) assumes a main thread's 8 MiB stack; the
    // reader's nesting limits assume the same.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).stack_size(16 << 20).build()?;
    let used = pool.current_num_threads();
    // After a signal ([`crate::cli::interrupt`]) no file starts; those under way finish.
    let files: Vec<FileReport> = pool.install(|| {
        jobs.par_iter()
            .filter_map(|job| {
                if crate::cli::interrupt::received().is_some() {
                    return None;
                }
                let report = transform_one(job, settings);
                progress(&report);
                Some(report)
            })
            .collect()
    });
    let incomplete = files.len() < jobs.len();
    let mut summary = Summary {
        files: files.len(),
        ok: files.iter().filter(|f| f.status == FileStatus::Ok).count(),
        failed: files.iter().filter(|f| f.status == FileStatus::Failed).count(),
        elapsed_ms: milliseconds(started),
        input_bytes: files.iter().map(|f| f.input_bytes).sum(),
        output_bytes: files.iter().map(|f| f.output_bytes).sum(),
        verified: None,
    };
    if settings.verify.is_some() {
        let mut verdicts = BTreeMap::new();
        for file in &files {
            if let Some(v) = &file.verify {
                *verdicts.entry(v.status.clone()).or_insert(0) += 1;
            }
        }
        summary.verified = Some(verdicts);
    }
    Ok(BatchReport {
        version: env!("CARGO_PKG_VERSION"),
        mode: settings.mode,
        shard,
        jobs: used,
        incomplete,
        summary,
        files,
    })
}

/// Wall time since `started`, in milliseconds to the microsecond.
fn milliseconds(started: Instant) -> f64 {
    (started.elapsed().as_secs_f64() * 1e6).round() / 1e3
}

/// Reads, transforms, writes (and verifies) one file; every failure is caught in the report.
pub fn transform_one(job: &Job, settings: &Settings<'_>) -> FileReport {
    let started = Instant::now();
    let mut report = FileReport {
        input: job.input.clone(),
        output: job.output.clone(),
        status: FileStatus::Failed,
        error: None,
        warnings: 0,
        elapsed_ms: 0.0,
        input_bytes: 0,
        output_bytes: 0,
        counts: None,
        verify: None,
    };
    if let Err(error) = transform_into(job, settings, &mut report) {
        report.error = Some(error);
    } else {
        report.status = FileStatus::Ok;
    }
    report.elapsed_ms = milliseconds(started);
    report
}

fn transform_into(job: &Job, settings: &Settings<'_>, report: &mut FileReport) -> Result<(), String> {
    let file = job.input.display().to_string();
    let input = std::fs::read(&job.input).map_err(|e| format!("{file}: cannot read: {e}"))?;
    report.input_bytes = input.len() as u64;
    let schema = settings.mode.schema();
    let schema_location = match &settings.schema_dir {
        Some(dir) => format!("{}/{schema}", dir.trim_end_matches('/')),
        None => schema.to_owned(),
    };
    // Every core already runs a file of its own: the run takes no thread of its own.
    let options = driver::Options {
        catalogue: settings.catalogue,
        strict: settings.strict,
        config: settings.pipeline.clone(),
        schema_location,
        threads: false,
    };
    let mut bytes = Vec::new();
    let warnings = |findings: &[Diagnostic]| findings.iter().filter(|f| f.severity != Severity::Error).count();
    let run = match driver::run(settings.mode, &input, &file, &mut bytes, &options) {
        Ok(run) => run,
        Err(Failure::Invalid(findings)) => {
            report.warnings = warnings(&findings);
            let errors = findings.iter().filter(|f| f.severity == Severity::Error).map(ToString::to_string);
            return Err(errors.collect::<Vec<_>>().join("\n"));
        }
        Err(Failure::Transform { error, warnings: found }) => {
            report.warnings = found.len();
            return Err(located(&input, &file, &error));
        }
        Err(error @ (Failure::Write(_) | Failure::Spill(_))) => return Err(format!("{file}: {error}")),
    };
    report.warnings = run.warnings.len();
    report.counts = Some(Counts::of(&run.report));
    write_output(&job.output, &bytes)?;
    report.output_bytes = bytes.len() as u64;
    if let Some(verify) = &settings.verify {
        report.verify = Some(verify_output(&input, &file, &bytes, &job.output, settings.mode, verify));
    }
    Ok(())
}

/// A failing pass's error, located in the input where it names a routine.
fn located(input: &[u8], file: &str, error: &PipelineError) -> String {
    match error.location() {
        Some((routine, statement)) => locate(input, file, routine, None, statement, error.to_string()).to_string(),
        None => format!("{file}: {error}"),
    }
}

/// Writes one output (replaced by a rename only when complete), its directory created first.
fn write_output(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let shown = path.display();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{shown}: cannot create its directory: {e}"))?;
    }
    let failed = |e: crate::output::OutputError| e.to_string();
    let mut output = Output::create(&Destination::Path(path.to_path_buf())).map_err(failed)?;
    output.write_all(bytes).map_err(|e| format!("{shown}: {e}"))?;
    output.commit().map_err(failed)
}

/// `verify` on one output, with the verify command's default driver: inferred from the
/// original's top routine (its warnings join the detail).
fn verify_output(
    original: &[u8],
    original_name: &str,
    transformed: &[u8],
    transformed_path: &Path,
    mode: Mode,
    settings: &VerifySettings,
) -> VerifyOutcome {
    let mode = if mode == Mode::Adjoint { verify::Mode::Adjoint } else { verify::Mode::Tangent };
    let config = VerifyConfig {
        driver: DriverConfig { template: settings.template, step_limit: settings.max_steps, ..DriverConfig::default() },
        mode,
        rtol: settings.rtol,
    };
    let programs = verify::read_program(original, original_name)
        .and_then(|o| verify::read_program(transformed, &transformed_path.display().to_string()).map(|t| (o, t)));
    let result = match programs {
        Ok((original, transformed)) => match verify::infer_driver(&original, &config.driver) {
            Ok((driver, _)) => verify::verify(&original, &transformed, &VerifyConfig { driver, ..config }),
            Err(why) => verify::VerifyReport::unsupported(why, mode),
        },
        Err(why) => verify::VerifyReport::unsupported(why, mode),
    };
    let tape_words = (mode == verify::Mode::Adjoint && result.status == Status::Ok).then(|| result.tape.total());
    let mut detail = result.final_line();
    if let Some(localized) = &result.localized {
        detail.push_str("; ");
        detail.push_str(&localized.to_string());
    }
    for warning in &result.warnings {
        detail.push_str("; warning: ");
        detail.push_str(warning);
    }
    VerifyOutcome { status: result.status.word().to_owned(), detail, tape_words, localized: result.localized }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_names_drop_in_and_add_out() {
        assert_eq!(output_name(Path::new("a/tlm.in.xaif")), PathBuf::from("a/tlm.out.xaif"));
        assert_eq!(output_name(Path::new("head.xaif")), PathBuf::from("head.out.xaif"));
        assert_eq!(output_name(Path::new("x/notes")), PathBuf::from("x/notes.out.xaif"));
    }

    #[test]
    fn patterns_match_like_a_shell() {
        assert!(matches("*.xaif", "head.xaif"));
        assert!(matches("tlm.in.xaif", "tlm.in.xaif"));
        assert!(!matches("tlm.in.xaif", "adm.in.xaif"));
        assert!(matches("?dm.*", "adm.in.xaif"));
        assert!(!matches("*.xaif", "head.xaif.bak"));
    }

    #[test]
    fn shards_partition_the_sorted_inputs() {
        let jobs: Vec<Job> = (0..10)
            .map(|i| Job { input: PathBuf::from(format!("in{i}")), output: PathBuf::from(format!("out{i}")) })
            .collect();
        let mut union: Vec<Job> = Vec::new();
        for k in 1..=3 {
            let part = shard(jobs.clone(), Shard { index: k, count: 3 });
            assert!(part.iter().all(|j| !union.contains(j)));
            union.extend(part);
        }
        union.sort_by(|a, b| a.input.cmp(&b.input));
        assert_eq!(union, jobs);
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        assert!("0/4".parse::<Shard>().is_err());
        assert!("5/4".parse::<Shard>().is_err());
        assert!("4".parse::<Shard>().is_err());
    }

    #[test]
    fn inputs_are_relative_to_the_common_directory() {
        let dirs = [PathBuf::from("/c/a/x"), PathBuf::from("/c/a/y"), PathBuf::from("/c/a/yz")];
        assert_eq!(common_directory(&dirs), PathBuf::from("/c/a"));
        assert_eq!(common_directory(&dirs[..1]), PathBuf::from("/c/a/x"));
        assert_eq!(parse_list("a\n\n# note\nb/c.xaif\r\n"), [PathBuf::from("a"), PathBuf::from("b/c.xaif")]);
    }
}
