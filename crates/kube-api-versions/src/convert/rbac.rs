//! `rbac.authorization.k8s.io/v1beta1` and `v1alpha1` -> `v1`.
//!
//! Role and ClusterRole have the same fields in all three versions. Bindings do too,
//! except that a v1alpha1 subject names its group with `apiVersion` (a group/version)
//! where later versions use `apiGroup` (the group alone).

use serde_json::{Map, Value};

use super::{ConvertError, Cx};

pub(super) fn binding(cx: &mut Cx, root: &mut Map<String, Value>) -> Result<(), ConvertError> {
    if cx.from != "rbac.authorization.k8s.io/v1alpha1" {
        return Ok(());
    }
    let subjects = cx.objects(root, "subjects", "subjects")?;
    let mut errors = None;
    for (i, subject) in subjects.into_iter().enumerate() {
        let api_version = match subject.remove("apiVersion") {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => s,
            Some(other) => {
                errors = Some(format!(
                    "subjects[{i}].apiVersion must be a string, not {}",
                    super::type_name(&other)
                ));
                break;
            }
        };
        // "v1" (a ServiceAccount) is the core group, which apiGroup spells "".
        let group = crate::split_api_version(&api_version).0.to_string();
        if subject.get("apiGroup").is_none_or(Value::is_null) {
            subject.insert("apiGroup".to_string(), Value::String(group));
        }
    }
    match errors {
        Some(message) => Err(cx.err(message)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use crate::convert;
    use serde_json::json;

    // Role rbac.authorization.k8s.io/v1beta1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.21/#role-v1beta1-rbac-authorization-k8s-io;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#role-v1-rbac-authorization-k8s-io
    #[test]
    fn rabbitmq_peer_discovery_role_moves_to_v1() {
        let role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1beta1",
            "kind": "Role",
            "metadata": {"name": "rabbitmq-peer-discovery", "namespace": "rabbit"},
            "rules": [{"apiGroups": [""], "resources": ["endpoints"], "verbs": ["get"]},
                      {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]
        });
        let out = convert(&role, "rbac.authorization.k8s.io/v1").unwrap();
        let mut expected = role.clone();
        expected["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
        assert_eq!(out.object, expected);
        assert!(out.notes.is_empty());
    }

    // ClusterRoleBinding rbac v1beta1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.21/#clusterrolebinding-v1beta1-rbac-authorization-k8s-io;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#clusterrolebinding-v1-rbac-authorization-k8s-io
    #[test]
    fn v1beta1_cluster_role_binding_keeps_subjects() {
        let crb = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1beta1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "spark-operator"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "spark-operator"},
            "subjects": [{"kind": "ServiceAccount", "name": "spark-operator", "namespace": "spark"}]
        });
        let out = convert(&crb, "rbac.authorization.k8s.io/v1").unwrap();
        assert_eq!(out.object["subjects"], crb["subjects"]);
    }

    // RoleBinding rbac v1alpha1 (Subject.apiVersion): kubernetes.io/docs/reference/generated/kubernetes-api/v1.19/#subject-v1alpha1-rbac-authorization-k8s-io;
    // v1 (Subject.apiGroup): kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#subject-v1-rbac-authorization-k8s-io
    #[test]
    fn v1alpha1_subject_api_version_becomes_api_group() {
        let rb = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1alpha1",
            "kind": "RoleBinding",
            "metadata": {"name": "rb", "namespace": "ns"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [
                {"kind": "ServiceAccount", "apiVersion": "v1", "name": "sa", "namespace": "ns"},
                {"kind": "User", "apiVersion": "rbac.authorization.k8s.io/v1alpha1", "name": "jane"}
            ]
        });
        let out = convert(&rb, "rbac.authorization.k8s.io/v1").unwrap();
        assert_eq!(
            out.object["subjects"],
            json!([
                {"kind": "ServiceAccount", "apiGroup": "", "name": "sa", "namespace": "ns"},
                {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"}
            ])
        );
    }
}
