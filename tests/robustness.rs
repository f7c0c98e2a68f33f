//! Inputs that once crashed, hung or exhausted the engine, or made it write schema-invalid
//! output (issue 13), run through the real binary: every subcommand either succeeds with valid
//! output or exits 1 with a located message (`file:line:column: element: message`), never
//! panics, aborts or hangs. The small inputs are `testdata/robustness/*.xaif` (written by
//! `scripts/gen_robustness_cases.py`); the large ones are made here.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How a case reads: the first error every subcommand reports, or the warnings it reads with.
#[derive(Clone, Copy)]
enum Reading {
    /// Refused by every subcommand with this finding (after the file name).
    Refused(&'static str),
    /// Read (identity and tangent write schema-valid outputs) with exactly these warnings.
    Read(&'static [&'static str]),
}

use Reading::*;

/// Every case of `testdata/robustness`, how it reads, and what `run` says (`None`: it runs).
const CASES: &[(&str, Reading, Option<&str>)] = &[
    // 1. panics in tangent
    (
        "intrinsic_missing_operand",
        Refused("40:11: Intrinsic: intrinsic 'mul_scal_scal' takes 2 operands, vertex '3' has 1"),
        None,
    ),
    ("expression_cycle", Refused("40:11: Intrinsic: vertex '2' is its own operand, through a cycle"), None),
    ("expression_self_loop", Refused("43:11: ExpressionEdge: vertex '2' is its own operand"), None),
    // 2. byte-order marks: skipped, positions counted after them
    ("bom_without_declaration", Read(&[]), None),
    ("bom_with_declaration", Refused("3:3: Bogus: unexpected element in CallGraph"), None),
    // 3. run and verify
    (
        "duplicate_argument_position",
        Refused("30:7: ArgumentSymbolReference: position 1 is taken twice in the ArgumentList"),
        None,
    ),
    (
        "array_size_overflow",
        Read(&[]),
        Some("array k: memory limit of 2 GiB exceeded: 4611686018427387904 more elements would not fit"),
    ),
    (
        "array_huge",
        Read(&[]),
        Some("array k: memory limit of 2 GiB exceeded: 100000000000 more elements would not fit"),
    ),
    (
        "global_array_huge",
        Read(&[]),
        Some("7:9: Symbol: array g: memory limit of 2 GiB exceeded: 100000000000 more elements would not fit"),
    ),
    (
        "array_bounds_overflow",
        Read(&[]),
        Some("array k: the bounds -9223372036854775808:9223372036854775807 span more than 2^63 elements"),
    ),
    ("recursive_routine", Read(&[]), Some("recursion too deep: ")),
    // 4. a block that is its own successor: stopped on arrival, located
    (
        "cfg_self_loop",
        Read(&[
            "32:5: warning: Entry: no path leads from vertex '1' to Exit",
            "33:5: warning: BasicBlock: no path leads from vertex '2' to Exit",
            "49:5: warning: Exit: no path from Entry reaches vertex '3'",
        ]),
        Some("endless loop: no path leads from this vertex to Exit (at routine head, vertex '1')"),
    ),
    // 5. accepted, and now written schema-valid
    (
        "duplicate_statement_id",
        Read(&["35:7: warning: Assignment: duplicate statement_id 's1' in ControlFlowGraph (renamed to 's1_2')"]),
        None,
    ),
    (
        "duplicate_call_graph_edge_id",
        Read(&["54:3: warning: CallGraphEdge: duplicate edge_id '1' in CallGraph (renamed to '1_2')"]),
        None,
    ),
    (
        "argument_position_overflow",
        Refused(
            "30:7: ArgumentSymbolReference: attribute 'position' has value '4294967296', expected a positive integer \
             below 2^32",
        ),
        None,
    ),
    ("statement_id_like_a_temporary", Read(&[]), None),
    ("line_number_overflow", Read(&[]), None),
    ("alias_key_overflow", Read(&[]), None),
    (
        "alias_key_zero_undefined",
        Read(&[
            "18:3: warning: AliasSetMap: no AliasSet with key 0, which every alias attribute defaults to (an empty one \
             is added)",
        ]),
        None,
    ),
    // 6. the semantic checks
    (
        "expression_two_roots",
        Refused(
            "40:11: Constant: vertex '2' is a second root beside vertex '1': every vertex but the expression's value \
             must be an operand",
        ),
        None,
    ),
    ("expression_position_gap", Refused("43:11: ExpressionEdge: the operands of vertex '3' skip position 2"), None),
    (
        "expression_position_repeated",
        Refused("43:11: ExpressionEdge: position 1 is taken twice among the operands of vertex '3'"),
        None,
    ),
    (
        "intrinsic_extra_operand",
        Refused("41:11: Intrinsic: intrinsic 'sin_scal' takes 1 operand, vertex '3' has 2"),
        None,
    ),
    (
        "operand_of_a_variable",
        Refused("39:11: VariableReference: a VariableReference takes no operands, vertex '1' has 1"),
        None,
    ),
    ("scope_cycle", Refused("17:5: ScopeEdge: scope edges form a cycle through scope '1'"), None),
    ("unreachable_block", Read(&["33:5: warning: BasicBlock: no path from Entry reaches vertex '2'"]), None),
    // Read, but not differentiable: tangent says where (see `tangent_refusals_are_located`).
    ("unknown_intrinsic", Read(&[]), Some("unsupported: intrinsic frobnicate_scal")),
    ("call_argument_without_formal", Read(&[]), Some("")),
];

/// Runs the binary in `dir` and waits at most `limit` (a hang is a failure).
fn xaifbooster(dir: &Path, args: &[&str], limit: Duration) -> common::Guarded {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xaifbooster"));
    command.current_dir(dir).args(args);
    let outcome = common::run_guarded(command, &format!("xaifbooster {}", args.join(" ")), limit);
    // Exit codes 0 and 1 only: no panic (101), no abort or signal (no code).
    assert!(
        matches!(outcome.code, Some(0 | 1)) && !outcome.stderr.contains("panicked"),
        "xaifbooster {}: exit {:?}\n{}",
        args.join(" "),
        outcome.code,
        outcome.stderr
    );
    outcome
}

const LIMIT: Duration = Duration::from_secs(120);

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/robustness")
}

/// Whether a line is a located finding: `file:line:column: element: message`.
fn is_located(line: &str, file: &str) -> bool {
    let Some(rest) = line.strip_prefix(file).and_then(|r| r.strip_prefix(':')) else { return false };
    let mut parts = rest.splitn(3, ':');
    let number = |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    number(parts.next()) && number(parts.next()) && parts.next().is_some_and(|m| m.starts_with(' ') && m.contains(": "))
}

/// Asserts that a run failed with the located finding `expected` (after `file:`).
fn assert_refused(outcome: &common::Guarded, file: &str, expected: &str, what: &str) {
    let wanted = format!("{file}:{expected}");
    assert_eq!(outcome.code, Some(1), "{what}: accepted; stderr: {}", outcome.stderr);
    assert!(outcome.stderr.lines().any(|l| l == wanted), "{what}: wanted {wanted}\nstderr: {}", outcome.stderr);
    assert!(outcome.stderr.lines().all(|l| is_located(l, file)), "{what}: unlocated lines in {}", outcome.stderr);
}

#[test]
fn every_case_is_listed_once() {
    let listed: Vec<&str> = CASES.iter().map(|(name, ..)| *name).collect();
    let mut on_disk: Vec<String> = common::files_in(&cases_dir(), "xaif")
        .iter()
        .map(|p| p.file_stem().expect("name").to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, on_disk);
}

/// Validate, identity, tangent, run and verify on every case: a refused case is refused by
/// each with the same located finding; a read case gives schema-valid outputs and exactly its
/// warnings.
#[test]
fn every_subcommand_reads_every_case_alike() {
    let dir = cases_dir();
    let out = tempfile::tempdir().expect("temp dir");
    let mut written = Vec::new();
    for &(name, reading, _) in CASES {
        let file = format!("{name}.xaif");
        let validate = xaifbooster(&dir, &["validate", &file], LIMIT);
        let identity_out = out.path().join(format!("{name}.identity.xaif"));
        let tangent_out = out.path().join(format!("{name}.tangent.xaif"));
        let identity = xaifbooster(&dir, &["identity", "-i", &file, "-o", identity_out.to_str().expect("path")], LIMIT);
        let tangent = xaifbooster(&dir, &["tangent", "-i", &file, "-o", tangent_out.to_str().expect("path")], LIMIT);
        let run = xaifbooster(&dir, &["run", &file], LIMIT);
        let verify =
            xaifbooster(&dir, &["verify", "--original", &file, "--transformed", &file, "--mode", "tangent"], LIMIT);
        match reading {
            Refused(expected) => {
                for (outcome, what) in [
                    (&validate, "validate"),
                    (&identity, "identity"),
                    (&tangent, "tangent"),
                    (&run, "run"),
                    (&verify, "verify"),
                ] {
                    assert_refused(outcome, &file, expected, &format!("{name}: {what}"));
                }
                assert!(!identity_out.exists() && !tangent_out.exists(), "{name}: output written");
            }
            Read(warnings) => {
                let wanted: Vec<String> = warnings.iter().map(|w| format!("{file}:{w}")).collect();
                assert_eq!(validate.code, Some(0), "{name}: validate: {}", validate.stderr);
                let found: Vec<&str> = validate.stderr.lines().collect();
                assert_eq!(found, wanted, "{name}: validate's findings");
                assert_eq!(identity.code, Some(0), "{name}: identity: {}", identity.stderr);
                assert!(wanted.iter().all(|w| identity.stderr.contains(w.as_str())), "{name}: {}", identity.stderr);
                written.push(identity_out);
                if name != "unknown_intrinsic" && name != "call_argument_without_formal" {
                    assert_eq!(tangent.code, Some(0), "{name}: tangent: {}", tangent.stderr);
                    written.push(tangent_out);
                }
            }
        }
    }
    let failures = common::xmllint_failures(&written);
    assert!(failures.is_empty(), "schema-invalid outputs: {failures:#?}");
}

#[test]
fn run_stops_with_a_reason_and_where() {
    let dir = cases_dir();
    for &(name, reading, run) in CASES {
        let file = format!("{name}.xaif");
        let outcome = xaifbooster(&dir, &["run", &file], LIMIT);
        match (reading, run) {
            (Refused(_), _) => {}
            (Read(_), None) => assert_eq!(outcome.code, Some(0), "{name}: {}", outcome.stderr),
            (Read(_), Some(reason)) => {
                assert_eq!(outcome.code, Some(1), "{name}: ran: {}", outcome.stdout);
                assert!(outcome.stderr.contains(reason), "{name}: wanted {reason}\nstderr: {}", outcome.stderr);
                // Located at the statement or vertex where execution stopped.
                // (The driver inferred for the call is a note, not a finding.)
                let mut findings =
                    outcome.stderr.lines().filter(|l| !l.starts_with("xaifbooster: note: driver inferred"));
                assert!(findings.all(|l| is_located(l, &file)), "{name}: {}", outcome.stderr);
            }
        }
    }
    // The endless loop stops at once, not at the step limit.
    let endless = xaifbooster(&dir, &["run", "cfg_self_loop.xaif"], LIMIT);
    assert!(endless.took < Duration::from_secs(10), "took {:?}", endless.took);
    let recursion = xaifbooster(&dir, &["run", "recursive_routine.xaif"], LIMIT);
    let finding = recursion.stderr.lines().find(|l| !l.starts_with("xaifbooster: note: driver inferred")).unwrap_or("");
    assert!(finding.starts_with("recursive_routine.xaif:34:7: SubroutineCall: recursion too deep: "), "{finding}");
    assert!(recursion.stderr.contains("(at routine head, vertex '2', statement 'c1')"), "{}", recursion.stderr);
    // Driver flags that do not fit the routine's interface are located at the routine.
    for command in ["run", "verify"] {
        let mut args = vec![command];
        if command == "verify" {
            args.extend(["--original", "array_huge.xaif", "--transformed", "array_huge.xaif", "--mode", "tangent"]);
        } else {
            args.push("array_huge.xaif");
        }
        args.extend(["--inputs", "1", "--outputs", "7"]);
        let outcome = xaifbooster(&dir, &args, LIMIT);
        assert_eq!(outcome.code, Some(1), "{command}: {}", outcome.stdout);
        assert!(
            outcome
                .stderr
                .lines()
                .any(|l| l.starts_with("array_huge.xaif:27:3: ControlFlowGraph: ")
                    && l.contains("head has no argument 7")),
            "{command}: {}",
            outcome.stderr
        );
    }
}

#[test]
fn the_memory_limit_can_be_set() {
    let dir = cases_dir();
    let small = xaifbooster(&dir, &["run", "bom_without_declaration.xaif", "--max-memory", "64"], LIMIT);
    assert_eq!(small.code, Some(1));
    assert!(small.stderr.contains("exceed the memory limit of 64 bytes"), "{}", small.stderr);
    let enough = xaifbooster(&dir, &["run", "bom_without_declaration.xaif", "--max-memory", "1M"], LIMIT);
    assert_eq!(enough.code, Some(0), "{}", enough.stderr);
    let bad = Command::new(env!("CARGO_BIN_EXE_xaifbooster"))
        .current_dir(&dir)
        .args(["run", "bom_without_declaration.xaif", "--max-memory", "lots"])
        .output()
        .expect("runs");
    assert_eq!(bad.status.code(), Some(2), "a bad size is a usage error");
}

/// `testdata/interp/constructs.xaif` in a fresh directory, and a copy whose inner loop (the
/// ForLoop at vertex '4' of `sub`, line 66) adds 0 to its counter: it never ends.
fn loops_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let constructs = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/interp/constructs.xaif");
    let text = std::fs::read_to_string(constructs).expect("constructs.xaif");
    let update = text.find(r#"statement_id="s3b""#).expect("the inner loop's update");
    let one = update + text[update..].find(r#"value="1""#).expect("its constant");
    let endless = format!("{}value=\"0\"{}", &text[..one], &text[one + r#"value="1""#.len()..]);
    std::fs::write(dir.path().join("constructs.xaif"), text).expect("write");
    std::fs::write(dir.path().join("endless.xaif"), endless).expect("write");
    dir
}

/// The located finding of a run stopped by the step limit in the loop at vertex '4' of `sub`.
fn assert_loop_stopped(outcome: &common::Guarded, file: &str, line_column: &str, steps: u64) {
    assert_eq!(outcome.code, Some(1), "{file}: ran: {}", outcome.stdout);
    let (at, wanted) = (
        format!("{file}:{line_column}: ForLoop: "),
        format!(
            "the loop at vertex '4' of routine sub did not end within the step limit: stopped after {steps} steps \
             (--max-steps)"
        ),
    );
    assert!(
        outcome.stderr.lines().any(|l| l.starts_with(&at) && l.contains(&wanted)),
        "wanted {at}…{wanted}\nstderr: {}",
        outcome.stderr
    );
}

#[test]
fn a_loop_that_never_ends_stops_at_the_step_limit_named() {
    let dir = loops_dir();
    let default = xaifbooster::interp::exec::DEFAULT_MAX_STEPS;
    let endless = xaifbooster(dir.path(), &["run", "endless.xaif"], LIMIT);
    assert_loop_stopped(&endless, "endless.xaif", "66:1", default);
    // verify stops in the original alike.
    let tangent = xaifbooster(dir.path(), &["tangent", "endless.xaif", "-o", "endless_tlm.xaif"], LIMIT);
    assert_eq!(tangent.code, Some(0), "{}", tangent.stderr);
    let args = ["verify", "--original", "endless.xaif", "--transformed", "endless_tlm.xaif", "--mode", "tangent"];
    assert_loop_stopped(&xaifbooster(dir.path(), &args, LIMIT), "endless.xaif", "66:1", default);
    // In an adjoint the loop is located in the transformed file, under either template.
    let adjoint = xaifbooster(dir.path(), &["adjoint", "endless.xaif", "-o", "endless_adm.xaif"], LIMIT);
    assert_eq!(adjoint.code, Some(0), "{}", adjoint.stderr);
    for template in ["joint", "split"] {
        let run = xaifbooster(dir.path(), &["run", "endless_adm.xaif", "--template", template], LIMIT);
        assert_eq!(run.code, Some(1), "{template}: {}", run.stdout);
        let finding = run.stderr.lines().find(|l| l.contains("did not end")).unwrap_or_default();
        assert!(is_located(finding, "endless_adm.xaif"), "{template}: {}", run.stderr);
        assert!(finding.contains(&format!("stopped after {default} steps")), "{template}: {finding}");
    }
}

#[test]
fn max_steps_below_what_a_program_needs_stops_it_named() {
    let dir = loops_dir();
    let run = xaifbooster(dir.path(), &["run", "constructs.xaif", "--max-steps", "20"], LIMIT);
    assert_loop_stopped(&run, "constructs.xaif", "66:1", 20);
    let enough = xaifbooster(dir.path(), &["run", "constructs.xaif", "--max-steps", "100000"], LIMIT);
    assert_eq!(enough.code, Some(0), "{}", enough.stderr);
    let tangent = xaifbooster(dir.path(), &["tangent", "constructs.xaif", "-o", "constructs_tlm.xaif"], LIMIT);
    assert_eq!(tangent.code, Some(0), "{}", tangent.stderr);
    let verify = |steps: &str| {
        let args = ["verify", "--original", "constructs.xaif", "--transformed", "constructs_tlm.xaif"];
        xaifbooster(dir.path(), &[&args[..], &["--mode", "tangent", "--max-steps", steps]].concat(), LIMIT)
    };
    assert_loop_stopped(&verify("20"), "constructs.xaif", "66:1", 20);
    assert_eq!(verify("100000").code, Some(0));
    let bad = Command::new(env!("CARGO_BIN_EXE_xaifbooster"))
        .current_dir(dir.path())
        .args(["run", "constructs.xaif", "--max-steps", "many"])
        .output()
        .expect("runs");
    assert_eq!(bad.status.code(), Some(2), "a bad count is a usage error");
}

#[test]
fn a_run_time_error_in_an_adjoint_is_located_in_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let transpose = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/interp/transpose.xaif");
    std::fs::copy(transpose, dir.path().join("transpose.xaif")).expect("copy");
    let adjoint = xaifbooster(dir.path(), &["adjoint", "transpose.xaif", "-o", "transpose_adm.xaif"], LIMIT);
    assert_eq!(adjoint.code, Some(0), "{}", adjoint.stderr);
    // 400 bytes hold the arguments but not the local array B.
    for file in ["transpose.xaif", "transpose_adm.xaif"] {
        let run = xaifbooster(dir.path(), &["run", file, "--max-memory", "400", "-q"], LIMIT);
        assert_eq!(run.code, Some(1), "{file}: {}", run.stdout);
        let finding = run.stderr.lines().find(|l| l.contains("array B: memory limit of 400 bytes exceeded"));
        assert!(finding.is_some_and(|l| is_located(l, file)), "{file}: {}", run.stderr);
    }
    let run = xaifbooster(dir.path(), &["run", "transpose_adm.xaif", "--max-memory", "400", "-q"], LIMIT);
    assert!(run.stderr.contains(": ReplacementList: array B: memory limit"), "{}", run.stderr);
}

#[test]
fn strict_reading_refuses_what_lenient_reading_renames() {
    let dir = cases_dir();
    for (name, expected) in [
        ("duplicate_statement_id", "35:7: Assignment: duplicate statement_id 's1' in ControlFlowGraph"),
        ("duplicate_call_graph_edge_id", "54:3: CallGraphEdge: duplicate edge_id '1' in CallGraph"),
        (
            "alias_key_zero_undefined",
            "18:3: AliasSetMap: no AliasSet with key 0, which every alias attribute defaults to",
        ),
    ] {
        let file = format!("{name}.xaif");
        for args in [vec!["validate", "--strict", &file], vec!["identity", "--strict", "-i", &file]] {
            let outcome = xaifbooster(&dir, &args, LIMIT);
            assert_refused(&outcome, &file, expected, &format!("{name}: {}", args.join(" ")));
        }
    }
}

#[test]
fn tangent_refusals_are_located() {
    let dir = cases_dir();
    for (name, expected) in [
        (
            "unknown_intrinsic",
            "34:7: Assignment: routine head: statement s1: intrinsic 'frobnicate_scal' is in no catalogue",
        ),
        (
            "call_argument_without_formal",
            "34:7: SubroutineCall: routine head: call c1 of head: argument 3 has no formal argument (the \
             callee declares positions [1, 2])",
        ),
    ] {
        let file = format!("{name}.xaif");
        let outcome = xaifbooster(&dir, &["tangent", "-i", &file], LIMIT);
        assert_refused(&outcome, &file, expected, name);
    }
}

/// The base program of the generated cases, with `rhs` (vertices and edges) for `y = …` and
/// `k` an integer vector.
fn program(rhs: &str) -> String {
    let base = std::fs::read_to_string(cases_dir().join("bom_without_declaration.xaif")).expect("base case");
    let base = base.trim_start_matches('\u{feff}');
    let start = base.find("<xaif:AssignmentRHS>").expect("rhs") + "<xaif:AssignmentRHS>".len();
    let end = base.find("</xaif:AssignmentRHS>").expect("rhs end");
    let text = format!("{}\n{rhs}\n{}", &base[..start], &base[end..]);
    text.replace(
        r#"<xaif:Symbol symbol_id="k" type="integer" active="false"/>"#,
        r#"<xaif:Symbol symbol_id="k" type="integer" shape="vector" active="false"><xaif:DimensionBounds lower="1" upper="3"/></xaif:Symbol>"#,
    )
}

fn reference(vertex: usize, symbol: &str) -> String {
    format!(
        r#"<xaif:VariableReference vertex_id="{vertex}"><xaif:SymbolReference vertex_id="1" symbol_id="{symbol}" scope_id="2"/></xaif:VariableReference>"#
    )
}

fn intrinsic(vertex: usize, name: &str) -> String {
    format!(r#"<xaif:Intrinsic vertex_id="{vertex}" name="{name}"/>"#)
}

fn edge(id: usize, source: usize, target: usize, position: usize) -> String {
    format!(r#"<xaif:ExpressionEdge edge_id="{id}" source="{source}" target="{target}" position="{position}"/>"#)
}

/// `y = x(k(k(…k(1)…)))`, subscripts nested `levels` deep (four elements a level), built
/// without recursion.
fn nested_subscripts(levels: usize) -> String {
    let open = r#"<xaif:VariableReference vertex_id="1"><xaif:SymbolReference vertex_id="1" symbol_id="k" scope_id="2"/><xaif:ArrayElementReference vertex_id="2"><xaif:IndexTriplet><xaif:Index>"#;
    let close = r#"</xaif:Index></xaif:IndexTriplet></xaif:ArrayElementReference><xaif:VariableReferenceEdge edge_id="1" source="1" target="2"/></xaif:VariableReference>"#;
    let mut rhs = open.repeat(levels);
    rhs.push_str(r#"<xaif:Constant vertex_id="1" type="integer" value="1"/>"#);
    rhs.push_str(&close.repeat(levels));
    program(&rhs)
}

#[test]
fn deep_nesting_is_refused_by_every_subcommand() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("deep.xaif"), nested_subscripts(3000)).expect("write");
    let expected = "38:22214: Index: elements nest deeper than 512 levels";
    for args in [
        vec!["validate", "deep.xaif"],
        vec!["identity", "-i", "deep.xaif"],
        vec!["tangent", "-i", "deep.xaif"],
        vec!["run", "deep.xaif"],
        vec!["verify", "--original", "deep.xaif", "--transformed", "deep.xaif", "--mode", "tangent"],
    ] {
        let outcome = xaifbooster(dir.path(), &args, LIMIT);
        assert_refused(&outcome, "deep.xaif", expected, &args.join(" "));
    }
    // Within the limit, nesting is fine.
    std::fs::write(dir.path().join("nested.xaif"), nested_subscripts(100)).expect("write");
    let outcome = xaifbooster(dir.path(), &["tangent", "-i", "nested.xaif"], LIMIT);
    assert_eq!(outcome.code, Some(0), "{}", outcome.stderr);
}

/// `y = -(-(…-x…))`: a chain of `n` unary operations.
fn chain(n: usize) -> String {
    let mut vertices = vec![reference(1, "x")];
    let mut edges = Vec::new();
    for v in 2..=n + 1 {
        vertices.push(intrinsic(v, "minus_scal"));
        edges.push(edge(v - 1, v - 1, v, 1));
    }
    program(&format!("{}\n{}", vertices.join("\n"), edges.join("\n")))
}

/// A balanced tree of `leaves - 1` additions and multiplications of `x` and `y`: a wide
/// expression of small depth.
fn wide(leaves: usize) -> String {
    let mut vertices = Vec::new();
    let mut edges = Vec::new();
    let mut level: Vec<usize> = (1..=leaves).collect();
    for v in 1..=leaves {
        vertices.push(reference(v, if v % 2 == 0 { "x" } else { "y" }));
    }
    while level.len() > 1 {
        let mut next = Vec::new();
        for pair in level.chunks(2) {
            if let [a, b] = pair {
                let v = vertices.len() + 1;
                vertices.push(intrinsic(v, if v % 2 == 0 { "add_scal_scal" } else { "mul_scal_scal" }));
                edges.push(edge(edges.len() + 1, *a, v, 1));
                edges.push(edge(edges.len() + 1, *b, v, 2));
                next.push(v);
            } else {
                next.push(pair[0]);
            }
        }
        level = next;
    }
    program(&format!("{}\n{}", vertices.join("\n"), edges.join("\n")))
}

/// `v_{i+1} = v_i + v_i`: 40 vertices that unfold into 2^41.
fn doubling(n: usize) -> String {
    let mut vertices = vec![reference(1, "x")];
    let mut edges = Vec::new();
    for v in 2..=n + 1 {
        vertices.push(intrinsic(v, "add_scal_scal"));
        edges.push(edge(edges.len() + 1, v - 1, v, 1));
        edges.push(edge(edges.len() + 1, v - 1, v, 2));
    }
    program(&format!("{}\n{}", vertices.join("\n"), edges.join("\n")))
}

#[test]
fn long_and_wide_expressions_take_linear_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Debug builds are an order of magnitude slower; the sizes still show quadratic costs.
    let scale = if cfg!(debug_assertions) { 10 } else { 1 };
    let quick = Duration::from_secs(60);
    // 100,000 unary operations: refused at once for their depth, by every subcommand.
    std::fs::write(dir.path().join("chain.xaif"), chain(100_000 / scale)).expect("write");
    let depth = format!("{}", 100_000 / scale + 1);
    for args in [
        vec!["validate", "chain.xaif"],
        vec!["identity", "-i", "chain.xaif"],
        vec!["tangent", "-i", "chain.xaif"],
        vec!["run", "chain.xaif"],
    ] {
        let outcome = xaifbooster(dir.path(), &args, quick);
        let expected = format!("37:9: AssignmentRHS: the expression nests {depth} operations deep, more than 10000");
        if scale == 1 {
            assert_refused(&outcome, "chain.xaif", &expected, &args.join(" "));
        }
    }
    // Just within the depth limit, a chain is read, transformed and run.
    std::fs::write(dir.path().join("long.xaif"), chain(9_999 / scale)).expect("write");
    for args in [
        vec!["identity", "-i", "long.xaif", "-o", "long.id.xaif"],
        vec!["tangent", "-i", "long.xaif", "-o", "long.tlm.xaif"],
        vec!["run", "long.xaif"],
    ] {
        let outcome = xaifbooster(dir.path(), &args, quick);
        assert_eq!(outcome.code, Some(0), "{}: {}", args.join(" "), outcome.stderr);
    }
    // 50,000 operations of depth 17.
    std::fs::write(dir.path().join("wide.xaif"), wide(25_000 / scale)).expect("write");
    for args in [
        vec!["identity", "-i", "wide.xaif", "-o", "wide.id.xaif"],
        vec!["tangent", "-i", "wide.xaif", "-o", "wide.tlm.xaif"],
        vec!["run", "wide.xaif"],
    ] {
        let outcome = xaifbooster(dir.path(), &args, quick);
        assert_eq!(outcome.code, Some(0), "{}: {}", args.join(" "), outcome.stderr);
    }
    let outputs: Vec<PathBuf> =
        ["long.id.xaif", "long.tlm.xaif", "wide.id.xaif", "wide.tlm.xaif"].iter().map(|f| dir.path().join(f)).collect();
    let failures = common::xmllint_failures(&outputs);
    assert!(failures.is_empty(), "{failures:#?}");
    // Shared operands that unfold exponentially.
    std::fs::write(dir.path().join("dag.xaif"), doubling(40)).expect("write");
    for args in [vec!["validate", "dag.xaif"], vec!["tangent", "-i", "dag.xaif"], vec!["run", "dag.xaif"]] {
        let outcome = xaifbooster(dir.path(), &args, quick);
        let expected = "37:9: AssignmentRHS: the expression unfolds to 2199023255551 vertices (an operand counted once \
                        per use), more than 1000000";
        assert_refused(&outcome, "dag.xaif", expected, &args.join(" "));
    }
}

#[test]
fn many_findings_are_reported_in_linear_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let count = if cfg!(debug_assertions) { 10_000 } else { 100_000 };
    let base = std::fs::read_to_string(cases_dir().join("bom_without_declaration.xaif")).expect("base case");
    let block = r#"<xaif:BasicBlock vertex_id="2" scope_id="2">"#;
    let markers: String =
        (0..count).map(|i| format!("\n<xaif:Marker statement_id=\"m{i}\" colour=\"red\"/>")).collect();
    let text = base.replacen(block, &format!("{block}{markers}"), 1);
    std::fs::write(dir.path().join("many.xaif"), text).expect("write");
    let outcome = xaifbooster(dir.path(), &["validate", "many.xaif"], LIMIT);
    assert_eq!(outcome.code, Some(0), "{}", &outcome.stderr[..outcome.stderr.len().min(500)]);
    // Identical warnings are summarised on one line that says how many there were.
    assert_eq!(outcome.stderr.lines().count(), 1, "{}", &outcome.stderr[..outcome.stderr.len().min(500)]);
    assert!(outcome.stderr.contains(&format!("({count} ×")), "{}", outcome.stderr);
    assert!(outcome.took < Duration::from_secs(30), "took {:?}", outcome.took);
}

/// A basic block of `n` assignments `y = x * rhs`: with `rhs` the constant 2, `x` is read by
/// every statement and every `y` but the last dies (the elimination graph's `x` has `n`
/// successors to drop); with `rhs` `y` itself, each statement reads the one before (the
/// adjoint's value taping meets `n` reads of `y`, each overwritten before the next).
fn long_block(n: usize, chained: bool) -> String {
    let base = std::fs::read_to_string(cases_dir().join("bom_without_declaration.xaif")).expect("base case");
    let base = base.trim_start_matches('\u{feff}');
    let start = base.find("      <xaif:Assignment").expect("assignment");
    let end = base.find("    </xaif:BasicBlock>").expect("block end");
    let mut statement = base[start..end].to_owned();
    if chained {
        statement = statement.replace(r#"<xaif:Constant vertex_id="2" type="real" value="2.0"/>"#, &reference(2, "y"));
    }
    let mut text = String::with_capacity(base.len() + n * statement.len());
    text.push_str(&base[..start]);
    for i in 1..=n {
        text.push_str(&statement.replace(r#"statement_id="s1""#, &format!(r#"statement_id="s{i}""#)));
    }
    text.push_str(&base[end..]);
    text
}

#[test]
fn long_blocks_take_linear_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let scale = if cfg!(debug_assertions) { 10 } else { 1 };
    // Before the fixes, 80,000 statements took the tangent 20 s (dropping dead vertices one
    // `Vec::remove` at a time) and 60,000 chained ones the adjoint over a minute (every read
    // compared with every earlier push); now a few seconds each.
    let limit = Duration::from_secs(60);
    std::fs::write(dir.path().join("fan.xaif"), long_block(80_000 / scale, false)).expect("write");
    std::fs::write(dir.path().join("chain.xaif"), long_block(60_000 / scale, true)).expect("write");
    for args in [
        ["tangent", "-i", "fan.xaif", "-o", "/dev/null"],
        ["adjoint", "-i", "fan.xaif", "-o", "/dev/null"],
        ["adjoint", "-i", "chain.xaif", "-o", "/dev/null"],
    ] {
        let outcome = xaifbooster(dir.path(), &args, limit);
        assert_eq!(outcome.code, Some(0), "{}: {}", args.join(" "), outcome.stderr);
    }
}
