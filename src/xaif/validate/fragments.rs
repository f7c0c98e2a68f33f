//! Validation one child of the `CallGraph` at a time, so that memory holds one routine's tree
//! (the whole document's tree is about 4.5 times the input).
//!
//! A first scan of the markup ([`Layout::scan`], `xaif::markup`) finds the root's start tag, where each of
//! its element children begins and ends, and every statement id (`StatementId`s of the head
//! refer to statements of later routines). The checks then run on trees parsed from pieces of
//! the input (`tree::parse`: our scan, or roxmltree for what it does not take):
//! - the *skeleton*: the document with each child of the root cut down to its start tag, made
//!   empty (`<xaif:ControlFlowGraph …/>`). It holds the root, its attributes, the text between
//!   its children and the children's names and attributes: what the checks of the `CallGraph`
//!   itself look at;
//! - each child, wrapped in a copy of the root's start tag (its namespace declarations) and end
//!   tag: first the head sections, for the scope and key tables, then every child in turn for
//!   its structure and references.
//!
//! Each tree's offsets are mapped back to the input's, so findings are those of the whole
//! document's tree, at the same places, in the same order ([`Validator::into_findings`] orders
//! them by place, then phase, as the whole-document path reports them).
//!
//! Together, the skeleton and the wrapped children are the document token for token, so they
//! all parse exactly when the document does. Anything unusual — malformed XML the scan meets,
//! a piece the parser refuses, statement ids that need decoding, elements nested deeper than
//! [`MAX_NESTING`], more namespace declarations than roxmltree takes in one document — takes
//! the whole-document path, which reports it as before. (roxmltree's other document-wide
//! limits, 2^32 nodes or attributes, need inputs larger than memory.)

use std::sync::Arc;

use rayon::prelude::*;

use rustc_hash::FxHashSet;

use super::super::markup::{Markup, Tags, attribute, local_name, needs_decoding};
use super::tree::Tree;
use super::{
    Content, Diagnostic, MAX_NESTING, Node, Phase, Progress, Tables, Validator, is_statement_name, is_table_section,
};

/// The findings of the structure, table and reference checks (not the activity check), or
/// `None` when the document should be checked whole. `progress` learns where each child ends
/// once it is checked, or that an error was found.
pub(super) fn check(text: &str, file: &str, strict: bool, progress: Option<&Progress>) -> Option<Vec<Diagnostic>> {
    // Alongside a transformation, which reads and transforms on two threads of its own, only
    // cores beyond those help: on two cores, checking on both made a 16 MiB tangent run 2–7%
    // slower. Windows are wide (each waits for its slowest child): two children per thread
    // made `validate` slower than one thread, 32 made it a tenth faster (16 MiB). Alongside,
    // narrower, so that the transformation, which waits for each routine's checks, starts
    // sooner (not measured: this machine has two cores).
    // (Asking rayon would start its threads: the cores decide.)
    if text.len() < PARALLEL_FROM {
        return check_in_windows(text, file, strict, progress, 1);
    }
    let cores = crate::cores();
    let window = match progress {
        Some(_) if cores >= 4 => 8 * cores,
        None if cores >= 2 => 32 * cores,
        _ => 1,
    };
    check_in_windows(text, file, strict, progress, window)
}

/// [`check`], the children's trees checked `window` at a time, on every core when more than
/// one.
pub(super) fn check_in_windows(
    text: &str,
    file: &str,
    strict: bool,
    progress: Option<&Progress>,
    window: usize,
) -> Option<Vec<Diagnostic>> {
    let mut layout = Layout::scan(text)?;
    let statements = std::mem::take(&mut layout.statements);
    let (skeleton, skeleton_map) = layout.skeleton(text);
    let skeleton_map: Arc<[(usize, usize)]> = skeleton_map.into();
    let skeleton_doc = super::tree::parse(&skeleton).ok()?;
    let root = skeleton_doc.root_element();
    let mut validator = Validator::new(text.as_bytes(), file, strict, skeleton_map.clone());
    // Each child of the root in the skeleton stands for one child the scan found.
    let stand_ins: Vec<Node> = root.children().filter(|c| c.is_element()).collect();
    if stand_ins.len() != layout.children.len()
        || stand_ins.iter().zip(&layout.children).any(|(node, child)| {
            let piece = skeleton_map.partition_point(|(start, _)| *start <= node.range().start) - 1;
            skeleton_map[piece].1 + node.range().start - skeleton_map[piece].0 != child.start
        })
    {
        return None;
    }
    if !validator.root(root) {
        return Some(validator.into_findings());
    }
    let mut fragment = Fragment::new(&layout, text);

    // The tables, from the head sections.
    validator.phase = Phase::Tables;
    let mut tables = Tables { statements, ..Tables::default() };
    for (stand_in, child) in stand_ins.iter().zip(&layout.children) {
        if is_table_section(stand_in.tag_name().name()) {
            validator.map = fragment.map(child);
            let doc = fragment.parse(child)?;
            validator.table_section(Fragment::node(&doc)?, &mut tables);
        }
    }

    // The root's own references; the routines' ids, from their start tags.
    validator.phase = Phase::References;
    validator.map = skeleton_map.clone();
    let routine_ids = validator.routine_ids(root);
    validator.references(root, &tables, &routine_ids);

    // The structure of the root, then each child: where it stands in the skeleton (here, for
    // all children first), then what it holds and its references in its own tree.
    validator.phase = Phase::Structure;
    validator.check_attributes(root, Content::CallGraph);
    let mut seen_sections = 0usize;
    let mut children = layout.children.iter();
    // Each element child, what to check in it, and the errors found so far when its place
    // was checked (its progress is reported as the sequential walk would: only while there
    // are none).
    let mut steps = Vec::new();
    for child in root.children() {
        let step = validator.structure_child(root, Content::CallGraph, child, 1, &mut seen_sections);
        if child.is_element() {
            steps.push((*children.next()?, step, validator.errors));
        }
    }
    // The children's trees are checked apart from each other (each needs only the tables): a
    // window of them at a time on every core for large documents, their findings then taken
    // in document order (the findings are sorted by place at the end, and a child's own stay
    // in the order they were found), so they are those of one walk.
    let context = ChildContext { text, file, strict, tables: &tables, routine_ids: &routine_ids };
    let mut child_errors = 0;
    for steps in steps.chunks(window.max(1)) {
        let lines = &validator.lines;
        let checked: Vec<Option<ChildFindings>> = if window > 1 {
            steps
                .par_iter()
                .map_init(
                    || Fragment::new(&layout, text),
                    |own, &(span, step, _)| context.check(own, span, step, lines),
                )
                .collect()
        } else {
            steps.iter().map(|&(span, step, _)| context.check(&mut fragment, span, step, lines)).collect()
        };
        for (&(span, _, place_errors), checked) in steps.iter().zip(checked) {
            let (findings, errors) = checked?;
            validator.findings.extend(findings);
            validator.errors += errors;
            child_errors += errors;
            if let Some(progress) = progress {
                if place_errors + child_errors > 0 { progress.fail() } else { progress.advance(span.end) }
            }
        }
    }
    validator.phase = Phase::Structure;
    validator.map = skeleton_map;
    validator.structure_end(root, Content::CallGraph);
    Some(validator.into_findings())
}

/// From this input size on, the children's trees are checked on every core (where there are
/// cores to spare).
const PARALLEL_FROM: usize = 1 << 20;

/// One child's findings, and how many of them are errors.
type ChildFindings = (Vec<(Phase, Diagnostic)>, usize);

/// What checking one child of the root needs besides its tree: the document and the tables of
/// its head.
struct ChildContext<'c, 't> {
    text: &'t str,
    file: &'t str,
    strict: bool,
    tables: &'c Tables<'t>,
    routine_ids: &'c FxHashSet<&'c str>,
}

impl<'t> ChildContext<'_, 't> {
    /// The structure (as `step` says) and references of one child in its own tree (parsed in
    /// `fragment`'s buffer, one per thread); `None` when the document should be checked whole.
    /// `lines` is shared: the line index is built once, at the first finding anywhere.
    fn check(
        &self,
        fragment: &mut Fragment,
        span: Span,
        step: super::Step,
        lines: &Arc<std::sync::OnceLock<super::LineIndex<'t>>>,
    ) -> Option<ChildFindings> {
        let map = fragment.map(&span);
        let mut validator = Validator::new(self.text.as_bytes(), self.file, self.strict, map);
        validator.lines = lines.clone();
        let doc = fragment.parse(&span)?;
        let node = Fragment::node(&doc)?;
        match step {
            // The scan saw no element deeper than the limit.
            super::Step::Descend(content) => {
                validator.structure(node, content, 2);
            }
            super::Step::TooDeep => return None,
            super::Step::Done => {}
        }
        validator.phase = Phase::References;
        for descendant in node.descendants().filter(|n| n.is_element()) {
            validator.references(descendant, self.tables, self.routine_ids);
        }
        Some((validator.findings, validator.errors))
    }
}

/// Where an element child of the root lies in the input.
#[derive(Copy, Clone, Debug)]
struct Span {
    /// Its `<`.
    start: usize,
    /// After its start tag's `>`.
    tag_end: usize,
    /// After its end tag (`tag_end` for an empty element).
    end: usize,
}

/// What the first scan finds.
#[derive(Debug)]
struct Layout<'t> {
    /// The root's start tag.
    root_tag: &'t str,
    /// The root's qualified name, for the end tag of wrapped children.
    root_name: &'t str,
    children: Vec<Span>,
    statements: FxHashSet<&'t str>,
}

/// The most namespace declarations (counted as `xmlns` anywhere) a document may hold to be
/// checked in pieces: roxmltree refuses a document with 2^16 distinct ones, which its pieces,
/// holding fewer each, would not show.
const MAX_NAMESPACE_DECLARATIONS: usize = 60_000;

impl<'t> Layout<'t> {
    /// Scans `text`; `None` when it should be checked whole.
    fn scan(text: &'t str) -> Option<Layout<'t>> {
        if namespace_declarations(text) > MAX_NAMESPACE_DECLARATIONS {
            return None;
        }
        let mut root: Option<(usize, usize, &'t str)> = None;
        let mut closed = false;
        let mut children = Vec::new();
        let mut statements = FxHashSet::default();
        // Open elements.
        let mut depth = 0usize;
        for markup in Tags::new(text.as_bytes()) {
            let (name, attributes, empty, before, after) = match markup {
                Markup::Start { name, attributes, empty, start, end } => (name, attributes, empty, start, end),
                Markup::End { end } => {
                    depth = depth.checked_sub(1)?;
                    match depth {
                        0 => closed = true,
                        1 => children.last_mut().map(|c: &mut Span| c.end = end)?,
                        _ => {}
                    }
                    continue;
                }
            };
            if depth + 1 > MAX_NESTING {
                return None;
            }
            match depth {
                0 if root.is_some() => return None,
                0 => {
                    root = Some((before, after, text.get(before + 1..before + 1 + name.len())?));
                    if empty {
                        closed = true;
                    }
                }
                1 => children.push(Span { start: before, tag_end: after, end: after }),
                _ => {}
            }
            // The tag names are slices of `text` cut at ASCII bytes: UTF-8 already.
            if is_statement_name(local_name(name))
                && let Some(id) = attribute(attributes, b"statement_id")
            {
                // Ids the parser would decode are checked with the whole document.
                if needs_decoding(id) {
                    return None;
                }
                // The value's place in `text`: the tags are slices of it.
                let offset = id.as_ptr() as usize - text.as_ptr() as usize;
                statements.insert(text.get(offset..offset + id.len())?);
            }
            if !empty {
                depth += 1;
            }
        }
        let (start, tag_end, root_name) = root?;
        if !closed {
            return None;
        }
        Some(Layout { root_tag: text.get(start..tag_end)?, root_name, children, statements })
    }

    /// The document with each child of the root cut down to its start tag, made empty, and
    /// the map of its offsets to the input's.
    fn skeleton(&self, text: &str) -> (String, Vec<(usize, usize)>) {
        let mut skeleton = String::new();
        let mut map = Vec::new();
        let mut copy = |skeleton: &mut String, from: usize, to: usize| {
            map.push((skeleton.len(), from));
            skeleton.push_str(&text[from..to]);
        };
        let mut at = 0;
        for child in &self.children {
            copy(&mut skeleton, at, child.start);
            if child.tag_end == child.end {
                copy(&mut skeleton, child.start, child.end);
            } else {
                copy(&mut skeleton, child.start, child.tag_end - 1);
                skeleton.push_str("/>");
            }
            at = child.end;
        }
        copy(&mut skeleton, at, text.len());
        (skeleton, map)
    }
}

/// Occurrences of `xmlns` in `text` (a bound on its namespace declarations), counted in pieces
/// that hold it at all (a fast search): only the root declares namespaces, usually.
fn namespace_declarations(text: &str) -> usize {
    const PIECE: usize = 1 << 16;
    let mut count = 0;
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + PIECE).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        // Pieces overlap by four bytes, so that a word across a border is seen once.
        let mut from = start.saturating_sub(4);
        while !text.is_char_boundary(from) {
            from -= 1;
        }
        let piece = &text[from..end];
        if piece.contains("xmlns") {
            count += piece.match_indices("xmlns").filter(|(i, _)| from + i + 5 > start).count();
        }
        start = end;
    }
    count
}

/// The text a child of the root is parsed from: the root's start tag, the child, the root's
/// end tag. One buffer serves every child in turn.
struct Fragment<'l, 't> {
    layout: &'l Layout<'t>,
    text: &'t str,
    buffer: String,
}

impl<'l, 't> Fragment<'l, 't> {
    fn new(layout: &'l Layout<'t>, text: &'t str) -> Self {
        Fragment { layout, text, buffer: String::new() }
    }

    /// The tree of one child, wrapped; `None` when it does not parse alone.
    fn parse(&mut self, child: &Span) -> Option<Tree<'_>> {
        self.buffer.clear();
        self.buffer.push_str(self.layout.root_tag);
        self.buffer.push_str(&self.text[child.start..child.end]);
        self.buffer.push_str("</");
        self.buffer.push_str(self.layout.root_name);
        self.buffer.push('>');
        let doc = super::tree::parse(&self.buffer).ok()?;
        // The wrapper holds exactly the child.
        let wrapped = self.layout.root_tag.len();
        let exact = {
            let mut held = doc.root_element().children();
            let node = held.next()?;
            held.next().is_none() && node.is_element() && node.range() == (wrapped..wrapped + child.end - child.start)
        };
        exact.then_some(doc)
    }

    /// The child in its tree.
    fn node<'a, 'i>(doc: &'a Tree<'i>) -> Option<Node<'a, 'i>> {
        doc.root_element().first_child()
    }

    /// The map of the child's tree's offsets to the input's.
    fn map(&self, child: &Span) -> Arc<[(usize, usize)]> {
        let root_start = self.layout.root_tag.as_ptr() as usize - self.text.as_ptr() as usize;
        Arc::new([(0, root_start), (self.layout.root_tag.len(), child.start)])
    }
}
