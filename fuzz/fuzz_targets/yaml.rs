//! The YAML 1.1 loader: arbitrary text through the node parser, JSON conversion and
//! the emitter.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kudo_fuzz::yaml(data);
});
