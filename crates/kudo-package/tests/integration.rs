//! One test binary for the crate's integration tests: each module was its own
//! binary before, and every extra binary links the whole dependency tree again,
//! which costs minutes and gigabytes on a two-core CI machine.

mod common;

mod bad_input;
mod broken;
mod dependencies;
mod fixtures;
mod outputs;
mod sources;
mod webhook;
