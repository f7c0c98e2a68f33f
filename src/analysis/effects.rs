//! What statements, vertices and whole routines may overwrite: the `Kill` side of the
//! to-be-recorded equations. A routine's summary says which of its formals (by position) and
//! which globals a call may write, computed bottom-up over the call graph (iterated to the
//! fixed point for recursion); a call to a routine the document does not define may write
//! every variable argument and every global.
//!
//! Alias-aware through the front end's alias map: two variables of the same frame (both of one
//! routine's body, or both outliving every routine: common-block members and module variables
//! seen under different names) whose references' address ranges overlap share storage, so
//! writing one may overwrite the other. Formals are left out: their aliasing is the call
//! sites' business (see `tbr`).

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
    /// Per variable, the others of its frame the alias map says may share its storage.
    pub partners: FxHashMap<SymbolId, Vec<SymbolId>>,
    /// The frame of every routine with a body, as of the summaries: taken by
    /// `tbr::Recording`, which would otherwise compute each again.
    pub(crate) frames: ArenaMap<RoutineId, Frame>,
    /// The routines callees first (`bottom_up_order`): `tbr::Recording` walks them too, and
    /// takes them.
    pub(crate) order: Vec<RoutineId>,
}

impl Effects {
    pub fn of(cg: &CallGraph) -> Effects {
        let by_symbol: FxHashMap<SymbolId, RoutineId> = cg.cfgs().map(|(id, cfg)| (cfg.symbol, id)).collect();
        let partners = alias_partners(cg);
        let order = bottom_up_order(cg);
        let mut frames = ArenaMap::default();
        for &r in &order {
            if let Routine::ControlFlowGraph(cfg) = &cg.routines[r] {
                frames.insert(r, Frame::of(cg, cfg));
            }
        }
        let mut effects = Effects { kills: ArenaMap::default(), by_symbol, partners, frames, order: Vec::new() };
        for &r in &order {
            effects.kills.insert(r, KillSummary::default());
        }
        // A summary depends on the routine's own statements and its callees' summaries only:
        // it is computed again only when a callee's changed since (recursion), not once more
        // per round for every routine. Steps count computations.
        let mut callees: ArenaMap<RoutineId, Vec<RoutineId>> = ArenaMap::default();
        for &r in &order {
            if let Routine::ControlFlowGraph(cfg) = &cg.routines[r] {
                callees.insert(r, super::dataflow::calls(&cfg.graph).filter_map(|c| effects.callee(c)).collect());
            }
        }
        let mut computed_at: ArenaMap<RoutineId, usize> = ArenaMap::default();
        let mut changed_at: ArenaMap<RoutineId, usize> = ArenaMap::default();
        let mut step = 0;
        loop {
            let mut changed = false;
            for &r in &order {
                let Routine::ControlFlowGraph(cfg) = &cg.routines[r] else { continue };
                if let Some(&at) = computed_at.get(r)
                    && callees[r].iter().all(|&c| changed_at.get(c).is_none_or(|&ch| ch < at))
                {
                    continue;
                }
                step += 1;
                computed_at.insert(r, step);
                let frame = &effects.frames[r];
                let mut written = SymbolSet::default();
                for (_, vertex) in cfg.graph.vertices.iter() {
                    effects.vertex_writes(cg, vertex, &mut written);
                }
                let mut summary = KillSummary { unknown: written.all_persistent, ..KillSummary::default() };
                for s in written.symbols.iter() {
                    if let Some(&p) = frame.formals.get(&s) {
                        summary.formals.insert(p);
                    } else if !frame.is_local(cg, s) {
                        summary.globals.insert(s);
                    }
                }
                if effects.kills.get(r) != Some(&summary) {
                    effects.kills.insert(r, summary);
                    changed_at.insert(r, step);
                    changed = true;
                }
            }
            if !changed {
                effects.order = order;
                return effects;
            }
        }
    }

    /// Adds `symbol` and what may share its storage to `out`.
    fn write(&self, symbol: SymbolId, out: &mut SymbolSet) {
        out.insert(symbol);
        // Most documents have no overlapping alias ranges: skip the lookup.
        if !self.partners.is_empty()
            && let Some(partners) = self.partners.get(&symbol)
        {
            out.symbols.extend(partners.iter().copied());
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
                    self.write(base, out);
                }
            }
            Statement::SubroutineCall(call) => {
                let summary = self.callee(call).and_then(|r| self.kills.get(r));
                for argument in &call.arguments {
                    let ArgumentValue::Variable(reference) = &argument.value else { continue };
                    let may_write = summary.is_none_or(|k| k.unknown || k.formals.contains(&argument.position));
                    if may_write && let Some(base) = reference.base_symbol() {
                        self.write(base, out);
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
                        self.write(base, out);
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
                        self.write(base, out);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The alias map's may-share-storage relation between variables of the same frame: the ranges
/// of all references to a variable, overlapping another's. Frames: each routine's body scopes,
/// and everything outside every routine.
fn alias_partners(cg: &CallGraph) -> FxHashMap<SymbolId, Vec<SymbolId>> {
    let mut partners: FxHashMap<SymbolId, Vec<SymbolId>> = FxHashMap::default();
    if cg.alias_sets.iter().all(|set| set.ranges.is_empty()) {
        return partners;
    }
    // The alias sets each variable is referenced with.
    let mut keyed: FxHashSet<(SymbolId, u32)> = FxHashSet::default();
    let mut note = |r: &VariableReference| {
        if let (Some(set), Some(base)) = (r.alias, r.base_symbol()) {
            keyed.insert((base, set.0));
        }
    };
    let expression = |e: &Expression, note: &mut dyn FnMut(&VariableReference)| {
        for (_, v) in e.vertices.iter() {
            if let ExprVertex::Variable(r) = v {
                note(r);
            }
        }
    };
    for (_, cfg) in cg.cfgs() {
        for (_, vertex) in cfg.graph.vertices.iter() {
            match &vertex.kind {
                CfgVertexKind::BasicBlock(block) => {
                    for statement in &block.statements {
                        match statement {
                            Statement::Assignment(a) => {
                                note(&a.lhs);
                                expression(&a.rhs, &mut note);
                            }
                            Statement::SubroutineCall(call) => {
                                for argument in &call.arguments {
                                    if let ArgumentValue::Variable(r) = &argument.value {
                                        note(r);
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                }
                CfgVertexKind::ForLoop(f) => {
                    for a in f.initialization.iter().chain(&f.update) {
                        note(&a.lhs);
                        expression(&a.rhs, &mut note);
                    }
                }
                _ => {}
            }
        }
    }
    // The routine whose body each scope belongs to (none: outside every routine).
    let mut parent: FxHashMap<ScopeId, ScopeId> = FxHashMap::default();
    for edge in &cg.scope_edges {
        parent.insert(edge.source, edge.target);
    }
    let bodies: FxHashMap<ScopeId, RoutineId> = cg.cfgs().map(|(id, cfg)| (cfg.body_scope, id)).collect();
    let mut owner: FxHashMap<ScopeId, Option<RoutineId>> = FxHashMap::default();
    let mut owner_of = |scope: ScopeId| -> Option<RoutineId> {
        if let Some(&o) = owner.get(&scope) {
            return o;
        }
        let (mut at, mut found) = (scope, None);
        // The reader guarantees a forest, so the climb ends.
        for _ in 0..=cg.scopes.len() {
            if let Some(&r) = bodies.get(&at) {
                found = Some(r);
                break;
            }
            match parent.get(&at) {
                Some(&up) => at = up,
                None => break,
            }
        }
        owner.insert(scope, found);
        found
    };
    // Formals alias only through their call sites (the same variable passed twice, or a global
    // passed): Fortran forbids writing through a dummy argument associated with another.
    let formals: FxHashSet<SymbolId> =
        cg.cfgs().flat_map(|(_, cfg)| cfg.arguments.iter().flatten().map(|a| a.symbol)).collect();
    // Per frame, the address ranges of its variables; overlaps found by a sweep over starts.
    let mut frames: FxHashMap<Option<RoutineId>, Vec<(u64, u64, SymbolId)>> = FxHashMap::default();
    let mut keyed: Vec<(SymbolId, u32)> = keyed.into_iter().collect();
    keyed.sort_unstable_by_key(|&(s, k)| (s.into_raw().into_u32(), k));
    for (symbol, set) in keyed {
        if formals.contains(&symbol) {
            continue;
        }
        let Some(set) = cg.alias_sets.get(set as usize) else { continue };
        let frame = owner_of(cg.symbols[symbol].scope);
        for range in &set.ranges {
            frames.entry(frame).or_default().push((range.from, range.to, symbol));
        }
    }
    let mut pairs: FxHashSet<(SymbolId, SymbolId)> = FxHashSet::default();
    for (_, mut ranges) in frames {
        ranges.sort_unstable_by_key(|&(from, to, s)| (from, to, s.into_raw().into_u32()));
        let mut open: Vec<(u64, SymbolId)> = Vec::new();
        for (from, to, symbol) in ranges {
            open.retain(|&(end, _)| end >= from);
            for &(_, other) in &open {
                if other != symbol {
                    pairs.insert((symbol, other));
                    pairs.insert((other, symbol));
                }
            }
            open.push((to, symbol));
        }
    }
    for (a, b) in pairs {
        partners.entry(a).or_default().push(b);
    }
    for list in partners.values_mut() {
        list.sort_unstable_by_key(|s| s.into_raw().into_u32());
    }
    partners
}
