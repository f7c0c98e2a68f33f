//! A bounded, deterministic mutation fuzzer over the corpus and testdata seeds: every mutant
//! goes through every entry point (`xaifbooster::fuzz`), which must keep the robustness
//! contract — output that reads back or a located refusal, no panic, validate agreeing with
//! the modes. Fixed seed; `XAIF_MUTATIONS=N` sets the number of mutants (default 20000, about twenty
//! seconds in release), `XAIF_MUTATION_SEED` the seed. A violation is written to
//! `target/mutation-findings/` for a regression file.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use xaifbooster::fuzz::{Outcome, Target, check};

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

/// Seeds: corpus inputs and hand-written test programs up to 40 kB, in path order.
fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<PathBuf> = common::corpus_files("tlm.in.xaif");
    files.extend(common::corpus_files("adm.in.xaif"));
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    for dir in ["adjoint", "analysis", "interp", "random", "type_change", "tangent"] {
        if let Ok(entries) = std::fs::read_dir(testdata.join(dir)) {
            files.extend(
                entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "xaif")),
            );
        }
    }
    files.sort();
    files
        .into_iter()
        .filter_map(|p| {
            let bytes = std::fs::read(&p).ok()?;
            (bytes.len() <= 40_000).then(|| (p.display().to_string(), bytes))
        })
        .collect()
}

/// A number that breaks assumptions: huge, negative, zero, past 32 and 64 bits.
const NUMBERS: &[&str] = &["0", "-1", "1", "2", "4294967296", "18446744073709551616", "99999999999", "-7", "3"];

/// One to three random edits of `input`.
fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(3) {
        if out.is_empty() {
            break;
        }
        let at = rng.below(out.len());
        match rng.below(9) {
            // A byte flipped.
            0 => out[at] ^= 1 << rng.below(8),
            // A cut: the rest of the file or a stretch.
            1 => out.truncate(at),
            2 => {
                let end = (at + 1 + rng.below(200)).min(out.len());
                out.drain(at..end);
            }
            // A stretch duplicated (often whole elements).
            3 => {
                let end = (at + 1 + rng.below(400)).min(out.len());
                let copy: Vec<u8> = out[at..end].to_vec();
                let to = rng.below(out.len());
                out.splice(to..to, copy);
            }
            // A line duplicated or deleted.
            4 | 5 => {
                let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
                let k = rng.below(lines.len());
                let mut joined: Vec<Vec<u8>> = lines.iter().map(|l| l.to_vec()).collect();
                if rng.below(2) == 0 {
                    let line = joined[k].clone();
                    joined.insert(k, line);
                } else {
                    joined.remove(k);
                }
                out = joined.join(&b'\n');
            }
            // A number in an attribute replaced (positions, ids, bounds, keys).
            6 | 7 => {
                if let Some(start) = (at..out.len()).find(|&i| out[i].is_ascii_digit()) {
                    let end = (start..out.len()).find(|&i| !out[i].is_ascii_digit()).unwrap_or(out.len());
                    let number = NUMBERS[rng.below(NUMBERS.len())].as_bytes().to_vec();
                    out.splice(start..end, number);
                }
            }
            // An element opened inside itself (nesting).
            _ => {
                if let Some(start) = (at..out.len()).find(|&i| out[i] == b'<' && out.get(i + 1) != Some(&b'/')) {
                    let end = (start..out.len()).find(|&i| out[i] == b'>').map_or(out.len(), |e| e + 1);
                    let tag: Vec<u8> = out[start..end].to_vec();
                    for _ in 0..1 + rng.below(3) {
                        out.splice(start..start, tag.clone());
                    }
                }
            }
        }
    }
    out
}

/// What `target` makes of `input`, a panic caught as a violation with its message.
fn checked(target: Target, input: &[u8]) -> Result<Outcome, String> {
    catch_unwind(AssertUnwindSafe(|| check(target, input))).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        Err(format!("panic: {message}"))
    })
}

/// Keeps an input that broke the contract as `dir/name`, for triage; its path.
fn kept(dir: &Path, name: &str, input: &[u8]) -> PathBuf {
    let _ = std::fs::create_dir_all(dir);
    let path = dir.join(name);
    let _ = std::fs::write(&path, input);
    path
}

#[test]
fn mutants_of_the_seeds_keep_the_robustness_contract() {
    let count: usize = std::env::var("XAIF_MUTATIONS").ok().and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let seed: u64 = std::env::var("XAIF_MUTATION_SEED").ok().and_then(|n| n.parse().ok()).unwrap_or(0x5eed_f00d);
    let seeds = seeds();
    assert!(seeds.len() >= 200, "only {} seeds", seeds.len());
    let mut rng = Rng(seed | 1);
    let findings_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mutation-findings");
    let (mut executions, mut accepted) = (0u64, [0u64; Target::ALL.len()]);
    let mut findings = Vec::new();
    // Panics are expected to be caught here, not printed for every mutant.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for n in 0..count {
        if n > 0 && n % 100_000 == 0 {
            eprintln!("{n} mutants, {executions} executions, {} findings so far", findings.len());
        }
        let (name, seed_bytes) = &seeds[rng.below(seeds.len())];
        let mutant = mutate(&mut rng, seed_bytes);
        for (k, target) in Target::ALL.into_iter().enumerate() {
            executions += 1;
            match checked(target, &mutant) {
                Ok(Outcome::Accepted) => accepted[k] += 1,
                Ok(Outcome::Refused) => {}
                Err(violation) => {
                    let path = kept(&findings_dir, &format!("mutant-{n}-{target:?}.xaif"), &mutant);
                    findings.push(format!("{target:?} on a mutant of {name} ({}): {violation}", path.display()));
                }
            }
        }
    }
    std::panic::set_hook(hook);
    eprintln!(
        "{count} mutants, {executions} executions; accepted per target (read, validate, identity, tangent, adjoint, streamed, run, catalogue): {accepted:?}; {} findings",
        findings.len()
    );
    assert!(findings.is_empty(), "{} contract violations:\n{}", findings.len(), findings.join("\n"));
}

/// Mutants of the catalogues (the built-in one's text, the reference's non-inlinable example
/// when the shared material is there) keep the catalogue contract (`Target::Catalogue`): a
/// catalogue given with `-c` or `-N` is input like any other. Fixed seed;
/// `XAIF_CATALOGUE_MUTATIONS=N` sets the number of mutants (default 5000).
#[test]
fn mutants_of_the_catalogues_keep_the_contract() {
    let count: usize = std::env::var("XAIF_CATALOGUE_MUTATIONS").ok().and_then(|n| n.parse().ok()).unwrap_or(5_000);
    let mut seeds: Vec<(String, Vec<u8>)> = vec![(
        "the built-in catalogue".into(),
        include_bytes!("../schema/intrinsics/inlinable_intrinsics.xaif").to_vec(),
    )];
    if let Some(shared) = std::env::var_os("XAIF_SHARED") {
        let example = Path::new(&shared).join("xaif/intrinsics/noninlinable_intrinsics_example.xaif");
        if let Ok(bytes) = std::fs::read(&example) {
            seeds.push((example.display().to_string(), bytes));
        }
    }
    let mut rng = Rng(0xca7a_1095 | 1);
    let findings_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mutation-findings");
    let (mut accepted, mut findings) = (0u64, Vec::new());
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for n in 0..count {
        let (name, seed_bytes) = &seeds[rng.below(seeds.len())];
        let mutant = mutate(&mut rng, seed_bytes);
        match checked(Target::Catalogue, &mutant) {
            Ok(Outcome::Accepted) => accepted += 1,
            Ok(Outcome::Refused) => {}
            Err(violation) => {
                let path = kept(&findings_dir, &format!("catalogue-mutant-{n}.xaif"), &mutant);
                findings.push(format!("a mutant of {name} ({}): {violation}", path.display()));
            }
        }
    }
    std::panic::set_hook(hook);
    eprintln!("{count} catalogue mutants, {accepted} accepted; {} findings", findings.len());
    assert!(accepted > 0, "no mutant was accepted: the mutations never leave a valid catalogue");
    assert!(findings.is_empty(), "{} contract violations:\n{}", findings.len(), findings.join("\n"));
}

/// Every input a fuzzer once broke the contract with (`testdata/fuzz/`) keeps it now
/// (`XAIF_FUZZ_DIR=dir` checks another folder, e.g. `target/mutation-findings`, for triage).
#[test]
fn fuzz_regressions_keep_the_contract() {
    let dir = std::env::var_os("XAIF_FUZZ_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz"));
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&dir).expect("testdata/fuzz").map(|e| e.expect("entry").path()).collect();
    files.sort();
    assert!(!files.is_empty());
    let mut broken = Vec::new();
    for file in files {
        let bytes = std::fs::read(&file).expect("regression file");
        for target in Target::ALL {
            if let Err(violation) = checked(target, &bytes) {
                broken.push(format!("{} ({target:?}): {violation}", file.display()));
            }
        }
    }
    assert!(broken.is_empty(), "{} failures:\n{}", broken.len(), broken.join("\n"));
}
