//! Scenarios against kube-sim: plans planned, run, drifted, pruned and removed the way
//! the provider's actions do, one file per subject. They live inside the crate (not in
//! `tests/`) because they build on the engine's layers (planning, the run, the tree)
//! that the crate's public face, its actions, does not export.

mod common;

mod agreement;
mod apply_failure;
mod cluster;
mod crd_lag;
mod destroy;
mod dry_run_reuse;
mod handed_plan;
mod installed_package;
mod operator_tree;
mod plan_package;
mod plans;
mod sensitive;
mod sharing;
mod tree_agreement;
mod waits;
mod write_only;
