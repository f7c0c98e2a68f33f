//! TraceDiff: inserts calls of OpenAD's tracing routines (runtime module `OAD_trace`), so that
//! running the program writes an XML trace of its control flow, and two runs can be compared
//! (`trace-diff`). It runs after TypeChange; each routine becomes a `ReplacementList` with
//! `template_name="tracing_subroutine_template"`: placeholder 1 is the routine as TypeChange left
//! it, placeholder 2 the same code with the trace calls. Every trace call is an
//! `InlinableSubroutineCall` with a statement id of our own (`_trace_<routine>_<k>`, made unique
//! against the document's ids by [`Temporaries::statement_id`]).
//!
//! # Which events are emitted where
//!
//! The executor traces untraced programs with the same events; these are the rules. "Active"
//! means, as in the original, a variable reference whose symbol is active (an integer symbol
//! the front end left active counts) and which is not marked `active="false"`; an *array
//! argument* is an active variable reference with subscripts. Lines are the front end's
//! `lineNumber` of the statement or vertex named, 0 where it gave none.
//!
//! **Argument trace** of an array argument `a(i1, …)`: `oad_trace_arg("a")` (the symbol's name),
//! then for every subscript, in order, and within one its index, bound and stride, those given:
//! `oad_trace_index(v)` with `v` the integer constant if the subscript is one, the variable if it
//! is one, else a passive integer temporary `<prefix>trc_N` assigned the subscript expression
//! just before; then `oad_trace_earg()`. Other arguments are not traced.
//!
//! In placeholder 2, per statement of every basic block:
//! - **Subroutine call** of a routine with a body in the document (external routines are not
//!   traced): right before the call `oad_trace_call(name, line)` (the callee's symbol name as a
//!   string constant, the call's line), the argument trace of each of the call's arguments, in
//!   order, that is an array argument, and right after it `oad_trace_ecall()`. The pair
//!   encloses the statements TypeChange put around the call (saves, allocations, conversions
//!   before; shape tests, conversions back after), and an actual TypeChange replaced by a
//!   temporary is traced as the variable converted into it (with the call's subscripts when a
//!   whole array was converted and the call passes an element of the temporary).
//! - **Assignment**: for every non-smooth intrinsic (the catalogue's `nonSmooth`) with operands
//!   in its right-hand side, in the expression's vertex order, before the assignment:
//!   `oad_trace_call(intrinsic name, assignment's line)`, the argument trace of each array
//!   argument of the intrinsic's subexpression (vertex order), `oad_trace_ecall()`. The
//!   intrinsic itself is renamed `oad_<name>` (in both placeholders), the runtime's version of
//!   it that records which branch of the function it took.
//!
//! Per control flow vertex, taken in the order of control-flow reversal's topological sort
//! (depth first from Entry, a loop's body before what follows the loop, a branch's arms in
//! edge order, its EndBranch after the last arm). New basic blocks (ids `_trc_<k>`) go on edges:
//! - **ForLoop, PreLoop, PostLoop** whose initialization, condition or update reads an active
//!   variable: on each edge into the loop but its back edge, a block with `c = 0` (`c` a new
//!   passive integer `<prefix>trc_N`) and `oad_trace_loop(line)` (the vertex's line), followed,
//!   for each of initialization, condition and update that has an array argument, by
//!   `oad_trace_initialization()` / `oad_trace_condition()` / `oad_trace_update()`, the argument
//!   traces of its active arguments that are array arguments, and the closing
//!   `oad_trace_einitialization()` / `oad_trace_econdition()` / `oad_trace_eupdate()`. An edge
//!   into the loop is a back edge if it comes from the loop's EndLoop or from a vertex the body
//!   reaches without passing the header (a `cycle`'s Goto). On the first edge into the loop's
//!   EndLoop, and on every back edge but the EndLoop's, a block with `c = c + 1`. On the loop's
//!   exit edge (the header's out-edge that is not the body's: the body's carries condition
//!   value 1, else it is the first), a block with `oad_trace_CFval(c)` (the iteration count)
//!   and `oad_trace_eloop()`. So the trace holds `<Loop line>`, then what the iterations
//!   traced, then the count and `</Loop>`.
//! - **Branch** whose condition reads an active variable: on the first edge into the Branch, a
//!   block with `oad_trace_branch(line)` and, if the condition has an array argument,
//!   `oad_trace_condition()`, its argument traces, `oad_trace_econdition()`. On every edge into
//!   its EndBranch, a block with `oad_trace_CFval(k)` and `oad_trace_ebranch()`, where `k`
//!   says which arm was taken: with two arms 1 for the arm whose edge out of the Branch carries
//!   a condition value other than 0 and 0 for the other; otherwise the number of the edge among the
//!   EndBranch's in-edges, counted from 1 in document order.
//!
//! A two-way `If` (unstructured code) and its arms are not traced, as in the original, whose
//! sort matches only a Branch with an EndBranch; nor is a Branch whose EndBranch the sort does
//! not reach. Calls and intrinsics are traced wherever they stand.
//!
//! Where this differs from the original: an arm whose edge out of a two-way Branch carries
//! condition value 0 traces 0 (the original wrote 1 for any arm with a value, so an else edge
//! marked `0` looked like the then arm; the front end never writes 0, so its programs trace as
//! before), it counts every traced loop's iterations (the
//! original's stack of loop counters lost its place after an untraced loop, and missed
//! iterations that a `cycle` ends), gives a PreLoop its line (the original wrote 0), and keeps a
//! branch edge's condition value on the edge out of the branch when a block goes on it. With
//! `-r` or `-w`, a call's trace names the routine called by its new name.

use rustc_hash::FxHashSet;

use crate::ir::build::{Temporaries, assignment, integer_constant, whole_reference};
use crate::ir::*;
use crate::xaif::intrinsics::Catalogue;

/// What the pass traced.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TraceReport {
    /// Routines turned into tracing replacement lists.
    pub routines: usize,
    /// Subroutine calls traced.
    pub calls: usize,
    /// Non-smooth intrinsic calls traced.
    pub intrinsics: usize,
    /// Loops whose iterations are counted.
    pub loops: usize,
    /// Branches whose arm taken is traced.
    pub branches: usize,
    /// Trace calls inserted in all.
    pub events: usize,
}

impl TraceReport {
    /// Adds another run's figures (a routine's, in the streaming driver) to these.
    pub fn absorb(&mut self, other: &TraceReport) {
        self.routines += other.routines;
        self.calls += other.calls;
        self.intrinsics += other.intrinsics;
        self.loops += other.loops;
        self.branches += other.branches;
        self.events += other.events;
    }
}

/// Traces every routine of the call graph (the whole-tree path's entry point; the streaming
/// driver calls [`trace_routine`] on one routine at a time with the same result).
pub fn trace(cg: &mut CallGraph, catalogue: &Catalogue, temporaries: &mut Temporaries) -> TraceReport {
    let bodies: FxHashSet<SymbolId> = cg.routines.iter().map(|(_, r)| r.symbol()).collect();
    let routines: Vec<RoutineId> = cg.cfgs().map(|(id, _)| id).collect();
    let mut report = TraceReport::default();
    for routine in routines {
        report.absorb(&trace_routine(cg, routine, catalogue, temporaries, &bodies));
    }
    report
}

/// Turns `routine`, a control flow graph after TypeChange, into its tracing replacement list.
/// `bodies` holds the symbols of the routines with a body (calls of the others are external
/// and not traced).
pub fn trace_routine(
    cg: &mut CallGraph,
    routine: RoutineId,
    catalogue: &Catalogue,
    temporaries: &mut Temporaries,
    bodies: &FxHashSet<SymbolId>,
) -> TraceReport {
    let Routine::ControlFlowGraph(cfg) = &mut cg.routines[routine] else { return TraceReport::default() };
    let graph = std::mem::take(&mut cfg.graph);
    let (head, structured) = (ControlFlowGraph { graph: FlowGraph::default(), ..cfg.clone() }, cfg.structured);
    let mut tracer = Tracer {
        cg,
        catalogue,
        temporaries,
        bodies,
        scope: head.body_scope,
        routine_name: String::new(),
        statements: 0,
        blocks: 0,
        report: TraceReport { routines: 1, ..TraceReport::default() },
    };
    tracer.routine_name = tracer.cg.symbol_name(head.symbol).to_owned();
    let mut traced = graph.clone();
    tracer.trace_statements(&mut traced);
    tracer.trace_control_flow(&mut traced);
    let mut original = graph;
    tracer.rename_non_smooth(&mut original);
    tracer.rename_non_smooth(&mut traced);
    let report = tracer.report;
    let mut replacement = |number: usize, graph: FlowGraph| Replacement {
        placeholder: cg.names.intern_index(number),
        structured,
        graph,
        repeats: None,
    };
    let replacements = vec![replacement(1, original), replacement(2, traced)];
    let template_name = cg.names.intern("tracing_subroutine_template");
    cg.routines[routine] = Routine::ReplacementList(ReplacementList {
        id: head.id,
        annotation: head.annotation,
        symbol: head.symbol,
        scope: head.scope,
        body_scope: head.body_scope,
        template_name,
        arguments: head.arguments,
        replacements,
    });
    report
}

/// The names of the runtime's tracing routines.
mod event {
    pub const CALL: &str = "oad_trace_call";
    pub const END_CALL: &str = "oad_trace_ecall";
    pub const ARG: &str = "oad_trace_arg";
    pub const END_ARG: &str = "oad_trace_earg";
    pub const INDEX: &str = "oad_trace_index";
    pub const LOOP: &str = "oad_trace_loop";
    pub const END_LOOP: &str = "oad_trace_eloop";
    pub const BRANCH: &str = "oad_trace_branch";
    pub const END_BRANCH: &str = "oad_trace_ebranch";
    pub const CONTROL_FLOW_VALUE: &str = "oad_trace_CFval";
    /// Opening and closing calls around the argument traces of a loop's initialization,
    /// condition and update, or of a branch's condition.
    pub const PARTS: [(&str, &str); 3] = [
        ("oad_trace_initialization", "oad_trace_einitialization"),
        ("oad_trace_condition", "oad_trace_econdition"),
        ("oad_trace_update", "oad_trace_eupdate"),
    ];
}

/// The state of tracing one routine.
struct Tracer<'a> {
    cg: &'a mut CallGraph,
    catalogue: &'a Catalogue,
    temporaries: &'a mut Temporaries,
    bodies: &'a FxHashSet<SymbolId>,
    /// The routine's body scope, which holds the loop counters.
    scope: ScopeId,
    routine_name: String,
    /// Trace statements made so far in this routine (their ids are numbered by it).
    statements: usize,
    /// Blocks added so far.
    blocks: usize,
    report: TraceReport,
}

impl Tracer<'_> {
    /// A call of the tracing routine `routine` with `arguments`.
    fn event(&mut self, routine: &str, arguments: Vec<ArgumentValue>) -> Statement {
        self.statements += 1;
        self.report.events += 1;
        let base = format!("_trace_{}_{}", self.routine_name, self.statements);
        let id = self.temporaries.statement_id(self.cg, &base);
        let subroutine_name = self.cg.names.intern(routine);
        let arguments = (1..)
            .zip(arguments)
            .map(|(position, value)| Argument { position, annotation: Name::EMPTY, value })
            .collect();
        Statement::InlinableSubroutineCall(InlinableSubroutineCall { id, subroutine_name, arguments })
    }

    fn integer(&mut self, value: i64) -> ArgumentValue {
        ArgumentValue::Constant(integer_constant(self.cg, value))
    }

    fn string(&mut self, text: &str) -> ArgumentValue {
        let mut constant = integer_constant(self.cg, 0);
        constant.ty = ConstantType::String;
        constant.value = self.cg.names.intern(text);
        ArgumentValue::Constant(constant)
    }

    fn line(&mut self, line: u64) -> ArgumentValue {
        self.integer(i64::try_from(line).unwrap_or(i64::MAX))
    }

    /// A new passive integer temporary of the routine's body scope.
    fn integer_temporary(&mut self) -> SymbolId {
        self.temporaries.fresh(self.cg, self.scope, "trc", |s| {
            s.ty = SymbolType::Integer;
            s.active = false;
        })
    }

    /// Call and intrinsic traces in every basic block of `graph`.
    fn trace_statements(&mut self, graph: &mut FlowGraph) {
        for (_, vertex) in graph.vertices.iter_mut() {
            let CfgVertexKind::BasicBlock(block) = &mut vertex.kind else { continue };
            if !block.statements.iter().any(|s| matches!(s, Statement::Assignment(_) | Statement::SubroutineCall(_))) {
                continue;
            }
            let scope = block.scope;
            let mut statements = std::mem::take(&mut block.statements);
            // Each traced call with TypeChange's statements around it: (first, call, last).
            let groups: Vec<(usize, usize, usize)> = statements
                .iter()
                .enumerate()
                .filter(|(_, s)| matches!(s, Statement::SubroutineCall(c) if c.symbol.is_some_and(|s| self.bodies.contains(&s))))
                .map(|(k, _)| {
                    let before = statements[..k].iter().rev().take_while(|s| made_before_call(self.cg, s)).count();
                    let after = statements[k + 1..].iter().take_while(|s| self.made_after_call(s)).count();
                    (k - before, k, k + after)
                })
                .collect();
            let mut out = Vec::with_capacity(statements.len());
            let mut group = groups.iter().peekable();
            for k in 0..statements.len() {
                if let Some(&&(first, call, _)) = group.peek()
                    && first == k
                {
                    self.trace_call(&statements[first..=call], scope, &mut out);
                }
                // Moved out, a marker left in its place: the statements after it are still
                // there for the next call's trace.
                let taken = Statement::Marker(Marker { id: Name::EMPTY, annotation: Name::EMPTY });
                let statement = std::mem::replace(&mut statements[k], taken);
                if let Statement::Assignment(assignment) = &statement {
                    self.trace_non_smooth(assignment, scope, &mut out);
                }
                out.push(statement);
                if let Some(&&(_, _, last)) = group.peek()
                    && last == k
                {
                    out.push(self.event(event::END_CALL, Vec::new()));
                    group.next();
                }
            }
            block.statements = out;
        }
    }

    /// Whether TypeChange made `statement` to go after a call (a shape test, a conversion back).
    fn made_after_call(&self, statement: &Statement) -> bool {
        matches!(statement, Statement::InlinableSubroutineCall(c)
            if matches!(self.cg.name(c.id), "oad_shape_test" | "oad_convert_post"))
    }

    /// `oad_trace_call` and the argument traces of the call that ends `group` (the statements
    /// TypeChange put before it, then the call). An actual TypeChange replaced by a temporary
    /// is traced as the variable the temporary was converted from.
    fn trace_call(&mut self, group: &[Statement], scope: ScopeId, out: &mut Vec<Statement>) {
        let Some(Statement::SubroutineCall(call)) = group.last() else { return };
        self.report.calls += 1;
        let name = call.symbol.map(|s| self.cg.symbol_name(s).to_owned()).unwrap_or_default();
        let (name, line) = (self.string(&name), self.line(call.line));
        out.push(self.event(event::CALL, vec![name, line]));
        // `oad_convert(temporary, actual)` before the call.
        let converted_from = |symbol: SymbolId| {
            group.iter().find_map(|s| match s {
                Statement::InlinableSubroutineCall(c) => match c.arguments.as_slice() {
                    [temporary, actual] => match (&temporary.value, &actual.value) {
                        (ArgumentValue::Variable(t), ArgumentValue::Variable(a)) if t.base_symbol() == Some(symbol) => {
                            Some(a)
                        }
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            })
        };
        for argument in &call.arguments {
            if let ArgumentValue::Variable(reference) = &argument.value {
                match reference.base_symbol().and_then(converted_from) {
                    // A whole array converted into a temporary that the call subscripts: the
                    // variable with the call's subscripts.
                    Some(actual) => {
                        let access = actual.array_access().or(reference.array_access());
                        self.trace_argument_with(actual, access, scope, out);
                    }
                    None => self.trace_argument(reference, scope, out),
                }
            }
        }
    }

    /// The traces of the non-smooth intrinsics of an assignment's right-hand side.
    fn trace_non_smooth(&mut self, assignment: &Assignment, scope: ScopeId, out: &mut Vec<Statement>) {
        let rhs = &assignment.rhs;
        let table = rhs.operand_table();
        for (id, vertex) in rhs.vertices.iter() {
            let ExprVertex::Intrinsic(intrinsic) = vertex else { continue };
            let name = self.cg.name(intrinsic.name);
            let non_smooth = self.catalogue.get(name).is_some_and(|d| d.non_smooth);
            if !non_smooth || table.of(id).is_empty() {
                continue;
            }
            self.report.intrinsics += 1;
            let name = name.to_owned();
            let (name, line) = (self.string(&name), self.line(assignment.line));
            out.push(self.event(event::CALL, vec![name, line]));
            for reference in subexpression_variables(rhs, &table, id) {
                self.trace_argument(reference, scope, out);
            }
            out.push(self.event(event::END_CALL, Vec::new()));
        }
    }

    /// The argument trace of `reference` if it is an array argument (see the module doc).
    fn trace_argument(&mut self, reference: &VariableReference, scope: ScopeId, out: &mut Vec<Statement>) {
        self.trace_argument_with(reference, reference.array_access(), scope, out);
    }

    /// The argument trace of `reference` as if it had the subscripts `access`.
    fn trace_argument_with(
        &mut self,
        reference: &VariableReference,
        access: Option<&ArrayElementReference>,
        scope: ScopeId,
        out: &mut Vec<Statement>,
    ) {
        if !is_active(self.cg, reference) {
            return;
        }
        let (Some(access), Some(symbol)) = (access, reference.base_symbol()) else { return };
        let name = self.cg.symbol_name(symbol).to_owned();
        let name = self.string(&name);
        out.push(self.event(event::ARG, vec![name]));
        for triplet in &access.indices {
            for expression in [&triplet.index, &triplet.bound, &triplet.stride].into_iter().flatten() {
                let value = self.index_value(expression, scope, out);
                out.push(self.event(event::INDEX, vec![value]));
            }
        }
        out.push(self.event(event::END_ARG, Vec::new()));
    }

    /// What `oad_trace_index` takes for a subscript: the constant, the variable, or a temporary
    /// assigned the expression (the assignment goes to `out`).
    fn index_value(&mut self, expression: &Expression, scope: ScopeId, out: &mut Vec<Statement>) -> ArgumentValue {
        if expression.vertices.len() == 1
            && let Some((_, vertex)) = expression.vertices.iter().next()
        {
            match vertex {
                ExprVertex::Constant(constant) => return ArgumentValue::Constant(constant.clone()),
                ExprVertex::Variable(reference) => return ArgumentValue::Variable(reference.clone()),
                _ => {}
            }
        }
        let saved = self.scope;
        self.scope = scope;
        let temporary = self.integer_temporary();
        self.scope = saved;
        let id = self.temporaries.assignment_id(self.cg, temporary);
        let target = whole_reference(self.cg, temporary, false);
        let mut saving = assignment(self.cg, "", target.clone(), expression.clone());
        saving.id = id;
        out.push(Statement::Assignment(saving));
        ArgumentValue::Variable(target)
    }

    /// The argument traces of the array arguments among `expression`'s active variables,
    /// between `open` and `close`, or nothing if it has none.
    fn trace_part(&mut self, expression: Option<&Expression>, (open, close): (&str, &str), out: &mut Vec<Statement>) {
        let Some(expression) = expression else { return };
        let arrays: Vec<&VariableReference> = expression
            .vertices
            .iter()
            .filter_map(|(_, v)| match v {
                ExprVertex::Variable(r) if r.array_access().is_some() && is_active(self.cg, r) => Some(r),
                _ => None,
            })
            .collect();
        if arrays.is_empty() {
            return;
        }
        out.push(self.event(open, Vec::new()));
        for reference in arrays {
            self.trace_argument(reference, self.scope, out);
        }
        out.push(self.event(close, Vec::new()));
    }

    /// Renames every non-smooth intrinsic with operands to the runtime's `oad_<name>`.
    fn rename_non_smooth(&mut self, graph: &mut FlowGraph) {
        for (_, vertex) in graph.vertices.iter_mut() {
            let CfgVertexKind::BasicBlock(block) = &mut vertex.kind else { continue };
            for statement in &mut block.statements {
                let Statement::Assignment(assignment) = statement else { continue };
                let rhs = &mut assignment.rhs;
                let with_operands: FxHashSet<ExprVertexId> = rhs.edges.iter().map(|e| e.target).collect();
                for (id, vertex) in rhs.vertices.iter_mut() {
                    let ExprVertex::Intrinsic(intrinsic) = vertex else { continue };
                    let name = self.cg.names.get(intrinsic.name);
                    if with_operands.contains(&id) && self.catalogue.get(name).is_some_and(|d| d.non_smooth) {
                        let renamed = format!("oad_{name}");
                        intrinsic.name = self.cg.names.intern(&renamed);
                    }
                }
            }
        }
    }

    /// Loop and branch traces on the edges of `graph` (see the module doc).
    fn trace_control_flow(&mut self, graph: &mut FlowGraph) {
        if !graph.vertices.iter().any(|(_, v)| is_traceable_header(&v.kind)) {
            return;
        }
        let mut work = Work::new(self.cg, graph);
        let Order { vertices, end_of, start_of } = work.sorted();
        work.mark_branch_exits(&start_of);
        for v in vertices {
            let kind = match &work.graph.vertices[v].kind {
                CfgVertexKind::ForLoop(_) | CfgVertexKind::PreLoop(_) | CfgVertexKind::PostLoop(_) => Kind::Loop,
                CfgVertexKind::EndBranch => Kind::EndBranch,
                _ => continue,
            };
            match kind {
                Kind::Loop => {
                    let end = end_of.get(&v).copied().or_else(|| work.end_loop_of(v));
                    self.trace_loop(&mut work, v, end);
                }
                Kind::EndBranch => {
                    if let Some(&branch) = start_of.get(&v) {
                        self.trace_branch(&mut work, branch, v);
                    }
                }
            }
        }
        work.finish();
    }

    /// Traces the loop headed by `header` whose EndLoop is `end`, if its control reads an
    /// active variable.
    fn trace_loop(&mut self, work: &mut Work, header: CfgVertexId, end: Option<CfgVertexId>) {
        let (parts, line): ([Option<Expression>; 3], u64) = match &work.graph.vertices[header].kind {
            CfgVertexKind::ForLoop(l) => (
                [
                    l.initialization.as_ref().map(|a| a.rhs.clone()),
                    l.condition.clone(),
                    l.update.as_ref().map(|a| a.rhs.clone()),
                ],
                l.line,
            ),
            CfgVertexKind::PreLoop(c) | CfgVertexKind::PostLoop(c) => ([None, c.condition.clone(), None], c.line),
            _ => return,
        };
        if !parts.iter().flatten().any(|e| reads_active(self.cg, e)) {
            return;
        }
        self.report.loops += 1;
        let mut counter = None;
        let body = work.loop_body(header);
        let (back, entries): (Vec<usize>, Vec<usize>) = work
            .in_edges(header)
            .into_iter()
            .partition(|&e| Some(work.edges[e].source) == end || body.contains(&work.edges[e].source));
        for edge in entries {
            let symbol = self.integer_temporary();
            let id = self.temporaries.assignment_id(self.cg, symbol);
            let target = whole_reference(self.cg, symbol, false);
            let zero = Expression::constant(self.cg, ConstantType::Integer, "0");
            let mut start = assignment(self.cg, "", target, zero);
            start.id = id;
            let mut statements = vec![Statement::Assignment(start)];
            let line = self.line(line);
            statements.push(self.event(event::LOOP, vec![line]));
            for (part, names) in parts.iter().zip(event::PARTS) {
                self.trace_part(part.as_ref(), names, &mut statements);
            }
            self.insert(work, edge, statements, false);
            counter = Some(symbol);
        }
        let Some(counter) = counter else { return };
        if let Some(exit) = work.loop_exit(header) {
            let count = ArgumentValue::Variable(whole_reference(self.cg, counter, false));
            let statements =
                vec![self.event(event::CONTROL_FLOW_VALUE, vec![count]), self.event(event::END_LOOP, Vec::new())];
            self.insert(work, exit, statements, true);
        }
        // An iteration ends on the first edge into the EndLoop, or on another edge back to
        // the header (a `cycle`'s Goto).
        let mut increments: Vec<usize> = end.and_then(|end| work.in_edges(end).first().copied()).into_iter().collect();
        increments.extend(back.into_iter().filter(|&e| Some(work.edges[e].source) != end));
        for edge in increments {
            let target = whole_reference(self.cg, counter, false);
            let one = Expression::constant(self.cg, ConstantType::Integer, "1");
            let sum = Expression::intrinsic(self.cg, "add_scal_scal", Expression::variable(target.clone()), one);
            let id = self.temporaries.statement_id(self.cg, &format!("_trace_{}_count", self.routine_name));
            let mut increment = assignment(self.cg, "", target, sum);
            increment.id = id;
            self.insert(work, edge, vec![Statement::Assignment(increment)], false);
        }
    }

    /// Traces the branch `branch` whose EndBranch is `end`, if its condition reads an active
    /// variable.
    fn trace_branch(&mut self, work: &mut Work, branch: CfgVertexId, end: CfgVertexId) {
        let (condition, line) = match &work.graph.vertices[branch].kind {
            CfgVertexKind::Branch(c) => (c.condition.clone(), c.line),
            _ => return,
        };
        if !condition.as_ref().is_some_and(|e| reads_active(self.cg, e)) {
            return;
        }
        self.report.branches += 1;
        if let Some(edge) = work.in_edges(branch).first().copied() {
            let line = self.line(line);
            let mut statements = vec![self.event(event::BRANCH, vec![line])];
            self.trace_part(condition.as_ref(), event::PARTS[1], &mut statements);
            self.insert(work, edge, statements, true);
        }
        let arms = work.in_edges(end);
        let two = arms.len() == 2;
        for (k, edge) in arms.into_iter().enumerate() {
            let mark = work.marks[edge];
            let value = match (two, mark) {
                // An arm entered along an edge that says "false" is the other arm.
                (true, Some(0) | None) => 0,
                (true, Some(_)) => 1,
                (false, Some(value)) => value,
                (false, None) => k as i64 + 1,
            };
            let value = self.integer(value);
            let statements =
                vec![self.event(event::CONTROL_FLOW_VALUE, vec![value]), self.event(event::END_BRANCH, Vec::new())];
            self.insert(work, edge, statements, true);
        }
    }

    /// Puts a new basic block holding `statements` on `edge`. The branch condition of the edge
    /// stays on the edge out of its source; an arm's mark (`carry_mark`) goes to the edge into
    /// the old target.
    fn insert(&mut self, work: &mut Work, edge: usize, statements: Vec<Statement>, carry_mark: bool) {
        self.blocks += 1;
        let mut id = format!("_trc_{}", self.blocks);
        while work.vertex_ids.contains(id.as_str()) {
            self.blocks += 1;
            id = format!("_trc_{}", self.blocks);
        }
        let id = self.cg.names.intern(&id);
        let block = CfgVertex {
            id,
            annotation: Name::EMPTY,
            kind: CfgVertexKind::BasicBlock(BasicBlock { scope: self.scope, statements }),
        };
        work.insert_on(self.cg, edge, block, carry_mark);
    }
}

/// A vertex's index in its graph's arena.
fn slot(v: CfgVertexId) -> usize {
    v.into_raw().into_u32() as usize
}

/// The vertices the control-flow traces act on.
enum Kind {
    Loop,
    EndBranch,
}

/// Whether a vertex heads a loop or branch that may need tracing.
fn is_traceable_header(kind: &CfgVertexKind) -> bool {
    matches!(
        kind,
        CfgVertexKind::ForLoop(_) | CfgVertexKind::PreLoop(_) | CfgVertexKind::PostLoop(_) | CfgVertexKind::Branch(_)
    )
}

/// Whether a reference is active in the original's sense: its symbol is active (whatever its
/// type: an active integer counts) and the reference is not marked passive.
pub(crate) fn is_active(cg: &CallGraph, reference: &VariableReference) -> bool {
    reference.active != ActiveUse::False
        && !reference.deriv
        && reference.base_symbol().is_some_and(|symbol| cg.symbols[symbol].active)
}

/// Whether an expression reads an active variable.
pub(crate) fn reads_active(cg: &CallGraph, expression: &Expression) -> bool {
    expression.vertices.iter().any(|(_, v)| matches!(v, ExprVertex::Variable(r) if is_active(cg, r)))
}

/// The variable references of the subexpression of `expression` rooted at `root`, in the
/// expression's vertex order.
fn subexpression_variables<'e>(
    expression: &'e Expression,
    table: &OperandTable,
    root: ExprVertexId,
) -> Vec<&'e VariableReference> {
    let mut inside = vec![false; expression.vertices.len()];
    let mut stack = vec![root];
    while let Some(v) = stack.pop() {
        let slot = &mut inside[v.into_raw().into_u32() as usize];
        if !std::mem::replace(slot, true) {
            stack.extend_from_slice(table.of(v));
        }
    }
    expression
        .vertices
        .iter()
        .filter(|(id, _)| inside[id.into_raw().into_u32() as usize])
        .filter_map(|(_, v)| match v {
            ExprVertex::Variable(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// The vertices in control-flow reversal's topological order, with the loops' and branches'
/// ends matched to their headers.
struct Order {
    vertices: Vec<CfgVertexId>,
    /// Loop header → its EndLoop.
    end_of: rustc_hash::FxHashMap<CfgVertexId, CfgVertexId>,
    /// EndBranch → its Branch.
    start_of: rustc_hash::FxHashMap<CfgVertexId, CfgVertexId>,
}

/// A control flow graph being edited: removed edges are marked dead, so an edge's index stays
/// its name, and new edges go to the end, as the original's graph library keeps them.
struct Work<'g> {
    graph: &'g mut FlowGraph,
    edges: Vec<CfgEdge>,
    alive: Vec<bool>,
    /// Per edge: the arm mark an edge into an EndBranch carries (see `mark_branch_exits`).
    marks: Vec<Option<i64>>,
    /// Per vertex, its live in-edges and out-edges in edge order, kept as edges change.
    incoming: Vec<Vec<usize>>,
    outgoing: Vec<Vec<usize>>,
    vertex_ids: FxHashSet<String>,
    new_edges: usize,
}

impl<'g> Work<'g> {
    fn new(cg: &CallGraph, graph: &'g mut FlowGraph) -> Work<'g> {
        let edges = std::mem::take(&mut graph.edges);
        let n = edges.len();
        let vertex_ids = graph.vertices.iter().map(|(_, v)| cg.name(v.id).to_owned()).collect();
        let (mut incoming, mut outgoing) =
            (vec![Vec::new(); graph.vertices.len()], vec![Vec::new(); graph.vertices.len()]);
        for (e, edge) in edges.iter().enumerate() {
            incoming[slot(edge.target)].push(e);
            outgoing[slot(edge.source)].push(e);
        }
        Work { graph, edges, alive: vec![true; n], marks: vec![None; n], incoming, outgoing, vertex_ids, new_edges: 0 }
    }

    fn in_edges(&self, v: CfgVertexId) -> Vec<usize> {
        self.incoming[slot(v)].clone()
    }

    fn out_edges(&self, v: CfgVertexId) -> Vec<usize> {
        self.outgoing[slot(v)].clone()
    }

    /// The edge from a loop header into its body: the one carrying condition value 1, else
    /// the first.
    fn body_edge(&self, header: CfgVertexId) -> Option<usize> {
        let out = self.out_edges(header);
        out.iter().copied().find(|&e| self.edges[e].condition_value == Some(1)).or(out.first().copied())
    }

    /// The EndLoop whose edge goes back to `header`, where the sort did not reach it.
    fn end_loop_of(&self, header: CfgVertexId) -> Option<CfgVertexId> {
        self.in_edges(header)
            .into_iter()
            .map(|e| self.edges[e].source)
            .find(|&s| matches!(self.graph.vertices[s].kind, CfgVertexKind::EndLoop))
    }

    /// The vertices reachable from the loop's body edge without passing its header.
    fn loop_body(&self, header: CfgVertexId) -> FxHashSet<CfgVertexId> {
        // The out-edges of every vertex, found once: one pass over the edges, not one per vertex.
        let mut successors: Vec<Vec<CfgVertexId>> = vec![Vec::new(); self.graph.vertices.len()];
        for (edge, alive) in self.edges.iter().zip(&self.alive) {
            if *alive {
                successors[edge.source.into_raw().into_u32() as usize].push(edge.target);
            }
        }
        let mut body = FxHashSet::default();
        let mut stack: Vec<CfgVertexId> = self.body_edge(header).map(|e| self.edges[e].target).into_iter().collect();
        while let Some(v) = stack.pop() {
            if v == header || !body.insert(v) {
                continue;
            }
            stack.extend_from_slice(&successors[v.into_raw().into_u32() as usize]);
        }
        body
    }

    fn loop_exit(&self, header: CfgVertexId) -> Option<usize> {
        let body = self.body_edge(header);
        self.out_edges(header).into_iter().find(|&e| Some(e) != body)
    }

    /// Depth first from Entry, as control-flow reversal sorts: a loop's body before its exit, a
    /// branch's arms in edge order and then its EndBranch (matched by a stack of the EndBranch
    /// vertices reached) and what follows it.
    fn sorted(&self) -> Order {
        enum Task {
            Visit(CfgVertexId),
            AfterBranch(CfgVertexId),
        }
        let n = self.graph.vertices.len();
        let mut visited = vec![false; n];
        let mut order = Order { vertices: Vec::new(), end_of: Default::default(), start_of: Default::default() };
        let mut ends: Vec<CfgVertexId> = Vec::new();
        let entry = self.graph.vertices.iter().find(|(_, v)| matches!(v.kind, CfgVertexKind::Entry)).map(|(id, _)| id);
        let mut tasks: Vec<Task> = entry.into_iter().map(Task::Visit).collect();
        // The out-edges of every vertex, found once (the graph does not change while sorted).
        let mut successors: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (e, edge) in self.edges.iter().enumerate() {
            if self.alive[e] {
                successors[edge.source.into_raw().into_u32() as usize].push(e);
            }
        }
        let out_edges = |v: CfgVertexId| successors[v.into_raw().into_u32() as usize].clone();
        let targets = |edges: Vec<usize>| edges.into_iter().map(|e| self.edges[e].target).collect::<Vec<_>>();
        while let Some(task) = tasks.pop() {
            match task {
                Task::Visit(v) => {
                    let slot = &mut visited[v.into_raw().into_u32() as usize];
                    if std::mem::replace(slot, true) {
                        continue;
                    }
                    let kind = &self.graph.vertices[v].kind;
                    if matches!(kind, CfgVertexKind::EndBranch) {
                        ends.push(v);
                        continue;
                    }
                    order.vertices.push(v);
                    match kind {
                        CfgVertexKind::EndLoop => {
                            if let Some(&e) = out_edges(v).first() {
                                order.end_of.insert(self.edges[e].target, v);
                            }
                        }
                        CfgVertexKind::ForLoop(_) | CfgVertexKind::PreLoop(_) | CfgVertexKind::PostLoop(_) => {
                            let out = out_edges(v);
                            let body = out
                                .iter()
                                .copied()
                                .find(|&e| self.edges[e].condition_value == Some(1))
                                .or(out.first().copied());
                            let (into, after): (Vec<usize>, Vec<usize>) =
                                out.into_iter().partition(|&e| Some(e) == body);
                            tasks.extend(targets(after).into_iter().rev().map(Task::Visit));
                            tasks.extend(targets(into).into_iter().rev().map(Task::Visit));
                        }
                        _ => {
                            if matches!(kind, CfgVertexKind::Branch(_)) {
                                tasks.push(Task::AfterBranch(v));
                            }
                            tasks.extend(targets(out_edges(v)).into_iter().rev().map(Task::Visit));
                        }
                    }
                }
                Task::AfterBranch(branch) => {
                    let Some(end) = ends.pop() else { continue };
                    order.start_of.insert(end, branch);
                    order.vertices.push(end);
                    if let Some(&e) = out_edges(end).first() {
                        tasks.push(Task::Visit(self.edges[e].target));
                    }
                }
            }
        }
        order
    }

    /// Marks the edges into each EndBranch (before any change to the graph): with two arms,
    /// the condition value of the arm's edge out of its Branch, if it has one; otherwise the
    /// edge's number among the EndBranch's in-edges.
    fn mark_branch_exits(&mut self, start_of: &rustc_hash::FxHashMap<CfgVertexId, CfgVertexId>) {
        for (&end, &branch) in start_of {
            let arms = self.in_edges(end);
            for (k, &edge) in arms.iter().enumerate() {
                self.marks[edge] = if arms.len() == 2 {
                    self.arm_entry(edge, branch).and_then(|e| self.edges[e].condition_value)
                } else {
                    Some(k as i64 + 1)
                };
            }
        }
    }

    /// The edge out of `branch` that starts the arm ending in `edge`: back along first in-edges
    /// (skipping those from an EndLoop), counting nested branches.
    fn arm_entry(&self, edge: usize, branch: CfgVertexId) -> Option<usize> {
        let mut depth = 0usize;
        let mut current = edge;
        for _ in 0..=self.edges.len() {
            let source = self.edges[current].source;
            match &self.graph.vertices[source].kind {
                CfgVertexKind::Branch(_) => {
                    if depth == 0 {
                        return (source == branch).then_some(current);
                    }
                    depth -= 1;
                }
                CfgVertexKind::EndBranch => depth += 1,
                _ => {}
            }
            current = self
                .in_edges(source)
                .into_iter()
                .find(|&e| !matches!(self.graph.vertices[self.edges[e].source].kind, CfgVertexKind::EndLoop))?;
        }
        None
    }

    /// Replaces `edge` by a new vertex `block` between its ends.
    fn insert_on(&mut self, cg: &mut CallGraph, edge: usize, block: CfgVertex, carry_mark: bool) {
        let old = self.edges[edge];
        self.alive[edge] = false;
        self.incoming[slot(old.target)].retain(|&e| e != edge);
        self.outgoing[slot(old.source)].retain(|&e| e != edge);
        let block = self.graph.vertices.alloc(block);
        self.incoming.push(Vec::new());
        self.outgoing.push(Vec::new());
        let mark = self.marks[edge];
        let mut add = |work: &mut Work, source: CfgVertexId, target: CfgVertexId, condition_value, mark| {
            work.new_edges += 1;
            let id = cg.names.intern(&format!("_trc_e_{}", work.new_edges));
            let index = work.edges.len();
            work.edges.push(CfgEdge { id, annotation: Name::EMPTY, source, target, condition_value });
            work.alive.push(true);
            work.marks.push(mark);
            work.incoming[slot(target)].push(index);
            work.outgoing[slot(source)].push(index);
        };
        add(self, old.source, block, old.condition_value, if carry_mark { None } else { mark });
        add(self, block, old.target, None, if carry_mark { mark } else { None });
    }

    /// Puts the edited edges back into the graph.
    fn finish(self) {
        let edges = self.edges.into_iter().zip(self.alive).filter(|(_, alive)| *alive).map(|(e, _)| e).collect();
        self.graph.edges = edges;
    }
}

/// Whether TypeChange made `statement` to go before a call (a save of a subscript the call may
/// overwrite, an allocation, a conversion into a temporary), by the ids it gives them. The
/// executor's own tracing recognizes them the same way.
pub(crate) fn made_before_call(cg: &CallGraph, statement: &Statement) -> bool {
    match statement {
        Statement::InlinableSubroutineCall(c) => {
            matches!(cg.name(c.id), "oad_allocate_matching" | "oad_convert_prior")
        }
        Statement::Assignment(a) => {
            cg.name(a.id).starts_with("assignment_to_temporary_for_saving_value_across_statement")
        }
        _ => false,
    }
}
