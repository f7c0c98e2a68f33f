//! The XAIF executor and the derivative verifier.
//!
//! [`lower::lower`] turns a read [`crate::ir::CallGraph`] into a program whose symbols are
//! resolved to slots; [`exec::Machine`] runs it: original code, tangent-linear code with
//! derivative propagators, and adjoint replacement lists under the joint or split reversal
//! template with the tape and checkpoint runtime. [`verify`] drives a top routine to compute
//! Jacobians and compares them with finite differences of the original. On a mismatch,
//! [`localize`] names the first wrong derivative: the original run with dual numbers
//! ([`dual`]) beside the tangent program, or a dot-product test per routine call for an
//! adjoint. [`tracing`] writes a run's control-flow trace (`run --trace`, `verify --trace`)
//! in OpenAD's `OAD_trace` format.
//!
//! Anything the executor cannot run is an [`ExecError::Unsupported`] naming the construct,
//! never a silent zero.

pub mod dual;
pub mod eval;
pub mod exec;
pub mod guess;
pub mod intrinsics;
pub mod localize;
pub mod lower;
pub mod memory;
pub mod runtime;
pub mod testgen;
pub mod tracing;
pub mod verify;

pub use exec::{ExecConfig, Machine, RevMode, Template};
pub use lower::{Program, lower};
pub use memory::Value;

/// Why an execution stopped.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ExecError {
    /// A construct the executor does not implement (external routine, opaque type, unknown
    /// intrinsic or runtime call, …).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The program misbehaved (index out of bounds, tape underflow, endless loop, …).
    #[error("{0}")]
    Runtime(String),
    /// One of the others, with where execution stopped (boxed: every evaluation returns this
    /// type, and a small `Err` keeps its `Result`s small).
    #[error("{error} (at {at})")]
    Located { error: Box<ExecError>, at: Box<Location> },
}

impl ExecError {
    /// Whether the executor lacks something (rather than the program misbehaving).
    pub fn is_unsupported(&self) -> bool {
        match self {
            ExecError::Unsupported(_) => true,
            ExecError::Runtime(_) => false,
            ExecError::Located { error, .. } => error.is_unsupported(),
        }
    }

    /// The reason without the `unsupported:` word, with the place if known.
    pub fn reason(&self) -> String {
        match self {
            ExecError::Unsupported(why) | ExecError::Runtime(why) => why.clone(),
            ExecError::Located { error, at } => format!("{} (at {at})", error.reason()),
        }
    }

    /// Where execution stopped, if known.
    pub fn location(&self) -> Option<&Location> {
        match self {
            ExecError::Unsupported(_) | ExecError::Runtime(_) => None,
            ExecError::Located { at, .. } => Some(at),
        }
    }
}

/// A place in a program by its XAIF ids: a routine (its symbol's name), a control flow vertex
/// and the statement of a basic block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub routine: String,
    pub vertex: Option<String>,
    pub statement: Option<String>,
    /// For a failure before any routine runs (allocating a global): the symbol's scope
    /// `vertex_id` and `symbol_id`; `routine` is empty then.
    pub symbol: Option<(String, String)>,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some((scope, symbol)) = &self.symbol
            && self.routine.is_empty()
        {
            return write!(f, "symbol {symbol} of scope {scope}");
        }
        write!(f, "routine {}", self.routine)?;
        if let Some(vertex) = &self.vertex {
            write!(f, ", vertex '{vertex}'")?;
        }
        if let Some(statement) = &self.statement {
            write!(f, ", statement '{statement}'")?;
        }
        Ok(())
    }
}
