//! Composes passes into the engine's modes.
//!
//! `identity` is parse and unparse; the transforming modes arrive with their passes.

use crate::ir::CallGraph;

/// What the `identity` mode does to a call graph: nothing (the reference engine's driver also
/// applies forced passivation here, which `-p` will add).
pub fn identity(_call_graph: &mut CallGraph) {}
