//! `ephemeral "kudo_instance_parameters"`: an existing instance's parameter values,
//! sensitive and write-only ones included, read from the cluster each time Terraform
//! opens it and never stored (Terraform 1.10+).

use tfplugin::{Diagnostic, Value};

use kudo_engine::engine;

use super::{Session, namespace_in};

/// The configuration with `values` filled.
pub async fn open(session: &Session, config: Value) -> (Value, Vec<Diagnostic>) {
    let name = config.get("name").as_str().unwrap_or_default().to_string();
    let namespace = namespace_in(&config).to_string();
    match values(session, &namespace, &name).await {
        Ok(values) => (config.with("values", Value::string_map(values)), Vec::new()),
        Err(d) => (config, vec![d]),
    }
}

async fn values(
    session: &Session,
    namespace: &str,
    name: &str,
) -> Result<std::collections::BTreeMap<String, String>, Diagnostic> {
    let cluster = session.cluster().await?;
    let instance = cluster
        .get(&engine::instance_ref(namespace, name))
        .await
        .map_err(|e| session.cluster_error("Cannot read the instance", &e))?
        .ok_or_else(|| {
            Diagnostic::error(
                "No such instance",
                format!(
                    "There is no Instance {name} in namespace {namespace}. Terraform opens an ephemeral resource while planning, so the instance must exist before a plan that reads it: create it first (for example `terraform apply -target=kudo_instance.<name>`)."
                ),
            )
        })?;
    let record = engine::InstanceObject::from_value(&instance);
    let (ov_namespace, ov_name) = record.operator_version(namespace);
    let pkg = engine::load_operator(&cluster, ov_namespace, ov_name)
        .await
        .map_err(|e| session.engine_error("Cannot read the instance's operator", &e))?
        .ok_or_else(|| {
            Diagnostic::error(
                "The instance's operator is missing",
                format!("Instance {namespace}/{name} runs OperatorVersion {ov_namespace}/{ov_name}, which is not in the cluster, so its parameter defaults are unknown."),
            )
        })?;
    let mut all = record.parameters();
    let secret = engine::read_sensitive(&cluster, namespace, name)
        .await
        .map_err(|e| session.engine_error("Cannot read the sensitive parameters", &e))?;
    all.extend(secret);
    pkg.effective_params(&all).map_err(|errors| {
        Diagnostic::error(
            "The instance's parameters do not fit its operator",
            errors
                .iter()
                .map(|e| format!("{}: {}", e.parameter, e.message))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })
}
