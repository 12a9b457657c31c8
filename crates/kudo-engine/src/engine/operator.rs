//! KUDO's Operator and OperatorVersion objects: written at install so `kubectl` and KUDO
//! users see what is installed, read back to rebuild a package (import, upgrades).

use kudo_package::Package;
use kudo_package::crd::OperatorVersionSpec;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::error::EngineError;
use super::instance_object::InstanceObject;
use super::removal::{Kept, KeptReason};
use crate::cluster::{Cluster, KUDO_API_VERSION, ObjectRef};

pub fn operator_ref(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::new(KUDO_API_VERSION, "Operator", Some(namespace), name)
}

pub fn operator_version_ref(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::new(KUDO_API_VERSION, "OperatorVersion", Some(namespace), name)
}

/// Applies the Operator and OperatorVersion of `pkg` in `namespace`.
pub async fn install_operator(
    cluster: &Cluster,
    pkg: &Package,
    namespace: &str,
) -> Result<(), EngineError> {
    write_operator(cluster, pkg, namespace, false).await
}

/// What [`install_operator`] would meet, asked with a server-side dry-run and nothing
/// written: for the plan of `kudo_operator`. Where the server cannot judge yet (the
/// KUDO CRDs or the namespace are created by the apply) it passes.
pub async fn check_operator(
    cluster: &Cluster,
    pkg: &Package,
    namespace: &str,
) -> Result<(), EngineError> {
    match write_operator(cluster, pkg, namespace, true).await {
        Err(e)
            if matches!(
                e.cluster_cause(),
                Some(crate::cluster::ClusterError::UnknownKind { .. })
            ) || e.cluster_cause().is_some_and(|c| c.is_not_found()) =>
        {
            Ok(())
        }
        other => other,
    }
}

async fn write_operator(
    cluster: &Cluster,
    pkg: &Package,
    namespace: &str,
    dry_run: bool,
) -> Result<(), EngineError> {
    let name = &pkg.operator.name;
    let ov_name = pkg.operator_version_name();
    if !dry_run {
        tracing::info!(operator = %name, operator_version = %ov_name, namespace = %namespace, "installing operator");
    }
    let operator = json!({
        "apiVersion": KUDO_API_VERSION,
        "kind": "Operator",
        "metadata": { "name": name, "namespace": namespace },
        "spec": kudo_package::crd::operator_spec(pkg),
    });
    let ov = json!({
        "apiVersion": KUDO_API_VERSION,
        "kind": "OperatorVersion",
        "metadata": {
            "name": ov_name,
            "namespace": namespace,
            "labels": { super::metadata::LABEL_OPERATOR: name },
        },
        "spec": kudo_package::crd::operator_version_spec(pkg),
    });
    // These objects are what `kudo_operator` stands for, so they are ours whoever wrote
    // them last (KUDO's manager, before a migration by import). The OperatorVersion
    // names its Operator only by name, so both go out at once.
    let write = |obj: Value| async move {
        let r = ObjectRef::from_object(&obj)?;
        cluster.apply_owned(&obj, dry_run).await.map_err(|e| {
            let text = e.to_string();
            let too_large = e.code() == Some(413)
                || text.contains("too large")
                || text.contains("larger than max");
            let err = EngineError::from(e).with_object(&r);
            match too_large {
                true => err.context(format!(
                    "the package is too large to store as one {} object (Kubernetes keeps objects under about 1.5 MiB); its largest parts: {}",
                    r.kind,
                    largest_parts(pkg)
                )),
                false => err,
            }
        })
    };
    let (operator, ov) = futures::join!(write(operator), write(ov));
    operator?;
    ov?;
    if !dry_run {
        tracing::info!(operator = %name, operator_version = %ov_name, namespace = %namespace, "operator installed");
    }
    Ok(())
}

/// The three largest templates and parameter defaults of a package, with their sizes,
/// so that an object too large to store names what to shrink.
fn largest_parts(pkg: &Package) -> String {
    let mut parts: Vec<(usize, String)> = pkg
        .templates
        .iter()
        .map(|(file, text)| (text.len(), format!("templates/{file}")))
        .chain(pkg.parameters.iter().filter_map(|p| {
            let default = p.default.as_ref()?;
            Some((default.len(), format!("parameter {} (its default)", p.name)))
        }))
        .collect();
    parts.sort_by_key(|p| std::cmp::Reverse(p.0));
    parts
        .iter()
        .take(3)
        .map(|(size, what)| format!("{what}: {size} bytes"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads the OperatorVersion `ov_name` (and its Operator) back into a package; None when
/// the OperatorVersion does not exist. `operator`: the Operator's name when the caller
/// knows it (a state records it), so that both are read at once; otherwise, or when
/// the OperatorVersion names another, the Operator is read after it.
pub async fn load_operator(
    cluster: &Cluster,
    namespace: &str,
    ov_name: &str,
    operator: Option<&str>,
) -> Result<Option<Package>, EngineError> {
    let ov_r = operator_version_ref(namespace, ov_name);
    let read_operator = |name: String| async move {
        let r = operator_ref(namespace, &name);
        cluster
            .get(&r)
            .await
            .map_err(|e| EngineError::from(e).with_object(&r))
            .map(|found| (name, found))
    };
    let guess = async {
        match operator.filter(|n| !n.is_empty()) {
            Some(name) => Some(read_operator(name.to_string()).await),
            None => None,
        }
    };
    let (ov, guessed) = futures::future::join(cluster.get(&ov_r), guess).await;
    let Some(ov) = ov.map_err(|e| EngineError::from(e).with_object(&ov_r))? else {
        return Ok(None);
    };
    let operator_name = OperatorVersionSpec::of_object(&ov).map(|spec| spec.operator.name);
    let operator = match (operator_name.filter(|n| !n.is_empty()), guessed) {
        (Some(name), Some(Ok((guessed, found)))) if guessed == name => found,
        (Some(name), _) => read_operator(name).await?.1,
        (None, _) => None,
    };
    kudo_package::crd::package_from_operator_version(operator.as_ref(), &ov)
        .map(|mut pkg| {
            // Where it was read from, whatever the object's own metadata says.
            pkg.origin = kudo_package::Origin::Cluster {
                namespace: namespace.to_string(),
            };
            Some(pkg)
        })
        .map_err(|e| {
            EngineError::fatal("cannot read the operator package back")
                .caused_by(e)
                .with_object(&ov_r)
        })
}

/// Instances in `namespace` that run `ov_name` (their `spec.operatorVersion.name`), as
/// `namespace/name`.
pub async fn instances_using(
    cluster: &Cluster,
    namespace: &str,
    ov_name: &str,
) -> Result<Vec<String>, EngineError> {
    let instances = cluster
        .list_kind(KUDO_API_VERSION, "Instance", Some(namespace))
        .await
        .map_err(EngineError::from)?;
    Ok(instances
        .iter()
        .filter(|i| InstanceObject::from_value(i).spec.operator_version.name == ov_name)
        .filter_map(|i| i.pointer("/metadata/name").and_then(Value::as_str))
        .map(|n| super::sharing::user_id(namespace, n))
        .collect())
}

/// Removes the OperatorVersion and, when `remove_operator` is set, the Operator (only
/// once no version of it is left: another configuration may have installed one); waits
/// until they are gone. With `keep_used`, an OperatorVersion that Instances still run
/// (another configuration's, or dependencies of other instances) stays, and so does the
/// Operator; what was kept is returned.
pub async fn uninstall_operator(
    cluster: &Cluster,
    namespace: &str,
    operator_name: &str,
    ov_name: &str,
    remove_operator: bool,
    keep_used: bool,
    cancel: &CancellationToken,
) -> Result<Vec<Kept>, EngineError> {
    let ov = operator_version_ref(namespace, ov_name);
    if keep_used {
        let users = instances_using(cluster, namespace, ov_name).await?;
        if !users.is_empty() {
            return Ok(vec![Kept {
                object: ov,
                reason: KeptReason::UsedBy(users),
            }]);
        }
    }
    delete(cluster, &ov, cancel).await?;
    if remove_operator {
        let versions = cluster
            .list_kind(KUDO_API_VERSION, "OperatorVersion", Some(namespace))
            .await
            .map_err(EngineError::from)?;
        let other_version = versions.iter().any(|v| {
            OperatorVersionSpec::of_object(v)
                .is_some_and(|spec| spec.operator.name == operator_name)
        });
        match other_version {
            true => {
                tracing::info!(operator = %operator_name, "other versions of the operator remain; keeping the Operator")
            }
            false => delete(cluster, &operator_ref(namespace, operator_name), cancel).await?,
        }
    }
    Ok(Vec::new())
}

async fn delete(
    cluster: &Cluster,
    r: &ObjectRef,
    cancel: &CancellationToken,
) -> Result<(), EngineError> {
    cluster
        .delete_and_wait(r, cancel)
        .await
        .map_err(|e| EngineError::from(e).with_object(r))?;
    tracing::info!(object = %r, "deleted");
    Ok(())
}
