//! Proptest strategies for random programs (see `xaifbooster::interp::testgen`): straight-line
//! code, loops, branches, loop-subscripted array elements and calls of a second routine; include
//! with `#[path = "interp_support/mod.rs"] mod support;`.

use proptest::prelude::*;
use proptest::strategy::Union;
use xaifbooster::interp::testgen::{
    GenArg, GenArray, GenExpr, GenIndex, GenProgram, GenScalar, GenStmt, GenSub, GenVar,
};

/// What the code of one routine may name.
#[derive(Clone, Copy, Debug)]
struct Vocabulary {
    n: usize,
    m: usize,
    /// Active temporaries (`T_k` in `head`, `S_k` in `sub`).
    temps: usize,
    /// Passive reals `P_k` (only `head` has them).
    passive: usize,
    /// `sub`'s code: `A`, `B`, `C` instead of `X`, `Y`, `P_k`; no calls.
    in_sub: bool,
}

/// A constant element or a loop subscript (made valid by `GenProgram::fit`).
fn index(len: usize) -> impl Strategy<Value = GenIndex> {
    prop_oneof![
        (0..len).prop_map(GenIndex::Const),
        (0usize..3, 0usize..3).prop_map(|(depth, offset)| GenIndex::Loop { depth, offset }),
    ]
}

fn elem(array: GenArray, len: usize) -> BoxedStrategy<GenVar> {
    index(len).prop_map(move |i| GenVar::Elem(array, i)).boxed()
}

fn scalar(s: GenScalar) -> BoxedStrategy<GenVar> {
    Just(GenVar::Scalar(s)).boxed()
}

fn temp(count: usize) -> BoxedStrategy<GenVar> {
    (0..count).prop_map(|k| GenVar::Scalar(GenScalar::T(k))).boxed()
}

/// Variables an expression may read.
fn read_var(v: Vocabulary) -> Union<BoxedStrategy<GenVar>> {
    let mut choices = Vec::new();
    if v.in_sub {
        choices.push(elem(GenArray::A, v.n));
        choices.push(scalar(GenScalar::B));
        choices.push(scalar(GenScalar::C));
    } else {
        choices.push(elem(GenArray::X, v.n));
        choices.push(elem(GenArray::X, v.n));
        choices.push(elem(GenArray::Y, v.m));
        if v.passive > 0 {
            choices.push((0..v.passive).prop_map(|k| GenVar::Scalar(GenScalar::P(k))).boxed());
        }
    }
    if v.temps > 0 {
        choices.push(temp(v.temps));
    }
    Union::new(choices)
}

/// Variables an assignment may set.
fn write_var(v: Vocabulary) -> Union<BoxedStrategy<GenVar>> {
    let mut choices = Vec::new();
    if v.in_sub {
        choices.push(elem(GenArray::A, v.n));
        choices.push(scalar(GenScalar::B));
    } else {
        choices.push(elem(GenArray::Y, v.m));
    }
    if v.temps > 0 {
        choices.push(temp(v.temps));
    }
    Union::new(choices)
}

fn constant() -> impl Strategy<Value = f64> {
    // `+ 0.0` turns -0 into 0.
    (-2.0f64..2.0).prop_map(|c| (c * 8.0).round() / 8.0 + 0.0)
}

fn expr(v: Vocabulary) -> impl Strategy<Value = GenExpr> {
    let leaf = prop_oneof![3 => read_var(v).prop_map(GenExpr::Var), 1 => constant().prop_map(GenExpr::Const)];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (prop::sample::select(vec!["sin_scal", "cos_scal", "tanh_scal", "minus_scal"]), inner.clone())
                .prop_map(|(op, a)| GenExpr::Unary(op, Box::new(a))),
            (prop::sample::select(vec!["add_scal_scal", "sub_scal_scal", "mul_scal_scal"]), inner.clone(), inner)
                .prop_map(|(op, a, b)| GenExpr::Binary(op, Box::new(a), Box::new(b))),
        ]
    })
}

/// `call sub(X or Y, B, C)`: `B` a temporary or an element, `C` anything readable, a constant,
/// or often a passive `P_k` (aliasing is undone by `GenProgram::fit`).
fn call(v: Vocabulary) -> impl Strategy<Value = GenStmt> {
    let array = prop_oneof![Just(GenArray::X), Just(GenArray::Y)];
    let mut b = vec![elem(GenArray::X, v.n), elem(GenArray::Y, v.m)];
    if v.temps > 0 {
        b.push(temp(v.temps));
    }
    let mut c = vec![(3, read_var(v).prop_map(GenArg::Var).boxed()), (1, constant().prop_map(GenArg::Const).boxed())];
    if v.passive > 0 {
        c.push((2, (0..v.passive).prop_map(|k| GenArg::Var(GenVar::Scalar(GenScalar::P(k)))).boxed()));
    }
    (array, Union::new(b), Union::new_weighted(c)).prop_map(|(array, b, c)| GenStmt::Call { array, b, c })
}

fn stmt(v: Vocabulary) -> impl Strategy<Value = GenStmt> {
    let assign = (write_var(v), expr(v)).prop_map(|(var, e)| GenStmt::Assign(var, e));
    let leaf = if v.in_sub { assign.boxed() } else { prop_oneof![3 => assign, 1 => call(v)].boxed() };
    leaf.prop_recursive(3, 24, 4, move |inner| {
        prop_oneof![
            (1i64..4, prop::collection::vec(inner.clone(), 0..4)).prop_map(|(trips, body)| GenStmt::Loop(trips, body)),
            (expr(v), prop::collection::vec(inner.clone(), 0..3), prop::collection::vec(inner, 0..3))
                .prop_map(|(c, then, otherwise)| GenStmt::If(c, then, otherwise)),
        ]
    })
}

/// `sub(A(1:n), B, C)` with up to two locals, each first set from the formals.
fn sub(n: usize) -> impl Strategy<Value = GenSub> {
    (0usize..3).prop_flat_map(move |locals| {
        let formals_only = Vocabulary { n, m: 0, temps: 0, passive: 0, in_sub: true };
        let code = Vocabulary { temps: locals, ..formals_only };
        (prop::collection::vec(expr(formals_only), locals), prop::collection::vec(stmt(code), 0..5)).prop_map(
            move |(initial, body)| {
                let mut stmts: Vec<GenStmt> = initial
                    .into_iter()
                    .enumerate()
                    .map(|(k, e)| GenStmt::Assign(GenVar::Scalar(GenScalar::T(k)), e))
                    .collect();
                stmts.extend(body);
                GenSub { locals, body: stmts }
            },
        )
    })
}

/// Whether central differences at the test point are a fair judge of derivatives: they stay on
/// the point's branches, they can resolve every output, and steps `h` (the verifier's) and `h/2`
/// agree to well within the verifier's tolerance (not so where chained calls and loops amplify
/// an input a thousandfold into a cosine).
pub fn differences_reliable(p: &GenProgram) -> bool {
    let x = p.test_point();
    if !p.branches_stable_at(&x) {
        return false;
    }
    // A central difference is off by about |v|·ε/(2h) from rounding a value v on the way: an
    // output of 1e15, which a step moves by 0.09, reads as unchanged, and so does one computed
    // from an intermediate that large (a program once failed the random test so, tangent and
    // adjoint agreeing and finite differences 0 at both step sizes, which agreed). Keep that
    // error a tenth of the verifier's tolerance for every value the run computes.
    let h_min = x.iter().map(|v| 6e-6 * v.abs().max(1.0)).fold(f64::INFINITY, f64::min);
    let trace = p.trace(&x);
    if !trace.peak.is_finite() || trace.peak * f64::EPSILON / (2.0 * h_min) > 1e-6 {
        return false;
    }
    let central = |j: usize, h: f64| -> Vec<f64> {
        let (mut plus, mut minus) = (x.clone(), x.clone());
        plus[j] += h;
        minus[j] -= h;
        p.eval(&plus).iter().zip(p.eval(&minus)).map(|(a, b)| (a - b) / (2.0 * h)).collect()
    };
    (0..x.len()).all(|j| {
        let h = 6e-6 * x[j].abs().max(1.0);
        central(j, h).iter().zip(central(j, h / 2.0)).all(|(d, e)| (d - e).abs() <= 1e-6 * d.abs().max(1.0))
    })
}

/// Programs with 1–3 inputs, 1–3 outputs, 2 temporaries, up to 2 passive reals and mostly a
/// callee; statements nest loops and branches up to depth 3. Programs whose finite differences
/// at the test point are unreliable ([`differences_reliable`]) are rejected.
pub fn program() -> impl Strategy<Value = GenProgram> {
    (1usize..4, 1usize..4, 0usize..3)
        .prop_flat_map(|(n, m, passive)| {
            let head = Vocabulary { n, m, temps: 2, passive, in_sub: false };
            (
                prop::collection::vec(constant(), passive),
                prop::option::weighted(0.7, sub(n)),
                prop::collection::vec(stmt(head), 1..6),
            )
                .prop_map(move |(passive, sub, body)| GenProgram { n, m, temps: 2, passive, body, sub }.fit())
        })
        .prop_filter("finite differences at the test point are unreliable", differences_reliable)
}
