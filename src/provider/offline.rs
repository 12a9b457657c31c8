//! A provider whose connection settings are known only after apply (the cluster is
//! created by the same apply): what calls that need the cluster get meanwhile.

use tfplugin::{Diagnostic, ReadRequest, ReadResponse};

/// The settings in `unknown`, as a sentence fragment: "`host` and `token`".
pub(super) fn setting_names(unknown: &[&str]) -> String {
    let names: Vec<String> = unknown.iter().map(|n| format!("`{n}`")).collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// What a call that needs the cluster gets while the connection is not known.
pub(super) fn error(unknown: &[&str]) -> Diagnostic {
    Diagnostic::error(
        "Kubernetes connection not known yet",
        format!(
            "The provider settings {} depend on values Terraform knows only after apply (for example the outputs of the resource that creates the cluster), so the provider cannot reach the cluster now. Plans are made without the cluster and `terraform apply` connects once the values are known; see the guide \"Cluster and operators in one apply\".",
            setting_names(unknown)
        ),
    )
}

/// The refresh of a resource while offline: its state stays as it was, and the
/// warning says that drift is not seen by this plan.
pub(super) fn not_refreshed(unknown: &[&str], req: ReadRequest) -> ReadResponse {
    let id = req
        .current_state
        .get("id")
        .as_str()
        .unwrap_or("")
        .to_string();
    let what = match id.is_empty() {
        true => req.type_name.clone(),
        false => format!("{} {id}", req.type_name),
    };
    ReadResponse {
        diagnostics: vec![Diagnostic::warning(
            "Not refreshed: cluster connection known only after apply",
            format!(
                "{what} was not read from the cluster because the provider settings {} are known only after apply. The plan compares the configuration with the last known state; changes made in the cluster since then are not shown, and the next plan with a known connection sees them.",
                setting_names(unknown)
            ),
        )],
        new_state: req.current_state,
        private: req.private,
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;

    /// A provider configured as Terraform configures it on the first plan of a
    /// configuration that creates its cluster: the connection settings unknown.
    async fn offline_provider() -> KudoProvider {
        let provider = KudoProvider::new();
        let config = Value::object([
            ("host", Value::Unknown),
            ("token", Value::Unknown),
            ("cluster_ca_certificate", Value::Unknown),
        ]);
        let diags = provider.configure(config, "1.11.4".into()).await;
        assert!(diags.is_empty(), "{diags:?}");
        provider
    }

    #[tokio::test]
    async fn offline_the_cluster_is_not_contacted_and_the_error_names_the_settings() {
        let provider = offline_provider().await;
        let session = provider.session().await.expect("configured");
        // Even with a kubeconfig in the environment nothing is tried: the error comes
        // at once and is about the unknown settings.
        let Err(err) = session.cluster().await else {
            panic!("a cluster while offline");
        };
        assert_eq!(err.summary, "Kubernetes connection not known yet");
        assert!(
            err.detail
                .contains("`host`, `token` and `cluster_ca_certificate`"),
            "{}",
            err.detail
        );
    }

    #[tokio::test]
    async fn offline_refresh_keeps_the_state_and_warns() {
        let provider = offline_provider().await;
        let state = Value::object([
            ("id", Value::string("ns/web")),
            ("name", Value::string("web")),
        ]);
        let resp = provider
            .read_resource(ReadRequest {
                type_name: schema::INSTANCE.to_string(),
                current_state: state.clone(),
                private: b"seed".to_vec(),
            })
            .await;
        assert_eq!(resp.new_state, state);
        assert_eq!(resp.private, b"seed".to_vec());
        assert_eq!(resp.diagnostics.len(), 1, "{:?}", resp.diagnostics);
        let d = &resp.diagnostics[0];
        assert!(!d.is_error());
        assert!(
            d.detail.contains("kudo_instance ns/web was not read"),
            "{}",
            d.detail
        );
    }

    #[tokio::test]
    async fn offline_import_is_an_error_saying_what_to_do() {
        let provider = offline_provider().await;
        let resp = provider
            .import_resource_state(schema::INSTANCE, "ns/web")
            .await;
        assert!(resp.imported.is_empty());
        assert!(resp.diagnostics[0].is_error());
        assert!(
            resp.diagnostics[0].detail.contains("-target="),
            "{}",
            resp.diagnostics[0].detail
        );
    }
}
