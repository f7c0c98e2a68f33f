//! Our adjoint outputs, executed under both reversal templates: every corpus example whose
//! reference adjoint verifies must verify with ours (joint output made with `-I`), apart from
//! the constructs listed in `NOT_YET` that the adjoint refuses with an error today. Run with
//! `--nocapture` for the table.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use xaifbooster::interp::Template;
use xaifbooster::interp::verify::{Mode, Status, read_program, verify};
use xaifbooster::passes::adjoint::AdjointConfig;
use xaifbooster::passes::tangent::{Preaccumulation, TangentConfig};
use xaifbooster::pipeline::Config;
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

/// Examples the adjoint refuses today, with the construct it cannot reverse yet.
const NOT_YET: &[(&str, &str)] = &[];

fn report(dir: &Path, transformed: &[u8], template: Template) -> xaifbooster::interp::verify::VerifyReport {
    let name = dir.display().to_string();
    let unsupported = |why| xaifbooster::interp::verify::VerifyReport::unsupported(why, Mode::Adjoint);
    let original = match read_program(&std::fs::read(dir.join("adm.in.xaif")).expect("input"), &name) {
        Ok(program) => program,
        Err(why) => return unsupported(why),
    };
    let transformed = match read_program(transformed, &name) {
        Ok(program) => program,
        Err(why) => return unsupported(why),
    };
    verify(&original, &transformed, &common::verify_config(dir, &original, Mode::Adjoint, template))
}

fn word(status: &Status) -> &'static str {
    match status {
        Status::Ok => "OK",
        Status::Mismatch(_) => "MISMATCH",
        Status::Unsupported(_) => "UNSUPPORTED",
    }
}

#[test]
fn our_adjoint_code_verifies_wherever_the_reference_does() {
    check_corpus(Preaccumulation::BasicBlock);
}

/// The adjoint of statement-level preaccumulation (`-S`) must be as right.
#[test]
fn statement_level_adjoint_code_verifies_wherever_the_reference_does() {
    check_corpus(Preaccumulation::Statement);
}

fn check_corpus(preaccumulation: Preaccumulation) {
    let mut table: BTreeMap<(&str, &str, &str), usize> = BTreeMap::new();
    let mut regressions = Vec::new();
    let mut refused = Vec::new();
    // Words one reverse sweep pushes (split template, where both verify): ours, the reference's.
    let mut tape = (0u64, 0u64);
    let mut longer: Vec<String> = Vec::new();
    let inputs = common::corpus_files("adm.in.xaif");
    assert!(inputs.len() >= 178, "only {} adjoint inputs", inputs.len());
    // For debugging: XAIF_EXAMPLE=name runs one example, XAIF_DUMP=dir keeps our outputs.
    let only = std::env::var("XAIF_EXAMPLE").ok();
    let dump = std::env::var_os("XAIF_DUMP");
    for input in &inputs {
        let dir = input.parent().expect("example folder");
        let example = dir.file_name().expect("name").to_string_lossy().into_owned();
        if only.as_ref().is_some_and(|only| *only != example) {
            continue;
        }
        let bytes = std::fs::read(input).expect("input");
        let Ok(read) = xaif::read(&bytes, &example, &ReadOptions::default()) else { continue };
        let mut cg = read.call_graph;
        let config = Config {
            adjoint: AdjointConfig { all_intents_inout: true, ..AdjointConfig::default() },
            tangent: TangentConfig { preaccumulation, ..TangentConfig::default() },
            ..Config::default()
        };
        let ours = match xaifbooster::pipeline::adjoint(&mut cg, Catalogue::builtin(), &config) {
            Ok(_) => xaif::write(&cg, &WriteOptions::default()),
            Err(error) => {
                refused.push(format!("{example}: {error}"));
                continue;
            }
        };
        if let Some(dump) = &dump {
            std::fs::write(Path::new(dump).join(format!("{example}.xaif")), &ours).expect("dump");
        }
        for (template, reference) in [(Template::Joint, "adm-joint.ref.xaif"), (Template::Split, "adm-split.ref.xaif")]
        {
            let kind = if template == Template::Joint { "joint" } else { "split" };
            let ours = report(dir, &ours, template);
            let theirs = match std::fs::read(dir.join(reference)) {
                Ok(bytes) => report(dir, &bytes, template),
                Err(_) => xaifbooster::interp::verify::VerifyReport::unsupported("no reference output", Mode::Adjoint),
            };
            if template == Template::Split && matches!(ours.status, Status::Ok) && matches!(theirs.status, Status::Ok) {
                tape.0 += ours.tape.total();
                tape.1 += theirs.tape.total();
                if ours.tape.total() > theirs.tape.total() {
                    longer.push(format!("{example}: {} > {}", ours.tape.total(), theirs.tape.total()));
                }
            }
            let (ours, theirs) = (ours.status, theirs.status);
            *table.entry((kind, word(&ours), word(&theirs))).or_default() += 1;
            let fine =
                matches!(ours, Status::Ok) || !matches!(theirs, Status::Ok) && !matches!(ours, Status::Mismatch(_));
            if !fine {
                regressions.push(format!("{example} ({kind}): ours {ours:?}, reference {}", word(&theirs)));
            }
        }
    }
    eprintln!("{preaccumulation:?} preaccumulation\ntemplate  ours         reference    examples");
    for ((kind, ours, theirs), n) in &table {
        eprintln!("{kind:<9} {ours:<12} {theirs:<12} {n}");
    }
    eprintln!(
        "tape words per reverse sweep (split, both OK): ours {}, reference {}; ours longer in {}: {longer:?}",
        tape.0,
        tape.1,
        longer.len()
    );
    let expected: Vec<String> = NOT_YET.iter().map(|(e, _)| (*e).to_owned()).collect();
    let refused_names: Vec<String> = refused.iter().map(|r| r.split(':').next().unwrap_or("").to_owned()).collect();
    assert_eq!(refused_names, expected, "refused: {refused:#?}");
    assert!(regressions.is_empty(), "{} regressions: {regressions:#?}", regressions.len());
}

/// The README's adjoint example, end to end through the command line, in both templates.
#[test]
fn readme_adjoint_example_verifies_through_the_cli() {
    let binary = env!("CARGO_BIN_EXE_xaifbooster");
    let input = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/examples/head.xaif");
    let dir = tempfile::tempdir().expect("temp dir");
    let output = dir.path().join("head.adm.xaif");
    let status = std::process::Command::new(binary)
        .args(["adjoint", "-I", "-i", input, "-o"])
        .arg(&output)
        .status()
        .expect("binary runs");
    assert!(status.success());
    let text = std::fs::read_to_string(&output).expect("output written");
    assert_eq!(text.matches("<xaif:ReplacementList").count(), text.matches("</xaif:ReplacementList>").count());
    assert!(text.contains("template_name=\"reverse_subroutine_template\""));
    for template in ["joint", "split"] {
        let verify = std::process::Command::new(binary)
            .args(["verify", "--original", input, "--transformed"])
            .arg(&output)
            .args(["--mode", "adjoint", "--template", template])
            .output()
            .expect("binary runs");
        let text = String::from_utf8_lossy(&verify.stdout);
        assert!(verify.status.success(), "{template}: {text}");
        assert!(text.lines().last().is_some_and(|l| l.starts_with("verify: OK")), "{template}: {text}");
    }
}

/// Control flow the original adjoint driver refuses: a backward goto (reversed by basic-block
/// numbers), a post-test loop and a two-way If joined by an EndBranch (reversed structurally).
#[test]
fn unstructured_graphs_post_test_loops_and_ifs_reverse_correctly() {
    use xaifbooster::interp::verify::VerifyConfig;
    for (name, numbered) in [("unstructured.xaif", true), ("if_postloop.xaif", false)] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/adjoint").join(name);
        let input = std::fs::read(&path).expect("test program");
        let mut cg = xaif::read(&input, name, &ReadOptions::default()).expect("reads").call_graph;
        xaifbooster::pipeline::adjoint(&mut cg, Catalogue::builtin(), &Config::default()).expect("adjoint");
        let xaifbooster::ir::Routine::ReplacementList(list) = &cg.routines.iter().next().expect("a routine").1 else {
            panic!("{name}: a replacement list");
        };
        let adjoint = &list.replacements[2].graph;
        let pre_loops = adjoint
            .vertices
            .iter()
            .filter(|(_, v)| matches!(v.kind, xaifbooster::ir::CfgVertexKind::PreLoop(_)))
            .count();
        assert_eq!(pre_loops, usize::from(numbered), "{name}: the block-number dispatch loop");
        assert_eq!(list.replacements[1].structured, !numbered, "{name}");
        // The strictly anonymous sweeps are held once, as repeats of 2 and 3, and written out.
        let placeholder = |r: &xaifbooster::ir::Replacement| cg.name(r.placeholder).to_owned();
        let repeats: Vec<(String, String)> = list
            .replacements
            .iter()
            .filter_map(|r| r.repeats.map(|p| (placeholder(r), cg.name(p).to_owned())))
            .collect();
        let sweeps: Vec<&(String, String)> = repeats.iter().filter(|(p, _)| p == "10" || p == "11").collect();
        assert_eq!(sweeps, [&("10".to_owned(), "2".to_owned()), &("11".to_owned(), "3".to_owned())], "{name}");
        // The empty checkpoint placeholders are held once too: each repeats the first of them,
        // a graph without statements.
        for (repeating, repeated) in repeats.iter().filter(|(p, _)| p != "10" && p != "11") {
            let number = |p: &str| p.parse::<u32>().expect("a placeholder number");
            assert!(
                number(repeated) < number(repeating) && number(repeated) >= 4,
                "{name}: {repeating} repeats {repeated}"
            );
            let held =
                list.replacements.iter().find(|r| placeholder(r) == *repeated).expect("the repeated placeholder");
            assert!(held.repeats.is_none(), "{name}: {repeated} holds its graph");
            let statements: usize = held
                .graph
                .vertices
                .iter()
                .map(|(_, v)| match &v.kind {
                    xaifbooster::ir::CfgVertexKind::BasicBlock(block) => block.statements.len(),
                    _ => 0,
                })
                .sum();
            assert_eq!(statements, 0, "{name}: {repeated} is empty");
        }
        assert!(std::ptr::eq(list.graph_of(&list.replacements[10]), &list.replacements[2].graph), "{name}");
        let bytes = xaif::write(&cg, &WriteOptions::default());
        let text = String::from_utf8_lossy(&bytes);
        let body = |number: &str| {
            let start = text.find(&format!("placeholder=\"{number}\"")).expect("placeholder written");
            let start = start + text[start..].find('>').expect("tag end");
            text[start..start + text[start..].find("</xaif:Replacement>").expect("end")].to_owned()
        };
        assert!(body("3").contains("<xaif:BasicBlock"), "{name}: sweep 3 written");
        assert_eq!(body("11"), body("3"), "{name}: sweep 11 written as 3");
        assert_eq!(body("10"), body("2"), "{name}: sweep 10 written as 2");
        let dir = tempfile::tempdir().expect("temp dir");
        let out = dir.path().join(name);
        std::fs::write(&out, &bytes).expect("write");
        assert!(common::xmllint_failures(&[out]).is_empty(), "{name}: schema");
        let findings = xaifbooster::xaif::validate::validate(&bytes, name, &Default::default());
        assert!(findings.iter().all(|f| f.severity != xaifbooster::xaif::Severity::Error), "{findings:#?}");
        let original = read_program(&input, name).expect("original lowers");
        let transformed = read_program(&bytes, name).expect("output lowers");
        for template in [Template::Joint, Template::Split] {
            let config = VerifyConfig {
                mode: Mode::Adjoint,
                driver: xaifbooster::interp::verify::DriverConfig { template, ..Default::default() },
                ..VerifyConfig::default()
            };
            let report = verify(&original, &transformed, &config);
            assert!(matches!(report.status, Status::Ok), "{name} {template:?}: {}", report.final_line());
        }
    }
}

/// The dot-product test `<J ẋ, ȳ> = <ẋ, Jᵀ ȳ>` between our tangent and our adjoint code of the
/// same input, wherever the adjoint verifies (both templates).
#[test]
fn tangent_and_adjoint_pass_the_dot_product_test() {
    use xaifbooster::interp::verify::dot_product_test;
    let mut tested = 0;
    let mut failures = Vec::new();
    for input in common::corpus_files("adm.in.xaif") {
        let dir = input.parent().expect("example folder");
        let example = dir.file_name().expect("name").to_string_lossy().into_owned();
        let bytes = std::fs::read(&input).expect("input");
        let Ok(read) = xaif::read(&bytes, &example, &ReadOptions::default()) else { continue };
        let mut tangent = read.call_graph.clone();
        let mut adjoint = read.call_graph;
        xaifbooster::pipeline::tangent(&mut tangent, Catalogue::builtin(), &Config::default()).expect("tangent");
        let config = Config {
            adjoint: AdjointConfig { all_intents_inout: true, ..AdjointConfig::default() },
            ..Config::default()
        };
        xaifbooster::pipeline::adjoint(&mut adjoint, Catalogue::builtin(), &config).expect("adjoint");
        let (Ok(original), Ok(t), Ok(a)) = (
            read_program(&bytes, &example),
            read_program(&xaif::write(&tangent, &WriteOptions::default()), &example),
            read_program(&xaif::write(&adjoint, &WriteOptions::default()), &example),
        ) else {
            continue;
        };
        for template in [Template::Joint, Template::Split] {
            let verify_config = common::verify_config(dir, &original, Mode::Adjoint, template);
            if !matches!(verify(&original, &a, &verify_config).status, Status::Ok) {
                continue;
            }
            match dot_product_test(&t, &a, &verify_config) {
                Ok(d) if d.ok => tested += 1,
                Ok(d) => failures.push(format!("{example} {template:?}: error {:.2e}", d.rel_err)),
                Err(e) => failures.push(format!("{example} {template:?}: {e}")),
            }
        }
    }
    assert!(tested >= 300, "only {tested} dot-product tests ran");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// `-f`: checkpoints restored in the order they were stored (a first-in-first-out runtime);
/// by default in reverse (OpenAD's stacks, our verifier).
#[test]
fn file_order_restores_follow_the_stores() {
    let names = |graph: &xaifbooster::ir::FlowGraph, cg: &xaifbooster::ir::CallGraph| -> Vec<String> {
        let mut out = Vec::new();
        for (_, vertex) in graph.vertices.iter() {
            if let xaifbooster::ir::CfgVertexKind::BasicBlock(block) = &vertex.kind {
                for statement in &block.statements {
                    if let xaifbooster::ir::Statement::InlinableSubroutineCall(call) = statement
                        && let Some(xaifbooster::ir::ArgumentValue::Variable(r)) =
                            call.arguments.first().map(|a| &a.value)
                    {
                        out.push(cg.symbol_name(r.base_symbol().expect("symbol")).to_owned());
                    }
                }
            }
        }
        out
    };
    let mut checked = 0;
    for input in common::corpus_files("adm.in.xaif") {
        let bytes = std::fs::read(&input).expect("input");
        let Ok(read) = xaif::read(&bytes, "input", &ReadOptions::default()) else { continue };
        for file_order in [false, true] {
            let mut cg = read.call_graph.clone();
            let config = Config {
                adjoint: AdjointConfig { file_order_restore: file_order, ..AdjointConfig::default() },
                ..Config::default()
            };
            xaifbooster::pipeline::adjoint(&mut cg, Catalogue::builtin(), &config).expect("adjoint");
            for (_, routine) in cg.routines.iter() {
                let xaifbooster::ir::Routine::ReplacementList(list) = routine else { continue };
                let stores = names(&list.replacements[3].graph, &cg);
                let mut restores = names(&list.replacements[5].graph, &cg);
                if stores.len() < 2 {
                    continue;
                }
                if !file_order {
                    restores.reverse();
                }
                assert_eq!(stores, restores, "file order {file_order}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "only {checked} routines with two or more checkpointed arguments");
}

/// `-D` in adjoint mode: the reverse sweep begins by zeroing the adjoint of every active local
/// (they accumulate), and the result still verifies.
#[test]
fn initialize_derivatives_zeroes_active_locals_where_the_reverse_sweep_begins() {
    use xaifbooster::ir::{ArgumentValue, CfgVertexKind, Routine, Statement};
    for example in ["noDefaultInit_1", "noDefaultInit_argumentConversion_3", "noDefaultInit_cbSideEffects"] {
        let dir = common::shared_dir().join("corpus").join(example);
        let input = std::fs::read(dir.join("adm.in.xaif")).expect("input");
        let mut cg = xaif::read(&input, example, &ReadOptions::default()).expect("reads").call_graph;
        let config = Config {
            initialize_derivatives: true,
            adjoint: AdjointConfig { all_intents_inout: true, ..AdjointConfig::default() },
            ..Config::default()
        };
        xaifbooster::pipeline::adjoint(&mut cg, Catalogue::builtin(), &config).expect("adjoint");
        let mut zeroed_somewhere = 0;
        for (_, routine) in cg.routines.iter() {
            let Routine::ReplacementList(list) = routine else { continue };
            let adjoint = &list.replacements[2].graph;
            let Some((entry, _)) = adjoint.vertices.iter().find(|(_, v)| matches!(v.kind, CfgVertexKind::Entry)) else {
                continue;
            };
            let first = adjoint.edges.iter().find(|e| e.source == entry).expect("Entry leads somewhere").target;
            let CfgVertexKind::BasicBlock(block) = &adjoint.vertices[first].kind else {
                panic!("{example}: a block after the adjoint's Entry");
            };
            let zeroed: Vec<String> = block
                .statements
                .iter()
                .map(|s| match s {
                    Statement::InlinableSubroutineCall(c) if cg.name(c.subroutine_name) == "ZeroDeriv" => {
                        match &c.arguments[0].value {
                            ArgumentValue::Variable(r) => cg.symbol_name(r.base_symbol().expect("symbol")).to_owned(),
                            ArgumentValue::Constant(_) => panic!("{example}: ZeroDeriv of a constant"),
                        }
                    }
                    other => panic!("{example}: {other:?}"),
                })
                .collect();
            zeroed_somewhere += zeroed.len();
        }
        assert!(zeroed_somewhere > 0 || example != "noDefaultInit_1", "{example}");
        let original = read_program(&input, example).expect("lowers");
        let transformed = read_program(&xaif::write(&cg, &WriteOptions::default()), example).expect("lowers");
        for template in [Template::Joint, Template::Split] {
            let report =
                verify(&original, &transformed, &common::verify_config(&dir, &original, Mode::Adjoint, template));
            assert!(matches!(report.status, Status::Ok), "{example} {template:?}: {}", report.final_line());
        }
    }
}

/// The tape strategies over the corpus (joint output, run under both templates): each verifies,
/// under each template, on exactly the examples the factor strategy does, with no mismatch; and
/// `best` pushes at most 0.6 of the reference adjoints' words per reverse sweep (split) in total,
/// and no more than the reference in any example. Run with `--nocapture` for the per-example
/// table and the OK counts.
#[test]
fn tape_strategies_verify_and_best_and_balanced_tape_at_most_six_tenths_of_the_reference() {
    use xaifbooster::passes::adjoint::TapeStrategy;
    let strategies = [TapeStrategy::Factors, TapeStrategy::Values, TapeStrategy::Best, TapeStrategy::Balanced];
    let templates = [Template::Joint, Template::Split];
    // The examples that verify, per strategy and template.
    let mut verified: [[std::collections::BTreeSet<String>; 2]; 4] = Default::default();
    let mut inputs = 0;
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    // Examples where `best` pushes more than the reference.
    let mut longer: Vec<String> = Vec::new();
    // Totals over the examples where the reference and all our strategies verify.
    let (mut reference_total, mut totals) = (0u64, [0u64; 4]);
    let (mut untaped_reference, mut untaped) = (0u64, [0u64; 4]);
    // Floating-point operations of one adjoint sweep, over the same examples.
    let (mut reference_operations, mut operation_totals) = (0u64, [0u64; 4]);
    // Examples where an adjoint sweep of `balanced` computes more than the reference's.
    let mut busier: Vec<String> = Vec::new();
    for input in &common::corpus_files("adm.in.xaif") {
        let dir = input.parent().expect("example folder");
        let example = dir.file_name().expect("name").to_string_lossy().into_owned();
        let bytes = std::fs::read(input).expect("input");
        let Ok(read) = xaif::read(&bytes, &example, &ReadOptions::default()) else { continue };
        inputs += 1;
        let mut words = [None; 4];
        let mut operations = [0u64; 4];
        for (k, strategy) in strategies.into_iter().enumerate() {
            let mut cg = read.call_graph.clone();
            let config = Config {
                adjoint: AdjointConfig { all_intents_inout: true, tape: strategy, ..AdjointConfig::default() },
                ..Config::default()
            };
            let Ok(_) = xaifbooster::pipeline::adjoint(&mut cg, Catalogue::builtin(), &config) else { continue };
            let output = xaif::write(&cg, &WriteOptions::default());
            for (t, template) in templates.into_iter().enumerate() {
                let ours = report(dir, &output, template);
                match ours.status {
                    Status::Ok => {
                        verified[k][t].insert(example.clone());
                        if template == Template::Split {
                            words[k] = Some(ours.tape.total());
                            operations[k] = ours.operations.adjoint_sweep();
                        }
                    }
                    Status::Mismatch(why) => problems.push(format!("{example} ({strategy:?}, {template:?}): {why}")),
                    Status::Unsupported(_) => {}
                }
            }
        }
        if words[0].is_some() && words.iter().any(Option::is_none) {
            problems.push(format!("{example}: verifies with factors but not with every strategy: {words:?}"));
        }
        let theirs = std::fs::read(dir.join("adm-split.ref.xaif")).ok().map(|b| report(dir, &b, Template::Split));
        let theirs = theirs.filter(|r| matches!(r.status, Status::Ok));
        let reference = theirs.as_ref().map(|r| r.tape.total());
        if let (Some(r), [Some(f), Some(v), Some(b), Some(c)]) = (reference, words) {
            let their_operations = theirs.as_ref().map_or(0, |r| r.operations.adjoint_sweep());
            reference_operations += their_operations;
            if operations[3] > their_operations {
                busier.push(format!("{example}: {} > {their_operations}", operations[3]));
            }
            for (total, count) in operation_totals.iter_mut().zip(operations) {
                *total += count;
            }
            if b > r || c > r {
                longer.push(format!("{example}: best {b}, balanced {c} > {r}"));
            }
            reference_total += r;
            totals[0] += f;
            totals[1] += v;
            totals[2] += b;
            totals[3] += c;
            rows.push(format!("{example:<32} {r:>9} {f:>9} {v:>9} {b:>9} {c:>9}"));
        } else if let [Some(f), Some(v), Some(b), Some(c)] = words {
            untaped[0] += f;
            untaped[1] += v;
            untaped[2] += b;
            untaped[3] += c;
            untaped_reference += 1;
            rows.push(format!("{example:<32} {:>9} {f:>9} {v:>9} {b:>9} {c:>9}", "-"));
        }
    }
    eprintln!("{:<32} {:>9} {:>9} {:>9} {:>9} {:>9}", "example", "reference", "factors", "values", "best", "balanced");
    for row in &rows {
        eprintln!("{row}");
    }
    eprintln!(
        "{:<32} {reference_total:>9} {:>9} {:>9} {:>9} {:>9}",
        "total (reference verifies)", totals[0], totals[1], totals[2], totals[3]
    );
    eprintln!(
        "{:<32} {:>9} {:>9} {:>9} {:>9} {:>9}",
        format!("total ({untaped_reference} others)"),
        "-",
        untaped[0],
        untaped[1],
        untaped[2],
        untaped[3]
    );
    let ratio = totals[2] as f64 / reference_total as f64;
    let balanced_ratio = totals[3] as f64 / reference_total as f64;
    eprintln!("best / reference = {ratio:.3}, balanced / reference = {balanced_ratio:.3}");
    eprintln!(
        "operations of one adjoint sweep (split, same examples): reference {reference_operations}, factors {}, \
         values {}, best {}, balanced {}",
        operation_totals[0], operation_totals[1], operation_totals[2], operation_totals[3]
    );
    eprintln!("balanced computes more than the reference in {} examples: {busier:?}", busier.len());
    for (t, template) in templates.into_iter().enumerate() {
        eprintln!(
            "{template:?}: OK of {inputs} inputs: factors {}, values {}, best {}, balanced {}",
            verified[0][t].len(),
            verified[1][t].len(),
            verified[2][t].len(),
            verified[3][t].len()
        );
    }
    assert!(problems.is_empty(), "{problems:#?}");
    for (t, template) in templates.into_iter().enumerate() {
        for k in 1..strategies.len() {
            let (factors, other) = (&verified[0][t], &verified[k][t]);
            assert!(
                factors == other,
                "{template:?}, {:?}: OK with factors only {:?}, OK with it only {:?}",
                strategies[k],
                factors.difference(other).collect::<Vec<_>>(),
                other.difference(factors).collect::<Vec<_>>()
            );
        }
    }
    assert!(rows.len() >= 160, "only {} examples verify with every strategy", rows.len());
    assert!(totals[2] <= totals[0] && totals[2] <= totals[1], "best is not the least: {totals:?}");
    assert!(ratio <= 0.6, "best tapes {ratio:.3} of the reference's words");
    assert!(longer.is_empty(), "best or balanced pushes more than the reference in {longer:?}");
    // The default: fewer words than the reference's and fewer operations per adjoint sweep.
    assert!(balanced_ratio <= 0.6, "balanced tapes {balanced_ratio:.3} of the reference's words");
    assert!(
        operation_totals[3] <= reference_operations,
        "balanced: {} operations per adjoint sweep, the reference {reference_operations}",
        operation_totals[3]
    );
}
