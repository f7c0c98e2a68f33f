//! The XML boundary: everything that knows XAIF is XML lives here.

pub mod check;
pub mod diagnostic;
pub mod intrinsics;
pub mod read;
pub mod validate;
pub mod write;

pub use diagnostic::{Diagnostic, Severity};
pub use read::{ReadError, ReadOptions, ReadOutput, read};
pub use write::{WriteOptions, write};
