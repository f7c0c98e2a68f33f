//! Control-flow traces in the format of OpenAD's runtime module `OAD_trace`, and their
//! comparison.
//!
//! A traced program (the output of `trace`, whose routines hold `oad_trace_*` calls) writes a
//! trace as it runs; the executor writes the same events for a program that is not traced
//! (see [`crate::interp::tracing`] for where), so that an original, its tangent or adjoint,
//! and its traced version can be compared run against run with `trace-diff`.
//!
//! The format, one element per line as the runtime writes it:
//!
//! ```text
//! <Trace number="1">
//! <Call name="foo" line="12">
//! <Arg name="x">
//! <Index val="3"/>
//! </Arg>
//! <Loop line="14">
//! <Branch line="15">
//! <Condition>
//! …
//! </Condition>
//! <Cfval val="1"/>
//! </Branch>
//! <Cfval val="10"/>
//! </Loop>
//! </Call>
//! </Trace>
//! ```
//!
//! `Call`, `Arg`, `Loop`, `Branch`, `Initialization`, `Condition` and `Update` nest; `Index`,
//! `Cfval` (a control-flow value: the branch taken, a loop's trip count) and `Tan` (the branch
//! of `tan` that `oad_tan` evaluated) are leaves. Every value is an integer; real values are
//! never traced. [`format`](mod@format) reads and writes it, streaming; [`diff`] compares two traces in
//! one pass with memory bounded by their nesting depth.

pub mod diff;
pub mod format;

pub use format::{Reader, TraceError, Writer};

/// An element that holds others.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Call,
    Arg,
    Loop,
    Branch,
    Initialization,
    Condition,
    Update,
}

impl Kind {
    /// The element's name in the trace.
    pub fn element(self) -> &'static str {
        match self {
            Kind::Call => "Call",
            Kind::Arg => "Arg",
            Kind::Loop => "Loop",
            Kind::Branch => "Branch",
            Kind::Initialization => "Initialization",
            Kind::Condition => "Condition",
            Kind::Update => "Update",
        }
    }

    /// The kind an element name stands for.
    pub fn from_element(name: &str) -> Option<Kind> {
        Some(match name {
            "Call" => Kind::Call,
            "Arg" => Kind::Arg,
            "Loop" => Kind::Loop,
            "Branch" => Kind::Branch,
            "Initialization" => Kind::Initialization,
            "Condition" => Kind::Condition,
            "Update" => Kind::Update,
            _ => return None,
        })
    }
}

/// The start of a nesting element with its attributes: `name` for `Call` and `Arg`, `line`
/// for `Call`, `Loop` and `Branch`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Open {
    pub kind: Kind,
    pub name: Option<String>,
    pub line: Option<i64>,
}

impl Open {
    pub fn call(name: &str, line: i64) -> Open {
        Open { kind: Kind::Call, name: Some(name.to_owned()), line: Some(line) }
    }

    pub fn arg(name: &str) -> Open {
        Open { kind: Kind::Arg, name: Some(name.to_owned()), line: None }
    }

    pub fn with_line(kind: Kind, line: i64) -> Open {
        Open { kind, name: None, line: Some(line) }
    }

    pub fn bare(kind: Kind) -> Open {
        Open { kind, name: None, line: None }
    }
}

/// One event of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Open(Open),
    Close(Kind),
    /// `<Index val="I"/>`: an index of an array reference.
    Index(i64),
    /// `<Cfval val="V"/>`: the branch taken, or a loop's trip count.
    Cfval(i64),
    /// `<Tan sd="K"/>`: which branch of `tan` an argument fell on.
    Tan(i64),
}

impl std::fmt::Display for Event {
    /// The event as the trace spells it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::Open(open) => {
                write!(f, "<{}", open.kind.element())?;
                if let Some(name) = &open.name {
                    write!(f, " name=\"{}\"", format::Escaped(name))?;
                }
                if let Some(line) = open.line {
                    write!(f, " line=\"{line}\"")?;
                }
                write!(f, ">")
            }
            Event::Close(kind) => write!(f, "</{}>", kind.element()),
            Event::Index(i) => write!(f, "<Index val=\"{i}\"/>"),
            Event::Cfval(v) => write!(f, "<Cfval val=\"{v}\"/>"),
            Event::Tan(k) => write!(f, "<Tan sd=\"{k}\"/>"),
        }
    }
}
