//! Fortran-like one-line text of references, expressions and statements, for people reading
//! graph views and messages (never parsed back). Expressions are cut off after
//! [`MAX_TEXT`] characters, so a huge right-hand side cannot swamp a view.

use super::*;

/// Characters after which an expression's text ends in `…`.
pub const MAX_TEXT: usize = 160;

/// `A_3(I_5, 2)`, `X(1:N:2)`, and `.d` for a derivative component.
pub fn reference(cg: &CallGraph, reference: &VariableReference) -> String {
    let mut out = String::new();
    push_reference(cg, reference, &mut out);
    out
}

/// The whole expression, infix where Fortran writes an operator.
pub fn expression(cg: &CallGraph, expression: &Expression) -> String {
    let mut out = String::new();
    push_expression(cg, expression, &mut out);
    out
}

/// `lhs = rhs`, `call name(args)`, a propagator's entries joined by `; `, …
pub fn statement(cg: &CallGraph, statement: &Statement) -> String {
    match statement {
        Statement::Assignment(a) => assignment(cg, a),
        Statement::SubroutineCall(call) => {
            let name = call.symbol.map_or("?", |s| cg.symbol_name(s));
            format!("call {name}({})", arguments(cg, &call.arguments))
        }
        Statement::Marker(_) => "marker".to_owned(),
        Statement::InlinableSubroutineCall(call) => {
            format!("{}({})", cg.name(call.subroutine_name), arguments(cg, &call.arguments))
        }
        Statement::DerivativePropagator(p) => {
            let entries: Vec<String> = p.entries.iter().map(|e| propagator_entry(cg, e)).collect();
            format!("propagator: {}", entries.join("; "))
        }
    }
}

pub fn assignment(cg: &CallGraph, a: &Assignment) -> String {
    format!("{} = {}", reference(cg, &a.lhs), expression(cg, &a.rhs))
}

/// One entry of a derivative propagator: `y.d = x.d`, `y.d += a*x.d`, `x.d = 0`.
pub fn propagator_entry(cg: &CallGraph, entry: &PropagatorEntry) -> String {
    let r = |v: &VariableReference| reference(cg, v);
    let terms = |terms: &[ScaledTerm]| -> String {
        let parts: Vec<String> = terms.iter().map(|t| format!("{}*{}", expression(cg, &t.a), r(&t.x))).collect();
        parts.join(" + ")
    };
    match entry {
        PropagatorEntry::SetDeriv { target, source } => format!("{} = {}", r(target), r(source)),
        PropagatorEntry::SetNegDeriv { target, source } => format!("{} = -{}", r(target), r(source)),
        PropagatorEntry::IncDeriv { target, source } => format!("{} += {}", r(target), r(source)),
        PropagatorEntry::DecDeriv { target, source } => format!("{} -= {}", r(target), r(source)),
        PropagatorEntry::Sax { terms: t, y } => format!("{} = {}", r(y), terms(t)),
        PropagatorEntry::Saxpy { terms: t, y } => format!("{} += {}", r(y), terms(t)),
        PropagatorEntry::ZeroDeriv(x) => format!("{} = 0", r(x)),
    }
}

fn arguments(cg: &CallGraph, arguments: &[Argument]) -> String {
    let mut sorted: Vec<&Argument> = arguments.iter().collect();
    sorted.sort_by_key(|a| a.position);
    let parts: Vec<String> = sorted
        .iter()
        .map(|a| match &a.value {
            ArgumentValue::Variable(v) => reference(cg, v),
            ArgumentValue::Constant(c) => cg.name(c.value).to_owned(),
        })
        .collect();
    parts.join(", ")
}

fn push_reference(cg: &CallGraph, reference: &VariableReference, out: &mut String) {
    for vertex in &reference.vertices {
        match vertex {
            VarRefVertex::Symbol(s) => {
                if !out.is_empty() && !out.ends_with(['(', ' ', ',', ':']) {
                    out.push('%');
                }
                out.push_str(cg.symbol_name(s.symbol));
            }
            VarRefVertex::ArrayElement(element) => {
                out.push('(');
                for (k, triplet) in element.indices.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    let section = triplet.bound.is_some() || triplet.stride.is_some();
                    for (n, part) in [&triplet.index, &triplet.bound, &triplet.stride].into_iter().enumerate() {
                        if n > 0 && section && (part.is_some() || n == 1) {
                            out.push(':');
                        }
                        if let Some(e) = part {
                            push_expression(cg, e, out);
                        }
                    }
                }
                out.push(')');
            }
        }
    }
    if reference.deriv {
        out.push_str(".d");
    }
}

fn push_expression(cg: &CallGraph, expression: &Expression, out: &mut String) {
    let table = expression.operand_table();
    match table.root() {
        Some(root) => push_vertex(cg, expression, &table, root, out),
        None => out.push('?'),
    }
}

fn infix(name: &str) -> Option<&'static str> {
    Some(match name {
        "add_scal_scal" | "add_scal_vec" | "add_vec_scal" | "add_vec_vec" => "+",
        "sub_scal_scal" | "sub_scal_vec" | "sub_vec_scal" | "sub_vec_vec" => "-",
        "mul_scal_scal" | "mul_scal_vec" | "mul_vec_scal" | "mul_vec_vec" => "*",
        "div_scal_scal" | "div_scal_vec" | "div_vec_scal" | "div_vec_vec" => "/",
        "pow_scal_scal" | "power_scal_scal" => "**",
        _ => return None,
    })
}

fn push_vertex(cg: &CallGraph, e: &Expression, table: &OperandTable, v: ExprVertexId, out: &mut String) {
    if out.len() > MAX_TEXT {
        if !out.ends_with('…') {
            out.push('…');
        }
        return;
    }
    let operands = table.of(v);
    let list = |out: &mut String| {
        out.push('(');
        for (k, &operand) in operands.iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            push_vertex(cg, e, table, operand, out);
        }
        out.push(')');
    };
    match &e.vertices[v] {
        ExprVertex::Variable(r) => push_reference(cg, r, out),
        ExprVertex::Constant(c) => out.push_str(cg.name(c.value)),
        ExprVertex::Intrinsic(i) => {
            let name = cg.name(i.name);
            match (infix(name), operands) {
                (Some(op), [a, b]) => {
                    out.push('(');
                    push_vertex(cg, e, table, *a, out);
                    out.push_str(&format!(" {op} "));
                    push_vertex(cg, e, table, *b, out);
                    out.push(')');
                }
                (_, [a]) if name == "minus_scal" || name == "minus_vec" => {
                    out.push('-');
                    push_vertex(cg, e, table, *a, out);
                }
                _ => {
                    out.push_str(name);
                    list(out);
                }
            }
        }
        ExprVertex::BooleanOperation(b) => {
            let op = boolean_operator(b.op);
            match operands {
                [a, b] => {
                    out.push('(');
                    push_vertex(cg, e, table, *a, out);
                    out.push_str(&format!(" {op} "));
                    push_vertex(cg, e, table, *b, out);
                    out.push(')');
                }
                _ => {
                    out.push_str(op);
                    list(out);
                }
            }
        }
        ExprVertex::FunctionCall(f) => {
            out.push_str(f.symbol.map_or("?", |s| cg.symbol_name(s)));
            let args: Vec<String> = f.arguments.iter().map(|a| reference(cg, a)).collect();
            out.push('(');
            out.push_str(&args.join(", "));
            out.push(')');
        }
    }
}

/// Fortran's spelling of a boolean operation.
pub fn boolean_operator(op: BooleanOp) -> &'static str {
    match op {
        BooleanOp::LessThan => "<",
        BooleanOp::LessOrEqual => "<=",
        BooleanOp::GreaterThan => ">",
        BooleanOp::GreaterOrEqual => ">=",
        BooleanOp::Equal => "==",
        BooleanOp::NotEqual => "/=",
        BooleanOp::And => ".and.",
        BooleanOp::Or => ".or.",
        BooleanOp::Not => ".not.",
        BooleanOp::Xor => ".neqv.",
    }
}
