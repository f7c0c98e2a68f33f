//! The XAIF executor and the derivative verifier.
//!
//! [`lower::lower`] turns a read [`crate::ir::CallGraph`] into a program whose symbols are
//! resolved to slots; [`exec::Machine`] runs it: original code, tangent-linear code with
//! derivative propagators, and adjoint replacement lists under the joint or split reversal
//! template with the tape and checkpoint runtime. [`verify`] drives a top routine to compute
//! Jacobians and compares them with finite differences of the original.
//!
//! Anything the executor cannot run is an [`ExecError::Unsupported`] naming the construct,
//! never a silent zero.

pub mod eval;
pub mod exec;
pub mod intrinsics;
pub mod lower;
pub mod memory;
pub mod runtime;
pub mod testgen;
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
}
