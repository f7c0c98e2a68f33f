//! `analyze`: the activity, to-be-recorded and linearity analyses of a document, per routine,
//! as text or JSON.

use super::args::AnalyzeArgs;
use super::{Outcome, Reported, print_findings, print_stdout, read_input};
use crate::analysis::report::analyze;
use crate::xaif::intrinsics::Catalogue;
use crate::xaif::{self, ReadOptions};

pub fn run(args: &AnalyzeArgs) -> Outcome {
    let (bytes, name) = read_input(&args.file)?;
    let call_graph = match xaif::read(&bytes, &name, &ReadOptions::default()) {
        Ok(read) => {
            print_findings(&read.warnings);
            read.call_graph
        }
        Err(error) => {
            print_findings(error.findings());
            return Ok(Err(Reported(1)));
        }
    };
    let catalogue = Catalogue::builtin();
    let report = analyze(&call_graph, catalogue, &args.independents, &args.dependents)?;
    let text = if args.json { serde_json::to_string_pretty(&report)? + "\n" } else { report.render() };
    print_stdout(text)?;
    Ok(Ok(()))
}
