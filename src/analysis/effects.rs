//! What statements, vertices and whole routines may overwrite: the `Kill` side of the
//! to-be-recorded equations. A routine's summary says which of its formals (by position) and
//! which globals a call may write, computed bottom-up over the call graph (iterated to the
//! fixed point for recursion); a call to a routine the document does not define may write
//! every variable argument and every global.

use la_arena::ArenaMap;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::ir::*;

use super::dataflow::{SymbolSet, bottom_up_order};

/// What one call of a routine may overwrite, in the callee's terms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KillSummary {
    /// Positions of the formals it may write.
    pub formals: FxHashSet<u32>,
    /// Globals (symbols of no routine's body) it may write.
    pub globals: FxHashSet<SymbolId>,
    /// It may write any global (it calls a routine without a body here).
    pub unknown: bool,
}

/// Where a routine's symbols live, for telling its locals (gone when it returns, and fresh in
/// the adjoint's activation of a split reversal) from what outlives it.
pub struct Frame {
    pub formals: FxHashMap<SymbolId, u32>,
    local_scopes: FxHashSet<ScopeId>,
}

impl Frame {
    pub fn of(cg: &CallGraph, cfg: &ControlFlowGraph) -> Frame {
        let formals = cfg.arguments.iter().flatten().map(|a| (a.symbol, a.position)).collect();
        // The body scope and every scope below it.
        let mut parent: FxHashMap<ScopeId, ScopeId> = FxHashMap::default();
        for edge in &cg.scope_edges {
            parent.insert(edge.source, edge.target);
        }
        let mut local_scopes = FxHashSet::default();
        for (scope, _) in cg.scopes.iter() {
            let mut at = scope;
            // The reader guarantees a forest, so each climb ends.
            loop {
                if at == cfg.body_scope {
                    local_scopes.insert(scope);
                    break;
                }
                match parent.get(&at) {
                    Some(&up) => at = up,
                    None => break,
                }
            }
        }
        Frame { formals, local_scopes }
    }

    /// A local: not a formal, declared in the routine's body (temporaries included).
    pub fn is_local(&self, cg: &CallGraph, symbol: SymbolId) -> bool {
        !self.formals.contains_key(&symbol) && self.local_scopes.contains(&cg.symbols[symbol].scope)
    }
}

/// Kill summaries of every routine with a body.
pub struct Effects {
    pub kills: ArenaMap<RoutineId, KillSummary>,
    pub by_symbol: FxHashMap<SymbolId, RoutineId>,
}

impl Effects {
    pub fn of(cg: &CallGraph) -> Effects {
        let by_symbol: FxHashMap<SymbolId, RoutineId> = cg.cfgs().map(|(id, cfg)| (cfg.symbol, id)).collect();
        let mut effects = Effects { kills: ArenaMap::default(), by_symbol };
        let order = bottom_up_order(cg);
        for &r in &order {
            effects.kills.insert(r, KillSummary::default());
        }
        let frames: FxHashMap<RoutineId, Frame> = order
            .iter()
            .filter_map(|&r| match &cg.routines[r] {
                Routine::ControlFlowGraph(cfg) => Some((r, Frame::of(cg, cfg))),
                Routine::ReplacementList(_) => None,
            })
            .collect();
        loop {
            let mut changed = false;
            for &r in &order {
                let Routine::ControlFlowGraph(cfg) = &cg.routines[r] else { continue };
                let frame = &frames[&r];
                let mut written = SymbolSet::default();
                for (_, vertex) in cfg.graph.vertices.iter() {
                    effects.vertex_writes(cg, vertex, &mut written);
                }
                let mut summary = KillSummary { unknown: written.all_persistent, ..KillSummary::default() };
                for &s in &written.symbols {
                    if let Some(&p) = frame.formals.get(&s) {
                        summary.formals.insert(p);
                    } else if !frame.is_local(cg, s) {
                        summary.globals.insert(s);
                    }
                }
                if effects.kills.get(r) != Some(&summary) {
                    effects.kills.insert(r, summary);
                    changed = true;
                }
            }
            if !changed {
                return effects;
            }
        }
    }

    /// The routine a call runs, if the document defines it.
    pub fn callee(&self, call: &SubroutineCall) -> Option<RoutineId> {
        call.symbol.and_then(|s| self.by_symbol.get(&s).copied())
    }

    /// Adds what `statement` may overwrite (values, not derivative components) to `out`.
    pub fn statement_writes(&self, statement: &Statement, out: &mut SymbolSet) {
        match statement {
            Statement::Assignment(a) => {
                if !a.lhs.deriv
                    && let Some(base) = a.lhs.base_symbol()
                {
                    out.insert(base);
                }
            }
            Statement::SubroutineCall(call) => {
                let summary = self.callee(call).and_then(|r| self.kills.get(r));
                for argument in &call.arguments {
                    let ArgumentValue::Variable(reference) = &argument.value else { continue };
                    let may_write = summary.is_none_or(|k| k.unknown || k.formals.contains(&argument.position));
                    if may_write && let Some(base) = reference.base_symbol() {
                        out.insert(base);
                    }
                }
                match summary {
                    Some(k) => {
                        out.symbols.extend(k.globals.iter().copied());
                        out.all_persistent |= k.unknown;
                    }
                    None => out.all_persistent = true,
                }
            }
            Statement::InlinableSubroutineCall(call) => {
                // Runtime routines (conversions, allocations, pushes and pops) write through
                // their variable arguments at most.
                for argument in &call.arguments {
                    if let ArgumentValue::Variable(reference) = &argument.value
                        && !reference.deriv
                        && let Some(base) = reference.base_symbol()
                    {
                        out.insert(base);
                    }
                }
            }
            Statement::Marker(_) | Statement::DerivativePropagator(_) => {}
        }
    }

    /// Adds what a control flow vertex may overwrite to `out`: a block's statements, a loop's
    /// initialization and update.
    pub fn vertex_writes(&self, _cg: &CallGraph, vertex: &CfgVertex, out: &mut SymbolSet) {
        match &vertex.kind {
            CfgVertexKind::BasicBlock(block) => {
                for statement in &block.statements {
                    self.statement_writes(statement, out);
                }
            }
            CfgVertexKind::ForLoop(f) => {
                for a in f.initialization.iter().chain(&f.update) {
                    if let Some(base) = a.lhs.base_symbol() {
                        out.insert(base);
                    }
                }
            }
            _ => {}
        }
    }
}
