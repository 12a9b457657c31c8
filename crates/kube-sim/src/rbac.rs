//! Authorization as the API server's RBAC authorizer decides it
//! (kubernetes.io/docs/reference/access-authn-authz/rbac/): the Roles, ClusterRoles,
//! RoleBindings and ClusterRoleBindings in the store, plus the discovery rules the
//! bootstrap policy grants every authenticated user (`system:discovery`,
//! `system:public-info-viewer`, `system:basic-user`). Members of `system:masters` are
//! allowed everything. A refusal is the API server's 403, worded as it words it.
//!
//! Not simulated: aggregated ClusterRoles (`aggregationRule`), and the escalation
//! checks on writing Roles and bindings (`escalate`, `bind`).

use serde_json::{Value, json};

use crate::api_error::ApiError;
use crate::auth::Identity;
use crate::store::Store;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// What a request asks to do, as the API server's request-info resolver describes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Resource {
        verb: String,
        group: String,
        resource: String,
        subresource: Option<String>,
        /// Empty for cluster-scoped requests (and requests across all namespaces).
        namespace: String,
        /// Empty for requests without a name (create, list, watch).
        name: String,
    },
    NonResource {
        verb: String,
        path: String,
    },
}

/// The non-resource URLs the bootstrap ClusterRoles `system:discovery` and
/// `system:public-info-viewer` open to every authenticated user (verb `get`).
const DISCOVERY_URLS: &[&str] = &[
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/openapi",
    "/openapi/*",
    "/readyz",
    "/version",
    "/version/",
];

/// Whether `who` may make `request`; the API server's 403 otherwise.
pub fn authorize(store: &Store, who: &Identity, request: &Request) -> Result<(), ApiError> {
    if who.is_master() || builtin_allows(request) || bindings_allow(store, who, request) {
        return Ok(());
    }
    Err(forbidden(who, request))
}

fn builtin_allows(request: &Request) -> bool {
    match request {
        Request::NonResource { verb, path } => {
            verb == "get" && DISCOVERY_URLS.iter().any(|u| url_matches(u, path))
        }
        // system:basic-user: anyone may ask what they may do.
        Request::Resource {
            verb,
            group,
            resource,
            ..
        } => {
            verb == "create"
                && ((group == "authorization.k8s.io"
                    && matches!(
                        resource.as_str(),
                        "selfsubjectaccessreviews" | "selfsubjectrulesreviews"
                    ))
                    || (group == "authentication.k8s.io" && resource == "selfsubjectreviews"))
        }
    }
}

fn strings<'a>(v: &'a Value, field: &str) -> impl Iterator<Item = &'a str> {
    v[field]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Every binding in `namespace` (cluster-scoped ones: `namespace` empty) of `plural`.
fn objects<'a>(
    store: &'a Store,
    plural: &'a str,
    namespace: &'a str,
) -> impl Iterator<Item = &'a Value> {
    store
        .objects
        .iter()
        .filter(move |(k, _)| {
            k.group == RBAC_GROUP && k.plural == plural && k.namespace == namespace
        })
        .map(|(_, v)| v)
}

fn named<'a>(store: &'a Store, plural: &str, namespace: &str, name: &str) -> Option<&'a Value> {
    store.objects.iter().find_map(|(k, v)| {
        (k.group == RBAC_GROUP && k.plural == plural && k.namespace == namespace && k.name == name)
            .then_some(v)
    })
}

/// Whether a binding's subject is `who` (`rbac/v1` `appliesToUser`): a ServiceAccount
/// subject without a namespace is in the binding's.
fn subject_is(subject: &Value, who: &Identity, binding_namespace: &str) -> bool {
    let name = subject["name"].as_str().unwrap_or_default();
    match subject["kind"].as_str() {
        Some("User") => who.user == name,
        Some("Group") => who.in_group(name),
        Some("ServiceAccount") => {
            let ns = subject["namespace"]
                .as_str()
                .filter(|n| !n.is_empty())
                .unwrap_or(binding_namespace);
            who.user == format!("system:serviceaccount:{ns}:{name}")
        }
        _ => false,
    }
}

/// The rules a binding grants: its Role's (in the binding's namespace) or ClusterRole's.
fn granted<'a>(store: &'a Store, binding: &Value, namespace: &str) -> Vec<&'a Value> {
    let role_name = binding["roleRef"]["name"].as_str().unwrap_or_default();
    let role = match binding["roleRef"]["kind"].as_str() {
        Some("Role") if !namespace.is_empty() => named(store, "roles", namespace, role_name),
        Some("ClusterRole") => named(store, "clusterroles", "", role_name),
        _ => None,
    };
    role.and_then(|r| r["rules"].as_array())
        .map(|rules| rules.iter().collect())
        .unwrap_or_default()
}

fn bindings_allow(store: &Store, who: &Identity, request: &Request) -> bool {
    let applies = |binding: &Value, ns: &str| {
        binding["subjects"]
            .as_array()
            .is_some_and(|subjects| subjects.iter().any(|s| subject_is(s, who, ns)))
    };
    let cluster_wide = objects(store, "clusterrolebindings", "")
        .filter(|b| applies(b, ""))
        .flat_map(|b| granted(store, b, ""));
    let namespace = match request {
        Request::Resource { namespace, .. } => namespace.as_str(),
        Request::NonResource { .. } => "",
    };
    let in_namespace: Vec<&Value> = match namespace {
        "" => Vec::new(),
        ns => objects(store, "rolebindings", ns)
            .filter(|b| applies(b, ns))
            .flat_map(|b| granted(store, b, ns))
            .collect(),
    };
    cluster_wide
        .chain(in_namespace)
        .any(|rule| rule_allows(rule, request))
}

/// `rbac/v1` `RuleAllows`: verbs, API groups, resources (with `*` and `*/sub`) and
/// resource names; or verbs and non-resource URLs (exact, or a prefix ending in `*`).
pub fn rule_allows(rule: &Value, request: &Request) -> bool {
    let has = |field: &str, value: &str| strings(rule, field).any(|v| v == "*" || v == value);
    match request {
        Request::Resource {
            verb,
            group,
            resource,
            subresource,
            name,
            ..
        } => {
            let combined = match subresource {
                Some(sub) => format!("{resource}/{sub}"),
                None => resource.clone(),
            };
            let resource_matches = strings(rule, "resources").any(|r| {
                r == "*"
                    || r == combined
                    || subresource
                        .as_deref()
                        .is_some_and(|sub| r.strip_prefix("*/") == Some(sub))
            });
            let mut names = strings(rule, "resourceNames").peekable();
            let name_matches = names.peek().is_none() || names.any(|n| n == name);
            has("verbs", verb) && has("apiGroups", group) && resource_matches && name_matches
        }
        Request::NonResource { verb, path } => {
            has("verbs", verb) && strings(rule, "nonResourceURLs").any(|u| url_matches(u, path))
        }
    }
}

fn url_matches(rule: &str, path: &str) -> bool {
    match rule.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => rule == path,
    }
}

/// The API server's 403 (`responsewriters.ForbiddenStatusError`): `<resource>[.<group>]
/// ["<name>"] is forbidden: User "<user>" cannot <verb> resource "<resource>[/<sub>]" in
/// API group "<group>" in the namespace "<ns>"` (or `at the cluster scope`), details
/// naming the group, the resource (as `kind`) and the name.
pub fn forbidden(who: &Identity, request: &Request) -> ApiError {
    match request {
        Request::NonResource { verb, path } => ApiError::forbidden(format!(
            "forbidden: User {:?} cannot {verb} path {path:?}",
            who.user
        ))
        .with_details(json!({})),
        Request::Resource {
            verb,
            group,
            resource,
            subresource,
            namespace,
            name,
        } => {
            let combined = match subresource {
                Some(sub) => format!("{resource}/{sub}"),
                None => resource.clone(),
            };
            let scope = match namespace.as_str() {
                "" => "at the cluster scope".to_string(),
                ns => format!("in the namespace {ns:?}"),
            };
            let reason = format!(
                "User {:?} cannot {verb} resource {combined:?} in API group {group:?} {scope}",
                who.user
            );
            let qualified = match group.as_str() {
                "" => resource.clone(),
                g => format!("{resource}.{g}"),
            };
            let message = match name.as_str() {
                "" => format!("{qualified} is forbidden: {reason}"),
                n => format!("{qualified} {n:?} is forbidden: {reason}"),
            };
            let mut details = json!({"kind": resource});
            if !group.is_empty() {
                details["group"] = json!(group);
            }
            if !name.is_empty() {
                details["name"] = json!(name);
            }
            ApiError::forbidden(message).with_details(details)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(verb: &str, group: &str, resource: &str, sub: Option<&str>, name: &str) -> Request {
        Request::Resource {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: sub.map(str::to_string),
            namespace: "team-a".into(),
            name: name.into(),
        }
    }

    // kubernetes.io/docs/reference/access-authn-authz/rbac/#referring-to-resources
    #[test]
    fn rules_match_verbs_groups_resources_subresources_and_names() {
        let rule = json!({"apiGroups": ["kudo.dev"], "resources": ["instances", "instances/status"], "verbs": ["get", "patch"]});
        assert!(rule_allows(
            &rule,
            &res("patch", "kudo.dev", "instances", Some("status"), "x")
        ));
        assert!(!rule_allows(
            &rule,
            &res("delete", "kudo.dev", "instances", None, "x")
        ));
        assert!(!rule_allows(&rule, &res("get", "", "instances", None, "x")));
        assert!(!rule_allows(
            &rule,
            &res("get", "kudo.dev", "operators", None, "x")
        ));
        let any = json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]});
        assert!(rule_allows(
            &any,
            &res("create", "apps", "deployments", Some("scale"), "")
        ));
        let scale = json!({"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["update"]});
        assert!(rule_allows(
            &scale,
            &res("update", "apps", "deployments", Some("scale"), "w")
        ));
        assert!(!rule_allows(
            &scale,
            &res("update", "apps", "deployments", None, "w")
        ));
        let named = json!({"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"], "verbs": ["get", "create"]});
        assert!(rule_allows(
            &named,
            &res("get", "", "configmaps", None, "a")
        ));
        assert!(!rule_allows(
            &named,
            &res("get", "", "configmaps", None, "b")
        ));
        // A create names no object, so a rule limited to names never allows it.
        assert!(!rule_allows(
            &named,
            &res("create", "", "configmaps", None, "")
        ));
        let urls = json!({"nonResourceURLs": ["/healthz", "/metrics/*"], "verbs": ["get"]});
        let path = |p: &str| Request::NonResource {
            verb: "get".into(),
            path: p.into(),
        };
        assert!(rule_allows(&urls, &path("/metrics/x")));
        assert!(!rule_allows(&urls, &path("/metrics")));
        assert!(builtin_allows(&path("/apis/kudo.dev/v1beta1")));
        assert!(!builtin_allows(&path("/metrics")));
    }

    // kubernetes.io/docs/reference/access-authn-authz/authorization/#determine-whether-a-request-is-allowed-or-denied
    #[test]
    fn refusals_are_worded_as_the_api_server_words_them() {
        let who = crate::auth::service_account("team-a", "tenant");
        let e = forbidden(&who, &res("create", "", "configmaps", None, ""));
        assert_eq!(
            e.message,
            r#"configmaps is forbidden: User "system:serviceaccount:team-a:tenant" cannot create resource "configmaps" in API group "" in the namespace "team-a""#
        );
        let e = forbidden(
            &who,
            &Request::Resource {
                verb: "get".into(),
                group: "apiextensions.k8s.io".into(),
                resource: "customresourcedefinitions".into(),
                subresource: None,
                namespace: String::new(),
                name: "operators.kudo.dev".into(),
            },
        );
        assert_eq!(
            e.message,
            r#"customresourcedefinitions.apiextensions.k8s.io "operators.kudo.dev" is forbidden: User "system:serviceaccount:team-a:tenant" cannot get resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope"#
        );
        assert_eq!(
            e.to_status()["details"],
            json!({"kind": "customresourcedefinitions", "group": "apiextensions.k8s.io", "name": "operators.kudo.dev"})
        );
    }
}
