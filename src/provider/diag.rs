//! Error diagnostics that say what happened, where, and what to do about it.
//!
//! Failures of the cluster and of plan runs all go through here, so every one of them
//! ends with the same kind of advice: which setting, file or object to look at, then
//! which Terraform command to run again (the one that failed: a failed destroy is
//! finished by `terraform destroy`, not by an apply). What went wrong is the engine's
//! classification (`EngineError::failure`, `ClusterError::failure`); this module words it.

use kudo_engine::cluster::{ClusterError, ConnectionSettings, Failure, KUBECONFIG_VARIABLES};
use kudo_engine::engine::EngineError;
use tfplugin::Diagnostic;

/// How every piece of advice ends: Terraform resumes where the failure stopped it.
pub const AGAIN: &str = "then run terraform apply again.";

/// [`AGAIN`] for a failed destroy.
pub const AGAIN_DESTROY: &str = "then run terraform destroy again.";

/// The Terraform command that failed, so the advice names the one to run again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `terraform apply` (and plan, refresh, import: apply is what resumes them).
    Apply,
    /// `terraform destroy`, or the delete half of a replacement.
    Destroy,
}

impl Command {
    pub fn again(self) -> &'static str {
        match self {
            Command::Apply => AGAIN,
            Command::Destroy => AGAIN_DESTROY,
        }
    }
}

/// What a refused plan of a resource in state adds for whoever is destroying it:
/// `terraform destroy` first plans the configuration (Terraform's pre-destroy refresh),
/// so the same error stops the destroy; `-refresh=false` skips that plan.
pub const DESTROY_ANYWAY: &str = "If this error stopped `terraform destroy`: Terraform plans the configuration before destroying, so the same error stops it; `terraform destroy -refresh=false` destroys what the state records without that plan.";

/// Adds [`DESTROY_ANYWAY`] to the errors of a plan of a resource in state that a destroy
/// without that plan gets past.
///
/// What is true, and why this is the rule: the provider cannot tell a plain `terraform
/// plan` from the plan `terraform destroy` makes first. Terraform's pre-destroy refresh
/// is a normal-mode plan of the configuration (it only turns failed conditions into
/// warnings), and `PlanResourceChange` carries no mode. So the paragraph is worded as a
/// condition ("If this error stopped `terraform destroy`") and kept to where it is true
/// and useful:
/// - the resource is in state (`prior_state` not null), so a destroy has something to
///   delete and its pre-destroy plan calls this one;
/// - the error points at an attribute of the resource's configuration (a parameter,
///   the package, a name): the configuration refuses the plan, and a destroy that does
///   not plan it deletes what the state records. Errors with no attribute are the
///   cluster's (unreachable, refused credentials, overload): a destroy needs the
///   cluster too, so `-refresh=false` would fail the same way, and saying so misleads.
pub fn with_destroy_advice(diagnostics: &mut [Diagnostic]) {
    let configuration_refusals = diagnostics
        .iter_mut()
        .filter(|d| d.is_error() && d.attribute.is_some());
    for d in configuration_refusals {
        if !d.detail.contains(DESTROY_ANYWAY) {
            d.detail.push_str("\n\n");
            d.detail.push_str(DESTROY_ANYWAY);
        }
    }
}

/// A setting whose value is not one of its choices, pointing at the attribute.
pub fn invalid_choice(attribute: &str, value: &str, values: &[&str], default: &str) -> Diagnostic {
    let choices: Vec<String> = values.iter().map(|c| format!("{c:?}")).collect();
    Diagnostic::error(
        format!("Invalid {attribute}"),
        format!(
            "{value:?} is not a choice; set `{attribute}` to one of {}, or leave it unset for {default:?}.",
            choices.join(" or ")
        ),
    )
    .with_attribute(tfplugin::AttributePath::attribute(attribute))
}

/// `detail`, then a blank line and `advice` (which should end with [`AGAIN`] when
/// running Terraform again is the next step).
pub fn with_advice(detail: impl std::fmt::Display, advice: &str) -> String {
    format!("{detail}\n\n{advice}")
}

/// What to do about a package that does not load.
pub fn package_advice() -> String {
    format!(
        "Fix the file and line named above in the operator package (or the package reference itself), {AGAIN}"
    )
}

/// Which connection settings the user should check, given the ones in use.
fn connection_advice(settings: &ConnectionSettings, command: Command) -> String {
    let what = match (&settings.host, &settings.config_path) {
        (Some(host), _) => format!(
            "Check the provider's `host` setting ({host}) and that the Kubernetes API server is running there"
        ),
        (None, Some(path)) => format!(
            "Check the kubeconfig at the provider's `config_path` ({path}), its `config_context`, and that the Kubernetes API server it names is running"
        ),
        (None, None) => "Check the kubeconfig the provider uses (`KUBE_CONFIG_PATH`, `KUBECONFIG` or ~/.kube/config; or set `host` or `config_path` in the provider block) and that the Kubernetes API server it names is running".to_string(),
    };
    format!("{what}, {}", command.again())
}

/// What to do about a failure (the engine's classification), ending with the command
/// to run again.
fn advice(failure: &Failure<'_>, settings: &ConnectionSettings, command: Command) -> String {
    let again = command.again();
    match failure {
        Failure::Unreachable => connection_advice(settings, command),
        Failure::Denied(Some(refused)) => format!(
            "{}\n\nGrant that to the credentials the provider uses, or configure others that have it, {again}",
            super::permission::advice(refused)
        ),
        Failure::Denied(None) => format!(
            "Check the credentials the provider uses (`token`, `exec`, `client_certificate`/`client_key` or the kubeconfig user) and that their RBAC permissions allow this, {again}"
        ),
        Failure::CredentialPlugin { command: plugin } => format!(
            "Run `{plugin}` in a shell to see whether it prints an ExecCredential (install it, or log in to its cloud CLI, as its message says), or correct the `exec` block, {again}"
        ),
        Failure::Cancelled { object } => {
            let stuck = match object {
                Some(o) => format!("why {o} does not become ready (kubectl describe)"),
                None => "what the message above says was still in progress".to_string(),
            };
            format!(
                "If the work needs longer, raise the resource's `timeouts`; otherwise check {stuck}, {again}"
            )
        }
        // The cluster's nodes, not the package: what a KUDO FATAL_ERROR would blame.
        Failure::Unschedulable { object } => format!(
            "This is about the cluster, not the package: the scheduler found no node {} fits on, for the reasons it gives above (too little CPU or memory, taints the pod does not tolerate, a node selector or affinity no node matches). Add nodes or free capacity, remove the taint or label a node as the selector asks (kubectl describe nodes shows them), or, if a cluster autoscaler is adding a node, raise the resource's `timeouts` to wait for it; {again}",
            object.map_or("the pod".to_string(), |o| o.to_string())
        ),
        Failure::ApiVersion { template } => format!(
            "Write an apiVersion the cluster serves in {}, or set `translate_api_versions = true` in the provider block so the provider converts it, {again}",
            template.unwrap_or("the template named above")
        ),
        Failure::Taken => format!(
            "The provider never takes over what another instance or configuration manages. Choose names as the message says, or, if this configuration should manage that instance, import it instead (an `import` block or `terraform import kudo_instance.<resource> <namespace>/<name>`); {again}"
        ),
        // The provider already retried with backoff; what is left is to try later.
        Failure::Transient => format!(
            "This is a transient failure of the API server or the network to it (HTTP 429/5xx or a dropped connection, still failing after the provider's retries), not a problem with the configuration or the package. Nothing needs fixing unless it keeps happening (then check the API server's health and load), {again}"
        ),
        Failure::Namespace => match command {
            Command::Apply => format!(
                "The namespace named above does not exist, or is being deleted; it will not come back by itself. Create it (`kubectl create namespace`, a resource whose attribute the resource's `namespace` references, or `create_namespace = true` on the resource so that the provider creates it), wait until a deleted one is gone, or point the resource at another namespace, {again}"
            ),
            Command::Destroy => format!(
                "The namespace named above was deleted (or is being deleted) while the provider worked in it, and what was in it goes with it. Wait until the namespace is gone, {again}"
            ),
        },
        Failure::Webhook => format!(
            "A Webhook task's call failed as the message says (task, URL, HTTP status, the start of the answer). Fix the webhook so it answers HTTP 200 with `Content-Type: application/json` and a Kubernetes object or `List` within the task's timeout, or the task's `url` (https://, or set `allow_insecure_webhooks = true` in the provider block for plain http:// to another machine); nothing was pruned, {again}"
        ),
        Failure::Package { template: Some(t) } => {
            format!("Fix {t} in the operator package, or the parameter value it uses, {again}")
        }
        Failure::Package { template: None } => format!(
            "Fix the operator package or the instance's parameters as the message says, {again}"
        ),
        Failure::Cluster { object: Some(o) } => {
            format!("Check {o} in the cluster (kubectl describe, its events), {again}")
        }
        Failure::Cluster { object: None } => format!(
            "Check what the message above names in the cluster (kubectl describe, events), {again}"
        ),
        Failure::Setting { setting } => format!("{}, {again}", setting_fix(setting)),
        // The message itself says what to change.
        Failure::Explained => {
            let mut first = again.chars();
            match first.next() {
                Some(c) => format!("{}{}", c.to_uppercase(), first.as_str()),
                None => again.to_string(),
            }
        }
    }
}

/// The fix sentence of a connection setting the message says is wrong: the provider
/// block's attribute, or the environment variable that named the kubeconfig (which has
/// no line in the configuration to point at).
fn setting_fix(setting: &str) -> String {
    match KUBECONFIG_VARIABLES.contains(&setting) {
        true => format!(
            "Correct the {setting} environment variable (or the kubeconfig it names) as the message says, or name a kubeconfig with `config_path` in the provider \"kudo\" block"
        ),
        false => format!(
            "Correct `{setting}` in the provider \"kudo\" block (or the kubeconfig it reads) as the message says"
        ),
    }
}

/// A connection setting that cannot be used, found by `ConfigureProvider` (and
/// `ValidateProviderConfig`) before any resource needs the cluster: one error for the
/// provider block, on the attribute at fault, instead of one per resource. Which
/// Terraform command comes next is unknown there, so the advice names none.
pub fn settings_error(e: &ClusterError) -> Diagnostic {
    let ClusterError::Settings { setting, .. } = e else {
        return Diagnostic::error("Invalid Kubernetes connection settings", e.to_string());
    };
    let d = Diagnostic::error(
        "Invalid Kubernetes connection settings",
        with_advice(
            e,
            &format!("{}, then run Terraform again.", setting_fix(setting)),
        ),
    );
    match KUBECONFIG_VARIABLES.contains(setting) {
        true => d,
        false => d.with_attribute(tfplugin::AttributePath::attribute(*setting)),
    }
}

/// A failed plan run, operator install or uninstall.
pub fn engine_error(summary: &str, e: &EngineError, settings: &ConnectionSettings) -> Diagnostic {
    engine_error_for(summary, e, settings, Command::Apply)
}

/// [`engine_error`] with the advice for `command`.
pub fn engine_error_for(
    summary: &str,
    e: &EngineError,
    settings: &ConnectionSettings,
    command: Command,
) -> Diagnostic {
    Diagnostic::error(
        summary,
        with_advice(e, &advice(&e.failure(), settings, command)),
    )
}

/// One warning per object a removal left in place for another instance or its data
/// (a setting the user chose is no news).
pub fn kept_warnings(kept: &[kudo_engine::engine::Kept]) -> Vec<Diagnostic> {
    kept.iter()
        .filter(|k| k.is_notable())
        .map(|k| Diagnostic::warning(format!("{} kept", k.object), k.to_string()))
        .collect()
}

/// A failed call to the cluster outside a plan run (reads, imports, CRD installs).
pub fn cluster_error(summary: &str, e: &ClusterError, settings: &ConnectionSettings) -> Diagnostic {
    cluster_error_for(summary, e, settings, Command::Apply)
}

/// [`cluster_error`] with the advice for `command`.
pub fn cluster_error_for(
    summary: &str,
    e: &ClusterError,
    settings: &ConnectionSettings,
    command: Command,
) -> Diagnostic {
    Diagnostic::error(
        summary,
        with_advice(e, &advice(&e.failure(), settings, command)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_engine::cluster::ObjectRef;

    fn host(h: &str) -> ConnectionSettings {
        ConnectionSettings {
            host: Some(h.to_string()),
            ..Default::default()
        }
    }

    #[test]
    fn unreachable_names_the_setting_in_use() {
        let e = ClusterError::Unreachable {
            url: "https://10.0.0.1:6443".into(),
            message: "connection refused".into(),
        };
        let d = cluster_error("Cannot reach", &e, &host("https://10.0.0.1:6443"));
        assert!(
            d.detail.contains("`host` setting (https://10.0.0.1:6443)"),
            "{}",
            d.detail
        );
        assert!(d.detail.ends_with(AGAIN), "{}", d.detail);
        let d = cluster_error("Cannot reach", &e, &ConnectionSettings::default());
        assert!(d.detail.contains("KUBE_CONFIG_PATH"), "{}", d.detail);
        let path = ConnectionSettings {
            config_path: Some("/k/config".into()),
            ..Default::default()
        };
        let d = cluster_error("Cannot reach", &e, &path);
        assert!(
            d.detail.contains("`config_path` (/k/config)"),
            "{}",
            d.detail
        );
    }

    /// Each case's words (the classification itself is tested in kudo-engine), ending
    /// with the command that failed.
    #[test]
    fn every_failure_is_worded_and_ends_with_what_to_do() {
        let settings = ConnectionSettings::default();
        let r = ObjectRef::new("apps/v1", "StatefulSet", Some("ns"), "zk-zookeeper");
        let cases: [(Failure<'_>, &[&str], &[&str]); 16] = [
            (
                Failure::Unschedulable { object: Some(&r) },
                &[
                    "not the package",
                    "no node StatefulSet ns/zk-zookeeper (apps/v1) fits on",
                ],
                &["Fix the"],
            ),
            (
                Failure::Setting {
                    setting: "config_context",
                },
                &["Correct `config_context` in the provider \"kudo\" block"],
                &[],
            ),
            (
                Failure::Setting {
                    setting: "KUBECONFIG",
                },
                &["Correct the KUBECONFIG environment variable"],
                &["`KUBECONFIG`"],
            ),
            (Failure::Unreachable, &["KUBE_CONFIG_PATH"], &[]),
            (Failure::Denied(None), &["RBAC"], &[]),
            (
                Failure::CredentialPlugin { command: "aws" },
                &["Run `aws`"],
                &[],
            ),
            (
                Failure::Cancelled { object: Some(&r) },
                &["why StatefulSet ns/zk-zookeeper"],
                &[],
            ),
            (
                Failure::Cancelled { object: None },
                &["still in progress"],
                &["the object"],
            ),
            (
                Failure::ApiVersion {
                    template: Some("templates/a.yaml"),
                },
                &["serves in templates/a.yaml"],
                &[],
            ),
            (Failure::Taken, &["import it instead"], &[]),
            (
                Failure::Transient,
                &["transient"],
                &[
                    "kubeconfig",
                    "config_path",
                    "`host`",
                    "Fix the",
                    "kubectl describe",
                ],
            ),
            (Failure::Namespace, &["namespace"], &["Fix the", "package"]),
            (Failure::Webhook, &["Webhook task"], &[]),
            (
                Failure::Package {
                    template: Some("templates/cm.yaml"),
                },
                &["Fix templates/cm.yaml in the operator package"],
                &[],
            ),
            (
                Failure::Cluster { object: Some(&r) },
                &["Check StatefulSet ns/zk-zookeeper"],
                &[],
            ),
            (
                Failure::Cluster { object: None },
                &["what the message above names"],
                &["the object"],
            ),
        ];
        for (failure, wanted, unwanted) in cases {
            for command in [Command::Apply, Command::Destroy] {
                let a = advice(&failure, &settings, command);
                assert!(a.ends_with(command.again()), "{failure:?}: {a}");
                for w in wanted {
                    assert!(a.contains(w), "{failure:?} lacks {w:?}: {a}");
                }
                for u in unwanted {
                    assert!(!a.contains(u), "{failure:?} has {u:?}: {a}");
                }
            }
        }
        let namespace = |c| advice(&Failure::Namespace, &settings, c);
        assert!(namespace(Command::Apply).contains("`create_namespace = true`"));
        assert!(namespace(Command::Apply).contains("will not come back by itself"));
        assert!(namespace(Command::Destroy).contains("Wait until the namespace is gone"));
        assert_eq!(
            advice(&Failure::Explained, &settings, Command::Destroy),
            "Then run terraform destroy again."
        );
    }

    #[test]
    fn a_failed_destroy_is_told_to_run_destroy_again() {
        let settings = host("https://10.0.0.1:6443");
        let lost = || ClusterError::ConnectionLost {
            url: "https://10.0.0.1:6443".into(),
            verb: "read",
            object: "ConfigMap ns/c".into(),
            message: "connection closed before message completed".into(),
        };
        let e = EngineError::from(lost());
        let d = engine_error_for("Cannot remove instance zk", &e, &settings, Command::Destroy);
        assert!(d.detail.ends_with(AGAIN_DESTROY), "{}", d.detail);
        assert!(!d.detail.contains("terraform apply"), "{}", d.detail);
        // The engine's own verdict does not name a command either.
        assert!(!d.detail.contains("applied again"), "{}", d.detail);
        let c = cluster_error_for("Cannot reach", &lost(), &settings, Command::Destroy);
        assert!(c.detail.ends_with(AGAIN_DESTROY), "{}", c.detail);
    }
}
