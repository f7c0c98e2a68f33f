//! XAIF writer in the reference engine's conventions.
//!
//! The reference unparser writes no XML declaration, indents by two spaces starting at two,
//! uses the `xaif:` prefix, writes most schema defaults explicitly (`annotation=""`,
//! `deriv="0"`, …), omits `alias`/`du_ud` keys of 0, and sorts each symbol table by name.
//! Back ends and regression scripts written against it rely on that, so we do the same.
//! Attributes the reference drops but a front end may have set (`lineNumber`, `do_chain`,
//! `live`, `pointer`, an intrinsic's `type`/`rType`/`rShape`) are written when they differ
//! from the schema default, so nothing is lost on the way through.

mod text;

use text::{NEEDS_ESCAPE, append, escape_into, order_prefix};

use crate::ir::*;

use super::read::XAIF_NAMESPACE;

#[derive(Clone, Debug)]
pub struct WriteOptions {
    /// The second half of `xsi:schemaLocation` (`xaif.xsd`, `xaif_output.xsd`, or
    /// `<dir>/xaif_output.xsd` under `-s`).
    pub schema_location: String,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions { schema_location: "xaif_output.xsd".into() }
    }
}

/// Serializes the whole call graph.
pub fn write(cg: &CallGraph, options: &WriteOptions) -> Vec<u8> {
    // The hint is a typical size (the adjoint's largest corpus outputs are 1.47 times it):
    // growing a buffer of megabytes copies it whole, while capacity never written to costs
    // no memory (the pages of a large allocation are not touched).
    let mut out = Vec::with_capacity((cg.size_hint + cg.size_hint / 2).max(1 << 12));
    write_head(cg, options, &mut out);
    for (id, _) in cg.routines.iter() {
        write_routine(cg, id, &mut out);
    }
    write_tail(cg, &mut out);
    out
}

/// Appends what comes before the routines: the `CallGraph` start tag, the scope hierarchy
/// with its symbol tables, and the maps. The streaming driver writes it last (transformations
/// add temporaries to the symbol tables) and puts it in front of the routines.
pub fn write_head(cg: &CallGraph, options: &WriteOptions, out: &mut Vec<u8>) {
    let mut w = Writer { cg, out: std::mem::take(out), depth: 1, drain: None };
    w.head(options);
    *out = w.out;
}

/// [`write_head`] into `sink`, a buffer's worth at a time: after a transformation the symbol
/// tables alone are about as long as the input, and need not be whole in memory.
pub fn write_head_to(cg: &CallGraph, options: &WriteOptions, sink: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut w =
        Writer { cg, out: Vec::with_capacity(DRAIN_AT * 2), depth: 1, drain: Some(Drain { sink, error: None }) };
    w.head(options);
    w.drain_now();
    match w.drain {
        Some(Drain { error: Some(error), .. }) => Err(error),
        _ => Ok(()),
    }
}

/// How much [`write_head_to`] gathers before it writes.
const DRAIN_AT: usize = 1 << 16;

/// Where a writer's text goes as it grows, and the first error there (after which it writes
/// nothing more).
struct Drain<'w> {
    sink: &'w mut dyn std::io::Write,
    error: Option<std::io::Error>,
}

/// Appends one routine (a control flow graph or a replacement list), as [`write()`] does.
pub fn write_routine(cg: &CallGraph, routine: RoutineId, out: &mut Vec<u8>) {
    write_routine_value(cg, &cg.routines[routine], out);
}

/// [`write_routine`] of a routine held apart from `cg`, whose names and symbols it uses.
pub fn write_routine_value(cg: &CallGraph, routine: &Routine, out: &mut Vec<u8>) {
    let mut w = Writer { cg, out: std::mem::take(out), depth: 2, drain: None };
    match routine {
        Routine::ControlFlowGraph(cfg) => w.control_flow_graph(cfg),
        Routine::ReplacementList(list) => w.replacement_list(list),
    }
    *out = w.out;
}

/// Appends the call graph edges and the `CallGraph` end tag.
pub fn write_tail(cg: &CallGraph, out: &mut Vec<u8>) {
    let mut w = Writer { cg, out: std::mem::take(out), depth: 2, drain: None };
    w.tail();
    *out = w.out;
}

/// ` name="`, an attribute's key with the blank before it and the `="` after it: one constant
/// the writer copies at once (the output has millions of attributes).
macro_rules! key {
    ($name:literal) => {
        concat!(" ", $name, "=\"")
    };
}

/// Indentation for 32 levels, then the start of a start tag: [`Writer::open`] copies the tail
/// it needs, indentation and `<xaif:` at once.
const INDENTED_OPEN: &str = concat!("                                                                ", "<xaif:");

/// As [`INDENTED_OPEN`], for end tags.
const INDENTED_CLOSE: &str = concat!("                                                                ", "</xaif:");

struct Writer<'a, 'w> {
    cg: &'a CallGraph,
    out: Vec<u8>,
    depth: usize,
    drain: Option<Drain<'w>>,
}

fn bool_digit(b: bool) -> &'static str {
    if b { "1" } else { "0" }
}

impl<'a> Writer<'a, '_> {
    /// Passes the text gathered so far to the drain, if there is one and enough has gathered.
    fn drain_if_full(&mut self) {
        if self.out.len() >= DRAIN_AT {
            self.drain_now();
        }
    }

    fn drain_now(&mut self) {
        let Some(drain) = &mut self.drain else { return };
        if drain.error.is_none()
            && let Err(error) = drain.sink.write_all(&self.out)
        {
            drain.error = Some(error);
        }
        self.out.clear();
    }

    // ------------------------------------------------------------ primitives

    /// The indentation of the current depth followed by `prefix` (`<xaif:` or `</xaif:`), as
    /// one copy from [`INDENTED_OPEN`] or [`INDENTED_CLOSE`] when the depth fits (it always
    /// does on real inputs): every element starts with both. Then the element's `name` and
    /// `suffix` (`>` and the line break of an end tag), in the same append.
    #[inline(always)]
    fn indented(&mut self, padded: &'static str, prefix_len: usize, name: &str, suffix: &'static [u8]) {
        let width = 2 * self.depth;
        let pad = padded.len() - prefix_len;
        if width <= pad {
            append(&mut self.out, [&padded.as_bytes()[pad - width..], name.as_bytes(), suffix]);
        } else {
            self.indent_wide(width);
            append(&mut self.out, [&padded.as_bytes()[pad..], name.as_bytes(), suffix]);
        }
    }

    /// Blanks for an indentation deeper than [`INDENTED_OPEN`] holds.
    #[cold]
    fn indent_wide(&mut self, mut width: usize) {
        let blanks = &INDENTED_OPEN.as_bytes()[..INDENTED_OPEN.len() - "<xaif:".len()];
        while width > 0 {
            let chunk = width.min(blanks.len());
            self.out.extend_from_slice(&blanks[..chunk]);
            width -= chunk;
        }
    }

    /// `<xaif:name` at the current depth.
    #[inline(always)]
    fn open(&mut self, name: &str) {
        self.indented(INDENTED_OPEN, "<xaif:".len(), name, b"");
    }

    /// `key` is the whole ` name="` (see [`key!`]).
    #[inline(always)]
    fn attr(&mut self, key: &'static str, value: &str) {
        self.out.extend_from_slice(key.as_bytes());
        escape_into(&mut self.out, value);
        self.out.push(b'"');
    }

    /// An attribute whose value is one of the writer's own words (`true`, `scalar`, `1`, …),
    /// which need no escaping.
    #[inline(always)]
    fn attr_static(&mut self, key: &'static str, value: &'static str) {
        debug_assert!(!value.bytes().any(|b| NEEDS_ESCAPE[b as usize]), "{value}");
        self.attr_unescaped(key, value);
    }

    #[inline(always)]
    fn attr_unescaped(&mut self, key: &'static str, value: &str) {
        append(&mut self.out, [key.as_bytes(), value.as_bytes(), b"\""]);
    }

    /// Interned names know whether they need escaping: most are ids and symbol names written
    /// many times each, which the writer copies without scanning.
    #[inline(always)]
    fn attr_name(&mut self, key: &'static str, value: Name) {
        let names = &self.cg.names;
        if value.is_empty() {
            // Most annotations: nothing to look up or copy.
            append(&mut self.out, [key.as_bytes(), b"\""]);
        } else if names.needs_escape(value) {
            self.attr(key, names.get(value));
        } else {
            append(&mut self.out, [key.as_bytes(), names.bytes(value), b"\""]);
        }
    }

    fn attr_int(&mut self, key: &'static str, value: i64) {
        self.attr_number(key, value < 0, value.unsigned_abs());
    }

    /// Keys, addresses and line numbers: unsigned 64-bit numbers, all of whose values are
    /// written as they are (never as a negative number).
    fn attr_uint(&mut self, key: &'static str, value: u64) {
        self.attr_number(key, false, value);
    }

    fn attr_number(&mut self, key: &'static str, negative: bool, magnitude: u64) {
        // Decimal digits without a temporary String: this runs for every key and position.
        let sign: &[u8] = if negative { b"-" } else { b"" };
        append(&mut self.out, [key.as_bytes(), sign, itoa::Buffer::new().format(magnitude).as_bytes(), b"\""]);
    }

    /// Ends a start tag whose element has children.
    fn start_body(&mut self) {
        self.out.extend_from_slice(b">\n");
        self.depth += 1;
    }

    /// Ends a start tag of an element without children.
    fn end_empty(&mut self) {
        self.out.extend_from_slice(b"/>\n");
    }

    /// Inlined: most names are constants, copied without a call.
    #[inline(always)]
    fn close(&mut self, name: &str) {
        self.depth -= 1;
        self.indented(INDENTED_CLOSE, "</xaif:".len(), name, b">\n");
    }

    /// `<xaif:name>` with no attributes, children to follow.
    fn open_plain(&mut self, name: &str) {
        self.open(name);
        self.start_body();
    }

    // ------------------------------------------------------------ document

    fn head(&mut self, options: &WriteOptions) {
        let cg = self.cg;
        self.open("CallGraph");
        self.attr_static(key!("xmlns:xsi"), "http://www.w3.org/2001/XMLSchema-instance");
        self.attr_static(key!("xmlns:xaif"), XAIF_NAMESPACE);
        self.attr(key!("xsi:schemaLocation"), &format!("{XAIF_NAMESPACE} {}", options.schema_location));
        if let Some(program) = cg.program_name {
            self.attr_name(key!("program_name"), program);
        }
        self.attr_name(key!("prefix"), cg.prefix);
        self.start_body();

        self.open_plain("ScopeHierarchy");
        for (id, _) in cg.scopes.iter() {
            self.scope(id);
        }
        for edge in &cg.scope_edges {
            self.open("ScopeEdge");
            self.attr_name(key!("edge_id"), edge.id);
            self.attr_name(key!("source"), cg.scopes[edge.source].id);
            self.attr_name(key!("target"), cg.scopes[edge.target].id);
            if !edge.annotation.is_empty() {
                self.attr_name(key!("annotation"), edge.annotation);
            }
            self.end_empty();
        }
        self.close("ScopeHierarchy");

        self.open_plain("AliasSetMap");
        for set in &cg.alias_sets {
            self.open("AliasSet");
            self.attr_uint(key!("key"), set.key);
            self.start_body();
            for range in &set.ranges {
                self.open("AliasRange");
                self.attr_uint(key!("from_virtual_address"), range.from);
                self.attr_uint(key!("to_virtual_address"), range.to);
                self.attr_static(key!("partial"), bool_digit(range.partial));
                self.end_empty();
            }
            self.close("AliasSet");
            self.drain_if_full();
        }
        self.close("AliasSetMap");
        self.stmt_id_set_map("DUUDSetMap", &cg.duud_sets);
        self.stmt_id_set_map("DOSetMap", &cg.do_sets);
    }

    fn tail(&mut self) {
        let cg = self.cg;
        for edge in &cg.call_edges {
            self.open("CallGraphEdge");
            self.attr_name(key!("edge_id"), edge.id);
            self.attr_name(key!("source"), cg.routines[edge.source].id());
            self.attr_name(key!("target"), cg.routines[edge.target].id());
            if !edge.annotation.is_empty() {
                self.attr_name(key!("annotation"), edge.annotation);
            }
            self.end_empty();
        }
        self.close("CallGraph");
    }

    fn scope(&mut self, id: ScopeId) {
        let cg = self.cg;
        let scope = &cg.scopes[id];
        self.open("Scope");
        self.attr_name(key!("vertex_id"), scope.id);
        self.attr_name(key!("annotation"), scope.annotation);
        self.start_body();
        self.open_plain("SymbolTable");
        // Each name looked up once, not at every comparison (stable: equal names, which a
        // table cannot hold, would keep their order). Names are compared by their first 16
        // bytes as a number first, and in full only where those are equal: a comparison of
        // strings was a call to `memcmp`, and sorting the tables 2% of a large tangent.
        let mut symbols: Vec<(u128, &str, SymbolId)> = scope
            .symbols
            .iter()
            .map(|&s| {
                let name = cg.symbol_name(s);
                (order_prefix(name.as_bytes()), name, s)
            })
            .collect();
        symbols.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        for (_, _, symbol) in symbols {
            self.symbol(&cg.symbols[symbol]);
            self.drain_if_full();
        }
        self.close("SymbolTable");
        self.close("Scope");
    }

    fn symbol(&mut self, symbol: &Symbol) {
        self.open("Symbol");
        self.attr_name(key!("symbol_id"), symbol.name);
        self.attr_static(key!("kind"), symbol_kind_str(symbol.kind));
        self.attr_static(key!("type"), symbol_type_str(symbol.ty));
        self.attr_name(key!("feType"), symbol.fe_type);
        self.attr_static(key!("shape"), shape_str(symbol.shape));
        self.attr_name(key!("annotation"), symbol.annotation);
        self.attr_static(key!("active"), bool_digit(symbol.active));
        self.attr_static(key!("temp"), bool_digit(symbol.temp));
        if symbol.pointer {
            self.attr_static(key!("pointer"), "1");
        }
        self.start_body();
        for bounds in &symbol.dimensions {
            self.open("DimensionBounds");
            self.attr_int(key!("lower"), bounds.lower);
            self.attr_int(key!("upper"), bounds.upper);
            self.end_empty();
        }
        self.close("Symbol");
    }

    fn stmt_id_set_map(&mut self, element: &str, sets: &[StmtIdSet]) {
        self.open_plain(element);
        for set in sets {
            self.open("StmtIdSet");
            self.attr_uint(key!("key"), set.key);
            self.start_body();
            for statement in &set.statements {
                self.open("StatementId");
                self.attr_name(key!("idRef"), *statement);
                self.end_empty();
            }
            self.close("StmtIdSet");
            self.drain_if_full();
        }
        self.close(element);
    }

    // ------------------------------------------------------------ routines

    fn routine_head(&mut self, id: Name, symbol: SymbolId, body_scope: ScopeId) {
        let cg = self.cg;
        self.attr_name(key!("vertex_id"), id);
        self.attr_name(key!("symbol_id"), cg.symbols[symbol].name);
        self.attr_name(key!("scope_id"), cg.scopes[cg.symbols[symbol].scope].id);
        self.attr_name(key!("controlflowgraph_scope_id"), cg.scopes[body_scope].id);
    }

    fn control_flow_graph(&mut self, cfg: &ControlFlowGraph) {
        self.open("ControlFlowGraph");
        self.routine_head(cfg.id, cfg.symbol, cfg.body_scope);
        self.attr_name(key!("annotation"), cfg.annotation);
        self.attr_static(key!("active"), bool_digit(cfg.active));
        if !cfg.structured {
            self.attr_static(key!("structured"), "0");
        }
        self.start_body();
        // As with side-effect lists, the reference leaves an empty argument list out.
        if let Some(arguments) = cfg.arguments.as_ref().filter(|a| !a.is_empty()) {
            self.argument_list(arguments);
        }
        let effects = &cfg.side_effects;
        for (element, list) in [
            ("ModLocal", &effects.mod_local),
            ("Mod", &effects.modified),
            ("ReadLocal", &effects.read_local),
            ("Read", &effects.read),
            ("OnEntry", &effects.on_entry),
        ] {
            // The reference unparser leaves empty lists out; a back end reads both the same.
            if let Some(list) = list.as_ref().filter(|l| !l.is_empty()) {
                self.open_plain(element);
                for reference in list {
                    self.variable_reference("SideEffectReference", reference, RefStyle::SideEffect);
                }
                self.close(element);
            }
        }
        self.flow_graph(&cfg.graph);
        self.close("ControlFlowGraph");
    }

    fn replacement_list(&mut self, list: &ReplacementList) {
        self.open("ReplacementList");
        self.routine_head(list.id, list.symbol, list.body_scope);
        self.attr_name(key!("annotation"), list.annotation);
        self.attr_name(key!("template_name"), list.template_name);
        self.start_body();
        if let Some(arguments) = list.arguments.as_ref().filter(|a| !a.is_empty()) {
            self.argument_list(arguments);
        }
        // Where each graph's text went: a replacement that repeats one written before (the
        // adjoint's strictly anonymous sweeps repeat the taping and adjoint sweeps, at the
        // same depth) is a copy of that text, not written again. On large inputs the repeats
        // are about 40% of the adjoint's output.
        let mut written: Vec<(Name, std::ops::Range<usize>)> = Vec::new();
        for replacement in &list.replacements {
            self.open("Replacement");
            self.attr_name(key!("placeholder"), replacement.placeholder);
            if !replacement.structured {
                self.attr_static(key!("structured"), "0");
            }
            self.start_body();
            // (A writer that drains its text as it goes has no earlier text to copy.)
            let earlier = replacement
                .repeats
                .filter(|_| self.drain.is_none())
                .and_then(|placeholder| written.iter().find(|(p, _)| *p == placeholder))
                .map(|(_, range)| range.clone());
            match earlier {
                Some(range) => self.out.extend_from_within(range),
                None => {
                    let start = self.out.len();
                    self.flow_graph(list.graph_of(replacement));
                    if replacement.repeats.is_none() {
                        written.push((replacement.placeholder, start..self.out.len()));
                    }
                }
            }
            self.close("Replacement");
        }
        self.close("ReplacementList");
    }

    fn argument_list(&mut self, arguments: &[ArgumentSymbolReference]) {
        let cg = self.cg;
        self.open_plain("ArgumentList");
        for argument in arguments {
            let symbol = &cg.symbols[argument.symbol];
            self.open("ArgumentSymbolReference");
            self.attr_uint(key!("position"), argument.position.into());
            self.attr_name(key!("symbol_id"), symbol.name);
            self.attr_name(key!("scope_id"), cg.scopes[symbol.scope].id);
            self.attr_name(key!("annotation"), argument.annotation);
            self.attr_static(
                key!("intent"),
                match argument.intent {
                    Intent::In => "in",
                    Intent::Out => "out",
                    Intent::InOut => "inout",
                },
            );
            if argument.deriv {
                self.attr_static(key!("deriv"), "1");
            }
            self.end_empty();
        }
        self.close("ArgumentList");
    }

    fn flow_graph(&mut self, graph: &FlowGraph) {
        for (_, vertex) in graph.vertices.iter() {
            self.cfg_vertex(vertex);
        }
        for edge in &graph.edges {
            self.open("ControlFlowEdge");
            self.attr_name(key!("edge_id"), edge.id);
            self.attr_name(key!("source"), graph.vertices[edge.source].id);
            self.attr_name(key!("target"), graph.vertices[edge.target].id);
            self.attr_static(key!("has_condition_value"), bool_digit(edge.condition_value.is_some()));
            if let Some(value) = edge.condition_value {
                self.attr_int(key!("condition_value"), value);
            }
            if !edge.annotation.is_empty() {
                self.attr_name(key!("annotation"), edge.annotation);
            }
            self.end_empty();
        }
    }

    fn cfg_vertex(&mut self, vertex: &CfgVertex) {
        let element = vertex.kind.element_name();
        self.open(element);
        self.attr_name(key!("vertex_id"), vertex.id);
        self.attr_name(key!("annotation"), vertex.annotation);
        match &vertex.kind {
            CfgVertexKind::Entry
            | CfgVertexKind::Exit
            | CfgVertexKind::EndBranch
            | CfgVertexKind::EndLoop
            | CfgVertexKind::Label
            | CfgVertexKind::Goto => self.end_empty(),
            CfgVertexKind::BasicBlock(block) => {
                let cg = self.cg;
                self.attr_name(key!("scope_id"), cg.scopes[block.scope].id);
                self.start_body();
                for statement in &block.statements {
                    self.statement(statement);
                }
                self.close(element);
            }
            CfgVertexKind::If(conditional)
            | CfgVertexKind::PreLoop(conditional)
            | CfgVertexKind::PostLoop(conditional)
            | CfgVertexKind::Branch(conditional) => {
                if conditional.line != 0 {
                    self.attr_uint(key!("lineNumber"), conditional.line);
                }
                self.start_body();
                if let Some(condition) = &conditional.condition {
                    self.expression("Condition", condition);
                }
                self.close(element);
            }
            CfgVertexKind::ForLoop(for_loop) => {
                self.attr_static(
                    key!("reversal"),
                    match for_loop.reversal {
                        LoopReversal::Explicit => "explicit",
                        LoopReversal::Anonymous => "anonymous",
                    },
                );
                if for_loop.line != 0 {
                    self.attr_uint(key!("lineNumber"), for_loop.line);
                }
                self.start_body();
                if let Some(init) = &for_loop.initialization {
                    self.assignment("Initialization", init);
                }
                if let Some(condition) = &for_loop.condition {
                    self.expression("Condition", condition);
                }
                if let Some(update) = &for_loop.update {
                    self.assignment("Update", update);
                }
                self.close(element);
            }
        }
    }

    // ------------------------------------------------------------ statements

    fn statement(&mut self, statement: &Statement) {
        match statement {
            Statement::Assignment(assignment) => self.assignment("Assignment", assignment),
            Statement::SubroutineCall(call) => {
                let cg = self.cg;
                self.open("SubroutineCall");
                self.attr_name(key!("statement_id"), call.id);
                if let Some(symbol) = call.symbol {
                    let symbol = &cg.symbols[symbol];
                    self.attr_name(key!("symbol_id"), symbol.name);
                    self.attr_name(key!("scope_id"), cg.scopes[symbol.scope].id);
                }
                self.attr_static(key!("active"), active_str(call.active));
                self.attr_uint(key!("formalArgCount"), call.formal_arg_count.into());
                if call.line != 0 {
                    self.attr_uint(key!("lineNumber"), call.line);
                }
                self.start_body();
                self.arguments(&call.arguments, true);
                self.close("SubroutineCall");
            }
            Statement::Marker(marker) => {
                self.open("Marker");
                self.attr_name(key!("statement_id"), marker.id);
                self.attr_name(key!("annotation"), marker.annotation);
                self.end_empty();
            }
            Statement::DerivativePropagator(propagator) => self.derivative_propagator(propagator),
            Statement::InlinableSubroutineCall(call) => {
                self.open("InlinableSubroutineCall");
                self.attr_name(key!("subroutine_name"), call.subroutine_name);
                self.attr_name(key!("statement_id"), call.id);
                self.start_body();
                self.arguments(&call.arguments, false);
                self.close("InlinableSubroutineCall");
            }
        }
    }

    fn assignment(&mut self, element: &str, assignment: &Assignment) {
        let cg = self.cg;
        self.open(element);
        self.attr_name(key!("statement_id"), assignment.id);
        if let Some(chain) = assignment.do_chain {
            let key = cg.do_key(chain);
            if key != 0 {
                self.attr_uint(key!("do_chain"), key);
            }
        }
        if assignment.line != 0 {
            self.attr_uint(key!("lineNumber"), assignment.line);
        }
        self.start_body();
        self.variable_reference("AssignmentLHS", &assignment.lhs, RefStyle::Lhs { live: assignment.lhs_live });
        self.expression("AssignmentRHS", &assignment.rhs);
        self.close(element);
    }

    fn arguments(&mut self, arguments: &[Argument], always_annotate: bool) {
        for argument in arguments {
            self.open("Argument");
            self.attr_uint(key!("position"), argument.position.into());
            if always_annotate || !argument.annotation.is_empty() {
                self.attr_name(key!("annotation"), argument.annotation);
            }
            self.start_body();
            match &argument.value {
                ArgumentValue::Variable(reference) => {
                    self.variable_reference("VariableReference", reference, RefStyle::Vertex)
                }
                ArgumentValue::Constant(constant) => self.constant(constant),
            }
            self.close("Argument");
        }
    }

    fn derivative_propagator(&mut self, propagator: &DerivativePropagator) {
        self.open_plain("DerivativePropagator");
        for entry in &propagator.entries {
            match entry {
                PropagatorEntry::SetDeriv { target, source }
                | PropagatorEntry::SetNegDeriv { target, source }
                | PropagatorEntry::IncDeriv { target, source }
                | PropagatorEntry::DecDeriv { target, source } => {
                    let element = match entry {
                        PropagatorEntry::SetDeriv { .. } => "SetDeriv",
                        PropagatorEntry::SetNegDeriv { .. } => "SetNegDeriv",
                        PropagatorEntry::IncDeriv { .. } => "IncDeriv",
                        _ => "DecDeriv",
                    };
                    self.open_plain(element);
                    self.variable_reference("Tgt", target, RefStyle::Propagator);
                    self.variable_reference("Src", source, RefStyle::Propagator);
                    self.close(element);
                }
                PropagatorEntry::Sax { terms, y } | PropagatorEntry::Saxpy { terms, y } => {
                    let element = if matches!(entry, PropagatorEntry::Sax { .. }) { "Sax" } else { "Saxpy" };
                    self.open_plain(element);
                    for term in terms {
                        self.open_plain("AX");
                        self.expression("A", &term.a);
                        self.variable_reference("X", &term.x, RefStyle::Propagator);
                        self.close("AX");
                    }
                    self.variable_reference("Y", y, RefStyle::Propagator);
                    self.close(element);
                }
                PropagatorEntry::ZeroDeriv(reference) => {
                    self.variable_reference("ZeroDeriv", reference, RefStyle::Propagator);
                }
            }
        }
        self.close("DerivativePropagator");
    }

    // ------------------------------------------------------------ expressions

    fn expression(&mut self, element: &str, expression: &Expression) {
        let cg = self.cg;
        self.open_plain(element);
        for (_, vertex) in expression.vertices.iter() {
            match vertex {
                ExprVertex::Variable(reference) => {
                    self.variable_reference("VariableReference", reference, RefStyle::Vertex)
                }
                ExprVertex::Constant(constant) => self.constant(constant),
                ExprVertex::Intrinsic(intrinsic) => {
                    self.open("Intrinsic");
                    self.attr_name(key!("vertex_id"), intrinsic.id);
                    self.attr_name(key!("annotation"), intrinsic.annotation);
                    self.attr_name(key!("name"), intrinsic.name);
                    if cg.names.get(intrinsic.call_type) != "inlinable" {
                        self.attr_name(key!("type"), intrinsic.call_type);
                    }
                    if intrinsic.result_type != SymbolType::Real {
                        self.attr_static(key!("rType"), symbol_type_str(intrinsic.result_type));
                    }
                    if intrinsic.result_shape != Shape::Scalar {
                        self.attr_static(key!("rShape"), shape_str(intrinsic.result_shape));
                    }
                    self.end_empty();
                }
                ExprVertex::BooleanOperation(operation) => {
                    self.open("BooleanOperation");
                    self.attr_name(key!("vertex_id"), operation.id);
                    self.attr_static(key!("name"), boolean_op_str(operation.op));
                    if !operation.annotation.is_empty() {
                        self.attr_name(key!("annotation"), operation.annotation);
                    }
                    self.end_empty();
                }
                ExprVertex::FunctionCall(call) => {
                    self.open("FunctionCall");
                    self.attr_name(key!("vertex_id"), call.id);
                    self.attr_name(key!("annotation"), call.annotation);
                    if let Some(symbol) = call.symbol {
                        let symbol = &cg.symbols[symbol];
                        self.attr_name(key!("symbol_id"), symbol.name);
                        self.attr_name(key!("scope_id"), cg.scopes[symbol.scope].id);
                    }
                    self.start_body();
                    for argument in &call.arguments {
                        self.variable_reference("Argument", argument, RefStyle::Vertex);
                    }
                    self.close("FunctionCall");
                }
            }
        }
        for edge in &expression.edges {
            self.open("ExpressionEdge");
            self.attr_name(key!("edge_id"), edge.id);
            self.attr_name(key!("source"), expression.vertices[edge.source].id());
            self.attr_name(key!("target"), expression.vertices[edge.target].id());
            self.attr_int(key!("position"), edge.position);
            if !edge.annotation.is_empty() {
                self.attr_name(key!("annotation"), edge.annotation);
            }
            self.end_empty();
        }
        self.close(element);
    }

    fn constant(&mut self, constant: &Constant) {
        self.open("Constant");
        self.attr_name(key!("vertex_id"), constant.id);
        self.attr_static(
            key!("type"),
            match constant.ty {
                ConstantType::Real => "real",
                ConstantType::Double => "double",
                ConstantType::Integer => "integer",
                ConstantType::Bool => "bool",
                ConstantType::Char => "char",
                ConstantType::String => "string",
            },
        );
        self.attr_name(key!("feType"), constant.fe_type);
        self.attr_name(key!("value"), constant.value);
        if !constant.annotation.is_empty() {
            self.attr_name(key!("annotation"), constant.annotation);
        }
        self.end_empty();
    }

    /// A reference's ` active="…"`, whole: what the front end said, else its symbol's activity.
    fn active_attribute(&self, reference: &VariableReference) -> &'static str {
        const TRUE: &str = concat!(key!("active"), "true\"");
        const FALSE: &str = concat!(key!("active"), "false\"");
        match reference.active {
            ActiveUse::True => TRUE,
            ActiveUse::False => FALSE,
            ActiveUse::Undefined => match reference.base_symbol() {
                Some(symbol) if self.cg.symbols[symbol].active => TRUE,
                Some(_) => FALSE,
                None => concat!(key!("active"), "undefined\""),
            },
        }
    }

    /// Attributes whose text is known whole, copied at once: a reference's flags come from a
    /// handful of such texts, one copy each rather than three per attribute (key, value,
    /// quote), and the output has millions of references.
    #[inline(always)]
    fn attrs_whole(&mut self, text: &'static str) {
        debug_assert!(text.starts_with(' ') && text.ends_with('"'));
        self.out.extend_from_slice(text.as_bytes());
    }

    /// Inlined where it is called, where the element's name is a constant: its start and
    /// end tags are then copied without a call (the adjoint of the corpus writes some 60,000
    /// references); the content stays one function.
    #[inline(always)]
    fn variable_reference(&mut self, element: &str, reference: &VariableReference, style: RefStyle) {
        self.open(element);
        self.variable_reference_content(reference, style);
        self.close(element);
    }

    /// A reference's attributes and children, between the element name and the end tag.
    fn variable_reference_content(&mut self, reference: &VariableReference, style: RefStyle) {
        let cg = self.cg;
        match style {
            RefStyle::Propagator => {
                self.attrs_whole(if reference.deriv {
                    concat!(key!("deriv"), "1\"")
                } else {
                    concat!(key!("deriv"), "0\"")
                });
            }
            RefStyle::Vertex | RefStyle::SideEffect | RefStyle::Lhs { .. } => {
                if style == RefStyle::Vertex {
                    self.attr_name(key!("vertex_id"), reference.id);
                }
                self.attrs_whole(self.active_attribute(reference));
                if let Some(alias) = reference.alias {
                    let key = cg.alias_key(alias);
                    if key != 0 {
                        self.attr_uint(key!("alias"), key);
                    }
                }
                if let Some(du_ud) = reference.du_ud {
                    let key = cg.duud_key(du_ud);
                    if key != 0 {
                        self.attr_uint(key!("du_ud"), key);
                    }
                }
                self.attrs_whole(match (reference.deriv, reference.constant) {
                    (false, false) => concat!(key!("deriv"), "0\"", key!("constant"), "0\""),
                    (false, true) => concat!(key!("deriv"), "0\"", key!("constant"), "1\""),
                    (true, false) => concat!(key!("deriv"), "1\"", key!("constant"), "0\""),
                    (true, true) => concat!(key!("deriv"), "1\"", key!("constant"), "1\""),
                });
                if style == (RefStyle::Lhs { live: false }) {
                    self.attrs_whole(concat!(key!("live"), "0\""));
                }
            }
        }
        if !reference.annotation.is_empty() {
            self.attr_name(key!("annotation"), reference.annotation);
        }
        self.start_body();
        for vertex in &reference.vertices {
            match vertex {
                VarRefVertex::Symbol(symbol_ref) => {
                    let symbol = &cg.symbols[symbol_ref.symbol];
                    self.open("SymbolReference");
                    self.attr_name(key!("vertex_id"), symbol_ref.id);
                    self.attr_name(key!("symbol_id"), symbol.name);
                    self.attr_name(key!("annotation"), symbol_ref.annotation);
                    self.attr_name(key!("scope_id"), cg.scopes[symbol.scope].id);
                    if symbol_ref.properties.is_empty() {
                        self.end_empty();
                    } else {
                        self.start_body();
                        for (name, value) in &symbol_ref.properties {
                            self.open("SymbolReferenceProperty");
                            self.attr_name(key!("name"), *name);
                            self.attr_name(key!("value"), *value);
                            self.end_empty();
                        }
                        self.close("SymbolReference");
                    }
                }
                VarRefVertex::ArrayElement(element_ref) => {
                    self.open("ArrayElementReference");
                    self.attr_name(key!("vertex_id"), element_ref.id);
                    if !element_ref.annotation.is_empty() {
                        self.attr_name(key!("annotation"), element_ref.annotation);
                    }
                    self.start_body();
                    for triplet in &element_ref.indices {
                        self.open_plain("IndexTriplet");
                        for (name, part) in
                            [("Index", &triplet.index), ("Bound", &triplet.bound), ("Stride", &triplet.stride)]
                        {
                            if let Some(expression) = part {
                                self.expression(name, expression);
                            }
                        }
                        self.close("IndexTriplet");
                    }
                    self.close("ArrayElementReference");
                }
            }
        }
        for edge in &reference.edges {
            let id_of = |i: u32| match &reference.vertices[i as usize] {
                VarRefVertex::Symbol(s) => s.id,
                VarRefVertex::ArrayElement(a) => a.id,
            };
            self.open("VariableReferenceEdge");
            self.attr_name(key!("edge_id"), edge.id);
            self.attr_name(key!("source"), id_of(edge.source));
            self.attr_name(key!("target"), id_of(edge.target));
            if !edge.annotation.is_empty() {
                self.attr_name(key!("annotation"), edge.annotation);
            }
            self.end_empty();
        }
    }
}

/// Which attribute set a `VariableReferenceType` element gets, by where it stands.
#[derive(Copy, Clone, PartialEq, Eq)]
enum RefStyle {
    /// An expression vertex or an argument: `vertex_id` and the activity attributes.
    Vertex,
    /// Entries of side-effect lists: activity attributes, no `vertex_id`.
    SideEffect,
    /// The left-hand side of an assignment.
    Lhs { live: bool },
    /// Operands of derivative propagators: only `deriv`.
    Propagator,
}

fn symbol_kind_str(kind: SymbolKind) -> &'static str {
    match kind {
        SymbolKind::Subroutine => "subroutine",
        SymbolKind::Variable => "variable",
        SymbolKind::Pointer => "pointer",
    }
}

pub fn symbol_type_str(ty: SymbolType) -> &'static str {
    match ty {
        SymbolType::Void => "void",
        SymbolType::Integer => "integer",
        SymbolType::Real => "real",
        SymbolType::Complex => "complex",
        SymbolType::Bool => "bool",
        SymbolType::Char => "char",
        SymbolType::String => "string",
        SymbolType::Opaque => "opaque",
    }
}

pub fn shape_str(shape: Shape) -> &'static str {
    match shape {
        Shape::Void => "void",
        Shape::Scalar => "scalar",
        Shape::Vector => "vector",
        Shape::Matrix => "matrix",
        Shape::ThreeTensor => "three_tensor",
        Shape::FourTensor => "four_tensor",
        Shape::FiveTensor => "five_tensor",
        Shape::SixTensor => "six_tensor",
        Shape::SevenTensor => "seven_tensor",
    }
}

fn active_str(active: ActiveUse) -> &'static str {
    match active {
        ActiveUse::Undefined => "undefined",
        ActiveUse::True => "true",
        ActiveUse::False => "false",
    }
}

pub fn boolean_op_str(op: BooleanOp) -> &'static str {
    match op {
        BooleanOp::LessThan => "less_than",
        BooleanOp::LessOrEqual => "less_or_equal",
        BooleanOp::GreaterThan => "greater_than",
        BooleanOp::GreaterOrEqual => "greater_or_equal",
        BooleanOp::Equal => "equal",
        BooleanOp::NotEqual => "not_equal",
        BooleanOp::And => "and",
        BooleanOp::Or => "or",
        BooleanOp::Not => "not",
        BooleanOp::Xor => "xor",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{self, Config};
    use crate::xaif::intrinsics::Catalogue;
    use crate::xaif::{ReadOptions, read};

    /// A head written to a sink a piece at a time ([`write_head_to`]) is the head written into a
    /// buffer that holds text already ([`write_head`]): heads short of a piece and longer than
    /// several, as read and after the tangent (its temporaries are most of a large head).
    #[test]
    fn a_head_drained_in_pieces_is_the_head_written_whole() {
        let options = WriteOptions::default();
        let mut documents = Vec::new();
        for dir in ["examples", "tangent"] {
            let dir = std::fs::read_dir(format!("{}/testdata/{dir}", env!("CARGO_MANIFEST_DIR"))).expect("test data");
            for file in dir.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "xaif")) {
                let bytes = std::fs::read(file.path()).unwrap();
                let Ok(read) = read(&bytes, "test", &ReadOptions::default()) else { continue };
                let mut cg = read.call_graph;
                documents.push(cg.clone());
                if pipeline::tangent(&mut cg, Catalogue::builtin(), &Config::default()).is_ok() {
                    documents.push(cg);
                }
            }
        }
        let mut large = documents.last().expect("a document").clone();
        let scope = large.scopes.iter().map(|(id, _)| id).next_back().expect("a scope");
        for i in 0..3_000 {
            let name = large.names.intern(&format!("padded_{i}"));
            large.add_symbol(Symbol::new(scope, name));
        }
        documents.push(large);
        let mut longest = 0;
        for cg in &documents {
            let mut buffered = b"before".to_vec();
            write_head(cg, &options, &mut buffered);
            let mut drained = Vec::new();
            write_head_to(cg, &options, &mut drained).unwrap();
            assert!(buffered[6..] == drained[..], "written into a buffer and drained alike");
            longest = longest.max(drained.len());
        }
        assert!(longest > 4 * DRAIN_AT, "a head drained in several pieces");
    }

    /// A replacement that repeats another is written as a copy of that one's text: the output
    /// must be what writing each repeated graph out in full gives, byte for byte.
    #[test]
    fn repeated_replacements_are_written_as_their_graphs_would_be() {
        let mut inputs: Vec<_> = ["adjoint", "examples", "tangent"]
            .into_iter()
            .flat_map(|dir| {
                std::fs::read_dir(format!("{}/testdata/{dir}", env!("CARGO_MANIFEST_DIR"))).expect("test data")
            })
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "xaif"))
            .collect();
        inputs.sort();
        let mut repeats = 0;
        for input in inputs {
            let bytes = std::fs::read(&input).expect("readable");
            let Ok(read) = read(&bytes, "test", &ReadOptions::default()) else { continue };
            let mut cg = read.call_graph;
            if pipeline::adjoint(&mut cg, Catalogue::builtin(), &Config::default()).is_err() {
                continue;
            }
            let written = write(&cg, &WriteOptions::default());
            let mut expanded = cg.clone();
            for (_, routine) in expanded.routines.iter_mut() {
                let Routine::ReplacementList(list) = routine else { continue };
                let graphs: Vec<FlowGraph> = list.replacements.iter().map(|r| list.graph_of(r).clone()).collect();
                for (replacement, graph) in list.replacements.iter_mut().zip(graphs) {
                    repeats += usize::from(replacement.repeats.is_some());
                    replacement.graph = graph;
                    replacement.repeats = None;
                }
            }
            assert!(written == write(&expanded, &WriteOptions::default()), "{}", input.display());
        }
        assert!(repeats >= 8, "the test data has repeated replacements ({repeats})");
    }
}
