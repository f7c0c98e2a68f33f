//! Tracing in the executor: the events of OpenAD's `OAD_trace` runtime (see [`crate::trace`]).
//!
//! A program the `trace` mode produced (a routine whose replacement list uses
//! `tracing_subroutine_template`, or any `oad_trace_*` call) traces itself: its placeholder 2
//! runs, and each `oad_trace_*` call writes its event; the `oad_<intrinsic>` functions that mode
//! renames non-smooth intrinsics to evaluate as the intrinsic and write nothing. Any other
//! program (an original, a tangent or adjoint output) is traced by the executor, which writes
//! the events that [`crate::passes::trace`] would insert, at the same points: its module doc is
//! the specification, and this module follows it rule by rule (calls with their array
//! arguments, non-smooth intrinsics, `ForLoop`/`PreLoop`/`PostLoop` with the vertex's line and
//! every iteration counted, a `cycle`'s back edge included, and a `Branch` with an `EndBranch`,
//! never a two-way `If`). Activity is the pass's (`passes::trace::is_active`). Index values are
//! taken just before the statement, where the traced program computes them.
//!
//! What the pass does not need, for transformed programs: an assignment to an engine
//! temporary (`temp="1"`) is not traced, because a transformation's own code (the tangent's
//! partial of `abs` is a `sign`) is not the original's; an engine temporary that
//! linearization hoisted out of a non-smooth intrinsic's operands is traced as the expression
//! assigned to it earlier in the block. A branch's arms are matched by walking back from the
//! `EndBranch` along first in-edges rather than by the pass's sort; the two agree on
//! structured graphs. A loop or branch left another way (`exit`, `goto`) writes no end: the
//! trace writer closes it with the element around it. The tangent's propagators and the
//! adjoint's taping add no events, so an original and its tangent give equal traces.

use std::io::Write;

use crate::ir::{self, CallGraph, CfgVertexKind, ExprVertex, FlowGraph, Statement};
use crate::trace::{Event, Kind, Open, Writer};

use super::ExecError;
use super::lower::{Expr, Graph};

/// The name of the replacement-list template of a traced routine.
pub const TRACING_TEMPLATE: &str = "tracing_subroutine_template";

/// Where a graph's events go, node by node (empty when the graph traces nothing).
#[derive(Debug, Default)]
pub struct GraphPlan {
    pub nodes: Vec<NodePlan>,
}

#[derive(Debug, Default)]
pub enum NodePlan {
    #[default]
    Nothing,
    Loop(Box<LoopPlan>),
    Branch(Box<BranchPlan>),
    /// An `EndLoop` of a traced loop: arrivals from `counted_from` count iterations.
    EndLoop {
        header: u32,
        counted_from: u32,
    },
    /// An `EndBranch` of a traced branch: the value to trace per predecessor.
    EndBranch(Vec<(u32, i64)>),
    /// A basic block: per statement (as lowered, markers left out).
    Block(Vec<StmtPlan>),
}

#[derive(Debug)]
pub struct LoopPlan {
    pub line: i64,
    pub parts: Vec<(Kind, Vec<TracedArg>)>,
    /// The sources of the back edges (from the `EndLoop` or the body): arrivals from them
    /// are no entries.
    pub back_from: Vec<u32>,
    /// The sources of back edges other than the `EndLoop`'s: an arrival from one ends an
    /// iteration.
    pub counted_from: Vec<u32>,
}

#[derive(Debug)]
pub struct BranchPlan {
    pub line: i64,
    /// The source of the first in-edge: only arrivals from it are traced.
    pub from: Option<u32>,
    pub condition: Option<Vec<TracedArg>>,
}

#[derive(Debug, Default)]
pub enum StmtPlan {
    #[default]
    Nothing,
    Call {
        name: String,
        line: i64,
        /// The call's array arguments.
        args: Vec<TracedArg>,
    },
    Intrinsics(Vec<IntrinsicPlan>),
}

#[derive(Debug)]
pub struct IntrinsicPlan {
    pub name: String,
    pub line: i64,
    pub args: Vec<TracedArg>,
}

/// An active variable and the subscript components of its array reference.
#[derive(Debug)]
pub struct TracedArg {
    pub name: String,
    pub indices: Vec<Expr>,
}

fn raw<T>(id: la_arena::Idx<T>) -> usize {
    id.into_raw().into_u32() as usize
}

/// Whether a document traces itself: a traced replacement list or an `oad_trace_*` call.
pub fn traces_itself(cg: &CallGraph) -> bool {
    cg.routines.iter().any(|(_, routine)| match routine {
        ir::Routine::ReplacementList(list) => cg.name(list.template_name) == TRACING_TEMPLATE,
        ir::Routine::ControlFlowGraph(cfg) => cfg.graph.vertices.iter().any(|(_, v)| match &v.kind {
            CfgVertexKind::BasicBlock(b) => b.statements.iter().any(|s| match s {
                Statement::InlinableSubroutineCall(c) => {
                    cg.name(c.subroutine_name).to_ascii_lowercase().starts_with("oad_trace_")
                }
                _ => false,
            }),
            _ => false,
        }),
    })
}

/// What builds a plan needs from the lowering.
pub(crate) struct Planner<'a> {
    pub cg: &'a CallGraph,
    pub expr: &'a dyn Fn(&ir::Expression) -> Expr,
    /// Whether the document defines the routine of a symbol.
    pub defined: &'a dyn Fn(ir::SymbolId) -> bool,
}

impl Planner<'_> {
    /// Whether a reference is active in the trace mode's sense.
    fn active(&self, r: &ir::VariableReference) -> bool {
        crate::passes::trace::is_active(self.cg, r)
    }

    /// An active variable reference with subscripts: what the trace mode's argument trace
    /// records.
    fn array_argument(&self, r: &ir::VariableReference) -> bool {
        r.array_access().is_some() && self.active(r)
    }

    fn traced_arg(&self, r: &ir::VariableReference) -> TracedArg {
        self.traced_arg_with(r, r.array_access())
    }

    /// `r` traced as if it had the subscripts `access`.
    fn traced_arg_with(&self, r: &ir::VariableReference, access: Option<&ir::ArrayElementReference>) -> TracedArg {
        let name = r.base_symbol().map_or_else(String::new, |s| self.cg.symbol_name(s).to_owned());
        let mut indices = Vec::new();
        if let Some(access) = access {
            for triplet in &access.indices {
                for part in [&triplet.index, &triplet.bound, &triplet.stride].into_iter().flatten() {
                    indices.push((self.expr)(part));
                }
            }
        }
        TracedArg { name, indices }
    }

    /// The array arguments an expression reads, in vertex order; `only` limits them to some
    /// vertices.
    fn array_args(&self, e: &ir::Expression, only: Option<&[bool]>) -> Vec<TracedArg> {
        e.vertices
            .iter()
            .filter(|(id, _)| only.is_none_or(|o| o[raw(*id)]))
            .filter_map(|(_, vertex)| match vertex {
                ExprVertex::Variable(r) if self.array_argument(r) => Some(self.traced_arg(r)),
                _ => None,
            })
            .collect()
    }

    /// [`Self::array_args`], where an engine temporary assigned earlier in the block (`before`)
    /// stands for the expression assigned to it: linearization hoists an operand of a
    /// non-smooth intrinsic (`sign(x(1), x(2))` becomes `aux = x(2)`, `sign(x(1), aux)`), and
    /// the original traced that operand's array arguments.
    fn array_args_through_temporaries(
        &self,
        e: &ir::Expression,
        only: Option<&[bool]>,
        before: &[Statement],
        depth: usize,
    ) -> Vec<TracedArg> {
        let mut args = Vec::new();
        for (id, vertex) in e.vertices.iter() {
            if only.is_some_and(|o| !o[raw(id)]) {
                continue;
            }
            let ExprVertex::Variable(r) = vertex else { continue };
            let temporary = r.base_symbol().filter(|&s| self.cg.symbols[s].temp && r.array_access().is_none());
            let hoisted = temporary.filter(|_| depth < 8).and_then(|symbol| {
                before.iter().enumerate().rev().find_map(|(j, s)| match s {
                    Statement::Assignment(a)
                        if a.lhs.base_symbol() == Some(symbol) && a.lhs.array_access().is_none() =>
                    {
                        Some((j, a))
                    }
                    _ => None,
                })
            });
            match hoisted {
                Some((j, a)) => args.extend(self.array_args_through_temporaries(&a.rhs, None, &before[..j], depth + 1)),
                None if self.array_argument(r) => args.push(self.traced_arg(r)),
                None => {}
            }
        }
        args
    }

    /// Statement `k` of `statements` (a basic block's).
    fn statement(&self, statements: &[Statement], k: usize) -> StmtPlan {
        match &statements[k] {
            Statement::SubroutineCall(call) => match call.symbol {
                Some(sym) if (self.defined)(sym) => {
                    // An actual TypeChange replaced by a temporary is traced as the variable
                    // converted into it (`oad_convert(temporary, actual)` before the call).
                    let before =
                        statements[..k].iter().rev().take_while(|s| crate::passes::trace::made_before_call(self.cg, s));
                    let conversions: Vec<&ir::InlinableSubroutineCall> = before
                        .filter_map(|s| match s {
                            Statement::InlinableSubroutineCall(c) => Some(c),
                            _ => None,
                        })
                        .collect();
                    let converted_from = |symbol: ir::SymbolId| {
                        conversions.iter().rev().find_map(|c| match c.arguments.as_slice() {
                            [t, a] => match (&t.value, &a.value) {
                                (ir::ArgumentValue::Variable(t), ir::ArgumentValue::Variable(a))
                                    if t.base_symbol() == Some(symbol) =>
                                {
                                    Some(a)
                                }
                                _ => None,
                            },
                            _ => None,
                        })
                    };
                    let args = call
                        .arguments
                        .iter()
                        .filter_map(|argument| match &argument.value {
                            ir::ArgumentValue::Variable(r) => Some(match r.base_symbol().and_then(converted_from) {
                                // A whole array converted, an element of the temporary passed.
                                Some(actual) => (actual, actual.array_access().or(r.array_access())),
                                None => (r, r.array_access()),
                            }),
                            ir::ArgumentValue::Constant(_) => None,
                        })
                        .filter(|(r, access)| access.is_some() && self.active(r))
                        .map(|(r, access)| self.traced_arg_with(r, access))
                        .collect();
                    StmtPlan::Call { name: self.cg.symbol_name(sym).to_owned(), line: call.line as i64, args }
                }
                _ => StmtPlan::Nothing,
            },
            // What the engine computes for itself (a tangent's partials, `sign` for `abs`)
            // is not the original's: an assignment to an engine temporary is not traced.
            Statement::Assignment(a) if a.lhs.base_symbol().is_some_and(|s| self.cg.symbols[s].temp) => {
                StmtPlan::Nothing
            }
            Statement::Assignment(a) => {
                let e = &a.rhs;
                let n = e.vertices.len();
                let mut operands: Vec<Vec<usize>> = vec![Vec::new(); n];
                for edge in &e.edges {
                    operands[raw(edge.target)].push(raw(edge.source));
                }
                let catalogue = crate::xaif::intrinsics::Catalogue::builtin();
                let mut calls = Vec::new();
                for (id, vertex) in e.vertices.iter() {
                    let ExprVertex::Intrinsic(intrinsic) = vertex else { continue };
                    let name = self.cg.name(intrinsic.name);
                    if operands[raw(id)].is_empty() || !catalogue.get(name).is_some_and(|d| d.non_smooth) {
                        continue;
                    }
                    // The operation's operands, transitively.
                    let mut inside = vec![false; n];
                    let mut stack = vec![raw(id)];
                    while let Some(v) = stack.pop() {
                        if !std::mem::replace(&mut inside[v], true) {
                            stack.extend(&operands[v]);
                        }
                    }
                    let args = self.array_args_through_temporaries(e, Some(&inside), &statements[..k], 0);
                    calls.push(IntrinsicPlan { name: name.to_owned(), line: a.line as i64, args });
                }
                if calls.is_empty() { StmtPlan::Nothing } else { StmtPlan::Intrinsics(calls) }
            }
            _ => StmtPlan::Nothing,
        }
    }

    /// The plan of a loop headed by a vertex with these parts (initialization, condition,
    /// update), if one of them reads an active variable.
    fn loop_plan(&self, parts: [Option<&ir::Expression>; 3], line: u64) -> Option<LoopPlan> {
        if !parts.iter().flatten().any(|e| crate::passes::trace::reads_active(self.cg, e)) {
            return None;
        }
        let parts = [Kind::Initialization, Kind::Condition, Kind::Update]
            .into_iter()
            .zip(parts)
            .filter_map(|(kind, part)| Some((kind, self.array_args(part?, None))))
            .filter(|(_, args)| !args.is_empty())
            .collect();
        Some(LoopPlan {
            line: i64::try_from(line).unwrap_or(i64::MAX),
            parts,
            back_from: Vec::new(),
            counted_from: Vec::new(),
        })
    }

    /// The plan of one graph; `lowered` says which statements the lowering kept.
    pub fn plan(&self, fg: &FlowGraph, lowered: &Graph) -> GraphPlan {
        let n = fg.vertices.len();
        let kinds: Vec<&CfgVertexKind> = fg.vertices.iter().map(|(_, v)| &v.kind).collect();
        let mut ins: Vec<Vec<&ir::CfgEdge>> = vec![Vec::new(); n];
        let mut outs: Vec<Vec<&ir::CfgEdge>> = vec![Vec::new(); n];
        for edge in &fg.edges {
            ins[raw(edge.target)].push(edge);
            outs[raw(edge.source)].push(edge);
        }
        let mut nodes: Vec<NodePlan> = (0..n).map(|_| NodePlan::Nothing).collect();
        let mut any = false;
        for (k, (_, vertex)) in fg.vertices.iter().enumerate() {
            let plan = match &vertex.kind {
                CfgVertexKind::BasicBlock(block) => {
                    let statements: Vec<Statement> =
                        block.statements.iter().filter(|s| !matches!(s, Statement::Marker(_))).cloned().collect();
                    let stmts: Vec<StmtPlan> = (0..statements.len()).map(|k| self.statement(&statements, k)).collect();
                    if stmts.iter().any(|s| !matches!(s, StmtPlan::Nothing)) {
                        any = true;
                        nodes[k] = NodePlan::Block(stmts);
                    }
                    None
                }
                CfgVertexKind::ForLoop(f) => self.loop_plan(
                    [
                        f.initialization.as_ref().map(|a| &a.rhs),
                        f.condition.as_ref(),
                        f.update.as_ref().map(|a| &a.rhs),
                    ],
                    f.line,
                ),
                CfgVertexKind::PreLoop(c) | CfgVertexKind::PostLoop(c) => {
                    self.loop_plan([None, c.condition.as_ref(), None], c.line)
                }
                _ => None,
            };
            let Some(mut plan) = plan else { continue };
            // Back edges come from the loop's body: what its body edge reaches without passing
            // the header (a `cycle`'s Goto among them).
            let body_edge = outs[k].iter().find(|e| e.condition_value == Some(1)).or(outs[k].first());
            let mut body = vec![false; n];
            let mut stack: Vec<usize> = body_edge.map(|e| raw(e.target)).into_iter().collect();
            while let Some(v) = stack.pop() {
                if v == k || std::mem::replace(&mut body[v], true) {
                    continue;
                }
                stack.extend(outs[v].iter().map(|e| raw(e.target)));
            }
            for edge in &ins[k] {
                let source = raw(edge.source);
                if body[source] || matches!(kinds[source], CfgVertexKind::EndLoop) {
                    plan.back_from.push(source as u32);
                    if !matches!(kinds[source], CfgVertexKind::EndLoop) {
                        plan.counted_from.push(source as u32);
                    }
                }
            }
            nodes[k] = NodePlan::Loop(Box::new(plan));
        }
        // Iterations are also counted at each traced loop's EndLoop, along its first in-edge.
        for (k, node) in lowered.nodes.iter().enumerate() {
            if let super::lower::Node::EndLoop { header } = node
                && let Some(NodePlan::Loop(plan)) = nodes.get_mut(*header as usize)
            {
                plan.back_from.push(k as u32);
                if let Some(first) = ins.get(k).and_then(|i| i.first()) {
                    nodes[k] = NodePlan::EndLoop { header: *header, counted_from: raw(first.source) as u32 };
                }
            }
        }
        // Branches, from their EndBranch; a two-way `If` is not traced.
        for (k, kind) in kinds.iter().enumerate() {
            if !matches!(kind, CfgVertexKind::EndBranch) || ins[k].is_empty() {
                continue;
            }
            let entries: Vec<Option<&ir::CfgEdge>> = ins[k].iter().map(|e| self.entry_edge(e, &kinds, &ins)).collect();
            let Some(Some(first_entry)) = entries.first() else { continue };
            let branch = raw(first_entry.source);
            let CfgVertexKind::Branch(c) = kinds[branch] else { continue };
            let Some(condition) = c.condition.as_ref().filter(|e| crate::passes::trace::reads_active(self.cg, e))
            else {
                continue;
            };
            let args = self.array_args(condition, None);
            let two = ins[k].len() == 2;
            let values = ins[k]
                .iter()
                .zip(&entries)
                .enumerate()
                .map(|(i, (edge, entry))| {
                    let value = match (two, entry.and_then(|e| e.condition_value)) {
                        (true, Some(0) | None) => 0,
                        (true, Some(_)) => 1,
                        (false, _) => i as i64 + 1,
                    };
                    (raw(edge.source) as u32, value)
                })
                .collect();
            nodes[k] = NodePlan::EndBranch(values);
            nodes[branch] = NodePlan::Branch(Box::new(BranchPlan {
                line: c.line as i64,
                from: ins[branch].first().map(|e| raw(e.source) as u32),
                condition: (!args.is_empty()).then_some(args),
            }));
        }
        any |= nodes.iter().any(|n| !matches!(n, NodePlan::Nothing | NodePlan::Block(_)));
        if any { GraphPlan { nodes } } else { GraphPlan::default() }
    }

    /// The edge out of the branch that an in-edge of an `EndBranch` comes from: back along
    /// first in-edges (not those from an `EndLoop`), counting nested branches.
    fn entry_edge<'e>(
        &self,
        start: &'e ir::CfgEdge,
        kinds: &[&CfgVertexKind],
        ins: &[Vec<&'e ir::CfgEdge>],
    ) -> Option<&'e ir::CfgEdge> {
        let mut edge = start;
        let mut depth = 0usize;
        for _ in 0..=kinds.len() {
            let source = raw(edge.source);
            match kinds[source] {
                CfgVertexKind::Branch(_) => {
                    if depth == 0 {
                        return Some(edge);
                    }
                    depth -= 1;
                }
                CfgVertexKind::EndBranch => depth += 1,
                _ => {}
            }
            edge = ins[source].iter().find(|e| !matches!(kinds[raw(e.source)], CfgVertexKind::EndLoop))?;
        }
        None
    }
}

/// Destinations for the traces of a driver's runs (`run --trace`, `verify --trace`).
pub trait TraceRuns {
    /// A destination for the trace of the run `label` (`original-001-plain`), or `None` to
    /// leave that run untraced.
    fn open(&self, label: &str) -> std::io::Result<Option<Box<dyn TraceSink>>>;
}

/// One run's trace destination.
pub trait TraceSink: Write {
    /// Keeps the trace of a run that succeeded (a sink dropped without it keeps nothing).
    fn commit(self: Box<Self>) -> std::io::Result<()>;
}

/// An open traced loop: where, and its iterations so far.
struct OpenLoop {
    frame: usize,
    graph: usize,
    header: u32,
    iterations: i64,
}

/// A run's trace: the writer, and the executor's own bookkeeping for a program it traces.
pub struct Tracer<'t> {
    writer: Writer<&'t mut dyn Write>,
    /// The executor writes the events (the program has no `oad_trace_*` calls of its own).
    automatic: bool,
    loops: Vec<OpenLoop>,
}

fn write_error(e: impl std::fmt::Display) -> ExecError {
    ExecError::Runtime(e.to_string())
}

impl<'t> Tracer<'t> {
    /// Starts trace `number` into `out`; `automatic` for a program that does not trace itself.
    pub fn new(out: &'t mut dyn Write, number: u32, automatic: bool) -> Result<Tracer<'t>, ExecError> {
        Ok(Tracer { writer: Writer::new(out, number).map_err(write_error)?, automatic, loops: Vec::new() })
    }

    pub fn automatic(&self) -> bool {
        self.automatic
    }

    pub(crate) fn emit(&mut self, event: &Event) -> Result<(), ExecError> {
        self.writer.event(event).map_err(write_error)
    }

    /// Ends the trace.
    pub fn finish(self) -> Result<(), ExecError> {
        self.writer.finish().map(|_| ()).map_err(write_error)
    }

    pub(crate) fn enter_loop(&mut self, frame: usize, graph: &Graph, header: u32) {
        self.loops.push(OpenLoop { frame, graph: graph as *const Graph as usize, header, iterations: 0 });
    }

    pub(crate) fn count_iteration(&mut self, frame: usize, graph: &Graph, header: u32) {
        let graph = graph as *const Graph as usize;
        if let Some(l) =
            self.loops.iter_mut().rev().find(|l| l.frame == frame && l.graph == graph && l.header == header)
        {
            l.iterations += 1;
        }
    }

    /// The iterations of the loop left, which is no longer open.
    pub(crate) fn leave_loop(&mut self, frame: usize, graph: &Graph, header: u32) -> i64 {
        let graph = graph as *const Graph as usize;
        match self.loops.iter().rposition(|l| l.frame == frame && l.graph == graph && l.header == header) {
            Some(at) => {
                let iterations = self.loops[at].iterations;
                self.loops.truncate(at);
                iterations
            }
            None => 0,
        }
    }

    /// A routine at `frame` returned: its loops are over.
    pub(crate) fn returned(&mut self, frame: usize) {
        while self.loops.last().is_some_and(|l| l.frame >= frame) {
            self.loops.pop();
        }
    }
}

impl super::Machine<'_> {
    fn tracing_automatically(&self) -> bool {
        self.tracer.as_ref().is_some_and(Tracer::automatic)
    }

    fn arg_events(&self, args: &[TracedArg], events: &mut Vec<Event>) -> Result<(), ExecError> {
        for arg in args {
            events.push(Event::Open(Open::arg(&arg.name)));
            for index in &arg.indices {
                events.push(Event::Index(self.eval(index, None)?.as_i64()?));
            }
            events.push(Event::Close(Kind::Arg));
        }
        Ok(())
    }

    fn emit_all(&mut self, events: &[Event]) -> Result<(), ExecError> {
        if let Some(tracer) = self.tracer.as_mut() {
            for event in events {
                tracer.emit(event)?;
            }
        }
        Ok(())
    }

    /// Execution arrives at node `at` of `g` from `prev`.
    pub(crate) fn trace_arrival(&mut self, g: &Graph, prev: Option<usize>, at: usize) -> Result<(), ExecError> {
        if !self.tracing_automatically() {
            return Ok(());
        }
        let frame = self.frames.len();
        let prev = prev.map(|p| p as u32);
        match g.trace.nodes.get(at) {
            Some(NodePlan::Loop(plan)) if prev.is_some_and(|p| plan.counted_from.contains(&p)) => {
                if let Some(tracer) = self.tracer.as_mut() {
                    tracer.count_iteration(frame, g, at as u32);
                }
            }
            Some(NodePlan::Loop(plan)) if !prev.is_some_and(|p| plan.back_from.contains(&p)) => {
                let mut events = vec![Event::Open(Open::with_line(Kind::Loop, plan.line))];
                for (kind, args) in &plan.parts {
                    events.push(Event::Open(Open::bare(*kind)));
                    self.arg_events(args, &mut events)?;
                    events.push(Event::Close(*kind));
                }
                self.emit_all(&events)?;
                if let Some(tracer) = self.tracer.as_mut() {
                    tracer.enter_loop(frame, g, at as u32);
                }
            }
            Some(NodePlan::EndLoop { header, counted_from }) if prev == Some(*counted_from) => {
                if let Some(tracer) = self.tracer.as_mut() {
                    tracer.count_iteration(frame, g, *header);
                }
            }
            Some(NodePlan::Branch(plan)) if prev == plan.from => {
                let mut events = vec![Event::Open(Open::with_line(Kind::Branch, plan.line))];
                if let Some(args) = &plan.condition {
                    events.push(Event::Open(Open::bare(Kind::Condition)));
                    self.arg_events(args, &mut events)?;
                    events.push(Event::Close(Kind::Condition));
                }
                self.emit_all(&events)?;
            }
            Some(NodePlan::EndBranch(values)) => {
                if let Some(&(_, value)) = values.iter().find(|(p, _)| Some(*p) == prev) {
                    self.emit_all(&[Event::Cfval(value), Event::Close(Kind::Branch)])?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Execution leaves the loop at node `header` of `g` by its exit edge.
    pub(crate) fn trace_loop_exit(&mut self, g: &Graph, header: usize) -> Result<(), ExecError> {
        if !self.tracing_automatically() || !matches!(g.trace.nodes.get(header), Some(NodePlan::Loop(_))) {
            return Ok(());
        }
        let frame = self.frames.len();
        let iterations = self.tracer.as_mut().map_or(0, |t| t.leave_loop(frame, g, header as u32));
        self.emit_all(&[Event::Cfval(iterations), Event::Close(Kind::Loop)])
    }

    /// Before statement `k` of block `node`; returns whether a `</Call>` follows it.
    pub(crate) fn trace_statement(&mut self, g: &Graph, node: usize, k: usize) -> Result<bool, ExecError> {
        if !self.tracing_automatically() {
            return Ok(false);
        }
        let Some(NodePlan::Block(stmts)) = g.trace.nodes.get(node) else { return Ok(false) };
        match stmts.get(k) {
            Some(StmtPlan::Call { name, line, args }) => {
                let mut events = vec![Event::Open(Open::call(name, *line))];
                self.arg_events(args, &mut events)?;
                self.emit_all(&events)?;
                Ok(true)
            }
            Some(StmtPlan::Intrinsics(calls)) => {
                let mut events = Vec::new();
                for call in calls {
                    events.push(Event::Open(Open::call(&call.name, call.line)));
                    self.arg_events(&call.args, &mut events)?;
                    events.push(Event::Close(Kind::Call));
                }
                self.emit_all(&events)?;
                Ok(false)
            }
            _ => Ok(false),
        }
    }

    /// After a traced call returned.
    pub(crate) fn trace_return(&mut self) -> Result<(), ExecError> {
        let frame = self.frames.len() + 1;
        if let Some(tracer) = self.tracer.as_mut() {
            tracer.returned(frame);
            tracer.emit(&Event::Close(Kind::Call))?;
        }
        Ok(())
    }

    /// An `oad_trace_*` call of a program that traces itself (`what` is the name after the
    /// prefix). Without a trace it does nothing.
    pub(crate) fn trace_runtime_call(&mut self, what: &str, args: &[super::lower::Arg]) -> Result<(), ExecError> {
        use super::lower::Arg;
        let integer = |m: &Self, k: usize| -> Result<i64, ExecError> {
            match args.get(k) {
                Some(Arg::Const(v)) => v.as_i64(),
                Some(Arg::Ref(r)) => match m.place(r)? {
                    super::exec::Place::Scalar(slot) => m.mem.get(slot)?.as_i64(),
                    _ => Err(ExecError::Runtime(format!("oad_trace_{what}: an array where an integer belongs"))),
                },
                None => Err(ExecError::Runtime(format!("oad_trace_{what}: argument {} missing", k + 1))),
            }
        };
        let text = |k: usize| -> Result<String, ExecError> {
            match args.get(k) {
                Some(Arg::Const(super::memory::Value::Str(s))) => Ok(s.to_string()),
                _ => Err(ExecError::Runtime(format!("oad_trace_{what}: argument {} is not a string constant", k + 1))),
            }
        };
        let event = match what.to_ascii_lowercase().as_str() {
            "call" => Event::Open(Open::call(&text(0)?, integer(self, 1)?)),
            "arg" => Event::Open(Open::arg(&text(0)?)),
            "index" => Event::Index(integer(self, 0)?),
            "cfval" => Event::Cfval(integer(self, 0)?),
            "loop" => Event::Open(Open::with_line(Kind::Loop, integer(self, 0)?)),
            "branch" => Event::Open(Open::with_line(Kind::Branch, integer(self, 0)?)),
            "initialization" => Event::Open(Open::bare(Kind::Initialization)),
            "condition" => Event::Open(Open::bare(Kind::Condition)),
            "update" => Event::Open(Open::bare(Kind::Update)),
            "ecall" => Event::Close(Kind::Call),
            "earg" => Event::Close(Kind::Arg),
            "eloop" => Event::Close(Kind::Loop),
            "ebranch" => Event::Close(Kind::Branch),
            "einitialization" => Event::Close(Kind::Initialization),
            "econdition" => Event::Close(Kind::Condition),
            "eupdate" => Event::Close(Kind::Update),
            // The driver's calls: the executor opens and closes traces itself.
            "init" | "open" | "close" => return Ok(()),
            _ => return Err(ExecError::Unsupported(format!("runtime call oad_trace_{what}"))),
        };
        match self.tracer.as_mut() {
            Some(tracer) => tracer.emit(&event),
            None => Ok(()),
        }
    }
}
