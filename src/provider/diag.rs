//! Error diagnostics that say what happened, where, and what to do about it.
//!
//! Failures of the cluster and of plan runs all go through here, so every one of them
//! ends with the same kind of advice: which setting, file or object to look at, then
//! which Terraform command to run again (the one that failed: a failed destroy is
//! finished by `terraform destroy`, not by an apply).

use kudo_engine::cluster::{ClusterError, ConnectionSettings, ObjectRef, Trouble};
use kudo_engine::engine::EngineError;
use tfplugin::Diagnostic;

use kudo_engine::cluster::Forbidden as Refused;

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

/// `detail`, then a blank line and `advice` (which should end with [`AGAIN`] when
/// running Terraform again is the next step).
/// What a failed plan of a resource that exists adds for whoever is destroying it:
/// `terraform destroy` first plans the configuration (Terraform's pre-destroy refresh),
/// so the same error stops the destroy; `-refresh=false` skips that plan.
pub const DESTROY_ANYWAY: &str = "If you are destroying this resource: `terraform destroy` plans the configuration first and stops at this error; `terraform destroy -refresh=false` destroys what the state records without that plan.";

/// Adds [`DESTROY_ANYWAY`] to every error of a plan of an existing resource.
pub fn with_destroy_advice(diagnostics: &mut [Diagnostic]) {
    for d in diagnostics.iter_mut().filter(|d| d.is_error()) {
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

/// What a piece of advice is about: the failure's kind and what the error names.
struct Case<'a> {
    trouble: Trouble,
    fatal: bool,
    /// The package file at fault.
    template: Option<&'a str>,
    /// The object the failure is about, when the error names one.
    object: Option<&'a ObjectRef>,
    command: Command,
    /// The permission an RBAC refusal names.
    refused: Option<Refused>,
}

/// What to do about a kind of trouble.
fn advice(case: &Case<'_>, settings: &ConnectionSettings) -> String {
    let again = case.command.again();
    match case.trouble {
        Trouble::Unreachable => connection_advice(settings, case.command),
        Trouble::Denied => match &case.refused {
            Some(refused) => format!(
                "{}\n\nGrant that to the credentials the provider uses, or configure others that have it, {again}",
                super::permission::advice(refused)
            ),
            None => format!(
                "Check the credentials the provider uses (`token`, `exec`, `client_certificate`/`client_key` or the kubeconfig user) and that their RBAC permissions allow this, {again}"
            ),
        },
        Trouble::Cancelled => {
            let stuck = match case.object {
                Some(o) => format!("why {o} does not become ready (kubectl describe)"),
                None => "what the message above says was still in progress".to_string(),
            };
            format!(
                "If the work needs longer, raise the resource's `timeouts`; otherwise check {stuck}, {again}"
            )
        }
        Trouble::ApiVersion => format!(
            "Write an apiVersion the cluster serves in {}, or set `translate_api_versions = true` in the provider block so the provider converts it, {again}",
            case.template.unwrap_or("the template named above")
        ),
        Trouble::Taken => format!(
            "The provider never takes over what another instance or configuration manages. Choose names as the message says, or, if this configuration should manage that instance, import it instead (an `import` block or `terraform import kudo_instance.<resource> <namespace>/<name>`); {again}"
        ),
        // The provider already retried with backoff; what is left is to try later.
        Trouble::Transient => format!(
            "This is a transient failure of the API server or the network to it (HTTP 429/5xx or a dropped connection, still failing after the provider's retries), not a problem with the configuration or the package. Nothing needs fixing unless it keeps happening (then check the API server's health and load), {again}"
        ),
        Trouble::Namespace => match case.command {
            Command::Apply => format!(
                "The namespace named above does not exist, or is being deleted. The provider does not create an instance's namespace: create it first (a `kubernetes_namespace` resource the instance depends on, or kubectl create namespace), wait until a deleted one is gone, or point the instance at another namespace, {again}"
            ),
            Command::Destroy => format!(
                "The namespace named above was deleted (or is being deleted) while the provider worked in it, and what was in it goes with it. Wait until the namespace is gone, {again}"
            ),
        },
        Trouble::Webhook => format!(
            "A Webhook task's call failed as the message says (task, URL, HTTP status, the start of the answer). Fix the webhook so it answers HTTP 200 with `Content-Type: application/json` and a Kubernetes object or `List` within the task's timeout, or the task's `url` (https://, or set `allow_insecure_webhooks = true` in the provider block for plain http:// to another machine); nothing was pruned, {again}"
        ),
        Trouble::Content => match (case.fatal, case.template, case.object) {
            (true, Some(t), _) => {
                format!("Fix {t} in the operator package, or the parameter value it uses, {again}")
            }
            (true, None, _) => format!(
                "Fix the operator package or the instance's parameters as the message says, {again}"
            ),
            (false, _, Some(o)) => {
                format!("Check {o} in the cluster (kubectl describe, its events), {again}")
            }
            (false, _, None) => format!(
                "Check what the message above names in the cluster (kubectl describe, events), {again}"
            ),
        },
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
    // The engine also stops on its own (not only through a cluster call) when cancelled.
    let trouble = match e.is_cancelled() {
        true => Trouble::Cancelled,
        false => e.trouble,
    };
    let case = Case {
        trouble,
        fatal: e.fatal,
        template: e.template.as_deref(),
        object: e.object.as_ref(),
        command,
        refused: Refused::parse(&e.to_string()),
    };
    Diagnostic::error(summary, with_advice(e, &advice(&case, settings)))
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
    let advice = match e {
        ClusterError::CredentialPlugin {
            command: plugin, ..
        } => format!(
            "Run `{plugin}` in a shell to see whether it prints an ExecCredential (install it, or log in to its cloud CLI, as its message says), or correct the `exec` block, {}",
            command.again()
        ),
        // The message itself says what to change.
        ClusterError::FieldConflict { .. } | ClusterError::Settings { .. } => {
            let again = command.again();
            let mut first = again.chars();
            match first.next() {
                Some(c) => format!("{}{}", c.to_uppercase(), first.as_str()),
                None => again.to_string(),
            }
        }
        _ => advice(
            &Case {
                trouble: e.trouble(),
                fatal: false,
                template: None,
                object: None,
                command,
                refused: Refused::parse(&e.to_string()),
            },
            settings,
        ),
    };
    Diagnostic::error(summary, with_advice(e, &advice))
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

    #[test]
    fn rejected_object_points_at_its_template() {
        let e: EngineError = ClusterError::Api {
            verb: "apply",
            object: "ConfigMap ns/Bad".into(),
            code: 422,
            reason: "Invalid".into(),
            message: "metadata.name: Invalid value".into(),
        }
        .into();
        let e = e
            .with_object(&ObjectRef::new("v1", "ConfigMap", Some("ns"), "Bad"))
            .with_template("templates/cm.yaml");
        let d = engine_error("Plan deploy failed", &e, &ConnectionSettings::default());
        assert!(d.detail.contains("ConfigMap ns/Bad"), "{}", d.detail);
        assert!(
            d.detail
                .contains("Fix templates/cm.yaml in the operator package"),
            "{}",
            d.detail
        );
        assert!(d.detail.ends_with(AGAIN), "{}", d.detail);
    }

    #[test]
    fn every_trouble_ends_with_what_to_do() {
        let settings = ConnectionSettings::default();
        for trouble in [
            Trouble::Content,
            Trouble::Unreachable,
            Trouble::Denied,
            Trouble::Cancelled,
            Trouble::ApiVersion,
            Trouble::Taken,
            Trouble::Transient,
            Trouble::Namespace,
            Trouble::Webhook,
        ] {
            for fatal in [true, false] {
                for command in [Command::Apply, Command::Destroy] {
                    let case = Case {
                        trouble,
                        fatal,
                        template: None,
                        object: None,
                        command,
                        refused: None,
                    };
                    let a = advice(&case, &settings);
                    assert!(a.ends_with(command.again()), "{trouble:?}: {a}");
                }
            }
        }
        let d = cluster_error(
            "x",
            &ClusterError::Api {
                verb: "get",
                object: "o".into(),
                code: 403,
                reason: "Forbidden".into(),
                message: "no".into(),
            },
            &settings,
        );
        assert!(d.detail.contains("RBAC"), "{}", d.detail);
    }
    fn lost() -> ClusterError {
        ClusterError::ConnectionLost {
            url: "https://10.0.0.1:6443".into(),
            verb: "read",
            object: "ConfigMap ns/c".into(),
            message: "connection closed before message completed".into(),
        }
    }

    #[test]
    fn a_failed_destroy_is_told_to_run_destroy_again() {
        let settings = host("https://10.0.0.1:6443");
        let e = EngineError::from(lost());
        let d = engine_error_for("Cannot remove instance zk", &e, &settings, Command::Destroy);
        assert!(
            d.detail.ends_with("then run terraform destroy again."),
            "{}",
            d.detail
        );
        assert!(!d.detail.contains("terraform apply"), "{}", d.detail);
        // The engine's own verdict does not name a command either.
        assert!(!d.detail.contains("applied again"), "{}", d.detail);
        let c = cluster_error_for("Cannot reach", &lost(), &settings, Command::Destroy);
        assert!(c.detail.ends_with(AGAIN_DESTROY), "{}", c.detail);
        let c = cluster_error_for(
            "Cannot reach",
            &ClusterError::Unreachable {
                url: "https://10.0.0.1:6443".into(),
                message: "connection refused".into(),
            },
            &settings,
            Command::Destroy,
        );
        assert!(c.detail.ends_with(AGAIN_DESTROY), "{}", c.detail);
    }

    #[test]
    fn advice_names_an_object_only_when_the_error_has_one() {
        let settings = ConnectionSettings::default();
        let bare = EngineError::transient("the plan stopped");
        for e in [bare.clone(), {
            let mut c = bare.clone();
            c.trouble = Trouble::Cancelled;
            c
        }] {
            let d = engine_error("Plan failed", &e, &settings);
            assert!(!d.detail.contains("object named above"), "{}", d.detail);
            assert!(!d.detail.contains("the object"), "{}", d.detail);
        }
        let r = ObjectRef::new("apps/v1", "StatefulSet", Some("ns"), "zk-zookeeper");
        for trouble in [Trouble::Content, Trouble::Cancelled] {
            let mut e = bare.clone().with_object(&r);
            e.trouble = trouble;
            let d = engine_error("Plan failed", &e, &settings);
            let advice = d.detail.rsplit("\n\n").next().unwrap_or_default();
            assert!(
                advice.contains("StatefulSet ns/zk-zookeeper"),
                "{trouble:?}: {advice}"
            );
        }
    }

    #[test]
    fn a_dropped_connection_is_transient_not_a_kubeconfig_problem() {
        let settings = ConnectionSettings {
            config_path: Some("/k/config".into()),
            ..Default::default()
        };
        let e = EngineError::from(lost());
        assert!(!e.fatal);
        let d = engine_error("Plan deploy failed", &e, &settings);
        assert!(d.detail.contains("transient"), "{}", d.detail);
        for wrong in ["kubeconfig", "config_path", "`host`", "Fix the"] {
            assert!(!d.detail.contains(wrong), "{wrong}: {}", d.detail);
        }
        // Server errors left after the retries are transient too.
        let e = EngineError::from(ClusterError::Api {
            verb: "apply",
            object: "Service ns/web".into(),
            code: 503,
            reason: "ServiceUnavailable".into(),
            message: "overloaded".into(),
        });
        let d = engine_error("Plan deploy failed", &e, &settings);
        assert!(d.detail.contains("transient"), "{}", d.detail);
        assert!(!d.detail.contains("kubectl describe"), "{}", d.detail);
    }

    #[test]
    fn a_namespace_deleted_under_the_run_gets_namespace_advice() {
        let settings = ConnectionSettings::default();
        let e = EngineError::from(ClusterError::NamespaceGone {
            verb: "apply",
            object: "ConfigMap team-a/c".into(),
            namespace: "team-a".into(),
            code: 404,
            message: "namespaces \"team-a\" not found".into(),
        });
        assert!(
            !e.fatal,
            "no FATAL_ERROR verdict telling to fix the package"
        );
        for command in [Command::Apply, Command::Destroy] {
            let d = engine_error_for("Plan deploy failed", &e, &settings, command);
            assert!(d.detail.contains("namespace team-a"), "{}", d.detail);
            assert!(d.detail.contains("create it first") || command == Command::Destroy);
            assert!(!d.detail.contains("Fix the"), "{}", d.detail);
            assert!(!d.detail.contains("package"), "{}", d.detail);
            assert!(d.detail.ends_with(command.again()), "{}", d.detail);
        }
    }
}
