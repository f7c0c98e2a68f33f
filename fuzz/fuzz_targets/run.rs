//! cargo-fuzz target: the robustness contract of `run` (see `xaifbooster::fuzz`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use xaifbooster::fuzz::{Target, check};

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = check(Target::Run, data) {
        panic!("contract violated: {violation}");
    }
});
