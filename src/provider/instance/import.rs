//! The import RPC: builds a whole state for an Instance already in the cluster from its
//! `<namespace>/<name>` id, reading the OperatorVersion, parameters, Secret and labelled
//! objects so that the first plan after the import has nothing to change.

use tfplugin::{Attr, Diagnostic, ImportResponse, ImportedResource, IntoValue, Value};

use kudo_engine::cluster::ObjectRef;
use kudo_engine::engine::{self};

use crate::provider::children;
use crate::provider::packages::{self};
use crate::provider::sensitive::{self};
use crate::provider::{Session, schema};

use super::apply::applied_manifests;
use super::model::{InstanceModel, ManagedObject};
use super::rendered::*;
use super::values::*;

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
    let last_plan = record.last_plan().unwrap_or_else(|| "deploy".to_string());
    let status = record
        .plan_status(&last_plan)
        .unwrap_or_else(|| "NEVER_RUN".to_string());
    let objects = match cluster
        .list_labelled_map(
            namespace,
            &format!("{}={name}", engine::LABEL_INSTANCE),
            |o| {
                let r = ObjectRef::from_object(&o).ok()?;
                Some((r, uid_of(&o).map(str::to_string)))
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
    let effective = pkg
        .as_ref()
        .and_then(|p| p.effective_params(&all_params).ok());
    let children = match &pkg {
        // An imported instance has no render seed (see `render_seed`).
        Some(p) => children::tree(
            session,
            &operator,
            p,
            name,
            namespace,
            &all_params,
            None,
            true,
            None,
        )
        .await
        .ok()
        .flatten()
        .map_or(Value::Null, |t| children::children_value(&t, &secret)),
        None => Value::Null,
    };
    // With the provider's default on, the configuration most likely leaves
    // `show_manifests` unset: the objects as the package renders them, so that the
    // first plan after the import is empty.
    let refs: Vec<ObjectRef> = objects.iter().map(|(r, _)| r.clone()).collect();
    let manifests = match (&pkg, session.config.show_manifests) {
        (Some(p), true) => {
            applied_manifests(
                &cluster,
                p,
                name,
                namespace,
                &all_params,
                None,
                &last_plan,
                &refs,
                &secret,
            )
            .await
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
            false => string_map(&params),
        },
        sensitive_parameters: match secret.is_empty() {
            true => Value::Null,
            false => string_map(&secret),
        },
        id: format!("{namespace}/{name}").into(),
        status: status.into(),
        outputs: match (&pkg, &effective) {
            (Some(p), Some(e)) => {
                render_outputs(p, name, namespace, e, None).map_or(Value::Null, |o| string_map(&o))
            }
            _ => Value::Null,
        },
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
