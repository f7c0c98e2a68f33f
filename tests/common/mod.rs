//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use xaifbooster::interp::lower::{Body, Program};

/// Writes a synthetic input of about `megabytes` MiB to `path` (`scripts/gen_xaif.py`, with
/// alias and du-ud keys as a front end writes them).
pub fn synthetic_input(path: &Path, megabytes: &str, seed: u32) {
    let status = std::process::Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen_xaif.py"))
        .args(["--mb", megabytes, "--seed", &seed.to_string(), "-o"])
        .arg(path)
        .status()
        .expect("python3 runs the generator");
    assert!(status.success(), "gen_xaif.py --mb {megabytes} failed");
}

/// The same document with its control flow graphs in reverse order: a synthetic document
/// written callers first.
#[allow(dead_code)] // Not every test binary that includes this module uses it.
pub fn reverse_routines(text: &str) -> String {
    let first = text.find("<xaif:ControlFlowGraph ").expect("a routine");
    let last = text.rfind("</xaif:ControlFlowGraph>").expect("a routine") + "</xaif:ControlFlowGraph>".len();
    let routines: Vec<&str> =
        text[first..last].split_inclusive("</xaif:ControlFlowGraph>").map(|r| r.trim_start_matches('\n')).collect();
    let reversed: Vec<&str> = routines.into_iter().rev().collect();
    format!("{}{}{}", &text[..first], reversed.join("\n"), &text[last..])
}

/// The shared reference material: `XAIF_SHARED`, else `../shared` beside the crate.
/// Missing material is a failure, never a skip: CI must not pass by testing nothing.
pub fn shared_dir() -> PathBuf {
    let dir = match std::env::var_os("XAIF_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"),
    };
    assert!(
        dir.join("corpus").is_dir() && dir.join("xaif").is_dir(),
        "reference material not found at {} (set XAIF_SHARED to the shared/ folder)",
        dir.display()
    );
    dir
}

/// Files matching `<shared>/corpus/*/<name>`, sorted.
pub fn corpus_files(name: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(shared_dir().join("corpus"))
        .expect("corpus folder is readable")
        .map(|entry| entry.expect("corpus entry").path().join(name))
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

/// Files with the given extension in a folder, sorted.
pub fn files_in(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == extension))
        .collect();
    files.sort();
    files
}

/// The name a test prints for a corpus file: `<example>/<file>`.
pub fn short_name(path: &Path) -> String {
    let parent = path.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy()).unwrap_or_default();
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    format!("{parent}/{name}")
}

/// `xmllint` on the machine; CI installs it, so its absence is a failure.
pub fn xmllint() -> &'static str {
    let status = std::process::Command::new("xmllint").arg("--version").output();
    assert!(status.is_ok(), "xmllint is not installed (apt-get install libxml2-utils)");
    "xmllint"
}

/// Validates files against the shared output schema in one xmllint run; returns the names
/// of the files that fail, with xmllint's first complaint.
pub fn xmllint_failures(files: &[PathBuf]) -> Vec<String> {
    let schema = shared_dir().join("xaif/schema/xaif_output.xsd");
    let mut failures = Vec::new();
    for chunk in files.chunks(200) {
        let output = std::process::Command::new(xmllint())
            .arg("--noout")
            .arg("--schema")
            .arg(&schema)
            .args(chunk)
            .output()
            .expect("xmllint runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        for file in chunk {
            let shown = file.display().to_string();
            if !stderr.lines().any(|l| l == format!("{shown} validates")) {
                let why = stderr.lines().find(|l| l.starts_with(&shown) && !l.ends_with("validates")).unwrap_or("");
                failures.push(format!("{shown}: {why}"));
            }
        }
    }
    failures
}

/// Attributes our writer keeps although the reference unparser drops them (they carry front-end
/// information a back end may want); ignored when comparing with reference outputs.
pub const PRESERVED_EXTRA_ATTRIBUTES: &[(&str, &str)] = &[
    ("Assignment", "lineNumber"),
    ("Assignment", "do_chain"),
    ("Initialization", "do_chain"),
    ("Update", "do_chain"),
    ("SubroutineCall", "lineNumber"),
    ("ForLoop", "lineNumber"),
    ("Branch", "lineNumber"),
    ("PreLoop", "lineNumber"),
    ("PostLoop", "lineNumber"),
    ("If", "lineNumber"),
    ("AssignmentLHS", "live"),
    ("Symbol", "pointer"),
    ("Intrinsic", "type"),
    ("Intrinsic", "rType"),
    ("Intrinsic", "rShape"),
];

/// Elements our writer keeps although the reference unparser drops them.
pub const PRESERVED_EXTRA_ELEMENTS: &[&str] = &["SymbolReferenceProperty"];

/// A formatting-independent rendering of an XAIF document: one line per element with its
/// local name, depth and sorted attributes (namespace declarations left out, the preserved
/// extras above removed). Two documents are equal modulo formatting iff their lines are.
pub fn canonical_lines(text: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(text).expect("well-formed XML");
    let mut lines = Vec::new();
    canonical_element(doc.root_element(), 0, &mut lines);
    lines
}

fn canonical_element(node: roxmltree::Node, depth: usize, lines: &mut Vec<String>) {
    let name = node.tag_name().name();
    if PRESERVED_EXTRA_ELEMENTS.contains(&name) {
        return;
    }
    let mut attributes: Vec<String> = node
        .attributes()
        .filter(|a| a.namespace().is_none())
        .filter(|a| !PRESERVED_EXTRA_ATTRIBUTES.contains(&(name, a.name())))
        .map(|a| format!("{}={:?}", a.name(), canonical_value(node, a.name(), a.value())))
        .collect();
    attributes.sort();
    lines.push(format!("{}{} {}", "  ".repeat(depth), name, attributes.join(" ")));
    if UNORDERED_CONTAINERS.contains(&name) {
        // Sets whose order means nothing (the reference writes alias ranges reversed).
        let mut children: Vec<Vec<String>> = node
            .children()
            .filter(|c| c.is_element())
            .map(|c| {
                let mut sub = Vec::new();
                canonical_element(c, depth + 1, &mut sub);
                sub
            })
            .collect();
        children.sort();
        lines.extend(children.into_iter().flatten());
        return;
    }
    for child in node.children().filter(|c| c.is_element()) {
        canonical_element(child, depth + 1, lines);
    }
}

/// Elements whose children form a set.
const UNORDERED_CONTAINERS: &[&str] = &["AliasSet", "SymbolTable", "StmtIdSet"];

/// The first differing line of two canonical renderings, for a readable failure.
pub fn first_difference(ours: &[String], theirs: &[String]) -> Option<String> {
    for (i, (a, b)) in ours.iter().zip(theirs).enumerate() {
        if a != b {
            return Some(format!("element #{i}:\n  ours:   {a}\n  theirs: {b}"));
        }
    }
    (ours.len() != theirs.len()).then(|| format!("lengths differ: {} vs {}", ours.len(), theirs.len()))
}

/// The reference engine re-prints real constants through a double (`0.0e+00` becomes
/// `0.00000000000000000000e+00`); we keep the front end's spelling. Compare the numbers.
fn canonical_value(node: roxmltree::Node, attribute: &str, value: &str) -> String {
    let is_real = matches!(node.attribute("type"), Some("real" | "double"));
    let number = value.replace(['d', 'D'], "e").parse::<f64>();
    match number {
        Ok(number) if node.tag_name().name() == "Constant" && attribute == "value" && is_real => format!("{number:e}"),
        _ => value.to_owned(),
    }
}

/// The argument layout of an example whose driver passes more than two arguments: leading
/// formals totalling `n` elements are the inputs, the following ones totalling `m` the outputs
/// (as OpenAD's per-example drivers of graphEx1, cancellation, … do).
pub fn layout(prog: &Program, n: usize, m: usize) -> (Vec<u32>, Vec<u32>) {
    let default = (vec![1], vec![2]);
    let Some(head) = prog.routines.iter().find(|r| r.name.starts_with("head") && !matches!(r.body, Body::External))
    else {
        return default;
    };
    if head.formals.len() <= 2 {
        return default;
    }
    let mut formals = head.formals.clone();
    formals.sort_by_key(|(p, _)| *p);
    let size = |sym: xaifbooster::ir::SymbolId| {
        prog.syms[sym.into_raw().into_u32() as usize]
            .bounds
            .as_ref()
            .map(|b| b.iter().map(|(l, u)| (u - l + 1).max(0) as usize).product::<usize>())
    };
    let (mut inputs, mut outputs, mut sum) = (Vec::new(), Vec::new(), 0);
    let mut it = formals.iter();
    for (p, sym) in it.by_ref() {
        let Some(len) = size(*sym) else {
            return default;
        };
        inputs.push(*p);
        sum += len;
        if sum >= n {
            break;
        }
    }
    if sum != n {
        return default;
    }
    sum = 0;
    for (p, sym) in it {
        let Some(len) = size(*sym) else {
            return default;
        };
        outputs.push(*p);
        sum += len;
        if sum >= m {
            break;
        }
    }
    if sum != m {
        return default;
    }
    (inputs, outputs)
}

pub struct Params {
    pub n: usize,
    pub m: usize,
}

pub fn params(dir: &Path) -> Params {
    let text = std::fs::read_to_string(dir.join("params.conf")).expect("params.conf");
    let mut lines = text.lines().map(str::trim);
    let n = lines.next().and_then(|l| l.parse().ok()).expect("n in params.conf");
    let m = lines.next().and_then(|l| l.parse().ok()).expect("m in params.conf");
    Params { n, m }
}

/// `F(  i,  j)=  value` lines of ad.out: row-major `m × n`.
pub fn ad_out(dir: &Path, n: usize, m: usize) -> Option<Vec<f64>> {
    let text = std::fs::read_to_string(dir.join("ad.out")).ok()?;
    let mut j = vec![f64::NAN; n * m];
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("F(") else {
            continue;
        };
        let (idx, value) = rest.split_once(")=")?;
        let (i, k) = idx.split_once(',')?;
        let (i, k): (usize, usize) = (i.trim().parse().ok()?, k.trim().parse().ok()?);
        let v: f64 = value.trim().replace(['D', 'd'], "E").parse().ok()?;
        if i >= 1 && i <= m && k >= 1 && k <= n {
            j[(i - 1) * n + (k - 1)] = v;
        }
    }
    Some(j)
}

/// How an example's top routine is driven: its params.conf sizes, its argument layout, the
/// corpus' tolerance.
pub fn verify_config(
    dir: &Path,
    original: &Program,
    mode: xaifbooster::interp::verify::Mode,
    template: xaifbooster::interp::Template,
) -> xaifbooster::interp::verify::VerifyConfig {
    use xaifbooster::interp::verify::{DriverConfig, VerifyConfig};
    let params = params(dir);
    let (input_args, output_args) = layout(original, params.n, params.m);
    let mut driver = DriverConfig {
        n: Some(params.n),
        m: Some(params.m),
        template,
        input_args,
        output_args,
        ..DriverConfig::default()
    };
    let example = dir.file_name().expect("example directory").to_string_lossy();
    if let Some(flags) = driver_flags(&example) {
        apply_driver_flags(&mut driver, &flags).unwrap_or_else(|e| panic!("testdata/drivers.txt: {example}: {e}"));
    }
    VerifyConfig { driver, mode, rtol: 1e-5 }
}

/// The flags `testdata/drivers.txt` gives for an example, if any.
pub fn driver_flags(example: &str) -> Option<Vec<String>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/drivers.txt");
    let text = std::fs::read_to_string(&path).expect("testdata/drivers.txt");
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next() == Some(example)).then(|| words.map(str::to_owned).collect())
    })
}

/// Applies `verify` flags (the subset drivers.txt uses) to a driver configuration.
pub fn apply_driver_flags(
    driver: &mut xaifbooster::interp::verify::DriverConfig,
    flags: &[String],
) -> Result<(), String> {
    let list = |v: &str| -> Result<Vec<u32>, String> {
        v.split(',').map(|p| p.parse().map_err(|_| format!("bad position '{p}'"))).collect()
    };
    let mut it = flags.iter();
    let (mut inputs_given, mut outputs_given) = (false, false);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--entry" => driver.entry = Some(value.clone()),
            "--x" => {
                let x: Result<Vec<f64>, _> = value.split(',').map(str::parse).collect();
                driver.x = Some(x.map_err(|e| format!("--x: {e}"))?);
                driver.n = None;
            }
            "--inputs" => (driver.input_args, inputs_given) = (list(value)?, true),
            "--outputs" => (driver.output_args, outputs_given) = (list(value)?, true),
            "--input-globals" => driver.input_globals = value.split(',').map(str::to_owned).collect(),
            "--output-globals" => driver.output_globals = value.split(',').map(str::to_owned).collect(),
            "--arg" => driver.fixed_args.push(xaifbooster::interp::verify::parse_fixed_arg(value)?),
            "--n" => driver.n = Some(value.parse().map_err(|_| format!("--n: bad count '{value}'"))?),
            "--m" => driver.m = Some(value.parse().map_err(|_| format!("--m: bad count '{value}'"))?),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if !driver.input_globals.is_empty() && !inputs_given {
        driver.input_args.clear();
    }
    if !driver.output_globals.is_empty() && !outputs_given {
        driver.output_args.clear();
    }
    Ok(())
}

/// The XAIF namespace, for roxmltree lookups.
pub const XAIF: &str = "http://www.mcs.anl.gov/XAIF";

/// What one guarded run of a program did.
pub struct Guarded {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: std::time::Duration,
}

/// Runs `command` (its arguments set, its standard streams left to this function) with no
/// input, capturing its output, and kills it after `limit`: a hang fails the test as `what`.
pub fn run_guarded(mut command: std::process::Command, what: &str, limit: std::time::Duration) -> Guarded {
    use std::process::Stdio;
    let capture = tempfile::tempdir().expect("temporary directory");
    let (out, err) = (capture.path().join("stdout"), capture.path().join("stderr"));
    let start = std::time::Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("the program starts");
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not end within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    Guarded {
        code: status.code(),
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
        took: start.elapsed(),
    }
}
