//! The resource types the simulator serves and the discovery documents describing them.

use kube_api_versions::{BuiltinKind, Release};
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

    /// `Kind.group` as validation messages name the kind (`Deployment.apps`, `Service`).
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    /// The group whose storage holds these objects. Kubernetes served a few resources
    /// under two groups from one storage: Ingresses under `extensions` (until 1.22) and
    /// `networking.k8s.io`, Events under the core group and `events.k8s.io`.
    pub fn storage_group(&self) -> &str {
        match (self.group.as_str(), self.plural.as_str()) {
            ("extensions", "ingresses") => "networking.k8s.io",
            ("events.k8s.io", "events") => "",
            _ => &self.group,
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

impl From<&BuiltinKind> for ResourceType {
    fn from(k: &BuiltinKind) -> Self {
        ResourceType {
            group: k.group.into(),
            version: k.version.into(),
            plural: k.plural.into(),
            singular: k.kind.to_ascii_lowercase(),
            kind: k.kind.into(),
            namespaced: k.namespaced,
            short_names: k.short_names.iter().map(|s| s.to_string()).collect(),
            has_status: k.has_status,
            from_crd: false,
        }
    }
}

/// The built-in kinds `release` serves, every served version of each (a real API server
/// of that release serves exactly these; several versions of one kind share storage).
pub fn builtins(release: Release) -> Vec<ResourceType> {
    release.served().map(ResourceType::from).collect()
}

/// Order of versions within a group as Kubernetes ranks them: GA before beta before
/// alpha, higher numbers first; anything else after, alphabetically. The first served
/// version is the group's preferred one.
pub fn version_priority(a: &str, b: &str) -> std::cmp::Ordering {
    // (stability rank, major, pre-release number); lower sorts first.
    fn key(v: &str) -> Option<(u8, std::cmp::Reverse<u64>, std::cmp::Reverse<u64>)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        let (rank, pre) = if tail.is_empty() {
            (0, 0)
        } else if let Some(n) = tail.strip_prefix("beta") {
            (1, n.parse().ok()?)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (2, n.parse().ok()?)
        } else {
            return None;
        };
        Some((rank, std::cmp::Reverse(major), std::cmp::Reverse(pre)))
    }
    match (key(a), key(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// All served resource types: the built-ins of one Kubernetes release plus what CRDs
/// register and remove at run time.
#[derive(Debug, Clone)]
pub struct Registry {
    release: Release,
    types: Vec<ResourceType>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new(kube_api_versions::CURRENT)
    }
}

impl Registry {
    pub fn new(release: Release) -> Self {
        Registry {
            release,
            types: builtins(release),
        }
    }

    pub fn release(&self) -> Release {
        self.release
    }

    /// Serves the built-ins of `release` instead, keeping CRD-registered types (what a
    /// restarted API server of another release sees with the same storage).
    pub fn set_release(&mut self, release: Release) {
        self.types.retain(|t| t.from_crd);
        self.types.splice(0..0, builtins(release));
        self.release = release;
    }

    /// Whether any type is served in `group`, at any version.
    pub fn serves_group(&self, group: &str) -> bool {
        self.types.iter().any(|t| t.group == group)
    }

    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
    }

    /// The served type for `kind` at `api_version`.
    pub fn find_kind(&self, api_version: &str, kind: &str) -> Option<&ResourceType> {
        let (group, version) = split_api_version(api_version);
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.kind == kind)
    }

    /// A served type of the storage group/resource (objects are stored once per
    /// group/resource, see [`ResourceType::storage_group`]), the preferred version first.
    pub fn find_any_version(&self, storage_group: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .filter(|t| t.storage_group() == storage_group && t.plural == plural)
            .min_by(|a, b| {
                // The resource's own group before one sharing its storage, then priority.
                (a.group != storage_group)
                    .cmp(&(b.group != storage_group))
                    .then_with(|| version_priority(&a.version, &b.version))
            })
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

    /// Groups in first-seen order with their versions in priority order (first preferred).
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
        for (_, versions) in &mut out {
            versions.sort_by(|a, b| version_priority(a, b));
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
            if t.group.is_empty() && t.plural == "serviceaccounts" {
                resources.push(json!({
                    "name": "serviceaccounts/token", "singularName": "", "namespaced": true,
                    "group": "authentication.k8s.io", "version": "v1",
                    "kind": "TokenRequest", "verbs": ["create"],
                }));
            }
            if t.group.is_empty() && t.plural == "pods" {
                resources.push(json!({
                    "name": "pods/exec", "singularName": "", "namespaced": true,
                    "kind": "PodExecOptions", "verbs": ["create", "get"],
                }));
                resources.push(json!({
                    "name": "pods/log", "singularName": "", "namespaced": true,
                    "kind": "Pod", "verbs": ["get"],
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

pub use kube_api_versions::split_api_version;

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
