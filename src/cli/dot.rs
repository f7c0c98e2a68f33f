//! Graphviz views of a document (`xaifbooster dot`): the call graph, a routine's control flow
//! graph (every placeholder's for a replacement list, so the taping and adjoint sweeps of an
//! adjoint output can be looked at side by side), a statement's expression graph, and a
//! sequence's linearized computational graph before and after preaccumulation with the
//! elimination order (recorded by the tangent pass itself, [`TangentConfig::record_graphs`],
//! so the view shows what the transformation did rather than a re-enactment).
//!
//! Labels are DOT quoted strings: every character of the document that DOT would read as
//! syntax or as an escape (`"`, `\`, line breaks, control characters) is escaped, so any
//! symbol name or string constant gives a graph `dot` parses.
//!
//! [`TangentConfig::record_graphs`]: crate::passes::tangent::TangentConfig::record_graphs

use std::fmt::Write as _;

use crate::ir::text;
use crate::ir::*;
use crate::passes::elimination::{Step, VertexKind};
use crate::passes::tangent::SequenceStats;

pub mod command;

#[derive(Debug, thiserror::Error)]
pub enum DotError {
    #[error("no routine named {name}; the routines are: {routines}")]
    NoRoutine { name: String, routines: String },
    #[error("no routine named head… and no single top routine: choose one with --routine ({routines})")]
    NoTopRoutine { routines: String },
    #[error("no statement with statement_id '{id}'{place}")]
    NoStatement { id: String, place: String },
    #[error("statement_id '{id}' is in several routines ({routines}): choose one with --routine")]
    AmbiguousStatement { id: String, routines: String },
    #[error("statement '{id}' is a {kind}: it has no expression graph")]
    NoExpression { id: String, kind: &'static str },
    #[error("{routine} has no placeholder {placeholder} (it has {present})")]
    NoPlaceholder { routine: String, placeholder: String, present: String },
    #[error("--placeholder: {routine} is a control flow graph, not a replacement list")]
    NotReplacementList { routine: String },
    #[error("no sequence to draw: {0}")]
    NoSequence(String),
    #[error(
        "--svg renders through Graphviz's `dot` program, which is not installed: install Graphviz \
(Debian/Ubuntu: apt-get install graphviz; Fedora: dnf install graphviz; macOS: brew install graphviz), \
or leave out --svg and render the DOT text elsewhere"
    )]
    GraphvizMissing,
    #[error("Graphviz's dot failed: {0}")]
    Graphviz(String),
}

/// `text` as a DOT quoted string (with its quotes).
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    push_escaped(text, &mut out);
    out.push('"');
    out
}

/// Lines as one left-justified DOT label (`\l` ends each line).
pub fn quote_lines<S: AsRef<str>>(lines: &[S]) -> String {
    let mut out = String::from("\"");
    for line in lines {
        push_escaped(line.as_ref(), &mut out);
        out.push_str("\\l");
    }
    out.push('"');
    out
}

fn push_escaped(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            // A backslash starts an escape in DOT labels (`\n`, `\N`, `\G`…): doubled, it is
            // itself.
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
}

/// A DOT document being written.
struct Dot {
    out: String,
}

impl Dot {
    fn new(name: &str) -> Dot {
        let mut out = format!("digraph {} {{\n", quote(name));
        out.push_str("  node [fontname=\"monospace\", fontsize=10];\n  edge [fontname=\"monospace\", fontsize=9];\n");
        Dot { out }
    }

    fn line(&mut self, indent: usize, text: &str) {
        for _ in 0..indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn finish(mut self) -> String {
        self.out.push_str("}\n");
        self.out
    }
}

/// Every routine's name, those without code marked.
pub fn routine_list(cg: &CallGraph) -> String {
    let names: Vec<String> = cg
        .routines
        .iter()
        .map(|(_, r)| {
            let name = cg.symbol_name(r.symbol());
            match r {
                Routine::ControlFlowGraph(cfg) if cfg.graph.vertices.is_empty() => format!("{name} (no code)"),
                _ => name.to_owned(),
            }
        })
        .collect();
    if names.is_empty() { "none".to_owned() } else { names.join(", ") }
}

/// The routine `name` names: its symbol's name exactly, or without the front end's `__N` or
/// `_N` suffix and case (`head` names `head__24`, `foo` names `FOO_24`) when that is unique.
pub fn find_routine(cg: &CallGraph, name: &str) -> Result<RoutineId, DotError> {
    if let Some((id, _)) = cg.routines.iter().find(|(_, r)| cg.symbol_name(r.symbol()) == name) {
        return Ok(id);
    }
    let stem = |s: &str| -> String {
        let s = s.trim_end_matches(|c: char| c.is_ascii_digit());
        if s.len() < name.len() { s.to_owned() } else { s.trim_end_matches('_').to_ascii_lowercase() }
    };
    let wanted = name.to_ascii_lowercase();
    let mut candidates = cg.routines.iter().filter(|(_, r)| stem(cg.symbol_name(r.symbol())) == wanted);
    match (candidates.next(), candidates.next()) {
        (Some((id, _)), None) => Ok(id),
        _ => Err(DotError::NoRoutine { name: name.to_owned(), routines: routine_list(cg) }),
    }
}

/// The routine drawn when none is named: the one called `head…` with code, else the only one
/// with code that no routine calls.
pub fn top_routine(cg: &CallGraph) -> Result<RoutineId, DotError> {
    // Module initialisations are graphs of Entry and Exit alone (in adjoint outputs too).
    let graph_has_code =
        |g: &FlowGraph| g.vertices.iter().any(|(_, v)| !matches!(v.kind, CfgVertexKind::Entry | CfgVertexKind::Exit));
    let has_code = |r: &Routine| match r {
        Routine::ControlFlowGraph(cfg) => graph_has_code(&cfg.graph),
        // Placeholders 1–3 hold the routine's own code; checkpointing fragments every list has.
        Routine::ReplacementList(list) => list
            .replacements
            .iter()
            .any(|p| matches!(cg.name(p.placeholder).trim(), "1" | "2" | "3") && graph_has_code(&p.graph)),
    };
    let is_head = |r: &Routine| {
        let name = cg.symbol_name(r.symbol());
        name.starts_with("head") || name.split_once("_head").is_some_and(|(pre, _)| !pre.is_empty())
    };
    if let Some((id, _)) = cg.routines.iter().find(|(_, r)| has_code(r) && is_head(r)) {
        return Ok(id);
    }
    let called: Vec<RoutineId> = cg.call_edges.iter().map(|e| e.target).collect();
    let mut tops = cg.routines.iter().filter(|(id, r)| has_code(r) && !called.contains(id));
    match (tops.next(), tops.next()) {
        (Some((id, _)), None) => Ok(id),
        _ => Err(DotError::NoTopRoutine { routines: routine_list(cg) }),
    }
}

fn raw<T>(id: la_arena::Idx<T>) -> u32 {
    id.into_raw().into_u32()
}

/// The call graph: routines with code (replacement lists marked), those without dashed, and
/// the external routines their calls reach.
pub fn call_graph(cg: &CallGraph) -> String {
    let mut dot = Dot::new("call graph");
    dot.line(1, "node [shape=box];");
    for (id, routine) in cg.routines.iter() {
        let name = cg.symbol_name(routine.symbol());
        let attributes = match routine {
            Routine::ControlFlowGraph(cfg) if cfg.graph.vertices.is_empty() => {
                format!("label={}, style=dashed", quote(&format!("{name}\n(no code)")))
            }
            Routine::ControlFlowGraph(_) => format!("label={}", quote(name)),
            Routine::ReplacementList(_) => {
                format!("label={}, peripheries=2", quote(&format!("{name}\n(replacement list)")))
            }
        };
        dot.line(1, &format!("r{} [{attributes}];", raw(id)));
    }
    let mut edges: Vec<(u32, u32)> = cg.call_edges.iter().map(|e| (raw(e.source), raw(e.target))).collect();
    edges.sort_unstable();
    edges.dedup();
    for (source, target) in edges {
        dot.line(1, &format!("r{source} -> r{target};"));
    }
    // Calls of routines the document has no vertex for (external, intrinsic-like).
    let known: Vec<SymbolId> = cg.routines.iter().map(|(_, r)| r.symbol()).collect();
    let mut externals: Vec<(u32, SymbolId)> = Vec::new();
    for (id, routine) in cg.routines.iter() {
        let graphs: Vec<&FlowGraph> = match routine {
            Routine::ControlFlowGraph(cfg) => vec![&cfg.graph],
            Routine::ReplacementList(list) => list.graphs().collect(),
        };
        for graph in graphs {
            for (_, vertex) in graph.vertices.iter() {
                let CfgVertexKind::BasicBlock(block) = &vertex.kind else { continue };
                for statement in &block.statements {
                    if let Statement::SubroutineCall(call) = statement
                        && let Some(symbol) = call.symbol
                        && !known.contains(&symbol)
                        && !externals.contains(&(raw(id), symbol))
                    {
                        externals.push((raw(id), symbol));
                    }
                }
            }
        }
    }
    let mut drawn: Vec<SymbolId> = Vec::new();
    for &(_, symbol) in &externals {
        if !drawn.contains(&symbol) {
            drawn.push(symbol);
            let label = format!("{}\n(external)", cg.symbol_name(symbol));
            dot.line(1, &format!("x{} [label={}, style=dashed, shape=box];", raw(symbol), quote(&label)));
        }
    }
    for (source, symbol) in externals {
        dot.line(1, &format!("r{source} -> x{} [style=dashed];", raw(symbol)));
    }
    dot.finish()
}

/// What each placeholder of OpenAD's reversal templates holds.
fn placeholder_role(number: &str) -> &'static str {
    match number {
        "1" => "original code",
        "2" => "taping (forward sweep)",
        "3" => "adjoint (reverse sweep)",
        "4" => "store arguments",
        "5" => "store results",
        "6" => "restore arguments",
        "7" => "restore results",
        "8" => "store time-step arguments",
        "9" => "restore time-step arguments",
        "10" => "strictly anonymous taping",
        "11" => "strictly anonymous adjoint",
        "12" => "store time-step results",
        "13" => "restore time-step results",
        _ => "placeholder",
    }
}

/// A routine's control flow graph; for a replacement list, one cluster per placeholder (only
/// `placeholder` when given).
pub fn control_flow(cg: &CallGraph, routine: RoutineId, placeholder: Option<&str>) -> Result<String, DotError> {
    let name = cg.symbol_name(cg.routines[routine].symbol()).to_owned();
    let mut dot = Dot::new(&format!("control flow of {name}"));
    match &cg.routines[routine] {
        Routine::ControlFlowGraph(cfg) => {
            if placeholder.is_some() {
                return Err(DotError::NotReplacementList { routine: name });
            }
            dot.line(1, &format!("label={};", quote(&name)));
            flow_graph(cg, &cfg.graph, "v", 1, &mut dot);
        }
        Routine::ReplacementList(list) => {
            dot.line(1, &format!("label={};", quote(&format!("{name} (replacement list)"))));
            let chosen: Vec<&Replacement> = list
                .replacements
                .iter()
                .filter(|r| placeholder.is_none_or(|p| cg.name(r.placeholder).trim() == p))
                .collect();
            if let (Some(p), true) = (placeholder, chosen.is_empty()) {
                let present: Vec<&str> = list.replacements.iter().map(|r| cg.name(r.placeholder)).collect();
                return Err(DotError::NoPlaceholder {
                    routine: name,
                    placeholder: p.to_owned(),
                    present: present.join(", "),
                });
            }
            for (k, replacement) in chosen.into_iter().enumerate() {
                let number = cg.name(replacement.placeholder).trim();
                dot.line(1, &format!("subgraph cluster_p{k} {{"));
                let label = format!("placeholder {number}: {}", placeholder_role(number));
                dot.line(2, &format!("label={};", quote(&label)));
                if list.graph_of(replacement).vertices.is_empty() {
                    dot.line(2, &format!("p{k}_empty [label=\"(empty)\", shape=plaintext];"));
                }
                flow_graph(cg, list.graph_of(replacement), &format!("p{k}_v"), 2, &mut dot);
                dot.line(1, "}");
            }
        }
    }
    Ok(dot.finish())
}

fn flow_graph(cg: &CallGraph, graph: &FlowGraph, prefix: &str, indent: usize, dot: &mut Dot) {
    for (id, vertex) in graph.vertices.iter() {
        let vid = cg.name(vertex.id);
        let kind = vertex.kind.element_name();
        let line = |line: u64| if line > 0 { format!(" (line {line})") } else { String::new() };
        let (shape, label) = match &vertex.kind {
            CfgVertexKind::Entry | CfgVertexKind::Exit => ("ellipse", quote(kind)),
            CfgVertexKind::BasicBlock(block) => {
                let mut lines = vec![format!("{kind} {vid}")];
                for statement in &block.statements {
                    match statement {
                        Statement::DerivativePropagator(p) => {
                            lines.push("propagator:".to_owned());
                            lines.extend(p.entries.iter().map(|e| format!("  {}", text::propagator_entry(cg, e))));
                        }
                        other => {
                            let id = other.id().map_or("", |id| cg.name(id));
                            lines.push(format!("{id}: {}", text::statement(cg, other)));
                        }
                    }
                }
                ("box", quote_lines(&lines))
            }
            CfgVertexKind::ForLoop(l) => {
                let part = |a: &Option<Assignment>| a.as_ref().map_or(String::new(), |a| text::assignment(cg, a));
                let condition = l.condition.as_ref().map_or(String::new(), |c| text::expression(cg, c));
                let label = format!(
                    "{kind} {vid}{}\ndo {}; {}; {}",
                    line(l.line),
                    part(&l.initialization),
                    condition,
                    part(&l.update)
                );
                ("hexagon", quote(&label))
            }
            CfgVertexKind::PreLoop(c) | CfgVertexKind::PostLoop(c) => {
                let condition = c.condition.as_ref().map_or(String::new(), |c| text::expression(cg, c));
                ("hexagon", quote(&format!("{kind} {vid}{}\nwhile {condition}", line(c.line))))
            }
            CfgVertexKind::Branch(c) | CfgVertexKind::If(c) => {
                let condition = c.condition.as_ref().map_or(String::new(), |c| text::expression(cg, c));
                ("diamond", quote(&format!("{kind} {vid}{}\n{condition}", line(c.line))))
            }
            CfgVertexKind::EndBranch | CfgVertexKind::EndLoop | CfgVertexKind::Label | CfgVertexKind::Goto => {
                ("octagon", quote(&format!("{kind} {vid}")))
            }
        };
        dot.line(indent, &format!("{prefix}{} [shape={shape}, label={label}];", raw(id)));
    }
    for edge in &graph.edges {
        let label = edge.condition_value.map_or(String::new(), |v| format!(" [label={}]", quote(&v.to_string())));
        dot.line(indent, &format!("{prefix}{} -> {prefix}{}{label};", raw(edge.source), raw(edge.target)));
    }
}

/// Every statement with this id: the routine it is in and the statement.
fn statements_with_id<'a>(cg: &'a CallGraph, id: &str) -> Vec<(RoutineId, &'a Statement)> {
    let mut found = Vec::new();
    for (routine_id, routine) in cg.routines.iter() {
        let graphs: Vec<&FlowGraph> = match routine {
            Routine::ControlFlowGraph(cfg) => vec![&cfg.graph],
            Routine::ReplacementList(list) => list.graphs().collect(),
        };
        for graph in graphs {
            for (_, vertex) in graph.vertices.iter() {
                let CfgVertexKind::BasicBlock(block) = &vertex.kind else { continue };
                for statement in &block.statements {
                    if statement.id().is_some_and(|s| cg.name(s) == id) {
                        found.push((routine_id, statement));
                    }
                }
            }
        }
    }
    found
}

/// The expression graph of the statement `id` (of `routine` when given): operands point to
/// their operations, edges labelled by operand position, the right-hand side's root to the
/// left-hand side; a call's arguments point to the call.
pub fn expression_graph(cg: &CallGraph, routine: Option<RoutineId>, id: &str) -> Result<String, DotError> {
    let mut found = statements_with_id(cg, id);
    if let Some(routine) = routine {
        found.retain(|(r, _)| *r == routine);
    }
    let mut routines: Vec<RoutineId> = found.iter().map(|(r, _)| *r).collect();
    routines.dedup();
    let statement = match (found.first(), routines.len()) {
        (None, _) => {
            let place = routine.map_or(String::new(), |r| format!(" in {}", cg.symbol_name(cg.routines[r].symbol())));
            return Err(DotError::NoStatement { id: id.to_owned(), place });
        }
        (Some(_), 2..) => {
            let names: Vec<&str> = routines.iter().map(|r| cg.symbol_name(cg.routines[*r].symbol())).collect();
            return Err(DotError::AmbiguousStatement { id: id.to_owned(), routines: names.join(", ") });
        }
        (Some((_, statement)), _) => *statement,
    };
    let mut dot = Dot::new(&format!("statement {id}"));
    dot.line(1, &format!("label={};", quote(&format!("statement {id}: {}", text::statement(cg, statement)))));
    match statement {
        Statement::Assignment(a) => {
            let root = expression_vertices(cg, &a.rhs, "e", &mut dot);
            dot.line(1, &format!("lhs [shape=box, style=bold, label={}];", quote(&text::reference(cg, &a.lhs))));
            if let Some(root) = root {
                dot.line(1, &format!("e{} -> lhs [label=\"=\"];", raw(root)));
            }
        }
        Statement::SubroutineCall(call) => {
            let name = call.symbol.map_or("?", |s| cg.symbol_name(s));
            call_vertices(cg, &format!("call {name}"), &call.arguments, &mut dot);
        }
        Statement::InlinableSubroutineCall(call) => {
            call_vertices(cg, cg.name(call.subroutine_name), &call.arguments, &mut dot);
        }
        Statement::Marker(_) => return Err(DotError::NoExpression { id: id.to_owned(), kind: "marker" }),
        Statement::DerivativePropagator(_) => {
            return Err(DotError::NoExpression { id: id.to_owned(), kind: "derivative propagator" });
        }
    }
    Ok(dot.finish())
}

fn call_vertices(cg: &CallGraph, name: &str, arguments: &[Argument], dot: &mut Dot) {
    dot.line(1, &format!("call [shape=box, style=bold, label={}];", quote(name)));
    for (k, argument) in arguments.iter().enumerate() {
        let label = match &argument.value {
            ArgumentValue::Variable(v) => text::reference(cg, v),
            ArgumentValue::Constant(c) => cg.name(c.value).to_owned(),
        };
        dot.line(1, &format!("a{k} [shape=box, label={}];", quote(&label)));
        dot.line(1, &format!("a{k} -> call [label={}];", quote(&argument.position.to_string())));
    }
}

/// The vertices and edges of an expression; returns its root.
fn expression_vertices(cg: &CallGraph, e: &Expression, prefix: &str, dot: &mut Dot) -> Option<ExprVertexId> {
    for (id, vertex) in e.vertices.iter() {
        let (shape, label) = match vertex {
            ExprVertex::Variable(r) => ("box", text::reference(cg, r)),
            ExprVertex::Constant(c) => ("plaintext", cg.name(c.value).to_owned()),
            ExprVertex::Intrinsic(i) => ("ellipse", cg.name(i.name).to_owned()),
            ExprVertex::BooleanOperation(b) => ("ellipse", text::boolean_operator(b.op).to_owned()),
            ExprVertex::FunctionCall(f) => ("ellipse", format!("call {}", f.symbol.map_or("?", |s| cg.symbol_name(s)))),
        };
        dot.line(1, &format!("{prefix}{} [shape={shape}, label={}];", raw(id), quote(&label)));
    }
    for edge in &e.edges {
        dot.line(
            1,
            &format!(
                "{prefix}{} -> {prefix}{} [label={}];",
                raw(edge.source),
                raw(edge.target),
                quote(&edge.position.to_string())
            ),
        );
    }
    e.root()
}

/// What an elimination step did, for the order's legend.
fn step_text(step: Step, vertices: &[(VertexKind, String)]) -> String {
    let name = |k: usize| vertices.get(k).map_or(String::new(), |(_, label)| format!(" ({label})"));
    match step {
        Step::Vertex(k) => format!("eliminate vertex {k}{}", name(k)),
        Step::FrontEdge(i, k) => format!("front-eliminate edge {i} -> {k}"),
        Step::BackEdge(k, j) => format!("back-eliminate edge {k} -> {j}"),
        Step::Face(i, j) => format!("eliminate face ({i}, {j}) of the line graph"),
    }
}

/// The linearized computational graphs of `sequences` (with recorded graphs): for each, the
/// graph before elimination (eliminated vertices numbered by their step), the remainder graph
/// the propagator multiplies through, and the elimination order.
pub fn linearized_graphs(sequences: &[&SequenceStats]) -> String {
    let mut dot = Dot::new("linearized computational graphs");
    dot.line(1, "compound=true;");
    for (s, sequence) in sequences.iter().enumerate() {
        let Some(graph) = &sequence.graph else { continue };
        dot.line(1, &format!("subgraph cluster_s{s} {{"));
        let title = format!(
            "{}, basic block {}: statements {} ({} elimination)",
            sequence.routine,
            sequence.basic_block,
            graph.statements.join(", "),
            sequence.method
        );
        dot.line(2, &format!("label={};", quote(&title)));
        let mut eliminated_at: Vec<Option<usize>> = vec![None; graph.vertices.len()];
        for (n, step) in graph.order.iter().enumerate() {
            if let Step::Vertex(k) = step
                && let Some(slot) = eliminated_at.get_mut(*k)
            {
                *slot = Some(n + 1);
            }
        }
        for (part, edges, title) in
            [("b", &graph.edges, "before elimination"), ("a", &graph.remainder, "after elimination (remainder)")]
        {
            dot.line(2, &format!("subgraph cluster_s{s}{part} {{"));
            dot.line(3, &format!("label={};", quote(title)));
            let used = |k: usize| edges.iter().any(|(i, j, _)| *i == k || *j == k);
            for (k, (kind, label)) in graph.vertices.iter().enumerate() {
                if part == "a" && *kind == VertexKind::Intermediate && !used(k) {
                    continue;
                }
                let mut text = format!("{k}: {label}");
                if part == "b"
                    && let Some(n) = eliminated_at[k]
                {
                    text.push_str(&format!("\n(eliminated, step {n})"));
                }
                let style = match kind {
                    VertexKind::Independent => "shape=box, style=filled, fillcolor=\"#dde8f8\"",
                    VertexKind::Intermediate => "shape=ellipse",
                    VertexKind::Dependent => "shape=box, peripheries=2, style=filled, fillcolor=\"#f8e8d0\"",
                };
                dot.line(3, &format!("s{s}{part}_{k} [{style}, label={}];", quote(&text)));
            }
            for (i, j, label) in edges.iter() {
                dot.line(3, &format!("s{s}{part}_{i} -> s{s}{part}_{j} [label={}];", quote(label)));
            }
            dot.line(2, "}");
        }
        let mut order = vec!["elimination order:".to_owned()];
        if graph.order.is_empty() {
            order.push("(none: the graph is propagated as it is)".to_owned());
        }
        for (n, step) in graph.order.iter().enumerate() {
            order.push(format!("{}. {}", n + 1, step_text(*step, &graph.vertices)));
        }
        dot.line(2, &format!("s{s}_order [shape=note, label={}];", quote_lines(&order)));
        dot.line(1, "}");
    }
    dot.finish()
}

/// SVG of a DOT document, drawn by Graphviz's `dot` program.
pub fn render_svg(dot: &str) -> Result<Vec<u8>, DotError> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = match Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(DotError::GraphvizMissing),
        Err(e) => return Err(DotError::Graphviz(e.to_string())),
    };
    let mut stdin = child.stdin.take().expect("piped");
    let text = dot.as_bytes().to_vec();
    // Written from another thread: dot may fill its output pipe before it has read all input.
    let writer = std::thread::spawn(move || stdin.write_all(&text));
    let output = child.wait_with_output().map_err(|e| DotError::Graphviz(e.to_string()))?;
    let written = writer.join().unwrap_or(Ok(()));
    if !output.status.success() {
        let message = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        return Err(DotError::Graphviz(if message.is_empty() { output.status.to_string() } else { message }));
    }
    written.map_err(|e| DotError::Graphviz(e.to_string()))?;
    Ok(output.stdout)
}

/// Which sequences of a tangent run a `--what lcg` view shows: those of `routine` (all
/// routines when `None`), of basic block `block`, holding statement `statement`.
pub fn select_sequences<'a>(
    sequences: &'a [SequenceStats],
    routine: Option<&str>,
    block: Option<&str>,
    statement: Option<&str>,
) -> Result<Vec<&'a SequenceStats>, DotError> {
    let chosen: Vec<&SequenceStats> = sequences
        .iter()
        .filter(|s| routine.is_none_or(|r| s.routine == r))
        .filter(|s| block.is_none_or(|b| s.basic_block == b))
        .filter(|s| statement.is_none_or(|id| s.graph.as_ref().is_some_and(|g| g.statements.iter().any(|x| x == id))))
        .collect();
    if chosen.is_empty() {
        let mut why = String::new();
        let _ = write!(why, "no active sequence");
        if let Some(id) = statement {
            let _ = write!(why, " holds statement {id} (a passive statement or not an assignment?)");
        }
        if let Some(b) = block {
            let _ = write!(why, " in basic block {b}");
        }
        if let Some(r) = routine {
            let _ = write!(why, " in {r}");
        }
        return Err(DotError::NoSequence(why));
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_escape_what_dot_would_read() {
        assert_eq!(quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(quote("x\ny\tz"), r#""x\ny z""#);
        assert_eq!(quote_lines(&["1: y = 'a\"'", "2"]), r#""1: y = 'a\"'\l2\l""#);
    }
}
