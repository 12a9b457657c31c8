//! KUDO's plan engine, run from the Terraform provider instead of an in-cluster
//! controller.
//!
//! [`kudo_plan`] works out what an instance's plans want without a cluster; this crate
//! owns everything that needs one. It checks those decisions against the API server
//! while planning (server-side dry-runs, never a write), carries them out when applying,
//! and records the outcome in the cluster: the Instance and its `planStatus`, labels and
//! annotations on every object it applies, and a Secret for sensitive parameters.
//!
//! - [`cluster`]: the Kubernetes API (client from provider settings, discovery,
//!   server-side apply, delete-and-wait, the KUDO CRDs).
//! - [`engine`]: one action per verb the provider serves: plan and apply a change of an
//!   instance ([`engine::plan_change`], [`engine::apply_change`]), refresh, import and
//!   destroy it, run a `kudo_plan` action, install and remove operators. Underneath, the
//!   decisions (planning, preview, the dependency tree) and their execution (the run,
//!   waits, pruning, uninstall) are separate layers the actions call.
//!
//! A failed run or install is an [`engine::EngineError`]: plain fields saying where,
//! what kind of trouble and whether retrying can help, which the provider turns into
//! diagnostics.
//!
//! # Example
//!
//! Plan a new instance's change as `terraform plan` does, then apply what was planned
//! (its OperatorVersion installed first, as the `kudo_operator` resource does):
//!
//! ```rust,no_run
//! use std::collections::BTreeMap;
//! use std::path::Path;
//!
//! use kudo_engine::cluster::{Cluster, ConnectionSettings};
//! use kudo_engine::engine::{self, HealthSettings, PlanChangeRequest, TreeRecord};
//! use kudo_package::Package;
//! use kudo_plan::{ChangeRequest, Seed};
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let settings = ConnectionSettings {
//!     config_path: Some("~/.kube/config".to_string()),
//!     ..Default::default()
//! };
//! let cluster = Cluster::connect(&settings).await?;
//!
//! let package = Package::load_dir(Path::new("operators/zookeeper"))?;
//! let ov_name = package.operator_version_name();
//! let parameters = BTreeMap::from([("NODE_COUNT".to_string(), "3".to_string())]);
//! let no_secrets = BTreeMap::new();
//! let request = ChangeRequest {
//!     name: Some("zk"),
//!     namespace: "default",
//!     operator_version: Some(&ov_name),
//!     package: Some(&package),
//!     parameters: Some(&parameters),
//!     sensitive: &no_secrets,
//!     plan_triggers: None,
//!     // A new instance draws its render seed when it is applied.
//!     seed: Seed::AtApply,
//!     resolution: None,
//!     prior: None,
//!     replacing: false,
//!     allow_downgrade: false,
//! };
//! // A new instance: no record of its tree yet (the caller keeps the records the
//! // engine answers, in Terraform's private state).
//! let record = TreeRecord::default();
//! let plan_request = PlanChangeRequest {
//!     change: &request,
//!     objects: &[],
//!     record: &record,
//!     fresh: true,
//!     crd_safety: engine::CrdSafety::default(),
//!     // Whether the answer carries the objects' manifests.
//!     manifests: false,
//!     // A create: an Instance of that name must not exist yet.
//!     must_not_exist: true,
//!     // The namespace must exist (`true`: the apply creates it).
//!     create_namespace: false,
//!     // The request carries its package, so none is read from the cluster.
//!     operator_namespace: None,
//!     prior_operator_namespace: None,
//!     write_only: None,
//! };
//! // The plan borrows the packages, so it is looked at in the closure; refused (`Err`)
//! // exactly when the apply would fail the same way.
//! let planned = engine::plan_change(Some(&cluster), &plan_request, |_, planned| {
//!     planned.map(|p| {
//!         let changes = p.tree.as_ref().and_then(|t| t.instance.changes.as_ref());
//!         for object in changes.iter().flat_map(|c| &c.create) {
//!             println!("create {}", object.label());
//!         }
//!         // The plan to run, and the decisions for the whole tree, handed to the apply.
//!         (p.change.plan().map(str::to_string), p.record(&record))
//!     })
//! })
//! .await?;
//! let (Some(plan), handed) = planned else {
//!     return Ok(()); // nothing to run, or not known before the apply
//! };
//!
//! let applied = engine::apply_change(
//!     &cluster,
//!     &engine::ApplyRequest {
//!         name: "zk",
//!         namespace: "default",
//!         package: engine::PackageSource::Given(&package),
//!         public: &parameters,
//!         sensitive: &no_secrets,
//!         plan: &plan,
//!         seed: None,
//!         resolution: None,
//!         operator_namespace: "default",
//!         previous: &[],
//!         record: &handed,
//!         fresh: true,
//!         crd_deletion: engine::CrdDeletion::default(),
//!         crd_safety: engine::CrdSafety::default(),
//!         // KUDO's own health rules; `ready: Some(true)` adds CEL and kstatus rules.
//!         health: &HealthSettings::default(),
//!         manifests: false,
//!         progress: None,
//!         must_not_exist: true,
//!         create_namespace: false,
//!         settled: false,
//!         // A failed run stays as it failed (no `rollback_on_failure`).
//!         on_failure: engine::OnFailure::Stay,
//!         write_only: None,
//!     },
//!     &CancellationToken::new(),
//!     // Handed the request as it ran (write-only values joined) and its answer.
//!     |_, answer| answer,
//! )
//! .await?;
//! if let engine::ApplyAnswer::Ran(applied) = applied {
//!     println!("{} objects managed", applied.objects.len());
//! }
//! # Ok(())
//! # }
//! ```

// `EngineError` keeps the shape promised in docs/design/interfaces.md (plain fields the
// provider maps to diagnostics); it is only built on the failure path, so its size on the
// `Err` side does not matter.
#![allow(clippy::result_large_err)]

pub mod cluster;
pub mod engine;

#[cfg(test)]
mod scenarios;
