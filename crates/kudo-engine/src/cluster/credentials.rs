//! Failures of a credential plugin (the provider's `exec` block, or a kubeconfig user's
//! `exec`), which kube-rs runs when the client is built and again whenever the
//! credential it returned is about to expire: told in the plugin's own words (its
//! command line, exit status and stderr) instead of kube-rs' debug output.

use std::error::Error;

use kube::client::AuthError;

/// The credential plugin's failure somewhere in `err`'s chain of causes.
pub(crate) fn plugin_failure<'e>(err: &'e (dyn Error + 'static)) -> Option<&'e AuthError> {
    let mut cause: Option<&'e (dyn Error + 'static)> = Some(err);
    while let Some(e) = cause {
        if let Some(auth) = e.downcast_ref::<AuthError>() {
            return Some(auth);
        }
        if let Some(kube::Error::Auth(auth)) = e.downcast_ref::<kube::Error>() {
            return Some(auth);
        }
        cause = e.source();
    }
    None
}

/// What went wrong running the plugin, after its command line (`the credential plugin
/// \`aws eks get-token\` ...`).
pub(crate) fn describe(e: &AuthError) -> String {
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
            .args(["-c", "echo 'token expired: run aws sso login' >&2; exit 3"])
            .output()
            .expect("sh runs");
        let e = AuthError::AuthExecRun {
            cmd: "aws".into(),
            out: Box::new(out),
        };
        assert_eq!(
            describe(&e),
            "failed (exit status: 3): token expired: run aws sso login"
        );
        let missing = AuthError::AuthExecStart(std::io::Error::from(std::io::ErrorKind::NotFound));
        assert!(describe(&missing).contains("the command was not found"));
        let wrapped = kube::Error::Auth(missing);
        assert!(plugin_failure(&wrapped).is_some());
    }
}
