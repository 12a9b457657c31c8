//! KUDO's Instance object as the engine and the provider read it: one typed shape, and
//! one rule for what it says about its last run, whoever wrote it (our runs, KUDO's
//! manager, `kubectl`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::error::EngineError;
use crate::cluster::{ClusterError, KUDO_API_VERSION, ObjectRef};

/// Why an existing Instance could not be read with what belongs to it: by an import
/// ([`super::import_instance`]: the Instance, its labelled objects, its Secret) or as
/// [`super::Running`] (the Instance, its operator's package, its Secret). Each reader
/// answers `None` when there is no Instance, and says what that means for it.
#[derive(Debug, thiserror::Error)]
pub enum InstanceReadError {
    #[error("cannot read the instance: {0}")]
    Instance(#[source] ClusterError),
    #[error("cannot list the instance's objects: {0}")]
    Objects(#[source] ClusterError),
    #[error("cannot read the instance's operator: {0}")]
    Operator(#[source] EngineError),
    #[error(
        "Instance {namespace}/{name} runs OperatorVersion {ov_namespace}/{ov_name}, which is not in the cluster."
    )]
    OperatorMissing {
        namespace: String,
        name: String,
        ov_namespace: String,
        ov_name: String,
    },
    #[error("cannot read the sensitive parameters: {0}")]
    Sensitive(#[source] EngineError),
    /// Its values do not fit its package (a parameter gone, a value refused).
    #[error("{}", param_errors(.0))]
    Parameters(Vec<kudo_package::ParamError>),
}

/// One line per refused parameter: `name: why`.
fn param_errors(errors: &[kudo_package::ParamError]) -> String {
    let lines: Vec<String> = errors
        .iter()
        .map(|e| format!("{}: {}", e.parameter, e.message))
        .collect();
    lines.join("\n")
}

/// The fields of a `kudo.dev/v1beta1` Instance anyone here reads. Missing or malformed
/// fields read as empty, so that an Instance nobody finished writing counts as changed
/// or unfinished, never as settled.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InstanceObject {
    pub spec: InstanceSpec,
    pub status: InstanceStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InstanceSpec {
    pub operator_version: OperatorVersionRef,
    /// Values as stored; KUDO writes strings, other writers may not.
    pub parameters: BTreeMap<String, Value>,
    pub plan_execution: Option<PlanExecution>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OperatorVersionRef {
    pub name: String,
    pub namespace: String,
}

/// `spec.planExecution`: our runs keep it; KUDO's manager clears it after a plan.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PlanExecution {
    pub plan_name: String,
    pub uid: String,
    pub status: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InstanceStatus {
    pub plan_status: BTreeMap<String, PlanState>,
    pub aggregated_status: Option<AggregatedStatus>,
}

/// One entry of `status.planStatus`, as far as the last run is concerned.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PlanState {
    pub status: String,
    pub last_updated_timestamp: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AggregatedStatus {
    pub status: String,
    pub active_plan_name: String,
}

/// A part of the object in its typed shape, or the empty one when it does not fit.
fn lenient<T: serde::de::DeserializeOwned + Default>(part: Option<&Value>) -> T {
    part.cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

impl InstanceObject {
    /// Reads an Instance; anything unreadable reads as empty (see the type's docs).
    pub fn from_value(obj: &Value) -> InstanceObject {
        InstanceObject {
            spec: lenient(obj.get("spec")),
            status: lenient(obj.get("status")),
        }
    }

    /// The OperatorVersion the instance runs, as (namespace, name): `spec.operatorVersion`,
    /// in the instance's own `namespace` when it names none (as KUDO writes it).
    pub fn operator_version<'a>(&'a self, namespace: &'a str) -> (&'a str, &'a str) {
        let ov = &self.spec.operator_version;
        let ov_namespace = match ov.namespace.as_str() {
            "" => namespace,
            ns => ns,
        };
        (ov_namespace, ov.name.as_str())
    }

    /// The instance parameters as strings (numbers and booleans as their JSON text,
    /// null as empty), as templates and plan selection see them.
    pub fn parameters(&self) -> BTreeMap<String, String> {
        self.spec
            .parameters
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                (k.clone(), v)
            })
            .collect()
    }

    /// The plan that ran last: the one `spec.planExecution` names (our runs), else
    /// KUDO's `status.aggregatedStatus.activePlanName`, else the plan whose status was
    /// updated last.
    pub fn last_plan(&self) -> Option<String> {
        let named = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
        self.spec
            .plan_execution
            .as_ref()
            .and_then(|p| named(&p.plan_name))
            .or_else(|| {
                self.status
                    .aggregated_status
                    .as_ref()
                    .and_then(|a| named(&a.active_plan_name))
            })
            .or_else(|| {
                self.status
                    .plan_status
                    .iter()
                    .filter(|(_, s)| s.status != "NEVER_RUN" && !s.status.is_empty())
                    .max_by_key(|(_, s)| s.last_updated_timestamp.clone().unwrap_or_default())
                    .map(|(name, _)| name.clone())
            })
    }

    /// How plan `plan` ended (`COMPLETE`, `ERROR`, ...), when the Instance says.
    pub fn plan_status(&self, plan: &str) -> Option<String> {
        let named = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
        self.status
            .plan_status
            .get(plan)
            .and_then(|s| named(&s.status))
            .or_else(|| {
                self.spec
                    .plan_execution
                    .as_ref()
                    .filter(|p| p.plan_name == plan)
                    .and_then(|p| named(&p.status))
            })
            .or_else(|| {
                self.status
                    .aggregated_status
                    .as_ref()
                    .filter(|a| a.active_plan_name == plan)
                    .and_then(|a| named(&a.status))
            })
    }
}

/// The Instance object of `name` in `namespace`.
pub fn instance_ref(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::new(KUDO_API_VERSION, "Instance", Some(namespace), name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn last_plan_by_one_rule() {
        let ours = InstanceObject::from_value(&json!({
            "spec": {"planExecution": {"planName": "update", "status": "IN_PROGRESS"},
                     "parameters": {"N": 3, "S": "x", "E": null}},
            "status": {"planStatus": {"deploy": {"status": "COMPLETE", "lastUpdatedTimestamp": "2026-01-02T00:00:00Z"}}},
        }));
        assert_eq!(ours.last_plan().as_deref(), Some("update"));
        assert_eq!(ours.plan_status("update").as_deref(), Some("IN_PROGRESS"));
        assert_eq!(ours.parameters()["N"], "3");
        assert_eq!(ours.parameters()["E"], "");
        let kudo = InstanceObject::from_value(&json!({
            "status": {"aggregatedStatus": {"status": "COMPLETE", "activePlanName": "deploy"}},
        }));
        assert_eq!(kudo.last_plan().as_deref(), Some("deploy"));
        assert_eq!(kudo.plan_status("deploy").as_deref(), Some("COMPLETE"));
        let by_time = InstanceObject::from_value(&json!({
            "status": {"planStatus": {
                "deploy": {"status": "COMPLETE", "lastUpdatedTimestamp": "2026-01-01T00:00:00Z"},
                "backup": {"status": "ERROR", "lastUpdatedTimestamp": "2026-01-03T00:00:00Z"},
                "restore": {"status": "NEVER_RUN"}}},
        }));
        assert_eq!(by_time.last_plan().as_deref(), Some("backup"));
        let garbage = InstanceObject::from_value(&json!({"spec": "nonsense", "status": 3}));
        assert_eq!(garbage, InstanceObject::default());
        assert_eq!(garbage.last_plan(), None);
    }
}
