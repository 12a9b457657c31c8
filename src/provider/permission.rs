//! What an RBAC refusal ([`Forbidden`], read by the engine from the API server's
//! message) means for the provider's credentials, as advice on a diagnostic.

use kudo_engine::cluster::Forbidden;

/// What to grant: the role, the binding and the rule.
pub fn advice(refused: &Forbidden) -> String {
    format!(
        "These credentials (User {:?}) may not {} {} {}. The API server allows it with {}, with this rule (docs/guides/permissions.md lists what the provider needs):\n\n{}",
        refused.user,
        refused.verb,
        refused.qualified_resource(),
        refused.scope(),
        refused.grant(),
        refused.rule_yaml("  ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_names_the_user_the_grant_and_the_rule() {
        let r = Forbidden::parse(
            r#"clusterroles.rbac.authorization.k8s.io "x-reader" is forbidden: User "system:serviceaccount:team-a:tenant" cannot patch resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope"#,
        )
        .expect("a refusal");
        assert_eq!(
            advice(&r),
            "These credentials (User \"system:serviceaccount:team-a:tenant\") may not patch clusterroles.rbac.authorization.k8s.io at the cluster scope. The API server allows it with a ClusterRole bound to them by a ClusterRoleBinding, with this rule (docs/guides/permissions.md lists what the provider needs):\n\n  - apiGroups: [\"rbac.authorization.k8s.io\"]\n    resources: [\"clusterroles\"]\n    verbs: [\"create\", \"patch\"]"
        );
    }
}
