//! The resource types the simulator serves and the discovery documents describing them.

use serde_json::{Value, json};

/// One served group/version/resource.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub has_status: bool,
    /// Registered by a CustomResourceDefinition (removed with it).
    pub from_crd: bool,
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group` as Kubernetes names a resource in messages (`deployments.apps`).
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }
}

#[allow(clippy::too_many_arguments)]
fn builtin(
    group: &str,
    version: &str,
    plural: &str,
    kind: &str,
    namespaced: bool,
    short: &[&str],
    has_status: bool,
) -> ResourceType {
    ResourceType {
        group: group.into(),
        version: version.into(),
        plural: plural.into(),
        singular: kind.to_ascii_lowercase(),
        kind: kind.into(),
        namespaced,
        short_names: short.iter().map(|s| s.to_string()).collect(),
        has_status,
        from_crd: false,
    }
}

/// Kinds used by the KUDO operator packages and the provider itself.
pub fn builtins() -> Vec<ResourceType> {
    vec![
        builtin("", "v1", "namespaces", "Namespace", false, &["ns"], true),
        builtin("", "v1", "configmaps", "ConfigMap", true, &["cm"], false),
        builtin("", "v1", "secrets", "Secret", true, &[], false),
        builtin("", "v1", "services", "Service", true, &["svc"], true),
        builtin(
            "",
            "v1",
            "serviceaccounts",
            "ServiceAccount",
            true,
            &["sa"],
            false,
        ),
        builtin("", "v1", "pods", "Pod", true, &["po"], true),
        builtin(
            "",
            "v1",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            true,
            &["pvc"],
            true,
        ),
        builtin(
            "",
            "v1",
            "persistentvolumes",
            "PersistentVolume",
            false,
            &["pv"],
            true,
        ),
        builtin("", "v1", "events", "Event", true, &["ev"], false),
        builtin(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            true,
            &["deploy"],
            true,
        ),
        builtin(
            "apps",
            "v1",
            "statefulsets",
            "StatefulSet",
            true,
            &["sts"],
            true,
        ),
        builtin(
            "apps",
            "v1",
            "replicasets",
            "ReplicaSet",
            true,
            &["rs"],
            true,
        ),
        builtin("apps", "v1", "daemonsets", "DaemonSet", true, &["ds"], true),
        builtin("batch", "v1", "jobs", "Job", true, &[], true),
        builtin("batch", "v1", "cronjobs", "CronJob", true, &["cj"], true),
        builtin(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            true,
            &["pdb"],
            true,
        ),
        // Kubernetes 1.21-1.24 served PDBs at policy/v1 and policy/v1beta1 from one
        // storage; the KUDO packages (zookeeper, kafka) still write v1beta1. Storage is
        // keyed without the version, so this is a second view of the same objects, and
        // v1 stays the group's preferred version because it comes first.
        builtin(
            "policy",
            "v1beta1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            true,
            &["pdb"],
            true,
        ),
        builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "roles",
            "Role",
            true,
            &[],
            false,
        ),
        builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            "RoleBinding",
            true,
            &[],
            false,
        ),
        builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            "ClusterRole",
            false,
            &[],
            false,
        ),
        builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            false,
            &[],
            false,
        ),
        builtin(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            &["crd", "crds"],
            true,
        ),
        builtin(
            "networking.k8s.io",
            "v1",
            "ingresses",
            "Ingress",
            true,
            &["ing"],
            true,
        ),
        builtin(
            "storage.k8s.io",
            "v1",
            "storageclasses",
            "StorageClass",
            false,
            &["sc"],
            false,
        ),
    ]
}

/// All served resource types; CRDs add and remove entries at run time.
#[derive(Debug, Clone)]
pub struct Registry {
    types: Vec<ResourceType>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry { types: builtins() }
    }
}

impl Registry {
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
    }

    /// Any served version of a group/resource (objects are stored once per group/resource).
    pub fn find_any_version(&self, group: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.plural == plural)
    }

    /// Whether `kind` in `api_version` is namespaced (`None` when not served).
    pub fn kind_is_namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        let (group, version) = split_api_version(api_version);
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.kind == kind)
            .map(|t| t.namespaced)
    }

    /// Replaces every version registered for `group`/`plural` by `types`.
    pub fn register_crd(&mut self, group: &str, plural: &str, types: Vec<ResourceType>) {
        self.unregister_crd(group, plural);
        self.types.extend(types);
    }

    pub fn unregister_crd(&mut self, group: &str, plural: &str) {
        self.types
            .retain(|t| !(t.from_crd && t.group == group && t.plural == plural));
    }

    /// Groups in first-seen order with their versions (first version preferred).
    fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for t in &self.types {
            if t.group.is_empty() {
                continue;
            }
            match out.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, versions)) => {
                    if !versions.contains(&t.version) {
                        versions.push(t.version.clone());
                    }
                }
                None => out.push((t.group.clone(), vec![t.version.clone()])),
            }
        }
        out
    }

    pub fn has_group_version(&self, group: &str, version: &str) -> bool {
        self.types
            .iter()
            .any(|t| t.group == group && t.version == version)
    }

    /// `GET /api`
    pub fn api_versions(&self) -> Value {
        json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]
        })
    }

    fn group_doc(group: &str, versions: &[String]) -> Value {
        let vs: Vec<Value> = versions
            .iter()
            .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
            .collect();
        json!({"name": group, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
    }

    /// `GET /apis`
    pub fn api_group_list(&self) -> Value {
        let groups: Vec<Value> = self
            .groups()
            .iter()
            .map(|(g, vs)| Self::group_doc(g, vs))
            .collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    /// `GET /apis/{group}`
    pub fn api_group(&self, group: &str) -> Option<Value> {
        let groups = self.groups();
        let (g, vs) = groups.iter().find(|(g, _)| g == group)?;
        let mut doc = Self::group_doc(g, vs);
        doc["kind"] = json!("APIGroup");
        doc["apiVersion"] = json!("v1");
        Some(doc)
    }

    /// `GET /api/v1` or `GET /apis/{group}/{version}`
    pub fn resource_list(&self, group: &str, version: &str) -> Value {
        let mut resources = Vec::new();
        for t in self
            .types
            .iter()
            .filter(|t| t.group == group && t.version == version)
        {
            let mut r = json!({
                "name": t.plural,
                "singularName": t.singular,
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": t.verbs(),
            });
            if !t.short_names.is_empty() {
                r["shortNames"] = json!(t.short_names);
            }
            resources.push(r);
            if t.has_status {
                resources.push(json!({
                    "name": format!("{}/status", t.plural),
                    "singularName": "",
                    "namespaced": t.namespaced,
                    "kind": t.kind,
                    "verbs": ["get", "patch", "update"],
                }));
            }
            if t.group.is_empty() && t.plural == "pods" {
                resources.push(json!({
                    "name": "pods/exec", "singularName": "", "namespaced": true,
                    "kind": "PodExecOptions", "verbs": ["create", "get"],
                }));
            }
        }
        let gv = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
    }

    /// Aggregated discovery (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`) for the core
    /// group (`core = true`, served at `/api`) or for all named groups (`/apis`).
    pub fn aggregated(&self, core: bool) -> Value {
        let groups: Vec<(String, Vec<String>)> = if core {
            vec![(String::new(), vec!["v1".to_string()])]
        } else {
            self.groups()
        };
        let items: Vec<Value> = groups
            .iter()
            .map(|(g, versions)| {
                let vs: Vec<Value> = versions
                    .iter()
                    .map(|v| {
                        let resources: Vec<Value> = self
                            .types
                            .iter()
                            .filter(|t| &t.group == g && &t.version == v)
                            .map(|t| {
                                let mut subs = Vec::new();
                                if t.has_status {
                                    subs.push(json!({
                                        "subresource": "status",
                                        "responseKind": {"group": t.group, "version": t.version, "kind": t.kind},
                                        "verbs": ["get", "patch", "update"],
                                    }));
                                }
                                json!({
                                    "resource": t.plural,
                                    "responseKind": {"group": t.group, "version": t.version, "kind": t.kind},
                                    "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
                                    "singularResource": t.singular,
                                    "verbs": t.verbs(),
                                    "shortNames": t.short_names,
                                    "subresources": subs,
                                })
                            })
                            .collect();
                        json!({"version": v, "resources": resources, "freshness": "Current"})
                    })
                    .collect();
                json!({"metadata": {"name": g}, "versions": vs})
            })
            .collect();
        json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
    }
}

pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// Resource types a CustomResourceDefinition (apiextensions.k8s.io/v1) declares, one per
/// served version. Returns `None` when the spec lacks what serving needs.
pub fn types_from_crd(crd: &Value) -> Option<(String, String, Vec<ResourceType>)> {
    let spec = crd.get("spec")?;
    let group = spec.get("group")?.as_str()?.to_string();
    let names = spec.get("names")?;
    let plural = names.get("plural")?.as_str()?.to_string();
    let kind = names.get("kind")?.as_str()?.to_string();
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_ascii_lowercase());
    let short_names: Vec<String> = names
        .get("shortNames")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let namespaced = spec.get("scope").and_then(Value::as_str) != Some("Cluster");
    let mut types = Vec::new();
    for v in spec.get("versions")?.as_array()? {
        if v.get("served").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        let Some(version) = v.get("name").and_then(Value::as_str) else {
            continue;
        };
        let has_status = v
            .get("subresources")
            .and_then(|s| s.get("status"))
            .is_some();
        types.push(ResourceType {
            group: group.clone(),
            version: version.to_string(),
            plural: plural.clone(),
            singular: singular.clone(),
            kind: kind.clone(),
            namespaced,
            short_names: short_names.clone(),
            has_status,
            from_crd: true,
        });
    }
    Some((group, plural, types))
}
