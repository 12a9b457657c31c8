//! Field-by-field conversion of objects written for removed API versions.
//!
//! Each group's rules live in a submodule; this module holds the table of which
//! version/kind converts to which ([`successors`]), the entry point ([`convert`]) and
//! the small JSON helpers the rules share. Every rule keeps `metadata` untouched and
//! records what it had to change or drop as a note, so the plan can show it.

use serde_json::{Map, Value};

mod admission;
mod apps;
mod autoscaling;
mod batch;
mod certificates;
mod crd;

pub use crd::{API_APPROVAL_ANNOTATION, UNAPPROVED_CONVERTED, is_protected_group};
mod discovery;
mod networking;
mod policy;
mod rbac;

/// A converted object and what the conversion could not carry over.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The object as the target version spells it, `apiVersion` included.
    pub object: Value,
    /// Human-readable notes on dropped or changed fields ("spec.x has no v1 equivalent;
    /// dropped"). Empty for a lossless conversion.
    pub notes: Vec<String>,
}

/// A conversion that cannot be done (a field whose meaning has no successor, a value
/// of the wrong type).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot convert {kind} {name:?} from {from} to {to}: {message}")]
pub struct ConvertError {
    /// The object's kind.
    pub kind: String,
    /// The object's `metadata.name` (or `generateName`; empty when it has neither).
    pub name: String,
    /// The apiVersion the object was written with.
    pub from: String,
    /// The apiVersion it was to be converted to.
    pub to: String,
    /// What stands in the way.
    pub message: String,
}

const RBAC_KINDS: &[&str] = &["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"];
const RBAC_V1: &[&str] = &["rbac.authorization.k8s.io/v1"];
const APPS_V1: &[&str] = &["apps/v1"];
const HPA: &[&str] = &["HorizontalPodAutoscaler"];
const WEBHOOKS: &[&str] = &[
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// `(written apiVersion, kinds, targets most preferred first)`.
///
/// A later beta is listed after the GA target only where converting to it is the
/// same rule (or a plain apiVersion swap), so that clusters from before the GA
/// version (1.16-1.22) still get a served target.
const TABLE: &[(&str, &[&str], &[&str])] = &[
    ("policy/v1beta1", &["PodDisruptionBudget"], &["policy/v1"]),
    ("rbac.authorization.k8s.io/v1beta1", RBAC_KINDS, RBAC_V1),
    ("rbac.authorization.k8s.io/v1alpha1", RBAC_KINDS, RBAC_V1),
    (
        "apiextensions.k8s.io/v1beta1",
        &["CustomResourceDefinition"],
        &["apiextensions.k8s.io/v1"],
    ),
    ("batch/v1beta1", &["CronJob"], &["batch/v1"]),
    (
        "batch/v2alpha1",
        &["CronJob"],
        &["batch/v1", "batch/v1beta1"],
    ),
    (
        "extensions/v1beta1",
        &["Ingress"],
        &["networking.k8s.io/v1", "networking.k8s.io/v1beta1"],
    ),
    (
        "networking.k8s.io/v1beta1",
        &["Ingress", "IngressClass"],
        &["networking.k8s.io/v1"],
    ),
    (
        "extensions/v1beta1",
        &["NetworkPolicy"],
        &["networking.k8s.io/v1"],
    ),
    (
        "extensions/v1beta1",
        &["Deployment", "DaemonSet", "ReplicaSet"],
        APPS_V1,
    ),
    (
        "apps/v1beta1",
        &["Deployment", "StatefulSet", "ControllerRevision"],
        APPS_V1,
    ),
    (
        "apps/v1beta2",
        &[
            "Deployment",
            "StatefulSet",
            "DaemonSet",
            "ReplicaSet",
            "ControllerRevision",
        ],
        APPS_V1,
    ),
    (
        "autoscaling/v2beta1",
        HPA,
        &["autoscaling/v2", "autoscaling/v2beta2"],
    ),
    ("autoscaling/v2beta2", HPA, &["autoscaling/v2"]),
    (
        "scheduling.k8s.io/v1beta1",
        &["PriorityClass"],
        &["scheduling.k8s.io/v1"],
    ),
    (
        "scheduling.k8s.io/v1alpha1",
        &["PriorityClass"],
        &["scheduling.k8s.io/v1"],
    ),
    (
        "storage.k8s.io/v1beta1",
        &[
            "StorageClass",
            "CSIDriver",
            "CSINode",
            "VolumeAttachment",
            "CSIStorageCapacity",
        ],
        &["storage.k8s.io/v1"],
    ),
    (
        "admissionregistration.k8s.io/v1beta1",
        WEBHOOKS,
        &["admissionregistration.k8s.io/v1"],
    ),
    (
        "coordination.k8s.io/v1beta1",
        &["Lease"],
        &["coordination.k8s.io/v1"],
    ),
    (
        "discovery.k8s.io/v1beta1",
        &["EndpointSlice"],
        &["discovery.k8s.io/v1"],
    ),
    (
        "certificates.k8s.io/v1beta1",
        &["CertificateSigningRequest"],
        &["certificates.k8s.io/v1"],
    ),
];

/// The apiVersions `kind` written at `api_version` converts to, most preferred first
/// (empty when there is no built-in conversion).
pub fn successors(api_version: &str, kind: &str) -> &'static [&'static str] {
    TABLE
        .iter()
        .find(|(from, kinds, _)| *from == api_version && kinds.contains(&kind))
        .map_or(&[], |(_, _, to)| to)
}

/// Converts `obj` (its own `apiVersion`) to `to_api_version`, one of
/// [`successors`]. The result carries `apiVersion: to_api_version`.
pub fn convert(obj: &Value, to_api_version: &str) -> Result<Converted, ConvertError> {
    let from = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = object_name(obj);
    let mut cx = Cx {
        kind,
        name: &name,
        from,
        to: to_api_version,
        notes: Vec::new(),
    };
    if !successors(from, kind).contains(&to_api_version) {
        return Err(cx.err("there is no built-in conversion between these versions"));
    }
    let mut object = obj.clone();
    let root = object
        .as_object_mut()
        .ok_or_else(|| cx.err("the object is not a JSON object"))?;
    match kind {
        "PodDisruptionBudget" => policy::pod_disruption_budget(&mut cx, root)?,
        "RoleBinding" | "ClusterRoleBinding" => rbac::binding(&mut cx, root)?,
        "CustomResourceDefinition" => crd::custom_resource_definition(&mut cx, root)?,
        "CronJob" => batch::cron_job(&mut cx, root)?,
        "Ingress" => networking::ingress(&mut cx, root)?,
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" => apps::workload(&mut cx, root)?,
        "HorizontalPodAutoscaler" => autoscaling::horizontal_pod_autoscaler(&mut cx, root)?,
        "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => {
            admission::webhook_configuration(&mut cx, root)?
        }
        "EndpointSlice" => discovery::endpoint_slice(&mut cx, root)?,
        "CertificateSigningRequest" => certificates::certificate_signing_request(&mut cx, root)?,
        // Every other kind in the table has the same fields in both versions.
        _ => {}
    }
    root.insert(
        "apiVersion".to_string(),
        Value::String(to_api_version.to_string()),
    );
    Ok(Converted {
        object,
        notes: cx.notes,
    })
}

/// `metadata.name`, else `metadata.generateName`, else empty: only for messages.
pub(crate) fn object_name(obj: &Value) -> String {
    let meta = obj.get("metadata");
    meta.and_then(|m| m.get("name"))
        .or_else(|| meta.and_then(|m| m.get("generateName")))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// One conversion in progress: who is converted (for errors) and the notes so far.
pub(crate) struct Cx<'a> {
    pub(crate) kind: &'a str,
    pub(crate) name: &'a str,
    pub(crate) from: &'a str,
    pub(crate) to: &'a str,
    pub(crate) notes: Vec<String>,
}

impl Cx<'_> {
    pub(crate) fn err(&self, message: impl Into<String>) -> ConvertError {
        ConvertError {
            kind: self.kind.to_string(),
            name: self.name.to_string(),
            from: self.from.to_string(),
            to: self.to.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// `parent[key]` as an object; `None` when absent or null (the API treats both
    /// as unset), an error when it is something else.
    pub(crate) fn object<'v>(
        &self,
        parent: &'v mut Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<&'v mut Map<String, Value>>, ConvertError> {
        match parent.get_mut(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map)),
            Some(other) => Err(self.err(format!(
                "{path} must be an object, not {}",
                type_name(other)
            ))),
        }
    }

    /// Like [`Cx::object`], but inserts an empty object when unset, for fields the
    /// conversion has to write into.
    pub(crate) fn object_entry<'v>(
        &self,
        parent: &'v mut Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<&'v mut Map<String, Value>, ConvertError> {
        if parent.get(key).is_none_or(Value::is_null) {
            parent.insert(key.to_string(), Value::Object(Map::new()));
        }
        match parent.get_mut(key) {
            Some(Value::Object(map)) => Ok(map),
            Some(other) => Err(self.err(format!(
                "{path} must be an object, not {}",
                type_name(other)
            ))),
            None => Err(self.err(format!("{path} could not be written"))),
        }
    }

    /// `parent[key]` as an array; `None` when absent or null.
    pub(crate) fn array<'v>(
        &self,
        parent: &'v mut Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<&'v mut Vec<Value>>, ConvertError> {
        match parent.get_mut(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => {
                Err(self.err(format!("{path} must be a list, not {}", type_name(other))))
            }
        }
    }

    /// The objects of the list `parent[key]`, each checked to be an object.
    pub(crate) fn objects<'v>(
        &self,
        parent: &'v mut Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Vec<&'v mut Map<String, Value>>, ConvertError> {
        let Some(items) = self.array(parent, key, path)? else {
            return Ok(Vec::new());
        };
        items
            .iter_mut()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Object(map) => Ok(map),
                other => Err(self.err(format!(
                    "{path}[{i}] must be an object, not {}",
                    type_name(other)
                ))),
            })
            .collect()
    }

    /// `parent[key]` as a string; `None` when absent or null.
    pub(crate) fn string<'v>(
        &self,
        parent: &'v Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<&'v str>, ConvertError> {
        match parent.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => {
                Err(self.err(format!("{path} must be a string, not {}", type_name(other))))
            }
        }
    }

    /// The object's `spec`, which the rules that call this cannot do without.
    pub(crate) fn spec<'v>(
        &self,
        root: &'v mut Map<String, Value>,
    ) -> Result<&'v mut Map<String, Value>, ConvertError> {
        self.object(root, "spec", "spec")?
            .ok_or_else(|| self.err("spec is missing"))
    }
}

/// Writes `value` at `parent[key]` when unset; returns whether it did. Used to keep an
/// old version's default where the successor defaults differently.
pub(crate) fn set_default(parent: &mut Map<String, Value>, key: &str, value: Value) -> bool {
    if parent.get(key).is_none_or(Value::is_null) {
        parent.insert(key.to_string(), value);
        true
    } else {
        false
    }
}

/// The JSON type of `v`, for error messages.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn successors_list_targets_and_unknown_pairs_are_empty() {
        assert_eq!(
            successors("policy/v1beta1", "PodDisruptionBudget"),
            ["policy/v1"]
        );
        assert_eq!(
            successors("extensions/v1beta1", "Ingress"),
            ["networking.k8s.io/v1", "networking.k8s.io/v1beta1"]
        );
        assert!(successors("policy/v1", "PodDisruptionBudget").is_empty());
        assert!(successors("policy/v1beta1", "Widget").is_empty());
        assert!(successors("example.com/v1alpha1", "Widget").is_empty());
    }

    #[test]
    fn unknown_pair_is_an_error() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let err = convert(&obj, "v2").unwrap_err();
        assert_eq!(err.kind, "ConfigMap");
        assert_eq!(err.name, "c");
        assert!(err.to_string().contains("no built-in conversion"), "{err}");
    }

    #[test]
    fn a_non_object_is_an_error_not_a_panic() {
        // Not even apiVersion/kind: no pair matches.
        assert!(convert(&json!([1, 2]), "policy/v1").is_err());
    }

    // Lease coordination.k8s.io/v1beta1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.18/#lease-v1beta1-coordination-k8s-io;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#lease-v1-coordination-k8s-io
    #[test]
    fn same_shape_kinds_only_change_api_version() {
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1beta1",
            "kind": "Lease",
            "metadata": {"name": "operator-lock", "namespace": "kudo-system", "labels": {"a": "b"}},
            "spec": {"holderIdentity": "kudo-0", "leaseDurationSeconds": 15}
        });
        let out = convert(&lease, "coordination.k8s.io/v1").unwrap();
        let mut expected = lease.clone();
        expected["apiVersion"] = json!("coordination.k8s.io/v1");
        assert_eq!(out.object, expected);
        assert!(out.notes.is_empty());
    }

    // PriorityClass scheduling.k8s.io/v1beta1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.16/#priorityclass-v1beta1-scheduling-k8s-io;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#priorityclass-v1-scheduling-k8s-io
    #[test]
    fn priority_class_keeps_value_and_description() {
        let pc = json!({
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PriorityClass",
            "metadata": {"name": "cassandra-high"},
            "value": 1000000,
            "globalDefault": false,
            "description": "Cassandra nodes"
        });
        let out = convert(&pc, "scheduling.k8s.io/v1").unwrap();
        assert_eq!(out.object["value"], 1000000);
        assert_eq!(out.object["apiVersion"], "scheduling.k8s.io/v1");
    }

    // StorageClass storage.k8s.io/v1beta1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.18/#storageclass-v1beta1-storage-k8s-io;
    // CSIDriver v1beta1: same page #csidriver-v1beta1-storage-k8s-io;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#storageclass-v1-storage-k8s-io and #csidriver-v1-storage-k8s-io
    #[test]
    fn storage_kinds_only_change_api_version() {
        for (kind, body) in [
            (
                "StorageClass",
                json!({"provisioner": "kubernetes.io/aws-ebs", "parameters": {"type": "gp2"}, "reclaimPolicy": "Retain"}),
            ),
            (
                "CSIDriver",
                json!({"spec": {"attachRequired": false, "podInfoOnMount": true}}),
            ),
        ] {
            let mut obj = json!({"apiVersion": "storage.k8s.io/v1beta1", "kind": kind, "metadata": {"name": "x"}});
            if let (Some(o), Value::Object(b)) = (obj.as_object_mut(), body) {
                o.extend(b);
            }
            let out = convert(&obj, "storage.k8s.io/v1").unwrap();
            obj["apiVersion"] = json!("storage.k8s.io/v1");
            assert_eq!(out.object, obj, "{kind}");
        }
    }

    // CSINode, VolumeAttachment, CSIStorageCapacity storage.k8s.io/v1beta1:
    // kubernetes.io/docs/reference/generated/kubernetes-api/v1.21/#csinode-v1beta1-storage-k8s-io,
    // #volumeattachment-v1beta1-storage-k8s-io, #csistoragecapacity-v1beta1-storage-k8s-io;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#csinode-v1-storage-k8s-io,
    // #volumeattachment-v1-storage-k8s-io, #csistoragecapacity-v1-storage-k8s-io
    #[test]
    fn other_storage_kinds_only_change_api_version() {
        for obj in [
            json!({"apiVersion": "storage.k8s.io/v1beta1", "kind": "CSINode", "metadata": {"name": "node-1"},
                   "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-0abc", "topologyKeys": ["topology.ebs.csi.aws.com/zone"]}]}}),
            json!({"apiVersion": "storage.k8s.io/v1beta1", "kind": "VolumeAttachment", "metadata": {"name": "csi-123"},
                   "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "node-1", "source": {"persistentVolumeName": "pv-1"}}}),
            json!({"apiVersion": "storage.k8s.io/v1beta1", "kind": "CSIStorageCapacity", "metadata": {"name": "cap-1", "namespace": "kube-system"},
                   "storageClassName": "fast", "capacity": "100Gi",
                   "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}}}),
        ] {
            let out = convert(&obj, "storage.k8s.io/v1").unwrap();
            let mut expected = obj.clone();
            expected["apiVersion"] = json!("storage.k8s.io/v1");
            assert_eq!(out.object, expected);
            assert!(out.notes.is_empty());
        }
    }

    // PriorityClass scheduling.k8s.io/v1alpha1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.16/#priorityclass-v1alpha1-scheduling-k8s-io;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#priorityclass-v1-scheduling-k8s-io
    #[test]
    fn v1alpha1_priority_class_converts_too() {
        let pc = json!({"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "PriorityClass",
                        "metadata": {"name": "low"}, "value": -10, "preemptionPolicy": "Never"});
        let out = convert(&pc, "scheduling.k8s.io/v1").unwrap();
        assert_eq!(out.object["preemptionPolicy"], "Never");
        assert_eq!(out.object["apiVersion"], "scheduling.k8s.io/v1");
    }

    // ClusterRole rbac v1beta1 (aggregationRule): kubernetes.io/docs/reference/generated/kubernetes-api/v1.21/#clusterrole-v1beta1-rbac-authorization-k8s-io;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#clusterrole-v1-rbac-authorization-k8s-io
    #[test]
    fn aggregated_cluster_role_keeps_its_rule() {
        let cr = json!({"apiVersion": "rbac.authorization.k8s.io/v1beta1", "kind": "ClusterRole",
                        "metadata": {"name": "kudo-view"},
                        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.kudo.dev/aggregate-to-view": "true"}}]},
                        "rules": []});
        let out = convert(&cr, "rbac.authorization.k8s.io/v1").unwrap();
        assert_eq!(out.object["aggregationRule"], cr["aggregationRule"]);
    }
}
