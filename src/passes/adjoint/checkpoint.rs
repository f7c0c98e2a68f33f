//! Checkpoint code of a replacement list (placeholders 4–9, 12, 13 of the reversal template).
//! The joint template stores a callee's arguments before running it plainly in the caller's
//! forward sweep and restores them before re-running it (taping, then adjoint) in the reverse
//! sweep: what the callee reads must be what it read the first time. The front end's `Read`
//! side-effect list names it; `cp_arg_store_<type>_<shape>[_a]` stores one variable (`_a` for
//! an active one, value only; `_a_d` with its derivative), `cp_arg_restore_…` pops it back, so
//! restores come in the reverse order of the stores.

use crate::ir::build::{FlowGraphBuilder, inlinable_call};
use crate::ir::*;

/// Which variables a checkpoint placeholder covers and how.
pub struct CheckpointLists {
    /// Placeholder 4 (stores) and 6 (restores, reversed): the Read list.
    pub arguments: Vec<VariableReference>,
    /// Placeholders 8 and 9: the Mod and ReadLocal lists.
    pub time_step: Vec<VariableReference>,
    /// Placeholders 12 and 13: the active variables of the Mod list, with derivatives.
    pub results: Vec<VariableReference>,
}

/// `cp_arg_<store|restore>_<type>_<shape>[_a][_d]`, or `None` for what has no checkpoint
/// routine (derived types).
fn routine_name(cg: &CallGraph, reference: &VariableReference, store: bool, with_derivative: bool) -> Option<String> {
    let symbol = &cg.symbols[reference.base_symbol()?];
    let ty = match symbol.ty {
        SymbolType::Real | SymbolType::Complex => "real",
        SymbolType::Integer => "integer",
        SymbolType::Bool => "bool",
        SymbolType::Char | SymbolType::String => "string",
        SymbolType::Void | SymbolType::Opaque => return None,
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
    Some(format!("cp_arg_{}_{ty}_{shape}{active}", if store { "store" } else { "restore" }))
}

fn calls(cg: &mut CallGraph, references: &[VariableReference], store: bool, with_derivative: bool) -> Vec<Statement> {
    let mut out = Vec::with_capacity(references.len());
    let order: Vec<&VariableReference> =
        if store { references.iter().collect() } else { references.iter().rev().collect() };
    for reference in order {
        let Some(name) = routine_name(cg, reference, store, with_derivative) else { continue };
        let mut argument = reference.clone();
        argument.deriv = false;
        out.push(inlinable_call(cg, &name, &name, vec![ArgumentValue::Variable(argument)]));
    }
    out
}

/// The checkpoint placeholders, by number: 4/6 arguments, 5/7 results (none: a subroutine's
/// results are its arguments), 8/9 time-step arguments, 12/13 time-step results.
pub fn placeholders(cg: &mut CallGraph, scope: ScopeId, lists: &CheckpointLists) -> Vec<(u32, FlowGraph)> {
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
    plan.into_iter()
        .map(|(number, references, store, with_derivative)| {
            let statements = calls(cg, references, store, with_derivative);
            (number, FlowGraphBuilder::straight(cg, scope, statements))
        })
        .collect()
}
