//! operator.yaml / params.yaml / a template as in-memory package files, through
//! loading, `verify` and the parameter defaults.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kudo_fuzz::package_files(data);
});
