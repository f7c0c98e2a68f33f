//! The checks of one routine (a `ControlFlowGraph` or `ReplacementList` child of the
//! `CallGraph`) in one pass over its text, for the common case: a routine they find nothing
//! in.
//!
//! Why: on large documents the checks' tree of each routine (`tree::scan`, a node and its
//! attributes written for every element) and the walks over it cost more than reading and
//! transforming the routine together, and validation runs beside them on the same cores.
//! Front ends write routines the checks accept, so this pass answers one question only —
//! would the checks of the routine's tree find nothing? — and answers "yes" only when it is
//! sure. Anything else, a finding or anything it does not take (a comment, a namespace
//! declaration, single quotes, a character to decode, white space where the tree scan allows
//! it but this pass does not look for it), sends the routine to the checks of its tree,
//! which report exactly what they did before. It must never accept what they would report:
//! `every_accepted_routine_has_no_findings` holds it to them on the corpus, the shared
//! examples and tens of thousands of mutated routines.
//!
//! The rules are the checks' own tables (`attributes`, `child_content`, `required_children`,
//! `bad_value`) applied to what the scan reads: structure (which children where, which
//! attributes, their values, required children and attributes), references (scopes, symbols,
//! alias, du-ud and DO keys) and the graphs (unique vertex ids, edges between vertices that
//! exist, the control flow graph's entry, exit and structure).

use rustc_hash::{FxHashMap, FxHashSet};

use super::super::lexer::{first_non_blank, is_blank};
use super::super::words;
use super::{Content, MAX_NESTING, Tables, Value, attributes, bad_value, child_content, required_children};

/// Whether the checks of the routine `text[start..end]`, of `content`, would find nothing in
/// it; `false` also when this pass cannot tell. `prefix` is the one the root binds to the XAIF
/// namespace, with its colon (`xaif:`).
pub(super) fn clean<'t>(
    text: &'t str,
    start: usize,
    end: usize,
    content: Content,
    prefix: &str,
    tables: &Tables<'t>,
) -> bool {
    debug_assert!(matches!(content, Content::ControlFlowGraph | Content::ReplacementList));
    let mut pass = Pass {
        text,
        bytes: text.as_bytes(),
        prefix: prefix.as_bytes(),
        tables,
        frames: Vec::new(),
        graphs: Vec::new(),
        open_graphs: 0,
        last_scope: None,
    };
    let clean = pass.routine(start, end, content).is_some();
    #[cfg(test)]
    if clean {
        tests::ACCEPTED.with(|accepted| accepted.set(accepted.get() + 1));
    }
    clean
}

/// The root's prefix for the XAIF namespace, with its colon, from its start tag: where exactly
/// one plain `xmlns:P="…"` binds one (else `None`: no routine takes this pass). The tag is read
/// attribute by attribute, so that nothing inside a value is taken for a declaration.
pub(super) fn xaif_prefix(root_tag: &str) -> Option<String> {
    let bytes = root_tag.as_bytes();
    let mut p = 1 + bytes.iter().skip(1).position(|&b| is_blank(b) || b == b'>' || b == b'/')?;
    let mut found = None;
    loop {
        p += first_non_blank(&bytes[p..]);
        match bytes.get(p) {
            Some(b'>' | b'/') | None => return found,
            Some(_) => {}
        }
        let name_start = p;
        p += bytes[p..].iter().position(|&b| b == b'=' || is_blank(b))?;
        let name = &root_tag[name_start..p];
        if bytes[p] != b'=' {
            return None;
        }
        let quote = *bytes.get(p + 1).filter(|q| matches!(q, b'"' | b'\''))?;
        let value_start = p + 2;
        let value_end = value_start + bytes[value_start..].iter().position(|&b| b == quote)?;
        let value = &root_tag[value_start..value_end];
        p = value_end + 1;
        let Some(prefix) = name.strip_prefix("xmlns:") else { continue };
        if value.contains('&') {
            return None;
        }
        if value == super::XAIF_NAMESPACE {
            let plain = !prefix.is_empty()
                && prefix.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
            if !plain || found.is_some() {
                return None;
            }
            found = Some(format!("{prefix}:"));
        }
    }
}

/// How long the element name at the start of `bytes` is: up to a blank, `/` or `>` (or the
/// end), eight bytes at a time where eight remain.
fn name_length(bytes: &[u8]) -> usize {
    let ends_name = |b: u8| is_blank(b) || b == b'/' || b == b'>';
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = words::word(chunk);
        // Control characters are flagged with white space, and passed over here.
        let ends = words::at_most_space(word) | words::equal_first(word, b'/') | words::equal_first(word, b'>');
        if ends == 0 {
            at += 8;
            continue;
        }
        at += words::first_flagged(ends);
        if ends_name(bytes[at]) {
            return at;
        }
        at += 1;
    }
    at + bytes[at..].iter().position(|&b| ends_name(b)).unwrap_or(bytes.len() - at)
}

/// Whether `value` is of `kind` in the form front ends write it (digits, at most nine, with a
/// sign for integers), told without parsing it; `false` leaves the question to `bad_value`.
#[inline]
fn plainly_valid(kind: Value, value: &str) -> bool {
    let digits = |text: &str| (1..=9).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit());
    match kind {
        Value::Text => true,
        Value::Integer => digits(value.strip_prefix('-').unwrap_or(value)),
        Value::NonNegative | Value::Count => digits(value),
        Value::Positive | Value::Position => digits(value) && value.bytes().any(|b| b != b'0'),
        Value::Boolean | Value::OneOf(_) => false,
    }
}

/// An open element.
struct Frame<'t> {
    content: Content,
    local: &'t str,
    /// Bit `k`: the `k`-th of its [`required_children`] was met.
    required_met: u8,
    /// The graph it holds, an index into [`Pass::graphs`].
    graph: Option<usize>,
}

/// The vertices and edges of one graph, checked when its element closes.
struct Graph<'t> {
    /// A control flow graph: whether it says it is structured.
    flow: Option<bool>,
    vertices: Vec<(&'t str, Vertex)>,
    /// Edge id, source, target.
    edges: Vec<(&'t str, &'t str, &'t str)>,
}

/// What the control flow checks count of a vertex.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Vertex {
    Entry,
    Exit,
    /// `If` or `Branch`, which an `EndBranch` closes.
    Branch,
    EndBranch,
    /// `ForLoop`, `PreLoop` or `PostLoop`, which an `EndLoop` closes.
    Loop,
    EndLoop,
    Other,
}

impl Vertex {
    fn of(local: &str) -> Vertex {
        match local {
            "Entry" => Vertex::Entry,
            "Exit" => Vertex::Exit,
            "If" | "Branch" => Vertex::Branch,
            "EndBranch" => Vertex::EndBranch,
            "ForLoop" | "PreLoop" | "PostLoop" => Vertex::Loop,
            "EndLoop" => Vertex::EndLoop,
            _ => Vertex::Other,
        }
    }
}

struct Pass<'p, 't> {
    text: &'t str,
    bytes: &'t [u8],
    prefix: &'p [u8],
    tables: &'p Tables<'t>,
    frames: Vec<Frame<'t>>,
    /// The graphs of the open elements, innermost last, then closed ones kept for their vectors.
    graphs: Vec<Graph<'t>>,
    /// How many of `graphs` belong to open elements.
    open_graphs: usize,
    /// The scope named last, and its symbols: the references of a routine name few scopes,
    /// mostly one after the other.
    last_scope: Option<(&'t str, Option<&'p FxHashSet<Box<str>>>)>,
}

/// The most attributes a content type knows (`attributes`).
const MOST_KNOWN: usize = 16;

impl<'p, 't> Pass<'p, 't> {
    /// The routine from its start tag at `start` to its end tag ending at `end`.
    fn routine(&mut self, start: usize, end: usize, content: Content) -> Option<()> {
        let mut at = self.start_tag(start, Some(content))?;
        while !self.frames.is_empty() {
            // Only blank text between tags, and nothing past the routine's end.
            if at >= end {
                return None;
            }
            at += first_non_blank(&self.bytes[at..end]);
            if at >= end || self.bytes[at] != b'<' {
                return None;
            }
            if self.bytes.get(at + 1) == Some(&b'/') {
                at = self.end_tag(at)?;
            } else {
                at = self.start_tag(at, None)?;
            }
        }
        (at == end).then_some(())
    }

    /// The start tag at `at` (and, for an empty element, its end): the element's structure,
    /// attributes and references. `content` is the routine's own; other elements get theirs
    /// from their parent's. Returns where the tag ends.
    fn start_tag(&mut self, at: usize, content: Option<Content>) -> Option<usize> {
        let (bytes, text) = (self.bytes, self.text);
        let mut p = at + 1;
        if !crate::bytes::starts_with(&bytes[p..], self.prefix) {
            return None;
        }
        p += self.prefix.len();
        let local_start = p;
        p += name_length(&bytes[p..]);
        // Both ends are next to ASCII bytes (`:` before, a delimiter or the end after).
        let local = &text[local_start..p];
        let content = match (content, self.frames.last()) {
            (Some(content), _) => content,
            (None, Some(parent)) => child_content(parent.content, local)?,
            (None, None) => return None,
        };
        // The routine is at depth 2, under the root.
        if self.frames.len() + 2 > MAX_NESTING {
            return None;
        }

        // Attributes: one blank or more before each, `name="value"` with plain values.
        let known = attributes(content);
        if known.len() > MOST_KNOWN {
            return None;
        }
        let slot_of = Slot::table(content);
        let mut slots = Slots::default();
        let mut met = 0u32;
        // Front ends write attributes in the order the table lists them: the one after the last
        // found is tried first, at the tag's bytes, before the name is scanned for.
        let mut next = 0;
        let empty = loop {
            // Mostly one space, taken without the scan for blanks.
            let blanks = match bytes.get(p..p + 2) {
                Some([b' ', next]) if !is_blank(*next) => 1,
                _ => first_non_blank(&bytes[p..]),
            };
            p += blanks;
            match bytes.get(p) {
                Some(b'>') => {
                    p += 1;
                    break false;
                }
                Some(b'/') if bytes.get(p + 1) == Some(&b'>') => {
                    p += 2;
                    break true;
                }
                Some(_) if blanks > 0 => {}
                _ => return None,
            }
            let expected = known.get(next).map(|(k, _, _)| k.as_bytes());
            let index = match expected {
                Some(k) if crate::bytes::starts_with(&bytes[p..], k) && bytes.get(p + k.len()) == Some(&b'=') => {
                    p += k.len();
                    next
                }
                // Front ends skip optional ones and order a few their own way (`du_ud` before
                // `alias`, `scope_id` before `symbol_id`): the others are compared at the
                // tag's bytes too, those with another first byte passed over at once. Only a
                // known name followed by `=` passes.
                _ => {
                    let first = bytes.get(p).copied();
                    let k = known.iter().position(|(k, _, _)| {
                        let k = k.as_bytes();
                        k.first().copied() == first
                            && crate::bytes::starts_with(&bytes[p..], k)
                            && bytes.get(p + k.len()) == Some(&b'=')
                    })?;
                    p += known[k].0.len();
                    k
                }
            };
            if bytes.get(p) != Some(&b'=') || bytes.get(p + 1) != Some(&b'"') {
                return None;
            }
            p += 2;
            let value_start = p;
            while bytes.get(p).is_some_and(|&b| PLAIN_VALUE[usize::from(b)]) {
                p += 1;
            }
            if bytes.get(p) != Some(&b'"') {
                return None;
            }
            // After `"` and at `"`: both ends are character boundaries.
            let value = &text[value_start..p];
            p += 1;
            if met & (1 << index) != 0 {
                return None;
            }
            met |= 1 << index;
            next = index + 1;
            let kind = known[index].1;
            if !plainly_valid(kind, value) && bad_value(kind, value).is_some() {
                return None;
            }
            if let Some(slot) = slot_of[index] {
                slots.0[slot as usize] = Some(value);
            }
        };
        if known.iter().enumerate().any(|(k, (_, _, required))| *required && met & (1 << k) == 0) {
            return None;
        }
        let attribute = |slot: Slot| slots.0[slot as usize];
        self.references(content, &slots)?;

        // Its place in its parent: a required child met, a vertex or an edge of its graph.
        if let Some(parent) = self.frames.last_mut() {
            let required = required_children(parent.content);
            if !required.is_empty()
                && let Some(k) = required.iter().position(|name| *name == local)
            {
                parent.required_met |= 1 << k;
            }
            if let Some(graph) = parent.graph {
                let vertex_id = || attribute(Slot::VertexId).unwrap_or("1");
                let edge = || Some((attribute(Slot::EdgeId)?, attribute(Slot::Source)?, attribute(Slot::Target)?));
                let graph = &mut self.graphs[graph];
                match (parent.content, content) {
                    (Content::ControlFlowGraph | Content::Replacement, Content::ControlFlowEdge) => {
                        graph.edges.push(edge()?)
                    }
                    (
                        Content::ControlFlowGraph | Content::Replacement,
                        Content::PlainVertex | Content::BasicBlock | Content::Conditional | Content::ForLoop,
                    ) => graph.vertices.push((vertex_id(), Vertex::of(local))),
                    (Content::ControlFlowGraph | Content::Replacement, _) => {}
                    (Content::Expression, Content::ExpressionEdge) => graph.edges.push(edge()?),
                    (Content::Expression, _) => graph.vertices.push((vertex_id(), Vertex::Other)),
                    (_, Content::Edge) => graph.edges.push(edge()?),
                    (_, Content::SymbolReference | Content::ArrayElementReference) => {
                        graph.vertices.push((vertex_id(), Vertex::Other))
                    }
                    _ => {}
                }
            }
        }

        // What it holds: a graph, for the elements whose checks look at one.
        let flow = match content {
            Content::ControlFlowGraph | Content::Replacement => {
                Some(Some(!matches!(attribute(Slot::Structured), Some("false" | "0"))))
            }
            Content::Expression | Content::VariableReference | Content::Lhs | Content::PropagatorOperand => Some(None),
            _ => None,
        };
        let graph = flow.map(|flow| {
            let open = self.open_graphs;
            if open == self.graphs.len() {
                self.graphs.push(Graph { flow, vertices: Vec::new(), edges: Vec::new() });
            } else {
                let graph = &mut self.graphs[open];
                graph.flow = flow;
                graph.vertices.clear();
                graph.edges.clear();
            }
            self.open_graphs += 1;
            open
        });
        self.frames.push(Frame { content, local, required_met: 0, graph });
        if empty {
            self.close()?;
        }
        Some(p)
    }

    /// The symbols of the scope `id` (`None`: no such scope).
    fn scope(&mut self, id: &'t str) -> Option<&'p FxHashSet<Box<str>>> {
        if let Some((last, symbols)) = self.last_scope
            && crate::bytes::eq(last.as_bytes(), id.as_bytes())
        {
            return symbols;
        }
        let symbols = self.tables.scopes.get(id);
        self.last_scope = Some((id, symbols));
        symbols
    }

    /// The end tag at `at`, which must close the innermost open element; returns where it ends.
    fn end_tag(&mut self, at: usize) -> Option<usize> {
        let bytes = self.bytes;
        let local = self.frames.last()?.local.as_bytes();
        let mut p = at + 2;
        if !crate::bytes::starts_with(&bytes[p..], self.prefix) {
            return None;
        }
        p += self.prefix.len();
        if !crate::bytes::starts_with(&bytes[p..], local) || bytes.get(p + local.len()) != Some(&b'>') {
            return None;
        }
        self.close()?;
        Some(p + local.len() + 1)
    }

    /// The checks of the innermost open element once its children are known.
    fn close(&mut self) -> Option<()> {
        let frame = self.frames.pop()?;
        let required = required_children(frame.content);
        if u32::from(frame.required_met).count_ones() as usize != required.len() {
            return None;
        }
        match frame.graph {
            Some(graph) => {
                self.open_graphs -= 1;
                check_graph(&self.graphs[graph])
            }
            None => Some(()),
        }
    }

    /// The reference checks of one element: the scopes and symbols it names, and its keys of
    /// the alias, du-ud and DO maps.
    fn references(&mut self, content: Content, slots: &Slots<'t>) -> Option<()> {
        // Each content type below stands for one element name (`child_content`).
        let tables = self.tables;
        let attribute = |slot: Slot| slots.0[slot as usize];
        let scope_attribute = match content {
            Content::BasicBlock => Some(Slot::ScopeId),
            Content::ControlFlowGraph | Content::ReplacementList => Some(Slot::FlowGraphScopeId),
            _ => None,
        };
        if let Some(scope) = scope_attribute.and_then(attribute)
            && self.scope(scope).is_none()
        {
            return None;
        }
        if matches!(
            content,
            Content::SymbolReference
                | Content::ArgumentSymbolReference
                | Content::ControlFlowGraph
                | Content::ReplacementList
                | Content::SubroutineCall
                | Content::FunctionCall
        ) && let (Some(symbol), Some(scope)) = (attribute(Slot::SymbolId), attribute(Slot::ScopeId))
            && !self.scope(scope)?.contains(symbol)
        {
            return None;
        }
        for (slot, keys) in
            [(Slot::Alias, &tables.alias_keys), (Slot::DuUd, &tables.duud_keys), (Slot::DoChain, &tables.do_keys)]
        {
            let Some(value) = attribute(slot) else { continue };
            let Ok(key) = value.trim().parse::<i64>() else { continue };
            if key != 0 && !u64::try_from(key).is_ok_and(|k| keys.contains(&k)) {
                return None;
            }
        }
        // An older front end's call without its argument count is reported (leniently).
        if content == Content::SubroutineCall && attribute(Slot::FormalArgCount).is_none() {
            return None;
        }
        Some(())
    }
}

/// The attributes the checks beyond their values look at (`FormalArgCount` last: [`Slots`]
/// holds one value for each).
#[derive(Copy, Clone)]
enum Slot {
    VertexId,
    EdgeId,
    Source,
    Target,
    SymbolId,
    ScopeId,
    FlowGraphScopeId,
    Alias,
    DuUd,
    DoChain,
    Structured,
    FormalArgCount,
}

impl Slot {
    fn of(name: &str) -> Option<Slot> {
        Some(match name {
            "vertex_id" => Slot::VertexId,
            "edge_id" => Slot::EdgeId,
            "source" => Slot::Source,
            "target" => Slot::Target,
            "symbol_id" => Slot::SymbolId,
            "scope_id" => Slot::ScopeId,
            "controlflowgraph_scope_id" => Slot::FlowGraphScopeId,
            "alias" => Slot::Alias,
            "du_ud" => Slot::DuUd,
            "do_chain" => Slot::DoChain,
            "structured" => Slot::Structured,
            "formalArgCount" => Slot::FormalArgCount,
            _ => return None,
        })
    }

    /// The slot of each of the attributes of `content` (in [`attributes`]' order): worked out
    /// once per content type rather than by name for every attribute of every tag (658,000
    /// times in a 16 MiB synthetic input).
    fn table(content: Content) -> [Option<Slot>; MOST_KNOWN] {
        static TABLES: [std::sync::OnceLock<[Option<Slot>; MOST_KNOWN]>; CONTENT_TYPES] =
            [const { std::sync::OnceLock::new() }; CONTENT_TYPES];
        let work_out = || {
            let mut table = [None; MOST_KNOWN];
            for (slot, (name, _, _)) in table.iter_mut().zip(attributes(content)) {
                *slot = Slot::of(name);
            }
            table
        };
        match TABLES.get(content as usize) {
            Some(table) => *table.get_or_init(work_out),
            None => work_out(),
        }
    }
}

/// How many [`Content`] types [`Slot::table`] keeps tables for (more would be looked up each
/// time).
const CONTENT_TYPES: usize = 64;

/// The bytes an attribute value may hold for the one-pass checks: printable ASCII but `"`, `<`
/// and `&` (anything else sends the routine to its tree).
static PLAIN_VALUE: [bool; 256] = {
    let mut plain = [false; 256];
    let mut b = 0x20;
    while b < 0x7f {
        plain[b] = !matches!(b as u8, b'"' | b'<' | b'&');
        b += 1;
    }
    plain
};

/// The values of an element's [`Slot`] attributes.
#[derive(Default)]
struct Slots<'t>([Option<&'t str>; Slot::FormalArgCount as usize + 1]);

/// A graph's own checks: unique vertex and edge ids, edges between its vertices, and for a
/// control flow graph one entry and one exit, no edge into the entry or out of the exit, and,
/// if structured, as many branch and loop ends as branches and loops.
fn check_graph(graph: &Graph<'_>) -> Option<()> {
    match numbered(graph) {
        Some(found) => found?,
        None => by_text(graph)?,
    }
    if let Some(structured) = graph.flow {
        let count = |kind: Vertex| graph.vertices.iter().filter(|(_, k)| *k == kind).count();
        if !graph.vertices.is_empty() && (count(Vertex::Entry) != 1 || count(Vertex::Exit) != 1) {
            return None;
        }
        if structured
            && (count(Vertex::Branch) != count(Vertex::EndBranch) || count(Vertex::Loop) != count(Vertex::EndLoop))
        {
            return None;
        }
    }
    Some(())
}

/// The ids and edges of a graph whose vertex ids are all [`small_number`]s (front ends number
/// them 1, 2, …), checked with sets of bits: `None` when they are not, else whether the checks
/// pass. An endpoint that is not such a number names no vertex: its text differs from all of
/// theirs.
fn numbered(graph: &Graph<'_>) -> Option<Option<()>> {
    let (mut all, mut entries, mut exits) = (Bits::default(), Bits::default(), Bits::default());
    for &(id, kind) in &graph.vertices {
        let n = small_number(id)?;
        if !all.insert(n) {
            return Some(None);
        }
        match kind {
            Vertex::Entry => _ = entries.insert(n),
            Vertex::Exit => _ = exits.insert(n),
            _ => {}
        }
    }
    let edge_ids = || graph.edges.iter().map(|(id, _, _)| *id);
    let unique_edges = if edge_ids().all(|id| small_number(id).is_some()) {
        let mut seen = Bits::default();
        edge_ids().filter_map(small_number).all(|n| seen.insert(n))
    } else {
        unique(edge_ids())
    };
    Some(unique_edges.then_some(()).and(ends(graph, &all, &entries, &exits)))
}

/// The edges' ends of a [`numbered`] graph: vertices of it, not into its entry nor out of its
/// exit.
fn ends(graph: &Graph<'_>, all: &Bits, entries: &Bits, exits: &Bits) -> Option<()> {
    for &(_, source, target) in &graph.edges {
        let (source, target) = (small_number(source)?, small_number(target)?);
        if !all.has(source) || !all.has(target) || exits.has(source) || entries.has(target) {
            return None;
        }
    }
    Some(())
}

/// The ids and edges of any graph, by their texts.
fn by_text(graph: &Graph<'_>) -> Option<()> {
    let vertex_ids = || graph.vertices.iter().map(|(id, _)| *id);
    if !unique(vertex_ids()) || !unique(graph.edges.iter().map(|(id, _, _)| *id)) {
        return None;
    }
    let index: FxHashMap<&str, Vertex> =
        if graph.vertices.len() > SHORT { graph.vertices.iter().copied().collect() } else { FxHashMap::default() };
    let kind_of = |id: &str| match index.is_empty() {
        true => graph.vertices.iter().find(|(v, _)| crate::bytes::eq(v.as_bytes(), id.as_bytes())).map(|v| v.1),
        false => index.get(id).copied(),
    };
    for &(_, source, target) in &graph.edges {
        if kind_of(source)? == Vertex::Exit || kind_of(target)? == Vertex::Entry {
            return None;
        }
    }
    Some(())
}

/// The value of `id` when it is a decimal number below 256 written plainly (no sign, no
/// leading zero, no blank): two such ids are equal texts exactly when their values are equal.
fn small_number(id: &str) -> Option<usize> {
    match *id.as_bytes() {
        [a @ b'0'..=b'9'] => Some(usize::from(a - b'0')),
        [a @ b'1'..=b'9', b @ b'0'..=b'9'] => Some(usize::from(a - b'0') * 10 + usize::from(b - b'0')),
        [a @ b'1'..=b'2', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
            let n = usize::from(a - b'0') * 100 + usize::from(b - b'0') * 10 + usize::from(c - b'0');
            (n < 256).then_some(n)
        }
        _ => None,
    }
}

/// A set of numbers below 256.
#[derive(Default)]
struct Bits([u64; 4]);

impl Bits {
    /// Adds `n`: false when it was in already.
    fn insert(&mut self, n: usize) -> bool {
        let (word, bit) = (n / 64, 1u64 << (n % 64));
        let fresh = self.0[word] & bit == 0;
        self.0[word] |= bit;
        fresh
    }

    fn has(&self, n: usize) -> bool {
        self.0[n / 64] & (1 << (n % 64)) != 0
    }
}

/// Up to this many ids are compared pairwise; more go through a hash set.
const SHORT: usize = 16;

/// Whether no two of `ids` are equal.
fn unique<'a>(ids: impl Iterator<Item = &'a str> + Clone) -> bool {
    let count = ids.clone().count();
    if count <= SHORT {
        let ids: smallvec::SmallVec<[&str; SHORT]> = ids.collect();
        return ids
            .iter()
            .enumerate()
            .all(|(k, a)| ids[k + 1..].iter().all(|b| !crate::bytes::eq(a.as_bytes(), b.as_bytes())));
    }
    let mut seen = FxHashSet::default();
    ids.into_iter().all(|id| seen.insert(id))
}

#[cfg(test)]
pub(super) mod tests {
    use std::cell::Cell;
    use std::path::Path;

    use super::super::fragments::check_in_windows_with;
    use super::super::tree::tests::{shared_dir, walk};

    thread_local! {
        /// How many routines this thread's one-pass checks accepted.
        pub(in super::super) static ACCEPTED: Cell<usize> = const { Cell::new(0) };
    }

    /// The findings of `text` with the one-pass checks and without them, strict and not; the
    /// number of routines they accepted.
    fn compare(text: &str) -> Result<usize, String> {
        let before = ACCEPTED.with(Cell::get);
        for strict in [false, true] {
            let with = check_in_windows_with(text, "t.xaif", strict, None, 1, true);
            let without = check_in_windows_with(text, "t.xaif", strict, None, 1, false);
            if with != without {
                return Err(format!("strict {strict}: with the one-pass checks {with:#?}, without {without:#?}"));
            }
        }
        Ok((ACCEPTED.with(Cell::get) - before) / 2)
    }

    /// Every test document and every document of the shared material: the same findings with
    /// the one-pass checks as without, and the one-pass checks take nearly every routine of the
    /// corpus inputs (a front end's output).
    #[test]
    fn every_accepted_routine_has_no_findings() {
        let mut files = walk(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata")));
        files.extend(walk(&shared_dir()));
        files.retain(|path| path.extension().is_some_and(|e| e == "xaif"));
        files.sort();
        let (mut inputs, mut accepted, mut routines) = (0, 0, 0);
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else { continue };
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
            let taken = compare(text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            if file.to_string_lossy().contains("corpus")
                && file.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".in.xaif"))
            {
                inputs += 1;
                accepted += taken;
                routines +=
                    text.matches("<xaif:ControlFlowGraph ").count() + text.matches("<xaif:ReplacementList ").count();
            }
        }
        assert!(inputs >= 300, "only {inputs} corpus inputs");
        assert!(accepted * 100 >= routines * 95, "the one-pass checks took {accepted} of {routines} corpus routines");
    }

    /// A routine with a little of everything the checks look at, under a head that declares
    /// what it names.
    const SAMPLE: &str = r#"<?xml version="1.0"?>
<xaif:CallGraph xmlns:xaif="http://www.mcs.anl.gov/XAIF" program_name="p">
  <xaif:ScopeHierarchy>
    <xaif:Scope vertex_id="1"><xaif:SymbolTable>
      <xaif:Symbol symbol_id="head" kind="subroutine" type="void"/>
      <xaif:Symbol symbol_id="foo" kind="subroutine" type="void"/>
    </xaif:SymbolTable></xaif:Scope>
    <xaif:Scope vertex_id="2"><xaif:SymbolTable>
      <xaif:Symbol symbol_id="x" kind="variable" type="real" shape="vector" active="true"/>
      <xaif:Symbol symbol_id="y" kind="variable" type="real" active="true"/>
      <xaif:Symbol symbol_id="i" kind="variable" type="integer"/>
    </xaif:SymbolTable></xaif:Scope>
    <xaif:ScopeEdge edge_id="1" source="2" target="1"/>
  </xaif:ScopeHierarchy>
  <xaif:AliasSetMap><xaif:AliasSet key="0"/><xaif:AliasSet key="1"/></xaif:AliasSetMap>
  <xaif:DUUDSetMap><xaif:StmtIdSet key="0"/><xaif:StmtIdSet key="2"/></xaif:DUUDSetMap>
  <xaif:DOSetMap><xaif:StmtIdSet key="0"/><xaif:StmtIdSet key="3"/></xaif:DOSetMap>
  <xaif:ControlFlowGraph vertex_id="1" symbol_id="head" scope_id="1" controlflowgraph_scope_id="2" structured="true">
    <xaif:ArgumentList><xaif:ArgumentSymbolReference position="1" symbol_id="x" scope_id="2" intent="inout"/></xaif:ArgumentList>
    <xaif:Entry vertex_id="1"/>
    <xaif:ForLoop vertex_id="2" reversal="anonymous">
      <xaif:Initialization statement_id="i1"><xaif:AssignmentLHS vertex_id="1"><xaif:SymbolReference vertex_id="1" symbol_id="i" scope_id="2"/></xaif:AssignmentLHS><xaif:AssignmentRHS><xaif:Constant vertex_id="1" type="integer" value="1"/></xaif:AssignmentRHS></xaif:Initialization>
      <xaif:Condition><xaif:BooleanOperation vertex_id="1" name="less_than"/><xaif:VariableReference vertex_id="2"><xaif:SymbolReference vertex_id="1" symbol_id="i" scope_id="2"/></xaif:VariableReference><xaif:Constant vertex_id="3" type="integer" value="3"/><xaif:ExpressionEdge edge_id="1" source="2" target="1" position="1"/><xaif:ExpressionEdge edge_id="2" source="3" target="1" position="2"/></xaif:Condition>
      <xaif:Update statement_id="u1"><xaif:AssignmentLHS vertex_id="1"><xaif:SymbolReference vertex_id="1" symbol_id="i" scope_id="2"/></xaif:AssignmentLHS><xaif:AssignmentRHS><xaif:Constant vertex_id="1" type="integer" value="2"/></xaif:AssignmentRHS></xaif:Update>
    </xaif:ForLoop>
    <xaif:BasicBlock vertex_id="3" scope_id="2">
      <xaif:Assignment statement_id="a1" do_chain="3" lineNumber="4">
        <xaif:AssignmentLHS vertex_id="1" alias="1" du_ud="2"><xaif:SymbolReference vertex_id="1" symbol_id="x" scope_id="2"/><xaif:ArrayElementReference vertex_id="2"><xaif:IndexTriplet><xaif:Index><xaif:VariableReference vertex_id="1"><xaif:SymbolReference vertex_id="1" symbol_id="i" scope_id="2"/></xaif:VariableReference></xaif:Index></xaif:IndexTriplet></xaif:ArrayElementReference><xaif:VariableReferenceEdge edge_id="1" source="1" target="2"/></xaif:AssignmentLHS>
        <xaif:AssignmentRHS><xaif:Intrinsic vertex_id="1" name="sin_scal"/><xaif:VariableReference vertex_id="2" alias="1" du_ud="2"><xaif:SymbolReference vertex_id="1" symbol_id="y" scope_id="2"/></xaif:VariableReference><xaif:ExpressionEdge edge_id="1" source="2" target="1" position="1"/></xaif:AssignmentRHS>
      </xaif:Assignment>
      <xaif:SubroutineCall statement_id="c1" symbol_id="foo" scope_id="1" active="true" formalArgCount="1"><xaif:Argument position="1"><xaif:VariableReference vertex_id="1"><xaif:SymbolReference vertex_id="1" symbol_id="y" scope_id="2"/></xaif:VariableReference></xaif:Argument></xaif:SubroutineCall>
      <xaif:Marker statement_id="m1" annotation="here"/>
    </xaif:BasicBlock>
    <xaif:EndLoop vertex_id="4"/>
    <xaif:If vertex_id="5"><xaif:Condition><xaif:Constant vertex_id="1" type="bool" value="true"/></xaif:Condition></xaif:If>
    <xaif:EndBranch vertex_id="6"/>
    <xaif:Exit vertex_id="7"/>
    <xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>
    <xaif:ControlFlowEdge edge_id="2" source="2" target="3" has_condition_value="true" condition_value="1"/>
    <xaif:ControlFlowEdge edge_id="3" source="3" target="4"/>
    <xaif:ControlFlowEdge edge_id="4" source="4" target="2"/>
    <xaif:ControlFlowEdge edge_id="5" source="2" target="5" has_condition_value="true" condition_value="0"/>
    <xaif:ControlFlowEdge edge_id="6" source="5" target="6"/>
    <xaif:ControlFlowEdge edge_id="7" source="6" target="7"/>
  </xaif:ControlFlowGraph>
  <xaif:ReplacementList vertex_id="2" template_name="t" symbol_id="foo" scope_id="1" controlflowgraph_scope_id="2">
    <xaif:Replacement placeholder="1"><xaif:Entry vertex_id="1"/><xaif:Exit vertex_id="2"/><xaif:ControlFlowEdge edge_id="1" source="1" target="2"/></xaif:Replacement>
    <xaif:Replacement placeholder="2"/>
  </xaif:ReplacementList>
</xaif:CallGraph>
"#;

    #[test]
    fn the_sample_routines_are_taken_whole() {
        assert_eq!(compare(SAMPLE), Ok(2));
        // A copy of a routine's vertex id where it must be unique is a finding: not taken.
        let repeated = SAMPLE.replacen(r#"<xaif:EndLoop vertex_id="4"/>"#, r#"<xaif:EndLoop vertex_id="3"/>"#, 1);
        assert_eq!(compare(&repeated), Ok(1));
        // Findings that break no edge: a vertex id repeated in a flow graph and in an
        // expression, a second exit, an end of loop too many (none where the graph says it is
        // not structured), a branch end too many.
        let cases = [
            (r#"<xaif:EndBranch vertex_id="6"/>"#, r#"<xaif:EndBranch vertex_id="6"/><xaif:Label vertex_id="7"/>"#, 1),
            (
                r#"<xaif:Intrinsic vertex_id="1" name="sin_scal"/>"#,
                r#"<xaif:Intrinsic vertex_id="1" name="sin_scal"/><xaif:Constant vertex_id="2" type="real" value="1"/>"#,
                1,
            ),
            (r#"<xaif:Exit vertex_id="7"/>"#, r#"<xaif:Exit vertex_id="7"/><xaif:Exit vertex_id="8"/>"#, 1),
            (r#"<xaif:Exit vertex_id="7"/>"#, r#"<xaif:Exit vertex_id="7"/><xaif:EndLoop vertex_id="8"/>"#, 1),
            (r#"<xaif:Exit vertex_id="7"/>"#, r#"<xaif:Exit vertex_id="7"/><xaif:EndBranch vertex_id="8"/>"#, 1),
            (
                r#"structured="true">"#,
                r#"structured="0"><xaif:EndLoop vertex_id="8"/><xaif:EndBranch vertex_id="9"/>"#,
                2,
            ),
            (
                r#"<xaif:Exit vertex_id="7"/>"#,
                r#"<xaif:Exit vertex_id="7"/><xaif:ControlFlowEdge edge_id="8" source="7" target="3"/>"#,
                1,
            ),
        ];
        for (from, to, accepted) in cases {
            let changed = SAMPLE.replacen(from, to, 1);
            assert_ne!(changed, SAMPLE);
            assert_eq!(compare(&changed), Ok(accepted), "{to}");
        }
        // Ids that are not plain numbers are compared as texts.
        let replacement = r#"<xaif:Entry vertex_id="1"/><xaif:Exit vertex_id="2"/><xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>"#;
        let graphs = [
            (
                r#"<xaif:Entry vertex_id="a"/><xaif:Label vertex_id="b"/><xaif:Exit vertex_id="c"/><xaif:ControlFlowEdge edge_id="e" source="a" target="b"/>"#,
                2,
            ),
            (
                r#"<xaif:Entry vertex_id="a"/><xaif:Label vertex_id="b"/><xaif:Exit vertex_id="b"/><xaif:ControlFlowEdge edge_id="e" source="a" target="b"/>"#,
                1,
            ),
            (
                r#"<xaif:Entry vertex_id="a"/><xaif:Exit vertex_id="b"/><xaif:ControlFlowEdge edge_id="e" source="a" target="b"/><xaif:ControlFlowEdge edge_id="e" source="a" target="b"/>"#,
                1,
            ),
            (
                r#"<xaif:Entry vertex_id="a"/><xaif:Exit vertex_id="b"/><xaif:ControlFlowEdge edge_id="e" source="b" target="b"/>"#,
                1,
            ),
            (
                r#"<xaif:Entry vertex_id="1"/><xaif:Exit vertex_id="2"/><xaif:ControlFlowEdge edge_id="e" source="1" target="2"/><xaif:ControlFlowEdge edge_id="e" source="1" target="2"/>"#,
                1,
            ),
            (
                r#"<xaif:Entry vertex_id="1"/><xaif:Exit vertex_id="2"/><xaif:ControlFlowEdge edge_id="e" source="1" target="02"/>"#,
                1,
            ),
        ];
        for (graph, accepted) in graphs {
            let changed = SAMPLE.replacen(replacement, graph, 1);
            assert_ne!(changed, SAMPLE);
            assert_eq!(compare(&changed), Ok(accepted), "{graph}");
        }
        // Graphs too large to compare ids pairwise, by text (named) and by number (numbered
        // from 240 on, past the sets of bits).
        for base in ["v", "", "2"] {
            let long = |duplicate: bool, out_of_exit: bool| {
                let id = |k: usize| if base == "2" { format!("{}", 240 + k) } else { format!("{base}{k}") };
                let mut graph = String::new();
                for k in 0..20 {
                    let kind = match k {
                        0 => "Entry",
                        19 => "Exit",
                        _ => "Label",
                    };
                    graph.push_str(&format!(r#"<xaif:{kind} vertex_id="{}"/>"#, id(k)));
                }
                if duplicate {
                    graph.push_str(&format!(r#"<xaif:Label vertex_id="{}"/>"#, id(3)));
                }
                for k in 0..19 {
                    graph.push_str(&format!(
                        r#"<xaif:ControlFlowEdge edge_id="{k}" source="{}" target="{}"/>"#,
                        id(k),
                        id(k + 1)
                    ));
                }
                if out_of_exit {
                    graph.push_str(&format!(
                        r#"<xaif:ControlFlowEdge edge_id="x" source="{}" target="{}"/>"#,
                        id(19),
                        id(5)
                    ));
                }
                SAMPLE.replacen(replacement, &graph, 1)
            };
            assert_eq!(compare(&long(false, false)), Ok(2), "{base}");
            assert_eq!(compare(&long(true, false)), Ok(1), "{base}");
            assert_eq!(compare(&long(false, true)), Ok(1), "{base}");
        }
        // A repeated attribute makes the document malformed: checked whole, as without.
        let twice =
            SAMPLE.replacen(r#"<xaif:Entry vertex_id="1"/>"#, r#"<xaif:Entry vertex_id="1" vertex_id="1"/>"#, 1);
        assert_eq!(compare(&twice), Ok(0));
    }

    /// The prefix comes from a declaration of the root's own, not from text inside a value,
    /// and only where one plain declaration binds it.
    #[test]
    fn the_prefix_is_the_roots_plain_declaration() {
        let xaif = "http://www.mcs.anl.gov/XAIF";
        let prefix = |tag: String| super::xaif_prefix(&tag);
        assert_eq!(prefix(format!(r#"<xaif:CallGraph xmlns:xaif="{xaif}" program_name="p">"#)), Some("xaif:".into()));
        assert_eq!(prefix(format!(r#"<a:CallGraph xmlns:xsi="urn:x" xmlns:a='{xaif}'>"#)), Some("a:".into()));
        assert_eq!(prefix(format!(r#"<CallGraph xmlns="{xaif}">"#)), None);
        assert_eq!(prefix(format!(r#"<x:CallGraph note='xmlns:x="{xaif}"' xmlns:x="urn:x">"#)), None);
        assert_eq!(prefix(format!(r#"<x:CallGraph xmlns:x="{xaif}" xmlns:y="{xaif}">"#)), None);
        assert_eq!(prefix(format!(r#"<x:CallGraph xmlns:x = "{xaif}">"#)), None);
        assert_eq!(prefix(r#"<x:CallGraph xmlns:x="http://www.mcs.anl.gov/XAI&#70;">"#.into()), None);
    }

    /// What `plainly_valid` accepts, the values' own check accepts too.
    #[test]
    fn plainly_valid_values_are_valid() {
        use super::super::{Value, bad_value};
        let kinds = [
            Value::Text,
            Value::Boolean,
            Value::Integer,
            Value::NonNegative,
            Value::Positive,
            Value::Position,
            Value::Count,
            Value::OneOf(&["a"]),
        ];
        let mut texts: Vec<String> = ["", "-", "+1", " 1", "1 ", "-0", "00", "0", "a", "1.5", "٣", "4294967296"]
            .iter()
            .map(|t| t.to_string())
            .collect();
        for digits in 1..=12 {
            for lead in ['0', '1', '4', '9'] {
                let number: String = std::iter::once(lead).chain(std::iter::repeat_n('9', digits - 1)).collect();
                texts.push(format!("-{number}"));
                texts.push(number);
            }
        }
        let mut accepted = 0;
        for kind in kinds {
            for text in &texts {
                if super::plainly_valid(kind, text) {
                    accepted += 1;
                    assert_eq!(bad_value(kind, text), None, "{text:?}");
                }
            }
        }
        assert!(accepted > 100, "{accepted}");
    }

    /// Numbers are small numbers exactly when written plainly, and two are equal as texts
    /// exactly when their values are.
    #[test]
    fn small_numbers_are_their_texts() {
        let texts: Vec<String> = (0..300).map(|n: u32| n.to_string()).collect();
        for text in &texts {
            let n: usize = text.parse().unwrap();
            assert_eq!(super::small_number(text), (n < 256).then_some(n), "{text}");
        }
        for text in ["", "01", "001", "-1", "+1", " 1", "1 ", "1a", "a", "1000", "٣"] {
            assert_eq!(super::small_number(text), None, "{text:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(50000))]
        /// One to three pieces of the sample (most in its routines) replaced by ids, names,
        /// attributes, markup, blanks or nothing: the findings are the same with the one-pass
        /// checks as without.
        #[test]
        fn mutated_routines_have_the_same_findings(
            edits in proptest::collection::vec((0usize..10_000, 0usize..12, proptest::sample::select(vec![
                "", "1", "2", "3", "7", "9", "0", "-1", "x", "y", "i", "foo", "head", "\"", "'", "<", ">", "/", "=", " ",
                "\n", "\t", ":", "&amp;", "<!-- c -->", "é", "xaif:", "x:", " vertex_id=\"1\"", " edge_id=\"2\"",
                " alias=\"5\"", " du_ud=\"0\"", " do_chain=\"4\"", " structured=\"false\"", " colour=\"red\"",
                " xmlns:x=\"urn:x\"", "<xaif:Entry vertex_id=\"8\"/>", "<xaif:Exit vertex_id=\"9\"/>",
                "<xaif:EndBranch vertex_id=\"10\"/>", "</xaif:BasicBlock>", "<xaif:Marker statement_id=\"m2\"/>",
                "Entry", "Exit", "If", "Branch", "EndLoop", "SymbolReference", "ArrayElementReference", "Constant",
                "ExpressionEdge", "VariableReferenceEdge", "Argument", "scope_id", "symbol_id", "source", "target",
                "formalArgCount", "position", "true", "false", "<xaif:Label vertex_id=\"7\"/>",
                "<xaif:EndLoop vertex_id=\"11\"/>", "01", "255", "256", " 1", "<xaif:Constant vertex_id=\"2\" type=\"real\" value=\"1\"/>",
            ])), 1..4)
        ) {
            // Most edits in the routines; one in eight anywhere (the head's tables change what
            // the routines may name).
            let routines = if edits[0].0 % 8 == 0 { 0 } else { SAMPLE.find("  <xaif:ControlFlowGraph").expect("a routine") };
            let mut text = SAMPLE.to_owned();
            for (at, length, insert) in edits {
                let span = text.len() - routines - "</xaif:CallGraph>\n".len();
                let mut at = routines + at % span;
                while !text.is_char_boundary(at) { at -= 1; }
                let mut end = (at + length % 12).min(text.len());
                while !text.is_char_boundary(end) { end += 1; }
                text.replace_range(at..end, insert);
            }
            if let Err(e) = compare(&text) {
                proptest::prop_assert!(false, "{e}\n{text}");
            }
        }

        /// A name ends where a byte at a time finds its end, whatever comes after it in the
        /// same word (control characters, which do not end it, included).
        #[test]
        fn names_end_where_a_byte_at_a_time_finds(text in "[a:/>? \n\t\r\x01\x1f.0]{0,40}") {
            let bytes = text.as_bytes();
            let ends = |b: u8| super::is_blank(b) || b == b'/' || b == b'>';
            let expected = bytes.iter().position(|&b| ends(b)).unwrap_or(bytes.len());
            proptest::prop_assert_eq!(super::name_length(bytes), expected);
        }
    }
}
