//! The semantic checks of a document being read: what the schema states but cannot enforce,
//! and what the passes rely on. The reader calls these as each graph closes, while it still
//! knows where every element of the graph began; every mode reads through it, and `validate`
//! reports its findings too, so a document `validate` accepts reads in every mode.
//!
//! After a read without errors:
//! - every expression graph is acyclic with exactly one root (its value); the operand
//!   positions of each vertex are `1..=k` without gaps or repeats, and `k` is what the vertex
//!   takes (no operands for references, constants and function calls, one or two for boolean
//!   operations, and for an intrinsic of the catalogue its arity, trailing arguments whose
//!   partial is passive being optional);
//! - no expression is evaluated more than [`MAX_EXPRESSION_DEPTH`] operations deep, counting
//!   the subscripts of its references, and no element is nested more than [`MAX_NESTING`]
//!   deep, so recursive walks of the IR stay far from the end of the stack;
//! - scope edges form a forest (each scope has at most one parent, no cycles).
//!
//! Control flow vertices no path from Entry reaches, or from which no path leads to Exit, are
//! reported as warnings: such code is legal, if suspicious.

use super::diagnostic::Severity;
use super::intrinsics::Catalogue;
use crate::ir::*;

/// The deepest element nesting a document may have. Real XAIF nests a few dozen levels (each
/// array subscript adds four: reference, element reference, triplet, index); the reader, the
/// validator and every recursive pass take a stack frame or a few per level.
pub const MAX_NESTING: usize = 512;

/// The most operations an expression may nest, along its longest path from a leaf to its
/// value; a reference counts one more than its deepest subscript. The executor evaluates
/// expressions recursively.
pub const MAX_EXPRESSION_DEPTH: u32 = 10_000;

/// The most vertices an expression may have unfolded into a tree (an operand shared by two
/// operations counted twice, a reference with its subscripts). The executor and the
/// linearization's copies unfold expressions; a few shared operands, each the operand of the
/// next, would otherwise unfold into billions.
pub const MAX_EXPRESSION_SIZE: u64 = 1_000_000;

/// How far an expression (or one vertex with its subscripts) reaches: its evaluation depth
/// and its size unfolded.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Extent {
    pub depth: u32,
    pub size: u64,
}

impl Extent {
    /// One vertex holding what `nested` measures (its subscripts, a call's arguments).
    pub fn vertex(nested: Extent) -> Extent {
        Extent { depth: nested.depth.saturating_add(1), size: nested.size.saturating_add(1) }
    }

    /// Several parts side by side: the deepest, and the sizes added.
    pub fn beside(self, other: Extent) -> Extent {
        Extent { depth: self.depth.max(other.depth), size: self.size.saturating_add(other.size) }
    }
}

/// One finding, located by byte offset.
#[derive(Debug)]
pub(super) struct Problem {
    pub offset: usize,
    pub element: String,
    pub severity: Severity,
    pub message: String,
}

impl Problem {
    pub fn error(offset: usize, element: &str, message: String) -> Problem {
        Problem { offset, element: element.to_owned(), severity: Severity::Error, message }
    }

    fn warning(offset: usize, element: &str, message: String) -> Problem {
        Problem { offset, element: element.to_owned(), severity: Severity::Warning, message }
    }
}

/// Where the parts of one expression graph stood in the input.
pub(super) struct ExpressionSite<'s> {
    /// The element holding the graph (`AssignmentRHS`, `Index`, …) and its offset.
    pub container: &'s str,
    pub offset: usize,
    /// Offset and element name of each vertex, in arena order.
    pub vertices: &'s [(usize, &'s str)],
    /// Offset of each edge, in the order of [`Expression::edges`].
    pub edges: &'s [usize],
    /// Each vertex by itself: 1 deep and big, a reference with its subscripts more.
    pub weights: &'s [Extent],
}

/// Scratch space for [`Scratch::expression`], kept between expressions: most are tiny and
/// the reader checks every one.
#[derive(Default)]
pub(super) struct Scratch {
    /// Operand edges of each vertex (`operands[start[v]..start[v + 1]]`, by position), and the
    /// users of each (`users[user_start[v]..user_start[v + 1]]`).
    start: Vec<usize>,
    operands: Vec<usize>,
    user_start: Vec<usize>,
    users: Vec<usize>,
    pending: Vec<usize>,
    depth: Vec<u32>,
    size: Vec<u64>,
    ready: Vec<usize>,
}

impl Scratch {
    /// Checks one expression graph; returns how far it reaches (its deepest and its largest
    /// vertex's).
    pub fn expression(
        &mut self,
        e: &Expression,
        site: &ExpressionSite,
        names: &Names,
        catalogue: &Catalogue,
        out: &mut Vec<Problem>,
    ) -> Extent {
        let n = e.vertices.len();
        let id = |v: usize| names.get(e.vertices[ExprVertexId::from_raw((v as u32).into())].id());
        if n == 0 {
            out.push(Problem::error(site.offset, site.container, "the expression has no vertices".into()));
            return Extent::default();
        }
        let Scratch { start, operands, user_start, users, pending, depth, size, ready } = self;
        counting_sort(n, e.edges.iter().map(|edge| raw(edge.target)), start, operands);
        counting_sort(n, e.edges.iter().map(|edge| raw(edge.source)), user_start, users);
        for v in 0..n {
            operands[start[v]..start[v + 1]].sort_unstable_by_key(|&k| (e.edges[k].position, k));
        }
        let mut self_loop = false;
        for (k, edge) in e.edges.iter().enumerate() {
            if edge.source == edge.target {
                self_loop = true;
                let message = format!("vertex '{}' is its own operand", id(raw(edge.source)));
                out.push(Problem::error(site.edges[k], "ExpressionEdge", message));
            }
        }
        for (v, (_, vertex)) in e.vertices.iter().enumerate() {
            let ops = &operands[start[v]..start[v + 1]];
            for (j, &k) in ops.iter().enumerate() {
                let position = e.edges[k].position;
                let problem = if position < 1 {
                    format!("position {position} of an operand of vertex '{}' is not positive", id(v))
                } else if j > 0 && position == e.edges[ops[j - 1]].position {
                    format!("position {position} is taken twice among the operands of vertex '{}'", id(v))
                } else if position != j as i64 + 1 {
                    format!("the operands of vertex '{}' skip position {}", id(v), j + 1)
                } else {
                    continue;
                };
                out.push(Problem::error(site.edges[k], "ExpressionEdge", problem));
                break;
            }
            let found = ops.len();
            let (offset, element) = site.vertices[v];
            let expected = match vertex {
                ExprVertex::Variable(_) | ExprVertex::Constant(_) | ExprVertex::FunctionCall(_) => {
                    (found > 0).then(|| "no operands".to_owned())
                }
                ExprVertex::BooleanOperation(b) => {
                    let takes = if b.op == BooleanOp::Not { 1 } else { 2 };
                    (found != takes).then(|| operand_count(takes))
                }
                ExprVertex::Intrinsic(i) => catalogue
                    .get(names.get(i.name))
                    .filter(|definition| !definition.accepts_operands(found))
                    .map(|definition| operand_count(definition.arity)),
            };
            if let Some(expected) = expected {
                let what = match vertex {
                    ExprVertex::Intrinsic(i) => format!("intrinsic '{}'", names.get(i.name)),
                    ExprVertex::BooleanOperation(b) => format!("'{}'", super::write::boolean_op_str(b.op)),
                    _ => format!("a {element}"),
                };
                let message = format!("{what} takes {expected}, vertex '{}' has {found}", id(v));
                out.push(Problem::error(offset, element, message));
            }
        }
        // Depths in topological order (Kahn): operands before the operations that use them.
        pending.clear();
        pending.extend((0..n).map(|v| start[v + 1] - start[v]));
        depth.clear();
        depth.resize(n, 0);
        size.clear();
        size.resize(n, 0);
        ready.clear();
        ready.extend((0..n).filter(|&v| pending[v] == 0));
        let mut done = 0;
        while let Some(v) = ready.pop() {
            done += 1;
            let own = depth[v].saturating_add(site.weights[v].depth);
            depth[v] = own;
            let unfolded = size[v].saturating_add(site.weights[v].size);
            size[v] = unfolded;
            for &k in &users[user_start[v]..user_start[v + 1]] {
                let user = raw(e.edges[k].target);
                depth[user] = depth[user].max(own);
                size[user] = size[user].saturating_add(unfolded);
                pending[user] -= 1;
                if pending[user] == 0 {
                    ready.push(user);
                }
            }
        }
        if done < n && !self_loop {
            // Every vertex left has an operand left: walking back along those comes round.
            let mut v = (0..n).find(|&v| pending[v] > 0).expect("a vertex is left");
            let mut seen = vec![false; n];
            while !seen[v] {
                seen[v] = true;
                let ops = &operands[start[v]..start[v + 1]];
                v = ops.iter().map(|&k| raw(e.edges[k].source)).find(|&s| pending[s] > 0).expect("an operand is left");
            }
            let (offset, element) = site.vertices[v];
            out.push(Problem::error(
                offset,
                element,
                format!("vertex '{}' is its own operand, through a cycle", id(v)),
            ));
        }
        let mut roots = (0..n).filter(|&v| user_start[v + 1] == user_start[v]);
        match (roots.next(), roots.next()) {
            (None, _) if done == n => {
                out.push(Problem::error(site.offset, site.container, "the expression has no root".into()));
            }
            (Some(first), Some(second)) => {
                let (offset, element) = site.vertices[second];
                let message = format!(
                    "vertex '{}' is a second root beside vertex '{}': every vertex but the expression's value \
                     must be an operand",
                    id(second),
                    id(first)
                );
                out.push(Problem::error(offset, element, message));
            }
            _ => {}
        }
        let reach =
            Extent { depth: depth.iter().copied().max().unwrap_or(0), size: size.iter().copied().max().unwrap_or(0) };
        // A too deep or too large expression is reported once, at the innermost one.
        let inner_depth = site.weights.iter().map(|w| w.depth).max().unwrap_or(0).saturating_sub(1);
        let inner_size = site.weights.iter().map(|w| w.size).max().unwrap_or(0).saturating_sub(1);
        if reach.depth > MAX_EXPRESSION_DEPTH && inner_depth <= MAX_EXPRESSION_DEPTH {
            let message =
                format!("the expression nests {} operations deep, more than {MAX_EXPRESSION_DEPTH}", reach.depth);
            out.push(Problem::error(site.offset, site.container, message));
        }
        if reach.size > MAX_EXPRESSION_SIZE && inner_size <= MAX_EXPRESSION_SIZE {
            let message = format!(
                "the expression unfolds to {} vertices (an operand counted once per use), more than {MAX_EXPRESSION_SIZE}",
                reach.size
            );
            out.push(Problem::error(site.offset, site.container, message));
        }
        reach
    }
}

fn operand_count(count: usize) -> String {
    format!("{count} operand{}", if count == 1 { "" } else { "s" })
}

/// Groups the indices `0..keys.len()` by key (`0..n`): afterwards the indices with key `v` are
/// `order[start[v]..start[v + 1]]`, in increasing order.
fn counting_sort(n: usize, keys: impl Iterator<Item = usize> + Clone, start: &mut Vec<usize>, order: &mut Vec<usize>) {
    start.clear();
    start.resize(n + 1, 0);
    for key in keys.clone() {
        start[key + 1] += 1;
    }
    for v in 0..n {
        start[v + 1] += start[v];
    }
    order.clear();
    order.resize(start[n], 0);
    for (k, key) in keys.enumerate() {
        order[start[key]] = k;
        start[key] += 1;
    }
    // Each `start[v]` has moved to where `v`'s indices end: shift them back.
    for v in (1..=n).rev() {
        start[v] = start[v - 1];
    }
    start[0] = 0;
}

/// Where the vertices of one control flow graph began, in arena order.
pub(super) struct FlowSite<'s> {
    pub vertices: &'s [usize],
}

/// Warns about vertices no path from Entry reaches and vertices from which no path leads to
/// Exit. Assumes the graph has its one Entry and one Exit.
pub(super) fn flow_graph(graph: &FlowGraph, site: &FlowSite, names: &Names, out: &mut Vec<Problem>) {
    let n = graph.vertices.len();
    let (mut succ, mut pred) = (vec![Vec::new(); n], vec![Vec::new(); n]);
    for edge in &graph.edges {
        succ[raw(edge.source)].push(raw(edge.target));
        pred[raw(edge.target)].push(raw(edge.source));
    }
    let find = |kind: &str| graph.vertices.iter().position(|(_, v)| v.kind.element_name() == kind);
    let (Some(entry), Some(exit)) = (find("Entry"), find("Exit")) else { return };
    let reach = |from: usize, next: &[Vec<usize>]| {
        let mut seen = vec![false; n];
        seen[from] = true;
        let mut stack = vec![from];
        while let Some(v) = stack.pop() {
            for &w in &next[v] {
                if !seen[w] {
                    seen[w] = true;
                    stack.push(w);
                }
            }
        }
        seen
    };
    let from_entry = reach(entry, &succ);
    let to_exit = reach(exit, &pred);
    for (v, (_, vertex)) in graph.vertices.iter().enumerate() {
        let element = vertex.kind.element_name();
        let shown = names.get(vertex.id);
        if !from_entry[v] {
            let message = format!("no path from Entry reaches vertex '{shown}'");
            out.push(Problem::warning(site.vertices[v], element, message));
        } else if !to_exit[v] {
            let message = format!("no path leads from vertex '{shown}' to Exit");
            out.push(Problem::warning(site.vertices[v], element, message));
        }
    }
}

/// Checks that scope edges (child → parent) form a forest; `edges` are the offsets of the
/// scope edges.
pub(super) fn scope_tree(cg: &CallGraph, edges: &[usize], out: &mut Vec<Problem>) {
    let n = cg.scopes.len();
    let shown = |s: usize| cg.names.get(cg.scopes[ScopeId::from_raw((s as u32).into())].id);
    // The parent of each scope and the edge that says so.
    let mut parent: Vec<Option<(usize, usize)>> = vec![None; n];
    for (k, edge) in cg.scope_edges.iter().enumerate() {
        let (child, up) = (raw(edge.source), raw(edge.target));
        if child == up {
            out.push(Problem::error(
                edges[k],
                "ScopeEdge",
                format!("scope '{}' cannot be its own parent", shown(child)),
            ));
            continue;
        }
        match parent[child] {
            Some((first, _)) => {
                let message = format!("scope '{}' already has the parent '{}'", shown(child), shown(first));
                out.push(Problem::error(edges[k], "ScopeEdge", message));
            }
            None => parent[child] = Some((up, k)),
        }
    }
    // With at most one parent each, a cycle shows when a climb meets itself.
    let mut state = vec![0u8; n]; // 0 unvisited, 1 on the current climb, 2 done
    for s in 0..n {
        let mut path = Vec::new();
        let mut at = Some(s);
        while let Some(v) = at {
            match state[v] {
                0 => {
                    state[v] = 1;
                    path.push(v);
                    at = parent[v].map(|(up, _)| up);
                }
                1 => {
                    let (_, k) = parent[v].expect("a climb follows an edge");
                    let message = format!("scope edges form a cycle through scope '{}'", shown(v));
                    out.push(Problem::error(edges[k], "ScopeEdge", message));
                    break;
                }
                _ => break,
            }
        }
        for v in path {
            state[v] = 2;
        }
    }
}

fn raw<T>(id: la_arena::Idx<T>) -> usize {
    id.into_raw().into_u32() as usize
}
