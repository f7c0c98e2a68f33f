//! Builders for what several passes create: fresh temporaries, references to them, runtime
//! calls. Passes that add code go through here, so every invented name follows one convention
//! (`<prefix><kind>_N`) and every created symbol is marked `temp`.

use rustc_hash::FxHashSet;

use super::names::SeriesId;
use super::*;

/// Hands out the engine's temporaries (`<prefix>aux_N`, `lin_N`, `tyc_N`, `Symbol_N`, …). One
/// instance lives for a whole pipeline run: counters are per kind and call-graph wide, so a
/// name is never reused across routines or passes.
#[derive(Debug, Default)]
pub struct Temporaries {
    /// The next number of each kind, in the order kinds were first asked for. A handful of
    /// kinds, so a list: an `FxHashMap` lookup hashed the kind's text for every temporary.
    counters: Vec<Counter>,
    /// Statement ids in use: the document's and those handed out.
    statement_ids: NameSet,
    /// Statement ids of the document known by their text only: the streaming driver finds
    /// them in a first scan, before the routines they belong to are read.
    reserved: ReservedIds,
    /// Where names are spelled before they are interned: one buffer for every temporary and
    /// statement id handed out, instead of a `String` formatted for each.
    text: String,
    /// Set for a worker that transforms a routine apart from the others ([`Temporaries::deferred`]):
    /// what it asked for, in order.
    deferred: Option<Vec<Deferred>>,
    /// The temporary [`Self::fresh`] made last, and where the statement id of its assignment
    /// stands in the name table ([`Self::assignment_id`] usually comes next, for it).
    last_fresh: Option<LastFresh>,
}

/// The temporary made last: its symbol and name, the identity of the name table that holds
/// the name, the series of its kind's statement ids (`_<prefix><kind>_`) and its number.
#[derive(Debug, Clone, Copy)]
struct LastFresh {
    symbol: SymbolId,
    name: Name,
    table: u64,
    ids: SeriesId,
    number: usize,
}

/// A name a worker asked for but could not choose: temporaries are numbered and statement ids
/// made unique across the whole document, in routine order, which a worker transforming one
/// routine of many does not see. It gets a placeholder ([`placeholder`]) and the request is
/// made again, for real, when the routines are put back in document order.
#[derive(Clone, Debug)]
pub enum Deferred {
    /// [`Temporaries::fresh`]: the worker's symbol, which bears the placeholder as its name.
    Temporary { scope: ScopeId, kind: &'static str, symbol: SymbolId },
    /// [`Temporaries::statement_id`] of this base (which may hold placeholders itself).
    StatementId(String),
    /// [`Temporaries::assignment_id`] of this symbol.
    AssignmentId(SymbolId),
}

/// The text standing for the `index`-th deferred name: NUL characters, which no XML document
/// holds, around its number, so no name read can be mistaken for one, and one built by
/// appending to it (`_derivative_<id>`) still shows where it stands.
pub fn placeholder(index: usize) -> String {
    format!("\0{index}\0")
}

/// Spells `text` with every placeholder in it replaced by `resolve(index)`; `None` if a
/// placeholder is malformed.
pub fn resolve_placeholders(text: &str, mut resolve: impl FnMut(usize) -> Option<String>) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('\0') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let end = after.find('\0')?;
        out.push_str(&resolve(after[..end].parse().ok()?)?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// Statement ids known by their text, kept as 64-bit hashes: an invented id whose hash is
/// taken is passed over, so a collision only skips an id that was free. A document's ids as
/// hashes take about a fifth of the memory of their text in a set (on large inputs the text
/// was 0.4 times the input).
///
/// Beside the hashes, which first bytes the ids have. The ids the engine invents begin with
/// `_` (`_<temporary>`, `_derivative_…`) and a front end's seldom do (none in the corpus or
/// the synthetic inputs), so most questions are answered without hashing the text and probing
/// a set of every statement id of the document.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReservedIds {
    hashes: FxHashSet<u64>,
    first_bytes: [u64; 4],
}

impl ReservedIds {
    pub fn insert(&mut self, id: &str) {
        if let Some((word, bit)) = Self::first_byte(id) {
            self.first_bytes[word] |= bit;
        }
        self.hashes.insert(Self::hash(id));
    }

    pub fn contains(&self, id: &str) -> bool {
        let may = Self::first_byte(id).is_none_or(|(word, bit)| self.first_bytes[word] & bit != 0);
        may && self.hashes.contains(&Self::hash(id))
    }

    /// Where `id`'s first byte stands in `first_bytes` (none for the empty id).
    fn first_byte(id: &str) -> Option<(usize, u64)> {
        id.as_bytes().first().map(|&first| (usize::from(first / 64), 1 << (first % 64)))
    }

    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Takes in the ids of `other`.
    pub fn extend(&mut self, other: ReservedIds) {
        // Into none, the set is taken whole rather than hashed in again.
        if self.is_empty() {
            *self = other;
            return;
        }
        for (mine, theirs) in self.first_bytes.iter_mut().zip(other.first_bytes) {
            *mine |= theirs;
        }
        self.hashes.extend(other.hashes);
    }

    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    fn hash(id: &str) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = rustc_hash::FxHasher::default();
        id.hash(&mut hasher);
        hasher.finish()
    }
}

impl Temporaries {
    /// Temporaries for transforming `cg`: the statement ids they hand out avoid the ids its
    /// statements already have (the schema holds them unique in a control flow graph).
    pub fn for_call_graph(cg: &CallGraph) -> Temporaries {
        let mut statement_ids = NameSet::default();
        for (_, routine) in cg.routines.iter() {
            let graphs: Vec<&FlowGraph> = match routine {
                Routine::ControlFlowGraph(cfg) => vec![&cfg.graph],
                Routine::ReplacementList(list) => list.replacements.iter().map(|r| &r.graph).collect(),
            };
            for (_, vertex) in graphs.into_iter().flat_map(|g| g.vertices.iter()) {
                match &vertex.kind {
                    CfgVertexKind::BasicBlock(block) => {
                        statement_ids.extend(block.statements.iter().filter_map(Statement::id))
                    }
                    CfgVertexKind::ForLoop(for_loop) => {
                        let ForLoop { initialization, update, .. } = &**for_loop;
                        statement_ids.extend([initialization, update].into_iter().flatten().map(|a| a.id));
                    }
                    _ => {}
                }
            }
        }
        Temporaries { statement_ids, ..Temporaries::default() }
    }

    /// Temporaries for a worker that transforms routines apart from the others: every name
    /// it hands out is a placeholder, and what it stands for is kept ([`Self::take_deferred`])
    /// for the thread that puts the routines back in order to ask for again.
    pub fn deferred() -> Temporaries {
        Temporaries { deferred: Some(Vec::new()), ..Temporaries::default() }
    }

    /// What was deferred since the last call, in order; the `k`-th stands behind
    /// `placeholder(k)`.
    pub fn take_deferred(&mut self) -> Vec<Deferred> {
        self.deferred.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn defer(log: &mut Vec<Deferred>, cg: &mut CallGraph, request: Deferred) -> Name {
        let name = cg.names.intern(&placeholder(log.len()));
        log.push(request);
        name
    }

    /// Temporaries for a document read routine by routine: the statement ids they hand out
    /// avoid `reserved`, the ids of every statement of the document, as [`Self::for_call_graph`]
    /// does once all of it is read.
    pub fn with_reserved_statement_ids(reserved: ReservedIds) -> Temporaries {
        Temporaries { reserved, ..Temporaries::default() }
    }

    /// A statement id for code the engine adds: `base`, or `base_2`, `base_3`, … when that is
    /// in use already.
    pub fn statement_id(&mut self, cg: &mut CallGraph, base: &str) -> Name {
        if let Some(log) = &mut self.deferred {
            return Self::defer(log, cg, Deferred::StatementId(base.to_owned()));
        }
        let mut id = cg.names.intern(base);
        let mut k = 2;
        while self.reserved.contains(cg.names.get(id)) || !self.statement_ids.insert(id) {
            self.text.clear();
            self.text.push_str(base);
            self.text.push('_');
            self.text.push_str(itoa::Buffer::new().format(k));
            id = cg.names.intern(&self.text);
            k += 1;
        }
        id
    }

    /// The statement id of the assignment to a temporary: `_<symbol>`, numbered on reuse as
    /// [`Self::statement_id`] does.
    pub fn assignment_id(&mut self, cg: &mut CallGraph, symbol: SymbolId) -> Name {
        if let Some(log) = &mut self.deferred {
            return Self::defer(log, cg, Deferred::AssignmentId(symbol));
        }
        // The temporary just made: `_<symbol>` is the same number of its kind's series of
        // statement ids, found by that number rather than spelled, then parsed back into the
        // series by the name table (a third of the instructions of this call). Where it is
        // taken, the general way below finds the next free one.
        if let Some(last) = self.last_fresh.take()
            && last.symbol == symbol
            && last.table == cg.names.identity()
            && cg.symbols[symbol].name == last.name
        {
            let (id, _) = cg.names.numbered(last.ids, last.number);
            if !self.reserved.contains(cg.names.get(id)) && self.statement_ids.insert(id) {
                return id;
            }
        }
        let mut base = std::mem::take(&mut self.text);
        base.clear();
        base.push('_');
        base.push_str(cg.symbol_name(symbol));
        let id = self.statement_id(cg, &base);
        if self.text.capacity() < base.capacity() {
            self.text = base;
        }
        id
    }

    /// A new temporary `<prefix><kind>_N` in `scope`: a scalar real variable marked `temp`,
    /// shaped further by `init`. Skips numbers whose name the scope already holds (inputs that
    /// went through the engine once).
    pub fn fresh(
        &mut self,
        cg: &mut CallGraph,
        scope: ScopeId,
        kind: &'static str,
        init: impl FnOnce(&mut Symbol),
    ) -> SymbolId {
        if let Some(log) = &mut self.deferred {
            let name = cg.names.intern(&placeholder(log.len()));
            let mut symbol = Symbol::new(scope, name);
            symbol.temp = true;
            init(&mut symbol);
            let id = cg.add_symbol(symbol);
            log.push(Deferred::Temporary { scope, kind, symbol: id });
            return id;
        }
        let counter = counter(&mut self.counters, kind);
        let (series, ids) = match counter.series {
            Some((table, prefix, series, ids)) if table == cg.names.identity() && prefix == cg.prefix => (series, ids),
            _ => {
                // `<prefix><kind>_` numbers the temporaries, and `_<prefix><kind>_` the
                // statement ids of their assignments ([`Self::assignment_id`]): both are
                // series of the name table.
                self.text.clear();
                self.text.push('_');
                self.text.push_str(cg.names.get(cg.prefix));
                self.text.push_str(kind);
                self.text.push('_');
                let ids = cg.names.series(&self.text);
                let series = cg.names.series(&self.text[1..]);
                counter.series = Some((cg.names.identity(), cg.prefix, series, ids));
                (series, ids)
            }
        };
        let (name, number) = loop {
            let number = counter.next;
            counter.next += 1;
            let (name, new) = cg.names.numbered(series, number);
            // A name interned just now names no symbol yet: nothing to look up.
            if new || cg.lookup_symbol(scope, name).is_none() {
                break (name, number);
            }
        };
        let mut symbol = Symbol::new(scope, name);
        symbol.temp = true;
        init(&mut symbol);
        let id = cg.add_new_symbol(symbol);
        self.last_fresh = Some(LastFresh { symbol: id, name, table: cg.names.identity(), ids, number });
        id
    }
}

/// The numbering of one kind of temporaries.
#[derive(Debug)]
struct Counter {
    kind: &'static str,
    /// The number to try next.
    next: usize,
    /// The series of the kind's names in the name table of this identity
    /// ([`crate::ir::Names::identity`]) under this prefix, as that table registered it, and
    /// the series of the statement ids of their assignments.
    series: Option<(u64, Name, SeriesId, SeriesId)>,
}

/// The counter of `kind` among `counters`, new at 0. Kinds are string literals: the same
/// address, as a rule, so comparing addresses decides before the texts need comparing.
fn counter<'c>(counters: &'c mut Vec<Counter>, kind: &'static str) -> &'c mut Counter {
    let same = |known: &str| std::ptr::eq(known, kind) || crate::bytes::eq(known.as_bytes(), kind.as_bytes());
    let index = match counters.iter().position(|counter| same(counter.kind)) {
        Some(index) => index,
        None => {
            counters.push(Counter { kind, next: 0, series: None });
            counters.len() - 1
        }
    };
    &mut counters[index]
}

/// The schema's array shape of the given rank (rank 0 is a scalar).
pub fn shape_of_rank(rank: usize) -> Shape {
    match rank {
        0 => Shape::Scalar,
        1 => Shape::Vector,
        2 => Shape::Matrix,
        3 => Shape::ThreeTensor,
        4 => Shape::FourTensor,
        5 => Shape::FiveTensor,
        6 => Shape::SixTensor,
        _ => Shape::SevenTensor,
    }
}

/// A reference to the whole of `symbol`, no subscripts.
pub fn whole_reference(cg: &mut CallGraph, symbol: SymbolId, active: bool) -> VariableReference {
    let one = cg.names.intern("1");
    VariableReference {
        id: one,
        annotation: Name::EMPTY,
        active: if active { ActiveUse::True } else { ActiveUse::False },
        alias: None,
        du_ud: None,
        deriv: false,
        constant: false,
        vertices: RefVertices::one(VarRefVertex::Symbol(SymbolReference {
            id: one,
            annotation: Name::EMPTY,
            symbol,
            properties: Vec::new(),
        })),
        edges: Vec::new(),
    }
}

/// A call of an inlinable runtime routine (`oad_convert`, `push_s0`, …) with the arguments at
/// positions 1, 2, … in order.
pub fn inlinable_call(cg: &mut CallGraph, id: &str, routine: &str, arguments: Vec<ArgumentValue>) -> Statement {
    let id = cg.names.intern(id);
    let subroutine_name = cg.names.intern(routine);
    let arguments = arguments
        .into_iter()
        .zip(1..)
        .map(|(value, position)| Argument { position, annotation: Name::EMPTY, value })
        .collect();
    Statement::InlinableSubroutineCall(InlinableSubroutineCall { id, subroutine_name, arguments })
}

impl VariableReference {
    /// The subscripts of the reference's array access, if it has one (`a(i, 1:n)`).
    pub fn array_access(&self) -> Option<&ArrayElementReference> {
        self.vertices.iter().rev().find_map(|v| match v {
            VarRefVertex::ArrayElement(a) => Some(a),
            VarRefVertex::Symbol(_) => None,
        })
    }

    /// The same reference without its array access: the whole array `a` of `a(i)`.
    pub fn without_array_access(&self) -> VariableReference {
        let mut whole = self.clone();
        let keep: Vec<bool> = whole.vertices.iter().map(|v| matches!(v, VarRefVertex::Symbol(_))).collect();
        let mut renumber = vec![u32::MAX; keep.len()];
        let mut next = 0;
        for (old, &k) in keep.iter().enumerate() {
            if k {
                renumber[old] = next;
                next += 1;
            }
        }
        whole.vertices = whole.vertices.into_iter().zip(&keep).filter(|(_, k)| **k).map(|(v, _)| v).collect();
        whole.edges.retain(|e| keep[e.source as usize] && keep[e.target as usize]);
        for edge in &mut whole.edges {
            edge.source = renumber[edge.source as usize];
            edge.target = renumber[edge.target as usize];
        }
        whole
    }

    /// Appends `access` to this plain reference: `t` becomes `t(i)`.
    pub fn with_array_access(mut self, cg: &mut CallGraph, access: ArrayElementReference) -> VariableReference {
        let source = (self.vertices.len() - 1) as u32;
        let target = self.vertices.len() as u32;
        let mut access = access;
        access.id = cg.names.intern_index(target as usize + 1);
        self.vertices.push(VarRefVertex::ArrayElement(access));
        let id = cg.names.intern_index(self.edges.len() + 1);
        self.edges.push(VarRefEdge { id, annotation: Name::EMPTY, source, target });
        self
    }

    /// Rank of the value the reference denotes: the symbol's rank without an array access,
    /// else the number of sections (`1:n`, `:`) among the subscripts; an element is rank 0.
    pub fn effective_rank(&self, cg: &CallGraph) -> usize {
        match self.array_access() {
            None => self.base_symbol().map_or(0, |s| cg.symbols[s].shape.rank()),
            Some(access) => access.indices.iter().filter(|t| t.is_section()).count(),
        }
    }
}

impl IndexTriplet {
    /// A section `lo:hi:stride` or `:`, as opposed to a single index.
    pub fn is_section(&self) -> bool {
        self.bound.is_some() || self.stride.is_some() || self.index.is_none()
    }
}

impl Expression {
    /// The symbols of the variables the expression reads, in vertex order, each once (subscripts
    /// of those variables included).
    pub fn variables_read(&self) -> Vec<SymbolId> {
        let mut out = Vec::new();
        for (_, vertex) in self.vertices.iter() {
            if let ExprVertex::Variable(reference) = vertex {
                reference.symbols_read(&mut out);
            }
        }
        out
    }
}

impl VariableReference {
    /// Adds the reference's base symbol and the symbols of its subscripts to `out` (once each).
    pub fn symbols_read(&self, out: &mut Vec<SymbolId>) {
        if let Some(base) = self.base_symbol()
            && !out.contains(&base)
        {
            out.push(base);
        }
        for vertex in &self.vertices {
            if let VarRefVertex::ArrayElement(access) = vertex {
                for triplet in &access.indices {
                    for e in [&triplet.index, &triplet.bound, &triplet.stride].into_iter().flatten() {
                        for s in e.variables_read() {
                            if !out.contains(&s) {
                                out.push(s);
                            }
                        }
                    }
                }
            }
        }
    }
}

impl VariableReference {
    /// Whether two references denote the same place: the same symbols and structurally equal
    /// subscripts (ids, annotations and map keys aside).
    pub fn same_place(&self, other: &VariableReference) -> bool {
        self.vertices.len() == other.vertices.len()
            && self.vertices.iter().zip(&other.vertices).all(|pair| match pair {
                (VarRefVertex::Symbol(a), VarRefVertex::Symbol(b)) => a.symbol == b.symbol,
                (VarRefVertex::ArrayElement(a), VarRefVertex::ArrayElement(b)) => {
                    a.indices.len() == b.indices.len()
                        && a.indices.iter().zip(&b.indices).all(|(s, t)| {
                            same_part(&s.index, &t.index)
                                && same_part(&s.bound, &t.bound)
                                && same_part(&s.stride, &t.stride)
                        })
                }
                _ => false,
            })
    }
}

impl VariableReference {
    /// A hash that agrees with [`VariableReference::same_place`]: references denoting the same
    /// place hash alike, so a table keyed by it finds the candidates without comparing each.
    pub fn place_hash(&self) -> u64 {
        use std::hash::Hasher;
        let mut hasher = rustc_hash::FxHasher::default();
        hash_place(self, &mut hasher);
        hasher.finish()
    }
}

fn hash_place<H: std::hash::Hasher>(reference: &VariableReference, state: &mut H) {
    use std::hash::Hash;
    reference.vertices.len().hash(state);
    for vertex in reference.vertices.iter() {
        match vertex {
            VarRefVertex::Symbol(s) => {
                0u8.hash(state);
                s.symbol.hash(state);
            }
            VarRefVertex::ArrayElement(e) => {
                1u8.hash(state);
                e.indices.len().hash(state);
                for triplet in &e.indices {
                    for part in [&triplet.index, &triplet.bound, &triplet.stride] {
                        match part.as_ref().and_then(|x| x.root().map(|root| (x, root))) {
                            Some((x, root)) => hash_value(x, root, state),
                            None => part.is_some().hash(state),
                        }
                    }
                }
            }
        }
    }
}

fn hash_value<H: std::hash::Hasher>(expression: &Expression, vertex: ExprVertexId, state: &mut H) {
    use std::hash::Hash;
    match &expression.vertices[vertex] {
        ExprVertex::Variable(r) => {
            2u8.hash(state);
            hash_place(r, state);
        }
        ExprVertex::Constant(c) => {
            3u8.hash(state);
            c.value.hash(state);
            c.ty.hash(state);
        }
        ExprVertex::Intrinsic(i) => {
            4u8.hash(state);
            i.name.hash(state);
        }
        ExprVertex::BooleanOperation(b) => {
            5u8.hash(state);
            b.op.hash(state);
        }
        _ => 6u8.hash(state),
    }
    let operands = expression.operands(vertex);
    operands.len().hash(state);
    for operand in operands {
        hash_value(expression, operand, state);
    }
}

fn same_part(a: &Option<Expression>, b: &Option<Expression>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => match (a.root(), b.root()) {
            (Some(ra), Some(rb)) => same_value(a, ra, b, rb),
            (None, None) => true,
            _ => false,
        },
        _ => false,
    }
}

fn same_value(a: &Expression, va: ExprVertexId, b: &Expression, vb: ExprVertexId) -> bool {
    let same_vertex = match (&a.vertices[va], &b.vertices[vb]) {
        (ExprVertex::Variable(x), ExprVertex::Variable(y)) => x.same_place(y),
        (ExprVertex::Constant(x), ExprVertex::Constant(y)) => x.value == y.value && x.ty == y.ty,
        (ExprVertex::Intrinsic(x), ExprVertex::Intrinsic(y)) => x.name == y.name,
        (ExprVertex::BooleanOperation(x), ExprVertex::BooleanOperation(y)) => x.op == y.op,
        _ => false,
    };
    if !same_vertex {
        return false;
    }
    let (oa, ob) = (a.operands(va), b.operands(vb));
    oa.len() == ob.len() && oa.iter().zip(&ob).all(|(&x, &y)| same_value(a, x, b, y))
}

impl Expression {
    /// An expression of one vertex.
    pub fn single(vertex: ExprVertex) -> Expression {
        let mut expression = Expression::default();
        expression.vertices.alloc(vertex);
        expression
    }

    /// The value of a variable.
    pub fn variable(reference: VariableReference) -> Expression {
        Expression::single(ExprVertex::Variable(reference))
    }

    /// A literal of the given type, spelled `text`.
    pub fn constant(cg: &mut CallGraph, ty: ConstantType, text: &str) -> Expression {
        let id = cg.names.intern("1");
        let value = cg.names.intern(text);
        Expression::single(ExprVertex::Constant(Constant {
            id,
            annotation: Name::EMPTY,
            ty,
            fe_type: Name::EMPTY,
            value,
        }))
    }

    /// `operator(operands…)`: the operands copied under a new root, at positions 1, 2, ….
    fn apply(cg: &mut CallGraph, operator: ExprVertex, operands: Vec<Expression>) -> Expression {
        let mut out = Expression::default();
        let root = out.vertices.alloc(operator);
        for (position, operand) in (1..).zip(operands) {
            let Some(operand_root) = operand.root() else { continue };
            let mut map = Vec::with_capacity(operand.vertices.len());
            for (_, vertex) in operand.vertices.iter() {
                map.push(out.vertices.alloc(vertex.clone()));
            }
            let index = |id: ExprVertexId| map[id.into_raw().into_u32() as usize];
            for edge in &operand.edges {
                out.edges.push(ExprEdge { source: index(edge.source), target: index(edge.target), ..edge.clone() });
            }
            out.edges.push(ExprEdge {
                id: Name::EMPTY,
                annotation: Name::EMPTY,
                source: index(operand_root),
                target: root,
                position,
            });
        }
        // Vertex and edge ids are positions in this expression, as the schema wants them unique.
        let ids: Vec<Name> = (1..=out.vertices.len()).map(|k| cg.names.intern_index(k)).collect();
        for ((_, vertex), &id) in out.vertices.iter_mut().zip(&ids) {
            match vertex {
                ExprVertex::Variable(v) => v.id = id,
                ExprVertex::Constant(c) => c.id = id,
                ExprVertex::Intrinsic(i) => i.id = id,
                ExprVertex::BooleanOperation(b) => b.id = id,
                ExprVertex::FunctionCall(f) => f.id = id,
            }
        }
        for (k, edge) in out.edges.iter_mut().enumerate() {
            edge.id = cg.names.intern_index(k + 1);
        }
        out
    }

    /// `name(left, right)` for an integer intrinsic such as `add_scal_scal`.
    pub fn intrinsic(cg: &mut CallGraph, name: &str, left: Expression, right: Expression) -> Expression {
        Expression::call(cg, name, SymbolType::Integer, vec![left, right])
    }

    /// `name(operands…)` for an inlinable intrinsic with a scalar result of type `ty`.
    pub fn call(cg: &mut CallGraph, name: &str, ty: SymbolType, operands: Vec<Expression>) -> Expression {
        let operator = ExprVertex::Intrinsic(Intrinsic {
            id: Name::EMPTY,
            annotation: Name::EMPTY,
            name: cg.names.intern(name),
            call_type: cg.names.intern("inlinable"),
            result_type: ty,
            result_shape: Shape::Scalar,
        });
        Expression::apply(cg, operator, operands)
    }

    /// `left op right` for a comparison or logical operation.
    pub fn boolean(cg: &mut CallGraph, op: BooleanOp, left: Expression, right: Expression) -> Expression {
        let operator = ExprVertex::BooleanOperation(BooleanOperation { id: Name::EMPTY, annotation: Name::EMPTY, op });
        Expression::apply(cg, operator, vec![left, right])
    }
}

/// `lhs = rhs` with the given statement id.
pub fn assignment(cg: &mut CallGraph, id: &str, lhs: VariableReference, rhs: Expression) -> Assignment {
    Assignment { id: cg.names.intern(id), do_chain: None, line: 0, lhs, lhs_live: true, rhs }
}

/// Builds a control flow graph vertex by vertex; edge ids are numbered in creation order.
#[derive(Default)]
pub struct FlowGraphBuilder {
    pub graph: FlowGraph,
}

impl FlowGraphBuilder {
    pub fn vertex(&mut self, cg: &mut CallGraph, id: &str, annotation: &str, kind: CfgVertexKind) -> CfgVertexId {
        let id = cg.names.intern(id);
        let annotation = cg.names.intern(annotation);
        self.graph.vertices.alloc(CfgVertex { id, annotation, kind })
    }

    /// A copy of another graph's vertex (same id, annotation and contents).
    pub fn copy(&mut self, vertex: &CfgVertex) -> CfgVertexId {
        self.graph.vertices.alloc(vertex.clone())
    }

    pub fn edge(&mut self, cg: &mut CallGraph, source: CfgVertexId, target: CfgVertexId, condition_value: Option<i64>) {
        let id = cg.names.intern_index(self.graph.edges.len() + 1);
        self.graph.edges.push(CfgEdge { id, annotation: Name::EMPTY, source, target, condition_value });
    }

    /// Entry → one basic block holding `statements` → Exit.
    pub fn straight(cg: &mut CallGraph, scope: ScopeId, statements: Vec<Statement>) -> FlowGraph {
        let mut builder = FlowGraphBuilder::default();
        let entry = builder.vertex(cg, "1", "", CfgVertexKind::Entry);
        let exit = builder.vertex(cg, "2", "", CfgVertexKind::Exit);
        let block = builder.vertex(cg, "3", "", CfgVertexKind::BasicBlock(BasicBlock { scope, statements }));
        builder.edge(cg, entry, block, None);
        builder.edge(cg, block, exit, None);
        builder.graph
    }
}

/// An integer literal.
pub fn integer_constant(cg: &mut CallGraph, value: i64) -> Constant {
    let id = cg.names.intern("1");
    let text = cg.names.intern_integer(value);
    Constant { id, annotation: Name::EMPTY, ty: ConstantType::Integer, fe_type: Name::EMPTY, value: text }
}

impl CallGraph {
    /// The active local variables of a routine whose storage exists at entry: real variables of
    /// its body scope that are not formals and have a declared shape.
    pub fn active_locals(&self, cfg: &ControlFlowGraph) -> Vec<SymbolId> {
        let formals: Vec<SymbolId> = cfg.arguments.iter().flatten().map(|a| a.symbol).collect();
        self.scopes[cfg.body_scope]
            .symbols
            .iter()
            .copied()
            .filter(|&id| {
                let s = &self.symbols[id];
                s.kind == SymbolKind::Variable
                    && s.active
                    && matches!(s.ty, SymbolType::Real | SymbolType::Complex)
                    && !formals.contains(&id)
                    && s.dimensions.len() == s.shape.rank()
            })
            .collect()
    }
}

impl FlowGraph {
    /// Puts `block` between Exit and everything that led to it; `edge_id` names the new edge
    /// into Exit. Returns the block's vertex, or `None` for a graph without Exit (unchanged).
    pub fn insert_before_exit(&mut self, block: CfgVertex, edge_id: Name) -> Option<CfgVertexId> {
        let exit = self.vertices.iter().find(|(_, v)| matches!(v.kind, CfgVertexKind::Exit)).map(|(id, _)| id)?;
        let block = self.vertices.alloc(block);
        for edge in self.edges.iter_mut().filter(|e| e.target == exit) {
            edge.target = block;
        }
        self.edges.push(CfgEdge {
            id: edge_id,
            annotation: Name::EMPTY,
            source: block,
            target: exit,
            condition_value: None,
        });
        Some(block)
    }

    /// Puts `block` between Entry and what Entry led to; `edge_id` names the new Entry edge.
    /// Returns the block's vertex, or `None` for a graph without Entry (left unchanged).
    pub fn insert_after_entry(&mut self, block: CfgVertex, edge_id: Name) -> Option<CfgVertexId> {
        let entry = self.vertices.iter().find(|(_, v)| matches!(v.kind, CfgVertexKind::Entry)).map(|(id, _)| id)?;
        let block = self.vertices.alloc(block);
        for edge in self.edges.iter_mut().filter(|e| e.source == entry) {
            edge.source = block;
        }
        self.edges.push(CfgEdge {
            id: edge_id,
            annotation: Name::EMPTY,
            source: entry,
            target: block,
            condition_value: None,
        });
        Some(block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deferring_worker_hands_out_placeholders_and_keeps_the_requests() {
        let mut cg = CallGraph::default();
        let scope = cg.scopes.alloc(Scope { id: Name::EMPTY, annotation: Name::EMPTY, symbols: Vec::new() });
        let mut temporaries = Temporaries::deferred();
        let symbol = temporaries.fresh(&mut cg, scope, "Symbol", |s| s.shape = Shape::Vector);
        let id = temporaries.assignment_id(&mut cg, symbol);
        let base = format!("_derivative_{}", cg.name(id));
        let derivative = temporaries.statement_id(&mut cg, &base);
        assert_eq!(cg.symbol_name(symbol), placeholder(0));
        assert_eq!(cg.symbols[symbol].shape, Shape::Vector);
        assert!(cg.symbols[symbol].temp);
        assert_eq!(cg.name(id), placeholder(1));
        assert_eq!(cg.name(derivative), placeholder(2));
        let requests = temporaries.take_deferred();
        assert!(matches!(requests[0], Deferred::Temporary { kind: "Symbol", symbol: s, .. } if s == symbol));
        assert!(matches!(requests[1], Deferred::AssignmentId(s) if s == symbol));
        let Deferred::StatementId(base) = &requests[2] else { panic!("{:?}", requests[2]) };
        // What the placeholders in a derived name stand for is spelled back in.
        let spelled = resolve_placeholders(base, |k| Some(format!("<{k}>")));
        assert_eq!(spelled.as_deref(), Some("_derivative_<1>"));
        assert_eq!(resolve_placeholders("plain", |_| None).as_deref(), Some("plain"));
        assert_eq!(resolve_placeholders("broken\u{0}7", |k| Some(k.to_string())), None);
        assert!(temporaries.take_deferred().is_empty());
    }

    #[test]
    fn reserved_ids_answer_as_the_set_of_their_texts() {
        let ids = ["s1", "_s2", "", "r0_s3", "\u{e9}t\u{e9}", "_derivative_7"];
        let (mut one, mut other) = (ReservedIds::default(), ReservedIds::default());
        for (k, id) in ids.iter().enumerate() {
            if k % 2 == 0 { one.insert(id) } else { other.insert(id) }
        }
        one.extend(other);
        assert_eq!(one.len(), ids.len());
        for id in ids {
            assert!(one.contains(id), "{id:?}");
        }
        // Absent ids, with first bytes the set has and has not seen.
        for id in ["s2", "_s1", "r1", "x", "_", "\u{e9}", "\u{e8}"] {
            assert!(!one.contains(id), "{id:?}");
        }
        let mut without_underscore = ReservedIds::default();
        without_underscore.insert("r0_s1");
        assert!(!without_underscore.contains("_r0_s1"));
        assert!(without_underscore.contains("r0_s1"));
    }

    /// The statement id of a temporary's assignment, asked for right after the temporary is
    /// made, is found by its number in the series of such ids; asked for later, it is spelled
    /// and interned. Both give the same ids, taken ones passed over alike.
    #[test]
    fn assignment_ids_are_the_same_asked_for_at_once_or_later() {
        let ids = |at_once: bool| {
            let mut cg = CallGraph::default();
            let scope = cg.scopes.alloc(Scope { id: Name::EMPTY, annotation: Name::EMPTY, symbols: Vec::new() });
            let mut reserved = ReservedIds::default();
            reserved.insert("_lin_1");
            let mut temporaries = Temporaries::with_reserved_statement_ids(reserved);
            let handed_out = temporaries.statement_id(&mut cg, "_lin_2");
            assert_eq!(cg.name(handed_out), "_lin_2");
            let mut ids = Vec::new();
            for _ in 0..4 {
                let symbol = temporaries.fresh(&mut cg, scope, "lin", |_| {});
                if !at_once {
                    // Another temporary in between: the id is found the general way.
                    temporaries.fresh(&mut cg, scope, "aux", |_| {});
                }
                let id = temporaries.assignment_id(&mut cg, symbol);
                ids.push(cg.name(id).to_owned());
            }
            ids
        };
        let expected = ["_lin_0", "_lin_1_2", "_lin_2_2", "_lin_3"];
        assert_eq!(ids(true), expected);
        assert_eq!(ids(false), expected);
    }

    #[test]
    fn statement_ids_avoid_reserved_and_handed_out_ids() {
        let mut cg = CallGraph::default();
        let mut reserved = ReservedIds::default();
        reserved.insert("_a");
        reserved.insert("_a_2");
        let mut temporaries = Temporaries::with_reserved_statement_ids(reserved);
        let first = temporaries.statement_id(&mut cg, "_a");
        assert_eq!(cg.name(first), "_a_3");
        let second = temporaries.statement_id(&mut cg, "_a");
        assert_eq!(cg.name(second), "_a_4");
        let plain = temporaries.statement_id(&mut cg, "b");
        assert_eq!(cg.name(plain), "b");
        let again = temporaries.statement_id(&mut cg, "b");
        assert_eq!(cg.name(again), "b_2");
    }
}
