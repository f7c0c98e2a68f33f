//! TypeChange: every call's actual arguments agree in activity with the formals they bind to.
//!
//! In OpenAD an active real is a different Fortran type (value and derivative) from a passive
//! one, so a call that passes a passive real where the formal is active, or the reverse, does
//! not compile after unparsing. Each such actual is replaced by a temporary `<prefix>tyc_N` of
//! the formal's activity:
//! - `oad_convert(tmp, actual)` before the call, unless the formal is `intent(out)`;
//! - `oad_convert(actual, tmp)` after it, unless the formal is `intent(in)`, the actual is a
//!   constant, or the actual is an `intent(in)` formal of the caller (no copy back into what
//!   must not change);
//! - a temporary array without declared bounds gets its storage from `oad_AllocateMatching`
//!   before the copy-in and is checked with `oad_ShapeTest` before the copy-back;
//! - an element `a(i)` passed where the formal is an array (sequence association) converts the
//!   whole array `a` and passes `tmp(i)`;
//! - an index of a converted section or element that the call may overwrite (`a(i)` with `i`
//!   modified by the callee) is saved in `<prefix>Symbol_N` before the call, so the copy-back
//!   writes where the copy-in read.
//!
//! Routines without a body in the document (external) take passive arguments: every active
//! actual goes through a passive temporary in both directions — unless the routine has a
//! hand-written wrapper (`-w`), which is called instead under the name `<prefix>name` with the
//! arguments untouched (its activity pattern must then be the same at every call). With `-r`
//! every routine with a body is renamed `<prefix>name`, and so are the calls to it.
//!
//! The pass also records, per formal, whether some call passes it a constant or a variable:
//! the adjoint's checkpoints leave out formals that only ever receive constants.

use la_arena::ArenaMap;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::ir::build::{Temporaries, assignment, inlinable_call, shape_of_rank, whole_reference};
use crate::ir::*;

#[derive(Clone, Debug, Default)]
pub struct TypeChangeConfig {
    /// Routines with hand-written wrappers (`-w`), as the user spells them: compared without
    /// case and without the front end's `_N` decoration.
    pub wrappers: Vec<String>,
    /// Rename every routine with a body `<prefix>name` (`-r`).
    pub rename_all: bool,
}

/// How one formal argument is passed, over all calls of the document.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FormalUse {
    pub constant_somewhere: bool,
    pub variable_somewhere: bool,
}

/// What the pass did.
#[derive(Debug, Default)]
pub struct TypeChangeReport {
    /// Arguments converted at calls to routines with a body.
    pub conversions: usize,
    /// Active arguments made passive at calls to external routines.
    pub external_conversions: usize,
    /// Index values saved across a call that may overwrite them.
    pub saved_indices: usize,
    /// Temporaries allocated with `oad_AllocateMatching`.
    pub allocations: usize,
    /// Calls redirected to hand-written wrappers.
    pub wrapped_calls: usize,
    /// Routines renamed by `-r`.
    pub renamed_routines: usize,
    /// Per routine with a body, per formal in position order.
    pub formal_uses: ArenaMap<RoutineId, Vec<FormalUse>>,
}

#[derive(Debug, thiserror::Error)]
pub enum TypeChangeError {
    #[error(transparent)]
    NoFormal(Box<NoFormal>),
    #[error(transparent)]
    WrapperActivity(Box<WrapperActivity>),
}

/// A call passes an argument at a position the callee declares no formal for.
#[derive(Debug, thiserror::Error)]
#[error(
    "routine {routine}: call {statement}{} of {callee}: argument {position} has no formal argument (the callee \
     declares positions {formals})",
    at_line(*line)
)]
pub struct NoFormal {
    pub routine: String,
    pub statement: String,
    pub line: u64,
    pub callee: String,
    pub position: u32,
    pub formals: String,
}

/// A routine with a hand-written wrapper is called with two activity patterns.
#[derive(Debug, thiserror::Error)]
#[error(
    "routine {routine}: call {statement}{} of {callee}, which has a hand-written wrapper: the active arguments \
     are {found}, at an earlier call {expected}; a wrapper has one signature",
    at_line(*line)
)]
pub struct WrapperActivity {
    pub routine: String,
    pub statement: String,
    pub line: u64,
    pub callee: String,
    pub found: String,
    pub expected: String,
}

/// ` (line N)` where the front end gave a line.
fn at_line(line: u64) -> String {
    if line == 0 { String::new() } else { format!(" (line {line})") }
}

/// Converts the arguments of every call of the call graph (see the module documentation).
pub fn type_change(
    cg: &mut CallGraph,
    temporaries: &mut Temporaries,
    config: &TypeChangeConfig,
) -> Result<TypeChangeReport, TypeChangeError> {
    let routines: Vec<RoutineId> = cg.cfgs().map(|(id, _)| id).collect();
    convert_routines(cg, &routines, temporaries, config, None)
}

/// [`type_change`] of `routine` alone, the call graph's other routines standing only as
/// callees (the streaming driver's: every other routine there is a head whose graph is set
/// aside or already written). Its report has formal uses for `routine` and for the routines it
/// calls; merged over every routine's, they are the whole document's. Taking the whole call
/// graph instead cost each routine a pass over the heads of all the routines before it, with
/// a formal-use list made for each: quadratic in the routines (16 MiB: 47 M instructions, at
/// 64 MiB sixteen times that). `by_symbol` finds the routines it calls, and is to be kept for
/// the next routine of the same call graph.
pub fn type_change_routine(
    cg: &mut CallGraph,
    routine: RoutineId,
    temporaries: &mut Temporaries,
    config: &TypeChangeConfig,
    by_symbol: &mut RoutinesBySymbol,
) -> Result<TypeChangeReport, TypeChangeError> {
    convert_routines(cg, &[routine], temporaries, config, Some(by_symbol))
}

/// The routines of a call graph that grows by routines appended to it (the streaming
/// driver's), by their symbols: where [`type_change_routine`] finds the routines a routine
/// calls. A pass over every routine read so far, for each routine converted, had been
/// quadratic in the routines (64 MiB, 1,440 routines: 74 of the 10,475 samples of a tangent,
/// on the driving thread; 16 MiB: 3 of 2,156).
#[derive(Debug, Default)]
pub struct RoutinesBySymbol {
    /// How many of the call graph's routines are taken in.
    seen: usize,
    /// The last routine of each symbol among them, control flow graph or replacement list.
    by_symbol: FxHashMap<SymbolId, RoutineId>,
}

impl RoutinesBySymbol {
    /// The routines with a body among `called`, each the last control flow graph of its
    /// symbol, as a pass over every routine of `cg` finds them where routines are appended and
    /// replaced in place by routines of the same symbol (a head, a replacement list, as the
    /// streaming driver does). Routines appended since the last call are taken in; a routine
    /// whose symbol changed, or a call graph shorter than what was taken in, has all of them
    /// taken in again.
    fn called(&mut self, cg: &CallGraph, called: &FxHashSet<SymbolId>) -> FxHashMap<SymbolId, RoutineId> {
        if self.seen > cg.routines.len() {
            *self = RoutinesBySymbol::default();
        }
        self.take_in(cg);
        if let Some(bodies) = self.find(cg, called) {
            return bodies;
        }
        *self = RoutinesBySymbol::default();
        self.take_in(cg);
        // An index just made holds every routine's symbol; the pass is only its stand-in.
        self.find(cg, called).unwrap_or_else(|| last_graphs(cg, called))
    }

    /// `None` where a routine of the index no longer has the symbol it was taken in with.
    fn find(&self, cg: &CallGraph, called: &FxHashSet<SymbolId>) -> Option<FxHashMap<SymbolId, RoutineId>> {
        let mut found = FxHashMap::with_capacity_and_hasher(called.len(), Default::default());
        for &symbol in called {
            let Some(&last) = self.by_symbol.get(&symbol) else { continue };
            match &cg.routines[last] {
                Routine::ControlFlowGraph(cfg) if cfg.symbol == symbol => {
                    found.insert(symbol, last);
                }
                Routine::ReplacementList(list) if list.symbol == symbol => {
                    // Reversed (the adjoint's): its symbol's last graph, if any, is before it.
                    let mut before = cg.routines.iter().take(last.into_raw().into_u32() as usize).rev();
                    let graph = before.find_map(|(id, routine)| match routine {
                        Routine::ControlFlowGraph(cfg) if cfg.symbol == symbol => Some(id),
                        _ => None,
                    });
                    if let Some(id) = graph {
                        found.insert(symbol, id);
                    }
                }
                _ => return None,
            }
        }
        Some(found)
    }

    fn take_in(&mut self, cg: &CallGraph) {
        for (id, routine) in cg.routines.iter().skip(self.seen) {
            let symbol = match routine {
                Routine::ControlFlowGraph(cfg) => cfg.symbol,
                Routine::ReplacementList(list) => list.symbol,
            };
            self.by_symbol.insert(symbol, id);
        }
        self.seen = cg.routines.len();
    }
}

/// The last control flow graph of each symbol in `called`, by a pass over every routine.
fn last_graphs(cg: &CallGraph, called: &FxHashSet<SymbolId>) -> FxHashMap<SymbolId, RoutineId> {
    cg.cfgs().filter(|(_, cfg)| called.contains(&cfg.symbol)).map(|(id, cfg)| (cfg.symbol, id)).collect()
}

/// Converts the calls in `routines`.
fn convert_routines(
    cg: &mut CallGraph,
    routines: &[RoutineId],
    temporaries: &mut Temporaries,
    config: &TypeChangeConfig,
    by_symbol: Option<&mut RoutinesBySymbol>,
) -> Result<TypeChangeReport, TypeChangeError> {
    let mut report = TypeChangeReport::default();
    // The routines with a body among those called (a later definition of a symbol wins, as
    // collecting all of them did): the streaming driver converts one routine at a time in a
    // call graph of every routine read so far, where a map of them all cost each routine a
    // hashed insert per routine before it.
    let called: FxHashSet<SymbolId> = routines
        .iter()
        .filter_map(|&id| match &cg.routines[id] {
            Routine::ControlFlowGraph(cfg) => Some(&cfg.graph),
            Routine::ReplacementList(_) => None,
        })
        .flat_map(|graph| graph.vertices.iter())
        .filter_map(|(_, vertex)| match &vertex.kind {
            CfgVertexKind::BasicBlock(block) => Some(&block.statements),
            _ => None,
        })
        .flatten()
        .filter_map(|statement| match statement {
            Statement::SubroutineCall(call) => call.symbol,
            _ => None,
        })
        .collect();
    let bodies = match by_symbol {
        Some(by_symbol) => by_symbol.called(cg, &called),
        None => last_graphs(cg, &called),
    };
    let mut renames: FxHashMap<SymbolId, SymbolId> = FxHashMap::default();
    if config.rename_all {
        let symbols: Vec<SymbolId> = cg.cfgs().map(|(_, cfg)| cfg.symbol).collect();
        for symbol in symbols {
            let renamed = renamed_symbol(cg, symbol);
            renames.insert(symbol, renamed);
        }
        report.renamed_routines = renames.len();
    }
    // Every routine converted has its formal uses, whether or not a call reaches it (a callee
    // not among `routines` gets them when a call does, `Pass::internal_call`).
    for &id in routines {
        if let Routine::ControlFlowGraph(cfg) = &cg.routines[id] {
            let formals = cfg.arguments.as_ref().map_or(0, Vec::len);
            report.formal_uses.insert(id, vec![FormalUse::default(); formals]);
        }
    }
    let mut wrappers = FxHashMap::default();
    for &routine in routines {
        let Routine::ControlFlowGraph(cfg) = &mut cg.routines[routine] else { continue };
        let mut graph = std::mem::take(&mut cfg.graph);
        let Routine::ControlFlowGraph(cfg) = &cg.routines[routine] else { continue };
        let caller = Caller {
            name: cg.symbol_name(cfg.symbol).to_owned(),
            body_scope: cfg.body_scope,
            formals: cfg.arguments.iter().flatten().map(|a| (a.symbol, a.intent)).collect(),
        };
        let mut result = Ok(());
        for (_, vertex) in graph.vertices.iter_mut() {
            let CfgVertexKind::BasicBlock(block) = &mut vertex.kind else { continue };
            if !block.statements.iter().any(|s| matches!(s, Statement::SubroutineCall(_))) {
                continue;
            }
            let statements = std::mem::take(&mut block.statements);
            let mut out = Vec::with_capacity(statements.len() + 8);
            let mut pass = Pass {
                cg,
                temporaries,
                config,
                bodies: &bodies,
                renames: &renames,
                wrappers: &mut wrappers,
                report: &mut report,
                caller: &caller,
                block_scope: block.scope,
            };
            for statement in statements {
                match statement {
                    Statement::SubroutineCall(call) => {
                        if let Err(error) = pass.call(call, &mut out) {
                            result = Err(error);
                            break;
                        }
                    }
                    other => out.push(other),
                }
            }
            block.statements = out;
            if result.is_err() {
                break;
            }
        }
        let Routine::ControlFlowGraph(cfg) = &mut cg.routines[routine] else { continue };
        cfg.graph = graph;
        if let Some(&renamed) = renames.get(&cfg.symbol) {
            cfg.symbol = renamed;
        }
        result?;
    }
    // Conversions add a few statements per converted argument.
    cg.size_hint += (report.conversions + report.external_conversions) * 1200;
    Ok(report)
}

/// `<prefix>name` for a routine symbol, in the same scope and of the same kind.
fn renamed_symbol(cg: &mut CallGraph, original: SymbolId) -> SymbolId {
    let old = cg.symbols[original].clone();
    let name = format!("{}{}", cg.name(cg.prefix), cg.name(old.name));
    let name = cg.names.intern(&name);
    cg.add_symbol(Symbol { name, active: true, temp: true, annotation: Name::EMPTY, dimensions: Vec::new(), ..old })
}

/// Whether a front-end symbol name (`FOO_I_24`, `foo__3`) is the routine a user names
/// (`foo_i`, `FOO`): equal without case once the trailing `_`s and digits are dropped.
fn names_routine(symbol_name: &str, plain: &str) -> bool {
    let symbol_name = symbol_name.to_ascii_lowercase();
    let plain = plain.to_ascii_lowercase();
    let Some(tail) = symbol_name.strip_prefix(&plain) else { return false };
    let digits = tail.trim_start_matches('_');
    digits.bytes().all(|b| b.is_ascii_digit())
}

struct Caller {
    name: String,
    body_scope: ScopeId,
    formals: Vec<(SymbolId, Intent)>,
}

struct Pass<'a> {
    cg: &'a mut CallGraph,
    temporaries: &'a mut Temporaries,
    config: &'a TypeChangeConfig,
    bodies: &'a FxHashMap<SymbolId, RoutineId>,
    renames: &'a FxHashMap<SymbolId, SymbolId>,
    /// Per wrapped routine: the wrapper's symbol and the active positions at the first call.
    wrappers: &'a mut FxHashMap<SymbolId, (SymbolId, Vec<u32>)>,
    report: &'a mut TypeChangeReport,
    caller: &'a Caller,
    block_scope: ScopeId,
}

/// The statements around one call.
#[derive(Default)]
struct Adjustments {
    saves: Vec<Statement>,
    /// Saved index references and the temporaries holding their values.
    saved: Vec<(VariableReference, SymbolId)>,
    prior: Vec<Statement>,
    post: Vec<Statement>,
}

/// What a callee may modify, from its `Mod` side-effect list.
struct Overwrites {
    /// `None` when the front end gave no list: anything may change.
    modified: Option<Vec<SymbolId>>,
    /// Argument positions whose formal is modified.
    modified_positions: Vec<u32>,
}

impl Overwrites {
    /// Whether the call may change the value `reference` denotes: it is modified as a global,
    /// or passed itself as an argument whose formal is modified.
    fn covers(&self, reference: &VariableReference, call: &SubroutineCall) -> bool {
        let Some(base) = reference.base_symbol() else { return false };
        let Some(modified) = &self.modified else { return true };
        modified.contains(&base)
            || call.arguments.iter().any(|argument| {
                self.modified_positions.contains(&argument.position)
                    && matches!(&argument.value, ArgumentValue::Variable(actual) if actual.same_place(reference))
            })
    }
}

/// The formal side of a conversion.
struct Formal {
    symbol: SymbolId,
    intent: Intent,
}

impl Pass<'_> {
    fn call(&mut self, mut call: SubroutineCall, out: &mut Vec<Statement>) -> Result<(), TypeChangeError> {
        let callee = call.symbol.and_then(|s| self.bodies.get(&s).copied());
        let mut adjustments = Adjustments::default();
        match callee {
            Some(callee) => self.internal_call(&mut call, callee, &mut adjustments)?,
            None => {
                if self.wrapped_call(&mut call)? {
                    out.push(Statement::SubroutineCall(call));
                    return Ok(());
                }
                self.external_call(&mut call, &mut adjustments);
            }
        }
        if let Some(renamed) = call.symbol.and_then(|s| self.renames.get(&s)) {
            call.symbol = Some(*renamed);
        }
        out.append(&mut adjustments.saves);
        out.append(&mut adjustments.prior);
        out.push(Statement::SubroutineCall(call));
        out.append(&mut adjustments.post);
        Ok(())
    }

    fn internal_call(
        &mut self,
        call: &mut SubroutineCall,
        callee: RoutineId,
        adjustments: &mut Adjustments,
    ) -> Result<(), TypeChangeError> {
        let Routine::ControlFlowGraph(cfg) = &self.cg.routines[callee] else { return Ok(()) };
        let formals: Vec<ArgumentSymbolReference> = cfg.arguments.clone().unwrap_or_default();
        let modified: Option<Vec<SymbolId>> =
            cfg.side_effects.modified.as_ref().map(|list| list.iter().filter_map(|r| r.base_symbol()).collect());
        let overwrites = Overwrites {
            modified_positions: formals
                .iter()
                .filter(|f| modified.as_ref().is_none_or(|m| m.contains(&f.symbol)))
                .map(|f| f.position)
                .collect(),
            modified,
        };
        let callee_name = self.cg.symbol_name(cfg.symbol).to_owned();
        for index in 0..call.arguments.len() {
            let position = call.arguments[index].position;
            let Some(formal_index) = formals.iter().position(|f| f.position == position) else {
                let mut positions: Vec<u32> = formals.iter().map(|f| f.position).collect();
                positions.sort_unstable();
                return Err(TypeChangeError::NoFormal(Box::new(NoFormal {
                    routine: self.caller.name.clone(),
                    statement: self.cg.name(call.id).to_owned(),
                    line: call.line,
                    callee: callee_name,
                    position,
                    formals: format!("{positions:?}"),
                })));
            };
            let formal = &formals[formal_index];
            let actual_active = self.actual_active(&call.arguments[index].value);
            let uses =
                self.report.formal_uses.entry(callee).or_insert_with(|| vec![FormalUse::default(); formals.len()]);
            if let Some(slot) = uses.get_mut(formal_index) {
                match call.arguments[index].value {
                    ArgumentValue::Constant(_) => slot.constant_somewhere = true,
                    ArgumentValue::Variable(_) => slot.variable_somewhere = true,
                }
            }
            if actual_active == self.cg.symbols[formal.symbol].active {
                continue;
            }
            let formal = Formal { symbol: formal.symbol, intent: formal.intent };
            self.convert(call, index, &formal, adjustments, &overwrites);
            self.report.conversions += 1;
        }
        Ok(())
    }

    /// Type activity of an actual argument; a constant is passive.
    fn actual_active(&self, value: &ArgumentValue) -> bool {
        match value {
            ArgumentValue::Variable(reference) => reference.base_symbol().is_some_and(|s| self.cg.symbols[s].active),
            ArgumentValue::Constant(_) => false,
        }
    }

    /// Whether the actual is an `intent(in)` formal of the calling routine.
    fn caller_input(&self, reference: &VariableReference) -> bool {
        reference.base_symbol().is_some_and(|base| {
            self.caller.formals.iter().any(|&(symbol, intent)| symbol == base && intent == Intent::In)
        })
    }

    /// Replaces argument `index` of `call` by a temporary of the formal's activity.
    fn convert(
        &mut self,
        call: &mut SubroutineCall,
        index: usize,
        formal: &Formal,
        adjustments: &mut Adjustments,
        overwrites: &Overwrites,
    ) {
        let formal_symbol = self.cg.symbols[formal.symbol].clone();
        let formal_rank = formal_symbol.shape.rank();
        let value = call.arguments[index].value.clone();
        // What the temporary stands for: the actual as passed (an element or section), or the
        // whole array when an element is passed to an array formal.
        let (rank, whole_array, dimensions) = match &value {
            ArgumentValue::Constant(_) => (formal_rank, false, Vec::new()),
            ArgumentValue::Variable(actual) => {
                let base = actual.base_symbol().map(|s| &self.cg.symbols[s]);
                let symbol_rank = base.map_or(0, |s| s.shape.rank());
                let declared = base.filter(|s| s.dimensions.len() == symbol_rank).map(|s| s.dimensions.clone());
                let effective = actual.effective_rank(self.cg);
                let has_access = actual.array_access().is_some();
                if effective == 0 && formal_rank > 0 && has_access {
                    (symbol_rank, true, declared.unwrap_or_default())
                } else if has_access {
                    // A section's extent is not the declared one: the temporary matches it
                    // at run time.
                    (effective, false, Vec::new())
                } else {
                    (effective, false, declared.unwrap_or_default())
                }
            }
        };
        let temporary = self.temporaries.fresh(self.cg, self.caller.body_scope, "tyc", |s| {
            s.ty = formal_symbol.ty;
            s.fe_type = formal_symbol.fe_type;
            s.shape = shape_of_rank(rank);
            s.active = formal_symbol.active;
            s.dimensions = dimensions;
        });
        let needs_allocation = rank > 0 && self.cg.symbols[temporary].dimensions.is_empty();
        let temp_reference = whole_reference(self.cg, temporary, formal_symbol.active);
        let passed = match &value {
            ArgumentValue::Variable(actual) if whole_array => match actual.array_access() {
                Some(access) => temp_reference.clone().with_array_access(self.cg, access.clone()),
                None => temp_reference.clone(),
            },
            _ => temp_reference.clone(),
        };
        call.arguments[index].value = ArgumentValue::Variable(passed);

        let partner = match &value {
            ArgumentValue::Variable(actual) if whole_array => ArgumentValue::Variable(actual.without_array_access()),
            other => other.clone(),
        };
        if needs_allocation {
            adjustments.prior.push(inlinable_call(
                self.cg,
                "oad_allocate_matching",
                "oad_AllocateMatching",
                vec![ArgumentValue::Variable(temp_reference.clone()), partner.clone()],
            ));
            self.report.allocations += 1;
        }
        if formal.intent != Intent::Out {
            adjustments.prior.push(inlinable_call(
                self.cg,
                "oad_convert_prior",
                "oad_convert",
                vec![ArgumentValue::Variable(temp_reference.clone()), partner.clone()],
            ));
        }
        let ArgumentValue::Variable(mut partner) = partner else { return };
        if formal.intent == Intent::In || self.caller_input(&partner) {
            return;
        }
        if needs_allocation {
            adjustments.post.push(inlinable_call(
                self.cg,
                "oad_shape_test",
                "oad_ShapeTest",
                vec![ArgumentValue::Variable(temp_reference.clone()), ArgumentValue::Variable(partner.clone())],
            ));
        }
        if !whole_array {
            self.save_indices(call, &mut partner, adjustments, overwrites);
        }
        adjustments.post.push(inlinable_call(
            self.cg,
            "oad_convert_post",
            "oad_convert",
            vec![ArgumentValue::Variable(partner), ArgumentValue::Variable(temp_reference)],
        ));
    }

    /// Saves before the call every variable in the subscripts of `partner` that the call may
    /// overwrite, and makes the copy-back read the saved values.
    fn save_indices(
        &mut self,
        call: &SubroutineCall,
        partner: &mut VariableReference,
        adjustments: &mut Adjustments,
        overwrites: &Overwrites,
    ) {
        let Some(position) = partner.vertices.iter().rposition(|v| matches!(v, VarRefVertex::ArrayElement(_))) else {
            return;
        };
        let VarRefVertex::ArrayElement(access) = &mut partner.vertices[position] else { return };
        for triplet in &mut access.indices {
            for part in [&mut triplet.index, &mut triplet.bound, &mut triplet.stride].into_iter().flatten() {
                let ids: Vec<ExprVertexId> = part.vertices.iter().map(|(id, _)| id).collect();
                for id in ids {
                    let ExprVertex::Variable(reference) = &part.vertices[id] else { continue };
                    let saved = match adjustments.saved.iter().find(|(r, _)| r.same_place(reference)) {
                        Some(&(_, symbol)) => symbol,
                        None if overwrites.covers(reference, call) => self.save(reference.clone(), adjustments),
                        None => continue,
                    };
                    let mut replacement = whole_reference(self.cg, saved, false);
                    replacement.id = reference.id;
                    part.vertices[id] = ExprVertex::Variable(replacement);
                }
            }
        }
    }

    /// `<prefix>Symbol_N = reference` before the call.
    fn save(&mut self, reference: VariableReference, adjustments: &mut Adjustments) -> SymbolId {
        let ty = reference.base_symbol().map_or(SymbolType::Integer, |s| self.cg.symbols[s].ty);
        let symbol = self.temporaries.fresh(self.cg, self.block_scope, "Symbol", |s| {
            s.ty = ty;
            s.active = false;
        });
        let mut value = reference.clone();
        value.id = self.cg.names.intern("1");
        let lhs = whole_reference(self.cg, symbol, false);
        let mut save = assignment(self.cg, "", lhs, Expression::variable(value));
        // The original's id, made unique: a block may save several values.
        save.id = self.temporaries.statement_id(self.cg, "assignment_to_temporary_for_saving_value_across_statement");
        adjustments.saves.push(Statement::Assignment(save));
        adjustments.saved.push((reference, symbol));
        self.report.saved_indices += 1;
        symbol
    }

    /// A call of a routine with a hand-written wrapper becomes a call of the wrapper, arguments
    /// untouched. Returns whether the call was one.
    fn wrapped_call(&mut self, call: &mut SubroutineCall) -> Result<bool, TypeChangeError> {
        let Some(symbol) = call.symbol else { return Ok(false) };
        let name = self.cg.symbol_name(symbol);
        if !self.config.wrappers.iter().any(|w| names_routine(name, w)) {
            return Ok(false);
        }
        let pattern: Vec<u32> =
            call.arguments.iter().filter(|a| self.actual_active(&a.value)).map(|a| a.position).collect();
        let wrapper = match self.wrappers.get(&symbol) {
            Some((wrapper, expected)) => {
                if *expected != pattern {
                    return Err(TypeChangeError::WrapperActivity(Box::new(WrapperActivity {
                        routine: self.caller.name.clone(),
                        statement: self.cg.name(call.id).to_owned(),
                        line: call.line,
                        callee: self.cg.symbol_name(symbol).to_owned(),
                        found: format!("{pattern:?}"),
                        expected: format!("{expected:?}"),
                    })));
                }
                *wrapper
            }
            None => {
                let wrapper = renamed_symbol(self.cg, symbol);
                self.wrappers.insert(symbol, (wrapper, pattern));
                wrapper
            }
        };
        call.symbol = Some(wrapper);
        self.report.wrapped_calls += 1;
        Ok(true)
    }

    /// An external routine is passive: each active actual is copied into a passive temporary
    /// of the whole variable's shape and back.
    fn external_call(&mut self, call: &mut SubroutineCall, adjustments: &mut Adjustments) {
        for index in 0..call.arguments.len() {
            let ArgumentValue::Variable(actual) = &call.arguments[index].value else { continue };
            let Some(base) = actual.base_symbol() else { continue };
            let symbol = self.cg.symbols[base].clone();
            if !symbol.active {
                continue;
            }
            let actual = actual.clone();
            let rank = symbol.shape.rank();
            let declared = if symbol.dimensions.len() == rank { symbol.dimensions.clone() } else { Vec::new() };
            let temporary = self.temporaries.fresh(self.cg, self.caller.body_scope, "tyc", |s| {
                s.ty = symbol.ty;
                s.fe_type = symbol.fe_type;
                s.shape = symbol.shape;
                s.active = false;
                s.dimensions = declared;
            });
            let needs_allocation = rank > 0 && self.cg.symbols[temporary].dimensions.is_empty();
            let temp_reference = whole_reference(self.cg, temporary, false);
            let whole = actual.without_array_access();
            if needs_allocation {
                adjustments.prior.push(inlinable_call(
                    self.cg,
                    "oad_allocate_matching",
                    "oad_AllocateMatching",
                    vec![ArgumentValue::Variable(temp_reference.clone()), ArgumentValue::Variable(whole.clone())],
                ));
                self.report.allocations += 1;
            }
            adjustments.prior.push(inlinable_call(
                self.cg,
                "oad_convert_prior",
                "oad_convert",
                vec![ArgumentValue::Variable(temp_reference.clone()), ArgumentValue::Variable(whole.clone())],
            ));
            let passed = match actual.array_access() {
                Some(access) => temp_reference.clone().with_array_access(self.cg, access.clone()),
                None => temp_reference.clone(),
            };
            call.arguments[index].value = ArgumentValue::Variable(passed);
            self.report.external_conversions += 1;
            if self.caller_input(&whole) {
                continue;
            }
            if needs_allocation {
                adjustments.post.push(inlinable_call(
                    self.cg,
                    "oad_shape_test",
                    "oad_ShapeTest",
                    vec![ArgumentValue::Variable(temp_reference.clone()), ArgumentValue::Variable(whole.clone())],
                ));
            }
            adjustments.post.push(inlinable_call(
                self.cg,
                "oad_convert_post",
                "oad_convert",
                vec![ArgumentValue::Variable(whole), ArgumentValue::Variable(temp_reference)],
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{RoutinesBySymbol, names_routine};
    use crate::ir::*;
    use rustc_hash::{FxHashMap, FxHashSet};

    /// What a pass over every routine finds: the last control flow graph of each symbol called.
    fn scanned(cg: &CallGraph, called: &FxHashSet<SymbolId>) -> FxHashMap<SymbolId, RoutineId> {
        cg.cfgs().filter(|(_, cfg)| called.contains(&cfg.symbol)).map(|(id, cfg)| (cfg.symbol, id)).collect()
    }

    fn routine(symbol: SymbolId, scope: ScopeId, list: bool) -> Routine {
        if list {
            return Routine::ReplacementList(ReplacementList {
                id: Name::EMPTY,
                annotation: Name::EMPTY,
                symbol,
                scope,
                body_scope: scope,
                template_name: Name::EMPTY,
                arguments: None,
                replacements: Vec::new(),
            });
        }
        Routine::ControlFlowGraph(ControlFlowGraph {
            id: Name::EMPTY,
            annotation: Name::EMPTY,
            symbol,
            scope,
            body_scope: scope,
            active: false,
            structured: true,
            arguments: None,
            side_effects: SideEffects::default(),
            graph: FlowGraph::default(),
        })
    }

    /// Over a call graph that grows by routines (some of them replacement lists, some
    /// defining a symbol again), whose routines are replaced in place by their own heads or
    /// by replacement lists, and which is cut short now and then, the index finds what a pass
    /// over every routine finds, for every set of symbols called.
    #[test]
    fn bodies_find_what_a_pass_over_every_routine_finds() {
        let mut cg = CallGraph::default();
        let scope = cg.scopes.alloc(Scope { id: Name::EMPTY, annotation: Name::EMPTY, symbols: Vec::new() });
        let symbols: Vec<SymbolId> = (0..6)
            .map(|k| {
                let name = cg.names.intern(&format!("sub{k}"));
                cg.add_symbol(Symbol::new(scope, name))
            })
            .collect();
        let mut bodies = RoutinesBySymbol::default();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n) as usize
        };
        for step in 0..3000 {
            match next(11) {
                0..=4 => {
                    let symbol = symbols[next(6)];
                    let list = next(8) == 0;
                    let made = routine(symbol, scope, list);
                    cg.routines.alloc(made);
                }
                5 | 6 if !cg.routines.is_empty() => {
                    // A routine replaced by its own head (same kind, same symbol).
                    let id = RoutineId::from_raw(la_arena::RawIdx::from_u32(next(cg.routines.len() as u64) as u32));
                    let head = cg.routines[id].clone();
                    cg.routines[id] = head;
                }
                7 if !cg.routines.is_empty() => {
                    // A routine reversed: a replacement list of the same symbol.
                    let id = RoutineId::from_raw(la_arena::RawIdx::from_u32(next(cg.routines.len() as u64) as u32));
                    let symbol = match &cg.routines[id] {
                        Routine::ControlFlowGraph(cfg) => cfg.symbol,
                        Routine::ReplacementList(list) => list.symbol,
                    };
                    cg.routines[id] = routine(symbol, scope, true);
                }
                8 if !cg.routines.is_empty() && step % 2 == 0 => {
                    // A reversed routine's head put back: a control flow graph of the same symbol.
                    let id = RoutineId::from_raw(la_arena::RawIdx::from_u32(next(cg.routines.len() as u64) as u32));
                    let symbol = match &cg.routines[id] {
                        Routine::ControlFlowGraph(cfg) => cfg.symbol,
                        Routine::ReplacementList(list) => list.symbol,
                    };
                    cg.routines[id] = routine(symbol, scope, false);
                }
                9 if step % 7 == 0 => {
                    // Cut short (a worker's copy set back).
                    let keep = next(cg.routines.len() as u64 + 1);
                    let kept: Vec<Routine> = cg.routines.iter().take(keep).map(|(_, r)| r.clone()).collect();
                    cg.routines = la_arena::Arena::default();
                    for r in kept {
                        cg.routines.alloc(r);
                    }
                }
                _ => {}
            }
            let called: FxHashSet<SymbolId> = symbols.iter().copied().filter(|_| next(2) == 0).collect();
            assert_eq!(bodies.called(&cg, &called), scanned(&cg, &called), "step {step}");
        }
    }

    #[test]
    fn wrapper_names_ignore_case_and_decoration() {
        assert!(names_routine("FOO_I_24", "foo_i"));
        assert!(names_routine("foo__3", "FOO"));
        assert!(names_routine("foo", "foo"));
        assert!(!names_routine("foobar_3", "foo"));
        assert!(!names_routine("foo_x", "foo"));
    }
}
