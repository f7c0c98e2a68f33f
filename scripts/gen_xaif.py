#!/usr/bin/env python3
"""Generates a large synthetic XAIF document for benchmarks: many subroutines with argument
and side-effect lists, long basic blocks of assignments with nested expression graphs and
array element references, nested loops, branches and calls; alias and du-ud keys referenced.

    python3 scripts/gen_xaif.py --mb 10 --seed 1 -o big.xaif

The output is --mb MiB to within one routine (about 40 KB). Keys follow what a real front end
writes: every variable reference and every assignment left-hand side carries an alias key
(one alias set per variable) and a du-ud key, none of them key 0 ("nothing known"). The
original engine loops forever on a left-hand side with key 0; --zero-keys draws keys from
0 up, as older versions of this script did, for robustness tests.

Deterministic for a given size, seed and switches. The output validates against the XAIF schema.
"""
import argparse
import random

NS = 'xmlns:xaif="http://www.mcs.anl.gov/XAIF" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
UNARY = ["sin_scal", "cos_scal", "exp_scal", "minus_scal", "tanh_scal"]
BINARY = ["add_scal_scal", "sub_scal_scal", "mul_scal_scal", "div_scal_scal"]
VARIABLES = ["x", "y", "t1", "t2", "t3", "a"]


class Routine:
    """Writes one subroutine's control flow graph."""

    def __init__(self, rng, index, out, keys, zero_keys):
        self.rng, self.index, self.out, self.keys = rng, index, out, keys
        self.zero_keys = zero_keys
        self.scope = index + 2
        self.vertices, self.edges = 0, []
        self.statement = 0

    def reference(self, tag, name, extra=""):
        scope = self.scope
        if name == "a":
            index = self.rng.randint(1, 10)
            return ('<xaif:%s vertex_id="1"%s><xaif:SymbolReference vertex_id="1" symbol_id="a" scope_id="%d"/>'
                    '<xaif:ArrayElementReference vertex_id="2"><xaif:IndexTriplet><xaif:Index>'
                    '<xaif:Constant vertex_id="1" type="integer" value="%d"/></xaif:Index></xaif:IndexTriplet>'
                    '</xaif:ArrayElementReference><xaif:VariableReferenceEdge edge_id="1" source="1" target="2"/>'
                    '</xaif:%s>' % (tag, extra, scope, index, tag))
        return ('<xaif:%s vertex_id="1"%s><xaif:SymbolReference vertex_id="1" symbol_id="%s" scope_id="%d"/></xaif:%s>'
                % (tag, extra, name, scope, tag))

    def duud_key(self):
        return self.rng.randint(0 if self.zero_keys else 1, self.keys)

    def alias_key(self, name):
        """One alias set per variable, as a front end's alias analysis gives distinct locals."""
        if self.zero_keys:
            return self.rng.randint(0, self.keys)
        return VARIABLES.index(name) + 1

    def expression(self, depth):
        """Returns (vertex lines, edge lines) of a random expression graph."""
        vertices, edges = [], []

        def node(d):
            vid = len(vertices) + 1
            choice = self.rng.random()
            if d == 0 or choice < 0.3:
                if self.rng.random() < 0.2:
                    vertices.append('<xaif:Constant vertex_id="%d" type="real" value="%.3f"/>' % (vid, self.rng.uniform(0.5, 2)))
                else:
                    name = self.rng.choice(VARIABLES)
                    ref = self.reference("VariableReference", name,
                                         ' du_ud="%d" alias="%d"' % (self.duud_key(), self.alias_key(name)))
                    vertices.append(ref.replace('vertex_id="1"', 'vertex_id="%d"' % vid, 1))
                return vid
            if choice < 0.5:
                vertices.append('<xaif:Intrinsic vertex_id="%d" name="%s"/>' % (vid, self.rng.choice(UNARY)))
                child = node(d - 1)
                edges.append((child, vid, 1))
                return vid
            vertices.append('<xaif:Intrinsic vertex_id="%d" name="%s"/>' % (vid, self.rng.choice(BINARY)))
            left = node(d - 1)
            right = node(d - 1)
            edges.append((left, vid, 1))
            edges.append((right, vid, 2))
            return vid

        node(depth)
        edge_lines = ['<xaif:ExpressionEdge edge_id="%d" source="%d" target="%d" position="%d"/>' % (i + 1, s, t, p)
                      for i, (s, t, p) in enumerate(edges)]
        return vertices, edge_lines

    def assignment(self):
        self.statement += 1
        name = self.rng.choice(VARIABLES[1:])
        if self.zero_keys:
            lhs = self.reference("AssignmentLHS", name, ' du_ud="%d"' % self.duud_key())
        else:
            lhs = self.reference("AssignmentLHS", name, ' du_ud="%d" alias="%d"' % (self.duud_key(), self.alias_key(name)))
        lhs = lhs.replace(' vertex_id="1"', "", 1)
        vertices, edges = self.expression(self.rng.randint(1, 4))
        return ('<xaif:Assignment statement_id="r%d_s%d" lineNumber="%d">%s<xaif:AssignmentRHS>%s%s</xaif:AssignmentRHS>'
                '</xaif:Assignment>' % (self.index, self.statement, self.statement, lhs, "".join(vertices), "".join(edges)))

    def call(self, callee):
        self.statement += 1
        args = "".join('<xaif:Argument position="%d">%s</xaif:Argument>' % (p, self.reference("VariableReference", name))
                       for p, name in ((1, "x"), (2, "y")))
        return ('<xaif:SubroutineCall statement_id="r%d_c%d" symbol_id="sub%d" scope_id="1" formalArgCount="2">%s'
                '</xaif:SubroutineCall>' % (self.index, self.statement, callee, args))

    def vertex(self, text):
        self.vertices += 1
        self.out.append(text.replace("VID", str(self.vertices)))
        return self.vertices

    def edge(self, source, target, value=None):
        condition = ' has_condition_value="true" condition_value="%d"' % value if value is not None else ""
        self.edges.append('<xaif:ControlFlowEdge edge_id="%d" source="%d" target="%d"%s/>'
                          % (len(self.edges) + 1, source, target, condition))

    def block(self, statements):
        body = [self.assignment() if self.rng.random() < 0.9 or self.index == 0 else self.call(self.rng.randrange(self.index))
                for _ in range(statements)]
        return self.vertex('<xaif:BasicBlock vertex_id="VID" scope_id="%d">%s</xaif:BasicBlock>' % (self.scope, "".join(body)))

    def region(self, depth, statements):
        """A piece of control flow with one entry and one exit vertex: (first, last)."""
        kind = self.rng.random()
        if depth == 0 or kind < 0.5:
            v = self.block(statements)
            return v, v
        if kind < 0.75:
            loop = self.vertex(
                '<xaif:ForLoop vertex_id="VID"><xaif:Initialization statement_id="r%d_i%d"><xaif:AssignmentLHS>'
                '<xaif:SymbolReference vertex_id="1" symbol_id="i" scope_id="%d"/></xaif:AssignmentLHS><xaif:AssignmentRHS>'
                '<xaif:Constant vertex_id="1" type="integer" value="1"/></xaif:AssignmentRHS></xaif:Initialization>'
                '<xaif:Condition><xaif:VariableReference vertex_id="1"><xaif:SymbolReference vertex_id="1" symbol_id="i" '
                'scope_id="%d"/></xaif:VariableReference><xaif:Constant vertex_id="2" type="integer" value="10"/>'
                '<xaif:BooleanOperation vertex_id="3" name="less_or_equal"/><xaif:ExpressionEdge edge_id="1" source="1" '
                'target="3" position="1"/><xaif:ExpressionEdge edge_id="2" source="2" target="3" position="2"/>'
                '</xaif:Condition><xaif:Update statement_id="r%d_u%d"><xaif:AssignmentLHS><xaif:SymbolReference '
                'vertex_id="1" symbol_id="i" scope_id="%d"/></xaif:AssignmentLHS><xaif:AssignmentRHS>'
                '<xaif:VariableReference vertex_id="1"><xaif:SymbolReference vertex_id="1" symbol_id="i" scope_id="%d"/>'
                '</xaif:VariableReference><xaif:Constant vertex_id="2" type="integer" value="1"/><xaif:Intrinsic '
                'vertex_id="3" name="add_scal_scal"/><xaif:ExpressionEdge edge_id="1" source="1" target="3" position="1"/>'
                '<xaif:ExpressionEdge edge_id="2" source="2" target="3" position="2"/></xaif:AssignmentRHS></xaif:Update>'
                '</xaif:ForLoop>' % (self.index, self.vertices + 1, self.scope, self.scope, self.index, self.vertices + 1,
                                     self.scope, self.scope))
            first, last = self.region(depth - 1, statements)
            end = self.vertex('<xaif:EndLoop vertex_id="VID"/>')
            self.edge(loop, first, 1)
            self.edge(last, end)
            self.edge(end, loop)
            after = self.vertex('<xaif:BasicBlock vertex_id="VID" scope_id="%d"><xaif:Marker statement_id="r%d_m%d"/>'
                                '</xaif:BasicBlock>' % (self.scope, self.index, self.vertices + 1))
            # The loop's exit edge carries no condition value, as the front end writes it (the
            # original engine's adjoint refuses a CFG whose exit edge says `condition_value="0"`).
            self.edge(loop, after)
            return loop, after
        branch = self.vertex(
            '<xaif:Branch vertex_id="VID"><xaif:Condition><xaif:VariableReference vertex_id="1"><xaif:SymbolReference '
            'vertex_id="1" symbol_id="i" scope_id="%d"/></xaif:VariableReference></xaif:Condition></xaif:Branch>' % self.scope)
        arms = [self.region(depth - 1, statements) for _ in range(2)]
        end = self.vertex('<xaif:EndBranch vertex_id="VID"/>')
        for value, (first, last) in enumerate(arms):
            self.edge(branch, first, value)
            self.edge(last, end)
        return branch, end

    def write(self, statements):
        out = self.out
        out.append('<xaif:ControlFlowGraph vertex_id="%d" symbol_id="sub%d" scope_id="1" controlflowgraph_scope_id="%d">'
                   % (self.index + 1, self.index, self.scope))
        out.append('<xaif:ArgumentList><xaif:ArgumentSymbolReference position="1" symbol_id="x" scope_id="%d"/>'
                   '<xaif:ArgumentSymbolReference position="2" symbol_id="y" scope_id="%d"/></xaif:ArgumentList>'
                   % (self.scope, self.scope))
        for effects in ("ModLocal", "Mod", "ReadLocal", "Read"):
            out.append("<xaif:%s>%s</xaif:%s>" % (effects, self.reference("SideEffectReference", "y"), effects))
        entry = self.vertex('<xaif:Entry vertex_id="VID"/>')
        first, last = self.region(2, statements)
        exit_vertex = self.vertex('<xaif:Exit vertex_id="VID"/>')
        self.edge(entry, first)
        self.edge(last, exit_vertex)
        out.extend(self.edges)
        out.append("</xaif:ControlFlowGraph>")


def generate(megabytes, seed, zero_keys=False):
    rng = random.Random(seed)
    target = int(megabytes * 1024 * 1024)
    keys = 20
    # Routines of about 40 KB each; as many as it takes to reach the target (the head, which
    # lists every routine's scope, is counted as it grows).
    nominal = max(1, target // 40000)
    statements = max(2, (target // nominal) // 1300)
    bodies, size, routines = [], 0, 0
    while routines == 0 or size + head_size(routines, keys) < target:
        body = []
        Routine(rng, routines, body, keys, zero_keys).write(statements)
        bodies.append(body)
        size += sum(len(line) + 1 for line in body)
        routines += 1
    out = head(routines, keys)
    for body in bodies:
        out.extend(body)
    for r in range(1, routines):
        out.append('<xaif:CallGraphEdge edge_id="%d" source="%d" target="%d"/>' % (r, r + 1, r))
    out.append("</xaif:CallGraph>")
    return "\n".join(out) + "\n"


def head(routines, keys):
    """Everything before the first control flow graph."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<xaif:CallGraph %s xsi:schemaLocation="http://www.mcs.anl.gov/XAIF xaif.xsd" program_name="synthetic" '
           'prefix="OpenAD_">' % NS, "<xaif:ScopeHierarchy>",
           '<xaif:Scope vertex_id="1"><xaif:SymbolTable>'
           + "".join('<xaif:Symbol symbol_id="sub%d" kind="subroutine" type="void"/>' % r for r in range(routines))
           + "</xaif:SymbolTable></xaif:Scope>"]
    for r in range(routines):
        out.append('<xaif:Scope vertex_id="%d"><xaif:SymbolTable>' % (r + 2)
                   + "".join('<xaif:Symbol symbol_id="%s"/>' % v for v in VARIABLES if v != "a")
                   + '<xaif:Symbol symbol_id="a" shape="vector"><xaif:DimensionBounds lower="1" upper="10"/></xaif:Symbol>'
                   + '<xaif:Symbol symbol_id="i" type="integer" active="false"/></xaif:SymbolTable></xaif:Scope>')
        out.append('<xaif:ScopeEdge edge_id="%d" source="%d" target="1"/>' % (r + 1, r + 2))
    out.append("</xaif:ScopeHierarchy><xaif:AliasSetMap>")
    out.extend('<xaif:AliasSet key="%d"><xaif:AliasRange from_virtual_address="%d" to_virtual_address="%d"/></xaif:AliasSet>'
               % (k, k + 1, k + 1) for k in range(keys + 1))
    out.append("</xaif:AliasSetMap><xaif:DUUDSetMap>")
    out.extend('<xaif:StmtIdSet key="%d"><xaif:StatementId idRef="r0_s1"/></xaif:StmtIdSet>' % k for k in range(keys + 1))
    out.append('</xaif:DUUDSetMap><xaif:DOSetMap><xaif:StmtIdSet key="0"/></xaif:DOSetMap>')
    return out


def head_size(routines, keys):
    """Bytes of the head and the call graph edges for this many routines."""
    edges = sum(len('<xaif:CallGraphEdge edge_id="%d" source="%d" target="%d"/>' % (r, r + 1, r)) + 1
                for r in range(1, routines))
    return sum(len(line) + 1 for line in head(routines, keys)) + edges + len("</xaif:CallGraph>\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0, help="approximate size in MiB")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--zero-keys", action="store_true",
                        help="draw alias and du-ud keys from 0 (key 0 on left-hand sides), for robustness tests")
    parser.add_argument("-o", "--output", required=True)
    arguments = parser.parse_args()
    with open(arguments.output, "w") as f:
        f.write(generate(arguments.mb, arguments.seed, arguments.zero_keys))
