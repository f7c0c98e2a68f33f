//! Vertex and edge elimination on linearized computational graphs: elimination sequences from
//! heuristics and from an exact search, and their cost.
//!
//! Eliminating an intermediate vertex k adds, for every predecessor i and successor j, the
//! product c_jk·c_ki to the edge (i, j) (fill-in when it is new, absorption when it exists) and
//! removes k (openad-overview §2.1). Front-eliminating the edge (i, k) does the same for that
//! one predecessor only, back-eliminating (k, j) for that one successor (control-flow-reversal
//! §3); a vertex left without predecessors or successors drops out. The graph here is symbolic: labels are only known to be
//! ±1, a constant, or a run-time value, which is all the cost depends on.
//!
//! Two cost models: the classic count of label products (every product is a multiplication),
//! and the one the tangent code pays per derivative direction — products involving ±1 or only
//! constants are free (folded at compile time), and every non-unit edge left in the remainder
//! graph costs one multiplication in the propagator. Under the second model eliminating
//! everything is not always best, so every order is judged by its cheapest prefix
//! ("scarcity": stop where propagating through the rest of the graph is cheaper).

use std::collections::BTreeMap;

/// What the compiler knows about a partial derivative.
#[derive(Copy, Clone, PartialEq, Debug)]
pub enum Label {
    One,
    MinusOne,
    Constant(f64),
    /// Known only at run time.
    Variable,
}

impl Label {
    fn known(self) -> Option<f64> {
        match self {
            Label::One => Some(1.0),
            Label::MinusOne => Some(-1.0),
            Label::Constant(c) => Some(c),
            Label::Variable => None,
        }
    }

    fn from_value(value: f64) -> Label {
        if value == 1.0 {
            Label::One
        } else if value == -1.0 {
            Label::MinusOne
        } else {
            Label::Constant(value)
        }
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum VertexKind {
    Independent,
    Intermediate,
    Dependent,
}

/// A linearized computational graph; vertices are numbered in a topological order.
#[derive(Clone, Debug, Default)]
pub struct Lcg {
    pub kinds: Vec<VertexKind>,
    /// `(source, target, label)`; parallel edges are summed when the graph is built.
    pub edges: Vec<(usize, usize, Label)>,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum CostModel {
    /// Every label product is one multiplication; the remainder costs nothing.
    Classic,
    /// Products with ±1 or of two constants are free; each non-unit remainder edge costs one.
    UnitAware,
}

/// One elimination.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Step {
    /// Eliminate an intermediate vertex.
    Vertex(usize),
    /// Front-eliminate the edge `(i, k)` into an intermediate `k`.
    FrontEdge(usize, usize),
    /// Back-eliminate the edge `(k, j)` out of an intermediate `k`.
    BackEdge(usize, usize),
}

/// Heuristics and searches for elimination orders.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Method {
    /// Intermediates in increasing order.
    Forward,
    /// Intermediates in decreasing order.
    Reverse,
    /// Lowest Markowitz degree (|preds|·|succs|) first, ties by forward order.
    LowestMarkowitz,
    /// Lowest Markowitz degree, ties by reverse order.
    LowestMarkowitzReverse,
    /// Highest sibling degree first: the vertex sharing predecessors and successors with the
    /// most others (its elimination creates the least fill-in), ties by Markowitz degree, then
    /// reverse order.
    HighestSibling,
    /// The cheapest single elimination under the cost model, repeatedly.
    Greedy,
    /// Front edge elimination, edges taken by increasing target, then source.
    ForwardEdge,
    /// Back edge elimination, edges taken by decreasing source, then target.
    ReverseEdge,
    /// Branch and bound over all orders (graphs with at most [`EXACT_LIMIT`] intermediates).
    Exact,
}

pub const HEURISTICS: [Method; 8] = [
    Method::Forward,
    Method::Reverse,
    Method::LowestMarkowitz,
    Method::LowestMarkowitzReverse,
    Method::HighestSibling,
    Method::Greedy,
    Method::ForwardEdge,
    Method::ReverseEdge,
];

/// The largest number of intermediates the exact search is run on.
pub const EXACT_LIMIT: usize = 12;

/// Search nodes the exact search visits at most per graph (it then keeps the best found).
const SEARCH_LIMIT: usize = 200_000;

/// An elimination order and what it costs.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub method: Method,
    /// The eliminations, in order (a prefix of the method's full sequence when stopping early
    /// is cheaper).
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

/// The symbolic graph during elimination.
#[derive(Clone)]
struct State {
    preds: Vec<BTreeMap<usize, Label>>,
    succs: Vec<BTreeMap<usize, Label>>,
    multiplications: usize,
    /// Edges whose label is not ±1, kept up to date so a prefix's cost is O(1) to read.
    nonunit: usize,
}

fn is_nonunit(label: Label) -> bool {
    !matches!(label, Label::One | Label::MinusOne)
}

impl State {
    fn new(lcg: &Lcg) -> State {
        let n = lcg.kinds.len();
        let mut state =
            State { preds: vec![BTreeMap::new(); n], succs: vec![BTreeMap::new(); n], multiplications: 0, nonunit: 0 };
        for &(s, t, label) in &lcg.edges {
            let label = match state.preds[t].get(&s) {
                Some(&existing) => sum(existing, label),
                None => label,
            };
            state.set(s, t, label);
        }
        state
    }

    /// Sets (or, for a zero label, removes) the edge `s → t`.
    fn set(&mut self, s: usize, t: usize, label: Label) {
        if let Some(old) = self.preds[t].remove(&s) {
            self.succs[s].remove(&t);
            self.nonunit -= usize::from(is_nonunit(old));
        }
        if label != Label::Constant(0.0) {
            self.preds[t].insert(s, label);
            self.succs[s].insert(t, label);
            self.nonunit += usize::from(is_nonunit(label));
        }
    }

    fn eliminable(&self, lcg: &Lcg, v: usize) -> bool {
        lcg.kinds[v] == VertexKind::Intermediate && !self.preds[v].is_empty() && !self.succs[v].is_empty()
    }

    fn eliminate(&mut self, v: usize, model: CostModel) {
        let incoming: Vec<(usize, Label)> = self.preds[v].iter().map(|(&p, &l)| (p, l)).collect();
        let outgoing: Vec<(usize, Label)> = self.succs[v].iter().map(|(&s, &l)| (s, l)).collect();
        for &(p, _) in &incoming {
            self.set(p, v, Label::Constant(0.0));
        }
        for &(s, _) in &outgoing {
            self.set(v, s, Label::Constant(0.0));
        }
        for &(p, a) in &incoming {
            for &(s, b) in &outgoing {
                let (product, cost) = product(a, b, model);
                self.multiplications += cost;
                let label = match self.preds[s].get(&p) {
                    Some(&existing) => sum(existing, product),
                    None => product,
                };
                self.set(p, s, label);
            }
        }
    }

    /// Front-eliminates `(i, k)`: `c_ji += c_jk·c_ki` for every successor j of k.
    fn front(&mut self, i: usize, k: usize, model: CostModel) {
        let Some(&a) = self.preds[k].get(&i) else { return };
        let outgoing: Vec<(usize, Label)> = self.succs[k].iter().map(|(&j, &l)| (j, l)).collect();
        self.set(i, k, Label::Constant(0.0));
        for (j, b) in outgoing {
            self.absorb(i, j, a, b, model);
        }
        if self.preds[k].is_empty() {
            let dead: Vec<usize> = self.succs[k].keys().copied().collect();
            for j in dead {
                self.set(k, j, Label::Constant(0.0));
            }
        }
    }

    /// Back-eliminates `(k, j)`: `c_ji += c_jk·c_ki` for every predecessor i of k.
    fn back(&mut self, k: usize, j: usize, model: CostModel) {
        let Some(&b) = self.succs[k].get(&j) else { return };
        let incoming: Vec<(usize, Label)> = self.preds[k].iter().map(|(&i, &l)| (i, l)).collect();
        self.set(k, j, Label::Constant(0.0));
        for (i, a) in incoming {
            self.absorb(i, j, a, b, model);
        }
        if self.succs[k].is_empty() {
            let dead: Vec<usize> = self.preds[k].keys().copied().collect();
            for i in dead {
                self.set(i, k, Label::Constant(0.0));
            }
        }
    }

    /// `c_ji += b·a` with fill-in or absorption.
    fn absorb(&mut self, i: usize, j: usize, a: Label, b: Label, model: CostModel) {
        let (product, cost) = product(a, b, model);
        self.multiplications += cost;
        let label = match self.preds[j].get(&i) {
            Some(&existing) => sum(existing, product),
            None => product,
        };
        self.set(i, j, label);
    }

    fn apply(&mut self, step: Step, model: CostModel) {
        match step {
            Step::Vertex(v) => self.eliminate(v, model),
            Step::FrontEdge(i, k) => self.front(i, k, model),
            Step::BackEdge(k, j) => self.back(k, j, model),
        }
    }

    /// Multiplications per direction to propagate through what is left.
    fn propagation(&self, model: CostModel) -> usize {
        match model {
            CostModel::Classic => 0,
            CostModel::UnitAware => self.nonunit,
        }
    }

    fn markowitz(&self, v: usize) -> usize {
        self.preds[v].len() * self.succs[v].len()
    }

    /// How many other vertices share a predecessor or a successor with `v`.
    fn siblings(&self, v: usize) -> usize {
        let mut others = std::collections::BTreeSet::new();
        for p in self.preds[v].keys() {
            others.extend(self.succs[*p].keys().copied());
        }
        for s in self.succs[v].keys() {
            others.extend(self.preds[*s].keys().copied());
        }
        others.remove(&v);
        others.len()
    }
}

fn product(a: Label, b: Label, model: CostModel) -> (Label, usize) {
    match (a.known(), b.known(), model) {
        (Some(x), Some(y), CostModel::UnitAware) => (Label::from_value(x * y), 0),
        (Some(x), None, CostModel::UnitAware) | (None, Some(x), CostModel::UnitAware) if x.abs() == 1.0 => {
            (Label::Variable, 0)
        }
        (Some(x), Some(y), CostModel::Classic) => (Label::from_value(x * y), 1),
        _ => (Label::Variable, 1),
    }
}

fn sum(a: Label, b: Label) -> Label {
    match (a.known(), b.known()) {
        (Some(x), Some(y)) => Label::from_value(x + y),
        _ => Label::Variable,
    }
}

/// Graphs larger than this (in intermediates) are not tried with the secondary heuristics
/// (sibling degree, whose degree computation is quadratic in the neighbourhood size, and the
/// tie-break and edge variants of the main ones).
const SIBLING_LIMIT: usize = 64;

/// Runs a heuristic, keeping the cheapest prefix of its order. Under the unit-aware model the
/// run stops once its accumulation multiplications alone reach the cheapest prefix seen: they
/// never decrease, so no longer prefix can win (this also avoids the fill-in explosion of
/// eliminating everything in large graphs).
fn run_heuristic(lcg: &Lcg, method: Method, model: CostModel, bound: usize) -> Plan {
    if method == Method::Greedy {
        let steps: Vec<Step> = greedy_order(lcg, model).into_iter().map(Step::Vertex).collect();
        return evaluate(lcg, method, &steps, model);
    }
    let mut state = State::new(lcg);
    let mut order = Vec::new();
    let mut best = Plan { method, order: Vec::new(), multiplications: 0, propagation: state.propagation(model) };
    loop {
        let candidates = (0..lcg.kinds.len()).filter(|&v| state.eliminable(lcg, v));
        let choice = match method {
            // Edges into (out of) the first (last) eliminable intermediate, one at a time.
            Method::ForwardEdge => {
                candidates.min().and_then(|k| state.preds[k].keys().next().map(|&i| Step::FrontEdge(i, k)))
            }
            Method::ReverseEdge => {
                candidates.max().and_then(|k| state.succs[k].keys().next_back().map(|&j| Step::BackEdge(k, j)))
            }
            vertex_method => match vertex_method {
                Method::Forward => candidates.min(),
                Method::Reverse => candidates.max(),
                Method::LowestMarkowitz => candidates.min_by_key(|&v| (state.markowitz(v), v)),
                Method::LowestMarkowitzReverse => {
                    candidates.min_by_key(|&v| (state.markowitz(v), std::cmp::Reverse(v)))
                }
                Method::HighestSibling => {
                    candidates.max_by_key(|&v| (state.siblings(v), std::cmp::Reverse(state.markowitz(v)), v))
                }
                Method::Greedy | Method::Exact | Method::ForwardEdge | Method::ReverseEdge => {
                    unreachable!("not a stepwise vertex heuristic")
                }
            }
            .map(Step::Vertex),
        };
        let Some(step) = choice else { break };
        state.apply(step, model);
        order.push(step);
        let cost = state.multiplications + state.propagation(model);
        // The classic model judges complete orders only (checked lazily: it is a full scan).
        let complete = || (0..lcg.kinds.len()).all(|u| !state.eliminable(lcg, u));
        if cost < best.cost() || (model == CostModel::Classic && complete()) {
            best = Plan {
                method,
                order: order.clone(),
                multiplications: state.multiplications,
                propagation: state.propagation(model),
            };
        }
        // `bound` is the best cost another method already reached: a run that cannot beat it
        // need not go on either.
        if model == CostModel::UnitAware && state.multiplications >= best.cost().min(bound) {
            break;
        }
    }
    best
}

/// Repeatedly the elimination that lowers the cost most (ties: fewer edges, then lower
/// vertex), while one lowers it or keeps it and removes edges. Costs change only around an
/// eliminated vertex, so they are cached and recomputed for that neighbourhood: long basic
/// blocks give graphs of hundreds of vertices.
fn greedy_order(lcg: &Lcg, model: CostModel) -> Vec<usize> {
    let mut state = State::new(lcg);
    let n = lcg.kinds.len();
    let cost_of = |state: &State, v: usize| state.eliminable(lcg, v).then(|| elimination_delta(state, v, model));
    let mut costs: Vec<Option<(i64, i64)>> = (0..n).map(|v| cost_of(&state, v)).collect();
    let mut order = Vec::new();
    loop {
        let best = costs
            .iter()
            .enumerate()
            .filter_map(|(v, cost)| cost.map(|(delta, edges)| (delta, edges, v)))
            .filter(|&(delta, edges, _)| delta < 0 || (delta == 0 && edges < 0))
            .min();
        let Some((_, _, v)) = best else { break };
        let mut dirty: Vec<usize> = Vec::new();
        for &p in state.preds[v].keys() {
            dirty.push(p);
            dirty.extend(state.succs[p].keys().copied());
        }
        for &s in state.succs[v].keys() {
            dirty.push(s);
            dirty.extend(state.preds[s].keys().copied());
        }
        let neighbours: Vec<usize> = state.preds[v].keys().chain(state.succs[v].keys()).copied().collect();
        state.eliminate(v, model);
        order.push(v);
        costs[v] = None;
        for u in neighbours {
            dirty.extend(state.succs[u].keys().copied());
            dirty.extend(state.preds[u].keys().copied());
        }
        for u in dirty {
            if u != v {
                costs[u] = cost_of(&state, u);
            }
        }
    }
    order
}

/// The change in total cost, and in the number of edges, if `v` were eliminated next.
fn elimination_delta(state: &State, v: usize, model: CostModel) -> (i64, i64) {
    let edge_cost = |label: Option<Label>| match (label, model) {
        (None, _) | (_, CostModel::Classic) => 0,
        (Some(l), CostModel::UnitAware) => i64::from(!matches!(l, Label::One | Label::MinusOne)),
    };
    let mut delta = 0i64;
    let mut edge_change = -((state.preds[v].len() + state.succs[v].len()) as i64);
    for &a in state.preds[v].values() {
        delta -= edge_cost(Some(a));
    }
    for &b in state.succs[v].values() {
        delta -= edge_cost(Some(b));
    }
    for (&p, &a) in &state.preds[v] {
        for (&s, &b) in &state.succs[v] {
            let (product, multiplications) = product(a, b, model);
            delta += multiplications as i64;
            let result = match state.preds[s].get(&p) {
                Some(&existing) => {
                    delta -= edge_cost(Some(existing));
                    sum(existing, product)
                }
                None => {
                    edge_change += 1;
                    product
                }
            };
            if result != Label::Constant(0.0) {
                delta += edge_cost(Some(result));
            }
        }
    }
    (delta, edge_change)
}

/// Replays an order and keeps its cheapest prefix (all of it under the classic model).
fn evaluate(lcg: &Lcg, method: Method, order: &[Step], model: CostModel) -> Plan {
    let mut state = State::new(lcg);
    let mut best = Plan { method, order: Vec::new(), multiplications: 0, propagation: state.propagation(model) };
    for (i, &step) in order.iter().enumerate() {
        state.apply(step, model);
        let candidate_cost = state.multiplications + state.propagation(model);
        let complete = i + 1 == order.len();
        if candidate_cost < best.cost() || (model == CostModel::Classic && complete) {
            best = Plan {
                method,
                order: order[..=i].to_vec(),
                multiplications: state.multiplications,
                propagation: state.propagation(model),
            };
        }
    }
    best
}

/// The plan of one method.
pub fn plan(lcg: &Lcg, method: Method, model: CostModel) -> Plan {
    match method {
        Method::Exact => exact(lcg, model),
        heuristic => run_heuristic(lcg, heuristic, model, usize::MAX),
    }
}

/// Every heuristic (and, when `exact` is set and the graph is small enough, the exact
/// search); the cheapest wins, ties going to the earlier method in [`HEURISTICS`] order.
pub fn best_of(lcg: &Lcg, model: CostModel, exact_search: bool) -> Plan {
    let intermediates = lcg.kinds.iter().filter(|k| **k == VertexKind::Intermediate).count();
    let mut best = plan(lcg, HEURISTICS[0], model);
    for method in HEURISTICS.into_iter().skip(1) {
        // On large graphs only the heuristics that differ most are tried: the others cost
        // quadratic time there and, on the corpus, never win on a large graph.
        let large = intermediates > SIBLING_LIMIT;
        let secondary = matches!(
            method,
            Method::HighestSibling | Method::LowestMarkowitzReverse | Method::ForwardEdge | Method::ReverseEdge
        );
        if large && secondary {
            continue;
        }
        let candidate = match method {
            Method::Greedy | Method::Exact => plan(lcg, method, model),
            heuristic => run_heuristic(lcg, heuristic, model, best.cost()),
        };
        if candidate.cost() < best.cost() {
            best = candidate;
        }
    }
    if exact_search && intermediates <= EXACT_LIMIT {
        let candidate = exact(lcg, model);
        if candidate.cost() < best.cost() {
            best = candidate;
        }
    }
    best
}

/// Branch and bound over elimination orders (and their prefixes), starting from the best
/// heuristic's cost as the bound: accumulation multiplications never decrease along an order,
/// so a partial order whose multiplications alone reach the bound is cut.
fn exact(lcg: &Lcg, model: CostModel) -> Plan {
    let mut best =
        HEURISTICS.into_iter().map(|m| plan(lcg, m, model)).min_by_key(Plan::cost).expect("there are heuristics");
    best.method = Method::Exact;
    let intermediates = lcg.kinds.iter().filter(|k| **k == VertexKind::Intermediate).count();
    if intermediates > EXACT_LIMIT {
        return best;
    }
    let mut order = Vec::new();
    let mut visited = 0usize;
    search(lcg, State::new(lcg), model, &mut order, &mut best, &mut visited);
    best
}

fn search(lcg: &Lcg, state: State, model: CostModel, order: &mut Vec<Step>, best: &mut Plan, visited: &mut usize) {
    *visited += 1;
    let cost = state.multiplications + state.propagation(model);
    let complete = (0..lcg.kinds.len()).all(|v| !state.eliminable(lcg, v));
    let better = match model {
        CostModel::UnitAware => cost < best.cost(),
        CostModel::Classic => complete && cost < best.cost(),
    };
    if better {
        *best = Plan {
            method: Method::Exact,
            order: order.clone(),
            multiplications: state.multiplications,
            propagation: state.propagation(model),
        };
    }
    // Accumulation multiplications only grow; once they alone reach the best total, no
    // extension can win.
    if state.multiplications >= best.cost() || *visited > SEARCH_LIMIT {
        return;
    }
    for v in 0..lcg.kinds.len() {
        if !state.eliminable(lcg, v) {
            continue;
        }
        let mut next = state.clone();
        next.eliminate(v, model);
        order.push(Step::Vertex(v));
        search(lcg, next, model, order, best, visited);
        order.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The example of openad-overview §2.1: v1 = v-1 + v0, v2 = sin(v0), v3 = v1 + v2,
    /// v4 = v1·v3, v5 = sqrt(v3), v6 = cos(v4), v7 = -v5 (vertices renumbered from 0).
    fn paper_graph() -> Lcg {
        use Label::*;
        use VertexKind::*;
        let kinds = vec![
            Independent,
            Independent,
            Intermediate,
            Intermediate,
            Intermediate,
            Intermediate,
            Intermediate,
            Dependent,
            Dependent,
        ];
        let edges = vec![
            (0, 2, One),
            (1, 2, One),
            (1, 3, Variable),
            (2, 4, One),
            (3, 4, One),
            (2, 5, Variable),
            (4, 5, Variable),
            (4, 6, Variable),
            (5, 7, Variable),
            (6, 8, MinusOne),
        ];
        Lcg { kinds, edges }
    }

    #[test]
    fn forward_vertex_elimination_of_the_paper_example_costs_13() {
        let lcg = paper_graph();
        let forward = plan(&lcg, Method::Forward, CostModel::Classic);
        assert_eq!(forward.order, [2, 3, 4, 5, 6].map(Step::Vertex).to_vec());
        assert_eq!(forward.multiplications, 13);
        let exact = plan(&lcg, Method::Exact, CostModel::Classic);
        assert!(exact.cost() <= 13);
        for method in HEURISTICS {
            assert!(exact.cost() <= plan(&lcg, method, CostModel::Classic).cost(), "{method:?}");
        }
    }

    #[test]
    fn unit_aware_costs_fold_units_and_may_stop_early() {
        let lcg = paper_graph();
        let best = best_of(&lcg, CostModel::UnitAware, true);
        // Propagating through the whole graph costs its 6 non-unit edges.
        assert!(best.cost() <= 6, "{best:?}");
    }

    /// A random DAG: `n` vertices in topological order, the first `inputs` independent, the
    /// last `outputs` dependent; labels drawn from ±1, constants and run-time values.
    fn random_graph() -> impl Strategy<Value = (Lcg, Vec<f64>)> {
        (2usize..4, 0usize..7, 1usize..4).prop_flat_map(|(inputs, middle, outputs)| {
            let n = inputs + middle + outputs;
            let pairs: Vec<(usize, usize)> = (0..n)
                .flat_map(|s| ((s + 1).max(inputs)..n).map(move |t| (s, t)))
                .filter(|&(s, _)| s < inputs + middle)
                .collect();
            let count = pairs.len();
            (
                Just((inputs, middle, outputs, pairs)),
                prop::collection::vec((any::<bool>(), 0u8..4, -2.0f64..2.0), count),
            )
                .prop_map(|((inputs, middle, outputs, pairs), choices)| {
                    let mut kinds = vec![VertexKind::Independent; inputs];
                    kinds.extend(vec![VertexKind::Intermediate; middle]);
                    kinds.extend(vec![VertexKind::Dependent; outputs]);
                    let mut edges = Vec::new();
                    let mut values = Vec::new();
                    for ((s, t), (keep, kind, value)) in pairs.into_iter().zip(choices) {
                        if !keep {
                            continue;
                        }
                        let (label, number) = match kind {
                            0 => (Label::One, 1.0),
                            1 => (Label::MinusOne, -1.0),
                            2 => (Label::Constant(value), value),
                            _ => (Label::Variable, value),
                        };
                        edges.push((s, t, label));
                        values.push(number);
                    }
                    (Lcg { kinds, edges }, values)
                })
        })
    }

    /// The Jacobian by eliminating in `order` with numbers, then path sums over what is left.
    fn jacobian(lcg: &Lcg, values: &[f64], order: &[Step]) -> Vec<f64> {
        let n = lcg.kinds.len();
        let mut c = vec![vec![0.0; n]; n];
        for (&(s, t, _), &v) in lcg.edges.iter().zip(values) {
            c[t][s] += v;
        }
        let isolate_if_dead = |c: &mut Vec<Vec<f64>>, k: usize| {
            let no_preds = (0..n).all(|i| c[k][i] == 0.0);
            let no_succs = (0..n).all(|j| c[j][k] == 0.0);
            if no_preds || no_succs {
                c[k].iter_mut().for_each(|entry| *entry = 0.0);
                for row in c.iter_mut() {
                    row[k] = 0.0;
                }
            }
        };
        for &step in order {
            match step {
                Step::Vertex(k) => {
                    for i in 0..n {
                        if c[k][i] == 0.0 {
                            continue;
                        }
                        for j in 0..n {
                            if c[j][k] != 0.0 {
                                c[j][i] += c[j][k] * c[k][i];
                            }
                        }
                    }
                    c[k].iter_mut().for_each(|entry| *entry = 0.0);
                    for row in c.iter_mut() {
                        row[k] = 0.0;
                    }
                }
                Step::FrontEdge(i, k) => {
                    let a = c[k][i];
                    for row in c.iter_mut() {
                        if row[k] != 0.0 {
                            row[i] += row[k] * a;
                        }
                    }
                    c[k][i] = 0.0;
                    isolate_if_dead(&mut c, k);
                }
                Step::BackEdge(k, j) => {
                    let b = c[j][k];
                    let source = c[k].clone();
                    for (i, value) in source.into_iter().enumerate() {
                        if value != 0.0 {
                            c[j][i] += b * value;
                        }
                    }
                    c[j][k] = 0.0;
                    isolate_if_dead(&mut c, k);
                }
            }
        }
        // Path sums through the remaining graph (forward propagation of unit seeds).
        let inputs: Vec<usize> = (0..n).filter(|&v| lcg.kinds[v] == VertexKind::Independent).collect();
        let outputs: Vec<usize> = (0..n).filter(|&v| lcg.kinds[v] == VertexKind::Dependent).collect();
        let mut result = Vec::new();
        for &x in &inputs {
            let mut d = vec![0.0; n];
            d[x] = 1.0;
            for t in 0..n {
                for s in 0..t {
                    d[t] += c[t][s] * d[s];
                }
            }
            result.extend(outputs.iter().map(|&y| d[y]));
        }
        result
    }

    proptest! {
        #[test]
        fn every_method_preserves_the_jacobian((lcg, values) in random_graph()) {
            let reference = jacobian(&lcg, &values, &[]);
            for model in [CostModel::Classic, CostModel::UnitAware] {
                for method in HEURISTICS.into_iter().chain([Method::Exact]) {
                    let plan = plan(&lcg, method, model);
                    let got = jacobian(&lcg, &values, &plan.order);
                    for (a, b) in got.iter().zip(&reference) {
                        prop_assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{:?} {:?}: {} vs {}", model, method, a, b);
                    }
                }
            }
        }

        #[test]
        fn exact_is_never_worse_than_a_heuristic((lcg, _values) in random_graph()) {
            for model in [CostModel::Classic, CostModel::UnitAware] {
                let exact = plan(&lcg, Method::Exact, model);
                for method in HEURISTICS {
                    prop_assert!(exact.cost() <= plan(&lcg, method, model).cost(), "{:?} {:?}", model, method);
                }
                prop_assert_eq!(best_of(&lcg, model, true).cost(), exact.cost());
                prop_assert!(best_of(&lcg, model, false).cost() >= exact.cost());
            }
        }

        #[test]
        fn plans_are_deterministic((lcg, _values) in random_graph()) {
            prop_assert_eq!(best_of(&lcg, CostModel::UnitAware, true), best_of(&lcg, CostModel::UnitAware, true));
        }
    }
}
