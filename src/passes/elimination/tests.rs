use super::*;
use proptest::prelude::*;

/// The example of openad-overview §2.1: v1 = v-1 + v0, v2 = sin(v0), v3 = v1 + v2,
/// v4 = v1·v3, v5 = sqrt(v3), v6 = cos(v4), v7 = -v5; vertices renumbered from 0
/// (v-1 → 0, …, v7 → 8), run-time partials numbered by their edge.
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
        (1, 3, Variable(0)),
        (2, 4, One),
        (3, 4, One),
        (2, 5, Variable(1)),
        (4, 5, Variable(2)),
        (4, 6, Variable(3)),
        (5, 7, Variable(4)),
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
    // The replay emits what the plan counted.
    let (_, multiplications) = replay(&lcg, &forward.order, CostModel::Classic, |_, _| Label::Variable(99));
    assert_eq!(multiplications, 13);
    let exact = plan(&lcg, Method::Exact, CostModel::Classic);
    for method in ALL {
        let other = plan(&lcg, method, CostModel::Classic);
        let unit = plan(&lcg, method, CostModel::UnitAware);
        eprintln!(
            "paper example, {}: classic {} multiplications, unit-aware {} + {} = {} ({} steps)",
            method.name(),
            other.multiplications,
            unit.multiplications,
            unit.propagation,
            unit.cost(),
            unit.order.len()
        );
        if VERTEX_HEURISTICS.contains(&method) {
            assert!(exact.cost() <= other.cost(), "{method:?}");
        }
    }
    // Reverse vertex elimination (5, 4, 3, 2, 1) on this graph: 1 + 2 + 2·2 + 2 + 2·2 = 13 as
    // well; the optimum of the classic model is lower.
    assert!(exact.cost() < 13, "{exact:?}");
}

#[test]
fn unit_aware_costs_fold_units_and_stop_early() {
    let lcg = paper_graph();
    // Propagating through the whole graph costs its 5 non-unit edges; a unit-aware plan folds
    // the ±1 edges away for free.
    let best = best_of(&lcg, CostModel::UnitAware);
    assert!(best.cost() <= 5, "{best:?}");
    let exact = plan(&lcg, Method::Exact, CostModel::UnitAware);
    assert!(exact.cost() <= 5, "{exact:?}");
}

/// A random DAG: `n` vertices in topological order, the first `inputs` independent, the last
/// `outputs` dependent; labels drawn from ±1, constants and run-time values (numbered, with
/// their values in the second component).
fn random_graph() -> impl Strategy<Value = (Lcg, Vec<f64>)> {
    random_graph_of(8)
}

/// [`random_graph`] with up to `max_middle - 1` intermediates.
pub(super) fn random_graph_of(max_middle: usize) -> impl Strategy<Value = (Lcg, Vec<f64>)> {
    (1usize..4, 0usize..max_middle, 1usize..4).prop_flat_map(|(inputs, middle, outputs)| {
        let n = inputs + middle + outputs;
        let pairs: Vec<(usize, usize)> =
            (0..inputs + middle).flat_map(|s| ((s + 1).max(inputs)..n).map(move |t| (s, t))).collect();
        let count = pairs.len();
        (Just((inputs, middle, outputs, pairs)), prop::collection::vec((0u8..3, 0u8..5, -2i8..3), count)).prop_map(
            |((inputs, middle, outputs, pairs), choices)| {
                let mut kinds = vec![VertexKind::Independent; inputs];
                kinds.extend(vec![VertexKind::Intermediate; middle]);
                kinds.extend(vec![VertexKind::Dependent; outputs]);
                let mut edges = Vec::new();
                let mut values = Vec::new();
                for ((s, t), (keep, kind, value)) in pairs.into_iter().zip(choices) {
                    // Sparse graphs: about one pair in three is an edge.
                    if keep != 0 {
                        continue;
                    }
                    let label = match kind {
                        0 => Label::One,
                        1 => Label::MinusOne,
                        // Small integers, so that constants also cancel and make units.
                        2 if value != 0 => Label::Constant(f64::from(value)),
                        _ => {
                            values.push(f64::from(value) * 0.37 + 0.11);
                            Label::Variable(values.len() as u32 - 1)
                        }
                    };
                    edges.push((s, t, label));
                }
                (Lcg { kinds, edges }, values)
            },
        )
    })
}

fn value(label: Label, values: &[f64]) -> f64 {
    match label {
        Label::Variable(id) => values[id as usize],
        known => known.known().expect("known label"),
    }
}

/// The Jacobian by path sums (forward propagation of unit seeds), row-major by independent.
fn path_sums(kinds: &[VertexKind], edges: &[(usize, usize, Label)], values: &[f64]) -> Vec<f64> {
    let n = kinds.len();
    let inputs: Vec<usize> = (0..n).filter(|&v| kinds[v] == VertexKind::Independent).collect();
    let outputs: Vec<usize> = (0..n).filter(|&v| kinds[v] == VertexKind::Dependent).collect();
    let mut incoming: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    for &(s, t, l) in edges {
        assert!(s < t, "edges go forward: {s} -> {t}");
        incoming[t].push((s, value(l, values)));
    }
    let mut result = Vec::new();
    for &x in &inputs {
        let mut d = vec![0.0; n];
        d[x] = 1.0;
        for t in 0..n {
            for &(s, c) in &incoming[t] {
                d[t] += c * d[s];
            }
        }
        result.extend(outputs.iter().map(|&y| d[y]));
    }
    result
}

/// Replays `order` numerically: every materialized operation gets its value appended.
fn replay_numeric(lcg: &Lcg, order: &[Step], model: CostModel, values: &[f64]) -> (Vec<f64>, usize, usize) {
    let mut values = values.to_vec();
    let mut emitted_muls = 0;
    let (edges, multiplications) = replay(lcg, order, model, |op, _| {
        let result = match op {
            Op::Mul(a, b) => {
                emitted_muls += 1;
                assert!(!a.is_unit() && !b.is_unit(), "unit factors are folded: {op:?}");
                assert!(a.known().is_none() || b.known().is_none(), "constants are folded: {op:?}");
                value(a, &values) * value(b, &values)
            }
            Op::Add(a, b) => {
                assert!(a.known().is_none() || b.known().is_none(), "constants are folded: {op:?}");
                value(a, &values) + value(b, &values)
            }
            Op::Neg(a) => -value(a, &values),
        };
        values.push(result);
        Label::Variable(values.len() as u32 - 1)
    });
    let nonunit = edges.iter().filter(|(_, _, l)| !l.is_unit()).count();
    let jacobian = path_sums(&lcg.kinds, &edges, &values);
    if model == CostModel::UnitAware {
        assert_eq!(emitted_muls, multiplications, "every counted product is emitted");
    }
    (jacobian, multiplications, nonunit)
}

/// Markowitz elimination as defined, every degree looked at in every step: the reference the
/// incremental bookkeeping of [`run_stepwise`] is held to.
fn markowitz_by_definition(lcg: &Lcg, model: CostModel, forward_ties: bool) -> Vec<Step> {
    let kinds = &lcg.kinds;
    let mut ar = Arith::planning(model);
    let mut graph = Graph::new(lcg, &mut ar);
    let (mut order, mut best_cost, mut best_len) = (Vec::new(), graph.propagation(model), 0);
    loop {
        let candidates = (0..kinds.len()).filter(|&v| graph.eliminable(kinds, v));
        let choice = if forward_ties {
            candidates.min_by_key(|&v| (graph.markowitz(v), v))
        } else {
            candidates.min_by_key(|&v| (graph.markowitz(v), std::cmp::Reverse(v)))
        };
        let Some(v) = choice else { break };
        graph.apply(kinds, Step::Vertex(v), &mut ar);
        order.push(Step::Vertex(v));
        let cost = ar.multiplications + graph.propagation(model);
        if model == CostModel::UnitAware && cost < best_cost {
            (best_cost, best_len) = (cost, order.len());
        }
        if model == CostModel::UnitAware && ar.multiplications >= best_cost {
            break;
        }
    }
    if model == CostModel::UnitAware {
        order.truncate(best_len);
    }
    order
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    /// Greedy and Markowitz keep per-vertex costs and look again only where a step touched
    /// edges; on larger graphs they choose exactly what looking at everything chooses.
    #[test]
    fn incremental_heuristics_choose_as_by_definition((lcg, _values) in random_graph_of(40)) {
        for model in [CostModel::Classic, CostModel::UnitAware] {
            prop_assert_eq!(greedy_with(&lcg, model, false), greedy_with(&lcg, model, true));
            prop_assert_eq!(plan(&lcg, Method::Markowitz, model).order, markowitz_by_definition(&lcg, model, false));
            prop_assert_eq!(
                plan(&lcg, Method::MarkowitzForward, model).order,
                markowitz_by_definition(&lcg, model, true)
            );
        }
    }

    /// The edge heuristic keeps its candidates' costs per vertex and computes them again only
    /// around the edges a step touched; it chooses what computing every cost at every step
    /// chooses, under each cost model, with and without a bound.
    #[test]
    fn incremental_edge_costs_choose_as_recomputing_all((lcg, _values) in random_graph_of(40), bound in 0usize..60) {
        for model in [CostModel::Classic, CostModel::UnitAware, CostModel::Adjoint] {
            for bound in [usize::MAX, bound] {
                let run = |exhaustive| {
                    let mut graph = Graph::new(&lcg, &mut Arith::planning(model));
                    run_stepwise_with(&lcg, &mut graph, Method::Edge, model, bound, exhaustive)
                };
                prop_assert_eq!(run(false), run(true));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn every_method_preserves_the_jacobian((lcg, values) in random_graph()) {
        let reference = path_sums(&lcg.kinds, &lcg.edges, &values);
        for model in [CostModel::Classic, CostModel::UnitAware, CostModel::Adjoint] {
            for method in ALL {
                let plan = plan(&lcg, method, model);
                let (got, multiplications, nonunit) = replay_numeric(&lcg, &plan.order, model, &values);
                for (a, b) in got.iter().zip(&reference) {
                    prop_assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{:?} {:?} {:?}: {} vs {}", model, method, plan.order, a, b);
                }
                // The plan's cost is what the replay emits and leaves.
                prop_assert_eq!(multiplications, plan.multiplications, "{:?} {:?}", model, method);
                // Every method weighs the remainder's non-unit edges alike (face elimination
                // once counted them once under the adjoint model, which weighs them three times).
                if model != CostModel::Classic {
                    prop_assert_eq!(nonunit * model.edge_weight(), plan.propagation, "{:?} {:?} {:?}", model, method, plan.order);
                }
            }
        }
    }

    #[test]
    fn exact_is_never_worse_than_a_vertex_heuristic((lcg, _values) in random_graph()) {
        for model in [CostModel::Classic, CostModel::UnitAware] {
            let exact = plan(&lcg, Method::Exact, model);
            for method in VERTEX_HEURISTICS {
                prop_assert!(exact.cost() <= plan(&lcg, method, model).cost(), "{:?} {:?}", model, method);
            }
            let best = best_of(&lcg, model);
            for &method in heuristics(model) {
                prop_assert!(best.cost() <= plan(&lcg, method, model).cost(), "{:?} {:?}", model, method);
            }
            let every = plan(&lcg, Method::Every, model);
            prop_assert!(every.cost() <= best.cost(), "{:?}", model);
            for method in EVERY_HEURISTIC {
                prop_assert!(every.cost() <= plan(&lcg, method, model).cost(), "{:?} {:?}", model, method);
            }
        }
    }

    #[test]
    fn cached_plans_are_the_plans_of_every_graph_of_the_shape((lcg, _values) in random_graph()) {
        let mut cache = PlanCache::default();
        for method in [Method::Best, Method::Greedy, Method::Face] {
            let direct = plan(&lcg, method, CostModel::UnitAware);
            prop_assert_eq!(&cache.plan(&lcg, method, CostModel::UnitAware), &direct);
            // The same shape with other run-time labels: served from the cache, and the plan
            // that graph would get anyway.
            let mut relabelled = lcg.clone();
            for (k, edge) in relabelled.edges.iter_mut().enumerate() {
                if let Label::Variable(_) = edge.2 {
                    edge.2 = Label::Variable(1000 + k as u32);
                }
            }
            prop_assert_eq!(&cache.plan(&relabelled, method, CostModel::UnitAware), &direct);
            prop_assert_eq!(&plan(&relabelled, method, CostModel::UnitAware), &direct);
        }
    }

    #[test]
    fn plans_are_deterministic((lcg, _values) in random_graph()) {
        for method in ALL {
            prop_assert_eq!(plan(&lcg, method, CostModel::UnitAware), plan(&lcg, method, CostModel::UnitAware));
        }
    }

    /// Storage kept from graph to graph (larger, then smaller, with faces on the way) leaves
    /// nothing behind: every plan and every replay is what fresh storage gives.
    #[test]
    fn a_reused_workspace_plans_and_replays_as_fresh_storage(
        graphs in proptest::collection::vec(random_graph_of(12), 1..6)
    ) {
        let mut workspace = Workspace::default();
        for (lcg, _values) in &graphs {
            for model in [CostModel::UnitAware, CostModel::Adjoint] {
                let kept = plan_in(&mut workspace, lcg, Method::Best, model);
                let fresh = best_of(lcg, model);
                prop_assert_eq!(&kept, &fresh);
                let face = face::run(lcg, model, usize::MAX);
                let mut count = 0;
                let mut symbolic = |_: Op, _: usize| {
                    count += 1;
                    Label::Variable(count)
                };
                for order in [&fresh.order, &face.order] {
                    let kept = replay_in(&mut workspace, lcg, order, model, &mut symbolic);
                    let fresh = replay(lcg, order, model, &mut symbolic);
                    prop_assert_eq!(kept.1, fresh.1);
                    prop_assert_eq!(kept.0.len(), fresh.0.len());
                    for (a, b) in kept.0.iter().zip(&fresh.0) {
                        prop_assert_eq!((a.0, a.1, a.2.is_unit(), a.2.known()), (b.0, b.1, b.2.is_unit(), b.2.known()));
                    }
                }
            }
        }
    }
}
