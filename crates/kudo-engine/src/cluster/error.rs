use super::{FieldConflict, ObjectRef};

/// Everything that can go wrong talking to the cluster. Each variant says which setting or
/// object is involved so a Terraform user knows what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("provider setting `{setting}`: {message}")]
    Settings {
        setting: &'static str,
        message: String,
    },

    #[error(
        "cannot reach the Kubernetes API server at {url}: {message} (check `host` / the kubeconfig \
         and that the cluster is running)"
    )]
    Unreachable { url: String, message: String },

    /// The TLS handshake refused the server's certificate: the CA the settings name did
    /// not sign it, or it is expired or for another name.
    #[error(
        "cannot connect to the Kubernetes API server at {url}: its TLS certificate is not \
         trusted: {message} (check the CA: the provider's `cluster_ca_certificate`, or \
         `certificate-authority`/`certificate-authority-data` of the kubeconfig cluster; and the \
         name it is checked against: `tls_server_name` when set, else the server's host; \
         `insecure = true` skips the check)"
    )]
    Certificate { url: String, message: String },

    /// Something answered at the address, but not as a Kubernetes API server does.
    #[error(
        "the server at {url} is not a Kubernetes API server: {message} (check `host` or the \
         kubeconfig's `server`: it must be the API server's address, e.g. https://host:6443)"
    )]
    NotKubernetes { url: String, message: String },

    /// A request failed to reach the server (connection reset, dropped, timed out) after
    /// the provider had connected, and every retry failed too: a network or server
    /// hiccup rather than wrong settings, which would have failed the connection.
    #[error(
        "{verb} {object}: the connection to the Kubernetes API server at {url} failed \
         (transient; still failing after the provider's retries): {message}"
    )]
    ConnectionLost {
        url: String,
        verb: &'static str,
        object: String,
        message: String,
    },

    /// The namespace an object belongs in does not exist or is being deleted (someone
    /// deleted it during the run, or it never existed).
    #[error(
        "{verb} {object}: namespace {namespace} does not exist or is being deleted: {message} \
         (HTTP {code})"
    )]
    NamespaceGone {
        verb: &'static str,
        object: String,
        namespace: String,
        code: u16,
        message: String,
    },

    #[error(
        "the cluster at {url} does not serve kind {kind} in {api_version} (is the CRD installed, \
         or is the apiVersion right for this Kubernetes version?)"
    )]
    UnknownKind {
        url: String,
        api_version: String,
        kind: String,
    },

    /// The object's apiVersion is not served and cannot (or may not) be translated.
    #[error("{0}")]
    Translate(kube_api_versions::TranslateError),

    #[error("{verb} {object}: {message} (HTTP {code} {reason})")]
    Api {
        verb: &'static str,
        object: String,
        code: u16,
        reason: String,
        message: String,
    },

    /// Our apply would change fields another field manager owns on an object we never
    /// applied. Retrying cannot help: the other manager keeps them until someone acts.
    #[error(
        "apply {object}: {} (server-side apply conflict; the provider only takes over fields \
         it applied before). Either remove the field from the other manager (e.g. re-apply \
         its configuration without the field), delete the object so the provider creates it, \
         or change the template so it does not set the field",
        describe_conflicts(conflicts)
    )]
    FieldConflict {
        object: String,
        conflicts: Vec<FieldConflict>,
    },

    #[error("invalid object{}: {message}", object.as_ref().map(|o| format!(" {o}")).unwrap_or_default())]
    InvalidObject {
        object: Option<ObjectRef>,
        message: String,
    },

    /// The credential plugin (`exec`) could not be run, failed, or printed no
    /// credential: when connecting, or when it was run again for a fresh credential.
    #[error(
        "the credential plugin `{command}` {message} (it is the provider's `exec` block, or the \
         `exec` of the kubeconfig user)"
    )]
    CredentialPlugin { command: String, message: String },

    /// The API server refused (HTTP 401) a credential the provider renews (a plugin's,
    /// a token file's), then the new one it fetched after that refusal: revoked
    /// credentials the source keeps handing out, or a source for another cluster.
    #[error(
        "{verb} {object}: the Kubernetes API server does not accept the credentials of \
         {origin}: it refused them (HTTP 401 {reason}: {message}), and refused the new ones \
         the provider fetched from {origin} right after that refusal too"
    )]
    CredentialRefused {
        verb: &'static str,
        object: String,
        /// `the credential plugin \`aws eks get-token\``, `the token file /var/run/token`.
        origin: String,
        /// The plugin's command line, when the source is a plugin.
        plugin: Option<String>,
        reason: String,
        message: String,
    },

    #[error("{verb} {object}: {message}")]
    Other {
        verb: &'static str,
        object: String,
        message: String,
    },

    #[error("cancelled while {what} (the Terraform timeout expired or the run was interrupted)")]
    Cancelled { what: String },
}

fn describe_conflicts(conflicts: &[FieldConflict]) -> String {
    let parts: Vec<String> = conflicts
        .iter()
        .map(|c| match c.manager.as_str() {
            "" => format!("field {} is managed by another field manager", c.field),
            m => format!("field {} is managed by \"{m}\"", c.field),
        })
        .collect();
    match parts.is_empty() {
        true => "fields are managed by another field manager".to_string(),
        false => parts.join(", "),
    }
}

/// Whether a 5xx answer is the server failing to read the object we sent rather than
/// the server faltering: the API server answers HTTP 500 when the request body cannot
/// be converted to its typed form (a Secret's `data` that is not base64, a string field
/// holding a number, in server-side apply's typed conversion). The same bytes fail the
/// same way every time, so retrying cannot help and the content must change.
pub fn rejects_content(message: &str) -> bool {
    const MARKERS: &[&str] = &[
        "failed to convert new object",
        "failed to create typed patch object",
        "failed to create typed live object",
        "illegal base64 data",
        "cannot unmarshal",
        "failed to decode",
        // etcd's limit on one stored object (about 1.5 MiB): the same object never fits.
        "request is too large",
        // The API server's etcd client refusing an object over its 2 MiB message limit
        // (real 1.24 and 1.36: "rpc error: code = ResourceExhausted desc = trying to
        // send message larger than max").
        "trying to send message larger than max",
    ];
    MARKERS.iter().any(|m| message.contains(m))
}

/// What kind of trouble an error is, as far as what the user should do differs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Trouble {
    /// The package, its parameters or an object the cluster rejected: fix the content.
    #[default]
    Content,
    /// The API server could not be reached: check the connection settings.
    Unreachable,
    /// The API server refused the credentials (HTTP 401/403): check them and RBAC.
    Denied,
    /// The Terraform timeout expired or the run was interrupted.
    Cancelled,
    /// The same, while a pod waited for a node: the scheduler found none it fits on
    /// (resources, taints, selectors). The cluster's capacity, not the package.
    Unschedulable,
    /// A template writes an API version the cluster does not serve, and translation is
    /// off or cannot convert it: change the template or the provider setting.
    ApiVersion,
    /// The object belongs to another instance (or another configuration's instance):
    /// choose other names, or import it.
    Taken,
    /// The server kept answering 429 / 5xx, or connections kept dropping, beyond the
    /// retries: nothing to fix on the user's side; running Terraform again usually passes.
    Transient,
    /// The namespace was deleted (or is being deleted) under the run.
    Namespace,
    /// A Webhook task's URL is not allowed, or its webhook did not answer as it must:
    /// fix the webhook, the task, or the provider's `allow_insecure_webhooks`.
    Webhook,
}

impl ClusterError {
    /// What kind of trouble this is (see [`Trouble`]).
    pub fn trouble(&self) -> Trouble {
        match self {
            ClusterError::Unreachable { .. }
            | ClusterError::Certificate { .. }
            | ClusterError::NotKubernetes { .. } => Trouble::Unreachable,
            ClusterError::Api {
                code: 401 | 403, ..
            }
            | ClusterError::CredentialPlugin { .. }
            | ClusterError::CredentialRefused { .. } => Trouble::Denied,
            ClusterError::Api { code, message, .. } if *code >= 500 && rejects_content(message) => {
                Trouble::Content
            }
            ClusterError::Api { code, .. } if *code == 429 || *code >= 500 => Trouble::Transient,
            ClusterError::ConnectionLost { .. } => Trouble::Transient,
            ClusterError::NamespaceGone { .. } => Trouble::Namespace,
            ClusterError::Cancelled { .. } => Trouble::Cancelled,
            ClusterError::Translate(_) => Trouble::ApiVersion,
            _ => Trouble::Content,
        }
    }

    /// The HTTP status code of an API error, if this is one.
    pub fn code(&self) -> Option<u16> {
        match self {
            ClusterError::Api { code, .. } | ClusterError::NamespaceGone { code, .. } => {
                Some(*code)
            }
            ClusterError::FieldConflict { .. } => Some(409),
            ClusterError::CredentialRefused { .. } => Some(401),
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    pub fn is_cancelled(&self) -> bool {
        matches!(self, ClusterError::Cancelled { .. })
    }
}
