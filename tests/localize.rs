//! Locating a wrong derivative (`interp::localize`): the dual-number run of the original is
//! itself checked against the verified Jacobians of the corpus, localization must name nothing
//! where the derivatives are right, and through the binary `verify` must name the statement
//! (tangent) or the routine (adjoint) a mutation broke.

mod common;

use std::path::{Path, PathBuf};

use xaifbooster::interp::Template;
use xaifbooster::interp::localize::{self, Localization};
use xaifbooster::interp::verify::{Driver, DriverConfig, Mode, Status, VerifyConfig, read_program, verify};
use xaifbooster::passes::adjoint::AdjointConfig;
use xaifbooster::pipeline::Config;
use xaifbooster::xaif::intrinsics::Catalogue;
use xaifbooster::xaif::{self, ReadOptions, WriteOptions};

/// Our tangent (or joint adjoint, `-I`) output of a corpus example, or `None` when the
/// transformation refuses it.
fn transform(dir: &Path, mode: Mode) -> Option<Vec<u8>> {
    let name = if mode == Mode::Tangent { "tlm.in.xaif" } else { "adm.in.xaif" };
    let bytes = std::fs::read(dir.join(name)).ok()?;
    let mut cg = xaif::read(&bytes, name, &ReadOptions::default()).ok()?.call_graph;
    match mode {
        Mode::Tangent => {
            xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &Config::default()).ok()?;
        }
        Mode::Adjoint => {
            let config = Config {
                adjoint: AdjointConfig { all_intents_inout: true, ..AdjointConfig::default() },
                ..Config::default()
            };
            xaifbooster::pipeline::adjoint(&mut cg, Catalogue::builtin(), &config).ok()?;
        }
    }
    Some(xaif::write(&cg, &WriteOptions::default()))
}

fn example_dirs(input: &str) -> Vec<PathBuf> {
    common::corpus_files(input).iter().map(|f| f.parent().expect("example folder").to_owned()).collect()
}

fn name(dir: &Path) -> String {
    dir.file_name().expect("example folder").to_string_lossy().into_owned()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-8 * a.abs().max(b.abs()).max(1.0)
}

/// Localizes the tangent of every input direction of a verified example: each must find the
/// derivatives in agreement, else a failure is recorded. Returns the directions checked.
fn localized_to_nothing(
    example: &str,
    orig: &Driver<'_>,
    trans: &Driver<'_>,
    x: &[f64],
    rtol: f64,
    failures: &mut Vec<String>,
) -> usize {
    for direction in 0..orig.n {
        match localize::tangent(orig, trans, x, direction, rtol) {
            Localization::NotFound { reason } if reason.contains("agree") => {}
            other => failures.push(format!("{example}: direction {direction}: {other}")),
        }
    }
    orig.n
}

/// On every example whose tangent verifies, the original run with dual numbers gives the same
/// Jacobian as the tangent program (an independent check of the dual numbers: no
/// transformation is involved in them), and localization in every direction finds nothing.
#[test]
fn dual_numbers_agree_with_every_verified_tangent() {
    let (mut checked, mut directions) = (0, 0);
    let mut failures = Vec::new();
    for dir in example_dirs("tlm.in.xaif") {
        let example = name(&dir);
        let Some(output) = transform(&dir, Mode::Tangent) else { continue };
        let original = read_program(&std::fs::read(dir.join("tlm.in.xaif")).unwrap(), &example).expect("reads");
        let transformed = read_program(&output, &example).expect("output reads");
        let config = common::verify_config(&dir, &original, Mode::Tangent, Template::Joint);
        let report = verify(&original, &transformed, &config);
        if report.status != Status::Ok {
            continue;
        }
        assert!(report.localized.is_none(), "{example}: localized though OK");
        let orig = Driver::new(&original, &config.driver).expect("driver");
        let trans = Driver::new(&transformed, &config.driver).expect("driver");
        let x = orig.default_x();
        let dual = match localize::dual_jacobian(&orig, &x) {
            Ok(j) => j,
            Err(e) => {
                failures.push(format!("{example}: dual run fails: {e}"));
                continue;
            }
        };
        let verified = report.jacobian();
        assert_eq!(dual.len(), verified.len());
        if let Some(k) = (0..dual.len()).find(|&k| !close(dual[k], verified[k])) {
            failures.push(format!("{example}: entry {k}: dual {} vs verified {}", dual[k], verified[k]));
            continue;
        }
        checked += 1;
        directions += localized_to_nothing(&example, &orig, &trans, &x, config.rtol, &mut failures);
    }
    eprintln!("dual Jacobians checked on {checked} examples, {directions} directions localized to nothing");
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(checked >= 150, "only {checked} tangent-OK examples checked");
}

/// On every example whose adjoint verifies (joint or split template), every routine call
/// passes the dot-product test against exact tangents.
#[test]
fn every_routine_of_a_verified_adjoint_passes_the_dot_product_test() {
    let (mut checked, mut failures) = (0, Vec::new());
    for dir in example_dirs("adm.in.xaif") {
        let example = name(&dir);
        let Some(output) = transform(&dir, Mode::Adjoint) else { continue };
        let original = read_program(&std::fs::read(dir.join("adm.in.xaif")).unwrap(), &example).expect("reads");
        let transformed = read_program(&output, &example).expect("output reads");
        for template in [Template::Joint, Template::Split] {
            let config: VerifyConfig = common::verify_config(&dir, &original, Mode::Adjoint, template);
            if verify(&original, &transformed, &config).status != Status::Ok {
                continue;
            }
            let orig = Driver::new(&original, &config.driver).expect("driver");
            let adj = Driver::new(&transformed, &config.driver).expect("driver");
            match localize::adjoint(&orig, &adj, &orig.default_x(), config.rtol) {
                Localization::NotFound { reason } if reason.contains("passes") => checked += 1,
                other => failures.push(format!("{example} ({template:?}): {other}")),
            }
        }
    }
    eprintln!("per-routine dot-product tests pass on {checked} adjoint-OK examples and templates");
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(checked >= 300, "only {checked} adjoint-OK examples and templates checked");
}

/// The `verify` flags that call the top routine as `driver` does.
fn driver_flags(driver: &xaifbooster::interp::verify::DriverConfig) -> Vec<String> {
    use xaifbooster::interp::verify::ArgValue;
    let join = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    let mut flags = Vec::new();
    let mut push = |flag: &str, value: String| {
        flags.push(flag.to_owned());
        flags.push(value);
    };
    if let Some(entry) = &driver.entry {
        push("--entry", entry.clone());
    }
    if let Some(x) = &driver.x {
        push("--x", x.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(","));
    }
    if !driver.input_args.is_empty() {
        push("--inputs", join(&driver.input_args));
    }
    if !driver.output_args.is_empty() {
        push("--outputs", join(&driver.output_args));
    }
    if !driver.input_globals.is_empty() {
        push("--input-globals", driver.input_globals.join(","));
    }
    if !driver.output_globals.is_empty() {
        push("--output-globals", driver.output_globals.join(","));
    }
    for (position, value) in &driver.fixed_args {
        let value = match value {
            ArgValue::Int(i) => i.to_string(),
            ArgValue::Real(x) => format!("{x:?}"),
            ArgValue::Bool(b) => b.to_string(),
        };
        push("--arg", format!("{position}={value}"));
    }
    if let Some(n) = driver.n {
        push("--n", n.to_string());
    }
    if let Some(m) = driver.m {
        push("--m", m.to_string());
    }
    flags
}

/// `verify` through the binary on a transformed text: its exit status and standard output,
/// with standard error after a line `--- stderr`.
fn verify_binary(original: &Path, transformed: &str, mode: &str, flags: &[String], json: bool) -> (bool, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("mutant.xaif");
    std::fs::write(&path, transformed).expect("mutant written");
    let mut command = assert_cmd::Command::cargo_bin("xaifbooster").expect("binary");
    command.args(["verify", "-q", "--mode", mode, "--original"]).arg(original).arg("--transformed").arg(&path);
    command.args(flags);
    if json {
        command.arg("--json");
    }
    let output = command.output().expect("binary runs");
    let text =
        format!("{}--- stderr\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.success(), text)
}

/// Every `statement_id` a document spells.
fn statement_ids(text: &str) -> std::collections::HashSet<String> {
    text.split("statement_id=\"").skip(1).filter_map(|rest| rest.split('"').next()).map(str::to_owned).collect()
}

/// The value of attribute `name` in the start tag that begins at `tag`.
fn attribute<'t>(tag: &'t str, name: &str) -> Option<&'t str> {
    let tag = &tag[..tag.find('>')?];
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    tag[start..].split('"').next()
}

/// A propagator of a tangent output that a mutation may break, with the one original
/// statement whose derivative it sets.
struct Site {
    /// Byte range of the `DerivativePropagator` element.
    start: usize,
    end: usize,
    routine: String,
    statement: String,
}

/// The propagators that follow exactly one original assignment with an active left-hand
/// side since their basic block began, the last call or the last propagator (their stretch of
/// the block holds that one statement), in document order.
fn single_statement_sites(text: &str, original_ids: &std::collections::HashSet<String>) -> Vec<Site> {
    const OPEN: &str = "<xaif:DerivativePropagator>";
    const CLOSE: &str = "</xaif:DerivativePropagator>";
    let mut sites = Vec::new();
    let mut from = 0;
    while let Some(offset) = text[from..].find(OPEN) {
        let start = from + offset;
        let end = start + text[start..].find(CLOSE).expect("closed") + CLOSE.len();
        from = end;
        let block = text[..start].rfind("<xaif:BasicBlock ").expect("in a block");
        let stretch_start = [text[block..start].rfind(CLOSE), text[block..start].rfind("<xaif:SubroutineCall ")]
            .into_iter()
            .flatten()
            .max()
            .map_or(block, |k| block + k);
        let stretch = &text[stretch_start..start];
        let originals: Vec<&str> = stretch
            .match_indices("<xaif:Assignment ")
            .map(|(k, _)| &stretch[k..])
            .filter(|tag| attribute(tag, "statement_id").is_some_and(|id| original_ids.contains(id)))
            .collect();
        let [assignment] = originals[..] else { continue };
        let lhs = &assignment[assignment.find("<xaif:AssignmentLHS").expect("a left-hand side")..];
        if attribute(lhs, "active") != Some("true") {
            continue;
        }
        let cfg = text[..start].rfind("<xaif:ControlFlowGraph ").expect("in a routine");
        sites.push(Site {
            start,
            end,
            routine: attribute(&text[cfg..], "symbol_id").expect("routine symbol").to_owned(),
            statement: attribute(assignment, "statement_id").expect("id").to_owned(),
        });
    }
    sites
}

/// The three mutations of a propagator: its first partial (the `A` of a `Sax`/`Saxpy` term)
/// replaced by 2.5, its first `SetDeriv` made a `SetNegDeriv`, and the propagator dropped
/// (when no other propagator follows in its stretch).
fn mutations(text: &str, site: &Site) -> Vec<(&'static str, String)> {
    let element = &text[site.start..site.end];
    let splice = |new: &str| format!("{}{new}{}", &text[..site.start], &text[site.end..]);
    let mut out = Vec::new();
    if let (Some(a), Some(a_end)) = (element.find("<xaif:A>"), element.find("</xaif:A>")) {
        let changed = format!(
            "{}<xaif:A><xaif:Constant vertex_id=\"1\" type=\"real\" value=\"2.5\"/>{}",
            &element[..a],
            &element[a_end..]
        );
        out.push(("partial", splice(&changed)));
    }
    if element.contains("<xaif:SetDeriv>") {
        let changed = element.replacen("<xaif:SetDeriv>", "<xaif:SetNegDeriv>", 1).replacen(
            "</xaif:SetDeriv>",
            "</xaif:SetNegDeriv>",
            1,
        );
        out.push(("sign", splice(&changed)));
    }
    // Dropped, the propagator's stretch would merge with the next one, which then holds two
    // original statements: only a propagator that ends its stretch of the block is dropped.
    let rest = &text[site.end..];
    let block_end = rest.find("</xaif:BasicBlock>").unwrap_or(rest.len());
    let next_call = rest[..block_end].find("<xaif:SubroutineCall ").unwrap_or(block_end);
    if !rest[..next_call].contains("<xaif:DerivativePropagator>") {
        out.push(("drop", splice("")));
    }
    out
}

/// Mutants of our tangent outputs, by the rule above, over every example whose tangent
/// verifies: wherever `verify` then finds a mismatch, it must name the mutated statement and
/// its routine.
#[test]
fn verify_names_the_statement_whose_propagator_was_broken() {
    let (mut caught, mut harmless) = (0, 0);
    let mut wrong = Vec::new();
    let mut by_kind: std::collections::BTreeMap<&str, usize> = Default::default();
    for dir in example_dirs("tlm.in.xaif") {
        let example = name(&dir);
        let Some(output) = transform(&dir, Mode::Tangent) else { continue };
        let input = std::fs::read(dir.join("tlm.in.xaif")).unwrap();
        let original = read_program(&input, &example).expect("reads");
        let config = common::verify_config(&dir, &original, Mode::Tangent, Template::Joint);
        let transformed = read_program(&output, &example).expect("output reads");
        if verify(&original, &transformed, &config).status != Status::Ok {
            continue;
        }
        let text = String::from_utf8(output).expect("UTF-8");
        let ids = statement_ids(&String::from_utf8_lossy(&input));
        let Some(site) = single_statement_sites(&text, &ids).into_iter().next() else { continue };
        let flags = driver_flags(&config.driver);
        // The source line the front end gave the statement, which the JSON must carry.
        let input_text = String::from_utf8_lossy(&input);
        let tag = format!("statement_id=\"{}\"", site.statement);
        let routine = input_text
            .match_indices("<xaif:ControlFlowGraph ")
            .map(|(k, _)| &input_text[k..])
            .find(|cfg| attribute(cfg, "symbol_id") == Some(site.routine.as_str()))
            .expect("the routine in the input");
        let routine = &routine[..routine.find("</xaif:ControlFlowGraph>").expect("closed")];
        let line = routine.find(&tag).and_then(|k| {
            let start = routine[..k].rfind('<').expect("in a tag");
            attribute(&routine[start..], "lineNumber").map(|l| l.parse::<u64>().expect("a line number"))
        });
        for (kind, mutant) in mutations(&text, &site) {
            // The partial mutants are judged by `--json`, the others by the report's text.
            let json = kind == "partial";
            let (ok, stdout) = verify_binary(&dir.join("tlm.in.xaif"), &mutant, "tangent", &flags, json);
            if ok {
                harmless += 1;
                continue;
            }
            let expected = format!("first wrong derivative: routine {}, statement '{}'", site.routine, site.statement);
            let named = if json {
                let value: serde_json::Value =
                    serde_json::from_str(stdout.split("--- stderr").next().unwrap_or_default().trim())
                        .expect("verify --json prints JSON");
                let l = &value["localized"];
                l["kind"] == "statement"
                    && l["quantity"] == "derivative"
                    && l["routine"] == site.routine.as_str()
                    && l["statement"] == site.statement.as_str()
                    && l["line"].as_u64() == line
            } else {
                // The report names it, and a message on standard error locates it in the input.
                stdout.lines().any(|l| l.starts_with(&expected))
                    && stdout
                        .lines()
                        .any(|l| l.contains("tlm.in.xaif:") && l.contains(": Assignment: first wrong derivative: "))
            };
            if named {
                caught += 1;
                *by_kind.entry(kind).or_default() += 1;
            } else {
                wrong.push(format!("{example} ({kind}): expected \"{expected}\", got:\n{stdout}"));
            }
        }
    }
    eprintln!("mutants named right: {caught} {by_kind:?}, harmless (verify OK): {harmless}");
    assert!(wrong.is_empty(), "{} mutants misnamed:\n{}", wrong.len(), wrong.join("\n"));
    assert!(caught >= 150, "only {caught} mutants caught");
}

/// The first derivative operation of each routine's adjoint sweep (placeholder 3) in an
/// adjoint output: the routine's name and the operation's byte range.
fn adjoint_sites(text: &str) -> Vec<(String, usize, usize)> {
    const OPERATIONS: [&str; 5] = ["Saxpy", "Sax", "IncDeriv", "DecDeriv", "SetDeriv"];
    let mut sites = Vec::new();
    for (list, _) in text.match_indices("<xaif:ReplacementList ") {
        let routine = attribute(&text[list..], "symbol_id").expect("routine symbol").to_owned();
        let body = &text[list..list + text[list..].find("</xaif:ReplacementList>").expect("closed")];
        let Some(start) = body.find("<xaif:Replacement placeholder=\"3\">") else { continue };
        let sweep = &body[start..start + body[start..].find("</xaif:Replacement>").expect("closed")];
        let first = sweep
            .match_indices("<xaif:InlinableSubroutineCall ")
            .find(|(k, _)| attribute(&sweep[*k..], "subroutine_name").is_some_and(|name| OPERATIONS.contains(&name)));
        if let Some((k, _)) = first {
            let begin = list + start + k;
            let end = begin + text[begin..].find("</xaif:InlinableSubroutineCall>").expect("closed");
            sites.push((routine, begin, end));
        }
    }
    sites
}

/// The operation broken: `IncDeriv` and `DecDeriv` swapped, `SetDeriv` negated, the factor of
/// a `Saxpy`/`Sax` (its first argument) replaced by 2.5.
fn break_adjoint_operation(text: &str, begin: usize, end: usize) -> String {
    let element = &text[begin..end];
    let name = attribute(element, "subroutine_name").expect("name");
    let changed = match name {
        "IncDeriv" => element.replacen("\"IncDeriv\"", "\"DecDeriv\"", 1),
        "DecDeriv" => element.replacen("\"DecDeriv\"", "\"IncDeriv\"", 1),
        "SetDeriv" => element.replacen("\"SetDeriv\"", "\"SetNegDeriv\"", 1),
        _ => {
            let first = element.find("<xaif:Argument position=\"1\">").expect("a factor");
            let close = first + element[first..].find("</xaif:Argument>").expect("closed");
            format!(
                "{}<xaif:Argument position=\"1\"><xaif:Constant vertex_id=\"1\" type=\"real\" value=\"2.5\"/>{}",
                &element[..first],
                &element[close..]
            )
        }
    };
    format!("{}{changed}{}", &text[..begin], &text[end..])
}

/// In every example whose adjoint (`-I`) verifies, under the joint and the split template, and
/// has at least two routines with adjoint code, each routine's adjoint broken in turn:
/// wherever `verify` then finds a mismatch, its JSON must name that routine.
#[test]
fn verify_names_the_routine_whose_adjoint_was_broken() {
    let (mut caught, mut harmless, mut examples) = (0, 0, 0);
    let mut wrong = Vec::new();
    for dir in example_dirs("adm.in.xaif") {
        let example = name(&dir);
        let Some(output) = transform(&dir, Mode::Adjoint) else { continue };
        let original = read_program(&std::fs::read(dir.join("adm.in.xaif")).unwrap(), &example).expect("reads");
        let config = common::verify_config(&dir, &original, Mode::Adjoint, Template::Joint);
        let text = String::from_utf8(output).expect("UTF-8");
        let sites = adjoint_sites(&text);
        if sites.len() < 2 {
            continue;
        }
        let transformed = read_program(text.as_bytes(), &example).expect("output reads");
        for (template, word) in [(Template::Joint, "joint"), (Template::Split, "split")] {
            let config = VerifyConfig { driver: DriverConfig { template, ..config.driver.clone() }, ..config.clone() };
            if verify(&original, &transformed, &config).status != Status::Ok {
                continue;
            }
            examples += 1;
            let mut flags = driver_flags(&config.driver);
            flags.extend(["--template".to_owned(), word.to_owned()]);
            for (routine, begin, end) in &sites {
                let mutant = break_adjoint_operation(&text, *begin, *end);
                let (ok, stdout) = verify_binary(&dir.join("adm.in.xaif"), &mutant, "adjoint", &flags, true);
                if ok {
                    harmless += 1;
                    continue;
                }
                let json: serde_json::Value =
                    serde_json::from_str(stdout.split("--- stderr").next().unwrap_or_default().trim())
                        .expect("verify --json prints JSON");
                let localized = &json["localized"];
                if localized["kind"] == "routine" && localized["routine"] == routine.as_str() {
                    caught += 1;
                } else {
                    wrong.push(format!("{example} ({word}): broke {routine}, verify says {localized}"));
                }
            }
        }
    }
    eprintln!(
        "{examples} multi-routine adjoints and templates: broken routines named right {caught}, harmless {harmless}"
    );
    assert!(wrong.is_empty(), "{} misnamed:\n{}", wrong.len(), wrong.join("\n"));
    assert!(caught >= 150, "only {caught} broken routines caught");
}

/// The first original assignment of a tangent output whose right-hand side holds a real
/// constant: the routine, the statement id and the byte range of the constant's `value`.
fn constant_site(
    text: &str,
    original_ids: &std::collections::HashSet<String>,
) -> Option<(String, String, usize, usize)> {
    for (k, _) in text.match_indices("<xaif:Assignment ") {
        let Some(id) = attribute(&text[k..], "statement_id").filter(|id| original_ids.contains(*id)) else { continue };
        let end = k + text[k..].find("</xaif:Assignment>")?;
        let rhs = k + text[k..end].find("<xaif:AssignmentRHS>")?;
        let Some(constant) = text[rhs..end].match_indices("<xaif:Constant ").map(|(c, _)| rhs + c).find(|&c| {
            let tag = &text[c..];
            attribute(tag, "type") == Some("real")
                && attribute(tag, "value").is_some_and(|v| v.replace(['d', 'D'], "e").parse::<f64>().is_ok())
        }) else {
            continue;
        };
        let value = constant + text[constant..].find(" value=\"")? + " value=\"".len();
        let value_end = value + text[value..].find('"')?;
        let cfg = text[..k].rfind("<xaif:ControlFlowGraph ")?;
        return Some((attribute(&text[cfg..], "symbol_id")?.to_owned(), id.to_owned(), value, value_end));
    }
    None
}

/// A constant of an original statement changed in the tangent output (every tangent-OK
/// example's first such statement): where `verify` then finds a mismatch, it must name that
/// statement's value as the first thing wrong.
#[test]
fn verify_names_the_statement_whose_value_was_changed() {
    let (mut caught, mut harmless) = (0, 0);
    let mut wrong = Vec::new();
    for dir in example_dirs("tlm.in.xaif") {
        let example = name(&dir);
        let Some(output) = transform(&dir, Mode::Tangent) else { continue };
        let input = std::fs::read(dir.join("tlm.in.xaif")).unwrap();
        let original = read_program(&input, &example).expect("reads");
        let config = common::verify_config(&dir, &original, Mode::Tangent, Template::Joint);
        let transformed = read_program(&output, &example).expect("output reads");
        if verify(&original, &transformed, &config).status != Status::Ok {
            continue;
        }
        let text = String::from_utf8(output).expect("UTF-8");
        let ids = statement_ids(&String::from_utf8_lossy(&input));
        let Some((routine, statement, start, end)) = constant_site(&text, &ids) else { continue };
        let value: f64 = text[start..end].replace(['d', 'D'], "e").parse().expect("a real");
        let mutant = format!("{}{:?}{}", &text[..start], value * 1.5 + 0.25, &text[end..]);
        let (ok, stdout) =
            verify_binary(&dir.join("tlm.in.xaif"), &mutant, "tangent", &driver_flags(&config.driver), false);
        if ok {
            harmless += 1;
            continue;
        }
        let expected = format!("first wrong value: routine {routine}, statement '{statement}'");
        if stdout.lines().any(|l| l.starts_with(&expected)) {
            caught += 1;
        } else {
            wrong.push(format!("{example}: expected \"{expected}\", got:\n{stdout}"));
        }
    }
    eprintln!("changed values named right: {caught}, harmless: {harmless}");
    assert!(wrong.is_empty(), "{} misnamed:\n{}", wrong.len(), wrong.join("\n"));
    assert!(caught >= 20, "only {caught} changed values caught");
}

/// Statement-level preaccumulation (`-S`) puts a propagator after every statement: on every
/// example whose `-S` tangent verifies, localization in every direction finds nothing.
#[test]
fn statement_level_tangents_that_verify_localize_to_nothing() {
    use xaifbooster::passes::tangent::{Preaccumulation, TangentConfig};
    let config =
        Config::with_tangent(TangentConfig { preaccumulation: Preaccumulation::Statement, ..TangentConfig::default() });
    let (mut directions, mut failures) = (0, Vec::new());
    for dir in example_dirs("tlm.in.xaif") {
        let example = name(&dir);
        let input = std::fs::read(dir.join("tlm.in.xaif")).unwrap();
        let Ok(read) = xaif::read(&input, &example, &ReadOptions::default()) else { continue };
        let mut cg = read.call_graph;
        if xaifbooster::pipeline::tangent(&mut cg, Catalogue::builtin(), &config).is_err() {
            continue;
        }
        let output = xaif::write(&cg, &WriteOptions::default());
        let original = read_program(&input, &example).expect("reads");
        let transformed = read_program(&output, &example).expect("output reads");
        let verify_config = common::verify_config(&dir, &original, Mode::Tangent, Template::Joint);
        if verify(&original, &transformed, &verify_config).status != Status::Ok {
            continue;
        }
        let orig = Driver::new(&original, &verify_config.driver).expect("driver");
        let trans = Driver::new(&transformed, &verify_config.driver).expect("driver");
        directions +=
            localized_to_nothing(&example, &orig, &trans, &orig.default_x(), verify_config.rtol, &mut failures);
    }
    eprintln!("statement-level tangents: {directions} directions localized to nothing");
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(directions >= 400, "only {directions} directions checked");
}

/// `verify --dot`: with our tangent verified and a routine's adjoint broken (as above, joint
/// template), a failing dot-product test names the broken routine. On the examples whose
/// tangent and adjoint inputs are one document (the original of both).
#[test]
fn a_failing_dot_product_test_names_the_broken_routine() {
    let (mut caught, mut wrong) = (0, Vec::new());
    for dir in example_dirs("adm.in.xaif") {
        let example = name(&dir);
        if std::fs::read(dir.join("tlm.in.xaif")).ok() != std::fs::read(dir.join("adm.in.xaif")).ok() {
            continue;
        }
        let (Some(tangent), Some(adjoint)) = (transform(&dir, Mode::Tangent), transform(&dir, Mode::Adjoint)) else {
            continue;
        };
        let text = String::from_utf8(adjoint).expect("UTF-8");
        let sites = adjoint_sites(&text);
        if sites.len() < 2 {
            continue;
        }
        let original = read_program(&std::fs::read(dir.join("tlm.in.xaif")).unwrap(), &example).expect("reads");
        let config = common::verify_config(&dir, &original, Mode::Tangent, Template::Joint);
        let transformed = read_program(&tangent, &example).expect("output reads");
        if verify(&original, &transformed, &config).status != Status::Ok {
            continue;
        }
        let temp = tempfile::tempdir().expect("temp dir");
        let tangent_path = temp.path().join("tangent.xaif");
        std::fs::write(&tangent_path, &tangent).expect("tangent written");
        for (routine, begin, end) in &sites {
            let mutant = break_adjoint_operation(&text, *begin, *end);
            let mut flags = driver_flags(&config.driver);
            let mutant_path = temp.path().join("adjoint.xaif");
            std::fs::write(&mutant_path, &mutant).expect("mutant written");
            flags.extend(["--dot".to_owned(), mutant_path.display().to_string()]);
            let tangent_text = String::from_utf8_lossy(&tangent).into_owned();
            let (ok, stdout) = verify_binary(&dir.join("tlm.in.xaif"), &tangent_text, "tangent", &flags, true);
            if ok {
                continue;
            }
            let json: serde_json::Value =
                serde_json::from_str(stdout.split("--- stderr").next().unwrap_or_default().trim())
                    .expect("verify --json prints JSON");
            if !json["reason"].as_str().is_some_and(|r| r.starts_with("dot-product test")) {
                continue;
            }
            let localized = &json["localized"];
            if localized["kind"] == "routine" && localized["routine"] == routine.as_str() {
                caught += 1;
            } else {
                wrong.push(format!("{example}: broke {routine}, verify says {localized}"));
            }
        }
    }
    eprintln!("failing dot-product tests naming the broken routine: {caught}");
    assert!(wrong.is_empty(), "{} misnamed:\n{}", wrong.len(), wrong.join("\n"));
    assert!(caught >= 40, "only {caught} failing dot-product tests");
}
