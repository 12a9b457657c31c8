//! The desired state of a KUDO instance, worked out without a cluster.
//!
//! One walk over plan -> phase -> step -> task ([`Desired`]) decides what every task
//! does, under one rule each for Toggle and `enablingParameter` values ([`switch_on`]),
//! dependency instance names and seeds, and pipe artifact names ([`names`]); and one
//! function decides which plan a change runs ([`decide`]). The engine executes these
//! decisions against a cluster; the plan-time preview, pruning, the provider's
//! `children` and `outputs`, and the `render` command are views of them. Nothing here
//! talks to Kubernetes.

// `PlanError` carries its location as plain fields the engine and the provider copy into
// their own errors; it is only built on the failure path, so its size does not matter.
#![allow(clippy::result_large_err)]

mod decide;
pub mod dependency;
mod error;
mod location;
pub mod names;
pub mod pipe;
mod render;
pub mod select;
mod switch;
mod walk;
pub mod webhook;

pub use decide::{
    Concern, DecideError, Decision, LastRun, Prior, Reason, Wanted as WantedChange, decide,
};
pub use dependency::DependencyPackages;
pub use error::{PlanError, located_text};
pub use location::Location;
pub use names::{child_instance_name, child_seed, pipe_artifact_name, pipe_pod_name};
pub use render::{RenderContext, Rendered, merge_patch, package_path};
pub use select::{changed_parameters, check_immutable, select_plan, unknown_plan};
pub use switch::{Switched, switch_on};
pub use walk::{
    Action, ChildPlan, ChildTarget, Desired, Inputs, PhaseWalk, PipeFile, PlanWalk, StepWalk,
    TaskWalk, Wanted,
};
pub use webhook::{WebhookCall, WebhookError};
