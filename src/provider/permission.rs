//! The permission a refusal names: the API server words every RBAC refusal the same
//! way (`k8s.io/apiserver/pkg/endpoints/handlers/responsewriters` `forbiddenMessage`),
//! so the verb, resource, API group and scope can be read back from it and written as
//! the RBAC rule that would allow the request.

/// One refused request, as the API server's 403 message describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub user: String,
    pub verb: String,
    /// `resource` or `resource/subresource`; for a non-resource request, the path.
    pub resource: String,
    /// `None` for a non-resource request (a URL path).
    pub group: Option<String>,
    /// `None` at the cluster scope.
    pub namespace: Option<String>,
}

/// The text between `start` and the next `"` after it, and what follows that quote.
fn quoted<'a>(text: &'a str, start: &str) -> Option<(&'a str, &'a str)> {
    let from = text.find(start)? + start.len();
    let rest = &text[from..];
    let end = rest.find('"')?;
    Some((&rest[..end], &rest[end + 1..]))
}

impl Refused {
    /// The refusal `message` holds (anywhere in it: errors wrap the server's text), as
    /// `User "<u>" cannot <verb> resource "<r>" in API group "<g>" in the namespace
    /// "<ns>"` / `at the cluster scope`, or `User "<u>" cannot <verb> path "<p>"`.
    pub fn parse(message: &str) -> Option<Refused> {
        let (user, rest) = quoted(message, "User \"")?;
        let rest = rest.strip_prefix(" cannot ")?;
        let (verb, rest) = rest.split_once(' ')?;
        if let Some(path) = rest.strip_prefix("path \"") {
            let (path, _) = path.split_once('"')?;
            return Some(Refused {
                user: user.to_string(),
                verb: verb.to_string(),
                resource: path.to_string(),
                group: None,
                namespace: None,
            });
        }
        let (resource, rest) = quoted(rest, "resource \"")?;
        let (group, rest) = quoted(rest, "in API group \"")?;
        let namespace = match rest.trim_start().strip_prefix("in the namespace \"") {
            Some(ns) => Some(ns.split_once('"')?.0.to_string()),
            None if rest.trim_start().starts_with("at the cluster scope") => None,
            None => return None,
        };
        Some(Refused {
            user: user.to_string(),
            verb: verb.to_string(),
            resource: resource.to_string(),
            group: Some(group.to_string()),
            namespace,
        })
    }

    /// The verbs the rule grants: the provider writes objects with server-side apply,
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

    /// What to grant: the role, the binding and the rule.
    pub fn advice(&self) -> String {
        let what = match &self.group {
            Some(g) if !g.is_empty() => format!("{}.{g}", self.resource),
            _ => self.resource.clone(),
        };
        let (role, scope) = match &self.namespace {
            Some(ns) => (
                format!("a Role in namespace {ns} bound to them by a RoleBinding"),
                format!("in namespace {ns}"),
            ),
            None => (
                "a ClusterRole bound to them by a ClusterRoleBinding".to_string(),
                "at the cluster scope".to_string(),
            ),
        };
        format!(
            "These credentials (User {:?}) may not {} {what} {scope}. The API server allows it with {role}, with this rule (docs/guides/permissions.md lists what the provider needs):\n\n{}",
            self.user,
            self.verb,
            self.rule_yaml("  ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The wording of a real 1.36 API server's refusals.
    #[test]
    fn reads_the_api_servers_refusals() {
        let r = Refused::parse(
            r#"apply ClusterRole x-reader (rbac.authorization.k8s.io/v1): clusterroles.rbac.authorization.k8s.io "x-reader" is forbidden: User "system:serviceaccount:team-a:tenant" cannot patch resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope (HTTP 403 Forbidden)"#,
        )
        .expect("a refusal");
        assert_eq!(
            r,
            Refused {
                user: "system:serviceaccount:team-a:tenant".into(),
                verb: "patch".into(),
                resource: "clusterroles".into(),
                group: Some("rbac.authorization.k8s.io".into()),
                namespace: None,
            }
        );
        assert_eq!(
            r.rule_yaml(""),
            "- apiGroups: [\"rbac.authorization.k8s.io\"]\n  resources: [\"clusterroles\"]\n  verbs: [\"create\", \"patch\"]"
        );
        assert!(
            r.advice().contains("a ClusterRole bound to them"),
            "{}",
            r.advice()
        );
        let r = Refused::parse(
            r#"instances.kudo.dev "app" is forbidden: User "alice" cannot update resource "instances/status" in API group "kudo.dev" in the namespace "team-a""#,
        )
        .expect("a refusal");
        assert_eq!(r.resource, "instances/status");
        assert!(
            r.rule_yaml("").ends_with("verbs: [\"update\"]"),
            "{}",
            r.rule_yaml("")
        );
        assert_eq!(r.namespace.as_deref(), Some("team-a"));
        assert!(
            r.advice().contains("a Role in namespace team-a"),
            "{}",
            r.advice()
        );
        let r = Refused::parse(r#"forbidden: User "bob" cannot get path "/apis""#).expect("path");
        assert_eq!(
            r.rule_yaml(""),
            "- nonResourceURLs: [\"/apis\"]\n  verbs: [\"get\"]"
        );
        assert_eq!(Refused::parse("Unauthorized"), None);
    }
}
