//! The import RPC: builds a whole state for an Instance already in the cluster from its
//! `<namespace>/<name>` id. The engine's [`engine::import_instance`] reads the
//! OperatorVersion, parameters, Secret and labelled objects and decides the values as a
//! plan would, so that the first plan after the import has nothing to change; this file
//! parses the id and encodes the answer as an `InstanceModel`.

use tfplugin::{Attr, Diagnostic, ImportResponse, ImportedResource, IntoValue, Value};

use kudo_engine::engine::{self, ImportRequest, Imported};

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
    let request = import_request(session);
    let imported = match engine::import_instance(&cluster, namespace, name, &request).await {
        Ok(Some(i)) => i,
        Ok(None) => {
            return fail(Diagnostic::error(
                "Nothing to import",
                format!("There is no Instance {name} in namespace {namespace}."),
            ));
        }
        Err(e) => return fail(crate::provider::running::error(session, &e)),
    };
    let state = imported_model(namespace, name, &imported);
    ImportResponse {
        imported: vec![ImportedResource {
            type_name: schema::INSTANCE.to_string(),
            state: state.into_value(),
            private: Vec::new(),
        }],
        diagnostics: Vec::new(),
    }
}

/// How an import reads an Instance (the import's, and `terraform query`'s for each
/// Instance it lists).
pub(in crate::provider) fn import_request(session: &Session) -> ImportRequest<'static> {
    ImportRequest {
        // Only the tree `kudo_operator` recorded: an import resolves nothing again.
        resolution: &recorded,
        // With the provider's default on, the configuration most likely leaves
        // `show_manifests` unset: the objects as the package renders them, so that the
        // first plan after the import is empty.
        manifests: session.config.show_manifests,
    }
}

/// The tree `kudo_operator` recorded for the OperatorVersion `ov_namespace/ov_name`.
fn recorded(
    ov_namespace: &str,
    ov_name: &str,
    pkg: &kudo_package::Package,
) -> Option<kudo_resolve::Resolution> {
    super::lookup::recorded_resolution(&format!("{ov_namespace}/{ov_name}"), pkg)
}

/// The state the import records: the Instance as found, with what the planning call
/// decides for its values without a render seed (an imported instance has none, see
/// `render_seed`).
pub(in crate::provider) fn imported_model(
    namespace: &str,
    name: &str,
    imported: &Imported,
) -> InstanceModel {
    let (ov_namespace, ov_name) = &imported.operator_version;
    let operator = format!("{ov_namespace}/{ov_name}");
    let secret = &imported.sensitive;
    let known = |v: Value| if v.is_known() { v } else { Value::Null };
    let children = known(views::children(imported.children.as_deref()));
    let outputs = known(views::outputs(imported.outputs.as_ref()));
    let manifests = match &imported.managed {
        Some(managed) => crate::provider::manifests::value(managed, &Value::Null, secret),
        None => Value::Null,
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
        parameters: map_or_null(&imported.parameters),
        sensitive_parameters: map_or_null(secret),
        id: format!("{namespace}/{name}").into(),
        status: imported.status.clone().into(),
        outputs,
        last_plan: imported.last_plan.clone().into(),
        effective_parameters: imported
            .effective
            .clone()
            .map(|e| sensitive::strip(e, secret))
            .into(),
        objects: Attr::Known(ManagedObject::map(
            imported.objects.iter().map(|(r, uid)| (r, uid.as_deref())),
        )),
        operator_digest: imported.package.as_ref().map(packages::digest).into(),
        children,
        // Write-only values are never in state; an imported instance's Secret shows
        // as `sensitive_parameters` above. Preview, timeouts and the settings are
        // null until the configuration sets them.
        ..Default::default()
    }
}
