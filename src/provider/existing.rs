//! A `kudo_instance` being created must not find its Instance already there: that
//! Instance belongs to someone (another Terraform configuration, KUDO itself, a parent
//! instance), and applying over it would give two owners the same objects. Import is
//! the way to adopt one.

use serde_json::Value as Json;
use tfplugin::{AttributePath, Diagnostic};

use kudo_engine::cluster::FIELD_MANAGER;
use kudo_engine::engine;

/// Who holds an existing Instance, our own field manager named for what it means here.
fn managers(instance: &Json) -> String {
    engine::InstanceHolders::of(instance).describe(|m| match m {
        FIELD_MANAGER => format!("{m} (another Terraform configuration or state)"),
        other => other.to_string(),
    })
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
