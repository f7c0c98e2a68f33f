//! Support for the command line that is worth testing without the binary: how outputs reach
//! files, devices and pipes (`output`), and how findings and the debug log are worded (`log`).
//! The binary (`src/main.rs`) parses arguments and prints; the decisions are made here.

pub mod log;
pub mod output;
