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

use super::super::markup::{
    Markup, Survey, Surveyor, Tags, TagsHolding, attribute, local_name, needs_decoding, skimmable_body,
};
use super::tree::Tree;
use super::{
    Content, Diagnostic, MAX_NESTING, Node, Phase, Progress, StatementIds, Tables, Validator, is_statement_name,
    is_table_section,
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
    check_in_windows_with(text, file, strict, progress, window, true)
}

/// [`check_in_windows`], routines taking the one-pass checks first (`one_pass`) or not: the
/// two give the same findings (`routine.rs` tests hold them to it).
pub(super) fn check_in_windows_with(
    text: &str,
    file: &str,
    strict: bool,
    progress: Option<&Progress>,
    window: usize,
    one_pass: bool,
) -> Option<Vec<Diagnostic>> {
    // The streaming driver's survey, found on the way, for a transformation waiting beside.
    let mut layout = Layout::scan(text, progress.is_some());
    if let Some(progress) = progress {
        progress.survey_found(layout.as_mut().and_then(|layout| layout.survey.take()));
    }
    let mut layout = layout?;
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
    let mut fragment = Fragment::new(&layout, text);
    if !validator.root(root) {
        // No child is checked, but each must parse and nest no deeper than the limit, as the
        // scan saw before it skimmed routines (`Part::take`).
        for child in &layout.children {
            let doc = fragment.parse(child)?;
            if nests_deeper(Fragment::node(&doc)?, MAX_NESTING - 1) {
                return None;
            }
        }
        return Some(validator.into_findings());
    }

    // The tables, from the head sections.
    validator.phase = Phase::Tables;
    let mut tables = Tables { statements: StatementIds::new(statements), ..Tables::default() };
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
    let xaif_prefix = if one_pass { super::routine::xaif_prefix(layout.root_tag) } else { None };
    let context = ChildContext {
        text,
        file,
        strict,
        tables: &tables,
        routine_ids: &routine_ids,
        xaif_prefix: xaif_prefix.as_deref(),
    };
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
    /// The root's prefix for the XAIF namespace, with its colon, for the routines' one-pass
    /// checks (`routine::clean`; none where the root does not bind one plainly).
    xaif_prefix: Option<&'c str>,
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
        // A routine the one-pass checks find nothing in has no findings: no tree to build.
        if let (super::Step::Descend(content @ (Content::ControlFlowGraph | Content::ReplacementList)), Some(prefix)) =
            (step, self.xaif_prefix)
            && super::routine::clean(self.text, span.start, span.end, content, prefix, self.tables)
        {
            return Some((Vec::new(), 0));
        }
        let map = fragment.map(&span);
        let mut validator = Validator::new(self.text.as_bytes(), self.file, self.strict, map);
        validator.lines = lines.clone();
        let doc = fragment.parse(&span)?;
        let node = Fragment::node(&doc)?;
        match step {
            // As deep as the scan saw before it skimmed routines (`Part::take`): deeper is the
            // whole document's to check.
            super::Step::Descend(_) if nests_deeper(node, MAX_NESTING - 1) => return None,
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

/// Whether elements nest more than `levels` deep in `node`, itself the first level.
fn nests_deeper(node: Node, levels: usize) -> bool {
    let mut open = vec![(node, 1)];
    while let Some((element, level)) = open.pop() {
        if level > levels {
            return true;
        }
        open.extend(element.children().filter(|c| c.is_element()).map(|c| (c, level + 1)));
    }
    false
}

/// Where an element child of the root lies in the input.
#[derive(Copy, Clone, Debug, PartialEq)]
struct Span {
    /// Its `<`.
    start: usize,
    /// After its start tag's `>`.
    tag_end: usize,
    /// After its end tag (`tag_end` for an empty element).
    end: usize,
}

/// What the first scan finds.
#[derive(Debug, PartialEq)]
struct Layout<'t> {
    /// The root's start tag.
    root_tag: &'t str,
    /// The root's qualified name, for the end tag of wrapped children.
    root_name: &'t str,
    children: Vec<Span>,
    /// Every statement id, in document order.
    statements: Vec<&'t str>,
    /// The streaming driver's survey, when asked for.
    survey: Option<Result<Survey, &'static str>>,
}

/// From this size on, [`Layout::scan`] scans two halves of a document at once.
const SPLIT_SCAN_FROM: usize = 1 << 20;

/// Where the second half of a split scan starts: the `<` of the first `ControlFlowGraph`
/// start tag (whatever its prefix) past the middle of `text`, as far as the bytes tell. The
/// first half's scan confirms it.
fn split_point(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = text.len() / 2;
    loop {
        let found = from + memchr::memmem::find(&bytes[from..], b"ControlFlowGraph")?;
        let before = &bytes[..found];
        let prefix = before
            .iter()
            .rev()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
            .count();
        let open = found - prefix;
        let named = &bytes[open..found];
        if open > 0
            && bytes[open - 1] == b'<'
            && (named.is_empty() || named.ends_with(b":") && !named[..named.len() - 1].contains(&b':'))
            && bytes
                .get(found + "ControlFlowGraph".len())
                .is_some_and(|b| b.is_ascii_whitespace() || matches!(b, b'>' | b'/'))
        {
            return Some(open - 1);
        }
        from = found + 1;
    }
}

/// The state of a scan of the document, or of a part of it.
struct Part<'t> {
    text: &'t str,
    root: Option<(usize, usize, &'t str)>,
    /// The scan began inside the root (the second half of a split scan).
    inside_root: bool,
    closed: bool,
    children: Vec<Span>,
    statements: Vec<&'t str>,
    surveyor: Option<Surveyor<'t>>,
    refused: Option<&'static str>,
    /// Open elements.
    depth: usize,
    /// Whether routines' bodies are skimmed where they can be ([`Part::take`]).
    skim: bool,
}

impl<'t> Part<'t> {
    fn new(text: &'t str, depth: usize, survey: bool, skim: bool) -> Self {
        Part {
            skim,
            text,
            root: None,
            inside_root: depth > 0,
            closed: false,
            children: Vec::new(),
            statements: Vec::new(),
            surveyor: survey.then(Surveyor::default),
            refused: None,
            depth,
        }
    }

    /// Takes in the next tag; `None` when the document should be checked whole.
    fn feed(&mut self, markup: Markup<'t>) -> Option<()> {
        let text = self.text;
        let (name, attributes, empty, before, after) = match markup {
            Markup::Start { name, attributes, empty, start, end } => (name, attributes, empty, start, end),
            Markup::End { end } => {
                self.depth = self.depth.checked_sub(1)?;
                match self.depth {
                    0 => self.closed = true,
                    1 => self.children.last_mut().map(|c: &mut Span| c.end = end)?,
                    _ => {}
                }
                return Some(());
            }
        };
        if self.depth + 1 > MAX_NESTING {
            return None;
        }
        match self.depth {
            0 if self.root.is_some() || self.inside_root => return None,
            0 => {
                self.root = Some((before, after, text.get(before + 1..before + 1 + name.len())?));
                if empty {
                    self.closed = true;
                }
            }
            1 => self.children.push(Span { start: before, tag_end: after, end: after }),
            _ => {}
        }
        self.statement(name, attributes)?;
        if !empty {
            self.depth += 1;
        }
        Some(())
    }

    /// What a start tag inside a child holds for the survey and the statement ids.
    fn statement(&mut self, name: &'t [u8], attributes: &'t [u8]) -> Option<()> {
        if let Some(found) = &mut self.surveyor
            && let Err(reason) = found.start_tag(self.depth, local_name(name), attributes)
        {
            self.refused = Some(reason);
            self.surveyor = None;
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
            let text = self.text;
            let offset = id.as_ptr() as usize - text.as_ptr() as usize;
            self.statements.push(text.get(offset..offset + id.len())?);
        }
        Some(())
    }

    /// [`Part::feed`], and past a routine's start tag, its body skimmed where it can be
    /// (`markup::skimmable_body`): of the tags inside, only those holding a `statement_id`
    /// matter to the scan, and a fast search finds them (on a 2 MiB synthetic input the scan
    /// had cost 24 M instructions, a tenth of a tangent run). The scan then goes on at the
    /// routine's end tag. How deep the skimmed body nests is not seen here: the checks of the
    /// routine send one deeper than the limit to the whole document, as the scan did
    /// (`ChildContext::check`).
    fn take(&mut self, markup: Markup<'t>, tags: &mut Tags<'t>) -> Option<()> {
        let routine = match markup {
            Markup::Start { name, empty: false, end, .. }
                if self.skim
                    && self.depth == 1
                    && matches!(local_name(name), b"ControlFlowGraph" | b"ReplacementList") =>
            {
                Some((name, end))
            }
            _ => None,
        };
        self.feed(markup)?;
        let Some((name, from)) = routine else { return Some(()) };
        let bytes = self.text.as_bytes();
        let Some(end) = skimmable_body(bytes, name, from) else { return Some(()) };
        for markup in TagsHolding::new(bytes, from, end, b"statement_id") {
            if let Markup::Start { name, attributes, .. } = markup {
                self.statement(name, attributes)?;
            }
        }
        tags.resume_at(end);
        Some(())
    }

    /// [`Part::take`] of every tag `tags` has left.
    fn take_rest(&mut self, tags: &mut Tags<'t>) -> Option<()> {
        while let Some(markup) = tags.next() {
            self.take(markup, tags)?;
        }
        Some(())
    }

    /// The scan of the rest of the document, begun where this one stopped, one level down.
    fn append(&mut self, rest: Part<'t>) {
        self.depth = rest.depth;
        self.closed = rest.closed;
        self.children.extend(rest.children);
        self.statements.extend(rest.statements);
        // The first reason, in document order, to read the whole document.
        if self.refused.is_none() {
            self.refused = rest.refused;
            match (&mut self.surveyor, rest.surveyor) {
                (Some(first), Some(second)) => first.append(second),
                _ => self.surveyor = None,
            }
        }
    }

    fn finish(self) -> Option<Layout<'t>> {
        let (start, tag_end, root_name) = self.root?;
        if !self.closed {
            return None;
        }
        let survey = match (self.surveyor, self.refused) {
            (_, Some(reason)) => Some(Err(reason)),
            (surveyor, None) => surveyor.map(|s| Ok(s.finish())),
        };
        Some(Layout {
            root_tag: self.text.get(start..tag_end)?,
            root_name,
            children: self.children,
            statements: self.statements,
            survey,
        })
    }
}

/// The most namespace declarations (counted as `xmlns` anywhere) a document may hold to be
/// checked in pieces: roxmltree refuses a document with 2^16 distinct ones, which its pieces,
/// holding fewer each, would not show.
const MAX_NAMESPACE_DECLARATIONS: usize = 60_000;

impl<'t> Layout<'t> {
    /// Scans `text`; `None` when it should be checked whole. Large documents are scanned in
    /// two halves at once, the second from a routine's start tag past the middle: the scan
    /// is what a transformation waiting beside the checks waits for first (on 16 MiB the
    /// driver sat idle for it with the other core free).
    fn scan(text: &'t str, survey: bool) -> Option<Layout<'t>> {
        let split_from = if crate::cores() >= 2 { SPLIT_SCAN_FROM } else { usize::MAX };
        Self::scan_split_from(text, survey, split_from)
    }

    /// [`Layout::scan`], in halves from `split_from` bytes on.
    fn scan_split_from(text: &'t str, survey: bool, split_from: usize) -> Option<Layout<'t>> {
        Self::scan_with(text, survey, split_from, true)
    }

    /// [`Layout::scan_split_from`], routines' bodies skimmed (`skim`) or scanned tag by tag.
    fn scan_with(text: &'t str, survey: bool, split_from: usize, skim: bool) -> Option<Layout<'t>> {
        let halves = (text.len() >= split_from).then(|| split_point(text)).flatten();
        let whole = match halves {
            None => {
                if namespace_declarations(text, 0, text.len()) > MAX_NAMESPACE_DECLARATIONS {
                    return None;
                }
                let mut whole = Part::new(text, 0, survey, skim);
                whole.take_rest(&mut Tags::new(text.as_bytes()))?;
                whole
            }
            // Each half counts its own namespace declarations first: counted whole, before the
            // halves began, they took 1.4 ms of a 16 MiB document's scan on one core, while a
            // transformation waited for the scan with nothing else to do.
            Some(split) => std::thread::scope(|scope| {
                let second = scope.spawn(|| {
                    let declarations = namespace_declarations(text, split, text.len());
                    let mut second = Part::new(text, 1, survey, skim);
                    let scanned = second.take_rest(&mut Tags::from(text.as_bytes(), split));
                    (scanned.map(|()| second), declarations)
                });
                let declarations = namespace_declarations(text, 0, split);
                let mut first = Part::new(text, 0, survey, skim);
                let mut tags = Tags::new(text.as_bytes());
                // The first half ends where its scan meets the second's start tag, one
                // level down and a routine; anywhere else (the split fell in a comment, an
                // attribute value, deeper markup) the first goes on alone.
                let mut met = false;
                while let Some(markup) = tags.next() {
                    let reaches = match markup {
                        Markup::Start { start, .. } => start >= split,
                        Markup::End { end } => end > split,
                    };
                    if reaches {
                        met = matches!(markup, Markup::Start { start, name, .. }
                            if start == split && first.depth == 1 && local_name(name) == b"ControlFlowGraph");
                        if !met {
                            first.take(markup, &mut tags)?;
                        }
                        break;
                    }
                    first.take(markup, &mut tags)?;
                }
                let (second, theirs) = second.join().ok()?;
                if declarations + theirs > MAX_NAMESPACE_DECLARATIONS {
                    return None;
                }
                if met {
                    first.append(second?);
                } else {
                    first.take_rest(&mut tags)?;
                }
                Some(first)
            })?,
        };
        whole.finish()
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

/// Occurrences of `xmlns` that begin in `text[from..to]` (a bound on its namespace
/// declarations; only the root declares namespaces, usually). Split scans count each half on
/// its own thread, so that a word across the split is counted once, by the half it begins in.
fn namespace_declarations(text: &str, from: usize, to: usize) -> usize {
    const WORD: &[u8] = b"xmlns";
    let bytes = text.as_bytes();
    let end = (to + WORD.len() - 1).min(bytes.len());
    memchr::memmem::find_iter(&bytes[from..end], WORD).filter(|&at| from + at < to).count()
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Scanned in halves or at once, a document has the same layout and survey, wherever the
    /// guessed middle falls.
    #[test]
    fn a_scan_in_halves_finds_what_one_scan_finds() {
        let routine = |name: &str, ids: [&str; 2]| {
            format!(
                r#"<xaif:ControlFlowGraph vertex_id="r" symbol_id="{name}" scope_id="1">
  <xaif:BasicBlock vertex_id="2"><xaif:Marker statement_id="{}"/><xaif:Marker statement_id="{}"/></xaif:BasicBlock>
</xaif:ControlFlowGraph>
"#,
                ids[0], ids[1]
            )
        };
        let head = "<?xml version=\"1.0\"?>\n<xaif:CallGraph xmlns:xaif=\"x\"><xaif:ScopeHierarchy/>\n";
        let many = |k: usize| (0..k).map(|i| routine(&format!("f{i}"), [&format!("a{i}"), "b"])).collect::<String>();
        let documents = [
            format!("{head}{}</xaif:CallGraph>", many(8)),
            format!("{head}{}<xaif:ReplacementList/>\n{}</xaif:CallGraph>", many(3), many(3)),
            // The middle's first candidate in a comment, an attribute value, deeper markup,
            // text; a tag that only begins like one.
            format!("{head}{}<!-- <xaif:ControlFlowGraph symbol_id=\"c\"> -->{}</xaif:CallGraph>", many(4), many(1)),
            format!("{head}{}<xaif:Other note='<xaif:ControlFlowGraph '/>{}</xaif:CallGraph>", many(4), many(1)),
            format!(
                "{head}{}<xaif:Other><xaif:ControlFlowGraph symbol_id=\"d\"/></xaif:Other>{}</xaif:CallGraph>",
                many(4),
                many(1)
            ),
            format!("{head}{} ControlFlowGraph <xaif:ControlFlowGraphs/>{}</xaif:CallGraph>", many(4), many(1)),
            format!("{head}{}<ControlFlowGraph symbol_id=\"e\" scope_id=\"1\"/></xaif:CallGraph>", many(4)),
            // Statement ids repeated in a routine, in the first half or the second.
            format!("{head}{}{}</xaif:CallGraph>", routine("r", ["s", "s"]), many(6)),
            format!("{head}{}{}</xaif:CallGraph>", many(6), routine("r", ["s", "s"])),
            format!("{head}{}{}</xaif:CallGraph>", many(6), routine("r&amp;", ["s", "t"])),
            // Malformed: unclosed, a second root, an end tag too many.
            format!("{head}{}", many(6)),
            format!("{head}{}</xaif:CallGraph><r/>", many(6)),
            format!("{head}{}</xaif:CallGraph></x>", many(6)),
            format!("{head}{}</x></xaif:CallGraph>", many(6)),
        ];
        let mut split = 0;
        for text in &documents {
            let once = Layout::scan_split_from(text, true, usize::MAX);
            let halves = Layout::scan_split_from(text, true, 0);
            assert_eq!(halves, once, "{text}");
            if let Some(layout) = &once {
                let own = Survey::of(text.as_bytes());
                assert_eq!(layout.survey.as_ref(), Some(&own), "{text}");
            }
            split += usize::from(split_point(text).is_some());
        }
        assert_eq!(split, documents.len(), "every document has a candidate middle");
        assert!(documents.iter().filter(|t| Layout::scan_split_from(t, true, 0).is_some()).count() >= 10);
    }

    /// Namespace declarations counted in two ranges add up to the count of the whole, wherever
    /// the border falls (a word across it is counted once); and a document with more than the
    /// limit is left to the whole-document checks, scanned in halves or at once, whichever half
    /// holds the declarations.
    #[test]
    fn namespace_declarations_are_counted_once_and_bounded() {
        let texts = ["", "xmlns", "xmlnsxmlns", "a xmlns:b=\"c\" xmlnxmlns é xmlns", "xmlxmlns\u{e9}xmlns"];
        for text in texts {
            let naive = text.match_indices("xmlns").count();
            assert_eq!(namespace_declarations(text, 0, text.len()), naive, "{text:?}");
            for border in (0..=text.len()).filter(|&b| text.is_char_boundary(b)) {
                let halves = namespace_declarations(text, 0, border) + namespace_declarations(text, border, text.len());
                assert_eq!(halves, naive, "{text:?} split at {border}");
            }
        }
        let routine = |i: usize| {
            format!(
                "<xaif:ControlFlowGraph vertex_id=\"r\" symbol_id=\"f{i}\" scope_id=\"1\"><xaif:Marker statement_id=\"m{i}\"/></xaif:ControlFlowGraph>\n"
            )
        };
        let routines: String = (0..8).map(routine).collect();
        let declarations = "<!-- xmlns -->".repeat(MAX_NAMESPACE_DECLARATIONS / 2 + 1);
        let head = "<?xml version=\"1.0\"?>\n<xaif:CallGraph xmlns:xaif=\"x\"><xaif:ScopeHierarchy/>\n";
        let first_half = format!("{head}{declarations}{routines}</xaif:CallGraph>");
        let both_halves = format!("{head}{declarations}{routines}{declarations}</xaif:CallGraph>");
        let under = format!("{head}{declarations}{routines}{}</xaif:CallGraph>", "<!-- xmlns -->".repeat(100));
        assert!(split_point(&both_halves).is_some());
        assert_eq!(Layout::scan_split_from(&both_halves, true, 0), None);
        assert_eq!(Layout::scan_split_from(&both_halves, true, usize::MAX), None);
        for text in [&first_half, &under] {
            assert!(Layout::scan_split_from(text, true, 0).is_some(), "under the limit, scanned in halves");
            assert!(Layout::scan_split_from(text, true, usize::MAX).is_some(), "under the limit, scanned at once");
        }
        // The split falls at the first routine past the middle: after the declarations, or,
        // behind a long comment, before them.
        let over_in_first = format!("{head}{declarations}{declarations}{routines}</xaif:CallGraph>");
        let padding = format!("<!-- {} -->", "p".repeat(4 * declarations.len()));
        let over_in_second = format!("{head}{padding}{routines}{declarations}{declarations}</xaif:CallGraph>");
        for (text, first_half) in [(&over_in_first, true), (&over_in_second, false)] {
            let split = split_point(text).expect("a middle");
            assert_eq!(text[..split].matches("xmlns").count() > 1, first_half, "where the declarations stand");
            assert_eq!(Layout::scan_split_from(text, true, 0), None);
            assert_eq!(Layout::scan_split_from(text, true, usize::MAX), None);
        }
    }

    /// Routines' bodies skimmed or scanned tag by tag: the same layout and survey, on every
    /// test and shared document and on bodies that cannot be skimmed or hide `statement_id`
    /// where no attribute is; and the same findings where the skimmed body nests deeper than
    /// the limit, which only the scan tag by tag sees.
    #[test]
    fn skimmed_routines_give_the_layout_a_scan_tag_by_tag_gives() {
        use super::super::tree::tests::{shared_dir, walk};
        let head = "<?xml version=\"1.0\"?>\n<xaif:CallGraph xmlns:xaif=\"http://www.mcs.anl.gov/XAIF\"><xaif:ScopeHierarchy/>\n";
        let routine = |body: &str| {
            format!(
                "{head}<xaif:ControlFlowGraph vertex_id=\"r\" symbol_id=\"f\" scope_id=\"1\">{body}</xaif:ControlFlowGraph>\n</xaif:CallGraph>"
            )
        };
        let marker = |id: &str| format!("<xaif:Marker statement_id=\"{id}\"/>");
        let mut documents: Vec<String> = [
            // Plain; attributes before the id, blanks around `=`, single quotes, `>` in values.
            format!("{}<xaif:Assignment a=\">\" statement_id = 's'/>", marker("m")),
            // Hidden: in text, in another attribute's value, in an end tag, in a comment,
            // in CDATA, in a processing instruction, on an element that is not a statement.
            format!(
                "statement_id=\"t\"{}<xaif:BasicBlock annotation=\"statement_id=\">statement_id</xaif:BasicBlock>",
                marker("m")
            ),
            format!("{}<xaif:Marker annotation='statement_id=\"a\"' statement_id=\"b\"/>", marker("m")),
            format!("{}<!-- <xaif:Marker statement_id=\"c\"/> -->", marker("m")),
            format!("{}<![CDATA[ <xaif:Marker statement_id=\"c\"/> ]]>", marker("m")),
            format!("<?pi {}?>{}", marker("p"), marker("m")),
            "<xaif:BasicBlock statement_id=\"q\"/>".to_string(),
            // The same name nested, another element's end tag that begins alike, an end tag
            // with blanks.
            format!("<xaif:ControlFlowGraph>{}</xaif:ControlFlowGraph>", marker("n")),
            format!("{}</xaif:ControlFlowGraphs>", marker("m")),
            // Repeated and encoded ids, which the survey refuses.
            format!("{}{}", marker("d"), marker("d")),
            marker("a&amp;b"),
            // Malformed: an unclosed tag, a `<` in a value.
            format!("{}<xaif:Marker statement_id=\"u\"", marker("m")),
            format!("<xaif:Marker a=\"<\" statement_id=\"v\"/>{}", marker("m")),
            // The end tag inside a value: the tag holding the id reaches past the body.
            format!("<xaif:Marker statement_id=\"w\" a=\"</xaif:ControlFlowGraph>\"/>{}", marker("m")),
        ]
        .iter()
        .map(|body| routine(body))
        .collect();
        documents.push(routine(&marker("e")).replace("</xaif:ControlFlowGraph>", "</xaif:ControlFlowGraph  >"));
        let mut files = walk(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata")));
        files.extend(walk(&shared_dir()));
        files.retain(|path| path.extension().is_some_and(|e| e == "xaif"));
        files.sort();
        documents.extend(files.iter().filter_map(|file| std::fs::read_to_string(file).ok()));
        assert!(documents.len() > 1000, "only {} documents", documents.len());
        // Deeper than the limit inside a routine: the scan tag by tag refuses the document,
        // skimming leaves it to the routine's checks.
        documents.push(routine(&format!(
            "{}{}",
            "<xaif:BasicBlock vertex_id=\"1\">".repeat(MAX_NESTING),
            "</xaif:BasicBlock>".repeat(MAX_NESTING)
        )));
        let (mut routines, mut skimmed, mut differ) = (0, 0, 0);
        for text in &documents {
            let tag_by_tag = Layout::scan_with(text, true, usize::MAX, false);
            let skimming = Layout::scan_with(text, true, usize::MAX, true);
            let shown = &text[..text.floor_char_boundary(600)];
            if skimming != tag_by_tag {
                // Where skimming finds another layout than the scan tag by tag (which refuses
                // malformed markup and nesting too deep, and takes the tags of some malformed
                // bodies otherwise), the document is checked whole, as it was before skimming
                // (a malformed body's piece does not parse); under a root of another name too.
                assert_eq!(check_in_windows(text, "f.xaif", true, None, 1), None, "{shown}");
                let other_root = text.replace("xaif:CallGraph", "xaif:Other");
                assert_eq!(check_in_windows(&other_root, "f.xaif", true, None, 1), None, "{shown}");
                differ += 1;
                continue;
            }
            // The routines skimming takes, and where their end tags are.
            for child in tag_by_tag.iter().flat_map(|layout| &layout.children) {
                let name = b"xaif:ControlFlowGraph";
                if text.as_bytes()[child.start + 1..].starts_with(name) && child.end > child.tag_end {
                    routines += 1;
                    let end = skimmable_body(text.as_bytes(), name, child.tag_end);
                    skimmed += usize::from(end == Some(child.end - "</xaif:ControlFlowGraph>".len()));
                }
            }
        }
        assert!(skimmed * 100 >= routines * 95, "{skimmed} of {routines} routines skimmed");
        assert!(skimmed > 1000, "only {skimmed} routines skimmed");
        assert!(differ >= 4, "the unclosed tag, the `<` in values and the deep routine give other layouts");
    }

    /// Routines damaged a byte at a time (markup characters put in or taken out): the checks
    /// in pieces, routines skimmed, never panic, and what they find is what the whole
    /// document's checks find.
    #[test]
    fn damaged_skimmed_routines_give_the_whole_documents_findings() {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/tangent"));
        let mut files: Vec<_> = std::fs::read_dir(path).expect("test data").flatten().map(|e| e.path()).collect();
        files.sort();
        let text = files
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .filter(|t| t.contains("statement_id"))
            .max_by_key(String::len)
            .expect("a test document with statements");
        let first = text.find("<xaif:ControlFlowGraph ").expect("a routine");
        let options = super::super::ValidateOptions { strict: false, activity: false };
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let (mut in_pieces, mut damaged) = (0, 0);
        for round in 0..400 {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let mut at = first + (state >> 33) as usize % (text.len() - first);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let mut mutated = text.clone();
            let bytes = ["<", ">", "\"", "'", "!", "?", "/", "</xaif:ControlFlowGraph>", "statement_id=\"z\" "];
            if round % 3 == 0 {
                let end = mutated[at..].char_indices().nth(1).map_or(mutated.len(), |(k, _)| at + k);
                mutated.replace_range(at..end, "");
            } else {
                mutated.insert_str(at, bytes[round % bytes.len()]);
            }
            let whole = super::super::check_whole(&mutated, "f.xaif", &options, super::super::Checks::All);
            damaged += usize::from(whole.as_ref().is_err());
            if let Some(findings) = check_in_windows(&mutated, "f.xaif", false, None, 1) {
                assert_eq!(Ok(findings), whole, "round {round}");
                in_pieces += 1;
            }
        }
        assert!(in_pieces >= 50 && damaged >= 100, "{in_pieces} checked in pieces, {damaged} malformed of 400");
    }
}
