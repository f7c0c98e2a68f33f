//! Expression evaluation. An expression is evaluated either as a scalar (`k = None`) or as
//! element `k` of an elementwise array expression, in which every array reference yields its
//! `k`-th element in column-major order and scalars stand for every element.

use super::ExecError;
use super::exec::{Machine, Place};
use super::intrinsics::{self, ArrayIntrinsic};
use super::lower::{Expr, Ref, Sub};
use super::memory::Value;
use crate::ir::BooleanOp;

impl Machine<'_> {
    pub(crate) fn eval(&self, e: &Expr, k: Option<usize>) -> Result<Value, ExecError> {
        if matches!(e, Expr::Elemental(..) | Expr::Bool(..) | Expr::Array(..)) && self.stack_exhausted() {
            return Err(ExecError::Runtime(format!(
                "expression nested too deep for the executor's stack budget of {}",
                super::memory::format_bytes(self.config.stack_budget)
            )));
        }
        match e {
            Expr::Const(v) => Ok(v.clone()),
            Expr::Load(r) => self.load(r, k),
            Expr::Elemental(op, args) => {
                let value = match args.as_slice() {
                    [a] => intrinsics::apply(*op, &[self.eval(a, k)?]),
                    [a, b] => intrinsics::apply(*op, &[self.eval(a, k)?, self.eval(b, k)?]),
                    more => {
                        let values = more.iter().map(|a| self.eval(a, k)).collect::<Result<Vec<_>, _>>()?;
                        intrinsics::apply(*op, &values)
                    }
                }?;
                if matches!(value, Value::Real(_)) {
                    self.count_operations(1);
                }
                Ok(value)
            }
            Expr::Array(op, r, rest) => self.array_intrinsic(*op, r, rest, k),
            Expr::Bool(op, args) => self.boolean(*op, args, k),
            Expr::Transfer { source, from, to } => {
                if from.real && !to.real {
                    self.reals_through_integers.set(true);
                }
                transfer(self.eval(source, k)?, *from, *to)
            }
            Expr::Unsupported(why) => Err(ExecError::Unsupported(why.clone())),
        }
    }

    fn load(&self, r: &Ref, k: Option<usize>) -> Result<Value, ExecError> {
        if let Some(text) = self.substring(r)? {
            return Ok(Value::Str(text.into()));
        }
        let slot = match self.place(r)? {
            Place::Scalar(slot) => slot,
            Place::Array(b) => match k {
                Some(k) if k < b.len() => b.element(k),
                Some(k) => {
                    return Err(ExecError::Runtime(format!(
                        "array {} has {} elements, element {} requested by an array expression",
                        self.prog.syms[r.sym as usize].name,
                        b.len(),
                        k + 1
                    )));
                }
                None => {
                    return Err(ExecError::Unsupported(format!(
                        "array {} used where a scalar is expected",
                        self.prog.syms[r.sym as usize].name
                    )));
                }
            },
        };
        Ok(if r.deriv { Value::Real(self.mem.deriv(slot)?) } else { self.mem.get(slot)?.clone() })
    }

    /// The value of a substring reference `a(offset:length)` of a scalar string, read as the
    /// front end writes it (from WHIRL, whose character sections count from 0 and give their
    /// length): the characters `offset + 1 ..= offset + length` in Fortran's numbering. `None`
    /// when `r` is no substring. Only reads: a store into a substring stays unsupported.
    fn substring(&self, r: &Ref) -> Result<Option<String>, ExecError> {
        let info = &self.prog.syms[r.sym as usize];
        let [Sub::Section { lower, upper, stride }] = r.subs.as_slice() else { return Ok(None) };
        if r.deriv
            || r.unsupported.is_some()
            || !matches!(info.ty, crate::ir::SymbolType::String | crate::ir::SymbolType::Char)
        {
            return Ok(None);
        }
        let b = self.binding(r.sym)?;
        if !b.dims.is_empty() {
            return Ok(None);
        }
        let whole = match self.mem.get(b.base)? {
            Value::Str(text) => text.clone(),
            other => {
                return Err(ExecError::Runtime(format!("string {} holds a {}", info.name, other.type_name())));
            }
        };
        let chars: Vec<char> = whole.chars().collect();
        let bound = |e: &Option<Expr>, default: i64| match e {
            Some(e) => self.eval(e, None)?.as_i64(),
            None => Ok(default),
        };
        if bound(stride, 1)? != 1 {
            return Err(ExecError::Unsupported(format!("substring of {} with a stride", info.name)));
        }
        let offset = bound(lower, 0)?;
        let length = bound(upper, chars.len() as i64 - offset)?;
        let end = offset.checked_add(length.max(0));
        match end {
            Some(end) if offset >= 0 && end <= chars.len() as i64 => {
                Ok(Some(chars[offset as usize..end as usize].iter().collect()))
            }
            _ => Err(ExecError::Runtime(format!(
                "substring of {} from offset {offset} of length {length} outside its {} characters",
                info.name,
                chars.len()
            ))),
        }
    }

    /// `k`: the element an array expression asks for (element-valued intrinsics only).
    fn array_intrinsic(
        &self,
        op: ArrayIntrinsic,
        r: &Ref,
        rest: &[Expr],
        k: Option<usize>,
    ) -> Result<Value, ExecError> {
        if op == ArrayIntrinsic::Bound {
            return Ok(Value::Bool(self.binding(r.sym).is_ok()));
        }
        let place = self.place(r)?;
        if op == ArrayIntrinsic::Transpose {
            return self.transpose_element(r, &place, k);
        }
        if op == ArrayIntrinsic::Reshape {
            return self.reshape_element(r, &place, rest, k);
        }
        let dim = match rest.first() {
            Some(e) => Some(self.eval(e, None)?.as_i64()?),
            None => None,
        };
        let b = place.binding();
        let pick_dim = |d: i64| {
            b.dims
                .get((d - 1) as usize)
                .copied()
                .ok_or_else(|| ExecError::Runtime(format!("dimension {d} out of range")))
        };
        match op {
            ArrayIntrinsic::Size => Ok(Value::Int(match dim {
                Some(d) => pick_dim(d)?.extent,
                None => b.len() as i64,
            })),
            ArrayIntrinsic::Lbound | ArrayIntrinsic::Ubound => {
                let d = match (dim, b.dims.len()) {
                    (Some(d), _) => pick_dim(d)?,
                    (None, 1) => b.dims[0],
                    (None, _) => {
                        return Err(ExecError::Unsupported(
                            "lbound/ubound without dim of a multi-dimensional array".into(),
                        ));
                    }
                };
                Ok(Value::Int(if op == ArrayIntrinsic::Lbound { d.lower } else { d.lower + d.extent - 1 }))
            }
            ArrayIntrinsic::MaxVal | ArrayIntrinsic::MinVal | ArrayIntrinsic::Sum => {
                if dim.is_some() {
                    return Err(ExecError::Unsupported("array reduction along a dimension".into()));
                }
                let mut acc: Option<Value> = None;
                for k in 0..place.len() {
                    let v = self.mem.get(place.slot(k))?.clone();
                    acc = Some(match acc {
                        None => v,
                        Some(a) => {
                            let e = match op {
                                ArrayIntrinsic::MaxVal => intrinsics::Elemental::Max,
                                ArrayIntrinsic::MinVal => intrinsics::Elemental::Min,
                                _ => intrinsics::Elemental::Add,
                            };
                            intrinsics::apply(e, &[a, v])?
                        }
                    });
                }
                acc.ok_or_else(|| ExecError::Runtime("reduction of an empty array".into()))
            }
            ArrayIntrinsic::MaxLoc | ArrayIntrinsic::MinLoc => {
                if b.dims.len() != 1 || dim.is_some() {
                    return Err(ExecError::Unsupported("maxloc/minloc of a multi-dimensional array".into()));
                }
                let mut best: Option<(usize, f64)> = None;
                for k in 0..place.len() {
                    let v = self.mem.get(place.slot(k))?.as_f64()?;
                    let better = match best {
                        None => true,
                        Some((_, bv)) => {
                            if op == ArrayIntrinsic::MaxLoc {
                                v > bv
                            } else {
                                v < bv
                            }
                        }
                    };
                    if better {
                        best = Some((k, v));
                    }
                }
                Ok(Value::Int(best.map_or(0, |(k, _)| k as i64 + 1)))
            }
            ArrayIntrinsic::Bound | ArrayIntrinsic::Transpose | ArrayIntrinsic::Reshape => {
                unreachable!("handled above")
            }
        }
    }

    /// Element `k` (column-major) of the transpose of the matrix at `place`: the result has
    /// the matrix's columns as rows, so its element (i, j) is the matrix's (j, i).
    fn transpose_element(&self, r: &Ref, place: &Place, k: Option<usize>) -> Result<Value, ExecError> {
        let name = &self.prog.syms[r.sym as usize].name;
        let b = place.binding();
        let [rows, columns] = b.dims[..] else {
            return Err(ExecError::Unsupported(format!("transpose of {name} of rank {}", b.dims.len())));
        };
        let Some(k) = k else {
            return Err(ExecError::Unsupported(format!("transpose of {name} where a scalar is expected")));
        };
        let (rows, columns) = (rows.extent as usize, columns.extent as usize);
        if k >= rows * columns {
            return Err(ExecError::Runtime(format!(
                "transpose of {name} has {} elements, element {} requested by an array expression",
                rows * columns,
                k + 1
            )));
        }
        // In the result, `columns` rows: element k is at row k % columns, column k / columns.
        let (i, j) = (k % columns, k / columns);
        let slot = place.slot(j + i * rows);
        Ok(if r.deriv { Value::Real(self.mem.deriv(slot)?) } else { self.mem.get(slot)?.clone() })
    }

    /// Element `k` (array element order) of `reshape(source, shape)`: the source's element
    /// `k`, as long as `k` is below the product of the shape vector's entries. `pad` and
    /// `order` are not implemented.
    fn reshape_element(&self, r: &Ref, place: &Place, rest: &[Expr], k: Option<usize>) -> Result<Value, ExecError> {
        let name = &self.prog.syms[r.sym as usize].name;
        let Some(k) = k else {
            return Err(ExecError::Unsupported(format!("reshape of {name} where a scalar is expected")));
        };
        let [Expr::Load(shape)] = rest else {
            return Err(ExecError::Unsupported(format!(
                "reshape of {name} with {} further arguments (only a shape variable is implemented)",
                rest.len()
            )));
        };
        // Through `load`, so that a shape wrongly read as a derivative reads as zeros.
        let entries = match self.place(shape)? {
            Place::Scalar(_) => None,
            Place::Array(b) => Some(b.len()),
        };
        let mut size: i64 = 1;
        for e in 0..entries.unwrap_or(1) {
            size = size.saturating_mul(self.load(shape, entries.map(|_| e))?.as_i64()?.max(0));
        }
        if k as i64 >= size || k >= place.len() {
            return Err(ExecError::Runtime(format!(
                "reshape of {name} ({} elements) to {size} elements, element {} requested by an array expression",
                place.len(),
                k + 1
            )));
        }
        let slot = place.slot(k);
        Ok(if r.deriv { Value::Real(self.mem.deriv(slot)?) } else { self.mem.get(slot)?.clone() })
    }

    fn boolean(&self, op: BooleanOp, args: &[Expr], k: Option<usize>) -> Result<Value, ExecError> {
        let operand = |i: usize| -> Result<Value, ExecError> {
            match args.get(i) {
                Some(e) => self.eval(e, k),
                None => Err(ExecError::Runtime(format!("boolean operation {op:?} lacks operand {}", i + 1))),
            }
        };
        use std::cmp::Ordering;
        let compare = || -> Result<Ordering, ExecError> {
            let (a, b) = (operand(0)?, operand(1)?);
            match (&a, &b) {
                (Value::Int(x), Value::Int(y)) => Ok(x.cmp(y)),
                (Value::Str(x), Value::Str(y)) => Ok(x.trim_end_matches(' ').cmp(y.trim_end_matches(' '))),
                (Value::Bool(x), Value::Bool(y)) => Ok(x.cmp(y)),
                _ => {
                    let (x, y) = (a.as_f64()?, b.as_f64()?);
                    x.partial_cmp(&y).ok_or_else(|| ExecError::Runtime("comparison with NaN".into()))
                }
            }
        };
        Ok(Value::Bool(match op {
            BooleanOp::LessThan => compare()? == Ordering::Less,
            BooleanOp::LessOrEqual => compare()? != Ordering::Greater,
            BooleanOp::GreaterThan => compare()? == Ordering::Greater,
            BooleanOp::GreaterOrEqual => compare()? != Ordering::Less,
            BooleanOp::Equal => compare()? == Ordering::Equal,
            BooleanOp::NotEqual => compare()? != Ordering::Equal,
            BooleanOp::And => operand(0)?.as_bool()? && operand(1)?.as_bool()?,
            BooleanOp::Or => operand(0)?.as_bool()? || operand(1)?.as_bool()?,
            BooleanOp::Xor => operand(0)?.as_bool()? != operand(1)?.as_bool()?,
            BooleanOp::Not => !operand(0)?.as_bool()?,
        }))
    }
}

/// `transfer` of a scalar: the bytes of `value` stored as `from` (little-endian, as on every
/// machine OpenAD runs on), read as `to`. A result longer than the source has a processor
/// dependent remainder (Fortran 2018 16.9.193); here it is zero, as on a fresh machine.
fn transfer(value: Value, from: super::lower::Repr, to: super::lower::Repr) -> Result<Value, ExecError> {
    let mut bytes = [0u8; 8];
    match (from.real, from.bytes) {
        (true, 8) => bytes = value.as_f64()?.to_le_bytes(),
        (true, 4) => bytes[..4].copy_from_slice(&(value.as_f64()? as f32).to_le_bytes()),
        (false, n) => bytes[..n].copy_from_slice(&value.as_i64()?.to_le_bytes()[..n]),
        (true, n) => return Err(ExecError::Unsupported(format!("transfer from a real of {n} bytes"))),
    }
    let mut taken = [0u8; 8];
    taken[..to.bytes].copy_from_slice(&bytes[..to.bytes]);
    Ok(match (to.real, to.bytes) {
        (true, 8) => Value::Real(f64::from_le_bytes(taken)),
        (true, 4) => Value::Real(f64::from(f32::from_le_bytes(taken[..4].try_into().expect("four bytes")))),
        (false, n) => {
            // Sign-extend the integer of `n` bytes.
            let shift = 64 - 8 * n as u32;
            Value::Int((i64::from_le_bytes(taken) << shift) >> shift)
        }
        (true, n) => return Err(ExecError::Unsupported(format!("transfer to a real of {n} bytes"))),
    })
}

#[cfg(test)]
mod tests {
    use super::super::lower::Repr;
    use super::*;

    const F8: Repr = Repr { real: true, bytes: 8 };
    const I8: Repr = Repr { real: false, bytes: 8 };
    const I4: Repr = Repr { real: false, bytes: 4 };

    #[test]
    fn transfer_moves_bits_between_kinds() {
        // Through an integer of the same size and back: the value itself.
        let bits = transfer(Value::Real(1.5), F8, I8).expect("to I8");
        assert_eq!(bits, Value::Int(1.5f64.to_bits() as i64));
        assert_eq!(transfer(bits, I8, F8).expect("back"), Value::Real(1.5));
        // Into a shorter integer: the low four bytes, sign-extended.
        let low = transfer(Value::Real(f64::from_bits(0x4000_0000_8000_0001)), F8, I4).expect("to I4");
        assert_eq!(low, Value::Int(i64::from(0x8000_0001u32 as i32)));
        // Into a longer real: the source's bytes, then zeros.
        assert_eq!(transfer(Value::Int(1), I4, F8).expect("to F8"), Value::Real(f64::from_bits(1)));
    }
}
