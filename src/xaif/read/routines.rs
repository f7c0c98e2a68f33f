//! Routines (control flow graphs and replacement lists), their argument and side-effect
//! lists, and the control flow graphs' vertices and edges.

use std::borrow::Cow;

use rustc_hash::{FxHashMap, FxHashSet};

use super::{Elem, Lower, PendingEdge, Result, fresh_id};
use crate::ir::*;
use crate::xaif::check::{self, FlowSite};

impl<'a> Lower<'a> {
    // ---------------------------------------------------------------- routines

    pub(super) fn control_flow_graph(&mut self, elem: Elem<'a>) -> Result<(ControlFlowGraph, usize)> {
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

    pub(super) fn replacement_list(&mut self, elem: Elem<'a>) -> Result<(ReplacementList, usize)> {
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
