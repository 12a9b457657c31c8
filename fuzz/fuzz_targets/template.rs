//! The template parser and renderer: arbitrary text as a KUDO template, rendered with
//! a fixed set of variables (string, array and map parameters, a pipe file), and what
//! renders split into documents and read as YAML, as the engine does.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kudo_fuzz::template(data);
});
