#!/usr/bin/env python3
"""Writes xaifbooster's intrinsics catalogues (schema/intrinsics/*.xaif) from the table below.

Each partial derivative is written as a small expression tree and printed as the XAIF
expression graph the catalogue format expects. The numbers are checked by the Rust tests
(finite differences of every nonlinear partial). Run from the crate root:
    python3 scripts/gen_catalogue.py
"""

# Expression trees: ("arg", k) is the k-th argument; ("num", "0.5") a real constant;
# (op, operands...) an intrinsic, op being a catalogue name.
def arg(k):
    return ("arg", k)


def num(v):
    return ("num", v)


def f(name, *operands):
    return (name,) + operands


ONE = num("1.0")

# name, arguments, builtin name, extra attributes, partials; a partial is
# (partial_type, expression or None). partial_type None means nonlinear.
TABLE = [
    ("add_scal_scal", 2, "+", {"return_type": "real"}, [("linear_one", None), ("linear_one", None)]),
    ("sub_scal_scal", 2, "-", {}, [("linear_one", None), ("linear_minus_one", None)]),
    ("mul_scal_scal", 2, "*", {}, [(None, arg(2)), (None, arg(1))]),
    # d(a/b)/da = 1/b ; d(a/b)/db = -(a/b)/b
    ("div_scal_scal", 2, "/", {}, [
        (None, f("div_scal_scal", ONE, arg(2))),
        (None, f("minus_scal", f("div_scal_scal", f("div_scal_scal", arg(1), arg(2)), arg(2)))),
    ]),
    ("minus_scal", 1, "-", {}, [("linear_minus_one", None)]),
    ("ln_scal", 1, "log", {}, [(None, f("div_scal_scal", ONE, arg(1)))]),
    # d log10(x)/dx = (1/ln 10)/x
    ("log10", 1, "log10", {}, [(None, f("div_scal_scal", num("0.43429448190325182765"), arg(1)))]),
    ("sin_scal", 1, "sin", {}, [(None, f("cos_scal", arg(1)))]),
    ("cos_scal", 1, "cos", {}, [(None, f("minus_scal", f("sin_scal", arg(1))))]),
    # d tan(x)/dx = 1 + tan(x)^2
    ("tan_scal", 1, "tan", {"nonSmooth": "true"}, [
        (None, f("add_scal_scal", ONE, f("mul_scal_scal", f("tan_scal", arg(1)), f("tan_scal", arg(1))))),
    ]),
    ("arcsin_scal", 1, "asin", {}, [
        (None, f("div_scal_scal", ONE, f("sqrt_scal", f("sub_scal_scal", ONE, f("mul_scal_scal", arg(1), arg(1)))))),
    ]),
    ("arccos_scal", 1, "acos", {}, [
        (None, f("minus_scal", f("div_scal_scal", ONE,
                                 f("sqrt_scal", f("sub_scal_scal", ONE, f("mul_scal_scal", arg(1), arg(1))))))),
    ]),
    ("arctan_scal", 1, "atan", {}, [
        (None, f("div_scal_scal", ONE, f("add_scal_scal", ONE, f("mul_scal_scal", arg(1), arg(1))))),
    ]),
    ("sinh_scal", 1, "sinh", {}, [(None, f("cosh_scal", arg(1)))]),
    ("cosh_scal", 1, "cosh", {}, [(None, f("sinh_scal", arg(1)))]),
    ("tanh_scal", 1, "tanh", {}, [
        (None, f("sub_scal_scal", ONE, f("mul_scal_scal", f("tanh_scal", arg(1)), f("tanh_scal", arg(1))))),
    ]),
    ("exp_scal", 1, "exp", {}, [(None, f("exp_scal", arg(1)))]),
    # d sqrt(x)/dx = 0.5/sqrt(x)
    ("sqrt_scal", 1, "sqrt", {}, [(None, f("div_scal_scal", num("0.5"), f("sqrt_scal", arg(1))))]),
    # d a^b/da = b a^(b-1) ; d a^b/db = ln(a) a^b
    ("pow_scal_scal", 2, "pow", {}, [
        (None, f("mul_scal_scal", arg(2), f("pow_scal_scal", arg(1), f("sub_scal_scal", arg(2), ONE)))),
        (None, f("mul_scal_scal", f("ln_scal", arg(1)), f("pow_scal_scal", arg(1), arg(2)))),
    ]),
    ("int_scal", 1, "int", {"return_type": "integer", "nonSmooth": "true"}, [("passive", None)]),
    ("nint_scal", 1, "nint", {"return_type": "integer"}, [("passive", None)]),
    ("real_scal", 1, "real", {}, [("linear_one", None)]),
    ("complex_scal", 2, "cmplx", {"return_type": "complex"}, [("linear_one", None), ("linear_one", None)]),
    ("imag_scal", 1, "imag", {"return_type": "real"}, [("linear_one", None)]),
    # the result has the type of the second argument (the mold): unknown here
    ("transfer", 2, "transfer", {"return_type": "opaque", "nonSmooth": "true"}, [("passive", None), ("passive", None)]),
    ("lbound", 2, "lbound", {"return_type": "integer"}, [("passive", "inquiry"), ("passive", None)]),
    ("ubound", 2, "ubound", {"return_type": "integer"}, [("passive", "inquiry"), ("passive", None)]),
    ("size", 2, "size", {"return_type": "integer", "shapeChange": "scalar"}, [("passive", "inquiry"), ("passive", None)]),
    # status inquiries: only whether the argument is bound matters, never its value
    ("present", 1, "present", {"return_type": "bool"}, [("passive", "inquiry")]),
    ("allocated", 1, "allocated", {"return_type": "bool"}, [("passive", "inquiry")]),
    ("len", 1, "len", {"return_type": "integer"}, [("passive", "inquiry")]),
    ("trim", 1, "trim", {"return_type": "string"}, [("passive", None)]),
    ("scan", 2, "scan", {"return_type": "integer"}, [("passive", None), ("passive", None)]),
    # mod(a, p) = a - int(a/p) p: d/da = 1, d/dp = -int(a/p)
    ("mod_scal_scal", 2, "mod", {"nonSmooth": "true"}, [
        ("linear_one", None),
        (None, f("minus_scal", f("int_scal", f("div_scal_scal", arg(1), arg(2))))),
    ]),
    ("abs_scal", 1, "abs", {"nonSmooth": "true"}, [(None, f("sign_scal_scal", ONE, arg(1)))]),
    # sign(a, b) = |a| sign(b): d/da = sign(a) sign(b); the jump in b is not differentiated
    ("sign_scal_scal", 2, "sign", {"nonSmooth": "true"}, [
        (None, f("mul_scal_scal", f("sign_scal_scal", ONE, arg(1)), f("sign_scal_scal", ONE, arg(2)))),
        ("passive", None),
    ]),
    ("string_eq_scal_scal", 2, ".eq.", {"return_type": "bool"}, [("passive", None), ("passive", None)]),
    ("string_ne_scal_scal", 2, ".ne.", {"return_type": "bool"}, [("passive", None), ("passive", None)]),
    ("string_ge_scal_scal", 2, ".ge.", {"return_type": "bool"}, [("passive", None), ("passive", None)]),
    ("string_le_scal_scal", 2, ".le.", {"return_type": "bool"}, [("passive", None), ("passive", None)]),
    ("string_lt_scal_scal", 2, ".lt.", {"return_type": "bool"}, [("passive", None), ("passive", None)]),
    # min/max and the reductions are not differentiated (as in OpenAD: "nc" = no change);
    # maxval and minval of an array are scalars
    ("nc_min_scal_scal", 2, "min", {"nonSmooth": "true"}, [("passive", None), ("passive", None)]),
    ("nc_minval", 1, "minval", {"nonSmooth": "true", "shapeChange": "scalar"}, [("passive", None)]),
    ("nc_max_scal_scal", 2, "max", {"nonSmooth": "true"}, [("passive", None), ("passive", None)]),
    ("nc_maxval", 1, "maxval", {"nonSmooth": "true", "shapeChange": "scalar"}, [("passive", None)]),
    ("maxloc_arr", 1, "maxloc", {"return_type": "integer", "shapeChange": "rank"}, [("passive", None)]),
    ("minloc_arr", 1, "minloc", {"return_type": "integer", "shapeChange": "rank"}, [("passive", None)]),
    ("sum_arr", 1, "sum", {"shapeChange": "rank"}, [("passive", None)]),
    ("shape_arr", 1, "shape", {"return_type": "integer", "shapeChange": "rank"}, [("passive", None)]),
    ("ichar", 1, "ichar", {"return_type": "integer"}, [("passive", None)]),
]

NONINLINABLE = ["transpose_arr", "reshape_arr"]


def graph(expression):
    """Vertices and edges of an expression tree, numbered depth first from the root."""
    vertices, edges = [], []

    def visit(node):
        vid = len(vertices) + 1
        kind = node[0]
        if kind == "arg":
            vertices.append('<xaifii:ArgumentReference vertex_id="%d" argument="%d"/>' % (vid, node[1]))
        elif kind == "num":
            vertices.append('<xaif:Constant vertex_id="%d" type="real" value="%s"/>' % (vid, node[1]))
        else:
            vertices.append('<xaif:Intrinsic vertex_id="%d" name="%s"/>' % (vid, kind))
            for position, operand in enumerate(node[1:], start=1):
                child = visit(operand)
                edges.append((child, vid, position))
        return vid

    visit(expression)
    lines = list(vertices)
    for number, (source, target, position) in enumerate(edges, start=1):
        lines.append('<xaif:ExpressionEdge edge_id="%d" source="%d" target="%d" position="%d"/>'
                     % (number, source, target, position))
    return lines


def partial_lines(index, kind, expression):
    if kind == "linear_one":
        return ['<xaifii:Partial partial_id="%d" partial_type="linear_one">' % index,
                '  <xaif:Constant vertex_id="1" type="integer" value="1"/>', "</xaifii:Partial>"]
    if kind == "linear_minus_one":
        return ['<xaifii:Partial partial_id="%d" partial_type="linear_minus_one">' % index,
                '  <xaif:Constant vertex_id="1" type="integer" value="-1"/>', "</xaifii:Partial>"]
    if kind == "passive":
        inquiry = ' nonValueInquiry="true"' if expression == "inquiry" else ""
        return ['<xaifii:Partial partial_id="%d" partial_type="passive"%s/>' % (index, inquiry)]
    return (['<xaifii:Partial partial_id="%d">' % index]
            + ["  " + line for line in graph(expression)] + ["</xaifii:Partial>"])


def inlinable():
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           "<!-- xaifbooster's inlinable intrinsics: values and partial derivatives.",
           "     Generated by scripts/gen_catalogue.py; edit the table there. -->",
           '<xaifii:InlinableIntrinsicDefinitions xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"',
           '    xmlns:xaifii="http://www.mcs.anl.gov/XAIFInlinableIntrinsics"',
           '    xmlns:xaif="http://www.mcs.anl.gov/XAIF"',
           '    xsi:schemaLocation="http://www.mcs.anl.gov/XAIFInlinableIntrinsics xaif_inlinable_intrinsics.xsd"',
           '    language="F90">']
    for name, arity, builtin, attributes, partials in TABLE:
        assert len(partials) == arity, name
        extra = "".join(' %s="%s"' % item for item in sorted(attributes.items()))
        out.append('  <xaifii:InlinableIntrinsic name="%s" nr_arguments="%d"%s>' % (name, arity, extra))
        out.append('    <xaifii:Function type="builtin" builtin_name="%s"/>' % builtin)
        for index, (kind, expression) in enumerate(partials, start=1):
            out.extend("    " + line for line in partial_lines(index, kind, expression))
        out.append("  </xaifii:InlinableIntrinsic>")
    out.append("</xaifii:InlinableIntrinsicDefinitions>")
    return "\n".join(out) + "\n"


def noninlinable():
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           "<!-- xaifbooster's non-inlinable intrinsics: routines whose derivative is the same",
           "     linear operation applied to the derivatives. Generated by scripts/gen_catalogue.py. -->",
           '<xaifnii:NonInlinableIntrinsicDefinitions xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"',
           '    xmlns:xaifnii="http://www.mcs.anl.gov/XAIFNonInlinableIntrinsics"',
           '    xmlns:xaif="http://www.mcs.anl.gov/XAIF"',
           '    xsi:schemaLocation="http://www.mcs.anl.gov/XAIFNonInlinableIntrinsics xaif_noninlinable_intrinsics.xsd">']
    for name in NONINLINABLE:
        out.append('  <xaifnii:DirectAction name="%s" derivAction="%s"/>' % (name, name))
    out.append("</xaifnii:NonInlinableIntrinsicDefinitions>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    with open("schema/intrinsics/inlinable_intrinsics.xaif", "w") as f_out:
        f_out.write(inlinable())
    with open("schema/intrinsics/noninlinable_intrinsics.xaif", "w") as f_out:
        f_out.write(noninlinable())
