#!/usr/bin/env python3
"""Writes testdata/invalid/<case>.xaif: one small document per fault, each derived from the
valid base document below by one textual change. The expected messages (<case>.expected) are
written by hand beside them and checked by tests/invalid_inputs.rs.

Run from the crate root: python3 scripts/gen_invalid_cases.py
"""

BASE = """<?xml version="1.0" encoding="UTF-8"?>
<xaif:CallGraph xmlns:xaif="http://www.mcs.anl.gov/XAIF" program_name="cases" prefix="p_">
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
        <xaif:Symbol symbol_id="i" type="integer" active="false"/>
      </xaif:SymbolTable>
    </xaif:Scope>
    <xaif:ScopeEdge edge_id="1" source="2" target="1"/>
  </xaif:ScopeHierarchy>
  <xaif:AliasSetMap>
    <xaif:AliasSet key="0"/>
    <xaif:AliasSet key="1">
      <xaif:AliasRange from_virtual_address="1" to_virtual_address="1"/>
    </xaif:AliasSet>
  </xaif:AliasSetMap>
  <xaif:DUUDSetMap>
    <xaif:StmtIdSet key="0"/>
    <xaif:StmtIdSet key="1">
      <xaif:StatementId idRef="s1"/>
    </xaif:StmtIdSet>
  </xaif:DUUDSetMap>
  <xaif:DOSetMap>
    <xaif:StmtIdSet key="0"/>
  </xaif:DOSetMap>
  <xaif:ControlFlowGraph vertex_id="1" symbol_id="head" scope_id="1" controlflowgraph_scope_id="2">
    <xaif:ArgumentList>
      <xaif:ArgumentSymbolReference position="1" symbol_id="x" scope_id="2" intent="in"/>
      <xaif:ArgumentSymbolReference position="2" symbol_id="y" scope_id="2"/>
    </xaif:ArgumentList>
    <xaif:Entry vertex_id="1"/>
    <xaif:BasicBlock vertex_id="2" scope_id="2">
      <xaif:Assignment statement_id="s1">
        <xaif:AssignmentLHS alias="1" du_ud="1">
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
      <xaif:SubroutineCall statement_id="c1" symbol_id="head" scope_id="1" formalArgCount="2">
        <xaif:Argument position="1">
          <xaif:VariableReference vertex_id="1">
            <xaif:SymbolReference vertex_id="1" symbol_id="x" scope_id="2"/>
          </xaif:VariableReference>
        </xaif:Argument>
      </xaif:SubroutineCall>
    </xaif:BasicBlock>
    <xaif:Branch vertex_id="3">
      <xaif:Condition>
        <xaif:VariableReference vertex_id="1">
          <xaif:SymbolReference vertex_id="1" symbol_id="i" scope_id="2"/>
        </xaif:VariableReference>
        <xaif:Constant vertex_id="2" type="integer" value="0"/>
        <xaif:BooleanOperation vertex_id="3" name="greater_than"/>
        <xaif:ExpressionEdge edge_id="1" source="1" target="3" position="1"/>
        <xaif:ExpressionEdge edge_id="2" source="2" target="3" position="2"/>
      </xaif:Condition>
    </xaif:Branch>
    <xaif:EndBranch vertex_id="4"/>
    <xaif:Exit vertex_id="5"/>
    <xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>
    <xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>
    <xaif:ControlFlowEdge edge_id="3" source="3" target="4" has_condition_value="true" condition_value="1"/>
    <xaif:ControlFlowEdge edge_id="4" source="3" target="4" has_condition_value="true" condition_value="0"/>
    <xaif:ControlFlowEdge edge_id="5" source="4" target="5"/>
  </xaif:ControlFlowGraph>
</xaif:CallGraph>
"""

# case name -> (text to replace, replacement); the first occurrence is replaced.
CASES = {
    "truncated_file": (None, "TRUNCATE"),
    "empty_file": (None, "EMPTY"),
    "not_utf8": ('value="2.0"', 'value="2.0\xff"'),
    "wrong_namespace": ('xmlns:xaif="http://www.mcs.anl.gov/XAIF"', 'xmlns:xaif="http://example.org/other"'),
    "no_namespace_declaration": (' xmlns:xaif="http://www.mcs.anl.gov/XAIF"', ""),
    "doctype_with_entities": ('<?xml version="1.0" encoding="UTF-8"?>',
                              '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE x [<!ENTITY e "boom">]>'),
    "unmatched_end_tag": ("</xaif:DOSetMap>", "</xaif:DUUDSetMap>"),
    "wrong_root": ("xaif:CallGraph", "xaif:Root"),
    "dangling_symbol": ('symbol_id="x" scope_id="2"/>\n          </xaif:VariableReference>\n          <xaif:Constant',
                        'symbol_id="z" scope_id="2"/>\n          </xaif:VariableReference>\n          <xaif:Constant'),
    "dangling_scope": ('<xaif:BasicBlock vertex_id="2" scope_id="2">', '<xaif:BasicBlock vertex_id="2" scope_id="7">'),
    "dangling_routine_symbol": ('symbol_id="head" scope_id="1" controlflowgraph_scope_id="2"',
                                'symbol_id="tail" scope_id="1" controlflowgraph_scope_id="2"'),
    "duplicate_cfg_vertex_id": ('<xaif:EndBranch vertex_id="4"/>', '<xaif:EndBranch vertex_id="2"/>'),
    "duplicate_symbol": ('<xaif:Symbol symbol_id="y"/>', '<xaif:Symbol symbol_id="x"/>'),
    "duplicate_scope": ('<xaif:Scope vertex_id="2">', '<xaif:Scope vertex_id="1">'),
    "duplicate_expression_vertex": ('<xaif:Constant vertex_id="2" type="real"', '<xaif:Constant vertex_id="1" type="real"'),
    "duplicate_alias_key": ('<xaif:AliasSet key="1">', '<xaif:AliasSet key="0">'),
    "edge_to_missing_vertex": ('edge_id="5" source="4" target="5"', 'edge_id="5" source="4" target="9"'),
    "expression_edge_to_missing_vertex": ('edge_id="2" source="2" target="3" position="2"/>\n        </xaif:AssignmentRHS>',
                                          'edge_id="2" source="8" target="3" position="2"/>\n        </xaif:AssignmentRHS>'),
    "two_entry_vertices": ('<xaif:EndBranch vertex_id="4"/>', '<xaif:EndBranch vertex_id="4"/>\n    <xaif:Entry vertex_id="6"/>'),
    "missing_exit": ('    <xaif:Exit vertex_id="5"/>\n', ""),
    "edge_into_entry": ('edge_id="5" source="4" target="5"', 'edge_id="5" source="4" target="1"'),
    "branch_without_endbranch": ('<xaif:EndBranch vertex_id="4"/>', '<xaif:Label vertex_id="4"/>'),
    "bad_numeric_attribute": ('position="1"/>\n          <xaif:ExpressionEdge', 'position="first"/>\n          <xaif:ExpressionEdge'),
    "bad_positive_integer": ('<xaif:ArgumentSymbolReference position="1"', '<xaif:ArgumentSymbolReference position="0"'),
    "bad_boolean": ('<xaif:Symbol symbol_id="i" type="integer" active="false"/>',
                    '<xaif:Symbol symbol_id="i" type="integer" active="maybe"/>'),
    "bad_enumeration": ('<xaif:Symbol symbol_id="i" type="integer"', '<xaif:Symbol symbol_id="i" type="int"'),
    "bad_boolean_operation": ('name="greater_than"', 'name="bigger_than"'),
    "missing_required_attribute": ('<xaif:Constant vertex_id="2" type="real" value="2.0"/>',
                                   '<xaif:Constant vertex_id="2" type="real"/>'),
    "missing_statement_id": ('<xaif:Assignment statement_id="s1">', "<xaif:Assignment>"),
    "unknown_element": ('<xaif:EndBranch vertex_id="4"/>', '<xaif:EndBranch vertex_id="4"/>\n    <xaif:Loop vertex_id="6"/>'),
    "missing_do_set_map": ("  <xaif:DOSetMap>\n    <xaif:StmtIdSet key=\"0\"/>\n  </xaif:DOSetMap>\n", ""),
    "element_out_of_order": ("  <xaif:DUUDSetMap>", "  <xaif:DOSetMap>\n    <xaif:StmtIdSet key=\"0\"/>\n  </xaif:DOSetMap>\n  <xaif:DUUDSetMap>"),
    "text_content": ('<xaif:EndBranch vertex_id="4"/>', '<xaif:EndBranch vertex_id="4"/>\n    stray text'),
    "dangling_alias_key": ('<xaif:AssignmentLHS alias="1" du_ud="1">', '<xaif:AssignmentLHS alias="5" du_ud="1">'),
    "dangling_duud_key": ('<xaif:AssignmentLHS alias="1" du_ud="1">', '<xaif:AssignmentLHS alias="1" du_ud="4">'),
    "reference_without_symbol": ('<xaif:VariableReference vertex_id="1">\n            <xaif:SymbolReference vertex_id="1" symbol_id="x" scope_id="2"/>\n          </xaif:VariableReference>\n          <xaif:Constant',
                                 '<xaif:VariableReference vertex_id="1">\n          </xaif:VariableReference>\n          <xaif:Constant'),
    "strict_missing_formal_arg_count": (' formalArgCount="2"', ""),
    "strict_unknown_attribute": ('<xaif:Exit vertex_id="5"/>', '<xaif:Exit vertex_id="5" colour="red"/>'),
    "strict_duplicate_edge_id": ('edge_id="5" source="4"', 'edge_id="4" source="4"'),
}


def main():
    for name, (old, new) in sorted(CASES.items()):
        if new == "TRUNCATE":
            text = BASE[: BASE.index("<xaif:Branch")]
        elif new == "EMPTY":
            text = ""
        elif name == "wrong_root":
            text = BASE.replace(old, new)
        elif name == "element_out_of_order":
            text = BASE.replace("  <xaif:DOSetMap>\n    <xaif:StmtIdSet key=\"0\"/>\n  </xaif:DOSetMap>\n", "", 1)
            text = text.replace(old, new, 1)
        else:
            assert old in BASE, name
            text = BASE.replace(old, new, 1)
        data = text.encode("utf-8", "surrogateescape") if name != "not_utf8" else text.encode("latin-1")
        with open("testdata/invalid/%s.xaif" % name, "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
