//! Lowering of a [`CallGraph`] into the executor's program form.
//!
//! Executing the IR directly would hash names and scan edge lists at every step. Lowering
//! resolves, once per document: each symbol to a storage slot (a local slot of its routine or
//! a global slot), each expression graph to an operand tree, each intrinsic name to an
//! operation, each control flow graph to nodes with their successors, and each call to its
//! callee. What cannot be executed becomes an `Unsupported` node carrying the reason, which is
//! reported only if execution reaches it.

use rustc_hash::FxHashMap;

use crate::ir::{
    self, BooleanOp, CallGraph, CfgVertexKind, ConstantType, ExprVertex, ExprVertexId, FlowGraph, PropagatorEntry,
    Routine, Shape, Statement, SymbolId, SymbolType, VarRefVertex,
};

use super::intrinsics::{self, ArrayIntrinsic, Elemental, Resolved};
use super::memory::Value;

/// Where a symbol's binding is kept during execution.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Storage {
    /// A slot of the activation record of `routine`.
    Local { routine: usize, slot: u32 },
    /// Module variables, front-end globals and engine temporaries in global scopes.
    Global { slot: u32 },
}

#[derive(Clone, Debug)]
pub struct SymInfo {
    pub name: String,
    /// The `vertex_id` of the scope declaring it.
    pub scope: String,
    pub ty: SymbolType,
    pub rank: usize,
    /// Declared `(lower, upper)` bounds; `None` for an array declared without bounds
    /// (assumed shape or allocatable).
    pub bounds: Option<Vec<(i64, i64)>>,
    pub storage: Storage,
    /// The front end's activity: whether derivatives flow through the symbol.
    pub active: bool,
}

impl SymInfo {
    /// The initial value of a fresh variable, or `None` for a type the executor cannot hold.
    pub fn initial_value(&self) -> Option<Value> {
        match self.ty {
            SymbolType::Integer => Some(Value::Int(0)),
            SymbolType::Real => Some(Value::Real(0.0)),
            SymbolType::Bool => Some(Value::Bool(false)),
            SymbolType::Char | SymbolType::String => Some(Value::Str("".into())),
            SymbolType::Void | SymbolType::Complex | SymbolType::Opaque => None,
        }
    }
}

/// The lowered program.
#[derive(Debug)]
pub struct Program {
    pub routines: Vec<RoutineCode>,
    /// Indexed by the raw index of a [`SymbolId`].
    pub syms: Vec<SymInfo>,
    pub global_slots: u32,
    /// Markers by which the front end stands in for passive stores (`[passive: OPR_STID]`,
    /// `OPR_ISTORE`): the XAIF leaves those assignments out (OpenAD's unparser puts them back
    /// from the source), so a value they set is never set here.
    pub passive_stores_left_out: usize,
    /// The program writes its own trace (`oad_trace_*` calls): the executor adds no events.
    pub traces_itself: bool,
}

/// The runtime routines that set or propagate derivatives, by the names the engines give them
/// (besides the tangent runtime's shape-suffixed ones, `runtime::tangent_routine`).
const DERIVATIVE_ROUTINES: &[&str] = &[
    "ZeroDeriv",
    "zeroderiv",
    "zero_deriv",
    "IncDeriv",
    "incderiv",
    "inc_deriv",
    "CondIncZeroDeriv",
    "condinczeroderiv",
    "DecDeriv",
    "decderiv",
    "dec_deriv",
    "SetDeriv",
    "setderiv",
    "SetNegDeriv",
    "set_neg_deriv",
    "Saxpy",
    "Sax",
    "saxpy",
    "sax",
];

impl Program {
    /// Whether the program computes derivatives: an adjoint's replacement lists, or a
    /// derivative propagator or derivative routine anywhere. Without any, a tangent-linear or
    /// adjoint run of it could only report zeros that say nothing about the program.
    pub fn has_derivative_code(&self) -> bool {
        self.routines.iter().any(|routine| match &routine.body {
            Body::External => false,
            Body::Template(_) => true,
            Body::Cfg(graph) => graph.nodes.iter().any(|node| match node {
                Node::Block { stmts, .. } => stmts.iter().any(|stmt| match stmt {
                    Stmt::Prop(_) => true,
                    Stmt::Inline(inline) => {
                        let name = inline.name.as_str();
                        DERIVATIVE_ROUTINES.contains(&name) || super::runtime::tangent_routine(name).is_some()
                    }
                    Stmt::Assign(_) | Stmt::Call(_) => false,
                }),
                _ => false,
            }),
        })
    }
}

#[derive(Debug)]
pub struct RoutineCode {
    pub name: String,
    pub symbol: SymbolId,
    pub body: Body,
    /// `(position, symbol)` of each formal argument.
    pub formals: Vec<(u32, SymbolId)>,
    /// Every symbol of the routine's own scope, in slot order.
    pub locals: Vec<SymbolId>,
    /// What the document says of how the routine uses its formals and globals, for a driver
    /// that infers the routine's independents and dependents.
    pub interface: Interface,
}

/// The declared intent of each formal and the front end's side-effect lists (`Read`, `Mod`:
/// the symbols the routine and its callees read or modify; `None` where the document has no
/// list). Replacement lists have none: there the original code's own reads and writes stand
/// in (a call's actuals counted as both).
#[derive(Clone, Debug, Default)]
pub struct Interface {
    pub intents: Vec<(u32, ir::Intent)>,
    pub read: Option<Vec<SymbolId>>,
    pub modified: Option<Vec<SymbolId>>,
}

#[derive(Debug)]
pub enum Body {
    /// No control flow graph: an external routine or a module.
    External,
    Cfg(Graph),
    /// A replacement list: the graph of each placeholder `1..=13` (index 0 unused).
    Template(Vec<Option<Graph>>),
}

impl Body {
    /// The graphs of its code: none, the control flow graph, or each placeholder's.
    pub fn graphs(&self) -> impl Iterator<Item = &Graph> {
        let (cfg, placeholders): (Option<&Graph>, &[Option<Graph>]) = match self {
            Body::External => (None, &[]),
            Body::Cfg(g) => (Some(g), &[]),
            Body::Template(gs) => (None, gs),
        };
        cfg.into_iter().chain(placeholders.iter().flatten())
    }
}

#[derive(Debug)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub entry: u32,
    /// The XML id of each node's vertex, and of each statement of a block node, for messages.
    pub vertex_ids: Vec<String>,
    pub statement_ids: Vec<Vec<String>>,
    /// Where the executor writes trace events when it traces a program itself.
    pub trace: super::tracing::GraphPlan,
    /// The front end's source line (`lineNumber`) of each statement of a block node, 0 where
    /// the document gives none, for reports that name a statement.
    pub statement_lines: Vec<Vec<u64>>,
}

#[derive(Debug)]
pub enum Node {
    Entry {
        next: u32,
    },
    Exit,
    Block {
        stmts: Vec<Stmt>,
        next: u32,
        /// The passive stores among the block's Markers, in order; almost always none.
        passive_stores: Vec<PassiveStore>,
    },
    /// `If` and `Branch`: the arm whose condition value equals the condition, else `default`.
    Branch {
        cond: Expr,
        arms: Vec<(i64, u32)>,
        default: Option<u32>,
    },
    For {
        init: Option<Assign>,
        cond: Expr,
        update: Option<Assign>,
        body: u32,
        exit: u32,
    },
    Pre {
        cond: Expr,
        body: u32,
        exit: u32,
    },
    Post {
        cond: Expr,
        body: u32,
        exit: u32,
    },
    EndLoop {
        header: u32,
    },
    /// `EndBranch`, `Label`, `Goto`: control passes on.
    Jump {
        next: u32,
    },
    Bad(String),
}

/// A passive store the XAIF leaves out: a Marker `[passive: OPR_STID]` or `OPR_ISTORE`
/// (OpenAD's unparser puts the assignment back from the source). The front end's du-ud chains
/// still say what it defines: every use it reaches lists its `statement_id`. The executor
/// leaves those variables as they are, unless a verifier's guess gives the value such a store
/// puts in ([`super::exec::ExecConfig::passive_store_value`]).
#[derive(Debug)]
pub struct PassiveStore {
    /// The Marker's `statement_id`.
    pub marker: String,
    /// The index of the block statement the store comes before (the statement count if last).
    pub before: usize,
    /// The variables it defines, by symbol index; empty if no use names it.
    pub targets: Vec<u32>,
}

/// Whether a Marker stands for a passive store the XAIF leaves out.
fn is_passive_store(annotation: &str) -> bool {
    annotation.contains("[passive: OPR_STID]") || annotation.contains("[passive: OPR_ISTORE]")
}

#[derive(Debug)]
pub enum Stmt {
    Assign(Assign),
    Call(Call),
    Inline(Inline),
    Prop(Vec<PropOp>),
}

#[derive(Debug)]
pub struct Assign {
    pub lhs: Ref,
    pub rhs: Expr,
}

#[derive(Debug)]
pub struct Call {
    pub callee: Callee,
    pub args: Vec<(u32, Arg)>,
}

/// Whom a call statement calls.
#[derive(Clone, Debug)]
pub enum Callee {
    /// A routine of the program, by index; it may have no code ([`Body::External`]).
    Routine(usize),
    /// A routine the document names but gives no control flow graph: its name.
    Undefined(String),
    /// Why the call cannot be made.
    Invalid(String),
}

#[derive(Debug)]
pub enum Arg {
    Ref(Ref),
    Const(Value),
}

#[derive(Debug)]
pub struct Inline {
    pub name: String,
    pub args: Vec<Arg>,
}

#[derive(Debug)]
pub enum PropOp {
    Set { target: Ref, source: Ref },
    SetNeg { target: Ref, source: Ref },
    Inc { target: Ref, source: Ref },
    Dec { target: Ref, source: Ref },
    Sax { terms: Vec<(Expr, Ref)>, y: Ref },
    Saxpy { terms: Vec<(Expr, Ref)>, y: Ref },
    Zero(Ref),
}

/// A reference to a variable, an element or a section of it.
#[derive(Debug)]
pub struct Ref {
    pub sym: u32,
    pub subs: Vec<Sub>,
    /// The derivative component rather than the value.
    pub deriv: bool,
    /// A reference the executor cannot follow (derived-type components).
    pub unsupported: Option<String>,
}

#[derive(Debug)]
pub enum Sub {
    Index(Expr),
    Section { lower: Option<Expr>, upper: Option<Expr>, stride: Option<Expr> },
}

#[derive(Debug)]
pub enum Expr {
    Const(Value),
    Load(Box<Ref>),
    Elemental(Elemental, Vec<Expr>),
    Array(ArrayIntrinsic, Box<Ref>, Vec<Expr>),
    Bool(BooleanOp, Vec<Expr>),
    /// `transfer(source, mold)`: the bits of `source`, as its kind stores them, read as the
    /// mold's kind.
    Transfer {
        source: Box<Expr>,
        from: Repr,
        to: Repr,
    },
    Unsupported(String),
}

/// How a scalar of a kind is stored, for `transfer`: a real or an integer of so many bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    pub real: bool,
    pub bytes: usize,
}

impl Repr {
    /// The representation the front end's `feType` names (`F8`, `F4`, `I4`, `I8`, `U8`, …).
    fn from_fe_type(fe_type: &str) -> Option<Repr> {
        let (kind, bytes) = fe_type.split_at_checked(1)?;
        let bytes: usize = bytes.parse().ok()?;
        let real = match kind {
            "F" => true,
            "I" | "U" => false,
            _ => return None,
        };
        matches!(bytes, 1 | 2 | 4 | 8).then_some(Repr { real, bytes })
    }
}

impl Program {
    /// Every graph of every routine with code, with the routine's index.
    fn graphs(&self) -> impl Iterator<Item = (usize, &Graph)> {
        self.routines.iter().enumerate().flat_map(|(k, r)| r.body.graphs().map(move |g| (k, g)))
    }

    /// Every call statement of the program.
    fn calls(&self) -> impl Iterator<Item = &Call> {
        self.graphs()
            .flat_map(|(_, g)| &g.nodes)
            .flat_map(|node| match node {
                Node::Block { stmts, .. } => stmts.as_slice(),
                _ => &[],
            })
            .filter_map(|s| match s {
                Stmt::Call(call) => Some(call),
                _ => None,
            })
    }

    /// The passive stores the XAIF leaves out whose targets the du-ud chains name: `(routine,
    /// Marker statement id, variable names)`, sorted, each once (an adjoint repeats a store in
    /// several sweeps).
    pub fn passive_stores(&self) -> Vec<(String, String, Vec<String>)> {
        let mut stores = Vec::new();
        for (routine, g) in self.graphs() {
            for node in &g.nodes {
                if let Node::Block { passive_stores, .. } = node {
                    for store in passive_stores.iter().filter(|s| !s.targets.is_empty()) {
                        let mut names: Vec<String> =
                            store.targets.iter().map(|&t| self.syms[t as usize].name.clone()).collect();
                        names.sort();
                        stores.push((self.routines[routine].name.clone(), store.marker.clone(), names));
                    }
                }
            }
        }
        stores.sort();
        stores.dedup();
        stores
    }

    /// The routines without code that some call statement names, sorted.
    pub fn called_without_code(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .calls()
            .filter_map(|call| match &call.callee {
                Callee::Undefined(name) => Some(name.clone()),
                Callee::Routine(k) if matches!(self.routines[*k].body, Body::External) => {
                    Some(self.routines[*k].name.clone())
                }
                _ => None,
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Every routine some call statement targets.
    pub fn called_routines(&self) -> rustc_hash::FxHashSet<usize> {
        self.calls()
            .filter_map(|call| match call.callee {
                Callee::Routine(k) => Some(k),
                _ => None,
            })
            .collect()
    }
}

/// The symbols a graph's code reads and those it writes (an actual of a call counts as both),
/// by their references' base symbols.
fn code_effects(graph: &FlowGraph) -> (Vec<SymbolId>, Vec<SymbolId>) {
    let (mut read, mut modified) = (Vec::new(), Vec::new());
    fn expression(e: &ir::Expression, read: &mut Vec<SymbolId>) {
        for (_, vertex) in e.vertices.iter() {
            match vertex {
                ExprVertex::Variable(r) => read.extend(r.base_symbol()),
                ExprVertex::FunctionCall(f) => read.extend(f.arguments.iter().filter_map(|a| a.base_symbol())),
                _ => {}
            }
        }
    }
    let mut assignment = |a: &ir::Assignment, read: &mut Vec<SymbolId>| {
        modified.extend(a.lhs.base_symbol());
        expression(&a.rhs, read);
    };
    let mut actuals: Vec<SymbolId> = Vec::new();
    for (_, vertex) in graph.vertices.iter() {
        match &vertex.kind {
            CfgVertexKind::BasicBlock(block) => {
                for statement in &block.statements {
                    match statement {
                        Statement::Assignment(a) => assignment(a, &mut read),
                        Statement::SubroutineCall(call) => {
                            actuals.extend(call.arguments.iter().filter_map(|a| match &a.value {
                                ir::ArgumentValue::Variable(v) => v.base_symbol(),
                                ir::ArgumentValue::Constant(_) => None,
                            }))
                        }
                        _ => {}
                    }
                }
            }
            CfgVertexKind::ForLoop(l) => {
                for a in [&l.initialization, &l.update].into_iter().flatten() {
                    assignment(a, &mut read);
                }
                if let Some(c) = &l.condition {
                    expression(c, &mut read);
                }
            }
            CfgVertexKind::If(c)
            | CfgVertexKind::PreLoop(c)
            | CfgVertexKind::PostLoop(c)
            | CfgVertexKind::Branch(c) => {
                if let Some(c) = &c.condition {
                    expression(c, &mut read);
                }
            }
            _ => {}
        }
    }
    read.extend(&actuals);
    modified.extend(&actuals);
    for list in [&mut read, &mut modified] {
        list.sort_unstable();
        list.dedup();
    }
    (read, modified)
}

/// Lowers a whole call graph. Never fails: problems become `Unsupported`/`Bad` nodes.
pub fn lower(cg: &CallGraph) -> Program {
    let mut lw = Lowerer { cg, routine_by_symbol: FxHashMap::default() };
    // Scopes whose symbols live in activation records: the body scopes of routines that
    // have code. A module's scope (its CFG is empty) holds globals.
    let mut local_scope: FxHashMap<ir::ScopeId, usize> = FxHashMap::default();
    for (id, routine) in cg.routines.iter() {
        let index = raw(id);
        lw.routine_by_symbol.insert(routine.symbol(), index);
        let (body_scope, has_code) = match routine {
            Routine::ControlFlowGraph(cfg) => (cfg.body_scope, !cfg.graph.vertices.is_empty()),
            Routine::ReplacementList(list) => (list.body_scope, list.graphs().any(|graph| !graph.vertices.is_empty())),
        };
        if has_code {
            local_scope.entry(body_scope).or_insert(index);
        }
    }
    let mut global_slots = 0u32;
    let mut local_counts: FxHashMap<usize, u32> = FxHashMap::default();
    let mut locals_of: FxHashMap<usize, Vec<SymbolId>> = FxHashMap::default();
    let mut syms = Vec::with_capacity(cg.symbols.len());
    for (id, symbol) in cg.symbols.iter() {
        let storage = match local_scope.get(&symbol.scope) {
            Some(&routine) => {
                let count = local_counts.entry(routine).or_default();
                let slot = *count;
                *count += 1;
                locals_of.entry(routine).or_default().push(id);
                Storage::Local { routine, slot }
            }
            None => {
                global_slots += 1;
                Storage::Global { slot: global_slots - 1 }
            }
        };
        let rank = symbol.shape.rank();
        let bounds = if rank == 0 {
            Some(Vec::new())
        } else if symbol.dimensions.len() == rank {
            // The front end lists DimensionBounds last dimension first (WHIRL's order): a
            // Fortran `x(2,3)` is declared `1:3, 1:2` while its references index `(i, j)`.
            Some(symbol.dimensions.iter().rev().map(|d| (d.lower, d.upper)).collect())
        } else {
            None
        };
        debug_assert!(symbol.shape != Shape::Void || rank == 0);
        syms.push(SymInfo {
            name: cg.name(symbol.name).to_owned(),
            scope: cg.name(cg.scopes[symbol.scope].id).to_owned(),
            ty: symbol.ty,
            rank,
            bounds,
            storage,
            active: symbol.active,
        });
    }
    let mut routines = Vec::with_capacity(cg.routines.len());
    for (id, routine) in cg.routines.iter() {
        let index = raw(id);
        let base_symbols = |list: &Option<Vec<ir::VariableReference>>| {
            list.as_ref().map(|refs| refs.iter().filter_map(ir::VariableReference::base_symbol).collect::<Vec<_>>())
        };
        let (read, modified) = match routine {
            Routine::ControlFlowGraph(cfg) => {
                (base_symbols(&cfg.side_effects.read), base_symbols(&cfg.side_effects.modified))
            }
            // Replacement lists have no side-effect lists: what the original code (placeholder
            // 1) reads and writes stands in for them.
            Routine::ReplacementList(list) => {
                match list.replacements.iter().find(|r| cg.name(r.placeholder).trim() == "1") {
                    Some(original) => {
                        let (read, modified) = code_effects(&original.graph);
                        (Some(read), Some(modified))
                    }
                    None => (None, None),
                }
            }
        };
        let (arguments, body) = match routine {
            Routine::ControlFlowGraph(cfg) => {
                let body = if cfg.graph.vertices.is_empty() { Body::External } else { Body::Cfg(lw.graph(&cfg.graph)) };
                (&cfg.arguments, body)
            }
            // A traced routine runs its traced code (placeholder 2; 1 is the original code).
            Routine::ReplacementList(list) if cg.name(list.template_name) == super::tracing::TRACING_TEMPLATE => {
                let traced = ["2", "1"]
                    .into_iter()
                    .find_map(|number| list.replacements.iter().find(|r| cg.name(r.placeholder).trim() == number));
                let body = match traced {
                    Some(r) if !list.graph_of(r).vertices.is_empty() => Body::Cfg(lw.graph(list.graph_of(r))),
                    _ => Body::External,
                };
                (&list.arguments, body)
            }
            Routine::ReplacementList(list) => {
                let mut graphs: Vec<Option<Graph>> = (0..14).map(|_| None).collect();
                for replacement in &list.replacements {
                    let number: usize = cg.name(replacement.placeholder).trim().parse().unwrap_or(0);
                    let graph = list.graph_of(replacement);
                    if (1..14).contains(&number) && !graph.vertices.is_empty() {
                        graphs[number] = Some(lw.graph(graph));
                    }
                }
                (&list.arguments, Body::Template(graphs))
            }
        };
        let formals = arguments.iter().flatten().map(|a| (a.position, a.symbol)).collect();
        let intents = arguments.iter().flatten().map(|a| (a.position, a.intent)).collect();
        routines.push(RoutineCode {
            name: cg.symbol_name(routine.symbol()).to_owned(),
            symbol: routine.symbol(),
            body,
            formals,
            locals: locals_of.remove(&index).unwrap_or_default(),
            interface: Interface { intents, read, modified },
        });
    }
    let passive_stores_left_out = cg
        .cfgs()
        .flat_map(|(_, cfg)| cfg.graph.vertices.iter())
        .filter_map(|(_, v)| match &v.kind {
            ir::CfgVertexKind::BasicBlock(b) => Some(b),
            _ => None,
        })
        .flat_map(|b| &b.statements)
        .filter(|s| matches!(s, Statement::Marker(m) if is_passive_store(cg.name(m.annotation))))
        .count();
    Program { routines, syms, global_slots, passive_stores_left_out, traces_itself: super::tracing::traces_itself(cg) }
}

fn raw<T>(id: la_arena::Idx<T>) -> usize {
    id.into_raw().into_u32() as usize
}

struct Lowerer<'a> {
    cg: &'a CallGraph,
    routine_by_symbol: FxHashMap<SymbolId, usize>,
}

impl Lowerer<'_> {
    fn graph(&self, fg: &FlowGraph) -> Graph {
        let mut outs: Vec<Vec<&ir::CfgEdge>> = vec![Vec::new(); fg.vertices.len()];
        for edge in &fg.edges {
            outs[raw(edge.source)].push(edge);
        }
        let defined = self.passive_store_targets(fg);
        let mut entry = None;
        let mut nodes = Vec::with_capacity(fg.vertices.len());
        let mut vertex_ids = Vec::with_capacity(fg.vertices.len());
        let mut statement_ids = Vec::with_capacity(fg.vertices.len());
        let mut statement_lines = Vec::with_capacity(fg.vertices.len());
        for (id, vertex) in fg.vertices.iter() {
            vertex_ids.push(self.cg.name(vertex.id).to_owned());
            statement_ids.push(match &vertex.kind {
                CfgVertexKind::BasicBlock(bb) => bb
                    .statements
                    .iter()
                    .filter(|s| !matches!(s, Statement::Marker(_)))
                    .map(|s| s.id().map_or_else(String::new, |id| self.cg.name(id).to_owned()))
                    .collect(),
                _ => Vec::new(),
            });
            statement_lines.push(match &vertex.kind {
                CfgVertexKind::BasicBlock(bb) => bb
                    .statements
                    .iter()
                    .filter_map(|s| match s {
                        Statement::Marker(_) => None,
                        Statement::Assignment(a) => Some(a.line),
                        Statement::SubroutineCall(c) => Some(c.line),
                        Statement::DerivativePropagator(_) | Statement::InlinableSubroutineCall(_) => Some(0),
                    })
                    .collect(),
                _ => Vec::new(),
            });
            let out = &outs[raw(id)];
            let vid = self.cg.name(vertex.id);
            let single = |what: &str| match out.first() {
                Some(edge) => Ok(raw(edge.target) as u32),
                None => Err(format!("{what} vertex {vid} has no successor")),
            };
            // Loops: the edge with a non-zero condition value enters the body.
            let loop_edges = || {
                let body = out.iter().find(|e| e.condition_value.is_some_and(|v| v != 0));
                let exit = out.iter().find(|e| e.condition_value.is_none_or(|v| v == 0));
                match (body, exit) {
                    (Some(b), Some(x)) => Ok((raw(b.target) as u32, raw(x.target) as u32)),
                    _ => Err(format!("loop vertex {vid} lacks a body or an exit edge")),
                }
            };
            let cond_expr = |c: &Option<ir::Expression>| match c {
                Some(e) => self.expr(e),
                None => Expr::Unsupported(format!("vertex {vid} has no condition")),
            };
            let node = match &vertex.kind {
                CfgVertexKind::Entry => {
                    entry = Some(raw(id) as u32);
                    single("Entry").map(|next| Node::Entry { next })
                }
                CfgVertexKind::Exit => Ok(Node::Exit),
                CfgVertexKind::BasicBlock(bb) => single("BasicBlock").map(|next| {
                    let mut stmts = Vec::with_capacity(bb.statements.len());
                    let mut passive_stores = Vec::new();
                    for statement in &bb.statements {
                        match statement {
                            Statement::Marker(m) if is_passive_store(self.cg.name(m.annotation)) => passive_stores
                                .push(PassiveStore {
                                    marker: self.cg.name(m.id).to_owned(),
                                    before: stmts.len(),
                                    targets: defined.get(&m.id).cloned().unwrap_or_default(),
                                }),
                            _ => stmts.extend(self.stmt(statement)),
                        }
                    }
                    Node::Block { stmts, next, passive_stores }
                }),
                CfgVertexKind::If(c) | CfgVertexKind::Branch(c) => {
                    let arms =
                        out.iter().filter_map(|e| e.condition_value.map(|v| (v, raw(e.target) as u32))).collect();
                    let default = out.iter().find(|e| e.condition_value.is_none()).map(|e| raw(e.target) as u32);
                    Ok(Node::Branch { cond: cond_expr(&c.condition), arms, default })
                }
                CfgVertexKind::ForLoop(f) => loop_edges().map(|(body, exit)| Node::For {
                    init: f.initialization.as_ref().map(|a| self.assign(a)),
                    cond: cond_expr(&f.condition),
                    update: f.update.as_ref().map(|a| self.assign(a)),
                    body,
                    exit,
                }),
                CfgVertexKind::PreLoop(c) => {
                    loop_edges().map(|(body, exit)| Node::Pre { cond: cond_expr(&c.condition), body, exit })
                }
                CfgVertexKind::PostLoop(c) => {
                    loop_edges().map(|(body, exit)| Node::Post { cond: cond_expr(&c.condition), body, exit })
                }
                CfgVertexKind::EndLoop => single("EndLoop").map(|header| Node::EndLoop { header }),
                CfgVertexKind::EndBranch | CfgVertexKind::Label | CfgVertexKind::Goto => {
                    single(vertex.kind.element_name()).map(|next| Node::Jump { next })
                }
            };
            nodes.push(node.unwrap_or_else(Node::Bad));
        }
        // From a vertex no path leads from to Exit, execution never ends: stop on arrival
        // rather than at the step limit.
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); fg.vertices.len()];
        for edge in &fg.edges {
            preds[raw(edge.target)].push(raw(edge.source));
        }
        let mut reaches_exit = vec![false; fg.vertices.len()];
        let mut stack: Vec<usize> =
            fg.vertices.iter().filter(|(_, v)| matches!(v.kind, CfgVertexKind::Exit)).map(|(id, _)| raw(id)).collect();
        for &v in &stack {
            reaches_exit[v] = true;
        }
        while let Some(v) = stack.pop() {
            for &p in &preds[v] {
                if !reaches_exit[p] {
                    reaches_exit[p] = true;
                    stack.push(p);
                }
            }
        }
        for (k, node) in nodes.iter_mut().enumerate() {
            if !reaches_exit[k] {
                *node = Node::Bad("endless loop: no path leads from this vertex to Exit".into());
            }
        }
        match entry {
            Some(entry) => {
                let mut graph =
                    Graph { nodes, entry, vertex_ids, statement_ids, trace: Default::default(), statement_lines };
                let planner = super::tracing::Planner {
                    cg: self.cg,
                    expr: &|e| self.expr(e),
                    defined: &|symbol| self.routine_by_symbol.contains_key(&symbol),
                };
                graph.trace = planner.plan(fg, &graph);
                graph
            }
            None => Graph {
                nodes: vec![Node::Bad("control flow graph without Entry".into())],
                entry: 0,
                vertex_ids: Vec::new(),
                statement_ids: Vec::new(),
                trace: Default::default(),
                statement_lines: Vec::new(),
            },
        }
    }

    /// The variables each passive-store Marker of `fg` defines, by the du-ud chains of the
    /// uses in `fg`.
    fn passive_store_targets(&self, fg: &FlowGraph) -> FxHashMap<ir::Name, Vec<u32>> {
        let mut defined: FxHashMap<ir::Name, Vec<u32>> = FxHashMap::default();
        for (_, vertex) in fg.vertices.iter() {
            if let CfgVertexKind::BasicBlock(bb) = &vertex.kind {
                for statement in &bb.statements {
                    if let Statement::Marker(m) = statement
                        && is_passive_store(self.cg.name(m.annotation))
                    {
                        defined.insert(m.id, Vec::new());
                    }
                }
            }
        }
        if defined.is_empty() {
            return defined;
        }
        ir::visit::each_use(fg, &mut |r| {
            let (Some(set), Some(base)) = (r.du_ud, r.base_symbol()) else {
                return;
            };
            for statement in &self.cg.duud_sets[set.0 as usize].statements {
                if let Some(targets) = defined.get_mut(statement)
                    && !targets.contains(&(raw(base) as u32))
                {
                    targets.push(raw(base) as u32);
                }
            }
        });
        defined
    }

    fn stmt(&self, s: &Statement) -> Option<Stmt> {
        Some(match s {
            Statement::Assignment(a) => Stmt::Assign(self.assign(a)),
            Statement::SubroutineCall(call) => {
                let callee = match call.symbol {
                    Some(sym) => match self.routine_by_symbol.get(&sym) {
                        Some(&k) => Callee::Routine(k),
                        None => Callee::Undefined(self.cg.symbol_name(sym).to_owned()),
                    },
                    None => Callee::Invalid("call without a callee symbol".to_owned()),
                };
                let args = call.arguments.iter().map(|a| (a.position, self.arg(&a.value))).collect();
                Stmt::Call(Call { callee, args })
            }
            Statement::Marker(_) => return None,
            Statement::DerivativePropagator(p) => Stmt::Prop(p.entries.iter().map(|e| self.prop(e)).collect()),
            Statement::InlinableSubroutineCall(call) => {
                let mut args: Vec<&ir::Argument> = call.arguments.iter().collect();
                args.sort_by_key(|a| a.position);
                Stmt::Inline(Inline {
                    name: self.cg.name(call.subroutine_name).to_owned(),
                    args: args.into_iter().map(|a| self.arg(&a.value)).collect(),
                })
            }
        })
    }

    fn prop(&self, e: &PropagatorEntry) -> PropOp {
        let terms = |ts: &[ir::ScaledTerm]| ts.iter().map(|t| (self.expr(&t.a), self.var(&t.x))).collect();
        match e {
            PropagatorEntry::SetDeriv { target, source } => {
                PropOp::Set { target: self.var(target), source: self.var(source) }
            }
            PropagatorEntry::SetNegDeriv { target, source } => {
                PropOp::SetNeg { target: self.var(target), source: self.var(source) }
            }
            PropagatorEntry::IncDeriv { target, source } => {
                PropOp::Inc { target: self.var(target), source: self.var(source) }
            }
            PropagatorEntry::DecDeriv { target, source } => {
                PropOp::Dec { target: self.var(target), source: self.var(source) }
            }
            PropagatorEntry::Sax { terms: ts, y } => PropOp::Sax { terms: terms(ts), y: self.var(y) },
            PropagatorEntry::Saxpy { terms: ts, y } => PropOp::Saxpy { terms: terms(ts), y: self.var(y) },
            PropagatorEntry::ZeroDeriv(x) => PropOp::Zero(self.var(x)),
        }
    }

    fn arg(&self, value: &ir::ArgumentValue) -> Arg {
        match value {
            ir::ArgumentValue::Variable(v) => Arg::Ref(self.var(v)),
            ir::ArgumentValue::Constant(c) => match self.constant(c) {
                Expr::Const(v) => Arg::Const(v),
                _ => Arg::Const(Value::Str(self.cg.name(c.value).into())),
            },
        }
    }

    fn assign(&self, a: &ir::Assignment) -> Assign {
        Assign { lhs: self.var(&a.lhs), rhs: self.expr(&a.rhs) }
    }

    fn var(&self, v: &ir::VariableReference) -> Ref {
        let mut r = Ref { sym: 0, subs: Vec::new(), deriv: v.deriv, unsupported: None };
        let Some(base) = v.base_symbol() else {
            r.unsupported = Some("variable reference without a symbol".into());
            return r;
        };
        r.sym = raw(base) as u32;
        let mut elements = v.vertices.iter().filter_map(|x| match x {
            VarRefVertex::ArrayElement(a) => Some(a),
            VarRefVertex::Symbol(_) => None,
        });
        let symbols = v.vertices.iter().filter(|x| matches!(x, VarRefVertex::Symbol(_))).count();
        if let Some(element) = elements.next() {
            r.subs = element
                .indices
                .iter()
                .map(|t| match (&t.index, &t.bound, &t.stride) {
                    (Some(i), None, None) => Sub::Index(self.expr(i)),
                    (lower, upper, stride) => Sub::Section {
                        lower: lower.as_ref().map(|e| self.expr(e)),
                        upper: upper.as_ref().map(|e| self.expr(e)),
                        stride: stride.as_ref().map(|e| self.expr(e)),
                    },
                })
                .collect();
        }
        if symbols > 1 || elements.next().is_some() {
            r.unsupported = Some(format!("derived-type component reference on {}", self.cg.symbol_name(base)));
        }
        r
    }

    fn constant(&self, c: &ir::Constant) -> Expr {
        let text = self.cg.name(c.value).trim();
        let parsed = match c.ty {
            ConstantType::Integer => text.parse::<i64>().ok().map(Value::Int),
            ConstantType::Real | ConstantType::Double => {
                text.replace(['D', 'd'], "e").parse::<f64>().ok().map(Value::Real)
            }
            ConstantType::Bool => match text.to_ascii_lowercase().trim_matches('.') {
                "true" | "1" | "t" => Some(Value::Bool(true)),
                "false" | "0" | "f" => Some(Value::Bool(false)),
                _ => None,
            },
            ConstantType::Char | ConstantType::String => Some(Value::Str(text.into())),
        };
        match parsed {
            Some(v) => Expr::Const(v),
            None => Expr::Unsupported(format!("constant {text:?} of type {:?}", c.ty)),
        }
    }

    fn expr(&self, e: &ir::Expression) -> Expr {
        let n = e.vertices.len();
        let mut operands: Vec<Vec<(i64, ExprVertexId)>> = vec![Vec::new(); n];
        let mut has_out = vec![false; n];
        for edge in &e.edges {
            operands[raw(edge.target)].push((edge.position, edge.source));
            has_out[raw(edge.source)] = true;
        }
        for ops in &mut operands {
            ops.sort_by_key(|&(p, _)| p);
        }
        let Some((root, _)) = e.vertices.iter().find(|(id, _)| !has_out[raw(*id)]) else {
            return Expr::Unsupported("expression without a root".into());
        };
        self.expr_at(e, &operands, root)
    }

    /// The tree of the expression at `root`, operands before the operations that use them.
    /// Iterative: the reader lets expressions nest thousands of operations deep.
    fn expr_at(&self, e: &ir::Expression, ops: &[Vec<(i64, ExprVertexId)>], root: ExprVertexId) -> Expr {
        let mut work = vec![(root, false)];
        let mut done: Vec<Expr> = Vec::new();
        while let Some((at, operands_done)) = work.pop() {
            let operands = &ops[raw(at)];
            let takes_operands = matches!(e.vertices[at], ExprVertex::Intrinsic(_) | ExprVertex::BooleanOperation(_));
            if takes_operands && !operands_done {
                work.push((at, true));
                work.extend(operands.iter().rev().map(|&(_, source)| (source, false)));
                continue;
            }
            let args = if takes_operands { done.split_off(done.len() - operands.len()) } else { Vec::new() };
            let is_transfer = matches!(&e.vertices[at], ExprVertex::Intrinsic(i) if matches!(self.cg.name(i.name), "transfer" | "oad_transfer"));
            done.push(if is_transfer { self.transfer(e, operands, args) } else { self.vertex(&e.vertices[at], args) });
        }
        done.pop().expect("the root's tree")
    }

    /// `transfer(source, mold)` of scalars, the kinds read from the operands' `feType`s (of
    /// their symbols, or of constants).
    fn transfer(&self, e: &ir::Expression, operands: &[(i64, ExprVertexId)], mut args: Vec<Expr>) -> Expr {
        let repr = |at: ExprVertexId| {
            let fe_type = match &e.vertices[at] {
                ExprVertex::Variable(v) => self.cg.symbols[v.base_symbol()?].fe_type,
                ExprVertex::Constant(c) => c.fe_type,
                _ => return None,
            };
            Repr::from_fe_type(self.cg.name(fe_type))
        };
        match (operands, args.len()) {
            ([(_, source), (_, mold)], 2) => match (repr(*source), repr(*mold)) {
                (Some(from), Some(to)) => {
                    args.truncate(1);
                    Expr::Transfer { source: Box::new(args.remove(0)), from, to }
                }
                _ => Expr::Unsupported("transfer of an operand whose kind the document does not give".into()),
            },
            _ => Expr::Unsupported("transfer with other than a source and a mold".into()),
        }
    }

    /// One vertex, its operands' trees given.
    fn vertex(&self, vertex: &ExprVertex, mut args: Vec<Expr>) -> Expr {
        match vertex {
            ExprVertex::Variable(v) => Expr::Load(Box::new(self.var(v))),
            ExprVertex::Constant(c) => self.constant(c),
            ExprVertex::BooleanOperation(b) => Expr::Bool(b.op, args),
            ExprVertex::FunctionCall(f) => Expr::Unsupported(format!(
                "function call of {}",
                f.symbol.map_or("an unnamed function", |s| self.cg.symbol_name(s))
            )),
            ExprVertex::Intrinsic(i) => {
                let name = self.cg.name(i.name);
                match intrinsics::resolve(name) {
                    Some(Resolved::Elemental(op)) => Expr::Elemental(op, args),
                    Some(Resolved::Array(op)) => {
                        if args.is_empty() {
                            return Expr::Unsupported(format!("intrinsic {name} without operands"));
                        }
                        match args.remove(0) {
                            Expr::Load(r) => Expr::Array(op, r, args),
                            _ => Expr::Unsupported(format!("intrinsic {name} of an array expression")),
                        }
                    }
                    None => Expr::Unsupported(format!("intrinsic {name}")),
                }
            }
        }
    }
}
