//! `xaifbooster analyze`: activity, to-be-recorded and linearity facts per routine, as one
//! serializable report (the JSON the README documents).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ir::*;
use crate::xaif::intrinsics::{Catalogue, PartialKind};

use super::activity::{self, differentiable};
use super::linearity::{self, Dependence, Linearity};
use super::tbr::{BlockWrites, Recording};

#[derive(Debug, Serialize)]
pub struct AnalysisReport {
    /// The independents and dependents the activity analysis started from.
    pub independents: Vec<String>,
    pub dependents: Vec<String>,
    pub routines: Vec<RoutineReport>,
}

#[derive(Debug, Serialize)]
pub struct RoutineReport {
    pub name: String,
    pub activity: ActivityReport,
    pub tbr: TbrReport,
    pub linearity: LinearityReport,
}

#[derive(Debug, Serialize)]
pub struct ActivityReport {
    /// Variables of the routine's scope we find active.
    pub active: Vec<String>,
    /// Those the front end flagged active.
    pub front_end_active: Vec<String>,
    /// Flagged active by the front end, passive by us: where we are more precise.
    pub more_precise: Vec<String>,
    /// Active by us, passive by the front end.
    pub disagreements: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct TbrReport {
    /// Variables some statement's adjoint needs (arguments of nonlinear operations, subscripts).
    pub required: Vec<String>,
    /// Those the forward sweep may overwrite before the adjoint reads them: to be recorded.
    pub recorded: Vec<String>,
    /// Required but never overwritten in between: read where they stand.
    pub not_recorded: Vec<String>,
    pub statements: Vec<StatementTbr>,
}

#[derive(Debug, Serialize)]
pub struct StatementTbr {
    pub statement: String,
    pub line: u64,
    pub required: Vec<String>,
    pub recorded: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct LinearityReport {
    pub statements: usize,
    /// Assignments whose partials are all constants: nothing of theirs goes on a tape.
    pub linear_statements: usize,
    /// At the routine's exit: variable → variable → linear | nonlinear.
    pub dependences: BTreeMap<String, BTreeMap<String, Dependence>>,
    pub loops: Vec<LoopReport>,
}

#[derive(Debug, Serialize)]
pub struct LoopReport {
    pub vertex: String,
    /// No carried variable depends on itself nonlinearly: the adjoint loop could be fused
    /// with the forward computation.
    pub fusable: bool,
    pub nonlinear_carried: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error("--{option}: no variable named '{name}' (the top routines' formals are: {known})")]
    UnknownVariable { option: &'static str, name: String, known: String },
}

/// Runs the three analyses. `independents`/`dependents` name variables (symbol names, or the
/// source name before the front end's `_N` suffix, any case); empty means the top routines'
/// real formals by intent.
pub fn analyze(
    cg: &CallGraph,
    catalogue: &Catalogue,
    independents: &[String],
    dependents: &[String],
) -> Result<AnalysisReport, AnalysisError> {
    let recording = Recording::of(cg);
    let effects = &recording.effects;
    let linearity = Linearity::of(cg, catalogue, effects);
    let (default_in, default_out) = activity::default_seeds(cg, effects);
    let known = || {
        let mut names: Vec<&str> = default_in.iter().chain(&default_out).map(|&s| cg.symbol_name(s)).collect();
        names.sort_unstable();
        names.dedup();
        names.join(", ")
    };
    let seeds = |names: &[String],
                 default: &[SymbolId],
                 option: &'static str|
     -> Result<Vec<SymbolId>, AnalysisError> {
        if names.is_empty() {
            return Ok(default.to_vec());
        }
        names
            .iter()
            .map(|name| {
                let found: Vec<SymbolId> =
                    cg.symbols.iter().filter(|(_, s)| matches_name(cg.name(s.name), name)).map(|(id, _)| id).collect();
                if found.is_empty() {
                    Err(AnalysisError::UnknownVariable { option, name: name.clone(), known: known() })
                } else {
                    Ok(found)
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|v| v.into_iter().flatten().collect())
    };
    let independents = seeds(independents, &default_in, "independents")?;
    let dependents = seeds(dependents, &default_out, "dependents")?;
    let activity = activity::activity(cg, effects, &linearity, independents, dependents);
    let names = |symbols: &mut Vec<SymbolId>| -> Vec<String> {
        symbols.sort_unstable();
        symbols.dedup();
        let mut v: Vec<String> = symbols.iter().map(|&s| cg.symbol_name(s).to_owned()).collect();
        v.sort();
        v
    };
    let mut routines = Vec::new();
    for (id, cfg) in cg.cfgs() {
        let name = cg.symbol_name(cfg.symbol).to_owned();
        // Activity over the routine's own symbols.
        let mut active = Vec::new();
        let mut front_end = Vec::new();
        for &s in &cg.scopes[cfg.body_scope].symbols {
            if !differentiable(cg, s) {
                continue;
            }
            if activity.is_active(cg, s) {
                active.push(s);
            }
            if cg.symbols[s].active {
                front_end.push(s);
            }
        }
        let mut more_precise: Vec<SymbolId> = front_end.iter().copied().filter(|s| !active.contains(s)).collect();
        let mut disagreements: Vec<SymbolId> = active.iter().copied().filter(|s| !front_end.contains(s)).collect();
        // To be recorded, per statement of the original code.
        let mut statements = Vec::new();
        let (mut required_all, mut recorded_all) = (Vec::new(), Vec::new());
        if let Some(facts) = recording.routines.get(id) {
            for (vertex_id, vertex) in cfg.graph.vertices.iter() {
                let CfgVertexKind::BasicBlock(block) = &vertex.kind else { continue };
                let writes = BlockWrites::of(effects, &block.statements);
                for (k, statement) in block.statements.iter().enumerate() {
                    let Statement::Assignment(a) = statement else { continue };
                    if a.lhs.deriv {
                        continue;
                    }
                    let mut required = required_by(cg, catalogue, a, &|s| activity.is_active(cg, s));
                    let mut recorded: Vec<SymbolId> = required
                        .iter()
                        .copied()
                        .filter(|&s| facts.must_record(cg, vertex_id, &writes, k, s, &[]))
                        .collect();
                    required_all.extend(required.iter().copied());
                    recorded_all.extend(recorded.iter().copied());
                    if !required.is_empty() {
                        statements.push(StatementTbr {
                            statement: cg.name(a.id).to_owned(),
                            line: a.line,
                            required: names(&mut required),
                            recorded: names(&mut recorded),
                        });
                    }
                }
            }
        }
        let mut not_recorded: Vec<SymbolId> =
            required_all.iter().copied().filter(|s| !recorded_all.contains(s)).collect();
        let routine_linearity = linearity.routines.get(id);
        let linearity_report = LinearityReport {
            statements: routine_linearity.map_or(0, |l| l.statements),
            linear_statements: routine_linearity.map_or(0, |l| l.linear_statements),
            dependences: routine_linearity.map(|l| linearity::table(cg, &l.at_exit)).unwrap_or_default(),
            loops: routine_linearity
                .map(|l| {
                    l.loops
                        .iter()
                        .map(|lp| LoopReport {
                            vertex: cg.name(cfg.graph.vertices[lp.header].id).to_owned(),
                            fusable: lp.fusable,
                            nonlinear_carried: names(&mut lp.nonlinear_carried.clone()),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
        routines.push(RoutineReport {
            name,
            activity: ActivityReport {
                active: names(&mut active),
                front_end_active: names(&mut front_end),
                more_precise: names(&mut more_precise),
                disagreements: names(&mut disagreements),
            },
            tbr: TbrReport {
                required: names(&mut required_all),
                recorded: names(&mut recorded_all),
                not_recorded: names(&mut not_recorded),
                statements,
            },
            linearity: linearity_report,
        });
    }
    Ok(AnalysisReport {
        independents: names(&mut activity.independents.clone()),
        dependents: names(&mut activity.dependents.clone()),
        routines,
    })
}

/// `X_1` answers to `X_1`, `x_1` and `x`.
fn matches_name(symbol: &str, wanted: &str) -> bool {
    if symbol.eq_ignore_ascii_case(wanted) {
        return true;
    }
    match symbol.rsplit_once('_') {
        Some((stem, suffix)) if suffix.chars().all(|c| c.is_ascii_digit()) => stem.eq_ignore_ascii_case(wanted),
        _ => false,
    }
}

/// The variables the adjoint of `a` needs (the paper's Req of one assignment): nothing if
/// its target is passive; else those in the operands a nonlinear partial with respect to an
/// active operand reads, and every subscript variable.
pub fn required_by(
    cg: &CallGraph,
    catalogue: &Catalogue,
    a: &Assignment,
    active: &dyn Fn(SymbolId) -> bool,
) -> Vec<SymbolId> {
    let mut out = Vec::new();
    if !a.lhs.base_symbol().is_some_and(active) {
        return out;
    }
    let e = &a.rhs;
    // Each vertex is collected once however many nonlinear operations sit above it.
    let mut seen = vec![false; e.vertices.len()];
    let table = e.operand_table();
    // Whether an active variable occurs under each vertex, operands before their users.
    let index = |v: ExprVertexId| v.into_raw().into_u32() as usize;
    let mut active_below = vec![false; e.vertices.len()];
    if let Some(root) = e.root() {
        let mut stack = vec![(root, false)];
        let mut done = vec![false; e.vertices.len()];
        while let Some((v, expanded)) = stack.pop() {
            if done[index(v)] {
                continue;
            }
            if !expanded {
                stack.push((v, true));
                stack.extend(table.of(v).iter().map(|&o| (o, false)));
                continue;
            }
            done[index(v)] = true;
            let own = matches!(&e.vertices[v], ExprVertex::Variable(r) if r.base_symbol().is_some_and(active));
            active_below[index(v)] = own || table.of(v).iter().any(|&o| active_below[index(o)]);
        }
    }
    for (vertex, v) in e.vertices.iter() {
        match v {
            ExprVertex::Intrinsic(intrinsic) => {
                let operands = table.of(vertex).to_vec();
                let definition = catalogue.get(cg.name(intrinsic.name));
                for k in 0..operands.len() {
                    // The partial with respect to a passive operand is never needed.
                    if !active_below[index(operands[k])] {
                        continue;
                    }
                    let partial = definition.and_then(|d| d.partials.get(k));
                    let read: Vec<usize> = match partial {
                        Some(p) if p.kind == PartialKind::Nonlinear => {
                            let mut read = Vec::new();
                            linearity::arguments_read(&p.expression, &mut read);
                            read
                        }
                        Some(_) => Vec::new(),
                        None => (1..=operands.len()).collect(),
                    };
                    for arg in read {
                        let targets: Vec<ExprVertexId> = if arg == 0 {
                            operands.clone()
                        } else {
                            operands.get(arg - 1).copied().into_iter().collect()
                        };
                        for t in targets {
                            variables_under(e, t, &table, &mut seen, &mut out);
                        }
                    }
                }
            }
            ExprVertex::FunctionCall(_) => {
                for &t in table.of(vertex) {
                    variables_under(e, t, &table, &mut seen, &mut out);
                }
            }
            ExprVertex::Variable(r) => subscripts(r, &mut out),
            _ => {}
        }
    }
    subscripts(&a.lhs, &mut out);
    out.sort_unstable();
    out.dedup();
    out
}

fn variables_under(
    e: &Expression,
    vertex: ExprVertexId,
    table: &crate::ir::OperandTable,
    seen: &mut [bool],
    out: &mut Vec<SymbolId>,
) {
    let mut stack = vec![vertex];
    while let Some(v) = stack.pop() {
        let index = v.into_raw().into_u32() as usize;
        if std::mem::replace(&mut seen[index], true) {
            continue;
        }
        if let ExprVertex::Variable(r) = &e.vertices[v] {
            r.symbols_read(out);
        }
        stack.extend(table.of(v).iter().copied());
    }
}

fn subscripts(r: &VariableReference, out: &mut Vec<SymbolId>) {
    let mut all = Vec::new();
    r.symbols_read(&mut all);
    let base = r.base_symbol();
    out.extend(all.into_iter().filter(|&s| Some(s) != base));
}

impl AnalysisReport {
    /// The report as text for a terminal: one section per routine.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let list = |v: &[String]| if v.is_empty() { "-".to_owned() } else { v.join(" ") };
        let _ = writeln!(out, "independents: {}", list(&self.independents));
        let _ = writeln!(out, "dependents:   {}", list(&self.dependents));
        for r in &self.routines {
            let _ = writeln!(out, "\nroutine {}", r.name);
            let a = &r.activity;
            let _ = writeln!(out, "  activity: active {}", list(&a.active));
            let _ = writeln!(out, "            front end active {}", list(&a.front_end_active));
            let _ =
                writeln!(out, "            more precise (front end active, passive here) {}", list(&a.more_precise));
            let _ = writeln!(out, "            active here, passive for the front end {}", list(&a.disagreements));
            let t = &r.tbr;
            let _ = writeln!(out, "  tbr: required {}", list(&t.required));
            let _ = writeln!(out, "       to be recorded {}", list(&t.recorded));
            let _ = writeln!(out, "       read where they stand {}", list(&t.not_recorded));
            for s in &t.statements {
                let _ = writeln!(
                    out,
                    "       statement {} (line {}): required {}; recorded {}",
                    s.statement,
                    s.line,
                    list(&s.required),
                    list(&s.recorded)
                );
            }
            let l = &r.linearity;
            let _ = writeln!(
                out,
                "  linearity: {} of {} assignments have constant partials",
                l.linear_statements, l.statements
            );
            for (x, deps) in &l.dependences {
                let shown: Vec<String> = deps
                    .iter()
                    .map(|(v, c)| format!("{v} {}", if *c == Dependence::Linear { "linear" } else { "nonlinear" }))
                    .collect();
                let _ = writeln!(out, "    {x} depends on {}", shown.join(", "));
            }
            for lp in &l.loops {
                let verdict = if lp.fusable {
                    "adjoint could be fused".to_owned()
                } else {
                    format!("not fusable: {} depend nonlinearly on themselves", lp.nonlinear_carried.join(" "))
                };
                let _ = writeln!(out, "    loop {}: {verdict}", lp.vertex);
            }
        }
        out
    }
}
