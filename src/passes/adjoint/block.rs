//! The adjoint of a basic block: its tangent statements walked backwards. Each statement first
//! pops what the taping pushed for it (in reverse) into `<prefix>Symbol_N` temporaries, then:
//! - a derivative propagator becomes its transpose, entries in reverse order, as runtime calls
//!   on the adjoint components: a unit entry `T = S` becomes `IncDeriv(T, S)` (S̄ += T̄), a −1
//!   entry `DecDeriv`, a scaled one `Saxpy(a, T, S)` (S̄ += a·T̄); an entry that sets its
//!   target (SetDeriv, SetNegDeriv, Sax) is followed by `ZeroDeriv(T)`, since the target's
//!   earlier value did not reach the output through it;
//! - a subroutine call is called again (the reversal template runs the callee's adjoint), with
//!   the subscripts the taping saw;
//! - markers are kept; assignments have no adjoint (their effect on derivatives is in the
//!   propagators), and neither have TypeChange's conversions: `oad_convert` copies values and
//!   leaves derivatives alone, so its adjoint is the identity (as in the tangent code).
//!
//! Temporaries allocated to match (`oad_AllocateMatching`) are allocated again at the top, so
//! the adjoint sweep has them even when it runs in an activation of its own (split reversal).

use crate::ir::build::{Temporaries, inlinable_call, shape_of_rank, whole_reference};
use crate::ir::*;

use super::tape::{Pushed, allocation_of, transposed_operand};

/// The reverse sweep of one basic block of tangent code, given what its taping pushed.
pub fn adjoint_block(
    cg: &mut CallGraph,
    temporaries: &mut Temporaries,
    scope: ScopeId,
    statements: &[Statement],
    pushes: &[Vec<Pushed>],
    recompute: Vec<Vec<Statement>>,
) -> Vec<Statement> {
    let mut out = Vec::with_capacity(statements.len() * 2);
    // Derivative temporaries of array shape are allocated first (those passed to calls are
    // allocated again right before the reverse call, on the section the taping saw).
    let passed: Vec<SymbolId> = statements
        .iter()
        .filter_map(|s| match s {
            Statement::SubroutineCall(call) => Some(call.arguments.iter()),
            _ => None,
        })
        .flatten()
        .filter_map(|a| match &a.value {
            ArgumentValue::Variable(r) => r.base_symbol(),
            ArgumentValue::Constant(_) => None,
        })
        .collect();
    for statement in statements {
        if let Statement::InlinableSubroutineCall(call) = statement
            && cg.name(call.subroutine_name) == "oad_AllocateMatching"
            && !matches!(call.arguments.first().map(|a| &a.value),
                Some(ArgumentValue::Variable(t)) if t.base_symbol().is_some_and(|b| passed.contains(&b)))
        {
            out.push(statement.clone());
        }
    }
    for ((statement, pushed), again) in statements.iter().zip(pushes).zip(recompute).rev() {
        let popped = pop(cg, temporaries, scope, pushed, &mut out);
        // A sequence taped by its values computes its partials and Jacobian here, with the
        // subscripts its propagator popped.
        for mut statement in again {
            if let Statement::Assignment(a) = &mut statement {
                for (_, vertex) in a.rhs.vertices.iter_mut() {
                    if let ExprVertex::Variable(reference) = vertex {
                        substitute_subscripts(reference, &popped);
                    }
                }
            }
            out.push(statement);
        }
        match statement {
            Statement::DerivativePropagator(propagator) => {
                for entry in propagator.entries.iter().rev() {
                    transpose(cg, entry, &popped, &mut out);
                }
            }
            Statement::SubroutineCall(call) => {
                for argument in &call.arguments {
                    if let ArgumentValue::Variable(reference) = &argument.value
                        && let Some(like) = allocation_of(cg, statements, reference)
                    {
                        let target = with_popped(reference, &popped);
                        let like = with_popped(like, &popped);
                        out.push(inlinable_call(
                            cg,
                            "oad_allocate_matching",
                            "oad_AllocateMatching",
                            vec![ArgumentValue::Variable(target), ArgumentValue::Variable(like)],
                        ));
                    }
                }
                let mut call = call.clone();
                for argument in &mut call.arguments {
                    if let ArgumentValue::Variable(reference) = &mut argument.value {
                        substitute_subscripts(reference, &popped);
                    }
                }
                out.push(Statement::SubroutineCall(call));
            }
            Statement::Assignment(a) if a.lhs.deriv => {
                if let Some(source) = transposed_operand(cg, a) {
                    transpose_back(cg, temporaries, scope, a, source, &mut out);
                }
            }
            Statement::Marker(_) => out.push(statement.clone()),
            Statement::Assignment(_) | Statement::InlinableSubroutineCall(_) => {}
        }
    }
    out
}

/// The adjoint of `b.d = transpose(a.d)`: `t.d = transpose(b.d)` into an active temporary
/// shaped like `a`, `ā += t̄`, `b̄ = 0`.
fn transpose_back(
    cg: &mut CallGraph,
    temporaries: &mut Temporaries,
    scope: ScopeId,
    assignment: &Assignment,
    source: &VariableReference,
    out: &mut Vec<Statement>,
) {
    let Some(base) = source.base_symbol() else { return };
    let like = cg.symbols[base].clone();
    let rank = source.effective_rank(cg);
    let whole = source.array_access().is_none() && like.dimensions.len() == rank;
    let temporary = temporaries.fresh(cg, scope, "Symbol", |s| {
        s.active = true;
        s.ty = like.ty;
        s.fe_type = like.fe_type;
        s.shape = shape_of_rank(rank);
        s.dimensions = if whole { like.dimensions.clone() } else { Vec::new() };
    });
    let mut target = whole_reference(cg, temporary, true);
    let mut plain_source = source.clone();
    plain_source.deriv = false;
    if cg.symbols[temporary].dimensions.is_empty() {
        out.push(inlinable_call(
            cg,
            "oad_allocate_matching",
            "oad_AllocateMatching",
            vec![ArgumentValue::Variable(target.clone()), ArgumentValue::Variable(plain_source.clone())],
        ));
    }
    target.deriv = true;
    let mut operand = assignment.lhs.clone();
    operand.deriv = true;
    let mut rhs = assignment.rhs.clone();
    for (_, vertex) in rhs.vertices.iter_mut() {
        if let ExprVertex::Variable(r) = vertex {
            let id = r.id;
            *r = operand.clone();
            r.id = id;
        }
    }
    let back = crate::ir::build::assignment(cg, "reverse_assignment", target.clone(), rhs);
    out.push(Statement::Assignment(back));
    target.deriv = false;
    let mut lhs = assignment.lhs.clone();
    lhs.deriv = false;
    out.push(inlinable_call(
        cg,
        "inline_IncDeriv",
        "IncDeriv",
        vec![ArgumentValue::Variable(target), ArgumentValue::Variable(plain_source)],
    ));
    out.push(inlinable_call(cg, "inline_zeroderiv", "ZeroDeriv", vec![ArgumentValue::Variable(lhs)]));
}

/// Pops what was pushed, last first, into new temporaries; returns (pushed value, temporary).
/// An array factor's copy is declared with its bounds, or allocated from its popped count.
fn pop(
    cg: &mut CallGraph,
    temporaries: &mut Temporaries,
    scope: ScopeId,
    pushed: &[Pushed],
    out: &mut Vec<Statement>,
) -> Vec<(VariableReference, VariableReference)> {
    let mut popped: Vec<(VariableReference, VariableReference)> = Vec::with_capacity(pushed.len());
    let mut count: Option<VariableReference> = None;
    for p in pushed.iter().rev() {
        let temporary = match &p.into {
            Some(into) => into.clone(),
            None => {
                let symbol = temporaries.fresh(cg, scope, "Symbol", |s| {
                    s.active = false;
                    s.ty = if p.integer { SymbolType::Integer } else { SymbolType::Real };
                    s.shape = shape_of_rank(p.rank);
                    s.dimensions = p.dimensions.clone();
                });
                whole_reference(cg, symbol, false)
            }
        };
        let (id, routine) = match (p.integer, p.rank) {
            (true, _) => ("inline_pop_i", "pop_i_s0"),
            (false, 0) => ("inline_pop", "pop_s0"),
            (false, 1) => ("inline_pop", "pop_s1"),
            (false, _) => ("inline_pop", "pop_s2"),
        };
        out.push(inlinable_call(cg, id, routine, vec![ArgumentValue::Variable(temporary.clone())]));
        if p.integer && p.size_of_previous {
            count = Some(temporary);
            continue;
        }
        if let Some(count) = count.take()
            && !p.integer
            && p.rank > 0
        {
            // The pop must land in storage of the taped size: allocate before it.
            let pop = out.pop();
            out.push(inlinable_call(
                cg,
                "oad_allocate_shape",
                "oad_AllocateShape",
                vec![ArgumentValue::Variable(temporary.clone()), ArgumentValue::Variable(count)],
            ));
            out.extend(pop);
        }
        popped.push((p.value.clone(), temporary));
    }
    popped
}

/// `reference` with its subscripts reading the popped values, as a runtime-call operand
/// (the call acts on the derivative component itself).
fn with_popped(reference: &VariableReference, popped: &[(VariableReference, VariableReference)]) -> VariableReference {
    let mut reference = reference.clone();
    reference.deriv = false;
    substitute_subscripts(&mut reference, popped);
    reference
}

/// Replaces every subscript variable that was pushed by the temporary it was popped into.
pub fn substitute_subscripts(reference: &mut VariableReference, popped: &[(VariableReference, VariableReference)]) {
    for vertex in &mut reference.vertices {
        let VarRefVertex::ArrayElement(access) = vertex else { continue };
        for triplet in &mut access.indices {
            for part in [&mut triplet.index, &mut triplet.bound, &mut triplet.stride].into_iter().flatten() {
                for (_, v) in part.vertices.iter_mut() {
                    let ExprVertex::Variable(index) = v else { continue };
                    if let Some((_, temporary)) = popped.iter().find(|(value, _)| value.same_place(index)) {
                        let mut replacement = temporary.clone();
                        replacement.id = index.id;
                        *index = replacement;
                    }
                }
            }
        }
    }
}

/// The factor of a scaled term as a runtime-call argument: its popped value or its constant
/// (the taping refuses any other factor, so `None` does not occur after a successful taping).
fn factor(a: &Expression, popped: &[(VariableReference, VariableReference)]) -> Option<ArgumentValue> {
    match &a.vertices[a.root()?] {
        ExprVertex::Constant(c) => Some(ArgumentValue::Constant(c.clone())),
        ExprVertex::Variable(v) => Some(ArgumentValue::Variable(
            popped.iter().find(|(value, _)| value.same_place(v)).map_or_else(|| v.clone(), |(_, t)| t.clone()),
        )),
        _ => None,
    }
}

/// The adjoint of one tangent propagator entry.
fn transpose(
    cg: &mut CallGraph,
    entry: &PropagatorEntry,
    popped: &[(VariableReference, VariableReference)],
    out: &mut Vec<Statement>,
) {
    let var = |r: &VariableReference| ArgumentValue::Variable(with_popped(r, popped));
    match entry {
        PropagatorEntry::SetDeriv { target, source } | PropagatorEntry::IncDeriv { target, source } => {
            out.push(inlinable_call(cg, "inline_IncDeriv", "IncDeriv", vec![var(target), var(source)]));
        }
        PropagatorEntry::SetNegDeriv { target, source } | PropagatorEntry::DecDeriv { target, source } => {
            out.push(inlinable_call(cg, "inline_DecDeriv", "DecDeriv", vec![var(target), var(source)]));
        }
        PropagatorEntry::Sax { terms, y } | PropagatorEntry::Saxpy { terms, y } => {
            for term in terms.iter().rev() {
                if let Some(a) = factor(&term.a, popped) {
                    out.push(inlinable_call(cg, "inline_saxpy", "Saxpy", vec![a, var(y), var(&term.x)]));
                }
            }
        }
        PropagatorEntry::ZeroDeriv(_) => {}
    }
    match entry {
        PropagatorEntry::SetDeriv { target: t, .. }
        | PropagatorEntry::SetNegDeriv { target: t, .. }
        | PropagatorEntry::Sax { y: t, .. }
        | PropagatorEntry::ZeroDeriv(t) => {
            out.push(inlinable_call(cg, "inline_zeroderiv", "ZeroDeriv", vec![var(t)]));
        }
        PropagatorEntry::IncDeriv { .. } | PropagatorEntry::DecDeriv { .. } | PropagatorEntry::Saxpy { .. } => {}
    }
}
