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
mod routine;
mod tree;

/// The shared material's directory, for tests elsewhere in the crate.
#[cfg(test)]
pub(crate) use tree::tests::shared_dir as shared_dir_for_tests;

use std::sync::{Arc, OnceLock};

use rustc_hash::{FxHashMap, FxHashSet};

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

/// How far a validation running on another thread has got: the input up to an offset
/// (counted after a byte-order mark, as the reader counts) checked without error, or the
/// verdict. Offsets advance one child of the `CallGraph` at a time.
#[derive(Debug, Default)]
pub struct Progress {
    state: std::sync::Mutex<ProgressState>,
    changed: std::sync::Condvar,
}

#[derive(Debug, Default)]
struct ProgressState {
    checked_through: usize,
    /// `Some(false)` as soon as an error is found; `Some(true)` when all is checked without one.
    verdict: Option<bool>,
    survey: SurveyState,
}

impl ProgressState {
    /// The answer for the input up to `offset`: its verdict once there is one, `true` once it
    /// is checked, `None` before.
    fn checked_for(&self, offset: usize) -> Option<bool> {
        match self.verdict {
            Some(verdict) => Some(verdict),
            None if self.checked_through >= offset => Some(true),
            None => None,
        }
    }

    /// The survey once the first scan is over (taken: later calls get `Some(None)`), `None`
    /// while it may still come. `Some(None)` where it made none, or an error ended the checks
    /// first.
    fn take_survey(&mut self) -> Option<Option<Result<Survey, &'static str>>> {
        match std::mem::replace(&mut self.survey, SurveyState::Gone) {
            SurveyState::Found(found) => Some(Some(found)),
            SurveyState::Gone => Some(None),
            SurveyState::Pending if self.verdict.is_some() => Some(None),
            SurveyState::Pending => {
                self.survey = SurveyState::Pending;
                None
            }
        }
    }
}

/// The streaming driver's [`Survey`], which the checks' first scan finds on the way.
#[derive(Debug, Default)]
enum SurveyState {
    /// Not known yet.
    #[default]
    Pending,
    /// Found (or the reason the document must be read whole), not yet taken.
    Found(Result<Survey, &'static str>),
    /// The checks take another way (the whole tree), or it was taken.
    Gone,
}

impl Progress {
    /// What [`Progress::wait_for`] would return, without waiting: `None` while the input up to
    /// `offset` is not checked yet and no error was found.
    pub fn checked_for(&self, offset: usize) -> Option<bool> {
        let state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.checked_for(offset)
    }

    /// Waits until the input up to `offset` is checked: `true` when it holds no error, `false`
    /// as soon as the checks found one anywhere (the waiting side should stop: the findings
    /// are what the command reports).
    pub fn wait_for(&self, offset: usize) -> bool {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            match state.checked_for(offset) {
                Some(answer) => return answer,
                None => state = self.changed.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner),
            }
        }
    }

    /// The [`Survey`] of the document, once the checks' first scan has found it; `None` when
    /// they do not scan for it (small or malformed documents, those checked whole) or found an
    /// error first: the driver then surveys the document itself.
    pub fn take_survey(&self) -> Option<Result<Survey, &'static str>> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            match state.take_survey() {
                Some(found) => return found,
                None => state = self.changed.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner),
            }
        }
    }

    /// [`Progress::take_survey`] without waiting: `None` while the first scan may still find
    /// it.
    pub fn try_take_survey(&self) -> Option<Option<Result<Survey, &'static str>>> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take_survey()
    }

    /// The first scan is over: `found` is its survey, `None` if it made none.
    fn survey_found(&self, found: Option<Result<Survey, &'static str>>) {
        self.update(|state| {
            if matches!(state.survey, SurveyState::Pending) {
                state.survey = found.map_or(SurveyState::Gone, SurveyState::Found);
            }
        });
    }

    fn update(&self, change: impl FnOnce(&mut ProgressState)) {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        change(&mut state);
        self.changed.notify_all();
    }

    /// The input up to `offset` is checked, without an error so far.
    fn advance(&self, offset: usize) {
        self.update(|state| state.checked_through = state.checked_through.max(offset));
    }

    /// An error was found; the checks go on, for the findings.
    fn fail(&self) {
        self.update(|state| state.verdict = Some(false));
    }

    /// All is checked: `valid` when no error was found (an error found before stays).
    pub(crate) fn finish(&self, valid: bool) {
        self.update(|state| {
            if state.verdict.is_none() {
                state.verdict = Some(valid);
            }
        });
    }
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
        Err(error) => {
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

/// The value type of an attribute.
#[derive(Copy, Clone)]
enum Value {
    Text,
    Boolean,
    Integer,
    NonNegative,
    Positive,
    /// An argument position, kept in 32 bits.
    Position,
    /// A count, kept in 32 bits.
    Count,
    OneOf(&'static [&'static str]),
}

const KINDS: &[&str] = &["subroutine", "variable", "pointer"];
const TYPES: &[&str] = &["void", "integer", "real", "complex", "bool", "char", "string", "opaque"];
const SHAPES: &[&str] =
    &["void", "scalar", "vector", "matrix", "three_tensor", "four_tensor", "five_tensor", "six_tensor", "seven_tensor"];
const CONSTANT_TYPES: &[&str] = &["real", "double", "integer", "bool", "char", "string"];
const ACTIVE_USE: &[&str] = &["undefined", "true", "false", "1", "0"];
const INTENTS: &[&str] = &["in", "out", "inout"];
const REVERSALS: &[&str] = &["explicit", "anonymous"];
const BOOLEAN_OPERATIONS: &[&str] = &[
    "less_than",
    "less_or_equal",
    "greater_than",
    "greater_or_equal",
    "equal",
    "not_equal",
    "and",
    "or",
    "not",
    "xor",
];

/// How an element's content is checked; several element names share a content type.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Content {
    CallGraph,
    ScopeHierarchy,
    Scope,
    SymbolTable,
    Symbol,
    DimensionBounds,
    Edge,
    AliasSetMap,
    AliasSet,
    AliasRange,
    StmtIdSetMap,
    StmtIdSet,
    StatementId,
    ControlFlowGraph,
    ReplacementList,
    Replacement,
    ArgumentList,
    ArgumentSymbolReference,
    SideEffectList,
    VariableReference,
    Lhs,
    SymbolReference,
    SymbolReferenceProperty,
    ArrayElementReference,
    IndexTriplet,
    Expression,
    PlainVertex,
    BasicBlock,
    Conditional,
    ForLoop,
    ControlFlowEdge,
    Assignment,
    LoopAssignment,
    Constant,
    Intrinsic,
    BooleanOperation,
    FunctionCall,
    ExpressionEdge,
    SubroutineCall,
    CallArgument,
    Marker,
    InlinableSubroutineCall,
    DerivativePropagator,
    TargetSource,
    Sax,
    Ax,
    PropagatorOperand,
}

/// How many attributes [`Validator::check_attributes`] keeps on the stack (more go to the heap).
const MOST_ATTRIBUTES: usize = 16;

/// Attributes of each content type: name, value type, required.
fn attributes(content: Content) -> &'static [(&'static str, Value, bool)] {
    use Value::*;
    const VERTEX: &[(&str, Value, bool)] = &[("vertex_id", Text, false), ("annotation", Text, false)];
    const VARIABLE_REFERENCE: &[(&str, Value, bool)] = &[
        ("vertex_id", Text, false),
        ("annotation", Text, false),
        ("active", OneOf(ACTIVE_USE), false),
        ("alias", Integer, false),
        ("du_ud", Integer, false),
        ("deriv", Boolean, false),
        ("constant", Boolean, false),
    ];
    match content {
        Content::CallGraph => &[("program_name", Text, false), ("prefix", Text, false)],
        Content::ScopeHierarchy
        | Content::SymbolTable
        | Content::AliasSetMap
        | Content::StmtIdSetMap
        | Content::ArgumentList
        | Content::SideEffectList
        | Content::IndexTriplet
        | Content::Expression
        | Content::DerivativePropagator
        | Content::TargetSource
        | Content::Sax
        | Content::Ax => &[],
        Content::Scope | Content::PlainVertex | Content::ArrayElementReference => VERTEX,
        Content::Symbol => &[
            ("symbol_id", Text, true),
            ("kind", OneOf(KINDS), false),
            ("type", OneOf(TYPES), false),
            ("feType", Text, false),
            ("shape", OneOf(SHAPES), false),
            ("annotation", Text, false),
            ("active", Boolean, false),
            ("temp", Boolean, false),
            ("pointer", Boolean, false),
        ],
        Content::DimensionBounds => &[("lower", Integer, true), ("upper", Integer, true)],
        Content::Edge => {
            &[("edge_id", Text, true), ("source", Text, true), ("target", Text, true), ("annotation", Text, false)]
        }
        Content::AliasSet | Content::StmtIdSet => &[("key", NonNegative, true)],
        Content::AliasRange => &[
            ("from_virtual_address", Positive, true),
            ("to_virtual_address", Positive, true),
            ("partial", Boolean, false),
        ],
        Content::StatementId => &[("idRef", Text, false)],
        Content::ControlFlowGraph => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("symbol_id", Text, true),
            ("scope_id", Positive, true),
            ("controlflowgraph_scope_id", Positive, true),
            ("active", Boolean, false),
            ("structured", Boolean, false),
        ],
        Content::ReplacementList => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("template_name", Text, true),
            ("symbol_id", Text, true),
            ("scope_id", Positive, true),
            ("controlflowgraph_scope_id", Positive, true),
        ],
        Content::Replacement => &[("placeholder", Text, true), ("structured", Boolean, false)],
        Content::ArgumentSymbolReference => &[
            ("position", Position, true),
            ("symbol_id", Text, true),
            ("scope_id", Positive, true),
            ("annotation", Text, false),
            ("deriv", Boolean, false),
            ("intent", OneOf(INTENTS), false),
        ],
        Content::VariableReference | Content::PropagatorOperand => VARIABLE_REFERENCE,
        Content::Lhs => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("active", OneOf(ACTIVE_USE), false),
            ("alias", Integer, false),
            ("du_ud", Integer, false),
            ("deriv", Boolean, false),
            ("constant", Boolean, false),
            ("live", Boolean, false),
        ],
        Content::SymbolReference => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("symbol_id", Text, true),
            ("scope_id", Positive, true),
        ],
        Content::SymbolReferenceProperty => &[("name", Text, true), ("value", Text, true)],
        Content::BasicBlock => &[("vertex_id", Text, false), ("annotation", Text, false), ("scope_id", Positive, true)],
        Content::Conditional => {
            &[("vertex_id", Text, false), ("annotation", Text, false), ("lineNumber", NonNegative, false)]
        }
        Content::ForLoop => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("reversal", OneOf(REVERSALS), false),
            ("lineNumber", NonNegative, false),
        ],
        Content::ControlFlowEdge => &[
            ("edge_id", Text, true),
            ("source", Text, true),
            ("target", Text, true),
            ("annotation", Text, false),
            ("has_condition_value", Boolean, false),
            ("condition_value", Integer, false),
        ],
        Content::Assignment => {
            &[("statement_id", Text, true), ("do_chain", Integer, false), ("lineNumber", NonNegative, false)]
        }
        Content::LoopAssignment => &[("statement_id", Text, true), ("do_chain", Integer, false)],
        Content::Constant => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("type", OneOf(CONSTANT_TYPES), true),
            ("feType", Text, false),
            ("value", Text, true),
        ],
        Content::Intrinsic => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("name", Text, true),
            ("type", Text, false),
            ("rType", OneOf(TYPES), false),
            ("rShape", OneOf(SHAPES), false),
        ],
        Content::BooleanOperation => {
            &[("vertex_id", Text, false), ("annotation", Text, false), ("name", OneOf(BOOLEAN_OPERATIONS), true)]
        }
        Content::FunctionCall => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("symbol_id", Text, false),
            ("scope_id", Positive, false),
        ],
        Content::ExpressionEdge => &[
            ("edge_id", Text, true),
            ("source", Text, true),
            ("target", Text, true),
            ("position", Integer, true),
            ("annotation", Text, false),
        ],
        Content::SubroutineCall => &[
            ("statement_id", Text, true),
            ("symbol_id", Text, false),
            ("scope_id", Positive, false),
            ("active", OneOf(ACTIVE_USE), false),
            ("lineNumber", NonNegative, false),
            // Required by the schema; older front ends omit it (checked separately).
            ("formalArgCount", Count, false),
        ],
        Content::CallArgument => &[("position", Position, true), ("annotation", Text, false)],
        Content::Marker => &[("statement_id", Text, true), ("annotation", Text, false)],
        Content::InlinableSubroutineCall => &[("subroutine_name", Text, true), ("statement_id", Text, true)],
    }
}

/// The content type of a child element, or `None` when it may not stand there.
fn child_content(parent: Content, child: &str) -> Option<Content> {
    use Content as C;
    let vertex = |c: &str| match c {
        "Entry" | "Exit" | "EndBranch" | "EndLoop" | "Label" | "Goto" => Some(C::PlainVertex),
        "BasicBlock" => Some(C::BasicBlock),
        "If" | "Branch" | "PreLoop" | "PostLoop" => Some(C::Conditional),
        "ForLoop" => Some(C::ForLoop),
        "ControlFlowEdge" => Some(C::ControlFlowEdge),
        _ => None,
    };
    let reference_vertex = |c: &str| match c {
        "SymbolReference" => Some(C::SymbolReference),
        "ArrayElementReference" => Some(C::ArrayElementReference),
        "VariableReferenceEdge" => Some(C::Edge),
        _ => None,
    };
    match parent {
        C::CallGraph => match child {
            "ScopeHierarchy" => Some(C::ScopeHierarchy),
            "AliasSetMap" => Some(C::AliasSetMap),
            "DUUDSetMap" | "DOSetMap" => Some(C::StmtIdSetMap),
            "ControlFlowGraph" => Some(C::ControlFlowGraph),
            "ReplacementList" => Some(C::ReplacementList),
            "CallGraphEdge" => Some(C::Edge),
            _ => None,
        },
        C::ScopeHierarchy => match child {
            "Scope" => Some(C::Scope),
            "ScopeEdge" => Some(C::Edge),
            _ => None,
        },
        C::Scope => (child == "SymbolTable").then_some(C::SymbolTable),
        C::SymbolTable => (child == "Symbol").then_some(C::Symbol),
        C::Symbol => (child == "DimensionBounds").then_some(C::DimensionBounds),
        C::AliasSetMap => (child == "AliasSet").then_some(C::AliasSet),
        C::AliasSet => (child == "AliasRange").then_some(C::AliasRange),
        C::StmtIdSetMap => (child == "StmtIdSet").then_some(C::StmtIdSet),
        C::StmtIdSet => (child == "StatementId").then_some(C::StatementId),
        C::ControlFlowGraph => match child {
            "ArgumentList" => Some(C::ArgumentList),
            "ModLocal" | "Mod" | "ReadLocal" | "Read" | "OnEntry" => Some(C::SideEffectList),
            other => vertex(other),
        },
        C::ReplacementList => match child {
            "ArgumentList" => Some(C::ArgumentList),
            "Replacement" => Some(C::Replacement),
            _ => None,
        },
        C::Replacement => vertex(child),
        C::ArgumentList => (child == "ArgumentSymbolReference").then_some(C::ArgumentSymbolReference),
        C::SideEffectList => (child == "SideEffectReference").then_some(C::VariableReference),
        C::VariableReference | C::Lhs | C::PropagatorOperand => reference_vertex(child),
        C::SymbolReference => (child == "SymbolReferenceProperty").then_some(C::SymbolReferenceProperty),
        C::ArrayElementReference => (child == "IndexTriplet").then_some(C::IndexTriplet),
        C::IndexTriplet => matches!(child, "Index" | "Bound" | "Stride").then_some(C::Expression),
        C::Expression => match child {
            "VariableReference" => Some(C::VariableReference),
            "Constant" => Some(C::Constant),
            "Intrinsic" => Some(C::Intrinsic),
            "BooleanOperation" => Some(C::BooleanOperation),
            "FunctionCall" => Some(C::FunctionCall),
            "ExpressionEdge" => Some(C::ExpressionEdge),
            _ => None,
        },
        C::BasicBlock => match child {
            "Assignment" => Some(C::Assignment),
            "SubroutineCall" => Some(C::SubroutineCall),
            "Marker" => Some(C::Marker),
            "DerivativePropagator" => Some(C::DerivativePropagator),
            "InlinableSubroutineCall" => Some(C::InlinableSubroutineCall),
            _ => None,
        },
        C::Conditional => (child == "Condition").then_some(C::Expression),
        C::ForLoop => match child {
            "Initialization" | "Update" => Some(C::LoopAssignment),
            "Condition" => Some(C::Expression),
            _ => None,
        },
        C::Assignment | C::LoopAssignment => match child {
            "AssignmentLHS" => Some(C::Lhs),
            "AssignmentRHS" => Some(C::Expression),
            _ => None,
        },
        C::FunctionCall => (child == "Argument").then_some(C::VariableReference),
        C::SubroutineCall | C::InlinableSubroutineCall => (child == "Argument").then_some(C::CallArgument),
        C::CallArgument => match child {
            "VariableReference" => Some(C::VariableReference),
            "Constant" => Some(C::Constant),
            _ => None,
        },
        C::DerivativePropagator => match child {
            "SetDeriv" | "SetNegDeriv" | "IncDeriv" | "DecDeriv" => Some(C::TargetSource),
            "Sax" | "Saxpy" => Some(C::Sax),
            "ZeroDeriv" => Some(C::PropagatorOperand),
            _ => None,
        },
        C::TargetSource => matches!(child, "Tgt" | "Src").then_some(C::PropagatorOperand),
        C::Sax => match child {
            "AX" => Some(C::Ax),
            "Y" => Some(C::PropagatorOperand),
            _ => None,
        },
        C::Ax => match child {
            "A" => Some(C::Expression),
            "X" => Some(C::PropagatorOperand),
            _ => None,
        },
        C::DimensionBounds
        | C::Edge
        | C::AliasRange
        | C::StatementId
        | C::ArgumentSymbolReference
        | C::SymbolReferenceProperty
        | C::PlainVertex
        | C::ControlFlowEdge
        | C::Constant
        | C::Intrinsic
        | C::BooleanOperation
        | C::ExpressionEdge
        | C::Marker => None,
    }
}

/// Children an element must have, in the order the schema lists them.
fn required_children(content: Content) -> &'static [&'static str] {
    match content {
        Content::CallGraph => &["ScopeHierarchy", "AliasSetMap", "DUUDSetMap", "DOSetMap"],
        Content::Scope => &["SymbolTable"],
        Content::AliasSetMap => &["AliasSet"],
        Content::StmtIdSetMap => &["StmtIdSet"],
        Content::VariableReference | Content::Lhs | Content::PropagatorOperand => &["SymbolReference"],
        Content::ArrayElementReference => &["IndexTriplet"],
        Content::Assignment | Content::LoopAssignment => &["AssignmentLHS", "AssignmentRHS"],
        Content::TargetSource => &["Tgt", "Src"],
        Content::Sax => &["AX", "Y"],
        Content::Ax => &["A", "X"],
        _ => &[],
    }
}

type Node<'a, 'input> = tree::Node<'a, 'input>;

/// The phases of the checks. The whole-document path runs them one after another; findings at
/// one place keep that order whichever way the tree was parsed (see [`Validator::into_findings`]).
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Phase {
    Structure,
    Tables,
    References,
    Activity,
}

/// The checks, on nodes of whichever tree holds them: the whole document's, or one fragment's
/// (`fragments.rs`), whose offsets `map` takes back to the input's.
struct Validator<'v> {
    input: &'v [u8],
    /// Lines and columns of findings (trees keep byte offsets), the index built at the first
    /// finding.
    lines: Arc<OnceLock<LineIndex<'v>>>,
    file: &'v str,
    strict: bool,
    /// The phase findings are reported in.
    phase: Phase,
    /// `(offset in the tree's text, offset in the input)` at the start of each piece of the
    /// tree's text, in order: the tree's text is pieces of the input.
    map: Arc<[(usize, usize)]>,
    findings: Vec<(Phase, Diagnostic)>,
    /// How many of the findings are errors.
    errors: usize,
}

/// What the reference checks need, gathered in a first walk (statement ids, for the
/// fragment-wise path, in a first scan: `StatementId`s of the head refer to later routines).
#[derive(Default)]
struct Tables<'t> {
    scopes: FxHashMap<Box<str>, FxHashSet<Box<str>>>,
    alias_keys: FxHashSet<u64>,
    duud_keys: FxHashSet<u64>,
    do_keys: FxHashSet<u64>,
    statements: StatementIds<'t>,
}

/// The document's statement ids, made a set only when a `StatementId` is looked up: only the
/// head's `DUUDSetMap` and `DOSetMap` hold them, often none (or few: 21 in a 64 MiB synthetic
/// input, against 64,386 statements).
#[derive(Default)]
struct StatementIds<'t> {
    found: Vec<&'t str>,
    set: std::sync::OnceLock<FxHashSet<&'t str>>,
}

impl<'t> StatementIds<'t> {
    fn new(found: Vec<&'t str>) -> Self {
        StatementIds { found, set: std::sync::OnceLock::new() }
    }

    fn push(&mut self, id: &'t str) {
        self.found.push(id);
        self.set.take();
    }

    fn contains(&self, id: &str) -> bool {
        // Filled in document order, not from another set's hash order (which leaves a long
        // collision chain for each id when the table is smaller than the other's).
        let set = self.set.get_or_init(|| {
            let mut set = FxHashSet::with_capacity_and_hasher(self.found.len(), Default::default());
            set.extend(self.found.iter().copied());
            set
        });
        set.contains(id)
    }
}

/// Whether elements of this local name are statements, whose `statement_id`s `StatementId`
/// elements refer to.
fn is_statement(name: &str) -> bool {
    is_statement_name(name.as_bytes())
}

/// [`is_statement`] of a name as bytes.
fn is_statement_name(name: &[u8]) -> bool {
    matches!(
        name,
        b"Assignment" | b"SubroutineCall" | b"Marker" | b"Initialization" | b"Update" | b"InlinableSubroutineCall"
    )
}

/// Whether a child of the `CallGraph` with this local name feeds the [`Tables`].
fn is_table_section(name: &str) -> bool {
    matches!(name, "ScopeHierarchy" | "AliasSetMap" | "DUUDSetMap" | "DOSetMap")
}

/// What [`Validator::structure_child`] found a child to be.
#[derive(Copy, Clone)]
enum Step {
    /// An element to check in turn, as this content.
    Descend(Content),
    /// An element nested deeper than [`MAX_NESTING`].
    TooDeep,
    /// Text, a comment, or an element already reported.
    Done,
}

impl<'v> Validator<'v> {
    fn new(input: &'v [u8], file: &'v str, strict: bool, map: Arc<[(usize, usize)]>) -> Self {
        Validator {
            input,
            lines: Arc::default(),
            file,
            strict,
            phase: Phase::Structure,
            map,
            findings: Vec::new(),
            errors: 0,
        }
    }

    /// The findings, in document order; at one place, in the order of the phases.
    fn into_findings(self) -> Vec<Diagnostic> {
        let mut findings = self.findings;
        findings.sort_by_key(|(phase, f)| (f.line, f.column, *phase));
        findings.into_iter().map(|(_, f)| f).collect()
    }

    /// Line and column in the input of an offset in the tree's text.
    fn position(&self, offset: usize) -> (usize, usize) {
        let piece = self.map.partition_point(|(start, _)| *start <= offset).max(1) - 1;
        let (start, input_start) = self.map[piece];
        let lines = self.lines.get_or_init(|| LineIndex::new(self.input));
        lines.line_column(input_start + offset.saturating_sub(start))
    }

    fn report_at(&mut self, severity: Severity, offset: usize, element: &str, message: String) {
        let (line, column) = self.position(offset);
        self.errors += usize::from(severity == Severity::Error);
        self.findings.push((self.phase, finding(severity, self.file, line, column, element, message)));
    }

    fn report(&mut self, severity: Severity, node: Node, message: String) {
        self.report_at(severity, node.range().start, node.tag_name().name(), message);
    }

    fn error(&mut self, node: Node, message: String) {
        self.report(Severity::Error, node, message);
    }

    fn lenient(&mut self, node: Node, message: String) {
        let severity = if self.strict { Severity::Error } else { Severity::Warning };
        self.report(severity, node, message);
    }

    /// All checks on the tree of the whole document.
    fn document<'a>(&mut self, root: Node<'a, '_>, activity: bool) {
        self.phase = Phase::Structure;
        if !self.root(root) {
            return;
        }
        if !self.structure(root, Content::CallGraph, 1) {
            // Too deep to check further (or to read).
            return;
        }
        self.phase = Phase::Tables;
        let mut tables = Tables::default();
        for section in root.children().filter(|c| c.is_element()) {
            self.table_section(section, &mut tables);
        }
        for node in root.descendants().filter(|n| n.is_element() && is_statement(n.tag_name().name())) {
            if let Some(id) = node.attribute("statement_id") {
                tables.statements.push(id);
            }
        }
        self.phase = Phase::References;
        let routine_ids = self.routine_ids(root);
        for node in root.descendants().filter(|n| n.is_element()) {
            self.references(node, &tables, &routine_ids);
        }
        if activity {
            self.phase = Phase::Activity;
            self.activity(root);
        }
    }

    /// Whether the root element is XAIF's `CallGraph` (reported when not).
    fn root(&mut self, root: Node) -> bool {
        if root.tag_name().namespace() != Some(XAIF_NAMESPACE) {
            let message = match root.tag_name().namespace() {
                Some(uri) => format!("element is in namespace '{uri}', expected the XAIF namespace {XAIF_NAMESPACE}"),
                None => format!("element is not in the XAIF namespace {XAIF_NAMESPACE} (no namespace declaration)"),
            };
            self.error(root, message);
            return false;
        }
        if root.tag_name().name() != "CallGraph" {
            self.error(root, "the root element must be CallGraph".into());
            return false;
        }
        true
    }

    // ------------------------------------------------------------------ structure

    /// Checks an element at `depth` (the root is at 1) and what it holds; false when some
    /// element nests deeper than [`MAX_NESTING`] (then what lies below it is not checked).
    fn structure(&mut self, node: Node, content: Content, depth: usize) -> bool {
        let mut shallow = true;
        self.check_attributes(node, content);
        let mut seen_sections = 0usize;
        for child in node.children() {
            match self.structure_child(node, content, child, depth, &mut seen_sections) {
                Step::Descend(child_type) => shallow &= self.structure(child, child_type, depth + 1),
                Step::TooDeep => shallow = false,
                Step::Done => {}
            }
        }
        self.structure_end(node, content);
        shallow
    }

    /// Checks one child of `node` (at `depth`) where it stands; `seen_sections` counts the
    /// `CallGraph`'s head sections seen so far. What the child holds is for the caller.
    fn structure_child(
        &mut self,
        node: Node,
        content: Content,
        child: Node,
        depth: usize,
        seen_sections: &mut usize,
    ) -> Step {
        if child.is_text() {
            let text = child.text().unwrap_or_default();
            let leading = text.len() - text.trim_start().len();
            if leading < text.len() {
                let message = "unexpected text content".to_owned();
                self.report_at(Severity::Error, child.range().start + leading, node.tag_name().name(), message);
            }
            return Step::Done;
        }
        if !child.is_element() {
            return Step::Done;
        }
        let name = child.tag_name().name();
        if child.tag_name().namespace() != Some(XAIF_NAMESPACE) {
            self.error(child, format!("element is not in the XAIF namespace {XAIF_NAMESPACE}"));
            return Step::Done;
        }
        let Some(child_type) = child_content(content, name) else {
            self.error(child, format!("unexpected element in {}", node.tag_name().name()));
            return Step::Done;
        };
        if content == Content::CallGraph {
            let order = ["ScopeHierarchy", "AliasSetMap", "DUUDSetMap", "DOSetMap"];
            match order.iter().position(|s| *s == name) {
                Some(i) if i != *seen_sections => {
                    let message = if i < *seen_sections {
                        "appears twice in CallGraph".to_owned()
                    } else {
                        format!("must come after {}", order[*seen_sections])
                    };
                    self.error(child, message);
                }
                Some(_) => *seen_sections += 1,
                None if *seen_sections < order.len() => {
                    self.error(child, format!("unexpected here: CallGraph needs {} first", order[*seen_sections]));
                }
                None => {}
            }
        }
        if depth + 1 > MAX_NESTING {
            self.error(child, format!("elements nest deeper than {MAX_NESTING} levels"));
            return Step::TooDeep;
        }
        Step::Descend(child_type)
    }

    /// The checks of an element after its children: required children and attributes.
    fn structure_end(&mut self, node: Node, content: Content) {
        // At most four names, each looked for among the children: no set to build for the
        // elements (most) that require none.
        for needed in required_children(content) {
            if !node.children().any(|c| c.is_element() && c.tag_name().name() == *needed) {
                self.error(node, format!("missing required child {needed}"));
            }
        }
        if content == Content::SubroutineCall && node.attribute("formalArgCount").is_none() {
            let inferred = if self.strict { "" } else { " (inferred)" };
            self.lenient(node, format!("missing required attribute 'formalArgCount'{inferred}"));
        }
    }

    fn check_attributes(&mut self, node: Node, content: Content) {
        let known = attributes(content);
        // One pass over the element's attributes finds the value of each known one (the first
        // of a name, as `Node::attribute` would) and whether any is unknown, instead of a search
        // of them per known name (this ran for every element: 3% of a small tangent run).
        let mut inline = [None::<&str>; MOST_ATTRIBUTES];
        let mut spilled;
        let values: &mut [Option<&str>] = match inline.get_mut(..known.len()) {
            Some(values) => values,
            None => {
                spilled = vec![None; known.len()];
                &mut spilled
            }
        };
        let mut unknown = false;
        for attribute in node.attributes() {
            if attribute.namespace().is_some() {
                continue;
            }
            match known.iter().position(|(name, _, _)| *name == attribute.name()) {
                Some(index) => {
                    values[index].get_or_insert(attribute.value());
                }
                None => unknown = true,
            }
        }
        for ((name, value, required), found) in known.iter().zip(values.iter().copied()) {
            match found {
                None if *required => self.error(node, format!("missing required attribute '{name}'")),
                None => {}
                Some(text) => {
                    if let Some(expected) = bad_value(*value, text) {
                        self.error(node, format!("attribute '{name}' has value '{text}', expected {expected}"));
                    }
                }
            }
        }
        if unknown {
            for attribute in node.attributes() {
                if attribute.namespace().is_some() {
                    continue;
                }
                if !known.iter().any(|(name, _, _)| *name == attribute.name()) {
                    let dropped = if self.strict { "" } else { " (dropped)" };
                    self.lenient(node, format!("unknown attribute '{}'{dropped}", attribute.name()));
                }
            }
        }
    }

    // ------------------------------------------------------------------ references

    /// Adds what a child of the `CallGraph` declares (scopes and their symbols, map keys) to
    /// `tables`; other children add nothing.
    fn table_section(&mut self, section: Node, tables: &mut Tables) {
        match section.tag_name().name() {
            "ScopeHierarchy" => {
                for scope in section.children().filter(|c| c.has_tag_name((XAIF_NAMESPACE, "Scope"))) {
                    let id = scope.attribute("vertex_id").unwrap_or("1");
                    if tables.scopes.contains_key(id) {
                        self.error(scope, format!("duplicate vertex_id '{id}' in ScopeHierarchy"));
                        continue;
                    }
                    let mut symbols = FxHashSet::default();
                    for symbol in scope.descendants().filter(|c| c.has_tag_name((XAIF_NAMESPACE, "Symbol"))) {
                        let Some(name) = symbol.attribute("symbol_id") else { continue };
                        if !symbols.insert(Box::from(name)) {
                            self.error(symbol, format!("duplicate symbol_id '{name}' in scope {id}"));
                        }
                    }
                    tables.scopes.insert(id.into(), symbols);
                }
            }
            "AliasSetMap" | "DUUDSetMap" | "DOSetMap" => {
                let what = section.tag_name().name();
                let mut keys = FxHashSet::default();
                for set in section.children().filter(|c| c.is_element()) {
                    let Some(key) = set.attribute("key").and_then(|k| k.trim().parse::<u64>().ok()) else {
                        continue;
                    };
                    if !keys.insert(key) {
                        self.error(set, format!("duplicate key {key} in {what}"));
                    }
                }
                match what {
                    "AliasSetMap" => tables.alias_keys = keys,
                    "DUUDSetMap" => tables.duud_keys = keys,
                    _ => tables.do_keys = keys,
                }
            }
            _ => {}
        }
    }

    /// The `vertex_id`s of the routines under the `CallGraph` `root`, each reported where it
    /// repeats.
    fn routine_ids<'a>(&mut self, root: Node<'a, '_>) -> FxHashSet<&'a str> {
        let mut routine_ids = FxHashSet::default();
        for routine in root.children().filter(|c| matches!(c.tag_name().name(), "ControlFlowGraph" | "ReplacementList"))
        {
            let id = routine.attribute("vertex_id").unwrap_or("1");
            if !routine_ids.insert(id) {
                self.error(routine, format!("duplicate vertex_id '{id}' in CallGraph"));
            }
        }
        routine_ids
    }

    /// The reference checks of one element (and of the graphs it holds).
    fn references(&mut self, node: Node, tables: &Tables, routine_ids: &FxHashSet<&str>) {
        let name = node.tag_name().name();
        match name {
            "ScopeEdge" => {
                for end in ["source", "target"] {
                    if let Some(v) = node.attribute(end).filter(|v| !tables.scopes.contains_key(*v)) {
                        self.error(node, format!("{end} '{v}' names no scope"));
                    }
                }
            }
            "CallGraphEdge" => {
                for end in ["source", "target"] {
                    if let Some(v) = node.attribute(end).filter(|v| !routine_ids.contains(v)) {
                        self.error(node, format!("{end} '{v}' names no vertex of the CallGraph"));
                    }
                }
            }
            "ControlFlowGraph" | "Replacement" => self.flow_graph(node),
            "AssignmentRHS" | "Condition" | "Index" | "Bound" | "Stride" | "A" => self.expression_graph(node),
            _ => {}
        }
        if child_is_reference(node) {
            self.reference_graph(node);
        }
        // Symbol and scope references.
        let scope_attribute = match name {
            "BasicBlock" => Some("scope_id"),
            "ControlFlowGraph" | "ReplacementList" => Some("controlflowgraph_scope_id"),
            _ => None,
        };
        if let Some(attribute) = scope_attribute
            && let Some(scope) = node.attribute(attribute)
            && !tables.scopes.contains_key(scope)
        {
            self.error(node, format!("{attribute} '{scope}' names no scope"));
        }
        if matches!(
            name,
            "SymbolReference"
                | "ArgumentSymbolReference"
                | "ControlFlowGraph"
                | "ReplacementList"
                | "SubroutineCall"
                | "FunctionCall"
        ) && let (Some(symbol), Some(scope)) = (node.attribute("symbol_id"), node.attribute("scope_id"))
        {
            match tables.scopes.get(scope) {
                None => self.error(node, format!("scope_id '{scope}' names no scope")),
                Some(symbols) if !symbols.contains(symbol) => {
                    self.error(node, format!("symbol '{symbol}' is not declared in scope {scope}"));
                }
                Some(_) => {}
            }
        }
        // Map keys (0 means "no information" and is always allowed). Most elements carry none:
        // one pass over the attributes finds the three names, rather than a search for each.
        let maps = [
            ("alias", &tables.alias_keys, "AliasSetMap"),
            ("du_ud", &tables.duud_keys, "DUUDSetMap"),
            ("do_chain", &tables.do_keys, "DOSetMap"),
        ];
        let mut key_values = [None; 3];
        for attribute in node.attributes().filter(|a| a.namespace().is_none()) {
            if let Some(index) = maps.iter().position(|(name, ..)| *name == attribute.name()) {
                key_values[index].get_or_insert(attribute.value());
            }
        }
        for ((attribute, keys, map), value) in maps.into_iter().zip(key_values) {
            let Some(value) = value else { continue };
            let Ok(key) = value.trim().parse::<i64>() else { continue };
            if key != 0 && !u64::try_from(key).is_ok_and(|k| keys.contains(&k)) {
                self.error(node, format!("{attribute} key {value} is not in the {map}"));
            }
        }
        if name == "StatementId"
            && let Some(id) = node.attribute("idRef")
            && !id.is_empty()
            && !tables.statements.contains(id)
        {
            self.lenient(node, format!("idRef '{id}' names no statement of the document"));
        }
    }
    /// Unique vertex ids, edges between existing vertices, and the shape of the graph.
    fn flow_graph(&mut self, graph: Node) {
        let container = graph.tag_name().name();
        let vertices: Vec<Node> = graph
            .children()
            .filter(|c| c.is_element() && child_content(Content::Replacement, c.tag_name().name()).is_some())
            .filter(|c| c.tag_name().name() != "ControlFlowEdge")
            .collect();
        let mut ids: FxHashMap<&str, Node> = FxHashMap::default();
        for vertex in &vertices {
            let id = vertex.attribute("vertex_id").unwrap_or("1");
            if ids.insert(id, *vertex).is_some() {
                self.error(*vertex, format!("duplicate vertex_id '{id}' in {container}"));
            }
        }
        let mut edge_ids = FxHashSet::default();
        let count = |kind: &str| vertices.iter().filter(|v| v.tag_name().name() == kind).count();
        for edge in graph.children().filter(|c| c.has_tag_name((XAIF_NAMESPACE, "ControlFlowEdge"))) {
            if let Some(id) = edge.attribute("edge_id")
                && !edge_ids.insert(id)
            {
                self.lenient(edge, format!("duplicate edge_id '{id}' in {container}"));
            }
            for end in ["source", "target"] {
                let Some(v) = edge.attribute(end) else { continue };
                match ids.get(v) {
                    None => self.error(edge, format!("{end} '{v}' names no vertex of this {container}")),
                    Some(vertex) => match (end, vertex.tag_name().name()) {
                        ("target", "Entry") => {
                            self.error(edge, format!("an edge may not enter the Entry vertex '{v}'"))
                        }
                        ("source", "Exit") => self.error(edge, format!("an edge may not leave the Exit vertex '{v}'")),
                        _ => {}
                    },
                }
            }
        }
        // An empty graph is allowed: modules have routines without code, and a replacement
        // may leave its placeholder empty.
        if !vertices.is_empty() {
            for kind in ["Entry", "Exit"] {
                let found = count(kind);
                if found != 1 {
                    self.error(graph, format!("needs exactly one {kind} vertex, found {found}"));
                }
            }
        }
        let structured = !matches!(graph.attribute("structured"), Some("false" | "0"));
        if structured {
            // Two-way `If`s and multi-way `Branch`es both close with an `EndBranch`.
            let (branches, ends) = (count("Branch") + count("If"), count("EndBranch"));
            if branches != ends {
                self.error(graph, format!("structured graph has {branches} If/Branch but {ends} EndBranch vertices"));
            }
            let loops = count("ForLoop") + count("PreLoop") + count("PostLoop");
            let end_loops = count("EndLoop");
            if loops != end_loops {
                self.error(graph, format!("structured graph has {loops} loops but {end_loops} EndLoop vertices"));
            }
        }
    }

    fn expression_graph(&mut self, expression: Node) {
        let container = expression.tag_name().name();
        let mut ids = SeenIds::default();
        for vertex in expression.children().filter(|c| c.is_element() && c.tag_name().name() != "ExpressionEdge") {
            let id = vertex.attribute("vertex_id").unwrap_or("1");
            if !ids.insert(id) {
                self.error(vertex, format!("duplicate vertex_id '{id}' in {container}"));
            }
        }
        self.edges(expression, "ExpressionEdge", &ids, container);
    }

    fn reference_graph(&mut self, reference: Node) {
        let container = reference.tag_name().name();
        let mut ids = SeenIds::default();
        for vertex in
            reference.children().filter(|c| matches!(c.tag_name().name(), "SymbolReference" | "ArrayElementReference"))
        {
            let id = vertex.attribute("vertex_id").unwrap_or("1");
            if !ids.insert(id) {
                self.error(vertex, format!("duplicate vertex_id '{id}' in {container}"));
            }
        }
        self.edges(reference, "VariableReferenceEdge", &ids, container);
    }

    fn edges(&mut self, graph: Node, element: &str, ids: &SeenIds, container: &str) {
        let mut edge_ids = SeenIds::default();
        for edge in graph.children().filter(|c| c.has_tag_name((XAIF_NAMESPACE, element))) {
            if let Some(id) = edge.attribute("edge_id")
                && !edge_ids.insert(id)
            {
                self.lenient(edge, format!("duplicate edge_id '{id}' in {container}"));
            }
            for end in ["source", "target"] {
                if let Some(v) = edge.attribute(end).filter(|v| !ids.contains(v)) {
                    self.error(edge, format!("{end} '{v}' names no vertex of this {container}"));
                }
            }
        }
    }
}

/// The ids met so far in one expression or reference graph, to find repeats: a list searched
/// from its start while it is short, a hash set beyond. Most of these graphs have a handful of
/// vertices and edges, and a hash set made and grown for each of them cost more than the checks
/// themselves (its growth alone was 2% of validating a large document).
#[derive(Default)]
struct SeenIds<'a> {
    few: smallvec::SmallVec<[&'a str; SeenIds::FEW]>,
    many: FxHashSet<&'a str>,
}

impl<'a> SeenIds<'a> {
    const FEW: usize = 16;

    /// Adds `id`: `false` when it was met before.
    fn insert(&mut self, id: &'a str) -> bool {
        if self.many.is_empty() {
            if self.few.contains(&id) {
                return false;
            }
            if self.few.len() < Self::FEW {
                self.few.push(id);
                return true;
            }
            self.many.extend(self.few.drain(..));
        }
        self.many.insert(id)
    }

    fn contains(&self, id: &str) -> bool {
        if self.many.is_empty() { self.few.contains(&id) } else { self.many.contains(id) }
    }
}

/// Whether an element holds a variable reference graph (`VariableReferenceType` content).
fn child_is_reference(node: Node) -> bool {
    node.children().any(|c| c.has_tag_name((XAIF_NAMESPACE, "SymbolReference")))
}

/// What a value should have been, when it is not of its type.
fn bad_value(value: Value, text: &str) -> Option<String> {
    let ok = match value {
        Value::Text => true,
        Value::Boolean => matches!(text, "true" | "false" | "1" | "0"),
        Value::Integer => text.trim().parse::<i64>().is_ok(),
        Value::NonNegative => text.trim().parse::<u64>().is_ok(),
        Value::Positive => text.trim().parse::<u64>().is_ok_and(|n| n > 0),
        Value::Position => text.trim().parse::<u32>().is_ok_and(|n| n > 0),
        Value::Count => text.trim().parse::<u32>().is_ok(),
        Value::OneOf(allowed) => allowed.contains(&text),
    };
    if ok {
        return None;
    }
    Some(match value {
        Value::Text => unreachable!("text is always valid"),
        Value::Boolean => "a boolean (true, false, 1, 0)".into(),
        Value::Integer => "an integer".into(),
        Value::NonNegative => "a non-negative integer".into(),
        Value::Positive => "a positive integer".into(),
        // Numbers too large for the IR's 32 bits are told apart from those of the wrong sign.
        Value::Position if text.trim().parse::<u64>().is_ok_and(|n| n > 0) => "a positive integer below 2^32".into(),
        Value::Position => "a positive integer".into(),
        Value::Count if text.trim().parse::<u64>().is_ok() => "a non-negative integer below 2^32".into(),
        Value::Count => "a non-negative integer".into(),
        Value::OneOf(allowed) => format!("one of {}", allowed.join(", ")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"<xaif:CallGraph xmlns:xaif="http://www.mcs.anl.gov/XAIF">
<xaif:ScopeHierarchy><xaif:Scope vertex_id="1"><xaif:SymbolTable>
<xaif:Symbol symbol_id="head" kind="subroutine"/><xaif:Symbol symbol_id="x"/>
</xaif:SymbolTable></xaif:Scope></xaif:ScopeHierarchy>
<xaif:AliasSetMap><xaif:AliasSet key="0"/></xaif:AliasSetMap>
<xaif:DUUDSetMap><xaif:StmtIdSet key="0"/></xaif:DUUDSetMap>
<xaif:DOSetMap><xaif:StmtIdSet key="0"/></xaif:DOSetMap>
"#;

    /// The set of statement ids answers for every id pushed, also those pushed after it was
    /// first asked.
    #[test]
    fn statement_ids_answer_for_every_id_pushed() {
        let mut ids = StatementIds::new(vec!["s1", "s2", "s1"]);
        assert!(ids.contains("s1") && ids.contains("s2"));
        assert!(!ids.contains("s3") && !ids.contains("") && !ids.contains("s"));
        ids.push("s3");
        assert!(ids.contains("s3") && ids.contains("s1"));
        let many: Vec<String> = (0..20_000).map(|k| format!("r{}_s{}", k / 50, k % 50)).collect();
        let ids = StatementIds::new(many.iter().map(String::as_str).collect());
        assert!(many.iter().all(|id| ids.contains(id)));
        assert!(!ids.contains("r400_s0") && !ids.contains("r0_s50"));
    }

    fn messages(body: &str, strict: bool) -> Vec<String> {
        let text = format!("{HEAD}{body}</xaif:CallGraph>");
        validate(text.as_bytes(), "t.xaif", &ValidateOptions { strict, activity: true })
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// Repeats are found whether the ids are still listed or already hashed, and across the
    /// switch from one to the other.
    #[test]
    fn seen_ids_find_repeats_before_and_after_they_outgrow_the_list() {
        let ids: Vec<String> = (0..3 * SeenIds::FEW).map(|k| k.to_string()).collect();
        for count in [1, SeenIds::FEW - 1, SeenIds::FEW, SeenIds::FEW + 1, 3 * SeenIds::FEW] {
            let mut seen = SeenIds::default();
            for id in &ids[..count] {
                assert!(!seen.contains(id), "{id} of {count}");
                assert!(seen.insert(id), "{id} of {count}");
                assert!(seen.contains(id), "{id} of {count}");
            }
            for id in &ids[..count] {
                assert!(!seen.insert(id), "{id} repeated, of {count}");
            }
            assert!(!seen.contains("none"), "of {count}");
        }
    }

    #[test]
    fn a_well_formed_routine_has_no_findings() {
        let body = r#"<xaif:ControlFlowGraph symbol_id="head" scope_id="1" controlflowgraph_scope_id="1">
<xaif:Entry vertex_id="1"/><xaif:Exit vertex_id="2"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>
</xaif:ControlFlowGraph>"#;
        assert_eq!(messages(body, true), Vec::<String>::new());
    }

    #[test]
    fn every_finding_is_reported_in_document_order() {
        let body = r#"<xaif:ControlFlowGraph symbol_id="nobody" scope_id="1" controlflowgraph_scope_id="1">
<xaif:Entry vertex_id="1"/><xaif:Entry vertex_id="1"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="9" has_condition_value="maybe"/>
</xaif:ControlFlowGraph>"#;
        assert_eq!(
            messages(body, false),
            vec![
                "t.xaif:8:1: ControlFlowGraph: needs exactly one Entry vertex, found 2",
                "t.xaif:8:1: ControlFlowGraph: needs exactly one Exit vertex, found 0",
                "t.xaif:8:1: ControlFlowGraph: symbol 'nobody' is not declared in scope 1",
                "t.xaif:9:28: Entry: duplicate vertex_id '1' in ControlFlowGraph",
                "t.xaif:10:1: ControlFlowEdge: attribute 'has_condition_value' has value 'maybe', expected a boolean (true, false, 1, 0)",
                "t.xaif:10:1: ControlFlowEdge: target '9' names no vertex of this ControlFlowGraph",
            ]
        );
    }

    #[test]
    fn lenient_findings_are_warnings_unless_strict() {
        let body = r#"<xaif:ControlFlowGraph symbol_id="head" scope_id="1" controlflowgraph_scope_id="1" colour="red">
<xaif:Entry vertex_id="1"/><xaif:Exit vertex_id="2"/><xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>
</xaif:ControlFlowGraph>"#;
        assert_eq!(
            messages(body, false),
            vec!["t.xaif:8:1: warning: ControlFlowGraph: unknown attribute 'colour' (dropped)"]
        );
        assert_eq!(messages(body, true), vec!["t.xaif:8:1: ControlFlowGraph: unknown attribute 'colour'"]);
    }

    /// `x` has neither `type` nor `active`: by the schema's defaults it is an active real, so a
    /// real constant may not stand for it; an integer constant is not real data and is skipped.
    #[test]
    fn the_activity_check_applies_schema_defaults_and_is_off_for_inputs() {
        let body = r#"<xaif:ControlFlowGraph symbol_id="head" scope_id="1" controlflowgraph_scope_id="1">
<xaif:ArgumentList><xaif:ArgumentSymbolReference position="1" symbol_id="x" scope_id="1"/></xaif:ArgumentList>
<xaif:Entry vertex_id="1"/><xaif:BasicBlock vertex_id="2" scope_id="1">
<xaif:SubroutineCall statement_id="c1" symbol_id="head" scope_id="1" formalArgCount="1">
<xaif:Argument position="1"><xaif:Constant type="real" value="1.0"/></xaif:Argument></xaif:SubroutineCall>
<xaif:SubroutineCall statement_id="c2" symbol_id="head" scope_id="1" formalArgCount="1">
<xaif:Argument position="1"><xaif:Constant type="integer" value="1"/></xaif:Argument></xaif:SubroutineCall>
</xaif:BasicBlock><xaif:Exit vertex_id="3"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/><xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>
</xaif:ControlFlowGraph>"#;
        assert_eq!(
            messages(body, true),
            vec![
                "t.xaif:12:1: Argument: argument 1 of the call to 'head' (statement c1): actual constant 1.0 is passive, \
                 formal 'x' is active"
            ]
        );
        let text = format!("{HEAD}{body}</xaif:CallGraph>");
        assert_eq!(validate(text.as_bytes(), "t.xaif", &ValidateOptions { strict: true, activity: false }), Vec::new());
    }

    /// The fragment-wise checks find exactly what the whole document's tree finds: over the
    /// test data, documents with findings at the top level, and a few mutations of each file.
    #[test]
    fn the_checks_survey_documents_as_the_streaming_driver_would() {
        let routine = |name: &str, ids: [&str; 2]| {
            format!(
                r#"<xaif:ControlFlowGraph vertex_id="r" symbol_id="{name}" scope_id="1" controlflowgraph_scope_id="1">
<xaif:Entry vertex_id="1"/><xaif:BasicBlock vertex_id="2" scope_id="1">
<xaif:Marker statement_id="{}"/><xaif:Marker statement_id="{}"/></xaif:BasicBlock><xaif:Exit vertex_id="3"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/><xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>
</xaif:ControlFlowGraph>"#,
                ids[0], ids[1]
            )
        };
        let mut documents = vec![
            // Ids repeated across routines are fine; within one, the document is read whole.
            format!("{HEAD}{}{}</xaif:CallGraph>", routine("head", ["m1", "m2"]), routine("x", ["m1", "m3"])),
            format!("{HEAD}{}{}</xaif:CallGraph>", routine("head", ["m1", "m2"]), routine("x", ["m3", "m3"])),
            // Ids the parser decodes: the routine's name, then a statement's.
            format!("{HEAD}{}</xaif:CallGraph>", routine("h&#101;ad", ["m1", "m2"])),
            format!("{HEAD}{}</xaif:CallGraph>", routine("head", ["m&amp;1", "m2"])),
            format!("{HEAD}<!-- {} --></xaif:CallGraph>", routine("head", ["m1", "m2"])),
        ];
        let testdata = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/tangent");
        for entry in std::fs::read_dir(testdata).expect("test data").flatten() {
            if let Ok(text) = std::fs::read_to_string(entry.path()) {
                documents.push(text);
            }
        }
        let mut surveyed = [0usize; 2];
        for text in &documents {
            let progress = Progress::default();
            let fragment_wise = fragments::check_in_windows(text, "t.xaif", false, Some(&progress), 1);
            match progress.take_survey() {
                Some(found) => {
                    let own = Survey::of(text.as_bytes());
                    surveyed[usize::from(own.is_err())] += 1;
                    assert_eq!(found, own, "{text}");
                }
                // The checks survey every document they check in pieces.
                None => assert!(fragment_wise.is_none(), "{text}"),
            }
            // Taken once.
            assert!(progress.take_survey().is_none());
        }
        assert!(surveyed[0] >= documents.len() / 2 && surveyed[1] >= 2, "{surveyed:?} of {}", documents.len());
    }

    /// Asking without waiting answers what waiting would, as the checks advance and after an
    /// error.
    #[test]
    fn checked_for_answers_what_wait_for_would() {
        let progress = Progress::default();
        assert_eq!(progress.checked_for(10), None);
        progress.advance(10);
        assert_eq!(progress.checked_for(10), Some(true));
        assert_eq!(progress.checked_for(11), None);
        assert!(progress.wait_for(10));
        progress.fail();
        assert_eq!(progress.checked_for(11), Some(false));
        assert!(!progress.wait_for(11));
        progress.finish(true);
        assert_eq!(progress.checked_for(usize::MAX), Some(false), "an error stays");
    }

    #[test]
    fn fragment_wise_findings_are_the_whole_documents() {
        fn xaif_files(dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).expect("test data").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    xaif_files(&path, files);
                } else if path.extension().is_some_and(|e| e == "xaif") {
                    files.push(path);
                }
            }
        }
        let mut files = Vec::new();
        xaif_files(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata"), &mut files);
        files.sort();
        let mut documents: Vec<String> = Vec::new();
        for file in &files {
            let bytes = std::fs::read(file).expect("readable");
            let Ok(text) = String::from_utf8(bytes) else { continue };
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text).to_owned();
            // Mutations: a line dropped, a line repeated, text and a comment at the top level.
            let lines: Vec<&str> = text.lines().collect();
            for k in [lines.len() / 3, lines.len() / 2, lines.len().saturating_sub(3)] {
                let mut dropped = lines.clone();
                if k < dropped.len() {
                    dropped.remove(k);
                }
                documents.push(dropped.join("\n"));
                let mut repeated = lines.clone();
                if k < repeated.len() {
                    repeated.insert(k, lines[k]);
                }
                documents.push(repeated.join("\n"));
            }
            documents.push(text.replacen("<xaif:AliasSetMap", "oops <!-- c --> &amp; <xaif:AliasSetMap", 1));
            documents.push(text);
        }
        let head = HEAD.replace(
            "<xaif:AliasSetMap>",
            "<!-- comment --> text <![CDATA[x]]> <?pi?><xaif:CallGraphEdge edge_id=\"1\" source=\"1\" target=\"9\"/>\
             <xaif:AliasSetMap>",
        );
        let routine = r#"<xaif:ControlFlowGraph vertex_id="r" symbol_id="head" scope_id="1" controlflowgraph_scope_id="1">
<xaif:Entry vertex_id="1"/><xaif:BasicBlock vertex_id="2" scope_id="1">
<xaif:Marker statement_id="m1"/></xaif:BasicBlock><xaif:Exit vertex_id="3"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/><xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>
</xaif:ControlFlowGraph>"#;
        documents.extend([
            format!("{head}{routine}{routine}</xaif:CallGraph>"),
            format!("{HEAD}{routine}<x:Other xmlns:x=\"urn:x\"><x:a/></x:Other>\n<ReplacementList/></xaif:CallGraph>"),
            format!("{}{routine}</xaif:CallGraph>", HEAD.replace("<xaif:AliasSetMap>", "<xaif:DOSetMap/><xaif:AliasSetMap>")),
            format!("{}{routine}</xaif:CallGraph>", HEAD.replace("key=\"0\"/></xaif:DUUDSetMap>", "key=\"0\"><xaif:StatementId idRef=\"m1\"/><xaif:StatementId idRef=\"m2\"/></xaif:StmtIdSet></xaif:DUUDSetMap>")),
            // A `StatementId` out of place, in a routine: its idRef is looked up all the same.
            format!(
                "{HEAD}{routine}{}</xaif:CallGraph>",
                routine.replace("<xaif:Marker statement_id=\"m1\"/>", "<xaif:StatementId idRef=\"m1\"/><xaif:StatementId idRef=\"m3\"/>")
            ),
            format!("{}{routine}</xaif:CallGraph>", HEAD.replace("xmlns:xaif=", "alias=\"3\" colour=\"red\" xmlns:xaif=")),
            format!("{HEAD}{routine}</xaif:CallGraph><!-- after -->\n"),
            format!("{HEAD}</xaif:CallGraph>"),
            "<xaif:CallGraph xmlns:xaif=\"http://www.mcs.anl.gov/XAIF\"/>".to_owned(),
            "<CallGraph><ScopeHierarchy/></CallGraph>".to_owned(),
        ]);
        let mut pieces = 0;
        for text in &documents {
            for strict in [false, true] {
                let options = ValidateOptions { strict, activity: false };
                let whole = check_whole(text, "t.xaif", &options, Checks::All);
                // One child after the other, and three at a time on every core.
                let in_parallel = fragments::check_in_windows(text, "t.xaif", strict, None, 3);
                match fragments::check_in_windows(text, "t.xaif", strict, None, 1) {
                    Some(fragment_wise) => {
                        assert_eq!(in_parallel.as_ref(), Some(&fragment_wise), "{text}");
                        assert_eq!(Ok(fragment_wise), whole, "{text}");
                        pieces += 1;
                    }
                    // Only malformed documents, or too deep ones, are checked whole.
                    None if in_parallel.is_some() => panic!("checked whole one child at a time only: {text}"),
                    None => assert!(
                        whole.as_ref().is_err()
                            || whole.as_ref().is_ok_and(|f| f.iter().any(|f| f.message.contains("nest deeper"))),
                        "{text}"
                    ),
                }
            }
        }
        assert!(pieces >= files.len() * 2, "{pieces} of {} checked in pieces", documents.len() * 2);
    }
}
