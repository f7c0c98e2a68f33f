//! cargo-fuzz target: the robustness contract of the streaming driver, tangent and adjoint, with
//! no checks running beside it (see `xaifbooster::fuzz`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use xaifbooster::fuzz::{Target, check};

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = check(Target::Streamed, data) {
        panic!("contract violated: {violation}");
    }
});
