//! A small data-flow framework: lattices joined at control-flow merges and solved by a
//! worklist in reverse post-order, and the call graph's bottom-up / top-down orders for
//! summaries. The analyses (`effects`, `tbr`, `linearity`, `activity`) state their transfer
//! functions; none of them stores anything on the IR, each returns side tables keyed by ids.

use la_arena::ArenaMap;
use rustc_hash::FxHashSet;

use crate::ir::*;

/// A join semilattice: `join` merges `other` in and says whether `self` grew.
pub trait Lattice: Clone {
    fn join(&mut self, other: &Self) -> bool;
}

/// A set of symbols, with a top element for "every symbol that outlives the routine" (what an
/// unknown routine may write).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SymbolSet {
    pub symbols: FxHashSet<SymbolId>,
    /// Every symbol but the routine's own locals.
    pub all_persistent: bool,
}

impl SymbolSet {
    pub fn insert(&mut self, symbol: SymbolId) -> bool {
        self.symbols.insert(symbol)
    }

    /// Whether the set holds `symbol`, given whether `symbol` outlives the routine.
    pub fn contains(&self, symbol: SymbolId, persistent: bool) -> bool {
        (persistent && self.all_persistent) || self.symbols.contains(&symbol)
    }
}

impl Lattice for SymbolSet {
    fn join(&mut self, other: &Self) -> bool {
        let mut grew = false;
        if other.all_persistent && !self.all_persistent {
            self.all_persistent = true;
            grew = true;
        }
        for &s in &other.symbols {
            grew |= self.symbols.insert(s);
        }
        grew
    }
}

/// Which way facts flow along the edges of a control flow graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Backward,
}

/// The fixed point of a data-flow problem over one control flow graph: per vertex, the fact
/// where it starts (`before`, in the direction of flow) and where it ends (`after`).
pub struct Solution<L> {
    pub before: ArenaMap<CfgVertexId, L>,
    pub after: ArenaMap<CfgVertexId, L>,
}

/// Solves `after(v) = transfer(v, before(v))`, `before(v) = ⋁ after(p)` over the
/// predecessors `p` of `v` in the direction of flow (successors for a backward problem),
/// starting from `bottom` everywhere and `boundary` at Entry (forward) or Exit (backward).
/// Vertices are visited in reverse post-order of the direction, so acyclic graphs settle in
/// one sweep and each loop needs one more per nesting level.
pub fn solve<L: Lattice>(
    graph: &FlowGraph,
    direction: Direction,
    bottom: &L,
    boundary: &L,
    mut transfer: impl FnMut(CfgVertexId, &L) -> L,
) -> Solution<L> {
    let n = graph.vertices.len();
    let index = |v: CfgVertexId| v.into_raw().into_u32() as usize;
    let ids: Vec<CfgVertexId> = graph.vertices.iter().map(|(id, _)| id).collect();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for edge in &graph.edges {
        let (s, t) = (index(edge.source), index(edge.target));
        let (from, to) = if direction == Direction::Forward { (s, t) } else { (t, s) };
        succs[from].push(to);
        preds[to].push(from);
    }
    let start = graph
        .vertices
        .iter()
        .find(|(_, v)| match direction {
            Direction::Forward => matches!(v.kind, CfgVertexKind::Entry),
            Direction::Backward => matches!(v.kind, CfgVertexKind::Exit),
        })
        .map(|(id, _)| index(id));
    let order = reverse_post_order(n, &succs, start);
    let mut rank = vec![usize::MAX; n];
    for (k, &v) in order.iter().enumerate() {
        rank[v] = k;
    }
    let mut before: Vec<L> = vec![bottom.clone(); n];
    let mut after: Vec<L> = vec![bottom.clone(); n];
    if let Some(s) = start {
        before[s] = boundary.clone();
    }
    // A worklist ordered by rank: the lowest-ranked pending vertex goes first.
    let mut pending = std::collections::BTreeSet::new();
    for &v in &order {
        pending.insert((rank[v], v));
    }
    while let Some((_, v)) = pending.pop_first() {
        let mut fact = if Some(v) == start { boundary.clone() } else { bottom.clone() };
        for &p in &preds[v] {
            fact.join(&after[p]);
        }
        before[v] = fact;
        let out = transfer(ids[v], &before[v]);
        let mut grown = after[v].clone();
        if grown.join(&out) {
            after[v] = grown;
            for &s in &succs[v] {
                pending.insert((rank[s], s));
            }
        }
    }
    let mut solution = Solution { before: ArenaMap::default(), after: ArenaMap::default() };
    for (k, (b, a)) in before.into_iter().zip(after).enumerate() {
        solution.before.insert(ids[k], b);
        solution.after.insert(ids[k], a);
    }
    solution
}

/// Reverse post-order of a depth-first search from `start`, then of every vertex it missed
/// (unreachable code still gets facts).
fn reverse_post_order(n: usize, succs: &[Vec<usize>], start: Option<usize>) -> Vec<usize> {
    let mut seen = vec![false; n];
    let mut post = Vec::with_capacity(n);
    let roots = start.into_iter().chain(0..n);
    for root in roots {
        if seen[root] {
            continue;
        }
        seen[root] = true;
        // An explicit stack of (vertex, next successor): graphs may be deep.
        let mut stack = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if let Some(&s) = succs[v].get(*next) {
                *next += 1;
                if !seen[s] {
                    seen[s] = true;
                    stack.push((s, 0));
                }
            } else {
                post.push(v);
                stack.pop();
            }
        }
    }
    post.reverse();
    post
}

/// The routines with a control flow graph, callees before callers where the call graph
/// allows (members of a recursive cycle in some order): the order of bottom-up summaries;
/// reversed, of top-down contexts. Repeating a pass in this order until nothing changes
/// reaches the fixed point of recursive programs.
pub fn bottom_up_order(cg: &CallGraph) -> Vec<RoutineId> {
    let routines: Vec<RoutineId> = cg.cfgs().map(|(id, _)| id).collect();
    let by_symbol: rustc_hash::FxHashMap<SymbolId, RoutineId> =
        routines.iter().map(|&r| (cg.routines[r].symbol(), r)).collect();
    let position: rustc_hash::FxHashMap<RoutineId, usize> = routines.iter().enumerate().map(|(k, &r)| (r, k)).collect();
    let mut callees: Vec<Vec<usize>> = vec![Vec::new(); routines.len()];
    for (k, &r) in routines.iter().enumerate() {
        let Routine::ControlFlowGraph(cfg) = &cg.routines[r] else { continue };
        for call in calls(&cfg.graph) {
            if let Some(callee) = call.symbol.and_then(|s| by_symbol.get(&s)) {
                callees[k].push(position[callee]);
            }
        }
    }
    // Post-order of a depth-first search along calls: callees first.
    let succs = callees;
    let mut order = reverse_post_order(routines.len(), &succs, None);
    order.reverse();
    order.into_iter().map(|k| routines[k]).collect()
}

/// Every subroutine call of a graph, in vertex order.
pub fn calls(graph: &FlowGraph) -> impl Iterator<Item = &SubroutineCall> {
    graph
        .vertices
        .iter()
        .flat_map(|(_, v)| match &v.kind {
            CfgVertexKind::BasicBlock(block) => block.statements.as_slice(),
            _ => &[],
        })
        .filter_map(|s| match s {
            Statement::SubroutineCall(call) => Some(call),
            _ => None,
        })
}
