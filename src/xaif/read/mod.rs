//! Streaming XAIF reader: the tokens of the `lexer` module lowered straight into the
//! [`crate::ir`] model.
//!
//! One pass over the bytes, no DOM. Names are interned as they are met; references to scopes,
//! symbols and map keys are resolved on the spot (the schema puts the scope hierarchy and the
//! maps before any routine), while graph edges, whose endpoints may come later in the
//! document, are resolved when their graph closes. Every error carries the position of the
//! element it is about.
//!
//! As each graph closes the semantic checks of [`super::check`] run on it; their errors do not
//! stop reading, so one read reports them all (`validate` shows them in full). Structural
//! errors stop at once. Elements nested deeper than [`check::MAX_NESTING`] are refused before the
//! recursion that reads them goes further. A UTF-8 byte-order mark is skipped; positions count
//! from after it.
//!
//! The reading is one `Lower`, whose methods are in this module's files by what they read:
//! `events` (the element stream), `attributes` (values, and references to what the head
//! declares), `document` (the root and its sections, routines handed to the streaming
//! driver), `head` (scopes, symbols, maps), `routines`, `statements` and `expressions`.

mod attributes;
mod document;
mod events;
mod expressions;
mod head;
mod routines;
mod statements;

use rustc_hash::{FxHashMap, FxHashSet};

use super::check::{self, Extent, Problem};
use super::diagnostic::{Diagnostic, LineIndex, Severity, line_column};
use super::intrinsics::Catalogue;
use super::lexer::Lexer;
use crate::ir::*;

/// The XAIF namespace URI.
pub const XAIF_NAMESPACE: &str = "http://www.mcs.anl.gov/XAIF";

/// The UTF-8 byte-order mark some editors put first; positions are counted after it.
pub(super) const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

#[derive(Clone, Debug)]
pub struct ReadOptions<'c> {
    /// Refuse what older front ends wrote and the reference toolchain tolerated
    /// (a `SubroutineCall` without `formalArgCount`, attributes the schema does not know,
    /// duplicate ids the reader would otherwise rename).
    pub strict: bool,
    /// The intrinsics whose operand counts the reader checks.
    pub catalogue: &'c Catalogue,
}

impl Default for ReadOptions<'static> {
    /// Lenient reading, the built-in catalogue.
    fn default() -> Self {
        ReadOptions { strict: false, catalogue: Catalogue::builtin() }
    }
}

#[derive(Debug)]
pub struct ReadOutput {
    pub call_graph: CallGraph,
    /// What lenient reading forgave and what the semantic checks warn about, located like
    /// errors, in document order.
    pub warnings: Vec<Diagnostic>,
}

/// Why a document cannot be read: at least one error, with everything else found up to
/// where reading stopped (semantic errors do not stop it), in document order.
#[derive(Debug, thiserror::Error)]
#[error("{}", self.diagnostic())]
pub struct ReadError {
    findings: Vec<Diagnostic>,
}

impl ReadError {
    fn one(diagnostic: Diagnostic) -> ReadError {
        ReadError { findings: vec![diagnostic] }
    }

    /// The first error.
    pub fn diagnostic(&self) -> &Diagnostic {
        self.findings.iter().find(|d| d.severity == Severity::Error).unwrap_or(&self.findings[0])
    }

    /// Every error and warning found.
    pub fn findings(&self) -> &[Diagnostic] {
        &self.findings
    }
}

type Result<T> = std::result::Result<T, ReadError>;

/// Reads one XAIF document. `file` is only used to locate messages.
pub fn read(input: &[u8], file: &str, options: &ReadOptions) -> Result<ReadOutput> {
    read_with(input, file, options, None, RightHandSides::Lower)
}

/// What the streaming driver does with each routine as soon as it is read: the call graph
/// holds the header (scopes, symbols, maps) and every routine read so far. It returns `false`
/// to stop reading (the reader then fails at that routine). The offset is where the routine's
/// element ends (counted after a byte-order mark).
pub type RoutineSink<'s> = dyn FnMut(&mut CallGraph, RoutineId, usize) -> bool + 's;

/// Reads one XAIF document, handing each routine to `sink` as soon as its element closes;
/// whatever the sink leaves of a routine stays in the call graph (the driver keeps the
/// routine's head and drops its graph). Findings are those of [`read`].
pub fn read_streaming(input: &[u8], file: &str, options: &ReadOptions, sink: &mut RoutineSink) -> Result<ReadOutput> {
    read_with(input, file, options, Some(sink), RightHandSides::Lower)
}

/// [`read_streaming`] for what the adjoint's first pass summarizes (what each routine writes
/// and calls): of each assignment's right-hand side, only the variable references are kept,
/// without their array indices, and the rest is skipped (its markup read as [`read`] reads it,
/// its content neither lowered nor checked). Right-hand sides are most of a document's bytes,
/// and the summaries need of them only which variable each reference names and its alias key
/// (the 2 MiB synthetic adjoint went from 630.4 M to 604.0 M instructions); the passes after
/// the first read the document whole, so what this read leaves unchecked refuses a document
/// there.
pub fn read_streaming_for_summaries(
    input: &[u8],
    file: &str,
    options: &ReadOptions,
    sink: &mut RoutineSink,
) -> Result<ReadOutput> {
    read_with(input, file, options, Some(sink), RightHandSides::ReferencesOnly)
}

/// How the reader takes assignments' right-hand sides ([`read_streaming_for_summaries`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum RightHandSides {
    Lower,
    ReferencesOnly,
}

fn read_with(
    input: &[u8],
    file: &str,
    options: &ReadOptions,
    sink: Option<&mut RoutineSink>,
    right_hand_sides: RightHandSides,
) -> Result<ReadOutput> {
    let input = input.strip_prefix(BYTE_ORDER_MARK).unwrap_or(input);
    let text = super::utf8(input).map_err(|e| {
        let offset = e.valid_up_to();
        let (line, column) = line_column(input, offset);
        ReadError::one(Diagnostic {
            severity: Severity::Error,
            file: file.to_owned(),
            line,
            column,
            element: "document".into(),
            message: "the input is not valid UTF-8".into(),
        })
    })?;
    let mut lower = Lower {
        lexer: Lexer::new(text),
        input,
        file,
        strict: options.strict,
        catalogue: options.catalogue,
        prefix: Vec::new(),
        // About one new name per 130 bytes of XAIF, of about ten bytes each (the corpus).
        // The table is capped: on large inputs, where names are sparser, a table sized for
        // the worst case is mostly empty, and its probes miss the cache. Growing costs less
        // (16 MiB identity: interning went from 4.4% to 3.4% of the process's cycles, `perf`).
        cg: CallGraph {
            size_hint: input.len(),
            names: Names::with_capacity((input.len() / 160).min(NAMES_RESERVED), input.len() / 16),
            ..CallGraph::default()
        },
        problems: Vec::new(),
        error_found: false,
        problems_seen: 0,
        scratch: check::Scratch::default(),
        expression_buffers: ExpressionBuffers::default(),
        depth: 0,
        scope_ids: FxHashMap::default(),
        alias_keys: MapKeys::new("alias", "AliasSetMap"),
        duud_keys: MapKeys::new("du_ud", "DUUDSetMap"),
        do_keys: MapKeys::new("do_chain", "DOSetMap"),
        routine_ids: FxHashMap::default(),
        calls_without_count: 0,
        statements: Vec::new(),
        // Reborrowed at a coercion site: the sink's own lifetime shrinks to the reader's.
        sink: match sink {
            Some(sink) => Some(sink as &mut RoutineSink),
            None => None,
        },
        right_hand_sides,
        skipping: Vec::new(),
    };
    let result = lower.document();
    // Every finding, located through one index (there may be many warnings); most inputs
    // have none, and indexing every line would cost a pass over the input.
    let mut findings: Vec<Diagnostic> = Vec::new();
    if !lower.problems.is_empty() {
        let index = LineIndex::new(input);
        findings.extend(lower.problems.drain(..).map(|p| {
            let (line, column) = index.line_column(p.offset);
            Diagnostic {
                severity: p.severity,
                file: file.to_owned(),
                line,
                column,
                element: p.element,
                message: p.message,
            }
        }));
    }
    if let Err(fatal) = result {
        findings.extend(fatal.findings);
    }
    findings.sort_by_key(|d| (d.line, d.column));
    if findings.iter().any(|d| d.severity == Severity::Error) {
        return Err(ReadError { findings });
    }
    Ok(ReadOutput { call_graph: lower.cg, warnings: findings })
}

/// A start tag with where it began.
struct Elem<'a> {
    /// The tag's text between `<` and `>` (without a closing `/`), borrowed from the input.
    raw: &'a str,
    name_len: usize,
    empty: bool,
    offset: usize,
    /// Local name (prefix stripped), borrowed from the input.
    name: &'a str,
}

/// The reader's state while it lowers one document into [`Lower::cg`].
struct Lower<'a> {
    lexer: Lexer<'a>,
    input: &'a [u8],
    file: &'a str,
    strict: bool,
    catalogue: &'a Catalogue,
    /// The prefix bound to the XAIF namespace, with its colon (`b"xaif:"`), or empty when the
    /// namespace is the default one.
    prefix: Vec<u8>,
    cg: CallGraph,
    /// Warnings, and errors that do not stop reading (the semantic checks'), by offset.
    problems: Vec<Problem>,
    /// Whether `problems` holds an error, as of its first `problems_seen` entries.
    error_found: bool,
    problems_seen: usize,
    scratch: check::Scratch,
    /// Buffers each expression is read with, kept from one to the next ([`ExpressionBuffers`]).
    expression_buffers: ExpressionBuffers<'a>,
    /// Elements open at the reader's position.
    depth: usize,
    scope_ids: FxHashMap<Name, ScopeId>,
    alias_keys: MapKeys<AliasSetId>,
    duud_keys: MapKeys<DuUdSetId>,
    do_keys: MapKeys<DoSetId>,
    routine_ids: FxHashMap<Name, RoutineId>,
    /// Calls read without `formalArgCount` (marked `u32::MAX` until every routine is known and
    /// the count can be inferred).
    calls_without_count: usize,
    /// Offsets of the statements of the control flow graph being read that the schema wants
    /// unique ids for, in document order.
    statements: Vec<(usize, &'a str)>,
    /// The streaming driver's consumer of finished routines.
    sink: Option<&'a mut RoutineSink<'a>>,
    right_hand_sides: RightHandSides,
    /// The elements [`Lower::skip_content`] is in, kept from one use to the next.
    skipping: Vec<(&'a str, usize)>,
}

/// The keys of one of the three maps of the head (alias, du-ud and DO sets), each with the
/// index of its set, and the words a reference to a key the map lacks is refused in: the
/// maps differ in nothing else, and references to them are resolved alike
/// ([`Lower::set_ref`]).
struct MapKeys<Id> {
    sets: FxHashMap<u64, Id>,
    /// The attribute whose values are the map's keys (`alias`, `du_ud`, `do_chain`).
    attribute: &'static str,
    /// The map's element (`AliasSetMap`, `DUUDSetMap`, `DOSetMap`).
    map: &'static str,
}

impl<Id: Copy> MapKeys<Id> {
    fn new(attribute: &'static str, map: &'static str) -> Self {
        MapKeys { sets: FxHashMap::default(), attribute, map }
    }

    /// Notes the keys of a map's sets, `sets` in document order; `id` makes a set's index
    /// the map's kind of id.
    fn index(&mut self, sets: &[StmtIdSet], id: fn(u32) -> Id) {
        for (i, set) in sets.iter().enumerate() {
            self.sets.insert(set.key, id(i as u32));
        }
    }
}

/// A graph edge whose endpoints are resolved when its graph closes.
struct PendingEdge<'a> {
    offset: usize,
    element: &'a str,
    source: Name,
    target: Name,
}

/// What reading one expression gathers besides the expression itself: its edges until its
/// vertices are known, and where each vertex stood and how deep it is, for the checks. Kept in
/// the reader and lent to each expression (an expression nested in another's index gets
/// buffers of its own). Grown anew for each, they cost the corpus's read, tangent and write
/// 5,600 of 168,800 allocations, and a 2 MiB identity's driver 1.4% of its instructions.
#[derive(Default)]
struct ExpressionBuffers<'a> {
    pending: Vec<(Name, Name, i64, PendingEdge<'a>)>,
    sites: Vec<(usize, &'a str)>,
    weights: Vec<Extent>,
}

/// The most names the reader makes room for before it has seen them.
const NAMES_RESERVED: usize = 1 << 14;

/// Finds the items of a graph being read by id: by scanning while the graph is small (most
/// are: a handful of vertices), through a hash map once it has grown, so that reading stays
/// linear in the size of large graphs.
#[derive(Default)]
struct IdIndex {
    map: Option<FxHashMap<Name, usize>>,
}

impl IdIndex {
    /// Graphs up to this size are scanned.
    const SCAN: usize = 16;

    /// The first of the `len` items (whose ids `id_at` gives) with this id.
    fn find(&self, id: Name, len: usize, id_at: impl Fn(usize) -> Name) -> Option<usize> {
        match &self.map {
            Some(map) => map.get(&id).copied(),
            None => (0..len).find(|&i| id_at(i) == id),
        }
    }

    /// Notes that the items are now `len`, the last one new.
    fn added(&mut self, len: usize, id_at: impl Fn(usize) -> Name) {
        match &mut self.map {
            Some(map) => {
                map.entry(id_at(len - 1)).or_insert(len - 1);
            }
            None if len > Self::SCAN => {
                let mut map = FxHashMap::default();
                for i in 0..len {
                    map.entry(id_at(i)).or_insert(i);
                }
                self.map = Some(map);
            }
            None => {}
        }
    }
}

/// `<id>_<k>` for the first `k` from 2 that makes an id not in `taken`.
fn fresh_id(names: &mut Names, id: Name, taken: &FxHashSet<Name>) -> Name {
    let base = names.get(id).to_owned();
    (2u64..)
        .map(|k| format!("{base}_{k}"))
        .find(|candidate| names.find(candidate).is_none_or(|name| !taken.contains(&name)))
        .map(|candidate| names.intern(&candidate))
        .expect("some suffix is free")
}
