//! Jacobian accumulation by elimination on linearized computational graphs (LCGs): vertex,
//! front/back edge and face elimination, heuristics and an exact search that choose
//! elimination sequences, their cost, and a replay that turns a sequence into accumulation
//! operations through a callback. Nothing here knows about the IR or XAIF: labels are ±1,
//! constants, or opaque run-time values.
//!
//! Eliminating an intermediate vertex k adds, for every predecessor i and successor j, the
//! product c_jk·c_ki to the edge (i, j) (fill-in when it is new, absorption when it exists) and
//! removes k (openad-overview §2.1). Front-eliminating the edge (i, k) does the same for that
//! one predecessor only, back-eliminating (k, j) for that one successor (control-flow-reversal
//! §3.1). Face elimination works on the directed line graph, one product per step
//! (openad-overview §2.1, see `elimination/face.rs`). An intermediate left without predecessors or
//! successors contributes nothing and drops out together with its edges.
//!
//! Two cost models: the classic count of label products (every product is a multiplication,
//! the remainder costs nothing), and the one tangent code pays per derivative direction —
//! products with a ±1 factor or of two constants are folded at compile time, sums cost no
//! multiplication, and every edge left in the remainder graph that is not ±1 costs one
//! multiplication in the propagator. Under the second model eliminating everything is not
//! always best, so every method reports the cheapest prefix of its sequence ("scarcity": stop
//! where propagating through what is left is cheaper).
//!
//! Planning and replay share one implementation of the graph operations ([`Arith`] decides what
//! folds); while planning the callback only hands out placeholder labels, so the planned cost
//! is exactly what a replay emits.

mod face;
#[cfg(test)]
mod tests;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use face::LineGraph;

/// What is known about a partial derivative when code is generated.
#[derive(Copy, Clone, PartialEq, Debug)]
pub enum Label {
    One,
    MinusOne,
    Constant(f64),
    /// Known only at run time; the id means something to the caller only.
    Variable(u32),
}

impl Label {
    pub fn known(self) -> Option<f64> {
        match self {
            Label::One => Some(1.0),
            Label::MinusOne => Some(-1.0),
            Label::Constant(c) => Some(c),
            Label::Variable(_) => None,
        }
    }

    pub fn from_value(value: f64) -> Label {
        if value == 1.0 {
            Label::One
        } else if value == -1.0 {
            Label::MinusOne
        } else {
            Label::Constant(value)
        }
    }

    /// ±1: free as a factor and as a propagator term.
    pub fn is_unit(self) -> bool {
        matches!(self, Label::One | Label::MinusOne)
    }

    fn is_zero(self) -> bool {
        self == Label::Constant(0.0)
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum VertexKind {
    Independent,
    Intermediate,
    Dependent,
}

/// A linearized computational graph; vertices are numbered in a topological order.
#[derive(Clone, Debug, Default)]
pub struct Lcg {
    pub kinds: Vec<VertexKind>,
    /// `(source, target, label)` with `source < target`; parallel edges are summed.
    pub edges: Vec<(usize, usize, Label)>,
}

impl Lcg {
    fn intermediates(&self) -> usize {
        self.kinds.iter().filter(|k| **k == VertexKind::Intermediate).count()
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub enum CostModel {
    /// Every label product is one multiplication; the remainder costs nothing.
    Classic,
    /// Products with ±1 or of two constants are free; each remainder edge that is not ±1
    /// costs one.
    #[default]
    UnitAware,
    /// As `UnitAware`, but a remainder edge that is not ±1 costs two: the adjoint's taping
    /// pushes its factor and its reverse sweep multiplies by it.
    Adjoint,
}

impl CostModel {
    /// Whether products with ±1 or of constants are free and remainder edges count.
    pub fn unit_aware(self) -> bool {
        self != CostModel::Classic
    }

    /// What one remainder edge that is not ±1 costs.
    pub fn edge_weight(self) -> usize {
        match self {
            CostModel::Classic => 0,
            CostModel::UnitAware => 1,
            CostModel::Adjoint => 3,
        }
    }
}

/// An operation the replay needs materialized as a new run-time label. Operands are never
/// both known, and a product never has a ±1 factor (those are folded before asking).
#[derive(Copy, Clone, PartialEq, Debug)]
pub enum Op {
    Mul(Label, Label),
    Add(Label, Label),
    Neg(Label),
}

/// One elimination.
#[derive(Copy, Clone, PartialEq, Eq, Debug, PartialOrd, Ord)]
pub enum Step {
    /// Eliminate an intermediate vertex.
    Vertex(usize),
    /// Front-eliminate the edge `(i, k)` into an intermediate `k`.
    FrontEdge(usize, usize),
    /// Back-eliminate the edge `(k, j)` out of an intermediate `k`.
    BackEdge(usize, usize),
    /// Eliminate the face `(i, j)` of the directed line graph; `i` and `j` number line-graph
    /// vertices as [`replay`] creates them (the graph's edges by target, then source, after
    /// the independents' and dependents' dummies; fill-ins in order of creation). Face steps
    /// come last in a sequence.
    Face(usize, usize),
}

/// Elimination methods.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default, PartialOrd, Ord, Hash)]
pub enum Method {
    /// Vertex elimination, intermediates in increasing order.
    Forward,
    /// Vertex elimination, intermediates in decreasing order.
    Reverse,
    /// Vertex elimination, lowest Markowitz degree (|preds|·|succs|) first, ties by reverse
    /// order (the original engine's "lowest Markowitz + reverse").
    Markowitz,
    /// Lowest Markowitz degree, ties by forward order.
    MarkowitzForward,
    /// Vertex elimination, repeatedly the vertex whose elimination lowers the unit-aware cost
    /// most, while one lowers it (the tangent pass's original heuristic).
    Greedy,
    /// Front edge elimination, into the first eliminable intermediate.
    ForwardEdge,
    /// Back edge elimination, out of the last eliminable intermediate.
    ReverseEdge,
    /// Edge elimination by highest sibling degree with respect to the previous elimination,
    /// then lowest edge Markowitz degree, then reverse order (control-flow-reversal §3.2).
    Sibling,
    /// Edge elimination by the largest drop in cost (accumulation products plus non-unit
    /// edges), then lowest edge Markowitz degree, then reverse order: the scarcity chain of
    /// the original engine with costs instead of edge counts.
    Edge,
    /// Face elimination on the directed line graph, free products first, then forward.
    Face,
    /// The cheapest vertex elimination sequence (and prefix): dynamic programming over the
    /// sets of eliminated vertices, bounded by the best vertex heuristic; graphs with more
    /// than [`EXACT_LIMIT`] intermediates get the best vertex heuristic.
    Exact,
    /// The heuristics that earn their planning time under the cost model ([`heuristics`]);
    /// the cheapest (prefix) wins, ties to the earlier in [`EVERY_HEURISTIC`].
    #[default]
    Best,
    /// Every heuristic ([`EVERY_HEURISTIC`]); the cheapest (prefix) wins, ties to the earlier.
    Every,
}

/// Every heuristic, in tie-breaking order: what [`Method::Every`] tries.
pub const EVERY_HEURISTIC: [Method; 10] = [
    Method::Greedy,
    Method::Edge,
    Method::Forward,
    Method::Reverse,
    Method::Markowitz,
    Method::MarkowitzForward,
    Method::ForwardEdge,
    Method::ReverseEdge,
    Method::Sibling,
    Method::Face,
];

/// The heuristics [`Method::Best`] tries under `model`, in tie-breaking order (that of
/// [`EVERY_HEURISTIC`]).
///
/// Planning every heuristic was nearly half of a large input's transformation on its driver
/// thread (every sequence whose shape the plan cache has not seen), yet on the corpus and on synthetic inputs
/// (3024 sequences; `examples/heuristic_wins.rs`) greedy vertex elimination and edge
/// elimination together find the cheapest plan of all ten heuristics for every sequence under
/// the tangent's cost model, and so the same plan, as they come first in the tie-breaking
/// order. Under the adjoint's, which weighs remainder edges twice, lowest Markowitz degree and
/// face elimination each win a few more sequences, and the four together find the cheapest of
/// all ten. [`Method::Every`] still tries every one. The classic model, used only for
/// comparisons with the papers, tries every heuristic too.
pub fn heuristics(model: CostModel) -> &'static [Method] {
    match model {
        CostModel::UnitAware => &[Method::Greedy, Method::Edge],
        CostModel::Adjoint => &[Method::Greedy, Method::Edge, Method::Markowitz, Method::Face],
        CostModel::Classic => &EVERY_HEURISTIC,
    }
}

/// Every method, for comparisons.
pub const ALL: [Method; 13] = [
    Method::Forward,
    Method::Reverse,
    Method::Markowitz,
    Method::MarkowitzForward,
    Method::Greedy,
    Method::ForwardEdge,
    Method::ReverseEdge,
    Method::Sibling,
    Method::Edge,
    Method::Face,
    Method::Exact,
    Method::Best,
    Method::Every,
];

const VERTEX_HEURISTICS: [Method; 5] =
    [Method::Forward, Method::Reverse, Method::Markowitz, Method::MarkowitzForward, Method::Greedy];

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Forward => "forward",
            Method::Reverse => "reverse",
            Method::Markowitz => "markowitz",
            Method::MarkowitzForward => "markowitz-forward",
            Method::Greedy => "greedy",
            Method::ForwardEdge => "forward-edge",
            Method::ReverseEdge => "reverse-edge",
            Method::Sibling => "sibling",
            Method::Edge => "edge",
            Method::Face => "face",
            Method::Exact => "exact",
            Method::Best => "best",
            Method::Every => "every",
        }
    }
}

/// The largest number of intermediates the exact search is run on.
pub const EXACT_LIMIT: usize = 12;

/// Graphs with more intermediates than this get only the linear-time heuristics
/// ([`LINEAR_HEURISTICS`]) in [`Method::Best`] and [`Method::Every`]: the others cost quadratic
/// time or more there and, on the corpus, do not win on large graphs.
const LARGE: usize = 32;

/// The heuristics of large graphs, in tie-breaking order.
const LINEAR_HEURISTICS: [Method; 4] = [Method::Greedy, Method::Forward, Method::Reverse, Method::Markowitz];

/// An elimination sequence and what it costs.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub method: Method,
    /// The eliminations, in order (the cheapest prefix of the method's sequence under the
    /// unit-aware model; the complete sequence under the classic one).
    pub order: Vec<Step>,
    /// Multiplications in the accumulation code.
    pub multiplications: usize,
    /// Multiplications per direction in the propagator (non-unit remainder edges).
    pub propagation: usize,
}

impl Plan {
    pub fn cost(&self) -> usize {
        self.multiplications + self.propagation
    }
}

/// Label arithmetic that folds what is known and asks `emit` for the rest, counting
/// multiplications under the cost model.
pub struct Arith<F> {
    model: CostModel,
    pub multiplications: usize,
    emit: F,
}

/// The planner's callback: any run-time label will do.
fn symbolic(_: Op, _: usize) -> Label {
    Label::Variable(0)
}

impl Arith<fn(Op, usize) -> Label> {
    fn planning(model: CostModel) -> Self {
        Arith { model, multiplications: 0, emit: symbolic }
    }
}

impl<F: FnMut(Op, usize) -> Label> Arith<F> {
    /// `a·b`; `via` is the vertex the product passes through (for the caller's bookkeeping).
    fn mul(&mut self, a: Label, b: Label, via: usize) -> Label {
        if self.model == CostModel::Classic {
            self.multiplications += 1;
        }
        match (a.known(), b.known()) {
            (Some(x), Some(y)) => Label::from_value(x * y),
            (Some(1.0), None) => b,
            (None, Some(1.0)) => a,
            (Some(-1.0), None) => self.neg(b, via),
            (None, Some(-1.0)) => self.neg(a, via),
            _ => {
                if self.model.unit_aware() {
                    self.multiplications += 1;
                }
                (self.emit)(Op::Mul(a, b), via)
            }
        }
    }

    fn add(&mut self, a: Label, b: Label, via: usize) -> Label {
        match (a.known(), b.known()) {
            (Some(x), Some(y)) => Label::from_value(x + y),
            _ => (self.emit)(Op::Add(a, b), via),
        }
    }

    fn neg(&mut self, a: Label, via: usize) -> Label {
        match a.known() {
            Some(x) => Label::from_value(-x),
            None => (self.emit)(Op::Neg(a), via),
        }
    }
}

/// Neighbours of a vertex with the labels of the edges to them.
type Adjacent = Vec<(usize, Label)>;
/// A neighbour and the label of the edge to it.
type Edge = (usize, Label);

/// The neighbours of a vertex with their edge labels, sorted by vertex: LCG vertices have few
/// neighbours, so a sorted vector beats a tree map (no node allocations, cache-friendly
/// scans) in the planner's inner loops, which build and copy graphs for every heuristic.
#[derive(Debug, Default, PartialEq)]
struct Adjacency(Vec<(usize, Label)>);

impl Clone for Adjacency {
    fn clone(&self) -> Self {
        Adjacency(self.0.clone())
    }

    /// Into the vector already there: [`best_of`] resets one graph per heuristic this way.
    fn clone_from(&mut self, source: &Self) {
        self.0.clone_from(&source.0);
    }
}

impl Adjacency {
    fn position(&self, key: usize) -> Result<usize, usize> {
        self.0.binary_search_by_key(&key, |e| e.0)
    }

    fn get(&self, key: &usize) -> Option<&Label> {
        self.position(*key).ok().map(|i| &self.0[i].1)
    }

    fn insert(&mut self, key: usize, label: Label) -> Option<Label> {
        match self.position(key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, label)),
            Err(i) => {
                self.0.insert(i, (key, label));
                None
            }
        }
    }

    fn remove(&mut self, key: &usize) -> Option<Label> {
        self.position(*key).ok().map(|i| self.0.remove(i).1)
    }

    fn iter(&self) -> impl DoubleEndedIterator<Item = (&usize, &Label)> + '_ {
        self.0.iter().map(|e| (&e.0, &e.1))
    }

    fn keys(&self) -> impl DoubleEndedIterator<Item = &usize> + '_ {
        self.0.iter().map(|e| &e.0)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> IntoIterator for &'a Adjacency {
    type Item = (&'a usize, &'a Label);
    type IntoIter =
        std::iter::Map<std::slice::Iter<'a, (usize, Label)>, fn(&'a (usize, Label)) -> (&'a usize, &'a Label)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|e| (&e.0, &e.1))
    }
}

/// The graph during vertex and edge elimination.
#[derive(Clone, Debug, Default)]
struct Graph {
    preds: Vec<Adjacency>,
    succs: Vec<Adjacency>,
    /// Edges that are not ±1, kept up to date so a prefix's cost is O(1) to read.
    nonunit: usize,
    /// When some, every edge set, changed or removed since the owner last drained it: what
    /// an incremental heuristic must look at again after a step.
    touched: Option<Vec<(usize, usize)>>,
    /// Buffers [`Graph::apply`] reuses from step to step.
    scratch: (Adjacent, Adjacent),
    /// Buffers [`Graph::drop_dead`] reuses: its work list and the edges it takes out.
    dead: (Vec<usize>, Adjacent),
    /// [`Graph::rebuild`]'s count of each vertex's (incoming, outgoing) edges.
    degrees: Vec<(usize, usize)>,
}

impl Graph {
    fn new<F: FnMut(Op, usize) -> Label>(lcg: &Lcg, ar: &mut Arith<F>) -> Graph {
        let mut graph = Graph::default();
        graph.rebuild(lcg, ar);
        graph
    }

    /// Makes this graph `lcg`'s (as [`Graph::new`] builds it) in the storage it has: a pass
    /// plans and replays hundreds of small graphs, and building each in fresh lists made the
    /// planner's allocations a third of the whole pass's.
    fn rebuild<F: FnMut(Op, usize) -> Label>(&mut self, lcg: &Lcg, ar: &mut Arith<F>) {
        let n = lcg.kinds.len();
        for side in [&mut self.preds, &mut self.succs] {
            side.truncate(n);
            for adjacency in side.iter_mut() {
                adjacency.0.clear();
            }
            side.resize_with(n, Adjacency::default);
        }
        // Room for the edges given (parallel ones merge), once per vertex and side.
        let degrees = &mut self.degrees;
        degrees.clear();
        degrees.resize(n, (0, 0));
        for &(s, t, _) in &lcg.edges {
            degrees[s].1 += 1;
            degrees[t].0 += 1;
        }
        for (v, &(ins, outs)) in degrees.iter().enumerate() {
            self.preds[v].0.reserve(ins);
            self.succs[v].0.reserve(outs);
        }
        self.nonunit = 0;
        self.touched = None;
        for &(s, t, label) in &lcg.edges {
            self.add(s, t, label, t, ar);
        }
        self.drop_all_dead(&lcg.kinds);
    }

    /// Makes this graph a copy of `start` in the storage it has; returns it for the next run.
    fn reset_to(&mut self, start: &Graph) -> &mut Graph {
        self.preds.clone_from(&start.preds);
        self.succs.clone_from(&start.succs);
        self.nonunit = start.nonunit;
        self.touched.clone_from(&start.touched);
        self
    }

    /// Removes every dead intermediate at once (what [`Graph::drop_dead`] from each vertex
    /// would leave): a vertex read by many statements whose results die would otherwise lose
    /// its edges one `Vec::remove` at a time, quadratic in its degree.
    fn drop_all_dead(&mut self, kinds: &[VertexKind]) {
        let n = kinds.len();
        let dead_now =
            |k: usize| kinds[k] == VertexKind::Intermediate && (self.preds[k].is_empty() || self.succs[k].is_empty());
        // Usually nothing is dead: then nothing is counted either.
        if !(0..n).any(dead_now) {
            return;
        }
        let mut stack: Vec<usize> = (0..n).filter(|&k| dead_now(k)).collect();
        let (mut ins, mut outs): (Vec<usize>, Vec<usize>) =
            (self.preds.iter().map(Adjacency::len).collect(), self.succs.iter().map(Adjacency::len).collect());
        let mut dead = vec![false; n];
        while let Some(k) = stack.pop() {
            if dead[k] {
                continue;
            }
            dead[k] = true;
            for &p in self.preds[k].keys() {
                if !dead[p] {
                    outs[p] -= 1;
                    if kinds[p] == VertexKind::Intermediate && outs[p] == 0 {
                        stack.push(p);
                    }
                }
            }
            for &s in self.succs[k].keys() {
                if !dead[s] {
                    ins[s] -= 1;
                    if kinds[s] == VertexKind::Intermediate && ins[s] == 0 {
                        stack.push(s);
                    }
                }
            }
        }
        for k in 0..n {
            if dead[k] {
                self.preds[k].0.clear();
                self.succs[k].0.clear();
            } else {
                self.preds[k].0.retain(|e| !dead[e.0]);
                self.succs[k].0.retain(|e| !dead[e.0]);
            }
        }
        self.nonunit = self.succs.iter().flat_map(|a| a.0.iter()).filter(|e| !e.1.is_unit()).count();
    }

    /// Sets (or, for a zero label, removes) the edge `s → t`.
    fn set(&mut self, s: usize, t: usize, label: Label) {
        match self.preds[t].position(s) {
            Ok(i) => {
                let old = std::mem::replace(&mut self.preds[t].0[i].1, label);
                self.nonunit -= usize::from(!old.is_unit());
                let j = self.succs[s].position(t).expect("both sides hold every edge");
                if label.is_zero() {
                    self.preds[t].0.remove(i);
                    self.succs[s].0.remove(j);
                } else {
                    self.succs[s].0[j].1 = label;
                    self.nonunit += usize::from(!label.is_unit());
                }
            }
            Err(_) if label.is_zero() => return,
            Err(i) => {
                self.preds[t].0.insert(i, (s, label));
                self.succs[s].insert(t, label);
                self.nonunit += usize::from(!label.is_unit());
            }
        }
        if let Some(touched) = &mut self.touched {
            touched.push((s, t));
        }
    }

    /// `c_ts += label` (absorption, or fill-in when there is no such edge).
    fn add<F: FnMut(Op, usize) -> Label>(&mut self, s: usize, t: usize, label: Label, via: usize, ar: &mut Arith<F>) {
        let label = match self.preds[t].get(&s) {
            Some(&existing) => ar.add(existing, label, via),
            None => label,
        };
        self.set(s, t, label);
    }

    /// Removes intermediates without predecessors or successors, and what that leaves dead.
    fn drop_dead(&mut self, kinds: &[VertexKind], start: usize) {
        let dead = |graph: &Graph, k: usize| {
            kinds[k] == VertexKind::Intermediate && (graph.preds[k].is_empty() || graph.succs[k].is_empty())
        };
        // Almost always alive: no work list then.
        if !dead(self, start) {
            return;
        }
        // The edges are moved out of the vertex's lists, which keep their storage: a planner
        // resets the graph for the next heuristic into the same lists.
        let (mut stack, mut edges) = std::mem::take(&mut self.dead);
        stack.clear();
        stack.push(start);
        while let Some(k) = stack.pop() {
            if !dead(self, k) {
                continue;
            }
            edges.clear();
            edges.append(&mut self.preds[k].0);
            for &(p, label) in &edges {
                self.succs[p].remove(&k);
                self.nonunit -= usize::from(!label.is_unit());
                stack.push(p);
                if let Some(touched) = &mut self.touched {
                    touched.push((p, k));
                }
            }
            edges.clear();
            edges.append(&mut self.succs[k].0);
            for &(s, label) in &edges {
                self.preds[s].remove(&k);
                self.nonunit -= usize::from(!label.is_unit());
                stack.push(s);
                if let Some(touched) = &mut self.touched {
                    touched.push((k, s));
                }
            }
        }
        self.dead = (stack, edges);
    }

    fn eliminable(&self, kinds: &[VertexKind], v: usize) -> bool {
        kinds[v] == VertexKind::Intermediate && !self.preds[v].is_empty() && !self.succs[v].is_empty()
    }

    /// The vertex a vertex or edge elimination passes through and the edges it combines: all
    /// of the vertex's, or the one edge with the other side; `None` for a missing edge.
    fn involved(&self, step: Step) -> Option<(usize, &[Edge], &[Edge])> {
        let one = |adjacency: &'_ Adjacency, key: usize| adjacency.position(key).ok().map(|i| i..i + 1);
        match step {
            Step::Vertex(k) => Some((k, &self.preds[k].0[..], &self.succs[k].0[..])),
            Step::FrontEdge(i, k) => one(&self.preds[k], i).map(|r| (k, &self.preds[k].0[r], &self.succs[k].0[..])),
            Step::BackEdge(k, j) => one(&self.succs[k], j).map(|r| (k, &self.preds[k].0[..], &self.succs[k].0[r])),
            Step::Face(..) => None,
        }
    }

    /// Hands every edge touched since the last call to `visit` (with the graph as it is now)
    /// and empties the log; the graph must be tracking.
    fn drain_touched(&mut self, mut visit: impl FnMut(&Graph, usize, usize)) {
        let mut touched = std::mem::take(self.touched.as_mut().expect("the graph tracks touched edges"));
        for &(s, t) in &touched {
            visit(self, s, t);
        }
        touched.clear();
        self.touched = Some(touched);
    }

    /// Marks in `stale` the vertices whose elimination costs, or their edges', the steps since
    /// the last call may have changed (every vertex with `everything`), and empties the log;
    /// the graph must be tracking. A cost ([`Graph::delta`]) reads only the vertex's own edges
    /// and the edges between its predecessors and its successors, so it changes only where one
    /// of those was touched.
    fn mark_stale(&mut self, stale: &mut DirtySet, everything: bool) {
        if everything {
            self.drain_touched(|_, _, _| {});
            stale.extend(0..self.preds.len());
            return;
        }
        self.drain_touched(|graph, s, t| {
            stale.insert(s);
            stale.insert(t);
            // The vertices between s and t: look up the smaller side in the larger (a variable
            // read many times has many successors).
            let (small, large) = if graph.succs[s].len() <= graph.preds[t].len() {
                (&graph.succs[s], &graph.preds[t])
            } else {
                (&graph.preds[t], &graph.succs[s])
            };
            for &u in small.keys() {
                if large.get(&u).is_some() {
                    stale.insert(u);
                }
            }
        });
    }

    fn apply<F: FnMut(Op, usize) -> Label>(&mut self, kinds: &[VertexKind], step: Step, ar: &mut Arith<F>) {
        // Copies (into buffers kept for the next step): the eliminations below change both sides.
        let (mut incoming, mut outgoing) = std::mem::take(&mut self.scratch);
        let Some((k, incoming_now, outgoing_now)) = self.involved(step) else { return };
        incoming.clear();
        outgoing.clear();
        incoming.extend_from_slice(incoming_now);
        outgoing.extend_from_slice(outgoing_now);
        match step {
            // All of the vertex's edges go: no need to take them out of its own lists one by one.
            Step::Vertex(_) => {
                for &(p, a) in &incoming {
                    self.succs[p].remove(&k);
                    self.nonunit -= usize::from(!a.is_unit());
                }
                for &(s, b) in &outgoing {
                    self.preds[s].remove(&k);
                    self.nonunit -= usize::from(!b.is_unit());
                }
                self.preds[k].0.clear();
                self.succs[k].0.clear();
                if let Some(touched) = &mut self.touched {
                    touched.extend(incoming.iter().map(|&(p, _)| (p, k)));
                    touched.extend(outgoing.iter().map(|&(s, _)| (k, s)));
                }
            }
            Step::FrontEdge(..) => {
                for &(p, _) in &incoming {
                    self.set(p, k, Label::Constant(0.0));
                }
            }
            Step::BackEdge(..) => {
                for &(s, _) in &outgoing {
                    self.set(k, s, Label::Constant(0.0));
                }
            }
            Step::Face(..) => unreachable!("involved() has no edges for a face step"),
        }
        for &(p, a) in &incoming {
            for &(s, b) in &outgoing {
                let product = ar.mul(a, b, k);
                self.add(p, s, product, k, ar);
            }
        }
        self.drop_dead(kinds, k);
        // Cancellation may have left a neighbour dead.
        for &(v, _) in incoming.iter().chain(&outgoing) {
            self.drop_dead(kinds, v);
        }
        self.scratch = (incoming, outgoing);
    }

    fn propagation(&self, model: CostModel) -> usize {
        self.nonunit * model.edge_weight()
    }

    fn edges(&self) -> Vec<(usize, usize, Label)> {
        self.preds.iter().enumerate().flat_map(|(t, ins)| ins.iter().map(move |(&s, &l)| (s, t, l))).collect()
    }

    fn markowitz(&self, v: usize) -> usize {
        self.preds[v].len() * self.succs[v].len()
    }

    /// The eliminable edge targets: front eliminations into and back eliminations out of
    /// live intermediates, into `targets` (a buffer the edge heuristics keep from step to step).
    fn edge_targets(&self, kinds: &[VertexKind], targets: &mut Vec<Step>) {
        targets.clear();
        for k in 0..kinds.len() {
            if !self.eliminable(kinds, k) {
                continue;
            }
            targets.extend(self.preds[k].keys().map(|&i| Step::FrontEdge(i, k)));
            targets.extend(self.succs[k].keys().map(|&j| Step::BackEdge(k, j)));
        }
    }

    /// The predecessor and successor sets an edge elimination connects, as sorted slices of
    /// the graph's own lists (`one` holds the single vertex an edge elimination keeps on its
    /// side): the sibling heuristic asks this of every candidate at every step.
    fn edge_sets<'s>(&'s self, step: Step, one: &'s mut [Edge; 1]) -> (&'s [Edge], &'s [Edge]) {
        match step {
            Step::FrontEdge(i, k) => {
                one[0] = (i, Label::One);
                (&one[..], &self.succs[k].0[..])
            }
            Step::BackEdge(k, j) => {
                one[0] = (j, Label::One);
                (&self.preds[k].0[..], &one[..])
            }
            Step::Vertex(k) => (&self.preds[k].0[..], &self.succs[k].0[..]),
            Step::Face(..) => (&[], &[]),
        }
    }

    /// The change in total cost, and in the number of edges, if `step` were applied next
    /// (dead vertices it leaves are counted one level deep).
    fn delta(&self, step: Step, model: CostModel) -> (i64, i64) {
        let edge_cost = |l: Label| i64::from(!l.is_unit()) * model.edge_weight() as i64;
        let mut ar = Arith::planning(model);
        let Some((k, incoming, outgoing)) = self.involved(step) else { return (0, 0) };
        let mut delta = 0i64;
        let mut edges = 0i64;
        let removes_in = matches!(step, Step::Vertex(_) | Step::FrontEdge(..));
        let removes_out = matches!(step, Step::Vertex(_) | Step::BackEdge(..));
        // An edge elimination that takes a vertex's last edge on one side kills the other side.
        let dead = (removes_in && self.preds[k].len() == incoming.len())
            || (removes_out && self.succs[k].len() == outgoing.len());
        for &(_, a) in incoming {
            if removes_in || dead {
                delta -= edge_cost(a);
                edges -= 1;
            }
        }
        for &(_, b) in outgoing {
            if removes_out || dead {
                delta -= edge_cost(b);
                edges -= 1;
            }
        }
        if dead && !removes_in {
            for (&p, &a) in &self.preds[k] {
                if !incoming.iter().any(|&(q, _)| q == p) {
                    delta -= edge_cost(a);
                    edges -= 1;
                }
            }
        }
        if dead && !removes_out {
            for (&s, &b) in &self.succs[k] {
                if !outgoing.iter().any(|&(q, _)| q == s) {
                    delta -= edge_cost(b);
                    edges -= 1;
                }
            }
        }
        for &(p, a) in incoming {
            for &(s, b) in outgoing {
                let product = ar.mul(a, b, k);
                match self.preds[s].get(&p) {
                    Some(&existing) => {
                        let sum = ar.add(existing, product, k);
                        delta -= edge_cost(existing);
                        if sum.is_zero() {
                            edges -= 1;
                        } else {
                            delta += edge_cost(sum);
                        }
                    }
                    None => {
                        delta += edge_cost(product);
                        edges += 1;
                    }
                }
            }
        }
        (delta + ar.multiplications as i64, edges)
    }
}

/// The key that orders edge eliminations "in reverse": later sources first, then later
/// targets, back before front.
fn reverse_key(step: Step) -> (usize, usize, bool) {
    match step {
        Step::FrontEdge(i, k) => (i, k, false),
        Step::BackEdge(k, j) => (k, j, true),
        Step::Vertex(k) => (k, k, false),
        Step::Face(i, j) => (i, j, false),
    }
}

/// The edge Markowitz degree: successors reached by a front, predecessors by a back
/// elimination.
fn edge_markowitz(graph: &Graph, step: Step) -> usize {
    match step {
        Step::FrontEdge(_, k) => graph.succs[k].len(),
        Step::BackEdge(k, _) => graph.preds[k].len(),
        Step::Vertex(k) => graph.markowitz(k),
        Step::Face(..) => 0,
    }
}

/// The size of the intersection of two sets of vertices, each sorted by vertex.
fn sorted_intersection(a: &[Edge], b: &[usize]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// Runs a stepwise vertex or edge heuristic, keeping the cheapest prefix of its sequence. Under
/// the unit-aware model the run stops once its accumulation multiplications alone reach the
/// cheapest prefix seen (they never decrease, so no longer prefix can win) or `bound`, the best
/// cost another method already reached.
fn run_stepwise(lcg: &Lcg, method: Method, model: CostModel, bound: usize) -> Plan {
    run_stepwise_on(lcg, &mut Graph::new(lcg, &mut Arith::planning(model)), method, model, bound)
}

/// [`run_stepwise`] on `graph`, the LCG as [`Graph::new`] builds it for planning (which
/// [`best_of`] does once for all its methods).
fn run_stepwise_on(lcg: &Lcg, graph: &mut Graph, method: Method, model: CostModel, bound: usize) -> Plan {
    run_stepwise_with(lcg, graph, method, model, bound, false)
}

/// [`run_stepwise_on`]; with `exhaustive`, the edge heuristic recomputes every candidate's cost
/// after every step (the reference its incremental bookkeeping is tested against).
fn run_stepwise_with(
    lcg: &Lcg,
    graph: &mut Graph,
    method: Method,
    model: CostModel,
    bound: usize,
    exhaustive: bool,
) -> Plan {
    let kinds = &lcg.kinds;
    let mut ar = Arith::planning(model);
    let mut order = Vec::new();
    let mut best = Plan { method, order: Vec::new(), multiplications: 0, propagation: graph.propagation(model) };
    let mut best_len = 0;
    // The previous elimination's predecessor and successor sets, for the sibling degree.
    let mut previous: Option<(Vec<usize>, Vec<usize>)> = None;
    let mut targets = Vec::new();
    // A vertex that is not eliminable never becomes so (edges only ever join live vertices),
    // so the lowest and highest eliminable vertices only move inwards.
    let (mut lowest, mut highest) = (0, kinds.len());
    // Markowitz degrees of the eliminable vertices, updated where a step touched edges.
    let markowitz = matches!(method, Method::Markowitz | Method::MarkowitzForward);
    // Ties between equal degrees: the higher vertex for Markowitz, the lower for its
    // forward variant. The queue orders (degree, tie, vertex), the least first.
    let tie = |v: usize| if method == Method::Markowitz { usize::MAX - v } else { v };
    let mut degrees: Vec<Option<usize>> = Vec::new();
    let mut queue: BTreeSet<(usize, usize, usize)> = BTreeSet::new();
    if markowitz {
        degrees = (0..kinds.len()).map(|v| graph.eliminable(kinds, v).then(|| graph.markowitz(v))).collect();
        queue = degrees.iter().enumerate().filter_map(|(v, d)| d.map(|d| (d, tie(v), v))).collect();
        graph.touched = Some(Vec::new());
    }
    let mut edge_costs = (method == Method::Edge).then(|| EdgeCosts::new(kinds.len(), exhaustive));
    if edge_costs.is_some() {
        graph.touched = Some(Vec::new());
    }
    loop {
        while lowest < highest && !graph.eliminable(kinds, lowest) {
            lowest += 1;
        }
        while highest > lowest && !graph.eliminable(kinds, highest - 1) {
            highest -= 1;
        }
        let first = (lowest < highest).then_some(lowest);
        let last = (lowest < highest).then(|| highest - 1);
        let choice = match method {
            Method::Forward => first.map(Step::Vertex),
            Method::Reverse => last.map(Step::Vertex),
            // The least degree, ties broken by `tie(vertex)`, the least wins.
            Method::Markowitz | Method::MarkowitzForward => queue.first().map(|&(.., v)| Step::Vertex(v)),
            Method::ForwardEdge => first.and_then(|k| graph.preds[k].keys().next().map(|&i| Step::FrontEdge(i, k))),
            Method::ReverseEdge => last.and_then(|k| graph.succs[k].keys().next_back().map(|&j| Step::BackEdge(k, j))),
            Method::Sibling => {
                graph.edge_targets(kinds, &mut targets);
                let mut one = [(0, Label::One)];
                targets.iter().copied().max_by_key(|&step| {
                    let degree = previous.as_ref().map_or(0, |(p, s)| {
                        let (tp, ts) = graph.edge_sets(step, &mut one);
                        sorted_intersection(tp, p) * sorted_intersection(ts, s)
                    });
                    (degree, Reverse(edge_markowitz(graph, step)), reverse_key(step))
                })
            }
            Method::Edge => edge_costs.as_mut().and_then(|costs| costs.cheapest(graph, kinds, model)),
            Method::Greedy | Method::Face | Method::Exact | Method::Best | Method::Every => {
                unreachable!("run_stepwise is called for stepwise vertex and edge heuristics only")
            }
        };
        let Some(step) = choice else { break };
        if method == Method::Sibling {
            let (p, s) = previous.get_or_insert_default();
            let mut one = [(0, Label::One)];
            let (tp, ts) = graph.edge_sets(step, &mut one);
            p.clear();
            p.extend(tp.iter().map(|e| e.0));
            s.clear();
            s.extend(ts.iter().map(|e| e.0));
        }
        graph.apply(kinds, step, &mut ar);
        order.push(step);
        if let Some(costs) = &mut edge_costs {
            graph.mark_stale(&mut costs.stale, costs.exhaustive);
        }
        if markowitz {
            graph.drain_touched(|graph, s, t| {
                for v in [s, t] {
                    let degree = graph.eliminable(kinds, v).then(|| graph.markowitz(v));
                    if degree != degrees[v] {
                        if let Some(old) = degrees[v] {
                            queue.remove(&(old, tie(v), v));
                        }
                        if let Some(new) = degree {
                            queue.insert((new, tie(v), v));
                        }
                        degrees[v] = degree;
                    }
                }
            });
        }
        let cost = ar.multiplications + graph.propagation(model);
        if model.unit_aware() && cost < best.cost() {
            // The order itself is cut to this prefix at the end.
            best = Plan {
                method,
                order: Vec::new(),
                multiplications: ar.multiplications,
                propagation: graph.propagation(model),
            };
            best_len = order.len();
        }
        if model.unit_aware() && ar.multiplications >= best.cost().min(bound) {
            break;
        }
    }
    if model == CostModel::Classic {
        best = Plan { method, order, multiplications: ar.multiplications, propagation: 0 };
    } else {
        order.truncate(best_len);
        best.order = order;
    }
    best
}

/// Repeatedly the vertex whose elimination lowers the cost most (ties: fewer edges, then lower
/// vertex), while one lowers it or keeps it and removes edges (under the classic model, until
/// none is left). Costs change only around an eliminated vertex, so they are cached and
/// recomputed for that neighbourhood: long basic blocks give graphs of hundreds of vertices.
fn greedy(lcg: &Lcg, model: CostModel) -> Plan {
    greedy_with(lcg, model, false)
}

/// [`greedy`]; with `exhaustive`, every cost is recomputed after every step (the reference
/// its incremental bookkeeping is tested against).
fn greedy_with(lcg: &Lcg, model: CostModel, exhaustive: bool) -> Plan {
    greedy_on(lcg, &mut Graph::new(lcg, &mut Arith::planning(model)), model, exhaustive)
}

/// [`greedy_with`] on `graph`, the LCG as [`Graph::new`] builds it for planning.
fn greedy_on(lcg: &Lcg, graph: &mut Graph, model: CostModel, exhaustive: bool) -> Plan {
    let kinds = &lcg.kinds;
    let mut ar = Arith::planning(model);
    graph.touched = Some(Vec::new());
    let n = kinds.len();
    let cost_of = |graph: &Graph, v: usize| graph.eliminable(kinds, v).then(|| graph.delta(Step::Vertex(v), model));
    let mut costs: Vec<Option<(i64, i64)>> = (0..n).map(|v| cost_of(graph, v)).collect();
    // The costs ordered (delta, edges, vertex), so the cheapest is found in log time.
    let mut queue: BTreeSet<(i64, i64, usize)> =
        costs.iter().enumerate().filter_map(|(v, c)| c.map(|(delta, edges)| (delta, edges, v))).collect();
    let mut order = Vec::new();
    let mut best =
        Plan { method: Method::Greedy, order: Vec::new(), multiplications: 0, propagation: graph.propagation(model) };
    let mut best_len = 0;
    let mut dirty = DirtySet::new(n);
    loop {
        // The least entry passes the filter if any does (it has the least delta, and among
        // those the fewest edges).
        let choice = queue
            .first()
            .copied()
            .filter(|&(delta, edges, _)| model == CostModel::Classic || delta < 0 || (delta == 0 && edges < 0));
        let Some((_, _, v)) = choice else { break };
        graph.apply(kinds, Step::Vertex(v), &mut ar);
        order.push(Step::Vertex(v));
        graph.mark_stale(&mut dirty, exhaustive);
        for u in dirty.drain() {
            let cost = cost_of(graph, u);
            if cost != costs[u] {
                if let Some((delta, edges)) = costs[u] {
                    queue.remove(&(delta, edges, u));
                }
                if let Some((delta, edges)) = cost {
                    queue.insert((delta, edges, u));
                }
                costs[u] = cost;
            }
        }
        let cost = ar.multiplications + graph.propagation(model);
        // Every step lowers the cost or keeps it and removes edges. Under the adjoint model a
        // step of the second kind is kept too: each remainder edge, unit or not, is an
        // operation of every adjoint sweep (`IncDeriv`, `Saxpy`), so a chain of unit edges
        // folded away is arithmetic saved there.
        let better = cost < best.cost() || (model == CostModel::Adjoint && cost == best.cost());
        if model == CostModel::Classic || better {
            // The order itself is cut to this prefix at the end.
            best = Plan {
                method: Method::Greedy,
                order: Vec::new(),
                multiplications: ar.multiplications,
                propagation: graph.propagation(model),
            };
            best_len = order.len();
        }
    }
    order.truncate(best_len);
    best.order = order;
    best
}

/// The edge heuristic's candidates' costs ([`Graph::delta`]), kept per vertex and recomputed
/// only for the vertices a step may have changed them for ([`Graph::mark_stale`]), as greedy
/// keeps its vertex costs: evaluating every candidate at every step was 4% of a large tangent run's
/// instructions, most of them for costs no step had changed.
struct EdgeCosts {
    /// Per vertex, the (cost change, edge change) of eliminating each of its incoming edges, in
    /// the order of its predecessors, then each of its outgoing ones, in the order of its
    /// successors; empty for a vertex that is not eliminable.
    costs: Vec<Vec<(i64, i64)>>,
    /// The vertices whose costs must be computed again (at first, all).
    stale: DirtySet,
    exhaustive: bool,
}

impl EdgeCosts {
    fn new(n: usize, exhaustive: bool) -> EdgeCosts {
        let mut stale = DirtySet::new(n);
        stale.extend(0..n);
        EdgeCosts { costs: vec![Vec::new(); n], stale, exhaustive }
    }

    /// The edge elimination that lowers the cost most, then the edges, then has the least
    /// edge Markowitz degree, then the greatest [`reverse_key`]; `None` when none is left.
    fn cheapest(&mut self, graph: &Graph, kinds: &[VertexKind], model: CostModel) -> Option<Step> {
        let EdgeCosts { costs, stale, .. } = self;
        for v in stale.drain() {
            let costs = &mut costs[v];
            costs.clear();
            if graph.eliminable(kinds, v) {
                costs.extend(graph.preds[v].keys().map(|&i| graph.delta(Step::FrontEdge(i, v), model)));
                costs.extend(graph.succs[v].keys().map(|&j| graph.delta(Step::BackEdge(v, j), model)));
            }
        }
        let mut best = None;
        for (k, costs) in costs.iter().enumerate() {
            if !graph.eliminable(kinds, k) {
                continue;
            }
            debug_assert_eq!(
                costs.len(),
                graph.preds[k].len() + graph.succs[k].len(),
                "vertex {k}'s costs are current"
            );
            let fronts = graph.preds[k].keys().map(|&i| Step::FrontEdge(i, k));
            let steps = fronts.chain(graph.succs[k].keys().map(|&j| Step::BackEdge(k, j)));
            for (step, &(delta, edges)) in steps.zip(costs) {
                let key = (delta, edges, edge_markowitz(graph, step), Reverse(reverse_key(step)));
                if best.as_ref().is_none_or(|(least, _)| key < *least) {
                    best = Some((key, step));
                }
            }
        }
        best.map(|(_, step)| step)
    }
}

/// Vertices to look at again, each once, in the order first inserted.
struct DirtySet {
    list: Vec<usize>,
    member: Vec<bool>,
}

impl DirtySet {
    fn new(n: usize) -> DirtySet {
        DirtySet { list: Vec::new(), member: vec![false; n] }
    }

    fn insert(&mut self, v: usize) {
        if !self.member[v] {
            self.member[v] = true;
            self.list.push(v);
        }
    }

    fn extend(&mut self, vertices: impl IntoIterator<Item = usize>) {
        for v in vertices {
            self.insert(v);
        }
    }

    fn drain(&mut self) -> impl Iterator<Item = usize> + '_ {
        for &v in &self.list {
            self.member[v] = false;
        }
        self.list.drain(..)
    }
}

/// The cheapest vertex elimination sequence, or prefix of one. The graph left after
/// eliminating a set of vertices does not depend on the order (the Jacobian of what is left
/// is the same), only the multiplications on the way do; so a dynamic program over the sets,
/// layer by layer, keeps for each set the cheapest way to reach it. Sets whose
/// multiplications alone reach the best cost found so far (initially the best vertex
/// heuristic's) are cut.
fn exact(lcg: &Lcg, model: CostModel) -> Plan {
    let mut best = VERTEX_HEURISTICS
        .into_iter()
        .map(|m| plan(lcg, m, model))
        .reduce(|a, b| if b.cost() < a.cost() { b } else { a })
        .expect("there are vertex heuristics");
    best.method = Method::Exact;
    let kinds = &lcg.kinds;
    let intermediates: Vec<usize> = (0..kinds.len()).filter(|&v| kinds[v] == VertexKind::Intermediate).collect();
    if intermediates.len() > EXACT_LIMIT {
        return best;
    }
    let mut ar = Arith::planning(model);
    let start = Graph::new(lcg, &mut ar);
    let mut layer: BTreeMap<u32, (Graph, usize, Vec<Step>)> = BTreeMap::new();
    layer.insert(0, (start, 0, Vec::new()));
    while !layer.is_empty() {
        let mut next: BTreeMap<u32, (Graph, usize, Vec<Step>)> = BTreeMap::new();
        for (mask, (graph, multiplications, order)) in layer {
            let complete = intermediates.iter().all(|&v| !graph.eliminable(kinds, v));
            let cost = multiplications + graph.propagation(model);
            if (model.unit_aware() || complete) && cost < best.cost() {
                best = Plan {
                    method: Method::Exact,
                    order: order.clone(),
                    multiplications,
                    propagation: graph.propagation(model),
                };
            }
            if multiplications >= best.cost() || complete {
                continue;
            }
            for (bit, &v) in intermediates.iter().enumerate() {
                let key = mask | (1 << bit);
                if key == mask {
                    continue;
                }
                // A vertex already gone (dead) joins the set for free.
                let (successor, cost, steps) = if graph.eliminable(kinds, v) {
                    let mut successor = graph.clone();
                    let mut ar = Arith::planning(model);
                    successor.apply(kinds, Step::Vertex(v), &mut ar);
                    let mut steps = order.clone();
                    steps.push(Step::Vertex(v));
                    (successor, multiplications + ar.multiplications, steps)
                } else {
                    (graph.clone(), multiplications, order.clone())
                };
                if next.get(&key).is_none_or(|(_, c, _)| cost < *c) {
                    next.insert(key, (successor, cost, steps));
                }
            }
        }
        layer = next;
    }
    best
}

/// The plan of one method.
pub fn plan(lcg: &Lcg, method: Method, model: CostModel) -> Plan {
    plan_in(&mut Workspace::default(), lcg, method, model)
}

/// Storage the planner keeps from one graph to the next: the graph every heuristic starts
/// from, the one it works on, and the line graph of face elimination.
#[derive(Default)]
pub struct Workspace {
    start: Graph,
    work: Graph,
    line: LineGraph,
}

/// [`plan`] in `workspace`'s storage.
fn plan_in(workspace: &mut Workspace, lcg: &Lcg, method: Method, model: CostModel) -> Plan {
    match method {
        Method::Greedy => greedy(lcg, model),
        Method::Face => face::run(lcg, model, usize::MAX),
        Method::Exact => exact(lcg, model),
        Method::Best => best_of_in(workspace, lcg, model, heuristics(model)),
        Method::Every => best_of_in(workspace, lcg, model, &EVERY_HEURISTIC),
        stepwise => run_stepwise(lcg, stepwise, model, usize::MAX),
    }
}

/// The heuristics of `model` ([`heuristics`]; the quadratic ones only on graphs of at most
/// `LARGE` intermediates); the cheapest wins, ties going to the earlier method.
pub fn best_of(lcg: &Lcg, model: CostModel) -> Plan {
    best_of_in(&mut Workspace::default(), lcg, model, heuristics(model))
}

/// The cheapest of `methods`' plans in `workspace`'s storage.
fn best_of_in(workspace: &mut Workspace, lcg: &Lcg, model: CostModel, methods: &[Method]) -> Plan {
    let intermediates = lcg.intermediates();
    if intermediates == 0 {
        // Nothing to eliminate (a single statement of independents only): every method gives
        // the empty plan, the first one in tie-breaking order names it.
        return greedy(lcg, model);
    }
    // Large graphs get the linear-time heuristics whatever the set: the others cost quadratic
    // time or more there, and these are cheap beside them (one of them wins a large graph of
    // the synthetic inputs that greedy alone loses).
    let methods = if intermediates > LARGE { &LINEAR_HEURISTICS[..] } else { methods };
    // Every method starts from the same graph: built once, copied for each into one working
    // graph whose lists are reused.
    let Workspace { start, work, line } = workspace;
    start.rebuild(lcg, &mut Arith::planning(model));
    let mut best: Option<Plan> = None;
    for &method in methods {
        let bound = best.as_ref().map_or(usize::MAX, Plan::cost);
        let candidate = match method {
            Method::Greedy => greedy_on(lcg, work.reset_to(start), model, false),
            Method::Face => face::run_on(lcg, start, line, model, bound),
            stepwise => run_stepwise_on(lcg, work.reset_to(start), stepwise, model, bound),
        };
        if best.as_ref().is_none_or(|b| candidate.cost() < b.cost()) {
            best = Some(candidate);
        }
        if best.as_ref().is_some_and(|b| b.cost() == 0) {
            // Nothing is cheaper than free; the later methods could only tie.
            break;
        }
    }
    // (Finishing the winner with face eliminations was tried: on the corpus it never lowered
    // a cost and took a tenth of the transformation time.)
    best.expect("there are heuristics")
}

/// Plans already made, by graph shape. Basic blocks repeat the same statement shapes, so
/// their graphs repeat, and a plan depends only on the shape: the vertex kinds, the edges and
/// which labels are ±1, which are constants (and their values, which can fold or cancel) and
/// which are known only at run time (all alike to the planner).
#[derive(Default)]
pub struct PlanCache {
    plans: rustc_hash::FxHashMap<ShapeKey, Plan>,
    workspace: Workspace,
}

type ShapeKey = (Method, CostModel, Vec<VertexKind>, Vec<(usize, usize, LabelShape)>);

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum LabelShape {
    One,
    MinusOne,
    Constant(u64),
    Variable,
}

impl PlanCache {
    /// The plan [`plan`] makes for `lcg`, made once per shape.
    pub fn plan(&mut self, lcg: &Lcg, method: Method, model: CostModel) -> Plan {
        let edges = lcg
            .edges
            .iter()
            .map(|&(s, t, label)| {
                let shape = match label {
                    Label::One => LabelShape::One,
                    Label::MinusOne => LabelShape::MinusOne,
                    Label::Constant(value) => LabelShape::Constant(value.to_bits()),
                    Label::Variable(_) => LabelShape::Variable,
                };
                (s, t, shape)
            })
            .collect();
        let workspace = &mut self.workspace;
        self.plans
            .entry((method, model, lcg.kinds.clone(), edges))
            .or_insert_with(|| plan_in(workspace, lcg, method, model))
            .clone()
    }

    /// The storage the planner keeps, lent out for [`replay_in`] (whose `emit` usually needs
    /// the owner of this cache too); [`PlanCache::return_workspace`] gives it back.
    pub fn lend_workspace(&mut self) -> Workspace {
        std::mem::take(&mut self.workspace)
    }

    pub fn return_workspace(&mut self, workspace: Workspace) {
        self.workspace = workspace;
    }
}

/// Replays an elimination sequence from [`plan`]: products, sums and negations that are not
/// known statically are handed to `emit` together with the vertex they pass through (the
/// eliminated vertex, or for sums of parallel edges their target), which returns the label
/// now holding the value. Returns the remainder graph's edges (by target, then source) and
/// the multiplications emitted.
pub fn replay<F: FnMut(Op, usize) -> Label>(
    lcg: &Lcg,
    order: &[Step],
    model: CostModel,
    emit: F,
) -> (Vec<(usize, usize, Label)>, usize) {
    replay_in(&mut Workspace::default(), lcg, order, model, emit)
}

/// [`replay`] in `workspace`'s storage.
pub fn replay_in<F: FnMut(Op, usize) -> Label>(
    workspace: &mut Workspace,
    lcg: &Lcg,
    order: &[Step],
    model: CostModel,
    emit: F,
) -> (Vec<(usize, usize, Label)>, usize) {
    let mut ar = Arith { model, multiplications: 0, emit };
    let Workspace { work: graph, line, .. } = workspace;
    graph.rebuild(lcg, &mut ar);
    let first_face = order.iter().position(|s| matches!(s, Step::Face(..))).unwrap_or(order.len());
    for &step in &order[..first_face] {
        graph.apply(&lcg.kinds, step, &mut ar);
    }
    if first_face == order.len() {
        return (graph.edges(), ar.multiplications);
    }
    line.rebuild(graph, &lcg.kinds);
    for &step in &order[first_face..] {
        if let Step::Face(i, j) = step {
            line.eliminate(i, j, &mut ar);
        }
    }
    debug_assert!(line.back_transformable(), "face sequences end where the line graph is one of a graph");
    let edges = line.remainder(&mut ar);
    (edges, ar.multiplications)
}
