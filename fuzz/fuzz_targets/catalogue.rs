//! cargo-fuzz target: the robustness contract of the catalogue readers (`-c`, `-N`; see
//! `xaifbooster::fuzz`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use xaifbooster::fuzz::{Target, check};

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = check(Target::Catalogue, data) {
        panic!("contract violated: {violation}");
    }
});
