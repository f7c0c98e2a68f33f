//! `trace-diff`: compares two control-flow traces, streaming, and reports the first
//! divergence (`trace::diff`). Exit 0 when equal, 1 when they differ or one is malformed.

use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Context, Result};

use super::args::TraceDiffArgs;
use super::{Outcome, Reported, print_stdout};
use crate::trace::Reader;
use crate::trace::diff::{self, Outcome as Compared};

/// A trace to read: a file, or standard input for `-`.
fn open(path: &Path) -> Result<(Box<dyn Read>, String)> {
    if path.as_os_str() == "-" {
        return Ok((Box::new(std::io::stdin()), "<stdin>".to_owned()));
    }
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok((Box::new(file), path.display().to_string()))
}

pub fn run(args: &TraceDiffArgs) -> Outcome {
    let (a, a_name) = open(&args.a)?;
    let (b, b_name) = open(&args.b)?;
    let mut a = Reader::new(a, &a_name);
    let mut b = Reader::new(b, &b_name);
    let outcome = match diff::diff(&mut a, &mut b, args.context) {
        Ok((outcome, _)) => outcome,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "{error}");
            return Ok(Err(Reported(1)));
        }
    };
    let text = if args.json {
        format!("{}\n", diff::json(&outcome))
    } else {
        match &outcome {
            Compared::Equal { events } => format!("traces are equal: {events} events\n"),
            Compared::Differ(divergence) => divergence.text(),
        }
    };
    print_stdout(text)?;
    Ok(match outcome {
        Compared::Equal { .. } => Ok(()),
        Compared::Differ(_) => Err(Reported(1)),
    })
}
