//! Walks over every variable reference of a call graph, for passes that rewrite references
//! wherever they occur (statements, conditions, loop headers, side-effect lists).

use super::*;

impl CallGraph {
    /// Calls `f` on every variable reference of every routine, subscripts included.
    pub fn for_each_reference_mut(&mut self, f: &mut impl FnMut(&mut VariableReference)) {
        for (_, routine) in self.routines.iter_mut() {
            match routine {
                Routine::ControlFlowGraph(cfg) => {
                    let effects = &mut cfg.side_effects;
                    for list in [
                        &mut effects.mod_local,
                        &mut effects.modified,
                        &mut effects.read_local,
                        &mut effects.read,
                        &mut effects.on_entry,
                    ]
                    .into_iter()
                    .flatten()
                    {
                        list.iter_mut().for_each(|r| reference(r, f));
                    }
                    flow_graph(&mut cfg.graph, f);
                }
                Routine::ReplacementList(list) => {
                    for replacement in &mut list.replacements {
                        flow_graph(&mut replacement.graph, f);
                    }
                }
            }
        }
    }
}

fn flow_graph(graph: &mut FlowGraph, f: &mut impl FnMut(&mut VariableReference)) {
    for (_, vertex) in graph.vertices.iter_mut() {
        match &mut vertex.kind {
            CfgVertexKind::BasicBlock(block) => block.statements.iter_mut().for_each(|s| statement(s, f)),
            CfgVertexKind::If(c)
            | CfgVertexKind::PreLoop(c)
            | CfgVertexKind::PostLoop(c)
            | CfgVertexKind::Branch(c) => {
                c.condition.iter_mut().for_each(|e| expression(e, f));
            }
            CfgVertexKind::ForLoop(for_loop) => {
                for a in [&mut for_loop.initialization, &mut for_loop.update].into_iter().flatten() {
                    assignment(a, f);
                }
                for_loop.condition.iter_mut().for_each(|e| expression(e, f));
            }
            CfgVertexKind::Entry
            | CfgVertexKind::Exit
            | CfgVertexKind::EndBranch
            | CfgVertexKind::EndLoop
            | CfgVertexKind::Label
            | CfgVertexKind::Goto => {}
        }
    }
}

/// Calls `f` on every variable reference of one statement, subscripts included.
pub fn statement_references_mut(s: &mut Statement, f: &mut impl FnMut(&mut VariableReference)) {
    statement(s, f);
}

/// Calls `f` on every variable reference of one expression, subscripts included.
pub fn expression_references_mut(e: &mut Expression, f: &mut impl FnMut(&mut VariableReference)) {
    expression(e, f);
}

fn statement(s: &mut Statement, f: &mut impl FnMut(&mut VariableReference)) {
    match s {
        Statement::Assignment(a) => assignment(a, f),
        Statement::SubroutineCall(call) => call.arguments.iter_mut().for_each(|a| argument(a, f)),
        Statement::InlinableSubroutineCall(call) => call.arguments.iter_mut().for_each(|a| argument(a, f)),
        Statement::Marker(_) => {}
        Statement::DerivativePropagator(propagator) => {
            for entry in &mut propagator.entries {
                match entry {
                    PropagatorEntry::SetDeriv { target, source }
                    | PropagatorEntry::SetNegDeriv { target, source }
                    | PropagatorEntry::IncDeriv { target, source }
                    | PropagatorEntry::DecDeriv { target, source } => {
                        reference(target, f);
                        reference(source, f);
                    }
                    PropagatorEntry::Sax { terms, y } | PropagatorEntry::Saxpy { terms, y } => {
                        for term in terms {
                            expression(&mut term.a, f);
                            reference(&mut term.x, f);
                        }
                        reference(y, f);
                    }
                    PropagatorEntry::ZeroDeriv(x) => reference(x, f),
                }
            }
        }
    }
}

fn argument(a: &mut Argument, f: &mut impl FnMut(&mut VariableReference)) {
    if let ArgumentValue::Variable(r) = &mut a.value {
        reference(r, f);
    }
}

fn assignment(a: &mut Assignment, f: &mut impl FnMut(&mut VariableReference)) {
    reference(&mut a.lhs, f);
    expression(&mut a.rhs, f);
}

fn expression(e: &mut Expression, f: &mut impl FnMut(&mut VariableReference)) {
    for (_, vertex) in e.vertices.iter_mut() {
        match vertex {
            ExprVertex::Variable(r) => reference(r, f),
            ExprVertex::FunctionCall(call) => call.arguments.iter_mut().for_each(|r| reference(r, f)),
            ExprVertex::Constant(_) | ExprVertex::Intrinsic(_) | ExprVertex::BooleanOperation(_) => {}
        }
    }
}

fn reference(r: &mut VariableReference, f: &mut impl FnMut(&mut VariableReference)) {
    for vertex in &mut r.vertices {
        if let VarRefVertex::ArrayElement(access) = vertex {
            for triplet in &mut access.indices {
                for part in [&mut triplet.index, &mut triplet.bound, &mut triplet.stride].into_iter().flatten() {
                    expression(part, f);
                }
            }
        }
    }
    f(r);
}
