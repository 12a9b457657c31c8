//! KUDO's plan engine: which plan runs, running it (phases, steps, tasks, health, plan
//! status), the Operator/OperatorVersion objects, pruning and uninstall.

mod action;
mod apply;
mod apply_run;
mod change;
mod concurrent;
mod crd_safety;
mod decisions;
mod dependency;
mod destroy;
mod drift;
mod error;
mod health;
mod import;
mod installed_package;
mod instance_object;
mod kudo_objects;
mod manifests;
mod metadata;
mod namespace;
mod observe;
mod operator;
mod operator_action;
mod operator_tree;
mod ownership;
mod pipe;
mod plan_run;
mod planning;
mod pod_trouble;
mod preview;
mod progress;
mod prune;
mod readiness;
mod refresh;
mod removal;
mod rollback;
mod run;
mod sensitive;
mod sharing;
mod tree;
mod tree_load;
mod uninstall;
mod volumes;
mod wait;
mod webhook;
mod write_only;
pub use action::{
    ActionRefusal, ActionRequest, PreparedAction, instance_parameters, prepare_action, run_action,
};
pub use apply::{ApplyAnswer, apply_change};
pub use apply_run::{Applied, ApplyRequest, OnFailure, PackageSource};
pub use change::{PlanChangeRequest, PlanRefusal, Planned, plan_change};
pub use crd_safety::CrdSafety;
pub use decisions::{DependencyAction, TreeRecord};
pub use destroy::{DestroyRequest, Destroyed, destroy_instance};
pub use drift::FieldDrift;
pub use error::EngineError;
pub use import::{ImportRequest, Imported, import_instance};
pub use instance_object::InstanceReadError;
pub use kudo_objects::{ListFilter, list_instances, list_operators};
pub use manifests::Manifests;
pub use namespace::{NamespaceProblem, Released};
pub use operator::load_operator;
pub use operator_action::{
    OperatorApplied, OperatorRequest, apply_operator, destroy_operator, plan_operator,
};
pub use operator_tree::{InstalledTree, OperatorFailure};
pub use planning::{Changes, PlanNote};
pub use preview::rendered_objects;
pub use progress::Progress;
pub use readiness::HealthSettings;
pub use refresh::{DriftMode, DriftSettings, RefreshRequest, Refreshed, refresh};
pub use removal::{CrdDeletion, DestroyError, Kept};
pub use rollback::RolledBack;
pub use tree::TreePlan;
pub use tree_load::{TreeLoadError, load_operator_tree};

// The layers under the actions, for the crate's kube-sim scenarios (`crate::scenarios`).
#[cfg(test)]
pub(crate) use decisions::{DependencyRecords, TreePrior};
#[cfg(test)]
pub(crate) use drift::{IgnoredPath, field_drift};
#[cfg(test)]
pub(crate) use health::{Health, health};
#[cfg(test)]
pub(crate) use instance_object::instance_ref;
#[cfg(test)]
pub(crate) use kudo_plan::DependencyPackages;
#[cfg(test)]
pub(crate) use manifests::Source;
#[cfg(test)]
pub(crate) use metadata::{LABEL_HERITAGE, LABEL_INSTANCE, LABEL_OPERATOR};
#[cfg(test)]
pub(crate) use namespace::{NamespaceUser, ensure_namespace};
#[cfg(test)]
pub(crate) use operator::install_operator;
#[cfg(test)]
pub(crate) use operator_tree::InstalledVersion;
#[cfg(test)]
pub(crate) use plan_run::{run_plan, run_plan_with_sensitive};
#[cfg(test)]
pub(crate) use planning::{Contents, InstancePlan, PlanFailure, Prior, plan_instance};
#[cfg(test)]
pub(crate) use preview::{
    Answers, PlannedObject, PreviewAction, desired_state, preview_plan, preview_walk, render_plan,
};
#[cfg(test)]
pub(crate) use readiness::{HealthPolicy, ReadyRules};
#[cfg(test)]
pub(crate) use run::{RunOutcome, RunRequest};
#[cfg(test)]
pub(crate) use sensitive::{ANNOTATION_SENSITIVE, read_sensitive, sensitive_secret_ref};
#[cfg(test)]
pub(crate) use sharing::ANNOTATION_USED_BY;
#[cfg(test)]
pub(crate) use tree::{TreeRequest, plan_tree};
#[cfg(test)]
pub(crate) use uninstall::{Cleanup, uninstall_instance};

/// A string map from literal pairs, for tests of parameter maps.
#[cfg(test)]
pub(crate) fn string_map(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
