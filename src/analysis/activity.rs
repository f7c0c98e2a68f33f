//! Activity analysis: a variable is active if it depends on an independent (varied) and a
//! dependent depends on it (useful). The dependences are those of the linearity analysis at
//! every point of every routine, joined across calls (a formal depends on its actuals, a
//! written actual on its formal): varied is what the independents reach forwards along them,
//! useful what the dependents reach backwards; variables the alias map says share storage
//! depend on each other. Symbol-level and context-insensitive, as the
//! front ends' own analyses are; what it finds passive that a front end flagged active is
//! where ours is more precise.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::ir::*;

use super::dataflow::bottom_up_order;
use super::effects::Effects;
use super::linearity::Linearity;

/// The independents and dependents of a run, and what is active.
#[derive(Clone, Debug, Default)]
pub struct Activity {
    pub independents: Vec<SymbolId>,
    pub dependents: Vec<SymbolId>,
    pub varied: FxHashSet<SymbolId>,
    pub useful: FxHashSet<SymbolId>,
}

impl Activity {
    pub fn is_active(&self, cg: &CallGraph, symbol: SymbolId) -> bool {
        differentiable(cg, symbol) && self.varied.contains(&symbol) && self.useful.contains(&symbol)
    }
}

/// A real or complex variable: the only kind with derivatives.
pub fn differentiable(cg: &CallGraph, symbol: SymbolId) -> bool {
    let s = &cg.symbols[symbol];
    s.kind == SymbolKind::Variable && matches!(s.ty, SymbolType::Real | SymbolType::Complex)
}

/// The default independents and dependents: the real formals of the routines nobody calls,
/// by intent (in/inout independent, out/inout dependent).
pub fn default_seeds(cg: &CallGraph, effects: &Effects) -> (Vec<SymbolId>, Vec<SymbolId>) {
    let mut called: FxHashSet<RoutineId> = FxHashSet::default();
    for (_, cfg) in cg.cfgs() {
        for call in super::dataflow::calls(&cfg.graph) {
            called.extend(effects.callee(call));
        }
    }
    let (mut independents, mut dependents) = (Vec::new(), Vec::new());
    for (id, cfg) in cg.cfgs() {
        if called.contains(&id) {
            continue;
        }
        for formal in cfg.arguments.iter().flatten() {
            if !differentiable(cg, formal.symbol) {
                continue;
            }
            if matches!(formal.intent, Intent::In | Intent::InOut) {
                independents.push(formal.symbol);
            }
            if matches!(formal.intent, Intent::Out | Intent::InOut) {
                dependents.push(formal.symbol);
            }
        }
    }
    (independents, dependents)
}

/// Activity from the given seeds over the whole call graph.
pub fn activity(
    cg: &CallGraph,
    effects: &Effects,
    linearity: &Linearity,
    independents: Vec<SymbolId>,
    dependents: Vec<SymbolId>,
) -> Activity {
    // x → the variables x depends on.
    let mut depends: FxHashMap<SymbolId, FxHashSet<SymbolId>> = FxHashMap::default();
    for r in bottom_up_order(cg) {
        let Routine::ControlFlowGraph(cfg) = &cg.routines[r] else { continue };
        if let Some(facts) = linearity.routines.get(r) {
            for (x, deps) in &facts.ever.0 {
                depends.entry(*x).or_default().extend(deps.keys().copied());
            }
        }
        for call in super::dataflow::calls(&cfg.graph) {
            let Some(callee) = effects.callee(call) else { continue };
            let Routine::ControlFlowGraph(callee_cfg) = &cg.routines[callee] else { continue };
            for argument in &call.arguments {
                let ArgumentValue::Variable(r) = &argument.value else { continue };
                let Some(actual) = r.base_symbol() else { continue };
                let Some(formal) =
                    callee_cfg.arguments.iter().flatten().find(|a| a.position == argument.position).map(|a| a.symbol)
                else {
                    continue;
                };
                depends.entry(formal).or_default().insert(actual);
                depends.entry(actual).or_default().insert(formal);
            }
        }
    }
    // Variables sharing storage (the alias map) carry each other's values.
    for (a, partners) in &effects.partners {
        depends.entry(*a).or_default().extend(partners.iter().copied());
    }
    let mut dependents_of: FxHashMap<SymbolId, Vec<SymbolId>> = FxHashMap::default();
    for (x, deps) in &depends {
        for v in deps {
            dependents_of.entry(*v).or_default().push(*x);
        }
    }
    let closure = |seeds: &[SymbolId], next: &dyn Fn(SymbolId) -> Vec<SymbolId>| {
        let mut seen: FxHashSet<SymbolId> = seeds.iter().copied().collect();
        let mut stack: Vec<SymbolId> = seeds.to_vec();
        while let Some(v) = stack.pop() {
            for w in next(v) {
                if seen.insert(w) {
                    stack.push(w);
                }
            }
        }
        seen
    };
    let varied = closure(&independents, &|v| dependents_of.get(&v).cloned().unwrap_or_default());
    let useful = closure(&dependents, &|v| depends.get(&v).map(|d| d.iter().copied().collect()).unwrap_or_default());
    Activity { independents, dependents, varied, useful }
}
