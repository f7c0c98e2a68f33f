//! Schema-free validation of XAIF documents: the rules of the XAIF schemas (element nesting,
//! attributes and their value types), kept here in code, plus what an XSD cannot express —
//! every reference resolves, ids are unique per container, control flow graphs are well formed.
//!
//! Unlike the reader, which stops at the first problem, the validator reports every finding,
//! each located at its element's start tag. It accepts input XAIF and the output dialect
//! (derivative propagators, inlinable calls, replacement lists). Messages use the reader's
//! wording for the faults both detect.
//!
//! One named check, the activity check (`validate/activity.rs`), holds only for outputs:
//! front-end inputs break it by design until the TypeChange pass converts, so
//! [`ValidateOptions::activity`] turns it off for them.
//!
//! Without the activity check, the document is checked one child of the `CallGraph` at a time
//! (`validate/fragments.rs`), so memory holds one routine's tree, not the whole document's
//! (about 4.5 times the input); the findings are the same. The activity check, and documents
//! that do not scan cleanly (malformed ones, to report exactly where), take the whole tree.

mod activity;
mod fragments;
mod progress;
mod routine;
mod schema;
mod tree;
mod validator;

use std::sync::Arc;

use rustc_hash::FxHashSet;

pub use progress::Progress;
use schema::{Content, Value, attributes, bad_value, child_content, required_children};
use validator::{Phase, StatementIds, Step, Tables, Validator, is_statement_name, is_table_section};

use super::check::MAX_NESTING;
use super::diagnostic::{Diagnostic, LineIndex, Severity};
use super::markup::Survey;
use super::read::{ReadOptions, XAIF_NAMESPACE};
use crate::ir::{CallGraph, RoutineId};

#[derive(Clone, Debug)]
pub struct ValidateOptions {
    /// Report what lenient reading forgives (missing `formalArgCount`, duplicate edge ids,
    /// unknown attributes, dangling statement ids) as errors.
    pub strict: bool,
    /// Run the activity check: real actual arguments as active as their formals, only passive
    /// reals passed to routines without a body, derivatives only of active symbols. On by
    /// default, as every output must pass it; off for front-end inputs (`tlm.in.xaif`,
    /// `adm.in.xaif`), whose mismatches the TypeChange pass removes.
    pub activity: bool,
}

impl Default for ValidateOptions {
    fn default() -> Self {
        ValidateOptions { strict: false, activity: true }
    }
}

/// All findings about one document, in document order.
pub fn validate(input: &[u8], file: &str, options: &ValidateOptions) -> Vec<Diagnostic> {
    check(input, file, options, Checks::All)
}

/// Only the activity check's findings (and, for a document that does not parse, why), in
/// document order. Assumes an otherwise valid document: unresolved references are skipped,
/// not reported.
pub fn check_activity(input: &[u8], file: &str) -> Vec<Diagnostic> {
    check(input, file, &ValidateOptions::default(), Checks::ActivityOnly)
}

/// Where a parse error of roxmltree is best reported, as line and column. An input that ends
/// too early (cut inside a tag or attribute, before the root is closed, or before the root's
/// start tag is complete) is located where it ends: roxmltree gives such errors no position
/// (1:1), which would hide where a truncated file was cut.
fn xml_error_position(error: &roxmltree::Error, input: &[u8]) -> (usize, usize) {
    match error {
        roxmltree::Error::UnclosedRootNode | roxmltree::Error::UnexpectedEndOfStream | roxmltree::Error::NoRootNode => {
            super::diagnostic::line_column(input, input.len())
        }
        _ => {
            let position = error.pos();
            (position.row as usize, position.col as usize)
        }
    }
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Checks {
    All,
    ActivityOnly,
}

fn check(input: &[u8], file: &str, options: &ValidateOptions, checks: Checks) -> Vec<Diagnostic> {
    let findings = check_without_reader(input, file, options, checks);
    if checks == Checks::All && !findings.iter().any(|f| f.severity == Severity::Error) {
        // The semantic checks run as the reader reads (`check.rs`); reading here too makes
        // `validate` accept exactly what every mode reads. Each routine's graph is dropped once
        // read and checked, so memory stays that of one routine.
        let input = input.strip_prefix(super::read::BYTE_ORDER_MARK).unwrap_or(input);
        let read_options = ReadOptions { strict: options.strict, ..ReadOptions::default() };
        let mut drop_graph = |cg: &mut CallGraph, routine: RoutineId, _end: usize| {
            cg.routines[routine].drop_graphs();
            true
        };
        let from_reader = match super::read::read_streaming(input, file, &read_options, &mut drop_graph) {
            Ok(output) => output.warnings,
            Err(error) => error.findings().to_vec(),
        };
        return with_reader_findings(findings, from_reader);
    }
    findings
}

/// The findings of [`validate`] that need no reader (structure, tables, references; the
/// activity check if asked for), in document order. A command that reads the document anyway
/// runs these first and adds its reader's findings with [`with_reader_findings`] (when these
/// hold no error), instead of reading the document twice.
pub fn validate_without_reader(input: &[u8], file: &str, options: &ValidateOptions) -> Vec<Diagnostic> {
    check_without_reader(input, file, options, Checks::All)
}

/// [`validate`]'s findings, given those of [`validate_without_reader`] (without errors) and
/// those of reading the document (its warnings, or the findings of a failed read). What both
/// report (lenient findings) is reported once.
pub fn with_reader_findings(mut findings: Vec<Diagnostic>, from_reader: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let seen: FxHashSet<(usize, usize, &str)> =
        findings.iter().map(|f| (f.line, f.column, f.message.as_str())).collect();
    let new: Vec<Diagnostic> =
        from_reader.into_iter().filter(|f| !seen.contains(&(f.line, f.column, f.message.as_str()))).collect();
    findings.extend(new);
    findings.sort_by_key(|f| (f.line, f.column));
    findings
}

/// [`validate_without_reader`], telling `progress` how far the input has been checked and the
/// verdict, for a transformation that runs on another thread at the same time: it stops once
/// the checks have found an error ([`Progress::checked_for`]) and keeps its output only on
/// their verdict ([`Progress::wait_for`]).
pub fn validate_without_reader_progressively(
    input: &[u8],
    file: &str,
    options: &ValidateOptions,
    progress: &Progress,
) -> Vec<Diagnostic> {
    // Whatever happens here (a panic included), the waiting side is released.
    struct Finish<'p>(&'p Progress, bool);
    impl Drop for Finish<'_> {
        fn drop(&mut self) {
            self.0.finish(self.1);
        }
    }
    let mut finish = Finish(progress, false);
    let findings = check_progressively(input, file, options, Checks::All, Some(progress));
    finish.1 = !findings.iter().any(|f| f.severity == Severity::Error);
    findings
}

/// From this size on the checks take the document a child of the `CallGraph` at a time. Below
/// it the whole tree (about 4.5 times the input) is small, and one parse costs less than the
/// scan, the skeleton and the pieces: 1.6 M instructions against 2.65 M on a median corpus
/// file (18 kB), a third of a small run. The findings are the same either way.
const FRAGMENT_WISE_FROM: usize = 256 << 10;

fn check_without_reader(input: &[u8], file: &str, options: &ValidateOptions, checks: Checks) -> Vec<Diagnostic> {
    check_progressively(input, file, options, checks, None)
}

fn check_progressively(
    input: &[u8],
    file: &str,
    options: &ValidateOptions,
    checks: Checks,
    progress: Option<&Progress>,
) -> Vec<Diagnostic> {
    // Positions are counted after a byte-order mark, as the reader counts them.
    let input = input.strip_prefix(super::read::BYTE_ORDER_MARK).unwrap_or(input);
    let text = match super::utf8(input) {
        Ok(text) => text,
        Err(e) => {
            let (line, column) = super::diagnostic::line_column(input, e.valid_up_to());
            return vec![finding(
                Severity::Error,
                file,
                line,
                column,
                "document",
                "the input is not valid UTF-8".into(),
            )];
        }
    };
    // The activity check relates calls to routines anywhere in the document: it keeps the
    // whole document's tree (it runs on outputs, by `validate`, not before transformations).
    let fragment_wise = match checks {
        Checks::All if !options.activity && text.len() >= FRAGMENT_WISE_FROM => {
            fragments::check(text, file, options.strict, progress)
        }
        _ => None,
    };
    if let Some(progress) = progress {
        // Checked whole: no survey comes (after a fragment-wise scan, it came already).
        progress.survey_found(None);
    }
    let mut findings = match fragment_wise {
        Some(findings) => findings,
        None => match check_whole(text, file, options, checks) {
            Ok(findings) => findings,
            Err(malformed) => return vec![malformed],
        },
    };
    findings.sort_by_key(|f| (f.line, f.column));
    findings
}

/// The checks on the tree of the whole document: the fallback of [`fragments::check`], and the
/// path of the activity check. A document that does not parse gives its one finding as `Err`.
fn check_whole(
    text: &str,
    file: &str,
    options: &ValidateOptions,
    checks: Checks,
) -> Result<Vec<Diagnostic>, Diagnostic> {
    let input = text.as_bytes();
    let doc = match tree::parse(text) {
        Ok(doc) => doc,
        Err(tree::ParseError::Crowded(crowded)) => {
            let (line, column) = super::diagnostic::line_column(input, crowded.offset);
            return Err(finding(Severity::Error, file, line, column, crowded.element, crowded.message()));
        }
        Err(tree::ParseError::Xml(error)) => {
            let (line, column) = xml_error_position(&error, input);
            let message = match error {
                roxmltree::Error::DtdDetected => "DOCTYPE declarations are refused (no entity expansion)".to_owned(),
                other => format!("malformed XML: {other}"),
            };
            return Err(finding(Severity::Error, file, line, column, "document", message));
        }
    };
    let mut validator = Validator::new(input, file, options.strict, Arc::new([(0, 0)]));
    match checks {
        Checks::All => validator.document(doc.root_element(), options.activity),
        Checks::ActivityOnly => {
            validator.phase = Phase::Activity;
            validator.activity(doc.root_element());
        }
    }
    Ok(validator.into_findings())
}

/// An error about a place in routine `routine` (its symbol's name) that a pass or the executor
/// found, located in `input` at the statement with id `statement`, failing that at the
/// routine's vertex `vertex`, at the routine, or at the document's start.
pub fn locate(
    input: &[u8],
    file: &str,
    routine: &str,
    vertex: Option<&str>,
    statement: Option<&str>,
    message: String,
) -> Diagnostic {
    locate_element(input, file, message, |doc| {
        let routine = doc.root_element().children().find(|c| {
            matches!(c.tag_name().name(), "ControlFlowGraph" | "ReplacementList")
                && c.attribute("symbol_id") == Some(routine)
        })?;
        let by_statement =
            statement.and_then(|s| routine.descendants().find(|d| d.attribute("statement_id") == Some(s)));
        let by_vertex = || {
            let vertices = routine.descendants().filter(|d| {
                d.parent() == Some(routine)
                    || d.parent().is_some_and(|p| p.has_tag_name((XAIF_NAMESPACE, "Replacement")))
            });
            vertex.and_then(|v| vertices.filter(|d| d.is_element()).find(|d| d.attribute("vertex_id") == Some(v)))
        };
        Some(by_statement.or_else(by_vertex).unwrap_or(routine))
    })
}

/// Locates `message` at the declaration of `symbol` in the scope whose `vertex_id` is `scope`
/// (at 1:1 when the input no longer has it).
pub fn locate_symbol(input: &[u8], file: &str, scope: &str, symbol: &str, message: String) -> Diagnostic {
    locate_element(input, file, message, |doc| {
        let scope = doc
            .descendants()
            .find(|d| d.has_tag_name((XAIF_NAMESPACE, "Scope")) && d.attribute("vertex_id") == Some(scope))?;
        scope
            .descendants()
            .find(|d| d.has_tag_name((XAIF_NAMESPACE, "Symbol")) && d.attribute("symbol_id") == Some(symbol))
    })
}

/// `message` as an error at the element `find` picks in the parsed input (with the front end's
/// source line where it has one), or at the document's start when the input does not parse or
/// has no such element.
fn locate_element(
    input: &[u8],
    file: &str,
    message: String,
    find: impl for<'a, 'i> FnOnce(&'a tree::Tree<'i>) -> Option<Node<'a, 'i>>,
) -> Diagnostic {
    let input = input.strip_prefix(super::read::BYTE_ORDER_MARK).unwrap_or(input);
    let text = super::utf8(input).ok();
    let doc = text.and_then(|text| tree::parse(text).ok());
    let found = doc.as_ref().and_then(find).map(|at| {
        let source_line = at.attribute("lineNumber").filter(|l| *l != "0").map(str::to_owned);
        (at.range().start, at.tag_name().name().to_owned(), source_line)
    });
    match found {
        Some((offset, element, source_line)) => {
            let (line, column) = super::diagnostic::line_column(input, offset);
            // The front end's `lineNumber` is where the statement is in the user's source.
            let message = match source_line {
                Some(source) => format!("{message} (source line {source})"),
                None => message,
            };
            finding(Severity::Error, file, line, column, &element, message)
        }
        None => finding(Severity::Error, file, 1, 1, "document", message),
    }
}

fn finding(severity: Severity, file: &str, line: usize, column: usize, element: &str, message: String) -> Diagnostic {
    Diagnostic { severity, file: file.to_owned(), line, column, element: element.to_owned(), message }
}

type Node<'a, 'input> = tree::Node<'a, 'input>;

#[cfg(test)]
mod tests;
