//! What `verify` found: the verdict, the Jacobian's entries, the dot-product test, and the
//! report printed as text or JSON.

use std::fmt::Write as _;

use super::Mode;

#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Ok,
    Mismatch(String),
    Unsupported(String),
}

impl Status {
    pub fn word(&self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Mismatch(_) => "MISMATCH",
            Status::Unsupported(_) => "UNSUPPORTED",
        }
    }
}

/// One compared Jacobian entry.
#[derive(Clone, Debug)]
pub struct Entry {
    pub output: usize,
    pub input: usize,
    pub ad: f64,
    pub fd: f64,
    pub err: f64,
    /// Passed against a one-sided difference only (a kink).
    pub one_sided: bool,
    pub ok: bool,
}

#[derive(Clone, Debug)]
pub struct DotTest {
    pub tangent_side: f64,
    pub adjoint_side: f64,
    pub rel_err: f64,
    pub ok: bool,
}

#[derive(Clone, Debug)]
pub struct VerifyReport {
    pub status: Status,
    pub mode: Mode,
    pub entry: String,
    pub n: usize,
    pub m: usize,
    pub entries: Vec<Entry>,
    /// Output values of the transformed program against the original's: `(original, transformed)`.
    pub values: Vec<(f64, f64)>,
    pub dot: Option<DotTest>,
    pub rtol: f64,
    /// Steps executed by all sweeps of the transformed program.
    pub steps: u64,
    /// Adjoint mode: words the taping pushed in one reverse sweep (the first).
    pub tape: crate::interp::memory::TapeWords,
    /// Adjoint mode: floating-point operations of that reverse sweep, by placeholder.
    pub operations: crate::interp::memory::Operations,
    /// What suggests the call is not the intended one (a zero Jacobian or column).
    pub warnings: Vec<String>,
    /// Where the program that failed stopped, if one did.
    pub failure: Option<(Side, crate::interp::Location)>,
    /// What the verifier chose that the document does not say (see [`crate::interp::guess`]): a test
    /// point other than the default, values of integer arguments, element counts; each with
    /// why, so that the verdict can be judged and repeated.
    pub choices: Vec<String>,
    /// On a mismatch: the first wrong derivative (tangent) or the routine whose adjoint is
    /// wrong, by [`crate::interp::localize`].
    pub localized: Option<crate::interp::localize::Localization>,
}

/// Which of the two programs compared.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Side {
    Original,
    Transformed,
}

impl VerifyReport {
    pub fn unsupported(reason: impl Into<String>, mode: Mode) -> VerifyReport {
        VerifyReport {
            status: Status::Unsupported(reason.into()),
            mode,
            entry: String::new(),
            n: 0,
            m: 0,
            entries: Vec::new(),
            values: Vec::new(),
            dot: None,
            rtol: 0.0,
            steps: 0,
            tape: Default::default(),
            operations: Default::default(),
            warnings: Vec::new(),
            failure: None,
            choices: Vec::new(),
            localized: None,
        }
    }

    /// The Jacobian of the transformed program, row-major `m × n`.
    pub fn jacobian(&self) -> Vec<f64> {
        let mut j = vec![0.0; self.n * self.m];
        for e in &self.entries {
            j[e.output * self.n + e.input] = e.ad;
        }
        j
    }

    pub fn final_line(&self) -> String {
        let detail = match &self.status {
            Status::Ok => {
                let max = self.entries.iter().map(|e| e.err).fold(0.0, f64::max);
                let kinks = self.entries.iter().filter(|e| e.one_sided).count();
                let mut s = format!("{}x{} jacobian, max error {max:.2e}", self.m, self.n);
                if kinks > 0 {
                    let _ = write!(s, ", {kinks} entries at kinks matched one-sided");
                }
                if let Some(d) = &self.dot {
                    let _ = write!(s, ", dot-product test error {:.2e}", d.rel_err);
                }
                s
            }
            Status::Mismatch(why) | Status::Unsupported(why) => why.clone(),
        };
        let mut line = format!("verify: {} {detail}", self.status.word());
        for choice in &self.choices {
            let _ = write!(line, "; {choice}");
        }
        line
    }

    /// The human-readable table and the final line.
    pub fn table(&self) -> String {
        let mut out = String::new();
        if !self.entries.is_empty() {
            let mode = match self.mode {
                Mode::Tangent => "tangent",
                Mode::Adjoint => "adjoint",
            };
            let _ = writeln!(out, "{} ({mode}): d y(i) / d x(j), tolerance {:.1e}", self.entry, self.rtol);
            let _ = writeln!(
                out,
                "{:>5} {:>5} {:>24} {:>24} {:>10}  status",
                "i", "j", "derivative code", "finite differences", "error"
            );
            for e in &self.entries {
                let status = match (e.ok, e.one_sided) {
                    (true, false) => "ok",
                    (true, true) => "ok (one-sided)",
                    (false, _) => "MISMATCH",
                };
                let _ = writeln!(
                    out,
                    "{:>5} {:>5} {:>24.16e} {:>24.16e} {:>10.2e}  {status}",
                    e.output + 1,
                    e.input + 1,
                    e.ad,
                    e.fd,
                    e.err
                );
            }
        }
        if self.mode == Mode::Adjoint && self.tape.total() > 0 {
            let t = &self.tape;
            let _ = writeln!(
                out,
                "tape: {} words pushed per reverse sweep ({} reals, {} integers, {} logicals, {} strings)",
                t.total(),
                t.reals,
                t.integers,
                t.logicals,
                t.strings
            );
            let _ = writeln!(
                out,
                "operations: {} in the adjoint sweep, {} in the taping sweep (one reverse sweep)",
                self.operations.adjoint_sweep(),
                self.operations.taping_sweep()
            );
        }
        if let Some(d) = &self.dot {
            let _ = writeln!(
                out,
                "dot-product test: <J xd, yb> = {:.16e}, <xd, J^T yb> = {:.16e}, error {:.2e}",
                d.tangent_side, d.adjoint_side, d.rel_err
            );
        }
        if let Some(localized) = &self.localized {
            let _ = writeln!(out, "{localized}");
        }
        out.push_str(&self.final_line());
        out.push('\n');
        out
    }

    pub fn json(&self) -> String {
        let number = |v: f64| if v.is_finite() { serde_json::json!(v) } else { serde_json::Value::Null };
        let reason = match &self.status {
            Status::Ok => String::new(),
            Status::Mismatch(r) | Status::Unsupported(r) => r.clone(),
        };
        let entries: Vec<serde_json::Value> = self
            .entries
            .iter()
            .map(|e| {
                serde_json::json!({
                    "i": e.output + 1,
                    "j": e.input + 1,
                    "ad": number(e.ad),
                    "fd": number(e.fd),
                    "err": number(e.err),
                    "one_sided": e.one_sided,
                    "ok": e.ok,
                })
            })
            .collect();
        let mut value = serde_json::json!({
            "status": self.status.word(),
            "reason": reason,
            "entry": self.entry,
            "n": self.n,
            "m": self.m,
            "rtol": number(self.rtol),
            "entries": entries,
            "warnings": self.warnings,
        });
        if self.mode == Mode::Adjoint {
            value["tape"] = serde_json::json!({
                "reals": self.tape.reals,
                "integers": self.tape.integers,
                "logicals": self.tape.logicals,
                "strings": self.tape.strings,
            });
            value["operations"] = serde_json::json!({
                "adjoint_sweep": self.operations.adjoint_sweep(),
                "taping_sweep": self.operations.taping_sweep(),
            });
        }
        if !self.choices.is_empty() {
            value["choices"] = serde_json::json!(self.choices);
        }
        if let Some(localized) = &self.localized {
            value["localized"] = serde_json::to_value(localized).unwrap_or(serde_json::Value::Null);
        }
        if let Some(d) = &self.dot {
            value["dot"] = serde_json::json!({
                "tangent": number(d.tangent_side),
                "adjoint": number(d.adjoint_side),
                "err": number(d.rel_err),
                "ok": d.ok,
            });
        }
        value.to_string()
    }
}

impl Status {
    pub(super) fn reason(&self) -> String {
        match self {
            Status::Ok => String::new(),
            Status::Mismatch(r) | Status::Unsupported(r) => r.clone(),
        }
    }
}
