//! Package folders: a tree of files, folders, symbolic and hard links built in a
//! temporary folder from the input, then loaded.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|tree: kudo_fuzz::Tree| {
    kudo_fuzz::package_dir(&tree);
});
