#!/usr/bin/env python3
"""Writes the hand-designed adjoint test programs of testdata/adjoint/.

Run from the repository root: python3 scripts/gen_adjoint_tests.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from xaif_builder import E, R, assign, const, sym  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "testdata", "adjoint")
H = "2"


def X(i):
    return R("X", H, [("c", i)])


def condition(op, left, right):
    """A Condition element: a BooleanOperation over two operands (variables or constants)."""
    parts = []
    for vid, operand in ((2, left), (3, right)):
        if isinstance(operand, R):
            parts.append(operand.vr(vid))
        else:
            parts.append(f'<xaif:Constant vertex_id="{vid}" type="{operand[2]}" value="{operand[1]}"/>')
    return (f'<xaif:Condition><xaif:BooleanOperation vertex_id="1" name="{op}"/>{"".join(parts)}'
            '<xaif:ExpressionEdge edge_id="1" source="2" target="1" position="1"/>'
            '<xaif:ExpressionEdge edge_id="2" source="3" target="1" position="2"/></xaif:Condition>')


def block(vid, statements):
    return f'<xaif:BasicBlock vertex_id="{vid}" scope_id="{H}">' + "".join(statements) + '</xaif:BasicBlock>'


def document(name, comment, structured, vertices, edges):
    out = f'<?xml version="1.0" encoding="UTF-8"?>\n<!-- {comment} -->\n'
    out += ('<xaif:CallGraph xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
            'xmlns:xaif="http://www.mcs.anl.gov/XAIF" xsi:schemaLocation="http://www.mcs.anl.gov/XAIF xaif.xsd" '
            f'program_name="{name}" prefix="OpenAD_">\n<xaif:ScopeHierarchy>\n')
    out += '<xaif:Scope vertex_id="1"><xaif:SymbolTable>' + sym("head", "void", kind="subroutine") + '</xaif:SymbolTable></xaif:Scope>\n'
    out += ('<xaif:Scope vertex_id="2"><xaif:SymbolTable>' + sym("X", shape="vector", active=1, dims=[(1, 2)])
            + sym("Y", active=1) + sym("I", "integer", active=0) + '</xaif:SymbolTable></xaif:Scope>\n')
    out += '<xaif:ScopeEdge edge_id="1" source="2" target="1"/>\n</xaif:ScopeHierarchy>\n'
    out += ('<xaif:AliasSetMap><xaif:AliasSet key="0"/></xaif:AliasSetMap>\n<xaif:DUUDSetMap><xaif:StmtIdSet key="0"/>'
            '</xaif:DUUDSetMap>\n<xaif:DOSetMap><xaif:StmtIdSet key="0"/></xaif:DOSetMap>\n')
    flag = "" if structured else ' structured="false"'
    out += (f'<xaif:ControlFlowGraph vertex_id="1" scope_id="1" symbol_id="head" controlflowgraph_scope_id="2"{flag}>\n'
            '<xaif:ArgumentList><xaif:ArgumentSymbolReference position="1" scope_id="2" symbol_id="X" intent="in"/>'
            '<xaif:ArgumentSymbolReference position="2" scope_id="2" symbol_id="Y" intent="out"/></xaif:ArgumentList>\n')
    out += "\n".join(vertices) + "\n"
    for k, (s, t, v) in enumerate(edges, 1):
        cond = "" if v is None else f' has_condition_value="true" condition_value="{v}"'
        out += f'<xaif:ControlFlowEdge edge_id="{k}" source="{s}" target="{t}"{cond}/>\n'
    return out + '</xaif:ControlFlowGraph>\n</xaif:CallGraph>\n'


def unstructured():
    y, i = R("Y", H), R("I", H)
    vertices = [
        '<xaif:Entry vertex_id="1"/>',
        block(2, [assign("a1", y, X(1)), assign("a2", i, const(0, "integer"))]),
        '<xaif:Label vertex_id="3"/>',
        block(4, [assign("b1", y, E("add_scal_scal", E("mul_scal_scal", y, X(2)), E("sin_scal", y))),
                  assign("b2", i, E("add_scal_scal", i, const(1, "integer")))]),
        f'<xaif:If vertex_id="5">{condition("less_than", i, const(3, "integer"))}</xaif:If>',
        '<xaif:Goto vertex_id="6"/>',
        block(7, [assign("c1", y, E("mul_scal_scal", y, const("2.0")))]),
        '<xaif:Exit vertex_id="8"/>',
    ]
    edges = [(1, 2, None), (2, 3, None), (3, 4, None), (4, 5, None), (5, 6, 1), (5, 7, None), (6, 3, None),
             (7, 8, None)]
    comment = """A backward goto: head(X(1:2) in, Y out): Y = X(1); I = 0;
     10 Y = Y*X(2) + sin(Y); I = I + 1; if (I < 3) goto 10; Y = 2*Y.
     Not structured: reversed by basic-block numbers."""
    return document("adjoint_unstructured", comment, False, vertices, edges)


def if_postloop():
    y, i = R("Y", H), R("I", H)
    vertices = [
        '<xaif:Entry vertex_id="1"/>',
        block(2, [assign("a1", y, X(1)), assign("a2", i, const(0, "integer"))]),
        f'<xaif:PostLoop vertex_id="3">{condition("less_than", i, const(2, "integer"))}</xaif:PostLoop>',
        block(4, [assign("b1", y, E("mul_scal_scal", E("sin_scal", y), X(2))),
                  assign("b2", i, E("add_scal_scal", i, const(1, "integer")))]),
        '<xaif:EndLoop vertex_id="5"/>',
        f'<xaif:If vertex_id="6">{condition("greater_than", y, const("0.0"))}</xaif:If>',
        block(7, [assign("c1", y, E("mul_scal_scal", y, X(1)))]),
        block(8, [assign("c2", y, E("minus_scal", y))]),
        '<xaif:EndBranch vertex_id="9"/>',
        '<xaif:Exit vertex_id="10"/>',
    ]
    edges = [(1, 2, None), (2, 3, None), (3, 4, 1), (4, 5, None), (5, 3, None), (3, 6, None), (6, 7, 1),
             (6, 8, None), (7, 9, None), (8, 9, None), (9, 10, None)]
    comment = """A post-test loop and a two-way If joined by an EndBranch (both refused by the original
     adjoint driver): head(X(1:2) in, Y out): Y = X(1); I = 0;
     repeat: Y = sin(Y)*X(2); I = I + 1 until not (I < 2); if (Y > 0) then Y = Y*X(1) else Y = -Y."""
    return document("adjoint_if_postloop", comment, True, vertices, edges)


os.makedirs(OUT, exist_ok=True)
for name, text in [("unstructured", unstructured()), ("if_postloop", if_postloop())]:
    with open(os.path.join(OUT, name + ".xaif"), "w") as f:
        f.write(text)
