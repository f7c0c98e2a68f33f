//! The executor's own table of intrinsic values by catalogue name (`add_scal_scal`, `sin_scal`,
//! …), with Fortran semantics: integer arithmetic stays integer (division truncates), mixed
//! arithmetic promotes to real. Inquiry and reduction intrinsics (`size`, `maxval`, …) act on
//! array views and live in `eval.rs`; this table holds the elemental ones.
//!
//! The shared catalogue (`xaif::intrinsics`) will later provide the same values; until then
//! this table is private to the interpreter.

use std::rc::Rc;

use super::ExecError;
use super::memory::Value;

/// An elemental intrinsic, resolved from its name once when a program is lowered.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Elemental {
    Add,
    Sub,
    Mul,
    Div,
    Neg,
    Pow,
    Ln,
    Log10,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Exp,
    Sqrt,
    Abs,
    Sign,
    Mod,
    Int,
    Nint,
    Real,
    Min,
    Max,
    StrEq,
    StrNe,
    StrGe,
    StrLe,
    StrLt,
    StrGt,
    Len,
    Trim,
    Scan,
    Ichar,
}

/// Array inquiries and reductions: their first operand is an array reference.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ArrayIntrinsic {
    Size,
    Lbound,
    Ubound,
    MaxVal,
    MinVal,
    Sum,
    MaxLoc,
    MinLoc,
    /// `present` and `allocated`: whether the reference is bound.
    Bound,
    /// The transpose of a matrix, read element by element as an array expression.
    Transpose,
    /// `reshape(source, shape)`: the source's elements in array element order, read element
    /// by element as an array expression.
    Reshape,
}

pub enum Resolved {
    Elemental(Elemental),
    Array(ArrayIntrinsic),
}

/// The intrinsic named `name` in the catalogues, if the executor knows it. The `trace` mode
/// renames each non-smooth intrinsic to OpenAD's runtime version `oad_<name>` (see
/// [`crate::passes::trace`]), which computes the same value: it resolves as `<name>`.
pub fn resolve(name: &str) -> Option<Resolved> {
    use Elemental as E;
    if let Some(underlying) = name.strip_prefix("oad_") {
        return resolve(underlying);
    }
    let e = match name {
        "add_scal_scal" => E::Add,
        "sub_scal_scal" => E::Sub,
        "mul_scal_scal" => E::Mul,
        "div_scal_scal" => E::Div,
        "minus_scal" => E::Neg,
        "pow_scal_scal" => E::Pow,
        "ln_scal" => E::Ln,
        "log10" | "log10_scal" => E::Log10,
        "sin_scal" => E::Sin,
        "cos_scal" => E::Cos,
        "tan_scal" => E::Tan,
        "arcsin_scal" => E::Asin,
        "arccos_scal" => E::Acos,
        "arctan_scal" => E::Atan,
        "sinh_scal" => E::Sinh,
        "cosh_scal" => E::Cosh,
        "tanh_scal" => E::Tanh,
        "exp_scal" => E::Exp,
        "sqrt_scal" => E::Sqrt,
        "abs_scal" => E::Abs,
        "sign_scal_scal" => E::Sign,
        "mod_scal_scal" => E::Mod,
        "int_scal" => E::Int,
        "nint_scal" => E::Nint,
        "real_scal" => E::Real,
        "nc_min_scal_scal" | "min_scal_scal" => E::Min,
        "nc_max_scal_scal" | "max_scal_scal" => E::Max,
        "string_eq_scal_scal" => E::StrEq,
        "string_ne_scal_scal" => E::StrNe,
        "string_ge_scal_scal" => E::StrGe,
        "string_le_scal_scal" => E::StrLe,
        "string_lt_scal_scal" => E::StrLt,
        "string_gt_scal_scal" => E::StrGt,
        "len" => E::Len,
        "trim" => E::Trim,
        "scan" => E::Scan,
        "ichar" => E::Ichar,
        _ => {
            use ArrayIntrinsic as A;
            let a = match name {
                "size" => A::Size,
                "lbound" => A::Lbound,
                "ubound" => A::Ubound,
                "nc_maxval" | "maxval" => A::MaxVal,
                "nc_minval" | "minval" => A::MinVal,
                "sum_arr" => A::Sum,
                "maxloc_arr" => A::MaxLoc,
                "minloc_arr" => A::MinLoc,
                "present" | "allocated" => A::Bound,
                "transpose_arr" | "transpose" => A::Transpose,
                "reshape_arr" | "reshape" => A::Reshape,
                _ => return None,
            };
            return Some(Resolved::Array(a));
        }
    };
    Some(Resolved::Elemental(e))
}

/// Real values of the elemental intrinsics by name, for callers that only deal in reals.
pub fn eval_intrinsic(name: &str, args: &[f64]) -> Option<f64> {
    let Some(Resolved::Elemental(e)) = resolve(name) else {
        return None;
    };
    let values: Vec<Value> = args.iter().map(|&a| Value::Real(a)).collect();
    apply(e, &values).ok().and_then(|v| v.as_f64().ok())
}

fn arity(e: Elemental) -> usize {
    use Elemental as E;
    match e {
        E::Neg
        | E::Ln
        | E::Log10
        | E::Sin
        | E::Cos
        | E::Tan
        | E::Asin
        | E::Acos
        | E::Atan
        | E::Sinh
        | E::Cosh
        | E::Tanh
        | E::Exp
        | E::Sqrt
        | E::Abs
        | E::Int
        | E::Nint
        | E::Real
        | E::Len
        | E::Trim
        | E::Ichar => 1,
        E::Add
        | E::Sub
        | E::Mul
        | E::Div
        | E::Pow
        | E::Sign
        | E::Mod
        | E::Min
        | E::Max
        | E::StrEq
        | E::StrNe
        | E::StrGe
        | E::StrLe
        | E::StrLt
        | E::StrGt
        | E::Scan => 2,
    }
}

fn real1(args: &[Value], f: fn(f64) -> f64) -> Result<Value, ExecError> {
    Ok(Value::Real(f(args[0].as_f64()?)))
}

fn string(v: &Value) -> Result<&str, ExecError> {
    match v {
        Value::Str(s) => Ok(s),
        other => Err(ExecError::Runtime(format!("{} value used as a string", other.type_name()))),
    }
}

/// Fortran compares strings as if the shorter were padded with blanks.
fn compare_strings(a: &str, b: &str) -> std::cmp::Ordering {
    a.trim_end_matches(' ').cmp(b.trim_end_matches(' '))
}

/// Applies an elemental intrinsic.
pub fn apply(e: Elemental, args: &[Value]) -> Result<Value, ExecError> {
    use Elemental as E;
    use Value::{Int, Real};
    if args.len() < arity(e) {
        return Err(ExecError::Runtime(format!("intrinsic {e:?} needs {} operands, got {}", arity(e), args.len())));
    }
    Ok(match e {
        E::Add => match (&args[0], &args[1]) {
            (Int(a), Int(b)) => Int(a.wrapping_add(*b)),
            (a, b) => Real(a.as_f64()? + b.as_f64()?),
        },
        E::Sub => match (&args[0], &args[1]) {
            (Int(a), Int(b)) => Int(a.wrapping_sub(*b)),
            (a, b) => Real(a.as_f64()? - b.as_f64()?),
        },
        E::Mul => match (&args[0], &args[1]) {
            (Int(a), Int(b)) => Int(a.wrapping_mul(*b)),
            (a, b) => Real(a.as_f64()? * b.as_f64()?),
        },
        E::Div => match (&args[0], &args[1]) {
            (Int(_), Int(0)) => return Err(ExecError::Runtime("integer division by zero".into())),
            (Int(a), Int(b)) => Int(a.wrapping_div(*b)),
            (a, b) => Real(a.as_f64()? / b.as_f64()?),
        },
        E::Neg => match &args[0] {
            Int(a) => Int(a.wrapping_neg()),
            a => Real(-a.as_f64()?),
        },
        E::Pow => match (&args[0], &args[1]) {
            (Int(a), Int(b)) => Int(int_pow(*a, *b)?),
            (a, Int(b)) if *b >= i32::MIN as i64 && *b <= i32::MAX as i64 => Real(a.as_f64()?.powi(*b as i32)),
            (a, b) => Real(a.as_f64()?.powf(b.as_f64()?)),
        },
        E::Ln => real1(args, f64::ln)?,
        E::Log10 => real1(args, f64::log10)?,
        E::Sin => real1(args, f64::sin)?,
        E::Cos => real1(args, f64::cos)?,
        E::Tan => real1(args, f64::tan)?,
        E::Asin => real1(args, f64::asin)?,
        E::Acos => real1(args, f64::acos)?,
        E::Atan => real1(args, f64::atan)?,
        E::Sinh => real1(args, f64::sinh)?,
        E::Cosh => real1(args, f64::cosh)?,
        E::Tanh => real1(args, f64::tanh)?,
        E::Exp => real1(args, f64::exp)?,
        E::Sqrt => real1(args, f64::sqrt)?,
        E::Abs => match &args[0] {
            Int(a) => Int(a.wrapping_abs()),
            a => Real(a.as_f64()?.abs()),
        },
        // SIGN(a, b) = |a| with the sign of b (b >= 0 counts as positive).
        E::Sign => match (&args[0], &args[1]) {
            (Int(a), Int(b)) => Int(if *b >= 0 { a.wrapping_abs() } else { -a.wrapping_abs() }),
            (a, b) => {
                let (a, b) = (a.as_f64()?, b.as_f64()?);
                Real(if b >= 0.0 { a.abs() } else { -a.abs() })
            }
        },
        // MOD takes the sign of the dividend, as Rust's `%` does.
        E::Mod => match (&args[0], &args[1]) {
            (Int(_), Int(0)) => return Err(ExecError::Runtime("mod with zero divisor".into())),
            (Int(a), Int(b)) => Int(a.wrapping_rem(*b)),
            (a, b) => Real(a.as_f64()? % b.as_f64()?),
        },
        E::Int => Int(args[0].as_i64()?),
        E::Nint => Int(args[0].as_f64()?.round() as i64),
        E::Real => Real(args[0].as_f64()?),
        E::Min | E::Max => {
            let pick_first = |a: f64, b: f64| if e == E::Min { a <= b } else { a >= b };
            match (&args[0], &args[1]) {
                (Int(a), Int(b)) => Int(if pick_first(*a as f64, *b as f64) { *a } else { *b }),
                (a, b) => {
                    let (a, b) = (a.as_f64()?, b.as_f64()?);
                    Real(if pick_first(a, b) { a } else { b })
                }
            }
        }
        E::StrEq | E::StrNe | E::StrGe | E::StrLe | E::StrLt | E::StrGt => {
            let ord = compare_strings(string(&args[0])?, string(&args[1])?);
            use std::cmp::Ordering::{Equal, Greater, Less};
            Value::Bool(match e {
                E::StrEq => ord == Equal,
                E::StrNe => ord != Equal,
                E::StrGe => ord != Less,
                E::StrLe => ord != Greater,
                E::StrLt => ord == Less,
                _ => ord == Greater,
            })
        }
        E::Len => Int(string(&args[0])?.chars().count() as i64),
        E::Trim => Value::Str(Rc::from(string(&args[0])?.trim_end_matches(' '))),
        E::Scan => {
            let (s, set) = (string(&args[0])?, string(&args[1])?);
            Int(s.chars().position(|c| set.contains(c)).map_or(0, |p| p as i64 + 1))
        }
        E::Ichar => Int(string(&args[0])?.chars().next().map_or(0, |c| c as i64)),
    })
}

fn int_pow(a: i64, b: i64) -> Result<i64, ExecError> {
    if b < 0 {
        return Ok(match a {
            1 => 1,
            -1 => {
                if b % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            0 => return Err(ExecError::Runtime("zero raised to a negative power".into())),
            _ => 0,
        });
    }
    Ok(a.wrapping_pow(b.min(u32::MAX as i64) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str, args: &[Value]) -> Value {
        match resolve(name) {
            Some(Resolved::Elemental(e)) => apply(e, args).unwrap(),
            _ => panic!("{name} is not elemental"),
        }
    }

    #[test]
    fn fortran_integer_semantics() {
        assert_eq!(ev("div_scal_scal", &[Value::Int(-7), Value::Int(2)]), Value::Int(-3));
        assert_eq!(ev("mod_scal_scal", &[Value::Int(-7), Value::Int(2)]), Value::Int(-1));
        assert_eq!(ev("pow_scal_scal", &[Value::Int(2), Value::Int(10)]), Value::Int(1024));
        assert_eq!(ev("pow_scal_scal", &[Value::Int(2), Value::Int(-1)]), Value::Int(0));
        assert_eq!(ev("div_scal_scal", &[Value::Int(1), Value::Real(4.0)]), Value::Real(0.25));
        assert_eq!(ev("int_scal", &[Value::Real(-2.9)]), Value::Int(-2));
        assert_eq!(ev("sign_scal_scal", &[Value::Real(3.0), Value::Real(-0.5)]), Value::Real(-3.0));
        assert_eq!(ev("nc_min_scal_scal", &[Value::Int(3), Value::Int(-4)]), Value::Int(-4));
    }

    #[test]
    fn real_table_by_name() {
        assert_eq!(eval_intrinsic("sin_scal", &[0.0]), Some(0.0));
        assert_eq!(eval_intrinsic("pow_scal_scal", &[2.0, 0.5]), Some(2f64.sqrt()));
        assert_eq!(eval_intrinsic("no_such", &[1.0]), None);
    }
}
