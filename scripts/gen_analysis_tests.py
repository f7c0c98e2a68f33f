#!/usr/bin/env python3
"""Writes the papers' examples for the analyses as XAIF (testdata/analysis/).

Run from the repository root: python3 scripts/gen_analysis_tests.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from xaif_builder import E, R, assign, call, cfg, const, doc, expr, sym  # noqa: E402

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


class Ref(R):
    """A reference whose subscripts may also be expressions: ("e", tree), e.g. i-1."""

    def body(self):
        if not self.idx or all(i[0] != "e" for i in self.idx):
            return super().body()
        trips = ""
        for i in self.idx:
            if i[0] == "e":
                index = expr(i[1])
            elif i[0] == "v":
                index = R(i[1], i[2]).vr(1)
            else:
                index = f'<xaif:Constant vertex_id="1" type="integer" value="{i[1]}"/>'
            trips += f'<xaif:IndexTriplet><xaif:Index>{index}</xaif:Index></xaif:IndexTriplet>'
        return (f'<xaif:SymbolReference vertex_id="1" scope_id="{self.scope}" symbol_id="{self.name}"/>'
                f'<xaif:ArrayElementReference vertex_id="2">{trips}</xaif:ArrayElementReference>'
                '<xaif:VariableReferenceEdge edge_id="1" source="1" target="2"/>')


def for_loop(first_id, i, lo, hi, blocks, before, after):
    """Entry, the statements `before` in a block, `do i = lo, hi` over one block per list in
    `blocks`, the statements `after` in a block, Exit; with the control flow edges."""
    body = '<xaif:Entry vertex_id="1"/>\n'
    body += '<xaif:BasicBlock vertex_id="2" scope_id="2">' + "".join(before) + '</xaif:BasicBlock>\n'
    body += ('<xaif:ForLoop vertex_id="3" reversal="anonymous">'
             + plain(first_id, "Initialization", i, const(lo, "integer"))
             + condition("less_or_equal", i, const(hi, "integer"))
             + plain(str(int(first_id) + 1), "Update", i, E("add_scal_scal", i, const("1", "integer")))
             + '</xaif:ForLoop>\n')
    n = 4
    for statements in blocks:
        body += f'<xaif:BasicBlock vertex_id="{n}" scope_id="2">' + "".join(statements) + '</xaif:BasicBlock>\n'
        n += 1
    end, tail, exit_ = n, n + 1, n + 2
    body += f'<xaif:EndLoop vertex_id="{end}"/>\n'
    body += f'<xaif:BasicBlock vertex_id="{tail}" scope_id="2">' + "".join(after) + '</xaif:BasicBlock>\n'
    body += f'<xaif:Exit vertex_id="{exit_}"/>\n'
    edges = [("1", "2", None), ("2", "3", None), ("3", "4", "1")]
    edges += [(str(k), str(k + 1), None) for k in range(4, end)]
    edges += [(str(end), "3", None), ("3", str(tail), None), (str(tail), str(exit_), None)]
    for k, (src, dst, cv) in enumerate(edges, 1):
        c = f' has_condition_value="true" condition_value="{cv}"' if cv else ""
        body += f'<xaif:ControlFlowEdge edge_id="{k}" source="{src}" target="{dst}"{c}/>\n'
    return body


def linearity_section_2():
    """Strout and Hovland, section 2: in x = 3*z + y**2 + w/(y*y), x depends linearly on z and
    nonlinearly on y and w."""
    s = "2"
    x, y, z, w = (R(n, s) for n in "XYZW")
    rhs = E("add_scal_scal", E("add_scal_scal", E("mul_scal_scal", const("3.0"), z),
                               E("pow_scal_scal", y, const("2", "integer"))),
            E("div_scal_scal", w, E("mul_scal_scal", y, y)))
    body = '<xaif:Entry vertex_id="1"/>\n<xaif:BasicBlock vertex_id="2" scope_id="2">' + assign("1", x, rhs)
    body += '</xaif:BasicBlock>\n<xaif:Exit vertex_id="3"/>\n'
    body += ('<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>\n'
             '<xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>\n')
    scopes = [("1", [sym("head", "void", kind="subroutine")]), (s, [sym(n, active=1) for n in "XYZW"])]
    return doc("linearity_statement", "Strout and Hovland, section 2: x = 3*z + y**2 + w/(y*y)", scopes,
               [routine("head", s, [("Z", "in"), ("Y", "in"), ("W", "in"), ("X", "out")], body)])


def linearity_figure_8():
    """Strout and Hovland, Fig. 8: do i: b(i) = 3*x(i); c(i) = b(i-1) + b(i)*x(i). The loop
    carries only the linear dependence of c on b(i-1); the nonlinear one is within an iteration."""
    s = "2"
    i = R("I", s)
    at = lambda name: R(name, s, [("v", "I", s)])
    before = Ref("B", s, [("e", E("sub_scal_scal", i, const("1", "integer")))])
    blocks = [[assign("3", at("B"), E("mul_scal_scal", const("3.0"), at("X"))),
               assign("4", at("C"), E("add_scal_scal", before, E("mul_scal_scal", at("B"), at("X"))))]]
    body = for_loop("1", i, "2", "5", blocks, [], [])
    scopes = [("1", [sym("head", "void", kind="subroutine")]),
              (s, [sym("X", shape="vector", active=1, dims=[(1, 5)]), sym("B", shape="vector", active=1, dims=[(1, 5)]),
                   sym("C", shape="vector", active=1, dims=[(1, 5)]), sym("I", "integer", active=0)])]
    return doc("linearity_fig8", "Strout and Hovland, Fig. 8: the loop-carried dependence (c on b(i-1)) is linear, "
               "the nonlinear one (c on b(i)) is not carried", scopes,
               [routine("head", s, [("X", "in"), ("B", "inout"), ("C", "out")], body)])


def tbr_bratu():
    """Hascoet, Naumann and Pascual, section 6 and appendix B: the main loop of the Bratu problem
    as canonicalized (exp5..exp10 hold the subexpressions), with h = 2/(dim+1), dim = 5. The
    temporaries are used nonlinearly in active terms and overwritten by the next iteration:
    recorded; f(i-1), f(i), f(i+1) enter no partial: not recorded; x and prm are never
    overwritten."""
    s = "2"
    i, h = R("I", s), R("H", s)
    x, prm = R("X", s, [("v", "I", s)]), lambda k: R("PRM", s, [("c", k)])
    f = lambda d: Ref("F", s, [("e", E(d, i, const("1", "integer")))]) if d else R("F", s, [("v", "I", s)])
    t = {k: R(f"EXP{k}", s) for k in range(5, 11)}
    scaled = lambda c, e: E("mul_scal_scal", E("div_scal_scal", E("mul_scal_scal", E("mul_scal_scal", h, h), prm("1")),
                                               const(c)), e)
    quotient = E("div_scal_scal", x, E("add_scal_scal", const("1.0"), E("mul_scal_scal", prm("2"), x)))
    body = [
        assign("3", t[5], quotient), assign("4", t[6], E("exp_scal", t[5])),
        assign("5", f("sub_scal_scal"), E("add_scal_scal", E("add_scal_scal", f("sub_scal_scal"), x),
                                          scaled("12.0", t[6]))),
        assign("6", t[7], quotient), assign("7", t[8], E("exp_scal", t[7])),
        assign("8", f(None), E("add_scal_scal", E("sub_scal_scal", f(None), E("mul_scal_scal", const("2.0"), x)),
                               scaled("1.2", t[8]))),
        assign("9", t[9], quotient), assign("10", t[10], E("exp_scal", t[9])),
        assign("11", f("add_scal_scal"), E("add_scal_scal", x, scaled("12.0", t[10]))),
    ]
    before = [assign("12", h, E("div_scal_scal", const("2.0"), E("add_scal_scal", const("5.0"), const("1.0"))))]
    loop = for_loop("1", i, "2", "4", [body], before, [])
    scopes = [("1", [sym("head", "void", kind="subroutine")]),
              (s, [sym("X", shape="vector", active=1, dims=[(1, 5)]), sym("PRM", shape="vector", active=1, dims=[(1, 2)]),
                   sym("F", shape="vector", active=1, dims=[(1, 5)]), sym("H", active=0), sym("I", "integer", active=0)]
               + [sym(f"EXP{k}", active=1) for k in range(5, 11)])]
    return doc("tbr_bratu", "Hascoet, Naumann and Pascual, appendix A/B: the main loop of the Bratu problem, "
               "canonicalized as in appendix B", scopes, [routine("head", s, [("X", "in"), ("PRM", "in"), ("F", "out")], loop)])


class Aliased(R):
    """A reference carrying the key of its alias set."""

    def __init__(self, name, scope, alias):
        super().__init__(name, scope)
        self.alias = alias

    def vr(self, vid):
        return f'<xaif:VariableReference vertex_id="{vid}" alias="{self.alias}">{self.body()}</xaif:VariableReference>'


def aliased_assign(sid, lhs, rhs):
    return (f'<xaif:Assignment statement_id="{sid}"><xaif:AssignmentLHS alias="{lhs.alias}">{lhs.body()}'
            f'</xaif:AssignmentLHS><xaif:AssignmentRHS>{expr(rhs)}</xaif:AssignmentRHS></xaif:Assignment>')


def common_block():
    """Two names for one storage (a common block declared differently in two routines): the
    alias map gives g and h the same address. head(x, y): g = x; call foo; y = g1 + h;
    call foo1. foo: g1 = g*g (its adjoint needs g). foo1: h = 3 (overwrites g after foo
    returns, before foo's adjoint). So g must be recorded; and h, read in y = g1 + h, holds x."""
    g, h, g1 = Aliased("G", "1", 1), Aliased("H", "1", 2), Aliased("G1", "1", 3)
    x, y = Aliased("X", "2", 4), Aliased("Y", "2", 5)
    routines = [
        cfg("1", "head", "2", [("X", "in"), ("Y", "out")],
            [[aliased_assign("1", g, x), call("2", "foo", []), aliased_assign("3", y, E("add_scal_scal", g1, h)),
              call("4", "foo1", [])]]),
        cfg("2", "foo", "3", [], [[aliased_assign("5", g1, E("mul_scal_scal", g, g))]]),
        cfg("3", "foo1", "4", [], [[aliased_assign("6", h, const("3.0"))]]),
    ]
    scopes = [("1", [sym("head", "void", kind="subroutine"), sym("foo", "void", kind="subroutine"),
                     sym("foo1", "void", kind="subroutine"), sym("G", active=1), sym("H", active=1),
                     sym("G1", active=1)]),
              ("2", [sym("X", active=1), sym("Y", active=1)]), ("3", []), ("4", [])]
    text = doc("common_block", "one storage under two names (g, h): the alias map says so", scopes, routines)
    ranges = [(1, 1), (1, 1), (2, 2), (3, 3), (4, 4)]
    alias_map = '<xaif:AliasSetMap><xaif:AliasSet key="0"/>' + "".join(
        f'<xaif:AliasSet key="{k}"><xaif:AliasRange from_virtual_address="{lo}" to_virtual_address="{hi}" '
        f'partial="0"/></xaif:AliasSet>' for k, (lo, hi) in enumerate(ranges, 1)) + '</xaif:AliasSetMap>'
    return text.replace('<xaif:AliasSetMap><xaif:AliasSet key="0"/></xaif:AliasSetMap>', alias_map)


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
                       ("activity.xaif", activity_example()), ("linearity_statement.xaif", linearity_section_2()),
                       ("linearity_fig8.xaif", linearity_figure_8()), ("tbr_bratu.xaif", tbr_bratu()),
                       ("common_block.xaif", common_block())]:
        with open(os.path.join(OUT, name), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
