//! The permission a refusal names: the API server words every RBAC refusal the same
//! way (`k8s.io/apiserver/pkg/endpoints/handlers/responsewriters` `forbiddenMessage`,
//! behind `k8s.io/apimachinery/pkg/api/errors` `NewForbidden`'s `<resource> "<name>" is
//! forbidden: `), so the verb, resource, API group, scope and object can be read back
//! from it and written as the RBAC rule that would allow the request.

/// One refused request, as the API server's 403 message describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forbidden {
    pub user: String,
    pub verb: String,
    /// `resource` or `resource/subresource`; for a non-resource request, the path.
    pub resource: String,
    /// `None` for a non-resource request (a URL path).
    pub group: Option<String>,
    /// `None` at the cluster scope.
    pub namespace: Option<String>,
    /// The object asked for, when the request named one (not for lists and creates
    /// the server refused before reading a name).
    pub name: Option<String>,
}

/// The text between `start` and the next `"` after it, and what follows that quote.
fn quoted<'a>(text: &'a str, start: &str) -> Option<(&'a str, &'a str)> {
    let from = text.find(start)? + start.len();
    let rest = &text[from..];
    let end = rest.find('"')?;
    Some((&rest[..end], &rest[end + 1..]))
}

/// The quoted name right before ` is forbidden: ` in `prefix` (`<resource> "<name>"`).
fn object_name(prefix: &str) -> Option<String> {
    let before = prefix.strip_suffix(" is forbidden: ")?.strip_suffix('"')?;
    let start = before.rfind('"')?;
    Some(before[start + 1..].to_string())
}

impl Forbidden {
    /// The refusal `message` holds (anywhere in it: errors wrap the server's text), as
    /// `User "<u>" cannot <verb> resource "<r>" in API group "<g>" in the namespace
    /// "<ns>"` / `at the cluster scope`, or `User "<u>" cannot <verb> path "<p>"`.
    pub fn parse(message: &str) -> Option<Forbidden> {
        let at = message.find("User \"")?;
        let name = object_name(&message[..at]);
        let (user, rest) = quoted(&message[at..], "User \"")?;
        let rest = rest.strip_prefix(" cannot ")?;
        let (verb, rest) = rest.split_once(' ')?;
        if let Some(path) = rest.strip_prefix("path \"") {
            let (path, _) = path.split_once('"')?;
            return Some(Forbidden {
                user: user.to_string(),
                verb: verb.to_string(),
                resource: path.to_string(),
                group: None,
                namespace: None,
                name: None,
            });
        }
        let (resource, rest) = quoted(rest, "resource \"")?;
        let (group, rest) = quoted(rest, "in API group \"")?;
        let namespace = match rest.trim_start().strip_prefix("in the namespace \"") {
            Some(ns) => Some(ns.split_once('"')?.0.to_string()),
            None if rest.trim_start().starts_with("at the cluster scope") => None,
            None => return None,
        };
        Some(Forbidden {
            user: user.to_string(),
            verb: verb.to_string(),
            resource: resource.to_string(),
            group: Some(group.to_string()),
            namespace,
            name,
        })
    }

    /// The verbs the rule grants: the engine writes objects with server-side apply,
    /// which the API server authorizes as `patch` and, for an object it creates, as
    /// `create` too; a refusal of either needs both.
    fn verbs(&self) -> String {
        let applied = !self.resource.contains('/') && self.group.is_some();
        match self.verb.as_str() {
            "create" | "patch" if applied => "\"create\", \"patch\"".to_string(),
            verb => format!("{verb:?}"),
        }
    }

    /// The RBAC rule that allows the request, as YAML lines (indented by `indent`) a
    /// Role's or ClusterRole's `rules:` takes.
    pub fn rule_yaml(&self, indent: &str) -> String {
        match &self.group {
            Some(group) => format!(
                "{indent}- apiGroups: [{group:?}]\n{indent}  resources: [{:?}]\n{indent}  verbs: [{}]",
                self.resource,
                self.verbs()
            ),
            None => format!(
                "{indent}- nonResourceURLs: [{:?}]\n{indent}  verbs: [{:?}]",
                self.resource, self.verb
            ),
        }
    }

    /// `resource.group` (`clusterroles.rbac.authorization.k8s.io`; the core group has
    /// no suffix), or the path of a non-resource request.
    pub fn qualified_resource(&self) -> String {
        match &self.group {
            Some(g) if !g.is_empty() => format!("{}.{g}", self.resource),
            _ => self.resource.clone(),
        }
    }

    /// Where the request was refused: `in namespace <ns>` or `at the cluster scope`.
    pub fn scope(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("in namespace {ns}"),
            None => "at the cluster scope".to_string(),
        }
    }

    /// Which role, bound how, grants the rule: a Role and RoleBinding in the namespace,
    /// else a ClusterRole and ClusterRoleBinding.
    pub fn grant(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("a Role in namespace {ns} bound to them by a RoleBinding"),
            None => "a ClusterRole bound to them by a ClusterRoleBinding".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The wording of a real 1.36 API server's refusals.
    #[test]
    fn reads_the_api_servers_refusals() {
        let r = Forbidden::parse(
            r#"apply ClusterRole x-reader (rbac.authorization.k8s.io/v1): clusterroles.rbac.authorization.k8s.io "x-reader" is forbidden: User "system:serviceaccount:team-a:tenant" cannot patch resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope (HTTP 403 Forbidden)"#,
        )
        .expect("a refusal");
        assert_eq!(
            r,
            Forbidden {
                user: "system:serviceaccount:team-a:tenant".into(),
                verb: "patch".into(),
                resource: "clusterroles".into(),
                group: Some("rbac.authorization.k8s.io".into()),
                namespace: None,
                name: Some("x-reader".into()),
            }
        );
        assert_eq!(
            r.rule_yaml(""),
            "- apiGroups: [\"rbac.authorization.k8s.io\"]\n  resources: [\"clusterroles\"]\n  verbs: [\"create\", \"patch\"]"
        );
        assert_eq!(
            r.qualified_resource(),
            "clusterroles.rbac.authorization.k8s.io"
        );
        assert_eq!(r.scope(), "at the cluster scope");
        assert!(r.grant().starts_with("a ClusterRole bound to them"));
        let r = Forbidden::parse(
            r#"instances.kudo.dev "app" is forbidden: User "alice" cannot update resource "instances/status" in API group "kudo.dev" in the namespace "team-a""#,
        )
        .expect("a refusal");
        assert_eq!(r.resource, "instances/status");
        assert_eq!(r.name.as_deref(), Some("app"));
        assert!(
            r.rule_yaml("").ends_with("verbs: [\"update\"]"),
            "{}",
            r.rule_yaml("")
        );
        assert_eq!(r.namespace.as_deref(), Some("team-a"));
        assert_eq!(
            r.grant(),
            "a Role in namespace team-a bound to them by a RoleBinding"
        );
        let r = Forbidden::parse(
            r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "b""#,
        )
        .expect("a list refusal");
        assert_eq!(r.qualified_resource(), "configmaps");
        assert_eq!(r.name, None);
        let r = Forbidden::parse(r#"forbidden: User "bob" cannot get path "/apis""#).expect("path");
        assert_eq!(
            r.rule_yaml(""),
            "- nonResourceURLs: [\"/apis\"]\n  verbs: [\"get\"]"
        );
        assert_eq!(Forbidden::parse("Unauthorized"), None);
    }
}
