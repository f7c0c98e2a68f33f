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

use super::dataflow::{Direction, SymbolSet, solve_indexed};

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
#[derive(Clone)]
pub struct Frame {
    pub formals: FxHashMap<SymbolId, u32>,
    local_scopes: FxHashSet<ScopeId>,
}

impl Frame {
    pub fn of(cg: &CallGraph, cfg: &ControlFlowGraph) -> Frame {
        let formals = cfg.arguments.iter().flatten().map(|a| (a.symbol, a.position)).collect();
        // The body scope and every scope below it, found downwards from the body: one visit
        // per scope edge, where climbing from every scope cost the nesting depth per scope
        // (30,000 nested scopes took a minute).
        let mut children: FxHashMap<ScopeId, Vec<ScopeId>> = FxHashMap::default();
        for edge in &cg.scope_edges {
            children.entry(edge.target).or_default().push(edge.source);
        }
        let mut local_scopes = FxHashSet::default();
        let mut pending = vec![cfg.body_scope];
        while let Some(scope) = pending.pop() {
            // The reader guarantees a forest; a scope seen twice is not walked again anyway.
            if local_scopes.insert(scope) {
                pending.extend(children.get(&scope).into_iter().flatten().copied());
            }
        }
        Frame { formals, local_scopes }
    }

    /// A local: not a formal, declared in the routine's body (temporaries included).
    pub fn is_local(&self, cg: &CallGraph, symbol: SymbolId) -> bool {
        !self.formals.contains_key(&symbol) && self.local_scopes.contains(&cg.symbols[symbol].scope)
    }
}

/// A subroutine call as the summaries see it: the routine it names and its variable
/// arguments with a base symbol, (position, variable), in the call's order.
#[derive(Clone, Debug, Default)]
pub struct CallSite {
    pub symbol: Option<SymbolId>,
    pub arguments: Vec<(u32, SymbolId)>,
}

impl CallSite {
    pub fn of(call: &SubroutineCall) -> CallSite {
        CallSite { symbol: call.symbol, arguments: variable_arguments(call).collect() }
    }
}

/// The variable arguments of a call that have a base symbol: (position, variable).
fn variable_arguments(call: &SubroutineCall) -> impl Iterator<Item = (u32, SymbolId)> + '_ {
    call.arguments.iter().filter_map(|argument| match &argument.value {
        ArgumentValue::Variable(reference) => Some((argument.position, reference.base_symbol()?)),
        ArgumentValue::Constant(_) => None,
    })
}

/// One step of a vertex, as far as overwriting goes.
#[derive(Clone, Copy, Debug)]
enum Item {
    /// A variable written (before what may share its storage is added).
    Write(SymbolId),
    /// The call with this index in [`RoutineSummary::calls`].
    Call(u32),
}

/// What the interprocedural summaries (kills, recording contexts, alias partners) need of a
/// routine, without its code: the shape of its control flow graph, per vertex what it writes
/// and which calls it makes, in statement order, and the alias keys its references carry.
/// Built once per routine, it lets a streamed run learn them in a first pass and drop each
/// graph (a few bytes per assignment, against the graph's hundreds); the whole-document path
/// computes the same summaries the same way, so both find the same facts.
#[derive(Clone, Debug, Default)]
pub struct RoutineSummary {
    /// Edges between vertices by arena index.
    edges: Vec<(u32, u32)>,
    exit: Option<u32>,
    /// Vertex `v`'s items are `items[starts[v]..starts[v + 1]]`.
    starts: Vec<u32>,
    items: Vec<Item>,
    /// Every subroutine call, in vertex and statement order.
    pub calls: Vec<CallSite>,
    /// (variable, alias set) of each reference with an alias key, where alias ranges matter.
    alias_keys: Vec<(SymbolId, u32)>,
}

impl RoutineSummary {
    /// `alias_keys`: collect the references' alias keys (only documents whose alias map has
    /// address ranges need them, [`aliases_have_ranges`]).
    pub fn of(cfg: &ControlFlowGraph, alias_keys: bool) -> RoutineSummary {
        let graph = &cfg.graph;
        let index = |v: CfgVertexId| v.into_raw().into_u32();
        let mut summary = RoutineSummary {
            edges: graph.edges.iter().map(|e| (index(e.source), index(e.target))).collect(),
            exit: graph.vertices.iter().find(|(_, v)| matches!(v.kind, CfgVertexKind::Exit)).map(|(id, _)| index(id)),
            starts: Vec::with_capacity(graph.vertices.len() + 1),
            ..RoutineSummary::default()
        };
        let mut keys: FxHashSet<(SymbolId, u32)> = FxHashSet::default();
        let mut key = |r: &VariableReference| {
            if alias_keys && let (Some(set), Some(base)) = (r.alias, r.base_symbol()) {
                keys.insert((base, set.0));
            }
        };
        let key_expression = |e: &Expression, key: &mut dyn FnMut(&VariableReference)| {
            if alias_keys {
                for (_, v) in e.vertices.iter() {
                    if let ExprVertex::Variable(r) = v {
                        key(r);
                    }
                }
            }
        };
        for (_, vertex) in graph.vertices.iter() {
            summary.starts.push(summary.items.len() as u32);
            let items = &mut summary.items;
            match &vertex.kind {
                CfgVertexKind::BasicBlock(block) => {
                    for statement in &block.statements {
                        match statement {
                            Statement::Assignment(a) => {
                                if !a.lhs.deriv
                                    && let Some(base) = a.lhs.base_symbol()
                                {
                                    items.push(Item::Write(base));
                                }
                                key(&a.lhs);
                                key_expression(&a.rhs, &mut key);
                            }
                            Statement::SubroutineCall(call) => {
                                items.push(Item::Call(summary.calls.len() as u32));
                                summary.calls.push(CallSite::of(call));
                                for argument in &call.arguments {
                                    if let ArgumentValue::Variable(r) = &argument.value {
                                        key(r);
                                    }
                                }
                            }
                            Statement::InlinableSubroutineCall(call) => {
                                // Runtime routines (conversions, allocations, pushes and pops)
                                // write through their variable arguments at most.
                                for argument in &call.arguments {
                                    if let ArgumentValue::Variable(reference) = &argument.value
                                        && !reference.deriv
                                        && let Some(base) = reference.base_symbol()
                                    {
                                        items.push(Item::Write(base));
                                    }
                                }
                            }
                            Statement::Marker(_) | Statement::DerivativePropagator(_) => {}
                        }
                    }
                }
                CfgVertexKind::ForLoop(f) => {
                    for a in f.initialization.iter().chain(&f.update) {
                        if let Some(base) = a.lhs.base_symbol() {
                            items.push(Item::Write(base));
                        }
                        key(&a.lhs);
                        key_expression(&a.rhs, &mut key);
                    }
                }
                _ => {}
            }
        }
        summary.starts.push(summary.items.len() as u32);
        summary.alias_keys = keys.into_iter().collect();
        summary.alias_keys.sort_unstable_by_key(|&(s, k)| (s.into_raw().into_u32(), k));
        summary
    }

    fn vertices(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Per vertex (by arena index), what may be written after it ends, up to the routine's
    /// Exit: [`crate::analysis::tbr::RoutineRecording::after`] of the summary.
    pub fn written_after(&self, effects: &Effects) -> Vec<SymbolSet> {
        let edges = self.edges.iter().map(|&(s, t)| (s as usize, t as usize));
        let empty = SymbolSet::default();
        let (before, _) = solve_indexed(
            self.vertices(),
            edges,
            self.exit.map(|e| e as usize),
            Direction::Backward,
            &empty,
            &empty,
            |v, later| {
                let mut fact = later.clone();
                effects.summary_vertex_writes(self, v, &mut fact);
                fact
            },
        );
        before
    }

    /// The items of vertex `vertex` backwards, each call with what the rest of the vertex
    /// after it may write: `visit(call, rest)`.
    pub fn calls_backwards(&self, effects: &Effects, vertex: usize, visit: &mut dyn FnMut(&CallSite, &SymbolSet)) {
        let mut rest = SymbolSet::default();
        for &item in self.items(vertex).iter().rev() {
            if let Item::Call(k) = item {
                visit(&self.calls[k as usize], &rest);
            }
            effects.item_writes(self, item, &mut rest);
        }
    }

    fn items(&self, vertex: usize) -> &[Item] {
        &self.items[self.starts[vertex] as usize..self.starts[vertex + 1] as usize]
    }
}

/// Whether the alias map gives address ranges (that two variables of a frame may share
/// storage); without them no variable has alias partners.
pub fn aliases_have_ranges(cg: &CallGraph) -> bool {
    cg.alias_sets.iter().any(|set| !set.ranges.is_empty())
}

/// The summaries and frames of every routine with a graph, for [`Effects::from_summaries`].
pub fn summarize(cg: &CallGraph) -> (ArenaMap<RoutineId, RoutineSummary>, ArenaMap<RoutineId, Frame>) {
    let alias_keys = aliases_have_ranges(cg);
    let mut summaries = ArenaMap::default();
    let mut frames = ArenaMap::default();
    for (id, cfg) in cg.cfgs() {
        summaries.insert(id, RoutineSummary::of(cfg, alias_keys));
        frames.insert(id, Frame::of(cg, cfg));
    }
    (summaries, frames)
}

/// Kill summaries of every routine with a body.
#[derive(Clone)]
pub struct Effects {
    pub kills: ArenaMap<RoutineId, KillSummary>,
    pub by_symbol: FxHashMap<SymbolId, RoutineId>,
    /// Per variable, the others of its frame the alias map says may share its storage.
    pub partners: FxHashMap<SymbolId, Vec<SymbolId>>,
    /// The frame of every routine with a body, as of the summaries: taken by
    /// `tbr::Recording`, which would otherwise compute each again.
    pub(crate) frames: ArenaMap<RoutineId, Frame>,
    /// The routines callees first (`bottom_up_order`).
    pub(crate) order: Vec<RoutineId>,
}

impl Effects {
    pub fn of(cg: &CallGraph) -> Effects {
        let (summaries, frames) = summarize(cg);
        Effects::from_summaries(cg, &summaries, frames)
    }

    /// The kill summaries from each routine's [`RoutineSummary`] and [`Frame`]; of the routines
    /// themselves, only their heads (symbol, formals, scopes) are read from `cg`.
    pub fn from_summaries(
        cg: &CallGraph,
        summaries: &ArenaMap<RoutineId, RoutineSummary>,
        frames: ArenaMap<RoutineId, Frame>,
    ) -> Effects {
        let by_symbol: FxHashMap<SymbolId, RoutineId> = cg.cfgs().map(|(id, cfg)| (cfg.symbol, id)).collect();
        let partners = alias_partners(cg, summaries);
        // Each routine's callees with a graph, in the order of its calls.
        let callees: Vec<(RoutineId, Vec<RoutineId>)> = summaries
            .iter()
            .map(|(r, s)| (r, s.calls.iter().filter_map(|c| by_symbol.get(&c.symbol?).copied()).collect()))
            .collect();
        let order = super::dataflow::callees_first(&callees);
        let callees: ArenaMap<RoutineId, Vec<RoutineId>> = callees.into_iter().collect();
        let mut effects = Effects { kills: ArenaMap::default(), by_symbol, partners, frames, order: Vec::new() };
        for &r in &order {
            effects.kills.insert(r, KillSummary::default());
        }
        // A summary depends on the routine's own statements and its callees' summaries only:
        // it is computed again only when a callee's changed since (recursion), not once more
        // per round for every routine. Steps count computations.
        let mut computed_at: ArenaMap<RoutineId, usize> = ArenaMap::default();
        let mut changed_at: ArenaMap<RoutineId, usize> = ArenaMap::default();
        let mut step = 0;
        let mut written = SymbolSet::default();
        loop {
            let mut changed = false;
            for &r in &order {
                let Some(summary) = summaries.get(r) else { continue };
                if let Some(&at) = computed_at.get(r)
                    && callees[r].iter().all(|&c| changed_at.get(c).is_none_or(|&ch| ch < at))
                {
                    continue;
                }
                step += 1;
                computed_at.insert(r, step);
                let frame = &effects.frames[r];
                written.clear();
                for item in &summary.items {
                    effects.item_writes(summary, *item, &mut written);
                }
                let mut kill = KillSummary { unknown: written.all_persistent, ..KillSummary::default() };
                for s in written.symbols.iter() {
                    if let Some(&p) = frame.formals.get(&s) {
                        kill.formals.insert(p);
                    } else if !frame.is_local(cg, s) {
                        kill.globals.insert(s);
                    }
                }
                if effects.kills.get(r) != Some(&kill) {
                    effects.kills.insert(r, kill);
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

    /// Adds what one item of a summary may overwrite to `out`.
    fn item_writes(&self, summary: &RoutineSummary, item: Item, out: &mut SymbolSet) {
        match item {
            Item::Write(symbol) => self.write(symbol, out),
            Item::Call(k) => {
                let site = &summary.calls[k as usize];
                self.call_writes(site.symbol, site.arguments.iter().copied(), out);
            }
        }
    }

    /// Adds what vertex `vertex` of a summarized routine may overwrite to `out`.
    pub fn summary_vertex_writes(&self, summary: &RoutineSummary, vertex: usize, out: &mut SymbolSet) {
        for &item in summary.items(vertex) {
            self.item_writes(summary, item, out);
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

    /// Adds what a call of the routine named `symbol` with these variable arguments
    /// (position, variable) may overwrite to `out`: the arguments its callee may write and
    /// the globals it may write (everything it could reach if the document does not define it).
    fn call_writes(
        &self,
        symbol: Option<SymbolId>,
        arguments: impl Iterator<Item = (u32, SymbolId)>,
        out: &mut SymbolSet,
    ) {
        let summary = symbol.and_then(|s| self.by_symbol.get(&s)).and_then(|&r| self.kills.get(r));
        for (position, base) in arguments {
            if summary.is_none_or(|k| k.unknown || k.formals.contains(&position)) {
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
            Statement::SubroutineCall(call) => self.call_writes(call.symbol, variable_arguments(call), out),
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
fn alias_partners(
    cg: &CallGraph,
    summaries: &ArenaMap<RoutineId, RoutineSummary>,
) -> FxHashMap<SymbolId, Vec<SymbolId>> {
    let mut partners: FxHashMap<SymbolId, Vec<SymbolId>> = FxHashMap::default();
    if !aliases_have_ranges(cg) {
        return partners;
    }
    // The alias sets each variable is referenced with.
    let keyed: FxHashSet<(SymbolId, u32)> =
        summaries.values().flat_map(|summary| summary.alias_keys.iter().copied()).collect();
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
        // Every scope the climb passes gets the answer too, so no scope is climbed through
        // twice (deep nesting stays linear). The reader guarantees a forest, so the climb ends.
        let mut climbed = Vec::new();
        for _ in 0..=cg.scopes.len() {
            if let Some(&known) = owner.get(&at) {
                found = known;
                break;
            }
            climbed.push(at);
            if let Some(&r) = bodies.get(&at) {
                found = Some(r);
                break;
            }
            match parent.get(&at) {
                Some(&up) => at = up,
                None => break,
            }
        }
        for passed in climbed {
            owner.insert(passed, found);
        }
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
