//! A small data-flow framework: lattices joined at control-flow merges and solved by a
//! worklist in reverse post-order, and the call graph's bottom-up / top-down orders for
//! summaries. The analyses (`effects`, `tbr`, `linearity`, `activity`) state their transfer
//! functions; none of them stores anything on the IR, each returns side tables keyed by ids.

use crate::ir::*;
use la_arena::ArenaMap;

/// A join semilattice: `join` merges `other` in and says whether `self` grew.
pub trait Lattice: Clone {
    fn join(&mut self, other: &Self) -> bool;

    /// Joins `other` in if that makes `self` grow, and leaves `self` untouched otherwise;
    /// whether it grew. A `join` may rearrange its value without growing it (linearity's adds
    /// empty entries), so by default this joins into a copy; lattices whose `join` changes
    /// nothing unless it grows join in place.
    fn join_if_grows(&mut self, other: &Self) -> bool {
        let mut grown = self.clone();
        let grew = grown.join(other);
        if grew {
            *self = grown;
        }
        grew
    }
}

/// A set of symbols, with a top element for "every symbol that outlives the routine" (what an
/// unknown routine may write).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SymbolSet {
    pub symbols: SymbolBits,
    /// Every symbol but the routine's own locals.
    pub all_persistent: bool,
}

impl SymbolSet {
    pub fn insert(&mut self, symbol: SymbolId) -> bool {
        self.symbols.insert(symbol)
    }

    /// Whether the set holds `symbol`, given whether `symbol` outlives the routine.
    pub fn contains(&self, symbol: SymbolId, persistent: bool) -> bool {
        (persistent && self.all_persistent) || self.symbols.contains(symbol)
    }

    /// Empties the set, keeping its storage.
    pub fn clear(&mut self) {
        self.symbols.clear();
        self.all_persistent = false;
    }
}

impl Lattice for SymbolSet {
    fn join(&mut self, other: &Self) -> bool {
        let mut grew = false;
        if other.all_persistent && !self.all_persistent {
            self.all_persistent = true;
            grew = true;
        }
        grew | self.symbols.union_with(&other.symbols)
    }

    /// `join` adds members and the top flag only when they are new (storage may grow by
    /// words without members, which equality ignores).
    fn join_if_grows(&mut self, other: &Self) -> bool {
        self.join(other)
    }
}

/// A set of symbols as the non-zero 64-bit words of a bitset indexed by arena index, kept in
/// word order. The data-flow solvers join and copy these sets at every vertex visit: a few
/// words each, where a hash set paid a hashed insert per member. Only the words holding members
/// are stored: a routine's symbols are the head's (low ids) and its own temporaries (ids as
/// high as the document is long, where streaming numbers every routine's temporaries in one
/// arena), and a dense bitset reaching them had cost every set a zeroed word per 64 symbols of
/// the whole document (16 MiB adjoint: 0.4 G of 5.4 G instructions, sixteen times that at
/// 64 MiB). Iteration is in ascending id order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SymbolBits {
    /// `(word index, bits)`, indices ascending, bits never zero (so equal sets are equal
    /// vectors).
    words: Vec<(u32, u64)>,
}

impl SymbolBits {
    fn split(symbol: SymbolId) -> (u32, u64) {
        let i = symbol.into_raw().into_u32();
        (i / 64, 1 << (i % 64))
    }

    /// Where word `index` is, or where it would go.
    fn find(&self, index: u32) -> Result<usize, usize> {
        // Most sets have a word or two; members mostly arrive in ascending order.
        match self.words.last() {
            Some(&(last, _)) if last < index => Err(self.words.len()),
            _ => self.words.binary_search_by_key(&index, |&(w, _)| w),
        }
    }

    /// Adds `symbol`; whether it was absent.
    pub fn insert(&mut self, symbol: SymbolId) -> bool {
        let (index, bit) = Self::split(symbol);
        match self.find(index) {
            Ok(at) => {
                let word = &mut self.words[at].1;
                let absent = *word & bit == 0;
                *word |= bit;
                absent
            }
            Err(at) => {
                self.words.insert(at, (index, bit));
                true
            }
        }
    }

    pub fn contains(&self, symbol: SymbolId) -> bool {
        let (index, bit) = Self::split(symbol);
        self.find(index).is_ok_and(|at| self.words[at].1 & bit != 0)
    }

    pub fn clear(&mut self) {
        self.words.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Adds every member of `other`; whether `self` grew.
    pub fn union_with(&mut self, other: &SymbolBits) -> bool {
        // `other`'s words with a place here are OR-ed in place; the others are appended past
        // the words scanned, then put in order.
        let mine = self.words.len();
        let mut grew = false;
        let mut at = 0;
        for &(index, bits) in &other.words {
            while at < mine && self.words[at].0 < index {
                at += 1;
            }
            match self.words[..mine].get_mut(at) {
                Some((here, word)) if *here == index => {
                    grew |= bits & !*word != 0;
                    *word |= bits;
                }
                _ => self.words.push((index, bits)),
            }
        }
        if self.words.len() > mine {
            self.words.sort_unstable_by_key(|&(index, _)| index);
            grew = true;
        }
        grew
    }

    /// The members, ascending.
    pub fn iter(&self) -> impl Iterator<Item = SymbolId> + '_ {
        self.words.iter().flat_map(|&(index, word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros();
                rest &= rest - 1;
                Some(SymbolId::from_raw(la_arena::RawIdx::from_u32(index * 64 + bit)))
            })
        })
    }
}

impl Extend<SymbolId> for SymbolBits {
    fn extend<I: IntoIterator<Item = SymbolId>>(&mut self, symbols: I) {
        for s in symbols {
            self.insert(s);
        }
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
    let index = |v: CfgVertexId| v.into_raw().into_u32() as usize;
    let ids: Vec<CfgVertexId> = graph.vertices.iter().map(|(id, _)| id).collect();
    let edges = graph.edges.iter().map(|edge| (index(edge.source), index(edge.target)));
    let start = graph
        .vertices
        .iter()
        .find(|(_, v)| match direction {
            Direction::Forward => matches!(v.kind, CfgVertexKind::Entry),
            Direction::Backward => matches!(v.kind, CfgVertexKind::Exit),
        })
        .map(|(id, _)| index(id));
    let (before, after) =
        solve_indexed(ids.len(), edges, start, direction, bottom, boundary, |v, fact| transfer(ids[v], fact));
    let mut solution =
        Solution { before: ArenaMap::with_capacity(ids.len()), after: ArenaMap::with_capacity(ids.len()) };
    for (k, (b, a)) in before.into_iter().zip(after).enumerate() {
        solution.before.insert(ids[k], b);
        solution.after.insert(ids[k], a);
    }
    solution
}

/// [`solve`] over a graph given as `n` vertices numbered from 0, its edges (source, target)
/// and the vertex where facts start (Entry forward, Exit backward): for summaries that keep a
/// graph's shape without its code. Returns `(before, after)` per vertex.
pub fn solve_indexed<L: Lattice>(
    n: usize,
    edges: impl Iterator<Item = (usize, usize)>,
    start: Option<usize>,
    direction: Direction,
    bottom: &L,
    boundary: &L,
    mut transfer: impl FnMut(usize, &L) -> L,
) -> (Vec<L>, Vec<L>) {
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (s, t) in edges {
        let (from, to) = if direction == Direction::Forward { (s, t) } else { (t, s) };
        succs[from].push(to);
        preds[to].push(from);
    }
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
        let out = transfer(v, &before[v]);
        if after[v].join_if_grows(&out) {
            for &s in &succs[v] {
                pending.insert((rank[s], s));
            }
        }
    }
    (before, after)
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
    let by_symbol: rustc_hash::FxHashMap<SymbolId, RoutineId> =
        cg.cfgs().map(|(id, _)| (cg.routines[id].symbol(), id)).collect();
    let routines: Vec<(RoutineId, Vec<RoutineId>)> = cg
        .cfgs()
        .map(|(id, cfg)| (id, calls(&cfg.graph).filter_map(|call| by_symbol.get(&call.symbol?).copied()).collect()))
        .collect();
    callees_first(&routines)
}

/// The order of [`bottom_up_order`], given each routine with a graph (in document order) and
/// the routines with a graph its calls run, in the order of its calls.
pub fn callees_first(routines: &[(RoutineId, Vec<RoutineId>)]) -> Vec<RoutineId> {
    let position: rustc_hash::FxHashMap<RoutineId, usize> =
        routines.iter().enumerate().map(|(k, &(r, _))| (r, k)).collect();
    let succs: Vec<Vec<usize>> =
        routines.iter().map(|(_, callees)| callees.iter().filter_map(|c| position.get(c).copied()).collect()).collect();
    // Post-order of a depth-first search along calls: callees first.
    let mut order = reverse_post_order(routines.len(), &succs, None);
    order.reverse();
    order.into_iter().map(|k| routines[k].0).collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn id(k: u32) -> SymbolId {
        SymbolId::from_raw(la_arena::RawIdx::from_u32(k))
    }

    #[test]
    fn symbol_bits_behave_as_a_set() {
        let mut a = SymbolBits::default();
        assert!(a.is_empty());
        assert!(a.insert(id(130)) && a.insert(id(3)) && a.insert(id(64)));
        assert!(!a.insert(id(3)));
        assert!(a.contains(id(64)) && !a.contains(id(63)) && !a.contains(id(1000)));
        assert_eq!(a.iter().collect::<Vec<_>>(), [id(3), id(64), id(130)]);
        let mut b = SymbolBits::default();
        b.extend([id(64), id(3)]);
        let c = b.clone();
        assert!(!b.union_with(&c));
        assert!(b.union_with(&a));
        assert_eq!(a, b);
        a.clear();
        assert!(a.is_empty() && a == SymbolBits::default());
    }

    proptest::proptest! {
        /// Inserts, unions, membership, order and equality agree with a `BTreeSet`'s, over ids
        /// far apart (a streamed document's temporaries) and close together.
        #[test]
        fn symbol_bits_agree_with_a_btree_set(
            first in proptest::collection::vec(prop_id(), 0..40),
            second in proptest::collection::vec(prop_id(), 0..40),
            probes in proptest::collection::vec(prop_id(), 0..20),
        ) {
            use std::collections::BTreeSet;
            let set = |ids: &[u32]| {
                let mut bits = SymbolBits::default();
                let mut reference = BTreeSet::new();
                for &k in ids {
                    proptest::prop_assert_eq!(bits.insert(id(k)), reference.insert(k));
                }
                Ok((bits, reference))
            };
            let (mut a, mut a_reference) = set(&first)?;
            let (b, b_reference) = set(&second)?;
            proptest::prop_assert_eq!(a == b, a_reference == b_reference);
            let grew = a.union_with(&b);
            let before = a_reference.len();
            a_reference.extend(&b_reference);
            proptest::prop_assert_eq!(grew, a_reference.len() > before);
            proptest::prop_assert_eq!(a.iter().map(|s| s.into_raw().into_u32()).collect::<Vec<_>>(),
                a_reference.iter().copied().collect::<Vec<_>>());
            for &k in probes.iter().chain(&first).chain(&second) {
                proptest::prop_assert_eq!(a.contains(id(k)), a_reference.contains(&k));
            }
            proptest::prop_assert_eq!(a.is_empty(), a_reference.is_empty());
            let mut rebuilt = SymbolBits::default();
            rebuilt.extend(a_reference.iter().rev().map(|&k| id(k)));
            proptest::prop_assert_eq!(rebuilt, a);
        }
    }

    fn prop_id() -> impl proptest::strategy::Strategy<Value = u32> {
        use proptest::strategy::Strategy;
        proptest::prop_oneof![0u32..200, 100_000u32..100_300, proptest::num::u32::ANY.prop_map(|k| k / 2)]
    }
}
