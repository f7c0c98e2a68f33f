//! The runtime the transformed code relies on: derivative propagators (tangent), the inlinable
//! calls of the adjoint (tape pushes and pops, `IncDeriv`/`Saxpy`/…, checkpoint stores and
//! restores, type conversions). Semantics follow OpenAD's `runTimeSupport/simple`: one global
//! tape per value kind, checkpoint stacks per routine, restores in reverse order of stores.
//!
//! Every operation works elementwise on array places (a scalar operand stands for each
//! element), as the array overloads of the original runtime do.

use super::ExecError;
use super::exec::{Machine, Place};
use super::lower::{Arg, Inline, PropOp};
use super::memory::Value;

/// The value kinds a tape or checkpoint stack holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Real,
    Int,
    Bool,
    Str,
}

impl Machine<'_> {
    pub(crate) fn propagate(&mut self, op: &PropOp) -> Result<(), ExecError> {
        match op {
            PropOp::Set { target, source } => self.deriv_pair(target, source, Pair::Set),
            PropOp::SetNeg { target, source } => self.deriv_pair(target, source, Pair::SetNeg),
            PropOp::Inc { target, source } => self.deriv_pair(target, source, Pair::Inc),
            PropOp::Dec { target, source } => self.deriv_pair(target, source, Pair::Dec),
            PropOp::Zero(x) => {
                let p = self.place(x)?;
                for k in 0..p.len() {
                    *self.mem.deriv_mut(p.slot(k))? = 0.0;
                }
                Ok(())
            }
            PropOp::Sax { terms, y } | PropOp::Saxpy { terms, y } => {
                let y = self.place(y)?;
                let n = y.len();
                // All terms are summed before `y` is written: `y` may be among the `x`.
                let mut sums = vec![0.0; n];
                for (a, x) in terms {
                    let x = self.place(x)?;
                    for (k, sum) in sums.iter_mut().enumerate() {
                        let a = self.eval(a, if n > 1 { Some(k) } else { None })?.as_f64()?;
                        *sum += a * self.mem.deriv(x.slot(k))?;
                    }
                }
                let incremental = matches!(op, PropOp::Saxpy { .. });
                // A multiplication per term and element, an addition per term but the first
                // of a `Sax`.
                self.count_operations(n * (2 * terms.len()).saturating_sub(usize::from(!incremental)));
                for (k, sum) in sums.into_iter().enumerate() {
                    let d = self.mem.deriv_mut(y.slot(k))?;
                    *d = if incremental { *d + sum } else { sum };
                }
                Ok(())
            }
        }
    }

    /// `target.d = op(target.d, source.d)` elementwise.
    fn deriv_pair(
        &mut self,
        target: &super::lower::Ref,
        source: &super::lower::Ref,
        op: Pair,
    ) -> Result<(), ExecError> {
        let t = self.place(target)?;
        let s = self.place(source)?;
        self.count_operations(t.len() * op.operations());
        self.deriv_places(&t, &s, op.function())
    }

    fn deriv_places(&mut self, t: &Place, s: &Place, f: fn(f64, f64) -> f64) -> Result<(), ExecError> {
        let n = t.len();
        if s.len() != n && s.len() != 1 {
            return Err(ExecError::Runtime(format!("derivative operation on {n} and {} elements", s.len())));
        }
        if n == 1 {
            let sd = self.mem.deriv(s.slot(0))?;
            let d = self.mem.deriv_mut(t.slot(0))?;
            *d = f(*d, sd);
            return Ok(());
        }
        let source: Vec<f64> = (0..n).map(|k| self.mem.deriv(s.slot(k))).collect::<Result<_, _>>()?;
        for (k, sd) in source.into_iter().enumerate() {
            let d = self.mem.deriv_mut(t.slot(k))?;
            *d = f(*d, sd);
        }
        Ok(())
    }

    fn arg_place(&mut self, call: &Inline, i: usize) -> Result<Place, ExecError> {
        match call.args.get(i) {
            Some(Arg::Ref(r)) => self.shaping_place(r),
            Some(Arg::Const(v)) => {
                let tapes = self.tape_bytes();
                Ok(Place::Scalar(self.mem.alloc(1, v.clone(), tapes)?))
            }
            None => Err(ExecError::Runtime(format!("runtime call {} lacks argument {}", call.name, i + 1))),
        }
    }

    pub(crate) fn inline_call(&mut self, call: &Inline) -> Result<(), ExecError> {
        let name = call.name.as_str();
        if let Some(what) = name.strip_prefix("oad_trace_") {
            return self.trace_runtime_call(what, &call.args);
        }
        // Constant arguments get a temporary slot for the duration of the call; other calls
        // may allocate storage that lives as long as the activation (`oad_AllocateMatching`).
        if !call.args.iter().any(|a| matches!(a, Arg::Const(_))) {
            return self.inline_call_inner(call, name);
        }
        let mark = self.mem.top();
        let mut result = self.inline_call_inner(call, name);
        self.mem.release(mark);
        // The tapes grow only here: keep them within the memory limit.
        if result.is_ok() && (name.contains("push") || name.starts_with("cp_")) {
            result = self.check_memory();
        }
        result
    }

    fn inline_call_inner(&mut self, call: &Inline, name: &str) -> Result<(), ExecError> {
        // The tangent runtime's propagators (`-H`) take the target first, the source second,
        // and are named with their arguments' shapes (`setderiv_s0_s0`).
        match tangent_routine(name).unwrap_or(name) {
            "push_s0" | "push_s1" | "push_s2" | "apush" | "push" => {
                let p = self.arg_place(call, 0)?;
                for k in 0..p.len() {
                    let v = self.mem.get(p.slot(k))?.as_f64()?;
                    self.tape.reals.push(v);
                    self.tape.pushed.reals += 1;
                }
                Ok(())
            }
            "pop_s0" | "pop_s1" | "pop_s2" | "apop" | "pop" | "Pop" => {
                let p = self.arg_place(call, 0)?;
                let n = p.len();
                let start = self.tape.reals.len().checked_sub(n).ok_or_else(|| underflow("real"))?;
                for k in 0..n {
                    let v = self.tape.reals[start + k];
                    self.mem.set(p.slot(k), Value::Real(v))?;
                }
                self.tape.reals.truncate(start);
                Ok(())
            }
            "push_i_s0" | "push_i_s1" | "push_i_s2" | "push_i" => {
                let p = self.arg_place(call, 0)?;
                for k in 0..p.len() {
                    let v = self.mem.get(p.slot(k))?.as_i64()?;
                    self.tape.ints.push(v);
                    self.tape.pushed.integers += 1;
                }
                Ok(())
            }
            "pop_i_s0" | "pop_i_s1" | "pop_i_s2" | "pop_i" => {
                let p = self.arg_place(call, 0)?;
                let n = p.len();
                let start = self.tape.ints.len().checked_sub(n).ok_or_else(|| underflow("integer"))?;
                for k in 0..n {
                    let v = self.tape.ints[start + k];
                    self.mem.set(p.slot(k), Value::Int(v))?;
                }
                self.tape.ints.truncate(start);
                Ok(())
            }
            "push_b" => {
                let p = self.arg_place(call, 0)?;
                for k in 0..p.len() {
                    let v = self.mem.get(p.slot(k))?.as_bool()?;
                    self.tape.bools.push(v);
                    self.tape.pushed.logicals += 1;
                }
                Ok(())
            }
            "pop_b" => {
                let p = self.arg_place(call, 0)?;
                for k in (0..p.len()).rev() {
                    let v = self.tape.bools.pop().ok_or_else(|| underflow("logical"))?;
                    self.mem.set(p.slot(k), Value::Bool(v))?;
                }
                Ok(())
            }
            "push_s" => {
                let p = self.arg_place(call, 0)?;
                for k in 0..p.len() {
                    let v = self.mem.get(p.slot(k))?.clone();
                    match v {
                        Value::Str(s) => {
                            self.tape.strs.push(s);
                            self.tape.pushed.strings += 1;
                        }
                        other => {
                            return Err(ExecError::Runtime(format!("push_s of a {} value", other.type_name())));
                        }
                    }
                }
                Ok(())
            }
            "pop_s" => {
                let p = self.arg_place(call, 0)?;
                for k in (0..p.len()).rev() {
                    let v = self.tape.strs.pop().ok_or_else(|| underflow("string"))?;
                    self.mem.set(p.slot(k), Value::Str(v))?;
                }
                Ok(())
            }
            // Adjoint propagation: the source comes first, the target second.
            "ZeroDeriv" | "zeroderiv" | "zero_deriv" => {
                let p = self.arg_place(call, 0)?;
                for k in 0..p.len() {
                    *self.mem.deriv_mut(p.slot(k))? = 0.0;
                }
                Ok(())
            }
            "IncDeriv" | "incderiv" => self.inline_pair(call, 0, Pair::Inc),
            "inc_deriv" => self.inline_pair(call, 1, Pair::Inc),
            // Older engines: move the source's adjoint into the target unless both are the
            // same location (then it stays where it is).
            "CondIncZeroDeriv" | "condinczeroderiv" => {
                let s = self.arg_place(call, 0)?;
                let t = self.arg_place(call, 1)?;
                if s.len() != t.len() {
                    return Err(ExecError::Runtime(format!("{name} between {} and {} elements", s.len(), t.len())));
                }
                for k in 0..s.len() {
                    let (from, to) = (s.slot(k), t.slot(k));
                    if from != to {
                        let d = self.mem.deriv(from)?;
                        *self.mem.deriv_mut(to)? += d;
                        self.count_operations(1);
                        *self.mem.deriv_mut(from)? = 0.0;
                    }
                }
                Ok(())
            }
            "DecDeriv" | "decderiv" => self.inline_pair(call, 0, Pair::Dec),
            "dec_deriv" => self.inline_pair(call, 1, Pair::Dec),
            "SetDeriv" => self.inline_pair(call, 0, Pair::Set),
            "setderiv" => self.inline_pair(call, 1, Pair::Set),
            "SetNegDeriv" => self.inline_pair(call, 0, Pair::SetNeg),
            "set_neg_deriv" => self.inline_pair(call, 1, Pair::SetNeg),
            // `Sax(a₁, x₁, …, aₙ, xₙ, y)`: `y.d = Σ aᵢ·xᵢ.d` (`Saxpy`: `y.d +=`), elementwise, a
            // scalar `a` or `x` broadcast; all terms are summed before `y` is written.
            routine @ ("Saxpy" | "Sax" | "saxpy" | "sax") => {
                let incremental = routine.eq_ignore_ascii_case("saxpy");
                let pairs = call.args.len() / 2;
                if pairs == 0 || call.args.len().is_multiple_of(2) {
                    return Err(ExecError::Runtime(format!("{name} with {} arguments", call.args.len())));
                }
                let y = self.arg_place(call, 2 * pairs)?;
                let n = y.len();
                let mut sums = vec![0.0; n];
                for pair in 0..pairs {
                    let a = self.arg_place(call, 2 * pair)?;
                    let x = self.arg_place(call, 2 * pair + 1)?;
                    for (k, sum) in sums.iter_mut().enumerate() {
                        *sum += self.mem.get(a.slot(k))?.as_f64()? * self.mem.deriv(x.slot(k))?;
                    }
                }
                self.count_operations(n * (2 * pairs - usize::from(!incremental)));
                for (k, sum) in sums.into_iter().enumerate() {
                    let d = self.mem.deriv_mut(y.slot(k))?;
                    *d = if incremental { *d + sum } else { sum };
                }
                Ok(())
            }
            // OpenAD's operation counters (`-C`): the interpreter counts operations itself.
            "countmult" | "countadd" => {
                self.arg_place(call, 0)?;
                Ok(())
            }
            "oad_convert" | "convert_a2p_scalar" | "convert_p2a_scalar" | "convert_a2p_vector"
            | "convert_p2a_vector" => {
                let to = self.arg_place(call, 0)?;
                let from = self.arg_place(call, 1)?;
                if from.len() != to.len() && from.len() != 1 {
                    return Err(ExecError::Runtime(format!("{name} between {} and {} elements", to.len(), from.len())));
                }
                for k in 0..to.len() {
                    let v = self.mem.get(from.slot(k))?.clone();
                    self.mem.set(to.slot(k), v)?;
                }
                Ok(())
            }
            "oad_AllocateMatching" => self.allocate_matching(call),
            "oad_AllocateShape" => self.allocate_shape(call),
            "oad_ShapeTest" => {
                let a = self.arg_place(call, 0)?;
                let b = self.arg_place(call, 1)?;
                if a.len() != b.len() {
                    return Err(ExecError::Runtime(format!("oad_ShapeTest: {} and {} elements", a.len(), b.len())));
                }
                Ok(())
            }
            _ => {
                if let Some(spec) = name.strip_prefix("cp_arg_store_").or_else(|| name.strip_prefix("cp_res_store_")) {
                    return self.checkpoint(call, spec, true);
                }
                if let Some(spec) =
                    name.strip_prefix("cp_arg_restore_").or_else(|| name.strip_prefix("cp_res_restore_"))
                {
                    return self.checkpoint(call, spec, false);
                }
                Err(ExecError::Unsupported(format!("runtime call {name}")))
            }
        }
    }

    /// Inlinable `XxxDeriv`: `target.d = op(target.d, source.d)` of a call's two arguments, the
    /// source at position `source` (0: the adjoint runtime's order, 1: the tangent runtime's).
    fn inline_pair(&mut self, call: &Inline, source: usize, op: Pair) -> Result<(), ExecError> {
        let s = self.arg_place(call, source)?;
        let t = self.arg_place(call, 1 - source)?;
        self.count_operations(t.len() * op.operations());
        self.deriv_places(&t, &s, op.function())
    }

    /// `oad_AllocateMatching(to, from)`: gives the unallocated local `to` the shape of `from`.
    fn allocate_matching(&mut self, call: &Inline) -> Result<(), ExecError> {
        let Some(Arg::Ref(to)) = call.args.first() else {
            return Err(ExecError::Runtime("oad_AllocateMatching without a variable to allocate".into()));
        };
        let from = self.arg_place(call, 1)?.binding();
        if let Ok(existing) = self.binding(to.sym)
            && existing.len() == from.len()
        {
            return Ok(());
        }
        self.allocate_local(to.sym, &from.bounds())
    }

    /// `oad_AllocateShape(x, n)`: gives the vector `x` (a local without a declared shape,
    /// restored from the tape next) the bounds `1:n`, `n` being the size the taping sweep
    /// recorded.
    fn allocate_shape(&mut self, call: &Inline) -> Result<(), ExecError> {
        let Some(Arg::Ref(to)) = call.args.first() else {
            return Err(ExecError::Runtime("oad_AllocateShape without a variable to allocate".into()));
        };
        let info = &self.prog.syms[to.sym as usize];
        if info.rank != 1 {
            return Err(ExecError::Unsupported(format!("oad_AllocateShape of {} of rank {}", info.name, info.rank)));
        }
        let size = self.arg_place(call, 1)?;
        if size.len() != 1 {
            return Err(ExecError::Unsupported(format!("oad_AllocateShape with a shape of {} entries", size.len())));
        }
        let n = self.mem.get(size.slot(0))?.as_i64()?;
        if n < 0 {
            return Err(ExecError::Runtime(format!("oad_AllocateShape of {} with size {n}", info.name)));
        }
        if let Ok(existing) = self.binding(to.sym)
            && existing.len() == n as usize
        {
            return Ok(());
        }
        self.allocate_local(to.sym, &[(1, n)])
    }

    /// Gives the local array `sym` (declared without a shape) storage with `bounds`, in the
    /// activation that holds it (and is released with it).
    pub(crate) fn allocate_local(&mut self, sym: u32, bounds: &[(i64, i64)]) -> Result<(), ExecError> {
        let info = &self.prog.syms[sym as usize];
        let init =
            info.initial_value().ok_or_else(|| ExecError::Unsupported(format!("allocation of {}", info.name)))?;
        let tapes = self.tape_bytes();
        let (routine, slot) = match info.storage {
            super::lower::Storage::Local { routine, slot } => (routine, slot),
            // A module's allocatable array, given a guessed extent (see `ExecConfig`).
            super::lower::Storage::Global { slot } if self.config.unshaped_extent.is_some() => {
                let binding = super::exec::allocate(&mut self.mem, bounds, init, tapes, &info.name)?;
                self.globals[slot as usize] = Some(binding);
                return Ok(());
            }
            super::lower::Storage::Global { .. } => {
                return Err(ExecError::Unsupported(format!("allocation of global {}", info.name)));
            }
        };
        let binding = super::exec::allocate(&mut self.mem, bounds, init, tapes, &info.name)?;
        let frame = self
            .frames
            .iter_mut()
            .rev()
            .find(|f| f.routine == routine)
            .ok_or_else(|| ExecError::Runtime(format!("no activation holds {}", info.name)))?;
        frame.slots[slot as usize] = Some(binding);
        Ok(())
    }

    /// `cp_{arg,res}_{store,restore}_<type>_<shape>[_a][_d]`: per-routine stacks; restores
    /// pop in the reverse order of the stores.
    fn checkpoint(&mut self, call: &Inline, spec: &str, store: bool) -> Result<(), ExecError> {
        let kind = if spec.starts_with("real") {
            Kind::Real
        } else if spec.starts_with("integer") {
            Kind::Int
        } else if spec.starts_with("bool") {
            Kind::Bool
        } else if spec.starts_with("string") {
            Kind::Str
        } else {
            return Err(ExecError::Unsupported(format!("runtime call {}", call.name)));
        };
        let with_deriv = spec.ends_with("_a_d");
        let p = self.arg_place(call, 0)?;
        let routine = self.current_routine();
        let n = p.len();
        if store {
            let mut items = Vec::with_capacity(n);
            for k in 0..n {
                items.push((self.mem.get(p.slot(k))?.clone(), self.mem.deriv(p.slot(k))?));
            }
            let stack = self.checkpoints.entry(routine).or_default();
            for (v, d) in items {
                match (kind, v) {
                    (Kind::Real, v) => stack.reals.push(v.as_f64()?),
                    (Kind::Int, v) => stack.ints.push(v.as_i64()?),
                    (Kind::Bool, v) => stack.bools.push(v.as_bool()?),
                    (Kind::Str, Value::Str(s)) => stack.strs.push(s),
                    (Kind::Str, other) => {
                        return Err(ExecError::Runtime(format!("{} of a {} value", call.name, other.type_name())));
                    }
                }
                if with_deriv {
                    stack.reals.push(d);
                }
            }
            return Ok(());
        }
        for k in (0..n).rev() {
            let stack = self.checkpoints.entry(routine).or_default();
            let d = if with_deriv { Some(stack.reals.pop().ok_or_else(|| underflow("checkpoint"))?) } else { None };
            let v = match kind {
                Kind::Real => stack.reals.pop().map(Value::Real),
                Kind::Int => stack.ints.pop().map(Value::Int),
                Kind::Bool => stack.bools.pop().map(Value::Bool),
                Kind::Str => stack.strs.pop().map(Value::Str),
            }
            .ok_or_else(|| underflow("checkpoint"))?;
            let slot = p.slot(k);
            self.mem.set(slot, v)?;
            if let Some(d) = d {
                *self.mem.deriv_mut(slot)? = d;
            }
        }
        Ok(())
    }
}

fn underflow(what: &str) -> ExecError {
    ExecError::Runtime(format!("{what} tape underflow: pop without a matching push"))
}

/// The routine of OpenAD's tangent runtime a call names, its shape suffix (`_s0_s1…`) removed:
/// `setderiv`, `set_neg_deriv`, `inc_deriv`, `dec_deriv`, `zero_deriv`, `sax` or `saxpy`.
pub(crate) fn tangent_routine(name: &str) -> Option<&'static str> {
    let mut base = name;
    while let Some((head, shape)) = base.rsplit_once("_s")
        && !shape.is_empty()
        && shape.bytes().all(|b| b.is_ascii_digit())
    {
        base = head;
    }
    ["setderiv", "set_neg_deriv", "inc_deriv", "dec_deriv", "zero_deriv", "sax", "saxpy"]
        .into_iter()
        .find(|r| *r == base)
}

/// What a derivative operation between two variables does, elementwise.
#[derive(Copy, Clone)]
enum Pair {
    Set,
    SetNeg,
    Inc,
    Dec,
}

impl Pair {
    fn function(self) -> fn(f64, f64) -> f64 {
        match self {
            Pair::Set => |_, s| s,
            Pair::SetNeg => |_, s| -s,
            Pair::Inc => |t, s| t + s,
            Pair::Dec => |t, s| t - s,
        }
    }

    /// Floating-point operations per element: copies and negations count none.
    fn operations(self) -> usize {
        match self {
            Pair::Set | Pair::SetNeg => 0,
            Pair::Inc | Pair::Dec => 1,
        }
    }
}
