//! A `kudo_instance` being created must not find its Instance already there: that
//! Instance belongs to someone (another Terraform configuration, KUDO itself, a parent
//! instance), and applying over it would give two owners the same objects. Import is
//! the way to adopt one.

use serde_json::Value as Json;
use tfplugin::{AttributePath, Diagnostic};

use kudo_engine::cluster::{Cluster, FIELD_MANAGER};
use kudo_engine::engine;

use super::Session;

/// Who manages an existing Instance, as far as the object tells.
fn managers(instance: &Json) -> String {
    let parent = engine::parent_instance(instance);
    let mut names: Vec<String> = instance
        .pointer("/metadata/managedFields")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("manager").and_then(Json::as_str))
        .map(|m| match m {
            FIELD_MANAGER => format!("{m} (another Terraform configuration or state)"),
            other => other.to_string(),
        })
        .collect();
    names.sort();
    names.dedup();
    let mut parts = Vec::new();
    if let Some(p) = parent {
        parts.push(format!("it is a dependency of instance {p}"));
    }
    if !names.is_empty() {
        parts.push(format!("field managers: {}", names.join(", ")));
    }
    if let Some(t) = instance
        .pointer("/metadata/creationTimestamp")
        .and_then(Json::as_str)
    {
        parts.push(format!("created {t}"));
    }
    match parts.is_empty() {
        true => String::new(),
        false => format!(" ({})", parts.join("; ")),
    }
}

/// The error for an Instance that exists before this resource created it.
pub fn already_exists(namespace: &str, name: &str, instance: &Json) -> Diagnostic {
    Diagnostic::error(
        "Instance already exists",
        format!(
            "Instance {namespace}/{name} already exists in the cluster{}. Creating it from this configuration would take over the instance and every object it manages, so the provider refuses.\n\nTo manage that instance from this configuration, import it: an `import {{ to = kudo_instance.<resource> id = \"{namespace}/{name}\" }}` block, or `terraform import kudo_instance.<resource> {namespace}/{name}`. To create a new instance instead, choose another `name` or `namespace`.",
            managers(instance)
        ),
    )
    .with_attribute(AttributePath::attribute("name"))
}

/// Fails when the Instance exists. Cluster trouble is reported as such.
pub async fn check_absent(
    session: &Session,
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<(), Diagnostic> {
    match cluster.get(&engine::instance_ref(namespace, name)).await {
        Ok(None) => Ok(()),
        Ok(Some(found)) => Err(already_exists(namespace, name, &found)),
        Err(e) => Err(session.cluster_error("Cannot check whether the instance exists", &e)),
    }
}
