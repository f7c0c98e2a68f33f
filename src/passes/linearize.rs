//! Linearization: the local partial derivatives of one active assignment.
//!
//! For `y = f(g(x), z)` the tangent code needs, before the statement overwrites anything, the
//! values of the partials of every elemental operation with respect to its active operands.
//! Partials come from the intrinsics catalogue as expressions over the operation's arguments;
//! an argument that is itself a subexpression is first stored in an auxiliary variable
//! (`<prefix>aux_N`) so the partial and the statement share one evaluation of it, and the
//! statement is rewritten to use the auxiliary. Partials that fold to a constant (unit, minus
//! one, or a number) become edge labels and cost nothing at run time; the others are stored in
//! partial variables (`<prefix>lin_N`).
//!
//! The result is a small local graph per statement (operands → operations → result) that the
//! flattening step stitches into the basic block's linearized computational graph.

use la_arena::ArenaMap;
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;

use crate::ir::build::{Temporaries, shape_of_rank, whole_reference};
use crate::ir::*;
use crate::xaif::intrinsics::{Catalogue, PartialExpr, PartialKind, eval_intrinsic};

/// An edge label of a linearized computational graph, as far as it is known at compile time.
#[derive(Copy, Clone, PartialEq, Debug)]
pub enum Partial {
    One,
    MinusOne,
    Constant(f64),
    /// The value of a partial variable computed at run time.
    Variable(SymbolId),
}

impl Partial {
    /// The label of a partial whose value is the number `value`.
    pub fn from_value(value: f64) -> Partial {
        if value == 1.0 {
            Partial::One
        } else if value == -1.0 {
            Partial::MinusOne
        } else {
            Partial::Constant(value)
        }
    }
}

/// A vertex of a statement's local graph.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum LocalNode {
    /// An active operand: index into [`LocalGraph::operands`].
    Operand(usize),
    /// An elemental operation's result, numbered in evaluation order.
    Operation(usize),
}

#[derive(Clone, Debug)]
pub struct LocalEdge {
    pub source: LocalNode,
    /// Operations only: operands have no in-edges.
    pub target: usize,
    pub partial: Partial,
}

/// The shape of a value, as far as the compiler knows it.
#[derive(Clone, Debug, Default)]
pub enum ValueShape {
    #[default]
    Scalar,
    /// Constant bounds (an array section's renumbered from 1, as Fortran does).
    Known(Vec<DimensionBounds>),
    /// Bounds known only at run time: a temporary of this shape is allocated like `like`
    /// (`oad_AllocateMatching`, a runtime routine of OpenAD).
    Matching { rank: usize, like: Box<VariableReference> },
}

/// Operands → operations → result of one assignment.
#[derive(Clone, Debug, Default)]
pub struct LocalGraph {
    /// The distinct active variables the right-hand side reads (a variable read twice is one
    /// operand), as they are spelled in the statement.
    pub operands: Vec<VariableReference>,
    /// The key of each operand ([`RefKeys::of`]), by which they were told apart: the tangent
    /// pass compares a sequence's references by the same keys, and need not make them again.
    pub operand_keys: Vec<RefKey>,
    pub operations: usize,
    /// The shape of each operation's result (whole-array statements have array values).
    pub operation_shapes: Vec<ValueShape>,
    /// The intrinsic of each operation, for views of the graph.
    pub operation_names: Vec<Name>,
    pub edges: Vec<LocalEdge>,
    /// What the left-hand side becomes; `None` when the right-hand side is passive.
    pub result: Option<LocalNode>,
}

/// One active assignment, linearized.
#[derive(Clone, Debug)]
pub struct LinearizedAssignment {
    /// `<prefix>aux_N = subexpression`, in evaluation order, before the partials (with the
    /// allocations of array-valued auxiliaries).
    pub auxiliaries: Vec<Statement>,
    /// `<prefix>lin_N = partial`, before the statement.
    pub partials: Vec<Statement>,
    /// The statement, with auxiliary subexpressions replaced by their variables.
    pub statement: Assignment,
    pub graph: LocalGraph,
}

#[derive(Debug, thiserror::Error)]
pub enum LinearizeError {
    #[error("statement {statement}: intrinsic '{name}' is in no catalogue")]
    UnknownIntrinsic { statement: String, name: String },
    #[error("statement {statement}: intrinsic '{name}' has no partial for argument {argument}")]
    MissingPartial { statement: String, name: String, argument: usize },
    #[error("statement {statement}: function calls inside expressions cannot be differentiated")]
    FunctionCall { statement: String },
    #[error("statement {statement}: the right-hand side has no root")]
    NoRoot { statement: String },
    #[error(
        "statement {statement}: intrinsic '{name}' acts directly on derivatives, so its active arguments must be variables, not expressions"
    )]
    DirectActionOfExpression { statement: String, name: String },
}

impl LinearizeError {
    /// The `statement_id` of the statement the error is about.
    pub fn statement(&self) -> &str {
        match self {
            LinearizeError::UnknownIntrinsic { statement, .. }
            | LinearizeError::MissingPartial { statement, .. }
            | LinearizeError::FunctionCall { statement }
            | LinearizeError::NoRoot { statement }
            | LinearizeError::DirectActionOfExpression { statement, .. } => statement,
        }
    }
}

/// A new temporary of the given shape in `scope`.
pub fn create_temporary(
    temporaries: &mut Temporaries,
    cg: &mut CallGraph,
    scope: ScopeId,
    kind: &'static str,
    active: bool,
    shape: &ValueShape,
) -> SymbolId {
    temporaries.fresh(cg, scope, kind, |symbol| {
        symbol.active = active;
        match shape {
            ValueShape::Scalar => {}
            ValueShape::Known(dimensions) => {
                symbol.shape = shape_of_rank(dimensions.len());
                symbol.dimensions = dimensions.clone();
            }
            ValueShape::Matching { rank, .. } => symbol.shape = shape_of_rank(*rank),
        }
    })
}

/// Whether a reference reads or writes a differentiable value.
pub fn is_active_reference(cg: &CallGraph, reference: &VariableReference) -> bool {
    if reference.active == ActiveUse::False || reference.deriv {
        return false;
    }
    reference.base_symbol().is_some_and(|symbol| {
        let symbol = &cg.symbols[symbol];
        symbol.active && matches!(symbol.ty, SymbolType::Real | SymbolType::Complex)
    })
}

/// Structural equality of two references (same symbol, same subscript expressions).
pub fn same_reference(cg: &CallGraph, a: &VariableReference, b: &VariableReference) -> bool {
    reference_key(cg, a) == reference_key(cg, b)
}

/// A reference's [`reference_key`] as a number, the same for the same text: the tangent pass
/// compares and hashes the keys of every reference of every active statement, several times
/// each, and a number is copied and hashed where a text was allocated and scanned.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct RefKey(u32);

/// The keys given so far (one table per pass: keys are compared only within a pass).
#[derive(Default)]
pub struct RefKeys {
    ids: FxHashMap<Box<str>, RefKey>,
    /// The text of the key being looked up, kept from one lookup to the next.
    text: String,
}

impl RefKeys {
    /// The key of `reference`: equal for structurally equal references.
    pub fn of(&mut self, cg: &CallGraph, reference: &VariableReference) -> RefKey {
        self.text.clear();
        push_reference_key(cg, reference, &mut self.text);
        if let Some(&key) = self.ids.get(self.text.as_str()) {
            return key;
        }
        let key = RefKey(u32::try_from(self.ids.len()).expect("fewer than 2^32 distinct references"));
        self.ids.insert(self.text.as_str().into(), key);
        key
    }
}

/// A canonical text of a reference, used to compare and hash references structurally.
pub fn reference_key(cg: &CallGraph, reference: &VariableReference) -> String {
    let mut key = String::new();
    push_reference_key(cg, reference, &mut key);
    key
}

/// A canonical text of an expression (vertex kinds and operand structure, not XML ids).
pub fn expression_key(cg: &CallGraph, expression: &Expression) -> String {
    let mut key = String::new();
    let table = expression.operand_table();
    if let Some(root) = table.root() {
        push_expression_key(cg, expression, &table, root, &mut key);
    }
    key
}

// The keys are built for every reference of every active statement: appended to one buffer,
// never formatted into temporaries.
fn push_reference_key(cg: &CallGraph, reference: &VariableReference, key: &mut String) {
    for vertex in &reference.vertices {
        match vertex {
            VarRefVertex::Symbol(s) => {
                key.push('s');
                key.push_str(itoa::Buffer::new().format(s.symbol.into_raw().into_u32()));
                key.push(':');
            }
            VarRefVertex::ArrayElement(a) => {
                key.push('[');
                for triplet in &a.indices {
                    for part in [&triplet.index, &triplet.bound, &triplet.stride] {
                        match part {
                            Some(e) => {
                                let table = e.operand_table();
                                if let Some(root) = table.root() {
                                    push_expression_key(cg, e, &table, root, key);
                                }
                            }
                            None => key.push('_'),
                        }
                        key.push(';');
                    }
                    key.push(',');
                }
                key.push(']');
            }
        }
    }
}

fn push_expression_key(cg: &CallGraph, e: &Expression, table: &OperandTable, v: ExprVertexId, out: &mut String) {
    use std::fmt::Write as _;
    match &e.vertices[v] {
        ExprVertex::Variable(r) => {
            out.push_str("v(");
            push_reference_key(cg, r, out);
            out.push(')');
        }
        ExprVertex::Constant(c) => {
            out.push_str("c(");
            out.push_str(cg.name(c.value));
            out.push(')');
        }
        ExprVertex::Intrinsic(i) => {
            out.push_str("i(");
            out.push_str(cg.name(i.name));
            out.push(')');
        }
        ExprVertex::BooleanOperation(b) => {
            let _ = write!(out, "b({:?})", b.op);
        }
        ExprVertex::FunctionCall(f) => {
            let _ = write!(out, "f({:?})", f.symbol.map(|s| s.into_raw().into_u32()));
        }
    }
    let operands = table.of(v);
    if !operands.is_empty() {
        out.push('(');
        for &operand in operands {
            push_expression_key(cg, e, table, operand, out);
            out.push(',');
        }
        out.push(')');
    }
}

/// Parses a constant's value as a number (Fortran `1.0D0` spelling included).
pub fn constant_value(cg: &CallGraph, constant: &Constant) -> Option<f64> {
    let text = cg.name(constant.value).trim();
    match constant.ty {
        ConstantType::Bool => match text {
            "true" | ".true." | "1" => Some(1.0),
            "false" | ".false." | "0" => Some(0.0),
            _ => None,
        },
        ConstantType::Char | ConstantType::String => None,
        ConstantType::Real | ConstantType::Double | ConstantType::Integer => {
            text.replace(['d', 'D'], "e").parse::<f64>().ok()
        }
    }
}

/// Linearizes one assignment whose left-hand side is active. Takes the assignment: it is the
/// result's statement (its right-hand side replaced where auxiliaries hold subexpressions),
/// moved rather than copied.
pub fn linearize_assignment(
    cg: &mut CallGraph,
    catalogue: &Catalogue,
    temporaries: &mut Temporaries,
    keys: &mut RefKeys,
    scope: ScopeId,
    assignment: Assignment,
) -> Result<LinearizedAssignment, LinearizeError> {
    // The statement's name, spelled out only for an error.
    let id = assignment.id;
    let rhs = &assignment.rhs;
    let table = rhs.operand_table();
    let root = table.root().ok_or_else(|| LinearizeError::NoRoot { statement: cg.name(id).to_owned() })?;
    let order = postorder(&table, root, rhs.vertices.len());

    // Per vertex, in maps indexed by the expression's own arena (vectors, not hash maps:
    // this runs for every active assignment). Which vertices carry a dependence on an active
    // variable:
    let mut active: ArenaMap<ExprVertexId, bool> = ArenaMap::with_capacity(rhs.vertices.len());
    // How many active variables and operations there are, and how many operands the latter
    // have: bounds for the vectors filled below, which then grow only once.
    let (mut active_variables, mut active_operations, mut operation_operands) = (0, 0, 0);
    for &v in &order {
        let is_active = match &rhs.vertices[v] {
            ExprVertex::Variable(r) => {
                let is_active = is_active_reference(cg, r);
                active_variables += usize::from(is_active);
                is_active
            }
            ExprVertex::Constant(_) | ExprVertex::BooleanOperation(_) => false,
            ExprVertex::Intrinsic(_) => {
                let operands = table.of(v);
                let is_active = operands.iter().any(|&o| active[o]);
                if is_active {
                    active_operations += 1;
                    operation_operands += operands.len();
                }
                is_active
            }
            ExprVertex::FunctionCall(_) => {
                return Err(LinearizeError::FunctionCall { statement: cg.name(id).to_owned() });
            }
        };
        active.insert(v, is_active);
    }

    let mut shapes: ArenaMap<ExprVertexId, ValueShape> = ArenaMap::with_capacity(rhs.vertices.len());
    for &v in &order {
        let shape = match &rhs.vertices[v] {
            ExprVertex::Variable(r) => reference_shape(cg, r),
            ExprVertex::Constant(_) | ExprVertex::BooleanOperation(_) | ExprVertex::FunctionCall(_) => {
                ValueShape::Scalar
            }
            ExprVertex::Intrinsic(i) => {
                let operands: Vec<&ValueShape> = table.of(v).iter().map(|&o| &shapes[o]).collect();
                intrinsic_shape(cg, catalogue, i, &operands)
            }
        };
        shapes.insert(v, shape);
    }

    let mut graph = LocalGraph {
        operands: Vec::with_capacity(active_variables),
        operand_keys: Vec::with_capacity(active_variables),
        operation_shapes: Vec::with_capacity(active_operations),
        operation_names: Vec::with_capacity(active_operations),
        ..LocalGraph::default()
    };
    let mut node_of: ArenaMap<ExprVertexId, LocalNode> = ArenaMap::with_capacity(rhs.vertices.len());
    // Sized from the counts above, as the vectors are: grown from empty, these maps were
    // rehashed two or three times per assignment (2 MiB tangent, driving thread: 99.66 →
    // 99.37 M instructions).
    let mut operand_keys: FxHashMap<RefKey, usize> =
        FxHashMap::with_capacity_and_hasher(active_variables, Default::default());
    // Subexpressions stored in auxiliaries, by vertex.
    let mut auxiliary_of: FxHashMap<ExprVertexId, SymbolId> = FxHashMap::default();
    let mut auxiliaries = Vec::new();
    let mut partials = Vec::new();
    let mut partial_edges: Vec<(LocalNode, usize, PartialValue)> = Vec::with_capacity(operation_operands);
    let mut operation_vertex: Vec<ExprVertexId> = Vec::with_capacity(active_operations);

    for &v in &order {
        if !active[v] {
            continue;
        }
        match &rhs.vertices[v] {
            ExprVertex::Variable(reference) => {
                let key = keys.of(cg, reference);
                let index = match operand_keys.entry(key) {
                    Entry::Occupied(known) => *known.get(),
                    Entry::Vacant(new) => {
                        let index = graph.operands.len();
                        graph.operand_keys.push(key);
                        graph.operands.push(reference.clone());
                        *new.insert(index)
                    }
                };
                node_of.insert(v, LocalNode::Operand(index));
            }
            ExprVertex::Intrinsic(intrinsic) => {
                // By id: the text is looked up where it is needed, as the temporaries made
                // below change the call graph (a copy of it was an allocation per operation).
                let name = intrinsic.name;
                let definition = catalogue.get(cg.name(name)).ok_or_else(|| LinearizeError::UnknownIntrinsic {
                    statement: cg.name(id).to_owned(),
                    name: cg.name(name).to_owned(),
                })?;
                let operands = table.of(v);
                let operation = graph.operations;
                graph.operations += 1;
                graph.operation_shapes.push(shapes[v].clone());
                graph.operation_names.push(intrinsic.name);
                operation_vertex.push(v);
                node_of.insert(v, LocalNode::Operation(operation));
                // Arguments the partials read must be available as values: leaves as they are,
                // subexpressions through an auxiliary.
                for (i, &argument) in operands.iter().enumerate() {
                    if !active[argument] {
                        continue;
                    }
                    let partial = definition.partials.get(i).ok_or_else(|| LinearizeError::MissingPartial {
                        statement: cg.name(id).to_owned(),
                        name: cg.name(name).to_owned(),
                        argument: i + 1,
                    })?;
                    let value = match partial.kind {
                        PartialKind::LinearOne => PartialValue::Known(1.0),
                        PartialKind::LinearMinusOne => PartialValue::Known(-1.0),
                        PartialKind::Passive => continue,
                        PartialKind::Linear | PartialKind::Nonlinear => {
                            match fold(cg, rhs, operands, &partial.expression, cg.name(name)) {
                                Some(number) => PartialValue::Known(number),
                                None => {
                                    for referenced in referenced_arguments(&partial.expression) {
                                        // Argument 0 is the operation's own value.
                                        let arg = match referenced {
                                            0 => v,
                                            k => match operands.get(k - 1) {
                                                Some(&arg) => arg,
                                                None => continue,
                                            },
                                        };
                                        if needs_auxiliary(rhs, arg) && !auxiliary_of.contains_key(&arg) {
                                            let shape = &shapes[arg];
                                            let symbol = create_temporary(temporaries, cg, scope, "aux", false, shape);
                                            auxiliaries.extend(allocation(cg, symbol, shape));
                                            let value = copy_subtree(cg, rhs, &table, arg, &auxiliary_of, true);
                                            auxiliaries.push(Statement::Assignment(make_assignment(
                                                cg,
                                                temporaries,
                                                symbol,
                                                value,
                                            )));
                                            auxiliary_of.insert(arg, symbol);
                                        }
                                    }
                                    let with_result: Vec<ExprVertexId> =
                                        std::iter::once(v).chain(operands.iter().copied()).collect();
                                    PartialValue::Expression(build_partial(
                                        cg,
                                        (rhs, &table),
                                        &with_result,
                                        &partial.expression,
                                        &auxiliary_of,
                                    ))
                                }
                            }
                        }
                    };
                    partial_edges.push((node_of[argument], operation, value));
                }
            }
            ExprVertex::Constant(_) | ExprVertex::BooleanOperation(_) | ExprVertex::FunctionCall(_) => {}
        }
    }

    // Parallel edges (`x*x`) become one edge whose partial is the sum.
    let mut merged: Vec<(LocalNode, usize, PartialValue)> = Vec::with_capacity(partial_edges.len());
    let mut merged_at: FxHashMap<(LocalNode, usize), usize> =
        FxHashMap::with_capacity_and_hasher(partial_edges.len(), Default::default());
    for (source, target, value) in partial_edges {
        match merged_at.get(&(source, target)) {
            Some(&k) => {
                let existing = &mut merged[k];
                existing.2 = add_partials(cg, std::mem::replace(&mut existing.2, PartialValue::Known(0.0)), value);
            }
            None => {
                merged_at.insert((source, target), merged.len());
                merged.push((source, target, value));
            }
        }
    }
    graph.edges.reserve_exact(merged.len());
    for (source, target, value) in merged {
        let partial = match value {
            PartialValue::Known(0.0) => continue,
            PartialValue::Known(number) => Partial::from_value(number),
            PartialValue::Expression(expression) => {
                let shape = &shapes[operation_vertex[target]];
                let symbol = create_temporary(temporaries, cg, scope, "lin", false, shape);
                partials.extend(allocation(cg, symbol, shape));
                partials.push(Statement::Assignment(make_assignment(cg, temporaries, symbol, expression)));
                Partial::Variable(symbol)
            }
        };
        graph.edges.push(LocalEdge { source, target, partial });
    }

    graph.result = active[root].then(|| node_of[root]);
    let auxiliary_rhs = (!auxiliary_of.is_empty()).then(|| copy_subtree(cg, rhs, &table, root, &auxiliary_of, false));
    let mut statement = assignment;
    if let Some(rhs) = auxiliary_rhs {
        statement.rhs = rhs;
    }
    Ok(LinearizedAssignment { auxiliaries, partials, statement, graph })
}

/// A partial before it is given a variable.
enum PartialValue {
    Known(f64),
    Expression(Expression),
}

fn add_partials(cg: &mut CallGraph, a: PartialValue, b: PartialValue) -> PartialValue {
    match (a, b) {
        (PartialValue::Known(x), PartialValue::Known(y)) => PartialValue::Known(x + y),
        (a, b) => {
            let mut sum = Expression::default();
            let left = splice(cg, &mut sum, a);
            let right = splice(cg, &mut sum, b);
            let add = cg.names.intern("add_scal_scal");
            let root = add_intrinsic(cg, &mut sum, add);
            add_edge(cg, &mut sum, left, root, 1);
            add_edge(cg, &mut sum, right, root, 2);
            PartialValue::Expression(sum)
        }
    }
}

/// Copies a partial's value into `target`, returning the vertex holding it.
fn splice(cg: &mut CallGraph, target: &mut Expression, value: PartialValue) -> ExprVertexId {
    match value {
        PartialValue::Known(number) => add_constant(cg, target, number),
        PartialValue::Expression(source) => {
            let table = source.operand_table();
            let root = table.root().expect("built expressions have a root");
            copy_into(cg, (&source, &table), root, target)
        }
    }
}

fn postorder(table: &OperandTable, root: ExprVertexId, vertices: usize) -> Vec<ExprVertexId> {
    let mut order = Vec::with_capacity(vertices);
    let mut seen = ArenaMap::with_capacity(vertices);
    let mut stack = vec![(root, false)];
    while let Some((v, expanded)) = stack.pop() {
        if expanded {
            order.push(v);
            continue;
        }
        if seen.insert(v, ()).is_some() {
            continue;
        }
        stack.push((v, true));
        for &operand in table.of(v).iter().rev() {
            stack.push((operand, false));
        }
    }
    order
}

fn needs_auxiliary(expression: &Expression, vertex: ExprVertexId) -> bool {
    !matches!(expression.vertices[vertex], ExprVertex::Variable(_) | ExprVertex::Constant(_))
}

/// (On the stack: partials read one or two arguments, and this runs twice per partial.)
fn referenced_arguments(partial: &PartialExpr) -> smallvec::SmallVec<[usize; 4]> {
    let mut out = smallvec::SmallVec::new();
    fn walk(p: &PartialExpr, out: &mut smallvec::SmallVec<[usize; 4]>) {
        match p {
            PartialExpr::Constant { .. } => {}
            PartialExpr::Argument(i) => out.push(*i),
            PartialExpr::Intrinsic { arguments, .. } => arguments.iter().for_each(|a| walk(a, out)),
        }
    }
    walk(partial, &mut out);
    out.sort_unstable();
    out.dedup();
    out
}

/// The number a partial stands for when every argument it reads is a constant.
fn fold(cg: &CallGraph, rhs: &Expression, operands: &[ExprVertexId], partial: &PartialExpr, name: &str) -> Option<f64> {
    let mut values = Vec::with_capacity(operands.len());
    let referenced = referenced_arguments(partial);
    for (i, &operand) in operands.iter().enumerate() {
        let value = match &rhs.vertices[operand] {
            ExprVertex::Constant(c) => constant_value(cg, c),
            _ if referenced.contains(&(i + 1)) => return None,
            _ => Some(f64::NAN),
        };
        values.push(value?);
    }
    let result = if partial.uses_result() { eval_intrinsic(name, &values) } else { None };
    partial.eval(&values, result).filter(|v| v.is_finite())
}

/// `symbol = rhs` for a passive temporary, its id `_<symbol>`.
fn make_assignment(cg: &mut CallGraph, temporaries: &mut Temporaries, symbol: SymbolId, rhs: Expression) -> Assignment {
    let id = temporaries.assignment_id(cg, symbol);
    Assignment { id, do_chain: None, line: 0, lhs: whole_reference(cg, symbol, false), lhs_live: true, rhs }
}

/// Copies the subtree at `vertex` into a fresh expression; vertices in `replaced` become
/// references to their auxiliary (except the copied root itself when `keep_root`).
fn copy_subtree(
    cg: &mut CallGraph,
    source: &Expression,
    table: &OperandTable,
    vertex: ExprVertexId,
    replaced: &FxHashMap<ExprVertexId, SymbolId>,
    keep_root: bool,
) -> Expression {
    let mut target = Expression::default();
    copy_rec(cg, (source, table), vertex, replaced, keep_root, &mut target);
    target
}

/// Copies the subtree at `vertex` (a shared operand once per use) into `target`, operands
/// before their operation; returns the copy of `vertex`. Iterative: the depth of an
/// expression is bounded only by the reader's limit.
fn copy_rec(
    cg: &mut CallGraph,
    (source, table): (&Expression, &OperandTable),
    vertex: ExprVertexId,
    replaced: &FxHashMap<ExprVertexId, SymbolId>,
    is_kept_root: bool,
    target: &mut Expression,
) -> ExprVertexId {
    // A vertex is visited, then (after its operands) finished; copies wait on a value stack.
    // Both start with room for a typical statement's subtree: grown from one, they took
    // three or four reallocations each (a fifth of this function's instructions).
    let mut work = Vec::with_capacity(16);
    work.push((vertex, is_kept_root, false));
    let mut copies: Vec<ExprVertexId> = Vec::with_capacity(16);
    while let Some((v, kept, operands_done)) = work.pop() {
        if let Some(&symbol) = replaced.get(&v).filter(|_| !kept) {
            let reference = whole_reference(cg, symbol, false);
            copies.push(add_vertex(cg, target, ExprVertex::Variable(reference)));
            continue;
        }
        let operands = table.of(v);
        if !operands_done {
            work.push((v, kept, true));
            work.extend(operands.iter().rev().map(|&o| (o, false, false)));
            continue;
        }
        // The operands' copies are the last on the stack (taken in place, not split off into a
        // vector of their own per vertex).
        let first = copies.len() - operands.len();
        let copy = add_vertex(cg, target, source.vertices[v].clone());
        for (i, &child) in copies[first..].iter().enumerate() {
            add_edge(cg, target, child, copy, i as i64 + 1);
        }
        copies.truncate(first);
        copies.push(copy);
    }
    copies.pop().expect("the copied subtree's root")
}

/// Copies a whole subtree from one expression into another (no replacements).
fn copy_into(
    cg: &mut CallGraph,
    source: (&Expression, &OperandTable),
    vertex: ExprVertexId,
    target: &mut Expression,
) -> ExprVertexId {
    copy_rec(cg, source, vertex, &FxHashMap::default(), true, target)
}

/// Builds a catalogue partial over the statement's operands.
fn build_partial(
    cg: &mut CallGraph,
    rhs: (&Expression, &OperandTable),
    operands: &[ExprVertexId],
    partial: &PartialExpr,
    auxiliary_of: &FxHashMap<ExprVertexId, SymbolId>,
) -> Expression {
    // Sized for the partial's own vertices (an argument is usually one, a variable): grown
    // from empty, the two lists were reallocated about twice per partial.
    let vertices = partial_vertices(partial);
    let mut target =
        Expression { vertices: la_arena::Arena::with_capacity(vertices), edges: Vec::with_capacity(vertices) };
    build_rec(cg, rhs, operands, partial, auxiliary_of, &mut target);
    target
}

/// How many vertices `partial` spells out, counting each argument as one.
fn partial_vertices(partial: &PartialExpr) -> usize {
    match partial {
        PartialExpr::Constant { .. } | PartialExpr::Argument(_) => 1,
        PartialExpr::Intrinsic { arguments, .. } => 1 + arguments.iter().map(partial_vertices).sum::<usize>(),
    }
}

fn build_rec(
    cg: &mut CallGraph,
    rhs: (&Expression, &OperandTable),
    operands: &[ExprVertexId],
    partial: &PartialExpr,
    auxiliary_of: &FxHashMap<ExprVertexId, SymbolId>,
    target: &mut Expression,
) -> ExprVertexId {
    match partial {
        PartialExpr::Constant { value, .. } => {
            // (Rewritten only where Fortran's `D` exponent is there to rewrite: catalogue
            // constants are mostly `1`, `2`, `0.5`, and this runs for every partial built.)
            let number = if value.bytes().any(|b| b == b'd' || b == b'D') {
                value.replace(['d', 'D'], "e").parse::<f64>()
            } else {
                value.parse::<f64>()
            };
            add_constant(cg, target, number.unwrap_or(f64::NAN))
        }
        PartialExpr::Argument(i) => {
            // `operands[0]` is the operation itself (argument 0), then its arguments.
            let argument = operands[*i];
            match auxiliary_of.get(&argument) {
                Some(&symbol) => {
                    let reference = whole_reference(cg, symbol, false);
                    add_vertex(cg, target, ExprVertex::Variable(reference))
                }
                None => copy_into(cg, rhs, argument, target),
            }
        }
        PartialExpr::Intrinsic { name, arguments } => {
            let children: smallvec::SmallVec<[ExprVertexId; 4]> =
                arguments.iter().map(|a| build_rec(cg, rhs, operands, a, auxiliary_of, target)).collect();
            let name = cg.names.intern(name);
            let vertex = add_intrinsic(cg, target, name);
            for (i, child) in children.into_iter().enumerate() {
                add_edge(cg, target, child, vertex, i as i64 + 1);
            }
            vertex
        }
    }
}

/// Adds a vertex with the next free XML id of its expression.
pub fn add_vertex(cg: &mut CallGraph, target: &mut Expression, mut vertex: ExprVertex) -> ExprVertexId {
    let id = cg.names.intern_index(target.vertices.len() + 1);
    match &mut vertex {
        ExprVertex::Variable(v) => v.id = id,
        ExprVertex::Constant(c) => c.id = id,
        ExprVertex::Intrinsic(i) => i.id = id,
        ExprVertex::BooleanOperation(b) => b.id = id,
        ExprVertex::FunctionCall(f) => f.id = id,
    }
    target.vertices.alloc(vertex)
}

pub fn add_edge(cg: &mut CallGraph, target: &mut Expression, source: ExprVertexId, to: ExprVertexId, position: i64) {
    let id = cg.names.intern_index(target.edges.len() + 1);
    target.edges.push(ExprEdge { id, annotation: Name::EMPTY, source, target: to, position });
}

pub fn add_intrinsic(cg: &mut CallGraph, target: &mut Expression, name: Name) -> ExprVertexId {
    let inlinable = cg.names.intern("inlinable");
    add_vertex(
        cg,
        target,
        ExprVertex::Intrinsic(Intrinsic {
            id: Name::EMPTY,
            annotation: Name::EMPTY,
            name,
            call_type: inlinable,
            result_type: SymbolType::Real,
            result_shape: Shape::Scalar,
        }),
    )
}

/// A constant vertex spelled so that it reads back as the same double.
pub fn add_constant(cg: &mut CallGraph, target: &mut Expression, value: f64) -> ExprVertexId {
    let (ty, value) = if value.fract() == 0.0 && value.abs() < 1e15 {
        // Its decimal digits, without a String (small ones found without hashing).
        (ConstantType::Integer, cg.names.intern_integer(value as i64))
    } else {
        // Fortran reads `2.5e0` as single precision; the `D` exponent keeps every digit.
        (ConstantType::Double, cg.names.intern(&format!("{value:e}").replace('e', "D")))
    };
    add_vertex(
        cg,
        target,
        ExprVertex::Constant(Constant { id: Name::EMPTY, annotation: Name::EMPTY, ty, fe_type: Name::EMPTY, value }),
    )
}

/// The shape of an intrinsic's value, given its operands' shapes. An elemental operation on an
/// array has the array's shape whatever the front end wrote: `rShape` is optional, reads as
/// scalar when absent, and the reference engine's own output drops it, so a missing attribute
/// must not turn `sin(x(1:n))` into a scalar. For the others (reductions, inquiries, intrinsics
/// outside the catalogue) `rShape` decides whether the value is an array, of its array
/// operand's shape.
fn intrinsic_shape(
    cg: &CallGraph,
    catalogue: &Catalogue,
    intrinsic: &Intrinsic,
    operands: &[&ValueShape],
) -> ValueShape {
    let elemental = catalogue.get(cg.name(intrinsic.name)).is_some_and(|d| d.is_elemental());
    if intrinsic.result_shape == Shape::Scalar && !elemental {
        return ValueShape::Scalar;
    }
    operands.iter().find(|s| !matches!(s, ValueShape::Scalar)).map(|&s| s.clone()).unwrap_or_default()
}

/// The shape of the value a reference denotes.
pub fn reference_shape(cg: &CallGraph, reference: &VariableReference) -> ValueShape {
    let matching = |rank| ValueShape::Matching { rank, like: Box::new(reference.clone()) };
    let Some(base) = reference.base_symbol() else { return ValueShape::Scalar };
    let symbol = &cg.symbols[base];
    let rank = symbol.shape.rank();
    if rank == 0 {
        return ValueShape::Scalar;
    }
    let elements: Vec<&ArrayElementReference> = reference
        .vertices
        .iter()
        .filter_map(|v| match v {
            VarRefVertex::ArrayElement(a) => Some(a),
            VarRefVertex::Symbol(_) => None,
        })
        .collect();
    let [element] = elements.as_slice() else {
        return if elements.is_empty() && symbol.dimensions.len() == rank {
            ValueShape::Known(symbol.dimensions.clone())
        } else {
            matching(rank)
        };
    };
    let sections: Vec<(usize, &IndexTriplet)> = element
        .indices
        .iter()
        .enumerate()
        .filter(|(_, t)| t.bound.is_some() || t.stride.is_some() || t.index.is_none())
        .collect();
    if sections.is_empty() {
        return ValueShape::Scalar;
    }
    let mut dimensions = Vec::new();
    for &(d, triplet) in &sections {
        let declared = symbol.dimensions.get(d);
        let constant = |e: &Option<Expression>| e.as_ref().map(|e| constant_expression(cg, e));
        let lower = match constant(&triplet.index) {
            Some(v) => v,
            None => declared.map(|b| b.lower as f64),
        };
        let upper = match constant(&triplet.bound) {
            Some(v) => v,
            None => declared.map(|b| b.upper as f64),
        };
        let stride = constant(&triplet.stride).unwrap_or(Some(1.0));
        let (Some(lower), Some(upper), Some(stride)) = (lower, upper, stride) else {
            return matching(sections.len());
        };
        if stride == 0.0 {
            return matching(sections.len());
        }
        let extent = (((upper - lower) / stride).floor() + 1.0).max(0.0) as i64;
        dimensions.push(DimensionBounds { lower: 1, upper: extent });
    }
    ValueShape::Known(dimensions)
}

/// The run-time allocation a temporary of this shape needs before it is assigned.
pub fn allocation(cg: &mut CallGraph, temporary: SymbolId, shape: &ValueShape) -> Option<Statement> {
    let ValueShape::Matching { like, .. } = shape else { return None };
    let one = cg.names.intern("1");
    let id = cg.names.intern("oad_allocate_matching");
    let subroutine_name = cg.names.intern("oad_AllocateMatching");
    let mut target = whole_reference(cg, temporary, false);
    target.id = one;
    let mut source = (**like).clone();
    source.id = one;
    source.deriv = false;
    Some(Statement::InlinableSubroutineCall(InlinableSubroutineCall {
        id,
        subroutine_name,
        arguments: vec![
            Argument { position: 1, annotation: Name::EMPTY, value: ArgumentValue::Variable(target) },
            Argument { position: 2, annotation: Name::EMPTY, value: ArgumentValue::Variable(source) },
        ],
    }))
}

/// The value of an expression made of one constant, if it is one.
fn constant_expression(cg: &CallGraph, expression: &Expression) -> Option<f64> {
    let root = expression.root()?;
    match &expression.vertices[root] {
        ExprVertex::Constant(c) => constant_value(cg, c),
        _ => None,
    }
}
