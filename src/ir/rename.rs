//! Renames every [`Name`] a routine holds: for moving a routine between two call graphs whose
//! name tables differ (the streaming driver reads routines on one thread and transforms them
//! on another, each with its own table).
//!
//! Every struct is destructured whole, without `..`: a field added to the object model is a
//! compile error here until it is renamed too (or said to hold no name).

use super::*;

/// What a [`Name`] becomes.
pub trait Renamer {
    fn rename(&mut self, name: Name) -> Name;

    /// What a symbol becomes: itself, unless the routine moves to a call graph whose symbols
    /// are numbered otherwise beyond the head (a parallel worker's temporaries).
    fn symbol(&mut self, symbol: SymbolId) -> SymbolId {
        symbol
    }
}

impl<F: FnMut(Name) -> Name> Renamer for F {
    fn rename(&mut self, name: Name) -> Name {
        self(name)
    }
}

impl Routine {
    /// Renames every name of the routine: its head, side-effect lists and graphs.
    pub fn rename(&mut self, r: &mut impl Renamer) {
        match self {
            Routine::ControlFlowGraph(cfg) => {
                let ControlFlowGraph {
                    id,
                    annotation,
                    symbol,
                    scope: _,
                    body_scope: _,
                    active: _,
                    structured: _,
                    arguments,
                    side_effects,
                    graph,
                } = cfg;
                name(id, r);
                name(annotation, r);
                *symbol = r.symbol(*symbol);
                argument_symbols(arguments, r);
                let SideEffects { mod_local, modified, read_local, read, on_entry } = side_effects;
                for list in [mod_local, modified, read_local, read, on_entry].into_iter().flatten() {
                    list.iter_mut().for_each(|reference| variable_reference(reference, r));
                }
                flow_graph(graph, r);
            }
            Routine::ReplacementList(list) => {
                let ReplacementList {
                    id,
                    annotation,
                    symbol,
                    scope: _,
                    body_scope: _,
                    template_name,
                    arguments,
                    replacements,
                } = list;
                name(id, r);
                name(annotation, r);
                name(template_name, r);
                *symbol = r.symbol(*symbol);
                argument_symbols(arguments, r);
                for replacement in replacements {
                    let Replacement { placeholder, structured: _, graph, repeats } = replacement;
                    name(placeholder, r);
                    if let Some(repeats) = repeats {
                        name(repeats, r);
                    }
                    flow_graph(graph, r);
                }
            }
        }
    }
}

impl CallGraphEdge {
    pub fn rename(&mut self, r: &mut impl Renamer) {
        let CallGraphEdge { id, annotation, source: _, target: _ } = self;
        name(id, r);
        name(annotation, r);
    }
}

fn name(name: &mut Name, r: &mut impl Renamer) {
    *name = r.rename(*name);
}

fn argument_symbols(arguments: &mut Option<Vec<ArgumentSymbolReference>>, r: &mut impl Renamer) {
    for argument in arguments.iter_mut().flatten() {
        let ArgumentSymbolReference { position: _, symbol, annotation, deriv: _, intent: _ } = argument;
        *symbol = r.symbol(*symbol);
        name(annotation, r);
    }
}

fn flow_graph(graph: &mut FlowGraph, r: &mut impl Renamer) {
    let FlowGraph { vertices, edges } = graph;
    for (_, vertex) in vertices.iter_mut() {
        let CfgVertex { id, annotation, kind } = vertex;
        name(id, r);
        name(annotation, r);
        match kind {
            CfgVertexKind::BasicBlock(block) => {
                let BasicBlock { scope: _, statements } = block;
                statements.iter_mut().for_each(|s| statement(s, r));
            }
            CfgVertexKind::If(c)
            | CfgVertexKind::PreLoop(c)
            | CfgVertexKind::PostLoop(c)
            | CfgVertexKind::Branch(c) => {
                let Conditional { condition, line: _ } = c;
                optional_expression(condition, r);
            }
            CfgVertexKind::ForLoop(for_loop) => {
                let ForLoop { initialization, condition, update, reversal: _, line: _ } = &mut **for_loop;
                if let Some(a) = initialization {
                    assignment(a, r);
                }
                optional_expression(condition, r);
                if let Some(a) = update {
                    assignment(a, r);
                }
            }
            CfgVertexKind::Entry
            | CfgVertexKind::Exit
            | CfgVertexKind::EndBranch
            | CfgVertexKind::EndLoop
            | CfgVertexKind::Label
            | CfgVertexKind::Goto => {}
        }
    }
    for edge in edges {
        let CfgEdge { id, annotation, source: _, target: _, condition_value: _ } = edge;
        name(id, r);
        name(annotation, r);
    }
}

fn statement(s: &mut Statement, r: &mut impl Renamer) {
    match s {
        Statement::Assignment(a) => assignment(a, r),
        Statement::SubroutineCall(call) => {
            let SubroutineCall { id, symbol, active: _, line: _, formal_arg_count: _, arguments } = call;
            name(id, r);
            if let Some(symbol) = symbol {
                *symbol = r.symbol(*symbol);
            }
            arguments.iter_mut().for_each(|a| argument(a, r));
        }
        Statement::Marker(marker) => {
            let Marker { id, annotation } = marker;
            name(id, r);
            name(annotation, r);
        }
        Statement::DerivativePropagator(propagator) => {
            let DerivativePropagator { entries } = propagator;
            for entry in entries {
                match entry {
                    PropagatorEntry::SetDeriv { target, source }
                    | PropagatorEntry::SetNegDeriv { target, source }
                    | PropagatorEntry::IncDeriv { target, source }
                    | PropagatorEntry::DecDeriv { target, source } => {
                        variable_reference(target, r);
                        variable_reference(source, r);
                    }
                    PropagatorEntry::Sax { terms, y } | PropagatorEntry::Saxpy { terms, y } => {
                        for term in terms {
                            let ScaledTerm { a, x } = term;
                            expression(a, r);
                            variable_reference(x, r);
                        }
                        variable_reference(y, r);
                    }
                    PropagatorEntry::ZeroDeriv(target) => variable_reference(target, r),
                }
            }
        }
        Statement::InlinableSubroutineCall(call) => {
            let InlinableSubroutineCall { id, subroutine_name, arguments } = call;
            name(id, r);
            name(subroutine_name, r);
            arguments.iter_mut().for_each(|a| argument(a, r));
        }
    }
}

fn argument(a: &mut Argument, r: &mut impl Renamer) {
    let Argument { position: _, annotation, value } = a;
    name(annotation, r);
    match value {
        ArgumentValue::Variable(reference) => variable_reference(reference, r),
        ArgumentValue::Constant(c) => constant(c, r),
    }
}

fn assignment(a: &mut Assignment, r: &mut impl Renamer) {
    let Assignment { id, do_chain: _, line: _, lhs, lhs_live: _, rhs } = a;
    name(id, r);
    variable_reference(lhs, r);
    expression(rhs, r);
}

fn optional_expression(e: &mut Option<Expression>, r: &mut impl Renamer) {
    if let Some(e) = e {
        expression(e, r);
    }
}

fn expression(e: &mut Expression, r: &mut impl Renamer) {
    let Expression { vertices, edges } = e;
    for (_, vertex) in vertices.iter_mut() {
        match vertex {
            ExprVertex::Variable(reference) => variable_reference(reference, r),
            ExprVertex::Constant(c) => constant(c, r),
            ExprVertex::Intrinsic(intrinsic) => {
                let Intrinsic { id, annotation, name: function, call_type, result_type: _, result_shape: _ } =
                    intrinsic;
                name(id, r);
                name(annotation, r);
                name(function, r);
                name(call_type, r);
            }
            ExprVertex::BooleanOperation(operation) => {
                let BooleanOperation { id, annotation, op: _ } = operation;
                name(id, r);
                name(annotation, r);
            }
            ExprVertex::FunctionCall(call) => {
                let FunctionCall { id, annotation, symbol, arguments } = call;
                if let Some(symbol) = symbol {
                    *symbol = r.symbol(*symbol);
                }
                name(id, r);
                name(annotation, r);
                arguments.iter_mut().for_each(|reference| variable_reference(reference, r));
            }
        }
    }
    for edge in edges {
        let ExprEdge { id, annotation, source: _, target: _, position: _ } = edge;
        name(id, r);
        name(annotation, r);
    }
}

fn constant(c: &mut Constant, r: &mut impl Renamer) {
    let Constant { id, annotation, ty: _, fe_type, value } = c;
    name(id, r);
    name(annotation, r);
    name(fe_type, r);
    name(value, r);
}

fn variable_reference(reference: &mut VariableReference, r: &mut impl Renamer) {
    let VariableReference { id, annotation, active: _, alias: _, du_ud: _, deriv: _, constant: _, vertices, edges } =
        reference;
    name(id, r);
    name(annotation, r);
    for vertex in vertices {
        match vertex {
            VarRefVertex::Symbol(symbol) => {
                let SymbolReference { id, annotation, symbol, properties } = symbol;
                *symbol = r.symbol(*symbol);
                name(id, r);
                name(annotation, r);
                for (key, value) in properties {
                    name(key, r);
                    name(value, r);
                }
            }
            VarRefVertex::ArrayElement(element) => {
                let ArrayElementReference { id, annotation, indices } = element;
                name(id, r);
                name(annotation, r);
                for triplet in indices {
                    let IndexTriplet { index, bound, stride } = triplet;
                    optional_expression(index, r);
                    optional_expression(bound, r);
                    optional_expression(stride, r);
                }
            }
        }
    }
    for edge in edges {
        let VarRefEdge { id, annotation, source: _, target: _ } = edge;
        name(id, r);
        name(annotation, r);
    }
}

impl Symbol {
    /// Renames the symbol's names; its scope stays.
    pub fn rename(&mut self, r: &mut impl Renamer) {
        let Symbol {
            scope: _,
            name: symbol_name,
            kind: _,
            ty: _,
            fe_type,
            shape: _,
            annotation,
            active: _,
            temp: _,
            pointer: _,
            dimensions: _,
        } = self;
        name(symbol_name, r);
        name(fe_type, r);
        name(annotation, r);
    }
}
