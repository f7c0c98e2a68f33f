//! xaifbooster: a transformation engine for XAIF, the XML interchange format of the OpenAD
//! automatic differentiation toolchain. See `ARCHITECTURE.md` for the map.
//!
//! The library is what the binary runs: read a document into a [`ir::CallGraph`], run a mode
//! of [`pipeline`] on it, write it back. For example, the tangent-linear model of the README's
//! example, checked as the command line checks every output:
//!
//! ```
//! use xaifbooster::pipeline::{self, Config};
//! use xaifbooster::xaif::intrinsics::Catalogue;
//! use xaifbooster::xaif::validate::{ValidateOptions, validate};
//! use xaifbooster::xaif::{self, ReadOptions, Severity, WriteOptions};
//!
//! let input = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/examples/head.xaif"));
//! let catalogue = Catalogue::builtin();
//!
//! // Read: every finding is located (file:line:column: element: message).
//! let options = ReadOptions { strict: false, catalogue };
//! let mut call_graph = xaif::read(input, "head.xaif", &options)?.call_graph;
//!
//! // Transform: passivation, TypeChange, linearization, preaccumulation, propagation.
//! let report = pipeline::tangent(&mut call_graph, catalogue, &Config::default())?;
//! assert_eq!(report.tangent.sequences.len(), 1);
//!
//! // Write, in the original engine's conventions; the output passes every check.
//! let output = xaif::write(&call_graph, &WriteOptions { schema_location: "xaif_output.xsd".into(), align_head: false });
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
pub mod xaif;

/// The cores this process may run on, asked once (each asking reads several cgroup and proc
/// files).
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}
