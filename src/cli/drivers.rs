//! xaifbooster as OpenAD's `oadDriver` binaries, and `install-drivers`, which puts it there.
//!
//! OpenAD calls the original engine's drivers by path, all named `oadDriver`, one per
//! algorithm: `$XAIFBOOSTERROOT/xaifBooster/algorithms/<Algorithm>/driver/oadDriver` (the
//! `openad` script's forward and reverse modes, and the examples' Makefiles) and
//! `$XAIFBOOSTERROOT/xaifBooster/system/driver/oadDriver` (the identity driver). They take the
//! switches without a subcommand (`oadDriver -c cat.xaif -s schema -i in.xaif -o out.xaif`).
//! So when the program is called by the name `oadDriver`, the mode comes from the directory
//! the driver sits in, and the arguments are those of the mode's subcommand. A symbolic link
//! keeps the name and path it was called by, so one binary serves as every driver.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::Outcome;
use super::args::InstallDriversArgs;

/// The file name OpenAD gives every driver.
pub const DRIVER_NAME: &str = "oadDriver";

/// The drivers xaifbooster stands in for: where each sits below `$XAIFBOOSTERROOT`, the
/// directory that names it, and the subcommand that does its work.
pub const DRIVERS: [(&str, &str, &str); 4] = [
    ("xaifBooster/system/driver", "system", "identity"),
    ("xaifBooster/algorithms/BasicBlockPreaccumulation/driver", "BasicBlockPreaccumulation", "tangent"),
    ("xaifBooster/algorithms/BasicBlockPreaccumulationReverse/driver", "BasicBlockPreaccumulationReverse", "adjoint"),
    ("xaifBooster/algorithms/TraceDiff/driver", "TraceDiff", "trace"),
];

/// The command line to parse: unchanged unless the program was called as `oadDriver`, in
/// which case the subcommand of its driver directory goes first. Called as `oadDriver` where
/// no driver of ours sits, it says so (a usage error, exit 2).
pub fn command_line(args: Vec<OsString>) -> Vec<OsString> {
    let Some(program) = args.first() else { return args };
    let called = Path::new(program);
    if called.file_name() != Some(OsStr::new(DRIVER_NAME)) {
        return args;
    }
    match mode_of_driver(&where_called(called)) {
        Ok(mode) => {
            let mut line = Vec::with_capacity(args.len() + 1);
            line.push(OsString::from("xaifbooster"));
            line.push(OsString::from(mode));
            line.extend(args.into_iter().skip(1));
            line
        }
        Err(message) => {
            eprintln!("xaifbooster: {message}");
            std::process::exit(2);
        }
    }
}

/// The path the program was called by, made absolute: as given when it holds a `/`, else
/// the first `oadDriver` on the search path, as the shell found it. Links are not followed:
/// the link's own directory names the driver.
fn where_called(called: &Path) -> PathBuf {
    if called.components().count() == 1 {
        let on_path = std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(called))
            .find(|candidate| candidate.is_file());
        if let Some(found) = on_path {
            return std::path::absolute(&found).unwrap_or(found);
        }
    }
    std::path::absolute(called).unwrap_or_else(|_| called.to_path_buf())
}

/// The subcommand of the driver at `path` (`…/<Algorithm>/driver/oadDriver`).
pub fn mode_of_driver(path: &Path) -> Result<&'static str, String> {
    let mut up = path.parent().into_iter().flat_map(Path::ancestors);
    let driver_dir = up.next().and_then(Path::file_name);
    let algorithm = up.next().and_then(Path::file_name).and_then(OsStr::to_str);
    let known: Vec<&str> = DRIVERS.iter().map(|(_, name, _)| *name).collect();
    if driver_dir != Some(OsStr::new("driver")) {
        return Err(format!(
            "called as {DRIVER_NAME} at {}, which is not in a driver directory: the mode comes from \
             …/<algorithm>/driver/{DRIVER_NAME}, where <algorithm> is one of {}",
            path.display(),
            known.join(", ")
        ));
    }
    match DRIVERS.iter().find(|(_, name, _)| Some(*name) == algorithm) {
        Some((_, _, mode)) => Ok(mode),
        None => Err(format!(
            "called as the {} driver ({}): xaifbooster implements only {}",
            algorithm.unwrap_or("?"),
            path.display(),
            known.join(", ")
        )),
    }
}

/// `install-drivers DIR`: a link named `oadDriver` to this binary in each driver directory
/// below DIR (OpenAD's `$XAIFBOOSTERROOT`). A link already there to this binary is renewed; any
/// other file there is left alone and nothing is installed.
pub fn install(args: &InstallDriversArgs) -> Outcome {
    let binary = std::env::current_exe().context("cannot find this program's own path")?;
    let binary = binary.canonicalize().with_context(|| format!("cannot resolve {}", binary.display()))?;
    let targets: Vec<PathBuf> = DRIVERS.iter().map(|(dir, _, _)| args.dir.join(dir).join(DRIVER_NAME)).collect();
    // Every place is checked before any is touched: a refusal leaves everything as it was.
    for target in &targets {
        if std::fs::symlink_metadata(target).is_ok() && !links_to(target, &binary) {
            bail!(
                "{} exists and is not a link to {} (move it aside first, e.g. to {DRIVER_NAME}.orig)",
                target.display(),
                binary.display()
            );
        }
    }
    for (target, (_, _, mode)) in targets.iter().zip(DRIVERS) {
        let dir = target.parent().expect("a driver directory");
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        // A link under a temporary name, renamed over the place: the driver is never missing
        // or half made, and a failure leaves no link behind.
        let temporary = dir.join(format!(".{DRIVER_NAME}.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&temporary);
        make_link(&binary, &temporary).with_context(|| format!("cannot create {}", temporary.display()))?;
        if let Err(error) = std::fs::rename(&temporary, target) {
            let _ = std::fs::remove_file(&temporary);
            return Err(error).with_context(|| format!("cannot install {}", target.display()));
        }
        println!("{} -> {} ({mode})", target.display(), binary.display());
    }
    Ok(Ok(()))
}

/// Whether `path` is a link that leads to `binary` (already canonical).
fn links_to(path: &Path, binary: &Path) -> bool {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    is_link && path.canonicalize().is_ok_and(|resolved| resolved == binary)
}

#[cfg(unix)]
fn make_link(binary: &Path, at: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(binary, at)
}

#[cfg(not(unix))]
fn make_link(binary: &Path, at: &Path) -> std::io::Result<()> {
    std::fs::copy(binary, at).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_directory_names_the_mode() {
        let root = Path::new("/opt/OpenAD/xaifBooster");
        for (dir, _, mode) in DRIVERS {
            assert_eq!(mode_of_driver(&root.join(dir).join(DRIVER_NAME)), Ok(mode));
        }
        let other =
            mode_of_driver(Path::new("/x/xaifBooster/algorithms/MemOpsTradeoffPreaccumulation/driver/oadDriver"));
        assert!(other.is_err_and(|m| m.contains("MemOpsTradeoffPreaccumulation driver")));
        assert!(
            mode_of_driver(Path::new("/usr/bin/oadDriver")).is_err_and(|m| m.contains("not in a driver directory"))
        );
    }

    #[test]
    fn other_names_leave_the_command_line_alone() {
        let line: Vec<OsString> = ["xaifbooster", "tangent", "-i", "a"].iter().map(OsString::from).collect();
        assert_eq!(command_line(line.clone()), line);
        let driver: Vec<OsString> =
            ["/r/xaifBooster/algorithms/BasicBlockPreaccumulationReverse/driver/oadDriver", "-I"]
                .iter()
                .map(OsString::from)
                .collect();
        assert_eq!(command_line(driver), ["xaifbooster", "adjoint", "-I"].map(OsString::from).to_vec());
    }
}
