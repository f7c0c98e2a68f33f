//! The first divergence of two traces, as a person debugging needs it.
//!
//! Both traces are read in step, one event at a time; what is kept is the path from the root to
//! the current event (one frame per open element), the last few events both share, and the
//! count of events: memory is bounded by the nesting depth and the context asked for, never by
//! the length, and the time is linear. The comparison stops at the first event that differs,
//! so a trace that is malformed only after that point is not reported.
//!
//! A trace does not mark where one iteration of a loop ends and the next begins. The path
//! counts a loop's iterations by its first traced construct: each time the element that
//! opened first inside the `Loop` opens again, an iteration starts. That is the iteration
//! number whenever the loop body traces that construct once per iteration, and the report
//! names the construct it counted.

use std::collections::VecDeque;
use std::io::Read;

use serde::Serialize;

use super::format::{Located, Reader, TraceError};
use super::{Event, Kind, Open};

/// What differs at the first divergence.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum What {
    /// Different routines (or intrinsics) are called, or from different lines, or different
    /// constructs start: the traces come from different programs (or a branch the trace does
    /// not show went another way).
    DifferentPrograms,
    /// A branch took another arm (its `Cfval`).
    Branch,
    /// A loop ran a different number of times (its closing `Cfval`).
    TripCount,
    /// Another control-flow value outside a loop or branch.
    ControlFlowValue,
    /// An array index differs.
    Index,
    /// Another argument is traced.
    Argument,
    /// `oad_tan` fell on another branch of `tan`.
    Tan,
    /// One run went on where the other ended a construct or took another path.
    ControlFlow,
    /// One trace ends before the other.
    Length,
}

/// One element of the path to the divergence, outermost first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    pub element: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<i64>,
    /// For a `Loop`: the iteration under way, counted by `counted_by`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counted_by: Option<String>,
}

/// One side at the divergence: where, and the event (`None` at the end of the trace).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Side {
    pub file: String,
    pub line: u64,
    pub column: u64,
    pub event: Option<String>,
    /// The events that follow, for context.
    pub next: Vec<String>,
}

/// The first divergence of two traces.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Divergence {
    pub what: What,
    pub message: String,
    /// The divergent event's number, from 1, in both traces.
    pub event: u64,
    pub path: Vec<Step>,
    pub a: Side,
    pub b: Side,
    /// The last events both traces share, oldest first.
    pub before: Vec<String>,
}

/// What a comparison found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Equal { events: u64 },
    Differ(Box<Divergence>),
}

/// What a comparison took: the deepest the path (and either reader's stack) has been.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub events: u64,
    pub max_depth: usize,
}

struct Frame {
    open: Open,
    /// The first element that opened inside this one, and how often it has opened.
    first_child: Option<Open>,
    iterations: u64,
}

/// Compares two traces; `context` events are kept before the divergence and read after it.
/// A malformed trace (up to the divergence) is an error located in it.
pub fn diff<A: Read, B: Read>(
    a: &mut Reader<A>,
    b: &mut Reader<B>,
    context: usize,
) -> Result<(Outcome, Stats), TraceError> {
    let mut path: Vec<Frame> = Vec::new();
    // The last events in common with their depth, worded only if a divergence needs them.
    let mut before: VecDeque<(usize, Event)> = VecDeque::with_capacity(context + 1);
    let mut stats = Stats::default();
    loop {
        let ea = a.next_event()?;
        let eb = b.next_event()?;
        stats.max_depth = stats.max_depth.max(path.len()).max(a.depth()).max(b.depth());
        match (&ea, &eb) {
            (None, None) => return Ok((Outcome::Equal { events: stats.events }, stats)),
            (Some(x), Some(y)) if x.event == y.event => {
                stats.events += 1;
                follow(&mut path, &x.event);
                if context > 0 {
                    if before.len() == context {
                        before.pop_front();
                    }
                    before.push_back((path.len(), x.event.clone()));
                }
            }
            _ => {
                let (what, message) = classify(&path, ea.as_ref().map(|l| &l.event), eb.as_ref().map(|l| &l.event));
                let a_side = side_of(a, &ea, context);
                let b_side = side_of(b, &eb, context);
                let divergence = Divergence {
                    what,
                    message,
                    event: stats.events + 1,
                    path: steps(&path),
                    a: a_side,
                    b: b_side,
                    before: before.iter().map(|(depth, event)| indented(*depth, event)).collect(),
                };
                return Ok((Outcome::Differ(Box::new(divergence)), stats));
            }
        }
    }
}

/// One side at the divergence, with up to `context` events after it.
fn side_of<R: Read>(reader: &mut Reader<R>, at: &Option<Located>, context: usize) -> Side {
    let (line, column) = at.as_ref().map_or(reader.position(), |l| (l.line, l.column));
    let mut next = Vec::new();
    while next.len() < context {
        match reader.next_event() {
            Ok(Some(l)) => next.push(l.event.to_string()),
            _ => break,
        }
    }
    Side { file: reader.file().to_owned(), line, column, event: at.as_ref().map(|l| l.event.to_string()), next }
}

/// Moves the path over an event both traces share.
fn follow(path: &mut Vec<Frame>, event: &Event) {
    match event {
        Event::Open(open) => {
            // A loop's header parts are traced once, on entry: they start no iteration.
            let header = matches!(open.kind, Kind::Initialization | Kind::Condition | Kind::Update);
            if let Some(parent) = path.last_mut().filter(|p| !(header && p.open.kind == Kind::Loop)) {
                match &parent.first_child {
                    None => {
                        parent.first_child = Some(open.clone());
                        parent.iterations = 1;
                    }
                    Some(first) if first == open => parent.iterations += 1,
                    Some(_) => {}
                }
            }
            path.push(Frame { open: open.clone(), first_child: None, iterations: 0 });
        }
        Event::Close(_) => {
            path.pop();
        }
        Event::Index(_) | Event::Cfval(_) | Event::Tan(_) => {}
    }
}

fn steps(path: &[Frame]) -> Vec<Step> {
    path.iter()
        .map(|frame| {
            let counted = frame.open.kind == Kind::Loop && frame.first_child.is_some();
            Step {
                element: frame.open.kind.element(),
                name: frame.open.name.clone(),
                line: frame.open.line,
                iteration: counted.then_some(frame.iterations),
                counted_by: if counted {
                    frame.first_child.as_ref().map(|c| Event::Open(c.clone()).to_string())
                } else {
                    None
                },
            }
        })
        .collect()
}

fn indented(depth: usize, event: &Event) -> String {
    let depth = if matches!(event, Event::Open(_)) { depth.saturating_sub(1) } else { depth };
    format!("{}{event}", "  ".repeat(depth.min(20)))
}

fn describe(open: &Open) -> String {
    match (&open.name, open.line) {
        (Some(name), Some(line)) => format!("{} {name} at line {line}", open.kind.element()),
        (Some(name), None) => format!("{} {name}", open.kind.element()),
        (None, Some(line)) => format!("{} at line {line}", open.kind.element()),
        (None, None) => open.kind.element().to_owned(),
    }
}

/// What differs, and a sentence saying so.
fn classify(path: &[Frame], a: Option<&Event>, b: Option<&Event>) -> (What, String) {
    let parent = path.last().map(|f| &f.open);
    let within = parent.map_or_else(|| "at the top level".to_owned(), |p| format!("in the {}", describe(p)));
    let show = |e: Option<&Event>| e.map_or_else(|| "the end of the trace".to_owned(), ToString::to_string);
    match (a, b) {
        (Some(Event::Open(x)), Some(Event::Open(y))) if x.kind == Kind::Call && y.kind == Kind::Call => (
            What::DifferentPrograms,
            format!(
                "different programs: A calls {} where B calls {} ({within})",
                describe(x).trim_start_matches("Call "),
                describe(y).trim_start_matches("Call ")
            ),
        ),
        (Some(Event::Open(x)), Some(Event::Open(y))) if x.kind == Kind::Arg && y.kind == Kind::Arg => (
            What::Argument,
            format!("another argument: A traces {} where B traces {} ({within})", describe(x), describe(y)),
        ),
        // Different constructs start: different programs, or a branch the trace does not
        // show (its condition reads no active variable) went another way.
        (Some(Event::Open(x)), Some(Event::Open(y))) => (
            What::DifferentPrograms,
            format!(
                "different programs (or an untraced branch went another way): A starts a {} where B starts a {} ({within})",
                describe(x),
                describe(y)
            ),
        ),
        (Some(Event::Cfval(x)), Some(Event::Cfval(y))) => match parent.map(|p| p.kind) {
            Some(Kind::Loop) => (
                What::TripCount,
                format!("trip count: the {} runs {x} times in A, {y} in B", describe(parent.expect("a loop"))),
            ),
            Some(Kind::Branch) => (
                What::Branch,
                format!("branch taken: the {} takes {x} in A, {y} in B", describe(parent.expect("a branch"))),
            ),
            _ => (What::ControlFlowValue, format!("control-flow value {x} in A, {y} in B ({within})")),
        },
        (Some(Event::Index(x)), Some(Event::Index(y))) => (What::Index, format!("index {x} in A, {y} in B ({within})")),
        (Some(Event::Tan(x)), Some(Event::Tan(y))) => {
            (What::Tan, format!("tan on branch {x} in A, {y} in B ({within})"))
        }
        (None, Some(_)) | (Some(_), None) => {
            let (ends, goes) = if a.is_none() { ("A", "B") } else { ("B", "A") };
            (What::Length, format!("{ends} ends here; {goes} goes on with {}", show(a.or(b))))
        }
        _ => {
            let mut message = format!("control flow differs {within}: A has {}, B has {}", show(a), show(b));
            if parent.is_some_and(|p| p.kind == Kind::Loop) {
                let ends = |e: Option<&Event>| matches!(e, Some(Event::Cfval(_) | Event::Close(_)));
                if ends(a) != ends(b) {
                    let longer = if ends(a) { "B" } else { "A" };
                    message.push_str(&format!(": the loop goes on longer in {longer}"));
                }
            }
            (What::ControlFlow, message)
        }
    }
}

impl Divergence {
    /// The report for a person: what differs, the path to it, and the events around it.
    pub fn text(&self) -> String {
        let mut out = format!("traces differ at event {}: {}\n", self.event, self.message);
        for (name, side) in [("A", &self.a), ("B", &self.b)] {
            out.push_str(&format!(
                "  {name}: {}:{}:{}: {}\n",
                side.file,
                side.line,
                side.column,
                side.event.as_deref().unwrap_or("(end of trace)")
            ));
        }
        if !self.path.is_empty() {
            out.push_str("path:\n");
            for (depth, step) in self.path.iter().enumerate() {
                out.push_str(&format!("  {}{}", "  ".repeat(depth.min(20)), step.element));
                if let Some(name) = &step.name {
                    out.push_str(&format!(" {name}"));
                }
                if let Some(line) = step.line {
                    out.push_str(&format!(" (line {line})"));
                }
                if let (Some(iteration), Some(by)) = (step.iteration, &step.counted_by) {
                    out.push_str(&format!(", iteration {iteration} (counted by {by})"));
                }
                out.push('\n');
            }
        }
        if !self.before.is_empty() {
            out.push_str("last events in common:\n");
            for event in &self.before {
                out.push_str(&format!("    {event}\n"));
            }
        }
        for (name, side) in [("A", &self.a), ("B", &self.b)] {
            if !side.next.is_empty() {
                out.push_str(&format!("then in {name}:\n"));
                for event in &side.next {
                    out.push_str(&format!("    {event}\n"));
                }
            }
        }
        out
    }
}

/// The JSON report of `trace-diff --json`.
pub fn json(outcome: &Outcome) -> String {
    let value = match outcome {
        Outcome::Equal { events } => serde_json::json!({ "equal": true, "events": events }),
        Outcome::Differ(divergence) => serde_json::json!({ "equal": false, "divergence": divergence }),
    };
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Writer;

    fn trace(events: &[Event]) -> Vec<u8> {
        let mut writer = Writer::new(Vec::new(), 1).unwrap();
        for e in events {
            writer.event(e).unwrap();
        }
        writer.finish().unwrap()
    }

    fn compare(a: &[u8], b: &[u8]) -> Outcome {
        diff(&mut Reader::new(a, "a.xml"), &mut Reader::new(b, "b.xml"), 3).unwrap().0
    }

    fn looped(branches: &[i64]) -> Vec<u8> {
        let mut events = vec![Event::Open(Open::call("head", 1)), Event::Open(Open::with_line(Kind::Loop, 5))];
        for &v in branches {
            events.push(Event::Open(Open::with_line(Kind::Branch, 6)));
            events.push(Event::Cfval(v));
            events.push(Event::Close(Kind::Branch));
        }
        events.push(Event::Cfval(branches.len() as i64));
        events.push(Event::Close(Kind::Loop));
        events.push(Event::Close(Kind::Call));
        trace(&events)
    }

    #[test]
    fn names_the_branch_and_iteration() {
        let Outcome::Differ(d) = compare(&looped(&[1, 1, 0, 1]), &looped(&[1, 1, 1, 1])) else { panic!() };
        assert_eq!(d.what, What::Branch);
        assert_eq!(d.path[1].element, "Loop");
        assert_eq!(d.path[1].iteration, Some(3));
        assert_eq!(d.path[2].line, Some(6));
        assert_eq!(d.a.event.as_deref(), Some("<Cfval val=\"0\"/>"));
        assert_eq!(d.before.len(), 3);
        assert!(d.text().contains("iteration 3"), "{}", d.text());
    }

    #[test]
    fn a_longer_loop_is_control_flow_and_equal_is_equal() {
        let Outcome::Differ(d) = compare(&looped(&[1, 1]), &looped(&[1, 1, 1])) else { panic!() };
        assert_eq!(d.what, What::ControlFlow);
        assert!(d.message.contains("longer in B"), "{}", d.message);
        assert_eq!(compare(&looped(&[1, 0]), &looped(&[1, 0])), Outcome::Equal { events: 11 });
    }
}
