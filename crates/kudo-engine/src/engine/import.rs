//! An Instance already in the cluster (made by KUDO, `kubectl`, or another
//! configuration), read as a `kudo_instance` import records it: what it runs, its
//! values, how its last plan ended, and the objects labelled with it.
//!
//! [`import_instance`] is the import as one action: the caller hands it the id and
//! gets back everything the imported state holds. Reading the Instance, deciding its
//! values as a plan would (so that the first plan after the import has nothing to
//! change) and reading its objects' manifests are one sequence the engine owns; the
//! caller only translates the answer into its state.

use std::collections::BTreeMap;

use kudo_package::Package;
use kudo_plan::{ChangeRequest, ChildView, Seed, Shown};
use kudo_resolve::Resolution;

use super::instance_object::{InstanceObject, InstanceReadError, instance_ref};
use super::manifests::Manifests;
use super::metadata::LABEL_INSTANCE;
use super::planning::current;
use crate::cluster::{Cluster, ObjectRef};

/// How [`import_instance`] imports (and a listing's imports, [`super::ListFilter::import`]).
#[derive(Clone, Copy)]
pub struct ImportRequest<'a> {
    /// The dependency tree recorded for the package the Instance runs (given the
    /// OperatorVersion's namespace and name), asked once that package has been read from
    /// the cluster; `None` when it is not known, which leaves `children` unknown.
    pub resolution: &'a (dyn Fn(&str, &str, &Package) -> Option<Resolution> + Send + Sync),
    /// Read the objects as the package renders them ([`Imported::managed`]).
    pub manifests: bool,
}

/// What an import records: the Instance as read, and what a plan of its values decides.
#[derive(Debug, Clone)]
pub struct Imported {
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
    /// The values over the package's defaults, as a plan of the found values decides
    /// them (without a render seed: an imported instance has none); `None` when not
    /// known (no package, or values the package refuses).
    pub effective: Option<BTreeMap<String, String>>,
    /// Its `outputs:` rendered; `None` when not known.
    pub outputs: Option<BTreeMap<String, Shown>>,
    /// Its dependency instances; `None` when not known.
    pub children: Option<Vec<ChildView>>,
    /// Its objects with the content the package renders for them, when the request
    /// asked and the package and values are known.
    pub managed: Option<Manifests>,
}

/// Reads the Instance `namespace/name`, and decides what its imported state holds as
/// the planning call would for the same values, so that the first plan after the import
/// has nothing to change; `Ok(None)` when there is no such Instance.
pub async fn import_instance(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    req: &ImportRequest<'_>,
) -> Result<Option<Imported>, InstanceReadError> {
    let ImportRequest {
        resolution,
        manifests,
    } = *req;
    let Some(found) = find_instance(cluster, namespace, name).await? else {
        return Ok(None);
    };
    let (ov_namespace, ov_name) = &found.operator_version;
    let mut all_params = found.parameters.clone();
    all_params.extend(found.sensitive.iter().map(|(k, v)| (k.clone(), v.clone())));
    let pkg = found.package.as_ref();
    let resolved = pkg.and_then(|p| resolution(ov_namespace, ov_name, p));
    let request = ChangeRequest {
        name: Some(name),
        namespace,
        operator_version: Some(ov_name),
        package: pkg,
        parameters: Some(&all_params),
        sensitive: &found.sensitive,
        plan_triggers: None,
        seed: Seed::Known(None),
        resolution: resolved.as_ref(),
        prior: None,
        replacing: false,
        allow_downgrade: false,
    };
    // A refusal's text may quote the values, sensitive ones included: not logged.
    let change = kudo_plan::decide_change(&request)
        .map_err(|_| tracing::debug!("the package refuses the imported values: left unknown"))
        .ok();
    let managed = match change.as_ref().and_then(|c| c.desired.as_ref()) {
        Some(desired) if manifests => {
            let refs: Vec<ObjectRef> = found.objects.iter().map(|(r, _)| r.clone()).collect();
            current(cluster, desired, &found.last_plan, &refs).await
        }
        _ => None,
    };
    let (effective, outputs, children) = match change {
        Some(c) => (c.effective, c.outputs, c.children),
        None => (None, None, None),
    };
    let Found {
        operator_version,
        parameters,
        sensitive,
        last_plan,
        status,
        objects,
        package,
    } = found;
    Ok(Some(Imported {
        operator_version,
        parameters,
        sensitive,
        last_plan,
        status,
        objects,
        package,
        effective,
        outputs,
        children,
        managed,
    }))
}

/// What an import reads (see [`Imported`], which passes it on).
#[derive(Debug, Clone)]
pub(crate) struct Found {
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

/// Reads the Instance `namespace/name` and what it owns; `Ok(None)` when there is none.
pub(crate) async fn find_instance(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<Option<Found>, InstanceReadError> {
    let Some(instance) = cluster
        .get(&instance_ref(namespace, name))
        .await
        .map_err(InstanceReadError::Instance)?
    else {
        return Ok(None);
    };
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
        .map_err(InstanceReadError::Objects)?;
    objects.sort();
    let package = super::operator::load_operator(cluster, ov_namespace, ov_name, None)
        .await
        .ok()
        .flatten();
    let sensitive = super::sensitive::read_sensitive(cluster, namespace, name)
        .await
        .map_err(InstanceReadError::Sensitive)?;
    Ok(Some(Found {
        operator_version,
        parameters: record.parameters(),
        sensitive,
        last_plan,
        status,
        objects,
        package,
    }))
}
