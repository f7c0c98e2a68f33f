//! The checks on a tree's nodes: structure against the schema's rules, the tables of the
//! head, references, and the graphs' ids and edges, each finding located in the input.

use std::sync::{Arc, OnceLock};

use rustc_hash::{FxHashMap, FxHashSet};

use super::schema::MOST_ATTRIBUTES;
use super::{
    Content, Diagnostic, LineIndex, MAX_NESTING, Node, Severity, XAIF_NAMESPACE, attributes, bad_value, child_content,
    finding, required_children,
};

/// The phases of the checks. The whole-document path runs them one after another; findings at
/// one place keep that order whichever way the tree was parsed (see [`Validator::into_findings`]).
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(super) enum Phase {
    Structure,
    Tables,
    References,
    Activity,
}

/// The checks, on nodes of whichever tree holds them: the whole document's, or one fragment's
/// (`fragments.rs`), whose offsets `map` takes back to the input's.
pub(super) struct Validator<'v> {
    input: &'v [u8],
    /// Lines and columns of findings (trees keep byte offsets), the index built at the first
    /// finding.
    pub(super) lines: Arc<OnceLock<LineIndex<'v>>>,
    file: &'v str,
    strict: bool,
    /// The phase findings are reported in.
    pub(super) phase: Phase,
    /// `(offset in the tree's text, offset in the input)` at the start of each piece of the
    /// tree's text, in order: the tree's text is pieces of the input.
    pub(super) map: Arc<[(usize, usize)]>,
    pub(super) findings: Vec<(Phase, Diagnostic)>,
    /// How many of the findings are errors.
    pub(super) errors: usize,
}

/// What the reference checks need, gathered in a first walk (statement ids, for the
/// fragment-wise path, in a first scan: `StatementId`s of the head refer to later routines).
#[derive(Default)]
pub(super) struct Tables<'t> {
    pub(super) scopes: FxHashMap<Box<str>, FxHashSet<Box<str>>>,
    pub(super) alias_keys: FxHashSet<u64>,
    pub(super) duud_keys: FxHashSet<u64>,
    pub(super) do_keys: FxHashSet<u64>,
    pub(super) statements: StatementIds<'t>,
}

/// The document's statement ids, made a set only when a `StatementId` is looked up: only the
/// head's `DUUDSetMap` and `DOSetMap` hold them, often none (or few: 21 in a 64 MiB synthetic
/// input, against 64,386 statements).
#[derive(Default)]
pub(super) struct StatementIds<'t> {
    found: Vec<&'t str>,
    set: std::sync::OnceLock<FxHashSet<&'t str>>,
}

impl<'t> StatementIds<'t> {
    pub(super) fn new(found: Vec<&'t str>) -> Self {
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
pub(super) fn is_statement(name: &str) -> bool {
    is_statement_name(name.as_bytes())
}

/// [`is_statement`] of a name as bytes.
pub(super) fn is_statement_name(name: &[u8]) -> bool {
    matches!(
        name,
        b"Assignment" | b"SubroutineCall" | b"Marker" | b"Initialization" | b"Update" | b"InlinableSubroutineCall"
    )
}

/// Whether a child of the `CallGraph` with this local name feeds the [`Tables`].
pub(super) fn is_table_section(name: &str) -> bool {
    matches!(name, "ScopeHierarchy" | "AliasSetMap" | "DUUDSetMap" | "DOSetMap")
}

/// What [`Validator::structure_child`] found a child to be.
#[derive(Copy, Clone)]
pub(super) enum Step {
    /// An element to check in turn, as this content.
    Descend(Content),
    /// An element nested deeper than [`MAX_NESTING`].
    TooDeep,
    /// Text, a comment, or an element already reported.
    Done,
}

impl<'v> Validator<'v> {
    pub(super) fn new(input: &'v [u8], file: &'v str, strict: bool, map: Arc<[(usize, usize)]>) -> Self {
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
    pub(super) fn into_findings(self) -> Vec<Diagnostic> {
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

    pub(super) fn error(&mut self, node: Node, message: String) {
        self.report(Severity::Error, node, message);
    }

    fn lenient(&mut self, node: Node, message: String) {
        let severity = if self.strict { Severity::Error } else { Severity::Warning };
        self.report(severity, node, message);
    }

    /// All checks on the tree of the whole document.
    pub(super) fn document<'a>(&mut self, root: Node<'a, '_>, activity: bool) {
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
    pub(super) fn root(&mut self, root: Node) -> bool {
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
    pub(super) fn structure(&mut self, node: Node, content: Content, depth: usize) -> bool {
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
    pub(super) fn structure_child(
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
    pub(super) fn structure_end(&mut self, node: Node, content: Content) {
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

    pub(super) fn check_attributes(&mut self, node: Node, content: Content) {
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
    pub(super) fn table_section(&mut self, section: Node, tables: &mut Tables) {
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
    pub(super) fn routine_ids<'a>(&mut self, root: Node<'a, '_>) -> FxHashSet<&'a str> {
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
    pub(super) fn references(&mut self, node: Node, tables: &Tables, routine_ids: &FxHashSet<&str>) {
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
pub(super) struct SeenIds<'a> {
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
pub(super) fn child_is_reference(node: Node) -> bool {
    node.children().any(|c| c.has_tag_name((XAIF_NAMESPACE, "SymbolReference")))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
