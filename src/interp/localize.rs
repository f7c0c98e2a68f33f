//! Finding the first wrong derivative of a transformed program.
//!
//! When `verify` finds a tangent program's Jacobian wrong, it runs the original program with
//! dual numbers ([`super::dual`]) and the tangent program side by side, seeded in the input
//! direction of the first wrong entry, and names the first original statement after which a
//! derivative of the tangent program differs from the exact one.
//!
//! The two runs are aligned by statement ids. The tangent program keeps every original
//! assignment with its `statement_id`, and what the transformation adds (partials, auxiliaries,
//! propagators, conversions) has ids no original statement has, or none. So the assignments
//! whose ids the original routine has, in execution order, are the original's steps; both runs
//! must take the same steps (else control flow parts there) with the same values (else the
//! step's value is the first thing wrong).
//!
//! An assignment of tangent code stores a value only; derivative components change in the
//! propagator that ends its stretch of the basic block, in calls and in runtime calls. So a
//! step's derivatives settle where its stretch ends (a propagator, a call, the block's end),
//! for the elements no later step of the stretch stores again, and only for active real
//! left-hand sides, the ones the tangent program gives derivatives. A settled derivative is
//! compared with the dual run's where tangent code reads it (a propagator's source) and, for
//! the top routine's arguments and the globals, when the top routine returns: a local that is
//! never read again needs no derivative, and the transformation may leave it unset. A
//! propagator or runtime call that stores a settled derivative ends what is known of it. Of
//! all the steps found wrong, the earliest is reported: everything computed from it is wrong
//! too.
//!
//! When an adjoint program's Jacobian is wrong, the dot-product test is applied per routine
//! call. The dual run gives, for each call of a routine, the tangent `ẋ` of its state (real
//! active formals, the host variables a contained routine uses, active globals) at entry and
//! `J ẋ` at exit; the adjoint run gives the adjoint `ȳ` of the same state where the routine's
//! adjoint sweep starts and `Jᵀȳ` where it ends. `<ȳ, J ẋ> = <Jᵀȳ, ẋ>` must hold for every
//! call whatever `ȳ` is. The reverse sweep meets calls in the reverse of the order in which
//! they returned, which pairs them. The routine reported is one whose call fails with no
//! failing call nested inside it: a callee's wrong adjoint makes its callers fail too.

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use super::ExecError;
use super::exec::Machine;
use super::lower::{Body, Program, Stmt, Storage};
use super::memory::Value;
use super::verify::{Driver, Sweep};

/// The most elements the dual run records for the comparison (about 32 bytes each).
const MAX_TRACE_ELEMENTS: usize = 8 << 20;

/// What the comparison found.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Localization {
    /// The first original statement after which the tangent program's derivative (or value)
    /// differs from the exact one.
    Statement(WrongStatement),
    /// The two runs took different original statements: control flow parts there.
    ControlFlow {
        routine: String,
        /// The statement the original ran (empty: the original had finished).
        expected: String,
        /// The statement the transformed program ran (empty: it had finished).
        found: String,
        /// Original statements that agreed before.
        agreed: usize,
    },
    /// The innermost routine whose adjoint fails the dot-product test.
    Routine(WrongRoutine),
    /// Nothing to name, and why.
    NotFound { reason: String },
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WrongStatement {
    pub routine: String,
    pub statement: String,
    /// The front end's source line (the statement's `lineNumber` in the original XAIF).
    pub line: Option<u64>,
    /// The element stored, as `name` or `name(i,j)`.
    pub variable: String,
    /// `derivative` or `value`.
    pub quantity: &'static str,
    /// The independent whose direction was seeded.
    pub direction: String,
    /// The original program's, by dual numbers.
    pub exact: f64,
    /// The transformed program's.
    pub transformed: f64,
    /// Original statements executed before whose results agreed.
    pub agreed: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WrongRoutine {
    pub routine: String,
    /// Which call (1-based, in the order the original makes them) fails first.
    pub call: usize,
    /// How many calls of the routine fail, of how many.
    pub failing_calls: usize,
    pub calls: usize,
    /// `<ȳ, J ẋ>` and `<Jᵀȳ, ẋ>` of that call, and their relative difference.
    pub tangent_side: f64,
    pub adjoint_side: f64,
    pub error: f64,
}

impl Localization {
    /// What is wrong at the statement or routine named, for a message located there (which
    /// gives the source line itself).
    pub fn at_location(&self) -> String {
        match self {
            Localization::Statement(s) => format!(
                "first wrong {}: {} is {:.16e} in the transformed program, {:.16e} exactly",
                s.quantity,
                s.what(),
                s.transformed,
                s.exact
            ),
            Localization::Routine(r) => format!(
                "first wrong adjoint: call {} of {} fails the dot-product test against exact tangents (error {:.2e})",
                r.call, r.routine, r.error
            ),
            other => other.to_string(),
        }
    }
}

impl WrongStatement {
    /// `value of y` or `d y / d x`.
    fn what(&self) -> String {
        if self.quantity == "value" {
            format!("value of {}", self.variable)
        } else {
            format!("d {} / d {}", self.variable, self.direction)
        }
    }
}

impl std::fmt::Display for Localization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Localization::Statement(s) => {
                let line = s.line.map_or_else(|| "no source line".to_owned(), |l| format!("source line {l}"));
                let what = s.what();
                write!(
                    f,
                    "first wrong {}: routine {}, statement '{}' ({line}): {what} is {:.16e} in the transformed program, {:.16e} exactly (dual numbers on the original), after {} original statements agreed",
                    s.quantity, s.routine, s.statement, s.transformed, s.exact, s.agreed
                )
            }
            Localization::ControlFlow { routine, expected, found, agreed } => {
                let show = |s: &str| {
                    if s.is_empty() { "nothing (it had finished)".to_owned() } else { format!("statement '{s}'") }
                };
                write!(
                    f,
                    "control flow parts in routine {routine} after {agreed} original statements agreed: the original runs {}, the transformed program {}",
                    show(expected),
                    show(found)
                )
            }
            Localization::Routine(r) => write!(
                f,
                "first wrong adjoint: routine {} fails the dot-product test against exact tangents on call {} ({} of its {} calls fail): <ybar, J xdot> = {:.16e}, <J^T ybar, xdot> = {:.16e}, error {:.2e}",
                r.routine, r.call, r.failing_calls, r.calls, r.tangent_side, r.adjoint_side, r.error
            ),
            Localization::NotFound { reason } => write!(f, "no wrong derivative located: {reason}"),
        }
    }
}

/// What a watched run records: see [`Machine::exec_watched`].
pub(crate) enum Watch<'p> {
    /// Original code with dual numbers.
    Dual(DualRun<'p>),
    /// Tangent code compared with a dual run's steps as it runs.
    Tangent(TangentCheck<'p>),
    /// Adjoint code: the state's adjoints around each adjoint sweep.
    Adjoint(States),
}

pub(crate) struct DualRun<'p> {
    /// The steps, when recorded.
    steps: Option<Vec<DualStep<'p>>>,
    elements: usize,
    truncated: bool,
    /// The state's tangents around each call, when recorded.
    calls: Option<States>,
}

/// One assignment of original code as the dual run executed it.
struct DualStep<'p> {
    routine: &'p str,
    statement: &'p str,
    line: u64,
    /// The value and the tangent of each element stored.
    elements: Vec<(f64, f64)>,
}

pub(crate) struct TangentCheck<'p> {
    steps: Vec<DualStep<'p>>,
    /// The statement ids of each original routine, by routine name.
    original_ids: FxHashMap<&'p str, FxHashSet<&'p str>>,
    next: usize,
    pending: Vec<Pending>,
    /// Elements whose derivatives an original step settled, until other code changes them.
    settled: FxHashMap<usize, Settled>,
    direction: String,
    rtol: f64,
    /// The two runs took different steps: nothing more is compared.
    parted: bool,
    /// What was found wrong, with the step it concerns: the earliest step is reported.
    found: Option<(usize, Localization)>,
}

impl TangentCheck<'_> {
    fn found(&mut self, step: usize, what: Localization) {
        if self.found.as_ref().is_none_or(|(earlier, _)| step < *earlier) {
            self.found = Some((step, what));
        }
    }
}

/// Where an element's settled derivative comes from: a dual step's element.
#[derive(Copy, Clone)]
struct Settled {
    step: usize,
    element: usize,
    sym: u32,
}

/// A step of the transformed run whose derivatives are not yet final.
struct Pending {
    step: usize,
    sym: u32,
    slots: Vec<usize>,
    /// An active real left-hand side: its derivatives are compared.
    compared: bool,
}

/// Per routine, the state a dot-product test covers, and what was recorded of it per call.
pub(crate) struct States {
    /// By routine index of the watched program: formals' symbols and globals' symbols.
    layout: FxHashMap<usize, Vec<u32>>,
    open: Vec<usize>,
    instances: Vec<Instance>,
    exits: usize,
    /// Numbers recorded so far, kept below [`MAX_TRACE_ELEMENTS`].
    recorded: usize,
}

struct Instance {
    routine: usize,
    exit: usize,
    /// Dual run: the tangents at entry and at exit. Adjoint run: the adjoints where the
    /// adjoint sweep starts and where it ends.
    first: Vec<f64>,
    last: Vec<f64>,
}

impl<'p> Machine<'p> {
    /// Executes a statement of a watched run: original code with dual numbers, and what the
    /// watch records or checks around it.
    pub(crate) fn exec_watched(&mut self, stmt: &'p Stmt) -> Result<(), ExecError> {
        match stmt {
            Stmt::Assign(a) => {
                if matches!(self.watch.as_deref(), Some(Watch::Dual(_))) {
                    self.dual_assign(a)?;
                } else {
                    self.exec_statement(stmt)?;
                }
                self.with_watch(|m, w| m.assigned(w, a))
            }
            Stmt::Call(_) => {
                self.with_watch(|m, w| m.with_check(w, |m, check| m.settle(check)))?;
                // The callee's locals live above the mark, and are gone after the call.
                let mark = self.mem.top();
                self.exec_statement(stmt)?;
                self.with_watch(|_, w| {
                    if let Watch::Tangent(check) = w {
                        check.settled.retain(|&slot, _| slot < mark);
                    }
                    Ok(())
                })
            }
            Stmt::Prop(ops) => {
                let written = self.with_watch(|m, w| m.with_check(w, |m, check| m.propagating(check, ops)))?;
                self.exec_statement(stmt)?;
                // The propagator ends its stretch of the block: the stretch's steps settle.
                self.with_watch(|m, w| {
                    m.with_check(w, |m, check| {
                        check.settled.retain(|slot, _| !written.contains(slot));
                        m.settle(check)
                    })
                })
            }
            Stmt::Inline(call) => {
                self.exec_statement(stmt)?;
                // TypeChange's conversions and shape checks move values only: a converted
                // variable keeps its derivative.
                if moves_values_only(&call.name) {
                    return Ok(());
                }
                // Other runtime calls may store derivatives of any of their arguments: what
                // those held is no longer known.
                let mut slots = Vec::new();
                for arg in &call.args {
                    if let super::lower::Arg::Ref(r) = arg
                        && let Ok(place) = self.place(r)
                    {
                        slots.extend((0..place.len()).map(|k| place.slot(k)));
                    }
                }
                self.with_watch(|_, w| {
                    if let Watch::Tangent(check) = w {
                        for slot in &slots {
                            check.settled.remove(slot);
                        }
                    }
                    Ok(())
                })
            }
        }
    }

    /// Runs `f` with the watch taken out of the machine (it needs both).
    fn with_watch<T: Default>(
        &mut self,
        f: impl FnOnce(&mut Self, &mut Watch<'p>) -> Result<T, ExecError>,
    ) -> Result<T, ExecError> {
        let Some(mut watch) = self.watch.take() else { return Ok(T::default()) };
        let result = f(self, &mut watch);
        self.watch = Some(watch);
        result
    }

    /// Runs `f` on a tangent check; nothing for other watches.
    fn with_check<T: Default>(
        &mut self,
        watch: &mut Watch<'p>,
        f: impl FnOnce(&mut Self, &mut TangentCheck<'p>) -> Result<T, ExecError>,
    ) -> Result<T, ExecError> {
        match watch {
            Watch::Tangent(check) => f(self, check),
            Watch::Dual(_) | Watch::Adjoint(_) => Ok(T::default()),
        }
    }

    /// An assignment has run: the dual run records it, the tangent check compares its values.
    fn assigned(&mut self, watch: &mut Watch<'p>, a: &'p super::lower::Assign) -> Result<(), ExecError> {
        match watch {
            Watch::Dual(run) => {
                let Some(steps) = &mut run.steps else { return Ok(()) };
                if run.truncated {
                    return Ok(());
                }
                let (routine, statement, line) = self.statement_here();
                let place = self.place(&a.lhs)?;
                let mut elements = Vec::with_capacity(place.len());
                for k in 0..place.len() {
                    let slot = place.slot(k);
                    elements.push((number(self.mem.get(slot)?), self.mem.deriv(slot)?));
                }
                run.elements += elements.len();
                if run.elements > MAX_TRACE_ELEMENTS {
                    run.truncated = true;
                } else {
                    steps.push(DualStep { routine, statement, line, elements });
                }
                Ok(())
            }
            Watch::Tangent(check) => self.tangent_step(check, a),
            Watch::Adjoint(_) => Ok(()),
        }
    }

    /// An assignment of the tangent program has run: if it is an original statement, it must
    /// be the dual run's next step, with the same values.
    fn tangent_step(&mut self, check: &mut TangentCheck<'p>, a: &'p super::lower::Assign) -> Result<(), ExecError> {
        if check.parted {
            return Ok(());
        }
        let (routine, statement, _) = self.statement_here();
        if !check.original_ids.get(routine).is_some_and(|ids| ids.contains(statement)) {
            return Ok(());
        }
        let place = self.place(&a.lhs)?;
        let expected = check.steps.get(check.next);
        let Some(expected) =
            expected.filter(|e| e.routine == routine && e.statement == statement && e.elements.len() == place.len())
        else {
            check.parted = true;
            let (routine, expected) = match expected {
                Some(e) => (e.routine.to_owned(), e.statement.to_owned()),
                None => (routine.to_owned(), String::new()),
            };
            check.found(
                check.next,
                Localization::ControlFlow { routine, expected, found: statement.to_owned(), agreed: check.next },
            );
            return Ok(());
        };
        let slots: Vec<usize> = (0..place.len()).map(|k| place.slot(k)).collect();
        let mut real = true;
        for (k, &slot) in slots.iter().enumerate() {
            let value = self.mem.get(slot)?;
            real &= matches!(value, Value::Real(_));
            let (found, exact) = (number(value), expected.elements[k].0);
            if differs(found, exact, check.rtol) {
                let wrong = WrongStatement {
                    routine: routine.to_owned(),
                    statement: statement.to_owned(),
                    line: (expected.line > 0).then_some(expected.line),
                    variable: self.element_label(a.lhs.sym, slot),
                    quantity: "value",
                    direction: check.direction.clone(),
                    exact,
                    transformed: found,
                    agreed: check.next,
                };
                check.found(check.next, Localization::Statement(wrong));
                break;
            }
        }
        let compared = real && self.prog.syms[a.lhs.sym as usize].active;
        check.pending.push(Pending { step: check.next, sym: a.lhs.sym, slots, compared });
        check.next += 1;
        Ok(())
    }

    /// The routine, statement id and source line being executed.
    fn statement_here(&self) -> (&'p str, &'p str, u64) {
        let prog = self.prog;
        let Some(spot) = self.spot else { return ("", "", 0) };
        let routine = prog.routines.get(spot.routine).map_or("", |r| r.name.as_str());
        let (statement, line) = match (spot.graph, spot.statement) {
            (Some(g), Some(k)) => (
                g.statement_ids.get(spot.node).and_then(|ids| ids.get(k)).map_or("", String::as_str),
                g.statement_lines.get(spot.node).and_then(|lines| lines.get(k)).copied().unwrap_or(0),
            ),
            _ => ("", 0),
        };
        (routine, statement, line)
    }

    /// A basic block of a watched run has ended: its steps' derivatives are final.
    pub(crate) fn watch_block_end(&mut self) -> Result<(), ExecError> {
        self.with_watch(|m, w| m.with_check(w, |m, check| m.settle(check)))
    }

    /// The pending steps' derivatives are final: each element's, where no later step of the
    /// stretch stores it again, is what the dual run's step gave, until code other than an
    /// original step changes it.
    fn settle(&mut self, check: &mut TangentCheck<'p>) -> Result<(), ExecError> {
        let pending = std::mem::take(&mut check.pending);
        let mut later: FxHashSet<usize> = FxHashSet::default();
        for p in pending.iter().rev() {
            for (k, &slot) in p.slots.iter().enumerate() {
                if !later.insert(slot) {
                    continue;
                }
                if p.compared {
                    check.settled.insert(slot, Settled { step: p.step, element: k, sym: p.sym });
                } else {
                    check.settled.remove(&slot);
                }
            }
        }
        Ok(())
    }

    /// Before a propagator runs: every derivative it reads that an original step settled must
    /// be the dual run's. Returns the elements whose derivatives it stores.
    fn propagating(
        &mut self,
        check: &mut TangentCheck<'p>,
        ops: &'p [super::lower::PropOp],
    ) -> Result<FxHashSet<usize>, ExecError> {
        use super::lower::PropOp;
        let mut written: FxHashSet<usize> = FxHashSet::default();
        for op in ops {
            let (reads, writes): (Vec<&super::lower::Ref>, &super::lower::Ref) = match op {
                PropOp::Set { target, source } | PropOp::SetNeg { target, source } => (vec![source], target),
                PropOp::Inc { target, source } | PropOp::Dec { target, source } => (vec![source, target], target),
                PropOp::Sax { terms, y } => (terms.iter().map(|(_, x)| x).collect(), y),
                PropOp::Saxpy { terms, y } => (terms.iter().map(|(_, x)| x).chain([y]).collect(), y),
                PropOp::Zero(x) => (Vec::new(), x),
            };
            for r in reads {
                let place = self.place(r)?;
                for k in 0..place.len() {
                    let slot = place.slot(k);
                    if !written.contains(&slot)
                        && let Some(&settled) = check.settled.get(&slot)
                    {
                        self.compare_settled(check, slot, settled)?;
                    }
                }
            }
            let place = self.place(writes)?;
            written.extend((0..place.len()).map(|k| place.slot(k)));
        }
        Ok(written)
    }

    /// Compares a settled element's derivative with the dual run's step.
    fn compare_settled(&self, check: &mut TangentCheck<'p>, slot: usize, settled: Settled) -> Result<(), ExecError> {
        let step = &check.steps[settled.step];
        let (found, exact) = (self.mem.deriv(slot)?, step.elements[settled.element].1);
        if differs(found, exact, check.rtol) {
            let wrong = WrongStatement {
                routine: step.routine.to_owned(),
                statement: step.statement.to_owned(),
                line: (step.line > 0).then_some(step.line),
                variable: self.element_label(settled.sym, slot),
                quantity: "derivative",
                direction: check.direction.clone(),
                exact,
                transformed: found,
                agreed: settled.step,
            };
            check.found(settled.step, Localization::Statement(wrong));
        }
        Ok(())
    }

    /// The top routine returns: the derivatives of its arguments and of the globals are the
    /// results, whether or not code reads them again.
    fn check_results(&mut self, check: &mut TangentCheck<'p>, routine: usize) -> Result<(), ExecError> {
        self.settle(check)?;
        let prog = self.prog;
        let mut syms: Vec<u32> = prog.routines[routine].formals.iter().map(|(_, s)| s.into_raw().into_u32()).collect();
        syms.extend(
            (0..prog.syms.len() as u32).filter(|&s| matches!(prog.syms[s as usize].storage, Storage::Global { .. })),
        );
        for sym in syms {
            let Ok(binding) = self.binding(sym) else { continue };
            let count = if binding.is_array() { binding.len() } else { 1 };
            for k in 0..count {
                let slot = binding.element(k);
                if let Some(&settled) = check.settled.get(&slot) {
                    self.compare_settled(check, slot, settled)?;
                }
            }
        }
        Ok(())
    }

    /// `name` or `name(i,j)`: the element of `sym` at `slot`.
    fn element_label(&self, sym: u32, slot: usize) -> String {
        let name = self.prog.syms[sym as usize].name.clone();
        let Ok(binding) = self.binding(sym) else { return name };
        if !binding.is_array() {
            return name;
        }
        let Some(k) = (0..binding.len().min(1 << 22)).find(|&k| binding.element(k) == slot) else {
            return name;
        };
        let mut rest = k;
        let subscripts: Vec<String> = binding
            .dims
            .iter()
            .map(|d| {
                let extent = d.extent.max(1) as usize;
                let i = d.lower + (rest % extent) as i64;
                rest /= extent;
                i.to_string()
            })
            .collect();
        format!("{name}({})", subscripts.join(","))
    }

    /// A call of `routine` starts (after its frame is pushed) or ends (before it is popped).
    pub(crate) fn watch_call(&mut self, routine: usize, entering: bool) -> Result<(), ExecError> {
        let Some(mut watch) = self.watch.take() else { return Ok(()) };
        let result = match &mut *watch {
            Watch::Dual(DualRun { calls: Some(states), .. }) => self.record_state(states, routine, entering),
            Watch::Tangent(check) if !entering && self.frames.len() == 1 => self.check_results(check, routine),
            _ => Ok(()),
        };
        self.watch = Some(watch);
        result
    }

    /// The adjoint sweep (placeholder 3) of the routine running starts or ends.
    pub(crate) fn watch_adjoint_sweep(&mut self, starting: bool) -> Result<(), ExecError> {
        let Some(mut watch) = self.watch.take() else { return Ok(()) };
        let routine = self.current_routine();
        let result = match &mut *watch {
            Watch::Adjoint(states) => self.record_state(states, routine, starting),
            _ => Ok(()),
        };
        self.watch = Some(watch);
        result
    }

    fn record_state(&self, states: &mut States, routine: usize, first: bool) -> Result<(), ExecError> {
        let Some(layout) = states.layout.get(&routine) else { return Ok(()) };
        // Each element once: a global passed as an argument is one variable, not two.
        let mut values = Vec::new();
        let mut seen = FxHashSet::default();
        for &sym in layout {
            let Ok(binding) = self.binding(sym) else { continue };
            let count = if binding.is_array() { binding.len() } else { 1 };
            for k in 0..count {
                let slot = binding.element(k);
                if seen.insert(slot) {
                    values.push(self.mem.deriv(slot)?);
                }
            }
        }
        states.recorded += values.len();
        if states.recorded > MAX_TRACE_ELEMENTS {
            return Err(ExecError::Runtime(format!(
                "the routines' states at their calls take more than {MAX_TRACE_ELEMENTS} numbers, too many to compare call by call"
            )));
        }
        if first {
            states.open.push(states.instances.len());
            states.instances.push(Instance { routine, exit: usize::MAX, first: values, last: Vec::new() });
        } else if let Some(open) = states.open.pop() {
            let instance = &mut states.instances[open];
            instance.last = values;
            instance.exit = states.exits;
            states.exits += 1;
        }
        Ok(())
    }
}

/// Whether a runtime call leaves every derivative component as it is.
fn moves_values_only(name: &str) -> bool {
    matches!(name, "oad_convert" | "oad_ShapeTest" | "oad_AllocateMatching" | "oad_AllocateShape")
        || name.starts_with("convert_")
}

/// A value as a number (NaN for what is not numeric).
fn number(value: &Value) -> f64 {
    value.as_f64().unwrap_or(f64::NAN)
}

/// Whether two results differ beyond the verifier's tolerance (relative to `max(1, |exact|)`).
fn differs(found: f64, exact: f64, rtol: f64) -> bool {
    if found.is_nan() || exact.is_nan() {
        return found.is_nan() != exact.is_nan();
    }
    (found - exact).abs() > rtol * exact.abs().max(1.0)
}

/// The Jacobian (row-major `m × n`) of the original program by dual numbers: one run per
/// input direction, no transformation involved.
pub fn dual_jacobian(driver: &Driver<'_>, x: &[f64]) -> Result<Vec<f64>, ExecError> {
    let (n, m) = (driver.n, driver.m);
    let mut jacobian = vec![0.0; n * m];
    for col in 0..n {
        let mut seed = vec![0.0; n];
        seed[col] = 1.0;
        let watch = Watch::Dual(DualRun { steps: None, elements: 0, truncated: false, calls: None });
        let (result, _) = driver.run_watched(x, Sweep::Tangent(&seed), Some(Box::new(watch)));
        for (row, d) in result?.y_deriv.iter().enumerate() {
            jacobian[row * n + col] = *d;
        }
    }
    Ok(jacobian)
}

/// The first original statement after which the tangent program's derivative in the
/// direction of input `direction` differs from the exact one (see the module doc).
pub fn tangent<'p>(
    original: &Driver<'p>,
    tangent: &Driver<'p>,
    x: &[f64],
    direction: usize,
    rtol: f64,
) -> Localization {
    let not_found = |reason: String| Localization::NotFound { reason };
    let mut seed = vec![0.0; original.n];
    let Some(s) = seed.get_mut(direction) else {
        return not_found(format!("no input {}", direction + 1));
    };
    *s = 1.0;
    let watch = Watch::Dual(DualRun { steps: Some(Vec::new()), elements: 0, truncated: false, calls: None });
    let (result, watch) = original.run_watched(x, Sweep::Tangent(&seed), Some(Box::new(watch)));
    if let Err(e) = result {
        return not_found(format!("the original program with dual numbers fails: {}", e.reason()));
    }
    let Some(Watch::Dual(DualRun { steps: Some(steps), truncated, .. })) = watch.map(|w| *w) else {
        return not_found("the dual run recorded nothing".into());
    };
    if truncated {
        return not_found(format!(
            "the original stores more than {MAX_TRACE_ELEMENTS} elements, too many to compare step by step"
        ));
    }
    let original_ids = statement_ids(original.program());
    let direction = original.input_labels().get(direction).cloned().unwrap_or_else(|| format!("x({})", direction + 1));
    let check = TangentCheck {
        steps,
        original_ids,
        next: 0,
        pending: Vec::new(),
        settled: FxHashMap::default(),
        direction,
        rtol,
        parted: false,
        found: None,
    };
    let (result, watch) = tangent.run_watched(x, Sweep::Tangent(&seed), Some(Box::new(Watch::Tangent(check))));
    let Some(Watch::Tangent(check)) = watch.map(|w| *w) else {
        return not_found("the tangent run recorded nothing".into());
    };
    if let Some((_, found)) = check.found {
        return found;
    }
    if let Err(e) = result {
        return not_found(format!("the transformed program fails: {}", e.reason()));
    }
    if check.next == 0 && !check.steps.is_empty() {
        return not_found(
            "the transformed program runs none of the original's statements (are its routines renamed?)".into(),
        );
    }
    if check.next < check.steps.len() {
        let step = &check.steps[check.next];
        return Localization::ControlFlow {
            routine: step.routine.to_owned(),
            expected: step.statement.to_owned(),
            found: String::new(),
            agreed: check.next,
        };
    }
    not_found(format!(
        "all {} original statements' values and active derivatives agree in this direction",
        check.steps.len()
    ))
}

/// Every statement id of each routine of the original program.
fn statement_ids(prog: &Program) -> FxHashMap<&str, FxHashSet<&str>> {
    let mut ids: FxHashMap<&str, FxHashSet<&str>> = FxHashMap::default();
    for routine in &prog.routines {
        let set = ids.entry(routine.name.as_str()).or_default();
        for g in routine.body.graphs() {
            set.extend(g.statement_ids.iter().flatten().filter(|id| !id.is_empty()).map(String::as_str));
        }
    }
    ids
}

/// The innermost routine whose adjoint fails the dot-product test against exact tangents
/// (see the module doc).
pub fn adjoint<'p>(original: &Driver<'p>, adjoint: &Driver<'p>, x: &[f64], rtol: f64) -> Localization {
    let not_found = |reason: String| Localization::NotFound { reason };
    let (orig_prog, adj_prog) = (original.program(), adjoint.program());
    let (orig_layout, adj_layout) = state_layouts(orig_prog, adj_prog);
    let mut random = directions();
    let xdot: Vec<f64> = (0..original.n).map(|_| random()).collect();
    let ybar: Vec<f64> = (0..original.m).map(|_| random()).collect();
    let states = |layout| States { layout, open: Vec::new(), instances: Vec::new(), exits: 0, recorded: 0 };
    let dual = Watch::Dual(DualRun { steps: None, elements: 0, truncated: false, calls: Some(states(orig_layout)) });
    let (result, watch) = original.run_watched(x, Sweep::Tangent(&xdot), Some(Box::new(dual)));
    if let Err(e) = result {
        return not_found(format!("the original program with dual numbers fails: {}", e.reason()));
    }
    let Some(Watch::Dual(DualRun { calls: Some(calls), .. })) = watch.map(|w| *w) else {
        return not_found("the dual run recorded nothing".into());
    };
    let (result, watch) =
        adjoint.run_watched(x, Sweep::Adjoint(&ybar), Some(Box::new(Watch::Adjoint(states(adj_layout)))));
    if let Err(e) = result {
        return not_found(format!("the adjoint program fails: {}", e.reason()));
    }
    let Some(Watch::Adjoint(sweeps)) = watch.map(|w| *w) else {
        return not_found("the adjoint run recorded nothing".into());
    };
    dot_tests(orig_prog, adj_prog, &calls, &sweeps, rtol)
}

/// Per routine both programs have: the real formals active in the adjoint program, the host
/// variables a contained routine uses (by the original's side-effect lists) and the active
/// real globals both have, as symbols of each program.
fn state_layouts(orig: &Program, adj: &Program) -> (FxHashMap<usize, Vec<u32>>, FxHashMap<usize, Vec<u32>>) {
    let sym = |s: crate::ir::SymbolId| s.into_raw().into_u32();
    let real = |prog: &Program, s: u32| prog.syms[s as usize].ty == crate::ir::SymbolType::Real;
    fn globals(prog: &Program) -> FxHashMap<&str, u32> {
        prog.syms
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s.storage, Storage::Global { .. }))
            .map(|(k, s)| (s.name.as_str(), k as u32))
            .collect()
    }
    let (orig_globals, adj_globals) = (globals(orig), globals(adj));
    let mut shared: Vec<(u32, u32)> = adj_globals
        .iter()
        .filter(|(_, s)| real(adj, **s) && adj.syms[**s as usize].active)
        .filter_map(|(name, s)| orig_globals.get(name).filter(|o| real(orig, **o)).map(|o| (*o, *s)))
        .collect();
    shared.sort_unstable();
    let (mut orig_layout, mut adj_layout) = (FxHashMap::default(), FxHashMap::default());
    for (a, routine) in adj.routines.iter().enumerate() {
        if matches!(routine.body, Body::External) {
            continue;
        }
        let Some(o) = orig.routines.iter().position(|r| r.name == routine.name) else { continue };
        let mut positions: Vec<(u32, u32, u32)> = Vec::new();
        for &(position, formal) in &routine.formals {
            let adj_sym = sym(formal);
            if !real(adj, adj_sym) || !adj.syms[adj_sym as usize].active {
                continue;
            }
            if let Some(&(_, orig_formal)) = orig.routines[o].formals.iter().find(|(p, _)| *p == position)
                && real(orig, sym(orig_formal))
            {
                positions.push((position, sym(orig_formal), adj_sym));
            }
        }
        positions.sort_unstable();
        // A contained routine reaches its host's variables: those its side-effect lists name.
        let mut hosts: Vec<(u32, u32)> = Vec::new();
        let interface = &orig.routines[o].interface;
        for orig_sym in interface.read.iter().chain(&interface.modified).flatten().map(|s| sym(*s)) {
            let info = &orig.syms[orig_sym as usize];
            if !matches!(info.storage, Storage::Local { routine, .. } if routine != o) || !real(orig, orig_sym) {
                continue;
            }
            let found = adj.syms.iter().position(|s| {
                s.name == info.name
                    && s.scope == info.scope
                    && s.active
                    && matches!(s.storage, Storage::Local { routine, .. } if routine != a)
            });
            if let Some(adj_sym) = found
                && real(adj, adj_sym as u32)
            {
                hosts.push((orig_sym, adj_sym as u32));
            }
        }
        hosts.sort_unstable();
        hosts.dedup();
        let orig_syms =
            positions.iter().map(|p| p.1).chain(hosts.iter().map(|h| h.0)).chain(shared.iter().map(|g| g.0)).collect();
        let adj_syms =
            positions.iter().map(|p| p.2).chain(hosts.iter().map(|h| h.1)).chain(shared.iter().map(|g| g.1)).collect();
        orig_layout.insert(o, orig_syms);
        adj_layout.insert(a, adj_syms);
    }
    (orig_layout, adj_layout)
}

/// Fixed pseudo-random directions in [-0.5, 0.5).
fn directions() -> impl FnMut() -> f64 {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    }
}

/// Pairs each call of the dual run with its adjoint sweep and applies the dot-product test.
fn dot_tests(orig: &Program, adj: &Program, calls: &States, sweeps: &States, rtol: f64) -> Localization {
    struct Failure {
        /// Index into `calls.instances` (entry order).
        instance: usize,
        tangent_side: f64,
        adjoint_side: f64,
        error: f64,
    }
    let mut by_name: std::collections::BTreeMap<&str, (Vec<usize>, Vec<usize>)> = Default::default();
    for (i, c) in calls.instances.iter().enumerate() {
        by_name.entry(orig.routines[c.routine].name.as_str()).or_default().0.push(i);
    }
    for (i, s) in sweeps.instances.iter().enumerate() {
        by_name.entry(adj.routines[s.routine].name.as_str()).or_default().1.push(i);
    }
    let mut failures = Vec::new();
    let mut tested = 0;
    for (name, (mut dual, adjoint)) in by_name {
        if dual.len() != adjoint.len() {
            return Localization::NotFound {
                reason: format!(
                    "the original calls {name} {} times, the adjoint sweeps it {} times",
                    dual.len(),
                    adjoint.len()
                ),
            };
        }
        // The reverse sweep meets calls in the reverse of the order they returned.
        dual.sort_by_key(|&i| calls.instances[i].exit);
        for (&d, &a) in dual.iter().zip(adjoint.iter().rev()) {
            let (c, s) = (&calls.instances[d], &sweeps.instances[a]);
            if c.first.len() != s.last.len() || c.last.len() != s.first.len() {
                return Localization::NotFound {
                    reason: format!("the state of {name} has different sizes in the two programs"),
                };
            }
            let dot = |p: &[f64], q: &[f64]| -> (f64, f64) {
                p.iter().zip(q).fold((0.0, 0.0), |(sum, scale), (a, b)| (sum + a * b, scale + (a * b).abs()))
            };
            let (tangent_side, scale_t) = dot(&s.first, &c.last);
            let (adjoint_side, scale_a) = dot(&s.last, &c.first);
            let scale = scale_t.max(scale_a);
            tested += 1;
            let error = if scale > 0.0 { (tangent_side - adjoint_side).abs() / scale } else { 0.0 };
            // A NaN error (a non-finite side) fails too.
            if error.is_nan() || error > rtol {
                failures.push(Failure { instance: d, tangent_side, adjoint_side, error });
            }
        }
    }
    // A call nests inside another when it starts later and returns earlier.
    let nested =
        |inner: usize, outer: usize| inner > outer && calls.instances[inner].exit < calls.instances[outer].exit;
    let innermost =
        failures.iter().filter(|f| !failures.iter().any(|g| nested(g.instance, f.instance))).min_by_key(|f| f.instance);
    if tested == 0 {
        return Localization::NotFound {
            reason: "no routine the original calls has an adjoint sweep in the adjoint program (another document?)"
                .into(),
        };
    }
    let Some(failure) = innermost else {
        return Localization::NotFound {
            reason: format!("every one of the {tested} routine calls passes the dot-product test"),
        };
    };
    let routine = calls.instances[failure.instance].routine;
    let of_routine: Vec<usize> =
        (0..calls.instances.len()).filter(|&i| calls.instances[i].routine == routine).collect();
    Localization::Routine(WrongRoutine {
        routine: orig.routines[routine].name.clone(),
        call: of_routine.iter().position(|&i| i == failure.instance).map_or(0, |p| p + 1),
        failing_calls: failures.iter().filter(|f| calls.instances[f.instance].routine == routine).count(),
        calls: of_routine.len(),
        tangent_side: failure.tangent_side,
        adjoint_side: failure.adjoint_side,
        error: failure.error,
    })
}
