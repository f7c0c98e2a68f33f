//! Composes passes into the engine's modes.

use crate::ir::CallGraph;
use crate::passes::tangent::{TangentConfig, TangentError, TangentStats, tangent as tangent_pass};
use crate::xaif::intrinsics::Catalogue;

/// What the `identity` mode does to a call graph: nothing (the reference engine's driver also
/// applies forced passivation here, which `-p` will add).
pub fn identity(_call_graph: &mut CallGraph) {}

/// Tangent-linear mode: linearization, flattening, preaccumulation, propagation.
pub fn tangent(
    call_graph: &mut CallGraph,
    catalogue: &Catalogue,
    config: &TangentConfig,
) -> Result<TangentStats, TangentError> {
    tangent_pass(call_graph, catalogue, config)
}
