//! What a run tells its user besides its outputs: findings for the terminal, with repeated
//! warnings summarised, and the debug log of `-d`/`-g`.
//!
//! The debug log keeps the original engine's groups (`-g` is a sum of them; errors are always
//! logged) and narrows by the stage that logged a line (`-T`). One line per entry:
//! `GROUP stage: text`. xaifbooster logs warnings (`WARNING`), per-sequence and per-symbol
//! details (`DATA`), per-stage times (`TIMING`) and per-pass summaries (`METRIC`); the other
//! groups exist for compatibility and log nothing.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::pipeline::Report;
use crate::xaif::{Diagnostic, Severity};

/// The groups of the original engine's debug output, as `-g` bits.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Group {
    /// Bit value 0: always logged.
    Error,
    Warning,
    Callstack,
    Data,
    Graphics,
    Timing,
    Temporary,
    Metric,
}

impl Group {
    pub fn bit(self) -> u32 {
        match self {
            Group::Error => 0,
            Group::Warning => 1,
            Group::Callstack => 2,
            Group::Data => 4,
            Group::Graphics => 8,
            Group::Timing => 16,
            Group::Temporary => 32,
            Group::Metric => 64,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Group::Error => "ERROR",
            Group::Warning => "WARNING",
            Group::Callstack => "CALLSTACK",
            Group::Data => "DATA",
            Group::Graphics => "GRAPHICS",
            Group::Timing => "TIMING",
            Group::Temporary => "TEMPORARY",
            Group::Metric => "METRIC",
        }
    }
}

/// Every group xaifbooster logs something in: the mask when `-d` is given without `-g`.
pub const ALL_LOGGED: u32 = 1 | 4 | 16 | 64;

/// The debug log of one run, built in memory and written at its end.
#[derive(Debug)]
pub struct DebugLog {
    mask: u32,
    /// Stages to keep (`-T`); empty keeps all.
    tags: Vec<String>,
    text: String,
}

impl DebugLog {
    /// A log of the groups in `mask`, narrowed to the stages in `tags` (space separated, as
    /// `-T`), beginning with a header line.
    pub fn new(mask: u32, tags: Option<&str>, header: &str) -> DebugLog {
        let tags = tags.map(|t| t.split_whitespace().map(str::to_owned).collect()).unwrap_or_default();
        DebugLog { mask, tags, text: format!("# {header}\n") }
    }

    /// Whether a line of this group from this stage would be kept.
    pub fn wants(&self, group: Group, stage: &str) -> bool {
        let group_on = group == Group::Error || self.mask & group.bit() != 0;
        group_on && (group == Group::Error || self.tags.is_empty() || self.tags.iter().any(|t| t == stage))
    }

    pub fn log(&mut self, group: Group, stage: &str, text: impl std::fmt::Display) {
        if self.wants(group, stage) {
            let _ = writeln!(self.text, "{} {stage}: {text}", group.label());
        }
    }

    /// Every finding, none summarised.
    pub fn findings(&mut self, stage: &str, findings: &[Diagnostic]) {
        for finding in findings {
            let group = if finding.severity == Severity::Error { Group::Error } else { Group::Warning };
            self.log(group, stage, finding);
        }
    }

    /// What the passes of a transforming mode did: counts (`METRIC`), the symbols made passive
    /// and each preaccumulated sequence (`DATA`).
    pub fn report(&mut self, report: &Report) {
        let passivation = &report.passivation;
        self.log(
            Group::Metric,
            "passivate",
            format_args!(
                "{} symbols forced passive, {} names unmatched",
                passivation.passivated.len(),
                passivation.unmatched.len()
            ),
        );
        for name in &passivation.passivated {
            self.log(Group::Data, "passivate", format_args!("passive: {name}"));
        }
        self.log(
            Group::Metric,
            "init_derivatives",
            format_args!("{} derivatives zeroed at routine entries", report.initialized_derivatives),
        );
        let t = &report.type_change;
        self.log(
            Group::Metric,
            "type_change",
            format_args!(
                "{} conversions, {} at external calls, {} saved indices, {} allocations, {} wrapped calls, {} renamed routines",
                t.conversions, t.external_conversions, t.saved_indices, t.allocations, t.wrapped_calls, t.renamed_routines
            ),
        );
        let sequences = &report.tangent.sequences;
        let sum = |f: fn(&crate::passes::tangent::SequenceStats) -> usize| sequences.iter().map(f).sum::<usize>();
        self.log(
            Group::Metric,
            "tangent",
            format_args!(
                "{} sequences of {} statements: {} accumulation multiplications, {} additions, {} propagator entries, \
                 {} propagator multiplications",
                sequences.len(),
                sum(|s| s.statements),
                sum(|s| s.accumulation_multiplications),
                sum(|s| s.accumulation_additions),
                sum(|s| s.propagator_entries),
                sum(|s| s.propagator_multiplications),
            ),
        );
        for s in sequences {
            self.log(
                Group::Data,
                "tangent",
                format_args!(
                    "{} block {}: {} statements, {} vertices, {} edges, {} independents, {} dependents, method {}, \
                     {} accumulation multiplications, {} additions, {} propagator entries",
                    s.routine,
                    s.basic_block,
                    s.statements,
                    s.vertices,
                    s.edges,
                    s.independents,
                    s.dependents,
                    s.method,
                    s.accumulation_multiplications,
                    s.accumulation_additions,
                    s.propagator_entries,
                ),
            );
        }
    }

    /// The adjoint mode's summary (`METRIC`), after the tangent passes' ([`DebugLog::report`]).
    pub fn adjoint_report(&mut self, report: &Report) {
        let a = &report.adjoint;
        self.log(
            Group::Metric,
            "adjoint",
            format_args!(
                "{} routines reversed: {} factor pushes, {} value pushes, {} index pushes, {} control pushes, {} exit \
                 pushes (in the code)",
                a.routines, a.factor_pushes, a.value_pushes, a.index_pushes, a.control_pushes, a.exit_pushes
            ),
        );
    }

    /// What the trace mode traced, for the METRIC group.
    pub fn trace_report(&mut self, t: &crate::passes::trace::TraceReport) {
        self.log(
            Group::Metric,
            "trace",
            format_args!(
                "{} routines traced: {} calls, {} non-smooth intrinsics, {} loops, {} branches, {} trace calls in all",
                t.routines, t.calls, t.intrinsics, t.loops, t.branches, t.events
            ),
        );
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.text.into_bytes()
    }
}

/// The terminal lines for a batch of findings, in order: every error; each distinct warning
/// once, at its first occurrence, with how often it occurred (`(161 ×, first shown)`); no
/// warnings at all when `quiet`. Warnings are the same when file, element and message are.
pub fn summarise(findings: &[Diagnostic], quiet: bool) -> Vec<String> {
    let mut counts: HashMap<(&str, &str, &str), usize> = HashMap::new();
    for f in findings.iter().filter(|f| f.severity == Severity::Warning) {
        *counts.entry((&f.file, &f.element, &f.message)).or_default() += 1;
    }
    let mut lines = Vec::new();
    for f in findings {
        match f.severity {
            Severity::Error => lines.push(f.to_string()),
            Severity::Warning if quiet => {}
            Severity::Warning => match counts.remove(&(f.file.as_str(), f.element.as_str(), f.message.as_str())) {
                Some(1) => lines.push(f.to_string()),
                Some(n) => lines.push(format!("{f} ({n} ×, first shown)")),
                // Shown already, with the count.
                None => {}
            },
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(severity: Severity, line: usize, message: &str) -> Diagnostic {
        Diagnostic {
            severity,
            file: "in.xaif".into(),
            line,
            column: 3,
            element: "SubroutineCall".into(),
            message: message.into(),
        }
    }

    #[test]
    fn repeated_warnings_are_shown_once_with_their_count() {
        let findings = [
            finding(Severity::Warning, 1, "missing formalArgCount"),
            finding(Severity::Error, 2, "bad"),
            finding(Severity::Warning, 3, "missing formalArgCount"),
            finding(Severity::Warning, 4, "other"),
            finding(Severity::Error, 5, "bad"),
            finding(Severity::Warning, 6, "missing formalArgCount"),
        ];
        assert_eq!(
            summarise(&findings, false),
            [
                "in.xaif:1:3: warning: SubroutineCall: missing formalArgCount (3 ×, first shown)",
                "in.xaif:2:3: SubroutineCall: bad",
                "in.xaif:4:3: warning: SubroutineCall: other",
                "in.xaif:5:3: SubroutineCall: bad",
            ]
        );
        assert_eq!(
            summarise(&findings, true),
            ["in.xaif:2:3: SubroutineCall: bad", "in.xaif:5:3: SubroutineCall: bad"]
        );
    }

    #[test]
    fn the_log_keeps_the_masked_groups_and_tagged_stages() {
        let mut log = DebugLog::new(Group::Warning.bit() | Group::Metric.bit(), Some("read tangent"), "test");
        log.log(Group::Warning, "read", "kept");
        log.log(Group::Warning, "validate", "other stage");
        log.log(Group::Timing, "read", "group off");
        log.log(Group::Metric, "tangent", "kept too");
        log.log(Group::Error, "validate", "errors always");
        assert_eq!(log.text(), "# test\nWARNING read: kept\nMETRIC tangent: kept too\nERROR validate: errors always\n");
        let mut errors_only = DebugLog::new(0, None, "h");
        errors_only.findings("validate", &[finding(Severity::Warning, 1, "w"), finding(Severity::Error, 2, "e")]);
        assert_eq!(errors_only.text(), "# h\nERROR validate: in.xaif:2:3: SubroutineCall: e\n");
    }
}
