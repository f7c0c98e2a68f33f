//! Taping: the forward sweep of a basic block. The tangent code of the block runs as it is
//! (original statements, partials, Jacobian accumulation), except that each derivative
//! propagator is replaced by pushes of what its transpose will need: every factor that is not
//! a constant (`push_s0`) and the value of every variable in a subscript of its references
//! (`push_i_s0`), since those may change before the adjoint sweep reads them. A subroutine call
//! pushes the subscripts of its arguments too, so it is called again on the same elements:
//! after the call, on top of whatever the callee taped (its values saved before the call).
//!
//! Each statement's pushes are recorded, in push order, for the block adjoint to pop.

use crate::ir::build::{Temporaries, assignment, inlinable_call, whole_reference};
use crate::ir::*;

use super::AdjointError;

/// One value pushed for the adjoint.
#[derive(Clone, Debug)]
pub struct Pushed {
    /// The value as the forward sweep names it (a factor temporary, an index variable).
    pub value: VariableReference,
    pub integer: bool,
    /// Rank of a real factor (`push_s0`, `push_s1`, …).
    pub rank: usize,
    /// Declared bounds of an array factor; empty when only known at run time, in which case
    /// its element count is pushed right after it (`size_of_previous`).
    pub dimensions: Vec<DimensionBounds>,
    /// This integer is the element count of the array factor pushed just before.
    pub size_of_previous: bool,
}

impl Pushed {
    fn integer(value: VariableReference) -> Pushed {
        Pushed { value, integer: true, rank: 0, dimensions: Vec::new(), size_of_previous: false }
    }
}

/// A block's forward sweep and, per statement of the tangent block, what it pushed.
pub struct TapedBlock {
    pub taping: Vec<Statement>,
    pub pushes: Vec<Vec<Pushed>>,
}

/// The forward sweep of one basic block of tangent code.
pub fn tape_block(
    cg: &mut CallGraph,
    temporaries: &mut Temporaries,
    scope: ScopeId,
    statements: &[Statement],
    restored: &[SymbolId],
) -> Result<TapedBlock, AdjointError> {
    let mut taping = Vec::with_capacity(statements.len() + 4);
    let mut pushes = Vec::with_capacity(statements.len());
    for statement in statements {
        let mut pushed = Vec::new();
        match statement {
            Statement::DerivativePropagator(propagator) => {
                for entry in &propagator.entries {
                    if let PropagatorEntry::Sax { terms, .. } | PropagatorEntry::Saxpy { terms, .. } = entry {
                        for term in terms {
                            factor_pushes(cg, temporaries, scope, &term.a, &mut taping, &mut pushed)?;
                        }
                    }
                }
                for entry in &propagator.entries {
                    for reference in entry_references(entry) {
                        subscript_pushes(cg, reference, restored, &mut pushed);
                    }
                }
                emit_pushes(cg, &pushed, &mut taping);
            }
            Statement::SubroutineCall(call) => {
                for argument in &call.arguments {
                    if let ArgumentValue::Variable(reference) = &argument.value {
                        subscript_pushes(cg, reference, restored, &mut pushed);
                        // A temporary allocated to match a section is allocated again before
                        // the reverse call: the section's subscripts are taped with the call's.
                        if let Some(like) = allocation_of(cg, statements, reference) {
                            subscript_pushes(cg, like, restored, &mut pushed);
                        }
                    }
                }
                // The callee tapes onto the same stacks during the call, so the subscripts go
                // on top of what it pushed (the reverse sweep pops them before the reverse
                // call), saved before the call in case it changes them.
                let mut saved = Vec::with_capacity(pushed.len());
                for p in &pushed {
                    let symbol = temporaries.fresh(cg, scope, "Symbol", |s| {
                        s.ty = SymbolType::Integer;
                        s.active = false;
                    });
                    let copy = whole_reference(cg, symbol, false);
                    let mut value = p.value.clone();
                    value.deriv = false;
                    taping.push(Statement::Assignment(assignment(
                        cg,
                        "_call_subscript",
                        copy.clone(),
                        Expression::variable(value),
                    )));
                    saved.push(Pushed { value: copy, ..p.clone() });
                }
                taping.push(statement.clone());
                emit_pushes(cg, &saved, &mut taping);
            }
            Statement::InlinableSubroutineCall(_) => taping.push(statement.clone()),
            Statement::Assignment(a) if a.lhs.deriv => {
                // The derivative of a direct action (`b.d = transpose(a.d)`) is the adjoint
                // sweep's business; the forward sweep computes values only.
                if transposed_operand(cg, a).is_none() {
                    return Err(AdjointError::Unsupported(format!(
                        "statement {}: only transpose among the direct-action intrinsics has an adjoint yet",
                        cg.name(a.id)
                    )));
                }
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

/// `a` in a derivative assignment `b.d = transpose(a.d)` between arrays or fixed sections: the linear map
/// whose adjoint is `ā += transpose(b̄)`.
pub fn transposed_operand<'a>(cg: &CallGraph, assignment: &'a Assignment) -> Option<&'a VariableReference> {
    let rhs = &assignment.rhs;
    let root = rhs.root()?;
    let ExprVertex::Intrinsic(intrinsic) = &rhs.vertices[root] else { return None };
    if cg.name(intrinsic.name) != "transpose_arr" || rhs.vertices.len() != 2 {
        return None;
    }
    let operand = rhs.vertices.iter().find_map(|(_, v)| match v {
        ExprVertex::Variable(r) => Some(r),
        _ => None,
    })?;
    // Subscripts without variables: nothing to tape for the adjoint to see the same sections.
    let fixed = |r: &VariableReference| {
        let mut read = Vec::new();
        r.symbols_read(&mut read);
        read.len() == 1
    };
    (operand.deriv && fixed(operand) && fixed(&assignment.lhs)).then_some(operand)
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

/// A factor that is not a constant is pushed; an array factor whose bounds are only known at
/// run time is followed by its element count, so the adjoint can allocate its copy.
fn factor_pushes(
    cg: &mut CallGraph,
    temporaries: &mut Temporaries,
    scope: ScopeId,
    factor: &Expression,
    taping: &mut Vec<Statement>,
    pushed: &mut Vec<Pushed>,
) -> Result<(), AdjointError> {
    let Some(root) = factor.root() else { return Ok(()) };
    let value = match &factor.vertices[root] {
        ExprVertex::Constant(_) => return Ok(()),
        ExprVertex::Variable(reference) if factor.vertices.len() == 1 => reference.clone(),
        _ => {
            // The tangent pass writes factors as constants or partial/accumulation temporaries.
            return Err(AdjointError::Unsupported("a propagator factor that is an expression".into()));
        }
    };
    if pushed.iter().any(|p| p.value.same_place(&value)) {
        return Ok(());
    }
    let rank = value.effective_rank(cg);
    let declared = value.base_symbol().map(|b| cg.symbols[b].dimensions.clone()).unwrap_or_default();
    let dimensions =
        if rank > 0 && value.array_access().is_none() && declared.len() == rank { declared } else { Vec::new() };
    if rank > 2 || rank > 1 && dimensions.is_empty() {
        return Err(AdjointError::Unsupported(format!(
            "a Jacobian factor of rank {rank} without declared bounds is not taped yet"
        )));
    }
    let needs_size = rank > 0 && dimensions.is_empty();
    pushed.push(Pushed { value: value.clone(), integer: false, rank, dimensions, size_of_previous: false });
    if needs_size {
        let count = temporaries.fresh(cg, scope, "Symbol", |s| {
            s.ty = SymbolType::Integer;
            s.active = false;
        });
        let count = whole_reference(cg, count, false);
        let mut of = value;
        of.deriv = false;
        let size = Expression::call(cg, "size", SymbolType::Integer, vec![Expression::variable(of)]);
        taping.push(Statement::Assignment(assignment(cg, "_factor_size", count.clone(), size)));
        pushed.push(Pushed { size_of_previous: true, ..Pushed::integer(count) });
    }
    Ok(())
}

/// Every variable in a subscript of `reference` (not its own subscripts: its value covers them),
/// but those the reversal of an explicit loop restores.
fn subscript_pushes(cg: &CallGraph, reference: &VariableReference, restored: &[SymbolId], pushed: &mut Vec<Pushed>) {
    for vertex in &reference.vertices {
        let VarRefVertex::ArrayElement(access) = vertex else { continue };
        for triplet in &access.indices {
            for part in [&triplet.index, &triplet.bound, &triplet.stride].into_iter().flatten() {
                for (_, v) in part.vertices.iter() {
                    let ExprVertex::Variable(index) = v else { continue };
                    let integer = index.base_symbol().is_some_and(|s| cg.symbols[s].ty == SymbolType::Integer);
                    let plain = index.array_access().is_none();
                    if plain && index.base_symbol().is_some_and(|s| restored.contains(&s)) {
                        continue;
                    }
                    if integer && !pushed.iter().any(|p| p.value.same_place(index)) {
                        pushed.push(Pushed::integer(index.clone()));
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
        let (id, routine) = match (p.integer, p.rank) {
            (true, _) => ("inline_push_i", "push_i_s0"),
            (false, 0) => ("inline_push", "push_s0"),
            (false, 1) => ("inline_push", "push_s1"),
            (false, _) => ("inline_push", "push_s2"),
        };
        taping.push(inlinable_call(cg, id, routine, vec![ArgumentValue::Variable(value)]));
    }
}
