//! Forward derivatives of the original program by dual numbers: every real carries a value and
//! a tangent, the tangent living in the slot's derivative component (which original code never
//! uses otherwise). An assignment evaluates its right-hand side's value exactly as
//! `Machine::eval` does and its tangent by the chain rule, operation by operation, so the
//! tangents are the exact directional derivatives of the original code at this point, with no
//! transformation involved. [`super::localize`] compares them with what a transformed program
//! computes, statement by statement.
//!
//! At a kink the tangent follows the branch the value takes (`abs` at 0 counts as increasing,
//! as the catalogue's `sign(1, x)` partial does; `max(a, b)` with `a == b` follows `a`).

use super::ExecError;
use super::exec::{Machine, Place};
use super::intrinsics::{self, ArrayIntrinsic, Elemental};
use super::lower::{Assign, Expr};
use super::memory::Value;

impl Machine<'_> {
    /// Runs an assignment of original code with dual numbers: the value as [`Machine::assign`]
    /// stores it, and the tangent of the right-hand side in the derivative component of every
    /// element stored (zero where the stored value is not real).
    pub(crate) fn dual_assign(&mut self, a: &Assign) -> Result<(), ExecError> {
        if a.lhs.deriv {
            return self.assign(a);
        }
        // Fortran evaluates the right-hand side before storing: tangents first, unless the
        // left-hand side gets its storage from this very assignment (then it is not read).
        let tangents = match self.place(&a.lhs) {
            Ok(place) => Some(self.tangents(a, &place)?),
            Err(_) => None,
        };
        self.assign(a)?;
        let place = self.place(&a.lhs)?;
        let tangents = match tangents {
            Some(t) => t,
            None => self.tangents(a, &place)?,
        };
        for (k, d) in tangents.into_iter().enumerate() {
            let slot = place.slot(k);
            let real = matches!(self.mem.get(slot)?, Value::Real(_));
            *self.mem.deriv_mut(slot)? = if real { d } else { 0.0 };
        }
        Ok(())
    }

    /// The tangent of each element the assignment stores.
    fn tangents(&self, a: &Assign, place: &Place) -> Result<Vec<f64>, ExecError> {
        match place {
            Place::Scalar(_) => Ok(vec![self.dual_eval(&a.rhs, None)?.1]),
            Place::Array(b) => (0..b.len()).map(|k| Ok(self.dual_eval(&a.rhs, Some(k))?.1)).collect(),
        }
    }

    /// The value and the tangent of an expression (element `k` of an array expression).
    pub(crate) fn dual_eval(&self, e: &Expr, k: Option<usize>) -> Result<(Value, f64), ExecError> {
        match e {
            Expr::Elemental(op, args) => {
                if self.stack_exhausted() {
                    // `eval` words the error.
                    return Ok((self.eval(e, k)?, 0.0));
                }
                let mut values = Vec::with_capacity(args.len());
                let mut tangents = Vec::with_capacity(args.len());
                for arg in args {
                    let (v, d) = self.dual_eval(arg, k)?;
                    values.push(v);
                    tangents.push(d);
                }
                let value = intrinsics::apply(*op, &values)?;
                let tangent = match value {
                    Value::Real(r) => elemental_tangent(*op, &values, &tangents, r)?,
                    _ => 0.0,
                };
                Ok((value, tangent))
            }
            Expr::Load(r) => {
                let value = self.eval(e, k)?;
                let tangent = if r.deriv || !matches!(value, Value::Real(_)) {
                    0.0
                } else {
                    match self.place(r)? {
                        Place::Scalar(slot) => self.mem.deriv(slot)?,
                        Place::Array(b) => self.mem.deriv(b.element(k.unwrap_or(0)))?,
                    }
                };
                Ok((value, tangent))
            }
            Expr::Array(op, r, _) => {
                let value = self.eval(e, k)?;
                let tangent = match (op, &value) {
                    (_, v) if !matches!(v, Value::Real(_)) => 0.0,
                    (ArrayIntrinsic::Sum, _) => {
                        let place = self.place(r)?;
                        let mut sum = 0.0;
                        for j in 0..place.len() {
                            sum += self.mem.deriv(place.slot(j))?;
                        }
                        sum
                    }
                    (ArrayIntrinsic::MaxVal | ArrayIntrinsic::MinVal, Value::Real(best)) => {
                        // The tangent of the first element holding the extreme value.
                        let place = self.place(r)?;
                        let mut tangent = 0.0;
                        for j in 0..place.len() {
                            if self.mem.get(place.slot(j))?.as_f64()? == *best {
                                tangent = self.mem.deriv(place.slot(j))?;
                                break;
                            }
                        }
                        tangent
                    }
                    // `eval` has checked the shapes: the element it read, by the same rule.
                    (ArrayIntrinsic::Reshape, _) => self.mem.deriv(self.place(r)?.slot(k.unwrap_or(0)))?,
                    (ArrayIntrinsic::Transpose, _) => {
                        let place = self.place(r)?;
                        let b = place.binding();
                        let (rows, columns) = (b.dims[0].extent as usize, b.dims[1].extent as usize);
                        let k = k.unwrap_or(0);
                        self.mem.deriv(place.slot(k / columns + (k % columns) * rows))?
                    }
                    _ => 0.0,
                };
                Ok((value, tangent))
            }
            // `transfer` moves bits, not values: like the transformed code (and every AD tool),
            // no derivative follows it.
            Expr::Const(_) | Expr::Bool(..) | Expr::Transfer { .. } | Expr::Unsupported(_) => {
                Ok((self.eval(e, k)?, 0.0))
            }
        }
    }
}

/// The tangent of `op(values)` whose value is `r`, given the operands' tangents.
fn elemental_tangent(op: Elemental, values: &[Value], tangents: &[f64], r: f64) -> Result<f64, ExecError> {
    use Elemental as E;
    let a = values[0].as_f64()?;
    let da = tangents[0];
    let second = || -> Result<(f64, f64), ExecError> { Ok((values[1].as_f64()?, tangents[1])) };
    Ok(match op {
        E::Add => da + second()?.1,
        E::Sub => da - second()?.1,
        E::Mul => {
            let (b, db) = second()?;
            da * b + a * db
        }
        E::Div => {
            let (b, db) = second()?;
            (da - r * db) / b
        }
        E::Neg => -da,
        E::Pow => {
            let (b, db) = second()?;
            let mut d = if da != 0.0 { b * a.powf(b - 1.0) * da } else { 0.0 };
            if db != 0.0 {
                d += a.ln() * r * db;
            }
            d
        }
        E::Ln => da / a,
        E::Log10 => da / (a * std::f64::consts::LN_10),
        E::Sin => a.cos() * da,
        E::Cos => -a.sin() * da,
        E::Tan => da / (a.cos() * a.cos()),
        E::Asin => da / (1.0 - a * a).sqrt(),
        E::Acos => -da / (1.0 - a * a).sqrt(),
        E::Atan => da / (1.0 + a * a),
        E::Sinh => a.cosh() * da,
        E::Cosh => a.sinh() * da,
        E::Tanh => (1.0 - r * r) * da,
        E::Exp => r * da,
        E::Sqrt => da / (2.0 * r),
        E::Abs => {
            if a >= 0.0 {
                da
            } else {
                -da
            }
        }
        // |a| with the sign of b: the derivative in a is sign(a) * sign(b), none in b.
        E::Sign => {
            let b = second()?.0;
            let sa = if a >= 0.0 { 1.0 } else { -1.0 };
            let sb = if b >= 0.0 { 1.0 } else { -1.0 };
            sa * sb * da
        }
        // a - int(a / b) * b.
        E::Mod => {
            let (b, db) = second()?;
            da - (a / b).trunc() * db
        }
        E::Real => da,
        E::Min | E::Max => {
            // The operand the value came from, the first on a tie, as `apply` picks.
            let (b, db) = second()?;
            let first = if op == E::Min { a <= b } else { a >= b };
            if first { da } else { db }
        }
        E::Int
        | E::Nint
        | E::StrEq
        | E::StrNe
        | E::StrGe
        | E::StrLe
        | E::StrLt
        | E::StrGt
        | E::Len
        | E::Trim
        | E::Scan
        | E::Ichar => 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each rule against a central difference of the value `apply` computes.
    #[test]
    fn every_real_rule_matches_a_central_difference() {
        use Elemental as E;
        let unary = [
            E::Neg,
            E::Ln,
            E::Log10,
            E::Sin,
            E::Cos,
            E::Tan,
            E::Asin,
            E::Acos,
            E::Atan,
            E::Sinh,
            E::Cosh,
            E::Tanh,
            E::Exp,
            E::Sqrt,
            E::Abs,
            E::Real,
        ];
        let binary = [E::Add, E::Sub, E::Mul, E::Div, E::Pow, E::Sign, E::Mod, E::Min, E::Max];
        let f = |op, x: &[f64]| {
            let values: Vec<Value> = x.iter().map(|&v| Value::Real(v)).collect();
            intrinsics::apply(op, &values).unwrap().as_f64().unwrap()
        };
        let points: [&[f64]; 3] = [&[0.3, 0.7], &[0.55, -1.25], &[0.9, 2.5]];
        for point in points {
            for (ops, arity) in [(&unary[..], 1), (&binary[..], 2)] {
                for &op in ops {
                    let x = &point[..arity];
                    if op == E::Pow && x[0] < 0.0 {
                        continue;
                    }
                    for dir in 0..arity {
                        let mut tangents = vec![0.0; arity];
                        tangents[dir] = 1.0;
                        let values: Vec<Value> = x.iter().map(|&v| Value::Real(v)).collect();
                        let exact = elemental_tangent(op, &values, &tangents, f(op, x)).unwrap();
                        let h = 1e-6;
                        let (mut up, mut down) = (x.to_vec(), x.to_vec());
                        up[dir] += h;
                        down[dir] -= h;
                        let fd = (f(op, &up) - f(op, &down)) / (2.0 * h);
                        assert!(
                            (exact - fd).abs() <= 1e-6 * fd.abs().max(1.0),
                            "{op:?} at {x:?} in {dir}: {exact} vs {fd}"
                        );
                    }
                }
            }
        }
    }
}
