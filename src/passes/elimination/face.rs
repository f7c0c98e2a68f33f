//! Face elimination on the directed line graph (openad-overview §2.1): every edge of the LCG
//! becomes a vertex labelled with its partial, plus one dummy per independent (a source) and
//! per dependent (a sink); two line-graph vertices are joined when the first's edge ends where
//! the second's begins. Eliminating the face (i, j) costs at most one product: c_j·c_i is
//! absorbed into the vertex with i's predecessors and j's successors, or becomes a new one
//! (fill-in); the edge (i, j) goes, and i and j drop out when isolated or merge with a vertex
//! of the same predecessors and successors.
//!
//! After face eliminations the line graph need not be the line graph of any LCG, and the
//! propagator works on LCGs; so a prefix of a face sequence counts only where it is one again,
//! with the LCG's own vertices (every vertex's predecessors are exactly the edges ending where
//! its edge begins, and its successors those beginning where it ends). A complete sequence
//! always is: what is left are the Jacobian's entries between the dummies.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::{Arith, CostModel, Graph, Label, Lcg, Method, Op, Plan, Step, VertexKind};

/// A vertex without a tail (source dummy) or head (sink dummy).
const NONE: usize = usize::MAX;

/// A set of line-graph vertices as a sorted vector: the sets are small, and a vector costs
/// one allocation where a tree costs a node per few entries and pointer chasing.
#[derive(Clone, Debug, Default, Eq)]
struct VertexSet(Vec<usize>);

/// Element by element, in line: the sets compared ([`LineGraph::find`], for every product a
/// face elimination makes) hold a few entries each, for which the slices' comparison was a
/// call to `memcmp`.
impl PartialEq for VertexSet {
    fn eq(&self, other: &VertexSet) -> bool {
        self.0.len() == other.0.len() && self.0.iter().zip(&other.0).all(|(a, b)| a == b)
    }
}

/// Values grouped by key (keys `NONE` left out), each group in the order the values came:
/// [`LineGraph::back_transformable`]'s lists of live vertices by LCG vertex.
struct Runs {
    /// Where each key's run begins in `values`, and where the last one ends.
    starts: Vec<usize>,
    values: Vec<usize>,
}

impl Runs {
    fn of(pairs: impl Iterator<Item = (usize, usize)> + Clone) -> Runs {
        let pairs = pairs.filter(|&(key, _)| key != NONE);
        let keys = pairs.clone().map(|(key, _)| key).max().map_or(0, |last| last + 1);
        let mut starts = vec![0; keys + 1];
        for (key, _) in pairs.clone() {
            starts[key + 1] += 1;
        }
        for key in 0..keys {
            starts[key + 1] += starts[key];
        }
        let mut next = starts.clone();
        let mut values = vec![0; starts[keys]];
        for (key, value) in pairs {
            values[next[key]] = value;
            next[key] += 1;
        }
        Runs { starts, values }
    }

    /// The values of `key` (empty past the last key).
    fn at(&self, key: usize) -> &[usize] {
        match (self.starts.get(key), self.starts.get(key + 1)) {
            (Some(&from), Some(&to)) => &self.values[from..to],
            _ => &[],
        }
    }
}

impl VertexSet {
    fn insert(&mut self, v: usize) {
        if let Err(at) = self.0.binary_search(&v) {
            self.0.insert(at, v);
        }
    }

    fn remove(&mut self, v: &usize) {
        if let Ok(at) = self.0.binary_search(v) {
            self.0.remove(at);
        }
    }

    fn contains(&self, v: &usize) -> bool {
        self.0.binary_search(v).is_ok()
    }

    fn first(&self) -> Option<&usize> {
        self.0.first()
    }

    fn iter(&self) -> std::slice::Iter<'_, usize> {
        self.0.iter()
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> IntoIterator for &'a VertexSet {
    type Item = &'a usize;
    type IntoIter = std::slice::Iter<'a, usize>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl IntoIterator for VertexSet {
    type Item = usize;
    type IntoIter = std::vec::IntoIter<usize>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

#[derive(Clone, Debug, Default)]
pub(super) struct LineGraph {
    label: Vec<Label>,
    /// The LCG vertex the edge starts at, `NONE` for a source dummy.
    tail: Vec<usize>,
    /// The LCG vertex the edge ends at, `NONE` for a sink dummy.
    head: Vec<usize>,
    alive: Vec<bool>,
    /// Indexed like `label`; entries past its length are storage kept for the next graph.
    preds: Vec<VertexSet>,
    succs: Vec<VertexSet>,
    /// Live non-dummy vertices whose label is not ±1, and of those the ones whose label is 0
    /// (a product of constants can underflow).
    nonunit: usize,
    zeros: usize,
    /// How many live non-dummy vertices stand for each LCG edge (tail, head), and how many of
    /// them are parallel to one counted before: without parallel vertices, what the remainder
    /// costs to propagate through is a count ([`LineGraph::propagation`]).
    ends: FxHashMap<(usize, usize), u32>,
    parallel: usize,
    /// Buffers kept from one use to the next: the vertices by the LCG vertex their edge starts
    /// at (while building), [`LineGraph::remove`]'s work list, and a face's absorbing
    /// vertex's predecessors and successors (while eliminating it).
    by_tail: Vec<(usize, usize)>,
    stack: Vec<usize>,
    sides: (VertexSet, VertexSet),
}

impl LineGraph {
    #[cfg(test)]
    pub(super) fn new(graph: &Graph, kinds: &[VertexKind]) -> LineGraph {
        let mut line = LineGraph::default();
        line.rebuild(graph, kinds);
        line
    }

    /// Makes this the line graph of `graph`, in the storage it has (a pass builds one for
    /// every face run).
    pub(super) fn rebuild(&mut self, graph: &Graph, kinds: &[VertexKind]) {
        self.label.clear();
        self.tail.clear();
        self.head.clear();
        self.alive.clear();
        self.nonunit = 0;
        self.zeros = 0;
        self.ends.clear();
        self.parallel = 0;
        for (v, kind) in kinds.iter().enumerate() {
            match kind {
                VertexKind::Independent => {
                    self.push(NONE, v, Label::One);
                }
                VertexKind::Dependent => {
                    self.push(v, NONE, Label::One);
                }
                VertexKind::Intermediate => {}
            }
        }
        for (s, t, label) in graph.edges() {
            self.push(s, t, label);
        }
        // Line-graph vertices by the LCG vertex their edge starts at, sorted: each vertex's
        // successors are one run of it.
        let mut by_tail = std::mem::take(&mut self.by_tail);
        by_tail.clear();
        by_tail.extend((0..self.label.len()).filter(|&u| self.tail[u] != NONE).map(|u| (self.tail[u], u)));
        by_tail.sort_unstable();
        for u in 0..self.label.len() {
            let head = self.head[u];
            if head == NONE {
                continue;
            }
            let from = by_tail.partition_point(|&(tail, _)| tail < head);
            for &(_, w) in by_tail[from..].iter().take_while(|&&(tail, _)| tail == head) {
                self.succs[u].insert(w);
                self.preds[w].insert(u);
            }
        }
        self.by_tail = by_tail;
    }

    fn push(&mut self, tail: usize, head: usize, label: Label) -> usize {
        let v = self.label.len();
        self.label.push(label);
        self.tail.push(tail);
        self.head.push(head);
        self.alive.push(true);
        if v < self.preds.len() {
            self.preds[v].0.clear();
            self.succs[v].0.clear();
        } else {
            self.preds.push(VertexSet::default());
            self.succs.push(VertexSet::default());
        }
        if self.inner(v) {
            self.count_label(label, true);
            let sharing = self.ends.entry((tail, head)).or_insert(0);
            *sharing += 1;
            self.parallel += usize::from(*sharing > 1);
        }
        v
    }

    /// Counts the label of a live non-dummy vertex in (`add`) or out of `nonunit` and `zeros`.
    fn count_label(&mut self, label: Label, add: bool) {
        let (nonunit, zero) = (usize::from(!label.is_unit()), usize::from(label.is_zero()));
        if add {
            self.nonunit += nonunit;
            self.zeros += zero;
        } else {
            self.nonunit -= nonunit;
            self.zeros -= zero;
        }
    }

    fn inner(&self, v: usize) -> bool {
        self.tail[v] != NONE && self.head[v] != NONE
    }

    /// The faces that can be eliminated: pairs of adjacent live non-dummy vertices.
    fn faces(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.label.len())
            .filter(|&i| self.alive[i] && self.inner(i))
            .flat_map(move |i| self.succs[i].iter().filter(|&&j| self.inner(j)).map(move |&j| (i, j)))
    }

    /// Relabels a live non-dummy vertex.
    fn set_label(&mut self, v: usize, label: Label) {
        self.count_label(self.label[v], false);
        self.label[v] = label;
        self.count_label(label, true);
    }

    /// Removes `v` and then whatever that leaves isolated.
    fn remove(&mut self, v: usize) {
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.push(v);
        while let Some(v) = stack.pop() {
            if !self.alive[v] || !self.inner(v) {
                continue;
            }
            self.alive[v] = false;
            self.count_label(self.label[v], false);
            let sharing = self.ends.get_mut(&(self.tail[v], self.head[v])).expect("every live vertex is counted");
            *sharing -= 1;
            self.parallel -= usize::from(*sharing > 0);
            let mut preds = std::mem::take(&mut self.preds[v]);
            for &p in &preds {
                self.succs[p].remove(&v);
                if self.succs[p].is_empty() {
                    stack.push(p);
                }
            }
            preds.0.clear();
            self.preds[v] = preds;
            let mut succs = std::mem::take(&mut self.succs[v]);
            for &s in &succs {
                self.preds[s].remove(&v);
                if self.preds[s].is_empty() {
                    stack.push(s);
                }
            }
            succs.0.clear();
            self.succs[v] = succs;
        }
        self.stack = stack;
    }

    /// A live non-dummy vertex other than `not` with these predecessors and successors.
    fn find(&self, preds: &VertexSet, succs: &VertexSet, not: usize) -> Option<usize> {
        // Such a vertex is a successor of any one of the predecessors (or a predecessor of any
        // one of the successors).
        let candidates = match (preds.first(), succs.first()) {
            (Some(&p), _) => &self.succs[p],
            (None, Some(&s)) => &self.preds[s],
            (None, None) => return None,
        };
        candidates
            .iter()
            .copied()
            .find(|&k| k != not && self.alive[k] && self.inner(k) && self.preds[k] == *preds && self.succs[k] == *succs)
    }

    pub(super) fn eliminate<F: FnMut(Op, usize) -> Label>(&mut self, i: usize, j: usize, ar: &mut Arith<F>) {
        if !self.alive[i] || !self.alive[j] || !self.succs[i].contains(&j) {
            return;
        }
        let via = self.head[i];
        let product = ar.mul(self.label[i], self.label[j], via);
        match self.find(&self.preds[i], &self.succs[j], NONE) {
            Some(k) => {
                let sum = ar.add(self.label[k], product, via);
                self.set_label(k, sum);
                if sum.is_zero() {
                    self.remove(k);
                }
            }
            None => {
                let (mut preds, mut succs) = std::mem::take(&mut self.sides);
                preds.0.clone_from(&self.preds[i].0);
                succs.0.clone_from(&self.succs[j].0);
                let k = self.push(self.tail[i], self.head[j], product);
                for &p in &preds {
                    self.succs[p].insert(k);
                }
                for &s in &succs {
                    self.preds[s].insert(k);
                }
                // The new vertex takes the copies; its old (empty) sets become the buffers.
                std::mem::swap(&mut self.preds[k], &mut preds);
                std::mem::swap(&mut self.succs[k], &mut succs);
                self.sides = (preds, succs);
            }
        }
        self.succs[i].remove(&j);
        self.preds[j].remove(&i);
        for v in [i, j] {
            self.tidy(v, ar);
        }
    }

    /// Step 3 of face elimination: an isolated vertex goes, one with a twin (same
    /// predecessors and successors) absorbs it.
    fn tidy<F: FnMut(Op, usize) -> Label>(&mut self, v: usize, ar: &mut Arith<F>) {
        if !self.alive[v] {
            return;
        }
        if self.preds[v].is_empty() || self.succs[v].is_empty() {
            self.remove(v);
            return;
        }
        if let Some(twin) = self.find(&self.preds[v], &self.succs[v], v) {
            let sum = ar.add(self.label[v], self.label[twin], self.head[v]);
            self.remove(twin);
            self.set_label(v, sum);
            if sum.is_zero() {
                self.remove(v);
            }
        }
    }

    /// The change in multiplications plus non-unit vertices if the face `(i, j)` were
    /// eliminated next (twins merging afterwards not counted).
    fn delta(&self, i: usize, j: usize, model: CostModel) -> i64 {
        let cost = |l: Label| i64::from(!l.is_unit()) * model.edge_weight() as i64;
        let mut ar = Arith::planning(model);
        let product = ar.mul(self.label[i], self.label[j], 0);
        let mut delta = ar.multiplications as i64;
        match self.find(&self.preds[i], &self.succs[j], NONE) {
            Some(k) => {
                let sum = ar.add(self.label[k], product, 0);
                delta += if sum.is_zero() { 0 } else { cost(sum) } - cost(self.label[k]);
            }
            None => delta += cost(product),
        }
        if self.succs[i].len() == 1 {
            delta -= cost(self.label[i]);
        }
        if self.preds[j].len() == 1 {
            delta -= cost(self.label[j]);
        }
        delta
    }

    /// The face that lowers the cost most, ties by the vertex it passes through (forward),
    /// then by its vertices. A face whose delta cannot beat the best one found so far even
    /// with the cheapest outcome of its absorption (see [`LineGraph::delta_bound`]) is passed
    /// over without the search for that absorption.
    fn cheapest_face(&self, model: CostModel) -> Option<(usize, usize)> {
        let mut best: Option<(i64, usize, usize, usize, usize, usize)> = None;
        for (i, j) in self.faces() {
            let order = (self.head[i], self.tail[i], self.head[j], i, j);
            if let Some(best) = best
                && (self.delta_bound(i, j, model), order.0, order.1, order.2, order.3, order.4) > best
            {
                continue;
            }
            let key = (self.delta(i, j, model), order.0, order.1, order.2, order.3, order.4);
            if best.is_none_or(|best| key < best) {
                best = Some(key);
            }
        }
        best.map(|(.., i, j)| (i, j))
    }

    /// A lower bound of [`LineGraph::delta`]: everything but the absorption, which changes
    /// the non-unit vertices by at least minus one edge's weight.
    fn delta_bound(&self, i: usize, j: usize, model: CostModel) -> i64 {
        let weight = model.edge_weight() as i64;
        let cost = |l: Label| i64::from(!l.is_unit()) * weight;
        let mut ar = Arith::planning(model);
        ar.mul(self.label[i], self.label[j], 0);
        let mut bound = ar.multiplications as i64 - weight;
        if self.succs[i].len() == 1 {
            bound -= cost(self.label[i]);
        }
        if self.preds[j].len() == 1 {
            bound -= cost(self.label[j]);
        }
        bound
    }

    /// Whether this is the line graph of an LCG on the original vertices: every live vertex's
    /// predecessors are exactly the live vertices whose edge ends where its edge begins, and its
    /// successors those whose edge begins where it ends. The live vertices are gathered by the
    /// LCG vertex their edge ends (begins) at, in increasing order within each (a counting
    /// sort over the LCG's vertices: a comparison sort of the pairs had been a quarter of the
    /// check, which a face run makes after every step that could win), so each such set is a
    /// run of one list.
    pub(super) fn back_transformable(&self) -> bool {
        let live = || (0..self.label.len()).filter(|&v| self.alive[v]);
        let by_head = Runs::of(live().map(|v| (self.head[v], v)));
        let by_tail = Runs::of(live().map(|v| (self.tail[v], v)));
        live().all(|v| {
            let preds_ok = self.tail[v] == NONE || self.preds[v].0 == by_head.at(self.tail[v]);
            let succs_ok = self.head[v] == NONE || self.succs[v].0 == by_tail.at(self.head[v]);
            preds_ok && succs_ok
        })
    }

    /// The LCG edges (parallel ones summed), by target, then source.
    pub(super) fn remainder<F: FnMut(Op, usize) -> Label>(&self, ar: &mut Arith<F>) -> Vec<(usize, usize, Label)> {
        let mut edges: BTreeMap<(usize, usize), Label> = BTreeMap::new();
        for v in (0..self.label.len()).filter(|&v| self.alive[v] && self.inner(v)) {
            let key = (self.head[v], self.tail[v]);
            let label = match edges.get(&key) {
                Some(&existing) => ar.add(existing, self.label[v], self.head[v]),
                None => self.label[v],
            };
            edges.insert(key, label);
        }
        edges.into_iter().filter(|(_, l)| !l.is_zero()).map(|((t, s), l)| (s, t, l)).collect()
    }

    /// What the remainder costs to propagate through (parallel edges summed first): its
    /// non-unit edges, each weighed as the model weighs them (the adjoint's three). The face
    /// run asks after most steps: where no two vertices stand for the same LCG edge, the
    /// counts kept as the graph changes answer.
    fn propagation(&self, model: CostModel, scratch: &mut Vec<(usize, usize, Label)>) -> usize {
        if model == CostModel::Classic {
            return 0;
        }
        // Almost always (5,107 of 5,134 calls on a 2 MiB synthetic adjoint): each edge once,
        // so the non-unit ones are counted already.
        if self.parallel == 0 {
            return (self.nonunit - self.zeros) * model.edge_weight();
        }
        self.propagation_by_sorting(model, scratch)
    }

    /// [`LineGraph::propagation`] from the vertices: [`LineGraph::remainder`] without its map,
    /// the edges sorted by (head, tail) into `scratch`, whose stable sort keeps each edge's
    /// addends in the order `remainder` sums them (constants fold alike).
    fn propagation_by_sorting(&self, model: CostModel, scratch: &mut Vec<(usize, usize, Label)>) -> usize {
        scratch.clear();
        scratch.extend(
            (0..self.label.len())
                .filter(|&v| self.alive[v] && self.inner(v))
                .map(|v| (self.head[v], self.tail[v], self.label[v])),
        );
        scratch.sort_by_key(|&(head, tail, _)| (head, tail));
        let mut ar = Arith::planning(model);
        let nonunit = scratch
            .chunk_by(|a, b| (a.0, a.1) == (b.0, b.1))
            .map(|parallel| parallel[1..].iter().fold(parallel[0].2, |sum, e| ar.add(sum, e.2, e.0)))
            .filter(|&sum| !sum.is_zero() && !sum.is_unit())
            .count();
        nonunit * model.edge_weight()
    }
}

/// Face elimination, the face that lowers the cost most first, then by the vertex the face
/// passes through (forward), keeping the cheapest prefix after which the line graph is an LCG's again.
pub(super) fn run(lcg: &Lcg, model: CostModel, bound: usize) -> Plan {
    continue_with_faces(lcg, Method::Face, &[], model, bound)
}

/// [`run`] on `graph`, the LCG as [`Graph::new`] builds it for planning, in `line`'s storage.
pub(super) fn run_on(lcg: &Lcg, graph: &Graph, line: &mut LineGraph, model: CostModel, bound: usize) -> Plan {
    faces_after(lcg, Method::Face, &[], graph, line, Arith::planning(model), bound)
}

/// Face elimination after the vertex and edge eliminations `start` (face steps may follow
/// those, not precede them); the plan is `start` itself unless some face prefix after it is
/// cheaper. ([`super::best_of`] does not finish its winner this way: on the corpus that never
/// lowered a cost and took a tenth of the transformation time.)
pub(super) fn continue_with_faces(lcg: &Lcg, method: Method, start: &[Step], model: CostModel, bound: usize) -> Plan {
    let mut ar = Arith::planning(model);
    let mut graph = Graph::new(lcg, &mut ar);
    for &step in start {
        graph.apply(&lcg.kinds, step, &mut ar);
    }
    faces_after(lcg, method, start, &graph, &mut LineGraph::default(), ar, bound)
}

/// The face run of [`continue_with_faces`] on `graph`, what `start` left (`ar` counted its
/// multiplications).
fn faces_after(
    lcg: &Lcg,
    method: Method,
    start: &[Step],
    graph: &Graph,
    line: &mut LineGraph,
    mut ar: Arith<fn(Op, usize) -> Label>,
    bound: usize,
) -> Plan {
    let model = ar.model;
    line.rebuild(graph, &lcg.kinds);
    let mut best = Plan {
        method,
        order: start.to_vec(),
        multiplications: ar.multiplications,
        propagation: graph.propagation(model),
    };
    let mut order = start.to_vec();
    let mut scratch = Vec::new();
    while let Some((i, j)) = line.cheapest_face(model) {
        line.eliminate(i, j, &mut ar);
        order.push(Step::Face(i, j));
        let worth_checking = match model {
            // The remainder costs at least nothing; check the structure only for a possible win.
            CostModel::UnitAware | CostModel::Adjoint => ar.multiplications < best.cost(),
            CostModel::Classic => false,
        };
        // The structure check is the expensive part: only for a prefix that would win.
        if worth_checking {
            let propagation = line.propagation(model, &mut scratch);
            if ar.multiplications + propagation < best.cost() && line.back_transformable() {
                best = Plan {
                    method: Method::Face,
                    order: order.clone(),
                    multiplications: ar.multiplications,
                    propagation,
                };
            }
        }
        if model.unit_aware() && ar.multiplications >= best.cost().min(bound) {
            break;
        }
    }
    if model == CostModel::Classic {
        best = Plan { method, order, multiplications: ar.multiplications, propagation: 0 };
    }
    best
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    /// [`LineGraph::back_transformable`] as its definition reads: for every live vertex, the
    /// set of live vertices whose edge ends where its edge begins, gathered in maps of sets.
    fn back_transformable_by_definition(line: &LineGraph) -> bool {
        let mut by_head: BTreeMap<usize, VertexSet> = BTreeMap::new();
        let mut by_tail: BTreeMap<usize, VertexSet> = BTreeMap::new();
        let live: Vec<usize> = (0..line.label.len()).filter(|&v| line.alive[v]).collect();
        for &v in &live {
            if line.head[v] != NONE {
                by_head.entry(line.head[v]).or_default().insert(v);
            }
            if line.tail[v] != NONE {
                by_tail.entry(line.tail[v]).or_default().insert(v);
            }
        }
        let empty = VertexSet::default();
        live.iter().all(|&v| {
            let preds_ok = line.tail[v] == NONE || line.preds[v] == *by_head.get(&line.tail[v]).unwrap_or(&empty);
            let succs_ok = line.head[v] == NONE || line.succs[v] == *by_tail.get(&line.head[v]).unwrap_or(&empty);
            preds_ok && succs_ok
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// After every face elimination of a run, the propagation cost the kept counts give
        /// is the one summing the remainder's parallel edges gives, under both unit-aware
        /// models.
        #[test]
        fn kept_counts_give_the_propagation_cost((lcg, _values) in super::super::tests::random_graph_of(10)) {
            for model in [CostModel::UnitAware, CostModel::Adjoint] {
                let mut ar = Arith::planning(model);
                let graph = Graph::new(&lcg, &mut ar);
                let mut line = LineGraph::new(&graph, &lcg.kinds);
                let mut scratch = Vec::new();
                let mut steps = 0;
                loop {
                    prop_assert_eq!(
                        line.propagation(model, &mut scratch),
                        line.propagation_by_sorting(model, &mut scratch),
                        "after {} faces", steps
                    );
                    let Some((i, j)) = line.cheapest_face(model) else { break };
                    line.eliminate(i, j, &mut ar);
                    steps += 1;
                }
            }
        }

        /// After every face elimination of a run (where the line graph stops and starts
        /// again being an LCG's), the check agrees with its definition.
        #[test]
        fn the_back_transformation_check_agrees_with_its_definition(
            (lcg, _values) in super::super::tests::random_graph_of(10)
        ) {
            let mut ar = Arith::planning(CostModel::Adjoint);
            let graph = Graph::new(&lcg, &mut ar);
            let mut line = LineGraph::new(&graph, &lcg.kinds);
            let mut steps = 0;
            loop {
                prop_assert_eq!(line.back_transformable(), back_transformable_by_definition(&line), "after {} faces", steps);
                let Some((i, j)) = line.cheapest_face(CostModel::Adjoint) else { break };
                line.eliminate(i, j, &mut ar);
                steps += 1;
            }
        }
    }
}
