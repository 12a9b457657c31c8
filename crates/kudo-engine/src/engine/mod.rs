//! KUDO's plan engine: which plan runs, running it (phases, steps, tasks, health, plan
//! status), the Operator/OperatorVersion objects, pruning and uninstall.

mod action;
mod apply;
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
mod instance_object;
mod kudo_objects;
mod manifests;
mod metadata;
mod namespace;
mod object_names;
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
mod status;
mod tree;
mod tree_load;
mod uninstall;
mod volumes;
mod wait;
mod webhook;
mod write_only;
pub use action::{
    ActionRefusal, ActionRequest, ActionRun, ParameterRefusal, PreparedAction, Running,
    RunningError, prepare_action, run_action, running,
};
pub use apply::{Applied, ApplyRequest, apply_change};
pub use change::{ChangeOptions, ClusterPrior, PlanRefusal, Planned, plan_change};
pub use crd_safety::CrdSafety;
pub use decisions::{DependencyAction, DependencyRecords, TreeDecisions, TreePrior};
pub use destroy::{DestroyError, DestroyRequest, Destroyed, destroy_instance};
pub use drift::{FieldDrift, IgnoredPath, field_drift};
pub use error::EngineError;
pub use health::{Health, health};
pub use import::{ImportError, ImportRequest, Imported, import_instance};
pub use instance_object::instance_ref;
pub use kudo_objects::{ListFilter, list_instances, list_operators, operator_versions_of};
pub use kudo_plan::DependencyPackages;
pub use manifests::manifest_entries;
pub use metadata::{LABEL_HERITAGE, LABEL_INSTANCE, LABEL_OPERATOR};
pub use namespace::{
    NamespacePlan, NamespaceProblem, NamespaceUser, Released, ensure_namespace, plan_namespace,
};
pub use object_names::{label, qualified_label};
pub use observe::{LIST_FROM, applied_fields_fingerprint};
pub use operator::{install_operator, load_operator};
pub use operator_action::{
    OperatorApplied, OperatorDestroyed, OperatorFailure, OperatorRequest, apply_operator,
    destroy_operator, plan_operator,
};
pub use operator_tree::{InstallFailure, InstalledTree, InstalledVersion};
pub use ownership::InstanceHolders;
pub use plan_run::{run_plan, run_plan_with_sensitive};
pub use planning::{
    Changes, Contents, InstancePlan, PlanFailure, PlanNote, Prior, Source, current_of,
    plan_instance,
};
pub use preview::{Answers, PreviewAction, desired_state, preview_plan, preview_walk, render_plan};
pub use progress::Progress;
pub use prune::unwanted;
pub use readiness::{HealthPolicy, HealthSettings, ReadyRules, judge};
pub use refresh::{DriftMode, DriftSettings, RefreshRequest, Refreshed, refresh};
pub use removal::{CrdDeletion, Kept};
pub use rollback::{ANNOTATION_MIGRATES_DATA, migrating_objects, roll_back};
pub use run::{RunOutcome, RunRequest};
pub use sensitive::{ANNOTATION_SENSITIVE, read_sensitive, sensitive_secret_ref};
pub use sharing::ANNOTATION_USED_BY;
pub use status::{ExecutionStatus, PlanStatus};
pub use tree::{TreePlan, TreeRequest, plan_tree};
pub use tree_load::{CLUSTER_SOURCE, TreeLoadError, load_operator_tree, parse_operator_id};
pub use uninstall::{Cleanup, uninstall_instance};
pub use volumes::{NotChecked, SettleError};
pub use write_only::{
    AlsoIn, SetTwice, Unsent, WriteOnlySource, join_write_only, plan_write_only, read_write_only,
    write_only_source,
};

/// A string map from literal pairs, for tests of parameter maps.
#[cfg(test)]
pub(crate) fn string_map(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
