//! One test binary for the crate's integration tests: each module was its own
//! binary before, and every extra binary links the whole dependency tree again,
//! which costs minutes and gigabytes on a two-core CI machine.

mod common;

mod agreement;
mod cluster;
mod destroy;
mod handed_plan;
mod operator_tree;
mod plans;
mod sensitive;
mod sharing;
mod tree_agreement;
mod waits;
