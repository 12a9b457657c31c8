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
//! - [`engine`]: the plan-time view of a run ([`engine::plan_instance`]), running a
//!   plan ([`engine::run_plan`]) with health checks and plan status, the inventory and
//!   pruning, Operator/OperatorVersion install, and uninstall.
//!
//! A failed run or install is an [`engine::EngineError`]: plain fields saying where,
//! what kind of trouble and whether retrying can help, which the provider turns into
//! diagnostics.
//!
//! # Example
//!
//! Preview an instance's `deploy` plan as `terraform plan` does, then run it:
//!
//! ```rust,no_run
//! use std::collections::BTreeMap;
//! use std::path::Path;
//!
//! use kudo_engine::cluster::{Cluster, ConnectionSettings};
//! use kudo_engine::engine::{self, CrdDeletion, HealthPolicy, PlanFailure, Prior, RunRequest};
//! use kudo_package::Package;
//! use kudo_plan::{Desired, Inputs};
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
//! let parameters = BTreeMap::from([("NODE_COUNT".to_string(), "3".to_string())]);
//! let desired = Desired::new(Inputs {
//!     package: &package,
//!     instance: "zk",
//!     namespace: "default",
//!     parameters: &parameters,
//!     seed: None,
//!     dependencies: None,
//! })?;
//!
//! // A new instance: no objects from an earlier run, no earlier parameters.
//! let prior = Prior { objects: &[], parameters: None, drifted: &[] };
//! let plan = engine::plan_instance(
//!     &cluster,
//!     &desired,
//!     "deploy",
//!     &prior,
//!     engine::CrdSafety::default(),
//!     engine::Contents::Skip,
//! );
//! match plan.await {
//!     Ok(plan) => match &plan.changes {
//!         Some(changes) => {
//!             for object in &changes.create {
//!                 println!("create {}", engine::label(object));
//!             }
//!         }
//!         None => println!("the changes are known only after the apply"),
//!     },
//!     // The apply would fail the same way: stop before writing anything.
//!     Err(PlanFailure::Refused { summary, error }) => {
//!         return Err(format!("{summary}: {error}").into());
//!     }
//!     // Not knowable now (say, the cluster is unreachable); the run checks again.
//!     Err(PlanFailure::Unknown(note)) => println!("{}: {}", note.summary, note.detail),
//! }
//!
//! // The Instance the run writes names its OperatorVersion, so that goes in first
//! // (what a `kudo_operator` resource does).
//! engine::install_operator(&cluster, &package, "default").await?;
//! let outcome = engine::run_plan(
//!     &cluster,
//!     RunRequest {
//!         package: &package,
//!         instance: "zk",
//!         namespace: "default",
//!         parameters: &parameters,
//!         plan: "deploy",
//!         previous_inventory: &[],
//!         render_seed: None,
//!         dependencies: None,
//!         crd_deletion: CrdDeletion::default(),
//!         crd_safety: engine::CrdSafety::default(),
//!         // KUDO's own health rules; `HealthPolicy::Ready` adds CEL and kstatus rules.
//!         health: &HealthPolicy::Kudo,
//!         progress: None,
//!      tree: Default::default() },
//!     &CancellationToken::new(),
//! )
//! .await?;
//! println!("{} objects managed", outcome.inventory.len());
//! # Ok(())
//! # }
//! ```

// `EngineError` keeps the shape promised in docs/design/interfaces.md (plain fields the
// provider maps to diagnostics); it is only built on the failure path, so its size on the
// `Err` side does not matter.
#![allow(clippy::result_large_err)]

pub mod cluster;
pub mod engine;
