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
//! errors stop at once. Elements nested deeper than [`MAX_NESTING`] are refused before the
//! recursion that reads them goes further. A UTF-8 byte-order mark is skipped; positions count
//! from after it.

use std::borrow::Cow;

use quick_xml::events::BytesStart;
use rustc_hash::{FxHashMap, FxHashSet};

use super::check::{self, ExpressionSite, Extent, FlowSite, MAX_NESTING, Problem};
use super::diagnostic::{Diagnostic, LineIndex, Severity, line_column};
use super::intrinsics::Catalogue;
use super::lexer::{Lexer, Token};
use crate::bytes::same_length_eq;
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
        alias_keys: FxHashMap::default(),
        duud_keys: FxHashMap::default(),
        do_keys: FxHashMap::default(),
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
    alias_keys: FxHashMap<u64, AliasSetId>,
    duud_keys: FxHashMap<u64, DuUdSetId>,
    do_keys: FxHashMap<u64, DoSetId>,
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

/// Bytes that end an attribute name: `=` or white space.
static KEY_STOP: [bool; 256] = byte_set(b"= \t\r\n");

/// Whether `bytes` begins with the attribute name `key`, whole (a byte that ends a name follows).
#[inline]
fn key_at(bytes: &[u8], key: &[u8]) -> bool {
    bytes
        .get(..=key.len())
        .is_some_and(|window| same_length_eq(&window[..key.len()], key) && KEY_STOP[window[key.len()] as usize])
}

/// Bytes the attribute value scanner stops at: quotes (the closing one ends the value) and
/// what needs decoding (references, and white space other than blanks, which XML normalizes).
static VALUE_STOP: [bool; 256] = byte_set(b"\"'&<\t\r\n");

const fn byte_set(members: &[u8]) -> [bool; 256] {
    let mut set = [false; 256];
    let mut i = 0;
    while i < members.len() {
        set[members[i] as usize] = true;
        i += 1;
    }
    set
}

impl<'a> Lower<'a> {
    // ---------------------------------------------------------------- errors and positions

    fn error(&self, offset: usize, element: &str, message: impl Into<String>) -> ReadError {
        let (line, column) = line_column(self.input, offset);
        let file = self.file.to_owned();
        let (element, message) = (element.to_owned(), message.into());
        ReadError::one(Diagnostic { severity: Severity::Error, file, line, column, element, message })
    }

    /// A finding that is an error when strict and a warning otherwise.
    fn lenient(&mut self, offset: usize, element: &str, message: String) -> Result<()> {
        if self.strict {
            return Err(self.error(offset, element, message));
        }
        let element = element.to_owned();
        self.problems.push(Problem { offset, element, severity: Severity::Warning, message });
        Ok(())
    }

    /// Edge ids are never referenced, so a repeated one loses nothing; older front ends wrote
    /// them (the reference engine accepts them too).
    fn duplicate_edge(&mut self, offset: usize, element: &str, id: Name, parent: &str) -> Result<()> {
        let message = format!("duplicate edge_id '{}' in {parent}", self.cg.names.get(id));
        self.lenient(offset, element, message)
    }

    fn position(&self) -> usize {
        self.lexer.position()
    }

    // ---------------------------------------------------------------- event plumbing

    /// Next child element of `parent`, or `None` at the parent's end tag.
    fn next_child(&mut self, parent: &str, parent_offset: usize) -> Result<Option<Elem<'a>>> {
        loop {
            let before = self.position();
            let token = match self.lexer.next_token() {
                Ok(token) => token,
                Err(e) => {
                    let at = self.position().max(before);
                    return Err(self.error(at, parent, format!("malformed XML: {e}")));
                }
            };
            match token {
                Token::Start { tag, name_len, empty, offset } => {
                    let elem = self.elem(tag, name_len, empty, offset)?;
                    self.depth += usize::from(!empty);
                    self.check_depth(&elem)?;
                    return Ok(Some(elem));
                }
                Token::End => {
                    self.depth -= 1;
                    return Ok(None);
                }
                Token::Text => return Err(self.error(before, parent, "unexpected text content")),
                Token::CData => return Err(self.error(before, parent, "unexpected CDATA content")),
                Token::Reference(name) => {
                    return Err(self.error(
                        before,
                        parent,
                        format!("unexpected entity reference '&{name};' in content"),
                    ));
                }
                Token::Ignorable | Token::Declaration => {}
                Token::DocType => {
                    return Err(self.error(before, parent, "DOCTYPE declarations are refused (no entity expansion)"));
                }
                Token::Eof => {
                    return Err(self.error(
                        self.input.len(),
                        parent,
                        format!(
                            "unexpected end of file: element opened at {} is not closed",
                            self.describe_offset(parent_offset)
                        ),
                    ));
                }
            }
        }
    }

    /// Refuses elements nested deeper than [`MAX_NESTING`]: every level costs the reader (and
    /// the passes after it) stack.
    fn check_depth(&self, elem: &Elem<'a>) -> Result<()> {
        let depth = self.depth + usize::from(elem.empty);
        if depth > MAX_NESTING {
            return Err(self.error(elem.offset, elem.name, format!("elements nest deeper than {MAX_NESTING} levels")));
        }
        Ok(())
    }

    fn describe_offset(&self, offset: usize) -> String {
        let (line, column) = line_column(self.input, offset);
        format!("{line}:{column}")
    }

    fn elem(&self, raw: &'a str, name_len: usize, empty: bool, offset: usize) -> Result<Elem<'a>> {
        let qname: &'a str = &raw[..name_len];
        let local = if self.prefix.is_empty() {
            (!qname.contains(':')).then_some(qname)
        } else {
            // The prefix is ASCII (it was matched as bytes against the root's name).
            crate::bytes::starts_with(qname.as_bytes(), &self.prefix).then(|| &qname[self.prefix.len()..])
        };
        let Some(name) = local else {
            return Err(self.error(offset, qname, format!("element is not in the XAIF namespace {XAIF_NAMESPACE}")));
        };
        Ok(Elem { raw, name_len, empty, offset, name })
    }

    /// Consumes the rest of an element that may not have children.
    fn leaf(&mut self, elem: &Elem<'a>) -> Result<()> {
        if elem.empty {
            return Ok(());
        }
        if let Some(child) = self.next_child(elem.name, elem.offset)? {
            return Err(self.unexpected(&child, elem.name));
        }
        Ok(())
    }

    fn unexpected(&self, child: &Elem<'a>, parent: &str) -> ReadError {
        self.error(child.offset, child.name, format!("unexpected element in {parent}"))
    }

    /// The next child of an element already opened, `None` after its last.
    fn children(&mut self, elem: &Elem<'a>) -> Result<Option<Elem<'a>>> {
        if elem.empty { Ok(None) } else { self.next_child(elem.name, elem.offset) }
    }

    /// Consumes everything in an element already opened, up to its end tag, without lowering
    /// it: the markup errors a full read finds there are found (and the same), what the
    /// elements mean is not looked at.
    fn skip_content(&mut self, elem: &Elem<'a>) -> Result<()> {
        if elem.empty {
            return Ok(());
        }
        let mut open = std::mem::take(&mut self.skipping);
        open.clear();
        open.push((elem.name, elem.offset));
        while let Some(&(name, offset)) = open.last() {
            match self.next_child(name, offset)? {
                Some(child) if !child.empty => open.push((child.name, child.offset)),
                Some(_) => {}
                None => {
                    open.pop();
                }
            }
        }
        self.skipping = open;
        Ok(())
    }

    // ---------------------------------------------------------------- attributes

    /// Collects the attributes named in `known`; anything else is reported (leniently).
    fn attrs<const N: usize>(&mut self, elem: &Elem<'a>, known: [&str; N]) -> Result<[Option<Cow<'a, str>>; N]> {
        let mut values: [Option<Cow<'a, str>>; N] = std::array::from_fn(|_| None);
        // A hand-written scanner: XAIF tags are attribute-heavy, and this is the reader's
        // hottest loop (quick-xml's general attribute iterator costs twice as much).
        let text = &elem.raw[elem.name_len..];
        let bytes = text.as_bytes();
        let mut at = 0;
        let mut expected = 0;
        let malformed =
            |this: &Self, what: &str| this.error(elem.offset, elem.name, format!("malformed attribute: {what}"));
        loop {
            while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            if at == bytes.len() {
                break;
            }
            let key_start = at;
            // Front ends write the attributes in the order `known` lists them: the key
            // expected next is compared whole first, instead of scanning and then looking
            // it up among all known keys.
            let expected_here = known.get(expected).is_some_and(|k| key_at(&bytes[at..], k.as_bytes()));
            if expected_here {
                at += known[expected].len();
            } else {
                while at < bytes.len() && !KEY_STOP[bytes[at] as usize] {
                    at += 1;
                }
            }
            let key = &text[key_start..at];
            while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            if key.is_empty() || bytes.get(at) != Some(&b'=') {
                return Err(malformed(self, "expected name=\"value\""));
            }
            at += 1;
            while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            let quote = match bytes.get(at) {
                Some(&q @ (b'"' | b'\'')) => q,
                _ => return Err(malformed(self, "the value must be quoted")),
            };
            let value_start = at + 1;
            // One pass finds the closing quote and notices characters that need decoding.
            let mut end = value_start;
            let mut plain = true;
            loop {
                while end < bytes.len() && !VALUE_STOP[bytes[end] as usize] {
                    end += 1;
                }
                match bytes.get(end) {
                    None => return Err(malformed(self, "the value is not closed")),
                    Some(&b) if b == quote => break,
                    // The other quote character is plain text here.
                    Some(b'"' | b'\'') => {}
                    Some(_) => plain = false,
                }
                end += 1;
            }
            let raw = &text[value_start..end];
            at = end + 1;
            let found = if expected_here {
                Some(expected)
            } else {
                known.iter().position(|k| crate::bytes::eq(k.as_bytes(), key.as_bytes()))
            };
            let Some(slot) = found else {
                if key.starts_with("xmlns") || key.starts_with("xsi:") {
                    continue;
                }
                let dropped = if self.strict { "" } else { " (dropped)" };
                self.lenient(elem.offset, elem.name, format!("unknown attribute '{key}'{dropped}"))?;
                continue;
            };
            if values[slot].is_some() {
                return Err(self.error(elem.offset, elem.name, format!("duplicate attribute '{key}'")));
            }
            let value = if plain {
                Cow::Borrowed(raw)
            } else {
                Cow::Owned(
                    decode_attribute(raw)
                        .map_err(|e| self.error(elem.offset, elem.name, format!("attribute '{key}': {e}")))?,
                )
            };
            values[slot] = Some(value);
            expected = slot + 1;
        }
        Ok(values)
    }

    fn required<'v>(&self, elem: &Elem<'a>, name: &str, value: &'v Option<Cow<'a, str>>) -> Result<&'v str> {
        value
            .as_deref()
            .ok_or_else(|| self.error(elem.offset, elem.name, format!("missing required attribute '{name}'")))
    }

    fn intern(&mut self, value: &Option<Cow<'a, str>>) -> Name {
        match value {
            Some(v) => self.cg.names.intern(v),
            None => Name::EMPTY,
        }
    }

    fn intern_required(&mut self, elem: &Elem<'a>, name: &str, value: &Option<Cow<'a, str>>) -> Result<Name> {
        let v = self.required(elem, name, value)?;
        Ok(self.cg.names.intern(v))
    }

    fn bad_value(&self, elem: &Elem<'a>, name: &str, value: &str, expected: &str) -> ReadError {
        self.error(elem.offset, elem.name, format!("attribute '{name}' has value '{value}', expected {expected}"))
    }

    fn boolean(&self, elem: &Elem<'a>, name: &str, value: &Option<Cow<'a, str>>, default: bool) -> Result<bool> {
        match value.as_deref() {
            None => Ok(default),
            Some("true" | "1") => Ok(true),
            Some("false" | "0") => Ok(false),
            Some(v) => Err(self.bad_value(elem, name, v, "a boolean (true, false, 1, 0)")),
        }
    }

    fn integer(&self, elem: &Elem<'a>, name: &str, value: &str) -> Result<i64> {
        value.trim().parse::<i64>().map_err(|_| self.bad_value(elem, name, value, "an integer"))
    }

    fn non_negative(&self, elem: &Elem<'a>, name: &str, value: &str) -> Result<u64> {
        value.trim().parse::<u64>().map_err(|_| self.bad_value(elem, name, value, "a non-negative integer"))
    }

    fn positive(&self, elem: &Elem<'a>, name: &str, value: &str) -> Result<u64> {
        match value.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(self.bad_value(elem, name, value, "a positive integer")),
        }
    }

    /// An argument position, which the IR keeps in 32 bits.
    fn argument_position(&self, elem: &Elem<'a>, name: &str, value: &str) -> Result<u32> {
        let wide = self.positive(elem, name, value)?;
        u32::try_from(wide).map_err(|_| self.bad_value(elem, name, value, "a positive integer below 2^32"))
    }

    /// A count the IR keeps in 32 bits.
    fn count(&self, elem: &Elem<'a>, name: &str, value: &str) -> Result<u32> {
        let wide = self.non_negative(elem, name, value)?;
        u32::try_from(wide).map_err(|_| self.bad_value(elem, name, value, "a non-negative integer below 2^32"))
    }

    fn opt_non_negative(&self, elem: &Elem<'a>, name: &str, value: &Option<Cow<'a, str>>) -> Result<u64> {
        value.as_deref().map_or(Ok(0), |v| self.non_negative(elem, name, v))
    }

    fn enumerated<T: Copy>(
        &self,
        elem: &Elem<'a>,
        name: &str,
        value: &Option<Cow<'a, str>>,
        default: T,
        table: &[(&str, T)],
    ) -> Result<T> {
        let Some(v) = value.as_deref() else { return Ok(default) };
        table.iter().find(|(k, _)| *k == v).map(|(_, t)| *t).ok_or_else(|| {
            let allowed: Vec<&str> = table.iter().map(|(k, _)| *k).collect();
            self.bad_value(elem, name, v, &format!("one of {}", allowed.join(", ")))
        })
    }

    // ---------------------------------------------------------------- references

    fn scope_ref(&mut self, elem: &Elem<'a>, name: &str, value: &Option<Cow<'a, str>>) -> Result<ScopeId> {
        let v = self.required(elem, name, value)?;
        self.positive(elem, name, v)?;
        let key = self.cg.names.intern(v);
        self.scope_ids
            .get(&key)
            .copied()
            .ok_or_else(|| self.error(elem.offset, elem.name, format!("{name} '{v}' names no scope")))
    }

    /// Resolves `symbol_id` in the scope named by `scope_id`.
    fn symbol_ref(
        &mut self,
        elem: &Elem<'a>,
        symbol: &Option<Cow<'a, str>>,
        scope: &Option<Cow<'a, str>>,
    ) -> Result<SymbolId> {
        let scope_id = self.scope_ref(elem, "scope_id", scope)?;
        let name_str = self.required(elem, "symbol_id", symbol)?;
        let name = self.cg.names.intern(name_str);
        self.cg.lookup_symbol(scope_id, name).ok_or_else(|| {
            let scope_name = self.cg.names.get(self.cg.scopes[scope_id].id);
            self.error(elem.offset, elem.name, format!("symbol '{name_str}' is not declared in scope {scope_name}"))
        })
    }

    fn alias_ref(&self, elem: &Elem<'a>, value: &Option<Cow<'a, str>>) -> Result<Option<AliasSetId>> {
        let Some(v) = value.as_deref() else { return Ok(None) };
        let key = self.integer(elem, "alias", v)?;
        if key == 0 {
            return Ok(self.alias_keys.get(&0).copied());
        }
        u64::try_from(key)
            .ok()
            .and_then(|k| self.alias_keys.get(&k).copied())
            .map(Some)
            .ok_or_else(|| self.error(elem.offset, elem.name, format!("alias key {v} is not in the AliasSetMap")))
    }

    fn duud_ref(&self, elem: &Elem<'a>, value: &Option<Cow<'a, str>>) -> Result<Option<DuUdSetId>> {
        let Some(v) = value.as_deref() else { return Ok(None) };
        let key = self.integer(elem, "du_ud", v)?;
        if key == 0 {
            return Ok(self.duud_keys.get(&0).copied());
        }
        u64::try_from(key)
            .ok()
            .and_then(|k| self.duud_keys.get(&k).copied())
            .map(Some)
            .ok_or_else(|| self.error(elem.offset, elem.name, format!("du_ud key {v} is not in the DUUDSetMap")))
    }

    fn do_ref(&self, elem: &Elem<'a>, value: &Option<Cow<'a, str>>) -> Result<Option<DoSetId>> {
        let Some(v) = value.as_deref() else { return Ok(None) };
        let key = self.integer(elem, "do_chain", v)?;
        if key == 0 {
            return Ok(self.do_keys.get(&0).copied());
        }
        u64::try_from(key)
            .ok()
            .and_then(|k| self.do_keys.get(&k).copied())
            .map(Some)
            .ok_or_else(|| self.error(elem.offset, elem.name, format!("do_chain key {v} is not in the DOSetMap")))
    }

    // ---------------------------------------------------------------- document structure

    fn document(&mut self) -> Result<()> {
        // Find the root element, refusing DTDs on the way.
        let root = loop {
            let before = self.position();
            let token = self
                .lexer
                .next_token()
                .map_err(|e| self.error(self.position().max(before), "document", format!("malformed XML: {e}")))?;
            match token {
                Token::Start { tag, name_len, empty, offset } => break (tag, name_len, empty, offset),
                Token::DocType => {
                    return Err(self.error(
                        before,
                        "document",
                        "DOCTYPE declarations are refused (no entity expansion)",
                    ));
                }
                Token::Eof => return Err(self.error(before, "document", "no root element")),
                Token::Text => return Err(self.error(before, "document", "text before the root element")),
                Token::Ignorable | Token::Declaration => {}
                Token::CData | Token::Reference(_) | Token::End => {
                    return Err(self.error(before, "document", "content before the root element"));
                }
            }
        };
        let (tag, name_len, empty, offset) = root;
        self.bind_namespace(tag, name_len, offset)?;
        let root = self.elem(tag, name_len, empty, offset)?;
        self.depth = usize::from(!empty);
        if root.name != "CallGraph" {
            return Err(self.error(root.offset, root.name, "the root element must be CallGraph"));
        }
        self.call_graph(root)?;
        // Only comments, processing instructions and white space may follow.
        loop {
            let before = self.position();
            match self.lexer.next_token() {
                Ok(Token::Eof) => break,
                Ok(Token::Ignorable) => {}
                Ok(_) => return Err(self.error(before, "document", "content after the root element")),
                Err(e) => return Err(self.error(before, "document", format!("malformed XML: {e}"))),
            }
        }
        self.infer_formal_arg_counts()
    }

    fn bind_namespace(&mut self, tag: &'a str, name_len: usize, offset: usize) -> Result<()> {
        let start = BytesStart::from_content(tag, name_len);
        let qname = start.name().into_inner().as_bytes().to_vec();
        let prefix: &[u8] = match qname.iter().position(|b| *b == b':') {
            Some(colon) => &qname[..colon],
            None => b"",
        };
        let wanted: Vec<u8> = if prefix.is_empty() { b"xmlns".to_vec() } else { [b"xmlns:", prefix].concat() };
        let mut uri = None;
        for attr in start.attributes().flatten() {
            if attr.key.into_inner().as_bytes() == wanted.as_slice() {
                uri = Some(attr.value.clone().into_owned());
            }
        }
        let element = String::from_utf8_lossy(&qname).into_owned();
        match uri {
            Some(uri) if uri == XAIF_NAMESPACE => {}
            Some(uri) => {
                return Err(self.error(
                    offset,
                    &element,
                    format!("element is in namespace '{uri}', expected the XAIF namespace {XAIF_NAMESPACE}"),
                ));
            }
            None => {
                return Err(self.error(
                    offset,
                    &element,
                    format!("element is not in the XAIF namespace {XAIF_NAMESPACE} (no namespace declaration)"),
                ));
            }
        }
        self.prefix = if prefix.is_empty() { Vec::new() } else { [prefix, b":"].concat() };
        Ok(())
    }

    fn call_graph(&mut self, root: Elem<'a>) -> Result<()> {
        let [program_name, prefix] = self.attrs(&root, ["program_name", "prefix"])?;
        self.cg.program_name = program_name.as_ref().map(|p| self.cg.names.intern(p));
        self.cg.prefix = match &prefix {
            Some(p) => self.cg.names.intern(p),
            None => self.cg.names.intern("GetRidOfThisDefault"),
        };
        let mut seen = [false; 4];
        const SECTIONS: [&str; 4] = ["ScopeHierarchy", "AliasSetMap", "DUUDSetMap", "DOSetMap"];
        let mut pending_call_edges = Vec::new();
        let mut old_format = false;
        while let Some(mut child) = self.children(&root)? {
            // Older front ends (and the reference adjoint outputs made from them) name the two
            // maps `AliasSetList` / `DUUDSetList` and omit the DOSetMap; the content is the same.
            // (A missing DOSetMap in today's form stays an error.)
            if let Some(current) = match child.name {
                "AliasSetList" => Some("AliasSetMap"),
                "DUUDSetList" => Some("DUUDSetMap"),
                _ => None,
            } {
                self.lenient(child.offset, child.name, format!("old name of {current}"))?;
                child.name = current;
                old_format = true;
            }
            if old_format
                && matches!(child.name, "ControlFlowGraph" | "ReplacementList")
                && seen[..3].iter().all(|s| *s)
                && !seen[3]
            {
                self.lenient(child.offset, child.name, "CallGraph has no DOSetMap (an empty one is assumed)".into())?;
                self.cg.do_sets = vec![StmtIdSet { key: 0, statements: Vec::new() }];
                self.do_keys.insert(0, DoSetId(0));
                seen[3] = true;
            }
            if !matches!(
                child.name,
                "ScopeHierarchy"
                    | "AliasSetMap"
                    | "DUUDSetMap"
                    | "DOSetMap"
                    | "ControlFlowGraph"
                    | "ReplacementList"
                    | "CallGraphEdge"
            ) {
                return Err(self.unexpected(&child, "CallGraph"));
            }
            let section = SECTIONS.iter().position(|s| *s == child.name);
            if let Some(i) = section {
                if seen[i] {
                    return Err(self.error(child.offset, child.name, "appears twice in CallGraph"));
                }
                if let Some(missing) = SECTIONS[..i].iter().zip(&seen[..i]).find(|(_, s)| !**s) {
                    return Err(self.error(child.offset, child.name, format!("must come after {}", missing.0)));
                }
                if !self.cg.routines.is_empty() {
                    return Err(self.error(child.offset, child.name, "must come before the call graph vertices"));
                }
                seen[i] = true;
            } else if !seen.iter().all(|s| *s) {
                let missing = SECTIONS.iter().zip(&seen).find(|(_, s)| !**s).map(|(n, _)| *n).unwrap_or("");
                return Err(self.error(
                    child.offset,
                    child.name,
                    format!("unexpected here: CallGraph needs {missing} first"),
                ));
            }
            match child.name {
                "ScopeHierarchy" => self.scope_hierarchy(child)?,
                "AliasSetMap" => self.alias_set_map(child)?,
                "DUUDSetMap" => {
                    let sets = self.stmt_id_set_map(&child)?;
                    for (i, set) in sets.iter().enumerate() {
                        self.duud_keys.insert(set.key, DuUdSetId(i as u32));
                    }
                    self.cg.duud_sets = sets;
                }
                "DOSetMap" => {
                    let sets = self.stmt_id_set_map(&child)?;
                    for (i, set) in sets.iter().enumerate() {
                        self.do_keys.insert(set.key, DoSetId(i as u32));
                    }
                    self.cg.do_sets = sets;
                }
                "ControlFlowGraph" => {
                    let cfg = self.control_flow_graph(child)?;
                    let id = self.add_routine(Routine::ControlFlowGraph(cfg.0), cfg.1)?;
                    self.hand_over(id, cfg.1, "ControlFlowGraph")?;
                }
                "ReplacementList" => {
                    let list = self.replacement_list(child)?;
                    let id = self.add_routine(Routine::ReplacementList(list.0), list.1)?;
                    self.hand_over(id, list.1, "ReplacementList")?;
                }
                "CallGraphEdge" => {
                    let [id, annotation, source, target] =
                        self.attrs(&child, ["edge_id", "annotation", "source", "target"])?;
                    let id = self.intern_required(&child, "edge_id", &id)?;
                    let annotation = self.intern(&annotation);
                    let source = self.intern_required(&child, "source", &source)?;
                    let target = self.intern_required(&child, "target", &target)?;
                    self.leaf(&child)?;
                    pending_call_edges.push((
                        id,
                        annotation,
                        PendingEdge { offset: child.offset, element: child.name, source, target },
                    ));
                }
                _ => return Err(self.unexpected(&child, "CallGraph")),
            }
        }
        if let Some(missing) = SECTIONS.iter().zip(&seen).find(|(_, s)| !**s) {
            return Err(self.error(root.offset, root.name, format!("missing required child {}", missing.0)));
        }
        let mut taken: FxHashSet<Name> = pending_call_edges.iter().map(|(id, _, _)| *id).collect();
        let mut seen = FxHashSet::default();
        for (mut id, annotation, edge) in pending_call_edges {
            if !seen.insert(id) {
                // The schema holds call graph edge ids unique (validators check it): a repeated
                // one is renamed, which loses nothing as edge ids are never referenced.
                let fresh = fresh_id(&mut self.cg.names, id, &taken);
                let renamed =
                    if self.strict { String::new() } else { format!(" (renamed to '{}')", self.cg.names.get(fresh)) };
                let message = format!("duplicate edge_id '{}' in CallGraph{renamed}", self.cg.names.get(id));
                self.lenient(edge.offset, edge.element, message)?;
                taken.insert(fresh);
                seen.insert(fresh);
                id = fresh;
            }
            let source = self.resolve_routine(&edge, edge.source, "source")?;
            let target = self.resolve_routine(&edge, edge.target, "target")?;
            self.cg.call_edges.push(CallGraphEdge { id, annotation, source, target });
        }
        Ok(())
    }

    /// Gives a routine just read to the streaming driver, if there is one.
    /// A routine read after an error that does not stop reading (a semantic check's) is not
    /// handed over: the read fails at its end with every finding, and the driver must not
    /// transform what it would refuse.
    fn hand_over(&mut self, routine: RoutineId, offset: usize, element: &str) -> Result<()> {
        if !self.error_found {
            self.error_found = self.problems[self.problems_seen..].iter().any(|p| p.severity == Severity::Error);
            self.problems_seen = self.problems.len();
        }
        if self.error_found {
            return Ok(());
        }
        let end = self.position();
        if let Some(sink) = &mut self.sink
            && !sink(&mut self.cg, routine, end)
        {
            return Err(self.error(offset, element, "reading stopped: the routine could not be transformed"));
        }
        Ok(())
    }

    fn add_routine(&mut self, routine: Routine, offset: usize) -> Result<RoutineId> {
        let id = routine.id();
        if self.routine_ids.contains_key(&id) {
            let element = match routine {
                Routine::ControlFlowGraph(_) => "ControlFlowGraph",
                Routine::ReplacementList(_) => "ReplacementList",
            };
            let shown = self.cg.names.get(id).to_owned();
            return Err(self.error(offset, element, format!("duplicate vertex_id '{shown}' in CallGraph")));
        }
        let rid = self.cg.routines.alloc(routine);
        self.routine_ids.insert(id, rid);
        Ok(rid)
    }

    fn resolve_routine(&self, edge: &PendingEdge<'a>, end: Name, which: &str) -> Result<RoutineId> {
        self.routine_ids.get(&end).copied().ok_or_else(|| {
            self.error(
                edge.offset,
                edge.element,
                format!("{which} '{}' names no vertex of the CallGraph", self.cg.names.get(end)),
            )
        })
    }

    fn scope_hierarchy(&mut self, elem: Elem<'a>) -> Result<()> {
        let [] = self.attrs(&elem, [])?;
        let mut pending_edges = Vec::new();
        // Scopes first (their symbols may be read only once the scope exists); edges later.
        while let Some(child) = self.children(&elem)? {
            match child.name {
                "Scope" => self.scope(child)?,
                "ScopeEdge" => {
                    let [id, annotation, source, target] =
                        self.attrs(&child, ["edge_id", "annotation", "source", "target"])?;
                    let id = self.intern_required(&child, "edge_id", &id)?;
                    let annotation = self.intern(&annotation);
                    let source = self.intern_required(&child, "source", &source)?;
                    let target = self.intern_required(&child, "target", &target)?;
                    self.leaf(&child)?;
                    pending_edges.push((
                        id,
                        annotation,
                        PendingEdge { offset: child.offset, element: child.name, source, target },
                    ));
                }
                _ => return Err(self.unexpected(&child, "ScopeHierarchy")),
            }
        }
        let mut edge_ids = FxHashSet::default();
        let offsets: Vec<usize> = pending_edges.iter().map(|(_, _, edge)| edge.offset).collect();
        for (id, annotation, edge) in pending_edges {
            if !edge_ids.insert(id) {
                self.duplicate_edge(edge.offset, edge.element, id, "ScopeHierarchy")?;
            }
            let lookup = |end: Name, which: &str| {
                self.scope_ids.get(&end).copied().ok_or_else(|| {
                    self.error(
                        edge.offset,
                        edge.element,
                        format!("{which} '{}' names no scope", self.cg.names.get(end)),
                    )
                })
            };
            let source = lookup(edge.source, "source")?;
            let target = lookup(edge.target, "target")?;
            self.cg.scope_edges.push(ScopeEdge { id, annotation, source, target });
        }
        check::scope_tree(&self.cg, &offsets, &mut self.problems);
        Ok(())
    }

    fn scope(&mut self, elem: Elem<'a>) -> Result<()> {
        let [id, annotation] = self.attrs(&elem, ["vertex_id", "annotation"])?;
        let id = match &id {
            Some(v) => self.cg.names.intern(v),
            None => self.cg.names.intern("1"),
        };
        let annotation = self.intern(&annotation);
        if self.scope_ids.contains_key(&id) {
            return Err(self.error(
                elem.offset,
                elem.name,
                format!("duplicate vertex_id '{}' in ScopeHierarchy", self.cg.names.get(id)),
            ));
        }
        let scope = self.cg.scopes.alloc(Scope { id, annotation, symbols: Vec::new() });
        self.scope_ids.insert(id, scope);
        let mut tables = 0;
        while let Some(child) = self.children(&elem)? {
            if child.name != "SymbolTable" {
                return Err(self.unexpected(&child, "Scope"));
            }
            tables += 1;
            let [] = self.attrs(&child, [])?;
            while let Some(symbol) = self.children(&child)? {
                if symbol.name != "Symbol" {
                    return Err(self.unexpected(&symbol, "SymbolTable"));
                }
                self.symbol(symbol, scope)?;
            }
        }
        if tables == 0 {
            return Err(self.error(elem.offset, elem.name, "missing required child SymbolTable"));
        }
        Ok(())
    }

    fn symbol(&mut self, elem: Elem<'a>, scope: ScopeId) -> Result<()> {
        let [symbol_id, kind, ty, fe_type, shape, annotation, active, temp, pointer] = self.attrs(
            &elem,
            ["symbol_id", "kind", "type", "feType", "shape", "annotation", "active", "temp", "pointer"],
        )?;
        let name = self.intern_required(&elem, "symbol_id", &symbol_id)?;
        let kind = self.enumerated(
            &elem,
            "kind",
            &kind,
            SymbolKind::Variable,
            &[
                ("subroutine", SymbolKind::Subroutine),
                ("variable", SymbolKind::Variable),
                ("pointer", SymbolKind::Pointer),
            ],
        )?;
        let ty = self.symbol_type(&elem, "type", &ty)?;
        let shape = self.shape(&elem, "shape", &shape)?;
        let symbol = Symbol {
            scope,
            name,
            kind,
            ty,
            fe_type: self.intern(&fe_type),
            shape,
            annotation: self.intern(&annotation),
            active: self.boolean(&elem, "active", &active, true)?,
            temp: self.boolean(&elem, "temp", &temp, false)?,
            pointer: self.boolean(&elem, "pointer", &pointer, false)?,
            dimensions: Vec::new(),
        };
        if self.cg.lookup_symbol(scope, name).is_some() {
            let scope_name = self.cg.names.get(self.cg.scopes[scope].id);
            return Err(self.error(
                elem.offset,
                elem.name,
                format!("duplicate symbol_id '{}' in scope {scope_name}", self.cg.names.get(name)),
            ));
        }
        let id = self.cg.add_symbol(symbol);
        while let Some(child) = self.children(&elem)? {
            if child.name != "DimensionBounds" {
                return Err(self.unexpected(&child, "Symbol"));
            }
            let [lower, upper] = self.attrs(&child, ["lower", "upper"])?;
            let lower = self.required(&child, "lower", &lower).and_then(|v| self.integer(&child, "lower", v))?;
            let upper = self.required(&child, "upper", &upper).and_then(|v| self.integer(&child, "upper", v))?;
            self.leaf(&child)?;
            let dims = &mut self.cg.symbols[id].dimensions;
            if dims.len() == 7 {
                return Err(self.error(child.offset, child.name, "more than 7 DimensionBounds"));
            }
            dims.push(DimensionBounds { lower, upper });
        }
        Ok(())
    }

    fn symbol_type(&self, elem: &Elem<'a>, name: &str, value: &Option<Cow<'a, str>>) -> Result<SymbolType> {
        self.enumerated(
            elem,
            name,
            value,
            SymbolType::Real,
            &[
                ("void", SymbolType::Void),
                ("integer", SymbolType::Integer),
                ("real", SymbolType::Real),
                ("complex", SymbolType::Complex),
                ("bool", SymbolType::Bool),
                ("char", SymbolType::Char),
                ("string", SymbolType::String),
                ("opaque", SymbolType::Opaque),
            ],
        )
    }

    fn shape(&self, elem: &Elem<'a>, name: &str, value: &Option<Cow<'a, str>>) -> Result<Shape> {
        self.enumerated(
            elem,
            name,
            value,
            Shape::Scalar,
            &[
                ("void", Shape::Void),
                ("scalar", Shape::Scalar),
                ("vector", Shape::Vector),
                ("matrix", Shape::Matrix),
                ("three_tensor", Shape::ThreeTensor),
                ("four_tensor", Shape::FourTensor),
                ("five_tensor", Shape::FiveTensor),
                ("six_tensor", Shape::SixTensor),
                ("seven_tensor", Shape::SevenTensor),
            ],
        )
    }

    fn alias_set_map(&mut self, elem: Elem<'a>) -> Result<()> {
        let [] = self.attrs(&elem, [])?;
        while let Some(child) = self.children(&elem)? {
            if child.name != "AliasSet" {
                return Err(self.unexpected(&child, "AliasSetMap"));
            }
            let [key] = self.attrs(&child, ["key"])?;
            let key = self.required(&child, "key", &key).and_then(|v| self.non_negative(&child, "key", v))?;
            if self.alias_keys.contains_key(&key) {
                return Err(self.error(child.offset, child.name, format!("duplicate key {key} in AliasSetMap")));
            }
            let mut ranges = Vec::new();
            while let Some(range) = self.children(&child)? {
                if range.name != "AliasRange" {
                    return Err(self.unexpected(&range, "AliasSet"));
                }
                let [from, to, partial] =
                    self.attrs(&range, ["from_virtual_address", "to_virtual_address", "partial"])?;
                let from = self
                    .required(&range, "from_virtual_address", &from)
                    .and_then(|v| self.positive(&range, "from_virtual_address", v))?;
                let to = self
                    .required(&range, "to_virtual_address", &to)
                    .and_then(|v| self.positive(&range, "to_virtual_address", v))?;
                let partial = self.boolean(&range, "partial", &partial, true)?;
                self.leaf(&range)?;
                ranges.push(AliasRange { from, to, partial });
            }
            self.alias_keys.insert(key, AliasSetId(self.cg.alias_sets.len() as u32));
            self.cg.alias_sets.push(AliasSet { key, ranges });
        }
        if self.cg.alias_sets.is_empty() {
            return Err(self.error(elem.offset, elem.name, "missing required child AliasSet"));
        }
        if !self.alias_keys.contains_key(&0) {
            self.missing_key_zero(&elem, "AliasSet", "alias")?;
            self.alias_keys.insert(0, AliasSetId(self.cg.alias_sets.len() as u32));
            self.cg.alias_sets.push(AliasSet { key: 0, ranges: Vec::new() });
        }
        Ok(())
    }

    /// A map without the dummy key 0, which every reference without the map's attribute means
    /// and whose existence the schema's key references demand: an empty one is added.
    fn missing_key_zero(&mut self, map: &Elem<'a>, set: &str, attribute: &str) -> Result<()> {
        let added = if self.strict { "" } else { " (an empty one is added)" };
        let message = format!("no {set} with key 0, which every {attribute} attribute defaults to{added}");
        self.lenient(map.offset, map.name, message)
    }

    fn stmt_id_set_map(&mut self, elem: &Elem<'a>) -> Result<Vec<StmtIdSet>> {
        let [] = self.attrs(elem, [])?;
        let mut sets: Vec<StmtIdSet> = Vec::new();
        let mut keys = FxHashMap::default();
        while let Some(child) = self.children(elem)? {
            if child.name == "DUUDSet" && elem.name == "DUUDSetMap" {
                self.lenient(child.offset, child.name, "old name of StmtIdSet".into())?;
            } else if child.name != "StmtIdSet" {
                return Err(self.unexpected(&child, elem.name));
            }
            let [key] = self.attrs(&child, ["key"])?;
            let key = self.required(&child, "key", &key).and_then(|v| self.non_negative(&child, "key", v))?;
            if keys.insert(key, ()).is_some() {
                return Err(self.error(child.offset, child.name, format!("duplicate key {key} in {}", elem.name)));
            }
            let mut statements = Vec::new();
            while let Some(id) = self.children(&child)? {
                if id.name != "StatementId" {
                    return Err(self.unexpected(&id, "StmtIdSet"));
                }
                let [id_ref] = self.attrs(&id, ["idRef"])?;
                statements.push(self.intern(&id_ref));
                self.leaf(&id)?;
            }
            sets.push(StmtIdSet { key, statements });
        }
        if sets.is_empty() {
            return Err(self.error(elem.offset, elem.name, "missing required child StmtIdSet"));
        }
        if !keys.contains_key(&0) {
            let attribute = if elem.name == "DOSetMap" { "do_chain" } else { "du_ud" };
            self.missing_key_zero(elem, "StmtIdSet", attribute)?;
            sets.push(StmtIdSet { key: 0, statements: Vec::new() });
        }
        Ok(sets)
    }

    // ---------------------------------------------------------------- routines

    fn control_flow_graph(&mut self, elem: Elem<'a>) -> Result<(ControlFlowGraph, usize)> {
        let [id, annotation, symbol_id, scope_id, body_scope, active, structured] = self.attrs(
            &elem,
            ["vertex_id", "annotation", "symbol_id", "scope_id", "controlflowgraph_scope_id", "active", "structured"],
        )?;
        let id = match &id {
            Some(v) => self.cg.names.intern(v),
            None => self.cg.names.intern("1"),
        };
        let annotation = self.intern(&annotation);
        let symbol = self.symbol_ref(&elem, &symbol_id, &scope_id)?;
        let scope = self.cg.symbols[symbol].scope;
        let body_scope = self.scope_ref(&elem, "controlflowgraph_scope_id", &body_scope)?;
        let active = self.boolean(&elem, "active", &active, true)?;
        let structured = self.boolean(&elem, "structured", &structured, true)?;
        let mut cfg = ControlFlowGraph {
            id,
            annotation,
            symbol,
            scope,
            body_scope,
            active,
            structured,
            arguments: None,
            side_effects: SideEffects::default(),
            graph: FlowGraph::default(),
        };
        // ArgumentList and the side-effect lists come first, in schema order.
        const HEAD: [&str; 6] = ["ArgumentList", "ModLocal", "Mod", "ReadLocal", "Read", "OnEntry"];
        let mut head_index = 0;
        let mut builder = FlowGraphBuilder::default();
        self.statements.clear();
        while let Some(child) = self.children(&elem)? {
            if let Some(i) = HEAD.iter().position(|h| *h == child.name) {
                if i < head_index || !builder.is_empty() {
                    return Err(self.error(child.offset, child.name, "out of order in ControlFlowGraph"));
                }
                head_index = i + 1;
                match i {
                    0 => cfg.arguments = Some(self.argument_list(&child)?),
                    1 => cfg.side_effects.mod_local = Some(self.side_effect_list(&child)?),
                    2 => cfg.side_effects.modified = Some(self.side_effect_list(&child)?),
                    3 => cfg.side_effects.read_local = Some(self.side_effect_list(&child)?),
                    4 => cfg.side_effects.read = Some(self.side_effect_list(&child)?),
                    _ => cfg.side_effects.on_entry = Some(self.side_effect_list(&child)?),
                }
                continue;
            }
            self.flow_graph_child(child, &mut builder, "ControlFlowGraph")?;
        }
        cfg.graph = self.finish_flow_graph(builder, "ControlFlowGraph", elem.offset, structured)?;
        self.unique_statement_ids(&mut cfg.graph)?;
        Ok((cfg, elem.offset))
    }

    fn replacement_list(&mut self, elem: Elem<'a>) -> Result<(ReplacementList, usize)> {
        let [id, annotation, template_name, symbol_id, scope_id, body_scope] = self.attrs(
            &elem,
            ["vertex_id", "annotation", "template_name", "symbol_id", "scope_id", "controlflowgraph_scope_id"],
        )?;
        let id = match &id {
            Some(v) => self.cg.names.intern(v),
            None => self.cg.names.intern("1"),
        };
        let annotation = self.intern(&annotation);
        let template_name = self.intern_required(&elem, "template_name", &template_name)?;
        let symbol = self.symbol_ref(&elem, &symbol_id, &scope_id)?;
        let scope = self.cg.symbols[symbol].scope;
        let body_scope = self.scope_ref(&elem, "controlflowgraph_scope_id", &body_scope)?;
        let mut list = ReplacementList {
            id,
            annotation,
            symbol,
            scope,
            body_scope,
            template_name,
            arguments: None,
            replacements: Vec::new(),
        };
        while let Some(child) = self.children(&elem)? {
            match child.name {
                "ArgumentList" if list.arguments.is_none() && list.replacements.is_empty() => {
                    list.arguments = Some(self.argument_list(&child)?);
                }
                "Replacement" => {
                    let [placeholder, structured] = self.attrs(&child, ["placeholder", "structured"])?;
                    let placeholder = self.intern_required(&child, "placeholder", &placeholder)?;
                    let structured = self.boolean(&child, "structured", &structured, true)?;
                    let mut builder = FlowGraphBuilder::default();
                    while let Some(vertex) = self.children(&child)? {
                        self.flow_graph_child(vertex, &mut builder, "Replacement")?;
                    }
                    let graph = self.finish_flow_graph(builder, "Replacement", child.offset, structured)?;
                    list.replacements.push(Replacement { placeholder, structured, graph, repeats: None });
                }
                _ => return Err(self.unexpected(&child, "ReplacementList")),
            }
        }
        Ok((list, elem.offset))
    }

    fn argument_list(&mut self, elem: &Elem<'a>) -> Result<Vec<ArgumentSymbolReference>> {
        let [] = self.attrs(elem, [])?;
        let mut arguments = Vec::new();
        let mut offsets = Vec::new();
        while let Some(child) = self.children(elem)? {
            if child.name != "ArgumentSymbolReference" {
                return Err(self.unexpected(&child, "ArgumentList"));
            }
            let [position, symbol_id, scope_id, annotation, deriv, intent] =
                self.attrs(&child, ["position", "symbol_id", "scope_id", "annotation", "deriv", "intent"])?;
            let position = self
                .required(&child, "position", &position)
                .and_then(|v| self.argument_position(&child, "position", v))?;
            let symbol = self.symbol_ref(&child, &symbol_id, &scope_id)?;
            let annotation = self.intern(&annotation);
            let deriv = self.boolean(&child, "deriv", &deriv, false)?;
            let intent = self.enumerated(
                &child,
                "intent",
                &intent,
                Intent::InOut,
                &[("in", Intent::In), ("out", Intent::Out), ("inout", Intent::InOut)],
            )?;
            self.leaf(&child)?;
            offsets.push((position, child.offset, child.name));
            arguments.push(ArgumentSymbolReference { position, symbol, annotation, deriv, intent });
        }
        self.repeated_positions(offsets, "in the ArgumentList");
        Ok(arguments)
    }

    fn side_effect_list(&mut self, elem: &Elem<'a>) -> Result<Vec<VariableReference>> {
        let [] = self.attrs(elem, [])?;
        let mut list = Vec::new();
        while let Some(child) = self.children(elem)? {
            if child.name != "SideEffectReference" {
                return Err(self.unexpected(&child, elem.name));
            }
            list.push(self.variable_reference(child)?);
        }
        Ok(list)
    }

    // ---------------------------------------------------------------- control flow

    fn flow_graph_child(&mut self, elem: Elem<'a>, builder: &mut FlowGraphBuilder<'a>, parent: &str) -> Result<()> {
        if elem.name == "ControlFlowEdge" {
            let [id, annotation, source, target, has_value, value] = self.attrs(
                &elem,
                ["edge_id", "annotation", "source", "target", "has_condition_value", "condition_value"],
            )?;
            let id = self.intern_required(&elem, "edge_id", &id)?;
            let annotation = self.intern(&annotation);
            let source = self.intern_required(&elem, "source", &source)?;
            let target = self.intern_required(&elem, "target", &target)?;
            let has_value = self.boolean(&elem, "has_condition_value", &has_value, false)?;
            let value = match value.as_deref() {
                Some(v) => self.integer(&elem, "condition_value", v)?,
                None => 1,
            };
            self.leaf(&elem)?;
            builder.edges.push((
                id,
                annotation,
                has_value.then_some(value),
                PendingEdge { offset: elem.offset, element: elem.name, source, target },
            ));
            return Ok(());
        }
        let [id, annotation, scope_id, reversal, line] =
            self.attrs(&elem, ["vertex_id", "annotation", "scope_id", "reversal", "lineNumber"])?;
        let id = match &id {
            Some(v) => self.cg.names.intern(v),
            None => self.cg.names.intern("1"),
        };
        let annotation = self.intern(&annotation);
        let allow = |ok: bool, attr: &str, value: &Option<Cow<'a, str>>| -> Result<()> {
            if value.is_some() && !ok {
                return Err(self.error(elem.offset, elem.name, format!("attribute '{attr}' is not allowed here")));
            }
            Ok(())
        };
        allow(elem.name == "BasicBlock", "scope_id", &scope_id)?;
        allow(elem.name == "ForLoop", "reversal", &reversal)?;
        allow(matches!(elem.name, "ForLoop" | "PreLoop" | "PostLoop" | "Branch" | "If"), "lineNumber", &line)?;
        let line = self.opt_non_negative(&elem, "lineNumber", &line)?;
        let kind = match elem.name {
            "Entry" => {
                self.leaf(&elem)?;
                CfgVertexKind::Entry
            }
            "Exit" => {
                self.leaf(&elem)?;
                CfgVertexKind::Exit
            }
            "EndBranch" => {
                self.leaf(&elem)?;
                CfgVertexKind::EndBranch
            }
            "EndLoop" => {
                self.leaf(&elem)?;
                CfgVertexKind::EndLoop
            }
            "Label" => {
                self.leaf(&elem)?;
                CfgVertexKind::Label
            }
            "Goto" => {
                self.leaf(&elem)?;
                CfgVertexKind::Goto
            }
            "BasicBlock" => {
                let scope = self.scope_ref(&elem, "scope_id", &scope_id)?;
                let statements = self.statements(&elem)?;
                CfgVertexKind::BasicBlock(BasicBlock { scope, statements })
            }
            "If" | "PreLoop" | "PostLoop" | "Branch" => {
                let mut conditional = Conditional { condition: None, line };
                while let Some(child) = self.children(&elem)? {
                    if child.name != "Condition" || conditional.condition.is_some() {
                        return Err(self.unexpected(&child, elem.name));
                    }
                    conditional.condition = Some(self.expression(child)?);
                }
                match elem.name {
                    "If" => CfgVertexKind::If(conditional),
                    "PreLoop" => CfgVertexKind::PreLoop(conditional),
                    "PostLoop" => CfgVertexKind::PostLoop(conditional),
                    _ => CfgVertexKind::Branch(conditional),
                }
            }
            "ForLoop" => {
                let reversal = self.enumerated(
                    &elem,
                    "reversal",
                    &reversal,
                    LoopReversal::Anonymous,
                    &[("explicit", LoopReversal::Explicit), ("anonymous", LoopReversal::Anonymous)],
                )?;
                let mut for_loop = ForLoop { reversal, line, ..ForLoop::default() };
                let mut stage = 0;
                while let Some(child) = self.children(&elem)? {
                    let next = match child.name {
                        "Initialization" => 1,
                        "Condition" => 2,
                        "Update" => 3,
                        _ => 0,
                    };
                    if next <= stage {
                        return Err(self.unexpected(&child, "ForLoop"));
                    }
                    stage = next;
                    if next != 2 {
                        self.statements.push((child.offset, child.name));
                    }
                    match next {
                        1 => for_loop.initialization = Some(self.assignment(child)?),
                        2 => for_loop.condition = Some(self.expression(child)?),
                        _ => for_loop.update = Some(self.assignment(child)?),
                    }
                }
                CfgVertexKind::ForLoop(Box::new(for_loop))
            }
            _ => return Err(self.unexpected(&elem, parent)),
        };
        if builder.ids.insert(id, builder.graph.vertices.len()).is_some() {
            return Err(self.error(
                elem.offset,
                elem.name,
                format!("duplicate vertex_id '{}' in {parent}", self.cg.names.get(id)),
            ));
        }
        builder.graph.vertices.alloc(CfgVertex { id, annotation, kind });
        builder.offsets.push(elem.offset);
        Ok(())
    }

    fn finish_flow_graph(
        &mut self,
        mut builder: FlowGraphBuilder<'a>,
        parent: &str,
        offset: usize,
        structured: bool,
    ) -> Result<FlowGraph> {
        // The shape every non-empty graph must have (empty ones are modules' routines or
        // unused placeholders); the validator words these the same way.
        let count =
            |wanted: &str| builder.graph.vertices.iter().filter(|(_, v)| v.kind.element_name() == wanted).count();
        if !builder.graph.vertices.is_empty() {
            for kind in ["Entry", "Exit"] {
                let found = count(kind);
                if found != 1 {
                    return Err(self.error(offset, parent, format!("needs exactly one {kind} vertex, found {found}")));
                }
            }
        }
        if structured {
            let (branches, ends) = (count("Branch") + count("If"), count("EndBranch"));
            if branches != ends {
                return Err(self.error(
                    offset,
                    parent,
                    format!("structured graph has {branches} If/Branch but {ends} EndBranch vertices"),
                ));
            }
            let (loops, end_loops) = (count("ForLoop") + count("PreLoop") + count("PostLoop"), count("EndLoop"));
            if loops != end_loops {
                return Err(self.error(
                    offset,
                    parent,
                    format!("structured graph has {loops} loops but {end_loops} EndLoop vertices"),
                ));
            }
        }
        let ids: Vec<CfgVertexId> = builder.graph.vertices.iter().map(|(id, _)| id).collect();
        let mut edge_ids = FxHashMap::default();
        let mut parallel: FxHashSet<(CfgVertexId, CfgVertexId, Option<i64>)> = FxHashSet::default();
        for (id, annotation, condition_value, edge) in builder.edges {
            if edge_ids.insert(id, ()).is_some() {
                self.duplicate_edge(edge.offset, edge.element, id, parent)?;
            }
            let lookup = |end: Name, which: &str| {
                builder.ids.get(&end).map(|&i| ids[i]).ok_or_else(|| {
                    self.error(
                        edge.offset,
                        edge.element,
                        format!("{which} '{}' names no vertex of this {parent}", self.cg.names.get(end)),
                    )
                })
            };
            let source = lookup(edge.source, "source")?;
            let target = lookup(edge.target, "target")?;
            let end_kind = |v: CfgVertexId| builder.graph.vertices[v].kind.element_name();
            if end_kind(target) == "Entry" {
                let shown = self.cg.names.get(edge.target);
                return Err(self.error(
                    edge.offset,
                    edge.element,
                    format!("an edge may not enter the Entry vertex '{shown}'"),
                ));
            }
            if end_kind(source) == "Exit" {
                let shown = self.cg.names.get(edge.source);
                return Err(self.error(
                    edge.offset,
                    edge.element,
                    format!("an edge may not leave the Exit vertex '{shown}'"),
                ));
            }
            // The same edge twice (source, target and condition) says nothing more and would
            // make the reversal copy its target twice.
            if !parallel.insert((source, target, condition_value)) {
                let dropped = if self.strict { "" } else { " (dropped)" };
                let message = format!(
                    "the same edge from '{}' to '{}' as an earlier one{dropped}",
                    self.cg.names.get(edge.source),
                    self.cg.names.get(edge.target)
                );
                self.lenient(edge.offset, edge.element, message)?;
                continue;
            }
            builder.graph.edges.push(CfgEdge { id, annotation, source, target, condition_value });
        }
        if !builder.graph.vertices.is_empty() {
            let site = FlowSite { vertices: &builder.offsets };
            check::flow_graph(&builder.graph, &site, &self.cg.names, &mut self.problems);
        }
        Ok(builder.graph)
    }

    /// Statement ids the schema holds unique within a control flow graph (`Assignment`,
    /// `SubroutineCall`, `Marker`, and a `ForLoop`'s `Initialization` and `Update`): a repeated
    /// one is renamed, leniently (the du-ud and DO maps keep naming the first), as the
    /// reference engine's outputs sometimes repeat one.
    fn unique_statement_ids(&mut self, graph: &mut FlowGraph) -> Result<()> {
        let mut ids: Vec<&mut Name> = Vec::new();
        for (_, vertex) in graph.vertices.iter_mut() {
            match &mut vertex.kind {
                CfgVertexKind::BasicBlock(block) => {
                    for statement in &mut block.statements {
                        match statement {
                            Statement::Assignment(a) => ids.push(&mut a.id),
                            Statement::SubroutineCall(c) => ids.push(&mut c.id),
                            Statement::Marker(m) => ids.push(&mut m.id),
                            Statement::DerivativePropagator(_) | Statement::InlinableSubroutineCall(_) => {}
                        }
                    }
                }
                CfgVertexKind::ForLoop(for_loop) => {
                    let ForLoop { initialization, update, .. } = &mut **for_loop;
                    ids.extend([initialization, update].into_iter().flatten().map(|a| &mut a.id));
                }
                _ => {}
            }
        }
        debug_assert_eq!(ids.len(), self.statements.len(), "statements are counted as they are read");
        let mut taken: FxHashSet<Name> = ids.iter().map(|id| **id).collect();
        if taken.len() == ids.len() {
            return Ok(());
        }
        let mut seen = FxHashSet::default();
        let statements = std::mem::take(&mut self.statements);
        for (id, &(offset, element)) in ids.into_iter().zip(&statements) {
            if seen.insert(*id) {
                continue;
            }
            let fresh = fresh_id(&mut self.cg.names, *id, &taken);
            let renamed =
                if self.strict { String::new() } else { format!(" (renamed to '{}')", self.cg.names.get(fresh)) };
            let message = format!("duplicate statement_id '{}' in ControlFlowGraph{renamed}", self.cg.names.get(*id));
            self.lenient(offset, element, message)?;
            taken.insert(fresh);
            seen.insert(fresh);
            *id = fresh;
        }
        Ok(())
    }

    // ---------------------------------------------------------------- statements

    fn statements(&mut self, block: &Elem<'a>) -> Result<Vec<Statement>> {
        let mut statements = Vec::new();
        while let Some(child) = self.children(block)? {
            if matches!(child.name, "Assignment" | "SubroutineCall" | "Marker") {
                self.statements.push((child.offset, child.name));
            }
            let statement = match child.name {
                "Assignment" => Statement::Assignment(self.assignment(child)?),
                "SubroutineCall" => Statement::SubroutineCall(self.subroutine_call(child)?),
                "Marker" => {
                    let [id, annotation] = self.attrs(&child, ["statement_id", "annotation"])?;
                    let id = self.intern_required(&child, "statement_id", &id)?;
                    let annotation = self.intern(&annotation);
                    self.leaf(&child)?;
                    Statement::Marker(Marker { id, annotation })
                }
                "DerivativePropagator" => Statement::DerivativePropagator(self.derivative_propagator(child)?),
                "InlinableSubroutineCall" => {
                    let [name, id] = self.attrs(&child, ["subroutine_name", "statement_id"])?;
                    let subroutine_name = self.intern_required(&child, "subroutine_name", &name)?;
                    let id = self.intern_required(&child, "statement_id", &id)?;
                    let arguments = self.arguments(&child)?;
                    Statement::InlinableSubroutineCall(InlinableSubroutineCall { id, subroutine_name, arguments })
                }
                _ => return Err(self.unexpected(&child, block.name)),
            };
            statements.push(statement);
        }
        Ok(statements)
    }

    /// `Assignment`, and the `Initialization`/`Update` of a `ForLoop` (same content model).
    fn assignment(&mut self, elem: Elem<'a>) -> Result<Assignment> {
        let [id, do_chain, line] = self.attrs(&elem, ["statement_id", "do_chain", "lineNumber"])?;
        if line.is_some() && elem.name != "Assignment" {
            return Err(self.error(elem.offset, elem.name, "attribute 'lineNumber' is not allowed here"));
        }
        let id = self.intern_required(&elem, "statement_id", &id)?;
        let do_chain = self.do_ref(&elem, &do_chain)?;
        let line = self.opt_non_negative(&elem, "lineNumber", &line)?;
        let mut lhs = None;
        let mut rhs = None;
        while let Some(child) = self.children(&elem)? {
            match child.name {
                "AssignmentLHS" if lhs.is_none() => lhs = Some(self.variable_reference_with_live(child)?),
                "AssignmentRHS" if lhs.is_some() && rhs.is_none() => {
                    rhs = Some(match self.right_hand_sides {
                        RightHandSides::Lower => self.expression(child)?,
                        RightHandSides::ReferencesOnly => self.references_only(child)?,
                    });
                }
                _ => return Err(self.unexpected(&child, elem.name)),
            }
        }
        let Some((lhs, lhs_live)) = lhs else {
            return Err(self.error(elem.offset, elem.name, "missing required child AssignmentLHS"));
        };
        let Some(rhs) = rhs else {
            return Err(self.error(elem.offset, elem.name, "missing required child AssignmentRHS"));
        };
        Ok(Assignment { id, do_chain, line, lhs, lhs_live, rhs })
    }

    fn subroutine_call(&mut self, elem: Elem<'a>) -> Result<SubroutineCall> {
        let [id, symbol_id, scope_id, active, line, count] =
            self.attrs(&elem, ["statement_id", "symbol_id", "scope_id", "active", "lineNumber", "formalArgCount"])?;
        let id = self.intern_required(&elem, "statement_id", &id)?;
        let symbol = if symbol_id.is_some() || scope_id.is_some() {
            Some(self.symbol_ref(&elem, &symbol_id, &scope_id)?)
        } else {
            None
        };
        let active = self.active_use(&elem, &active)?;
        let line = self.opt_non_negative(&elem, "lineNumber", &line)?;
        let formal_arg_count = match count.as_deref() {
            Some(v) => self.count(&elem, "formalArgCount", v)?,
            None => {
                let message = if self.strict { "" } else { " (inferred)" };
                let message = format!("missing required attribute 'formalArgCount'{message}");
                self.lenient(elem.offset, elem.name, message)?;
                self.calls_without_count += 1;
                u32::MAX
            }
        };
        let arguments = self.arguments(&elem)?;
        Ok(SubroutineCall { id, symbol, active, line, formal_arg_count, arguments })
    }

    fn active_use(&self, elem: &Elem<'a>, value: &Option<Cow<'a, str>>) -> Result<ActiveUse> {
        self.enumerated(
            elem,
            "active",
            value,
            ActiveUse::Undefined,
            &[
                ("undefined", ActiveUse::Undefined),
                ("true", ActiveUse::True),
                ("false", ActiveUse::False),
                ("1", ActiveUse::True),
                ("0", ActiveUse::False),
            ],
        )
    }

    fn arguments(&mut self, call: &Elem<'a>) -> Result<Vec<Argument>> {
        let mut arguments = Vec::new();
        let mut offsets = Vec::new();
        while let Some(child) = self.children(call)? {
            if child.name != "Argument" {
                return Err(self.unexpected(&child, call.name));
            }
            let [position, annotation] = self.attrs(&child, ["position", "annotation"])?;
            let position = self
                .required(&child, "position", &position)
                .and_then(|v| self.argument_position(&child, "position", v))?;
            let annotation = self.intern(&annotation);
            let mut value = None;
            while let Some(inner) = self.children(&child)? {
                if value.is_some() {
                    return Err(self.unexpected(&inner, "Argument"));
                }
                value = Some(match inner.name {
                    "VariableReference" => ArgumentValue::Variable(self.variable_reference(inner)?),
                    "Constant" => ArgumentValue::Constant(self.constant(inner)?),
                    _ => return Err(self.unexpected(&inner, "Argument")),
                });
            }
            let Some(value) = value else {
                return Err(self.error(child.offset, child.name, "needs a VariableReference or a Constant"));
            };
            offsets.push((position, child.offset, child.name));
            arguments.push(Argument { position, annotation, value });
        }
        self.repeated_positions(offsets, &format!("among the arguments of the {}", call.name));
        Ok(arguments)
    }

    /// Reports each argument whose position an earlier one of the same list took.
    fn repeated_positions(&mut self, mut arguments: Vec<(u32, usize, &str)>, list: &str) {
        arguments.sort_by_key(|&(position, offset, _)| (position, offset));
        for pair in arguments.windows(2) {
            let (position, offset, element) = pair[1];
            if pair[0].0 == position {
                let message = format!("position {position} is taken twice {list}");
                self.problems.push(Problem::error(offset, element, message));
            }
        }
    }

    fn derivative_propagator(&mut self, elem: Elem<'a>) -> Result<DerivativePropagator> {
        let [] = self.attrs(&elem, [])?;
        let mut entries = Vec::new();
        while let Some(child) = self.children(&elem)? {
            let entry = match child.name {
                "SetDeriv" | "SetNegDeriv" | "IncDeriv" | "DecDeriv" => {
                    let [] = self.attrs(&child, [])?;
                    let target = self.named_reference(&child, "Tgt")?;
                    let source = self.named_reference(&child, "Src")?;
                    if let Some(extra) = self.children(&child)? {
                        return Err(self.unexpected(&extra, child.name));
                    }
                    match child.name {
                        "SetDeriv" => PropagatorEntry::SetDeriv { target, source },
                        "SetNegDeriv" => PropagatorEntry::SetNegDeriv { target, source },
                        "IncDeriv" => PropagatorEntry::IncDeriv { target, source },
                        _ => PropagatorEntry::DecDeriv { target, source },
                    }
                }
                "Sax" | "Saxpy" => {
                    let [] = self.attrs(&child, [])?;
                    let mut terms = Vec::new();
                    let mut y = None;
                    while let Some(part) = self.children(&child)? {
                        match part.name {
                            "AX" if y.is_none() => {
                                let [] = self.attrs(&part, [])?;
                                let Some(a) = self.children(&part)? else {
                                    return Err(self.error(part.offset, part.name, "missing required child A"));
                                };
                                if a.name != "A" {
                                    return Err(self.unexpected(&a, "AX"));
                                }
                                let a = self.expression(a)?;
                                let x = self.named_reference(&part, "X")?;
                                if let Some(extra) = self.children(&part)? {
                                    return Err(self.unexpected(&extra, "AX"));
                                }
                                terms.push(ScaledTerm { a, x });
                            }
                            "Y" if y.is_none() && !terms.is_empty() => y = Some(self.variable_reference(part)?),
                            _ => return Err(self.unexpected(&part, child.name)),
                        }
                    }
                    let Some(y) = y else {
                        return Err(self.error(child.offset, child.name, "missing required child Y"));
                    };
                    if child.name == "Sax" {
                        PropagatorEntry::Sax { terms, y }
                    } else {
                        PropagatorEntry::Saxpy { terms, y }
                    }
                }
                "ZeroDeriv" => PropagatorEntry::ZeroDeriv(self.variable_reference(child)?),
                _ => return Err(self.unexpected(&child, "DerivativePropagator")),
            };
            entries.push(entry);
        }
        Ok(DerivativePropagator { entries })
    }

    /// The next child, which must be the variable reference element `name`.
    fn named_reference(&mut self, parent: &Elem<'a>, name: &str) -> Result<VariableReference> {
        match self.children(parent)? {
            Some(child) if child.name == name => self.variable_reference(child),
            Some(child) => Err(self.unexpected(&child, parent.name)),
            None => Err(self.error(parent.offset, parent.name, format!("missing required child {name}"))),
        }
    }

    // ---------------------------------------------------------------- expressions

    /// Any element of `ExpressionType` content: `AssignmentRHS`, `Condition`, `Index`, `A`, …
    fn expression(&mut self, elem: Elem<'a>) -> Result<Expression> {
        self.expression_with_depth(elem).map(|(expression, _)| expression)
    }

    /// Of an expression, only its variable references (without their array indices, each
    /// a vertex, no edges), the rest skipped ([`read_streaming_for_summaries`]).
    fn references_only(&mut self, elem: Elem<'a>) -> Result<Expression> {
        let [] = self.attrs(&elem, [])?;
        let mut expression = Expression::default();
        while let Some(child) = self.children(&elem)? {
            if child.name == "VariableReference" {
                let (reference, _, _) = self.reference_with(child, false)?;
                expression.vertices.alloc(ExprVertex::Variable(reference));
            } else {
                self.skip_content(&child)?;
            }
        }
        Ok(expression)
    }

    /// An expression and how far it reaches (see [`check::MAX_EXPRESSION_DEPTH`]).
    fn expression_with_depth(&mut self, elem: Elem<'a>) -> Result<(Expression, Extent)> {
        let [] = self.attrs(&elem, [])?;
        let mut buffers = std::mem::take(&mut self.expression_buffers);
        let result = self.expression_into(elem, &mut buffers);
        self.expression_buffers = buffers;
        result
    }

    fn expression_into(&mut self, elem: Elem<'a>, buffers: &mut ExpressionBuffers<'a>) -> Result<(Expression, Extent)> {
        let mut expression = Expression::default();
        let ExpressionBuffers { pending, sites, weights } = buffers;
        pending.clear();
        sites.clear();
        weights.clear();
        let mut vertex_ids = IdIndex::default();
        while let Some(child) = self.children(&elem)? {
            let (offset, element) = (child.offset, child.name);
            let mut weight = Extent::vertex(Extent::default());
            let vertex = match child.name {
                "VariableReference" => {
                    let (reference, _, nested) = self.reference(child)?;
                    weight = Extent::vertex(nested);
                    ExprVertex::Variable(reference)
                }
                "Constant" => ExprVertex::Constant(self.constant(child)?),
                "Intrinsic" => {
                    let [id, annotation, name, ty, r_type, r_shape] =
                        self.attrs(&child, ["vertex_id", "annotation", "name", "type", "rType", "rShape"])?;
                    let intrinsic = Intrinsic {
                        id: self.vertex_id(&id),
                        annotation: self.intern(&annotation),
                        name: self.intern_required(&child, "name", &name)?,
                        call_type: match &ty {
                            Some(t) => self.cg.names.intern(t),
                            None => self.cg.names.intern("inlinable"),
                        },
                        result_type: self.symbol_type(&child, "rType", &r_type)?,
                        result_shape: self.shape(&child, "rShape", &r_shape)?,
                    };
                    self.leaf(&child)?;
                    ExprVertex::Intrinsic(intrinsic)
                }
                "BooleanOperation" => {
                    let [id, annotation, name] = self.attrs(&child, ["vertex_id", "annotation", "name"])?;
                    self.required(&child, "name", &name)?;
                    let op = self.enumerated(
                        &child,
                        "name",
                        &name,
                        BooleanOp::Equal,
                        &[
                            ("less_than", BooleanOp::LessThan),
                            ("less_or_equal", BooleanOp::LessOrEqual),
                            ("greater_than", BooleanOp::GreaterThan),
                            ("greater_or_equal", BooleanOp::GreaterOrEqual),
                            ("equal", BooleanOp::Equal),
                            ("not_equal", BooleanOp::NotEqual),
                            ("and", BooleanOp::And),
                            ("or", BooleanOp::Or),
                            ("not", BooleanOp::Not),
                            ("xor", BooleanOp::Xor),
                        ],
                    )?;
                    let vertex = BooleanOperation { id: self.vertex_id(&id), annotation: self.intern(&annotation), op };
                    self.leaf(&child)?;
                    ExprVertex::BooleanOperation(vertex)
                }
                "FunctionCall" => {
                    let [id, annotation, symbol_id, scope_id] =
                        self.attrs(&child, ["vertex_id", "annotation", "symbol_id", "scope_id"])?;
                    let symbol = if symbol_id.is_some() || scope_id.is_some() {
                        Some(self.symbol_ref(&child, &symbol_id, &scope_id)?)
                    } else {
                        None
                    };
                    let id = self.vertex_id(&id);
                    let annotation = self.intern(&annotation);
                    let mut arguments = Vec::new();
                    let mut nested = Extent::default();
                    while let Some(arg) = self.children(&child)? {
                        if arg.name != "Argument" {
                            return Err(self.unexpected(&arg, "FunctionCall"));
                        }
                        let (reference, _, reach) = self.reference(arg)?;
                        nested = nested.beside(reach);
                        arguments.push(reference);
                    }
                    weight = Extent::vertex(nested);
                    ExprVertex::FunctionCall(FunctionCall { id, annotation, symbol, arguments })
                }
                "ExpressionEdge" => {
                    let [id, annotation, source, target, position] =
                        self.attrs(&child, ["edge_id", "annotation", "source", "target", "position"])?;
                    let id = self.intern_required(&child, "edge_id", &id)?;
                    let annotation = self.intern(&annotation);
                    let source = self.intern_required(&child, "source", &source)?;
                    let target = self.intern_required(&child, "target", &target)?;
                    let position = self
                        .required(&child, "position", &position)
                        .and_then(|v| self.integer(&child, "position", v))?;
                    self.leaf(&child)?;
                    pending.push((
                        id,
                        annotation,
                        position,
                        PendingEdge { offset: child.offset, element: child.name, source, target },
                    ));
                    continue;
                }
                _ => return Err(self.unexpected(&child, elem.name)),
            };
            let id = vertex.id();
            let vertex_id = |i: usize| expression.vertices[expr_vertex(i)].id();
            if vertex_ids.find(id, expression.vertices.len(), vertex_id).is_some() {
                return Err(self.error(
                    offset,
                    element,
                    format!("duplicate vertex_id '{}' in {}", self.cg.names.get(id), elem.name),
                ));
            }
            expression.vertices.alloc(vertex);
            vertex_ids.added(expression.vertices.len(), |i| expression.vertices[expr_vertex(i)].id());
            sites.push((offset, element));
            weights.push(weight);
        }
        let mut edge_ids = IdIndex::default();
        let mut edge_offsets = Vec::with_capacity(pending.len());
        for (id, annotation, position, edge) in pending.drain(..) {
            if edge_ids.find(id, expression.edges.len(), |i| expression.edges[i].id).is_some() {
                self.duplicate_edge(edge.offset, edge.element, id, elem.name)?;
            }
            let lookup = |end: Name, which: &str| {
                let found =
                    vertex_ids.find(end, expression.vertices.len(), |i| expression.vertices[expr_vertex(i)].id());
                found.map(expr_vertex).ok_or_else(|| {
                    self.error(
                        edge.offset,
                        edge.element,
                        format!("{which} '{}' names no vertex of this {}", self.cg.names.get(end), elem.name),
                    )
                })
            };
            let source = lookup(edge.source, "source")?;
            let target = lookup(edge.target, "target")?;
            expression.edges.push(ExprEdge { id, annotation, source, target, position });
            edge_ids.added(expression.edges.len(), |i| expression.edges[i].id);
            edge_offsets.push(edge.offset);
        }
        let site = ExpressionSite {
            container: elem.name,
            offset: elem.offset,
            vertices: sites,
            edges: &edge_offsets,
            weights,
        };
        let reach = self.scratch.expression(&expression, &site, &self.cg.names, self.catalogue, &mut self.problems);
        Ok((expression, reach))
    }

    fn vertex_id(&mut self, value: &Option<Cow<'a, str>>) -> Name {
        match value {
            Some(v) => self.cg.names.intern(v),
            None => self.cg.names.intern("1"),
        }
    }

    fn constant(&mut self, elem: Elem<'a>) -> Result<Constant> {
        let [id, annotation, ty, fe_type, value] =
            self.attrs(&elem, ["vertex_id", "annotation", "type", "feType", "value"])?;
        if ty.is_none() {
            return Err(self.error(elem.offset, elem.name, "missing required attribute 'type'"));
        }
        let ty = self.enumerated(
            &elem,
            "type",
            &ty,
            ConstantType::Real,
            &[
                ("real", ConstantType::Real),
                ("double", ConstantType::Double),
                ("integer", ConstantType::Integer),
                ("bool", ConstantType::Bool),
                ("char", ConstantType::Char),
                ("string", ConstantType::String),
            ],
        )?;
        let value = self.intern_required(&elem, "value", &value)?;
        let constant = Constant {
            id: self.vertex_id(&id),
            annotation: self.intern(&annotation),
            ty,
            fe_type: self.intern(&fe_type),
            value,
        };
        self.leaf(&elem)?;
        Ok(constant)
    }

    /// Any element of `VariableReferenceType`: `VariableReference`, `AssignmentLHS`,
    /// `SideEffectReference`, `Tgt`, `Src`, `X`, `Y`, `ZeroDeriv`, `Argument` of a function call.
    fn variable_reference(&mut self, elem: Elem<'a>) -> Result<VariableReference> {
        self.variable_reference_with_live(elem).map(|(reference, _)| reference)
    }

    /// A variable reference and its `live` attribute (only an `AssignmentLHS` may have one).
    fn variable_reference_with_live(&mut self, elem: Elem<'a>) -> Result<(VariableReference, bool)> {
        self.reference(elem).map(|(reference, live, _)| (reference, live))
    }

    /// A variable reference, its `live` attribute, and how far its subscripts reach (nothing
    /// without subscripts).
    fn reference(&mut self, elem: Elem<'a>) -> Result<(VariableReference, bool, Extent)> {
        self.reference_with(elem, true)
    }

    /// [`Lower::reference`]; without `lower_indices`, array elements' indices are skipped (left
    /// empty), for a read that wants only which variables a reference names.
    fn reference_with(&mut self, elem: Elem<'a>, lower_indices: bool) -> Result<(VariableReference, bool, Extent)> {
        let [id, annotation, active, alias, du_ud, deriv, constant, live] =
            self.attrs(&elem, ["vertex_id", "annotation", "active", "alias", "du_ud", "deriv", "constant", "live"])?;
        if live.is_some() && elem.name != "AssignmentLHS" {
            return Err(self.error(elem.offset, elem.name, "attribute 'live' is not allowed here"));
        }
        let live = self.boolean(&elem, "live", &live, true)?;
        let mut reference = VariableReference {
            id: self.vertex_id(&id),
            annotation: self.intern(&annotation),
            active: self.active_use(&elem, &active)?,
            alias: self.alias_ref(&elem, &alias)?,
            du_ud: self.duud_ref(&elem, &du_ud)?,
            deriv: self.boolean(&elem, "deriv", &deriv, false)?,
            constant: self.boolean(&elem, "constant", &constant, false)?,
            vertices: RefVertices::new(),
            edges: Vec::new(),
        };
        let mut pending = Vec::new();
        let mut vertex_ids = IdIndex::default();
        let mut reach = Extent::default();
        while let Some(child) = self.children(&elem)? {
            let vertex = match child.name {
                "SymbolReference" if pending.is_empty() => {
                    let [id, annotation, symbol_id, scope_id] =
                        self.attrs(&child, ["vertex_id", "annotation", "symbol_id", "scope_id"])?;
                    let symbol = self.symbol_ref(&child, &symbol_id, &scope_id)?;
                    let mut properties = Vec::new();
                    while let Some(property) = self.children(&child)? {
                        if property.name != "SymbolReferenceProperty" {
                            return Err(self.unexpected(&property, "SymbolReference"));
                        }
                        let [name, value] = self.attrs(&property, ["name", "value"])?;
                        let name = self.intern_required(&property, "name", &name)?;
                        let value = self.intern_required(&property, "value", &value)?;
                        self.leaf(&property)?;
                        properties.push((name, value));
                    }
                    (
                        child.offset,
                        VarRefVertex::Symbol(SymbolReference {
                            id: self.vertex_id(&id),
                            annotation: self.intern(&annotation),
                            symbol,
                            properties,
                        }),
                    )
                }
                "ArrayElementReference" if pending.is_empty() => {
                    let [id, annotation] = self.attrs(&child, ["vertex_id", "annotation"])?;
                    let id = self.vertex_id(&id);
                    let annotation = self.intern(&annotation);
                    let mut indices = Vec::new();
                    if !lower_indices {
                        self.skip_content(&child)?;
                    } else {
                        while let Some(triplet) = self.children(&child)? {
                            if triplet.name == "Index" {
                                // Older front ends wrote plain indices without the triplet.
                                self.lenient(triplet.offset, triplet.name, "Index outside an IndexTriplet".into())?;
                                let (index, index_reach) = self.expression_with_depth(triplet)?;
                                reach = reach.beside(index_reach);
                                indices.push(IndexTriplet { index: Some(index), ..IndexTriplet::default() });
                                continue;
                            }
                            if triplet.name != "IndexTriplet" {
                                return Err(self.unexpected(&triplet, "ArrayElementReference"));
                            }
                            let (triplet, triplet_reach) = self.index_triplet(triplet)?;
                            reach = reach.beside(triplet_reach);
                            indices.push(triplet);
                        }
                        if indices.is_empty() {
                            return Err(self.error(child.offset, child.name, "missing required child IndexTriplet"));
                        }
                    }
                    (child.offset, VarRefVertex::ArrayElement(ArrayElementReference { id, annotation, indices }))
                }
                "VariableReferenceEdge" => {
                    let [id, annotation, source, target] =
                        self.attrs(&child, ["edge_id", "annotation", "source", "target"])?;
                    let id = self.intern_required(&child, "edge_id", &id)?;
                    let annotation = self.intern(&annotation);
                    let source = self.intern_required(&child, "source", &source)?;
                    let target = self.intern_required(&child, "target", &target)?;
                    self.leaf(&child)?;
                    pending.push((
                        id,
                        annotation,
                        PendingEdge { offset: child.offset, element: child.name, source, target },
                    ));
                    continue;
                }
                _ => return Err(self.unexpected(&child, elem.name)),
            };
            let (offset, vertex) = vertex;
            let (id, element) = match &vertex {
                VarRefVertex::Symbol(s) => (s.id, "SymbolReference"),
                VarRefVertex::ArrayElement(a) => (a.id, "ArrayElementReference"),
            };
            let vertices = &reference.vertices;
            if vertex_ids.find(id, vertices.len(), |i| var_ref_vertex_id(&vertices[i])).is_some() {
                return Err(self.error(
                    offset,
                    element,
                    format!("duplicate vertex_id '{}' in {}", self.cg.names.get(id), elem.name),
                ));
            }
            reference.vertices.push(vertex);
            let vertices = &reference.vertices;
            vertex_ids.added(vertices.len(), |i| var_ref_vertex_id(&vertices[i]));
        }
        if reference.vertices.is_empty() {
            return Err(self.error(elem.offset, elem.name, "missing required child SymbolReference"));
        }
        let mut edge_ids = IdIndex::default();
        for (id, annotation, edge) in pending {
            if edge_ids.find(id, reference.edges.len(), |i| reference.edges[i].id).is_some() {
                self.duplicate_edge(edge.offset, edge.element, id, elem.name)?;
            }
            let lookup = |end: Name, which: &str| {
                let vertices = &reference.vertices;
                let index = vertex_ids.find(end, vertices.len(), |i| var_ref_vertex_id(&vertices[i]));
                index.map(|i| i as u32).ok_or_else(|| {
                    self.error(
                        edge.offset,
                        edge.element,
                        format!("{which} '{}' names no vertex of this {}", self.cg.names.get(end), elem.name),
                    )
                })
            };
            let source = lookup(edge.source, "source")?;
            let target = lookup(edge.target, "target")?;
            reference.edges.push(VarRefEdge { id, annotation, source, target });
            edge_ids.added(reference.edges.len(), |i| reference.edges[i].id);
        }
        Ok((reference, live, reach))
    }

    /// An index triplet and how far its parts reach.
    fn index_triplet(&mut self, elem: Elem<'a>) -> Result<(IndexTriplet, Extent)> {
        let [] = self.attrs(&elem, [])?;
        let mut triplet = IndexTriplet::default();
        let mut reach = Extent::default();
        let mut stage = 0;
        while let Some(child) = self.children(&elem)? {
            let next = match child.name {
                "Index" => 1,
                "Bound" => 2,
                "Stride" => 3,
                _ => 0,
            };
            if next <= stage {
                return Err(self.unexpected(&child, "IndexTriplet"));
            }
            stage = next;
            let (expression, part) = self.expression_with_depth(child)?;
            reach = reach.beside(part);
            let expression = Some(expression);
            match next {
                1 => triplet.index = expression,
                2 => triplet.bound = expression,
                _ => triplet.stride = expression,
            }
        }
        Ok((triplet, reach))
    }

    // ---------------------------------------------------------------- fix-ups

    /// Gives calls read without `formalArgCount` the callee's formal count, or failing that
    /// the highest argument position.
    fn infer_formal_arg_counts(&mut self) -> Result<()> {
        if self.calls_without_count == 0 {
            return Ok(());
        }
        let formal_counts: FxHashMap<SymbolId, u32> = self
            .cg
            .cfgs()
            .filter_map(|(_, cfg)| cfg.arguments.as_ref().map(|args| (cfg.symbol, args.len() as u32)))
            .collect();
        for (_, routine) in self.cg.routines.iter_mut() {
            let graphs: Vec<&mut FlowGraph> = match routine {
                Routine::ControlFlowGraph(cfg) => vec![&mut cfg.graph],
                Routine::ReplacementList(list) => list.replacements.iter_mut().map(|r| &mut r.graph).collect(),
            };
            for graph in graphs {
                for (_, vertex) in graph.vertices.iter_mut() {
                    let CfgVertexKind::BasicBlock(block) = &mut vertex.kind else { continue };
                    for statement in &mut block.statements {
                        let Statement::SubroutineCall(call) = statement else { continue };
                        if call.formal_arg_count != u32::MAX {
                            continue;
                        }
                        let from_callee = call.symbol.and_then(|s| formal_counts.get(&s).copied());
                        let from_positions = call.arguments.iter().map(|a| a.position).max().unwrap_or(0);
                        call.formal_arg_count = from_callee.unwrap_or(from_positions);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Vertices and not-yet-resolved edges of a control flow graph being read.
#[derive(Default)]
struct FlowGraphBuilder<'a> {
    /// Where each vertex began.
    offsets: Vec<usize>,
    graph: FlowGraph,
    ids: FxHashMap<Name, usize>,
    edges: Vec<(Name, Name, Option<i64>, PendingEdge<'a>)>,
}

impl FlowGraphBuilder<'_> {
    fn is_empty(&self) -> bool {
        self.graph.vertices.is_empty() && self.edges.is_empty()
    }
}

/// An attribute value with its references replaced and white space normalized, as XML 1.0
/// prescribes for attribute values (tab, newline and carriage return become spaces).
fn decode_attribute(raw: &str) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(i) = rest.find(['&', '<', '\t', '\n', '\r']) {
        out.push_str(&rest[..i]);
        let c = rest.as_bytes()[i];
        match c {
            b'<' => return Err("'<' is not allowed in an attribute value".into()),
            b'\t' | b'\n' | b'\r' => {
                // `\r\n` counts as one line break.
                out.push(' ');
                let skip = if c == b'\r' && rest.as_bytes().get(i + 1) == Some(&b'\n') { 2 } else { 1 };
                rest = &rest[i + skip..];
            }
            _ => {
                let end = rest[i..].find(';').ok_or("an entity reference is not closed by ';'")? + i;
                let name = &rest[i + 1..end];
                let decoded = match name {
                    "lt" => '<',
                    "gt" => '>',
                    "amp" => '&',
                    "quot" => '"',
                    "apos" => '\'',
                    _ => {
                        let code = if let Some(hex) = name.strip_prefix("#x") {
                            u32::from_str_radix(hex, 16).ok()
                        } else if let Some(decimal) = name.strip_prefix('#') {
                            decimal.parse::<u32>().ok()
                        } else {
                            return Err(format!("unknown entity '&{name};' (only the predefined ones are allowed)"));
                        };
                        code.and_then(char::from_u32).ok_or_else(|| format!("bad character reference '&{name};'"))?
                    }
                };
                out.push(decoded);
                rest = &rest[end + 1..];
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

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

fn expr_vertex(index: usize) -> ExprVertexId {
    ExprVertexId::from_raw(la_arena::RawIdx::from(index as u32))
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

/// The XML id of a variable reference vertex.
fn var_ref_vertex_id(vertex: &VarRefVertex) -> Name {
    match vertex {
        VarRefVertex::Symbol(s) => s.id,
        VarRefVertex::ArrayElement(a) => a.id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name is found only whole.
    #[test]
    fn attribute_names_are_found_whole() {
        assert!(key_at(b"scope_id=\"1\"", b"scope_id"));
        assert!(key_at(b"scope_id =\"1\"", b"scope_id"));
        assert!(!key_at(b"scope_ids=\"1\"", b"scope_id"));
        assert!(!key_at(b"scope_i", b"scope_id"));
        assert!(!key_at(b"scope_id", b"scope_id"), "a name at the very end is not followed by its value");
    }

    #[test]
    fn attribute_values_are_decoded_and_normalized() {
        assert_eq!(decode_attribute("a&amp;b&lt;&#65;&#x42;").as_deref(), Ok("a&b<AB"));
        assert_eq!(decode_attribute("x\ty\r\nz").as_deref(), Ok("x y z"));
        assert!(decode_attribute("&nbsp;").is_err());
        assert!(decode_attribute("a<b").is_err());
        assert!(decode_attribute("&amp").is_err());
    }
}
