//! Tangent-linear mode: flattening of basic blocks into linearized computational graphs,
//! preaccumulation of their local Jacobians, and derivative propagation code.
//!
//! A basic block is cut into *sequences* of statements whose variables can be identified
//! unambiguously (flattening-basic-blocks, Algorithms 1 and 2). Each sequence becomes one
//! graph: independents are the values read before the sequence writes them, operations and
//! assignment results are intermediates, and every variable the sequence assigns is a
//! dependent. The statements are printed in their original order, each preceded by its
//! auxiliaries and partials; after the sequence come the Jacobian accumulation assignments and
//! one `DerivativePropagator` that maps the independents' derivatives to the dependents'.
//!
//! A sequence ends before a subroutine call, before a statement that may touch a variable the
//! sequence already refers to under another spelling (`a(i)` against `a(j)`), and before a
//! passive assignment to a variable used in a subscript of the sequence.
//!
//! The original engine's propagator switches are [`TangentConfig`] fields: `-n` (one n-ary
//! `Sax` per propagated vertex), `-H` (propagator entries as OpenAD runtime calls), `-C`
//! (`countmult`/`countadd` at the end of every basic block) and `-Q` (left-hand sides that may
//! alias do not end a sequence).

use rustc_hash::{FxHashMap, FxHashSet};

use super::elimination::{self, ALL, CostModel, Label, Lcg, Method, Op, PlanCache, VertexKind, replay_in};
use super::linearize::{
    LinearizeError, LinearizedAssignment, LocalNode, Partial, RefKey, RefKeys, ValueShape, add_constant, add_edge,
    add_intrinsic, add_vertex, allocation, create_temporary, is_active_reference, linearize_assignment,
    reference_shape,
};
use crate::ir::build::{Temporaries, whole_reference};
use crate::ir::*;
use crate::xaif::intrinsics::{Catalogue, PartialKind};

/// Where Jacobians are preaccumulated.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub enum Preaccumulation {
    /// One graph per assignment.
    Statement,
    /// One graph per flattened sequence of a basic block.
    #[default]
    BasicBlock,
}

#[derive(Clone, Debug, Default)]
pub struct TangentConfig {
    pub preaccumulation: Preaccumulation,
    /// How elimination sequences are chosen; by default the best of the heuristics that earn
    /// their planning time under the cost model ([`elimination::heuristics`]).
    pub elimination: Method,
    /// Also plan every elimination method on every sequence and record their costs in the
    /// statistics (for comparisons; the code still follows `elimination`).
    pub compare_methods: bool,
    /// What elimination minimizes: the tangent's multiplications by default; the adjoint mode
    /// weighs each remaining non-unit edge twice (pushed, then multiplied in the reverse sweep).
    pub cost_model: CostModel,
    /// Keep each sequence's graph and elimination in its statistics ([`SequenceStats::graph`]),
    /// for the graph views of the command line.
    pub record_graphs: bool,
    /// `-n`: one n-ary `Sax` per propagated vertex, collecting every in-edge's `a·x` (unit
    /// edges as the factors 1 and −1) instead of `SetDeriv`/`IncDeriv`/… and binary
    /// `Sax`/`Saxpy` entries.
    pub nary_sax: bool,
    /// `-H`: each propagator entry printed as an inlinable call of OpenAD's runtime
    /// (`setderiv_s0_s0(y, x)`, `saxpy_s0_s0_s0(a, x, y)`, …) instead of a
    /// `DerivativePropagator`.
    pub inline_propagators: bool,
    /// `-C`: every basic block ends with `countmult(n)` and `countadd(n)`, its
    /// preaccumulation's multiplications and additions.
    pub runtime_counters: bool,
    /// `-Q`: a left-hand side that may alias one the sequence already assigned (`a(i)` after
    /// `a(j)`) does not end the sequence.
    pub permit_aliased_lhs: bool,
}

/// A sequence's linearized computational graph before and after preaccumulation, as text
/// labels: what `xaifbooster dot --what lcg` draws.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SequenceGraph {
    /// The `statement_id`s of the sequence's statements, in order.
    pub statements: Vec<String>,
    /// Each vertex's kind and what it stands for: a variable for independents and
    /// dependents, an intrinsic for intermediates (`passive` for a passive right-hand side).
    pub vertices: Vec<(VertexKind, String)>,
    /// `(source, target, partial)`: a constant, or the variable holding the partial.
    pub edges: Vec<(usize, usize, String)>,
    /// The eliminations, in the order preaccumulation made them.
    pub order: Vec<elimination::Step>,
    /// The remainder graph the propagator multiplies through, over the same vertices.
    pub remainder: Vec<(usize, usize, String)>,
}

/// What the transformation did to one sequence.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SequenceStats {
    pub routine: String,
    pub basic_block: String,
    pub statements: usize,
    pub vertices: usize,
    pub edges: usize,
    pub independents: usize,
    pub dependents: usize,
    pub accumulation_multiplications: usize,
    pub accumulation_additions: usize,
    pub propagator_entries: usize,
    /// `AX` terms of Sax/Saxpy: one multiplication per derivative direction each.
    pub propagator_multiplications: usize,
    /// The elimination method whose order was used.
    pub method: String,
    /// With `compare_methods`: each method's planned cost (multiplications per direction).
    pub method_costs: Vec<(Method, usize)>,
    /// With `record_graphs`: the graph and its elimination.
    pub graph: Option<Box<SequenceGraph>>,
}

#[derive(Clone, Debug, Default)]
pub struct TangentStats {
    pub sequences: Vec<SequenceStats>,
}

#[derive(Debug, thiserror::Error)]
pub enum TangentError {
    #[error("routine {routine}: {source}")]
    Linearize {
        routine: String,
        #[source]
        source: LinearizeError,
    },
}

/// Transforms every control flow graph of the call graph into its tangent-linear model.
pub fn tangent(
    cg: &mut CallGraph,
    catalogue: &Catalogue,
    temporaries: &mut Temporaries,
    config: &TangentConfig,
) -> Result<TangentStats, TangentError> {
    tangent_with_plans(cg, catalogue, temporaries, config, &mut PlanCache::default())
}

/// [`tangent`] with elimination plans from `plans`, kept across calls: the streaming driver
/// transforms one routine per call, and graphs of the same shape recur across routines.
///
/// Every control flow graph of `cg` that has its graph is transformed block by block: each
/// sequence's statements are printed and followed at once by its accumulation code and
/// propagator, and with `-C` each block ends with its counters. After an error every graph is
/// back in its routine, as far as it got.
pub fn tangent_with_plans(
    cg: &mut CallGraph,
    catalogue: &Catalogue,
    temporaries: &mut Temporaries,
    config: &TangentConfig,
    plans: &mut PlanCache,
) -> Result<TangentStats, TangentError> {
    let mut stats = TangentStats::default();
    let mut keys = RefKeys::default();
    let routines: Vec<RoutineId> = cg.cfgs().map(|(id, _)| id).collect();
    for routine in routines {
        let Routine::ControlFlowGraph(cfg) = &mut cg.routines[routine] else { continue };
        // Nothing to do, and the set-up below allocates: the streaming driver's call graph
        // holds every routine read so far, all but one without their graphs.
        if cfg.graph.vertices.is_empty() {
            continue;
        }
        // Out of the call graph while its blocks are transformed, which needs the call graph.
        let mut graph = std::mem::take(&mut cfg.graph);
        let body_scope = cfg.body_scope;
        let formals: FxHashSet<SymbolId> = cfg.arguments.iter().flatten().map(|a| a.symbol).collect();
        let symbol = cfg.symbol;
        let routine_name = cg.symbol_name(symbol).to_owned();
        let shared = RoutineShared { routine: routine_name, body_scope, formals };
        let mut result = Ok(());
        for (_, vertex) in graph.vertices.iter_mut() {
            let CfgVertexKind::BasicBlock(block) = &mut vertex.kind else { continue };
            let statements = std::mem::take(&mut block.statements);
            let first_sequence = stats.sequences.len();
            let mut context = shared.block(
                (catalogue, config),
                cg,
                temporaries,
                &mut stats,
                plans,
                &mut keys,
                vertex.id,
                block.scope,
            );
            match context.transform(statements) {
                Ok(statements) => block.statements = statements,
                Err(source) => {
                    result = Err(TangentError::Linearize { routine: shared.routine.clone(), source });
                    break;
                }
            }
            if config.runtime_counters {
                let sequences = &stats.sequences[first_sequence..];
                let multiplications = sequences.iter().map(|s| s.accumulation_multiplications).sum();
                let additions = sequences.iter().map(|s| s.accumulation_additions).sum();
                block.statements.push(counter_call(cg, temporaries, "countmult", multiplications));
                block.statements.push(counter_call(cg, temporaries, "countadd", additions));
            }
        }
        if let Routine::ControlFlowGraph(cfg) = &mut cg.routines[routine] {
            cfg.graph = graph;
        }
        result?;
    }
    // Tangent code is about 1.6 times as long as its input on the corpus (median; up to 4).
    cg.size_hint += cg.size_hint * 3 / 4;
    Ok(stats)
}

/// What every basic block of a routine shares.
struct RoutineShared {
    routine: String,
    body_scope: ScopeId,
    formals: FxHashSet<SymbolId>,
}

impl RoutineShared {
    /// The context of the basic block `block` (its vertex id), whose statements are in `scope`.
    #[allow(clippy::too_many_arguments)]
    fn block<'b>(
        &'b self,
        (catalogue, config): (&'b Catalogue, &'b TangentConfig),
        cg: &'b mut CallGraph,
        temporaries: &'b mut Temporaries,
        stats: &'b mut TangentStats,
        plans: &'b mut PlanCache,
        keys: &'b mut RefKeys,
        block: Name,
        scope: ScopeId,
    ) -> BlockContext<'b> {
        let block = cg.name(block).to_owned();
        BlockContext {
            cg,
            catalogue,
            temporaries,
            config,
            scope,
            routine: self.routine.clone(),
            block,
            stats,
            plans,
            keys,
            body_scope: self.body_scope,
            formals: &self.formals,
        }
    }
}

struct BlockContext<'a> {
    cg: &'a mut CallGraph,
    catalogue: &'a Catalogue,
    temporaries: &'a mut Temporaries,
    config: &'a TangentConfig,
    scope: ScopeId,
    routine: String,
    block: String,
    stats: &'a mut TangentStats,
    /// Elimination plans by graph shape, and the storage their replay works in.
    plans: &'a mut PlanCache,
    keys: &'a mut RefKeys,
    /// The routine's own scope and formals: which variables are its locals.
    body_scope: ScopeId,
    formals: &'a FxHashSet<SymbolId>,
}

/// A vertex of a sequence's linearized computational graph.
#[derive(Clone, Debug)]
enum Vertex {
    /// A value read before the sequence writes it.
    Independent(VariableReference),
    Intermediate(ValueShape),
    /// The final value of a variable the sequence assigns.
    Dependent(VariableReference),
}

/// The reference keys of an active assignment's left-hand side and operands, made once for
/// both the alias check against the sequence and the flattening into it.
struct ReferenceKeys {
    lhs: RefKey,
    /// In the order of the local graph's operands.
    operands: Vec<RefKey>,
}

/// A statement of a sequence, in program order.
enum Item {
    Passive(Statement),
    Active(Box<LinearizedAssignment>),
}

#[derive(Default)]
struct Sequence {
    items: Vec<Item>,
    vertices: Vec<Vertex>,
    /// The intrinsic of each intermediate that is an operation (for recorded graphs).
    operations: FxHashMap<usize, Name>,
    edges: Vec<(usize, usize, Partial)>,
    /// Which vertex holds each variable's current value, by reference key.
    current: FxHashMap<RefKey, usize>,
    /// Every reference the sequence reads or writes, by key: (base symbol, written).
    touched: FxHashMap<RefKey, (Option<SymbolId>, bool)>,
    /// Variables assigned, in first-assignment order: key, spelling.
    assigned: Vec<(RefKey, VariableReference)>,
    /// Per assigned variable, its last assignment: the item's position and the du-ud set of
    /// its left-hand side (the statements that use the value it defines).
    last_definition: FxHashMap<RefKey, (usize, Option<DuUdSetId>)>,
    /// Symbols used inside subscripts of the sequence's references.
    subscript_symbols: FxHashSet<SymbolId>,
    active_statements: usize,
}

impl BlockContext<'_> {
    fn transform(&mut self, statements: Vec<Statement>) -> Result<Vec<Statement>, LinearizeError> {
        let mut out = Vec::with_capacity(statements.len());
        let mut sequence = Sequence::default();
        for statement in statements {
            if let Statement::Assignment(assignment) = &statement
                && is_active_reference(self.cg, &assignment.lhs)
                && let Some(derivative) = direct_action(self.cg, self.catalogue, self.temporaries, assignment)?
            {
                // `b = transpose(a)` is linear: its derivative is the same operation on the
                // derivatives, `b.d = transpose(a.d)`, printed right after it.
                self.flush(&mut sequence, &mut out);
                out.push(statement);
                out.push(Statement::Assignment(derivative));
                continue;
            }
            match statement {
                Statement::Assignment(assignment) if is_active_reference(self.cg, &assignment.lhs) => {
                    let mut linearized = linearize_assignment(
                        self.cg,
                        self.catalogue,
                        self.temporaries,
                        self.keys,
                        self.scope,
                        assignment,
                    )?;
                    let keys = ReferenceKeys {
                        lhs: self.keys.of(self.cg, &linearized.statement.lhs),
                        operands: std::mem::take(&mut linearized.graph.operand_keys),
                    };
                    if self.conflicts(&sequence, &linearized, &keys) {
                        self.flush(&mut sequence, &mut out);
                    }
                    self.add(&mut sequence, linearized, keys);
                    if self.config.preaccumulation == Preaccumulation::Statement {
                        self.flush(&mut sequence, &mut out);
                    }
                }
                Statement::Assignment(assignment) => {
                    let writes_subscript =
                        assignment.lhs.base_symbol().is_some_and(|s| sequence.subscript_symbols.contains(&s));
                    let writes_touched = assignment
                        .lhs
                        .base_symbol()
                        .is_some_and(|s| sequence.touched.values().any(|(base, _)| *base == Some(s)));
                    if writes_subscript || writes_touched {
                        self.flush(&mut sequence, &mut out);
                    }
                    if sequence.items.is_empty() {
                        out.push(Statement::Assignment(assignment));
                    } else {
                        sequence.items.push(Item::Passive(Statement::Assignment(assignment)));
                    }
                }
                Statement::Marker(marker) => {
                    if sequence.items.is_empty() {
                        out.push(Statement::Marker(marker));
                    } else {
                        sequence.items.push(Item::Passive(Statement::Marker(marker)));
                    }
                }
                other @ (Statement::SubroutineCall(_)
                | Statement::DerivativePropagator(_)
                | Statement::InlinableSubroutineCall(_)) => {
                    self.flush(&mut sequence, &mut out);
                    out.push(other);
                }
            }
        }
        self.flush(&mut sequence, &mut out);
        Ok(out)
    }

    /// Whether the statement refers to a variable the sequence already refers to under a
    /// different spelling, so that the two may or may not be the same memory.
    fn conflicts(&self, sequence: &Sequence, linearized: &LinearizedAssignment, keys: &ReferenceKeys) -> bool {
        let lhs = &linearized.statement.lhs;
        let lhs_key = &keys.lhs;
        let lhs_base = lhs.base_symbol();
        // The left-hand side against everything the sequence read or wrote (with `-Q`, only
        // against what it read: left-hand sides may alias one another).
        for (key, (base, written)) in &sequence.touched {
            if *written && self.config.permit_aliased_lhs {
                continue;
            }
            if *base == lhs_base && key != lhs_key {
                return true;
            }
        }
        // The operands against everything the sequence wrote.
        for (operand, key) in linearized.graph.operands.iter().zip(&keys.operands) {
            let base = operand.base_symbol();
            for (other, (other_base, written)) in &sequence.touched {
                if *written && *other_base == base && other != key {
                    return true;
                }
            }
        }
        // A subscript of this statement that the sequence assigned (active subscripts are rare
        // but possible for real-valued index expressions).
        let mut subscripts = FxHashSet::default();
        collect_subscript_symbols(lhs, &mut subscripts);
        for operand in &linearized.graph.operands {
            collect_subscript_symbols(operand, &mut subscripts);
        }
        sequence.touched.values().any(|(base, written)| *written && base.is_some_and(|b| subscripts.contains(&b)))
    }

    /// The assigned variables whose final value only later statements of the sequence use,
    /// by the du-ud map: local scalars (not formals, globals or arrays) whose last
    /// definition's use set is non-empty and names only statements after it in the sequence
    /// (a use at or before it is one from a later iteration, or from elsewhere).
    fn consumed_within(&self, sequence: &Sequence) -> FxHashSet<RefKey> {
        let mut dead = FxHashSet::default();
        let mut position: Option<FxHashMap<Name, usize>> = None;
        for (key, reference) in &sequence.assigned {
            let [VarRefVertex::Symbol(s)] = reference.vertices.as_slice() else { continue };
            let symbol = &self.cg.symbols[s.symbol];
            if symbol.scope != self.body_scope || self.formals.contains(&s.symbol) || symbol.shape != Shape::Scalar {
                continue;
            }
            let Some(&(defined_at, Some(set))) = sequence.last_definition.get(key) else { continue };
            let uses = &self.cg.duud_sets[set.0 as usize].statements;
            if uses.is_empty() {
                continue;
            }
            let position = position.get_or_insert_with(|| {
                let mut at = FxHashMap::default();
                for (k, item) in sequence.items.iter().enumerate() {
                    let id = match item {
                        Item::Passive(statement) => statement.id(),
                        Item::Active(linearized) => Some(linearized.statement.id),
                    };
                    if let Some(id) = id {
                        at.entry(id).or_insert(k);
                    }
                }
                at
            });
            let later = |id: &Name| !self.cg.name(*id).is_empty() && position.get(id).is_some_and(|&k| k > defined_at);
            if uses.iter().all(later) {
                dead.insert(*key);
            }
        }
        dead
    }

    fn add(&mut self, sequence: &mut Sequence, mut linearized: LinearizedAssignment, keys: ReferenceKeys) {
        // The operands go into the sequence's graph: nothing reads them from the statement's
        // local graph after this, so they move rather than copy.
        let operands = std::mem::take(&mut linearized.graph.operands);
        let graph = &linearized.graph;
        let mut operand_vertex = Vec::with_capacity(operands.len());
        for (operand, key) in operands.into_iter().zip(keys.operands) {
            sequence.touched.entry(key).or_insert((operand.base_symbol(), false));
            collect_subscript_symbols(&operand, &mut sequence.subscript_symbols);
            let vertex = match sequence.current.get(&key) {
                Some(&vertex) => vertex,
                None => {
                    sequence.vertices.push(Vertex::Independent(operand));
                    let vertex = sequence.vertices.len() - 1;
                    sequence.current.insert(key, vertex);
                    vertex
                }
            };
            operand_vertex.push(vertex);
        }
        let first_operation = sequence.vertices.len();
        for shape in &graph.operation_shapes {
            sequence.vertices.push(Vertex::Intermediate(shape.clone()));
        }
        if self.config.record_graphs {
            for (k, name) in graph.operation_names.iter().enumerate() {
                sequence.operations.insert(first_operation + k, *name);
            }
        }
        let map = |node: LocalNode| match node {
            LocalNode::Operand(i) => operand_vertex[i],
            LocalNode::Operation(i) => first_operation + i,
        };
        for edge in &graph.edges {
            sequence.edges.push((map(edge.source), first_operation + edge.target, edge.partial));
        }
        let result = match graph.result {
            Some(node) => map(node),
            None => {
                // A passive right-hand side: the new value has no derivative.
                sequence.vertices.push(Vertex::Intermediate(ValueShape::Scalar));
                sequence.vertices.len() - 1
            }
        };
        let lhs = &linearized.statement.lhs;
        let key = keys.lhs;
        if !sequence.assigned.iter().any(|(k, _)| *k == key) {
            sequence.assigned.push((key, lhs.clone()));
        }
        sequence.last_definition.insert(key, (sequence.items.len(), lhs.du_ud));
        sequence.current.insert(key, result);
        sequence.touched.insert(key, (lhs.base_symbol(), true));
        collect_subscript_symbols(lhs, &mut sequence.subscript_symbols);
        sequence.active_statements += 1;
        sequence.items.push(Item::Active(Box::new(linearized)));
    }

    /// Prints the sequence's statements, then its accumulation code and propagator.
    fn flush(&mut self, sequence: &mut Sequence, out: &mut Vec<Statement>) {
        let sequence = std::mem::take(sequence);
        if sequence.items.is_empty() {
            return;
        }
        let statements = sequence.items.len();
        let dead = self.consumed_within(&sequence);
        let statement_ids: Vec<String> = if self.config.record_graphs {
            let id = |item: &Item| match item {
                Item::Passive(statement) => statement.id(),
                Item::Active(linearized) => Some(linearized.statement.id),
            };
            sequence.items.iter().filter_map(id).map(|id| self.cg.name(id).to_owned()).collect()
        } else {
            Vec::new()
        };
        for item in sequence.items {
            match item {
                Item::Passive(statement) => out.push(statement),
                Item::Active(linearized) => {
                    let LinearizedAssignment { auxiliaries, partials, statement, .. } = *linearized;
                    out.extend(auxiliaries);
                    out.extend(partials);
                    out.push(Statement::Assignment(statement));
                }
            }
        }
        if sequence.active_statements == 0 {
            return;
        }
        // Dependents: a fresh sink per assigned variable, fed by its final value, unless the
        // front end's du-ud map says only later statements of this sequence use that value (a
        // local scalar the block computes and consumes): then nothing after the sequence reads
        // its derivative, and neither the propagator nor the adjoint needs to carry it.
        let mut vertices = sequence.vertices;
        let mut edges = sequence.edges;
        let mut dependents = 0;
        for (key, reference) in sequence.assigned {
            if dead.contains(&key) {
                continue;
            }
            dependents += 1;
            let value = sequence.current[&key];
            vertices.push(Vertex::Dependent(reference));
            edges.push((value, vertices.len() - 1, Partial::One));
        }
        let mut stats = SequenceStats {
            routine: self.routine.clone(),
            basic_block: self.block.clone(),
            statements,
            vertices: vertices.len(),
            edges: edges.len(),
            independents: vertices.iter().filter(|v| matches!(v, Vertex::Independent(_))).count(),
            dependents,
            ..SequenceStats::default()
        };
        let before = self.config.record_graphs.then(|| edges.clone());
        // Run-time partials are numbered for the planner; materialized results join the list.
        let mut symbols: Vec<SymbolId> = Vec::new();
        let lcg = Lcg {
            kinds: vertices
                .iter()
                .map(|v| match v {
                    Vertex::Independent(_) => VertexKind::Independent,
                    Vertex::Intermediate(_) => VertexKind::Intermediate,
                    Vertex::Dependent(_) => VertexKind::Dependent,
                })
                .collect(),
            edges: edges.into_iter().map(|(s, t, p)| (s, t, to_label(p, &mut symbols))).collect(),
        };
        let plan = self.plans.plan(&lcg, self.config.elimination, self.config.cost_model);
        stats.method = plan.method.name().to_owned();
        if self.config.compare_methods {
            stats.method_costs =
                ALL.iter().map(|&m| (m, elimination::plan(&lcg, m, self.config.cost_model).cost())).collect();
        }
        let edges = self.preaccumulate(&lcg, &plan.order, &vertices, symbols, &mut stats, out);
        if let Some(before) = before {
            let graph = self.record(&vertices, &sequence.operations, statement_ids, &before, plan.order, &edges);
            stats.graph = Some(Box::new(graph));
        }
        let (allocations, propagator) = self.propagate(vertices, &edges, &mut stats);
        out.extend(allocations);
        if self.config.inline_propagators {
            propagator_calls(self.cg, self.temporaries, propagator, out);
        } else {
            out.push(Statement::DerivativePropagator(propagator));
        }
        self.stats.sequences.push(stats);
    }

    /// Preaccumulates the sequence's local Jacobian: the configured elimination method (by
    /// default the best of the cost model's heuristics, each judged by its cheapest prefix) chooses which
    /// vertices, edges or faces to eliminate so that the multiplications per derivative
    /// direction are fewest — the accumulation products (`<prefix>acc_N`, once per execution)
    /// plus one per non-unit edge left for the propagator. Products and sums of constants fold
    /// at compile time and unit factors are free; what does not fold becomes an accumulation
    /// assignment. `order` is the plan's for `lcg`, whose labels' variables `symbols` holds.
    /// Returns the remainder graph's edges.
    fn preaccumulate(
        &mut self,
        lcg: &Lcg,
        order: &[elimination::Step],
        vertices: &[Vertex],
        mut symbols: Vec<SymbolId>,
        stats: &mut SequenceStats,
        out: &mut Vec<Statement>,
    ) -> Vec<(usize, usize, Partial)> {
        // Lent out: `emit` below needs this context whole.
        let mut workspace = self.plans.lend_workspace();
        let (remainder, _) = replay_in(&mut workspace, lcg, order, self.config.cost_model, |op, via| {
            let partial = |label: Label| match label {
                Label::One => Partial::One,
                Label::MinusOne => Partial::MinusOne,
                Label::Constant(value) => Partial::Constant(value),
                Label::Variable(id) => Partial::Variable(symbols[id as usize]),
            };
            let shape = vertex_shape(&vertices[via]);
            let result = match op {
                Op::Mul(a, b) => {
                    stats.accumulation_multiplications += 1;
                    self.accumulate("mul_scal_scal", &[partial(a), partial(b)], &shape, out)
                }
                Op::Add(a, b) => {
                    stats.accumulation_additions += 1;
                    self.accumulate("add_scal_scal", &[partial(a), partial(b)], &shape, out)
                }
                Op::Neg(a) => self.accumulate("minus_scal", &[partial(a)], &shape, out),
            };
            let Partial::Variable(symbol) = result else { unreachable!("accumulate returns a variable") };
            symbols.push(symbol);
            Label::Variable(symbols.len() as u32 - 1)
        });
        self.plans.return_workspace(workspace);
        remainder
            .into_iter()
            .map(|(s, t, label)| {
                let partial = match label {
                    Label::One => Partial::One,
                    Label::MinusOne => Partial::MinusOne,
                    Label::Constant(value) => Partial::Constant(value),
                    Label::Variable(id) => Partial::Variable(symbols[id as usize]),
                };
                (s, t, partial)
            })
            .collect()
    }

    /// The sequence's graph as labels, eliminated in `order`.
    fn record(
        &self,
        vertices: &[Vertex],
        operations: &FxHashMap<usize, Name>,
        statements: Vec<String>,
        before: &[(usize, usize, Partial)],
        order: Vec<elimination::Step>,
        after: &[(usize, usize, Partial)],
    ) -> SequenceGraph {
        let cg = &*self.cg;
        let label = |partial: &Partial| match *partial {
            Partial::One => "1".to_owned(),
            Partial::MinusOne => "-1".to_owned(),
            Partial::Constant(value) => format!("{value}"),
            Partial::Variable(symbol) => cg.symbol_name(symbol).to_owned(),
        };
        let edges = |list: &[(usize, usize, Partial)]| list.iter().map(|(s, t, p)| (*s, *t, label(p))).collect();
        let vertices = vertices
            .iter()
            .enumerate()
            .map(|(k, vertex)| match vertex {
                Vertex::Independent(r) => (VertexKind::Independent, crate::ir::text::reference(cg, r)),
                Vertex::Dependent(r) => (VertexKind::Dependent, crate::ir::text::reference(cg, r)),
                Vertex::Intermediate(_) => (
                    VertexKind::Intermediate,
                    operations.get(&k).map_or_else(|| "passive".to_owned(), |name| cg.name(*name).to_owned()),
                ),
            })
            .collect();
        SequenceGraph { statements, vertices, edges: edges(before), order, remainder: edges(after) }
    }

    /// `<prefix>acc_N = name(operands…)`.
    fn accumulate(
        &mut self,
        name: &str,
        operands: &[Partial],
        shape: &ValueShape,
        out: &mut Vec<Statement>,
    ) -> Partial {
        let mut rhs = Expression::default();
        let name = self.cg.names.intern(name);
        let root = add_intrinsic(self.cg, &mut rhs, name);
        for (i, operand) in operands.iter().enumerate() {
            let vertex = match *operand {
                Partial::One => add_constant(self.cg, &mut rhs, 1.0),
                Partial::MinusOne => add_constant(self.cg, &mut rhs, -1.0),
                Partial::Constant(value) => add_constant(self.cg, &mut rhs, value),
                Partial::Variable(symbol) => {
                    let reference = whole_reference(self.cg, symbol, false);
                    add_vertex(self.cg, &mut rhs, ExprVertex::Variable(reference))
                }
            };
            add_edge(self.cg, &mut rhs, vertex, root, i as i64 + 1);
        }
        let symbol = create_temporary(self.temporaries, self.cg, self.scope, "acc", false, shape);
        out.extend(allocation(self.cg, symbol, shape));
        let id = self.temporaries.assignment_id(self.cg, symbol);
        let lhs = whole_reference(self.cg, symbol, false);
        out.push(Statement::Assignment(Assignment { id, do_chain: None, line: 0, lhs, lhs_live: true, rhs }));
        Partial::Variable(symbol)
    }

    /// Derivative propagation through a (remainder) graph whose vertices are in topological
    /// order: each non-independent vertex gets the sum of its in-edges' partial × source
    /// derivative. Intermediates keep their derivative in `<prefix>prp_N` temporaries, as do
    /// independents whose variable the propagator overwrites before it is done reading them.
    /// Returns the allocations of array temporaries (to run first) and the propagator.
    ///
    /// The graph's references move into the propagator's entries, and a derivative's holder is
    /// copied only for the uses before its last (references are most of what the tangent copies).
    fn propagate(
        &mut self,
        vertices: Vec<Vertex>,
        edges: &[(usize, usize, Partial)],
        stats: &mut SequenceStats,
    ) -> (Vec<Statement>, DerivativePropagator) {
        let mut entries = Vec::new();
        let mut allocations = Vec::new();
        let mut incoming: Vec<Vec<(usize, Partial)>> = vec![Vec::new(); vertices.len()];
        let mut uses_left = vec![0u32; vertices.len()];
        for &(source, target, partial) in edges {
            incoming[target].push((source, partial));
            uses_left[source] += 1;
        }
        let written: FxHashSet<Option<SymbolId>> = vertices
            .iter()
            .filter_map(|v| match v {
                Vertex::Dependent(r) => Some(r.base_symbol()),
                Vertex::Independent(_) | Vertex::Intermediate(_) => None,
            })
            .collect();
        // Where each vertex's derivative lives; `None` for a vertex whose derivative is zero.
        let mut holder: Vec<Option<VariableReference>> = vec![None; vertices.len()];
        for (v, vertex) in vertices.into_iter().enumerate() {
            match vertex {
                Vertex::Independent(reference) => {
                    let overwritten = written.contains(&reference.base_symbol());
                    let shape = overwritten.then(|| reference_shape(self.cg, &reference));
                    let mut source = reference;
                    source.deriv = true;
                    if let Some(shape) = shape {
                        let copy = self.derivative_temporary(&shape, &mut allocations);
                        entries.push(PropagatorEntry::SetDeriv { target: copy.clone(), source });
                        holder[v] = Some(copy);
                    } else {
                        holder[v] = Some(source);
                    }
                }
                Vertex::Intermediate(_) | Vertex::Dependent(_) => {
                    let terms: Vec<(VariableReference, Partial)> = incoming[v]
                        .iter()
                        .filter_map(|&(source, partial)| {
                            uses_left[source] -= 1;
                            let held =
                                if uses_left[source] == 0 { holder[source].take() } else { holder[source].clone() };
                            held.map(|h| (h, partial))
                        })
                        .collect();
                    let target = match vertex {
                        Vertex::Dependent(reference) => {
                            let mut target = reference;
                            target.deriv = true;
                            target
                        }
                        Vertex::Intermediate(_) if terms.is_empty() => continue,
                        Vertex::Intermediate(shape) => self.derivative_temporary(&shape, &mut allocations),
                        Vertex::Independent(_) => self.derivative_temporary(&ValueShape::Scalar, &mut allocations),
                    };
                    if terms.is_empty() {
                        entries.push(PropagatorEntry::ZeroDeriv(target));
                        continue;
                    }
                    if self.config.nary_sax {
                        // One Sax over every in-edge, unit factors spelled out.
                        stats.propagator_multiplications += terms.len();
                        let terms =
                            terms.into_iter().map(|(x, partial)| ScaledTerm { a: self.factor(partial), x }).collect();
                        entries.push(PropagatorEntry::Sax { terms, y: target.clone() });
                        let mut held = target;
                        held.deriv = true;
                        holder[v] = Some(held);
                        continue;
                    }
                    for (i, (source, partial)) in terms.into_iter().enumerate() {
                        let target = target.clone();
                        let entry = match (i == 0, partial) {
                            (true, Partial::One) => PropagatorEntry::SetDeriv { target, source },
                            (true, Partial::MinusOne) => PropagatorEntry::SetNegDeriv { target, source },
                            (false, Partial::One) => PropagatorEntry::IncDeriv { target, source },
                            (false, Partial::MinusOne) => PropagatorEntry::DecDeriv { target, source },
                            (first, Partial::Constant(_) | Partial::Variable(_)) => {
                                stats.propagator_multiplications += 1;
                                let terms = vec![ScaledTerm { a: self.factor(partial), x: source }];
                                if first {
                                    PropagatorEntry::Sax { terms, y: target }
                                } else {
                                    PropagatorEntry::Saxpy { terms, y: target }
                                }
                            }
                        };
                        entries.push(entry);
                    }
                    // Reading an intermediate's derivative means reading its temporary.
                    let mut held = target;
                    held.deriv = true;
                    holder[v] = Some(held);
                }
            }
        }
        stats.propagator_entries = entries.len();
        (allocations, DerivativePropagator { entries })
    }

    /// An active scalar temporary holding a derivative, referenced as its derivative component.
    fn derivative_temporary(&mut self, shape: &ValueShape, allocations: &mut Vec<Statement>) -> VariableReference {
        let symbol = create_temporary(self.temporaries, self.cg, self.scope, "prp", true, shape);
        allocations.extend(allocation(self.cg, symbol, shape));
        let mut reference = whole_reference(self.cg, symbol, true);
        reference.deriv = true;
        reference
    }

    /// The `A` expression of a Sax/Saxpy term.
    fn factor(&mut self, partial: Partial) -> Expression {
        let mut expression = Expression::default();
        match partial {
            Partial::One => add_constant(self.cg, &mut expression, 1.0),
            Partial::MinusOne => add_constant(self.cg, &mut expression, -1.0),
            Partial::Constant(value) => add_constant(self.cg, &mut expression, value),
            Partial::Variable(symbol) => {
                let reference = whole_reference(self.cg, symbol, false);
                add_vertex(self.cg, &mut expression, ExprVertex::Variable(reference))
            }
        };
        expression
    }
}

/// `countmult(n)` or `countadd(n)` (`-C`): OpenAD's runtime adds `n` to its operation
/// counters; the statement ids are `inline_countmult`, `inline_countadd` (numbered on reuse).
fn counter_call(cg: &mut CallGraph, temporaries: &mut Temporaries, routine: &str, count: usize) -> Statement {
    let id = temporaries.statement_id(cg, &format!("inline_{routine}"));
    let id = cg.name(id).to_owned();
    let count = crate::ir::build::integer_constant(cg, i64::try_from(count).unwrap_or(i64::MAX));
    crate::ir::build::inlinable_call(cg, &id, routine, vec![ArgumentValue::Constant(count)])
}

/// A propagator's entries as inlinable calls of OpenAD's runtime (`-H`), in its argument
/// order: the target first for `setderiv`, `set_neg_deriv`, `inc_deriv`, `dec_deriv` and
/// `zero_deriv`; the `(a, x)` pairs and then `y` for `sax` and `saxpy`. Each name is suffixed
/// with its arguments' shapes (`_s0` scalar, `_s1` vector, …) unless an argument is an array
/// section, which the runtime's shaped routines do not take.
fn propagator_calls(
    cg: &mut CallGraph,
    temporaries: &mut Temporaries,
    propagator: DerivativePropagator,
    out: &mut Vec<Statement>,
) {
    for entry in propagator.entries {
        let mut call = RuntimeCall::default();
        let routine = match entry {
            PropagatorEntry::SetDeriv { target, source } => call.pair(cg, "setderiv", target, source),
            PropagatorEntry::SetNegDeriv { target, source } => call.pair(cg, "set_neg_deriv", target, source),
            PropagatorEntry::IncDeriv { target, source } => call.pair(cg, "inc_deriv", target, source),
            PropagatorEntry::DecDeriv { target, source } => call.pair(cg, "dec_deriv", target, source),
            PropagatorEntry::ZeroDeriv(target) => {
                call.variable(cg, target);
                "zero_deriv"
            }
            PropagatorEntry::Sax { terms, y } => call.sax(cg, "sax", terms, y),
            PropagatorEntry::Saxpy { terms, y } => call.sax(cg, "saxpy", terms, y),
        };
        let name = if call.shaped { format!("{routine}{}", call.suffix) } else { routine.to_owned() };
        let id = temporaries.statement_id(cg, &format!("inline_{routine}"));
        let subroutine_name = cg.names.intern(&name);
        let arguments = call
            .arguments
            .into_iter()
            .zip(1..)
            .map(|(value, position)| Argument { position, annotation: Name::EMPTY, value })
            .collect();
        out.push(Statement::InlinableSubroutineCall(InlinableSubroutineCall { id, subroutine_name, arguments }));
    }
}

/// The arguments of one runtime call being built, and its name's shape suffix.
struct RuntimeCall {
    arguments: Vec<ArgumentValue>,
    suffix: String,
    /// No argument is an array section (whose shape the suffix cannot name).
    shaped: bool,
}

impl Default for RuntimeCall {
    fn default() -> Self {
        RuntimeCall { arguments: Vec::new(), suffix: String::new(), shaped: true }
    }
}

impl RuntimeCall {
    /// The target, then the source: `name(y, x)`.
    fn pair(
        &mut self,
        cg: &mut CallGraph,
        routine: &'static str,
        target: VariableReference,
        source: VariableReference,
    ) -> &'static str {
        self.variable(cg, target);
        self.variable(cg, source);
        routine
    }

    /// `name(a₁, x₁, …, aₙ, xₙ, y)`.
    fn sax(
        &mut self,
        cg: &mut CallGraph,
        routine: &'static str,
        terms: Vec<ScaledTerm>,
        y: VariableReference,
    ) -> &'static str {
        for term in terms {
            self.factor(cg, &term.a);
            self.variable(cg, term.x);
        }
        self.variable(cg, y);
        routine
    }

    /// An active variable, passed whole (the runtime reads and writes its derivative).
    fn variable(&mut self, cg: &mut CallGraph, mut reference: VariableReference) {
        reference.deriv = false;
        reference.id = cg.names.intern("1");
        let rank = match reference_shape(cg, &reference) {
            ValueShape::Scalar => 0,
            ValueShape::Known(bounds) => bounds.len(),
            ValueShape::Matching { rank, .. } => rank,
        };
        if rank > 0 && reference.array_access().is_some() {
            self.shaped = false;
        }
        self.suffix.push_str(&format!("_s{rank}"));
        self.arguments.push(ArgumentValue::Variable(reference));
    }

    /// A Sax factor: a constant or a (scalar or array) variable holding the partial.
    fn factor(&mut self, cg: &mut CallGraph, a: &Expression) {
        let root = a.root().map(|root| &a.vertices[root]);
        match root {
            Some(ExprVertex::Constant(constant)) => {
                let mut constant = constant.clone();
                constant.id = cg.names.intern("1");
                self.suffix.push_str("_s0");
                self.arguments.push(ArgumentValue::Constant(constant));
            }
            Some(ExprVertex::Variable(reference)) => self.variable(cg, reference.clone()),
            _ => unreachable!("a propagator factor is a constant or a variable"),
        }
    }
}

fn collect_subscript_symbols(reference: &VariableReference, out: &mut FxHashSet<SymbolId>) {
    for vertex in &reference.vertices {
        let VarRefVertex::ArrayElement(element) = vertex else { continue };
        for triplet in &element.indices {
            for expression in [&triplet.index, &triplet.bound, &triplet.stride].into_iter().flatten() {
                for (_, v) in expression.vertices.iter() {
                    if let ExprVertex::Variable(r) = v {
                        if let Some(symbol) = r.base_symbol() {
                            out.insert(symbol);
                        }
                        collect_subscript_symbols(r, out);
                    }
                }
            }
        }
    }
}

impl TangentStats {
    /// Per-sequence numbers and totals as JSON; with `compare_methods`, every method's planned
    /// cost summed over the sequences, and how often the exact vertex search beats the best of
    /// the heuristics and the reverse.
    pub fn to_json(&self) -> String {
        let total = |f: fn(&SequenceStats) -> usize| self.sequences.iter().map(f).sum::<usize>();
        let sequences: Vec<serde_json::Value> = self
            .sequences
            .iter()
            .map(|s| {
                let mut value = serde_json::json!({
                    "routine": s.routine,
                    "basic_block": s.basic_block,
                    "statements": s.statements,
                    "vertices": s.vertices,
                    "edges": s.edges,
                    "independents": s.independents,
                    "dependents": s.dependents,
                    "method": s.method,
                    "accumulation_multiplications": s.accumulation_multiplications,
                    "accumulation_additions": s.accumulation_additions,
                    "propagator_entries": s.propagator_entries,
                    "propagator_multiplications": s.propagator_multiplications,
                });
                if !s.method_costs.is_empty() {
                    let costs: serde_json::Map<_, _> =
                        s.method_costs.iter().map(|&(m, c)| (m.name().to_owned(), c.into())).collect();
                    value["method_costs"] = costs.into();
                }
                value
            })
            .collect();
        let mut value = serde_json::json!({
            "sequences": sequences,
            "totals": {
                "sequences": self.sequences.len(),
                "accumulation_multiplications": total(|s| s.accumulation_multiplications),
                "accumulation_additions": total(|s| s.accumulation_additions),
                "propagator_entries": total(|s| s.propagator_entries),
                "propagator_multiplications": total(|s| s.propagator_multiplications),
            },
        });
        let compared: Vec<&SequenceStats> = self.sequences.iter().filter(|s| !s.method_costs.is_empty()).collect();
        if let Some(first) = compared.first() {
            let mut costs = serde_json::Map::new();
            for (i, &(method, _)) in first.method_costs.iter().enumerate() {
                let sum: usize = compared.iter().map(|s| s.method_costs[i].1).sum();
                costs.insert(method.name().to_owned(), sum.into());
            }
            let cost = |s: &SequenceStats, m: Method| s.method_costs.iter().find(|(x, _)| *x == m).map(|&(_, c)| c);
            let (mut exact_wins, mut best_wins) = (0, 0);
            for s in &compared {
                if let (Some(exact), Some(best)) = (cost(s, Method::Exact), cost(s, Method::Best)) {
                    exact_wins += usize::from(exact < best);
                    best_wins += usize::from(best < exact);
                }
            }
            value["method_costs"] = costs.into();
            value["exact_beats_best"] = exact_wins.into();
            value["best_beats_exact"] = best_wins.into();
        }
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// For `y = f(x, p)` with `f` a non-inlinable intrinsic acting directly on derivatives
/// (`DirectAction` in the catalogue), the derivative statement `y.d = f'(x.d, p)`: the action
/// is linear in the active arguments, which it takes as derivatives, and passive ones (the
/// integer shape of `reshape`, constants, passive variables) keep their values. `None` when
/// the statement is no such call, or when no argument is active (the general path then gives
/// `y` a zero derivative).
fn direct_action(
    cg: &mut CallGraph,
    catalogue: &Catalogue,
    temporaries: &mut Temporaries,
    assignment: &Assignment,
) -> Result<Option<Assignment>, LinearizeError> {
    let rhs = &assignment.rhs;
    let Some(root) = rhs.root() else { return Ok(None) };
    let ExprVertex::Intrinsic(intrinsic) = &rhs.vertices[root] else { return Ok(None) };
    let Some(definition) = catalogue.get(cg.name(intrinsic.name)) else { return Ok(None) };
    if definition.inlinable {
        return Ok(None);
    }
    let Some(action) = definition.builtin_name.clone() else { return Ok(None) };
    let arguments = rhs.operands(root);
    let active: Vec<ExprVertexId> =
        arguments.iter().copied().filter(|&a| depends_on_active(cg, catalogue, rhs, a)).collect();
    if active.is_empty() {
        return Ok(None);
    }
    if active.iter().any(|&a| !matches!(rhs.vertices[a], ExprVertex::Variable(_))) {
        // `transpose(a * b)`: the action would have to be applied to the derivative of the
        // expression, which no statement computes.
        return Err(LinearizeError::DirectActionOfExpression {
            statement: cg.name(assignment.id).to_owned(),
            name: cg.name(intrinsic.name).to_owned(),
        });
    }
    let mut derivative = assignment.clone();
    // The reference engine reuses the statement id, which the schema forbids.
    let id = format!("_derivative_{}", cg.name(assignment.id));
    derivative.id = temporaries.statement_id(cg, &id);
    derivative.lhs.deriv = true;
    for argument in active {
        if let ExprVertex::Variable(reference) = &mut derivative.rhs.vertices[argument] {
            reference.deriv = true;
        }
    }
    if let ExprVertex::Intrinsic(intrinsic) = &mut derivative.rhs.vertices[root] {
        intrinsic.name = cg.names.intern(&action);
    }
    Ok(Some(derivative))
}

/// Whether the value at `vertex` depends differentiably on an active variable: through an
/// active reference, or through an intrinsic argument whose partial is not passive (`size(a)`
/// of an active `a` does not; an intrinsic outside the catalogue is assumed to).
fn depends_on_active(cg: &CallGraph, catalogue: &Catalogue, expression: &Expression, vertex: ExprVertexId) -> bool {
    match &expression.vertices[vertex] {
        ExprVertex::Variable(reference) => is_active_reference(cg, reference),
        ExprVertex::Constant(_) | ExprVertex::BooleanOperation(_) => false,
        ExprVertex::FunctionCall(_) => {
            expression.operands(vertex).into_iter().any(|o| depends_on_active(cg, catalogue, expression, o))
        }
        ExprVertex::Intrinsic(intrinsic) => {
            let definition = catalogue.get(cg.name(intrinsic.name));
            expression.operands(vertex).into_iter().enumerate().any(|(i, o)| {
                // Integer, logical and character results carry no derivative.
                let passive = definition.is_some_and(|d| {
                    !matches!(d.return_type.as_deref(), None | Some("real" | "complex"))
                        || d.partials.get(i).is_some_and(|p| p.kind == PartialKind::Passive)
                });
                !passive && depends_on_active(cg, catalogue, expression, o)
            })
        }
    }
}

/// A partial as the planner sees it: run-time values are numbered in `symbols`.
fn to_label(partial: Partial, symbols: &mut Vec<SymbolId>) -> Label {
    match partial {
        Partial::One => Label::One,
        Partial::MinusOne => Label::MinusOne,
        Partial::Constant(value) => Label::Constant(value),
        Partial::Variable(symbol) => {
            symbols.push(symbol);
            Label::Variable(symbols.len() as u32 - 1)
        }
    }
}

/// The shape temporaries for a vertex's values and derivatives take.
fn vertex_shape(vertex: &Vertex) -> ValueShape {
    match vertex {
        Vertex::Intermediate(shape) => shape.clone(),
        Vertex::Independent(_) | Vertex::Dependent(_) => ValueShape::Scalar,
    }
}
