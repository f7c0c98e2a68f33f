//! Support for the command line that is worth testing without the binary: how inputs are read
//! (`input`), how outputs reach files, devices and pipes (`output`), how findings and the debug log are worded (`log`),
//! batch mode over many inputs (`batch`), and the Graphviz views of a document (`dot`).
//! The binary (`src/main.rs`) parses arguments and prints; the decisions are made here.

pub mod batch;
pub mod dot;
pub mod input;
pub mod log;
pub mod memory;
pub mod output;
