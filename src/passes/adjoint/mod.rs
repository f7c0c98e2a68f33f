//! Adjoint mode (the original `BasicBlockPreaccumulationReverse` driver), on top of the tangent
//! pipeline: each routine's tangent code is split into a forward sweep that tapes what the
//! transposed propagators need and a reverse sweep that runs them backwards, and the routine
//! becomes a `ReplacementList` whose placeholders a reversal template (joint or split)
//! assembles:
//!
//! | placeholder | contents |
//! |---|---|
//! | 1 | the original code (after TypeChange) |
//! | 2, 10 | taping: [`tape`] per basic block, [`reversal`] for the control flow |
//! | 3, 11 | adjoint: [`block`] per basic block, the control flow reversed |
//! | 4/6, 8/9, 12/13 | [`checkpoint`] stores and restores |
//! | 5, 7 | empty |
//!
//! Every loop is reversed by counting its iterations, so the strictly anonymous placeholders
//! 10 and 11 equal 2 and 3.

pub mod address;
pub mod block;
pub mod checkpoint;
pub mod reversal;
pub mod tape;

use la_arena::ArenaMap;
use rustc_hash::FxHashSet;

pub use tape::TapeStrategy;

use crate::analysis::tbr::Recording;

use crate::ir::build::Temporaries;
use crate::ir::*;
use crate::passes::type_change::FormalUse;

use checkpoint::CheckpointLists;
use reversal::Reversal;

#[derive(Clone, Debug, Default)]
pub struct AdjointConfig {
    /// Every formal argument `intent(inout)` (`-I`), as OpenAD's joint mode wants; otherwise
    /// only the active ones.
    pub all_intents_inout: bool,
    /// Checkpoint formals even where every call passes them a constant (`-P`).
    pub checkpoint_constant_formals: bool,
    /// Restores in the order of the stores (`-f`), for a first-in-first-out checkpoint runtime.
    pub file_order_restore: bool,
    /// Zero the adjoints of active locals where the reverse sweep begins (`-D`), for runtimes
    /// without default initialization.
    pub initialize_derivatives: bool,
    /// What a sequence tapes for its transposed propagator (`--tape`).
    pub tape: TapeStrategy,
    /// Tape every subscript and value as if anything could overwrite it (no to-be-recorded
    /// analysis): the original engine's behaviour, for comparison.
    pub record_everything: bool,
    /// Which loops the adjoint runs backwards from their bounds (`--loop-reversal`).
    pub loops: address::LoopPolicy,
}

/// Pushes the forward sweeps contain, counted in the code (not at run time).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct AdjointStats {
    pub routines: usize,
    /// `push_s0` of Jacobian factors.
    pub factor_pushes: usize,
    /// `push_s0`/`push_i_s0` of values the reverse sweep computes partials from.
    pub value_pushes: usize,
    /// `push_i_s0` of subscript values.
    pub index_pushes: usize,
    /// `push_i_s0` of loop counts and branch arms.
    pub control_pushes: usize,
    /// Locals pushed once at the end of a forward sweep (read by the reverse sweep where
    /// nothing overwrote them).
    pub exit_pushes: usize,
    /// The strategy asked for, and what each would push per sequence, summed over all
    /// sequences (static words, before loops multiply them).
    pub tape: TapeSummary,
}

impl AdjointStats {
    /// Adds the counts of `other` (a worker's, for the routines it reversed apart). Both are
    /// destructured whole, so that a count added later cannot be left out here.
    pub fn absorb(&mut self, other: &AdjointStats) {
        let AdjointStats { routines, factor_pushes, value_pushes, index_pushes, control_pushes, exit_pushes, tape } =
            other;
        self.routines += routines;
        self.factor_pushes += factor_pushes;
        self.value_pushes += value_pushes;
        self.index_pushes += index_pushes;
        self.control_pushes += control_pushes;
        self.exit_pushes += exit_pushes;
        // The strategy is the run's, the same in every copy.
        let TapeSummary {
            strategy: _,
            sequences,
            recomputable,
            taped_by_values,
            words_factors,
            words_values,
            words_chosen,
        } = tape;
        self.tape.sequences += sequences;
        self.tape.recomputable += recomputable;
        self.tape.taped_by_values += taped_by_values;
        self.tape.words_factors += words_factors;
        self.tape.words_values += words_values;
        self.tape.words_chosen += words_chosen;
    }
}

/// Static tape words of the sequences' factors or values, per strategy, and the choices made.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TapeSummary {
    pub strategy: TapeStrategy,
    pub sequences: usize,
    /// Sequences whose partials can be computed again in the reverse sweep.
    pub recomputable: usize,
    pub taped_by_values: usize,
    /// Words if every sequence tapes its factors.
    pub words_factors: usize,
    /// Words if every recomputable sequence tapes its values (the others their factors).
    pub words_values: usize,
    /// Words of the choices made.
    pub words_chosen: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum AdjointError {
    #[error("{0}")]
    Unsupported(String),
    /// Refused at a statement of the input (its id there).
    #[error("statement {statement}: {message}")]
    AtStatement { statement: String, message: String },
    #[error("routine {routine}: {source}")]
    Routine {
        routine: String,
        #[source]
        source: Box<AdjointError>,
    },
}

impl AdjointError {
    /// The routine and, where known, the input statement at fault.
    pub fn location(&self) -> Option<(&str, Option<&str>)> {
        match self {
            AdjointError::Routine { routine, source } => Some((routine, source.statement())),
            _ => None,
        }
    }

    fn statement(&self) -> Option<&str> {
        match self {
            AdjointError::AtStatement { statement, .. } => Some(statement),
            AdjointError::Routine { source, .. } => source.statement(),
            AdjointError::Unsupported(_) => None,
        }
    }
}

/// Turns every control flow graph of the call graph, already in tangent form, into a
/// replacement list. `originals` holds each routine's graph after TypeChange (placeholder 1),
/// and each moves into its replacement list.
pub fn adjoint(
    cg: &mut CallGraph,
    temporaries: &mut Temporaries,
    mut originals: ArenaMap<RoutineId, FlowGraph>,
    formal_uses: &ArenaMap<RoutineId, Vec<FormalUse>>,
    config: &AdjointConfig,
) -> Result<AdjointStats, AdjointError> {
    let mut stats = AdjointStats::default();
    stats.tape.strategy = config.tape;
    // What may be overwritten between the forward and the reverse sweep, for every routine,
    // before any of them is turned into a replacement list.
    let recording = Recording::of(cg);
    let routines: Vec<RoutineId> = cg.cfgs().map(|(id, _)| id).collect();
    let mut at_exit: ArenaMap<RoutineId, Vec<SymbolId>> = ArenaMap::default();
    let mut direct: ArenaMap<RoutineId, FxHashSet<SymbolId>> = ArenaMap::default();
    for &routine in &routines {
        let Routine::ControlFlowGraph(cfg) = &cg.routines[routine] else { continue };
        let name = cg.symbol_name(cfg.symbol).to_owned();
        let reversed =
            reverse_routine(cg, temporaries, routine, &mut originals, formal_uses, config, &recording, &mut stats)
                .map_err(|source| AdjointError::Routine { routine: name, source: Box::new(source) })?;
        cg.routines[routine] = Routine::ReplacementList(reversed.list);
        at_exit.insert(routine, reversed.at_exit);
        direct.insert(routine, reversed.direct);
        stats.routines += 1;
    }
    // Locals restored where each reverse sweep begins: its own, and those a callee's reverse
    // sweep reads through a formal.
    let requested = recording.locals_callers_restore(cg, &mut direct);
    for &routine in &routines {
        let mut locals = at_exit.remove(routine).unwrap_or_default();
        locals.extend(requested.get(routine).into_iter().flatten().copied());
        restore_locals(cg, routine, locals, &mut stats);
    }
    // The original code, two sweeps twice each and checkpoint code: the output is about 7 times
    // the input on the corpus, 4.2 times the tangent code.
    cg.size_hint = cg.size_hint * 21 / 5;
    Ok(stats)
}

/// The adjoint one routine at a time, for a streamed run: the interprocedural facts (kills,
/// recording contexts, how callers pass each formal) come from a first pass over the document;
/// each routine, in tangent form, becomes its replacement list with what its callees' reverse
/// sweeps read (so callees must come first: the caller of a routine not yet reversed cannot
/// know which locals to restore for it).
pub struct RoutineByRoutine<'a> {
    recording: Recording,
    formal_uses: &'a ArenaMap<RoutineId, Vec<FormalUse>>,
    config: &'a AdjointConfig,
    /// What each reversed routine's reverse sweep reads where it stands.
    direct: ArenaMap<RoutineId, FxHashSet<SymbolId>>,
    /// When collecting ([`RoutineByRoutine::collecting_directs`]): the formals each reversed
    /// routine passes on.
    passed: Option<Vec<crate::analysis::tbr::FormalPassed>>,
    pub stats: AdjointStats,
}

impl<'a> RoutineByRoutine<'a> {
    pub fn new(
        recording: Recording,
        formal_uses: &'a ArenaMap<RoutineId, Vec<FormalUse>>,
        config: &'a AdjointConfig,
    ) -> RoutineByRoutine<'a> {
        let mut stats = AdjointStats::default();
        stats.tape.strategy = config.tape;
        RoutineByRoutine { recording, formal_uses, config, direct: ArenaMap::default(), passed: None, stats }
    }

    /// A reverser for a pass that only finds what each routine's reverse sweep reads where it
    /// stands ([`RoutineByRoutine::directs`]), for a document where a routine calls one after
    /// it (or itself): its callers, reversed before it, need that to know what to restore.
    pub fn collecting_directs(mut self) -> Self {
        self.passed = Some(Vec::new());
        self
    }

    /// After a collecting pass over every routine: the formals each routine's reverse sweep
    /// reads where they stand, its callees' included, as the whole-document path finds them
    /// (`cg` is the pass's call graph, with every routine's head). Only the formals matter to
    /// callers, and they are the document's own symbols, the same in every pass.
    pub fn directs(mut self, cg: &CallGraph) -> ArenaMap<RoutineId, FxHashSet<SymbolId>> {
        let passed = self.passed.take().unwrap_or_default();
        crate::analysis::tbr::pass_direct_reads_up_all(cg, &passed, &mut self.direct);
        let mut formals: ArenaMap<RoutineId, FxHashSet<SymbolId>> = ArenaMap::default();
        for (routine, direct) in self.direct.iter() {
            let arguments = match &cg.routines[routine] {
                Routine::ControlFlowGraph(cfg) => &cfg.arguments,
                Routine::ReplacementList(list) => &list.arguments,
            };
            let read: FxHashSet<SymbolId> =
                arguments.iter().flatten().map(|a| a.symbol).filter(|s| direct.contains(s)).collect();
            if !read.is_empty() {
                formals.insert(routine, read);
            }
        }
        formals
    }

    /// A reverser that knows beforehand which formals every routine's reverse sweep reads
    /// where they stand ([`RoutineByRoutine::directs`] of a collecting pass), so that a caller
    /// may come before its callees.
    pub fn with_directs(mut self, direct: ArenaMap<RoutineId, FxHashSet<SymbolId>>) -> Self {
        self.direct = direct;
        self
    }

    /// Turns `routine` (in tangent form) into its replacement list; `original` is its graph
    /// after TypeChange (placeholder 1). Every routine with a body it calls is reversed already.
    pub fn reverse(
        &mut self,
        cg: &mut CallGraph,
        temporaries: &mut Temporaries,
        routine: RoutineId,
        original: FlowGraph,
    ) -> Result<(), AdjointError> {
        let mut part =
            ReverseApart { recording: &mut self.recording, formal_uses: self.formal_uses, config: self.config };
        let Some(apart) = part.reverse(cg, temporaries, routine, original, &mut self.stats)? else { return Ok(()) };
        self.finish(cg, routine, apart);
        Ok(())
    }

    /// What a worker needs to reverse routines apart from the others ([`ReverseApart`]): a
    /// copy of the interprocedural facts (each worker adds and removes its routines' own).
    pub fn recording_copy(&self) -> Recording {
        self.recording.copy_facts()
    }

    /// How callers pass each formal (TypeChange's findings of the first pass), for workers.
    pub fn formal_uses(&self) -> &'a ArenaMap<RoutineId, Vec<FormalUse>> {
        self.formal_uses
    }

    /// The adjoint's switches, for workers.
    pub fn config(&self) -> &'a AdjointConfig {
        self.config
    }

    /// The part of reversing a routine that depends on the routines reversed before it, in
    /// document order: what its reverse sweep reads where it stands (its own reads and the
    /// formals it passes to callees that read theirs so), and the locals it restores where its
    /// reverse sweep begins.
    pub fn finish(&mut self, cg: &mut CallGraph, routine: RoutineId, apart: ReversedApart) {
        let ReversedApart { direct, at_exit, passed, actuals } = apart;
        match self.direct.get_mut(routine) {
            Some(known) => known.extend(direct),
            None => {
                self.direct.insert(routine, direct);
            }
        }
        self.stats.routines += 1;
        // One pass: its callees' reads are final by now.
        crate::analysis::tbr::pass_direct_reads_up_from(cg, &passed, &mut self.direct);
        if let Some(collected) = self.passed.as_mut() {
            collected.extend(passed);
        }
        let mut locals = at_exit;
        locals.extend(crate::analysis::tbr::restored_actuals(cg, &actuals, &self.direct));
        restore_locals(cg, routine, locals, &mut self.stats);
    }
}

/// Reversing one routine by what it alone holds and the interprocedural facts of a first
/// pass: what [`RoutineByRoutine::reverse`] does before [`RoutineByRoutine::finish`], and what
/// a parallel worker does with its own copy of the facts.
pub struct ReverseApart<'r, 'a> {
    pub recording: &'r mut Recording,
    pub formal_uses: &'a ArenaMap<RoutineId, Vec<FormalUse>>,
    pub config: &'a AdjointConfig,
}

/// A routine reversed apart, with what finishing it needs ([`RoutineByRoutine::finish`]).
#[derive(Debug)]
pub struct ReversedApart {
    /// The non-local symbols its reverse sweep reads where they stand.
    pub direct: FxHashSet<SymbolId>,
    /// Its locals pushed at the end of its forward sweep.
    pub at_exit: Vec<SymbolId>,
    /// The formals it passes to callees.
    pub passed: Vec<crate::analysis::tbr::FormalPassed>,
    /// The restorable locals its calls pass, by callee.
    pub actuals: Vec<(RoutineId, crate::analysis::tbr::LocalActual)>,
}

impl ReversedApart {
    /// Every symbol it names, through `map` (from a worker's numbering to the driver's).
    pub fn map_symbols(&mut self, mut map: impl FnMut(SymbolId) -> SymbolId) {
        self.direct = self.direct.iter().map(|&s| map(s)).collect();
        for s in &mut self.at_exit {
            *s = map(*s);
        }
        for p in &mut self.passed {
            p.formal = map(p.formal);
        }
        for (_, actual) in &mut self.actuals {
            actual.local = map(actual.local);
        }
    }
}

impl ReverseApart<'_, '_> {
    /// Turns `routine` into its replacement list; `None` if it is not a control flow graph.
    pub fn reverse(
        &mut self,
        cg: &mut CallGraph,
        temporaries: &mut Temporaries,
        routine: RoutineId,
        original: FlowGraph,
        stats: &mut AdjointStats,
    ) -> Result<Option<ReversedApart>, AdjointError> {
        let Routine::ControlFlowGraph(cfg) = &cg.routines[routine] else { return Ok(None) };
        self.recording.add_routine(cg, routine, cfg);
        let name = cg.symbol_name(cfg.symbol).to_owned();
        let mut originals = ArenaMap::default();
        originals.insert(routine, original);
        let reversed = reverse_routine(
            cg,
            temporaries,
            routine,
            &mut originals,
            self.formal_uses,
            self.config,
            self.recording,
            stats,
        );
        let mut passed = Vec::new();
        self.recording.formals_passed(routine, &mut passed);
        let actuals = self.recording.local_actuals_of(routine);
        self.recording.remove_routine(routine);
        let reversed = reversed.map_err(|source| AdjointError::Routine { routine: name, source: Box::new(source) })?;
        cg.routines[routine] = Routine::ReplacementList(reversed.list);
        Ok(Some(ReversedApart { direct: reversed.direct, at_exit: reversed.at_exit, passed, actuals }))
    }
}

/// Pushes `locals` at the end of the routine's forward sweeps and pops them back where its
/// reverse sweeps begin.
fn restore_locals(cg: &mut CallGraph, routine: RoutineId, mut locals: Vec<SymbolId>, stats: &mut AdjointStats) {
    locals.sort_unstable();
    locals.dedup();
    if locals.is_empty() {
        return;
    }
    stats.exit_pushes += locals.len();
    let Routine::ReplacementList(list) = &mut cg.routines[routine] else { return };
    let scope = list.body_scope;
    let mut replacements = std::mem::take(&mut list.replacements);
    // The sweeps 10 and 11 repeat 2 and 3, which get the restores.
    for replacement in replacements.iter_mut().filter(|r| r.repeats.is_none()) {
        let number = cg.names.get(replacement.placeholder).to_owned();
        let sweep = match number.as_str() {
            "2" | "10" => Sweep::Taping,
            "3" | "11" => Sweep::Adjoint,
            _ => continue,
        };
        let graph = std::mem::take(&mut replacement.graph);
        replacement.graph = restore_at_exit(cg, scope, &locals, graph, sweep);
    }
    let Routine::ReplacementList(list) = &mut cg.routines[routine] else { return };
    list.replacements = replacements;
}

fn reverse_routine(
    cg: &mut CallGraph,
    temporaries: &mut Temporaries,
    routine: RoutineId,
    originals: &mut ArenaMap<RoutineId, FlowGraph>,
    formal_uses: &ArenaMap<RoutineId, Vec<FormalUse>>,
    config: &AdjointConfig,
    recording: &Recording,
    stats: &mut AdjointStats,
) -> Result<Reversed, AdjointError> {
    // The routine's graph is moved out (its slot holds an empty graph until the replacement
    // list takes it): no copy of the tangent code.
    let Routine::ControlFlowGraph(slot) = &mut cg.routines[routine] else {
        return Err(AdjointError::Unsupported("not a control flow graph".into()));
    };
    let graph = std::mem::take(&mut slot.graph);
    let cfg = ControlFlowGraph { graph, ..slot.clone() };
    let scope = cfg.body_scope;
    let has_code = cfg.graph.vertices.iter().any(|(_, v)| matches!(v.kind, CfgVertexKind::Entry));

    let mut at_exit: Vec<SymbolId> = Vec::new();
    let mut direct: Vec<SymbolId> = Vec::new();
    let (taping, adjoint, structured) = if has_code {
        let structure = reversal::structure(&cfg.graph);
        let address = match &structure {
            Ok((_, regions, _)) => address::plan(cg, &cfg.graph, regions, config.loops, Some(&recording.effects)),
            Err(_) => address::AddressPlan::default(),
        };
        let mut blocks = vec![None; cfg.graph.vertices.len()];
        for (id, vertex) in cfg.graph.vertices.iter() {
            let CfgVertexKind::BasicBlock(block) = &vertex.kind else { continue };
            let restored = address.restored.get(&id).map(Vec::as_slice).unwrap_or(&[]);
            let context = tape::TapeContext {
                strategy: config.tape,
                recording: if config.record_everything { None } else { recording.routines.get(routine) },
                effects: &recording.effects,
                block: id,
                restored,
            };
            let taped = tape::tape_block(cg, temporaries, block.scope, &block.statements, &context)?;
            for pushed in taped.pushes.iter().flatten() {
                if pushed.into.is_some() {
                    stats.value_pushes += 1;
                } else if pushed.integer {
                    stats.index_pushes += 1;
                } else {
                    stats.factor_pushes += 1;
                }
            }
            at_exit.extend(taped.at_exit.iter().copied());
            direct.extend(taped.direct.iter().copied());
            for choice in &taped.choices {
                let summary = &mut stats.tape;
                summary.sequences += 1;
                summary.recomputable += usize::from(choice.values.is_some());
                summary.taped_by_values += usize::from(choice.chose_values);
                summary.words_factors += choice.factors;
                summary.words_values += choice.values.unwrap_or(choice.factors);
                summary.words_chosen += if choice.chose_values { choice.values.unwrap_or(0) } else { choice.factors };
            }
            let reverse =
                block::adjoint_block(cg, temporaries, block.scope, &block.statements, &taped.pushes, taped.recompute);
            blocks[id.into_raw().into_u32() as usize] = Some((taped.taping, reverse));
        }
        let mut reversal =
            Reversal { cg, temporaries, graph: &cfg.graph, scope, blocks, fresh: 0, address, substitution: Vec::new() };
        let (taping, adjoint, structured) = match structure {
            Ok((entry, regions, exit)) => {
                let taping = reversal.taping(entry, &regions, exit);
                let adjoint = reversal.adjoint(&regions);
                stats.control_pushes += count_control(&regions);
                (taping, adjoint, true)
            }
            Err(_) => {
                // Gotos, labels, post-test loops, two-way Ifs without EndBranch: reversed by
                // basic-block numbers.
                let taping = reversal.numbered_taping();
                let adjoint = reversal.numbered_adjoint();
                stats.control_pushes +=
                    cfg.graph.vertices.iter().filter(|(_, v)| matches!(v.kind, CfgVertexKind::BasicBlock(_))).count()
                        + 1;
                (taping, adjoint, false)
            }
        };
        at_exit.sort_unstable();
        at_exit.dedup();
        direct.sort_unstable();
        direct.dedup();
        (taping, adjoint, structured)
    } else {
        (FlowGraph::default(), FlowGraph::default(), true)
    };

    let adjoint =
        if config.initialize_derivatives && has_code { zero_locals_first(cg, &cfg, adjoint) } else { adjoint };
    let lists = checkpoint_lists(cg, &cfg, formal_uses.get(routine), config);
    let mut replacements = Vec::with_capacity(13);
    let mut add = |cg: &mut CallGraph, number: u32, graph: FlowGraph, repeats: Option<u32>| {
        // The sweeps of a graph reversed by block numbers copy its unstructured control flow.
        let structured = structured || !matches!(number, 1 | 2 | 3 | 10 | 11);
        let placeholder = cg.names.intern_index(number as usize);
        let repeats = repeats.map(|number| cg.names.intern_index(number as usize));
        replacements.push((number, Replacement { placeholder, structured, graph, repeats }));
    };
    let original =
        if has_code { originals.remove(routine).unwrap_or_else(|| cfg.graph.clone()) } else { FlowGraph::default() };
    add(cg, 1, original, None);
    add(cg, 2, taping, None);
    add(cg, 3, adjoint, None);
    for (number, graph, repeats) in checkpoint::placeholders(cg, scope, &lists) {
        add(cg, number, graph, repeats);
    }
    // Every loop is reversed by counting, so the strictly anonymous sweeps are the same code.
    add(cg, 10, FlowGraph::default(), Some(2));
    add(cg, 11, FlowGraph::default(), Some(3));
    replacements.sort_by_key(|(number, _)| *number);

    let arguments = cfg.arguments.clone().map(|list| {
        list.into_iter()
            .map(|mut formal| {
                if config.all_intents_inout || cg.symbols[formal.symbol].active {
                    formal.intent = Intent::InOut;
                }
                formal
            })
            .collect()
    });
    let template_name = cg.names.intern("reverse_subroutine_template");
    let list = ReplacementList {
        id: cfg.id,
        annotation: cfg.annotation,
        symbol: cfg.symbol,
        scope: cfg.scope,
        body_scope: cfg.body_scope,
        template_name,
        arguments,
        replacements: replacements.into_iter().map(|(_, r)| r).collect(),
    };
    Ok(Reversed { list, at_exit, direct: direct.into_iter().collect() })
}

/// A routine's replacement list, with what its reverse sweep reads where the forward sweep
/// left it.
struct Reversed {
    list: ReplacementList,
    /// Locals to push at the end of the forward sweep and pop where the reverse sweep begins.
    at_exit: Vec<SymbolId>,
    direct: FxHashSet<SymbolId>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sweep {
    Taping,
    Adjoint,
}

/// Locals the reverse sweep reads where the forward sweep left them: pushed in a block right
/// before the taping graph's Exit, popped back in a block right after the adjoint graph's Entry.
fn restore_at_exit(
    cg: &mut CallGraph,
    scope: ScopeId,
    locals: &[SymbolId],
    mut graph: FlowGraph,
    sweep: Sweep,
) -> FlowGraph {
    let call = |cg: &mut CallGraph, symbol: SymbolId| {
        let integer = cg.symbols[symbol].ty == SymbolType::Integer;
        let reference = crate::ir::build::whole_reference(cg, symbol, false);
        let (id, routine) = match (sweep, integer) {
            (Sweep::Taping, true) => ("inline_push_i", "push_i_s0"),
            (Sweep::Taping, false) => ("inline_push", "push_s0"),
            (Sweep::Adjoint, true) => ("inline_pop_i", "pop_i_s0"),
            (Sweep::Adjoint, false) => ("inline_pop", "pop_s0"),
        };
        crate::ir::build::inlinable_call(cg, id, routine, vec![ArgumentValue::Variable(reference)])
    };
    let statements: Vec<Statement> = match sweep {
        Sweep::Taping => locals.iter().map(|&s| call(cg, s)).collect(),
        Sweep::Adjoint => locals.iter().rev().map(|&s| call(cg, s)).collect(),
    };
    let id = cg.names.intern(if sweep == Sweep::Taping { "_tape_locals" } else { "_restore_locals" });
    let annotation = cg.names.intern("_bbp_");
    let vertex = CfgVertex { id, annotation, kind: CfgVertexKind::BasicBlock(BasicBlock { scope, statements }) };
    let edge = cg.names.intern_index(graph.edges.len() + 1);
    match sweep {
        Sweep::Taping => graph.insert_before_exit(vertex, edge),
        Sweep::Adjoint => graph.insert_after_entry(vertex, edge),
    };
    graph
}

/// The adjoint graph with a block right after Entry that zeroes the adjoint of every active
/// local (`-D`): they accumulate with `IncDeriv`/`Saxpy` and must start at zero.
fn zero_locals_first(cg: &mut CallGraph, cfg: &ControlFlowGraph, mut graph: FlowGraph) -> FlowGraph {
    let locals = cg.active_locals(cfg);
    let statements: Vec<Statement> = locals
        .into_iter()
        .map(|symbol| {
            let reference = crate::ir::build::whole_reference(cg, symbol, true);
            crate::ir::build::inlinable_call(
                cg,
                "inline_zeroderiv",
                "ZeroDeriv",
                vec![ArgumentValue::Variable(reference)],
            )
        })
        .collect();
    let id = cg.names.intern("_adj_init");
    let annotation = cg.names.intern("_bbp_");
    let edge_id = cg.names.intern_index(graph.edges.len() + 1);
    let kind = CfgVertexKind::BasicBlock(BasicBlock { scope: cfg.body_scope, statements });
    graph.insert_after_entry(CfgVertex { id, annotation, kind }, edge_id);
    graph
}

fn count_control(regions: &[reversal::Region]) -> usize {
    regions
        .iter()
        .map(|r| match r {
            reversal::Region::Block(_) => 0,
            reversal::Region::Loop { body, .. } => 1 + count_control(body),
            reversal::Region::Branch { arms, .. } => arms.iter().map(|(_, a)| 1 + count_control(a)).sum(),
        })
        .sum()
}

/// What the checkpoint placeholders store: the Read list (arguments), Mod and ReadLocal (time
/// steps), active Mod variables (results). A formal that every call passes a constant is left
/// out unless `-P`: there is no variable to restore into.
fn checkpoint_lists(
    cg: &CallGraph,
    cfg: &ControlFlowGraph,
    uses: Option<&Vec<FormalUse>>,
    config: &AdjointConfig,
) -> CheckpointLists {
    let formals: Vec<&ArgumentSymbolReference> = cfg.arguments.iter().flatten().collect();
    let keep = |reference: &&VariableReference| {
        let Some(base) = reference.base_symbol() else { return false };
        let Some(k) = formals.iter().position(|f| f.symbol == base) else { return true };
        config.checkpoint_constant_formals || uses.and_then(|u| u.get(k)).is_none_or(|u| u.variable_somewhere)
    };
    let list = |l: &Option<Vec<VariableReference>>| -> Vec<VariableReference> {
        l.iter().flatten().filter(keep).cloned().collect()
    };
    let effects = &cfg.side_effects;
    let arguments = list(&effects.read);
    let mut time_step = list(&effects.modified);
    time_step.extend(list(&effects.read_local));
    let results =
        list(&effects.modified).into_iter().filter(|r| r.base_symbol().is_some_and(|s| cg.symbols[s].active)).collect();
    let optional = present_operands(cg, &cfg.graph);
    CheckpointLists { arguments, time_step, results, optional, file_order: config.file_order_restore }
}

/// The variables the routine asks `present` of: its optional formals.
fn present_operands(cg: &CallGraph, graph: &FlowGraph) -> Vec<SymbolId> {
    let mut found = Vec::new();
    let mut scan = |e: &Expression| {
        for edge in &e.edges {
            if let (ExprVertex::Intrinsic(intrinsic), ExprVertex::Variable(operand)) =
                (&e.vertices[edge.target], &e.vertices[edge.source])
                && cg.name(intrinsic.name) == "present"
                && let Some(base) = operand.base_symbol()
                && !found.contains(&base)
            {
                found.push(base);
            }
        }
    };
    for (_, vertex) in graph.vertices.iter() {
        match &vertex.kind {
            CfgVertexKind::BasicBlock(block) => {
                for statement in &block.statements {
                    if let Statement::Assignment(a) = statement {
                        scan(&a.rhs);
                    }
                }
            }
            CfgVertexKind::If(c)
            | CfgVertexKind::Branch(c)
            | CfgVertexKind::PreLoop(c)
            | CfgVertexKind::PostLoop(c) => {
                c.condition.iter().for_each(&mut scan);
            }
            CfgVertexKind::ForLoop(f) => {
                f.condition.iter().for_each(&mut scan);
                f.initialization.iter().chain(&f.update).for_each(|a| scan(&a.rhs));
            }
            _ => {}
        }
    }
    found
}
