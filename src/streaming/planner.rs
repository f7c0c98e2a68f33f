//! Elimination plans made on a thread of their own.
//!
//! Planning a sequence's elimination is pure work on a small graph (its vertex kinds and
//! labelled edges), and a fifth of the tangent's work on large inputs (the heuristics tried on
//! every graph the plan cache has not seen). The tangent pass asks for every sequence's plan
//! of a routine before it takes the first ([`Planner::defers`]), and the streaming driver
//! takes a routine's plans only once it has linearized the routines after it that ask for a
//! few dozen plans more: this thread plans a routine's sequences (handed over together,
//! [`Planner::asked_all`]) while the driver linearizes the next ones, and the driver takes the
//! plans back in the order it asked for them.
//! The plan cache lives on this thread and sees the graphs in the same order as the driver's
//! own would, so the plans, and the output, are the same.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::{Scope, ScopedJoinHandle};

use crate::passes::elimination::{CostModel, Lcg, Method, Plan, PlanCache, Planner, Workspace};

/// One graph to plan, and how.
type Ask = (Lcg, Method, CostModel);

/// Asks gathered before they go to the thread: a routine's, or this many of a long one.
///
/// Handing each ask over on its own woke the thread for nearly every one (it plans faster
/// than the driver linearizes, so it waits between them): on a 16 MiB tangent the planning
/// thread was woken about 3,000 times, running 29 µs each time on average. The driver takes
/// a routine's plans only after it has linearized the routines after it, so a routine's asks
/// handed over together are planned long before they are taken.
const ASKS_PER_BATCH: usize = 64;

/// The driver's end: asks go one way in batches, plans come back the other, a batch's at once.
pub struct Away {
    asks: Sender<Vec<Ask>>,
    plans: Receiver<Vec<(Lcg, Plan)>>,
    /// Asks not handed over yet.
    gathered: Vec<Ask>,
    /// Plans handed back and not taken yet, oldest first.
    ready: VecDeque<(Lcg, Plan)>,
    /// Where the driver replays the plans it takes.
    workspace: Workspace,
}

/// Starts the planning thread in `scope`; it ends when the returned end is dropped. `None`
/// where no thread can be started (the driver then plans itself).
pub fn spawn<'scope>(scope: &'scope Scope<'scope, '_>) -> Option<(Away, ScopedJoinHandle<'scope, ()>)> {
    let (asks, asked) = channel::<Vec<Ask>>();
    let (made, plans) = channel();
    let thread = std::thread::Builder::new()
        .name("planner".into())
        .spawn_scoped(scope, move || {
            let mut cache = PlanCache::default();
            for batch in asked {
                let planned: Vec<(Lcg, Plan)> = batch
                    .into_iter()
                    .map(|(lcg, method, model)| {
                        let plan = cache.plan(&lcg, method, model);
                        (lcg, plan)
                    })
                    .collect();
                if made.send(planned).is_err() {
                    return;
                }
            }
        })
        .ok()?;
    let away = Away { asks, plans, gathered: Vec::new(), ready: VecDeque::new(), workspace: Workspace::default() };
    Some((away, thread))
}

impl Away {
    /// Hands the gathered asks over. A send fails only once the thread is gone, which only a
    /// panic there does: `take` then reports it.
    fn hand_over(&mut self) {
        if !self.gathered.is_empty() {
            let batch = std::mem::replace(&mut self.gathered, Vec::with_capacity(ASKS_PER_BATCH));
            let _ = self.asks.send(batch);
        }
    }
}

impl Planner for Away {
    fn ask(&mut self, lcg: Lcg, method: Method, model: CostModel) {
        self.gathered.push((lcg, method, model));
        if self.gathered.len() >= ASKS_PER_BATCH {
            self.hand_over();
        }
    }

    fn asked_all(&mut self) {
        self.hand_over();
    }

    fn take(&mut self) -> (Lcg, Plan) {
        if let Some(made) = self.ready.pop_front() {
            return made;
        }
        // Nothing handed back: what is asked for and not handed over goes now, or the wait
        // below would never end.
        self.hand_over();
        let batch = self.plans.recv().expect("the planning thread stopped (its panic follows when it is joined)");
        self.ready.extend(batch);
        self.ready.pop_front().expect("a plan is taken only after it was asked for")
    }

    fn defers(&self) -> bool {
        true
    }

    fn lend_workspace(&mut self) -> Workspace {
        std::mem::take(&mut self.workspace)
    }

    fn return_workspace(&mut self, workspace: Workspace) {
        self.workspace = workspace;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::elimination::{Label, VertexKind};

    /// Graphs of 2 to 17 vertices, independents first and dependents last, every other pair
    /// joined by an edge whose label is a unit, a constant or a run-time value; shapes repeat,
    /// so the cache serves some of them.
    fn graphs() -> Vec<Lcg> {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |below: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % below
        };
        (0..200)
            .map(|_| {
                let n = 2 + next(16) as usize;
                let independents = 1 + next(n as u64 / 2) as usize;
                let dependents = 1 + next((n - independents) as u64) as usize;
                let kinds = (0..n)
                    .map(|v| match v {
                        v if v < independents => VertexKind::Independent,
                        v if v >= n - dependents => VertexKind::Dependent,
                        _ => VertexKind::Intermediate,
                    })
                    .collect();
                let mut edges = Vec::new();
                for t in independents..n {
                    for s in 0..t.min(n - dependents) {
                        if next(2) == 0 || s + 1 == t {
                            let label = match next(4) {
                                0 => Label::One,
                                1 => Label::MinusOne,
                                2 => Label::Constant(0.5 + next(3) as f64),
                                _ => Label::Variable(edges.len() as u32),
                            };
                            edges.push((s, t, label));
                        }
                    }
                }
                Lcg { kinds, edges }
            })
            .collect()
    }

    /// The planning thread gives every graph the plan the driver's own cache gives it, in the
    /// order they were asked for, however many wait to be taken.
    #[test]
    fn plans_made_away_are_the_plans_made_here() {
        let graphs = graphs();
        let mut here = PlanCache::default();
        std::thread::scope(|scope| {
            let (mut away, _) = spawn(scope).expect("a thread");
            assert!(away.defers() && !here.defers());
            for (k, graph) in graphs.iter().enumerate() {
                let method = if k % 3 == 0 { Method::Greedy } else { Method::Best };
                away.ask(graph.clone(), method, CostModel::UnitAware);
                here.ask(graph.clone(), method, CostModel::UnitAware);
                // Taken now and then, leaving up to a few dozen waiting.
                if k % 37 == 36 {
                    for _ in 0..30 {
                        let (graph_away, plan_away) = away.take();
                        let (graph_here, plan_here) = here.take();
                        assert_eq!((graph_away.edges, plan_away), (graph_here.edges, plan_here));
                    }
                }
            }
            for _ in 0..graphs.len() - graphs.len() / 37 * 30 {
                let (graph_away, plan_away) = away.take();
                let (graph_here, plan_here) = here.take();
                assert_eq!((graph_away.edges, plan_away), (graph_here.edges, plan_here));
            }
        });
    }

    /// Asks gathered past a batch's size, and handed over by `asked_all`, come back whole and
    /// in order, whether the thread has planned them all before the first is taken or not.
    #[test]
    fn batches_come_back_in_the_order_asked() {
        let graphs = graphs();
        assert!(graphs.len() > 3 * ASKS_PER_BATCH, "several full batches and a part of one");
        let mut here = PlanCache::default();
        std::thread::scope(|scope| {
            let (mut away, thread) = spawn(scope).expect("a thread");
            for round in 0..2 {
                for graph in &graphs {
                    away.ask(graph.clone(), Method::Best, CostModel::UnitAware);
                    here.ask(graph.clone(), Method::Best, CostModel::UnitAware);
                }
                away.asked_all();
                if round == 0 {
                    // The thread has everything: let it plan all before anything is taken.
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                for _ in &graphs {
                    let (graph_away, plan_away) = away.take();
                    let (graph_here, plan_here) = here.take();
                    assert_eq!((graph_away.edges, plan_away), (graph_here.edges, plan_here));
                }
                assert!(away.ready.is_empty() && away.gathered.is_empty(), "nothing left over");
            }
            drop(away);
            thread.join().expect("the planning thread ends once its end is dropped");
        });
    }
}
