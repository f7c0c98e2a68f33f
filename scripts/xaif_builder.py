# tiny XAIF writing helpers for hand-made test programs
def sym(name, ty="real", shape="scalar", active=None, dims=None, kind="variable"):
    a = "" if active is None else f' active="{active}"'
    inner = "".join(f'<xaif:DimensionBounds lower="{l}" upper="{u}"/>' for l, u in (dims or []))
    return f'<xaif:Symbol symbol_id="{name}" kind="{kind}" type="{ty}" shape="{shape}"{a}>{inner}</xaif:Symbol>' if inner else f'<xaif:Symbol symbol_id="{name}" kind="{kind}" type="{ty}" shape="{shape}"{a}/>'
class R:  # variable reference body: symbol + optional indices [("const",v)|("var",name,scope)|("sec",lo,hi)]
    def __init__(self, name, scope, idx=None): self.name, self.scope, self.idx = name, scope, idx
    def body(self):
        s = f'<xaif:SymbolReference vertex_id="1" scope_id="{self.scope}" symbol_id="{self.name}"/>'
        if self.idx is None: return s
        trips = ""
        for i in self.idx:
            if i[0] == "c": trips += f'<xaif:IndexTriplet><xaif:Index><xaif:Constant vertex_id="1" type="integer" value="{i[1]}"/></xaif:Index></xaif:IndexTriplet>'
            elif i[0] == "v": trips += f'<xaif:IndexTriplet><xaif:Index><xaif:VariableReference vertex_id="1"><xaif:SymbolReference vertex_id="1" scope_id="{i[2]}" symbol_id="{i[1]}"/></xaif:VariableReference></xaif:Index></xaif:IndexTriplet>'
            elif i[0] == "s": trips += f'<xaif:IndexTriplet><xaif:Index><xaif:Constant vertex_id="1" type="integer" value="{i[1]}"/></xaif:Index><xaif:Bound><xaif:Constant vertex_id="1" type="integer" value="{i[2]}"/></xaif:Bound></xaif:IndexTriplet>'
        return s + f'<xaif:ArrayElementReference vertex_id="2">{trips}</xaif:ArrayElementReference><xaif:VariableReferenceEdge edge_id="1" source="1" target="2"/>'
    def vr(self, vid): return f'<xaif:VariableReference vertex_id="{vid}">{self.body()}</xaif:VariableReference>'
class E:  # expression tree
    def __init__(self, op, *args): self.op, self.args = op, args
def const(v, ty="real"): return ("const", v, ty)
def expr(e):
    verts, edges = [], []
    def go(e):
        vid = len(verts) + 1
        if isinstance(e, R): verts.append(e.vr(vid))
        elif isinstance(e, tuple): verts.append(f'<xaif:Constant vertex_id="{vid}" type="{e[2]}" value="{e[1]}"/>')
        else:
            verts.append(f'<xaif:Intrinsic vertex_id="{vid}" name="{e.op}"/>')
            for pos, a in enumerate(e.args, 1):
                c = go(a); edges.append(f'<xaif:ExpressionEdge edge_id="{len(edges)+1}" source="{c}" target="{vid}" position="{pos}"/>')
        return vid
    go(e)
    return "".join(verts) + "".join(edges)
def assign(sid, lhs, rhs):
    return f'<xaif:Assignment statement_id="{sid}"><xaif:AssignmentLHS>{lhs.body()}</xaif:AssignmentLHS><xaif:AssignmentRHS>{expr(rhs)}</xaif:AssignmentRHS></xaif:Assignment>'
def call(sid, callee, args, scope="1"):
    out = f'<xaif:SubroutineCall statement_id="{sid}" symbol_id="{callee}" scope_id="{scope}" formalArgCount="{len(args)}">'
    for p, a in enumerate(args, 1):
        body = a.vr(1) if isinstance(a, R) else f'<xaif:Constant vertex_id="1" type="{a[2]}" value="{a[1]}"/>'
        out += f'<xaif:Argument position="{p}">{body}</xaif:Argument>'
    return out + '</xaif:SubroutineCall>'
def se(kind, refs):
    return f'<xaif:{kind}>' + "".join(f'<xaif:SideEffectReference>{r.body()}</xaif:SideEffectReference>' for r in refs) + f'</xaif:{kind}>'
def cfg(vid, name, scope, args, blocks, mod=None):
    out = f'<xaif:ControlFlowGraph vertex_id="{vid}" scope_id="1" symbol_id="{name}" controlflowgraph_scope_id="{scope}">\n'
    out += '<xaif:ArgumentList>' + "".join(f'<xaif:ArgumentSymbolReference position="{p}" scope_id="{scope}" symbol_id="{n}" intent="{i}"/>' for p, (n, i) in enumerate(args, 1)) + '</xaif:ArgumentList>\n'
    if mod is not None: out += se("Mod", mod) + "\n"
    out += '<xaif:Entry vertex_id="1"/>\n'
    for k, stmts in enumerate(blocks):
        out += f'<xaif:BasicBlock vertex_id="{k+2}" scope_id="{scope}">\n' + "\n".join(stmts) + '\n</xaif:BasicBlock>\n'
    n = len(blocks) + 2
    out += f'<xaif:Exit vertex_id="{n}"/>\n'
    for k in range(1, n):
        out += f'<xaif:ControlFlowEdge edge_id="{k}" source="{k}" target="{k+1}"/>\n'
    return out + '</xaif:ControlFlowGraph>\n'
def doc(name, comment, scopes, cfgs):
    out = f'<?xml version="1.0" encoding="UTF-8"?>\n<!-- {comment} -->\n'
    out += f'<xaif:CallGraph xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xaif="http://www.mcs.anl.gov/XAIF" xsi:schemaLocation="http://www.mcs.anl.gov/XAIF xaif.xsd" program_name="{name}" prefix="OpenAD_">\n<xaif:ScopeHierarchy>\n'
    for vid, syms in scopes:
        out += f'<xaif:Scope vertex_id="{vid}"><xaif:SymbolTable>\n' + "\n".join(syms) + '\n</xaif:SymbolTable></xaif:Scope>\n'
    for k, (vid, _) in enumerate(scopes[1:], 1):
        out += f'<xaif:ScopeEdge edge_id="{k}" source="{vid}" target="1"/>\n'
    out += '</xaif:ScopeHierarchy>\n<xaif:AliasSetMap><xaif:AliasSet key="0"/></xaif:AliasSetMap>\n<xaif:DUUDSetMap><xaif:StmtIdSet key="0"/></xaif:DUUDSetMap>\n<xaif:DOSetMap><xaif:StmtIdSet key="0"/></xaif:DOSetMap>\n'
    return out + "".join(cfgs) + '</xaif:CallGraph>\n'
