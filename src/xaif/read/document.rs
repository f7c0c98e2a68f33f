//! The document and its root: the namespace, the CallGraph's sections in schema order, each
//! routine handed to the streaming driver as it closes, the call graph's edges, and the
//! fix-ups once every routine is known.

use quick_xml::events::BytesStart;
use rustc_hash::{FxHashMap, FxHashSet};

use super::{Elem, Lower, PendingEdge, Result, XAIF_NAMESPACE, fresh_id};
use crate::ir::*;
use crate::xaif::diagnostic::Severity;
use crate::xaif::lexer::Token;

impl<'a> Lower<'a> {
    // ---------------------------------------------------------------- document structure

    pub(super) fn document(&mut self) -> Result<()> {
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
                self.do_keys.index(&self.cg.do_sets, DoSetId);
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
                    self.cg.duud_sets = self.stmt_id_set_map(&child)?;
                    self.duud_keys.index(&self.cg.duud_sets, DuUdSetId);
                }
                "DOSetMap" => {
                    self.cg.do_sets = self.stmt_id_set_map(&child)?;
                    self.do_keys.index(&self.cg.do_sets, DoSetId);
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
