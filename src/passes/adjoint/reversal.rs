//! Control-flow reversal of structured control flow graphs (control-flow-reversal paper,
//! reversal of loops and branches). The graph is read as a tree of regions — basic blocks,
//! loops (ForLoop/PreLoop … EndLoop) and branches (Branch/If … EndBranch) in sequence — and
//! written twice:
//! - the taping graph is the original with bookkeeping: a loop counts its iterations in a
//!   `<prefix>Symbol_N` and pushes the count after the loop (`push_i_s0`); each branch arm
//!   pushes its number before joining;
//! - the adjoint graph runs the regions backwards: a loop pops its count and runs the adjoint
//!   of its body that many times, a branch pops the arm number and branches on it.
//!
//! Loops are reversed this way ("anonymously"), post-test loops included, unless
//! [`super::address`] finds an explicit loop it can run backwards from its bounds (then nothing
//! is counted and its variable is recomputed), and a branch whose condition reads only what
//! that reversal restores is evaluated again instead of taped. A two-way `If` that joins in an
//! EndBranch is a branch like any other.
//!
//! A graph that is not structured (Goto, Label, an If without EndBranch) is reversed by
//! basic-block numbers instead: the taping graph is the graph itself, each block pushing its
//! number as it ends; the adjoint pops numbers and runs the adjoint of the numbered block until
//! it pops the 0 pushed after Entry.

use crate::ir::build::{FlowGraphBuilder, Temporaries, assignment, inlinable_call, integer_constant, whole_reference};
use crate::ir::*;

use super::AdjointError;
use super::address::{AddressPlan, variable_in_reverse};
use super::block::substitute_subscripts;

/// A piece of structured control flow.
#[derive(Clone, Debug)]
pub enum Region {
    Block(CfgVertexId),
    Loop { header: CfgVertexId, end: CfgVertexId, body: Vec<Region> },
    Branch { header: CfgVertexId, end: CfgVertexId, arms: Vec<(Option<i64>, Vec<Region>)> },
}

/// Where reading a sequence stopped.
enum Stop {
    Exit(CfgVertexId),
    EndLoop(CfgVertexId),
    EndBranch(CfgVertexId),
}

/// The region tree of a graph: the sequence from Entry to Exit, with Entry and Exit.
pub fn structure(graph: &FlowGraph) -> Result<(CfgVertexId, Vec<Region>, CfgVertexId), AdjointError> {
    let mut successors: Vec<Vec<&CfgEdge>> = vec![Vec::new(); graph.vertices.len()];
    for edge in &graph.edges {
        successors[index(edge.source)].push(edge);
    }
    let entry = graph
        .vertices
        .iter()
        .find(|(_, v)| matches!(v.kind, CfgVertexKind::Entry))
        .map(|(id, _)| id)
        .ok_or_else(|| AdjointError::Unsupported("a control flow graph without Entry".into()))?;
    let reader = Reader { graph, successors };
    let start = reader.single_successor(entry)?;
    let mut budget = graph.vertices.len() * 2 + 2;
    let (regions, stop) = reader.sequence(start, &mut budget)?;
    // Arms that join before their EndBranch (a block both reach) read as a tree would hold
    // that block twice; such a graph is not structured.
    let mut seen = vec![false; graph.vertices.len()];
    if !once_each(&regions, &mut seen) {
        return Err(AdjointError::Unsupported("control flow that is not structured (arms that join early)".into()));
    }
    match stop {
        Stop::Exit(exit) => Ok((entry, regions, exit)),
        Stop::EndLoop(_) | Stop::EndBranch(_) => {
            Err(AdjointError::Unsupported("an EndLoop or EndBranch outside any loop or branch".into()))
        }
    }
}

/// Whether no vertex stands in two places of the region tree (marking those in `seen`).
fn once_each(regions: &[Region], seen: &mut [bool]) -> bool {
    fn first(seen: &mut [bool], v: CfgVertexId) -> bool {
        !std::mem::replace(&mut seen[index(v)], true)
    }
    regions.iter().all(|region| match region {
        Region::Block(v) => first(seen, *v),
        Region::Loop { header, end, body } => first(seen, *header) && first(seen, *end) && once_each(body, seen),
        // Every arm ends in the same EndBranch, counted once.
        Region::Branch { header, end, arms } => {
            first(seen, *header) && first(seen, *end) && arms.iter().all(|(_, arm)| once_each(arm, seen))
        }
    })
}

fn index(id: CfgVertexId) -> usize {
    id.into_raw().into_u32() as usize
}

struct Reader<'g> {
    graph: &'g FlowGraph,
    successors: Vec<Vec<&'g CfgEdge>>,
}

impl Reader<'_> {
    fn name(&self, v: CfgVertexId) -> String {
        format!("{} vertex", self.graph.vertices[v].kind.element_name())
    }

    fn single_successor(&self, v: CfgVertexId) -> Result<CfgVertexId, AdjointError> {
        match self.successors[index(v)].as_slice() {
            [edge] => Ok(edge.target),
            _ => Err(AdjointError::Unsupported(format!("{} without exactly one successor", self.name(v)))),
        }
    }

    fn sequence(&self, mut v: CfgVertexId, budget: &mut usize) -> Result<(Vec<Region>, Stop), AdjointError> {
        let mut regions = Vec::new();
        loop {
            if *budget == 0 {
                return Err(AdjointError::Unsupported("control flow that is not structured".into()));
            }
            *budget -= 1;
            match &self.graph.vertices[v].kind {
                CfgVertexKind::Exit => return Ok((regions, Stop::Exit(v))),
                CfgVertexKind::EndLoop => return Ok((regions, Stop::EndLoop(v))),
                CfgVertexKind::EndBranch => return Ok((regions, Stop::EndBranch(v))),
                CfgVertexKind::BasicBlock(_) => {
                    regions.push(Region::Block(v));
                    v = self.single_successor(v)?;
                }
                CfgVertexKind::ForLoop(_) | CfgVertexKind::PreLoop(_) | CfgVertexKind::PostLoop(_) => {
                    let out = &self.successors[index(v)];
                    let mut body_edge = out.iter().find(|e| e.condition_value == Some(1));
                    if body_edge.is_none() && out.len() == 2 {
                        // Older front ends mark neither edge: the body is the one that comes
                        // back through an EndLoop.
                        body_edge = out.iter().find(|e| {
                            let mut trial = *budget;
                            matches!(self.sequence(e.target, &mut trial), Ok((_, Stop::EndLoop(end)))
                                if self.single_successor(end).ok() == Some(v))
                        });
                    }
                    let exit_edge = body_edge.and_then(|b| out.iter().find(|e| e.target != b.target));
                    let (Some(body_edge), Some(exit_edge), 2) = (body_edge, exit_edge, out.len()) else {
                        return Err(AdjointError::Unsupported(format!(
                            "{} without a body and an exit edge",
                            self.name(v)
                        )));
                    };
                    let (body, stop) = self.sequence(body_edge.target, budget)?;
                    let Stop::EndLoop(end) = stop else {
                        return Err(AdjointError::Unsupported("a loop body that does not end in EndLoop".into()));
                    };
                    if self.single_successor(end)? != v {
                        return Err(AdjointError::Unsupported("an EndLoop that does not lead back to its loop".into()));
                    }
                    regions.push(Region::Loop { header: v, end, body });
                    v = exit_edge.target;
                }
                CfgVertexKind::Branch(_) | CfgVertexKind::If(_) => {
                    let mut arms = Vec::new();
                    let mut end = None;
                    for edge in &self.successors[index(v)] {
                        let (arm, stop) = self.sequence(edge.target, budget)?;
                        let Stop::EndBranch(e) = stop else {
                            return Err(AdjointError::Unsupported(
                                "a branch arm that does not end in EndBranch".into(),
                            ));
                        };
                        if end.is_some_and(|x| x != e) {
                            return Err(AdjointError::Unsupported(
                                "branch arms that end in different EndBranches".into(),
                            ));
                        }
                        end = Some(e);
                        arms.push((edge.condition_value, arm));
                    }
                    let Some(end) = end else {
                        return Err(AdjointError::Unsupported(format!("{} without arms", self.name(v))));
                    };
                    regions.push(Region::Branch { header: v, end, arms });
                    v = self.single_successor(end)?;
                }
                CfgVertexKind::Entry | CfgVertexKind::Label | CfgVertexKind::Goto => {
                    return Err(AdjointError::Unsupported(format!(
                        "unstructured control flow ({}) is not reversed yet",
                        self.name(v)
                    )));
                }
            }
        }
    }
}

/// What the two graphs of a routine are made of.
pub struct Reversal<'a> {
    pub cg: &'a mut CallGraph,
    pub temporaries: &'a mut Temporaries,
    /// The tangent graph (loop headers, branch headers and their conditions come from it).
    pub graph: &'a FlowGraph,
    pub scope: ScopeId,
    /// Per vertex of `graph`: the taping and adjoint statements of a basic block.
    pub blocks: Vec<Option<(Vec<Statement>, Vec<Statement>)>>,
    pub fresh: usize,
    /// Loops reversed from their bounds, and what they restore.
    pub address: AddressPlan,
    /// Inside a reversed explicit nest: quasi-constants and the temporaries they were popped into.
    pub substitution: Vec<(VariableReference, VariableReference)>,
}

impl Reversal<'_> {
    fn fresh_id(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    fn counter(&mut self) -> SymbolId {
        self.temporaries.fresh(self.cg, self.scope, "Symbol", |s| {
            s.ty = SymbolType::Integer;
            s.active = false;
        })
    }

    fn block(&mut self, builder: &mut FlowGraphBuilder, prefix: &str, statements: Vec<Statement>) -> CfgVertexId {
        let id = self.fresh_id(prefix);
        builder.vertex(self.cg, &id, "", CfgVertexKind::BasicBlock(BasicBlock { scope: self.scope, statements }))
    }

    fn integer(&mut self, value: i64) -> Expression {
        Expression::constant(self.cg, ConstantType::Integer, &value.to_string())
    }

    /// `pop_i_s0(target)`.
    fn pop_integer(&mut self, target: &VariableReference) -> Statement {
        inlinable_call(self.cg, "inline_pop_i", "pop_i_s0", vec![ArgumentValue::Variable(target.clone())])
    }

    /// A passive temporary of `like`'s type (an integer counter for integers).
    fn like(&mut self, like: SymbolId) -> SymbolId {
        let model = self.cg.symbols[like].clone();
        if model.ty == SymbolType::Integer {
            return self.counter();
        }
        self.temporaries.fresh(self.cg, self.scope, "Symbol", |s| {
            s.ty = model.ty;
            s.fe_type = model.fe_type;
            s.active = false;
        })
    }

    /// The push of a scalar of `symbol`'s type: integers, logicals and strings have tapes of
    /// their own.
    fn push_scalar(&mut self, symbol: SymbolId, value: ArgumentValue) -> Statement {
        match self.cg.symbols[symbol].ty {
            SymbolType::Bool => inlinable_call(self.cg, "inline_push_b", "push_b", vec![value]),
            SymbolType::Char | SymbolType::String => inlinable_call(self.cg, "inline_push_s", "push_s", vec![value]),
            _ => self.push_integer(value),
        }
    }

    fn pop_scalar(&mut self, symbol: SymbolId, target: &VariableReference) -> Statement {
        let target = ArgumentValue::Variable(target.clone());
        match self.cg.symbols[symbol].ty {
            SymbolType::Bool => inlinable_call(self.cg, "inline_pop_b", "pop_b", vec![target]),
            SymbolType::Char | SymbolType::String => inlinable_call(self.cg, "inline_pop_s", "pop_s", vec![target]),
            _ => inlinable_call(self.cg, "inline_pop_i", "pop_i_s0", vec![target]),
        }
    }

    fn push_integer(&mut self, value: ArgumentValue) -> Statement {
        inlinable_call(self.cg, "inline_push_i", "push_i_s0", vec![value])
    }

    fn constant_argument(&mut self, value: i64) -> ArgumentValue {
        ArgumentValue::Constant(integer_constant(self.cg, value))
    }

    /// A copy of block `v` of the tangent graph holding its taping or adjoint statements (each
    /// used once: moved out, not cloned).
    fn block_copy(&mut self, builder: &mut FlowGraphBuilder, v: CfgVertexId, taping: bool) -> CfgVertexId {
        let vertex = &self.graph.vertices[v];
        let statements = match self.blocks.get_mut(index(v)) {
            Some(Some((t, a))) => std::mem::take(if taping { t } else { a }),
            _ => Vec::new(),
        };
        let scope = match &vertex.kind {
            CfgVertexKind::BasicBlock(block) => block.scope,
            _ => self.scope,
        };
        builder.graph.vertices.alloc(CfgVertex {
            id: vertex.id,
            annotation: vertex.annotation,
            kind: CfgVertexKind::BasicBlock(BasicBlock { scope, statements }),
        })
    }

    /// `do t = 1, count` as a ForLoop vertex.
    fn counted_loop(
        &mut self,
        builder: &mut FlowGraphBuilder,
        t: &VariableReference,
        count: &VariableReference,
    ) -> CfgVertexId {
        let one = self.integer(1);
        let init = assignment(self.cg, "_adj_loop_init", t.clone(), one);
        let test = Expression::boolean(
            self.cg,
            BooleanOp::LessOrEqual,
            Expression::variable(t.clone()),
            Expression::variable(count.clone()),
        );
        let one = self.integer(1);
        let next = Expression::intrinsic(self.cg, "add_scal_scal", Expression::variable(t.clone()), one);
        let update = assignment(self.cg, "_adj_loop_update", t.clone(), next);
        let header_id = self.fresh_id("_adj_");
        builder.vertex(
            self.cg,
            &header_id,
            "",
            CfgVertexKind::ForLoop(Box::new(ForLoop {
                initialization: Some(init),
                condition: Some(test),
                update: Some(update),
                reversal: LoopReversal::Anonymous,
                line: 0,
            })),
        )
    }

    /// The taping graph: the tangent graph's regions with their taping blocks, loop counters and
    /// arm numbers.
    pub fn taping(&mut self, entry: CfgVertexId, regions: &[Region], exit: CfgVertexId) -> FlowGraph {
        let mut builder = FlowGraphBuilder::default();
        let new_entry = builder.copy(&self.graph.vertices[entry]);
        let last = self.taping_sequence(&mut builder, regions, new_entry, None);
        let new_exit = builder.copy(&self.graph.vertices[exit]);
        let (from, condition) = last;
        builder.edge(self.cg, from, new_exit, condition);
        builder.graph
    }

    /// Emits `regions` after `from` (whose edge to the first carries `condition`); returns the
    /// last vertex and the condition its outgoing edge must carry.
    fn taping_sequence(
        &mut self,
        builder: &mut FlowGraphBuilder,
        regions: &[Region],
        from: CfgVertexId,
        condition: Option<i64>,
    ) -> (CfgVertexId, Option<i64>) {
        let (mut from, mut condition) = (from, condition);
        for region in regions {
            let first = match region {
                Region::Block(v) => {
                    let new = self.block_copy(builder, *v, true);
                    builder.edge(self.cg, from, new, condition);
                    from = new;
                    condition = None;
                    continue;
                }
                Region::Loop { header, end, body } if self.address.loops.contains_key(header) => {
                    // Reversed from its bounds: nothing to count; after the outermost loop of
                    // a nest, its quasi-constants.
                    let head = builder.copy(&self.graph.vertices[*header]);
                    builder.edge(self.cg, from, head, condition);
                    let (last, cond) = self.taping_sequence(builder, body, head, Some(1));
                    let end_loop = builder.copy(&self.graph.vertices[*end]);
                    builder.edge(self.cg, last, end_loop, cond);
                    builder.edge(self.cg, end_loop, head, None);
                    let invariants = self.address.invariants.get(header).cloned().unwrap_or_default();
                    if invariants.is_empty() {
                        from = head;
                        condition = None;
                        continue;
                    }
                    let pushes: Vec<Statement> = invariants
                        .iter()
                        .map(|&v| {
                            let r = whole_reference(self.cg, v, false);
                            self.push_scalar(v, ArgumentValue::Variable(r))
                        })
                        .collect();
                    let after = self.block(builder, "_aug_", pushes);
                    builder.edge(self.cg, head, after, None);
                    after
                }
                Region::Loop { header, end, body } => {
                    let counter = self.counter();
                    let zero = self.integer(0);
                    let lhs = whole_reference(self.cg, counter, false);
                    let init = assignment(self.cg, "_loop_count_init", lhs.clone(), zero);
                    let init = self.block(builder, "_aug_", vec![Statement::Assignment(init)]);
                    builder.edge(self.cg, from, init, condition);
                    let head = builder.copy(&self.graph.vertices[*header]);
                    builder.edge(self.cg, init, head, None);
                    let (last, cond) = self.taping_sequence(builder, body, head, Some(1));
                    let one = self.integer(1);
                    let sum = Expression::intrinsic(self.cg, "add_scal_scal", Expression::variable(lhs.clone()), one);
                    let increment = assignment(self.cg, "_loop_count_increment", lhs.clone(), sum);
                    let increment = self.block(builder, "_aug_", vec![Statement::Assignment(increment)]);
                    builder.edge(self.cg, last, increment, cond);
                    let end_loop = builder.copy(&self.graph.vertices[*end]);
                    builder.edge(self.cg, increment, end_loop, None);
                    builder.edge(self.cg, end_loop, head, None);
                    let push = self.push_integer(ArgumentValue::Variable(lhs));
                    let after = self.block(builder, "_aug_", vec![push]);
                    builder.edge(self.cg, head, after, None);
                    after
                }
                Region::Branch { header, end, arms } if self.address.reevaluated.contains(header) => {
                    // The adjoint evaluates the condition again: no arm number to tape.
                    let head = builder.copy(&self.graph.vertices[*header]);
                    builder.edge(self.cg, from, head, condition);
                    let end_branch = builder.copy(&self.graph.vertices[*end]);
                    for (arm_condition, arm) in arms {
                        let (last, cond) = self.taping_sequence(builder, arm, head, *arm_condition);
                        builder.edge(self.cg, last, end_branch, cond);
                    }
                    end_branch
                }
                Region::Branch { header, end, arms } => {
                    let head = builder.copy(&self.graph.vertices[*header]);
                    builder.edge(self.cg, from, head, condition);
                    let end_branch = builder.copy(&self.graph.vertices[*end]);
                    for (number, (arm_condition, arm)) in arms.iter().enumerate() {
                        let (last, cond) = self.taping_sequence(builder, arm, head, *arm_condition);
                        let value = self.constant_argument(number as i64);
                        let push = self.push_integer(value);
                        let push = self.block(builder, "_aug_", vec![push]);
                        builder.edge(self.cg, last, push, cond);
                        builder.edge(self.cg, push, end_branch, None);
                    }
                    end_branch
                }
            };
            from = first;
            condition = None;
        }
        (from, condition)
    }

    /// The adjoint graph: the regions backwards, each block replaced by its adjoint.
    pub fn adjoint(&mut self, regions: &[Region]) -> FlowGraph {
        let mut builder = FlowGraphBuilder::default();
        let entry_id = self.fresh_id("_adj_");
        let entry = builder.vertex(self.cg, &entry_id, "", CfgVertexKind::Entry);
        let (last, condition) = self.adjoint_sequence(&mut builder, regions, entry, None);
        let exit_id = self.fresh_id("_adj_");
        let exit = builder.vertex(self.cg, &exit_id, "", CfgVertexKind::Exit);
        builder.edge(self.cg, last, exit, condition);
        builder.graph
    }

    fn adjoint_sequence(
        &mut self,
        builder: &mut FlowGraphBuilder,
        regions: &[Region],
        from: CfgVertexId,
        condition: Option<i64>,
    ) -> (CfgVertexId, Option<i64>) {
        let (mut from, mut condition) = (from, condition);
        for region in regions.iter().rev() {
            let last = match region {
                Region::Block(v) => {
                    let new = self.block_copy(builder, *v, false);
                    if let CfgVertexKind::BasicBlock(block) = &mut builder.graph.vertices[new].kind
                        && !self.substitution.is_empty()
                    {
                        for statement in &mut block.statements {
                            crate::ir::visit::statement_references_mut(statement, &mut |r| {
                                substitute_subscripts(r, &self.substitution);
                                // A quasi-constant read as a value (by partials computed again
                                // here) reads its popped copy too.
                                if !r.deriv
                                    && r.vertices.len() == 1
                                    && let Some((_, copy)) = self.substitution.iter().find(|(v, _)| v.same_place(r))
                                {
                                    let id = r.id;
                                    *r = copy.clone();
                                    r.id = id;
                                }
                            });
                        }
                    }
                    builder.edge(self.cg, from, new, condition);
                    new
                }
                Region::Loop { header, body, .. } if self.address.loops.contains_key(header) => {
                    let saved = self.substitution.len();
                    let mut statements = Vec::new();
                    let invariants = self.address.invariants.get(header).cloned().unwrap_or_default();
                    for &v in invariants.iter().rev() {
                        let temporary = self.like(v);
                        let temporary = whole_reference(self.cg, temporary, false);
                        statements.push(self.pop_scalar(v, &temporary));
                        let variable = whole_reference(self.cg, v, false);
                        self.substitution.push((variable, temporary));
                    }
                    let mut explicit = self.address.loops[header].clone();
                    for e in [&mut explicit.lo, &mut explicit.count] {
                        substitute_plain(e, &self.substitution);
                    }
                    let count = self.counter();
                    let count_ref = whole_reference(self.cg, count, false);
                    let n = assignment(self.cg, "_adj_loop_count", count_ref.clone(), explicit.count.clone());
                    statements.push(Statement::Assignment(n));
                    let setup = self.block(builder, "_adj_", statements);
                    builder.edge(self.cg, from, setup, condition);
                    let t = self.counter();
                    let t_ref = whole_reference(self.cg, t, false);
                    let header = self.counted_loop(builder, &t_ref, &count_ref);
                    builder.edge(self.cg, setup, header, None);
                    let set = variable_in_reverse(self.cg, &explicit, &count_ref, &t_ref);
                    let first = self.block(builder, "_adj_", vec![Statement::Assignment(set)]);
                    builder.edge(self.cg, header, first, Some(1));
                    let (last, cond) = self.adjoint_sequence(builder, body, first, None);
                    let end_id = self.fresh_id("_adj_");
                    let end = builder.vertex(self.cg, &end_id, "", CfgVertexKind::EndLoop);
                    builder.edge(self.cg, last, end, cond);
                    builder.edge(self.cg, end, header, None);
                    self.substitution.truncate(saved);
                    from = header;
                    condition = None;
                    continue;
                }
                Region::Loop { body, .. } => {
                    let count = self.counter();
                    let count_ref = whole_reference(self.cg, count, false);
                    let pop = self.pop_integer(&count_ref);
                    let pop = self.block(builder, "_adj_", vec![pop]);
                    builder.edge(self.cg, from, pop, condition);
                    let i = self.counter();
                    let i_ref = whole_reference(self.cg, i, false);
                    let header = self.counted_loop(builder, &i_ref, &count_ref);
                    builder.edge(self.cg, pop, header, None);
                    let (last, cond) = self.adjoint_sequence(builder, body, header, Some(1));
                    let end_id = self.fresh_id("_adj_");
                    let end = builder.vertex(self.cg, &end_id, "", CfgVertexKind::EndLoop);
                    builder.edge(self.cg, last, end, cond);
                    builder.edge(self.cg, end, header, None);
                    // The loop's exit edge is the one the next region attaches to.
                    from = header;
                    condition = None;
                    continue;
                }
                Region::Branch { header, arms, .. } if self.address.reevaluated.contains(header) => {
                    let mut vertex = self.graph.vertices[*header].clone();
                    let id = self.fresh_id("_adj_");
                    vertex.id = self.cg.names.intern(&id);
                    if let CfgVertexKind::Branch(c) | CfgVertexKind::If(c) = &mut vertex.kind
                        && let Some(e) = &mut c.condition
                    {
                        substitute_plain(e, &self.substitution);
                    }
                    let head = builder.copy(&vertex);
                    builder.edge(self.cg, from, head, condition);
                    let end_id = self.fresh_id("_adj_");
                    let end = builder.vertex(self.cg, &end_id, "", CfgVertexKind::EndBranch);
                    for (arm_condition, arm) in arms {
                        let (last, cond) = self.adjoint_sequence(builder, arm, head, *arm_condition);
                        builder.edge(self.cg, last, end, cond);
                    }
                    end
                }
                Region::Branch { arms, .. } => {
                    let arm_number = self.counter();
                    let arm_ref = whole_reference(self.cg, arm_number, false);
                    let pop = self.pop_integer(&arm_ref);
                    let pop = self.block(builder, "_adj_", vec![pop]);
                    builder.edge(self.cg, from, pop, condition);
                    let header_id = self.fresh_id("_adj_");
                    let header = builder.vertex(
                        self.cg,
                        &header_id,
                        "",
                        CfgVertexKind::Branch(Conditional { condition: Some(Expression::variable(arm_ref)), line: 0 }),
                    );
                    builder.edge(self.cg, pop, header, None);
                    let end_id = self.fresh_id("_adj_");
                    let end = builder.vertex(self.cg, &end_id, "", CfgVertexKind::EndBranch);
                    for (number, (_, arm)) in arms.iter().enumerate() {
                        let (last, cond) = self.adjoint_sequence(builder, arm, header, Some(number as i64));
                        builder.edge(self.cg, last, end, cond);
                    }
                    end
                }
            };
            from = last;
            condition = None;
        }
        (from, condition)
    }
}

impl Reversal<'_> {
    /// Taping of any graph (the paper's reversal by basic-block numbers): the graph as it is,
    /// each basic block pushing its number at its end, a block after Entry pushing 0.
    pub fn numbered_taping(&mut self) -> FlowGraph {
        let mut builder = FlowGraphBuilder::default();
        let mut map = Vec::with_capacity(self.graph.vertices.len());
        let mut number = 0;
        let mut entry = None;
        for (id, vertex) in self.graph.vertices.iter() {
            let mut vertex = vertex.clone();
            if let CfgVertexKind::BasicBlock(block) = &mut vertex.kind {
                number += 1;
                let mut statements = match self.blocks.get(index(id)) {
                    Some(Some((taping, _))) => taping.clone(),
                    _ => Vec::new(),
                };
                let value = self.constant_argument(number);
                statements.push(self.push_integer(value));
                block.statements = statements;
            }
            if matches!(vertex.kind, CfgVertexKind::Entry) {
                entry = Some(id);
            }
            map.push(builder.copy(&vertex));
        }
        let zero = self.constant_argument(0);
        let push = self.push_integer(zero);
        let start = self.block(&mut builder, "_aug_", vec![push]);
        if let Some(entry) = entry {
            builder.edge(self.cg, map[index(entry)], start, None);
        }
        for edge in &self.graph.edges {
            let source = if Some(edge.source) == entry { start } else { map[index(edge.source)] };
            builder.edge(self.cg, source, map[index(edge.target)], edge.condition_value);
        }
        builder.graph
    }

    /// The adjoint by basic-block numbers: pop a number; while it is not 0, run that block's
    /// adjoint and pop the next.
    pub fn numbered_adjoint(&mut self) -> FlowGraph {
        let mut builder = FlowGraphBuilder::default();
        let entry_id = self.fresh_id("_adj_");
        let entry = builder.vertex(self.cg, &entry_id, "", CfgVertexKind::Entry);
        let current = self.counter();
        let current_ref = whole_reference(self.cg, current, false);
        let pop = |r: &mut Self, builder: &mut FlowGraphBuilder| {
            let call = r.pop_integer(&current_ref);
            r.block(builder, "_adj_", vec![call])
        };
        let first_pop = pop(self, &mut builder);
        builder.edge(self.cg, entry, first_pop, None);
        let zero = self.integer(0);
        let test = Expression::boolean(self.cg, BooleanOp::NotEqual, Expression::variable(current_ref.clone()), zero);
        let header_id = self.fresh_id("_adj_");
        let header = builder.vertex(
            self.cg,
            &header_id,
            "",
            CfgVertexKind::PreLoop(Conditional { condition: Some(test), line: 0 }),
        );
        builder.edge(self.cg, first_pop, header, None);
        let branch_id = self.fresh_id("_adj_");
        let branch = builder.vertex(
            self.cg,
            &branch_id,
            "",
            CfgVertexKind::Branch(Conditional { condition: Some(Expression::variable(current_ref.clone())), line: 0 }),
        );
        builder.edge(self.cg, header, branch, Some(1));
        let end_branch_id = self.fresh_id("_adj_");
        let end_branch = builder.vertex(self.cg, &end_branch_id, "", CfgVertexKind::EndBranch);
        let mut number = 0;
        for (id, vertex) in self.graph.vertices.iter() {
            let CfgVertexKind::BasicBlock(_) = vertex.kind else { continue };
            number += 1;
            let mut vertex = vertex.clone();
            if let CfgVertexKind::BasicBlock(block) = &mut vertex.kind {
                block.statements = match self.blocks.get(index(id)) {
                    Some(Some((_, adjoint))) => adjoint.clone(),
                    _ => Vec::new(),
                };
            }
            let arm = builder.copy(&vertex);
            builder.edge(self.cg, branch, arm, Some(number));
            builder.edge(self.cg, arm, end_branch, None);
        }
        let next_pop = pop(self, &mut builder);
        builder.edge(self.cg, end_branch, next_pop, None);
        let end_loop_id = self.fresh_id("_adj_");
        let end_loop = builder.vertex(self.cg, &end_loop_id, "", CfgVertexKind::EndLoop);
        builder.edge(self.cg, next_pop, end_loop, None);
        builder.edge(self.cg, end_loop, header, None);
        let exit_id = self.fresh_id("_adj_");
        let exit = builder.vertex(self.cg, &exit_id, "", CfgVertexKind::Exit);
        builder.edge(self.cg, header, exit, None);
        builder.graph
    }
}

/// Replaces the plain variables of `e` that were popped into temporaries.
fn substitute_plain(e: &mut Expression, popped: &[(VariableReference, VariableReference)]) {
    for (_, vertex) in e.vertices.iter_mut() {
        if let ExprVertex::Variable(reference) = vertex {
            if let Some((_, temporary)) = popped.iter().find(|(value, _)| value.same_place(reference)) {
                let id = reference.id;
                *reference = temporary.clone();
                reference.id = id;
            } else {
                substitute_subscripts(reference, popped);
            }
        }
    }
}
