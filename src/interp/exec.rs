//! The machine: activation records, control flow graph walking, subroutine calls with
//! by-reference arguments, and the reversal templates that run a replacement list's
//! placeholders according to the global reversal mode.

use rustc_hash::FxHashMap;

use super::ExecError;
use super::lower::{Arg, Body, Callee, Graph, Node, Program, Ref, Stmt, Storage};
use super::memory::{Binding, Dim, Memory, Tape, Value, element_count};

/// The flags of the original runtime's `our_rev_mode`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RevMode {
    pub arg_store: bool,
    pub arg_restore: bool,
    pub plain: bool,
    pub tape: bool,
    pub adjoint: bool,
}

impl RevMode {
    pub const PLAIN: RevMode =
        RevMode { arg_store: false, arg_restore: false, plain: true, tape: false, adjoint: false };
    pub const TAPE: RevMode =
        RevMode { arg_store: false, arg_restore: false, plain: false, tape: true, adjoint: false };
    pub const ADJOINT: RevMode =
        RevMode { arg_store: false, arg_restore: false, plain: false, tape: false, adjoint: true };
    const STORE_PLAIN: RevMode =
        RevMode { arg_store: true, arg_restore: false, plain: true, tape: false, adjoint: false };
    const RESTORE_TAPE: RevMode =
        RevMode { arg_store: false, arg_restore: true, plain: false, tape: true, adjoint: false };
}

/// Which reversal template a replacement list is run with.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Template {
    /// Joint reversal: a call in tape mode tapes and immediately runs its adjoint; callees are
    /// run plainly with their arguments checkpointed, then restored and re-run in the reverse
    /// sweep.
    #[default]
    Joint,
    /// Split reversal: one whole taping sweep, then one whole adjoint sweep.
    Split,
}

#[derive(Clone, Debug)]
pub struct ExecConfig {
    pub template: Template,
    /// Executed statements and control flow steps before giving up (endless loops).
    pub step_limit: u64,
    /// The most bytes variables and tapes may take.
    pub max_memory: usize,
    /// The most stack the executor's recursion may take, for nested calls and nested
    /// expressions: deep recursion is an error before the thread's stack (8 MiB for a main
    /// thread) runs out.
    pub stack_budget: usize,
    /// The extent, in every dimension, of a local array declared without bounds whose first
    /// store finds it without storage: the front end drops `allocate` (a passive call) from the
    /// XAIF, so a verifier that guesses the size gives it here. `None` refuses such arrays.
    pub unshaped_extent: Option<usize>,
    /// The value every passive store the XAIF leaves out ([`super::lower::PassiveStore`])
    /// puts in each element of the variables it defines: what a verifier guessed when the
    /// original program cannot run without them. `None` leaves those variables as they are.
    pub passive_store_value: Option<i64>,
    /// Run a call of a routine without code (an external routine, or one the document only
    /// names) as a black box that changes nothing, the harmless black box the transformations
    /// assume. `false` refuses such calls.
    pub black_boxes: bool,
}

/// The default step limit. The largest run in the test corpus (one call of the top routine of
/// an original, tangent or joint/split adjoint program, as `verify` makes them) takes 2,626
/// steps (gcmBit1's adjoint); a small loop runs about 12 million steps a second, so a loop that
/// never ends stops in about a second, and programs thousands of times longer than the
/// corpus's still run.
pub const DEFAULT_MAX_STEPS: u64 = 10_000_000;

impl Default for ExecConfig {
    fn default() -> Self {
        ExecConfig {
            template: Template::Joint,
            step_limit: DEFAULT_MAX_STEPS,
            max_memory: super::memory::DEFAULT_MAX_MEMORY,
            stack_budget: 6 << 20,
            unshaped_extent: None,
            passive_store_value: None,
            black_boxes: false,
        }
    }
}

/// A bound argument of a call: where the actual lives.
pub type Actual = Binding;

pub(crate) struct Frame {
    pub routine: usize,
    pub slots: Vec<Option<Binding>>,
}

/// Where a reference points, after evaluating its subscripts.
#[derive(Clone, Debug)]
pub enum Place {
    Scalar(usize),
    Array(Binding),
}

impl Place {
    /// The number of elements an elementwise operation runs over (1 for a scalar).
    pub fn len(&self) -> usize {
        match self {
            Place::Scalar(_) => 1,
            Place::Array(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slot of the `k`-th element; a scalar stands for every element.
    pub fn slot(&self, k: usize) -> usize {
        match self {
            Place::Scalar(s) => *s,
            Place::Array(b) => b.element(k),
        }
    }

    pub fn binding(&self) -> Binding {
        match self {
            Place::Scalar(s) => Binding::scalar(*s),
            Place::Array(b) => b.clone(),
        }
    }
}

/// One execution of a lowered program.
pub struct Machine<'p> {
    pub prog: &'p Program,
    pub mem: Memory,
    pub(crate) globals: Vec<Option<Binding>>,
    pub(crate) frames: Vec<Frame>,
    pub tape: Tape,
    /// The checkpoint stacks, one set per routine (the template declares them `save`).
    pub(crate) checkpoints: FxHashMap<usize, Tape>,
    pub mode: RevMode,
    pub config: ExecConfig,
    /// Statements and control flow steps executed so far.
    pub steps: u64,
    /// Where execution is (or stopped): the innermost control flow vertex and statement.
    pub(crate) spot: Option<Spot<'p>>,
    /// The stack address at the outermost call, to measure how deep calls go.
    stack_base: Option<usize>,
    /// The placeholder whose code runs (0 outside replacement lists), and the floating-point
    /// operations counted per placeholder (`Cell`s: expressions are evaluated through `&self`).
    placeholder: usize,
    operations: [std::cell::Cell<u64>; 14],
    /// Global variables passed as actual arguments to the activations on the stack: `(the
    /// global's symbol, the callee, the dummy's position)`. Fortran forbids changing such a
    /// variable other than through the dummy while the call lasts (F2018 15.5.2.13), so a
    /// compiler may copy it in and out, and so does transformed code (TypeChange's
    /// conversions): a program that does so has no one meaning to differentiate.
    associated_globals: Vec<(u32, usize, u32)>,
    /// Whether `transfer` has put a real's bits into an integer: a dependence no derivative
    /// follows (AD tools treat integers as passive), so derivative code and finite
    /// differences of such a program may rightly disagree.
    pub(crate) reals_through_integers: std::cell::Cell<bool>,
    /// The run's trace, when one is written.
    pub(crate) tracer: Option<super::tracing::Tracer<'p>>,
    /// What `verify` records of this run to find a wrong derivative (`None`: nothing, the
    /// usual case).
    pub(crate) watch: Option<Box<super::localize::Watch<'p>>>,
}

/// A place in the program: a vertex of a routine's graph, and the statement of a basic block.
#[derive(Copy, Clone)]
pub(crate) struct Spot<'p> {
    pub routine: usize,
    /// `None` in a routine whose code is a replacement list, before a placeholder runs.
    pub graph: Option<&'p Graph>,
    pub node: usize,
    pub statement: Option<usize>,
}

impl<'p> Machine<'p> {
    /// A fresh machine: every global variable allocated and zero.
    /// Fails when the global variables do not fit in memory.
    pub fn new(prog: &'p Program, config: ExecConfig) -> Result<Machine<'p>, ExecError> {
        let mut mem = Memory::with_limit(config.max_memory);
        let mut globals = vec![None; prog.global_slots as usize];
        for sym in &prog.syms {
            if let Storage::Global { slot } = sym.storage
                && let (Some(bounds), Some(init)) = (&sym.bounds, sym.initial_value())
            {
                // Before any routine runs: a failure is located at the declaration.
                let binding = allocate(&mut mem, bounds, init, 0, &sym.name).map_err(|error| ExecError::Located {
                    error: Box::new(error),
                    at: Box::new(super::Location {
                        routine: String::new(),
                        vertex: None,
                        statement: None,
                        symbol: Some((sym.scope.clone(), sym.name.clone())),
                    }),
                })?;
                globals[slot as usize] = Some(binding);
            }
        }
        Ok(Machine {
            prog,
            mem,
            globals,
            frames: Vec::new(),
            tape: Tape::default(),
            checkpoints: FxHashMap::default(),
            mode: RevMode::PLAIN,
            config,
            steps: 0,
            spot: None,
            stack_base: None,
            placeholder: 0,
            operations: Default::default(),
            associated_globals: Vec::new(),
            reals_through_integers: std::cell::Cell::new(false),
            tracer: None,
            watch: None,
        })
    }

    /// Writes this run's trace to `tracer` (see [`super::tracing`]).
    pub fn trace_into(&mut self, tracer: super::tracing::Tracer<'p>) {
        self.tracer = Some(tracer);
    }

    /// Ends the run's trace, if one is written.
    pub fn finish_trace(&mut self) -> Result<(), ExecError> {
        match self.tracer.take() {
            Some(tracer) => tracer.finish(),
            None => Ok(()),
        }
    }

    /// Counts `n` floating-point operations for the placeholder whose code runs.
    pub(crate) fn count_operations(&self, n: usize) {
        // One cell: this runs for every elemental operation the program evaluates.
        let count = &self.operations[self.placeholder];
        count.set(count.get() + n as u64);
    }

    /// The floating-point operations counted so far.
    pub fn operations(&self) -> super::memory::Operations {
        super::memory::Operations { by_placeholder: self.operations.each_ref().map(std::cell::Cell::get) }
    }

    /// Allocates a variable for the caller of a top routine (a driver's own variable).
    pub fn alloc_driver(&mut self, bounds: &[(i64, i64)], init: Value, name: &str) -> Result<Binding, ExecError> {
        let tapes = self.tape_bytes();
        allocate(&mut self.mem, bounds, init, tapes, name)
    }

    /// What the tapes and checkpoint stacks hold, in bytes.
    pub(crate) fn tape_bytes(&self) -> usize {
        self.checkpoints.values().fold(self.tape.bytes(), |sum, tape| sum.saturating_add(tape.bytes()))
    }

    /// Fails when the tapes have grown past the memory limit.
    pub(crate) fn check_memory(&self) -> Result<(), ExecError> {
        self.mem.check(self.tape_bytes())
    }

    /// Whether the executor's recursion (calls, nested expressions) has taken more stack than
    /// its budget since the outermost call.
    pub(crate) fn stack_exhausted(&self) -> bool {
        self.stack_base.is_some_and(|base| stack_address().abs_diff(base) > self.config.stack_budget)
    }

    /// Where execution is, or stopped.
    pub fn location(&self) -> Option<super::Location> {
        let spot = self.spot?;
        let statement = spot.statement.zip(spot.graph).and_then(|(k, g)| g.statement_ids.get(spot.node)?.get(k));
        Some(super::Location {
            routine: self.prog.routines[spot.routine].name.clone(),
            vertex: spot.graph.and_then(|g| g.vertex_ids.get(spot.node)).cloned(),
            statement: statement.filter(|id| !id.is_empty()).cloned(),
            symbol: None,
        })
    }

    /// The routine whose symbol is named `name`.
    pub fn routine_named(&self, name: &str) -> Option<usize> {
        self.prog.routines.iter().position(|r| r.name == name)
    }

    pub(crate) fn binding(&self, sym: u32) -> Result<&Binding, ExecError> {
        let info = &self.prog.syms[sym as usize];
        let found = match info.storage {
            Storage::Global { slot } => self.globals[slot as usize].as_ref(),
            Storage::Local { routine, slot } => {
                self.frames.iter().rev().find(|f| f.routine == routine).and_then(|f| f.slots[slot as usize].as_ref())
            }
        };
        found.ok_or_else(|| {
            if info.initial_value().is_none() {
                ExecError::Unsupported(format!("variable {} of type {:?}", info.name, info.ty).to_lowercase())
            } else if info.bounds.is_none() {
                ExecError::Unsupported(format!(
                    "array {} without a declared shape (allocatable or automatic)",
                    info.name
                ))
            } else {
                ExecError::Runtime(format!("variable {} is not available (absent argument)", info.name))
            }
        })
    }

    /// Evaluates the subscripts of `r`.
    pub(crate) fn place(&self, r: &Ref) -> Result<Place, ExecError> {
        if let Some(why) = &r.unsupported {
            return Err(ExecError::Unsupported(why.clone()));
        }
        let b = self.binding(r.sym)?;
        if r.subs.is_empty() {
            return Ok(if b.is_array() { Place::Array(b.clone()) } else { Place::Scalar(b.base) });
        }
        let name = &self.prog.syms[r.sym as usize].name;
        if b.dims.is_empty()
            && matches!(self.prog.syms[r.sym as usize].ty, crate::ir::SymbolType::String | crate::ir::SymbolType::Char)
        {
            return Err(ExecError::Unsupported(format!("substring of {name}")));
        }
        if r.subs.len() != b.dims.len() {
            return Err(ExecError::Runtime(format!(
                "{name} has rank {} but is referenced with {} subscripts",
                b.dims.len(),
                r.subs.len()
            )));
        }
        let mut indices = [0i64; 8];
        let mut section = false;
        for (i, sub) in r.subs.iter().enumerate() {
            match sub {
                super::lower::Sub::Index(e) => indices[i] = self.eval(e, None)?.as_i64()?,
                super::lower::Sub::Section { .. } => section = true,
            }
        }
        if !section {
            return Ok(Place::Scalar(b.index(&indices[..r.subs.len()], name)?));
        }
        // In 128 bits: subscripts are program values and may be anything.
        let out_of_range = || ExecError::Runtime(format!("section of {name} out of bounds"));
        let mut base = b.base as i128;
        let mut dims = Vec::new();
        for (i, (sub, d)) in r.subs.iter().zip(b.dims.iter()).enumerate() {
            let inside = |ix: i64| ix >= d.lower && (ix as i128) < d.lower as i128 + d.extent as i128;
            match sub {
                super::lower::Sub::Index(_) => {
                    let ix = indices[i];
                    if !inside(ix) {
                        return Err(ExecError::Runtime(format!("index {ix} of {name} out of bounds")));
                    }
                    base += (ix as i128 - d.lower as i128) * d.stride as i128;
                }
                super::lower::Sub::Section { lower, upper, stride } => {
                    let opt = |e: &Option<super::lower::Expr>, default: i64| match e {
                        Some(e) => self.eval(e, None)?.as_i64(),
                        None => Ok(default),
                    };
                    let lo = opt(lower, d.lower)?;
                    let hi = opt(upper, d.lower.saturating_add(d.extent - 1))?;
                    let st = opt(stride, 1)?;
                    if st == 0 {
                        return Err(ExecError::Runtime(format!("zero stride in a section of {name}")));
                    }
                    let extent = ((hi as i128 - lo as i128 + st as i128) / st as i128).max(0);
                    if extent > 0 {
                        let last = lo as i128 + (extent - 1) * st as i128;
                        let last = i64::try_from(last).map_err(|_| out_of_range())?;
                        if !inside(lo) || !inside(last) {
                            return Err(out_of_range());
                        }
                    }
                    base += (lo as i128 - d.lower as i128) * d.stride as i128;
                    let stride = d.stride.checked_mul(st).ok_or_else(out_of_range)?;
                    // Inside the dimension, so no longer than it.
                    dims.push(Dim { lower: 1, extent: extent as i64, stride });
                }
            }
        }
        let base = usize::try_from(base).map_err(|_| out_of_range())?;
        Ok(Place::Array(Binding { base, dims: dims.into() }))
    }

    pub(crate) fn tick(&mut self) -> Result<(), ExecError> {
        self.steps += 1;
        if self.steps > self.config.step_limit {
            return Err(ExecError::Runtime(format!(
                "stopped after {} steps, the step limit (--max-steps)",
                self.config.step_limit
            )));
        }
        Ok(())
    }

    /// Calls `routine` with the actual arguments `(position, binding)`.
    pub fn call(&mut self, routine: usize, actuals: &[(u32, Actual)]) -> Result<(), ExecError> {
        let prog = self.prog;
        let code = &prog.routines[routine];
        if matches!(code.body, Body::External) {
            if self.config.black_boxes {
                return Ok(());
            }
            return Err(ExecError::Unsupported(format!(
                "external routine {} (--black-boxes runs it as a black box that changes nothing)",
                code.name
            )));
        }
        if self.frames.len() > 10_000 {
            return Err(ExecError::Runtime("call depth exceeds 10000".into()));
        }
        if self.frames.is_empty() {
            self.stack_base = Some(stack_address());
        } else if self.stack_exhausted() {
            return Err(ExecError::Runtime(format!(
                "recursion too deep: {} nested calls exceed the executor's stack budget of {}",
                self.frames.len(),
                super::memory::format_bytes(self.config.stack_budget)
            )));
        }
        // Until its code runs, a failure (binding arguments, allocating locals) is at its Entry,
        // or at the replacement list of a transformed routine.
        self.spot = Some(match &code.body {
            Body::Cfg(graph) => Spot { routine, graph: Some(graph), node: graph.entry as usize, statement: None },
            _ => Spot { routine, graph: None, node: 0, statement: None },
        });
        let mark = self.mem.top();
        let mut slots: Vec<Option<Binding>> = vec![None; code.locals.len()];
        for &(position, formal) in &code.formals {
            let info = &prog.syms[formal.into_raw().into_u32() as usize];
            let Storage::Local { routine: owner, slot } = info.storage else {
                continue;
            };
            if owner != routine {
                // Two routines naming one scope as their own: the activation record is the
                // other routine's.
                return Err(ExecError::Unsupported(format!(
                    "formal {} of {} is a local of {} (the two routines share one scope)",
                    info.name, code.name, prog.routines[owner].name
                )));
            }
            if let Some((_, actual)) = actuals.iter().find(|(p, _)| *p == position) {
                slots[slot as usize] = Some(associate(actual, info.rank, info.bounds.as_deref(), &info.name)?);
            }
        }
        let formal_slots: Vec<bool> = {
            let mut is_formal = vec![false; code.locals.len()];
            for &(_, formal) in &code.formals {
                if let Storage::Local { routine: owner, slot } =
                    prog.syms[formal.into_raw().into_u32() as usize].storage
                    && owner == routine
                {
                    is_formal[slot as usize] = true;
                }
            }
            is_formal
        };
        for &local in &code.locals {
            let info = &prog.syms[local.into_raw().into_u32() as usize];
            let Storage::Local { slot, .. } = info.storage else {
                continue;
            };
            if formal_slots[slot as usize] {
                continue;
            }
            if let (Some(bounds), Some(init)) = (&info.bounds, info.initial_value()) {
                let tapes = self.tape_bytes();
                match allocate(&mut self.mem, bounds, init, tapes, &info.name) {
                    Ok(binding) => slots[slot as usize] = Some(binding),
                    Err(e) => {
                        self.mem.release(mark);
                        return Err(e);
                    }
                }
            }
        }
        self.frames.push(Frame { routine, slots });
        let mut result = if self.watch.is_some() { self.watch_call(routine, true) } else { Ok(()) };
        if result.is_ok() {
            result = match &code.body {
                Body::External => Ok(()),
                Body::Cfg(graph) => self.run_graph(graph),
                Body::Template(graphs) => self.run_template(graphs),
            };
        }
        if result.is_ok() && self.watch.is_some() {
            result = self.watch_call(routine, false);
        }
        self.frames.pop();
        self.mem.release(mark);
        result
    }

    fn run_template(&mut self, graphs: &'p [Option<Graph>]) -> Result<(), ExecError> {
        let run = |m: &mut Self, placeholder: usize| {
            // The adjoint sweep proper, whose start and end a watch compares.
            let watched = placeholder == 3 && m.watch.is_some();
            if watched {
                m.watch_adjoint_sweep(true)?;
            }
            let result = match &graphs[placeholder] {
                Some(g) => {
                    let outer = std::mem::replace(&mut m.placeholder, placeholder);
                    let result = m.run_graph(g);
                    m.placeholder = outer;
                    result
                }
                None => Ok(()),
            };
            if watched && result.is_ok() { m.watch_adjoint_sweep(false) } else { result }
        };
        match self.config.template {
            Template::Split => {
                if self.mode.plain {
                    run(self, 1)?;
                }
                if self.mode.tape {
                    run(self, 2)?;
                }
                if self.mode.adjoint {
                    run(self, 3)?;
                }
            }
            Template::Joint => {
                if self.mode.arg_store {
                    run(self, 4)?;
                }
                if self.mode.arg_restore {
                    run(self, 6)?;
                }
                if self.mode.plain {
                    let orig = self.mode;
                    self.mode.arg_store = false;
                    run(self, 1)?;
                    self.mode = orig;
                }
                if self.mode.tape {
                    self.mode = RevMode::STORE_PLAIN;
                    run(self, 2)?;
                    self.mode = RevMode::ADJOINT;
                }
                if self.mode.adjoint {
                    self.mode = RevMode::RESTORE_TAPE;
                    run(self, 3)?;
                    self.mode = RevMode::RESTORE_TAPE;
                }
            }
        }
        Ok(())
    }

    pub(crate) fn run_graph(&mut self, g: &'p Graph) -> Result<(), ExecError> {
        let mut last_loop = None;
        let result = self.walk_graph(g, &mut last_loop);
        match result {
            // Out of steps, and no inner graph named a loop: the loop whose back edge this
            // graph took last is the one that did not end.
            Err(error) if self.steps > self.config.step_limit && error.location().is_none() => match last_loop {
                Some(header) => {
                    let routine = self.prog.routines[self.current_routine()].name.clone();
                    let vertex = g.vertex_ids.get(header).cloned().unwrap_or_default();
                    Err(ExecError::Located {
                        error: Box::new(ExecError::Runtime(format!(
                            "the loop at vertex '{vertex}' of routine {routine} did not end within the step limit: \
                             stopped after {} steps (--max-steps)",
                            self.config.step_limit
                        ))),
                        at: Box::new(super::Location { routine, vertex: Some(vertex), statement: None, symbol: None }),
                    })
                }
                None => Err(error),
            },
            other => other,
        }
    }

    /// Walks `g` from its entry to its exit; `last_loop` is the last loop header (or target of
    /// an edge backwards) reached.
    fn walk_graph(&mut self, g: &'p Graph, last_loop: &mut Option<usize>) -> Result<(), ExecError> {
        let mut at = g.entry as usize;
        let mut prev = None;
        let mut from_end_loop = false;
        let routine = self.current_routine();
        loop {
            self.spot = Some(Spot { routine, graph: Some(g), node: at, statement: None });
            self.tick()?;
            if self.tracer.is_some() {
                self.trace_arrival(g, prev, at)?;
            }
            let node = &g.nodes[at];
            let back_edge = std::mem::take(&mut from_end_loop);
            let next = match node {
                Node::Entry { next } | Node::Jump { next } => {
                    if *next as usize <= at {
                        *last_loop = Some(*next as usize);
                    }
                    *next as usize
                }
                Node::Exit => return Ok(()),
                Node::Block { stmts, next, passive_stores } => {
                    for (k, stmt) in stmts.iter().enumerate() {
                        self.spot = Some(Spot { routine, graph: Some(g), node: at, statement: Some(k) });
                        if !passive_stores.is_empty() {
                            self.passive_stores(passive_stores, k)?;
                        }
                        let traced_call = self.tracer.is_some() && self.trace_statement(g, at, k)?;
                        self.exec(stmt)?;
                        if traced_call {
                            self.trace_return()?;
                        }
                    }
                    if !passive_stores.is_empty() {
                        self.passive_stores(passive_stores, stmts.len())?;
                    }
                    if self.watch.is_some() {
                        self.watch_block_end()?;
                    }
                    // A block with an edge to itself (or back to an earlier vertex) loops.
                    if *next as usize <= at {
                        *last_loop = Some(*next as usize);
                    }
                    *next as usize
                }
                Node::Branch { cond, arms, default } => {
                    let selector = match self.eval(cond, None)? {
                        Value::Bool(b) => b as i64,
                        Value::Int(i) => i,
                        other => {
                            return Err(ExecError::Runtime(format!("branch on a {} value", other.type_name())));
                        }
                    };
                    match arms.iter().find(|(v, _)| *v == selector).map(|(_, t)| *t).or(*default) {
                        Some(t) => t as usize,
                        None => {
                            return Err(ExecError::Runtime(format!("no branch edge for value {selector}")));
                        }
                    }
                }
                Node::For { init, cond, update, body, exit } => {
                    let step = if back_edge { update } else { init };
                    if let Some(a) = step {
                        self.assign(a)?;
                    }
                    if self.eval(cond, None)?.as_bool()? {
                        *body as usize
                    } else {
                        if self.tracer.is_some() {
                            self.trace_loop_exit(g, at)?;
                        }
                        *exit as usize
                    }
                }
                Node::Pre { cond, body, exit } => {
                    if self.eval(cond, None)?.as_bool()? {
                        *body as usize
                    } else {
                        if self.tracer.is_some() {
                            self.trace_loop_exit(g, at)?;
                        }
                        *exit as usize
                    }
                }
                Node::Post { cond, body, exit } => {
                    if !back_edge || self.eval(cond, None)?.as_bool()? {
                        *body as usize
                    } else {
                        if self.tracer.is_some() {
                            self.trace_loop_exit(g, at)?;
                        }
                        *exit as usize
                    }
                }
                Node::EndLoop { header } => {
                    from_end_loop = true;
                    *last_loop = Some(*header as usize);
                    *header as usize
                }
                Node::Bad(why) => return Err(ExecError::Runtime(why.clone())),
            };
            prev = Some(at);
            at = next;
        }
    }

    /// Runs the passive stores that come before statement `before` of a block, if a guess
    /// gives their value: every element of each variable they define gets it.
    fn passive_stores(&mut self, stores: &[super::lower::PassiveStore], before: usize) -> Result<(), ExecError> {
        let Some(value) = self.config.passive_store_value else {
            return Ok(());
        };
        for store in stores.iter().filter(|s| s.before == before) {
            for &sym in &store.targets {
                let value = match self.prog.syms[sym as usize].ty {
                    crate::ir::SymbolType::Integer => Value::Int(value),
                    crate::ir::SymbolType::Real => Value::Real(value as f64),
                    _ => continue,
                };
                let whole = Ref { sym, subs: Vec::new(), deriv: false, unsupported: None };
                // An array not allocated yet has no elements to set.
                let Ok(place) = self.place(&whole) else {
                    continue;
                };
                for k in 0..place.len() {
                    self.mem.set(place.slot(k), value.clone())?;
                }
            }
        }
        Ok(())
    }

    fn exec(&mut self, stmt: &'p Stmt) -> Result<(), ExecError> {
        self.tick()?;
        if self.watch.is_some() {
            return self.exec_watched(stmt);
        }
        self.exec_statement(stmt)
    }

    /// Executes one statement (its step counted already).
    pub(crate) fn exec_statement(&mut self, stmt: &'p Stmt) -> Result<(), ExecError> {
        match stmt {
            Stmt::Assign(a) => self.assign(a),
            Stmt::Call(call) => {
                let callee = match &call.callee {
                    Callee::Routine(k) => *k,
                    // A black box changes nothing: its arguments need not even be bound.
                    Callee::Undefined(_) if self.config.black_boxes => return Ok(()),
                    Callee::Undefined(name) => {
                        return Err(ExecError::Unsupported(format!(
                            "call of {name} which has no control flow graph (--black-boxes runs it as a black box that changes nothing)"
                        )));
                    }
                    Callee::Invalid(why) => return Err(ExecError::Unsupported(why.clone())),
                };
                let mark = self.mem.top();
                let mut actuals = Vec::with_capacity(call.args.len());
                let associated = self.associated_globals.len();
                for (position, arg) in &call.args {
                    let binding = match arg {
                        Arg::Ref(r) => {
                            if !r.deriv && matches!(self.prog.syms[r.sym as usize].storage, Storage::Global { .. }) {
                                self.associated_globals.push((r.sym, callee, *position));
                            }
                            match self.place(r)? {
                                Place::Scalar(slot) if !r.subs.is_empty() && self.dummy_rank(callee, *position) > 0 => {
                                    self.rest_of_array(r.sym, slot)?
                                }
                                place => place.binding(),
                            }
                        }
                        Arg::Const(v) => {
                            let tapes = self.tape_bytes();
                            Binding::scalar(self.mem.alloc(1, v.clone(), tapes)?)
                        }
                    };
                    actuals.push((*position, binding));
                }
                let result = self.call(callee, &actuals);
                self.associated_globals.truncate(associated);
                self.mem.release(mark);
                result
            }
            Stmt::Inline(call) => self.inline_call(call),
            Stmt::Prop(ops) => {
                for op in ops {
                    self.propagate(op)?;
                }
                Ok(())
            }
        }
    }

    pub(crate) fn assign(&mut self, a: &super::lower::Assign) -> Result<(), ExecError> {
        if !self.associated_globals.is_empty() && !a.lhs.deriv {
            self.refuse_store_to_associated(a.lhs.sym)?;
        }
        let place = match self.shaping_place(&a.lhs) {
            Ok(place) => place,
            // A whole-array assignment to a local array declared without a shape: Fortran
            // requires the right-hand side to conform (and allocates an allocatable to its
            // shape), so the first whole array the right-hand side reads gives the shape.
            Err(unshaped @ ExecError::Unsupported(_))
                if !a.lhs.deriv && a.lhs.subs.is_empty() && self.unshaped_local(a.lhs.sym) =>
            {
                let Some(like) = first_whole_array(self.prog, &a.rhs) else {
                    return Err(unshaped);
                };
                let bounds = self.place(like)?.binding().bounds();
                if bounds.len() != self.prog.syms[a.lhs.sym as usize].rank {
                    return Err(unshaped);
                }
                self.allocate_local(a.lhs.sym, &bounds)?;
                self.place(&a.lhs)?
            }
            Err(e) => return Err(e),
        };
        match place {
            Place::Scalar(slot) => {
                let v = self.eval(&a.rhs, None)?;
                if a.lhs.deriv {
                    *self.mem.deriv_mut(slot)? = v.as_f64()?;
                    Ok(())
                } else {
                    self.mem.set(slot, v)
                }
            }
            Place::Array(b) => {
                // Fortran evaluates the whole right-hand side before storing.
                let values = (0..b.len()).map(|k| self.eval(&a.rhs, Some(k))).collect::<Result<Vec<_>, _>>()?;
                for (k, v) in values.into_iter().enumerate() {
                    let slot = b.element(k);
                    if a.lhs.deriv {
                        *self.mem.deriv_mut(slot)? = v.as_f64()?;
                    } else {
                        self.mem.set(slot, v)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// [`Self::place`], except that a section `z(1:u)` (stride 1, every dimension) of a local
    /// array declared without a shape and not yet given storage allocates it with those bounds
    /// first. The front end spells the whole of an automatic array (`real z(size(x))`, whose
    /// declared bounds it drops) that way; were the real array larger, a later access beyond
    /// `u` fails loudly as out of bounds, never reading garbage.
    pub(crate) fn shaping_place(&mut self, r: &Ref) -> Result<Place, ExecError> {
        let unshaped = match self.place(r) {
            Err(unshaped @ ExecError::Unsupported(_)) if self.unshaped_local(r.sym) => unshaped,
            other => return other,
        };
        let rank = self.prog.syms[r.sym as usize].rank;
        let bounds = match (self.section_bounds(r, rank)?, self.config.unshaped_extent) {
            (Some(bounds), _) => bounds,
            (None, Some(extent)) => vec![(1, extent as i64); rank],
            (None, None) => return Err(unshaped),
        };
        self.allocate_local(r.sym, &bounds)?;
        self.place(r)
    }

    /// The bounds `(1, u)` of a reference `z(1:u, …)` to every dimension of an array of rank
    /// `rank` with stride 1; `None` for any other reference.
    fn section_bounds(&self, r: &Ref, rank: usize) -> Result<Option<Vec<(i64, i64)>>, ExecError> {
        if r.subs.len() != rank {
            return Ok(None);
        }
        let mut bounds = Vec::with_capacity(r.subs.len());
        for sub in &r.subs {
            let super::lower::Sub::Section { lower: Some(lower), upper: Some(upper), stride } = sub else {
                return Ok(None);
            };
            let lower = self.eval(lower, None)?.as_i64()?;
            let upper = self.eval(upper, None)?.as_i64()?;
            let stride = match stride {
                Some(stride) => self.eval(stride, None)?.as_i64()?,
                None => 1,
            };
            if lower != 1 || stride != 1 || upper < 0 {
                return Ok(None);
            }
            bounds.push((lower, upper));
        }
        Ok(Some(bounds))
    }

    /// The rank of `callee`'s dummy argument at `position` (0 if it has none there).
    fn dummy_rank(&self, callee: usize, position: u32) -> usize {
        self.prog.routines[callee]
            .formals
            .iter()
            .find(|(p, _)| *p == position)
            .map_or(0, |&(_, f)| self.prog.syms[f.into_raw().into_u32() as usize].rank)
    }

    /// An array element passed to an array dummy: by sequence association (Fortran 2018
    /// 15.5.2.11) the dummy's elements are the actual's from that element to the end of its
    /// array, a vector here, of which the dummy's declared shape (if the document has it)
    /// takes what it needs. A non-contiguous array passes the element alone.
    fn rest_of_array(&self, sym: u32, slot: usize) -> Result<Binding, ExecError> {
        let array = self.binding(sym)?;
        if !array.is_contiguous() || slot < array.base || slot >= array.base + array.len() {
            return Ok(Binding::scalar(slot));
        }
        let rest = (array.base + array.len() - slot) as i64;
        Ok(Binding::contiguous(slot, &[(1, rest)]))
    }

    /// The error for a store to `sym` by its own name while it is associated with a dummy
    /// argument of an activation on the stack (see `associated_globals`).
    fn refuse_store_to_associated(&self, sym: u32) -> Result<(), ExecError> {
        let Some(&(_, callee, position)) = self.associated_globals.iter().find(|(g, _, _)| *g == sym) else {
            return Ok(());
        };
        let code = &self.prog.routines[callee];
        let dummy = code.formals.iter().find(|(p, _)| *p == position).map_or_else(
            || format!("argument {position}"),
            |&(_, f)| self.prog.syms[f.into_raw().into_u32() as usize].name.clone(),
        );
        Err(ExecError::Unsupported(format!(
            "non-conforming program: global {} is modified by its own name while it is associated with dummy argument {dummy} of {}, which Fortran forbids (a compiler, like the transformed code, may copy the argument in and out)",
            self.prog.syms[sym as usize].name, code.name
        )))
    }

    /// A local array declared without bounds that has no storage yet; with a guessed
    /// [`ExecConfig::unshaped_extent`], a module's array too.
    fn unshaped_local(&self, sym: u32) -> bool {
        let info = &self.prog.syms[sym as usize];
        let storage = match info.storage {
            Storage::Local { .. } => true,
            Storage::Global { .. } => self.config.unshaped_extent.is_some(),
        };
        info.rank > 0 && info.bounds.is_none() && storage && self.binding(sym).is_err()
    }

    /// The routine of the innermost activation (whose checkpoint stacks a runtime call uses).
    pub(crate) fn current_routine(&self) -> usize {
        self.frames.last().map_or(usize::MAX, |f| f.routine)
    }
}

/// The address of a local of the caller's frame: how deep the stack is.
#[inline(always)]
fn stack_address() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// The first whole array (a reference without subscripts to an array) an expression reads.
fn first_whole_array<'e>(prog: &Program, expr: &'e super::lower::Expr) -> Option<&'e super::lower::Ref> {
    use super::lower::Expr;
    match expr {
        Expr::Load(r) if r.subs.is_empty() && prog.syms[r.sym as usize].rank > 0 => Some(r),
        Expr::Elemental(_, args) | Expr::Bool(_, args) => args.iter().find_map(|a| first_whole_array(prog, a)),
        _ => None,
    }
}

/// Storage for the variable `name` with these bounds (none: a scalar), within the memory
/// limit (`tape_bytes` being taken already).
pub(crate) fn allocate(
    mem: &mut Memory,
    bounds: &[(i64, i64)],
    init: Value,
    tape_bytes: usize,
    name: &str,
) -> Result<Binding, ExecError> {
    let n = element_count(bounds).map_err(|why| ExecError::Runtime(format!("array {name}: {why}")))?;
    let base = mem.alloc(n, init, tape_bytes).map_err(|e| match e {
        ExecError::Runtime(why) => ExecError::Runtime(format!("array {name}: {why}")),
        other => other,
    })?;
    Ok(if bounds.is_empty() { Binding::scalar(base) } else { Binding::contiguous(base, bounds) })
}

/// Binds a formal to an actual: scalars to the actual's slot, explicit-shape arrays by
/// sequence association from the actual's first element, assumed-shape arrays to the actual's
/// shape with lower bounds 1.
fn associate(actual: &Binding, rank: usize, bounds: Option<&[(i64, i64)]>, name: &str) -> Result<Binding, ExecError> {
    if rank == 0 {
        return Ok(Binding::scalar(actual.base));
    }
    match bounds {
        Some(bounds) if actual.is_contiguous() => {
            // Sequence association: an array element passes the rest of its array too, so the
            // dummy's size is not checked here; an access beyond memory fails when it happens.
            element_count(bounds).map_err(|why| ExecError::Runtime(format!("argument {name}: {why}")))?;
            Ok(Binding::contiguous(actual.base, bounds))
        }
        Some(bounds) if actual.dims.len() == bounds.len() => {
            let dims: Vec<Dim> = actual.dims.iter().zip(bounds).map(|(d, &(lower, _))| Dim { lower, ..*d }).collect();
            Ok(Binding { base: actual.base, dims: dims.into() })
        }
        Some(_) => Err(ExecError::Unsupported(format!("non-contiguous actual argument for {name} of another rank"))),
        None if actual.dims.len() == rank => {
            let dims: Vec<Dim> = actual.dims.iter().map(|d| Dim { lower: 1, ..*d }).collect();
            Ok(Binding { base: actual.base, dims: dims.into() })
        }
        None => Err(ExecError::Unsupported(format!("assumed-shape argument {name} of rank {rank} with another rank"))),
    }
}
