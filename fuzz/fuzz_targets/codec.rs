//! DynamicValue codecs: a cty type and bytes decoded as msgpack and as JSON, and what
//! decodes encoded again.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kudo_fuzz::codec(data);
});
