//! A `kudo_instance` being created must not find its Instance already there: that
//! Instance belongs to someone (another Terraform configuration, KUDO itself, a parent
//! instance), and applying over it would give two owners the same objects. Import is
//! the way to adopt one.

use tfplugin::{AttributePath, Diagnostic};

/// The error for an Instance that exists before this resource created it; `holders`:
/// who holds it, as the engine's refusal says (`PlanRefusal::Exists`).
pub fn already_exists(namespace: &str, name: &str, holders: &str) -> Diagnostic {
    Diagnostic::error(
        "Instance already exists",
        format!(
            "Instance {namespace}/{name} already exists in the cluster{}. Creating it from this configuration would take over the instance and every object it manages, so the provider refuses.\n\nTo manage that instance from this configuration, import it: an `import {{ to = kudo_instance.<resource> id = \"{namespace}/{name}\" }}` block, or `terraform import kudo_instance.<resource> {namespace}/{name}`. To create a new instance instead, choose another `name` or `namespace`.",
            holders
        ),
    )
    .with_attribute(AttributePath::attribute("name"))
}
