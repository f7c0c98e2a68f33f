//! The adjoint's routines transformed on workers beside the driver's thread, with the output
//! of one thread. (Measured on two cores, one worker makes a large adjoint about 1.16 times
//! as fast; the tangent gains nothing from workers and has none.)
//!
//! What makes a routine's transformation depend on the others is small: TypeChange reads the
//! heads of the routines it calls, and the names the engine invents are numbered across the
//! document in routine order (`<prefix>Symbol_N`, statement ids made unique with `_2`, `_3`, …).
//! So each worker ([`Worker`]) holds a copy of the document's head with every routine head read
//! so far, numbered exactly as the reading thread numbers them, and transforms a routine with
//! placeholders for the names it would invent ([`Temporaries::deferred`]). The driver then puts
//! the routines back in document order and, for each, makes the deferred requests for real, in
//! the order the worker made them, interning every other new name in the worker's order too
//! ([`put_back`]): its name table sees the same names in the same order whatever the
//! number of workers, so the output cannot depend on it. The driver's thread has a copy too:
//! once it has put back and written one window of routines, it transforms beside the workers
//! what they have not taken of the next ([`Shared`]).
//!
//! A worker's copy stays the same whatever routines it transformed before: after each routine
//! it forgets the names and temporaries it added ([`crate::ir::Names::truncate`],
//! [`CallGraph::forget_symbols_from`]) and puts back the routine's head as read.
//!
//! The adjoint adds one dependence: a routine's reverse sweep reads some formals where they
//! stand, and its callers, reversed after it, restore the locals they pass there. A worker
//! reverses a routine from the first pass's facts alone ([`Adjoint`]); what depends on
//! the routines before it is done by the driver as it puts the routine back, in document
//! order, as one thread does it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rayon::prelude::*;

use la_arena::ArenaMap;

use super::{StreamError, adjoint_head, adjoint_tangent, merge_type_change};
use crate::analysis::tbr::Recording;
use crate::ir::build::{Deferred, Temporaries, resolve_placeholders};
use crate::ir::rename::Renamer;
use crate::ir::{CallGraph, Name, NameBatch, Routine, RoutineId, Symbol, SymbolId};
use crate::passes::adjoint::{AdjointConfig, AdjointStats, ReverseApart, ReversedApart};
use crate::passes::elimination::PlanCache;
use crate::passes::tangent::TangentConfig;
use crate::passes::type_change::{FormalUse, RoutinesBySymbol};
use crate::pipeline::{Config, PipelineError, Report};
use crate::xaif::intrinsics::Catalogue;

/// Routines a worker takes at a time, per worker: enough that one long routine does not leave
/// the others idle, few enough that the routines in flight stay a small part of the document.
pub(super) const ROUTINES_PER_WORKER: usize = 8;

/// [`ROUTINES_PER_WORKER`] in the adjoint, for a document of `routines` routines. Its routines
/// wait to be put back as replacement lists about sixteen times their input, so the routines in
/// flight (twice the window: queued and transformed) are kept to about an eighth of the
/// document, between one and eight per worker (the driver counting as one). With eight, two
/// workers on a 2 MiB input (45 routines) peaked at 8.0 times the input, more than the
/// whole-tree path's 7.6 (now 3.9–4.1); with two everywhere, 16 MiB took 1.28 instead of
/// 1.19 s (min of 7): small windows leave the workers waiting on each other, and 16 MiB still
/// gets eight.
pub(super) fn adjoint_routines_per_worker(workers: usize, routines: usize) -> usize {
    (routines / (16 * copies(workers))).clamp(1, ROUTINES_PER_WORKER)
}

/// The copies that transform for `workers` workers: one each and the driver thread's.
fn copies(workers: usize) -> usize {
    workers.max(1) + 1
}

/// The workers, and what they need to catch up with the reader.
pub(super) struct Workers {
    /// The driver thread's copy first, then one per worker thread.
    workers: Vec<Worker>,
    /// The names the reader took in with each routine, in the order routines arrived.
    batches: Vec<Arc<NameBatch>>,
    /// Each routine's head as read (no graphs), by routine id.
    heads: Vec<Arc<Routine>>,
    /// Routines ready to be transformed, in document order.
    queued: Vec<Task>,
    /// Routines transformed, waiting to be put back, in document order.
    transformed: Vec<Task>,
    /// How many of `batches` the driver's table has taken in.
    interned: usize,
    /// How many routines are transformed together ([`Workers::window`]).
    window: usize,
}

/// Where routines go back to: the driver's call graph, its temporaries and names, and what
/// writes a routine once it is back.
pub(super) struct PutBack<'a> {
    pub cg: &'a mut CallGraph,
    pub temporaries: &'a mut Temporaries,
    pub reader: &'a mut super::ReaderNames,
    pub report: &'a mut Report,
    pub write: &'a mut dyn FnMut(&mut CallGraph, RoutineId, Finished) -> Result<(), StreamError>,
}

/// What the workers make of a routine: the adjoint's passes after the first, TypeChange, the
/// tangent passes, and the reversal as far as it depends on the routine alone
/// ([`ReverseApart`]); the driver finishes each in document order
/// ([`crate::passes::adjoint::RoutineByRoutine::finish`]: what its reverse sweep reads where it
/// stands and the locals it restores depend on the routines reversed before it, which a
/// worker may not have seen).
#[derive(Clone, Copy)]
pub(super) struct Adjoint<'m> {
    /// The interprocedural facts; each worker reverses with its own copy.
    pub facts: &'m Recording,
    pub tangent: &'m TangentConfig,
    pub formal_uses: &'m ArenaMap<RoutineId, Vec<FormalUse>>,
    pub config: &'m AdjointConfig,
}

/// What a routine put back brings beside itself, in the driver's numbering: in the adjoint,
/// the head its callers' passes need once it is written, what finishing its reversal needs,
/// and the worker's counts.
#[derive(Default)]
pub(super) struct Finished {
    pub head: Option<Routine>,
    pub reversed: Option<ReversedApart>,
    /// What the worker's reversal pushes (nothing in the tangent).
    pub stats: AdjointStats,
}

impl Workers {
    /// `count` workers on threads of their own and one for the driver's thread, each starting
    /// from a copy of `head` (the call graph as read at the first routine), each taking
    /// `per_worker` routines at a time.
    pub(super) fn new(count: usize, head: &CallGraph, per_worker: usize) -> Workers {
        let workers = (0..copies(count))
            .map(|_| Worker {
                cg: head.clone(),
                temporaries: Temporaries::deferred(),
                by_symbol: RoutinesBySymbol::default(),
                plans: PlanCache::default(),
                recording: None,
                batches: 0,
                heads: 0,
            })
            .collect();
        Workers {
            workers,
            batches: Vec::new(),
            heads: Vec::new(),
            queued: Vec::new(),
            transformed: Vec::new(),
            interned: 0,
            window: Self::window(count, per_worker),
        }
    }

    /// How many routines `workers` workers and the driver transform together, `per_worker`
    /// each.
    pub(super) fn window(workers: usize, per_worker: usize) -> usize {
        copies(workers) * per_worker
    }

    /// A routine has arrived: its head (as read, without graphs) and the names read with it.
    pub(super) fn arrived(&mut self, head: Routine, names: NameBatch) {
        self.heads.push(Arc::new(head));
        self.batches.push(Arc::new(names));
    }

    /// Queues a routine whose callees are known; true when enough are queued to be worth
    /// transforming together.
    pub(super) fn queue(&mut self, id: RoutineId, routine: Routine) -> bool {
        self.queued.push(Task { id, routine: Some(routine), arrived: self.batches.len(), result: None });
        self.queued.len() >= self.window
    }

    /// Transforms the queued routines on the workers while this thread puts back and writes
    /// the ones transformed before, then transforms with them what is left; with `last`, then
    /// puts those back too. Stops at the first failure.
    ///
    /// Each thread takes the next routine not taken yet, so the driver's thread, which has the
    /// least to do, does not wait idle for the slowest share (with fixed shares, one worker on
    /// two cores was slower than none). Which worker transforms a routine changes nothing: each
    /// takes routines in document order and resets its copy after each.
    pub(super) fn advance(
        &mut self,
        catalogue: &Catalogue,
        config: &Config,
        mode: Adjoint,
        out: &mut PutBack,
        last: bool,
    ) -> Result<(), StreamError> {
        let Workers { workers, batches, heads, queued, transformed, interned, window: _ } = self;
        let tasks = Shared::new(std::mem::take(queued));
        let before = std::mem::take(transformed);
        let (batches, heads) = (&*batches, &*heads);
        let (own, others) = workers.split_first_mut().unwrap_or_else(|| unreachable!("the driver has a worker"));
        let put_back = std::thread::scope(|scope| {
            let transforming = (!tasks.is_empty()).then(|| {
                scope.spawn(|| {
                    others
                        .par_iter_mut()
                        .for_each(|worker| transform_share(&tasks, worker, batches, heads, catalogue, config, mode));
                })
            });
            let put_back = put_back_all(before, batches, interned, out);
            if put_back.is_ok() {
                transform_share(&tasks, own, batches, heads, catalogue, config, mode);
            }
            if let Some(transforming) = transforming
                && let Err(panic) = transforming.join()
            {
                std::panic::resume_unwind(panic);
            }
            put_back
        });
        *transformed = tasks.into_inner();
        put_back?;
        if last {
            put_back_all(std::mem::take(transformed), batches, interned, out)?;
        }
        Ok(())
    }

    /// The reader's names the driver's table has not taken in yet (at the end: those read after
    /// the last routine waited on).
    pub(super) fn intern_remaining(&mut self, cg: &mut CallGraph, reader: &mut super::ReaderNames) {
        for batch in &self.batches[self.interned..] {
            cg.names.intern_batch(batch, &mut reader.renamed);
        }
        self.interned = self.batches.len();
    }
}

/// Items shared out among threads: each thread takes the next one no thread has taken, so the
/// items one thread takes come in their order (which the workers rely on: each takes routines in
/// document order, whichever it gets).
struct Shared<T> {
    items: Vec<Mutex<T>>,
    next: AtomicUsize,
}

impl<T> Shared<T> {
    fn new(items: Vec<T>) -> Shared<T> {
        Shared { items: items.into_iter().map(Mutex::new).collect(), next: AtomicUsize::new(0) }
    }

    fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The next item no thread has taken, `None` once all are taken.
    fn take(&self) -> Option<MutexGuard<'_, T>> {
        let item = self.items.get(self.next.fetch_add(1, Ordering::Relaxed))?;
        // Only this thread took it: the lock is never waited on (nor poisoned but by a panic,
        // which the driver resumes).
        Some(item.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn into_inner(self) -> Vec<T> {
        self.items.into_iter().map(|item| item.into_inner().unwrap_or_else(PoisonError::into_inner)).collect()
    }
}

/// Transforms on `worker` the routines of `tasks` no other thread has taken, until none is
/// left.
fn transform_share(
    tasks: &Shared<Task>,
    worker: &mut Worker,
    batches: &[Arc<NameBatch>],
    heads: &[Arc<Routine>],
    catalogue: &Catalogue,
    config: &Config,
    mode: Adjoint,
) {
    while let Some(mut task) = tasks.take() {
        let Some(routine) = task.routine.take() else { continue };
        worker.catch_up(&batches[..task.arrived], &heads[..task.arrived]);
        let head = &heads[task.id.into_raw().into_u32() as usize];
        task.result = Some(worker.transform(task.id, routine, head, catalogue, config, mode));
    }
}

/// Puts `tasks` back in document order and writes each; stops at the first failure.
fn put_back_all(
    tasks: Vec<Task>,
    batches: &[Arc<NameBatch>],
    interned: &mut usize,
    out: &mut PutBack,
) -> Result<(), StreamError> {
    for task in tasks {
        for batch in batches.get(*interned..task.arrived).unwrap_or(&[]) {
            out.cg.names.intern_batch(batch, &mut out.reader.renamed);
        }
        *interned = (*interned).max(task.arrived);
        let transformed = task.result.unwrap_or_else(|| unreachable!("every queued routine is transformed"))?;
        let finished = put_back(out.cg, out.temporaries, out.reader, task.id, transformed, out.report)?;
        (out.write)(out.cg, task.id, finished)?;
    }
    Ok(())
}

struct Worker {
    cg: CallGraph,
    temporaries: Temporaries,
    /// Its copy's routines by their symbols, for TypeChange.
    by_symbol: RoutinesBySymbol,
    plans: PlanCache,
    /// The adjoint's facts, its own copy of [`Adjoint`]'s.
    recording: Option<Recording>,
    /// How many of the batches and heads its copy has taken in.
    batches: usize,
    heads: usize,
}

struct Task {
    id: RoutineId,
    routine: Option<Routine>,
    /// How many routines had arrived when it became ready: the names and heads its worker
    /// takes in first, so that what it finds does not depend on when it runs.
    arrived: usize,
    result: Option<Result<Transformed, PipelineError>>,
}

/// A routine as a worker left it: names and symbols numbered in the worker's copy.
struct Transformed {
    routine: Routine,
    /// The worker's table's length before it began: names from here on are the worker's own.
    names_from: usize,
    /// Those names, in the order the worker interned them.
    names: NameBatch,
    deferred: Vec<Deferred>,
    /// The arena's length before it began, and the temporaries it added from there on.
    symbols_from: usize,
    symbols: Vec<Symbol>,
    report: Report,
    /// In the worker's numbering.
    finished: Finished,
}

impl Worker {
    /// Takes in the names and heads read since it last did, as the reader numbered them.
    fn catch_up(&mut self, batches: &[Arc<NameBatch>], heads: &[Arc<Routine>]) {
        let mut ids = Vec::new();
        for batch in batches.get(self.batches..).unwrap_or(&[]) {
            ids.clear();
            let first = self.cg.names.len();
            self.cg.names.intern_batch(batch, &mut ids);
            debug_assert!(ids.iter().enumerate().all(|(k, name)| name.index() == first + k));
        }
        self.batches = self.batches.max(batches.len());
        for (k, head) in heads.iter().enumerate().skip(self.heads) {
            let head = Routine::clone(head);
            if k < self.cg.routines.len() {
                self.cg.routines[RoutineId::from_raw(la_arena::RawIdx::from_u32(k as u32))] = head;
            } else {
                self.cg.routines.alloc(head);
            }
        }
        self.heads = self.heads.max(heads.len());
    }

    fn transform(
        &mut self,
        id: RoutineId,
        routine: Routine,
        head: &Routine,
        catalogue: &Catalogue,
        config: &Config,
        mode: Adjoint,
    ) -> Result<Transformed, PipelineError> {
        let cg = &mut self.cg;
        let names_from = cg.names.len();
        let symbols_from = cg.symbols.len();
        cg.routines[id] = routine;
        let mut report = Report::default();
        let mut finished = Finished::default();
        let temporaries = &mut self.temporaries;
        let Adjoint { facts, tangent, formal_uses, config: adjoint } = mode;
        let result: Result<(), PipelineError> = (|| {
            let recording = self.recording.get_or_insert_with(|| facts.copy_facts());
            let size_hint = cg.size_hint;
            let Some(own_head) = adjoint_head(cg, temporaries, &mut self.by_symbol, config, id, &mut report)? else {
                return Ok(());
            };
            finished.head = Some(own_head);
            let original = adjoint_tangent(cg, catalogue, temporaries, &mut self.plans, tangent, id, &mut report)?;
            let mut apart = ReverseApart { recording, formal_uses, config: adjoint };
            finished.reversed = apart.reverse(cg, temporaries, id, original, &mut finished.stats)?;
            cg.size_hint = size_hint;
            Ok(())
        })();
        let routine = std::mem::replace(&mut cg.routines[id], head.clone());
        let names = cg.names.batch_since(names_from);
        let deferred = self.temporaries.take_deferred();
        let symbols = cg.symbols.since(symbols_from).to_vec();
        cg.forget_symbols_from(symbols_from);
        cg.names.truncate(names_from);
        result?;
        Ok(Transformed { routine, names_from, names, deferred, symbols_from, symbols, report, finished })
    }
}

/// Puts a routine a worker transformed into the driver's call graph: the deferred names are
/// asked for again, for real, every other new name interned, in the worker's order; then the
/// routine and its temporaries are renumbered into the driver's table and arena.
fn put_back(
    cg: &mut CallGraph,
    temporaries: &mut Temporaries,
    reader: &super::ReaderNames,
    id: RoutineId,
    transformed: Transformed,
    report: &mut Report,
) -> Result<Finished, StreamError> {
    const LOST: StreamError = StreamError::WholeTree("a placeholder for an invented name was lost");
    let Transformed { mut routine, names_from, names, deferred, symbols_from, symbols, report: done, mut finished } =
        transformed;
    let mut resolved: Vec<Option<Name>> = vec![None; deferred.len()];
    let mut symbol_map: Vec<Option<SymbolId>> = vec![None; symbols.len()];
    let worker_symbol = |symbol: SymbolId, map: &[Option<SymbolId>]| -> Option<SymbolId> {
        match (symbol.into_raw().into_u32() as usize).checked_sub(symbols_from) {
            Some(k) => map.get(k).copied().flatten(),
            None => Some(symbol),
        }
    };
    let mut extra: Vec<Name> = Vec::with_capacity(names.len());
    for text in names.iter() {
        let name = match whole_placeholder(text) {
            Some(k) => {
                let request = deferred.get(k).ok_or(LOST)?;
                let name = match request {
                    Deferred::Temporary { scope, kind, symbol } => {
                        let real = temporaries.fresh(cg, *scope, kind, |_| {});
                        let slot = (symbol.into_raw().into_u32() as usize).checked_sub(symbols_from);
                        *slot.and_then(|k| symbol_map.get_mut(k)).ok_or(LOST)? = Some(real);
                        cg.symbols[real].name
                    }
                    Deferred::StatementId(base) => {
                        let base = spell(base, cg, &resolved).ok_or(LOST)?;
                        temporaries.statement_id(cg, &base)
                    }
                    Deferred::AssignmentId(symbol) => {
                        let symbol = worker_symbol(*symbol, &symbol_map).ok_or(LOST)?;
                        temporaries.assignment_id(cg, symbol)
                    }
                };
                resolved[k] = Some(name);
                name
            }
            None if text.contains('\0') => {
                let text = spell(text, cg, &resolved).ok_or(LOST)?;
                cg.names.intern(&text)
            }
            None => cg.names.intern(text),
        };
        extra.push(name);
    }
    if symbol_map.iter().any(Option::is_none) {
        return Err(LOST);
    }
    let mut renumber = Renumber { reader, names_from, extra: &extra, symbols_from, symbol_map: &symbol_map };
    for (k, mut symbol) in symbols.into_iter().enumerate() {
        let real = symbol_map[k].unwrap_or_else(|| unreachable!("checked above"));
        symbol.rename(&mut renumber);
        debug_assert_eq!(symbol.name, cg.symbols[real].name);
        symbol.name = cg.symbols[real].name;
        cg.symbols[real] = symbol;
    }
    routine.rename(&mut renumber);
    cg.routines[id] = routine;
    if let Some(head) = finished.head.as_mut() {
        head.rename(&mut renumber);
    }
    if let Some(reversed) = finished.reversed.as_mut() {
        reversed.map_symbols(|symbol| renumber.symbol(symbol));
    }
    report.initialized_derivatives += done.initialized_derivatives;
    merge_type_change(&mut report.type_change, done.type_change);
    report.tangent.sequences.extend(done.tangent.sequences);
    Ok(finished)
}

/// The index of `text` if it is one placeholder and nothing else.
fn whole_placeholder(text: &str) -> Option<usize> {
    text.strip_prefix('\0')?.strip_suffix('\0')?.parse().ok()
}

/// `text` with its placeholders spelled as what they became.
fn spell(text: &str, cg: &CallGraph, resolved: &[Option<Name>]) -> Option<String> {
    resolve_placeholders(text, |k| resolved.get(k).copied().flatten().map(|name| cg.name(name).to_owned()))
}

/// From a worker's numbering to the driver's: names below the reader's head are the same in
/// both, the reader's later ones as the driver interned them, the worker's own as put back.
struct Renumber<'a> {
    reader: &'a super::ReaderNames,
    names_from: usize,
    extra: &'a [Name],
    symbols_from: usize,
    symbol_map: &'a [Option<SymbolId>],
}

impl Renamer for Renumber<'_> {
    fn rename(&mut self, name: Name) -> Name {
        match name.index().checked_sub(self.names_from) {
            Some(k) => self.extra[k],
            None => self.reader.driver_name(name),
        }
    }

    fn symbol(&mut self, symbol: SymbolId) -> SymbolId {
        match (symbol.into_raw().into_u32() as usize).checked_sub(self.symbols_from) {
            Some(k) => self.symbol_map[k].unwrap_or(symbol),
            None => symbol,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Shared;

    /// Every item is taken exactly once, and each thread takes its items in their order,
    /// however the threads interleave.
    #[test]
    fn each_item_goes_to_one_thread_in_order() {
        for _ in 0..50 {
            let shared = Shared::new((0..1000).collect::<Vec<usize>>());
            let taken: Vec<Vec<usize>> = std::thread::scope(|scope| {
                let threads: Vec<_> = (0..4)
                    .map(|_| {
                        scope.spawn(|| {
                            let mut mine = Vec::new();
                            while let Some(item) = shared.take() {
                                mine.push(*item);
                            }
                            mine
                        })
                    })
                    .collect();
                threads.into_iter().map(|thread| thread.join().expect("no panic")).collect()
            });
            for mine in &taken {
                assert!(mine.windows(2).all(|pair| pair[0] < pair[1]), "out of order: {mine:?}");
            }
            let mut all: Vec<usize> = taken.concat();
            all.sort_unstable();
            assert_eq!(all, (0..1000).collect::<Vec<_>>());
            assert_eq!(shared.into_inner().len(), 1000);
        }
    }
}
