#!/usr/bin/env python3
"""Writes testdata/robustness/<case>.xaif: small documents that once crashed, hung or made the
engine write schema-invalid output (issue 13), one per fault class. Each is the base program
below with one change. tests/robustness.rs runs every subcommand on them; what each must do is
written there. Inputs too large to keep in the repository (long expressions, deep nesting) are
made by the test itself.

Run from the crate root: python3 scripts/gen_robustness_cases.py
"""

import os

# subroutine head(x, y): y = x * 2.0
HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<xaif:CallGraph xmlns:xaif="http://www.mcs.anl.gov/XAIF" program_name="robust" prefix="r_">
  <xaif:ScopeHierarchy>
    <xaif:Scope vertex_id="1">
      <xaif:SymbolTable>
        <xaif:Symbol symbol_id="head" kind="subroutine" type="void"/>
      </xaif:SymbolTable>
    </xaif:Scope>
    <xaif:Scope vertex_id="2">
      <xaif:SymbolTable>
        <xaif:Symbol symbol_id="x"/>
        <xaif:Symbol symbol_id="y"/>
        <xaif:Symbol symbol_id="k" type="integer" active="false"/>
      </xaif:SymbolTable>
    </xaif:Scope>
    <xaif:ScopeEdge edge_id="1" source="2" target="1"/>
  </xaif:ScopeHierarchy>
  <xaif:AliasSetMap>
    <xaif:AliasSet key="0"/>
  </xaif:AliasSetMap>
  <xaif:DUUDSetMap>
    <xaif:StmtIdSet key="0"/>
  </xaif:DUUDSetMap>
  <xaif:DOSetMap>
    <xaif:StmtIdSet key="0"/>
  </xaif:DOSetMap>
  <xaif:ControlFlowGraph vertex_id="1" symbol_id="head" scope_id="1" controlflowgraph_scope_id="2">
    <xaif:ArgumentList>
      <xaif:ArgumentSymbolReference position="1" symbol_id="x" scope_id="2" intent="in"/>
      <xaif:ArgumentSymbolReference position="2" symbol_id="y" scope_id="2" intent="inout"/>
    </xaif:ArgumentList>
    <xaif:Entry vertex_id="1"/>
    <xaif:BasicBlock vertex_id="2" scope_id="2">
      <xaif:Assignment statement_id="s1">
        <xaif:AssignmentLHS>
          <xaif:SymbolReference vertex_id="1" symbol_id="y" scope_id="2"/>
        </xaif:AssignmentLHS>
        <xaif:AssignmentRHS>
          <xaif:VariableReference vertex_id="1">
            <xaif:SymbolReference vertex_id="1" symbol_id="x" scope_id="2"/>
          </xaif:VariableReference>
          <xaif:Constant vertex_id="2" type="real" value="2.0"/>
          <xaif:Intrinsic vertex_id="3" name="mul_scal_scal"/>
          <xaif:ExpressionEdge edge_id="1" source="1" target="3" position="1"/>
          <xaif:ExpressionEdge edge_id="2" source="2" target="3" position="2"/>
        </xaif:AssignmentRHS>
      </xaif:Assignment>
    </xaif:BasicBlock>
    <xaif:Exit vertex_id="3"/>
    <xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>
    <xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>
  </xaif:ControlFlowGraph>
</xaif:CallGraph>
"""

X = '<xaif:VariableReference vertex_id="{}"><xaif:SymbolReference vertex_id="1" symbol_id="x" scope_id="2"/></xaif:VariableReference>'

RHS_START = HEAD.index("<xaif:AssignmentRHS>") + len("<xaif:AssignmentRHS>")
RHS_END = HEAD.index("</xaif:AssignmentRHS>")


def with_rhs(*parts):
    """The base program with another right-hand side for `y = ...`, one element a line."""
    return HEAD[:RHS_START] + "".join("\n          " + p for p in parts) + "\n        " + HEAD[RHS_END:]


def edge(i, source, target, position):
    return f'<xaif:ExpressionEdge edge_id="{i}" source="{source}" target="{target}" position="{position}"/>'


def replace(old, new, text=HEAD):
    assert old in text, old
    return text.replace(old, new, 1)


def insert_after(marker, extra, text=HEAD):
    assert marker in text, marker
    return text.replace(marker, marker + extra, 1)


CASES = {
    # 1. panics in tangent
    # `y = x * ?`: the second operand of a binary intrinsic is missing.
    "intrinsic_missing_operand": with_rhs(
        X.format(1), '<xaif:Intrinsic vertex_id="3" name="mul_scal_scal"/>', edge(1, 1, 3, 1)
    ),
    # `y = sin(v)` where v = x + v: a cycle below the root.
    "expression_cycle": with_rhs(
        X.format(1),
        '<xaif:Intrinsic vertex_id="2" name="add_scal_scal"/>',
        '<xaif:Intrinsic vertex_id="3" name="cos_scal"/>',
        '<xaif:Intrinsic vertex_id="4" name="sin_scal"/>',
        edge(1, 1, 2, 1),
        edge(2, 3, 2, 2),
        edge(3, 2, 3, 1),
        edge(4, 2, 4, 1)
    ),
    # An operation that is its own second operand.
    "expression_self_loop": with_rhs(
        X.format(1),
        '<xaif:Intrinsic vertex_id="2" name="add_scal_scal"/>',
        '<xaif:Intrinsic vertex_id="3" name="sin_scal"/>',
        edge(1, 1, 2, 1),
        edge(2, 2, 2, 2),
        edge(3, 2, 3, 1)
    ),
    # 2. byte-order marks
    "bom_without_declaration": "\ufeff" + HEAD[HEAD.index("\n") + 1 :],
    # A valid document apart from one unknown element on line 3, after a BOM and a declaration.
    "bom_with_declaration": "\ufeff"
    + replace("  <xaif:ScopeHierarchy>", "  <xaif:Bogus/>\n  <xaif:ScopeHierarchy>"),
    # 3. run / verify
    "duplicate_argument_position": replace(
        '<xaif:ArgumentSymbolReference position="2" symbol_id="y"',
        '<xaif:ArgumentSymbolReference position="1" symbol_id="y"',
    ),
    # 2^62 elements: the byte count overflows.
    "array_size_overflow": replace(
        '<xaif:Symbol symbol_id="k" type="integer" active="false"/>',
        '<xaif:Symbol symbol_id="k" type="integer" shape="vector" active="false">'
        '<xaif:DimensionBounds lower="1" upper="4611686018427387904"/></xaif:Symbol>',
    ),
    # 10^11 elements: representable, but far more memory than the machine has.
    "array_huge": replace(
        '<xaif:Symbol symbol_id="k" type="integer" active="false"/>',
        '<xaif:Symbol symbol_id="k" type="integer" shape="vector" active="false">'
        '<xaif:DimensionBounds lower="1" upper="100000000000"/></xaif:Symbol>',
    ),
    # The same array as a global (the routines' common scope): allocated before any routine
    # runs, so the failure is located at its declaration.
    "global_array_huge": replace(
        '<xaif:Symbol symbol_id="head" kind="subroutine" type="void"/>',
        '<xaif:Symbol symbol_id="head" kind="subroutine" type="void"/>\n'
        '        <xaif:Symbol symbol_id="g" type="integer" shape="vector" active="false">'
        '<xaif:DimensionBounds lower="1" upper="100000000000"/></xaif:Symbol>',
    ),
    # Bounds whose difference overflows a 64-bit integer.
    "array_bounds_overflow": replace(
        '<xaif:Symbol symbol_id="k" type="integer" active="false"/>',
        '<xaif:Symbol symbol_id="k" type="integer" shape="vector" active="false">'
        '<xaif:DimensionBounds lower="-9223372036854775808" upper="9223372036854775807"/></xaif:Symbol>',
    ),
    # `head` calls itself before anything else: endless recursion.
    "recursive_routine": insert_after(
        '<xaif:BasicBlock vertex_id="2" scope_id="2">',
        '\n      <xaif:SubroutineCall statement_id="c1" symbol_id="head" scope_id="1" formalArgCount="2">'
        '<xaif:Argument position="1">' + X.format(1) + "</xaif:Argument>"
        '<xaif:Argument position="2">' + X.format(1).replace('"x"', '"y"') + "</xaif:Argument>"
        "</xaif:SubroutineCall>",
    ),
    # 4. a basic block that is its own successor: `run` loops until the step limit.
    "cfg_self_loop": replace(
        '<xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>',
        '<xaif:ControlFlowEdge edge_id="2" source="2" target="2"/>',
    ),
    # 5. accepted input, schema-invalid output
    "duplicate_statement_id": insert_after(
        '<xaif:BasicBlock vertex_id="2" scope_id="2">',
        '\n      <xaif:Marker statement_id="s1"/>',
    ),
    "duplicate_call_graph_edge_id": replace(
        "</xaif:CallGraph>",
        '  <xaif:CallGraphEdge edge_id="1" source="1" target="1"/>\n'
        '  <xaif:CallGraphEdge edge_id="1" source="1" target="1"/>\n</xaif:CallGraph>',
    ),
    # `y = sin(x)` whose id is the one tangent mode gives the statement computing its partial.
    "statement_id_like_a_temporary": with_rhs(
        X.format(1), '<xaif:Intrinsic vertex_id="2" name="sin_scal"/>', edge(1, 1, 2, 1)
    ).replace('statement_id="s1"', 'statement_id="_r_lin_0"'),
    "argument_position_overflow": replace(
        '<xaif:ArgumentSymbolReference position="2" symbol_id="y"',
        '<xaif:ArgumentSymbolReference position="4294967296" symbol_id="y"',
    ),
    "line_number_overflow": replace(
        '<xaif:Assignment statement_id="s1">',
        '<xaif:Assignment statement_id="s1" lineNumber="9223372036854775808">',
    ),
    "alias_key_overflow": replace(
        '<xaif:AliasSet key="0"/>',
        '<xaif:AliasSet key="0"/>\n    <xaif:AliasSet key="18446744073709551615">'
        '<xaif:AliasRange from_virtual_address="9223372036854775808" to_virtual_address="18446744073709551615"/>'
        "</xaif:AliasSet>",
    ),
    # No AliasSet with key 0, though every reference without an alias attribute means key 0.
    "alias_key_zero_undefined": replace('<xaif:AliasSet key="0"/>', '<xaif:AliasSet key="1"/>'),
    # 6. the semantic checker
    "expression_two_roots": with_rhs(
        X.format(1), '<xaif:Constant vertex_id="2" type="real" value="2.0"/>'
    ),
    "expression_position_gap": with_rhs(
        X.format(1),
        '<xaif:Constant vertex_id="2" type="real" value="2.0"/>',
        '<xaif:Intrinsic vertex_id="3" name="mul_scal_scal"/>',
        edge(1, 1, 3, 1),
        edge(2, 2, 3, 3)
    ),
    "expression_position_repeated": with_rhs(
        X.format(1),
        '<xaif:Constant vertex_id="2" type="real" value="2.0"/>',
        '<xaif:Intrinsic vertex_id="3" name="mul_scal_scal"/>',
        edge(1, 1, 3, 1),
        edge(2, 2, 3, 1)
    ),
    "intrinsic_extra_operand": with_rhs(
        X.format(1),
        '<xaif:Constant vertex_id="2" type="real" value="2.0"/>',
        '<xaif:Intrinsic vertex_id="3" name="sin_scal"/>',
        edge(1, 1, 3, 1),
        edge(2, 2, 3, 2)
    ),
    "operand_of_a_variable": with_rhs(
        X.format(1), '<xaif:Constant vertex_id="2" type="real" value="2.0"/>', edge(1, 2, 1, 1)
    ),
    "scope_cycle": replace(
        '<xaif:ScopeEdge edge_id="1" source="2" target="1"/>',
        '<xaif:ScopeEdge edge_id="1" source="2" target="1"/>\n'
        '    <xaif:ScopeEdge edge_id="2" source="1" target="2"/>',
    ),
    # Refused by tangent only, located at the statement: what cannot be differentiated.
    "unknown_intrinsic": with_rhs(
        X.format(1), '<xaif:Intrinsic vertex_id="2" name="frobnicate_scal"/>', edge(1, 1, 2, 1)
    ),
    "call_argument_without_formal": insert_after(
        '<xaif:BasicBlock vertex_id="2" scope_id="2">',
        '\n      <xaif:SubroutineCall statement_id="c1" symbol_id="head" scope_id="1" formalArgCount="2">'
        '<xaif:Argument position="3">' + X.format(1) + "</xaif:Argument>"
        "</xaif:SubroutineCall>",
    ),
    # Accepted with a warning: a block no path from Entry reaches.
    "unreachable_block": replace(
        '<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>',
        '<xaif:ControlFlowEdge edge_id="1" source="1" target="3"/>',
    ),
}


def main():
    folder = os.path.join("testdata", "robustness")
    os.makedirs(folder, exist_ok=True)
    for name, text in CASES.items():
        with open(os.path.join(folder, name + ".xaif"), "w", encoding="utf-8", newline="\n") as out:
            out.write(text)


if __name__ == "__main__":
    main()
