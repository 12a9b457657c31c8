//! Failures to get a credential, told in the source's own words (a plugin's command
//! line, exit status and stderr) instead of kube-rs' debug output. The provider runs a
//! credential plugin (the provider's `exec` block, or a kubeconfig user's `exec`) itself
//! (`credential_cache`, `credential_plugin`); kube-rs still runs a kubeconfig user's
//! `auth-provider` command, whose failures are its [`AuthError`].

use std::error::Error;

use kube::client::AuthError;

use super::ClusterError;
use super::credential_cache::CredentialError;

/// A credential failure somewhere in `err`'s chain of causes.
enum Found<'e> {
    Ours(&'e CredentialError),
    Kube(&'e AuthError),
}

fn find<'e>(err: &'e (dyn Error + 'static)) -> Option<Found<'e>> {
    let mut cause: Option<&'e (dyn Error + 'static)> = Some(err);
    while let Some(e) = cause {
        if let Some(ours) = e.downcast_ref::<CredentialError>() {
            return Some(Found::Ours(ours));
        }
        if let Some(auth) = e.downcast_ref::<AuthError>() {
            return Some(Found::Kube(auth));
        }
        if let Some(kube::Error::Auth(auth)) = e.downcast_ref::<kube::Error>() {
            return Some(Found::Kube(auth));
        }
        cause = e.source();
    }
    None
}

/// Whether `err` is the failure to get a credential (which no retry of the request
/// helps: the source was run, or read, and said why).
pub(crate) fn is_credential_failure(err: &(dyn Error + 'static)) -> bool {
    find(err).is_some()
}

/// The error to report when `err` is the failure to get a credential: a plugin's as
/// [`ClusterError::CredentialPlugin`] naming its command (`exec_command` for kube-rs'
/// own), a token file's as the failure of the request (`verb` `object`).
pub(crate) fn credential_failure(
    err: &(dyn Error + 'static),
    exec_command: Option<&str>,
    verb: &'static str,
    object: &str,
) -> Option<ClusterError> {
    Some(match find(err)? {
        Found::Ours(CredentialError {
            plugin: Some(command),
            message,
            ..
        }) => ClusterError::CredentialPlugin {
            command: command.clone(),
            message: message.clone(),
        },
        Found::Ours(other) => ClusterError::Other {
            verb,
            object: object.to_string(),
            message: other.to_string(),
        },
        Found::Kube(auth) => ClusterError::CredentialPlugin {
            command: exec_command.unwrap_or("exec").to_string(),
            message: describe(auth),
        },
    })
}

/// What went wrong running the plugin, after its command line (`the credential plugin
/// \`aws eks get-token\` ...`).
fn describe(e: &AuthError) -> String {
    match e {
        AuthError::AuthExecStart(io) => match io.kind() {
            std::io::ErrorKind::NotFound => format!(
                "could not be started: the command was not found ({io}); install it, or give its full path in `command`"
            ),
            _ => format!("could not be started: {io}"),
        },
        AuthError::AuthExecRun { out, .. } => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let stderr = stderr.trim();
            match stderr.is_empty() {
                true => format!("failed ({}) and wrote nothing on stderr", out.status),
                false => format!("failed ({}): {stderr}", out.status),
            }
        }
        AuthError::AuthExecParse(parse) => format!(
            "did not print an ExecCredential (client.authentication.k8s.io) on stdout: {parse}"
        ),
        AuthError::ExecPluginFailed => {
            "printed an ExecCredential without `status` (no token or certificate)".to_string()
        }
        AuthError::MalformedTokenExpirationDate(date) => format!(
            "printed an ExecCredential whose `status.expirationTimestamp` is not an RFC 3339 time: {date}"
        ),
        AuthError::MissingCommand => "has no command".to_string(),
        other => format!("failed: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_run_is_told_by_its_exit_status_and_stderr() {
        let out = std::process::Command::new("sh")
            .args([
                "-c",
                "echo 'token expired: run gcloud auth login' >&2; exit 3",
            ])
            .output()
            .expect("sh runs");
        let e = AuthError::AuthExecRun {
            cmd: "gcloud".into(),
            out: Box::new(out),
        };
        assert_eq!(
            describe(&e),
            "failed (exit status: 3): token expired: run gcloud auth login"
        );
        let missing = AuthError::AuthExecStart(std::io::Error::from(std::io::ErrorKind::NotFound));
        assert!(describe(&missing).contains("the command was not found"));
        let wrapped = kube::Error::Auth(missing);
        assert!(is_credential_failure(&wrapped));
        let found = credential_failure(&wrapped, Some("gcloud config-helper"), "get", "x");
        assert!(
            matches!(&found, Some(ClusterError::CredentialPlugin { command, .. }) if command == "gcloud config-helper"),
            "{found:?}"
        );
    }

    #[test]
    fn our_plugin_failure_names_the_plugin_through_the_service_error() {
        let ours = CredentialError {
            origin: "the credential plugin `aws eks get-token`".into(),
            plugin: Some("aws eks get-token".into()),
            message: "failed (exit status: 255): the SSO session has expired".into(),
        };
        let wrapped = kube::Error::Service(Box::new(ours));
        let found = credential_failure(&wrapped, None, "get", "ConfigMap ns/c");
        let Some(ClusterError::CredentialPlugin { command, message }) = found else {
            panic!("{found:?}");
        };
        assert_eq!(command, "aws eks get-token");
        assert_eq!(
            message,
            "failed (exit status: 255): the SSO session has expired"
        );
        assert!(!is_credential_failure(
            &kube::Error::LinesCodecMaxLineLengthExceeded
        ));
    }
}
