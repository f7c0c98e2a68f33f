#!/usr/bin/env python3
"""Writes the hand-designed TypeChange test programs of testdata/type_change/.

Run from the repository root: python3 scripts/gen_type_change_tests.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from xaif_builder import E, R, assign, call, cfg, const, doc, sym  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "testdata", "type_change")


def mixed():
    h = "2"
    X = lambda *i: R("X", h, list(i) or None)
    scopes = [
        ("1", [sym(n, "void", kind="subroutine") for n in ["head", "scale__3", "addc__4", "setp__5", "sum3__6"]]),
        (h, [
            sym("X", shape="vector", active=1, dims=[(1, 3)]),
            sym("Y", active=1),
            sym("S", active=1),
            sym("I", "integer", active=0),
            sym("P", active=0),
            sym("Q", active=0),
            sym("PA", shape="vector", active=0, dims=[(1, 3)]),
        ]),
        ("3", [sym("A", shape="vector", active=1, dims=[(1, 3)]), sym("B", active=1), sym("K", "integer", active=0)]),
        ("4", [sym("C", active=1), sym("Z", active=1)]),
        ("5", [sym("R", active=1)]),
        ("6", [sym("V", shape="vector", active=1, dims=[(1, 3)]), sym("T", active=1)]),
    ]
    head = [
        assign("h1", R("I", h), const(1, "integer")),
        assign("h2", R("P", h), const("0.5")),
        assign("h3a", R("PA", h, [("c", 1)]), const("2.0")),
        assign("h3b", R("PA", h, [("c", 2)]), const("3.0")),
        assign("h3c", R("PA", h, [("c", 3)]), const("4.0")),
        call("h4", "sum3__6", [R("PA", h, [("c", 1)]), R("S", h)]),
        call("h5", "scale__3", [R("PA", h), R("P", h), R("I", h)]),
        assign("h6", R("Y", h), E("mul_scal_scal", E("mul_scal_scal", X(("c", 1)), R("P", h)), R("S", h))),
        call("h7", "scale__3", [R("X", h), R("Y", h), R("I", h)]),
        call("h8", "scale__3", [R("X", h), R("PA", h, [("v", "I", h)]), R("I", h)]),
        call("h9", "addc__4", [const("2.0"), R("Y", h)]),
        call("h10", "setp__5", [R("Q", h)]),
        assign("h11", R("Y", h), E("mul_scal_scal", R("Y", h), R("Q", h))),
    ]
    cfgs = [
        cfg("1", "head", h, [("X", "in"), ("Y", "out")], [head], mod=[R("Y", h)]),
        cfg("2", "scale__3", "3", [("A", "inout"), ("B", "inout"), ("K", "inout")], [[
            assign("s1", R("B", "3"), E("mul_scal_scal", R("B", "3"), R("A", "3", [("v", "K", "3")]))),
            assign("s2", R("K", "3"), E("add_scal_scal", R("K", "3"), const(1, "integer"))),
        ]], mod=[R("B", "3"), R("K", "3")]),
        cfg("3", "addc__4", "4", [("C", "in"), ("Z", "inout")], [[
            assign("a1", R("Z", "4"), E("mul_scal_scal", R("Z", "4"), R("C", "4"))),
        ]], mod=[R("Z", "4")]),
        cfg("4", "setp__5", "5", [("R", "out")], [[assign("p1", R("R", "5"), const("1.5"))]], mod=[R("R", "5")]),
        cfg("5", "sum3__6", "6", [("V", "in"), ("T", "out")], [[
            assign("t1", R("T", "6"), E("add_scal_scal", E("add_scal_scal", R("V", "6", [("c", 1)]),
                                                              R("V", "6", [("c", 2)])), R("V", "6", [("c", 3)]))),
        ]], mod=[R("T", "6")]),
    ]
    comment = """Every way an actual can disagree in activity with its formal. head(X(1:3) in, Y out):
     I = 1; P = 0.5; PA = (2, 3, 4)                  (P, PA, Q passive; S active)
     call sum3(PA(1), S)     element to an array formal: PA converted whole, tmp(1) passed -> S = 9
     call scale(PA, P, I)    passive array and scalar to active inout formals; P = P*PA(I) = 1, I = 2
     Y = X(1)*P*S            Y = 9 X1
     call scale(X, Y, I)     no conversion: Y = Y*X(2), I = 3
     call scale(X, PA(I), I) passive element to an active formal; scale overwrites I (its Mod list
                             has K), so the copy-back must write PA(3), not PA(4) (out of bounds)
     call addc(2.0, Y)       constant to an active intent(in) formal: converted, no copy-back; Y = 2Y
     call setp(Q)            passive to an active intent(out) formal: copy-back only; Q = 1.5
     Y = Y*Q                 Y = 27 X1 X2, dY/dX = (27 X2, 27 X1, 0)"""
    return doc("type_change_mixed", comment, scopes, cfgs)


def externals():
    h = "2"
    scopes = [
        ("1", [sym(n, "void", kind="subroutine") for n in ["head", "ext__7", "wrapped__8"]]),
        (h, [
            sym("X", shape="vector", active=1, dims=[(1, 3)]),
            sym("Y", active=1),
            sym("W", shape="vector", active=1),
            sym("I", "integer", active=0),
            sym("P", active=0),
        ]),
    ]
    head = [
        assign("h1", R("I", h), const(2, "integer")),
        call("h2", "ext__7", [R("X", h), R("Y", h), R("I", h)]),
        call("h3", "ext__7", [R("X", h, [("v", "I", h)]), R("P", h), R("I", h)]),
        call("h4", "ext__7", [R("W", h), R("P", h), const(3, "integer")]),
        call("h5", "wrapped__8", [R("X", h), R("Y", h)]),
        call("h6", "wrapped__8", [R("X", h), R("Y", h)]),
    ]
    cfgs = [cfg("1", "head", h, [("X", "in"), ("Y", "out"), ("W", "inout")], [head])]
    comment = """Calls of routines without a body. ext has none: its active actuals go through passive
     temporaries (X whole, also when X(I) is passed; W has no declared bounds, so its temporary is
     allocated to match). wrapped has a hand-written wrapper when -w wrapped is given."""
    return doc("type_change_externals", comment, scopes, cfgs)


def wrapper_conflict():
    h = "2"
    scopes = [
        ("1", [sym(n, "void", kind="subroutine") for n in ["head", "wrapped__8"]]),
        (h, [sym("X", active=1), sym("Y", active=1), sym("P", active=0)]),
    ]
    head = [
        call("h1", "wrapped__8", [R("X", h), R("Y", h)]),
        call("h2", "wrapped__8", [R("X", h), R("P", h)]),
    ]
    cfgs = [cfg("1", "head", h, [("X", "in"), ("Y", "out")], [head])]
    comment = """A hand-written wrapper (-w wrapped) called with two activity patterns: refused."""
    return doc("type_change_wrapper_conflict", comment, scopes, cfgs)


for name, text in [("mixed", mixed()), ("externals", externals()), ("wrapper_conflict", wrapper_conflict())]:
    with open(os.path.join(OUT, name + ".xaif"), "w") as f:
        f.write(text)
