#!/usr/bin/env python3
"""Writes the papers' examples for the analyses as XAIF (testdata/analysis/).

Run from the repository root: python3 scripts/gen_analysis_tests.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from xaif_builder import E, R, assign, const, doc, expr, sym  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "testdata", "analysis")


def condition(op, left, right):
    """A BooleanOperation vertex over two expressions given as builder trees."""
    return f'<xaif:Condition>{boolean(op, left, right)}</xaif:Condition>'


def boolean(op, left, right):
    # Renumber: the boolean operation is vertex 1, then each operand's vertices.
    verts = [f'<xaif:BooleanOperation vertex_id="1" name="{op}"/>']
    edges = []
    offset = 1
    for pos, side in enumerate((left, right), 1):
        text = expr(side)
        import re
        ids = [int(m) for m in re.findall(r'vertex_id="(\d+)"', text)]
        # Shift vertex and edge endpoints of the operand (its top-level vertices only).
        shifted = re.sub(r'(<xaif:(?:Intrinsic|Constant|VariableReference) vertex_id=")(\d+)"',
                         lambda m: f'{m.group(1)}{int(m.group(2)) + offset}"', text)
        shifted = re.sub(r'source="(\d+)" target="(\d+)"',
                         lambda m: f'source="{int(m.group(1)) + offset}" target="{int(m.group(2)) + offset}"', shifted)
        shifted = re.sub(r'edge_id="(\d+)"', lambda m: f'edge_id="x{m.group(1)}"', shifted)
        verts.append(shifted)
        edges.append((offset + 1, pos))
        offset += max(ids) if ids else 1
    body = "".join(verts)
    # Expression edges need unique ids: number them afresh.
    import itertools
    counter = itertools.count(1)
    body = __import__("re").sub(r'<xaif:ExpressionEdge edge_id="x\d+"',
                                lambda m: f'<xaif:ExpressionEdge edge_id="{next(counter)}"', body)
    for source, pos in edges:
        body += f'<xaif:ExpressionEdge edge_id="{next(counter)}" source="{source}" target="1" position="{pos}"/>'
    return body


def plain(sid, tag, lhs, rhs):
    return f'<xaif:{tag} statement_id="{sid}"><xaif:AssignmentLHS>{lhs.body()}</xaif:AssignmentLHS><xaif:AssignmentRHS>{expr(rhs)}</xaif:AssignmentRHS></xaif:{tag}>'


def routine(name, scope, args, body):
    out = f'<xaif:ControlFlowGraph vertex_id="1" scope_id="1" symbol_id="{name}" controlflowgraph_scope_id="{scope}">\n'
    out += '<xaif:ArgumentList>' + "".join(
        f'<xaif:ArgumentSymbolReference position="{p}" scope_id="{scope}" symbol_id="{n}" intent="{i}"/>'
        for p, (n, i) in enumerate(args, 1)) + '</xaif:ArgumentList>\n'
    return out + body + '</xaif:ControlFlowGraph>\n'


def linearity_figure_1():
    """Strout and Hovland, Fig. 1: a = 0; f = 0; do i: a += x(i)*x(i); t = sin(a); f += t."""
    s = "2"
    x = lambda v: R("X", s, [("v", v, s)])
    a, f, t, i = R("A", s), R("F", s), R("T", s), R("I", s)
    body = '<xaif:Entry vertex_id="1"/>\n'
    body += '<xaif:BasicBlock vertex_id="2" scope_id="2">' + assign("1", a, const("0.0")) + assign("2", f, const("0.0")) + '</xaif:BasicBlock>\n'
    body += ('<xaif:ForLoop vertex_id="3" reversal="anonymous">'
             + plain("3", "Initialization", i, const("1", "integer"))
             + condition("less_or_equal", i, const("5", "integer"))
             + plain("4", "Update", i, E("add_scal_scal", i, const("1", "integer")))
             + '</xaif:ForLoop>\n')
    body += ('<xaif:BasicBlock vertex_id="4" scope_id="2">'
             + assign("5", a, E("add_scal_scal", a, E("mul_scal_scal", x("I"), x("I"))))
             + assign("6", t, E("sin_scal", a))
             + assign("7", f, E("add_scal_scal", f, t))
             + '</xaif:BasicBlock>\n')
    body += '<xaif:EndLoop vertex_id="5"/>\n<xaif:Exit vertex_id="6"/>\n'
    for k, (src, dst, cv) in enumerate([("1", "2", None), ("2", "3", None), ("3", "4", "1"), ("4", "5", None),
                                         ("5", "3", None), ("3", "6", None)], 1):
        c = f' has_condition_value="true" condition_value="{cv}"' if cv else ""
        body += f'<xaif:ControlFlowEdge edge_id="{k}" source="{src}" target="{dst}"{c}/>\n'
    scopes = [
        ("1", [sym("head", "void", kind="subroutine")]),
        (s, [sym("X", shape="vector", active=1, dims=[(1, 5)]), sym("F", active=1), sym("A", active=1),
             sym("T", active=1), sym("I", "integer", active=0)]),
    ]
    return doc("linearity_fig1", "Strout and Hovland, Linearity Analysis for AD, Fig. 1 (N = 5); Table 1 gives "
               "the dependences at the end", scopes, [routine("head", s, [("X", "in"), ("F", "out")], body)])


def tbr_figure_1():
    """Hascoet, Naumann and Pascual, Fig. 1: i=0; j=10; a=pi; while (j >= 1): if (max(i,j) > 7)
    x(i) = j + sin(x(i)) else x(j) = j*cos(x(j)) + a; i=i+1; j=j-1; a=a/2."""
    s = "2"
    i, j, a = R("I", s), R("J", s), R("A", s)
    xi, xj = R("X", s, [("v", "I", s)]), R("X", s, [("v", "J", s)])
    body = '<xaif:Entry vertex_id="1"/>\n'
    body += ('<xaif:BasicBlock vertex_id="2" scope_id="2">' + assign("1", i, const("0", "integer"))
             + assign("2", j, const("10", "integer")) + assign("3", a, const("3.14159")) + '</xaif:BasicBlock>\n')
    body += '<xaif:PreLoop vertex_id="3">' + condition("greater_or_equal", j, const("1", "integer")) + '</xaif:PreLoop>\n'
    body += ('<xaif:Branch vertex_id="4">'
             + condition("greater_than", E("max_scal_scal", i, j), const("7", "integer")) + '</xaif:Branch>\n')
    body += ('<xaif:BasicBlock vertex_id="5" scope_id="2">'
             + assign("4", xi, E("add_scal_scal", j, E("sin_scal", xi))) + '</xaif:BasicBlock>\n')
    body += ('<xaif:BasicBlock vertex_id="6" scope_id="2">'
             + assign("5", xj, E("add_scal_scal", E("mul_scal_scal", j, E("cos_scal", xj)), a))
             + '</xaif:BasicBlock>\n')
    body += '<xaif:EndBranch vertex_id="7"/>\n'
    body += ('<xaif:BasicBlock vertex_id="8" scope_id="2">'
             + assign("6", i, E("add_scal_scal", i, const("1", "integer")))
             + assign("7", j, E("sub_scal_scal", j, const("1", "integer")))
             + assign("8", a, E("div_scal_scal", a, const("2.0"))) + '</xaif:BasicBlock>\n')
    body += '<xaif:EndLoop vertex_id="9"/>\n<xaif:Exit vertex_id="10"/>\n'
    edges = [("1", "2", None), ("2", "3", None), ("3", "4", "1"), ("4", "5", "1"), ("4", "6", None),
             ("5", "7", None), ("6", "7", None), ("7", "8", None), ("8", "9", None), ("9", "3", None),
             ("3", "10", None)]
    for k, (src, dst, cv) in enumerate(edges, 1):
        c = f' has_condition_value="true" condition_value="{cv}"' if cv else ""
        body += f'<xaif:ControlFlowEdge edge_id="{k}" source="{src}" target="{dst}"{c}/>\n'
    scopes = [
        ("1", [sym("head", "void", kind="subroutine")]),
        (s, [sym("X", shape="vector", active=1, dims=[(0, 10)]), sym("A", active=1),
             sym("I", "integer", active=0), sym("J", "integer", active=0)]),
    ]
    return doc("tbr_fig1", "Hascoet, Naumann and Pascual, To Be Recorded analysis, Fig. 1: x and the indices i, j "
               "are required and overwritten later (recorded); a is never required", scopes,
               [routine("head", s, [("X", "inout")], body)])


def activity_example():
    """head(x, y): p = 2*x; q = 3; r = sin(x); y = p*q. The front end flags everything active;
    q is never varied and r never useful."""
    s = "2"
    x, y, p, q, r = (R(n, s) for n in "XYPQR")
    body = '<xaif:Entry vertex_id="1"/>\n<xaif:BasicBlock vertex_id="2" scope_id="2">'
    body += assign("1", p, E("mul_scal_scal", const("2.0"), x)) + assign("2", q, const("3.0"))
    body += assign("3", r, E("sin_scal", x)) + assign("4", y, E("mul_scal_scal", p, q))
    body += '</xaif:BasicBlock>\n<xaif:Exit vertex_id="3"/>\n'
    body += '<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>\n<xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>\n'
    scopes = [("1", [sym("head", "void", kind="subroutine")]), (s, [sym(n, active=1) for n in "XYPQR"])]
    return doc("activity", "activity: q is never varied, r never useful, though the front end flags both active",
               scopes, [routine("head", s, [("X", "in"), ("Y", "out")], body)])


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, text in [("linearity_fig1.xaif", linearity_figure_1()), ("tbr_fig1.xaif", tbr_figure_1()),
                       ("activity.xaif", activity_example())]:
        with open(os.path.join(OUT, name), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
