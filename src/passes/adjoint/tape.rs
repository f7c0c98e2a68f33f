//! Taping: the forward sweep of a basic block. The tangent code of the block runs as it is
//! (original statements, partials, Jacobian accumulation), except that each derivative
//! propagator is replaced by pushes of what its transpose will need: every factor that is not
//! a constant (`push_s0`) and the value of every variable in a subscript of its references
//! (`push_i_s0`), since those may change before the adjoint sweep reads them. A subroutine call
//! pushes the subscripts of its arguments too, so it is called again on the same elements:
//! after the call, on top of whatever the callee taped (its values saved before the call).
//!
//! Each statement's pushes are recorded, in push order, for the block adjoint to pop.

use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::{SmallVec, smallvec};

use crate::analysis::dataflow::{SymbolBits, SymbolSet};
use crate::analysis::effects::Effects;
use crate::analysis::tbr::{BlockWrites, Record, RoutineRecording};
use crate::ir::build::{Temporaries, assignment, inlinable_call, whole_reference};
use crate::ir::*;

use super::AdjointError;

/// One value pushed for the adjoint.
#[derive(Clone, Debug)]
pub struct Pushed {
    /// The value as the forward sweep names it (a factor temporary, an index variable).
    pub value: VariableReference,
    pub integer: bool,
    /// Rank of a real factor (`push_s0`, `push_s1`, …).
    pub rank: usize,
    /// Declared bounds of an array factor; empty when only known at run time, in which case
    /// its element count is pushed right after it (`size_of_previous`).
    pub dimensions: Vec<DimensionBounds>,
    /// This integer is the element count of the array factor pushed just before.
    pub size_of_previous: bool,
    /// The temporary the adjoint pops it into, when the recomputed partials already read that
    /// temporary (values strategy); otherwise the adjoint makes one.
    pub into: Option<VariableReference>,
}

impl Pushed {
    fn integer(value: VariableReference) -> Pushed {
        Pushed { value, integer: true, rank: 0, dimensions: Vec::new(), size_of_previous: false, into: None }
    }
}

/// What the forward sweep tapes for a sequence's transposed propagator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum TapeStrategy {
    /// Every Jacobian factor that is not a constant (the original engine's way).
    Factors,
    /// The values the partials read that may be overwritten before the reverse sweep (by the
    /// to-be-recorded analysis); the reverse sweep computes the partials and the Jacobian
    /// again. Sequences where that is impossible keep their factors.
    Values,
    /// Per sequence, whichever of the two pushes fewer words (factors on a tie).
    Best,
    /// Per sequence, the values where they push fewer words and the operations the reverse
    /// sweep then spends computing the partials again are at most twice the words saved (a
    /// word is a store in the forward sweep and a load in the reverse one); the factors
    /// elsewhere. On the corpus: 0.38 times the reference's tape words (best 0.32), in no
    /// example more, and 0.92 times its operations per adjoint sweep (best 1.32), hence the
    /// default. (At one operation per word saved, factors were kept where they push more than
    /// the reference.)
    #[default]
    Balanced,
}

/// The cost of one sequence under each strategy, and the choice made.
#[derive(Clone, Copy, Debug)]
pub struct SequenceChoice {
    /// Words pushed for its factors.
    pub factors: usize,
    /// Words pushed for its values, if its partials can be recomputed.
    pub values: Option<usize>,
    pub chose_values: bool,
}

/// Where a block sits and what the analyses know there, for deciding what it must tape.
pub struct TapeContext<'a> {
    pub strategy: TapeStrategy,
    /// The routine's to-be-recorded facts; `None` tapes every subscript (no analysis).
    pub recording: Option<&'a RoutineRecording>,
    pub effects: &'a Effects,
    pub block: CfgVertexId,
    /// The variables the reversal restores in this block (explicit loop nests).
    pub restored: &'a [SymbolId],
}

/// A block's forward sweep and, per statement of the tangent block, what it pushed.
pub struct TapedBlock {
    pub taping: Vec<Statement>,
    pub pushes: Vec<Vec<Pushed>>,
    /// Per statement: what the adjoint computes again before the statement's transpose (the
    /// partials and Jacobian of a sequence taped by values).
    pub recompute: Vec<Vec<Statement>>,
    pub choices: Vec<SequenceChoice>,
    /// Locals the reverse sweep reads directly that are restored where it begins (pushed at
    /// the end of the forward sweep).
    pub at_exit: Vec<SymbolId>,
    /// Variables the reverse sweep reads where they stand.
    pub direct: Vec<SymbolId>,
}

/// The forward sweep of one basic block of tangent code.
pub fn tape_block(
    cg: &mut CallGraph,
    temporaries: &mut Temporaries,
    scope: ScopeId,
    statements: &[Statement],
    context: &TapeContext<'_>,
) -> Result<TapedBlock, AdjointError> {
    let writes = BlockWrites::of(context.effects, statements);
    // Built for the first sequence that could be taped by its values: many blocks have none.
    let mut index: Option<BlockIndex> = None;
    // Whether the value of `symbol` read at statement `k` must be taped.
    let record = |cg: &CallGraph, k: usize, symbol: SymbolId| match context.recording {
        Some(recording) => recording.record(cg, context.block, &writes, k, symbol, context.restored),
        None if context.restored.contains(&symbol) => Record::Direct,
        None => Record::Tape,
    };
    // Locals read where nothing overwrites them later: restored once, at the routine's end;
    // and what the reverse sweep reads where it stands.
    let mut at_exit: Vec<SymbolId> = Vec::new();
    let mut direct: Vec<SymbolId> = Vec::new();

    // First the choice for every sequence: its values are pushed where its partials were.
    let mut plans: FxHashMap<usize, ValuesPlan> = FxHashMap::default();
    let mut choices = Vec::new();
    let mut sequence_start = 0;
    for (p, statement) in statements.iter().enumerate() {
        match statement {
            Statement::DerivativePropagator(propagator) => {
                let factors = factor_cost(cg, propagator);
                let plan = match (context.strategy, factors) {
                    (TapeStrategy::Factors, _) | (_, None) | (_, Some(0)) => None,
                    _ => {
                        let index = index.get_or_insert_with(|| BlockIndex::of(cg, context.effects, statements));
                        plan_values(cg, context.effects, index, statements, sequence_start, p, propagator, &record)
                    }
                };
                let factors = factors.unwrap_or(0);
                let values = plan.as_ref().map(|plan| plan.pushes.len());
                let chose_values = match (context.strategy, &plan) {
                    (TapeStrategy::Factors, _) | (_, None) => false,
                    (TapeStrategy::Values, Some(_)) => true,
                    (TapeStrategy::Best, Some(plan)) => plan.pushes.len() < factors,
                    (TapeStrategy::Balanced, Some(plan)) => {
                        plan.pushes.len() < factors
                            && recomputed_operations(statements, &plan.slice) <= 2 * (factors - plan.pushes.len())
                    }
                };
                choices.push(SequenceChoice { factors, values, chose_values });
                if chose_values && let Some(plan) = plan {
                    at_exit.extend(plan.at_exit.iter().copied());
                    direct.extend(plan.direct.iter().copied());
                    plans.insert(p, plan);
                }
                sequence_start = p + 1;
            }
            Statement::SubroutineCall(_) => sequence_start = p + 1,
            _ => {}
        }
    }
    let mut recompute: Vec<Vec<Statement>> = vec![Vec::new(); statements.len()];
    let mut before: FxHashMap<usize, Vec<Pushed>> = FxHashMap::default();
    let mut removed: FxHashSet<usize> = FxHashSet::default();
    let mut value_pushes: FxHashMap<usize, Vec<Pushed>> = FxHashMap::default();
    for (&p, plan) in &plans {
        let (pushed, code) = materialize(cg, temporaries, scope, statements, plan);
        for (k, push) in plan.pushes.iter().zip(&pushed) {
            before.entry(k.position).or_default().push(push.clone());
        }
        removed.extend(plan.removable.iter().copied());
        recompute[p] = code;
        value_pushes.insert(p, pushed);
    }

    let mut taping = Vec::with_capacity(statements.len() + 4);
    let mut pushes = Vec::with_capacity(statements.len());
    for (k, statement) in statements.iter().enumerate() {
        if let Some(early) = before.get(&k) {
            emit_pushes(cg, early, &mut taping);
        }
        let mut pushed = Vec::new();
        match statement {
            Statement::DerivativePropagator(propagator) => {
                let by_values = value_pushes.remove(&k);
                let mut own = Vec::new();
                if by_values.is_none() {
                    let mut seen = FxHashSet::default();
                    for entry in &propagator.entries {
                        if let PropagatorEntry::Sax { terms, .. } | PropagatorEntry::Saxpy { terms, .. } = entry {
                            for term in terms {
                                factor_pushes(cg, temporaries, scope, &term.a, &mut taping, &mut own, &mut seen)?;
                            }
                        }
                    }
                }
                for entry in &propagator.entries {
                    for reference in entry_references(entry) {
                        subscript_pushes(
                            cg,
                            reference,
                            &mut |s| taped(record(cg, k, s), s, &mut at_exit, &mut direct),
                            &mut own,
                        );
                    }
                }
                emit_pushes(cg, &own, &mut taping);
                // The values were pushed earlier, where the partials read them: first on the
                // tape, last off it.
                pushed = by_values.unwrap_or_default();
                pushed.extend(own);
            }
            Statement::SubroutineCall(call) => {
                for argument in &call.arguments {
                    if let ArgumentValue::Variable(reference) = &argument.value {
                        let mut record = |s| taped(record(cg, k, s), s, &mut at_exit, &mut direct);
                        subscript_pushes(cg, reference, &mut record, &mut pushed);
                        // A temporary allocated to match a section is allocated again before
                        // the reverse call: the section's subscripts are taped with the call's.
                        if let Some(like) = allocation_of(cg, statements, reference) {
                            subscript_pushes(cg, like, &mut record, &mut pushed);
                        }
                    }
                }
                // The callee tapes onto the same stacks during the call, so the subscripts go
                // on top of what it pushed (the reverse sweep pops them before the reverse
                // call), saved before the call in case it changes them.
                let mut saved = Vec::with_capacity(pushed.len());
                for p in &pushed {
                    let symbol = temporaries.fresh(cg, scope, "Symbol", |s| {
                        s.ty = SymbolType::Integer;
                        s.active = false;
                    });
                    let copy = whole_reference(cg, symbol, false);
                    let mut value = p.value.clone();
                    value.deriv = false;
                    taping.push(Statement::Assignment(assignment(
                        cg,
                        "_call_subscript",
                        copy.clone(),
                        Expression::variable(value),
                    )));
                    saved.push(Pushed { value: copy, ..p.clone() });
                }
                taping.push(statement.clone());
                emit_pushes(cg, &saved, &mut taping);
            }
            Statement::InlinableSubroutineCall(_) => taping.push(statement.clone()),
            Statement::Assignment(a) if a.lhs.deriv => {
                // The derivative of a direct action (`b.d = transpose(a.d)`) is the adjoint
                // sweep's business; the forward sweep computes values only.
                if transposed_operand(cg, a).is_none() {
                    // The tangent pass named it after the input's statement.
                    let id = cg.name(a.id);
                    return Err(AdjointError::AtStatement {
                        statement: id.strip_prefix("_derivative_").unwrap_or(id).to_owned(),
                        message: "only transpose among the direct-action intrinsics has an adjoint yet".into(),
                    });
                }
            }
            Statement::Assignment(_) if removed.contains(&k) => {}
            Statement::Assignment(_) | Statement::Marker(_) => taping.push(statement.clone()),
        }
        pushes.push(pushed);
    }
    at_exit.sort_unstable();
    at_exit.dedup();
    direct.sort_unstable();
    direct.dedup();
    Ok(TapedBlock { taping, pushes, recompute, choices, at_exit, direct })
}

/// Whether a subscript value must be pushed where it is read; a local restored at the end is
/// noted in `at_exit`.
fn taped(record: Record, symbol: SymbolId, at_exit: &mut Vec<SymbolId>, direct: &mut Vec<SymbolId>) -> bool {
    match record {
        Record::Tape => true,
        Record::AtExit => {
            at_exit.push(symbol);
            false
        }
        Record::Direct => {
            direct.push(symbol);
            false
        }
    }
}

/// The words a propagator's factors take on the tape, if all are scalars (constants take
/// none); `None` for array factors, which only the factor strategy tapes.
fn factor_cost(cg: &CallGraph, propagator: &DerivativePropagator) -> Option<usize> {
    // Factors are whole temporaries: counted once each by symbol.
    let mut seen: FxHashSet<SymbolId> = FxHashSet::default();
    let mut elements: Vec<&VariableReference> = Vec::new();
    for entry in &propagator.entries {
        let (PropagatorEntry::Sax { terms, .. } | PropagatorEntry::Saxpy { terms, .. }) = entry else { continue };
        for term in terms {
            let root = term.a.root()?;
            match &term.a.vertices[root] {
                ExprVertex::Constant(_) => {}
                ExprVertex::Variable(v) if term.a.vertices.len() == 1 => {
                    if v.effective_rank(cg) > 0 {
                        return None;
                    }
                    match (v.vertices.len(), v.base_symbol()) {
                        (1, Some(base)) => {
                            seen.insert(base);
                        }
                        _ => {
                            if !elements.iter().any(|s| s.same_place(v)) {
                                elements.push(v);
                            }
                        }
                    }
                }
                _ => return None,
            }
        }
    }
    Some(seen.len() + elements.len())
}

/// One value a sequence's partials read that the forward sweep must tape: pushed before
/// statement `position`.
#[derive(Clone, Debug)]
struct ValuePush {
    position: usize,
    value: VariableReference,
    integer: bool,
}

/// The arithmetic the reverse sweep spends computing a slice again: one operation per intrinsic
/// application in its right-hand sides.
fn recomputed_operations(statements: &[Statement], slice: &[usize]) -> usize {
    slice
        .iter()
        .filter_map(|&k| match &statements[k] {
            Statement::Assignment(assignment) => Some(
                assignment.rhs.vertices.iter().filter(|(_, vertex)| matches!(vertex, ExprVertex::Intrinsic(_))).count(),
            ),
            _ => None,
        })
        .sum()
}

/// How a sequence taped by values is computed again in the reverse sweep.
#[derive(Debug)]
struct ValuesPlan {
    /// The statements (partials, Jacobian accumulation) that compute its factors, ascending.
    slice: Vec<usize>,
    /// Those the forward sweep no longer needs.
    removable: Vec<usize>,
    pushes: Vec<ValuePush>,
    /// Locals the recomputation reads directly, to be restored at the routine's end.
    at_exit: Vec<SymbolId>,
    /// Other variables it reads where they stand.
    direct: Vec<SymbolId>,
    /// Per slice statement: (vertex of its right-hand side, index into `pushes`) for each
    /// operand read from the tape.
    taped_operands: Vec<Vec<(ExprVertexId, usize)>>,
}

/// A scalar temporary read or written whole: what the tangent pass computes partials and
/// Jacobian entries into.
fn scalar_temporary(cg: &CallGraph, reference: &VariableReference) -> Option<SymbolId> {
    let base = reference.base_symbol()?;
    (cg.symbols[base].temp && reference.vertices.len() == 1 && cg.symbols[base].shape == Shape::Scalar).then_some(base)
}

/// Plans the values strategy for the propagator at `p`, whose sequence starts at `start`;
/// `None` where the partials cannot be computed again (array temporaries, calls, reads of
/// derivatives).
#[allow(clippy::too_many_arguments)]
fn plan_values(
    cg: &CallGraph,
    effects: &Effects,
    index: &BlockIndex,
    statements: &[Statement],
    start: usize,
    p: usize,
    propagator: &DerivativePropagator,
    record: &dyn Fn(&CallGraph, usize, SymbolId) -> Record,
) -> Option<ValuesPlan> {
    // The subscripts the propagator pushes anyway (popped before the recomputation).
    let mut indices: FxHashSet<SymbolId> = FxHashSet::default();
    for entry in &propagator.entries {
        for reference in entry_references(entry) {
            let mut found = Vec::new();
            subscript_pushes(cg, reference, &mut |s| record(cg, p, s) == Record::Tape, &mut found);
            indices.extend(found.iter().filter_map(|f| f.value.base_symbol()));
        }
    }
    // The factor temporaries, then (backwards) the statements defining what is needed.
    let mut needed: FxHashSet<SymbolId> = FxHashSet::default();
    for entry in &propagator.entries {
        let (PropagatorEntry::Sax { terms, .. } | PropagatorEntry::Saxpy { terms, .. }) = entry else { continue };
        for term in terms {
            let root = term.a.root()?;
            if let ExprVertex::Variable(v) = &term.a.vertices[root] {
                let temporary = scalar_temporary(cg, v)?;
                needed.insert(temporary);
            }
        }
    }
    let mut slice = Vec::new();
    let mut written = SymbolSet::default();
    for j in (start..p).rev() {
        let statement = &statements[j];
        match statement {
            Statement::Assignment(a) if !a.lhs.deriv => {
                let Some(target) = scalar_temporary(cg, &a.lhs) else { continue };
                if !needed.remove(&target) {
                    continue;
                }
                slice.push(j);
                for (_, vertex) in a.rhs.vertices.iter() {
                    match vertex {
                        ExprVertex::Variable(r) => {
                            if r.deriv {
                                return None;
                            }
                            if let Some(t) = scalar_temporary(cg, r) {
                                needed.insert(t);
                            }
                        }
                        ExprVertex::Constant(_) | ExprVertex::Intrinsic(_) | ExprVertex::BooleanOperation(_) => {}
                        ExprVertex::FunctionCall(_) => return None,
                    }
                }
            }
            _ => {
                // Anything else that writes a needed temporary hides how it was computed.
                written.clear();
                effects.statement_writes(statement, &mut written);
                if written.symbols.iter().any(|s| needed.contains(&s)) {
                    return None;
                }
            }
        }
    }
    slice.reverse();

    // A slice statement stays in the forward sweep if a statement that stays reads it: one
    // outside the slice (the propagator's factors aside), or a slice statement that stays.
    let mut own_subscripts = SymbolBits::default();
    for entry in &propagator.entries {
        for r in entry_references(entry) {
            reference_reads(r, &mut |s| {
                own_subscripts.insert(s);
            });
        }
    }
    let mut removable: Vec<usize> = slice.clone();
    loop {
        let staying_before = removable.len();
        let candidates = removable.clone();
        removable.retain(|&j| {
            let Statement::Assignment(a) = &statements[j] else { return false };
            let Some(t) = a.lhs.base_symbol() else { return false };
            !own_subscripts.contains(t)
                && index
                    .readers
                    .get(&t)
                    .is_none_or(|readers| readers.iter().all(|&r| r == p || candidates.binary_search(&r).is_ok()))
        });
        if removable.len() == staying_before {
            break;
        }
    }
    // The operands the slice reads from outside itself: read again where the reverse sweep
    // sees the same value, taped otherwise.
    let mut defined: FxHashSet<SymbolId> = FxHashSet::default();
    let mut pushes: Vec<ValuePush> = Vec::new();
    // Earlier pushes by the place they read (`place_hash`), in statement order: the candidates
    // for sharing one.
    let mut pushed_places: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
    let mut at_exit: Vec<SymbolId> = Vec::new();
    let mut direct: Vec<SymbolId> = Vec::new();
    let mut taped_operands = Vec::with_capacity(slice.len());
    let mut symbols = Vec::new();
    for &j in &slice {
        let Statement::Assignment(a) = &statements[j] else { return None };
        let mut taped = Vec::new();
        for (vertex, v) in a.rhs.vertices.iter() {
            let ExprVertex::Variable(r) = v else { continue };
            if scalar_temporary(cg, r).is_some_and(|t| defined.contains(&t)) {
                continue;
            }
            symbols.clear();
            r.symbols_read(&mut symbols);
            let base = r.base_symbol()?;
            let records: Vec<Record> = symbols.iter().map(|&s| record(cg, j, s)).collect();
            let taped_symbols: Vec<SymbolId> =
                symbols.iter().zip(&records).filter(|(_, r)| **r == Record::Tape).map(|(&s, _)| s).collect();
            // Read directly where nothing it depends on changes, or where only subscripts do
            // that the propagator pushes anyway (the reverse sweep reads their popped values).
            let shared = !taped_symbols.contains(&base)
                && taped_symbols.iter().all(|s| indices.contains(s))
                && !index.written_between(j, p, &taped_symbols);
            if taped_symbols.is_empty() || shared {
                for (&s, &r) in symbols.iter().zip(&records) {
                    match r {
                        Record::AtExit => at_exit.push(s),
                        Record::Direct => direct.push(s),
                        Record::Tape => {}
                    }
                }
                continue;
            }
            if r.effective_rank(cg) > 0 {
                return None;
            }
            let integer = match cg.symbols[base].ty {
                SymbolType::Real => false,
                SymbolType::Integer => true,
                _ => return None,
            };
            // One push serves every read of the same place with the same value. Only the latest
            // push of the place can: a write that separates it from this read separates every
            // earlier one too (a scan of all of them made long blocks quadratic).
            let candidates = pushed_places.entry(r.place_hash()).or_default();
            let same = candidates
                .iter()
                .rev()
                .copied()
                .find(|&q: &usize| pushes[q].value.same_place(r))
                .filter(|&q| !index.written_between(pushes[q].position, j, &symbols));
            let slot = match same {
                Some(slot) => slot,
                None => {
                    pushes.push(ValuePush { position: j, value: r.clone(), integer });
                    candidates.push(pushes.len() - 1);
                    pushes.len() - 1
                }
            };
            taped.push((vertex, slot));
        }
        if let Some(t) = scalar_temporary(cg, &a.lhs) {
            defined.insert(t);
        }
        taped_operands.push(taped);
    }
    Some(ValuesPlan { slice, removable, pushes, at_exit, direct, taped_operands })
}

/// Who reads each scalar temporary and where each symbol may be written, per block: what
/// planning the values strategy asks, answered without rescanning the block per sequence.
struct BlockIndex {
    /// Scalar temporary → the statements reading it, ascending.
    readers: FxHashMap<SymbolId, Vec<usize>>,
    /// Symbol → the statements that may write it, ascending.
    writes: FxHashMap<SymbolId, Vec<usize>>,
    /// The statements that may write any global (calls of unknown effect), ascending.
    unknown: Vec<usize>,
}

impl BlockIndex {
    fn of(cg: &CallGraph, effects: &Effects, statements: &[Statement]) -> BlockIndex {
        let mut index = BlockIndex { readers: FxHashMap::default(), writes: FxHashMap::default(), unknown: Vec::new() };
        let mut written = SymbolSet::default();
        for (k, statement) in statements.iter().enumerate() {
            statement_reads(statement, &mut |s| {
                if cg.symbols[s].temp && cg.symbols[s].shape == Shape::Scalar {
                    let readers = index.readers.entry(s).or_default();
                    if readers.last() != Some(&k) {
                        readers.push(k);
                    }
                }
            });
            written.clear();
            effects.statement_writes(statement, &mut written);
            for s in written.symbols.iter() {
                index.writes.entry(s).or_default().push(k);
            }
            if written.all_persistent {
                index.unknown.push(k);
            }
        }
        index
    }

    /// Whether a statement from `from` up to (not including) `to` may write one of `symbols`.
    fn written_between(&self, from: usize, to: usize, symbols: &[SymbolId]) -> bool {
        let within = |positions: &[usize]| {
            let first = positions.partition_point(|&k| k < from);
            positions.get(first).is_some_and(|&k| k < to)
        };
        within(&self.unknown) || symbols.iter().any(|s| self.writes.get(s).is_some_and(|w| within(w)))
    }
}

/// Visits the symbols a statement reads (values and subscripts), as many times as it reads
/// them: the block index keeps one entry per statement anyway, and deduplicating here (as
/// `symbols_read` does, by linear search) made long propagators quadratic.
fn statement_reads(statement: &Statement, visit: &mut impl FnMut(SymbolId)) {
    let arguments = |arguments: &[Argument], visit: &mut dyn FnMut(SymbolId)| {
        for argument in arguments {
            if let ArgumentValue::Variable(r) = &argument.value {
                reference_reads(r, visit);
            }
        }
    };
    match statement {
        Statement::Assignment(a) => {
            expression_reads(&a.rhs, visit);
            reference_reads(&a.lhs, visit);
        }
        Statement::SubroutineCall(call) => arguments(&call.arguments, visit),
        Statement::InlinableSubroutineCall(call) => arguments(&call.arguments, visit),
        Statement::DerivativePropagator(propagator) => {
            for entry in &propagator.entries {
                for r in entry_references(entry) {
                    reference_reads(r, visit);
                }
                if let PropagatorEntry::Sax { terms, .. } | PropagatorEntry::Saxpy { terms, .. } = entry {
                    for term in terms {
                        expression_reads(&term.a, visit);
                    }
                }
            }
        }
        Statement::Marker(_) => {}
    }
}

/// The symbols `Expression::variables_read` lists, each visited as often as it is read.
fn expression_reads(expression: &Expression, visit: &mut dyn FnMut(SymbolId)) {
    for (_, vertex) in expression.vertices.iter() {
        if let ExprVertex::Variable(r) = vertex {
            reference_reads(r, visit);
        }
    }
}

/// The symbols `VariableReference::symbols_read` lists, each visited as often as it is read.
fn reference_reads(reference: &VariableReference, visit: &mut dyn FnMut(SymbolId)) {
    if let Some(base) = reference.base_symbol() {
        visit(base);
    }
    for vertex in &reference.vertices {
        if let VarRefVertex::ArrayElement(access) = vertex {
            for triplet in &access.indices {
                for e in [&triplet.index, &triplet.bound, &triplet.stride].into_iter().flatten() {
                    expression_reads(e, visit);
                }
            }
        }
    }
}

/// The pushes of a plan (each popped into a new temporary) and the slice rewritten to read
/// those temporaries.
fn materialize(
    cg: &mut CallGraph,
    temporaries: &mut Temporaries,
    scope: ScopeId,
    statements: &[Statement],
    plan: &ValuesPlan,
) -> (Vec<Pushed>, Vec<Statement>) {
    let mut pushed = Vec::with_capacity(plan.pushes.len());
    for push in &plan.pushes {
        let symbol = temporaries.fresh(cg, scope, "Symbol", |s| {
            s.active = false;
            s.ty = if push.integer { SymbolType::Integer } else { SymbolType::Real };
        });
        let into = whole_reference(cg, symbol, false);
        let mut value = push.value.clone();
        value.deriv = false;
        pushed.push(Pushed {
            value,
            integer: push.integer,
            rank: 0,
            dimensions: Vec::new(),
            size_of_previous: false,
            into: Some(into),
        });
    }
    let mut code = Vec::with_capacity(plan.slice.len());
    for (&j, taped) in plan.slice.iter().zip(&plan.taped_operands) {
        let Statement::Assignment(a) = &statements[j] else { continue };
        let mut a = a.clone();
        for &(vertex, index) in taped {
            if let (ExprVertex::Variable(r), Some(into)) = (&mut a.rhs.vertices[vertex], &pushed[index].into) {
                let id = r.id;
                *r = into.clone();
                r.id = id;
            }
        }
        code.push(Statement::Assignment(a));
    }
    (pushed, code)
}

/// The array `oad_AllocateMatching(t, like)` in `statements` gives the storage of the whole
/// temporary `reference` (`t`), if any.
pub fn allocation_of<'s>(
    cg: &CallGraph,
    statements: &'s [Statement],
    reference: &VariableReference,
) -> Option<&'s VariableReference> {
    let base = reference.base_symbol()?;
    if !cg.symbols[base].temp {
        return None;
    }
    statements.iter().find_map(|s| match s {
        Statement::InlinableSubroutineCall(call) if cg.name(call.subroutine_name) == "oad_AllocateMatching" => {
            match (call.arguments.first().map(|a| &a.value), call.arguments.get(1).map(|a| &a.value)) {
                (Some(ArgumentValue::Variable(t)), Some(ArgumentValue::Variable(like)))
                    if t.base_symbol() == Some(base) =>
                {
                    Some(like)
                }
                _ => None,
            }
        }
        _ => None,
    })
}

/// `a` in a derivative assignment `b.d = transpose(a.d)` between arrays or fixed sections: the linear map
/// whose adjoint is `ā += transpose(b̄)`.
pub fn transposed_operand<'a>(cg: &CallGraph, assignment: &'a Assignment) -> Option<&'a VariableReference> {
    let rhs = &assignment.rhs;
    let root = rhs.root()?;
    let ExprVertex::Intrinsic(intrinsic) = &rhs.vertices[root] else { return None };
    if cg.name(intrinsic.name) != "transpose_arr" || rhs.vertices.len() != 2 {
        return None;
    }
    let operand = rhs.vertices.iter().find_map(|(_, v)| match v {
        ExprVertex::Variable(r) => Some(r),
        _ => None,
    })?;
    // Subscripts without variables: nothing to tape for the adjoint to see the same sections.
    let fixed = |r: &VariableReference| {
        let mut read = Vec::new();
        r.symbols_read(&mut read);
        read.len() == 1
    };
    (operand.deriv && fixed(operand) && fixed(&assignment.lhs)).then_some(operand)
}

/// The variable references a propagator entry reads or writes.
/// (On the stack for all but long sums: asked for every entry of every propagator, several
/// times.)
pub fn entry_references(entry: &PropagatorEntry) -> SmallVec<[&VariableReference; 4]> {
    match entry {
        PropagatorEntry::SetDeriv { target, source }
        | PropagatorEntry::SetNegDeriv { target, source }
        | PropagatorEntry::IncDeriv { target, source }
        | PropagatorEntry::DecDeriv { target, source } => smallvec![target, source],
        PropagatorEntry::Sax { terms, y } | PropagatorEntry::Saxpy { terms, y } => {
            terms.iter().map(|t| &t.x).chain(std::iter::once(y)).collect()
        }
        PropagatorEntry::ZeroDeriv(x) => smallvec![x],
    }
}

/// A factor that is not a constant is pushed; an array factor whose bounds are only known at
/// run time is followed by its element count, so the adjoint can allocate its copy.
fn factor_pushes(
    cg: &mut CallGraph,
    temporaries: &mut Temporaries,
    scope: ScopeId,
    factor: &Expression,
    taping: &mut Vec<Statement>,
    pushed: &mut Vec<Pushed>,
    seen: &mut FxHashSet<SymbolId>,
) -> Result<(), AdjointError> {
    let Some(root) = factor.root() else { return Ok(()) };
    let value = match &factor.vertices[root] {
        ExprVertex::Constant(_) => return Ok(()),
        ExprVertex::Variable(reference) if factor.vertices.len() == 1 => reference.clone(),
        _ => {
            // The tangent pass writes factors as constants or partial/accumulation temporaries.
            return Err(AdjointError::Unsupported("a propagator factor that is an expression".into()));
        }
    };
    let whole = value.vertices.len() == 1;
    match value.base_symbol() {
        Some(base) if whole => {
            if !seen.insert(base) {
                return Ok(());
            }
        }
        _ => {
            if pushed.iter().any(|p| p.value.same_place(&value)) {
                return Ok(());
            }
        }
    }
    let rank = value.effective_rank(cg);
    let declared = value.base_symbol().map(|b| cg.symbols[b].dimensions.clone()).unwrap_or_default();
    let dimensions =
        if rank > 0 && value.array_access().is_none() && declared.len() == rank { declared } else { Vec::new() };
    if rank > 2 || rank > 1 && dimensions.is_empty() {
        return Err(AdjointError::Unsupported(format!(
            "a Jacobian factor of rank {rank} without declared bounds is not taped yet"
        )));
    }
    let needs_size = rank > 0 && dimensions.is_empty();
    pushed.push(Pushed { value: value.clone(), integer: false, rank, dimensions, size_of_previous: false, into: None });
    if needs_size {
        let count = temporaries.fresh(cg, scope, "Symbol", |s| {
            s.ty = SymbolType::Integer;
            s.active = false;
        });
        let count = whole_reference(cg, count, false);
        let mut of = value;
        of.deriv = false;
        let size = Expression::call(cg, "size", SymbolType::Integer, vec![Expression::variable(of)]);
        taping.push(Statement::Assignment(assignment(cg, "_factor_size", count.clone(), size)));
        pushed.push(Pushed { size_of_previous: true, ..Pushed::integer(count) });
    }
    Ok(())
}

/// Every variable in a subscript of `reference` (not its own subscripts: its value covers them),
/// but those the reversal of an explicit loop restores.
fn subscript_pushes(
    cg: &CallGraph,
    reference: &VariableReference,
    record: &mut dyn FnMut(SymbolId) -> bool,
    pushed: &mut Vec<Pushed>,
) {
    for vertex in &reference.vertices {
        let VarRefVertex::ArrayElement(access) = vertex else { continue };
        for triplet in &access.indices {
            for part in [&triplet.index, &triplet.bound, &triplet.stride].into_iter().flatten() {
                for (_, v) in part.vertices.iter() {
                    let ExprVertex::Variable(index) = v else { continue };
                    let integer = index.base_symbol().is_some_and(|s| cg.symbols[s].ty == SymbolType::Integer);
                    let plain = index.array_access().is_none();
                    if plain && index.base_symbol().is_some_and(|s| !record(s)) {
                        continue;
                    }
                    if integer && !pushed.iter().any(|p| p.value.same_place(index)) {
                        pushed.push(Pushed::integer(index.clone()));
                    }
                }
            }
        }
    }
}

fn emit_pushes(cg: &mut CallGraph, pushed: &[Pushed], taping: &mut Vec<Statement>) {
    for p in pushed {
        let mut value = p.value.clone();
        value.deriv = false;
        let (id, routine) = match (p.integer, p.rank) {
            (true, _) => ("inline_push_i", "push_i_s0"),
            (false, 0) => ("inline_push", "push_s0"),
            (false, 1) => ("inline_push", "push_s1"),
            (false, _) => ("inline_push", "push_s2"),
        };
        taping.push(inlinable_call(cg, id, routine, vec![ArgumentValue::Variable(value)]));
    }
}
