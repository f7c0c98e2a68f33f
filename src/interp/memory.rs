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

    /// Column-major contiguous storage for the given `(lower, upper)` bounds, whose element
    /// count [`element_count`] has found representable.
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
        // In 128 bits: indices are program values and may be anything.
        let mut addr = self.base as i128;
        for (i, (d, &ix)) in self.dims.iter().zip(indices).enumerate() {
            let offset = ix as i128 - d.lower as i128;
            if offset < 0 || offset >= d.extent as i128 {
                return Err(ExecError::Runtime(format!(
                    "index {ix} of dimension {} of {name} out of bounds {}:{}",
                    i + 1,
                    d.lower,
                    d.lower as i128 + d.extent as i128 - 1
                )));
            }
            addr += offset * d.stride as i128;
        }
        usize::try_from(addr).map_err(|_| ExecError::Runtime(format!("index of {name} beyond memory")))
    }
}

/// How much memory an execution may take by default: variables' slots and the tapes.
pub const DEFAULT_MAX_MEMORY: usize = 2 << 30;

/// The number of elements of an array with these `(lower, upper)` bounds (an empty
/// dimension makes it 0), or why it has no representable size.
pub fn element_count(bounds: &[(i64, i64)]) -> Result<usize, String> {
    let mut count: usize = 1;
    for &(lower, upper) in bounds {
        let extent = upper
            .checked_sub(lower)
            .and_then(|d| d.checked_add(1))
            .ok_or_else(|| format!("the bounds {lower}:{upper} span more than 2^63 elements"))?
            .max(0);
        count = usize::try_from(extent)
            .ok()
            .and_then(|e| count.checked_mul(e))
            .filter(|&c| i64::try_from(c).is_ok())
            .ok_or_else(|| "the array has more than 2^63 elements".to_owned())?;
    }
    Ok(count)
}

/// The flat store: values and derivative components side by side.
#[derive(Debug)]
pub struct Memory {
    vals: Vec<Value>,
    ders: Vec<f64>,
    /// The most bytes the slots and tapes may take.
    max_bytes: usize,
}

impl Default for Memory {
    fn default() -> Self {
        Memory::with_limit(DEFAULT_MAX_MEMORY)
    }
}

impl Memory {
    /// What one slot takes: a value and a derivative component.
    pub const SLOT_BYTES: usize = std::mem::size_of::<Value>() + std::mem::size_of::<f64>();

    /// An empty store that refuses to grow beyond `max_bytes`.
    pub fn with_limit(max_bytes: usize) -> Memory {
        Memory { vals: Vec::new(), ders: Vec::new(), max_bytes }
    }

    /// Appends `n` slots holding `init`; returns the first. Fails, allocating nothing, when
    /// the slots and `tape_bytes` more would pass the memory limit.
    pub fn alloc(&mut self, n: usize, init: Value, tape_bytes: usize) -> Result<usize, ExecError> {
        let base = self.vals.len();
        let wanted = n.checked_add(base).and_then(|slots| slots.checked_mul(Self::SLOT_BYTES));
        if wanted.is_none_or(|bytes| bytes.saturating_add(tape_bytes) > self.max_bytes) {
            return Err(self.exhausted(format!("{n} more elements")));
        }
        // Within the limit the allocator may still fail (a limit above what the machine has).
        if self.vals.try_reserve_exact(n).is_err() || self.ders.try_reserve_exact(n).is_err() {
            return Err(self.exhausted(format!("{n} more elements (the system refused the memory)")));
        }
        self.vals.resize(base + n, init);
        self.ders.resize(base + n, 0.0);
        Ok(base)
    }

    /// Fails when the slots and `tape_bytes` pass the memory limit.
    pub fn check(&self, tape_bytes: usize) -> Result<(), ExecError> {
        if (self.vals.len() * Self::SLOT_BYTES).saturating_add(tape_bytes) > self.max_bytes {
            return Err(self.exhausted("the tapes".into()));
        }
        Ok(())
    }

    fn exhausted(&self, what: String) -> ExecError {
        ExecError::Runtime(format!(
            "memory limit of {} exceeded: {what} would not fit beside {} elements",
            format_bytes(self.max_bytes),
            self.vals.len()
        ))
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

    /// The value in `slot`. Every access is checked: a dummy argument declared larger than
    /// its actual (legal to declare, an error to use) can point beyond every variable.
    pub fn get(&self, slot: usize) -> Result<&Value, ExecError> {
        self.vals.get(slot).ok_or_else(|| outside(slot))
    }

    /// Stores with Fortran assignment conversion to the slot's type.
    pub fn set(&mut self, slot: usize, value: Value) -> Result<(), ExecError> {
        let cell = self.vals.get_mut(slot).ok_or_else(|| outside(slot))?;
        let same = std::mem::discriminant(cell) == std::mem::discriminant(&value);
        *cell = if same { value } else { value.converted_like(cell)? };
        Ok(())
    }

    pub fn deriv(&self, slot: usize) -> Result<f64, ExecError> {
        self.ders.get(slot).copied().ok_or_else(|| outside(slot))
    }

    pub fn deriv_mut(&mut self, slot: usize) -> Result<&mut f64, ExecError> {
        self.ders.get_mut(slot).ok_or_else(|| outside(slot))
    }
}

fn outside(slot: usize) -> ExecError {
    ExecError::Runtime(format!(
        "access to element {slot} of memory, beyond every variable (an array argument declared larger than its actual?)"
    ))
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

/// Floating-point operations executed, by the placeholder of the replacement list whose code
/// ran them (0: code outside any replacement list). An elemental operation with a real result
/// counts one per element; derivative code counts what it computes: `Saxpy` a multiplication
/// and an addition per element, `Sax` a multiplication, `IncDeriv`/`DecDeriv` an addition,
/// `ZeroDeriv` and plain copies nothing. Comparing two adjoints of one program by these counts
/// says which sweep does more arithmetic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Operations {
    pub by_placeholder: [u64; 14],
}

impl Operations {
    /// The adjoint sweep: placeholders 3 and 11 (its strictly anonymous copy).
    pub fn adjoint_sweep(&self) -> u64 {
        self.by_placeholder[3] + self.by_placeholder[11]
    }

    /// The taping sweep: placeholders 2 and 10.
    pub fn taping_sweep(&self) -> u64 {
        self.by_placeholder[2] + self.by_placeholder[10]
    }
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

impl Tape {
    /// About the bytes the tape holds.
    pub fn bytes(&self) -> usize {
        self.reals.len() * 8 + self.ints.len() * 8 + self.bools.len() + self.strs.len() * 16
    }
}

/// `2 GiB`, `512 MiB`, `100 bytes`: a size in the largest binary unit it is a whole multiple of.
pub fn format_bytes(bytes: usize) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{} {unit}", bytes >> shift);
        }
    }
    format!("{bytes} bytes")
}

/// Parses a memory size: a number of bytes, or with a binary unit `K`, `M`, `G`, `T`
/// (`KiB`, `MB`, … read the same way).
pub fn parse_memory_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: usize = number.parse().map_err(|_| format!("'{text}' is not a memory size (e.g. 2G, 512M)"))?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(format!("'{text}': unknown unit '{unit}' (use K, M, G or T)")),
    };
    number.checked_mul(1 << shift).ok_or_else(|| format!("'{text}' is too large"))
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
        let i = m.alloc(1, Value::Int(0), 0).unwrap();
        m.set(i, Value::Real(-2.7)).unwrap();
        assert_eq!(m.get(i).unwrap(), &Value::Int(-2));
        let r = m.alloc(1, Value::Real(0.0), 0).unwrap();
        m.set(r, Value::Int(3)).unwrap();
        assert_eq!(m.get(r).unwrap(), &Value::Real(3.0));
        assert!(m.set(r, Value::Str("x".into())).is_err());
    }
}
