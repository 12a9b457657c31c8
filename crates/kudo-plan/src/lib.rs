//! The desired state of a KUDO instance, worked out without a cluster.
//!
//! One walk over plan -> phase -> step -> task ([`Desired`]) decides what every task
//! does, under one rule each for Toggle and `enablingParameter` values ([`switch_on`]),
//! dependency instance names and seeds, and pipe artifact names ([`names`]); and one
//! function decides which plan a change runs ([`decide`]). The engine executes these
//! decisions against a cluster; the plan-time preview, pruning, the dependency tree an
//! instance creates ([`build_tree`], shown as the provider's `children`), its `outputs`,
//! and the `render` command are views of them. Nothing here talks to Kubernetes.
//!
//! # Example
//!
//! The desired state of one instance, and what each task of its `deploy` plan would do.
//! The same walk serves the plan-time preview and the run, which is why a plan and an
//! apply report a broken template or parameter with the same words.
//!
//! ```rust,no_run
//! use std::collections::BTreeMap;
//! use std::path::Path;
//!
//! use kudo_package::Package;
//! use kudo_plan::{Action, Desired, Inputs};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let package = Package::load_dir(Path::new("operators/zookeeper"))?;
//! let parameters = BTreeMap::from([("NODE_COUNT".to_string(), "3".to_string())]);
//! // Only invalid parameters fail here; a plan that cannot be walked fails when asked for.
//! let desired = Desired::new(Inputs {
//!     package: &package,
//!     instance: "zk",
//!     namespace: "default",
//!     parameters: &parameters,
//!     // No seed: the random template functions fall back to "namespace/name".
//!     seed: None,
//!     // No resolved dependencies: only folders next to this package are looked at.
//!     dependencies: None,
//! })?;
//! println!("effective parameters: {:?}", desired.effective);
//!
//! for step in desired.plan("deploy")?.steps() {
//!     for task in &step.tasks {
//!         let what = match &task.action {
//!             Action::Apply(objects) => format!("applies {} objects", objects.len()),
//!             Action::Delete(objects) => format!("deletes {} objects", objects.len()),
//!             Action::Pipe { files, .. } => format!("stores {} pipe files", files.len()),
//!             Action::Child(child) if child.enabled => "ensures a dependency".to_string(),
//!             Action::Child(_) => "removes a dependency".to_string(),
//!             Action::Webhook(_) => "calls a webhook (at apply time only)".to_string(),
//!             Action::Dummy { .. } => "is a Dummy task".to_string(),
//!         };
//!         let at = &step.location;
//!         println!("{}/{}: task {} {what}", at.phase, at.step, task.name);
//!     }
//! }
//! # Ok(())
//! # }
//! ```

// `PlanError` carries its location as plain fields the engine and the provider copy into
// their own errors; it is only built on the failure path, so its size does not matter.
#![allow(clippy::result_large_err)]

pub mod change;
mod decide;
pub mod dependency;
pub mod downgrade;
mod error;
mod location;
pub mod names;
mod objects;
pub mod pipe;
mod render;
pub mod select;
pub mod status;
mod switch;
pub mod tree;
pub mod verify;
mod walk;
pub mod webhook;
pub mod write_only;

/// The plan a new instance runs, and the one a change runs when nothing else fits
/// (KUDO's `deploy`, which every package must have).
pub const DEFAULT_PLAN: &str = "deploy";

pub use change::{
    Change, ChangeRequest, ChildView, PlanChoice, PriorInstance, Refusal, RollbackTo, RunStatus,
    Seed, Shown, decide_change, rollback_plan,
};
pub use decide::{
    Concern, DecideError, Decision, LastRun, Prior, Reason, Wanted as WantedChange, decide,
};
pub use dependency::DependencyPackages;
pub use downgrade::{Downgrade, Version};
pub use error::{PlanError, located_text};
pub use location::Location;
pub use names::{child_instance_name, child_seed, pipe_artifact_name, pipe_pod_name};
pub use render::{RenderContext, Rendered, merge_patch, package_path};
pub use select::{
    ImmutableChange, ImmutableReplacement, changed_parameters, check_immutable, immutable_changes,
    select_plan, unknown_plan,
};
pub use status::{ExecutionStatus, PlanStatus};
pub use switch::{Switched, switch_on};
pub use tree::{Child, Tree, TreeError, build_tree, has_dependency_tasks, known_tree};
pub use verify::verify;
pub use walk::{
    Action, ChildPlan, ChildTarget, Desired, Inputs, PhaseOutline, PhaseWalk, PipeFile,
    PlanOutline, PlanWalk, StepWalk, TaskWalk, Wanted,
};
pub use webhook::{WebhookCall, WebhookError};
