//! Support for the command line that is worth testing without the binary: how inputs are read
//! (`input`), how outputs reach files, devices and pipes (`output`), how findings and the debug log are worded (`log`),
//! batch mode over many inputs (`batch`), the Graphviz views of a document (`dot`), how the
//! allocator is set up (`memory`) and how the process starts (`process`).
//! The binary (`src/main.rs`) parses arguments and prints; the decisions are made here.

pub mod batch;
pub mod dot;
pub mod input;
pub mod log;
pub mod memory;
pub mod output;
pub mod process;
