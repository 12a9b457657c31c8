//! The namespace a `kudo_operator` or `kudo_instance` lives in: whether it must exist
//! already, creating it for `create_namespace` (as KUDO's `--create-namespace` and
//! helm_release's `create_namespace` do), and removing it again on destroy.
//!
//! A namespace the provider creates carries the label
//! `app.kubernetes.io/managed-by: terraform-provider-kudo` and one annotation per
//! resource that asked for it (`namespace-users.kudo.dev/<hash>` = `kudo_instance ns/web`).
//! A destroy removes its own annotation, and deletes the namespace only when no other
//! resource's annotation is left and nothing but the objects Kubernetes puts in every
//! namespace remains: so the last of several resources sharing it removes it, and a
//! namespace someone else created, or put objects into, stays (with a warning saying
//! why). Annotations are added and removed by merge patches, which leave the other
//! resources' annotations alone even when two applies run at once.

use std::fmt;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::cluster::{Cluster, ClusterError, FIELD_MANAGER, ObjectRef};

use super::error::EngineError;

/// The label that marks a namespace this provider created.
pub const NAMESPACE_MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// The prefix of the annotations naming the resources a created namespace is kept for.
pub const NAMESPACE_USER_PREFIX: &str = "namespace-users.kudo.dev/";

/// The resource a namespace is created for: `kudo_operator <ns>/<operator>` or
/// `kudo_instance <ns>/<name>`. The operator's name (not its version) identifies it, so
/// an upgrade stays the same user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceUser(String);

impl NamespaceUser {
    pub fn operator(namespace: &str, operator: &str) -> Self {
        NamespaceUser(format!("kudo_operator {namespace}/{operator}"))
    }

    pub fn instance(namespace: &str, name: &str) -> Self {
        NamespaceUser(format!("kudo_instance {namespace}/{name}"))
    }

    /// The annotation key: names can be 253 characters, an annotation name only 63, so
    /// the key holds a hash and the value the readable name.
    fn key(&self) -> String {
        let digest = Sha256::digest(self.0.as_bytes());
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("{NAMESPACE_USER_PREFIX}{hex}")
    }
}

impl fmt::Display for NamespaceUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the plan found: the namespace is there, or the apply creates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamespacePlan {
    Exists,
    Create,
}

impl NamespacePlan {
    /// The Namespace the apply creates first, when it does: the plan shows it first among
    /// the instance's creates (the dry-run of what goes into it cannot be judged until it
    /// exists).
    pub fn created(self, namespace: &str) -> Option<ObjectRef> {
        (self == NamespacePlan::Create).then(|| namespace_ref(namespace))
    }
}

/// Why a resource cannot go into its namespace.
#[derive(Debug, thiserror::Error)]
pub enum NamespaceProblem {
    /// Missing, and the resource does not create it.
    #[error("namespace {namespace} does not exist")]
    Missing { namespace: String },
    /// Being deleted: nothing can be created in it, nor can it be created again yet.
    #[error("namespace {namespace} is being deleted")]
    Terminating { namespace: String },
    /// Reading or creating it failed (a refusal of these credentials included): the
    /// same error at plan (dry-run) and at apply.
    #[error(transparent)]
    Cluster(Box<EngineError>),
}

impl NamespaceProblem {
    /// What to do about it, in full sentences.
    pub fn advice(&self) -> String {
        match self {
            NamespaceProblem::Missing { namespace } => format!(
                "Nothing in this configuration is known to create it. Either create it first (`kubectl create namespace {namespace}`); or, when another resource of this configuration creates it, set `namespace` from that resource's attribute (for example `namespace = kubernetes_namespace.this.metadata[0].name`), which orders the two and leaves the namespace unknown until that resource exists (with only `depends_on` and a literal name the plan still checks a namespace that is not there yet); or set `create_namespace = true` so that this resource creates it, and removes it on destroy when nothing else is left in it."
            ),
            NamespaceProblem::Terminating { namespace } => format!(
                "Nothing can be created in namespace {namespace} until Kubernetes has finished deleting it (`kubectl get namespace {namespace}` shows it Terminating). Wait until it is gone, then create it again (or set `create_namespace = true`), or point this resource at another namespace."
            ),
            NamespaceProblem::Cluster(_) => String::new(),
        }
    }
}

fn namespace_ref(namespace: &str) -> ObjectRef {
    ObjectRef::new("v1", "Namespace", None, namespace)
}

fn is_terminating(ns: &Value) -> bool {
    ns.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
        || ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
}

fn created_by_us(ns: &Value) -> bool {
    ns.pointer("/metadata/labels")
        .and_then(|l| l.get(NAMESPACE_MANAGED_BY_LABEL))
        .and_then(Value::as_str)
        == Some(FIELD_MANAGER)
}

/// The resources a created namespace is kept for, as their annotations name them.
fn users(ns: &Value) -> Vec<(String, String)> {
    ns.pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with(NAMESPACE_USER_PREFIX))
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect()
}

/// The Namespace object the provider creates for `user`.
fn manifest(namespace: &str, user: &NamespaceUser) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": namespace,
            "labels": { NAMESPACE_MANAGED_BY_LABEL: FIELD_MANAGER },
            "annotations": { user.key(): user.to_string() },
        },
    })
}

/// What reading the Namespace object showed.
enum Seen {
    Found(Value),
    Missing,
    /// These credentials may not read it (a tenant whose Role does not grant `get` on
    /// its namespace): whether it exists shows only when something is written there.
    Unreadable,
}

async fn read(cluster: &Cluster, namespace: &str) -> Result<Seen, NamespaceProblem> {
    match cluster.get(&namespace_ref(namespace)).await {
        Ok(Some(ns)) => Ok(Seen::Found(ns)),
        Ok(None) => Ok(Seen::Missing),
        Err(e) if e.code() == Some(403) => Ok(Seen::Unreadable),
        Err(e) => Err(NamespaceProblem::Cluster(Box::new(e.into()))),
    }
}

/// The plan's check: the namespace exists, or `create` is set and these credentials may
/// create it (a server-side dry-run, so RBAC and admission answer as at apply).
pub async fn plan_namespace(
    cluster: &Cluster,
    namespace: &str,
    create: Option<&NamespaceUser>,
) -> Result<NamespacePlan, NamespaceProblem> {
    let namespace_s = namespace.to_string();
    match (read(cluster, namespace).await?, create) {
        (Seen::Found(ns), _) if is_terminating(&ns) => Err(NamespaceProblem::Terminating {
            namespace: namespace_s,
        }),
        // Created by this provider for another resource that this apply creates first
        // (Terraform plans again then): this one joins it, which the plan shows as
        // both plans must agree.
        (Seen::Found(ns), Some(user))
            if created_by_us(&ns) && !users(&ns).iter().any(|(k, _)| *k == user.key()) =>
        {
            Ok(NamespacePlan::Create)
        }
        (Seen::Found(_), _) => Ok(NamespacePlan::Exists),
        // The dry-runs of what goes into it, and the apply, tell.
        (Seen::Unreadable, None) => Ok(NamespacePlan::Exists),
        (Seen::Missing, None) => Err(NamespaceProblem::Missing {
            namespace: namespace_s,
        }),
        // Asked whether creating it is allowed, the server answers as at apply (403
        // before 409: credentials that may not create namespaces are refused even
        // when it exists, as they would be at apply).
        (Seen::Missing | Seen::Unreadable, Some(user)) => {
            match cluster.create(&manifest(namespace, user), true).await {
                Ok(_) => Ok(NamespacePlan::Create),
                // Created meanwhile (another resource of this apply's plan): it is there.
                Err(e) if e.code() == Some(409) => Ok(NamespacePlan::Exists),
                Err(e) => Err(NamespaceProblem::Cluster(Box::new(create_error(
                    namespace, e,
                )))),
            }
        }
    }
}

fn create_error(namespace: &str, e: ClusterError) -> EngineError {
    EngineError::from(e).context(format!("creating namespace {namespace}"))
}

/// What [`ensure_namespace`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ensured {
    /// It was there, not created by this provider (or not asked to create it).
    Existed,
    /// Created for this resource.
    Created,
    /// Created by this provider for another resource: this one is now kept too.
    Joined,
}

/// The apply's check, before anything is written: the namespace must exist, or is
/// created for `create`. A missing namespace is never a failure that retrying helps.
pub async fn ensure_namespace(
    cluster: &Cluster,
    namespace: &str,
    create: Option<&NamespaceUser>,
) -> Result<Ensured, NamespaceProblem> {
    let existing = read(cluster, namespace).await?;
    let existing = match (existing, create) {
        (Seen::Found(ns), _) if is_terminating(&ns) => {
            return Err(NamespaceProblem::Terminating {
                namespace: namespace.to_string(),
            });
        }
        (Seen::Found(ns), _) => ns,
        // What is written there tells (as a NamespaceGone error, never retryable).
        (Seen::Unreadable, None) => return Ok(Ensured::Existed),
        (Seen::Missing, None) => {
            return Err(NamespaceProblem::Missing {
                namespace: namespace.to_string(),
            });
        }
        (Seen::Missing | Seen::Unreadable, Some(user)) => {
            match cluster.create(&manifest(namespace, user), false).await {
                Ok(_) => return Ok(Ensured::Created),
                // Another resource of the same apply created it first: join it below.
                Err(e) if e.code() == Some(409) => match read(cluster, namespace).await? {
                    Seen::Found(ns) => ns,
                    Seen::Unreadable => return Ok(Ensured::Existed),
                    Seen::Missing => {
                        return Err(NamespaceProblem::Cluster(Box::new(create_error(
                            namespace, e,
                        ))));
                    }
                },
                Err(e) => {
                    return Err(NamespaceProblem::Cluster(Box::new(create_error(
                        namespace, e,
                    ))));
                }
            }
        }
    };
    let Some(user) = create else {
        return Ok(Ensured::Existed);
    };
    if !created_by_us(&existing) {
        return Ok(Ensured::Existed);
    }
    let key = user.key();
    if users(&existing).iter().any(|(k, _)| *k == key) {
        return Ok(Ensured::Joined);
    }
    let patch = json!({ "metadata": { "annotations": { key: user.to_string() } } });
    cluster
        .merge_patch(&namespace_ref(namespace), &patch)
        .await
        .map_err(|e| NamespaceProblem::Cluster(Box::new(e.into())))?;
    Ok(Ensured::Joined)
}

/// What [`release_namespace`] did with the namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Released {
    /// Deleted (or already gone).
    Deleted,
    /// Left in place, for the reason given.
    Kept(Kept),
}

/// Why a namespace the resource asked to create stays after its destroy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// It existed before the resource: `create_namespace` did not create it.
    NotCreated { namespace: String },
    /// Other resources that set `create_namespace` still use it.
    Shared {
        namespace: String,
        users: Vec<String>,
    },
    /// Objects nobody of the configuration put there are still in it.
    Foreign {
        namespace: String,
        objects: Vec<String>,
    },
}

impl Kept {
    pub fn namespace(&self) -> &str {
        match self {
            Kept::NotCreated { namespace }
            | Kept::Shared { namespace, .. }
            | Kept::Foreign { namespace, .. } => namespace,
        }
    }
}

/// How many objects a [`Kept::Foreign`] text names.
const NAMED: usize = 10;

impl fmt::Display for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kept::NotCreated { namespace } => write!(
                f,
                "Namespace {namespace} existed before this resource was created, so `create_namespace` did not create it and destroy leaves it in place."
            ),
            Kept::Shared { namespace, users } => write!(
                f,
                "Namespace {namespace} is kept for {}, which also set `create_namespace = true`; the last of them destroyed removes it.",
                users.join(", ")
            ),
            Kept::Foreign { namespace, objects } => {
                let mut named = objects
                    .iter()
                    .take(NAMED)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ");
                if objects.len() > NAMED {
                    named.push_str(&format!(" and {} more", objects.len() - NAMED));
                }
                write!(
                    f,
                    "Namespace {namespace} was created by `create_namespace`, but it still holds objects this configuration did not put there: {named}. Deleting the namespace would delete them too, so it stays: delete it yourself (`kubectl delete namespace {namespace}`) once they are no longer needed."
                )
            }
        }
    }
}

/// Objects the cluster itself puts in every namespace, and events, which are records
/// rather than anyone's objects: they never keep a namespace.
fn is_default(obj: &Value) -> bool {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    matches!(
        (kind, name),
        ("Event", _) | ("ConfigMap", "kube-root-ca.crt") | ("ServiceAccount", "default")
    ) || written_only_by_controller_managers(obj)
}

/// Whether every field manager of `obj` is a controller manager: what the cluster put
/// there on its own, whatever its name. Distributions add their own defaults to each
/// namespace (OpenShift's kube-controller-manager writes `openshift-service-ca.crt`,
/// its openshift-controller-manager the `builder` and `deployer` ServiceAccounts; 1.24
/// clusters a `default-token-*` Secret), so a list of names cannot be complete, while
/// an object anyone created carries their own manager (kubectl, Terraform, an
/// operator) in `managedFields`. Objects a controller makes for someone else's object
/// (a ReplicaSet, a Pod) come with that owner, which keeps the namespace by itself.
fn written_only_by_controller_managers(obj: &Value) -> bool {
    let managers: Vec<&str> = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f.get("manager").and_then(Value::as_str))
        .collect();
    !managers.is_empty() && managers.iter().all(|m| m.ends_with("controller-manager"))
}

/// Being deleted already: it goes whether or not the namespace does.
fn is_going(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// After the resource's own objects are gone: removes `user` from the namespace's
/// users and deletes the namespace when it was created by this provider, no other
/// resource uses it, and only Kubernetes' own objects are left in it.
pub async fn release_namespace(
    cluster: &Cluster,
    namespace: &str,
    user: &NamespaceUser,
    cancel: &CancellationToken,
) -> Result<Released, EngineError> {
    let r = namespace_ref(namespace);
    let Some(ns) = cluster.get(&r).await? else {
        return Ok(Released::Deleted);
    };
    let key = user.key();
    let users = users(&ns);
    if !created_by_us(&ns) || !users.iter().any(|(k, _)| *k == key) {
        return Ok(Released::Kept(Kept::NotCreated {
            namespace: namespace.to_string(),
        }));
    }
    let patch = json!({ "metadata": { "annotations": { key.clone(): null } } });
    cluster.merge_patch(&r, &patch).await?;
    let mut others: Vec<String> = users
        .into_iter()
        .filter(|(k, _)| *k != key)
        .map(|(_, v)| v)
        .collect();
    if !others.is_empty() {
        others.sort();
        return Ok(Released::Kept(Kept::Shared {
            namespace: namespace.to_string(),
            users: others,
        }));
    }
    let mut foreign: Vec<String> = cluster
        .list_labelled_map(namespace, "", |obj| {
            (!is_default(&obj) && !is_going(&obj)).then(|| {
                ObjectRef::from_object(&obj)
                    .map(|o| o.label())
                    .unwrap_or_default()
            })
        })
        .await?;
    if !foreign.is_empty() {
        foreign.sort();
        return Ok(Released::Kept(Kept::Foreign {
            namespace: namespace.to_string(),
            objects: foreign,
        }));
    }
    cluster.delete_and_wait(&r, cancel).await?;
    Ok(Released::Deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_keys_are_valid_annotation_names_and_differ_per_resource() {
        let a = NamespaceUser::instance("team-a", &"x".repeat(253));
        let b = NamespaceUser::operator("team-a", "zookeeper");
        let name = a.key();
        let local = name.strip_prefix(NAMESPACE_USER_PREFIX).unwrap_or_default();
        assert!(local.len() <= 63 && !local.is_empty(), "{name}");
        assert_ne!(a.key(), b.key());
        assert_eq!(b.to_string(), "kudo_operator team-a/zookeeper");
    }

    #[test]
    fn only_kubernetes_own_objects_and_events_never_keep_a_namespace() {
        let obj = |kind: &str, name: &str| json!({"kind": kind, "metadata": {"name": name}});
        assert!(is_default(&obj("ConfigMap", "kube-root-ca.crt")));
        assert!(is_default(&obj("ServiceAccount", "default")));
        assert!(is_default(&obj("Event", "web.1234")));
        assert!(!is_default(&obj("ConfigMap", "settings")));
        assert!(!is_default(&obj("ServiceAccount", "builder")));
        // What a distribution's controllers add is told by who wrote it.
        let written_by = |name: &str, managers: &[&str]| {
            let fields: Vec<Value> = managers.iter().map(|m| json!({"manager": m})).collect();
            json!({"kind": "ConfigMap", "metadata": {"name": name, "managedFields": fields}})
        };
        assert!(is_default(&written_by(
            "openshift-service-ca.crt",
            &["kube-controller-manager"]
        )));
        assert!(is_default(&written_by(
            "builder",
            &["openshift-controller-manager"]
        )));
        assert!(!is_default(&written_by(
            "settings",
            &["kubectl-client-side-apply"]
        )));
        assert!(!is_default(&written_by(
            "settings",
            &["kube-controller-manager", "terraform-provider-kudo"]
        )));
        assert!(!is_default(&written_by("settings", &[])));
        let going = json!({"kind": "Pod", "metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z"}});
        assert!(is_going(&going));
    }

    #[test]
    fn a_created_namespace_is_recognised_by_its_label_and_users() {
        let user = NamespaceUser::instance("ns", "web");
        let ns = manifest("ns", &user);
        assert!(created_by_us(&ns));
        assert_eq!(users(&ns), vec![(user.key(), user.to_string())]);
        assert!(!is_terminating(&ns));
        let other =
            json!({"metadata": {"name": "ns", "labels": {NAMESPACE_MANAGED_BY_LABEL: "Helm"}}});
        assert!(!created_by_us(&other));
    }

    #[test]
    fn a_kept_namespace_says_why() {
        let kept = Kept::Foreign {
            namespace: "ns".into(),
            objects: (0..12).map(|i| format!("ConfigMap ns/c{i}")).collect(),
        };
        let text = kept.to_string();
        assert!(
            text.contains("ConfigMap ns/c0") && text.contains("and 2 more"),
            "{text}"
        );
        let shared = Kept::Shared {
            namespace: "ns".into(),
            users: vec!["kudo_operator ns/zookeeper".into()],
        };
        assert!(
            shared
                .to_string()
                .contains("the last of them destroyed removes it")
        );
        let missing = NamespaceProblem::Missing {
            namespace: "ns".into(),
        };
        assert!(missing.advice().contains("create_namespace = true"));
        assert!(missing.advice().contains("kubectl create namespace ns"));
    }
}
