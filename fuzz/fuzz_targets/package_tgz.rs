//! Package archives: arbitrary bytes as a `.tgz` (or plain tar), then the package
//! built from what the archive reader accepts.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kudo_fuzz::package_tgz(data);
});
