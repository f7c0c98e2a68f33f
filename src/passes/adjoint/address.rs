//! Address arithmetic for explicit loops (`ForLoop reversal="explicit"`, the original's
//! "simple loops", and by default every other loop of the same shape): `do i = lo, hi, c` is run backwards in the adjoint sweep from its bounds
//! instead of a taped iteration count, so the subscripts that use its variable need no tape:
//! the reversed loop gives `i` the value it had. Subscript variables the loop nest never
//! assigns (quasi-constants such as sizes) are pushed once after the outermost explicit loop
//! and popped back into their variables before its adjoint, instead of once per use.
//!
//! A loop qualifies when its initialization is `i = lo`, its update `i = i ± c` (constant c),
//! its condition compares `i` with a bound (`<=`, `<` counting up, `>=`, `>` counting down),
//! its body neither assigns `i` nor calls a subroutine that may (by the callees' kill summaries),
//! and its bounds read only
//! constants, quasi-constants, variables of enclosing qualifying loops, and array shapes
//! (`lbound`, `ubound`, `size`). Any other loop is reversed by counting.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::ir::build::{assignment, whole_reference};
use crate::ir::*;

use super::reversal::Region;
use crate::analysis::dataflow::SymbolSet;
use crate::analysis::effects::Effects;

/// How one qualifying loop runs: `i = lo, lo + step, …` for `count` iterations.
#[derive(Clone, Debug)]
pub struct ExplicitLoop {
    pub variable: SymbolId,
    pub lo: Expression,
    /// The trip count as an expression of the bounds: `(hi − lo + step) / step` (zero or
    /// negative for a loop that does not run).
    pub count: Expression,
    pub step: i64,
}

/// Which loops run backwards from their bounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LoopPolicy {
    /// Those the front end marked `reversal="explicit"` (the original's "simple loops") and
    /// that qualify.
    Annotated,
    /// Every loop that qualifies: its shape proves the reversed loop visits the same values
    /// backwards, so the pragma adds nothing (and its iteration count and the subscripts that
    /// use its variable need no tape).
    #[default]
    Structural,
}

/// What the reversal of one routine does with its explicit loops.
#[derive(Debug, Default)]
pub struct AddressPlan {
    pub policy: LoopPolicy,
    /// By block: what its subroutine calls may write (all of it if unknown).
    pub call_writes: FxHashMap<CfgVertexId, SymbolSet>,
    /// By loop header.
    pub loops: FxHashMap<CfgVertexId, ExplicitLoop>,
    /// By header of an outermost qualifying loop: the quasi-constants pushed after it.
    pub invariants: FxHashMap<CfgVertexId, Vec<SymbolId>>,
    /// By basic block: the variables the adjoint sweep restores there, not to be taped.
    pub restored: FxHashMap<CfgVertexId, Vec<SymbolId>>,
    /// Branches inside a qualifying nest whose condition reads only restored variables and
    /// constants: the adjoint evaluates the condition again instead of popping the arm taken.
    pub reevaluated: FxHashSet<CfgVertexId>,
}

/// Finds the qualifying loops of a routine's regions.
pub fn plan(
    cg: &mut CallGraph,
    graph: &FlowGraph,
    regions: &[Region],
    policy: LoopPolicy,
    effects: Option<&Effects>,
) -> AddressPlan {
    let mut plan = AddressPlan { policy, ..AddressPlan::default() };
    // What the calls of each block may write: a loop whose calls leave its variable and bounds
    // alone still runs backwards from its bounds.
    for (id, vertex) in graph.vertices.iter() {
        let CfgVertexKind::BasicBlock(block) = &vertex.kind else { continue };
        let mut written = SymbolSet::default();
        let mut any = false;
        for statement in &block.statements {
            if let Statement::SubroutineCall(_) = statement {
                any = true;
                match effects {
                    Some(effects) => effects.statement_writes(statement, &mut written),
                    None => written.all_persistent = true,
                }
            }
        }
        if any {
            plan.call_writes.insert(id, written);
        }
    }
    walk(cg, graph, regions, &[], &mut plan);
    plan
}

fn walk(cg: &mut CallGraph, graph: &FlowGraph, regions: &[Region], enclosing: &[SymbolId], plan: &mut AddressPlan) {
    for region in regions {
        match region {
            Region::Block(_) => {}
            Region::Branch { arms, .. } => {
                for (_, arm) in arms {
                    walk(cg, graph, arm, enclosing, plan);
                }
            }
            Region::Loop { header, body, .. } => {
                if enclosing.is_empty() {
                    // An outermost candidate: the nest's assignments decide what is constant.
                    let assigned = assigned_in(graph, body, &plan.call_writes);
                    if let Some(explicit) =
                        explicit_loop(plan.policy, &plan.call_writes, cg, graph, *header, body, &assigned, &[])
                    {
                        let mut inside = vec![explicit.variable];
                        plan.loops.insert(*header, explicit);
                        nest(cg, graph, body, &assigned, &mut inside, plan);
                        let mut invariants = Vec::new();
                        collect_invariants(cg, graph, body, &assigned, &inside, &mut invariants);
                        condition_invariants(cg, graph, body, &assigned, &inside, &mut invariants);
                        bound_variables(&plan.loops[header], cg, &assigned, &inside, &mut invariants);
                        let mut restored = invariants.clone();
                        restored.push(plan.loops[header].variable);
                        mark_restored(cg, graph, body, &restored, plan);
                        plan.invariants.insert(*header, invariants);
                        continue;
                    }
                }
                walk(cg, graph, body, enclosing, plan);
            }
        }
    }
}

/// Inner loops of a qualifying nest: qualifying ones join `inside`.
fn nest(
    cg: &mut CallGraph,
    graph: &FlowGraph,
    regions: &[Region],
    assigned: &Writes,
    inside: &mut Vec<SymbolId>,
    plan: &mut AddressPlan,
) {
    for region in regions {
        match region {
            Region::Block(_) => {}
            Region::Branch { arms, .. } => {
                for (_, arm) in arms {
                    nest(cg, graph, arm, assigned, inside, plan);
                }
            }
            Region::Loop { header, body, .. } => {
                let loop_assigned = assigned_in(graph, body, &plan.call_writes);
                if let Some(explicit) =
                    explicit_loop(plan.policy, &plan.call_writes, cg, graph, *header, body, assigned, inside)
                    && !loop_assigned.contains(&explicit.variable)
                {
                    inside.push(explicit.variable);
                    plan.loops.insert(*header, explicit);
                }
                nest(cg, graph, body, assigned, inside, plan);
            }
        }
    }
}

/// Blocks inside a qualifying nest get the invariants and the variables of the qualifying
/// loops around them (a loop variable is restored only inside its own loop); branches on
/// those alone are evaluated again in the adjoint.
fn mark_restored(cg: &CallGraph, graph: &FlowGraph, regions: &[Region], restored: &[SymbolId], plan: &mut AddressPlan) {
    for region in regions {
        match region {
            Region::Block(v) => {
                plan.restored.insert(*v, restored.to_vec());
            }
            Region::Branch { header, arms, .. } => {
                let condition = match &graph.vertices[*header].kind {
                    CfgVertexKind::Branch(c) | CfgVertexKind::If(c) => c.condition.as_ref(),
                    _ => None,
                };
                if let Some(condition) = condition
                    && condition.vertices.iter().all(|(_, v)| match v {
                        ExprVertex::Variable(r) => plain_scalar(cg, r).is_some_and(|s| restored.contains(&s)),
                        ExprVertex::Constant(_) | ExprVertex::BooleanOperation(_) | ExprVertex::Intrinsic(_) => true,
                        ExprVertex::FunctionCall(_) => false,
                    })
                {
                    plan.reevaluated.insert(*header);
                }
                arms.iter().for_each(|(_, arm)| mark_restored(cg, graph, arm, restored, plan));
            }
            Region::Loop { header, body, .. } => {
                let mut inner = restored.to_vec();
                if let Some(explicit) = plan.loops.get(header) {
                    inner.push(explicit.variable);
                }
                mark_restored(cg, graph, body, &inner, plan);
            }
        }
    }
}

/// What a loop nest may write: the symbols it assigns (left-hand sides, loop headers'
/// initializations and updates), and whether it calls a subroutine, which may write anything.
#[derive(Default)]
struct Writes {
    symbols: FxHashSet<SymbolId>,
    calls: bool,
}

impl Writes {
    fn contains(&self, symbol: &SymbolId) -> bool {
        self.calls || self.symbols.contains(symbol)
    }
}

fn assigned_in(graph: &FlowGraph, regions: &[Region], call_writes: &FxHashMap<CfgVertexId, SymbolSet>) -> Writes {
    fn go(graph: &FlowGraph, regions: &[Region], call_writes: &FxHashMap<CfgVertexId, SymbolSet>, out: &mut Writes) {
        for region in regions {
            match region {
                Region::Block(v) => {
                    if let CfgVertexKind::BasicBlock(block) = &graph.vertices[*v].kind {
                        for statement in &block.statements {
                            match statement {
                                Statement::Assignment(a) => out.symbols.extend(a.lhs.base_symbol()),
                                Statement::SubroutineCall(_) => match call_writes.get(v) {
                                    Some(written) => {
                                        out.symbols.extend(written.symbols.iter());
                                        out.calls |= written.all_persistent;
                                    }
                                    None => out.calls = true,
                                },
                                _ => {}
                            }
                        }
                    }
                }
                Region::Branch { arms, .. } => arms.iter().for_each(|(_, arm)| go(graph, arm, call_writes, out)),
                Region::Loop { header, body, .. } => {
                    if let CfgVertexKind::ForLoop(f) = &graph.vertices[*header].kind {
                        for a in f.initialization.iter().chain(&f.update) {
                            out.symbols.extend(a.lhs.base_symbol());
                        }
                    }
                    go(graph, body, call_writes, out);
                }
            }
        }
    }
    let mut out = Writes::default();
    go(graph, regions, call_writes, &mut out);
    out
}

/// A plain integer scalar variable (`i`, not `a(i)`).
fn plain_integer(cg: &CallGraph, reference: &VariableReference) -> Option<SymbolId> {
    let base = reference.base_symbol()?;
    let symbol = &cg.symbols[base];
    (reference.array_access().is_none() && symbol.ty == SymbolType::Integer && symbol.shape == Shape::Scalar)
        .then_some(base)
}

/// Whether every variable `e` reads is a constant over the nest: a quasi-constant integer (not
/// assigned in it), a variable of a loop enclosing the use, or an array whose shape is asked.
fn bound_is_fixed(cg: &CallGraph, e: &Expression, assigned: &Writes, loops: &[SymbolId]) -> bool {
    e.vertices.iter().all(|(id, vertex)| {
        let ExprVertex::Variable(reference) = vertex else {
            return !matches!(vertex, ExprVertex::FunctionCall(_));
        };
        let shape_only = e.edges.iter().filter(|edge| edge.source == id).all(|edge| {
            matches!(&e.vertices[edge.target], ExprVertex::Intrinsic(i)
                if matches!(cg.name(i.name), "lbound" | "ubound" | "size"))
        }) && e.edges.iter().any(|edge| edge.source == id);
        shape_only || plain_integer(cg, reference).is_some_and(|s| loops.contains(&s) || !assigned.contains(&s))
    })
}

/// The loop at `header` if it qualifies (see the module documentation).
fn explicit_loop(
    policy: LoopPolicy,
    call_writes: &FxHashMap<CfgVertexId, SymbolSet>,
    cg: &mut CallGraph,
    graph: &FlowGraph,
    header: CfgVertexId,
    body: &[Region],
    assigned: &Writes,
    enclosing: &[SymbolId],
) -> Option<ExplicitLoop> {
    let CfgVertexKind::ForLoop(f) = &graph.vertices[header].kind else { return None };
    if (f.reversal != LoopReversal::Explicit && policy == LoopPolicy::Annotated) || assigned.calls {
        return None;
    }
    let init = f.initialization.as_ref()?;
    let variable = plain_integer(cg, &init.lhs)?;
    if assigned_in(graph, body, call_writes).contains(&variable) {
        return None;
    }
    // Update: i = i ± c or c + i.
    let update = f.update.as_ref()?;
    if update.lhs.base_symbol() != Some(variable) {
        return None;
    }
    let rhs = &update.rhs;
    let root = rhs.root()?;
    let ExprVertex::Intrinsic(op) = &rhs.vertices[root] else { return None };
    let operands = rhs.operands(root);
    let [a, b] = operands.as_slice() else { return None };
    let constant = |v: ExprVertexId| match &rhs.vertices[v] {
        ExprVertex::Constant(c) if c.ty == ConstantType::Integer => cg.name(c.value).trim().parse::<i64>().ok(),
        _ => None,
    };
    let is_variable =
        |v: ExprVertexId| matches!(&rhs.vertices[v], ExprVertex::Variable(r) if r.base_symbol() == Some(variable));
    let step = match cg.name(op.name) {
        "add_scal_scal" if is_variable(*a) => constant(*b)?,
        "add_scal_scal" if is_variable(*b) => constant(*a)?,
        "sub_scal_scal" if is_variable(*a) => -constant(*b)?,
        _ => return None,
    };
    if step == 0 {
        return None;
    }
    // Condition: i op hi (or hi op i).
    let condition = f.condition.as_ref()?;
    let root = condition.root()?;
    let ExprVertex::BooleanOperation(comparison) = &condition.vertices[root] else { return None };
    let operands = condition.operands(root);
    let [left, right] = operands.as_slice() else { return None };
    let on_variable = |v: ExprVertexId| matches!(&condition.vertices[v], ExprVertex::Variable(r) if r.base_symbol() == Some(variable));
    let (op, bound_vertex) = if on_variable(*left) {
        (comparison.op, *right)
    } else if on_variable(*right) {
        let flipped = match comparison.op {
            BooleanOp::LessThan => BooleanOp::GreaterThan,
            BooleanOp::LessOrEqual => BooleanOp::GreaterOrEqual,
            BooleanOp::GreaterThan => BooleanOp::LessThan,
            BooleanOp::GreaterOrEqual => BooleanOp::LessOrEqual,
            _ => return None,
        };
        (flipped, *left)
    } else {
        return None;
    };
    // The last value the loop may take, inclusive.
    let adjust = match (op, step > 0) {
        (BooleanOp::LessOrEqual, true) | (BooleanOp::GreaterOrEqual, false) => 0,
        (BooleanOp::LessThan, true) => -1,
        (BooleanOp::GreaterThan, false) => 1,
        _ => return None,
    };
    let hi = subexpression(condition, bound_vertex);
    let lo = init.rhs.clone();
    if !bound_is_fixed(cg, &lo, assigned, enclosing) || !bound_is_fixed(cg, &hi, assigned, enclosing) {
        return None;
    }
    let integer = |cg: &mut CallGraph, v: i64| Expression::constant(cg, ConstantType::Integer, &v.to_string());
    let last = if adjust == 0 {
        hi
    } else {
        let k = integer(cg, adjust);
        Expression::intrinsic(cg, "add_scal_scal", hi, k)
    };
    let span = Expression::intrinsic(cg, "sub_scal_scal", last, lo.clone());
    let c = integer(cg, step);
    let span = Expression::intrinsic(cg, "add_scal_scal", span, c);
    let c = integer(cg, step);
    let count = Expression::intrinsic(cg, "div_scal_scal", span, c);
    Some(ExplicitLoop { variable, lo, count, step })
}

/// The subexpression rooted at `vertex`, as an expression of its own.
fn subexpression(e: &Expression, vertex: ExprVertexId) -> Expression {
    let mut out = Expression::default();
    let mut map: FxHashMap<ExprVertexId, ExprVertexId> = FxHashMap::default();
    let mut stack = vec![vertex];
    while let Some(v) = stack.pop() {
        if map.contains_key(&v) {
            continue;
        }
        map.insert(v, out.vertices.alloc(e.vertices[v].clone()));
        stack.extend(e.operands(v));
    }
    for edge in &e.edges {
        if let (Some(&s), Some(&t)) = (map.get(&edge.source), map.get(&edge.target)) {
            out.edges.push(ExprEdge { source: s, target: t, ..edge.clone() });
        }
    }
    out
}

/// Integer scalars read in subscripts of the nest's propagators, and not assigned in it.
fn collect_invariants(
    cg: &CallGraph,
    graph: &FlowGraph,
    regions: &[Region],
    assigned: &Writes,
    loops: &[SymbolId],
    out: &mut Vec<SymbolId>,
) {
    for region in regions {
        match region {
            Region::Block(v) => {
                let CfgVertexKind::BasicBlock(block) = &graph.vertices[*v].kind else { continue };
                for statement in &block.statements {
                    let Statement::DerivativePropagator(p) = statement else { continue };
                    for entry in &p.entries {
                        for reference in super::tape::entry_references(entry) {
                            let mut read = Vec::new();
                            reference.symbols_read(&mut read);
                            for s in read.into_iter().skip(1) {
                                let symbol = &cg.symbols[s];
                                let scalar = symbol.ty == SymbolType::Integer && symbol.shape == Shape::Scalar;
                                if scalar && !assigned.contains(&s) && !loops.contains(&s) && !out.contains(&s) {
                                    out.push(s);
                                }
                            }
                        }
                    }
                }
            }
            Region::Branch { arms, .. } => {
                arms.iter().for_each(|(_, arm)| collect_invariants(cg, graph, arm, assigned, loops, out))
            }
            Region::Loop { body, .. } => collect_invariants(cg, graph, body, assigned, loops, out),
        }
    }
}

/// Quasi-constant scalars (integers, logicals, strings) that branch conditions inside the nest
/// read join the invariants: pushed once after the nest, they let the adjoint evaluate those
/// conditions again instead of taping the arm of every execution.
fn condition_invariants(
    cg: &CallGraph,
    graph: &FlowGraph,
    regions: &[Region],
    assigned: &Writes,
    loops: &[SymbolId],
    out: &mut Vec<SymbolId>,
) {
    for region in regions {
        match region {
            Region::Block(_) => {}
            Region::Branch { header, arms, .. } => {
                if let CfgVertexKind::Branch(c) | CfgVertexKind::If(c) = &graph.vertices[*header].kind
                    && let Some(condition) = &c.condition
                {
                    let candidates: Vec<Option<SymbolId>> = condition
                        .vertices
                        .iter()
                        .filter_map(|(_, v)| match v {
                            ExprVertex::Variable(r) => Some(plain_scalar(cg, r)),
                            _ => None,
                        })
                        .collect();
                    // Only where every variable of the condition is then known in the adjoint.
                    let usable =
                        candidates.iter().all(|c| c.is_some_and(|s| loops.contains(&s) || !assigned.contains(&s)));
                    if usable {
                        for s in candidates.into_iter().flatten() {
                            if !loops.contains(&s) && !out.contains(&s) {
                                out.push(s);
                            }
                        }
                    }
                }
                arms.iter().for_each(|(_, arm)| condition_invariants(cg, graph, arm, assigned, loops, out));
            }
            Region::Loop { body, .. } => condition_invariants(cg, graph, body, assigned, loops, out),
        }
    }
}

/// A plain scalar the tapes can hold whole: integer, logical or string (`i`, `flag`, `name`).
fn plain_scalar(cg: &CallGraph, reference: &VariableReference) -> Option<SymbolId> {
    let base = reference.base_symbol()?;
    let symbol = &cg.symbols[base];
    let kind = matches!(symbol.ty, SymbolType::Integer | SymbolType::Bool | SymbolType::Char | SymbolType::String);
    (reference.array_access().is_none() && kind && symbol.shape == Shape::Scalar).then_some(base)
}

/// Quasi-constant integers the loop's bounds read join the invariants.
fn bound_variables(
    explicit: &ExplicitLoop,
    cg: &CallGraph,
    assigned: &Writes,
    loops: &[SymbolId],
    out: &mut Vec<SymbolId>,
) {
    for e in [&explicit.lo, &explicit.count] {
        for (_, vertex) in e.vertices.iter() {
            if let ExprVertex::Variable(r) = vertex
                && let Some(s) = plain_integer(cg, r)
                && !assigned.contains(&s)
                && !loops.contains(&s)
                && !out.contains(&s)
            {
                out.push(s);
            }
        }
    }
}

/// `i = lo + (count − t)·step`: the loop variable in iteration `t` of the reversed loop.
pub fn variable_in_reverse(
    cg: &mut CallGraph,
    explicit: &ExplicitLoop,
    count: &VariableReference,
    t: &VariableReference,
) -> Assignment {
    let remaining = Expression::intrinsic(
        cg,
        "sub_scal_scal",
        Expression::variable(count.clone()),
        Expression::variable(t.clone()),
    );
    let step = Expression::constant(cg, ConstantType::Integer, &explicit.step.to_string());
    let offset = Expression::intrinsic(cg, "mul_scal_scal", remaining, step);
    let value = Expression::intrinsic(cg, "add_scal_scal", explicit.lo.clone(), offset);
    let target = whole_reference(cg, explicit.variable, false);
    assignment(cg, "_adj_loop_variable", target, value)
}
