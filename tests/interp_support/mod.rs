//! Proptest strategies for random straight-line and loop programs (see
//! `xaifbooster::interp::testgen`); include with `#[path = "interp_support/mod.rs"] mod support;`.

use proptest::prelude::*;
use xaifbooster::interp::testgen::{GenExpr, GenProgram, GenStmt, GenVar};

fn expr(n: usize, temps: usize) -> impl Strategy<Value = GenExpr> {
    let leaf = prop_oneof![
        (0..n).prop_map(GenExpr::X),
        (0..temps.max(1)).prop_map(move |k| if temps == 0 { GenExpr::X(0) } else { GenExpr::T(k) }),
        (-2.0f64..2.0).prop_map(|c| GenExpr::Const((c * 8.0).round() / 8.0)),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (prop::sample::select(vec!["sin_scal", "cos_scal", "tanh_scal", "minus_scal"]), inner.clone())
                .prop_map(|(op, a)| GenExpr::Unary(op, Box::new(a))),
            (prop::sample::select(vec!["add_scal_scal", "sub_scal_scal", "mul_scal_scal"]), inner.clone(), inner)
                .prop_map(|(op, a, b)| GenExpr::Binary(op, Box::new(a), Box::new(b))),
        ]
    })
}

fn stmt(n: usize, m: usize, temps: usize) -> impl Strategy<Value = GenStmt> {
    let var = prop_oneof![(0..m).prop_map(GenVar::Y), (0..temps).prop_map(GenVar::T)];
    let assign = (var, expr(n, temps)).prop_map(|(v, e)| GenStmt::Assign(v, e));
    assign.prop_recursive(2, 16, 4, |inner| {
        (1i64..4, prop::collection::vec(inner, 0..4)).prop_map(|(trips, body)| GenStmt::Loop(trips, body))
    })
}

/// Programs with 1–3 inputs, 1–3 outputs, 2 temporaries, nested loops up to depth 2.
pub fn program() -> impl Strategy<Value = GenProgram> {
    (1usize..4, 1usize..4).prop_flat_map(|(n, m)| {
        prop::collection::vec(stmt(n, m, 2), 1..6).prop_map(move |body| GenProgram { n, m, temps: 2, body })
    })
}
