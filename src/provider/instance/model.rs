//! The `kudo_instance` model: every attribute of the resource as a field, and what the
//! handlers read from them (parameter maps, managed objects, settings).

use std::collections::BTreeMap;

use tfplugin::{Attr, Diagnostic, Value};

use kudo_engine::cluster::ObjectRef;
use kudo_engine::engine;

use crate::provider::drift::{self, DriftSettings, IgnoreBlock};
use crate::provider::health::{self, HealthSettings, RuleBlock};
use crate::provider::sensitive;
use crate::provider::timeouts::Timeouts;

tfplugin::model! {
    /// A `kudo_instance` value: configuration, plan or state.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct InstanceModel {
        pub name: Attr<String>,
        pub namespace: Attr<String>,
        pub create_namespace: Attr<bool>,
        pub operator: Attr<String>,
        // The parameter maps stay values: an entry may be unknown while planning, and
        // the handlers need to tell that from a known map (see `string_map_of`).
        pub parameters: Value,
        pub sensitive_parameters: Value,
        pub parameters_wo: Value,
        pub parameters_wo_version: Attr<String>,
        pub delete_volumes_on_destroy: Attr<bool>,
        pub crd_deletion: Attr<String>,
        pub plan_triggers: Value,
        pub allow_downgrade: Attr<bool>,
        pub rollback_on_failure: Attr<bool>,
        pub crd_upgrade_safety: Attr<String>,
        pub health: Attr<String>,
        pub drift: Attr<String>,
        pub show_manifests: Attr<bool>,
        pub id: Attr<String>,
        pub status: Attr<String>,
        /// Built for output; kept as a value (unknown while planning without the cluster).
        pub summary: Value,
        pub last_plan: Attr<String>,
        pub effective_parameters: Attr<BTreeMap<String, String>>,
        /// Keyed by [`ManagedObject::key`]: a map, not a list, because Terraform's plan
        /// renderer matches list elements pairwise (quadratic in the length; minutes
        /// for 10,000 objects) and map entries by key.
        pub objects: Attr<BTreeMap<String, ManagedObject>>,
        // Built for output (possibly partly unknown while planning); kept as values.
        pub outputs: Value,
        pub preview: Value,
        pub manifests: Value,
        pub operator_digest: Attr<String>,
        pub children: Value,
        /// Built for output; kept as values.
        pub plan_status: Value,
        pub plan_steps: Value,
        pub drifted_fields: Value,
        pub timeouts: Attr<Timeouts>,
        pub drift_ignore: Attr<Vec<IgnoreBlock>>,
        pub health_rule: Attr<Vec<RuleBlock>>,
    }
}

tfplugin::model! {
    /// An entry of `objects`. The fields may be null so that any stored entry decodes;
    /// an entry without its identity is skipped, as before the model existed. A planned
    /// entry's uid is unknown when the apply creates the object.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct ManagedObject {
        pub api_version: Option<String>,
        pub kind: Option<String>,
        pub namespace: Option<String>,
        pub name: Option<String>,
        pub uid: Attr<String>,
    }
}

/// A `map(string)` attribute value; null counts as empty. `None` while the map or any
/// of its entries is unknown: an entry known only at apply (another resource's output)
/// can change what the whole map means (defaults, children, the plan that runs).
pub(in crate::provider) fn string_map_of(v: &Value) -> Option<BTreeMap<String, String>> {
    if !v.is_fully_known() {
        return None;
    }
    Some(v.to_string_map().ok().flatten().unwrap_or_default())
}

impl ManagedObject {
    pub fn new(r: &ObjectRef, uid: Option<&str>) -> ManagedObject {
        ManagedObject {
            api_version: Some(r.api_version.clone()),
            kind: Some(r.kind.clone()),
            namespace: Some(r.namespace.clone().unwrap_or_default()),
            name: Some(r.name.clone()),
            uid: uid.map_or(Attr::Null, |u| Attr::Known(u.to_string())),
        }
    }

    /// The `objects` key of `r`: `Kind namespace/name` (`Kind name` when
    /// cluster-scoped), the kind qualified by its group outside the core group
    /// (`StatefulSet.apps zk/zk-zookeeper`), as `kubectl` names a resource. It leaves
    /// out the version, like [`ObjectRef::same_object`]: one stored object, one key.
    pub fn key(r: &ObjectRef) -> String {
        r.qualified_label()
    }

    /// The `objects` value of these objects and uids.
    pub fn map<'a>(
        entries: impl IntoIterator<Item = (&'a ObjectRef, Option<&'a str>)>,
    ) -> BTreeMap<String, ManagedObject> {
        entries
            .into_iter()
            .map(|(r, uid)| (ManagedObject::key(r), ManagedObject::new(r, uid)))
            .collect()
    }

    /// The object's identity and the uid it had when last read. The uid stays out of
    /// `ObjectRef`: the engine compares inventories by identity, which a re-created
    /// object keeps.
    fn entry(&self) -> Option<(ObjectRef, Option<String>)> {
        let r = ObjectRef::new(
            self.api_version.as_deref()?,
            self.kind.as_deref()?,
            self.namespace.as_deref().filter(|s| !s.is_empty()),
            self.name.as_deref()?,
        );
        Some((r, self.uid.known().cloned()))
    }
}

impl InstanceModel {
    /// `parameters`; null counts as empty. `None` while unknown.
    pub fn parameters(&self) -> Option<BTreeMap<String, String>> {
        string_map_of(&self.parameters)
    }

    /// `sensitive_parameters`; null counts as empty. `None` while unknown.
    pub fn sensitive(&self) -> Option<BTreeMap<String, String>> {
        string_map_of(&self.sensitive_parameters)
    }

    /// `plan_triggers`; null counts as empty. `None` while unknown.
    pub fn plan_triggers(&self) -> Option<BTreeMap<String, String>> {
        string_map_of(&self.plan_triggers)
    }

    /// `parameters` and `sensitive_parameters` together, as templates see them.
    pub fn all_parameters(&self) -> Result<Option<BTreeMap<String, String>>, Vec<Diagnostic>> {
        sensitive::merge(self.parameters().as_ref(), self.sensitive().as_ref())
    }

    /// The `objects` entries with the uid each had when last read, in key order.
    pub fn object_entries(&self) -> Vec<(ObjectRef, Option<String>)> {
        self.objects
            .known()
            .into_iter()
            .flat_map(BTreeMap::values)
            .filter_map(ManagedObject::entry)
            .collect()
    }

    pub fn object_refs(&self) -> Vec<ObjectRef> {
        self.object_entries().into_iter().map(|(r, _)| r).collect()
    }

    /// `crd_deletion`, unset meaning the default. An invalid value is reported by
    /// validation; where it reaches here anyway the default (which loses nothing)
    /// applies.
    pub fn crd_deletion(&self) -> engine::CrdDeletion {
        self.crd_deletion
            .as_deref()
            .and_then(engine::CrdDeletion::parse)
            .unwrap_or_default()
    }

    /// This resource's drift settings over the provider's (invalid ones are reported by
    /// validation; here they count as unset).
    pub fn drift_settings(&self, provider: &DriftSettings) -> DriftSettings {
        drift::parse(&self.drift, &self.drift_ignore)
            .unwrap_or_default()
            .over(provider)
    }

    /// `crd_upgrade_safety` over the provider's (an invalid value is reported by
    /// validation; here it counts as unset).
    pub fn crd_safety(&self, provider: engine::CrdSafety) -> engine::CrdSafety {
        self.crd_upgrade_safety
            .as_deref()
            .and_then(engine::CrdSafety::parse)
            .unwrap_or(provider)
    }

    /// The health settings of this instance's runs: its `health` and `health_rule` over
    /// the provider's (invalid ones are reported by validation; here they count as
    /// unset).
    pub fn health_settings(&self, provider: &HealthSettings) -> HealthSettings {
        health::parse(&self.health, &self.health_rule)
            .unwrap_or_default()
            .over(provider)
    }

    /// `allow_downgrade`, unset meaning false.
    pub fn allows_downgrade(&self) -> bool {
        self.allow_downgrade.known().copied().unwrap_or(false)
    }

    /// `rollback_on_failure`, unset meaning the provider's.
    pub fn rolls_back(&self, provider: bool) -> bool {
        self.rollback_on_failure
            .known()
            .copied()
            .unwrap_or(provider)
    }

    /// `delete_volumes_on_destroy`, unset meaning false.
    pub fn delete_volumes(&self) -> bool {
        self.delete_volumes_on_destroy
            .known()
            .copied()
            .unwrap_or(false)
    }
}

// How `objects` is keyed and read is checked through Terraform: the harness's
// `managed_objects` compares every key with its object's kind, group, namespace and
// name in each acceptance test that reads `objects`, and
// `refresh::an_objects_entry_that_names_no_object_is_dropped_by_the_refresh` feeds it a
// damaged entry.
