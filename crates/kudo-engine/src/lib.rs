//! KUDO's plan engine, run from the Terraform provider instead of an in-cluster
//! controller.
//!
//! - [`cluster`]: the Kubernetes API (client from provider settings, discovery,
//!   server-side apply, delete-and-wait, the KUDO CRDs).
//! - [`engine`]: plan selection and execution, health, plan status, inventory, prune,
//!   uninstall.

// `EngineError` keeps the shape promised in docs/design/interfaces.md (plain fields the
// provider maps to diagnostics); it is only built on the failure path, so its size on the
// `Err` side does not matter.
#![allow(clippy::result_large_err)]

pub mod cluster;
pub mod engine;
