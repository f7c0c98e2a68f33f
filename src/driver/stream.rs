//! Routine by routine: reads, transforms and writes one routine at a time (the adjoint in
//! two or three passes, [`adjoint`]).
//!
//! The reader hands each routine over as soon as its element closes; the passes run on it, it
//! is written and its graphs are dropped, keeping only its head (symbol, arguments, side-effect
//! lists), which its callers' TypeChange needs. Memory stays near the input's size whatever
//! the number of routines. The document's head (scopes, symbol tables, maps) is written last,
//! in front of the routines, because the passes add temporaries to it.
//!
//! The output is byte for byte the whole-tree path's ([`crate::pipeline`], held to it over
//! the corpus by `tests/streaming.rs`). What the passes know of other routines comes from a
//! first scan of the document ([`Survey`]): every statement id (the engine's invented ids avoid
//! them) and which routines have a body. A routine waits for the routines it calls that come
//! later in the document, so TypeChange sees their formals. Where a result would depend on
//! more than that, a mode returns [`StreamError::WholeTree`] and the driver
//! ([`crate::driver`]) takes the whole-tree path; the reasons are listed there.

mod parallel;

use std::collections::VecDeque;
use std::io::Write;
use std::sync::mpsc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::ir::build::Temporaries;
use la_arena::ArenaMap;

use crate::analysis::effects::{Effects, Frame, RoutineSummary, aliases_have_ranges};
use crate::analysis::tbr::Recording;
use crate::ir::{
    CallGraph, CfgVertexKind, ControlFlowGraph, FlowGraph, Name, NameBatch, Routine, RoutineId, Statement, SymbolId,
};
use crate::passes::adjoint::RoutineByRoutine;
use crate::passes::elimination::PlanCache;
use crate::passes::init_derivatives::initialize_derivatives;
use crate::passes::tangent::{TangentConfig, tangent_with_plans};
use crate::passes::trace::trace_routine;
use crate::passes::type_change::{RoutinesBySymbol, TypeChangeReport, type_change_routine};
use crate::pipeline::{Config, PipelineError, Report};
use crate::xaif::Diagnostic;
use crate::xaif::intrinsics::Catalogue;
pub use crate::xaif::markup::Survey;
use crate::xaif::read::{
    ReadError, ReadOptions, ReadOutput, RoutineSink as ReadSink, read_streaming, read_streaming_for_summaries,
};
use crate::xaif::validate::Progress;
use crate::xaif::write::{WriteOptions, write_head, write_head_to, write_routine, write_tail};

/// A streamed run's results.
#[derive(Debug)]
pub struct Streamed {
    /// The document's head (scopes, symbol tables, maps) and each routine's head; the graphs
    /// went to the body. What goes before the routines is written from it
    /// ([`Streamed::write_head`]), not kept as text: after a transformation it is about as long
    /// as the input.
    pub call_graph: CallGraph,
    options: WriteOptions,
    /// The head went to the body, before the first routine (identity mode, where
    /// nothing a routine holds changes it): [`Streamed::write_head`] writes nothing.
    head_in_body: bool,
    /// What goes after them.
    pub tail: Vec<u8>,
    pub report: Report,
    /// The reader's warnings, as [`crate::xaif::read()`] gives them.
    pub warnings: Vec<Diagnostic>,
}

#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// The document needs the whole tree at once, for the reason given.
    #[error("not streamed: {0}")]
    WholeTree(&'static str),
    /// Validation, running at the same time, found an error: the caller reports its findings.
    #[error("stopped: validation found an error")]
    Invalid,
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// Writing the body failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The `identity` mode, routine by routine. Identity changes nothing in the head, which is
/// complete when the first routine is read: the head goes to `body` first, so `body` receives
/// the whole output but the tail ([`Streamed::tail`]).
pub fn identity(
    input: &[u8],
    file: &str,
    options: &ReadOptions,
    config: &Config,
    write: &WriteOptions,
    body: &mut dyn Write,
    concurrency: Concurrency,
) -> Result<Streamed, StreamError> {
    if !config.passive.is_empty() {
        return Err(StreamError::WholeTree(FORCED_PASSIVATION));
    }
    // Identity is not stopped by the checks running beside it (it takes no gate): the caller
    // keeps what it writes only once they have passed.
    let mut driver = Driver::new(None, config, Temporaries::default(), None, Output::new(body), None);
    driver.head_first = Some(HeadFirst { options: write.clone(), written: false });
    let read = read_into(&mut driver, input, file, options, concurrency.pipelined);
    driver.finish(read, write)
}

/// The tangent-linear mode, routine by routine: for each, derivative initialization (`-D`),
/// TypeChange and the tangent passes, as [`crate::pipeline::tangent`] runs them over all.
#[allow(clippy::too_many_arguments)]
pub fn tangent(
    input: &[u8],
    file: &str,
    options: &ReadOptions,
    catalogue: &Catalogue,
    config: &Config,
    write: &WriteOptions,
    body: &mut dyn Write,
    concurrency: Concurrency,
) -> Result<Streamed, StreamError> {
    surveyed(input, file, options, catalogue, config, write, body, concurrency, false)
}

/// The trace mode, routine by routine: for each, TypeChange and the tracing calls, as
/// [`crate::pipeline::trace`] runs them over all. A routine's callers need its head as a
/// control flow graph (TypeChange reads its formals), which it gets back once its replacement
/// list is written.
#[allow(clippy::too_many_arguments)]
pub fn trace(
    input: &[u8],
    file: &str,
    options: &ReadOptions,
    catalogue: &Catalogue,
    config: &Config,
    write: &WriteOptions,
    body: &mut dyn Write,
    concurrency: Concurrency,
) -> Result<Streamed, StreamError> {
    surveyed(input, file, options, catalogue, config, write, body, concurrency, true)
}

/// The tangent or (`trace`) the trace mode: both invent statement ids, which must avoid every id
/// of the document, so both survey it before the first routine.
#[allow(clippy::too_many_arguments)]
fn surveyed(
    input: &[u8],
    file: &str,
    options: &ReadOptions,
    catalogue: &Catalogue,
    config: &Config,
    write: &WriteOptions,
    body: &mut dyn Write,
    concurrency: Concurrency,
    trace: bool,
) -> Result<Streamed, StreamError> {
    refuse_whole_tree_switches(config)?;
    let survey = survey(input, concurrency.gate)?;
    let temporaries = Temporaries::with_reserved_statement_ids(survey.statement_ids);
    let mut driver =
        Driver::new(Some(catalogue), config, temporaries, Some(survey.bodies), Output::new(body), concurrency.gate);
    driver.trace = trace;
    let read = read_into(&mut driver, input, file, options, concurrency.pipelined);
    driver.finish(read, write)
}

/// The adjoint mode, routine by routine, in two passes over the document (or three, below).
/// Reversing a routine needs facts about the whole program: which of its formals and globals
/// its callers may overwrite before its adjoint runs (the to-be-recorded contexts), what every callee may
/// overwrite (kills), whether some caller passes each formal a variable (checkpoints). The
/// first pass runs TypeChange on each routine, keeps a [`RoutineSummary`] (its graph's shape,
/// writes and calls: a few bytes per statement) and drops it; the facts follow from the
/// summaries, and name only the document's own symbols (a temporary is a local of one
/// routine). The second pass reads the document again, runs TypeChange and the tangent passes
/// on each routine, reverses it with those facts and writes its replacement list. The output
/// is the whole-tree path's, byte for byte (`tests/streaming.rs`).
///
/// Which locals a caller restores for its callees' reverse sweeps is known only once they are
/// reversed: where a routine calls one later in the document (or itself), a pass in between
/// reverses every routine and keeps only which formals its reverse sweep reads where they
/// stand, so three passes in all. A failing transformation needs the whole document (its
/// report names the statement the whole-tree path names).
#[allow(clippy::too_many_arguments)]
pub fn adjoint(
    input: &[u8],
    file: &str,
    options: &ReadOptions,
    catalogue: &Catalogue,
    config: &Config,
    write: &WriteOptions,
    body: &mut dyn Write,
    concurrency: Concurrency,
) -> Result<Streamed, StreamError> {
    refuse_whole_tree_switches(config)?;
    let tangent = crate::pipeline::adjoint_tangent_config(config);
    let adjoint = crate::pipeline::adjoint_config(config);
    // Which routines have a body (TypeChange needs every callee's formals); the adjoint's
    // statement ids avoid only each other, as on the whole-tree path.
    let bodies = survey(input, concurrency.gate)?.bodies;
    let read_pass = |driver: &mut Driver| -> Result<Streamed, StreamError> {
        driver.bodies = Some(bodies.clone());
        let read = read_into(driver, input, file, options, concurrency.pipelined);
        driver.finish(read, write)
    };

    // First pass: summaries.
    let mut sink = std::io::sink();
    let mut first =
        Driver::new(Some(catalogue), config, Temporaries::default(), None, Output::new(&mut sink), concurrency.gate);
    first.adjoint =
        Some(AdjointPass::Summarize { summaries: ArenaMap::default(), frames: ArenaMap::default(), alias_keys: None });
    let summarized = read_pass(&mut first).map_err(whole_tree_on_failure)?;
    // An index a callee may overwrite is saved in a `<prefix>Symbol_N` temporary by TypeChange,
    // in the series the adjoint names its own temporaries in. The whole-tree path runs
    // TypeChange over every routine first, a later pass here routine by routine between the
    // reversals of the routines before, so the two would number them differently (found by
    // the mutation test, `fuzz::Target::Streamed`).
    if summarized.report.type_change.saved_indices > 0 {
        return Err(StreamError::WholeTree(SAVED_INDICES));
    }
    let Some(AdjointPass::Summarize { summaries, frames, .. }) = first.adjoint.take() else {
        return Err(StreamError::WholeTree("the first pass summarized nothing"));
    };
    let cg = &summarized.call_graph;
    let routines: FxHashMap<SymbolId, RoutineId> = cg.cfgs().map(|(id, cfg)| (cfg.symbol, id)).collect();
    let calls_later = summaries.iter().any(|(caller, summary)| {
        summary.calls.iter().filter_map(|c| routines.get(&c.symbol?)).any(|&callee| callee >= caller)
    });
    // Symbols the first pass made (TypeChange's temporaries) are locals of one routine each,
    // numbered otherwise in the second pass (which makes the tangent's and the adjoint's in
    // between): the facts carried over must name only the document's own.
    let head_symbols = first.head_symbols;
    let effects = Effects::from_summaries(cg, &summaries, frames);
    let contexts = crate::analysis::tbr::contexts(cg, &effects, &summaries);
    let own = |s: SymbolId| (s.into_raw().into_u32() as usize) < head_symbols;
    let killed = effects.kills.values().flat_map(|k| k.globals.iter().copied());
    let partners = effects.partners.iter().flat_map(|(s, others)| std::iter::once(*s).chain(others.iter().copied()));
    let outside = contexts.values().flat_map(|(outside, _)| outside.symbols.iter());
    if !(killed.chain(partners).chain(outside)).all(own) {
        return Err(StreamError::WholeTree("a fact names a symbol made by a pass"));
    }
    let formal_uses = summarized.report.type_change.formal_uses;
    drop(summaries);

    // The passes after the first transform on workers (validation is over by then, so they
    // have the cores to themselves but for the reader); reports that print each sequence's
    // graph spell the names a worker only has placeholders for.
    let workers = if tangent.record_graphs { 0 } else { concurrency.workers };
    let per_worker = parallel::adjoint_routines_per_worker(workers, bodies.len());

    // Where a routine calls itself or one after it, a pass in between reverses every routine
    // and keeps only which formals its reverse sweep reads where they stand, which its
    // callers' restores depend on.
    let directs = if calls_later {
        let mut sink = std::io::sink();
        let mut between = Driver::new(
            Some(catalogue),
            config,
            Temporaries::default(),
            None,
            Output::new(&mut sink),
            concurrency.gate,
        );
        (between.workers, between.routines_per_worker) = (workers, per_worker);
        let recording = Recording::from_contexts(effects.clone(), contexts.clone());
        between.adjoint = Some(AdjointPass::Directs {
            tangent: tangent.clone(),
            reverser: RoutineByRoutine::new(recording, &formal_uses, &adjoint).collecting_directs(),
        });
        let found = read_pass(&mut between).map_err(whole_tree_on_failure)?;
        let Some(AdjointPass::Directs { reverser: collected, .. }) = between.adjoint.take() else {
            return Err(StreamError::WholeTree("the pass in between reversed nothing"));
        };
        collected.directs(&found.call_graph)
    } else {
        ArenaMap::default()
    };
    let reverser = RoutineByRoutine::new(Recording::from_contexts(effects, contexts), &formal_uses, &adjoint)
        .with_directs(directs);

    // Last pass: reversal.
    let mut second =
        Driver::new(Some(catalogue), config, Temporaries::default(), None, Output::new(body), concurrency.gate);
    (second.workers, second.routines_per_worker) = (workers, per_worker);
    second.adjoint = Some(AdjointPass::Reverse { tangent, reverser });
    let mut streamed = read_pass(&mut second).map_err(whole_tree_on_failure)?;
    if let Some(AdjointPass::Reverse { reverser, .. }) = second.adjoint.take() {
        streamed.report.adjoint = reverser.stats;
    }
    Ok(streamed)
}

/// Why the streamed adjoint leaves a document whose calls need saved indices to the
/// whole-tree path ([`adjoint`]).
pub const SAVED_INDICES: &str = "TypeChange saves indices, numbered before every routine's adjoint temporaries";

/// Why forced passivation needs the whole tree.
const FORCED_PASSIVATION: &str = "forced passivation (-p) changes every routine";

/// The switches whose effect spans routines, which no streamed mode takes.
fn refuse_whole_tree_switches(config: &Config) -> Result<(), StreamError> {
    if !config.passive.is_empty() {
        return Err(StreamError::WholeTree(FORCED_PASSIVATION));
    }
    if config.activity_analysis {
        return Err(StreamError::WholeTree("activity analysis (--activity-analysis) is interprocedural"));
    }
    if config.type_change.rename_all {
        return Err(StreamError::WholeTree("-r renames every routine before any call is converted"));
    }
    Ok(())
}

/// A failing transformation is reported as the whole-tree path reports it (its report names
/// the statement at fault in the input's numbering).
fn whole_tree_on_failure(error: StreamError) -> StreamError {
    match error {
        StreamError::Pipeline(_) => StreamError::WholeTree("a transformation failed"),
        other => other,
    }
}

/// The streamed adjoint's state in each of its passes ([`adjoint`]).
enum AdjointPass<'c> {
    /// Each routine summarized after TypeChange, nothing written.
    Summarize {
        summaries: ArenaMap<RoutineId, RoutineSummary>,
        frames: ArenaMap<RoutineId, Frame>,
        /// Whether the alias map has ranges, once the head is read.
        alias_keys: Option<bool>,
    },
    /// Each routine reversed and written.
    Reverse { tangent: TangentConfig, reverser: RoutineByRoutine<'c> },
    /// Each routine reversed for what its reverse sweep reads where it stands, nothing
    /// written.
    Directs { tangent: TangentConfig, reverser: RoutineByRoutine<'c> },
}

/// What runs beside the routine-by-routine driver. The output is the same whatever is chosen.
#[derive(Clone, Copy, Debug, Default)]
pub struct Concurrency<'p> {
    /// Validation running at the same time. Routines are transformed and written before it
    /// has passed them (the caller must not keep the output before its verdict); a run stops
    /// once it has found an error, and finishes only once it has passed everything.
    pub gate: Option<&'p Progress>,
    /// Read on a second thread while this one transforms and writes (`read_pipelined`).
    pub pipelined: bool,
    /// The adjoint's passes after the first: transform routines on this many workers at once
    /// (`stream::parallel`), this thread putting them back in order, finishing their reversal,
    /// writing them and then transforming beside the workers; 0 transforms on this thread
    /// alone.
    pub workers: usize,
}

/// Reads the document, handing each routine to `driver` as it is read.
fn read_into(
    driver: &mut Driver,
    input: &[u8],
    file: &str,
    options: &ReadOptions,
    pipelined: bool,
) -> Result<ReadOutput, ReadError> {
    if pipelined {
        return read_pipelined(driver, input, file, options);
    }
    let summaries = driver.summarizes();
    let mut sink = |cg: &mut CallGraph, routine: RoutineId, end: usize| driver.arrive(cg, routine, end);
    read_routines(summaries, input, file, options, &mut sink)
}

/// Reads the document for a pass: the adjoint's first, which only summarizes each routine,
/// without what its summaries do not need ([`read_streaming_for_summaries`]).
fn read_routines(
    summaries: bool,
    input: &[u8],
    file: &str,
    options: &ReadOptions,
    sink: &mut ReadSink,
) -> Result<ReadOutput, ReadError> {
    if summaries {
        read_streaming_for_summaries(input, file, options, sink)
    } else {
        read_streaming(input, file, options, sink)
    }
}

/// What the reading thread hands the transforming one.
enum Handed {
    /// The call graph as read when the first routine was: the document's head, every name
    /// interned so far and that routine's head.
    Head(CallGraph),
    /// A routine, its names as the reader's table numbers them, the names that table took in
    /// since the last routine was handed over, and where the routine's element ends.
    Routine { id: RoutineId, routine: Routine, names: NameBatch, end: usize },
}

/// Reads on a second thread while this one transforms and writes: reading (a third of the
/// tangent's work on large inputs) overlaps transforming and writing the routines before.
///
/// Each thread has its own call graph. The head (scopes, symbols, maps) is complete before the
/// first routine, and the reader adds nothing to it after that but names and routines, so the
/// transforming side starts from a copy of the reader's call graph at the first routine and
/// then takes each routine with the names the reader interned for it, in the reader's order.
/// Its table then interns the same names in the same order as one table does when a single
/// thread reads and transforms, temporaries in between, so every name gets the same id as in a
/// sequential run and the output is the same byte for byte; the routines' names are renumbered
/// into it ([`Routine::rename`]). Symbols, scopes and map entries keep their ids: both sides
/// have the same head.
///
/// The reader runs a few routines ahead (a bounded channel). When the driver fails it drops
/// its end of the channel, so the reader's next hand-over fails and reading stops, as it does
/// when a sequential driver says stop.
fn read_pipelined(
    driver: &mut Driver,
    input: &[u8],
    file: &str,
    options: &ReadOptions,
) -> Result<ReadOutput, ReadError> {
    // With workers, the reader reads the next routines while they transform the ones before.
    let per_worker = driver.routines_per_worker;
    let ahead = if driver.workers > 0 { parallel::Workers::window(driver.workers, per_worker) } else { 4 };
    let (sender, receiver) = mpsc::sync_channel::<Handed>(ahead);
    let summaries = driver.summarizes();
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || {
            // Names of the reader's table already handed over.
            let mut handed_names: Option<usize> = None;
            let mut sink = |cg: &mut CallGraph, id: RoutineId, end: usize| -> bool {
                let graphs = take_graphs(&mut cg.routines[id]);
                let mut routine = cg.routines[id].clone();
                put_graphs(&mut routine, graphs);
                let first = match handed_names {
                    Some(first) => first,
                    None => {
                        if sender.send(Handed::Head(cg.clone())).is_err() {
                            return false;
                        }
                        cg.names.len()
                    }
                };
                let names = cg.names.batch_since(first);
                handed_names = Some(cg.names.len());
                sender.send(Handed::Routine { id, routine, names, end }).is_ok()
            };
            let read = read_routines(summaries, input, file, options, &mut sink);
            (read, handed_names)
        });
        let mut call_graph: Option<CallGraph> = None;
        while let Ok(handed) = receiver.recv() {
            match handed {
                Handed::Head(mut head) => {
                    driver.reader.head = head.names.len();
                    driver.make_room(&mut head);
                    if driver.workers > 0 {
                        driver.parallel = Some(parallel::Workers::new(driver.workers, &head, per_worker));
                    }
                    call_graph = Some(head);
                }
                Handed::Routine { id, mut routine, names, end } => {
                    let Some(cg) = call_graph.as_mut() else { break };
                    if let Some(workers) = driver.parallel.as_mut() {
                        // It stays in the reader's numbering until a worker has transformed it.
                        let graphs = take_graphs(&mut routine);
                        workers.arrived(routine.clone(), names);
                        put_graphs(&mut routine, graphs);
                    } else {
                        cg.names.intern_batch(&names, &mut driver.reader.renamed);
                        let reader = &driver.reader;
                        routine.rename(&mut |name| reader.driver_name(name));
                    }
                    // The first routine's head came with the head; the others are new here,
                    // in the reader's order, so they get the reader's ids.
                    if (id.into_raw().into_u32() as usize) < cg.routines.len() {
                        cg.routines[id] = routine;
                    } else {
                        let allocated = cg.routines.alloc(routine);
                        debug_assert_eq!(allocated, id, "routines are handed over in the reader's order");
                    }
                    if !driver.arrive(cg, id, end) {
                        break;
                    }
                }
            }
        }
        // Unblocks the reader if it waits to hand over more.
        drop(receiver);
        let (read, handed_names) = match reader.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        let mut read = read?;
        if let (Some(cg), Some(first)) = (call_graph, handed_names) {
            // What the reader took in after the last routine: the call graph's edges, renamed
            // once every routine is in (`Driver::finish`).
            let names = read.call_graph.names.batch_since(first);
            let edges = std::mem::take(&mut read.call_graph.call_edges);
            driver.edges = Some((names, edges));
            read.call_graph = cg;
        }
        Ok(read)
    })
}

/// The reader's names as the transforming side's table numbers them.
#[derive(Default)]
struct ReaderNames {
    /// The names of the call graph handed over with the first routine: the same in both.
    head: usize,
    /// The reader's later names, in its order from `head` on, as interned on this side.
    renamed: Vec<Name>,
}

impl ReaderNames {
    fn driver_name(&self, name: Name) -> Name {
        match name.index().checked_sub(self.head) {
            Some(i) => self.renamed[i],
            None => name,
        }
    }
}

impl Streamed {
    /// The whole output, given what went to the body.
    pub fn bytes(&self, body: &[u8]) -> Vec<u8> {
        let mut bytes = Vec::new();
        if !self.head_in_body {
            write_head(&self.call_graph, &self.options, &mut bytes);
        }
        bytes.reserve_exact(body.len() + self.tail.len());
        bytes.extend_from_slice(body);
        bytes.extend_from_slice(&self.tail);
        bytes
    }

    /// Writes what goes before the routines, unless the body has it already.
    pub fn write_head(&self, sink: &mut dyn Write) -> std::io::Result<()> {
        if self.head_in_body {
            return Ok(());
        }
        write_head_to(&self.call_graph, &self.options, sink)
    }
}

/// Where the driver's routines go, one after the other: each routine's text is put together
/// in a buffer and written at once.
struct Output<'b> {
    body: &'b mut dyn Write,
    buffer: Vec<u8>,
}

impl<'b> Output<'b> {
    fn new(body: &'b mut dyn Write) -> Output<'b> {
        Output { body, buffer: Vec::new() }
    }

    /// Writes `routine` and frees its graphs; its head stays in `cg`.
    fn write_routine(&mut self, cg: &mut CallGraph, routine: RoutineId) -> Result<(), StreamError> {
        self.buffer.clear();
        write_routine(cg, routine, &mut self.buffer);
        self.body.write_all(&self.buffer)?;
        cg.routines[routine].drop_graphs();
        Ok(())
    }

    /// Writes what goes before the routines (identity).
    fn write_head(&mut self, cg: &CallGraph, options: &WriteOptions) -> std::io::Result<()> {
        write_head_to(cg, options, self.body)
    }
}

/// A mode whose head goes to the body before the first routine (identity).
struct HeadFirst {
    options: WriteOptions,
    written: bool,
}

/// Routines in, routines out. Without a catalogue it is the identity mode.
struct Driver<'c> {
    /// The tangent mode's catalogue.
    catalogue: Option<&'c Catalogue>,
    config: &'c Config,
    temporaries: Temporaries,
    /// `(symbol name, scope vertex id)` of every routine with a body in the document, when
    /// TypeChange needs every callee's formals.
    bodies: Option<FxHashSet<(Box<str>, Box<str>)>>,
    /// The same, of the routines read so far.
    read: FxHashSet<(Box<str>, Box<str>)>,
    /// The formal argument count of each routine read so far (for calls without
    /// `formalArgCount`, as the reader infers them for a whole document).
    formal_counts: FxHashMap<SymbolId, u32>,
    /// The routines read so far by their symbols, for TypeChange to find a routine's callees.
    routines_by_symbol: RoutinesBySymbol,
    /// Routines read but not transformed yet, in document order, their graphs set aside so
    /// that the passes, which walk every routine, see only the one being transformed.
    waiting: VecDeque<(RoutineId, Vec<FlowGraph>)>,
    /// Where written routines go, one after the other.
    output: Output<'c>,
    /// Elimination plans by graph shape, across routines.
    plans: PlanCache,
    report: Report,
    failure: Option<StreamError>,
    /// Validation running at the same time: the run stops once it has found an error, and
    /// finishes only once it has passed everything.
    gate: Option<&'c Progress>,
    /// Pipelined: the reader's names as this side numbers them.
    reader: ReaderNames,
    /// Pipelined: the call graph's edges and the names read with them, put in at the end.
    edges: Option<(NameBatch, Vec<crate::ir::CallGraphEdge>)>,
    /// How many workers transform routines ([`Concurrency::workers`]), and they, once the
    /// head is read.
    workers: usize,
    /// How many routines each worker takes at a time.
    routines_per_worker: usize,
    parallel: Option<parallel::Workers>,
    /// The adjoint's pass, in adjoint mode.
    adjoint: Option<AdjointPass<'c>>,
    /// The adjoint's interprocedural facts, copied once for the workers to copy.
    adjoint_facts: Option<Recording>,
    /// The symbols of the document's head (those before any pass made one).
    head_symbols: usize,
    /// Identity: the head is written to `body` first.
    head_first: Option<HeadFirst>,
    /// Trace mode.
    trace: bool,
    /// The symbols of the routines read so far (trace mode: calls of the others are external).
    routine_symbols: FxHashSet<SymbolId>,
}

impl<'c> Driver<'c> {
    fn new(
        catalogue: Option<&'c Catalogue>,
        config: &'c Config,
        temporaries: Temporaries,
        bodies: Option<FxHashSet<(Box<str>, Box<str>)>>,
        output: Output<'c>,
        gate: Option<&'c Progress>,
    ) -> Driver<'c> {
        Driver {
            catalogue,
            config,
            temporaries,
            bodies,
            read: FxHashSet::default(),
            formal_counts: FxHashMap::default(),
            routines_by_symbol: RoutinesBySymbol::default(),
            waiting: VecDeque::new(),
            output,
            plans: PlanCache::default(),
            report: Report::default(),
            failure: None,
            gate,
            reader: ReaderNames::default(),
            edges: None,
            workers: 0,
            routines_per_worker: parallel::ROUTINES_PER_WORKER,
            parallel: None,
            adjoint: None,
            adjoint_facts: None,
            head_symbols: 0,
            head_first: None,
            trace: false,
            routine_symbols: FxHashSet::default(),
        }
    }

    /// Transforms what still waits and puts the output together.
    fn finish(&mut self, read: Result<ReadOutput, ReadError>, write: &WriteOptions) -> Result<Streamed, StreamError> {
        if let Some(failure) = self.failure.take() {
            return Err(failure);
        }
        let mut read = read?;
        // A document without routines: its head is complete now.
        if let Err(error) = self.write_head_first(&read.call_graph) {
            return Err(error.into());
        }
        // Routines left waiting for their callees have all passed already; what follows the
        // last one (call graph edges) must pass too before the output is put together.
        if let Some(gate) = self.gate
            && !gate.wait_for(usize::MAX)
        {
            return Err(StreamError::Invalid);
        }
        self.flush(&mut read.call_graph, true);
        if let Some(failure) = self.failure.take() {
            return Err(failure);
        }
        if let Some((names, mut edges)) = self.edges.take() {
            let cg = &mut read.call_graph;
            if let Some(workers) = self.parallel.as_mut() {
                workers.intern_remaining(cg, &mut self.reader);
            }
            cg.names.intern_batch(&names, &mut self.reader.renamed);
            for edge in &mut edges {
                edge.rename(&mut |name| self.reader.driver_name(name));
            }
            cg.call_edges = edges;
        }
        let mut tail = Vec::new();
        write_tail(&read.call_graph, &mut tail);
        Ok(Streamed {
            call_graph: read.call_graph,
            options: write.clone(),
            head_in_body: self.head_first.is_some(),
            tail,
            report: std::mem::take(&mut self.report),
            warnings: read.warnings,
        })
    }

    /// In the tangent, room in the head's copy for the names the routines bring and the
    /// temporaries the passes add, at once ([`CallGraph::reserve`]), per byte of input a bit
    /// more than synthetic inputs take (16 MiB: a name per 150 bytes, 0.095 bytes of names per
    /// byte, a symbol per 275 bytes), and for each sequence's statistics (one per 3,500
    /// bytes). Beyond that the lists grow as before; room not used is not touched. Not the
    /// adjoint's passes (their lists' growth was not measured, and at 2 MiB this room was a
    /// fifth of their heap peak), nor identity, which adds nothing.
    fn make_room(&mut self, head: &mut CallGraph) {
        if self.catalogue.is_some() && self.adjoint.is_none() {
            let input = head.size_hint;
            head.reserve(input / 128, input / 8, input / 256);
            self.report.tangent.sequences.reserve(input / 3072);
        }
    }

    /// Whether this is the adjoint's first pass, which only summarizes each routine.
    fn summarizes(&self) -> bool {
        matches!(self.adjoint, Some(AdjointPass::Summarize { .. }))
    }

    fn arrive(&mut self, cg: &mut CallGraph, routine: RoutineId, end: usize) -> bool {
        // The checks' verdict is waited for only at the end (`finish`): until then a routine is
        // transformed and written whether they have passed it or not, as the passes keep their
        // contract on any input the reader takes (`fuzz::Target::Streamed`), and nothing is
        // kept before the verdict. Waiting for it here held the first routine back until the
        // checks had the whole layout and the head behind them, a core idle meanwhile (16 MiB
        // tangent, release builds, 31 alternating rounds: median 191.4 against 183.3 ms).
        // Once they have found an error, the run stops.
        if let Some(gate) = self.gate
            && gate.checked_for(end) == Some(false)
        {
            self.failure = Some(StreamError::Invalid);
            return false;
        }
        if self.head_symbols == 0 {
            self.head_symbols = cg.symbols.len();
        }
        if let Err(error) = self.write_head_first(cg) {
            self.failure = Some(error.into());
            return false;
        }
        if let Routine::ControlFlowGraph(cfg) = &cg.routines[routine] {
            self.routine_symbols.insert(cfg.symbol);
            self.read.insert(symbol_key(cg, cfg.symbol));
            if let Some(arguments) = &cfg.arguments {
                self.formal_counts.insert(cfg.symbol, arguments.len() as u32);
            }
        }
        let parked = take_graphs(&mut cg.routines[routine]);
        self.waiting.push_back((routine, parked));
        self.flush(cg, false);
        self.failure.is_none()
    }

    /// Writes the head to the body in a head-first mode, once.
    fn write_head_first(&mut self, cg: &CallGraph) -> std::io::Result<()> {
        match &mut self.head_first {
            Some(head) if !head.written => {
                head.written = true;
                self.output.write_head(cg, &head.options)
            }
            _ => Ok(()),
        }
    }

    /// Transforms and writes the waiting routines in document order, as far as they are
    /// ready (all of them at the end of the document).
    fn flush(&mut self, cg: &mut CallGraph, end: bool) {
        while let Some((_, parked)) = self.waiting.front() {
            if !end && !self.callees_read(cg, parked) {
                return;
            }
            let Some((routine, mut parked)) = self.waiting.pop_front() else { return };
            self.infer_formal_arg_counts(&mut parked);
            if let Some(workers) = self.parallel.as_mut() {
                let mut whole = cg.routines[routine].clone();
                put_graphs(&mut whole, parked);
                if workers.queue(routine, whole) {
                    self.transform_queued(cg, false);
                    if self.failure.is_some() {
                        return;
                    }
                }
                continue;
            }
            put_graphs(&mut cg.routines[routine], parked);
            let head = match self.transform(cg, routine) {
                Ok(head) => head,
                Err(error) => {
                    self.failure = Some(error);
                    return;
                }
            };
            let writes = !matches!(self.adjoint, Some(AdjointPass::Summarize { .. } | AdjointPass::Directs { .. }));
            if !writes {
                cg.routines[routine].drop_graphs();
            } else if let Err(error) = self.output.write_routine(cg, routine) {
                self.failure = Some(error);
                return;
            }
            if let Some(head) = head {
                cg.routines[routine] = head;
            }
        }
        if end {
            self.transform_queued(cg, true);
        }
    }

    /// Parallel: transforms the routines queued for the workers while the ones transformed
    /// before are put back and written in document order (at the `last`, those too). In the
    /// adjoint, each routine's reversal is finished as it is put back, before it is written.
    fn transform_queued(&mut self, cg: &mut CallGraph, last: bool) {
        let (Some(workers), Some(catalogue)) = (self.parallel.as_mut(), self.catalogue) else { return };
        // The pass in between reverses only for what the reversal finds, and writes nothing.
        let writes = !matches!(self.adjoint, Some(AdjointPass::Directs { .. }));
        // Only the adjoint's passes after the first have workers.
        let Some(AdjointPass::Reverse { tangent, reverser } | AdjointPass::Directs { tangent, reverser }) =
            self.adjoint.as_mut()
        else {
            return;
        };
        let facts = self.adjoint_facts.get_or_insert_with(|| reverser.recording_copy());
        let mode = parallel::Adjoint { facts, tangent, formal_uses: reverser.formal_uses(), config: reverser.config() };
        let output = &mut self.output;
        let mut write = |cg: &mut CallGraph, routine: RoutineId, finished: parallel::Finished| {
            reverser.stats.absorb(&finished.stats);
            if let Some(reversed) = finished.reversed {
                reverser.finish(cg, routine, reversed);
            }
            if writes {
                output.write_routine(cg, routine)?;
            }
            cg.routines[routine].drop_graphs();
            if let Some(head) = finished.head {
                cg.routines[routine] = head;
            }
            Ok(())
        };
        let mut out = parallel::PutBack {
            cg,
            temporaries: &mut self.temporaries,
            reader: &mut self.reader,
            report: &mut self.report,
            write: &mut write,
        };
        if let Err(failure) = workers.advance(catalogue, self.config, mode, &mut out, last) {
            self.failure = Some(failure);
        }
    }

    /// Whether every routine this one calls that has a body has been read (in identity mode,
    /// of the calls whose argument count is inferred).
    fn callees_read(&self, cg: &CallGraph, graphs: &[FlowGraph]) -> bool {
        graphs.iter().flat_map(|graph| graph.vertices.iter()).all(|(_, vertex)| {
            let CfgVertexKind::BasicBlock(block) = &vertex.kind else { return true };
            block.statements.iter().all(|statement| {
                let Statement::SubroutineCall(call) = statement else { return true };
                let Some(symbol) = call.symbol else { return true };
                if self.bodies.is_none() && call.formal_arg_count != u32::MAX {
                    return true;
                }
                let key = symbol_key(cg, symbol);
                self.read.contains(&key) || self.bodies.as_ref().is_some_and(|bodies| !bodies.contains(&key))
            })
        })
    }

    /// The reader's inference for calls without `formalArgCount`: the callee's formals where
    /// its body is known, else the highest argument position.
    fn infer_formal_arg_counts(&self, graphs: &mut [FlowGraph]) {
        for (_, vertex) in graphs.iter_mut().flat_map(|graph| graph.vertices.iter_mut()) {
            let CfgVertexKind::BasicBlock(block) = &mut vertex.kind else { continue };
            for statement in &mut block.statements {
                let Statement::SubroutineCall(call) = statement else { continue };
                if call.formal_arg_count != u32::MAX {
                    continue;
                }
                let from_callee = call.symbol.and_then(|s| self.formal_counts.get(&s).copied());
                let from_positions = call.arguments.iter().map(|a| a.position).max().unwrap_or(0);
                call.formal_arg_count = from_callee.unwrap_or(from_positions);
            }
        }
    }

    /// Runs the mode's passes on `routine`; in adjoint mode, gives the head its callers'
    /// passes need once it is written (a control flow graph's, as before its reversal).
    fn transform(&mut self, cg: &mut CallGraph, routine: RoutineId) -> Result<Option<Routine>, StreamError> {
        let Some(catalogue) = self.catalogue else { return Ok(None) };
        let (temporaries, plans, report) = (&mut self.temporaries, &mut self.plans, &mut self.report);
        if self.trace {
            let size_hint = cg.size_hint;
            let by_symbol = &mut self.routines_by_symbol;
            let head = adjoint_head(cg, temporaries, by_symbol, self.config, routine, report)?;
            let traced = trace_routine(cg, routine, catalogue, temporaries, &self.routine_symbols);
            report.trace.absorb(&traced);
            cg.size_hint = size_hint;
            return Ok(head);
        }
        let Some(pass) = self.adjoint.as_mut() else {
            let by_symbol = &mut self.routines_by_symbol;
            transform_routine(cg, routine, catalogue, self.config, temporaries, by_symbol, plans, report)?;
            return Ok(None);
        };
        let size_hint = cg.size_hint;
        let by_symbol = &mut self.routines_by_symbol;
        let Some(head) = adjoint_head(cg, temporaries, by_symbol, self.config, routine, report)? else {
            return Ok(None);
        };
        let Routine::ControlFlowGraph(cfg) = &cg.routines[routine] else { return Ok(None) };
        match pass {
            AdjointPass::Summarize { summaries, frames, alias_keys } => {
                // The tangent passes add derivative code and temporaries (locals no call
                // sees), but no write of a variable that outlives the routine or is passed to a
                // call, and no call or control flow: the summary of the code after TypeChange
                // is as good.
                let alias_keys = *alias_keys.get_or_insert_with(|| aliases_have_ranges(cg));
                summaries.insert(routine, RoutineSummary::of(cfg, alias_keys));
                frames.insert(routine, Frame::of(cg, cfg));
            }
            AdjointPass::Reverse { tangent, reverser } | AdjointPass::Directs { tangent, reverser } => {
                let original = adjoint_tangent(cg, catalogue, temporaries, plans, tangent, routine, report)?;
                reverser.reverse(cg, temporaries, routine, original).map_err(PipelineError::from)?;
            }
        }
        cg.size_hint = size_hint;
        Ok(Some(head))
    }
}

/// The adjoint's first step on a routine in every pass: TypeChange (what it did goes into
/// `report`); then, for a control flow graph, the head its callers' passes need once it is
/// written (as before its reversal, without its graph).
fn adjoint_head(
    cg: &mut CallGraph,
    temporaries: &mut Temporaries,
    by_symbol: &mut RoutinesBySymbol,
    config: &Config,
    routine: RoutineId,
    report: &mut Report,
) -> Result<Option<Routine>, PipelineError> {
    let type_change = type_change_routine(cg, routine, temporaries, &config.type_change, by_symbol)?;
    merge_type_change(&mut report.type_change, type_change);
    let Routine::ControlFlowGraph(cfg) = &cg.routines[routine] else { return Ok(None) };
    Ok(Some(Routine::ControlFlowGraph(ControlFlowGraph { graph: FlowGraph::default(), ..cfg.clone() })))
}

/// The adjoint's tangent step on a control flow graph whose head [`adjoint_head`] gave: the
/// tangent passes; gives its graph as it was before them (placeholder 1 of its replacement
/// list).
fn adjoint_tangent(
    cg: &mut CallGraph,
    catalogue: &Catalogue,
    temporaries: &mut Temporaries,
    plans: &mut PlanCache,
    tangent: &TangentConfig,
    routine: RoutineId,
    report: &mut Report,
) -> Result<FlowGraph, PipelineError> {
    let original = match &cg.routines[routine] {
        Routine::ControlFlowGraph(cfg) => cfg.graph.clone(),
        Routine::ReplacementList(_) => FlowGraph::default(),
    };
    let done = tangent_with_plans(cg, catalogue, temporaries, tangent, plans)?;
    report.tangent.sequences.extend(done.sequences);
    Ok(original)
}

/// The tangent mode's passes over `routine`, the one routine of `cg` that has its graphs, as
/// [`crate::pipeline::tangent`] runs them over all; what they did goes into `report`. The
/// passes skip the other routines' heads without work (they hold every routine read so far).
#[allow(clippy::too_many_arguments)]
fn transform_routine(
    cg: &mut CallGraph,
    routine: RoutineId,
    catalogue: &Catalogue,
    config: &Config,
    temporaries: &mut Temporaries,
    by_symbol: &mut RoutinesBySymbol,
    plans: &mut PlanCache,
    report: &mut Report,
) -> Result<(), PipelineError> {
    if config.initialize_derivatives {
        report.initialized_derivatives += initialize_derivatives(cg);
    }
    // The passes grow the size hint for a whole document's output; one routine at a time it
    // would grow without bound.
    let size_hint = cg.size_hint;
    let type_change = type_change_routine(cg, routine, temporaries, &config.type_change, by_symbol)?;
    merge_type_change(&mut report.type_change, type_change);
    let tangent = tangent_with_plans(cg, catalogue, temporaries, &config.tangent, plans)?;
    report.tangent.sequences.extend(tangent.sequences);
    cg.size_hint = size_hint;
    Ok(())
}

/// Adds one routine's TypeChange figures to the run's.
fn merge_type_change(into: &mut TypeChangeReport, from: TypeChangeReport) {
    into.conversions += from.conversions;
    into.external_conversions += from.external_conversions;
    into.saved_indices += from.saved_indices;
    into.allocations += from.allocations;
    into.wrapped_calls += from.wrapped_calls;
    into.renamed_routines += from.renamed_routines;
    for (id, uses) in from.formal_uses.iter() {
        let merged = into.formal_uses.entry(id).or_insert_with(|| vec![Default::default(); uses.len()]);
        for (into, from) in merged.iter_mut().zip(uses) {
            into.constant_somewhere |= from.constant_somewhere;
            into.variable_somewhere |= from.variable_somewhere;
        }
    }
}

/// Sets a routine's graphs aside; its head stays for the TypeChange of its callers.
fn take_graphs(routine: &mut Routine) -> Vec<FlowGraph> {
    match routine {
        Routine::ControlFlowGraph(cfg) => vec![std::mem::take(&mut cfg.graph)],
        Routine::ReplacementList(list) => list.replacements.iter_mut().map(|r| std::mem::take(&mut r.graph)).collect(),
    }
}

fn put_graphs(routine: &mut Routine, graphs: Vec<FlowGraph>) {
    match routine {
        Routine::ControlFlowGraph(cfg) => {
            if let Some(graph) = graphs.into_iter().next() {
                cfg.graph = graph;
            }
        }
        Routine::ReplacementList(list) => {
            for (replacement, graph) in list.replacements.iter_mut().zip(graphs) {
                replacement.graph = graph;
            }
        }
    }
}

fn symbol_key(cg: &CallGraph, symbol: SymbolId) -> (Box<str>, Box<str>) {
    let scope = cg.symbols[symbol].scope;
    (cg.symbol_name(symbol).into(), cg.name(cg.scopes[scope].id).into())
}

/// What the passes need to know of the whole document: from the checks running alongside,
/// which find it in the scan they begin with, or from a scan of our own (2.7% of a 16 MiB
/// tangent's `perf` samples, all on the driver's thread).
fn survey(input: &[u8], gate: Option<&Progress>) -> Result<Survey, StreamError> {
    let found = gate.and_then(Progress::take_survey);
    found.unwrap_or_else(|| Survey::of(input)).map_err(StreamError::WholeTree)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survey_skips_what_is_not_markup() {
        let input = br#"<?xml version="1.0"?>
<!DOCTYPE x [ <!ENTITY e "a>b"> ]>
<xaif:CallGraph xmlns:xaif="x">
  <!-- <xaif:Assignment statement_id="in_comment"/> -->
  <xaif:ControlFlowGraph symbol_id="f" scope_id="2" note='a > b'>
    <![CDATA[ <xaif:Assignment statement_id="in_cdata"/> ]]>
    <xaif:BasicBlock vertex_id="1">
      <xaif:Assignment lineNumber = '3' statement_id = "s1">x &gt; y</xaif:Assignment>
      <xaif:Marker statement_id="s2" annotation="a/>b"/>
    </xaif:BasicBlock>
  </xaif:ControlFlowGraph>
  <xaif:ControlFlowGraph symbol_id="g" scope_id="3"/>
</xaif:CallGraph>"#;
        let scan = Survey::of(input).expect("ids need no decoding");
        assert_eq!(scan.statement_ids.len(), 2);
        assert!(scan.statement_ids.contains("s1") && scan.statement_ids.contains("s2"));
        let mut bodies: Vec<_> = scan.bodies.into_iter().collect();
        bodies.sort();
        assert_eq!(bodies, [("f".into(), "2".into()), ("g".into(), "3".into())]);
    }

    #[test]
    fn survey_refuses_what_the_reader_would_rename_or_decode() {
        let repeated = br#"<CallGraph><ControlFlowGraph symbol_id="f" scope_id="2">
<Assignment statement_id="s"/><Assignment statement_id="s"/></ControlFlowGraph></CallGraph>"#;
        assert_eq!(Survey::of(repeated), Err("a statement id repeats in a routine"));
        let encoded = br#"<CallGraph><Assignment statement_id="a&amp;b"/></CallGraph>"#;
        assert_eq!(Survey::of(encoded), Err("an id needs decoding"));
    }
}
