//! TEMPORARY stand-in for the intrinsics catalogue (replaced by the real module on merge).
#![allow(missing_docs)]

use std::sync::OnceLock;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartialKind { LinearOne, LinearMinusOne, Linear, Nonlinear, Passive }
#[derive(Clone, Debug, PartialEq)]
pub enum ConstantKind { Integer, Real }
#[derive(Clone, Debug, PartialEq)]
pub enum PartialExpr {
    Constant { value: String, ty: ConstantKind },
    Argument(usize),
    Intrinsic { name: String, arguments: Vec<PartialExpr> },
}
#[derive(Clone, Debug)]
pub struct Partial { pub kind: PartialKind, pub expression: PartialExpr }
#[derive(Clone, Debug)]
pub struct IntrinsicDefinition { pub name: String, pub arity: usize, pub partials: Vec<Partial>, pub inlinable: bool }
#[derive(Clone, Debug, Default)]
pub struct Catalogue { defs: Vec<IntrinsicDefinition> }
#[derive(Debug, thiserror::Error)]
#[error("catalogue error")]
pub struct CatalogueError;

fn a(i: usize) -> PartialExpr { PartialExpr::Argument(i) }
fn c(v: &str) -> PartialExpr { PartialExpr::Constant { value: v.into(), ty: ConstantKind::Integer } }
fn f(n: &str, args: Vec<PartialExpr>) -> PartialExpr { PartialExpr::Intrinsic { name: n.into(), arguments: args } }
fn p(kind: PartialKind, expression: PartialExpr) -> Partial { Partial { kind, expression } }
fn nl(e: PartialExpr) -> Partial { p(PartialKind::Nonlinear, e) }
fn passive() -> Partial { p(PartialKind::Passive, c("0")) }

impl Catalogue {
    pub fn builtin() -> &'static Catalogue {
        static CAT: OnceLock<Catalogue> = OnceLock::new();
        CAT.get_or_init(|| {
            use PartialKind::*;
            let d = |name: &str, partials: Vec<Partial>| IntrinsicDefinition { name: name.into(), arity: partials.len(), partials, inlinable: true };
            Catalogue { defs: vec![
                d("add_scal_scal", vec![p(LinearOne, c("1")), p(LinearOne, c("1"))]),
                d("sub_scal_scal", vec![p(LinearOne, c("1")), p(LinearMinusOne, c("-1"))]),
                d("mul_scal_scal", vec![nl(a(2)), nl(a(1))]),
                d("div_scal_scal", vec![nl(f("div_scal_scal", vec![c("1"), a(2)])), nl(f("minus_scal", vec![f("div_scal_scal", vec![f("div_scal_scal", vec![a(1), a(2)]), a(2)])]))]),
                d("minus_scal", vec![p(LinearMinusOne, c("-1"))]),
                d("sin_scal", vec![nl(f("cos_scal", vec![a(1)]))]),
                d("cos_scal", vec![nl(f("minus_scal", vec![f("sin_scal", vec![a(1)])]))]),
                d("exp_scal", vec![nl(f("exp_scal", vec![a(1)]))]),
                d("sqrt_scal", vec![nl(f("div_scal_scal", vec![c("1"), f("mul_scal_scal", vec![c("2"), f("sqrt_scal", vec![a(1)])])]))]),
                d("tanh_scal", vec![nl(f("sub_scal_scal", vec![c("1"), f("mul_scal_scal", vec![f("tanh_scal", vec![a(1)]), f("tanh_scal", vec![a(1)])])]))]),
                d("pow_scal_scal", vec![nl(f("mul_scal_scal", vec![a(2), f("pow_scal_scal", vec![a(1), f("sub_scal_scal", vec![a(2), c("1")])])])), nl(f("mul_scal_scal", vec![f("ln_scal", vec![a(1)]), f("pow_scal_scal", vec![a(1), a(2)])]))]),
                d("int_scal", vec![passive()]),
                d("real_scal", vec![p(LinearOne, c("1"))]),
                d("abs_scal", vec![nl(f("sign_scal_scal", vec![c("1"), a(1)]))]),
                d("sign_scal_scal", vec![nl(f("sign_scal_scal", vec![c("1"), f("mul_scal_scal", vec![a(1), a(2)])])), passive()]),
                d("arcsin_scal", vec![nl(f("div_scal_scal", vec![c("1"), f("sqrt_scal", vec![f("sub_scal_scal", vec![c("1"), f("mul_scal_scal", vec![a(1), a(1)])])])]))]),
                d("arccos_scal", vec![nl(f("minus_scal", vec![f("div_scal_scal", vec![c("1"), f("sqrt_scal", vec![f("sub_scal_scal", vec![c("1"), f("mul_scal_scal", vec![a(1), a(1)])])])])]))]),
                d("log10", vec![nl(f("div_scal_scal", vec![c("1"), f("mul_scal_scal", vec![a(1), f("ln_scal", vec![c("10")])])]))]),
                d("ln_scal", vec![nl(f("div_scal_scal", vec![c("1"), a(1)]))]),
                d("mod_scal_scal", vec![p(LinearOne, c("1")), passive()]),
                d("nc_min_scal_scal", vec![passive(), passive()]),
                d("lbound", vec![passive(), passive()]),
                d("ubound", vec![passive(), passive()]),
                d("size", vec![passive(), passive()]),
                d("len", vec![passive()]),
                d("present", vec![passive()]),
                d("allocated", vec![passive()]),
                d("scan", vec![passive(), passive()]),
                d("string_eq_scal_scal", vec![passive(), passive()]),
                d("maxloc_arr", vec![passive()]),
                d("nc_maxval", vec![passive()]),
                d("transfer", vec![passive(), passive()]),
                d("transpose_arr", vec![p(LinearOne, c("1"))]),
            ]}
        })
    }
    pub fn parse(_input: &[u8], _file: &str) -> Result<Catalogue, CatalogueError> { Err(CatalogueError) }
    pub fn merge_noninlinable(&mut self, _input: &[u8], _file: &str) -> Result<(), CatalogueError> { Ok(()) }
    pub fn get(&self, name: &str) -> Option<&IntrinsicDefinition> { self.defs.iter().find(|d| d.name == name) }
}

pub fn eval_intrinsic(name: &str, x: &[f64]) -> Option<f64> {
    Some(match name {
        "add_scal_scal" => x[0] + x[1], "sub_scal_scal" => x[0] - x[1], "mul_scal_scal" => x[0] * x[1],
        "div_scal_scal" => x[0] / x[1], "minus_scal" => -x[0], "sin_scal" => x[0].sin(), "cos_scal" => x[0].cos(),
        "exp_scal" => x[0].exp(), "sqrt_scal" => x[0].sqrt(), "tanh_scal" => x[0].tanh(), "pow_scal_scal" => x[0].powf(x[1]),
        "ln_scal" => x[0].ln(), "sign_scal_scal" => x[0].abs() * x[1].signum(),
        _ => return None,
    })
}

impl PartialExpr {
    pub fn eval(&self, args: &[f64], cat: &Catalogue) -> Option<f64> {
        match self {
            PartialExpr::Constant { value, .. } => value.parse().ok(),
            PartialExpr::Argument(i) => args.get(i - 1).copied(),
            PartialExpr::Intrinsic { name, arguments } => {
                let v: Option<Vec<f64>> = arguments.iter().map(|a| a.eval(args, cat)).collect();
                eval_intrinsic(name, &v?)
            }
        }
    }
}
