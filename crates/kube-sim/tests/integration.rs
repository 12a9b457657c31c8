//! One test binary for the crate's integration tests: each module was its own
//! binary before, and every extra binary links the whole dependency tree again,
//! which costs minutes and gigabytes on a two-core CI machine.

mod common;
mod conversions;

mod discovery_auth;
mod lifecycle;
mod rbac;
mod ssa;
mod versions;
mod watch_faults_exec;
mod workloads;
