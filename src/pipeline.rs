//! Composes passes into the engine's modes.
//!
//! Every mode starts like the original drivers: forced passivation (`-p`), then — for the
//! transforming modes — derivative initialization (`-D`) and TypeChange, which leaves every
//! call with actuals of its formals' activity; the tangent passes build on that.

use crate::ir::CallGraph;
use crate::ir::build::Temporaries;
use crate::passes::init_derivatives::initialize_derivatives;
use crate::passes::passivate::{Decorations, Passivation, force_passive};
use crate::passes::tangent::{TangentConfig, TangentError, TangentStats, tangent as tangent_pass};
use crate::passes::type_change::{TypeChangeConfig, TypeChangeError, TypeChangeReport, type_change};
use crate::xaif::intrinsics::Catalogue;

/// The switches every mode shares.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Variables forced passive (`-p`).
    pub passive: Vec<String>,
    /// How `passive` names match XAIF symbol names (`-F`).
    pub decorations: Decorations,
    /// Zero the derivatives of active locals at routine entry (`-D`).
    pub initialize_derivatives: bool,
    pub type_change: TypeChangeConfig,
    pub tangent: TangentConfig,
}

impl Config {
    /// The default configuration with these tangent settings.
    pub fn with_tangent(tangent: TangentConfig) -> Config {
        Config { tangent, ..Config::default() }
    }
}

/// What a transforming mode did, pass by pass.
#[derive(Debug, Default)]
pub struct Report {
    pub passivation: Passivation,
    /// Derivatives zeroed at routine entries (`-D`).
    pub initialized_derivatives: usize,
    pub type_change: TypeChangeReport,
    pub tangent: TangentStats,
}

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    TypeChange(#[from] TypeChangeError),
    #[error(transparent)]
    Tangent(#[from] TangentError),
}

impl PipelineError {
    /// The routine (its symbol's name) and the `statement_id` of the statement the error is
    /// about, by which a caller holding the input locates it.
    pub fn statement(&self) -> (&str, &str) {
        match self {
            PipelineError::TypeChange(
                TypeChangeError::NoFormal { routine, statement, .. }
                | TypeChangeError::WrapperActivity { routine, statement, .. },
            ) => (routine, statement),
            PipelineError::Tangent(TangentError::Linearize { routine, source }) => (routine, source.statement()),
        }
    }
}

/// What the `identity` mode does to a call graph: forced passivation only, as the original
/// engine's plain driver.
pub fn identity(call_graph: &mut CallGraph, config: &Config) -> Passivation {
    force_passive(call_graph, &config.passive, config.decorations)
}

/// Tangent-linear mode: passivation, derivative initialization, TypeChange, then
/// linearization, flattening, preaccumulation and propagation.
pub fn tangent(call_graph: &mut CallGraph, catalogue: &Catalogue, config: &Config) -> Result<Report, PipelineError> {
    let mut temporaries = Temporaries::for_call_graph(call_graph);
    let mut report = Report { passivation: identity(call_graph, config), ..Report::default() };
    if config.initialize_derivatives {
        report.initialized_derivatives = initialize_derivatives(call_graph);
    }
    report.type_change = type_change(call_graph, &mut temporaries, &config.type_change)?;
    report.tangent = tangent_pass(call_graph, catalogue, &mut temporaries, &config.tangent)?;
    Ok(report)
}
