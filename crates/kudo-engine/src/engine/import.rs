//! An Instance already in the cluster (made by KUDO, `kubectl`, or another
//! configuration), read as a `kudo_instance` import records it: what it runs, its
//! values, how its last plan ended, and the objects labelled with it.

use std::collections::BTreeMap;

use kudo_package::Package;

use super::error::EngineError;
use super::instance_object::InstanceObject;
use super::instance_object::instance_ref;
use super::metadata::LABEL_INSTANCE;
use crate::cluster::{Cluster, ClusterError, ObjectRef};

/// What an import reads.
#[derive(Debug, Clone)]
pub struct Found {
    /// Namespace and name of the OperatorVersion it runs.
    pub operator_version: (String, String),
    /// `spec.parameters`.
    pub parameters: BTreeMap<String, String>,
    /// The values in its `<name>-kudo-sensitive` Secret.
    pub sensitive: BTreeMap<String, String>,
    pub last_plan: String,
    /// That plan's status, `NEVER_RUN` when the Instance records none.
    pub status: String,
    /// Its objects (by instance label, sorted) with their uids.
    pub objects: Vec<(ObjectRef, Option<String>)>,
    /// The package of its OperatorVersion, when that is in the cluster.
    pub package: Option<Package>,
}

/// Why an Instance cannot be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("There is no Instance {name} in namespace {namespace}.")]
    Missing { namespace: String, name: String },
    #[error("cannot read the instance: {0}")]
    Instance(#[source] ClusterError),
    #[error("cannot list the instance's objects: {0}")]
    Objects(#[source] ClusterError),
    #[error("cannot read the sensitive parameters: {0}")]
    Sensitive(#[source] EngineError),
}

/// Reads the Instance `namespace/name` and what it owns.
pub async fn find_instance(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<Found, ImportError> {
    let instance = cluster
        .get(&instance_ref(namespace, name))
        .await
        .map_err(ImportError::Instance)?
        .ok_or_else(|| ImportError::Missing {
            namespace: namespace.to_string(),
            name: name.to_string(),
        })?;
    // The same reading of the Instance as the runs' (which plan ran last, and how).
    let record = InstanceObject::from_value(&instance);
    let (ov_namespace, ov_name) = record.operator_version(namespace);
    let operator_version = (ov_namespace.to_string(), ov_name.to_string());
    let last_plan = record
        .last_plan()
        .unwrap_or_else(|| kudo_plan::DEFAULT_PLAN.to_string());
    let status = record
        .plan_status(&last_plan)
        .unwrap_or_else(|| "NEVER_RUN".to_string());
    let selector = format!("{LABEL_INSTANCE}={name}");
    let mut objects = cluster
        .list_labelled_map(namespace, &selector, |o| {
            let r = ObjectRef::from_object(&o).ok()?;
            let uid = o
                .pointer("/metadata/uid")
                .and_then(serde_json::Value::as_str);
            Some((r, uid.map(str::to_string)))
        })
        .await
        .map_err(ImportError::Objects)?;
    objects.sort();
    let package = super::operator::load_operator(cluster, ov_namespace, ov_name)
        .await
        .ok()
        .flatten();
    let sensitive = super::sensitive::read_sensitive(cluster, namespace, name)
        .await
        .map_err(ImportError::Sensitive)?;
    Ok(Found {
        operator_version,
        parameters: record.parameters(),
        sensitive,
        last_plan,
        status,
        objects,
        package,
    })
}
