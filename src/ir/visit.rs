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

/// Calls `f` on the variable references a flow graph reads, in document order: right-hand sides,
/// subscripts (of left-hand sides too), conditions, loop headers and call arguments. Not
/// left-hand sides themselves, and not derivative propagators: their du-ud sets are not
/// chains of definitions reaching a use.
pub fn each_use<'g>(fg: &'g FlowGraph, f: &mut impl FnMut(&'g VariableReference)) {
    for (_, vertex) in fg.vertices.iter() {
        match &vertex.kind {
            CfgVertexKind::BasicBlock(bb) => {
                for statement in &bb.statements {
                    match statement {
                        Statement::Assignment(a) => use_assignment(a, f),
                        Statement::SubroutineCall(call) => use_arguments(call.arguments.iter().map(|a| &a.value), f),
                        Statement::InlinableSubroutineCall(call) => {
                            use_arguments(call.arguments.iter().map(|a| &a.value), f)
                        }
                        Statement::Marker(_) | Statement::DerivativePropagator(_) => {}
                    }
                }
            }
            CfgVertexKind::If(c)
            | CfgVertexKind::PreLoop(c)
            | CfgVertexKind::PostLoop(c)
            | CfgVertexKind::Branch(c) => {
                c.condition.iter().for_each(|e| use_expression(e, f));
            }
            CfgVertexKind::ForLoop(l) => {
                [&l.initialization, &l.update].into_iter().flatten().for_each(|a| use_assignment(a, f));
                l.condition.iter().for_each(|e| use_expression(e, f));
            }
            _ => {}
        }
    }
}

fn use_arguments<'g>(values: impl Iterator<Item = &'g ArgumentValue>, f: &mut impl FnMut(&'g VariableReference)) {
    for value in values {
        if let ArgumentValue::Variable(r) = value {
            use_reference(r, f);
        }
    }
}

fn use_assignment<'g>(a: &'g Assignment, f: &mut impl FnMut(&'g VariableReference)) {
    use_subscripts(&a.lhs, f);
    use_expression(&a.rhs, f);
}

fn use_expression<'g>(e: &'g Expression, f: &mut impl FnMut(&'g VariableReference)) {
    for (_, vertex) in e.vertices.iter() {
        match vertex {
            ExprVertex::Variable(r) => use_reference(r, f),
            ExprVertex::FunctionCall(call) => call.arguments.iter().for_each(|r| use_reference(r, f)),
            ExprVertex::Constant(_) | ExprVertex::Intrinsic(_) | ExprVertex::BooleanOperation(_) => {}
        }
    }
}

fn use_reference<'g>(r: &'g VariableReference, f: &mut impl FnMut(&'g VariableReference)) {
    use_subscripts(r, f);
    f(r);
}

fn use_subscripts<'g>(r: &'g VariableReference, f: &mut impl FnMut(&'g VariableReference)) {
    for vertex in &r.vertices {
        if let VarRefVertex::ArrayElement(access) = vertex {
            for triplet in &access.indices {
                [&triplet.index, &triplet.bound, &triplet.stride]
                    .into_iter()
                    .flatten()
                    .for_each(|e| use_expression(e, f));
            }
        }
    }
}
