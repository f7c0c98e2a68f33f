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
//!
//! The driver plans some batches too, with a cache of its own: those it would otherwise wait
//! for the reader beside ([`Planner::help`], in `streaming::read_pipelined`), and one it needs
//! that the thread has not begun. A plan depends only on what the cache's key holds (vertex
//! kinds, edges, constant labels; not which run-time value a label names), so the plans, and
//! the output, are the same whichever side makes them and in whatever order each cache sees
//! the graphs.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
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

/// Asks waiting before a sleeping planning thread is woken for them.
///
/// Woken for every routine's batch, the thread was woken 277 times on a 16 MiB tangent (360
/// routines), and each wake-up of a sleeping thread cost the driver, the run's critical path,
/// about 8 µs in the kernel (`perf`: 23 samples of 0.1 ms under `futex_wake`). The driver
/// takes a batch's plans only once [`crate::streaming`] has linearized the routines after it
/// that ask for 64 plans more, so a thread woken for 32 still plans them before they are
/// wanted; one the driver wants that the thread has not begun, it plans itself, as before.
const WAKE_AT_ASKS: usize = ASKS_PER_BATCH / 2;

/// What the driver's end and the planning thread share: batches of asks not begun, numbered
/// in the order handed over, and the plans of those the thread has made.
///
/// Either side may plan a batch. The planning thread takes the oldest; the driver takes the
/// newest when it would otherwise wait for its input ([`Planner::help`]), and the one it needs
/// next when the thread has not begun it. On two cores the thread shares its core with the
/// reader, which the driver then waits for; a batch planned by the driver meanwhile leaves
/// that core to the reader. A plan depends only on its graph's shape (the plan cache's key),
/// so which side makes it, with which cache, changes no plan.
#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// The thread waits here for batches.
    asked: Condvar,
    /// The driver waits here for a batch the thread is planning.
    made: Condvar,
}

#[derive(Default)]
struct State {
    /// Batches handed over and not begun, oldest first.
    waiting: VecDeque<(u64, Vec<Ask>)>,
    /// The thread sleeps until it is woken for them.
    thread_sleeps: bool,
    /// Batches the thread has planned, by number, not taken yet.
    planned: BTreeMap<u64, Vec<(Lcg, Plan)>>,
    /// The driver's end is gone: the thread stops.
    closed: bool,
    /// The thread has stopped (a panic there, joined later, says why).
    gone: bool,
}

impl Shared {
    /// The state, whatever a panic on the other side left it as: each side changes it only in
    /// steps that leave it whole.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes the thread if it sleeps and something waits for it.
    fn wake_for_waiting(&self, state: &mut State) {
        if state.thread_sleeps && !state.waiting.is_empty() {
            state.thread_sleeps = false;
            self.asked.notify_one();
        }
    }
}

/// Marks the thread gone however it ends, so that a driver waiting for its plans does not
/// wait for ever.
struct Leaving<'s>(&'s Shared);

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        self.0.lock().gone = true;
        self.0.made.notify_all();
    }
}

/// The driver's end: asks go one way in batches, plans come back the other, a batch's at once.
pub struct Away {
    shared: Arc<Shared>,
    /// Asks not handed over yet.
    gathered: Vec<Ask>,
    /// The number of the next batch handed over, and of the batch whose plans come next.
    next_batch: u64,
    next_taken: u64,
    /// Plans of the batch being taken, oldest first.
    ready: VecDeque<(Lcg, Plan)>,
    /// Batches planned here, by number, not taken yet.
    planned_here: BTreeMap<u64, Vec<(Lcg, Plan)>>,
    /// The cache of the plans made here.
    cache: PlanCache,
    /// Where the driver replays the plans it takes.
    workspace: Workspace,
}

/// Plans a batch with `cache`.
fn plan_batch(cache: &mut PlanCache, asks: Vec<Ask>) -> Vec<(Lcg, Plan)> {
    asks.into_iter()
        .map(|(lcg, method, model)| {
            let plan = cache.plan(&lcg, method, model);
            (lcg, plan)
        })
        .collect()
}

/// Starts the planning thread in `scope`; it ends when the returned end is dropped. `None`
/// where no thread can be started (the driver then plans itself).
pub fn spawn<'scope>(scope: &'scope Scope<'scope, '_>) -> Option<(Away, ScopedJoinHandle<'scope, ()>)> {
    let shared = Arc::<Shared>::default();
    let theirs = Arc::clone(&shared);
    let thread = std::thread::Builder::new()
        .name("planner".into())
        .spawn_scoped(scope, move || {
            let shared = &*theirs;
            let _leaving = Leaving(shared);
            let mut cache = PlanCache::default();
            loop {
                let (number, asks) = {
                    let mut state = shared.lock();
                    loop {
                        // Once the driver's end is gone, nothing waiting will be taken.
                        if state.closed {
                            return;
                        }
                        if let Some(batch) = state.waiting.pop_front() {
                            break batch;
                        }
                        state.thread_sleeps = true;
                        state = shared.asked.wait(state).unwrap_or_else(PoisonError::into_inner);
                        state.thread_sleeps = false;
                    }
                };
                let plans = plan_batch(&mut cache, asks);
                shared.lock().planned.insert(number, plans);
                shared.made.notify_one();
            }
        })
        .ok()?;
    Some((Away::new(shared), thread))
}

impl Away {
    /// The driver's end of `shared`, before anything is asked.
    fn new(shared: Arc<Shared>) -> Away {
        Away {
            shared,
            gathered: Vec::new(),
            next_batch: 0,
            next_taken: 0,
            ready: VecDeque::new(),
            planned_here: BTreeMap::new(),
            cache: PlanCache::default(),
            workspace: Workspace::default(),
        }
    }

    /// Hands the gathered asks over as the next batch.
    fn hand_over(&mut self) {
        if !self.gathered.is_empty() {
            let batch = std::mem::replace(&mut self.gathered, Vec::with_capacity(ASKS_PER_BATCH));
            let mut state = self.shared.lock();
            state.waiting.push_back((self.next_batch, batch));
            self.next_batch += 1;
            // A few batches wait at most: counted when asked.
            let waiting_asks: usize = state.waiting.iter().map(|(_, asks)| asks.len()).sum();
            if waiting_asks >= WAKE_AT_ASKS {
                self.shared.wake_for_waiting(&mut state);
            }
        }
    }

    /// The plans of batch `number`: made here before, made by the thread (waited for while it
    /// plans them), or made here now where the thread has not begun them.
    fn batch(&mut self, number: u64) -> Vec<(Lcg, Plan)> {
        if let Some(plans) = self.planned_here.remove(&number) {
            return plans;
        }
        let shared = Arc::clone(&self.shared);
        let mut state = shared.lock();
        loop {
            if let Some(plans) = state.planned.remove(&number) {
                return plans;
            }
            if let Some(at) = state.waiting.iter().position(|(n, _)| *n == number) {
                let (_, asks) = state.waiting.remove(at).expect("a batch just found");
                // The thread takes what else waits meanwhile.
                shared.wake_for_waiting(&mut state);
                drop(state);
                return plan_batch(&mut self.cache, asks);
            }
            assert!(!state.gone, "the planning thread stopped (its panic follows when it is joined)");
            state = shared.made.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for Away {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.asked.notify_all();
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
        // What is asked for and not handed over goes now: the batch wanted may be among it.
        self.hand_over();
        let number = self.next_taken;
        self.next_taken += 1;
        let plans = self.batch(number);
        self.ready.extend(plans);
        self.ready.pop_front().expect("a plan is taken only after it was asked for")
    }

    fn defers(&self) -> bool {
        true
    }

    /// Plans the newest batch the thread has not begun, if any.
    fn help(&mut self) -> bool {
        let newest = self.shared.lock().waiting.pop_back();
        match newest {
            Some((number, asks)) => {
                let plans = plan_batch(&mut self.cache, asks);
                self.planned_here.insert(number, plans);
                true
            }
            None => false,
        }
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

    /// Takes the next plan from both planners: the same graph with the same plan.
    fn take_the_same_plan(away: &mut Away, here: &mut PlanCache) {
        let (graph_away, plan_away) = away.take();
        let (graph_here, plan_here) = here.take();
        assert_eq!((graph_away.edges, plan_away), (graph_here.edges, plan_here));
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
                        take_the_same_plan(&mut away, &mut here);
                    }
                }
            }
            for _ in 0..graphs.len() - graphs.len() / 37 * 30 {
                take_the_same_plan(&mut away, &mut here);
            }
        });
    }

    /// Batches planned by the driver while it would wait (`help`, the newest first), by the
    /// thread, or by the driver because the thread had not begun them, come back in the order
    /// asked, each with the plan the driver's own cache gives it.
    #[test]
    fn plans_made_on_either_side_come_back_in_the_order_asked() {
        let graphs = graphs();
        let mut here = PlanCache::default();
        std::thread::scope(|scope| {
            let (mut away, thread) = spawn(scope).expect("a thread");
            let mut taken = 0;
            for (k, graph) in graphs.iter().enumerate() {
                away.ask(graph.clone(), Method::Best, CostModel::UnitAware);
                here.ask(graph.clone(), Method::Best, CostModel::UnitAware);
                // Small batches, so that there are many to share.
                if k % 5 == 4 {
                    away.asked_all();
                }
                // How many batches the driver plans depends on how fast the thread is.
                if k % 7 == 0 {
                    away.help();
                }
                if k % 40 == 39 {
                    for _ in 0..25 {
                        take_the_same_plan(&mut away, &mut here);
                        taken += 1;
                    }
                }
            }
            away.asked_all();
            while away.help() {}
            for _ in taken..graphs.len() {
                take_the_same_plan(&mut away, &mut here);
            }
            assert!(away.ready.is_empty() && away.planned_here.is_empty(), "nothing left over");
            drop(away);
            thread.join().expect("the planning thread ends once its end is dropped");
        });
    }

    /// With no thread to take them (an end no thread serves), batches are planned where the
    /// driver helps (the newest first) and where it takes them, and come back in the order
    /// asked all the same.
    #[test]
    fn batches_planned_by_the_driver_come_back_in_order() {
        let graphs = graphs();
        let shared = Arc::<Shared>::default();
        let mut away = Away::new(Arc::clone(&shared));
        let mut here = PlanCache::default();
        let mut helped = 0;
        for (k, graph) in graphs.iter().enumerate() {
            away.ask(graph.clone(), Method::Greedy, CostModel::UnitAware);
            here.ask(graph.clone(), Method::Greedy, CostModel::UnitAware);
            if k % 10 == 9 {
                away.asked_all();
            }
            // Every other batch helped with, newest first.
            if k % 20 == 19 {
                assert!(away.help(), "a batch waits");
                helped += 1;
            }
        }
        assert_eq!(helped, graphs.len() / 20);
        assert_eq!(away.planned_here.len(), helped);
        for _ in &graphs {
            take_the_same_plan(&mut away, &mut here);
        }
        assert!(!away.help(), "nothing waits");
        assert!(away.planned_here.is_empty() && shared.lock().waiting.is_empty(), "nothing left over");
    }

    /// An end whose thread has stopped (as a panic there leaves it) plans what the thread had
    /// not begun itself, and stops, rather than waiting for ever, for what it had.
    #[test]
    fn a_stopped_thread_is_not_waited_for() {
        let graph = graphs().swap_remove(0);
        let shared = Arc::<Shared>::default();
        drop(Leaving(&shared));
        let mut away = Away::new(Arc::clone(&shared));
        away.ask(graph.clone(), Method::Best, CostModel::UnitAware);
        let (_, plan) = away.take();
        assert_eq!(plan, PlanCache::default().plan(&graph, Method::Best, CostModel::UnitAware));
        // Batch 1 was handed over and begun by the thread, which stopped before planning it.
        away.next_taken = 1;
        away.next_batch = 2;
        let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| away.take()));
        assert!(waited.is_err(), "a plan the stopped thread never made was waited for");
    }

    /// Once the driver's end is dropped (a failed run), the thread stops without planning
    /// what still waits.
    #[test]
    fn a_dropped_end_leaves_what_waits() {
        let graph = graphs().swap_remove(0);
        std::thread::scope(|scope| {
            let (away, thread) = spawn(scope).expect("a thread");
            let shared = Arc::clone(&away.shared);
            {
                let mut state = shared.lock();
                state.waiting.push_back((0, vec![(graph, Method::Best, CostModel::UnitAware)]));
                state.closed = true;
            }
            shared.asked.notify_all();
            drop(away);
            thread.join().expect("the planning thread ends");
            let state = shared.lock();
            assert_eq!((state.waiting.len(), state.planned.len()), (1, 0), "a batch planned after the end");
            assert!(state.gone);
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
                    take_the_same_plan(&mut away, &mut here);
                }
                assert!(away.ready.is_empty() && away.gathered.is_empty(), "nothing left over");
            }
            drop(away);
            thread.join().expect("the planning thread ends once its end is dropped");
        });
    }
}
