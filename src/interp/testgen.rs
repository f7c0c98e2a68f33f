//! Small random-program material for tests: a straight-line and loop program model that
//! prints itself as XAIF (a routine `head(X, Y)` with real vector arguments, real temporaries
//! and counted `ForLoop`s) and evaluates itself directly in Rust, so tests can check the
//! executor, and later the transformations, against an independent evaluation.
//!
//! The proptest strategies that build these programs live with the tests
//! (`tests/interp_support/mod.rs`); this module has no test-only dependencies.

use std::fmt::Write as _;

/// A real expression over inputs `X(i)`, temporaries `T_k` and constants.
#[derive(Clone, Debug)]
pub enum GenExpr {
    X(usize),
    T(usize),
    Const(f64),
    /// A unary intrinsic: `sin_scal`, `cos_scal`, `exp_scal`, `minus_scal`, `tanh_scal`.
    Unary(&'static str, Box<GenExpr>),
    /// A binary intrinsic: `add_scal_scal`, `sub_scal_scal`, `mul_scal_scal`.
    Binary(&'static str, Box<GenExpr>, Box<GenExpr>),
}

#[derive(Clone, Copy, Debug)]
pub enum GenVar {
    Y(usize),
    T(usize),
}

#[derive(Clone, Debug)]
pub enum GenStmt {
    Assign(GenVar, GenExpr),
    /// `do i = 1, trips` around the body.
    Loop(i64, Vec<GenStmt>),
}

#[derive(Clone, Debug)]
pub struct GenProgram {
    pub n: usize,
    pub m: usize,
    pub temps: usize,
    pub body: Vec<GenStmt>,
}

fn unary(name: &str, v: f64) -> f64 {
    match name {
        "sin_scal" => v.sin(),
        "cos_scal" => v.cos(),
        "exp_scal" => v.exp(),
        "minus_scal" => -v,
        "tanh_scal" => v.tanh(),
        other => panic!("generator has no unary {other}"),
    }
}

fn binary(name: &str, a: f64, b: f64) -> f64 {
    match name {
        "add_scal_scal" => a + b,
        "sub_scal_scal" => a - b,
        "mul_scal_scal" => a * b,
        other => panic!("generator has no binary {other}"),
    }
}

struct State<'a> {
    x: &'a [f64],
    y: Vec<f64>,
    t: Vec<f64>,
}

impl GenExpr {
    fn eval(&self, s: &State<'_>) -> f64 {
        match self {
            GenExpr::X(i) => s.x[*i],
            GenExpr::T(k) => s.t[*k],
            GenExpr::Const(c) => *c,
            GenExpr::Unary(op, a) => unary(op, a.eval(s)),
            GenExpr::Binary(op, a, b) => binary(op, a.eval(s), b.eval(s)),
        }
    }
}

fn run(stmts: &[GenStmt], s: &mut State<'_>) {
    for stmt in stmts {
        match stmt {
            GenStmt::Assign(var, e) => {
                let v = e.eval(s);
                match var {
                    GenVar::Y(i) => s.y[*i] = v,
                    GenVar::T(k) => s.t[*k] = v,
                }
            }
            GenStmt::Loop(trips, body) => {
                for _ in 0..*trips {
                    run(body, s);
                }
            }
        }
    }
}

/// Builds the XAIF text: vertex and edge ids are counters.
struct Printer {
    out: String,
    vertices: String,
    edges: Vec<(usize, usize, Option<i64>)>,
    next_vertex: usize,
    next_stmt: usize,
}

impl Printer {
    fn vertex(&mut self) -> usize {
        self.next_vertex += 1;
        self.next_vertex
    }

    fn stmt_id(&mut self) -> usize {
        self.next_stmt += 1;
        self.next_stmt
    }

    fn var_ref(var: &str, index: Option<usize>) -> String {
        match index {
            None => format!("<xaif:SymbolReference vertex_id=\"1\" scope_id=\"2\" symbol_id=\"{var}\"/>"),
            Some(i) => format!(
                "<xaif:SymbolReference vertex_id=\"1\" scope_id=\"2\" symbol_id=\"{var}\"/>\
<xaif:ArrayElementReference vertex_id=\"2\"><xaif:IndexTriplet><xaif:Index>\
<xaif:Constant vertex_id=\"1\" type=\"integer\" value=\"{}\"/></xaif:Index></xaif:IndexTriplet>\
</xaif:ArrayElementReference><xaif:VariableReferenceEdge edge_id=\"1\" source=\"1\" target=\"2\"/>",
                i + 1
            ),
        }
    }

    fn gen_var(var: GenVar) -> String {
        match var {
            GenVar::Y(i) => Self::var_ref("Y", Some(i)),
            GenVar::T(k) => Self::var_ref(&format!("T_{k}"), None),
        }
    }

    /// Prints `e` as expression vertices; returns the vertex id of its root.
    fn expr(e: &GenExpr, out: &mut String, next: &mut usize, edges: &mut Vec<(usize, usize, usize)>) -> usize {
        *next += 1;
        let id = *next;
        match e {
            GenExpr::X(i) => {
                let _ = write!(
                    out,
                    "<xaif:VariableReference vertex_id=\"{id}\">{}</xaif:VariableReference>",
                    Self::var_ref("X", Some(*i))
                );
            }
            GenExpr::T(k) => {
                let _ = write!(
                    out,
                    "<xaif:VariableReference vertex_id=\"{id}\">{}</xaif:VariableReference>",
                    Self::var_ref(&format!("T_{k}"), None)
                );
            }
            GenExpr::Const(c) => {
                let _ = write!(out, "<xaif:Constant vertex_id=\"{id}\" type=\"real\" value=\"{c:e}\"/>");
            }
            GenExpr::Unary(op, a) => {
                let _ = write!(out, "<xaif:Intrinsic vertex_id=\"{id}\" name=\"{op}\"/>");
                let a = Self::expr(a, out, next, edges);
                edges.push((a, id, 1));
            }
            GenExpr::Binary(op, a, b) => {
                let _ = write!(out, "<xaif:Intrinsic vertex_id=\"{id}\" name=\"{op}\"/>");
                let a = Self::expr(a, out, next, edges);
                let b = Self::expr(b, out, next, edges);
                edges.push((a, id, 1));
                edges.push((b, id, 2));
            }
        }
        id
    }

    fn assignment(&mut self, lhs: &str, rhs: &GenExpr) -> String {
        let mut body = String::new();
        let mut edges = Vec::new();
        let mut next = 0;
        Self::expr(rhs, &mut body, &mut next, &mut edges);
        for (k, (s, t, p)) in edges.iter().enumerate() {
            let _ = write!(
                body,
                "<xaif:ExpressionEdge edge_id=\"{}\" source=\"{s}\" target=\"{t}\" position=\"{p}\"/>",
                k + 1
            );
        }
        format!("<xaif:AssignmentLHS>{lhs}</xaif:AssignmentLHS><xaif:AssignmentRHS>{body}</xaif:AssignmentRHS>")
    }

    /// Emits `stmts` between control flow vertices; returns (first, last) vertex.
    fn block(&mut self, stmts: &[GenStmt], depth: usize) -> (usize, usize) {
        let mut first = None;
        let mut last: Option<usize> = None;
        let mut pending: Vec<&GenStmt> = Vec::new();
        let link = |p: &mut Printer, first: &mut Option<usize>, last: &mut Option<usize>, a: usize, b: usize| {
            if first.is_none() {
                *first = Some(a);
            }
            if let Some(l) = *last {
                p.edges.push((l, a, None));
            }
            *last = Some(b);
        };
        let flush = |p: &mut Printer, pending: &mut Vec<&GenStmt>| -> Option<usize> {
            if pending.is_empty() {
                return None;
            }
            let v = p.vertex();
            let mut text = format!("<xaif:BasicBlock vertex_id=\"{v}\" scope_id=\"2\">");
            for s in pending.drain(..) {
                if let GenStmt::Assign(var, e) = s {
                    let id = p.stmt_id();
                    let a = p.assignment(&Printer::gen_var(*var), e);
                    let _ = write!(text, "<xaif:Assignment statement_id=\"{id}\">{a}</xaif:Assignment>");
                }
            }
            text.push_str("</xaif:BasicBlock>\n");
            p.vertices.push_str(&text);
            Some(v)
        };
        for stmt in stmts {
            match stmt {
                GenStmt::Assign(..) => pending.push(stmt),
                GenStmt::Loop(trips, body) => {
                    if let Some(v) = flush(self, &mut pending) {
                        link(self, &mut first, &mut last, v, v);
                    }
                    let header = self.vertex();
                    let counter = format!("I_{depth}");
                    let init_id = self.stmt_id();
                    let update_id = self.stmt_id();
                    let ivar = Self::var_ref(&counter, None);
                    let text = format!(
                        "<xaif:ForLoop vertex_id=\"{header}\" reversal=\"anonymous\">\
<xaif:Initialization statement_id=\"{init_id}\"><xaif:AssignmentLHS>{ivar}</xaif:AssignmentLHS>\
<xaif:AssignmentRHS><xaif:Constant vertex_id=\"1\" type=\"integer\" value=\"1\"/></xaif:AssignmentRHS></xaif:Initialization>\
<xaif:Condition><xaif:BooleanOperation vertex_id=\"1\" name=\"less_or_equal\"/>\
<xaif:VariableReference vertex_id=\"2\">{ivar}</xaif:VariableReference>\
<xaif:Constant vertex_id=\"3\" type=\"integer\" value=\"{trips}\"/>\
<xaif:ExpressionEdge edge_id=\"1\" source=\"2\" target=\"1\" position=\"1\"/>\
<xaif:ExpressionEdge edge_id=\"2\" source=\"3\" target=\"1\" position=\"2\"/></xaif:Condition>\
<xaif:Update statement_id=\"{update_id}\"><xaif:AssignmentLHS>{ivar}</xaif:AssignmentLHS><xaif:AssignmentRHS>\
<xaif:Intrinsic vertex_id=\"1\" name=\"add_scal_scal\"/>\
<xaif:VariableReference vertex_id=\"2\">{ivar}</xaif:VariableReference>\
<xaif:Constant vertex_id=\"3\" type=\"integer\" value=\"1\"/>\
<xaif:ExpressionEdge edge_id=\"1\" source=\"2\" target=\"1\" position=\"1\"/>\
<xaif:ExpressionEdge edge_id=\"2\" source=\"3\" target=\"1\" position=\"2\"/></xaif:AssignmentRHS></xaif:Update>\
</xaif:ForLoop>\n"
                    );
                    self.vertices.push_str(&text);
                    let (body_first, body_last) = if body.is_empty() {
                        let v = self.vertex();
                        let _ = writeln!(self.vertices, "<xaif:BasicBlock vertex_id=\"{v}\" scope_id=\"2\"/>");
                        (v, v)
                    } else {
                        self.block(body, depth + 1)
                    };
                    let end = self.vertex();
                    let _ = writeln!(self.vertices, "<xaif:EndLoop vertex_id=\"{end}\"/>");
                    self.edges.push((header, body_first, Some(1)));
                    self.edges.push((body_last, end, None));
                    self.edges.push((end, header, None));
                    // The exit edge leaves the header; `last` continues from it.
                    link(self, &mut first, &mut last, header, header);
                }
            }
        }
        if let Some(v) = flush(self, &mut pending) {
            link(self, &mut first, &mut last, v, v);
        }
        match (first, last) {
            (Some(f), Some(l)) => (f, l),
            _ => {
                let v = self.vertex();
                let _ = writeln!(self.vertices, "<xaif:BasicBlock vertex_id=\"{v}\" scope_id=\"2\"/>");
                (v, v)
            }
        }
    }
}

fn max_depth(stmts: &[GenStmt]) -> usize {
    stmts
        .iter()
        .map(|s| match s {
            GenStmt::Assign(..) => 0,
            GenStmt::Loop(_, body) => 1 + max_depth(body),
        })
        .max()
        .unwrap_or(0)
}

impl GenProgram {
    /// The outputs for inputs `x` (outputs start at zero).
    pub fn eval(&self, x: &[f64]) -> Vec<f64> {
        let mut s = State { x, y: vec![0.0; self.m], t: vec![0.0; self.temps] };
        run(&self.body, &mut s);
        s.y
    }

    /// The program as an XAIF document with one routine `head(X(n), Y(m))`.
    pub fn to_xaif(&self) -> String {
        let mut p =
            Printer { out: String::new(), vertices: String::new(), edges: Vec::new(), next_vertex: 0, next_stmt: 0 };
        let entry = p.vertex();
        let (first, last) = p.block(&self.body, 0);
        let exit = p.vertex();
        p.edges.push((entry, first, None));
        p.edges.push((last, exit, None));
        let mut symbols = format!(
            "<xaif:Symbol symbol_id=\"X\" kind=\"variable\" type=\"real\" shape=\"vector\" active=\"1\">\
<xaif:DimensionBounds lower=\"1\" upper=\"{}\"/></xaif:Symbol>\n\
<xaif:Symbol symbol_id=\"Y\" kind=\"variable\" type=\"real\" shape=\"vector\" active=\"1\">\
<xaif:DimensionBounds lower=\"1\" upper=\"{}\"/></xaif:Symbol>\n",
            self.n, self.m
        );
        for k in 0..self.temps {
            let _ = writeln!(
                symbols,
                "<xaif:Symbol symbol_id=\"T_{k}\" kind=\"variable\" type=\"real\" shape=\"scalar\" active=\"1\"/>"
            );
        }
        for d in 0..max_depth(&self.body) {
            let _ = writeln!(
                symbols,
                "<xaif:Symbol symbol_id=\"I_{d}\" kind=\"variable\" type=\"integer\" shape=\"scalar\" active=\"0\"/>"
            );
        }
        let out = &mut p.out;
        let _ = write!(
            out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<xaif:CallGraph xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xmlns:xaif=\"http://www.mcs.anl.gov/XAIF\" \
xsi:schemaLocation=\"http://www.mcs.anl.gov/XAIF xaif.xsd\" program_name=\"generated\" prefix=\"OpenAD_\">\n\
<xaif:ScopeHierarchy>\n<xaif:Scope vertex_id=\"1\"><xaif:SymbolTable>\n\
<xaif:Symbol symbol_id=\"head\" kind=\"subroutine\" type=\"void\"/>\n</xaif:SymbolTable></xaif:Scope>\n\
<xaif:Scope vertex_id=\"2\"><xaif:SymbolTable>\n{symbols}</xaif:SymbolTable></xaif:Scope>\n\
<xaif:ScopeEdge edge_id=\"1\" source=\"2\" target=\"1\"/>\n</xaif:ScopeHierarchy>\n\
<xaif:AliasSetMap><xaif:AliasSet key=\"0\"/></xaif:AliasSetMap>\n\
<xaif:DUUDSetMap><xaif:StmtIdSet key=\"0\"/></xaif:DUUDSetMap>\n\
<xaif:DOSetMap><xaif:StmtIdSet key=\"0\"/></xaif:DOSetMap>\n\
<xaif:ControlFlowGraph vertex_id=\"1\" scope_id=\"1\" symbol_id=\"head\" controlflowgraph_scope_id=\"2\">\n\
<xaif:ArgumentList>\
<xaif:ArgumentSymbolReference position=\"1\" scope_id=\"2\" symbol_id=\"X\" intent=\"in\"/>\
<xaif:ArgumentSymbolReference position=\"2\" scope_id=\"2\" symbol_id=\"Y\" intent=\"inout\"/>\
</xaif:ArgumentList>\n<xaif:Entry vertex_id=\"{entry}\"/>\n"
        );
        out.push_str(&p.vertices);
        let _ = writeln!(out, "<xaif:Exit vertex_id=\"{exit}\"/>");
        for (k, (s, t, v)) in p.edges.iter().enumerate() {
            let cond = match v {
                Some(v) => format!(" has_condition_value=\"true\" condition_value=\"{v}\""),
                None => String::new(),
            };
            let _ = writeln!(out, "<xaif:ControlFlowEdge edge_id=\"{}\" source=\"{s}\" target=\"{t}\"{cond}/>", k + 1);
        }
        out.push_str("</xaif:ControlFlowGraph>\n</xaif:CallGraph>\n");
        p.out
    }
}
