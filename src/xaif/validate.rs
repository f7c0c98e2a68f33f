//! Schema-free validation of XAIF input (interim: the reader's own checks).
//!
//! To be replaced by the roxmltree-based validator that collects every finding.

use super::diagnostic::Diagnostic;
use super::read::{ReadOptions, read};

#[derive(Clone, Debug, Default)]
pub struct ValidateOptions {
    pub strict: bool,
}

/// All findings about one document, errors and warnings, in document order.
pub fn validate(input: &[u8], file: &str, options: &ValidateOptions) -> Vec<Diagnostic> {
    match read(input, file, &ReadOptions { strict: options.strict }) {
        Ok(output) => output.warnings,
        Err(error) => vec![*error.0],
    }
}
