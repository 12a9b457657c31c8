//! An existing Instance as the cluster holds it, with the package of the OperatorVersion
//! it runs and the values kept in its `<name>-kudo-sensitive` Secret: what the
//! ephemeral resource and the `kudo_plan` action start from.

use std::collections::BTreeMap;

use tfplugin::Diagnostic;

use kudo_engine::cluster::Cluster;
use kudo_engine::engine;
use kudo_package::Package;

use super::Session;

pub struct Running {
    pub record: engine::InstanceObject,
    pub package: Package,
    /// Namespace and name of the OperatorVersion it runs.
    pub operator_version: (String, String),
    pub sensitive: BTreeMap<String, String>,
}

/// The Instance `namespace/name`; `Ok(None)` when there is none (each caller says what
/// that means for it). Its OperatorVersion must be in the cluster.
pub async fn read(
    session: &Session,
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<Option<Running>, Diagnostic> {
    let Some(instance) = cluster
        .get(&engine::instance_ref(namespace, name))
        .await
        .map_err(|e| session.cluster_error("Cannot read the instance", &e))?
    else {
        return Ok(None);
    };
    let record = engine::InstanceObject::from_value(&instance);
    let (ov_namespace, ov_name) = record.operator_version(namespace);
    let operator_version = (ov_namespace.to_string(), ov_name.to_string());
    let package = engine::load_operator(cluster, ov_namespace, ov_name)
        .await
        .map_err(|e| session.engine_error("Cannot read the instance's operator", &e))?
        .ok_or_else(|| {
            Diagnostic::error(
                "The instance's operator is missing",
                format!("Instance {namespace}/{name} runs OperatorVersion {ov_namespace}/{ov_name}, which is not in the cluster."),
            )
        })?;
    let sensitive = engine::read_sensitive(cluster, namespace, name)
        .await
        .map_err(|e| session.engine_error("Cannot read the sensitive parameters", &e))?;
    Ok(Some(Running {
        record,
        package,
        operator_version,
        sensitive,
    }))
}
