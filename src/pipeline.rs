//! Composes passes into the engine's modes.
//!
//! Every mode starts like the original drivers: forced passivation (`-p`), then — for the
//! transforming modes — derivative initialization (`-D`) and TypeChange, which leaves every
//! call with actuals of its formals' activity; the tangent passes build on that.

use la_arena::ArenaMap;

use crate::ir::build::Temporaries;
use crate::ir::{CallGraph, FlowGraph, RoutineId};
use crate::passes::adjoint::{AdjointConfig, AdjointError, AdjointStats, adjoint as adjoint_pass};
use crate::passes::elimination::CostModel;
use crate::passes::init_derivatives::initialize_derivatives;
use crate::passes::passivate::{Decorations, Passivation, force_passive};
use crate::passes::tangent::{TangentConfig, TangentError, TangentStats, tangent as tangent_pass};
use crate::passes::trace::{TraceReport, trace as trace_pass};
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
    /// Make passive the locals our activity analysis proves passive that the front end
    /// flagged active (`--activity-analysis`).
    pub activity_analysis: bool,
    pub type_change: TypeChangeConfig,
    pub tangent: TangentConfig,
    pub adjoint: AdjointConfig,
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
    pub adjoint: AdjointStats,
    /// What the trace mode traced.
    pub trace: TraceReport,
}

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    TypeChange(#[from] TypeChangeError),
    #[error(transparent)]
    Tangent(#[from] TangentError),
    #[error(transparent)]
    Adjoint(#[from] AdjointError),
}

impl Report {
    /// The adjoint mode's statistics as JSON (`adjoint --stats`): TypeChange's conversions and
    /// the pushes the taping code contains, by kind.
    pub fn adjoint_json(&self) -> String {
        let tc = &self.type_change;
        let value = serde_json::json!({
            "type_change": {
                "conversions": tc.conversions,
                "external_conversions": tc.external_conversions,
                "saved_indices": tc.saved_indices,
                "allocations": tc.allocations,
                "wrapped_calls": tc.wrapped_calls,
                "renamed_routines": tc.renamed_routines,
            },
            "adjoint": self.adjoint,
            "preaccumulation": {
                "sequences": self.tangent.sequences.len(),
                "accumulation_multiplications":
                    self.tangent.sequences.iter().map(|s| s.accumulation_multiplications).sum::<usize>(),
                "propagator_entries": self.tangent.sequences.iter().map(|s| s.propagator_entries).sum::<usize>(),
            },
        });
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }
}

impl PipelineError {
    /// The routine (its symbol's name) and the `statement_id` of the statement the error is
    /// about, by which a caller holding the input locates it.
    /// The routine at fault and, where known, the input statement: every failure of the
    /// passes names at least its routine.
    pub fn location(&self) -> Option<(&str, Option<&str>)> {
        match self {
            PipelineError::Adjoint(e) => e.location(),
            _ => self.statement().map(|(routine, statement)| (routine, Some(statement))),
        }
    }

    pub fn statement(&self) -> Option<(&str, &str)> {
        match self {
            PipelineError::TypeChange(TypeChangeError::NoFormal(e)) => Some((&e.routine, &e.statement)),
            PipelineError::TypeChange(TypeChangeError::WrapperActivity(e)) => Some((&e.routine, &e.statement)),
            PipelineError::Tangent(TangentError::Linearize { routine, source }) => Some((routine, source.statement())),
            PipelineError::Adjoint(_) => None,
        }
    }
}

/// What the `identity` mode does to a call graph: forced passivation only, as the original
/// engine's plain driver.
pub fn identity(call_graph: &mut CallGraph, config: &Config) -> Passivation {
    force_passive(call_graph, &config.passive, config.decorations)
}

/// Forced passivation, then (with `activity_analysis`) what activity analysis proves passive
/// among the locals the front end flagged active. Only locals: a formal or global keeps the
/// front end's flag, so every call stays type-consistent without new conversions.
fn passivate(call_graph: &mut CallGraph, catalogue: &Catalogue, config: &Config) -> Passivation {
    let mut passivation = identity(call_graph, config);
    if config.activity_analysis {
        use crate::analysis::{activity, effects::Frame, linearity::Linearity, tbr::Recording};
        let recording = Recording::of(call_graph);
        let linearity = Linearity::of(call_graph, catalogue, &recording.effects);
        let (independents, dependents) = activity::default_seeds(call_graph, &recording.effects);
        let found = activity::activity(call_graph, &recording.effects, &linearity, independents, dependents);
        let mut passive = Vec::new();
        for (_, cfg) in call_graph.cfgs() {
            let frame = Frame::of(call_graph, cfg);
            for &s in &call_graph.scopes[cfg.body_scope].symbols {
                let symbol = &call_graph.symbols[s];
                if symbol.active
                    && !symbol.temp
                    && frame.is_local(call_graph, s)
                    && activity::differentiable(call_graph, s)
                    && !found.is_active(call_graph, s)
                {
                    passive.push(s);
                }
            }
        }
        passive.sort_unstable();
        passive.dedup();
        passivation.passivated.extend(crate::passes::passivate::passivate_symbols(call_graph, &passive));
    }
    passivation
}

/// Tangent-linear mode: passivation, derivative initialization, TypeChange, then
/// linearization, flattening, preaccumulation and propagation.
pub fn tangent(call_graph: &mut CallGraph, catalogue: &Catalogue, config: &Config) -> Result<Report, PipelineError> {
    let mut temporaries = Temporaries::for_call_graph(call_graph);
    let mut report = Report { passivation: passivate(call_graph, catalogue, config), ..Report::default() };
    if config.initialize_derivatives {
        report.initialized_derivatives = initialize_derivatives(call_graph);
    }
    report.type_change = type_change(call_graph, &mut temporaries, &config.type_change)?;
    report.tangent = tangent_pass(call_graph, catalogue, &mut temporaries, &config.tangent)?;
    Ok(report)
}

/// The tangent passes' settings in adjoint mode: the preaccumulation weighs what the tape
/// holds. `-H` and `-C` shape the tangent's printed propagators only (the original's reverse
/// mode printed its own sweeps): the adjoint reverses `DerivativePropagator`s.
pub fn adjoint_tangent_config(config: &Config) -> TangentConfig {
    TangentConfig {
        cost_model: CostModel::Adjoint,
        inline_propagators: false,
        runtime_counters: false,
        ..config.tangent.clone()
    }
}

/// The adjoint pass's settings: `-D` zeroes adjoints where each reverse sweep begins.
pub fn adjoint_config(config: &Config) -> AdjointConfig {
    AdjointConfig { initialize_derivatives: config.initialize_derivatives, ..config.adjoint.clone() }
}

/// Adjoint mode: as the tangent mode up to preaccumulation, then taping, block adjoints,
/// control-flow reversal and one replacement list per routine. `-D` zeroes the adjoints of
/// active locals where each reverse sweep begins.
pub fn adjoint(call_graph: &mut CallGraph, catalogue: &Catalogue, config: &Config) -> Result<Report, PipelineError> {
    let mut temporaries = Temporaries::default();
    let mut report = Report { passivation: passivate(call_graph, catalogue, config), ..Report::default() };
    report.type_change = type_change(call_graph, &mut temporaries, &config.type_change)?;
    let mut originals: ArenaMap<RoutineId, FlowGraph> = ArenaMap::default();
    for (id, cfg) in call_graph.cfgs() {
        originals.insert(id, cfg.graph.clone());
    }
    report.tangent = tangent_pass(call_graph, catalogue, &mut temporaries, &adjoint_tangent_config(config))?;
    let adjoint_config = adjoint_config(config);
    report.adjoint =
        adjoint_pass(call_graph, &mut temporaries, originals, &report.type_change.formal_uses, &adjoint_config)?;
    Ok(report)
}

/// Trace mode (the original's TraceDiff): passivation, TypeChange, then the tracing calls of
/// [`crate::passes::trace`], each routine becoming a tracing replacement list.
pub fn trace(call_graph: &mut CallGraph, catalogue: &Catalogue, config: &Config) -> Result<Report, PipelineError> {
    let mut temporaries = Temporaries::for_call_graph(call_graph);
    let mut report = Report { passivation: passivate(call_graph, catalogue, config), ..Report::default() };
    report.type_change = type_change(call_graph, &mut temporaries, &config.type_change)?;
    report.trace = trace_pass(call_graph, catalogue, &mut temporaries);
    Ok(report)
}
