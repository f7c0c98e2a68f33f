//! Linearity analysis (Strout and Hovland): for every ordered pair of variables, whether the
//! first depends on the second not at all, linearly (through additions, subtractions and
//! scalings by constants along every chain) or nonlinearly. A forward data-flow problem whose
//! facts map each variable to the variables it depends on and how; an assignment `x = e`
//! replaces the facts of `x` (of a whole scalar; an array element adds to those of its array)
//! by those of `e`, where a variable `v` read contributes itself (linearly) and everything it
//! depends on. Calls apply their callee's summary (what each formal and global depends on when
//! it returns), computed bottom-up over the call graph.
//!
//! Uses: a statement all of whose partials are constants needs nothing on the adjoint's tape;
//! a loop none of whose carried variables depends on itself nonlinearly may have its adjoint
//! fused with the forward computation.

use std::collections::BTreeMap;

use la_arena::ArenaMap;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::ir::*;
use crate::xaif::intrinsics::{Catalogue, PartialExpr, PartialKind};

use super::dataflow::{Direction, Lattice, bottom_up_order, solve};
use super::effects::{Effects, Frame};

/// How one variable depends on another (no entry: not at all).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dependence {
    Linear,
    Nonlinear,
}

/// What each variable depends on, and how.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dependences(pub FxHashMap<SymbolId, FxHashMap<SymbolId, Dependence>>);

impl Lattice for Dependences {
    fn join(&mut self, other: &Self) -> bool {
        let mut grew = false;
        for (x, deps) in &other.0 {
            let mine = self.0.entry(*x).or_default();
            for (v, class) in deps {
                match mine.get(v) {
                    Some(old) if old >= class => {}
                    _ => {
                        mine.insert(*v, *class);
                        grew = true;
                    }
                }
            }
        }
        grew
    }
}

type Deps = FxHashMap<SymbolId, Dependence>;

fn add(into: &mut Deps, v: SymbolId, class: Dependence) {
    let slot = into.entry(v).or_insert(class);
    *slot = (*slot).max(class);
}

fn raise(deps: &Deps) -> Deps {
    deps.keys().map(|&v| (v, Dependence::Nonlinear)).collect()
}

/// A formal (by position) or a global: what a summary speaks of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Place {
    Formal(u32),
    Global(SymbolId),
}

/// What each formal and global may depend on when the routine returns.
pub type Summary = FxHashMap<Place, FxHashMap<Place, Dependence>>;

/// The facts of one routine.
pub struct RoutineLinearity {
    /// At the routine's Exit: what each variable depends on.
    pub at_exit: Dependences,
    /// Every dependence that holds at some point of the routine (the join of the facts after
    /// every statement): what activity analysis follows.
    pub ever: Dependences,
    /// Per loop header: whether its adjoint could be fused with the forward computation, and
    /// the carried variables that depend on themselves nonlinearly.
    pub loops: Vec<LoopFusion>,
    /// Assignments whose every partial is a constant (nothing to tape for them).
    pub linear_statements: usize,
    pub statements: usize,
}

#[derive(Clone, Debug)]
pub struct LoopFusion {
    pub header: CfgVertexId,
    pub fusable: bool,
    pub nonlinear_carried: Vec<SymbolId>,
}

pub struct Linearity {
    pub routines: ArenaMap<RoutineId, RoutineLinearity>,
    pub summaries: ArenaMap<RoutineId, Summary>,
}

impl Linearity {
    pub fn of(cg: &CallGraph, catalogue: &Catalogue, effects: &Effects) -> Linearity {
        let order = bottom_up_order(cg);
        let mut summaries: ArenaMap<RoutineId, Summary> = ArenaMap::default();
        // Summaries first (iterated for recursion), then the facts with the final summaries.
        for _round in 0..8 {
            let mut changed = false;
            for &r in &order {
                let Routine::ControlFlowGraph(cfg) = &cg.routines[r] else { continue };
                let analysis = Analysis { cg, catalogue, effects, summaries: &summaries };
                let solution = analysis.solve(cfg);
                let summary = summarize(cg, cfg, &solution.1);
                if summaries.get(r) != Some(&summary) {
                    summaries.insert(r, summary);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut routines = ArenaMap::default();
        for &r in &order {
            let Routine::ControlFlowGraph(cfg) = &cg.routines[r] else { continue };
            let analysis = Analysis { cg, catalogue, effects, summaries: &summaries };
            let (before, at_exit) = analysis.solve(cfg);
            let loops = loop_fusion(cg, cfg, effects, &before);
            let (mut linear_statements, mut statements) = (0, 0);
            for (_, vertex) in cfg.graph.vertices.iter() {
                let CfgVertexKind::BasicBlock(block) = &vertex.kind else { continue };
                for statement in &block.statements {
                    if let Statement::Assignment(a) = statement {
                        statements += 1;
                        linear_statements += usize::from(analysis.constant_partials(&a.rhs));
                    }
                }
            }
            let mut ever = at_exit.clone();
            for (id, vertex) in cfg.graph.vertices.iter() {
                let Some(start) = before.get(id) else { continue };
                ever.join(start);
                let mut state = start.clone();
                match &vertex.kind {
                    CfgVertexKind::BasicBlock(block) => {
                        for statement in &block.statements {
                            analysis.statement(cfg, statement, &mut state);
                            ever.join(&state);
                        }
                    }
                    CfgVertexKind::ForLoop(f) => {
                        for a in f.initialization.iter().chain(&f.update) {
                            analysis.assign(&a.lhs, &a.rhs, &mut state);
                            ever.join(&state);
                        }
                    }
                    _ => {}
                }
            }
            routines.insert(r, RoutineLinearity { at_exit, ever, loops, linear_statements, statements });
        }
        Linearity { routines, summaries }
    }
}

struct Analysis<'a> {
    cg: &'a CallGraph,
    catalogue: &'a Catalogue,
    effects: &'a Effects,
    summaries: &'a ArenaMap<RoutineId, Summary>,
}

impl Analysis<'_> {
    /// The facts where each vertex starts, and at Exit.
    fn solve(&self, cfg: &ControlFlowGraph) -> (ArenaMap<CfgVertexId, Dependences>, Dependences) {
        let bottom = Dependences::default();
        let solution = solve(&cfg.graph, Direction::Forward, &bottom, &bottom, |v, before| {
            let mut state = before.clone();
            match &cfg.graph.vertices[v].kind {
                CfgVertexKind::BasicBlock(block) => {
                    for statement in &block.statements {
                        self.statement(cfg, statement, &mut state);
                    }
                }
                CfgVertexKind::ForLoop(f) => {
                    for a in f.initialization.iter().chain(&f.update) {
                        self.assign(&a.lhs, &a.rhs, &mut state);
                    }
                }
                _ => {}
            }
            state
        });
        let exit = cfg
            .graph
            .vertices
            .iter()
            .find(|(_, v)| matches!(v.kind, CfgVertexKind::Exit))
            .and_then(|(id, _)| solution.before.get(id).cloned())
            .unwrap_or_default();
        (solution.before, exit)
    }

    fn statement(&self, cfg: &ControlFlowGraph, statement: &Statement, state: &mut Dependences) {
        match statement {
            Statement::Assignment(a) if !a.lhs.deriv => self.assign(&a.lhs, &a.rhs, state),
            Statement::SubroutineCall(call) => self.call(cfg, call, state),
            _ => {}
        }
    }

    fn assign(&self, lhs: &VariableReference, rhs: &Expression, state: &mut Dependences) {
        let Some(x) = lhs.base_symbol() else { return };
        let deps = match rhs.root() {
            Some(root) => self.expression(rhs, root, state),
            None => Deps::default(),
        };
        let whole = lhs.vertices.len() == 1 && self.cg.symbols[x].shape == Shape::Scalar;
        if whole {
            state.0.insert(x, deps);
        } else {
            let mine = state.0.entry(x).or_default();
            for (v, class) in deps {
                add(mine, v, class);
            }
        }
    }

    /// DEPS(e) of the paper, for the subexpression rooted at `vertex`: every vertex once, in
    /// post-order without recursion (expressions may be deep, and share subexpressions).
    fn expression(&self, e: &Expression, vertex: ExprVertexId, state: &Dependences) -> Deps {
        let table = e.operand_table();
        let index = |v: ExprVertexId| v.into_raw().into_u32() as usize;
        let mut memo: Vec<Option<Deps>> = vec![None; e.vertices.len()];
        let mut stack = vec![(vertex, false)];
        while let Some((v, expanded)) = stack.pop() {
            if memo[index(v)].is_some() {
                continue;
            }
            if !expanded {
                stack.push((v, true));
                for &o in table.of(v) {
                    if memo[index(o)].is_none() {
                        stack.push((o, false));
                    }
                }
                continue;
            }
            let of: Vec<&Deps> =
                table.of(v).iter().map(|&o| memo[index(o)].as_ref().expect("operands first")).collect();
            let deps = self.vertex_deps(e, v, &of, state);
            memo[index(v)] = Some(deps);
        }
        memo[index(vertex)].take().unwrap_or_default()
    }

    fn vertex_deps(&self, e: &Expression, vertex: ExprVertexId, of: &[&Deps], state: &Dependences) -> Deps {
        match &e.vertices[vertex] {
            ExprVertex::Constant(_) | ExprVertex::BooleanOperation(_) => Deps::default(),
            ExprVertex::Variable(r) => {
                let mut deps = Deps::default();
                if let Some(v) = r.base_symbol() {
                    deps.insert(v, Dependence::Linear);
                    if let Some(of_v) = state.0.get(&v) {
                        for (&w, &class) in of_v {
                            add(&mut deps, w, class);
                        }
                    }
                }
                deps
            }
            ExprVertex::FunctionCall(_) => {
                let mut deps = Deps::default();
                for operand in of {
                    for &v in operand.keys() {
                        add(&mut deps, v, Dependence::Nonlinear);
                    }
                }
                deps
            }
            ExprVertex::Intrinsic(intrinsic) => {
                let definition = self.catalogue.get(self.cg.name(intrinsic.name));
                let mut deps = Deps::default();
                for (k, operand_deps) in of.iter().enumerate() {
                    let partial = definition.and_then(|d| d.partials.get(k));
                    let class = match partial.map(|p| p.kind) {
                        Some(PartialKind::Passive) => continue,
                        Some(PartialKind::LinearOne | PartialKind::LinearMinusOne | PartialKind::Linear) => {
                            Some(Dependence::Linear)
                        }
                        // A partial reading only operands that are constants scales by a
                        // constant: `3 * z` is linear in z.
                        Some(PartialKind::Nonlinear) => {
                            let mut read = Vec::new();
                            arguments_read(&partial.expect("matched").expression, &mut read);
                            let constant = read
                                .iter()
                                .all(|&a| a != 0 && a != k + 1 && of.get(a - 1).is_some_and(|d| d.is_empty()));
                            constant.then_some(Dependence::Linear)
                        }
                        None => None,
                    };
                    match class {
                        Some(Dependence::Linear) => {
                            for (&v, &c) in operand_deps.iter() {
                                add(&mut deps, v, c);
                            }
                        }
                        _ => {
                            for (v, c) in raise(operand_deps) {
                                add(&mut deps, v, c);
                            }
                        }
                    }
                }
                deps
            }
        }
    }

    /// Whether every partial of the expression is a constant: it reads variables only through
    /// linear operations (or not at all).
    fn constant_partials(&self, rhs: &Expression) -> bool {
        let Some(root) = rhs.root() else { return true };
        let deps = self.expression(rhs, root, &Dependences::default());
        deps.values().all(|&c| c == Dependence::Linear)
    }

    fn call(&self, cfg: &ControlFlowGraph, call: &SubroutineCall, state: &mut Dependences) {
        let callee = self.effects.callee(call);
        let summary = callee.and_then(|r| self.summaries.get(r));
        let _ = cfg;
        // What each actual and global brings into the call.
        let actual_deps = |state: &Dependences, place: Place| -> Deps {
            let symbol = match place {
                Place::Global(g) => Some(g),
                Place::Formal(p) => call.arguments.iter().find(|a| a.position == p).and_then(|a| match &a.value {
                    ArgumentValue::Variable(r) => r.base_symbol(),
                    ArgumentValue::Constant(_) => None,
                }),
            };
            let mut deps = Deps::default();
            if let Some(s) = symbol {
                deps.insert(s, Dependence::Linear);
                if let Some(of) = state.0.get(&s) {
                    for (&w, &c) in of {
                        add(&mut deps, w, c);
                    }
                }
            }
            deps
        };
        let mut updates: Vec<(SymbolId, Deps)> = Vec::new();
        match summary {
            Some(summary) => {
                for (target, sources) in summary {
                    let written = match *target {
                        Place::Global(g) => Some(g),
                        Place::Formal(p) => {
                            call.arguments.iter().find(|a| a.position == p).and_then(|a| match &a.value {
                                ArgumentValue::Variable(r) => r.base_symbol(),
                                ArgumentValue::Constant(_) => None,
                            })
                        }
                    };
                    let Some(written) = written else { continue };
                    let mut deps = Deps::default();
                    for (&source, &class) in sources {
                        let incoming = actual_deps(state, source);
                        let incoming = if class == Dependence::Nonlinear { raise(&incoming) } else { incoming };
                        for (v, c) in incoming {
                            add(&mut deps, v, c);
                        }
                    }
                    updates.push((written, deps));
                }
            }
            None => {
                // Unknown effects: every variable argument may become a nonlinear function of
                // every argument.
                let mut all = Deps::default();
                for a in &call.arguments {
                    for (v, _) in actual_deps(state, Place::Formal(a.position)) {
                        add(&mut all, v, Dependence::Nonlinear);
                    }
                }
                for a in &call.arguments {
                    if let ArgumentValue::Variable(r) = &a.value
                        && let Some(s) = r.base_symbol()
                    {
                        updates.push((s, all.clone()));
                    }
                }
            }
        }
        // A call may or may not write: what it brings adds to what was there.
        for (written, deps) in updates {
            let mine = state.0.entry(written).or_default();
            for (v, c) in deps {
                add(mine, v, c);
            }
        }
    }
}

/// The 1-based arguments a partial reads (0 for the result itself).
pub(crate) fn arguments_read(expression: &PartialExpr, out: &mut Vec<usize>) {
    match expression {
        PartialExpr::Constant { .. } => {}
        PartialExpr::Argument(k) => out.push(*k),
        PartialExpr::Intrinsic { arguments, .. } => arguments.iter().for_each(|a| arguments_read(a, out)),
    }
}

/// A routine's summary: what its formals and globals depend on at Exit, in terms of formals
/// and globals (a formal or global always depends on its own entry value unless overwritten,
/// which adding the identity for every place keeps conservative).
fn summarize(cg: &CallGraph, cfg: &ControlFlowGraph, at_exit: &Dependences) -> Summary {
    let frame = Frame::of(cg, cfg);
    let place = |s: SymbolId| -> Option<Place> {
        match frame.formals.get(&s) {
            Some(&p) => Some(Place::Formal(p)),
            None if !frame.is_local(cg, s) => Some(Place::Global(s)),
            None => None,
        }
    };
    let mut summary = Summary::default();
    for (x, deps) in &at_exit.0 {
        let Some(target) = place(*x) else { continue };
        let entry = summary.entry(target).or_default();
        for (v, class) in deps {
            if let Some(source) = place(*v) {
                let slot = entry.entry(source).or_insert(*class);
                *slot = (*slot).max(*class);
            }
        }
        entry.entry(target).or_insert(Dependence::Linear);
    }
    summary
}

/// Per loop header: the loop's vertices (those reachable from the header that reach it back),
/// the variables they write that are also read there, and whether any depends on itself
/// nonlinearly where the loop starts (after the fixed point, so across iterations).
fn loop_fusion(
    cg: &CallGraph,
    cfg: &ControlFlowGraph,
    effects: &Effects,
    before: &ArenaMap<CfgVertexId, Dependences>,
) -> Vec<LoopFusion> {
    let graph = &cfg.graph;
    let mut succs: FxHashMap<CfgVertexId, Vec<CfgVertexId>> = FxHashMap::default();
    let mut preds: FxHashMap<CfgVertexId, Vec<CfgVertexId>> = FxHashMap::default();
    for e in &graph.edges {
        succs.entry(e.source).or_default().push(e.target);
        preds.entry(e.target).or_default().push(e.source);
    }
    let reach = |from: CfgVertexId, next: &FxHashMap<CfgVertexId, Vec<CfgVertexId>>| -> FxHashSet<CfgVertexId> {
        let mut seen = FxHashSet::default();
        let mut stack = vec![from];
        while let Some(v) = stack.pop() {
            for &w in next.get(&v).into_iter().flatten() {
                if seen.insert(w) {
                    stack.push(w);
                }
            }
        }
        seen
    };
    let mut out = Vec::new();
    for (header, vertex) in graph.vertices.iter() {
        if !matches!(vertex.kind, CfgVertexKind::ForLoop(_) | CfgVertexKind::PreLoop(_) | CfgVertexKind::PostLoop(_)) {
            continue;
        }
        let forward = reach(header, &succs);
        let backward = reach(header, &preds);
        let body: Vec<CfgVertexId> = forward.intersection(&backward).copied().collect();
        let mut written = super::dataflow::SymbolSet::default();
        let mut read: Vec<SymbolId> = Vec::new();
        for &v in &body {
            effects.vertex_writes(cg, &graph.vertices[v], &mut written);
            if let CfgVertexKind::BasicBlock(block) = &graph.vertices[v].kind {
                for statement in &block.statements {
                    if let Statement::Assignment(a) = statement {
                        read.extend(a.rhs.variables_read());
                    }
                }
            }
        }
        let facts = before.get(header);
        let mut nonlinear_carried: Vec<SymbolId> = written
            .symbols
            .iter()
            .filter(|s| read.contains(s))
            .filter(|s| {
                facts.and_then(|f| f.0.get(s)).and_then(|d| d.get(s)).is_some_and(|&c| c == Dependence::Nonlinear)
            })
            .collect();
        nonlinear_carried.sort_unstable();
        out.push(LoopFusion { header, fusable: nonlinear_carried.is_empty(), nonlinear_carried });
    }
    out.sort_by_key(|l| l.header.into_raw().into_u32());
    out
}

/// The dependence table of a routine at Exit, by symbol names, for reports and tests.
pub fn table(cg: &CallGraph, facts: &Dependences) -> BTreeMap<String, BTreeMap<String, Dependence>> {
    facts
        .0
        .iter()
        .filter(|(_, deps)| !deps.is_empty())
        .map(|(x, deps)| {
            (cg.symbol_name(*x).to_owned(), deps.iter().map(|(v, c)| (cg.symbol_name(*v).to_owned(), *c)).collect())
        })
        .collect()
}
