//! Taping: the forward sweep of a basic block. The tangent code of the block runs as it is
//! (original statements, partials, Jacobian accumulation), except that each derivative
//! propagator is replaced by pushes of what its transpose will need: every factor that is not
//! a constant (`push_s0`) and the value of every variable in a subscript of its references
//! (`push_i_s0`), since those may change before the adjoint sweep reads them. A subroutine call
//! pushes the subscripts of its arguments too, so it is called again on the same elements.
//!
//! Each statement's pushes are recorded, in push order, for the block adjoint to pop.

use crate::ir::build::inlinable_call;
use crate::ir::*;

use super::AdjointError;

/// One value pushed for the adjoint.
#[derive(Clone, Debug)]
pub struct Pushed {
    /// The value as the forward sweep names it (a factor temporary, an index variable).
    pub value: VariableReference,
    pub integer: bool,
}

/// A block's forward sweep and, per statement of the tangent block, what it pushed.
pub struct TapedBlock {
    pub taping: Vec<Statement>,
    pub pushes: Vec<Vec<Pushed>>,
}

/// The forward sweep of one basic block of tangent code.
pub fn tape_block(cg: &mut CallGraph, statements: &[Statement]) -> Result<TapedBlock, AdjointError> {
    let mut taping = Vec::with_capacity(statements.len() + 4);
    let mut pushes = Vec::with_capacity(statements.len());
    for statement in statements {
        let mut pushed = Vec::new();
        match statement {
            Statement::DerivativePropagator(propagator) => {
                for entry in &propagator.entries {
                    if let PropagatorEntry::Sax { terms, .. } | PropagatorEntry::Saxpy { terms, .. } = entry {
                        for term in terms {
                            factor_pushes(cg, &term.a, &mut pushed)?;
                        }
                    }
                }
                for entry in &propagator.entries {
                    for reference in entry_references(entry) {
                        subscript_pushes(cg, reference, &mut pushed);
                    }
                }
                emit_pushes(cg, &pushed, &mut taping);
            }
            Statement::SubroutineCall(call) => {
                for argument in &call.arguments {
                    if let ArgumentValue::Variable(reference) = &argument.value {
                        subscript_pushes(cg, reference, &mut pushed);
                        // A temporary allocated to match a section is allocated again before
                        // the reverse call: the section's subscripts are taped with the call's.
                        if let Some(like) = allocation_of(cg, statements, reference) {
                            subscript_pushes(cg, like, &mut pushed);
                        }
                    }
                }
                emit_pushes(cg, &pushed, &mut taping);
                taping.push(statement.clone());
            }
            Statement::InlinableSubroutineCall(_) => taping.push(statement.clone()),
            Statement::Assignment(a) if a.lhs.deriv => {
                return Err(AdjointError::Unsupported(format!(
                    "statement {}: a derivative assignment (direct-action intrinsic) has no adjoint yet",
                    cg.name(a.id)
                )));
            }
            Statement::Assignment(_) | Statement::Marker(_) => taping.push(statement.clone()),
        }
        pushes.push(pushed);
    }
    Ok(TapedBlock { taping, pushes })
}

/// The array `oad_AllocateMatching(t, like)` in `statements` gives the storage of the whole
/// temporary `reference` (`t`), if any.
pub fn allocation_of<'s>(
    cg: &CallGraph,
    statements: &'s [Statement],
    reference: &VariableReference,
) -> Option<&'s VariableReference> {
    let base = reference.base_symbol()?;
    if !cg.symbols[base].temp {
        return None;
    }
    statements.iter().find_map(|s| match s {
        Statement::InlinableSubroutineCall(call) if cg.name(call.subroutine_name) == "oad_AllocateMatching" => {
            match (call.arguments.first().map(|a| &a.value), call.arguments.get(1).map(|a| &a.value)) {
                (Some(ArgumentValue::Variable(t)), Some(ArgumentValue::Variable(like)))
                    if t.base_symbol() == Some(base) =>
                {
                    Some(like)
                }
                _ => None,
            }
        }
        _ => None,
    })
}

/// The variable references a propagator entry reads or writes.
pub fn entry_references(entry: &PropagatorEntry) -> Vec<&VariableReference> {
    match entry {
        PropagatorEntry::SetDeriv { target, source }
        | PropagatorEntry::SetNegDeriv { target, source }
        | PropagatorEntry::IncDeriv { target, source }
        | PropagatorEntry::DecDeriv { target, source } => vec![target, source],
        PropagatorEntry::Sax { terms, y } | PropagatorEntry::Saxpy { terms, y } => {
            terms.iter().map(|t| &t.x).chain(std::iter::once(y)).collect()
        }
        PropagatorEntry::ZeroDeriv(x) => vec![x],
    }
}

/// A factor that is not a constant is pushed.
fn factor_pushes(cg: &CallGraph, factor: &Expression, pushed: &mut Vec<Pushed>) -> Result<(), AdjointError> {
    let Some(root) = factor.root() else { return Ok(()) };
    let value = match &factor.vertices[root] {
        ExprVertex::Constant(_) => return Ok(()),
        ExprVertex::Variable(reference) if factor.vertices.len() == 1 => reference.clone(),
        _ => {
            // The tangent pass writes factors as constants or partial/accumulation temporaries.
            return Err(AdjointError::Unsupported("a propagator factor that is an expression".into()));
        }
    };
    if let Some(base) = value.base_symbol()
        && cg.symbols[base].shape.rank() > 0
        && value.effective_rank(cg) > 0
    {
        return Err(AdjointError::Unsupported(format!(
            "array-valued factor {} (array statements) is not taped yet",
            cg.symbol_name(base)
        )));
    }
    if !pushed.iter().any(|p| p.value.same_place(&value)) {
        pushed.push(Pushed { value, integer: false });
    }
    Ok(())
}

/// Every variable in a subscript of `reference` (not its own subscripts: its value covers them).
fn subscript_pushes(cg: &CallGraph, reference: &VariableReference, pushed: &mut Vec<Pushed>) {
    for vertex in &reference.vertices {
        let VarRefVertex::ArrayElement(access) = vertex else { continue };
        for triplet in &access.indices {
            for part in [&triplet.index, &triplet.bound, &triplet.stride].into_iter().flatten() {
                for (_, v) in part.vertices.iter() {
                    let ExprVertex::Variable(index) = v else { continue };
                    let integer = index.base_symbol().is_some_and(|s| cg.symbols[s].ty == SymbolType::Integer);
                    if integer && !pushed.iter().any(|p| p.value.same_place(index)) {
                        pushed.push(Pushed { value: index.clone(), integer: true });
                    }
                }
            }
        }
    }
}

fn emit_pushes(cg: &mut CallGraph, pushed: &[Pushed], taping: &mut Vec<Statement>) {
    for p in pushed {
        let mut value = p.value.clone();
        value.deriv = false;
        let (id, routine) = if p.integer { ("inline_push_i", "push_i_s0") } else { ("inline_push", "push_s0") };
        taping.push(inlinable_call(cg, id, routine, vec![ArgumentValue::Variable(value)]));
    }
}
