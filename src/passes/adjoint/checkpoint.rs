//! Checkpoint code of a replacement list (placeholders 4–9, 12, 13 of the reversal template).
//! The joint template stores a callee's arguments before running it plainly in the caller's
//! forward sweep and restores them before re-running it (taping, then adjoint) in the reverse
//! sweep: what the callee reads must be what it read the first time. The front end's `Read`
//! side-effect list names it; `cp_arg_store_<type>_<shape>[_a]` stores one variable (`_a` for
//! an active one, value only; `_a_d` with its derivative), `cp_arg_restore_…` pops it back, so
//! restores come in the reverse order of the stores.

use crate::ir::build::FlowGraphBuilder;
use crate::ir::*;

/// Which variables a checkpoint placeholder covers and how.
pub struct CheckpointLists {
    /// Placeholder 4 (stores) and 6 (restores, reversed): the Read list.
    pub arguments: Vec<VariableReference>,
    /// Placeholders 8 and 9: the Mod and ReadLocal lists.
    pub time_step: Vec<VariableReference>,
    /// Placeholders 12 and 13: the active variables of the Mod list, with derivatives.
    pub results: Vec<VariableReference>,
    /// Optional formals (the routine asks `present` of them): their checkpoints run only when
    /// the caller passed them.
    pub optional: Vec<SymbolId>,
    /// Restore in store order (`-f`) instead of reversed.
    pub file_order: bool,
}

/// `cp_arg_<store|restore>_<type>_<shape>[_a][_d]` into `name` (emptied first); false for
/// what has no checkpoint routine (derived types).
fn routine_name(
    cg: &CallGraph,
    reference: &VariableReference,
    store: bool,
    with_derivative: bool,
    name: &mut String,
) -> bool {
    name.clear();
    let Some(base) = reference.base_symbol() else { return false };
    let symbol = &cg.symbols[base];
    let ty = match symbol.ty {
        SymbolType::Real | SymbolType::Complex => "real",
        SymbolType::Integer => "integer",
        SymbolType::Bool => "bool",
        SymbolType::Char | SymbolType::String => "string",
        SymbolType::Void | SymbolType::Opaque => return false,
    };
    let shape = match reference.effective_rank(cg) {
        0 => "scalar",
        1 => "vector",
        2 => "matrix",
        3 => "three_tensor",
        4 => "four_tensor",
        5 => "five_tensor",
        6 => "six_tensor",
        _ => "seven_tensor",
    };
    let active = match (symbol.active && ty == "real", with_derivative) {
        (true, true) => "_a_d",
        (true, false) => "_a",
        (false, _) => "",
    };
    for part in ["cp_arg_", if store { "store" } else { "restore" }, "_", ty, "_", shape, active] {
        name.push_str(part);
    }
    true
}

/// The checkpoint calls, each with the optional formal it depends on.
fn calls(
    cg: &mut CallGraph,
    references: &[VariableReference],
    optional: &[SymbolId],
    store: bool,
    with_derivative: bool,
    file_order: bool,
) -> Vec<(Statement, Option<VariableReference>)> {
    let mut out = Vec::with_capacity(references.len());
    let order: Vec<&VariableReference> =
        if store || file_order { references.iter().collect() } else { references.iter().rev().collect() };
    // One buffer for every routine name, interned once as both the statement id and the
    // routine called.
    let mut text = String::new();
    for reference in order {
        if !routine_name(cg, reference, store, with_derivative, &mut text) {
            continue;
        }
        let name = cg.names.intern(&text);
        let mut argument = reference.clone();
        argument.deriv = false;
        let guard = reference.base_symbol().filter(|b| optional.contains(b)).map(|_| argument.clone());
        let arguments =
            vec![Argument { position: 1, annotation: Name::EMPTY, value: ArgumentValue::Variable(argument) }];
        let call = InlinableSubroutineCall { id: name, subroutine_name: name, arguments };
        out.push((Statement::InlinableSubroutineCall(call), guard));
    }
    out
}

/// Entry → the calls → Exit; a call on an optional formal sits in a branch on `present(x)`.
fn guarded_graph(cg: &mut CallGraph, scope: ScopeId, calls: Vec<(Statement, Option<VariableReference>)>) -> FlowGraph {
    if calls.iter().all(|(_, guard)| guard.is_none()) {
        return FlowGraphBuilder::straight(cg, scope, calls.into_iter().map(|(s, _)| s).collect());
    }
    let mut builder = FlowGraphBuilder::default();
    let mut next_id = 0;
    let mut id = || {
        next_id += 1;
        next_id.to_string()
    };
    let entry = builder.vertex(cg, &id(), "", CfgVertexKind::Entry);
    let mut from = entry;
    let mut pending = Vec::new();
    let block = |builder: &mut FlowGraphBuilder, cg: &mut CallGraph, id: String, statements| {
        builder.vertex(cg, &id, "", CfgVertexKind::BasicBlock(BasicBlock { scope, statements }))
    };
    for (statement, guard) in calls {
        let Some(guard) = guard else {
            pending.push(statement);
            continue;
        };
        if !pending.is_empty() {
            let b = block(&mut builder, cg, id(), std::mem::take(&mut pending));
            builder.edge(cg, from, b, None);
            from = b;
        }
        let condition = Expression::call(cg, "present", SymbolType::Bool, vec![Expression::variable(guard)]);
        let branch =
            builder.vertex(cg, &id(), "", CfgVertexKind::Branch(Conditional { condition: Some(condition), line: 0 }));
        builder.edge(cg, from, branch, None);
        let guarded = block(&mut builder, cg, id(), vec![statement]);
        let end = builder.vertex(cg, &id(), "", CfgVertexKind::EndBranch);
        builder.edge(cg, branch, guarded, Some(1));
        builder.edge(cg, branch, end, None);
        builder.edge(cg, guarded, end, None);
        from = end;
    }
    let last = block(&mut builder, cg, id(), pending);
    builder.edge(cg, from, last, None);
    let exit = builder.vertex(cg, &id(), "", CfgVertexKind::Exit);
    builder.edge(cg, last, exit, None);
    builder.graph
}

/// The checkpoint placeholders, by number: 4/6 arguments, 5/7 results (none: a subroutine's
/// results are its arguments), 8/9 time-step arguments, 12/13 time-step results; each with
/// the number of the placeholder whose graph it repeats, if it does.
pub fn placeholders(cg: &mut CallGraph, scope: ScopeId, lists: &CheckpointLists) -> Vec<(u32, FlowGraph, Option<u32>)> {
    let plan: [(u32, &[VariableReference], bool, bool); 8] = [
        (4, &lists.arguments, true, false),
        (5, &[], true, false),
        (6, &lists.arguments, false, false),
        (7, &[], false, false),
        (8, &lists.time_step, true, false),
        (9, &lists.time_step, false, false),
        (12, &lists.results, true, true),
        (13, &lists.results, false, true),
    ];
    // Most placeholders of most routines are empty (Entry → empty block → Exit): the first
    // empty one holds that graph, the others repeat it (see `Replacement::repeats`) rather
    // than hold copies.
    let mut first_empty: Option<u32> = None;
    plan.into_iter()
        .map(|(number, references, store, with_derivative)| {
            let calls = calls(cg, references, &lists.optional, store, with_derivative, lists.file_order);
            if !calls.is_empty() {
                return (number, guarded_graph(cg, scope, calls), None);
            }
            match first_empty {
                Some(first) => (number, FlowGraph::default(), Some(first)),
                None => {
                    first_empty = Some(number);
                    (number, guarded_graph(cg, scope, Vec::new()), None)
                }
            }
        })
        .collect()
}
