//! The decorated object model of an XAIF document.
//!
//! One [`CallGraph`] owns everything: the scope hierarchy and its symbols, the alias, du-ud and
//! DO maps, and one [`Routine`] per call-graph vertex (a control flow graph, or after the adjoint
//! transformation a replacement list). Storage is arenas with typed indices; every reference the
//! XML spells as strings (`symbol_id` + `scope_id`, `alias`, `du_ud`, `do_chain`, edge endpoints)
//! is resolved into an index when the document is read, so passes never look names up again.
//!
//! Invariants that hold for any `CallGraph` produced by [`crate::xaif::read()`]:
//! - every `SymbolId`, `ScopeId`, `RoutineId`, alias/du-ud/DO set index points into its arena;
//! - edge endpoints of every graph (scope, call, control flow, expression, variable reference)
//!   index vertices of that same graph;
//! - the original XML ids (`vertex_id`, `edge_id`, `statement_id`) are kept as [`Name`]s, because
//!   the back end and the du-ud map refer to them.
//!
//! This module knows nothing of XML.

pub mod build;
pub mod names;
pub mod rename;
pub mod text;
pub mod visit;

use la_arena::{Arena, Idx};
use rustc_hash::FxHashMap;

pub use names::{Name, NameBatch, NameSet, Names};

pub type ScopeId = Idx<Scope>;
pub type SymbolId = Idx<Symbol>;
pub type RoutineId = Idx<Routine>;
pub type CfgVertexId = Idx<CfgVertex>;
pub type ExprVertexId = Idx<ExprVertex>;

/// Index of an [`AliasSet`] in [`CallGraph::alias_sets`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct AliasSetId(pub u32);
/// Index of a du-ud [`StmtIdSet`] in [`CallGraph::duud_sets`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct DuUdSetId(pub u32);
/// Index of a DO [`StmtIdSet`] in [`CallGraph::do_sets`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct DoSetId(pub u32);

/// The root: a whole program's numerical core.
#[derive(Clone, Debug, Default)]
pub struct CallGraph {
    pub names: Names,
    pub program_name: Option<Name>,
    /// Prefix for every name the engine invents (`<prefix>aux_N`, …); the schema's default
    /// is `GetRidOfThisDefault`, which the reference engine also writes out.
    pub prefix: Name,
    pub scopes: Arena<Scope>,
    pub scope_edges: Vec<ScopeEdge>,
    pub symbols: SymbolArena,
    pub alias_sets: Vec<AliasSet>,
    pub duud_sets: Vec<StmtIdSet>,
    pub do_sets: Vec<StmtIdSet>,
    pub routines: Arena<Routine>,
    pub call_edges: Vec<CallGraphEdge>,
    /// `(scope, symbol name) → symbol`, kept in step with `symbols` by [`CallGraph::add_symbol`].
    pub symbol_index: SymbolIndex,
    /// About how many bytes this call graph takes written as XAIF: the size it was read from
    /// (0 when built otherwise), raised by passes that add code. The writer's first guess at
    /// its output size, which saves growing the output buffer step by step.
    pub size_hint: usize,
}

impl CallGraph {
    /// Room for `names` more names of `name_bytes` bytes in all and `symbols` more symbols,
    /// allocated once rather than grown step by step as they come.
    ///
    /// For a copy of a call graph that passes go on adding to, as the streaming driver's copy
    /// of the reader's head: a copy has room for what it holds and no more. Each time one of
    /// these lists doubled, the new list was copied to memory the process had not touched,
    /// a page fault per 4 KiB, and the old one freed: on a 16 MiB tangent the name table grows
    /// from 779 names to 111,721 and the symbols from 2,880 to 61,280.
    pub fn reserve(&mut self, names: usize, name_bytes: usize, symbols: usize) {
        self.names.reserve(names, name_bytes);
        self.symbol_index.reserve(self.names.len() + names);
        self.symbols.reserve(symbols);
    }

    /// Adds a symbol to its scope's table; returns the existing one if the name is taken.
    pub fn add_symbol(&mut self, symbol: Symbol) -> SymbolId {
        match self.lookup_symbol(symbol.scope, symbol.name) {
            Some(existing) => existing,
            None => self.add_new_symbol(symbol),
        }
    }

    /// [`Self::add_symbol`] of a symbol whose name no symbol of its scope has (a name just
    /// interned, or one looked up already): no lookup first.
    pub fn add_new_symbol(&mut self, symbol: Symbol) -> SymbolId {
        let (scope, name) = (symbol.scope, symbol.name);
        debug_assert!(self.lookup_symbol(scope, name).is_none());
        let id = self.symbols.alloc(symbol);
        self.scopes[scope].symbols.push(id);
        self.symbol_index.insert(scope, name, id, &self.symbols);
        id
    }

    /// Takes the symbols from the `len`-th on out of the call graph: out of their scopes'
    /// tables and the arena. They must be the newest of their scopes (as temporaries added
    /// since are).
    pub fn forget_symbols_from(&mut self, len: usize) {
        for (id, symbol) in self.symbols.iter().skip(len).rev() {
            let scope = &mut self.scopes[symbol.scope].symbols;
            debug_assert_eq!(scope.last(), Some(&id));
            if scope.last() == Some(&id) {
                scope.pop();
            } else {
                scope.retain(|&s| s != id);
            }
            self.symbol_index.remove(symbol.scope, symbol.name, id);
        }
        self.symbols.truncate(len);
    }

    pub fn lookup_symbol(&self, scope: ScopeId, name: Name) -> Option<SymbolId> {
        self.symbol_index.get(scope, name, &self.symbols)
    }

    pub fn name(&self, name: Name) -> &str {
        self.names.get(name)
    }

    pub fn symbol_name(&self, symbol: SymbolId) -> &str {
        self.names.get(self.symbols[symbol].name)
    }

    pub fn alias_key(&self, id: AliasSetId) -> u64 {
        self.alias_sets[id.0 as usize].key
    }

    pub fn duud_key(&self, id: DuUdSetId) -> u64 {
        self.duud_sets[id.0 as usize].key
    }

    pub fn do_key(&self, id: DoSetId) -> u64 {
        self.do_sets[id.0 as usize].key
    }

    /// The control flow graphs, in document order.
    pub fn cfgs(&self) -> impl Iterator<Item = (RoutineId, &ControlFlowGraph)> {
        self.routines.iter().filter_map(|(id, r)| match r {
            Routine::ControlFlowGraph(cfg) => Some((id, cfg)),
            Routine::ReplacementList(_) => None,
        })
    }
}

/// `(scope, symbol name) → symbol`, for [`CallGraph::lookup_symbol`].
///
/// Most names name one symbol: every temporary the engine invents, and most of a document's
/// own. Those are found by the name's number in a list, without hashing; the temporaries,
/// named one after the other, are added next to the last (at 64 MiB of input, inserting each
/// into a hashed map of every symbol missed the cache, 1.8% of a tangent run's samples).
/// Names that several scopes use (a loop counter, a routine's local `x`) go to a hashed map
/// keyed by scope and name.
#[derive(Clone, Debug, Default)]
pub struct SymbolIndex {
    /// By name: [`NO_SYMBOL`], the one symbol of that name, or [`SHARED_NAME`].
    by_name: Vec<u32>,
    /// The symbols of the names several symbols have.
    shared: FxHashMap<(ScopeId, Name), SymbolId>,
}

/// No symbol has the name.
const NO_SYMBOL: u32 = u32::MAX;
/// Several symbols have the name: see [`SymbolIndex::shared`].
const SHARED_NAME: u32 = u32::MAX - 1;

fn symbol_id(raw: u32) -> SymbolId {
    SymbolId::from_raw(la_arena::RawIdx::from_u32(raw))
}

impl SymbolIndex {
    fn get(&self, scope: ScopeId, name: Name, symbols: &SymbolArena) -> Option<SymbolId> {
        match self.by_name.get(name.index()).copied().unwrap_or(NO_SYMBOL) {
            NO_SYMBOL => None,
            SHARED_NAME => self.shared.get(&(scope, name)).copied(),
            one => Some(symbol_id(one)).filter(|&id| symbols[id].scope == scope),
        }
    }

    /// `id`, of `name` in `scope`, where no symbol of `scope` has that name yet.
    fn insert(&mut self, scope: ScopeId, name: Name, id: SymbolId, symbols: &SymbolArena) {
        let raw = id.into_raw().into_u32();
        if self.by_name.len() <= name.index() {
            self.by_name.resize(name.index() + 1, NO_SYMBOL);
        }
        let slot = &mut self.by_name[name.index()];
        match *slot {
            // (A symbol numbered like the markers goes to the map.)
            NO_SYMBOL if raw < SHARED_NAME => *slot = raw,
            NO_SYMBOL => {
                self.shared.insert((scope, name), id);
                *slot = SHARED_NAME;
            }
            SHARED_NAME => {
                self.shared.insert((scope, name), id);
            }
            one => {
                let other = symbol_id(one);
                self.shared.insert((symbols[other].scope, name), other);
                self.shared.insert((scope, name), id);
                *slot = SHARED_NAME;
            }
        }
    }

    /// Room for the names up to `names` (by [`Name::index`]).
    fn reserve(&mut self, names: usize) {
        self.by_name.reserve(names.saturating_sub(self.by_name.len()));
    }

    /// Forgets `id`, of `name` in `scope`.
    fn remove(&mut self, scope: ScopeId, name: Name, id: SymbolId) {
        match self.by_name.get_mut(name.index()) {
            Some(slot) if *slot == id.into_raw().into_u32() => *slot = NO_SYMBOL,
            Some(&mut SHARED_NAME) => {
                self.shared.remove(&(scope, name));
            }
            _ => {}
        }
    }
}

/// Every symbol of the call graph, numbered in the order added. An arena like the others,
/// which can also forget its newest symbols (through [`CallGraph::forget_symbols_from`]): a parallel worker
/// adds a routine's temporaries to its copy of the head and then takes them out again, so
/// every routine it transforms finds the same head, numbered the same.
#[derive(Clone, Debug, Default)]
pub struct SymbolArena(Vec<Symbol>);

impl SymbolArena {
    pub fn alloc(&mut self, symbol: Symbol) -> SymbolId {
        let id = SymbolId::from_raw(la_arena::RawIdx::from_u32(self.0.len() as u32));
        self.0.push(symbol);
        id
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (SymbolId, &Symbol)> + ExactSizeIterator {
        self.0.iter().enumerate().map(|(k, s)| (SymbolId::from_raw(la_arena::RawIdx::from_u32(k as u32)), s))
    }

    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = (SymbolId, &mut Symbol)> + ExactSizeIterator {
        self.0.iter_mut().enumerate().map(|(k, s)| (SymbolId::from_raw(la_arena::RawIdx::from_u32(k as u32)), s))
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Symbol> + ExactSizeIterator {
        self.0.iter()
    }

    /// The symbols from the `len`-th on; [`CallGraph::forget_symbols_from`] takes them out of
    /// their scopes too.
    pub fn since(&self, len: usize) -> &[Symbol] {
        self.0.get(len..).unwrap_or(&[])
    }

    fn truncate(&mut self, len: usize) {
        self.0.truncate(len);
    }

    fn reserve(&mut self, additional: usize) {
        self.0.reserve(additional);
    }
}

impl std::ops::Index<SymbolId> for SymbolArena {
    type Output = Symbol;
    fn index(&self, id: SymbolId) -> &Symbol {
        &self.0[id.into_raw().into_u32() as usize]
    }
}

impl std::ops::IndexMut<SymbolId> for SymbolArena {
    fn index_mut(&mut self, id: SymbolId) -> &mut Symbol {
        &mut self.0[id.into_raw().into_u32() as usize]
    }
}

#[derive(Clone, Debug)]
pub struct Scope {
    pub id: Name,
    pub annotation: Name,
    /// In document order; the writer sorts by name as the reference engine does.
    pub symbols: Vec<SymbolId>,
}

#[derive(Clone, Debug)]
pub struct ScopeEdge {
    pub id: Name,
    pub annotation: Name,
    pub source: ScopeId,
    pub target: ScopeId,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub enum SymbolKind {
    Subroutine,
    #[default]
    Variable,
    Pointer,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub enum SymbolType {
    Void,
    Integer,
    #[default]
    Real,
    Complex,
    Bool,
    Char,
    String,
    Opaque,
}

#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Debug, Default)]
pub enum Shape {
    Void,
    #[default]
    Scalar,
    Vector,
    Matrix,
    ThreeTensor,
    FourTensor,
    FiveTensor,
    SixTensor,
    SevenTensor,
}

impl Shape {
    /// Number of array dimensions; `Void` and `Scalar` have none.
    pub fn rank(self) -> usize {
        match self {
            Shape::Void | Shape::Scalar => 0,
            Shape::Vector => 1,
            Shape::Matrix => 2,
            Shape::ThreeTensor => 3,
            Shape::FourTensor => 4,
            Shape::FiveTensor => 5,
            Shape::SixTensor => 6,
            Shape::SevenTensor => 7,
        }
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct DimensionBounds {
    pub lower: i64,
    pub upper: i64,
}

#[derive(Clone, Debug)]
pub struct Symbol {
    pub scope: ScopeId,
    pub name: Name,
    pub kind: SymbolKind,
    pub ty: SymbolType,
    pub fe_type: Name,
    pub shape: Shape,
    pub annotation: Name,
    pub active: bool,
    /// Created by the engine rather than the front end.
    pub temp: bool,
    pub pointer: bool,
    pub dimensions: Vec<DimensionBounds>,
}

impl Symbol {
    /// A plain scalar real variable with the schema's defaults.
    pub fn new(scope: ScopeId, name: Name) -> Symbol {
        Symbol {
            scope,
            name,
            kind: SymbolKind::Variable,
            ty: SymbolType::Real,
            fe_type: Name::EMPTY,
            shape: Shape::Scalar,
            annotation: Name::EMPTY,
            active: true,
            temp: false,
            pointer: false,
            dimensions: Vec::new(),
        }
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct AliasRange {
    pub from: u64,
    pub to: u64,
    pub partial: bool,
}

#[derive(Clone, Debug)]
pub struct AliasSet {
    pub key: u64,
    pub ranges: Vec<AliasRange>,
}

/// An entry of the du-ud map or the DO map: the statements a key stands for.
#[derive(Clone, Debug)]
pub struct StmtIdSet {
    pub key: u64,
    /// `statement_id`s; the validator checks that each names a statement of the document.
    pub statements: Vec<Name>,
}

#[derive(Clone, Debug)]
pub struct CallGraphEdge {
    pub id: Name,
    pub annotation: Name,
    pub source: RoutineId,
    pub target: RoutineId,
}

/// A vertex of the call graph.
#[derive(Clone, Debug)]
pub enum Routine {
    ControlFlowGraph(ControlFlowGraph),
    /// Output of the adjoint transformation: code fragments for a reversal template.
    ReplacementList(ReplacementList),
}

impl Routine {
    /// Frees the routine's graphs, keeping its head (symbol, arguments, side-effect lists):
    /// what callers still need once it is written.
    pub fn drop_graphs(&mut self) {
        match self {
            Routine::ControlFlowGraph(cfg) => cfg.graph = FlowGraph::default(),
            Routine::ReplacementList(list) => list.replacements.iter_mut().for_each(|r| r.graph = FlowGraph::default()),
        }
    }

    pub fn id(&self) -> Name {
        match self {
            Routine::ControlFlowGraph(cfg) => cfg.id,
            Routine::ReplacementList(list) => list.id,
        }
    }

    pub fn symbol(&self) -> SymbolId {
        match self {
            Routine::ControlFlowGraph(cfg) => cfg.symbol,
            Routine::ReplacementList(list) => list.symbol,
        }
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub enum Intent {
    In,
    Out,
    #[default]
    InOut,
}

#[derive(Clone, Debug)]
pub struct ArgumentSymbolReference {
    pub position: u32,
    pub symbol: SymbolId,
    pub annotation: Name,
    pub deriv: bool,
    pub intent: Intent,
}

/// The side-effect lists a front end computed for one routine. `None` means the element was
/// absent; the writer treats an empty list like an absent one, as the reference engine does.
#[derive(Clone, Debug, Default)]
pub struct SideEffects {
    pub mod_local: Option<Vec<VariableReference>>,
    pub modified: Option<Vec<VariableReference>>,
    pub read_local: Option<Vec<VariableReference>>,
    pub read: Option<Vec<VariableReference>>,
    pub on_entry: Option<Vec<VariableReference>>,
}

#[derive(Clone, Debug)]
pub struct ControlFlowGraph {
    pub id: Name,
    pub annotation: Name,
    pub symbol: SymbolId,
    /// The scope holding the routine's own symbol.
    pub scope: ScopeId,
    /// The scope of the routine's body.
    pub body_scope: ScopeId,
    pub active: bool,
    pub structured: bool,
    pub arguments: Option<Vec<ArgumentSymbolReference>>,
    pub side_effects: SideEffects,
    pub graph: FlowGraph,
}

#[derive(Clone, Debug)]
pub struct ReplacementList {
    pub id: Name,
    pub annotation: Name,
    pub symbol: SymbolId,
    pub scope: ScopeId,
    pub body_scope: ScopeId,
    pub template_name: Name,
    pub arguments: Option<Vec<ArgumentSymbolReference>>,
    pub replacements: Vec<Replacement>,
}

#[derive(Clone, Debug)]
pub struct Replacement {
    /// The template placeholder number this fragment fills (`"1"` … `"13"`).
    pub placeholder: Name,
    pub structured: bool,
    /// Empty when the replacement `repeats` another.
    pub graph: FlowGraph,
    /// The placeholder of the same list whose code this one is too. The adjoint's strictly
    /// anonymous sweeps (10, 11) equal the taping and adjoint sweeps (2, 3): held once, they
    /// were 43% of the adjoint's output on large inputs. Read code never repeats.
    pub repeats: Option<Name>,
}

impl ReplacementList {
    /// The code of a replacement of this list: its own graph, or the one it repeats.
    pub fn graph_of<'l>(&'l self, replacement: &'l Replacement) -> &'l FlowGraph {
        match replacement.repeats {
            Some(placeholder) => self
                .replacements
                .iter()
                .find(|r| r.placeholder == placeholder && r.repeats.is_none())
                .map_or(&replacement.graph, |r| &r.graph),
            None => &replacement.graph,
        }
    }

    /// Every replacement's code, in order (a repeated graph as often as it is repeated).
    pub fn graphs(&self) -> impl Iterator<Item = &FlowGraph> {
        self.replacements.iter().map(|r| self.graph_of(r))
    }
}

/// Vertices and edges of one control flow graph (a routine's body or a replacement).
#[derive(Clone, Debug, Default)]
pub struct FlowGraph {
    pub vertices: Arena<CfgVertex>,
    pub edges: Vec<CfgEdge>,
}

#[derive(Clone, Debug)]
pub struct CfgVertex {
    pub id: Name,
    pub annotation: Name,
    pub kind: CfgVertexKind,
}

#[derive(Clone, Debug)]
pub enum CfgVertexKind {
    Entry,
    Exit,
    BasicBlock(BasicBlock),
    /// Two-way branch without a matching `EndBranch` in unstructured code.
    If(Conditional),
    /// Boxed: its initialization and update make it by far the largest vertex kind.
    ForLoop(Box<ForLoop>),
    PreLoop(Conditional),
    PostLoop(Conditional),
    Branch(Conditional),
    EndBranch,
    EndLoop,
    Label,
    Goto,
}

impl CfgVertexKind {
    pub fn element_name(&self) -> &'static str {
        match self {
            CfgVertexKind::Entry => "Entry",
            CfgVertexKind::Exit => "Exit",
            CfgVertexKind::BasicBlock(_) => "BasicBlock",
            CfgVertexKind::If(_) => "If",
            CfgVertexKind::ForLoop(_) => "ForLoop",
            CfgVertexKind::PreLoop(_) => "PreLoop",
            CfgVertexKind::PostLoop(_) => "PostLoop",
            CfgVertexKind::Branch(_) => "Branch",
            CfgVertexKind::EndBranch => "EndBranch",
            CfgVertexKind::EndLoop => "EndLoop",
            CfgVertexKind::Label => "Label",
            CfgVertexKind::Goto => "Goto",
        }
    }
}

/// The payload of `If`, `Branch`, `PreLoop` and `PostLoop`.
#[derive(Clone, Debug, Default)]
pub struct Conditional {
    pub condition: Option<Expression>,
    pub line: u64,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub enum LoopReversal {
    Explicit,
    #[default]
    Anonymous,
}

#[derive(Clone, Debug, Default)]
pub struct ForLoop {
    pub initialization: Option<Assignment>,
    pub condition: Option<Expression>,
    pub update: Option<Assignment>,
    pub reversal: LoopReversal,
    pub line: u64,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct CfgEdge {
    pub id: Name,
    pub annotation: Name,
    pub source: CfgVertexId,
    pub target: CfgVertexId,
    /// Branch edges carry the value of the condition that selects them.
    pub condition_value: Option<i64>,
}

#[derive(Clone, Debug)]
pub struct BasicBlock {
    pub scope: ScopeId,
    pub statements: Vec<Statement>,
}

#[derive(Clone, Debug)]
pub enum Statement {
    Assignment(Assignment),
    SubroutineCall(SubroutineCall),
    Marker(Marker),
    DerivativePropagator(DerivativePropagator),
    InlinableSubroutineCall(InlinableSubroutineCall),
}

impl Statement {
    /// The `statement_id`, where the element has one.
    pub fn id(&self) -> Option<Name> {
        match self {
            Statement::Assignment(a) => Some(a.id),
            Statement::SubroutineCall(c) => Some(c.id),
            Statement::Marker(m) => Some(m.id),
            Statement::DerivativePropagator(_) => None,
            Statement::InlinableSubroutineCall(c) => Some(c.id),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Assignment {
    pub id: Name,
    pub do_chain: Option<DoSetId>,
    pub line: u64,
    pub lhs: VariableReference,
    /// `live="false"` marks a left-hand side the front end knows is dead.
    pub lhs_live: bool,
    pub rhs: Expression,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub enum ActiveUse {
    #[default]
    Undefined,
    True,
    False,
}

#[derive(Clone, Debug)]
pub struct SubroutineCall {
    pub id: Name,
    pub symbol: Option<SymbolId>,
    pub active: ActiveUse,
    pub line: u64,
    /// Required by the schema; older front ends omit it and lenient reading infers it.
    pub formal_arg_count: u32,
    pub arguments: Vec<Argument>,
}

#[derive(Clone, Debug)]
pub struct Argument {
    pub position: u32,
    pub annotation: Name,
    pub value: ArgumentValue,
}

#[derive(Clone, Debug)]
pub enum ArgumentValue {
    Variable(VariableReference),
    Constant(Constant),
}

#[derive(Clone, Debug)]
pub struct Marker {
    pub id: Name,
    pub annotation: Name,
}

/// A call the back end inlines from the runtime (`push_s0`, `pop_i_s0`, `setderiv`, …).
#[derive(Clone, Debug)]
pub struct InlinableSubroutineCall {
    pub id: Name,
    pub subroutine_name: Name,
    pub arguments: Vec<Argument>,
}

#[derive(Clone, Debug, Default)]
pub struct DerivativePropagator {
    pub entries: Vec<PropagatorEntry>,
}

/// One entry of a derivative propagator, acting on derivative components.
#[derive(Clone, Debug)]
pub enum PropagatorEntry {
    /// `tgt.d = src.d`
    SetDeriv { target: VariableReference, source: VariableReference },
    /// `tgt.d = -src.d`
    SetNegDeriv { target: VariableReference, source: VariableReference },
    /// `tgt.d += src.d`
    IncDeriv { target: VariableReference, source: VariableReference },
    /// `tgt.d -= src.d`
    DecDeriv { target: VariableReference, source: VariableReference },
    /// `y.d = Σ a·x.d`
    Sax { terms: Vec<ScaledTerm>, y: VariableReference },
    /// `y.d += Σ a·x.d`
    Saxpy { terms: Vec<ScaledTerm>, y: VariableReference },
    /// `x.d = 0`
    ZeroDeriv(VariableReference),
}

#[derive(Clone, Debug)]
pub struct ScaledTerm {
    pub a: Expression,
    pub x: VariableReference,
}

/// An expression graph: operands point to their operators by positioned edges.
#[derive(Clone, Debug, Default)]
pub struct Expression {
    pub vertices: Arena<ExprVertex>,
    pub edges: Vec<ExprEdge>,
}

impl Expression {
    /// The vertex no edge leaves: the value of the whole expression.
    pub fn root(&self) -> Option<ExprVertexId> {
        let index = |id: ExprVertexId| id.into_raw().into_u32() as usize;
        // Asked for every statement by several passes: the marks of an expression of up to 256
        // vertices (all but a few) are bits on the stack, not a vector.
        const BITS: usize = 256;
        if self.vertices.len() <= BITS {
            let mut has_out = [0u64; BITS / 64];
            for edge in &self.edges {
                let v = index(edge.source);
                has_out[v / 64] |= 1 << (v % 64);
            }
            return self
                .vertices
                .iter()
                .map(|(id, _)| id)
                .find(|&id| has_out[index(id) / 64] & (1 << (index(id) % 64)) == 0);
        }
        let mut has_out = vec![false; self.vertices.len()];
        for edge in &self.edges {
            has_out[index(edge.source)] = true;
        }
        self.vertices.iter().map(|(id, _)| id).find(|&id| !has_out[index(id)])
    }

    /// The operands of `vertex` ordered by edge position. Scans every edge: for more than a
    /// vertex or two, take an [`Expression::operand_table`].
    pub fn operands(&self, vertex: ExprVertexId) -> Vec<ExprVertexId> {
        let mut ins: Vec<&ExprEdge> = self.edges.iter().filter(|e| e.target == vertex).collect();
        ins.sort_by_key(|e| e.position);
        ins.into_iter().map(|e| e.source).collect()
    }

    /// The operands of every vertex and the root, found in one pass over the edges.
    pub fn operand_table(&self) -> OperandTable {
        let n = self.vertices.len();
        let index = |v: ExprVertexId| v.into_raw().into_u32() as usize;
        let mut start = vec![0u32; n + 1];
        let mut has_out = vec![false; n];
        for edge in &self.edges {
            start[index(edge.target) + 1] += 1;
            has_out[index(edge.source)] = true;
        }
        for v in 0..n {
            start[v + 1] += start[v];
        }
        let mut fill: Vec<u32> = start[..n].to_vec();
        let mut sorted: Vec<(i64, ExprVertexId)> = vec![(0, ExprVertexId::from_raw(0u32.into())); self.edges.len()];
        for edge in &self.edges {
            let slot = &mut fill[index(edge.target)];
            sorted[*slot as usize] = (edge.position, edge.source);
            *slot += 1;
        }
        for v in 0..n {
            // Stable: operands at the same position (an invalid graph) keep their edge order,
            // as `operands` keeps them.
            sorted[start[v] as usize..start[v + 1] as usize].sort_by_key(|&(position, _)| position);
        }
        let root = self.vertices.iter().map(|(id, _)| id).find(|&id| !has_out[index(id)]);
        OperandTable { start, operands: sorted.into_iter().map(|(_, v)| v).collect(), root }
    }
}

/// The operands of each vertex of one expression, by position: see
/// [`Expression::operand_table`]. Valid as long as the expression's edges do not change.
#[derive(Clone, Debug)]
pub struct OperandTable {
    start: Vec<u32>,
    operands: Vec<ExprVertexId>,
    root: Option<ExprVertexId>,
}

impl OperandTable {
    /// The operands of `vertex`, ordered by edge position.
    pub fn of(&self, vertex: ExprVertexId) -> &[ExprVertexId] {
        let v = vertex.into_raw().into_u32() as usize;
        &self.operands[self.start[v] as usize..self.start[v + 1] as usize]
    }

    /// The first vertex no edge leaves (the expression's value), as [`Expression::root`].
    pub fn root(&self) -> Option<ExprVertexId> {
        self.root
    }
}

#[derive(Clone, Debug)]
pub struct ExprEdge {
    pub id: Name,
    pub annotation: Name,
    pub source: ExprVertexId,
    pub target: ExprVertexId,
    pub position: i64,
}

#[derive(Clone, Debug)]
pub enum ExprVertex {
    Variable(VariableReference),
    Constant(Constant),
    Intrinsic(Intrinsic),
    BooleanOperation(BooleanOperation),
    FunctionCall(FunctionCall),
}

impl ExprVertex {
    pub fn id(&self) -> Name {
        match self {
            ExprVertex::Variable(v) => v.id,
            ExprVertex::Constant(c) => c.id,
            ExprVertex::Intrinsic(i) => i.id,
            ExprVertex::BooleanOperation(b) => b.id,
            ExprVertex::FunctionCall(f) => f.id,
        }
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum ConstantType {
    Real,
    Double,
    Integer,
    Bool,
    Char,
    String,
}

#[derive(Clone, Debug)]
pub struct Constant {
    pub id: Name,
    pub annotation: Name,
    pub ty: ConstantType,
    pub fe_type: Name,
    pub value: Name,
}

#[derive(Clone, Debug)]
pub struct Intrinsic {
    pub id: Name,
    pub annotation: Name,
    pub name: Name,
    /// The schema's `type` attribute (`inlinable` unless said otherwise).
    pub call_type: Name,
    pub result_type: SymbolType,
    pub result_shape: Shape,
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum BooleanOp {
    LessThan,
    LessOrEqual,
    GreaterThan,
    GreaterOrEqual,
    Equal,
    NotEqual,
    And,
    Or,
    Not,
    Xor,
}

#[derive(Clone, Debug)]
pub struct BooleanOperation {
    pub id: Name,
    pub annotation: Name,
    pub op: BooleanOp,
}

#[derive(Clone, Debug)]
pub struct FunctionCall {
    pub id: Name,
    pub annotation: Name,
    pub symbol: Option<SymbolId>,
    pub arguments: Vec<VariableReference>,
}

/// A reference to a variable or a part of it: a small graph of a symbol reference followed by
/// array element selections (`a(i)%b(j)` style chains).
#[derive(Clone, Debug)]
pub struct VariableReference {
    pub id: Name,
    pub annotation: Name,
    pub active: ActiveUse,
    pub alias: Option<AliasSetId>,
    pub du_ud: Option<DuUdSetId>,
    /// Refers to the derivative component, not the value (propagator operands).
    pub deriv: bool,
    pub constant: bool,
    pub vertices: RefVertices,
    pub edges: Vec<VarRefEdge>,
}

/// The vertices of a [`VariableReference`]. Most references name a variable and no more: their
/// one vertex is held in place, without an allocation of its own (a model read from a corpus
/// file takes 10-20% fewer bytes, and reading it 15-25% fewer allocations, than with a `Vec`).
#[derive(Debug, Default)]
pub struct RefVertices(smallvec::SmallVec<[VarRefVertex; 1]>);

impl RefVertices {
    pub fn new() -> RefVertices {
        RefVertices::default()
    }

    /// A reference's only vertex.
    pub fn one(vertex: VarRefVertex) -> RefVertices {
        RefVertices(smallvec::smallvec![vertex])
    }
}

impl Clone for RefVertices {
    /// A lone vertex is cloned in place; longer chains through a `Vec` whose buffer the copy
    /// then takes over (`SmallVec`'s own clone extends element by element, which made cloning
    /// references the largest cost of the change).
    fn clone(&self) -> RefVertices {
        match self.0.as_slice() {
            [vertex] => RefVertices::one(vertex.clone()),
            vertices => RefVertices(smallvec::SmallVec::from_vec(vertices.to_vec())),
        }
    }
}

impl std::ops::Deref for RefVertices {
    type Target = smallvec::SmallVec<[VarRefVertex; 1]>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for RefVertices {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl<'r> IntoIterator for &'r RefVertices {
    type Item = &'r VarRefVertex;
    type IntoIter = std::slice::Iter<'r, VarRefVertex>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'r> IntoIterator for &'r mut RefVertices {
    type Item = &'r mut VarRefVertex;
    type IntoIter = std::slice::IterMut<'r, VarRefVertex>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}

impl IntoIterator for RefVertices {
    type Item = VarRefVertex;
    type IntoIter = smallvec::IntoIter<[VarRefVertex; 1]>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl FromIterator<VarRefVertex> for RefVertices {
    fn from_iter<I: IntoIterator<Item = VarRefVertex>>(iter: I) -> RefVertices {
        RefVertices(iter.into_iter().collect())
    }
}

impl VariableReference {
    /// The symbol the reference starts from (the source of the chain).
    ///
    /// Asked for nearly every reference by every pass and the writer, so it allocates
    /// nothing: chains are a handful of vertices, and scanning the edges once per candidate
    /// is cheaper than marking the targets in a fresh vector (long chains still do that, so
    /// the cost stays linear).
    #[inline]
    pub fn base_symbol(&self) -> Option<SymbolId> {
        match self.vertices.as_slice() {
            // Most references: a lone symbol, answered where the caller stands.
            [VarRefVertex::Symbol(s)] if self.edges.is_empty() => Some(s.symbol),
            _ => self.chain_base_symbol(),
        }
    }

    /// [`VariableReference::base_symbol`] of a chain of vertices.
    fn chain_base_symbol(&self) -> Option<SymbolId> {
        const SCAN: usize = 16;
        if self.vertices.len() > SCAN {
            let mut is_target = vec![false; self.vertices.len()];
            for edge in &self.edges {
                if let Some(target) = is_target.get_mut(edge.target as usize) {
                    *target = true;
                }
            }
            return self.vertices.iter().zip(is_target).find_map(|(v, t)| match v {
                VarRefVertex::Symbol(s) if !t => Some(s.symbol),
                _ => None,
            });
        }
        self.vertices.iter().enumerate().find_map(|(i, v)| match v {
            VarRefVertex::Symbol(s) if !self.edges.iter().any(|e| e.target as usize == i) => Some(s.symbol),
            _ => None,
        })
    }
}

#[derive(Clone, Debug)]
pub struct VarRefEdge {
    pub id: Name,
    pub annotation: Name,
    /// Index into [`VariableReference::vertices`].
    pub source: u32,
    pub target: u32,
}

#[derive(Clone, Debug)]
pub enum VarRefVertex {
    Symbol(SymbolReference),
    ArrayElement(ArrayElementReference),
}

#[derive(Clone, Debug)]
pub struct SymbolReference {
    pub id: Name,
    pub annotation: Name,
    pub symbol: SymbolId,
    /// Front-end `SymbolReferenceProperty` name/value pairs, carried through untouched.
    pub properties: Vec<(Name, Name)>,
}

#[derive(Clone, Debug)]
pub struct ArrayElementReference {
    pub id: Name,
    pub annotation: Name,
    pub indices: Vec<IndexTriplet>,
}

/// One subscript: a single index, or a section `index:bound:stride`.
#[derive(Clone, Debug, Default)]
pub struct IndexTriplet {
    pub index: Option<Expression>,
    pub bound: Option<Expression>,
    pub stride: Option<Expression>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One step of [`symbols_are_found_by_scope_and_name`]: add a symbol of name `.1` to
    /// scope `.0` (if it has none of that name), or forget the symbols from the `n`-th on.
    #[derive(Clone, Debug)]
    enum Step {
        Add(usize, usize),
        Forget(usize),
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            5 => (0usize..3, 0usize..6).prop_map(|(scope, name)| Step::Add(scope, name)),
            1 => (0usize..20).prop_map(Step::Forget),
        ]
    }

    proptest::proptest! {
        /// Whatever symbols are added and forgotten, each `(scope, name)` finds the symbol a
        /// plain list of them finds, whether the name is one symbol's or several scopes'.
        #[test]
        fn symbols_are_found_by_scope_and_name(steps in proptest::collection::vec(step(), 0..50)) {
            let mut cg = CallGraph::default();
            let scopes: Vec<ScopeId> = (0..3)
                .map(|_| cg.scopes.alloc(Scope { id: Name::EMPTY, annotation: Name::EMPTY, symbols: Vec::new() }))
                .collect();
            let names: Vec<Name> = (0..6).map(|k| cg.names.intern(&format!("v{k}"))).collect();
            let mut model: Vec<(ScopeId, Name)> = Vec::new();
            for step in steps {
                match step {
                    Step::Add(scope, name) => {
                        let (scope, name) = (scopes[scope], names[name]);
                        let known = model.iter().position(|&entry| entry == (scope, name));
                        let id = cg.add_symbol(Symbol::new(scope, name));
                        match known {
                            Some(k) => proptest::prop_assert_eq!(id.into_raw().into_u32() as usize, k),
                            None => model.push((scope, name)),
                        }
                    }
                    Step::Forget(len) => {
                        let len = len.min(model.len());
                        cg.forget_symbols_from(len);
                        model.truncate(len);
                    }
                }
                proptest::prop_assert_eq!(cg.symbols.len(), model.len());
                for &scope in &scopes {
                    for &name in &names {
                        let expected = model.iter().position(|&entry| entry == (scope, name));
                        let found = cg.lookup_symbol(scope, name).map(|id| id.into_raw().into_u32() as usize);
                        proptest::prop_assert_eq!(found, expected);
                    }
                }
            }
        }
    }
}
