//! `kudo_instance.show_manifests` and `manifests`: the objects the instance manages, as
//! the package renders them ([`kudo_engine::engine::Manifests::entries`] says what each
//! entry holds), so that Terraform's own plan shows a line diff of exactly the objects
//! that change. Keys are those of `objects` and `preview`.

use std::collections::BTreeMap;

use tfplugin::Value;

use kudo_engine::engine::Manifests;

/// The `manifests` map of the objects managed after the apply. `prior` is the prior
/// state's map (null when it had none).
pub fn value(managed: &Manifests, prior: &Value, sensitive: &BTreeMap<String, String>) -> Value {
    let prior = prior.to_string_map().ok().flatten().unwrap_or_default();
    Value::string_map(managed.entries(&prior, sensitive))
}

/// Whether manifests are wanted: the resource's `show_manifests`, else the provider's
/// default. `None` while the resource's setting is unknown.
pub fn wanted(show: &tfplugin::Attr<bool>, provider_default: bool) -> Option<bool> {
    match show {
        tfplugin::Attr::Unknown => None,
        other => Some(other.known().copied().unwrap_or(provider_default)),
    }
}
