//! The import RPC: builds a whole state for an Instance already in the cluster from its
//! `<namespace>/<name>` id, reading the OperatorVersion, parameters, Secret and labelled
//! objects so that the first plan after the import has nothing to change.

use tfplugin::{Attr, Diagnostic, ImportResponse, ImportedResource, IntoValue, Value};

use kudo_engine::cluster::{Cluster, ObjectRef};
use kudo_engine::engine::{self, Found, ImportError};

use kudo_plan::{ChangeRequest, Seed};

use crate::provider::packages::{self};
use crate::provider::sensitive::{self};
use crate::provider::{Session, schema};

use super::model::{InstanceModel, ManagedObject};
use super::views;

pub(super) async fn import(session: &Session, id: &str) -> ImportResponse {
    let fail = crate::provider::import_failed;
    let Some((namespace, name)) = id
        .split_once('/')
        .filter(|(n, m)| !n.is_empty() && !m.is_empty())
    else {
        return fail(Diagnostic::error(
            "Invalid import id",
            format!("{id:?} is not `<namespace>/<name>`."),
        ));
    };
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return fail(d),
    };
    let found = match engine::find_instance(&cluster, namespace, name).await {
        Ok(f) => f,
        Err(e @ ImportError::Missing { .. }) => {
            return fail(Diagnostic::error("Nothing to import", e.to_string()));
        }
        Err(ImportError::Instance(e)) => {
            return fail(session.cluster_error("Cannot read the instance", &e));
        }
        Err(ImportError::Objects(e)) => {
            return fail(session.cluster_error("Cannot list the instance's objects", &e));
        }
        Err(ImportError::Sensitive(e)) => {
            return fail(session.engine_error("Cannot read the sensitive parameters", &e));
        }
    };
    let state = imported(session, &cluster, (namespace, name), found).await;
    ImportResponse {
        imported: vec![ImportedResource {
            type_name: schema::INSTANCE.to_string(),
            state: state.into_value(),
            private: Vec::new(),
        }],
        diagnostics: Vec::new(),
    }
}

/// The state the import records: what the planning call decides for the Instance's
/// values without a render seed (an imported instance has none, see `render_seed`), so
/// that the first plan after the import has nothing to change.
async fn imported(
    session: &Session,
    cluster: &Cluster,
    (namespace, name): (&str, &str),
    found: Found,
) -> InstanceModel {
    let (ov_namespace, ov_name) = &found.operator_version;
    let operator = format!("{ov_namespace}/{ov_name}");
    let secret = &found.sensitive;
    let mut all_params = found.parameters.clone();
    all_params.extend(secret.iter().map(|(k, v)| (k.clone(), v.clone())));
    let pkg = found.package.as_ref();
    let resolution = match pkg {
        Some(p) => super::lookup::resolution(session, &operator, p, true)
            .await
            .ok()
            .flatten(),
        None => None,
    };
    let request = ChangeRequest {
        name: Some(name),
        namespace,
        operator_version: Some(ov_name),
        package: pkg,
        parameters: Some(&all_params),
        sensitive: secret,
        plan_triggers: None,
        seed: Seed::Known(None),
        resolution: resolution.as_ref(),
        prior: None,
        replacing: false,
        allow_downgrade: false,
    };
    let change = kudo_plan::decide_change(&request).ok();
    let known = |v: Value| if v.is_known() { v } else { Value::Null };
    let children = known(views::children(
        change.as_ref().and_then(|c| c.children.as_deref()),
    ));
    let outputs = known(views::outputs(
        change.as_ref().and_then(|c| c.outputs.as_ref()),
    ));
    // With the provider's default on, the configuration most likely leaves
    // `show_manifests` unset: the objects as the package renders them, so that the
    // first plan after the import is empty.
    let refs: Vec<ObjectRef> = found.objects.iter().map(|(r, _)| r.clone()).collect();
    let desired = change.as_ref().and_then(|c| c.desired.as_ref());
    let manifests = match (desired, session.config.show_manifests) {
        (Some(desired), true) => {
            match engine::current(cluster, desired, &found.last_plan, &refs).await {
                Some(managed) => crate::provider::manifests::value(&managed, &Value::Null, secret),
                None => Value::Null,
            }
        }
        _ => Value::Null,
    };
    let map_or_null = |m: &std::collections::BTreeMap<String, String>| match m.is_empty() {
        true => Value::Null,
        false => views::string_map(m),
    };
    InstanceModel {
        name: name.into(),
        namespace: namespace.into(),
        operator: operator.into(),
        manifests,
        parameters: map_or_null(&found.parameters),
        sensitive_parameters: map_or_null(secret),
        id: format!("{namespace}/{name}").into(),
        status: found.status.clone().into(),
        outputs,
        last_plan: found.last_plan.clone().into(),
        effective_parameters: change
            .as_ref()
            .and_then(|c| c.effective.clone())
            .map(|e| sensitive::strip(e, secret))
            .into(),
        objects: Attr::Known(ManagedObject::map(
            found.objects.iter().map(|(r, uid)| (r, uid.as_deref())),
        )),
        operator_digest: pkg.map(packages::digest).into(),
        children,
        // Write-only values are never in state; an imported instance's Secret shows
        // as `sensitive_parameters` above. Preview, timeouts and the settings are
        // null until the configuration sets them.
        ..Default::default()
    }
}
