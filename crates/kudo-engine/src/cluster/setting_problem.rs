//! Mistakes in connection settings, found before any connection is tried: the provider
//! refuses its block with them (so `terraform validate` names them), where
//! [`super::Cluster::connect`] would only fail later, on the first request.

use std::time::Duration;

use super::settings::{
    ConnectionSettings, DEFAULT_MAX_REQUESTS_IN_FLIGHT, EXEC_API_VERSIONS, ExecSettings,
};

/// The most requests in flight a provider block may ask for: beyond this a client is
/// more likely to be throttled by the API server's priority and fairness than faster.
pub const MAX_IN_FLIGHT_LIMIT: usize = 256;

/// The setting a [`SettingProblem`] is about, as the provider block names it: an
/// attribute, and for a block the index of the block and the field in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingPath {
    pub attribute: &'static str,
    pub index: Option<usize>,
    pub field: Option<&'static str>,
}

impl SettingPath {
    const fn attribute(attribute: &'static str) -> SettingPath {
        SettingPath {
            attribute,
            index: None,
            field: None,
        }
    }

    /// A field of the (only) `exec` block.
    const fn exec(field: &'static str) -> SettingPath {
        SettingPath {
            attribute: "exec",
            index: Some(0),
            field: Some(field),
        }
    }
}

/// A connection setting that cannot work. `Display` is the whole explanation,
/// [`SettingProblem::summary`] its title, [`SettingProblem::path`] the setting at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingProblem {
    /// `request_timeout` is not a duration, or is zero.
    #[error(
        "{text:?} is not a positive duration: write it as Go's time.ParseDuration does, for example \"30s\" or \"2m\"."
    )]
    RequestTimeout { text: String },
    /// `max_requests_in_flight` is not a whole number from 1 to [`MAX_IN_FLIGHT_LIMIT`]
    /// (`value`: the number given, `None` when it is not a number).
    #[error(
        "{} is not a whole number from 1 to {MAX_IN_FLIGHT_LIMIT}: it is how many requests the provider may have waiting for the API server at once (default {DEFAULT_MAX_REQUESTS_IN_FLIGHT}).",
        .value.map_or_else(|| "The value".to_string(), |f| f.to_string())
    )]
    MaxRequestsInFlight { value: Option<f64> },
    /// `config_path` and `config_paths` are both set.
    #[error(
        "`config_path` and `config_paths` both name kubeconfig files: set `config_paths` alone to merge several files, or `config_path` for one."
    )]
    ConfigPaths,
    /// The `exec` block's `api_version` is not one of [`EXEC_API_VERSIONS`].
    #[error(
        "{api_version:?} is not an ExecCredential version the provider speaks: set `api_version` to {} (what the plugin's documentation names; v1alpha1 was removed in Kubernetes 1.24).",
        EXEC_API_VERSIONS.map(|v| format!("{v:?}")).join(" or ")
    )]
    ExecApiVersion { api_version: String },
    /// The `exec` block's `command` is empty.
    #[error(
        "`command` names the credential plugin to run, for example \"aws\", \"gke-gcloud-auth-plugin\" or \"kubelogin\"."
    )]
    ExecCommand,
    /// `token` and an `exec` block both give credentials.
    #[error("`token` and an `exec` block both give the credentials: keep one of them.")]
    TokenAndExec,
    /// Only one of `client_certificate` and `client_key` is set.
    #[error("`client_certificate` and `client_key` go together: set both or neither.")]
    HalfClientCertificate,
}

impl SettingProblem {
    /// A short title for the problem.
    pub fn summary(&self) -> &'static str {
        match self {
            SettingProblem::RequestTimeout { .. } => "Invalid request_timeout",
            SettingProblem::MaxRequestsInFlight { .. } => "Invalid max_requests_in_flight",
            SettingProblem::ConfigPaths => "Conflicting kubeconfig settings",
            SettingProblem::ExecApiVersion { .. } => "Invalid exec api_version",
            SettingProblem::ExecCommand => "Missing exec command",
            SettingProblem::TokenAndExec => "Conflicting credentials",
            SettingProblem::HalfClientCertificate => "Incomplete client certificate",
        }
    }

    /// The setting at fault.
    pub fn path(&self) -> SettingPath {
        match self {
            SettingProblem::RequestTimeout { .. } => SettingPath::attribute("request_timeout"),
            SettingProblem::MaxRequestsInFlight { .. } => {
                SettingPath::attribute("max_requests_in_flight")
            }
            SettingProblem::ConfigPaths => SettingPath::attribute("config_paths"),
            SettingProblem::ExecApiVersion { .. } => SettingPath::exec("api_version"),
            SettingProblem::ExecCommand => SettingPath::exec("command"),
            SettingProblem::TokenAndExec => SettingPath::attribute("exec"),
            // The key: a certificate alone is the usual mistake (the key forgotten).
            SettingProblem::HalfClientCertificate => SettingPath::attribute("client_key"),
        }
    }
}

/// `request_timeout` from its text and the duration the caller read from it (`None`:
/// not a duration): a request must be given some time.
pub fn request_timeout(text: &str, read: Option<Duration>) -> Result<Duration, SettingProblem> {
    read.filter(|d| !d.is_zero())
        .ok_or_else(|| SettingProblem::RequestTimeout {
            text: text.to_string(),
        })
}

/// `max_requests_in_flight` from the number given (`None`: not a number).
pub fn max_requests_in_flight(value: Option<f64>) -> Result<usize, SettingProblem> {
    value
        .filter(|f| f.fract() == 0.0 && (1.0..=MAX_IN_FLIGHT_LIMIT as f64).contains(f))
        // Exact: a whole number from 1 to the limit.
        .map(|f| f as usize)
        .ok_or(SettingProblem::MaxRequestsInFlight { value })
}

impl ExecSettings {
    /// What would keep the credential plugin from running as configured.
    pub fn problems(&self) -> Vec<SettingProblem> {
        let mut problems = Vec::new();
        if !EXEC_API_VERSIONS.contains(&self.api_version.trim()) {
            problems.push(SettingProblem::ExecApiVersion {
                api_version: self.api_version.trim().to_string(),
            });
        }
        if self.command.trim().is_empty() {
            problems.push(SettingProblem::ExecCommand);
        }
        problems
    }
}

impl ConnectionSettings {
    /// Settings that contradict each other or cannot work, in the order of the
    /// provider block (the request settings, read from text, are checked as they are
    /// read: [`request_timeout`], [`max_requests_in_flight`]).
    pub fn problems(&self) -> Vec<SettingProblem> {
        let mut problems = Vec::new();
        if self.config_path.is_some() && !self.config_paths.is_empty() {
            problems.push(SettingProblem::ConfigPaths);
        }
        if let Some(exec) = &self.exec {
            problems.extend(exec.problems());
            if self.token.is_some() {
                problems.push(SettingProblem::TokenAndExec);
            }
        }
        if self.client_certificate.is_some() != self.client_key.is_some() {
            problems.push(SettingProblem::HalfClientCertificate);
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(api_version: &str, command: &str) -> ExecSettings {
        ExecSettings {
            api_version: api_version.into(),
            command: command.into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_request_timeout_must_be_a_positive_duration() {
        assert_eq!(
            request_timeout("2s", Some(Duration::from_secs(2))),
            Ok(Duration::from_secs(2))
        );
        for (text, read) in [("soon", None), ("0s", Some(Duration::ZERO))] {
            let problem = request_timeout(text, read).expect_err(text);
            assert_eq!(problem.summary(), "Invalid request_timeout");
            assert_eq!(problem.path().attribute, "request_timeout");
            assert_eq!(
                problem.to_string(),
                format!(
                    "{text:?} is not a positive duration: write it as Go's time.ParseDuration does, for example \"30s\" or \"2m\"."
                )
            );
        }
    }

    #[test]
    fn requests_in_flight_are_a_whole_number_up_to_the_limit() {
        assert_eq!(max_requests_in_flight(Some(1.0)), Ok(1));
        assert_eq!(max_requests_in_flight(Some(256.0)), Ok(256));
        for bad in [Some(0.0), Some(2.5), Some(257.0), Some(-1.0), None] {
            assert_eq!(
                max_requests_in_flight(bad),
                Err(SettingProblem::MaxRequestsInFlight { value: bad })
            );
        }
        assert_eq!(
            max_requests_in_flight(Some(2.5))
                .expect_err("a fraction")
                .to_string(),
            "2.5 is not a whole number from 1 to 256: it is how many requests the provider may have waiting for the API server at once (default 16)."
        );
        assert!(
            max_requests_in_flight(None)
                .expect_err("not a number")
                .to_string()
                .starts_with("The value is not")
        );
    }

    #[test]
    fn an_exec_block_needs_a_known_version_and_a_command() {
        assert!(
            exec("client.authentication.k8s.io/v1", "aws")
                .problems()
                .is_empty()
        );
        let problems = exec(" client.authentication.k8s.io/v1alpha1 ", " ").problems();
        assert_eq!(
            problems,
            [
                SettingProblem::ExecApiVersion {
                    api_version: "client.authentication.k8s.io/v1alpha1".into()
                },
                SettingProblem::ExecCommand
            ]
        );
        assert_eq!(
            problems[0].to_string(),
            "\"client.authentication.k8s.io/v1alpha1\" is not an ExecCredential version the provider speaks: set `api_version` to \"client.authentication.k8s.io/v1\" or \"client.authentication.k8s.io/v1beta1\" (what the plugin's documentation names; v1alpha1 was removed in Kubernetes 1.24)."
        );
        assert_eq!(
            problems[1].path(),
            SettingPath {
                attribute: "exec",
                index: Some(0),
                field: Some("command")
            }
        );
    }

    #[test]
    fn contradicting_settings_are_problems() {
        let settings = ConnectionSettings {
            config_path: Some("/a".into()),
            config_paths: vec!["/b".into()],
            token: Some("t".into()),
            exec: Some(exec("client.authentication.k8s.io/v1", "aws")),
            client_certificate: Some("PEM".into()),
            ..Default::default()
        };
        let problems = settings.problems();
        assert_eq!(
            problems,
            [
                SettingProblem::ConfigPaths,
                SettingProblem::TokenAndExec,
                SettingProblem::HalfClientCertificate
            ]
        );
        let summaries: Vec<_> = problems.iter().map(SettingProblem::summary).collect();
        assert_eq!(
            summaries,
            [
                "Conflicting kubeconfig settings",
                "Conflicting credentials",
                "Incomplete client certificate"
            ]
        );
        assert_eq!(problems[2].path().attribute, "client_key");
        assert!(ConnectionSettings::default().problems().is_empty());
    }
}
