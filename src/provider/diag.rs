//! Error diagnostics that say what happened, where, and what to do about it.
//!
//! Failures of the cluster and of plan runs all go through here, so every one of them
//! ends with the same kind of advice: which setting, file or object to look at, then
//! "run terraform apply again".

use kudo_engine::cluster::{ClusterError, ConnectionSettings, Trouble};
use kudo_engine::engine::EngineError;
use tfplugin::Diagnostic;

/// How every piece of advice ends: Terraform resumes where the failure stopped it.
pub const AGAIN: &str = "then run terraform apply again.";

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
pub fn connection_advice(settings: &ConnectionSettings) -> String {
    let what = match (&settings.host, &settings.config_path) {
        (Some(host), _) => format!(
            "Check the provider's `host` setting ({host}) and that the Kubernetes API server is running there"
        ),
        (None, Some(path)) => format!(
            "Check the kubeconfig at the provider's `config_path` ({path}), its `config_context`, and that the Kubernetes API server it names is running"
        ),
        (None, None) => "Check the kubeconfig the provider uses (`KUBE_CONFIG_PATH`, `KUBECONFIG` or ~/.kube/config; or set `host` or `config_path` in the provider block) and that the Kubernetes API server it names is running".to_string(),
    };
    format!("{what}, {AGAIN}")
}

/// What to do about a kind of trouble; `template` names the package file at fault.
fn advice(
    trouble: Trouble,
    fatal: bool,
    template: Option<&str>,
    settings: &ConnectionSettings,
) -> String {
    match trouble {
        Trouble::Unreachable => connection_advice(settings),
        Trouble::Denied => format!(
            "Check the credentials the provider uses (`token`, `client_certificate`/`client_key` or the kubeconfig user) and that their RBAC permissions allow this, {AGAIN}"
        ),
        Trouble::Cancelled => format!(
            "If the work needs longer, raise the resource's `timeouts`; otherwise check why the object named above does not become ready (kubectl describe), {AGAIN}"
        ),
        Trouble::ApiVersion => format!(
            "Write an apiVersion the cluster serves in {}, or set `translate_api_versions = true` in the provider block so the provider converts it, {AGAIN}",
            template.unwrap_or("the template named above")
        ),
        Trouble::Taken => format!(
            "The provider never takes over what another instance or configuration manages. Choose names as the message says, or, if this configuration should manage that instance, import it instead (an `import` block or `terraform import kudo_instance.<resource> <namespace>/<name>`); {AGAIN}"
        ),
        Trouble::Content => match (fatal, template) {
            (true, Some(t)) => {
                format!("Fix {t} in the operator package, or the parameter value it uses, {AGAIN}")
            }
            (true, None) => format!(
                "Fix the operator package or the instance's parameters as the message says, {AGAIN}"
            ),
            (false, _) => format!(
                "Check the object named above in the cluster (kubectl describe, its events), {AGAIN}"
            ),
        },
    }
}

/// A failed plan run, operator install or uninstall.
pub fn engine_error(summary: &str, e: &EngineError, settings: &ConnectionSettings) -> Diagnostic {
    // The engine also stops on its own (not only through a cluster call) when cancelled.
    let trouble = match e.is_cancelled() {
        true => Trouble::Cancelled,
        false => e.trouble,
    };
    Diagnostic::error(
        summary,
        with_advice(
            e,
            &advice(trouble, e.fatal, e.template.as_deref(), settings),
        ),
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
    let advice = match e {
        // The message itself says what to change.
        ClusterError::FieldConflict { .. } | ClusterError::Settings { .. } => {
            "Then run terraform apply again.".to_string()
        }
        _ => advice(e.trouble(), false, None, settings),
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
        ] {
            for fatal in [true, false] {
                let a = advice(trouble, fatal, None, &settings);
                assert!(a.ends_with(AGAIN), "{trouble:?}: {a}");
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
}
