//! `validate`: checks files without transforming them. Every file is checked, even after one
//! cannot be read, so one run reports everything wrong with a set of files.

use std::io::Write;

use super::args::ValidateArgs;
use super::log::summarise;
use super::{Outcome, Reported, read_input};
use crate::xaif::Severity;
use crate::xaif::validate::{ValidateOptions, validate};

pub fn run(args: &ValidateArgs) -> Outcome {
    let mut failed = false;
    let mut stderr = std::io::stderr().lock();
    for file in &args.files {
        let (input, name) = match read_input(file) {
            Ok(read) => read,
            Err(error) => {
                let _ = writeln!(stderr, "xaifbooster: {error:#}");
                failed = true;
                continue;
            }
        };
        let options = ValidateOptions { strict: args.strict, activity: !args.skip_activity };
        let findings = validate(&input, &name, &options);
        for line in summarise(&findings, args.quiet) {
            let _ = writeln!(stderr, "{line}");
        }
        failed |= findings.iter().any(|f| f.severity == Severity::Error);
    }
    Ok(if failed { Err(Reported(1)) } else { Ok(()) })
}
