//! Which elimination heuristics earn their planning time: plans every sequence of every input
//! with every method, under the tangent's cost model and the adjoint's, and prints what each
//! heuristic costs alone and what the best of the others costs without it, the heuristics
//! chosen one at a time by what they save, and what `best` (the default,
//! [`elimination::heuristics`]) and `every` ([`elimination::EVERY_HEURISTIC`]) cost, with the
//! number of sequences where `best` plans differently. Costs are multiplications per
//! direction as the planner counts them (propagation included).
//! Usage: heuristic_wins FILE_OR_DIR... (a directory stands for its `*/tlm.in.xaif` and `*.xaif`).
use std::path::{Path, PathBuf};

use xaifbooster::passes::elimination::{self, Method};
use xaifbooster::passes::tangent::TangentConfig;
use xaifbooster::pipeline::{self, Config};
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions};

fn inputs(arg: &str) -> Vec<PathBuf> {
    let path = Path::new(arg);
    if !path.is_dir() {
        return vec![path.to_owned()];
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(path).expect("readable directory").flatten() {
        let p = entry.path();
        if p.join("tlm.in.xaif").is_file() {
            found.push(p.join("tlm.in.xaif"));
        } else if p.extension().is_some_and(|e| e == "xaif") {
            found.push(p);
        }
    }
    found.sort();
    found
}

/// Each planned sequence's cost per method, in [`elimination::EVERY_HEURISTIC`] order, then
/// `best`'s and `every`'s.
fn costs(files: &[PathBuf], model: elimination::CostModel) -> Vec<Vec<usize>> {
    let mut rows = Vec::new();
    for file in files {
        let bytes = std::fs::read(file).expect("readable input");
        let Ok(read) = xaif::read(&bytes, &file.display().to_string(), &ReadOptions::default()) else { continue };
        let mut cg = read.call_graph;
        let config = Config {
            tangent: TangentConfig { compare_methods: true, cost_model: model, ..TangentConfig::default() },
            ..Config::default()
        };
        let Ok(report) = pipeline::tangent(&mut cg, Catalogue::builtin(), &config) else { continue };
        for sequence in &report.tangent.sequences {
            let cost = |m: Method| sequence.method_costs.iter().find(|(x, _)| *x == m).map(|&(_, c)| c);
            let methods = elimination::EVERY_HEURISTIC.iter().chain(&[Method::Best, Method::Every]);
            if let Some(row) = methods.map(|&m| cost(m)).collect::<Option<Vec<_>>>() {
                rows.push(row);
            }
        }
    }
    rows
}

fn best_of(rows: &[Vec<usize>], keep: impl Fn(Method) -> bool) -> usize {
    let every = elimination::EVERY_HEURISTIC;
    rows.iter()
        .map(|row| every.iter().zip(row).filter(|&(&m, _)| keep(m)).map(|(_, &c)| c).min().unwrap_or(usize::MAX))
        .sum()
}

fn main() {
    let files: Vec<PathBuf> = std::env::args().skip(1).flat_map(|a| inputs(&a)).collect();
    assert!(!files.is_empty(), "usage: heuristic_wins FILE_OR_DIR...");
    for (name, model) in [("tangent", elimination::CostModel::UnitAware), ("adjoint", elimination::CostModel::Adjoint)]
    {
        let rows = costs(&files, model);
        println!("{name} cost model: {} sequences of {} files", rows.len(), files.len());
        let n = elimination::EVERY_HEURISTIC.len();
        let best: usize = rows.iter().map(|r| r[n]).sum();
        let every: usize = rows.iter().map(|r| r[n + 1]).sum();
        let differ = rows.iter().filter(|r| r[n] != r[n + 1]).count();
        println!("  best {best}, every {every}: best costs more on {differ} sequences");
        println!("  the cheapest heuristic per sequence {}", best_of(&rows, |_| true));
        for (i, &method) in elimination::EVERY_HEURISTIC.iter().enumerate() {
            let alone: usize = rows.iter().map(|r| r[i]).sum();
            let without = best_of(&rows, |m| m != method);
            println!("  {:<18} alone {alone:>7}  the others without it {without:>7}", method.name());
        }
        // Heuristics chosen one at a time, each the one that lowers the total most.
        let mut chosen: Vec<Method> = Vec::new();
        while chosen.len() < elimination::EVERY_HEURISTIC.len() {
            let (total, next) = elimination::EVERY_HEURISTIC
                .iter()
                .filter(|m| !chosen.contains(m))
                .map(|&m| (best_of(&rows, |x| x == m || chosen.contains(&x)), m))
                .min_by_key(|&(total, _)| total)
                .expect("a heuristic is left");
            chosen.push(next);
            println!("  + {:<16} {total:>7}", next.name());
        }
    }
}
