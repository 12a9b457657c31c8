//! KUDO's plan engine: which plan runs, running it (phases, steps, tasks, health, plan
//! status), the Operator/OperatorVersion objects, pruning and uninstall.

mod action;
mod apply;
mod change;
mod concurrent;
mod crd_safety;
mod dependency;
mod drift;
mod error;
mod health;
mod import;
mod instance_object;
mod kudo_objects;
mod manifests;
mod metadata;
mod namespace;
mod observe;
mod operator;
mod operator_tree;
mod ownership;
mod pipe;
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
pub use change::{ChangeOptions, ClusterPrior, PlanRefusal, Planned, plan_change, refusal_of};
pub use crd_safety::{CrdReport, CrdSafety, Finding as CrdFinding, Rule as CrdRule, check_crd};
pub use drift::{FieldDrift, IgnoredPath, NotAFieldPath, field_drift, object_drift};
pub use error::{EngineError, Location};
pub use health::{Health, health};
pub use import::{Found, ImportError, find_instance};
pub use instance_object::{InstanceObject, PlanExecution, PlanState};
pub use kudo_objects::{
    ListFilter, ListedInstance, ListedOperator, installed_operators, list_instances,
    list_operators, operator_versions_of,
};
pub use kudo_plan::DependencyPackages;
pub use kudo_plan::{changed_parameters, check_immutable, select_plan};
pub use manifests::{manifest_entries, manifest_entry};
pub use metadata::{
    ANNOTATION_PHASE, ANNOTATION_PLAN, ANNOTATION_STEP, LABEL_HERITAGE, LABEL_INSTANCE,
    LABEL_OPERATOR,
};
pub use namespace::{
    Ensured, Kept as NamespaceKept, NAMESPACE_MANAGED_BY_LABEL, NAMESPACE_USER_PREFIX,
    NamespacePlan, NamespaceProblem, NamespaceUser, Released, ensure_namespace, plan_namespace,
    release_namespace,
};
pub use observe::{LIST_FROM, applied_fields_fingerprint, live_objects};
pub use operator::{
    check_operator, install_operator, instances_using, load_operator, operator_ref,
    operator_version_ref, uninstall_operator,
};
pub use operator_tree::{
    InstallFailure, InstallRequest, Installed, InstalledTree, InstalledVersion, NotRemoved,
    check_install, dependency_install_sequence, install_tree, uninstall_tree,
};
pub use ownership::{InstanceHolders, parent_instance};
pub use planning::{
    Changes, Contents, InstancePlan, PlanFailure, PlanNote, Prior, Remaining, Source, classify,
    current, current_of, label, plan_instance, qualified_label, translation_notes,
};
pub use preview::{
    Answers, PlannedObject, PreviewAction, PreviewObject, desired_state, preview_objects,
    preview_plan, preview_plan_only, preview_walk, preview_walk_only, render_plan,
};
pub use progress::{Progress, ProgressChange, ProgressEvent};
pub use prune::unwanted;
pub use readiness::{HealthPolicy, HealthSettings, ReadyRules, RuleError, judge};
pub use refresh::{DriftMode, DriftSettings, RefreshRequest, Refreshed, refresh};
pub use removal::{CrdDeletion, Kept, KeptReason};
pub use rollback::{
    ANNOTATION_MIGRATES_DATA, RollbackError, RolledBack, migrating_objects, roll_back,
};
pub use run::{
    AnsweredWrite, RunOutcome, RunRequest, WriteAnswers, run_plan, run_plan_with_sensitive,
};
pub use sensitive::{
    ANNOTATION_SENSITIVE, read_sensitive, sensitive_secret_name, sensitive_secret_ref,
};
pub use sharing::{ANNOTATION_USED_BY, user_id};
pub use status::{ExecutionStatus, PhaseStatus, PlanStatus, StepStatus, plan_status_of};
pub use tree::{
    DependencyAction, DependencyDecision, DependencyPlan, DependencyRecord, DependencyRecords,
    TreeDecisions, TreePlan, TreePrior, TreeRequest, decide as decide_tree, plan_tree,
};
pub use tree_load::{
    CLUSTER_SOURCE, TreeLoadError, cluster_source, load_operator_tree, parse_operator_id,
};
pub use uninstall::{Cleanup, descendant_objects, uninstall_instance, uninstall_instance_keeping};
pub use volumes::{
    ClaimSource, InstanceVolumes, NotChecked, SettleError, claim_sources, claims, delete_claims,
};
pub use webhook::CallError as WebhookCallError;
pub use write_only::{
    AlsoIn, SetTwice, Unsent, WriteOnlyPlan, WriteOnlySource, join_write_only, plan_write_only,
    read_write_only, stored_write_only, write_only_source,
};

use crate::cluster::{KUDO_API_VERSION, ObjectRef};

/// The Instance object of `name` in `namespace`.
pub fn instance_ref(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::new(KUDO_API_VERSION, "Instance", Some(namespace), name)
}

/// A string map from literal pairs, for tests of parameter maps.
#[cfg(test)]
pub(crate) fn string_map(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
