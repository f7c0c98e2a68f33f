//! To-be-recorded analysis for an adjoint that recomputes partials in its reverse sweep: a
//! value read at some point of the forward sweep must be recorded (pushed) if anything may
//! overwrite it between that point and the moment the reverse sweep reads it again; otherwise
//! the reverse sweep can read the variable itself. (The paper's Req/Kill equations ask the
//! same question from the other end: a variable required by the adjoint and killed later.)
//!
//! Between a read and its adjoint lie, in a split reversal (the stricter template, which our
//! output must serve as well as the joint one):
//! - the rest of the block and every vertex reachable after it in the routine (a backward
//!   data-flow problem over the control flow graph: "written from here to Exit");
//! - everything the callers run after the call returns, up to the end of the forward sweep
//!   (a top-down problem over the call graph: a formal is overwritten when its actual is, a
//!   global when any caller's continuation writes it);
//! - the end of the activation: locals and temporaries are fresh in the adjoint's own
//!   activation, so they are always recorded — except what the reversal itself restores
//!   (the loop variables and quasi-constants of explicit loop nests, see `adjoint::address`).
//!
//! Formals that may alias each other or a global (some call passes the same variable twice,
//! or a global) are treated as overwritten whenever anything is.

use la_arena::ArenaMap;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::ir::*;

use super::dataflow::{Direction, Lattice, SymbolSet, solve};
use super::effects::{CallSite, Effects, Frame, RoutineSummary};

/// The recording facts of one routine.
pub struct RoutineRecording {
    pub frame: Frame,
    /// Per vertex: what may be written after it ends, up to the routine's Exit.
    pub after: ArenaMap<CfgVertexId, SymbolSet>,
    /// Formals and globals that may be overwritten after the routine returns, before its
    /// adjoint runs.
    pub outside: SymbolSet,
    /// Some call passes the routine aliased arguments.
    pub aliased: bool,
    /// The calls it makes to routines with a body: callee and (position, variable) of each
    /// variable argument.
    pub calls: Vec<(RoutineId, Vec<(u32, SymbolId)>)>,
}

/// The recording facts of every routine with a body.
pub struct Recording {
    pub effects: Effects,
    /// The routines whose facts are added ([`Recording::add_routine`]).
    pub routines: ArenaMap<RoutineId, RoutineRecording>,
    /// What the top-down part found for every routine with a body.
    pub contexts: Contexts,
    /// (caller, callee, local actual) of every call that passes a restorable local.
    pub local_actuals: Vec<(RoutineId, RoutineId, LocalActual)>,
}

/// Per routine, what its callers may overwrite after it returns and before its adjoint runs
/// (`RoutineRecording::outside`), and whether some call passes it aliased arguments: the
/// top-down half of the analysis, found from the routines' summaries alone.
pub type Contexts = ArenaMap<RoutineId, (SymbolSet, bool)>;

impl Recording {
    pub fn of(cg: &CallGraph) -> Recording {
        let (summaries, frames) = super::effects::summarize(cg);
        let effects = Effects::from_summaries(cg, &summaries, frames);
        let contexts = contexts(cg, &effects, &summaries);
        drop(summaries);
        let mut recording = Recording::from_contexts(effects, contexts);
        let order = recording.effects.order.clone();
        for &r in &order {
            if let Routine::ControlFlowGraph(cfg) = &cg.routines[r] {
                recording.add_routine(cg, r, cfg);
            }
        }
        recording.local_actuals.sort_unstable_by_key(|(caller, callee, a)| (*caller, *callee, a.local, a.position));
        recording.local_actuals.dedup_by_key(|(caller, callee, a)| (*caller, *callee, a.local, a.position));
        recording
    }

    /// A recording with no routine's facts yet ([`Recording::add_routine`] adds them): what a
    /// streamed run knows after its first pass.
    pub fn from_contexts(effects: Effects, contexts: Contexts) -> Recording {
        Recording { effects, routines: ArenaMap::default(), contexts, local_actuals: Vec::new() }
    }

    /// The interprocedural facts alone, without the routines added: what a worker that
    /// reverses routines apart starts from.
    pub fn copy_facts(&self) -> Recording {
        Recording::from_contexts(self.effects.clone(), self.contexts.clone())
    }

    /// Adds the facts of routine `r`, whose graph is `cfg`, and the restorable locals its calls
    /// pass: per vertex what may be written after it (from the graph itself, so its ids are
    /// this graph's), with the context the summaries found.
    pub fn add_routine(&mut self, cg: &CallGraph, r: RoutineId, cfg: &ControlFlowGraph) {
        let frame = self.effects.frames.remove(r).unwrap_or_else(|| Frame::of(cg, cfg));
        let effects = &self.effects;
        let writes: Vec<SymbolSet> = cfg
            .graph
            .vertices
            .iter()
            .map(|(_, v)| {
                let mut w = SymbolSet::default();
                effects.vertex_writes(cg, v, &mut w);
                w
            })
            .collect();
        let solution =
            solve(&cfg.graph, Direction::Backward, &SymbolSet::default(), &SymbolSet::default(), |v, later| {
                let mut fact = later.clone();
                fact.join(&writes[v.into_raw().into_u32() as usize]);
                fact
            });
        let (outside, aliased) = self.contexts.get(r).cloned().unwrap_or_default();
        let facts = RoutineRecording {
            frame,
            after: solution.before,
            outside,
            aliased,
            calls: super::dataflow::calls(&cfg.graph)
                .filter_map(|call| Some((effects.callee(call)?, CallSite::of(call).arguments)))
                .collect(),
        };
        // The restorable locals passed to callees that the rest of the caller leaves alone.
        for (vertex_id, vertex) in cfg.graph.vertices.iter() {
            let CfgVertexKind::BasicBlock(block) = &vertex.kind else { continue };
            let mut rest_of_block = SymbolSet::default();
            for statement in block.statements.iter().rev() {
                let Statement::SubroutineCall(call) = statement else {
                    self.effects.statement_writes(statement, &mut rest_of_block);
                    continue;
                };
                let mut later = facts.after[vertex_id].clone();
                later.join(&rest_of_block);
                self.effects.statement_writes(statement, &mut rest_of_block);
                let Some(callee) = self.effects.callee(call) else { continue };
                let Routine::ControlFlowGraph(callee_cfg) = &cg.routines[callee] else { continue };
                later.join(&facts.outside);
                if facts.aliased {
                    later.all_persistent = true;
                }
                let mut candidates = Vec::new();
                let site = CallSite::of(call);
                callee_context(cg, &facts.frame, facts.aliased, &site, callee_cfg, &later, Some(&mut candidates));
                self.local_actuals.extend(candidates.into_iter().map(|candidate| (r, callee, candidate)));
            }
        }
        self.routines.insert(r, facts);
    }

    /// The facts of routine `r` (added before), which its reversal has no more use for.
    pub fn remove_routine(&mut self, r: RoutineId) {
        self.routines.remove(r);
        self.local_actuals.retain(|&(caller, _, _)| caller != r);
    }

    /// The locals each routine must restore where its reverse sweep begins because a callee's
    /// reverse sweep reads the formal they were passed to where it stands, given the non-local
    /// symbols each routine's reverse sweep reads where they stand (`direct`). A formal read
    /// so by a callee counts as read so by its caller, up the call chain.
    pub fn locals_callers_restore(
        &self,
        cg: &CallGraph,
        direct: &mut ArenaMap<RoutineId, FxHashSet<SymbolId>>,
    ) -> ArenaMap<RoutineId, Vec<SymbolId>> {
        let callers: Vec<RoutineId> = self.routines.iter().map(|(r, _)| r).collect();
        // Formals passed on: read where they stand if the callee reads its formal so.
        while callers.iter().fold(false, |changed, &caller| self.pass_direct_reads_up(cg, caller, direct) | changed) {}
        let mut restores: ArenaMap<RoutineId, Vec<SymbolId>> = ArenaMap::default();
        for &caller in &callers {
            let locals = self.restores_of(cg, caller, direct);
            if !locals.is_empty() {
                restores.insert(caller, locals);
            }
        }
        restores
    }

    /// Adds to `direct[caller]` the formals of `caller` it passes to a callee's formal that the
    /// callee's reverse sweep reads where it stands; whether that added any. Once every callee's
    /// set is final (callees first, no recursion), one call per routine is the fixed point.
    pub fn pass_direct_reads_up(
        &self,
        cg: &CallGraph,
        caller: RoutineId,
        direct: &mut ArenaMap<RoutineId, FxHashSet<SymbolId>>,
    ) -> bool {
        let Some(facts) = self.routines.get(caller) else { return false };
        let mut changed = false;
        for (callee, arguments) in &facts.calls {
            for &(position, base) in arguments {
                if facts.frame.formals.contains_key(&base) && reads_formal_directly(cg, direct, *callee, position) {
                    if direct.get(caller).is_none() {
                        direct.insert(caller, FxHashSet::default());
                    }
                    changed |= direct[caller].insert(base);
                }
            }
        }
        changed
    }

    /// The locals `caller` must restore where its reverse sweep begins: those it passes to a
    /// callee's formal that the callee's reverse sweep reads where it stands.
    pub fn restores_of(
        &self,
        cg: &CallGraph,
        caller: RoutineId,
        direct: &ArenaMap<RoutineId, FxHashSet<SymbolId>>,
    ) -> Vec<SymbolId> {
        self.local_actuals
            .iter()
            .filter(|&&(c, callee, LocalActual { position, .. })| {
                c == caller && reads_formal_directly(cg, direct, callee, position)
            })
            .map(|&(_, _, actual)| actual.local)
            .collect()
    }
}

/// A formal of `caller` passed at `position` to `callee`: what passing direct reads up the
/// call chain needs of a routine's facts ([`Recording::formals_passed`]), kept by a streamed run
/// after the facts themselves are gone.
#[derive(Clone, Copy, Debug)]
pub struct FormalPassed {
    pub caller: RoutineId,
    pub callee: RoutineId,
    pub position: u32,
    pub formal: SymbolId,
}

impl Recording {
    /// Appends to `into` the formals routine `caller` (its facts added) passes to its callees.
    pub fn formals_passed(&self, caller: RoutineId, into: &mut Vec<FormalPassed>) {
        let Some(facts) = self.routines.get(caller) else { return };
        for (callee, arguments) in &facts.calls {
            for &(position, formal) in arguments {
                if facts.frame.formals.contains_key(&formal) {
                    into.push(FormalPassed { caller, callee: *callee, position, formal });
                }
            }
        }
    }

    /// The restorable locals `caller`'s calls pass, by callee (what [`Recording::restores_of`]
    /// chooses from), kept by a streamed run after the routine's facts are gone.
    pub fn local_actuals_of(&self, caller: RoutineId) -> Vec<(RoutineId, LocalActual)> {
        self.local_actuals
            .iter()
            .filter(|(c, _, _)| *c == caller)
            .map(|&(_, callee, actual)| (callee, actual))
            .collect()
    }
}

/// [`Recording::pass_direct_reads_up`] from the formals callers pass on (their
/// [`Recording::formals_passed`]), once their facts are gone: one pass over `passed`; whether
/// it added a read.
pub fn pass_direct_reads_up_from(
    cg: &CallGraph,
    passed: &[FormalPassed],
    direct: &mut ArenaMap<RoutineId, FxHashSet<SymbolId>>,
) -> bool {
    let mut changed = false;
    for p in passed {
        if reads_formal_directly(cg, direct, p.callee, p.position) {
            if direct.get(p.caller).is_none() {
                direct.insert(p.caller, FxHashSet::default());
            }
            changed |= direct[p.caller].insert(p.formal);
        }
    }
    changed
}

/// [`Recording::restores_of`] from `caller`'s [`Recording::local_actuals_of`].
pub fn restored_actuals(
    cg: &CallGraph,
    actuals: &[(RoutineId, LocalActual)],
    direct: &ArenaMap<RoutineId, FxHashSet<SymbolId>>,
) -> Vec<SymbolId> {
    actuals
        .iter()
        .filter(|&&(callee, LocalActual { position, .. })| reads_formal_directly(cg, direct, callee, position))
        .map(|&(_, actual)| actual.local)
        .collect()
}

/// [`Recording::pass_direct_reads_up`] for every routine at once, to the fixed point, from the
/// formals each passes on (`passed`): the first half of [`Recording::locals_callers_restore`]
/// for a streamed run, which no longer has every routine's facts at hand.
pub fn pass_direct_reads_up_all(
    cg: &CallGraph,
    passed: &[FormalPassed],
    direct: &mut ArenaMap<RoutineId, FxHashSet<SymbolId>>,
) {
    while pass_direct_reads_up_from(cg, passed, direct) {}
}

/// Whether the reverse sweep of `callee` reads its formal at `position` where it stands.
/// (The routines may be replacement lists by now: their formals are the same.)
fn reads_formal_directly(
    cg: &CallGraph,
    direct: &ArenaMap<RoutineId, FxHashSet<SymbolId>>,
    callee: RoutineId,
    position: u32,
) -> bool {
    let arguments = match &cg.routines[callee] {
        Routine::ControlFlowGraph(cfg) => &cfg.arguments,
        Routine::ReplacementList(list) => &list.arguments,
    };
    let formal = arguments.iter().flatten().find(|a| a.position == position).map(|a| a.symbol);
    formal.is_some_and(|f| direct.get(callee).is_some_and(|d| d.contains(&f)))
}

/// The top-down part over the routines' summaries: callers first, repeated until nothing
/// changes (recursion). What a caller may write after a call returns (the rest of its block,
/// what is reachable after the block, its own context) reaches the callee's formals and globals.
pub fn contexts(cg: &CallGraph, effects: &Effects, summaries: &ArenaMap<RoutineId, RoutineSummary>) -> Contexts {
    let mut facts: Contexts = ArenaMap::default();
    let mut after: ArenaMap<RoutineId, Vec<SymbolSet>> = ArenaMap::default();
    for &r in &effects.order {
        if let Some(summary) = summaries.get(r) {
            facts.insert(r, (SymbolSet::default(), false));
            // Only calls ask what is written after a vertex.
            let calls = summary.calls.iter().any(|c| c.symbol.is_some_and(|s| effects.by_symbol.contains_key(&s)));
            after.insert(r, if calls { summary.written_after(effects) } else { Vec::new() });
        }
    }
    loop {
        let mut changed = false;
        for &caller in effects.order.iter().rev() {
            let (Some(summary), Some(frame)) = (summaries.get(caller), effects.frames.get(caller)) else { continue };
            let (caller_outside, caller_aliased) = facts[caller].clone();
            let mut updates: Vec<(RoutineId, SymbolSet, bool)> = Vec::new();
            for (vertex, written_after) in after[caller].iter().enumerate() {
                summary.calls_backwards(effects, vertex, &mut |site, rest_of_block| {
                    let Some(callee) = site.symbol.and_then(|s| effects.by_symbol.get(&s).copied()) else { return };
                    let Routine::ControlFlowGraph(callee_cfg) = &cg.routines[callee] else { return };
                    // What the caller may write after this call returns.
                    let mut later = written_after.clone();
                    later.join(rest_of_block);
                    later.join(&caller_outside);
                    if caller_aliased {
                        later.all_persistent = true;
                    }
                    let (outside, aliased) = callee_context(cg, frame, caller_aliased, site, callee_cfg, &later, None);
                    updates.push((callee, outside, aliased));
                });
            }
            for (callee, outside, aliased) in updates {
                let Some(fact) = facts.get_mut(callee) else { continue };
                changed |= fact.0.join(&outside);
                if aliased && !fact.1 {
                    fact.1 = true;
                    changed = true;
                }
            }
        }
        if !changed {
            return facts;
        }
    }
}

/// A local of a caller passed to a callee's formal that the caller's continuation does not
/// overwrite: the formal is as good as unchanged for the callee's reverse sweep if the caller
/// restores the local where its own reverse sweep begins.
#[derive(Clone, Copy, Debug)]
pub struct LocalActual {
    pub local: SymbolId,
    pub position: u32,
}

/// What one call site contributes to its callee's context: the callee's formals and globals
/// the caller may overwrite after it returns, and whether the call aliases arguments.
fn callee_context(
    cg: &CallGraph,
    caller: &Frame,
    caller_aliased: bool,
    call: &CallSite,
    callee: &ControlFlowGraph,
    later: &SymbolSet,
    mut candidates: Option<&mut Vec<LocalActual>>,
) -> (SymbolSet, bool) {
    let mut outside = SymbolSet { all_persistent: later.all_persistent, ..SymbolSet::default() };
    let mut aliased = false;
    let formal_at: FxHashMap<u32, SymbolId> =
        callee.arguments.iter().flatten().map(|a| (a.position, a.symbol)).collect();
    let mut bases: Vec<SymbolId> = Vec::new();
    for &(position, base) in &call.arguments {
        let Some(&formal) = formal_at.get(&position) else { continue };
        if bases.contains(&base) {
            aliased = true;
        }
        bases.push(base);
        let is_formal = caller.formals.contains_key(&base);
        let local = caller.is_local(cg, base);
        if !local && !is_formal {
            // A global passed by reference may alias the callee's own use of it.
            aliased = true;
        }
        if is_formal && caller_aliased {
            aliased = true;
        }
        // A local of the caller is gone (fresh) when the caller's adjoint activation calls
        // the callee's adjoint, unless the caller restores it where its reverse sweep begins
        // (possible when its continuation leaves it alone: see `LocalActual`); anything else
        // is overwritten if the caller's continuation may write it.
        if local {
            if restorable(cg, base) && !later.contains(base, false) {
                if let Some(candidates) = candidates.as_mut() {
                    candidates.push(LocalActual { local: base, position });
                }
            } else {
                outside.insert(formal);
            }
        } else if later.contains(base, true) {
            outside.insert(formal);
        }
    }
    for s in later.symbols.iter() {
        if !caller.formals.contains_key(&s) && !caller.is_local(cg, s) {
            outside.insert(s);
        }
    }
    (outside, aliased)
}

/// The last statement of a block that may write each symbol: answers "is it written at or
/// after position k" in constant time.
pub struct BlockWrites {
    last: FxHashMap<SymbolId, usize>,
    /// The last statement that may write any global (a call of unknown effect).
    last_unknown: Option<usize>,
}

impl BlockWrites {
    pub fn of(effects: &Effects, statements: &[Statement]) -> BlockWrites {
        let mut last = FxHashMap::default();
        let mut last_unknown = None;
        let mut written = SymbolSet::default();
        for (k, statement) in statements.iter().enumerate() {
            written.clear();
            effects.statement_writes(statement, &mut written);
            for s in written.symbols.iter() {
                last.insert(s, k);
            }
            if written.all_persistent {
                last_unknown = Some(k);
            }
        }
        BlockWrites { last, last_unknown }
    }

    fn written_from(&self, symbol: SymbolId, persistent: bool, k: usize) -> bool {
        self.last.get(&symbol).is_some_and(|&p| p >= k) || (persistent && self.last_unknown.is_some_and(|p| p >= k))
    }
}

/// A local the forward sweep can push once at its end and the reverse sweep pop back: a scalar
/// real or integer.
pub fn restorable(cg: &CallGraph, symbol: SymbolId) -> bool {
    let s = &cg.symbols[symbol];
    s.shape == Shape::Scalar && matches!(s.ty, SymbolType::Real | SymbolType::Integer) && !s.pointer
}

/// What the reverse sweep does to see a value the forward sweep read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// Read the variable itself: nothing overwrites it in between.
    Direct,
    /// A local nothing overwrites before the routine returns: pushed once at the end of the
    /// forward sweep and popped back where the reverse sweep begins (its activation's locals
    /// are fresh in a split reversal).
    AtExit,
    /// Push it where it is read.
    Tape,
}

impl RoutineRecording {
    /// How the reverse sweep of statement `k` of `block` sees the value `symbol` has where that
    /// statement starts; `restored` are the variables the reversal restores in this block.
    pub fn record(
        &self,
        cg: &CallGraph,
        block: CfgVertexId,
        writes: &BlockWrites,
        k: usize,
        symbol: SymbolId,
        restored: &[SymbolId],
    ) -> Record {
        if restored.contains(&symbol) {
            return Record::Direct;
        }
        let overwritten_here = writes.written_from(symbol, true, k)
            || self.after.get(block).is_none_or(|after| after.contains(symbol, true));
        if self.frame.is_local(cg, symbol) {
            return if restorable(cg, symbol) && !overwritten_here { Record::AtExit } else { Record::Tape };
        }
        if overwritten_here || self.aliased || self.outside.contains(symbol, true) {
            Record::Tape
        } else {
            Record::Direct
        }
    }

    /// Whether the value must be pushed where it is read (see [`Self::record`]).
    pub fn must_record(
        &self,
        cg: &CallGraph,
        block: CfgVertexId,
        writes: &BlockWrites,
        k: usize,
        symbol: SymbolId,
        restored: &[SymbolId],
    ) -> bool {
        self.record(cg, block, writes, k, symbol, restored) == Record::Tape
    }
}
