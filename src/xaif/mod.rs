//! The XML boundary: everything that knows XAIF is XML lives here.

pub mod check;
pub mod crowded;
pub mod diagnostic;
pub mod intrinsics;
mod lexer;
pub(crate) mod markup;
pub mod read;
pub mod validate;
mod words;
pub mod write;

pub use diagnostic::{Diagnostic, Severity};
pub use read::{ReadError, ReadOptions, ReadOutput, read};
pub use write::{WriteOptions, write};

/// The input as text. Every run checks the whole document once (the reader, the checks): with
/// SIMD the check costs a tenth of the standard library's on mostly ASCII XAIF (about 2.4
/// instructions per byte, 3% of a corpus tangent run). Only a failure is checked again, by
/// the standard library, for the place of the first bad byte.
pub(crate) fn utf8(input: &[u8]) -> Result<&str, std::str::Utf8Error> {
    match simdutf8::basic::from_utf8(input) {
        Ok(text) => Ok(text),
        Err(_) => std::str::from_utf8(input),
    }
}
