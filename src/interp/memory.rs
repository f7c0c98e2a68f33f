//! Storage of the executor: typed scalar values, one flat store of slots (value plus
//! derivative component), array views with Fortran bounds, and the tapes of the runtime.
//!
//! Every variable, scalar or array, occupies consecutive slots of [`Memory`]; arrays are
//! column-major as in Fortran. A [`Binding`] says where a symbol lives in one activation: a base
//! slot and per dimension its lower bound, extent and stride, so by-reference arguments and
//! array sections are views into the caller's slots, never copies.
//!
//! The derivative component is one `f64` per slot (one direction). Vector mode later makes it
//! `ndir` consecutive numbers per slot; every access goes through [`Memory::deriv`] and
//! [`Memory::deriv_mut`] so that change stays local to this file.

use std::rc::Rc;

use super::ExecError;

/// A scalar value as the Fortran program sees it; the variant is the type.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Real(f64),
    Bool(bool),
    Str(Rc<str>),
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Int(_) => "integer",
            Value::Real(_) => "real",
            Value::Bool(_) => "bool",
            Value::Str(_) => "string",
        }
    }

    /// The numeric value as a real (integers promote, as in mixed Fortran arithmetic).
    pub fn as_f64(&self) -> Result<f64, ExecError> {
        match self {
            Value::Int(i) => Ok(*i as f64),
            Value::Real(r) => Ok(*r),
            Value::Bool(_) | Value::Str(_) => {
                Err(ExecError::Runtime(format!("{} value used as a number", self.type_name())))
            }
        }
    }

    /// The value as an integer; reals truncate toward zero like Fortran `INT`.
    pub fn as_i64(&self) -> Result<i64, ExecError> {
        match self {
            Value::Int(i) => Ok(*i),
            Value::Real(r) => Ok(r.trunc() as i64),
            Value::Bool(_) | Value::Str(_) => {
                Err(ExecError::Runtime(format!("{} value used as an integer", self.type_name())))
            }
        }
    }

    pub fn as_bool(&self) -> Result<bool, ExecError> {
        match self {
            Value::Bool(b) => Ok(*b),
            Value::Int(i) => Ok(*i != 0),
            Value::Real(_) | Value::Str(_) => {
                Err(ExecError::Runtime(format!("{} value used as a logical", self.type_name())))
            }
        }
    }

    /// The value converted to the type of `like` (assignment conversion).
    fn converted_like(self, like: &Value) -> Result<Value, ExecError> {
        Ok(match (like, self) {
            (Value::Real(_), Value::Int(i)) => Value::Real(i as f64),
            (Value::Int(_), Value::Real(r)) => Value::Int(r.trunc() as i64),
            (Value::Int(_), Value::Bool(b)) => Value::Int(b as i64),
            (Value::Bool(_), Value::Int(i)) => Value::Bool(i != 0),
            (Value::Real(_), v @ Value::Real(_))
            | (Value::Int(_), v @ Value::Int(_))
            | (Value::Bool(_), v @ Value::Bool(_))
            | (Value::Str(_), v @ Value::Str(_)) => v,
            (like, v) => {
                return Err(ExecError::Runtime(format!(
                    "cannot store a {} value in a {} variable",
                    v.type_name(),
                    like.type_name()
                )));
            }
        })
    }
}

/// One dimension of a view: valid indices are `lower .. lower + extent`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Dim {
    pub lower: i64,
    pub extent: i64,
    pub stride: i64,
}

/// Where a variable lives: a scalar has no dimensions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub base: usize,
    pub dims: Rc<[Dim]>,
}

impl Binding {
    pub fn scalar(base: usize) -> Binding {
        Binding { base, dims: Rc::from(Vec::new()) }
    }

    /// Column-major contiguous storage for the given `(lower, upper)` bounds.
    pub fn contiguous(base: usize, bounds: &[(i64, i64)]) -> Binding {
        let mut stride = 1;
        let dims: Vec<Dim> = bounds
            .iter()
            .map(|&(lower, upper)| {
                let extent = (upper - lower + 1).max(0);
                let dim = Dim { lower, extent, stride };
                stride *= extent;
                dim
            })
            .collect();
        Binding { base, dims: Rc::from(dims) }
    }

    /// The `(lower, upper)` bounds of each dimension.
    pub fn bounds(&self) -> Vec<(i64, i64)> {
        self.dims.iter().map(|d| (d.lower, d.lower + d.extent - 1)).collect()
    }

    pub fn is_array(&self) -> bool {
        !self.dims.is_empty()
    }

    pub fn len(&self) -> usize {
        self.dims.iter().map(|d| d.extent.max(0) as usize).product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the elements occupy `base .. base + len` in column-major order.
    pub fn is_contiguous(&self) -> bool {
        let mut stride = 1;
        for d in self.dims.iter() {
            if d.extent > 1 && d.stride != stride {
                return false;
            }
            stride *= d.extent;
        }
        true
    }

    /// The slot of the `k`-th element in column-major order.
    pub fn element(&self, mut k: usize) -> usize {
        let mut addr = self.base as i64;
        for d in self.dims.iter() {
            let extent = d.extent.max(1) as usize;
            addr += (k % extent) as i64 * d.stride;
            k /= extent;
        }
        addr as usize
    }

    /// The slot of the element with the given Fortran indices, bounds checked.
    pub fn index(&self, indices: &[i64], name: &str) -> Result<usize, ExecError> {
        if indices.len() != self.dims.len() {
            return Err(ExecError::Runtime(format!(
                "{name} has rank {} but is indexed with {} subscripts",
                self.dims.len(),
                indices.len()
            )));
        }
        let mut addr = self.base as i64;
        for (i, (d, &ix)) in self.dims.iter().zip(indices).enumerate() {
            if ix < d.lower || ix >= d.lower + d.extent {
                return Err(ExecError::Runtime(format!(
                    "index {ix} of dimension {} of {name} out of bounds {}:{}",
                    i + 1,
                    d.lower,
                    d.lower + d.extent - 1
                )));
            }
            addr += (ix - d.lower) * d.stride;
        }
        Ok(addr as usize)
    }
}

/// The flat store: values and derivative components side by side.
#[derive(Default, Debug)]
pub struct Memory {
    vals: Vec<Value>,
    ders: Vec<f64>,
}

impl Memory {
    /// Appends `n` slots holding `init`; returns the first.
    pub fn alloc(&mut self, n: usize, init: Value) -> usize {
        let base = self.vals.len();
        self.vals.resize(base + n, init);
        self.ders.resize(base + n, 0.0);
        base
    }

    /// The number of slots in use, a mark for [`Memory::release`].
    pub fn top(&self) -> usize {
        self.vals.len()
    }

    /// Frees every slot allocated since `mark` (activation records are a stack).
    pub fn release(&mut self, mark: usize) {
        self.vals.truncate(mark);
        self.ders.truncate(mark);
    }

    pub fn get(&self, slot: usize) -> &Value {
        &self.vals[slot]
    }

    /// Stores with Fortran assignment conversion to the slot's type.
    pub fn set(&mut self, slot: usize, value: Value) -> Result<(), ExecError> {
        let cell = &mut self.vals[slot];
        let same = std::mem::discriminant(cell) == std::mem::discriminant(&value);
        *cell = if same { value } else { value.converted_like(cell)? };
        Ok(())
    }

    pub fn deriv(&self, slot: usize) -> f64 {
        self.ders[slot]
    }

    pub fn deriv_mut(&mut self, slot: usize) -> &mut f64 {
        &mut self.ders[slot]
    }
}

/// The global tapes of the runtime (`push_*`/`pop_*`), last in first out.
#[derive(Default, Debug)]
pub struct Tape {
    pub reals: Vec<f64>,
    pub ints: Vec<i64>,
    pub bools: Vec<bool>,
    pub strs: Vec<Rc<str>>,
    /// Words pushed so far, by tape (pops do not subtract).
    pub pushed: TapeWords,
}

/// How many words were pushed on each tape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TapeWords {
    pub reals: u64,
    pub integers: u64,
    pub logicals: u64,
    pub strings: u64,
}

impl TapeWords {
    pub fn total(&self) -> u64 {
        self.reals + self.integers + self.logicals + self.strings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_major_with_non_unit_lower_bounds() {
        let b = Binding::contiguous(10, &[(0, 2), (-1, 0)]);
        assert_eq!(b.len(), 6);
        assert_eq!(b.index(&[0, -1], "a").unwrap(), 10);
        assert_eq!(b.index(&[2, -1], "a").unwrap(), 12);
        assert_eq!(b.index(&[0, 0], "a").unwrap(), 13);
        assert_eq!(b.element(4), 14);
        assert!(b.index(&[3, 0], "a").is_err());
        assert!(b.is_contiguous());
    }

    #[test]
    fn assignment_converts_to_the_slot_type() {
        let mut m = Memory::default();
        let i = m.alloc(1, Value::Int(0));
        m.set(i, Value::Real(-2.7)).unwrap();
        assert_eq!(m.get(i), &Value::Int(-2));
        let r = m.alloc(1, Value::Real(0.0));
        m.set(r, Value::Int(3)).unwrap();
        assert_eq!(m.get(r), &Value::Real(3.0));
        assert!(m.set(r, Value::Str("x".into())).is_err());
    }
}
