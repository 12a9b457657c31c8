//! The import RPC: builds a whole state for an Instance already in the cluster from its
//! `<namespace>/<name>` id, reading the OperatorVersion, parameters, Secret and labelled
//! objects so that the first plan after the import has nothing to change.

use tfplugin::{Attr, Diagnostic, ImportResponse, ImportedResource, IntoValue, Value};

use kudo_engine::cluster::ObjectRef;
use kudo_engine::engine::{self};

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
    let instance = match cluster.get(&engine::instance_ref(namespace, name)).await {
        Ok(Some(i)) => i,
        Ok(None) => {
            return fail(Diagnostic::error(
                "Nothing to import",
                format!("There is no Instance {name} in namespace {namespace}."),
            ));
        }
        Err(e) => return fail(session.cluster_error("Cannot read the instance", &e)),
    };
    // The same reading of the Instance as the engine's (which plan ran last, and how).
    let record = engine::InstanceObject::from_value(&instance);
    let (ov_namespace, ov_name) = record.operator_version(namespace);
    let operator = format!("{ov_namespace}/{ov_name}");
    let params = record.parameters();
    let last_plan = record
        .last_plan()
        .unwrap_or_else(|| kudo_plan::DEFAULT_PLAN.to_string());
    let status = record
        .plan_status(&last_plan)
        .unwrap_or_else(|| "NEVER_RUN".to_string());
    let objects = match cluster
        .list_labelled_map(
            namespace,
            &format!("{}={name}", engine::LABEL_INSTANCE),
            |o| {
                let r = ObjectRef::from_object(&o).ok()?;
                let uid = o
                    .pointer("/metadata/uid")
                    .and_then(serde_json::Value::as_str);
                Some((r, uid.map(str::to_string)))
            },
        )
        .await
    {
        Ok(mut found) => {
            found.sort();
            found
        }
        Err(e) => {
            return fail(session.cluster_error("Cannot list the instance's objects", &e));
        }
    };
    let pkg = engine::load_operator(&cluster, ov_namespace, ov_name)
        .await
        .ok()
        .flatten();
    // The Secret, when there is one, is where the sensitive values went.
    let secret = match engine::read_sensitive(&cluster, namespace, name).await {
        Ok(s) => s,
        Err(e) => {
            return fail(session.engine_error("Cannot read the sensitive parameters", &e));
        }
    };
    let mut all_params = params.clone();
    all_params.extend(secret.iter().map(|(k, v)| (k.clone(), v.clone())));
    let resolution = match &pkg {
        Some(p) => super::lookup::resolution(session, &operator, p, true)
            .await
            .ok()
            .flatten(),
        None => None,
    };
    // The state the planning call would plan from: what the Instance records, with no
    // render seed (see `render_seed`: an imported instance has none).
    let request = ChangeRequest {
        name: Some(name),
        namespace,
        operator_version: Some(ov_name),
        package: pkg.as_ref(),
        parameters: Some(&all_params),
        sensitive: &secret,
        plan_triggers: None,
        seed: Seed::Known(None),
        resolution: resolution.as_ref(),
        prior: None,
        replacing: false,
        allow_downgrade: false,
    };
    let change = kudo_plan::decide_change(&request).ok();
    let effective = change.as_ref().and_then(|c| c.effective.clone());
    let children = match change.as_ref().and_then(|c| c.children.as_deref()) {
        Some(c) => views::children(Some(c)),
        None => Value::Null,
    };
    let outputs = match change.as_ref().and_then(|c| c.outputs.as_ref()) {
        Some(o) => views::outputs(Some(o)),
        None => Value::Null,
    };
    // With the provider's default on, the configuration most likely leaves
    // `show_manifests` unset: the objects as the package renders them, so that the
    // first plan after the import is empty.
    let refs: Vec<ObjectRef> = objects.iter().map(|(r, _)| r.clone()).collect();
    let desired = change.as_ref().and_then(|c| c.desired.as_ref());
    let manifests = match (desired, session.config.show_manifests) {
        (Some(desired), true) => {
            match engine::current(&cluster, desired, &last_plan, &refs).await {
                Some(managed) => crate::provider::manifests::value(&managed, &Value::Null, &secret),
                None => Value::Null,
            }
        }
        _ => Value::Null,
    };
    let state = InstanceModel {
        name: name.into(),
        namespace: namespace.into(),
        operator: operator.into(),
        manifests,
        parameters: match params.is_empty() {
            true => Value::Null,
            false => views::string_map(&params),
        },
        sensitive_parameters: match secret.is_empty() {
            true => Value::Null,
            false => views::string_map(&secret),
        },
        id: format!("{namespace}/{name}").into(),
        status: status.into(),
        outputs,
        last_plan: last_plan.into(),
        effective_parameters: effective.map(|e| sensitive::strip(e, &secret)).into(),
        objects: Attr::Known(ManagedObject::map(
            objects.iter().map(|(r, uid)| (r, uid.as_deref())),
        )),
        operator_digest: pkg.as_ref().map(packages::digest).into(),
        children,
        // Write-only values are never in state; an imported instance's Secret shows
        // as `sensitive_parameters` above. Preview, timeouts and the settings are
        // null until the configuration sets them.
        ..Default::default()
    }
    .into_value();
    ImportResponse {
        imported: vec![ImportedResource {
            type_name: schema::INSTANCE.to_string(),
            state,
            private: Vec::new(),
        }],
        diagnostics: Vec::new(),
    }
}
