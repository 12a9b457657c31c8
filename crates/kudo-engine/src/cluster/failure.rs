//! What went wrong, classified by what the user has to do about it: one answer for
//! every cluster failure and failed run, so plan, apply, read and destroy give the same
//! advice for the same failure. The words are the caller's; the cases are KUDO's and
//! Kubernetes'.

use super::{ClusterError, Forbidden, ObjectRef, Trouble};

/// What went wrong, as far as what to do about it differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure<'a> {
    /// The API server could not be reached: the connection settings.
    Unreachable,
    /// The wait for `object` (a pod) ended while no node could run it: the cluster's
    /// nodes, not the package.
    Unschedulable { object: Option<&'a ObjectRef> },
    /// The credentials were refused (HTTP 401/403); the permission the refusal names,
    /// when the server's message names one.
    Denied(Option<Forbidden>),
    /// The credential plugin (`exec`) failed: run it by hand to see why.
    CredentialPlugin { command: &'a str },
    /// A timeout expired or the run was interrupted, while waiting for `object` if the
    /// error names one.
    Cancelled { object: Option<&'a ObjectRef> },
    /// An apiVersion the cluster does not serve, written in `template` when known.
    ApiVersion { template: Option<&'a str> },
    /// The object belongs to another instance or configuration.
    Taken,
    /// 429 / 5xx or dropped connections beyond the retries: nothing to fix.
    Transient,
    /// The namespace does not exist or was deleted under the run.
    Namespace,
    /// A Webhook task's call failed or its URL is not allowed.
    Webhook,
    /// The package or the instance's parameters (a FATAL error): fix `template` when the
    /// error names one.
    Package { template: Option<&'a str> },
    /// The cluster rejected or did not settle `object` (not FATAL): look at it there.
    Cluster { object: Option<&'a ObjectRef> },
    /// A connection setting cannot be used: `setting` is the provider block's
    /// attribute, or the environment variable ([`super::KUBECONFIG_VARIABLES`]) that
    /// named the kubeconfig; the message says what is wrong with it.
    Setting { setting: &'a str },
    /// The message itself says what to change (a field conflict).
    Explained,
}

impl<'a> Failure<'a> {
    /// The case of `trouble` with what the error names. `message` is the error's whole
    /// text, where an RBAC refusal names the permission.
    pub fn of(
        trouble: Trouble,
        fatal: bool,
        template: Option<&'a str>,
        object: Option<&'a ObjectRef>,
        message: &str,
    ) -> Failure<'a> {
        match trouble {
            Trouble::Unreachable => Failure::Unreachable,
            Trouble::Denied => Failure::Denied(Forbidden::parse(message)),
            Trouble::Cancelled => Failure::Cancelled { object },
            Trouble::Unschedulable => Failure::Unschedulable { object },
            Trouble::ApiVersion => Failure::ApiVersion { template },
            Trouble::Taken => Failure::Taken,
            Trouble::Transient => Failure::Transient,
            Trouble::Namespace => Failure::Namespace,
            Trouble::Webhook => Failure::Webhook,
            Trouble::Content if fatal => Failure::Package { template },
            Trouble::Content => Failure::Cluster { object },
        }
    }
}

impl ClusterError {
    /// What went wrong (see [`Failure`]). A bare cluster call names no template, and its
    /// object is in its own message.
    pub fn failure(&self) -> Failure<'_> {
        match self {
            ClusterError::CredentialPlugin { command, .. }
            | ClusterError::CredentialRefused {
                plugin: Some(command),
                ..
            } => Failure::CredentialPlugin { command },
            ClusterError::CredentialRefused { plugin: None, .. } => Failure::Denied(None),
            ClusterError::Settings { setting, .. } => Failure::Setting { setting },
            ClusterError::FieldConflict { .. } => Failure::Explained,
            _ => Failure::of(self.trouble(), false, None, None, &self.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, message: &str) -> ClusterError {
        ClusterError::Api {
            verb: "get",
            object: "ConfigMap ns/c".into(),
            code,
            reason: "Reason".into(),
            message: message.into(),
        }
    }

    #[test]
    fn cluster_errors_fall_into_what_to_do() {
        let unreachable = ClusterError::Unreachable {
            url: "https://10.0.0.1:6443".into(),
            message: "connection refused".into(),
        };
        assert_eq!(unreachable.failure(), Failure::Unreachable);
        let lost = ClusterError::ConnectionLost {
            url: "https://10.0.0.1:6443".into(),
            verb: "read",
            object: "ConfigMap ns/c".into(),
            message: "connection closed before message completed".into(),
        };
        assert_eq!(
            lost.failure(),
            Failure::Transient,
            "not a kubeconfig problem"
        );
        assert_eq!(api(503, "overloaded").failure(), Failure::Transient);
        assert_eq!(api(429, "slow down").failure(), Failure::Transient);
        assert_eq!(
            api(422, "metadata.name: Invalid value").failure(),
            Failure::Cluster { object: None }
        );
        let gone = ClusterError::NamespaceGone {
            verb: "apply",
            object: "ConfigMap team-a/c".into(),
            namespace: "team-a".into(),
            code: 404,
            message: "namespaces \"team-a\" not found".into(),
        };
        assert_eq!(gone.failure(), Failure::Namespace);
        let plugin = ClusterError::CredentialPlugin {
            command: "aws".into(),
            message: "not logged in".into(),
        };
        assert_eq!(
            plugin.failure(),
            Failure::CredentialPlugin { command: "aws" }
        );
        let settings = ClusterError::Settings {
            setting: "config_paths",
            message: "config_path and config_paths together".into(),
        };
        assert_eq!(
            settings.failure(),
            Failure::Setting {
                setting: "config_paths"
            }
        );
    }

    #[test]
    fn a_refusal_names_the_permission_when_the_server_does() {
        assert_eq!(api(403, "no").failure(), Failure::Denied(None));
        let refused = api(
            403,
            "configmaps \"c\" is forbidden: User \"alice\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"ns\"",
        );
        let Failure::Denied(Some(f)) = refused.failure() else {
            panic!("no permission: {:?}", refused.failure());
        };
        assert_eq!((f.user.as_str(), f.verb.as_str()), ("alice", "get"));
        assert_eq!(f.resource, "configmaps");
        assert_eq!(f.namespace.as_deref(), Some("ns"));
    }

    #[test]
    fn content_is_the_package_when_fatal_else_the_object_in_the_cluster() {
        let r = ObjectRef::new("v1", "ConfigMap", Some("ns"), "c");
        let of = |fatal| {
            Failure::of(
                Trouble::Content,
                fatal,
                Some("templates/cm.yaml"),
                Some(&r),
                "",
            )
        };
        assert_eq!(
            of(true),
            Failure::Package {
                template: Some("templates/cm.yaml")
            }
        );
        assert_eq!(of(false), Failure::Cluster { object: Some(&r) });
        assert_eq!(
            Failure::of(Trouble::Cancelled, false, None, Some(&r), ""),
            Failure::Cancelled { object: Some(&r) }
        );
        // A pod no node can run: the cluster's, never "fix the package".
        assert_eq!(
            Failure::of(Trouble::Unschedulable, false, None, Some(&r), ""),
            Failure::Unschedulable { object: Some(&r) }
        );
    }
}
