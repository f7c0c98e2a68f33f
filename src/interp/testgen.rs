//! Random-program material for tests: a program model that prints itself as XAIF and
//! evaluates itself directly in Rust, so tests can check the executor and the transformations
//! against an independent evaluation.
//!
//! A program is a routine `head(X(1:n), Y(1:m))` with active real temporaries `T_k`, passive
//! reals `P_k` set to constants on entry, counted `ForLoop`s with counters `I_d` (`d` the loop
//! depth), two-way `Branch`es on `expr > 0`, array elements subscripted by a constant or by an
//! enclosing loop's counter (`X(I_d + c)`), and calls of an optional second routine
//! `sub(A(1:n), B, C)`. The callee's body is built from the same statements (no calls) over its
//! formals and its active locals `S_k`; `C` is only read, so a passive `P_k` may be passed for it
//! (the conversions of TypeChange). Both routines carry intents and `ModLocal`/`Mod`/
//! `ReadLocal`/`Read` lists computed from their bodies, as the front end writes them: formals
//! only, the `…Local` lists without what calls do.
//!
//! A raw program from a strategy is made well-formed by [`GenProgram::fit`] (subscripts within
//! bounds, call arguments not aliased); [`GenProgram::branches_stable_at`] tells whether
//! finite differences at a point would straddle a branch switch, so a test can stay away. The proptest strategies live with the tests (`tests/interp_support/mod.rs`);
//! this module has no test-only dependencies.

use std::collections::BTreeSet;
use std::fmt::Write as _;

/// An array: `head`'s inputs `X(1:n)` and outputs `Y(1:m)`, `sub`'s formal `A(1:n)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenArray {
    X,
    Y,
    A,
}

/// A subscript: a constant element (0-based) or `I_depth + offset`, the counter of an
/// enclosing loop (`depth` 0 the outermost) plus a non-negative offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenIndex {
    Const(usize),
    Loop { depth: usize, offset: usize },
}

/// A real scalar: the routine's active temporary (`T_k` in `head`, `S_k` in `sub`), `sub`'s
/// formals `B` and `C`, `head`'s passive `P_k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenScalar {
    T(usize),
    B,
    C,
    P(usize),
}

/// A real variable reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenVar {
    Elem(GenArray, GenIndex),
    Scalar(GenScalar),
}

/// A real expression.
#[derive(Clone, Debug)]
pub enum GenExpr {
    Var(GenVar),
    Const(f64),
    /// A unary intrinsic: `sin_scal`, `cos_scal`, `exp_scal`, `minus_scal`, `tanh_scal`.
    Unary(&'static str, Box<GenExpr>),
    /// A binary intrinsic: `add_scal_scal`, `sub_scal_scal`, `mul_scal_scal`.
    Binary(&'static str, Box<GenExpr>, Box<GenExpr>),
}

/// The actual argument for `sub`'s read-only formal `C`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GenArg {
    Var(GenVar),
    Const(f64),
}

#[derive(Clone, Debug)]
pub enum GenStmt {
    Assign(GenVar, GenExpr),
    /// `do I_d = 1, trips` around the body.
    Loop(i64, Vec<GenStmt>),
    /// `if (condition > 0) then … else … endif`.
    If(GenExpr, Vec<GenStmt>, Vec<GenStmt>),
    /// `call sub(array, b, c)`: the whole array for `A`, a scalar or element for `B`.
    Call {
        array: GenArray,
        b: GenVar,
        c: GenArg,
    },
}

/// The callee `sub(A(1:n), B, C)`: `locals` active temporaries `S_k` and its statements.
#[derive(Clone, Debug)]
pub struct GenSub {
    pub locals: usize,
    pub body: Vec<GenStmt>,
}

#[derive(Clone, Debug)]
pub struct GenProgram {
    pub n: usize,
    pub m: usize,
    pub temps: usize,
    /// Head's passive reals `P_k`, set to these constants before the body.
    pub passive: Vec<f64>,
    pub body: Vec<GenStmt>,
    pub sub: Option<GenSub>,
}

/// What one evaluation gave: the outputs, the way every executed branch went, in order, and
/// the largest magnitude any operation's result took (a value so large that rounding it
/// swallows what a finite-difference step changes leaves the differences unable to judge
/// derivatives downstream of it).
#[derive(Clone, Debug)]
pub struct Trace {
    pub y: Vec<f64>,
    pub decisions: Vec<bool>,
    pub peak: f64,
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

// ---------------------------------------------------------------------------------------------
// Evaluation

/// One routine activation. Arguments are copied in and out: [`GenProgram::fit`] keeps call
/// arguments from aliasing, so this is what passing by reference does.
struct Frame {
    /// `X`, `Y`, `A` by [`GenArray`] discriminant (the other routine's stay empty).
    arrays: [Vec<f64>; 3],
    t: Vec<f64>,
    p: Vec<f64>,
    b: f64,
    c: f64,
    /// The counters of the enclosing loops, outermost first.
    counters: Vec<i64>,
}

impl Frame {
    fn element(&self, index: GenIndex) -> usize {
        match index {
            GenIndex::Const(i) => i,
            GenIndex::Loop { depth, offset } => (self.counters[depth] - 1) as usize + offset,
        }
    }

    fn get(&self, var: GenVar) -> f64 {
        match var {
            GenVar::Elem(array, index) => self.arrays[array as usize][self.element(index)],
            GenVar::Scalar(GenScalar::T(k)) => self.t[k],
            GenVar::Scalar(GenScalar::B) => self.b,
            GenVar::Scalar(GenScalar::C) => self.c,
            GenVar::Scalar(GenScalar::P(k)) => self.p[k],
        }
    }

    fn set(&mut self, var: GenVar, value: f64) {
        match var {
            GenVar::Elem(array, index) => {
                let i = self.element(index);
                self.arrays[array as usize][i] = value;
            }
            GenVar::Scalar(GenScalar::T(k)) => self.t[k] = value,
            GenVar::Scalar(GenScalar::B) => self.b = value,
            GenVar::Scalar(GenScalar::C) => self.c = value,
            GenVar::Scalar(GenScalar::P(k)) => self.p[k] = value,
        }
    }
}

struct Evaluation<'p> {
    /// The length of `sub`'s `A`.
    n: usize,
    sub: Option<&'p GenSub>,
    decisions: Vec<bool>,
    /// See [`Trace::peak`] (NaN counts as infinitely large).
    peak: f64,
}

impl Evaluation<'_> {
    fn expr(&mut self, frame: &Frame, e: &GenExpr) -> f64 {
        let value = match e {
            GenExpr::Var(v) => frame.get(*v),
            GenExpr::Const(c) => *c,
            GenExpr::Unary(op, a) => {
                let a = self.expr(frame, a);
                unary(op, a)
            }
            GenExpr::Binary(op, a, b) => {
                let (a, b) = (self.expr(frame, a), self.expr(frame, b));
                binary(op, a, b)
            }
        };
        self.peak = if value.is_nan() { f64::INFINITY } else { self.peak.max(value.abs()) };
        value
    }

    fn run(&mut self, stmts: &[GenStmt], frame: &mut Frame) {
        for stmt in stmts {
            match stmt {
                GenStmt::Assign(var, e) => {
                    let v = self.expr(frame, e);
                    frame.set(*var, v);
                }
                GenStmt::Loop(trips, body) => {
                    frame.counters.push(0);
                    for i in 1..=*trips {
                        *frame.counters.last_mut().expect("pushed above") = i;
                        self.run(body, frame);
                    }
                    frame.counters.pop();
                }
                GenStmt::If(condition, then, otherwise) => {
                    let taken = self.expr(frame, condition) > 0.0;
                    self.decisions.push(taken);
                    self.run(if taken { then } else { otherwise }, frame);
                }
                GenStmt::Call { array, b, c } => {
                    let sub = self.sub.expect("GenProgram::fit leaves no call without a callee");
                    let n = self.n;
                    let mut callee = Frame {
                        arrays: [Vec::new(), Vec::new(), frame.arrays[*array as usize][..n].to_vec()],
                        t: vec![0.0; sub.locals],
                        p: Vec::new(),
                        b: frame.get(*b),
                        c: match c {
                            GenArg::Var(v) => frame.get(*v),
                            GenArg::Const(c) => *c,
                        },
                        counters: Vec::new(),
                    };
                    self.run(&sub.body, &mut callee);
                    frame.arrays[*array as usize][..n].copy_from_slice(&callee.arrays[GenArray::A as usize]);
                    frame.set(*b, callee.b);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Well-formedness

/// A formal argument, in the order the side-effect lists name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Formal {
    X,
    Y,
    A,
    B,
    C,
}

impl Formal {
    fn of_array(array: GenArray) -> Formal {
        match array {
            GenArray::X => Formal::X,
            GenArray::Y => Formal::Y,
            GenArray::A => Formal::A,
        }
    }

    fn of(var: GenVar) -> Option<Formal> {
        match var {
            GenVar::Elem(array, _) => Some(Formal::of_array(array)),
            GenVar::Scalar(GenScalar::B) => Some(Formal::B),
            GenVar::Scalar(GenScalar::C) => Some(Formal::C),
            GenVar::Scalar(GenScalar::T(_) | GenScalar::P(_)) => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Formal::X => "X",
            Formal::Y => "Y",
            Formal::A => "A",
            Formal::B => "B",
            Formal::C => "C",
        }
    }
}

/// The formals a routine reads and modifies: by its own statements (`…_local`), and with what
/// its calls do.
#[derive(Clone, Debug, Default)]
struct SideEffects {
    mod_local: BTreeSet<Formal>,
    modified: BTreeSet<Formal>,
    read_local: BTreeSet<Formal>,
    read: BTreeSet<Formal>,
}

impl SideEffects {
    fn reads(&mut self, e: &GenExpr) {
        match e {
            GenExpr::Var(v) => {
                if let Some(f) = Formal::of(*v) {
                    self.read_local.insert(f);
                    self.read.insert(f);
                }
            }
            GenExpr::Const(_) => {}
            GenExpr::Unary(_, a) => self.reads(a),
            GenExpr::Binary(_, a, b) => {
                self.reads(a);
                self.reads(b);
            }
        }
    }

    fn collect(&mut self, stmts: &[GenStmt], callee: Option<&SideEffects>) {
        for stmt in stmts {
            match stmt {
                GenStmt::Assign(var, e) => {
                    if let Some(f) = Formal::of(*var) {
                        self.mod_local.insert(f);
                        self.modified.insert(f);
                    }
                    self.reads(e);
                }
                GenStmt::Loop(_, body) => self.collect(body, callee),
                GenStmt::If(condition, then, otherwise) => {
                    self.reads(condition);
                    self.collect(then, callee);
                    self.collect(otherwise, callee);
                }
                GenStmt::Call { array, b, c } => {
                    let Some(callee) = callee else { continue };
                    let c = match c {
                        GenArg::Var(v) => Formal::of(*v),
                        GenArg::Const(_) => None,
                    };
                    let actuals =
                        [(Formal::A, Some(Formal::of_array(*array))), (Formal::B, Formal::of(*b)), (Formal::C, c)];
                    for (formal, actual) in actuals {
                        let Some(actual) = actual else { continue };
                        if callee.read.contains(&formal) {
                            self.read.insert(actual);
                        }
                        if callee.modified.contains(&formal) {
                            self.modified.insert(actual);
                        }
                    }
                }
            }
        }
    }
}

/// What [`fit_block`] keeps statements to.
struct FitContext<'a> {
    n: usize,
    m: usize,
    /// What the callee does to its formals; `None` where no call may be (no callee, or in it).
    callee: Option<&'a SideEffects>,
}

impl FitContext<'_> {
    fn len(&self, array: GenArray) -> usize {
        match array {
            GenArray::X | GenArray::A => self.n,
            GenArray::Y => self.m,
        }
    }

    /// A subscript of `array` that stays in bounds inside `loops` (the enclosing loops' trip
    /// counts): another enclosing loop, or a constant, where the chosen loop runs too far.
    fn index(&self, array: GenArray, index: GenIndex, loops: &[i64]) -> GenIndex {
        let len = self.len(array);
        match index {
            GenIndex::Const(i) => GenIndex::Const(i % len),
            GenIndex::Loop { depth, offset } => {
                for step in 0..loops.len() {
                    let d = (depth + step) % loops.len();
                    let trips = loops[d].max(1) as usize;
                    if trips <= len {
                        return GenIndex::Loop { depth: d, offset: offset % (len - trips + 1) };
                    }
                }
                GenIndex::Const((depth + offset) % len)
            }
        }
    }

    fn var(&self, var: &mut GenVar, loops: &[i64]) {
        if let GenVar::Elem(array, index) = var {
            *index = self.index(*array, *index, loops);
        }
    }

    fn expr(&self, e: &mut GenExpr, loops: &[i64]) {
        match e {
            GenExpr::Var(v) => self.var(v, loops),
            GenExpr::Const(_) => {}
            GenExpr::Unary(_, a) => self.expr(a, loops),
            GenExpr::Binary(_, a, b) => {
                self.expr(a, loops);
                self.expr(b, loops);
            }
        }
    }
}

fn other_array(array: GenArray) -> GenArray {
    match array {
        GenArray::X => GenArray::Y,
        GenArray::Y | GenArray::A => GenArray::X,
    }
}

fn fit_block(stmts: &mut Vec<GenStmt>, cx: &FitContext<'_>, loops: &mut Vec<i64>) {
    stmts.retain(|s| !matches!(s, GenStmt::Call { .. }) || cx.callee.is_some());
    for stmt in stmts {
        match stmt {
            GenStmt::Assign(var, e) => {
                cx.var(var, loops);
                cx.expr(e, loops);
            }
            GenStmt::Loop(trips, body) => {
                loops.push(*trips);
                fit_block(body, cx, loops);
                loops.pop();
            }
            GenStmt::If(condition, then, otherwise) => {
                cx.expr(condition, loops);
                fit_block(then, cx, loops);
                fit_block(otherwise, cx, loops);
            }
            GenStmt::Call { array, b, c } => {
                let callee = cx.callee.expect("calls without a callee were dropped");
                // `A(1:n)` needs n elements.
                if cx.len(*array) < cx.n {
                    *array = GenArray::X;
                }
                // No argument may alias another one the callee modifies (Fortran's rule, and
                // what lets the evaluator copy arguments in and out): `B` is taken from the
                // other array than `A`'s, `C` from neither `B`'s array or scalar nor, if the
                // callee writes `A`, `A`'s array.
                if let GenVar::Elem(b_array, index) = *b
                    && b_array == *array
                {
                    *b = GenVar::Elem(other_array(b_array), index);
                }
                cx.var(b, loops);
                if let GenArg::Var(v) = *c {
                    let same_as_b = match (v, *b) {
                        (GenVar::Elem(p, _), GenVar::Elem(q, _)) => p == q,
                        (p, q) => p == q,
                    };
                    let in_written_a =
                        matches!(v, GenVar::Elem(p, _) if p == *array) && callee.modified.contains(&Formal::A);
                    if same_as_b || in_written_a {
                        *c = GenArg::Const(0.5);
                    }
                }
                if let GenArg::Var(v) = c {
                    cx.var(v, loops);
                }
            }
        }
    }
}

fn max_depth(stmts: &[GenStmt]) -> usize {
    stmts
        .iter()
        .map(|s| match s {
            GenStmt::Assign(..) | GenStmt::Call { .. } => 0,
            GenStmt::Loop(_, body) => 1 + max_depth(body),
            GenStmt::If(_, then, otherwise) => max_depth(then).max(max_depth(otherwise)),
        })
        .max()
        .unwrap_or(0)
}

impl GenSub {
    fn side_effects(&self) -> SideEffects {
        let mut effects = SideEffects::default();
        effects.collect(&self.body, None);
        effects
    }
}

// ---------------------------------------------------------------------------------------------
// Printing

/// Prints one routine's control flow graph; vertex and edge ids are counters.
struct Printer {
    scope: usize,
    /// `T` in `head`, `S` in `sub`.
    temp_prefix: &'static str,
    vertices: String,
    edges: Vec<(usize, usize, Option<i64>)>,
    next_vertex: usize,
    /// Statement ids are unique in the document.
    next_stmt: usize,
}

impl Printer {
    fn new(scope: usize, temp_prefix: &'static str, next_stmt: usize) -> Printer {
        Printer { scope, temp_prefix, vertices: String::new(), edges: Vec::new(), next_vertex: 0, next_stmt }
    }

    fn vertex(&mut self) -> usize {
        self.next_vertex += 1;
        self.next_vertex
    }

    fn stmt_id(&mut self) -> usize {
        self.next_stmt += 1;
        self.next_stmt
    }

    fn symbol(&self, name: &str) -> String {
        format!("<xaif:SymbolReference vertex_id=\"1\" scope_id=\"{}\" symbol_id=\"{name}\"/>", self.scope)
    }

    fn scalar_name(&self, s: GenScalar) -> String {
        match s {
            GenScalar::T(k) => format!("{}_{k}", self.temp_prefix),
            GenScalar::B => "B".into(),
            GenScalar::C => "C".into(),
            GenScalar::P(k) => format!("P_{k}"),
        }
    }

    /// The expression inside `<xaif:Index>`.
    fn index(&self, index: GenIndex) -> String {
        match index {
            GenIndex::Const(i) => format!("<xaif:Constant vertex_id=\"1\" type=\"integer\" value=\"{}\"/>", i + 1),
            GenIndex::Loop { depth, offset: 0 } => {
                format!(
                    "<xaif:VariableReference vertex_id=\"1\">{}</xaif:VariableReference>",
                    self.symbol(&format!("I_{depth}"))
                )
            }
            GenIndex::Loop { depth, offset } => format!(
                "<xaif:Intrinsic vertex_id=\"1\" name=\"add_scal_scal\"/>\
<xaif:VariableReference vertex_id=\"2\">{}</xaif:VariableReference>\
<xaif:Constant vertex_id=\"3\" type=\"integer\" value=\"{offset}\"/>\
<xaif:ExpressionEdge edge_id=\"1\" source=\"2\" target=\"1\" position=\"1\"/>\
<xaif:ExpressionEdge edge_id=\"2\" source=\"3\" target=\"1\" position=\"2\"/>",
                self.symbol(&format!("I_{depth}"))
            ),
        }
    }

    /// The content of a `VariableReference` or `AssignmentLHS` naming `var`.
    fn var(&self, var: GenVar) -> String {
        match var {
            GenVar::Scalar(s) => self.symbol(&self.scalar_name(s)),
            GenVar::Elem(array, index) => format!(
                "{}<xaif:ArrayElementReference vertex_id=\"2\"><xaif:IndexTriplet><xaif:Index>{}</xaif:Index>\
</xaif:IndexTriplet></xaif:ArrayElementReference><xaif:VariableReferenceEdge edge_id=\"1\" source=\"1\" target=\"2\"/>",
                self.symbol(Formal::of_array(array).name()),
                self.index(index)
            ),
        }
    }

    /// Prints `e` as expression vertices numbered after `next`; returns its root's id.
    fn expr(&self, e: &GenExpr, out: &mut String, next: &mut usize, edges: &mut Vec<(usize, usize, usize)>) -> usize {
        *next += 1;
        let id = *next;
        match e {
            GenExpr::Var(v) => {
                let _ =
                    write!(out, "<xaif:VariableReference vertex_id=\"{id}\">{}</xaif:VariableReference>", self.var(*v));
            }
            GenExpr::Const(c) => {
                let _ = write!(out, "<xaif:Constant vertex_id=\"{id}\" type=\"real\" value=\"{c:e}\"/>");
            }
            GenExpr::Unary(op, a) => {
                let _ = write!(out, "<xaif:Intrinsic vertex_id=\"{id}\" name=\"{op}\"/>");
                let a = self.expr(a, out, next, edges);
                edges.push((a, id, 1));
            }
            GenExpr::Binary(op, a, b) => {
                let _ = write!(out, "<xaif:Intrinsic vertex_id=\"{id}\" name=\"{op}\"/>");
                let a = self.expr(a, out, next, edges);
                let b = self.expr(b, out, next, edges);
                edges.push((a, id, 1));
                edges.push((b, id, 2));
            }
        }
        id
    }

    fn expression_edges(out: &mut String, edges: &[(usize, usize, usize)]) {
        for (k, (s, t, p)) in edges.iter().enumerate() {
            let _ = write!(
                out,
                "<xaif:ExpressionEdge edge_id=\"{}\" source=\"{s}\" target=\"{t}\" position=\"{p}\"/>",
                k + 1
            );
        }
    }

    fn statement(&mut self, stmt: &GenStmt, out: &mut String) {
        let id = self.stmt_id();
        match stmt {
            GenStmt::Assign(var, rhs) => {
                let mut body = String::new();
                let mut edges = Vec::new();
                self.expr(rhs, &mut body, &mut 0, &mut edges);
                Self::expression_edges(&mut body, &edges);
                let _ = write!(
                    out,
                    "<xaif:Assignment statement_id=\"{id}\"><xaif:AssignmentLHS>{}</xaif:AssignmentLHS>\
<xaif:AssignmentRHS>{body}</xaif:AssignmentRHS></xaif:Assignment>",
                    self.var(*var)
                );
            }
            GenStmt::Call { array, b, c } => {
                let c = match c {
                    GenArg::Var(v) => {
                        format!("<xaif:VariableReference vertex_id=\"1\">{}</xaif:VariableReference>", self.var(*v))
                    }
                    GenArg::Const(c) => format!("<xaif:Constant vertex_id=\"1\" type=\"real\" value=\"{c:e}\"/>"),
                };
                let _ = write!(
                    out,
                    "<xaif:SubroutineCall statement_id=\"{id}\" scope_id=\"1\" symbol_id=\"sub\" formalArgCount=\"3\">\
<xaif:Argument position=\"1\"><xaif:VariableReference vertex_id=\"1\">{}</xaif:VariableReference></xaif:Argument>\
<xaif:Argument position=\"2\"><xaif:VariableReference vertex_id=\"1\">{}</xaif:VariableReference></xaif:Argument>\
<xaif:Argument position=\"3\">{c}</xaif:Argument></xaif:SubroutineCall>",
                    self.symbol(Formal::of_array(*array).name()),
                    self.var(*b)
                );
            }
            GenStmt::Loop(..) | GenStmt::If(..) => unreachable!("control flow is not a basic block statement"),
        }
    }

    fn empty_block(&mut self) -> usize {
        let v = self.vertex();
        let _ = writeln!(self.vertices, "<xaif:BasicBlock vertex_id=\"{v}\" scope_id=\"{}\"/>", self.scope);
        v
    }

    /// Emits the pending statements as one basic block, if there are any.
    fn flush(&mut self, pending: &mut Vec<&GenStmt>) -> Option<usize> {
        if pending.is_empty() {
            return None;
        }
        let v = self.vertex();
        let mut text = format!("<xaif:BasicBlock vertex_id=\"{v}\" scope_id=\"{}\">", self.scope);
        for s in pending.drain(..) {
            self.statement(s, &mut text);
        }
        text.push_str("</xaif:BasicBlock>\n");
        self.vertices.push_str(&text);
        Some(v)
    }

    fn for_loop(&mut self, trips: i64, depth: usize) -> usize {
        let header = self.vertex();
        let init_id = self.stmt_id();
        let update_id = self.stmt_id();
        let ivar = self.symbol(&format!("I_{depth}"));
        let _ = writeln!(
            self.vertices,
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
</xaif:ForLoop>"
        );
        header
    }

    /// A `Branch` on `condition > 0`, as the front end writes `if`.
    fn branch(&mut self, condition: &GenExpr) -> usize {
        let v = self.vertex();
        let mut text = String::new();
        let mut edges = Vec::new();
        // Vertex 1 is the comparison; the expression follows, then the constant 0.
        let mut next = 1;
        let root = self.expr(condition, &mut text, &mut next, &mut edges);
        let zero = next + 1;
        let _ = write!(text, "<xaif:Constant vertex_id=\"{zero}\" type=\"real\" value=\"0.0e0\"/>");
        edges.push((root, 1, 1));
        edges.push((zero, 1, 2));
        Self::expression_edges(&mut text, &edges);
        let _ = writeln!(
            self.vertices,
            "<xaif:Branch vertex_id=\"{v}\"><xaif:Condition><xaif:BooleanOperation vertex_id=\"1\" name=\"greater_than\"/>\
{text}</xaif:Condition></xaif:Branch>"
        );
        v
    }

    /// Emits `stmts` (inside `depth` loops) between control flow vertices; returns the first
    /// and the last vertex.
    fn block(&mut self, stmts: &[GenStmt], depth: usize) -> (usize, usize) {
        let mut first = None;
        let mut last: Option<usize> = None;
        let mut pending: Vec<&GenStmt> = Vec::new();
        // Appends the region from vertex `a` to vertex `b` to the chain.
        let link = |p: &mut Printer, first: &mut Option<usize>, last: &mut Option<usize>, a: usize, b: usize| {
            if first.is_none() {
                *first = Some(a);
            }
            if let Some(l) = *last {
                p.edges.push((l, a, None));
            }
            *last = Some(b);
        };
        for stmt in stmts {
            match stmt {
                GenStmt::Assign(..) | GenStmt::Call { .. } => pending.push(stmt),
                GenStmt::Loop(trips, body) => {
                    if let Some(v) = self.flush(&mut pending) {
                        link(self, &mut first, &mut last, v, v);
                    }
                    let header = self.for_loop(*trips, depth);
                    let (body_first, body_last) = self.block(body, depth + 1);
                    let end = self.vertex();
                    let _ = writeln!(self.vertices, "<xaif:EndLoop vertex_id=\"{end}\"/>");
                    self.edges.push((header, body_first, Some(1)));
                    self.edges.push((body_last, end, None));
                    self.edges.push((end, header, None));
                    // The exit edge leaves the header; the chain continues from it.
                    link(self, &mut first, &mut last, header, header);
                }
                GenStmt::If(condition, then, otherwise) => {
                    if let Some(v) = self.flush(&mut pending) {
                        link(self, &mut first, &mut last, v, v);
                    }
                    let branch = self.branch(condition);
                    let (then_first, then_last) = self.block(then, depth);
                    let (else_first, else_last) = self.block(otherwise, depth);
                    let end = self.vertex();
                    let _ = writeln!(self.vertices, "<xaif:EndBranch vertex_id=\"{end}\"/>");
                    self.edges.push((branch, then_first, Some(1)));
                    self.edges.push((branch, else_first, None));
                    self.edges.push((then_last, end, None));
                    self.edges.push((else_last, end, None));
                    link(self, &mut first, &mut last, branch, end);
                }
            }
        }
        if let Some(v) = self.flush(&mut pending) {
            link(self, &mut first, &mut last, v, v);
        }
        match (first, last) {
            (Some(f), Some(l)) => (f, l),
            _ => {
                let v = self.empty_block();
                (v, v)
            }
        }
    }

    fn side_effect_list(&self, out: &mut String, element: &str, formals: &BTreeSet<Formal>) {
        let _ = write!(out, "<xaif:{element}>");
        for f in formals {
            let _ = write!(
                out,
                "<xaif:SideEffectReference vertex_id=\"1\">{}</xaif:SideEffectReference>",
                self.symbol(f.name())
            );
        }
        let _ = writeln!(out, "</xaif:{element}>");
    }

    /// The routine's `ControlFlowGraph` element: `formals` are `(name, intent)` by position.
    fn routine(
        &mut self,
        (vertex, name): (usize, &str),
        formals: &[(&str, &str)],
        effects: &SideEffects,
        stmts: &[GenStmt],
    ) -> String {
        let mut out = format!(
            "<xaif:ControlFlowGraph vertex_id=\"{vertex}\" scope_id=\"1\" symbol_id=\"{name}\" controlflowgraph_scope_id=\"{}\">\n\
<xaif:ArgumentList>",
            self.scope
        );
        for (k, (formal, intent)) in formals.iter().enumerate() {
            let _ = write!(
                out,
                "<xaif:ArgumentSymbolReference position=\"{}\" scope_id=\"{}\" symbol_id=\"{formal}\" intent=\"{intent}\"/>",
                k + 1,
                self.scope
            );
        }
        out.push_str("</xaif:ArgumentList>\n");
        self.side_effect_list(&mut out, "ModLocal", &effects.mod_local);
        self.side_effect_list(&mut out, "Mod", &effects.modified);
        self.side_effect_list(&mut out, "ReadLocal", &effects.read_local);
        self.side_effect_list(&mut out, "Read", &effects.read);
        let entry = self.vertex();
        let (first, last) = self.block(stmts, 0);
        let exit = self.vertex();
        self.edges.push((entry, first, None));
        self.edges.push((last, exit, None));
        let _ = writeln!(out, "<xaif:Entry vertex_id=\"{entry}\"/>");
        out.push_str(&self.vertices);
        let _ = writeln!(out, "<xaif:Exit vertex_id=\"{exit}\"/>");
        for (k, (s, t, v)) in self.edges.iter().enumerate() {
            let cond = match v {
                Some(v) => format!(" has_condition_value=\"true\" condition_value=\"{v}\""),
                None => String::new(),
            };
            let _ = writeln!(out, "<xaif:ControlFlowEdge edge_id=\"{}\" source=\"{s}\" target=\"{t}\"{cond}/>", k + 1);
        }
        out.push_str("</xaif:ControlFlowGraph>\n");
        out
    }
}

fn symbol(out: &mut String, name: &str, active: bool, bounds: Option<usize>) {
    let shape = if bounds.is_some() { "vector" } else { "scalar" };
    let _ = write!(
        out,
        "<xaif:Symbol symbol_id=\"{name}\" kind=\"variable\" type=\"real\" shape=\"{shape}\" active=\"{}\"",
        u8::from(active)
    );
    match bounds {
        Some(upper) => {
            let _ = writeln!(out, "><xaif:DimensionBounds lower=\"1\" upper=\"{upper}\"/></xaif:Symbol>");
        }
        None => out.push_str("/>\n"),
    }
}

fn counters(out: &mut String, depth: usize) {
    for d in 0..depth {
        let _ = writeln!(
            out,
            "<xaif:Symbol symbol_id=\"I_{d}\" kind=\"variable\" type=\"integer\" shape=\"scalar\" active=\"0\"/>"
        );
    }
}

impl GenProgram {
    /// Makes a raw program well-formed: subscripts within bounds (a loop subscript outside a
    /// loop, or whose loop runs past the array's end, moves to another enclosing loop or
    /// becomes a constant), no calls without a callee or inside it, a call's `A` an array of
    /// at least `n` elements, and call arguments that do not alias what the callee modifies.
    pub fn fit(mut self) -> GenProgram {
        let sub_effects = self.sub.as_mut().map(|sub| {
            fit_block(&mut sub.body, &FitContext { n: self.n, m: self.m, callee: None }, &mut Vec::new());
            sub.side_effects()
        });
        let cx = FitContext { n: self.n, m: self.m, callee: sub_effects.as_ref() };
        fit_block(&mut self.body, &cx, &mut Vec::new());
        self
    }

    /// The verifier's default inputs, `x(i) = i/2`.
    pub fn test_point(&self) -> Vec<f64> {
        (1..=self.n).map(|i| i as f64 / 2.0).collect()
    }

    /// Runs the program on inputs `x` (outputs and temporaries start at zero).
    pub fn trace(&self, x: &[f64]) -> Trace {
        let mut frame = Frame {
            arrays: [x.to_vec(), vec![0.0; self.m], Vec::new()],
            t: vec![0.0; self.temps],
            p: self.passive.clone(),
            b: 0.0,
            c: 0.0,
            counters: Vec::new(),
        };
        let peak = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let mut evaluation = Evaluation { n: self.n, sub: self.sub.as_ref(), decisions: Vec::new(), peak };
        evaluation.run(&self.body, &mut frame);
        let [_, y, _] = frame.arrays;
        Trace { y, decisions: evaluation.decisions, peak: evaluation.peak }
    }

    /// Whether finite differences at `x` stay on `x`'s branches: every input moved alone by
    /// `±s·max(1, |x_j|)`, for the verifier's one-sided and central steps and a wider one
    /// (`s` = 1e-8, 6e-6, 1e-4), takes the same branches. A condition that does not depend on
    /// the inputs may sit at zero; one that does must not be near it.
    pub fn branches_stable_at(&self, x: &[f64]) -> bool {
        let at_x = self.trace(x).decisions;
        if at_x.is_empty() {
            return true;
        }
        (0..x.len()).all(|j| {
            [1e-8, 6e-6, 1e-4].iter().flat_map(|s| [*s, -*s]).all(|s| {
                let mut moved = x.to_vec();
                moved[j] += s * x[j].abs().max(1.0);
                self.trace(&moved).decisions == at_x
            })
        })
    }

    /// The outputs for inputs `x`.
    pub fn eval(&self, x: &[f64]) -> Vec<f64> {
        self.trace(x).y
    }

    /// The program as an XAIF document: `head(X(n), Y(m))`, and `sub(A(n), B, C)` if present.
    pub fn to_xaif(&self) -> String {
        let sub_effects = self.sub.as_ref().map(GenSub::side_effects);
        let mut head_effects = SideEffects::default();
        head_effects.collect(&self.body, sub_effects.as_ref());

        let mut head_symbols = String::new();
        symbol(&mut head_symbols, "X", true, Some(self.n));
        symbol(&mut head_symbols, "Y", true, Some(self.m));
        for k in 0..self.temps {
            symbol(&mut head_symbols, &format!("T_{k}"), true, None);
        }
        for k in 0..self.passive.len() {
            symbol(&mut head_symbols, &format!("P_{k}"), false, None);
        }
        counters(&mut head_symbols, max_depth(&self.body));
        let mut head_stmts: Vec<GenStmt> = self
            .passive
            .iter()
            .enumerate()
            .map(|(k, c)| GenStmt::Assign(GenVar::Scalar(GenScalar::P(k)), GenExpr::Const(*c)))
            .collect();
        head_stmts.extend(self.body.iter().cloned());
        let x_intent = if head_effects.modified.contains(&Formal::X) { "inout" } else { "in" };
        let mut head = Printer::new(2, "T", 0);
        let mut graphs = head.routine((1, "head"), &[("X", x_intent), ("Y", "inout")], &head_effects, &head_stmts);

        let mut scopes = format!(
            "<xaif:Scope vertex_id=\"2\"><xaif:SymbolTable>\n{head_symbols}</xaif:SymbolTable></xaif:Scope>\n\
<xaif:ScopeEdge edge_id=\"1\" source=\"2\" target=\"1\"/>\n"
        );
        let mut routines = String::from("<xaif:Symbol symbol_id=\"head\" kind=\"subroutine\" type=\"void\"/>\n");
        if let (Some(sub), Some(effects)) = (&self.sub, &sub_effects) {
            routines.push_str("<xaif:Symbol symbol_id=\"sub\" kind=\"subroutine\" type=\"void\"/>\n");
            let mut sub_symbols = String::new();
            symbol(&mut sub_symbols, "A", true, Some(self.n));
            symbol(&mut sub_symbols, "B", true, None);
            symbol(&mut sub_symbols, "C", true, None);
            for k in 0..sub.locals {
                symbol(&mut sub_symbols, &format!("S_{k}"), true, None);
            }
            counters(&mut sub_symbols, max_depth(&sub.body));
            let _ = write!(
                scopes,
                "<xaif:Scope vertex_id=\"3\"><xaif:SymbolTable>\n{sub_symbols}</xaif:SymbolTable></xaif:Scope>\n\
<xaif:ScopeEdge edge_id=\"2\" source=\"3\" target=\"1\"/>\n"
            );
            let a_intent = if effects.modified.contains(&Formal::A) { "inout" } else { "in" };
            // `B` is `intent(out)` only where the callee never reads it and surely sets it (a
            // top-level assignment: there is no early return).
            let b_set = sub.body.iter().any(|s| matches!(s, GenStmt::Assign(GenVar::Scalar(GenScalar::B), _)));
            let b_intent = match (effects.read.contains(&Formal::B), effects.modified.contains(&Formal::B)) {
                (_, false) => "in",
                (false, true) if b_set => "out",
                (_, true) => "inout",
            };
            let mut printer = Printer::new(3, "S", head.next_stmt);
            graphs.push_str(&printer.routine(
                (2, "sub"),
                &[("A", a_intent), ("B", b_intent), ("C", "in")],
                effects,
                &sub.body,
            ));
        }
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<xaif:CallGraph xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xmlns:xaif=\"http://www.mcs.anl.gov/XAIF\" \
xsi:schemaLocation=\"http://www.mcs.anl.gov/XAIF xaif.xsd\" program_name=\"generated\" prefix=\"OpenAD_\">\n\
<xaif:ScopeHierarchy>\n<xaif:Scope vertex_id=\"1\"><xaif:SymbolTable>\n{routines}</xaif:SymbolTable></xaif:Scope>\n\
{scopes}</xaif:ScopeHierarchy>\n\
<xaif:AliasSetMap><xaif:AliasSet key=\"0\"/></xaif:AliasSetMap>\n\
<xaif:DUUDSetMap><xaif:StmtIdSet key=\"0\"/></xaif:DUUDSetMap>\n\
<xaif:DOSetMap><xaif:StmtIdSet key=\"0\"/></xaif:DOSetMap>\n\
{graphs}</xaif:CallGraph>\n"
        )
    }
}
