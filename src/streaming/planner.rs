//! Elimination plans made on a thread of their own.
//!
//! Planning a sequence's elimination is pure work on a small graph (its vertex kinds and
//! labelled edges), and a fifth of the tangent's work on large inputs (the heuristics tried on
//! every graph the plan cache has not seen). The tangent pass asks for every sequence's plan
//! of a routine before it takes the first ([`Planner::defers`]): this thread plans while the
//! driver linearizes the routine's later sequences, and the driver takes the plans back in
//! the order it asked for them. The plan cache lives on this thread and sees the graphs in the
//! same order as the driver's own would, so the plans, and the output, are the same.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::{Scope, ScopedJoinHandle};

use crate::passes::elimination::{CostModel, Lcg, Method, Plan, PlanCache, Planner, Workspace};

/// The driver's end: asks go one way, plans come back the other.
pub struct Away {
    asks: Sender<(Lcg, Method, CostModel)>,
    plans: Receiver<(Lcg, Plan)>,
    /// Where the driver replays the plans it takes.
    workspace: Workspace,
}

/// Starts the planning thread in `scope`; it ends when the returned end is dropped. `None`
/// where no thread can be started (the driver then plans itself).
pub fn spawn<'scope>(scope: &'scope Scope<'scope, '_>) -> Option<(Away, ScopedJoinHandle<'scope, ()>)> {
    let (asks, asked) = channel::<(Lcg, Method, CostModel)>();
    let (made, plans) = channel();
    let thread = std::thread::Builder::new()
        .name("planner".into())
        .spawn_scoped(scope, move || {
            let mut cache = PlanCache::default();
            for (lcg, method, model) in asked {
                let plan = cache.plan(&lcg, method, model);
                if made.send((lcg, plan)).is_err() {
                    return;
                }
            }
        })
        .ok()?;
    Some((Away { asks, plans, workspace: Workspace::default() }, thread))
}

impl Planner for Away {
    fn ask(&mut self, lcg: Lcg, method: Method, model: CostModel) {
        // A send fails only once the thread is gone, which only a panic there does: `take`
        // then reports it.
        let _ = self.asks.send((lcg, method, model));
    }

    fn take(&mut self) -> (Lcg, Plan) {
        self.plans.recv().expect("the planning thread stopped (its panic follows when it is joined)")
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
