//! Support for the command line that is worth testing without the binary: how outputs reach
//! files, devices and pipes (`output`), how findings and the debug log are worded (`log`), and
//! batch mode over many inputs (`batch`).
//! The binary (`src/main.rs`) parses arguments and prints; the decisions are made here.

pub mod batch;
pub mod log;
pub mod memory;
pub mod output;
