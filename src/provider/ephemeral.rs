//! `ephemeral "kudo_instance_parameters"`: an existing instance's parameter values,
//! sensitive and write-only ones included, read from the cluster each time Terraform
//! opens it and never stored (Terraform 1.10+).

use tfplugin::{Diagnostic, Value};

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
    let values = super::running::parameters(session, &cluster, namespace, name).await?;
    values.ok_or_else(|| {
        Diagnostic::error(
            "No such instance",
            format!(
                "There is no Instance {name} in namespace {namespace}. Terraform opens an ephemeral resource while planning, so the instance must exist before a plan that reads it: create it first (for example `terraform apply -target=kudo_instance.<name>`)."
            ),
        )
    })
}

/// `ephemeral "kudo_instance_parameters"`.
pub struct InstanceParameters;

#[async_trait::async_trait]
impl tfplugin::EphemeralResource<super::Call> for InstanceParameters {
    fn name(&self) -> &'static str {
        super::schema::INSTANCE_PARAMETERS
    }

    fn schema(&self) -> tfplugin::Schema {
        super::schema::instance_parameters()
    }

    async fn open(&self, call: &super::Call, config: Value) -> (Value, Vec<Diagnostic>) {
        open(&call.session, config).await
    }
}
