//! Support for the command line that is worth testing without the binary: how findings and
//! the debug log are worded (`log`), batch mode over many inputs (`batch`) and the Graphviz
//! views of a document (`dot`). The binary (`src/main.rs`) parses arguments and prints.

pub mod batch;
pub mod dot;
pub mod log;
