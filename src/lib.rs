//! xaifbooster: a transformation engine for XAIF, the XML interchange format of the OpenAD
//! automatic differentiation toolchain. See `ARCHITECTURE.md` for the map.
//!
//! The library is what the binary runs: [`driver::run`] reads a document, runs a mode's passes
//! and writes the result, routine by routine. For example, the tangent-linear model of the
//! README's example, checked as the command line checks every output:
//!
//! ```
//! use xaifbooster::driver::{self, Mode, Options};
//! use xaifbooster::pipeline::Config;
//! use xaifbooster::xaif::intrinsics::Catalogue;
//! use xaifbooster::xaif::validate::{ValidateOptions, validate};
//! use xaifbooster::xaif::Severity;
//!
//! let input = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/examples/head.xaif"));
//! let options = Options {
//!     catalogue: Catalogue::builtin(),
//!     strict: false,
//!     config: Config::default(),
//!     schema_location: Mode::Tangent.schema().into(),
//!     threads: false,
//! };
//!
//! // Checks, reads, transforms (passivation, TypeChange, linearization, preaccumulation,
//! // propagation) and writes; a failure is located (file:line:column: element: message).
//! let mut output = Vec::new();
//! let run = driver::run(Mode::Tangent, input, "head.xaif", &mut output, &options)?;
//! assert_eq!(run.report.tangent.sequences.len(), 1);
//!
//! // The output is in the original engine's conventions and passes every check.
//! let text = String::from_utf8(output.clone())?;
//! assert!(text.contains("xaif:DerivativePropagator"));
//! let findings = validate(&output, "head.tlm.xaif", &ValidateOptions::default());
//! assert!(findings.iter().all(|f| f.severity != Severity::Error));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod analysis;
mod bytes;
pub mod cli;
pub mod driver;
pub mod fuzz;
pub mod interp;
pub mod ir;
pub mod output;
pub mod passes;
pub mod pipeline;
pub mod trace;
pub mod xaif;

/// The cores this process may run on, asked once (each asking reads several cgroup and proc
/// files).
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}
