//! The `dot` command: reads the document, picks the routine, statement or sequences the
//! switches name, and writes the view as DOT or, through Graphviz, SVG.

use std::io::Write;

use crate::cli::args::{DotArgs, DotWhat, PreaccumulationArg};
use crate::cli::{Outcome, Reported, commit_bytes, dot, print_findings, read_input};
use crate::output::{Destination, Output};
use crate::passes::tangent::{Preaccumulation, TangentConfig};
use crate::pipeline;
use crate::xaif::intrinsics::Catalogue;
use crate::xaif::{self, ReadOptions};

pub fn run(args: &DotArgs) -> Outcome {
    if args.what == DotWhat::Expression && args.statement.is_none() {
        crate::cli::usage_error("dot", "--statement is required with --what expression".to_owned());
    }
    let output = Output::create(&args.output.clone().unwrap_or(Destination::Stdout))?;
    let (input, name) = read_input(&args.file)?;
    let catalogue = Catalogue::builtin();
    let mut call_graph = match xaif::read(&input, &name, &ReadOptions { strict: false, catalogue }) {
        Ok(read) => {
            if !args.quiet {
                print_findings(&read.warnings);
            }
            read.call_graph
        }
        Err(error) => {
            print_findings(error.findings());
            return Ok(Err(Reported(1)));
        }
    };
    let failed = |error: dot::DotError| -> Outcome {
        let _ = writeln!(std::io::stderr(), "xaifbooster: {name}: {error}");
        Ok(Err(Reported(1)))
    };
    let routine = match args.routine.as_deref().map(|r| dot::find_routine(&call_graph, r)).transpose() {
        Ok(routine) => routine,
        Err(error) => return failed(error),
    };
    let text = match args.what {
        DotWhat::Callgraph => dot::call_graph(&call_graph),
        DotWhat::Cfg => {
            let routine = match routine.map_or_else(|| dot::top_routine(&call_graph), Ok) {
                Ok(routine) => routine,
                Err(error) => return failed(error),
            };
            match dot::control_flow(&call_graph, routine, args.placeholder.as_deref()) {
                Ok(text) => text,
                Err(error) => return failed(error),
            }
        }
        DotWhat::Expression => {
            // Checked before reading the input (a usage error).
            let Some(statement) = &args.statement else { unreachable!("--statement checked first") };
            match dot::expression_graph(&call_graph, routine, statement) {
                Ok(text) => text,
                Err(error) => return failed(error),
            }
        }
        DotWhat::Lcg => {
            // Without --routine: every routine's sequences.
            let routine_name = routine.map(|r| call_graph.symbol_name(call_graph.routines[r].symbol()).to_owned());
            let preaccumulation = match args.preaccumulation {
                PreaccumulationArg::Statement => Preaccumulation::Statement,
                PreaccumulationArg::BasicBlock => Preaccumulation::BasicBlock,
            };
            let config = pipeline::Config::with_tangent(TangentConfig {
                preaccumulation,
                elimination: args.elimination.method(),
                record_graphs: true,
                ..TangentConfig::default()
            });
            let report = match pipeline::tangent(&mut call_graph, catalogue, &config) {
                Ok(report) => report,
                Err(error) => {
                    let _ = writeln!(std::io::stderr(), "xaifbooster: {name}: {error}");
                    return Ok(Err(Reported(1)));
                }
            };
            match dot::select_sequences(
                &report.tangent.sequences,
                routine_name.as_deref(),
                args.block.as_deref(),
                args.statement.as_deref(),
            ) {
                Ok(sequences) => dot::linearized_graphs(&sequences),
                Err(error) => return failed(error),
            }
        }
    };
    let bytes = if args.svg {
        match dot::render_svg(&text) {
            Ok(svg) => svg,
            Err(error) => return failed(error),
        }
    } else {
        text.into_bytes()
    };
    commit_bytes(output, &bytes)?;
    Ok(Ok(()))
}
