//! The list fields of the built-in kinds that are not replaced whole, and the keys that
//! name their items. One table serves two readers that Kubernetes keeps apart:
//!
//! * server-side apply identifies items by the OpenAPI `x-kubernetes-list-map-keys`
//!   (container ports by `containerPort` *and* `protocol`);
//! * strategic merge patch by the Go struct tag `patchMergeKey` of `k8s.io/api`
//!   (container ports by `containerPort` alone, Service ports by `port`), and it replaces
//!   lists whose field has no `patchStrategy:"merge"` tag (tolerations, args, a CRD's
//!   `versions`, whose apiextensions types carry no patch tags).
//!
//! Fields are found by their name and the name of the field holding the mapping they sit
//! in (`ports` inside `containers` is not `ports` inside a Service `spec`): that is
//! enough to tell apart every list below without a full schema.

/// How server-side apply treats a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyList {
    /// Replaced whole (`x-kubernetes-list-type: atomic`, and every list not in the table).
    Atomic,
    /// Items are unique scalars (`x-kubernetes-list-type: set`).
    Set,
    /// Items are mappings named by these fields (`x-kubernetes-list-type: map`).
    Map(&'static [&'static str]),
}

/// How a strategic merge patch treats a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchStrategy {
    /// The patch's list replaces the object's (no `patchStrategy:"merge"`).
    Replace,
    /// Scalars: the patch's items are added unless present (`finalizers`).
    MergeScalars,
    /// Mappings merged item by item, matched by this field (`patchMergeKey`).
    MergeByKey(&'static str),
}

struct ListField {
    field: &'static str,
    /// Names of the field holding the mapping this list is in; empty = any.
    parents: &'static [&'static str],
    apply: ApplyList,
    patch: PatchStrategy,
}

const CONTAINERS: &[&str] = &["containers", "initContainers", "ephemeralContainers"];
const NAME: &[&str] = &["name"];

const fn by_name(field: &'static str) -> ListField {
    ListField {
        field,
        parents: &[],
        apply: ApplyList::Map(NAME),
        patch: PatchStrategy::MergeByKey("name"),
    }
}

/// Tags as k8s.io/api declares them (core/v1 `PodSpec`, `Container`, `ServiceSpec`,
/// `ServiceAccount`, `ObjectMeta`, admissionregistration/v1 webhook configurations),
/// and list-map-keys as the published OpenAPI gives them.
static TABLE: &[ListField] = &[
    by_name("containers"),
    by_name("initContainers"),
    by_name("ephemeralContainers"),
    by_name("env"),
    by_name("volumes"),
    by_name("imagePullSecrets"),
    by_name("resourceClaims"),
    by_name("schedulingGates"),
    by_name("webhooks"),
    // ServiceAccount.secrets
    ListField {
        field: "secrets",
        parents: &[""],
        apply: ApplyList::Map(NAME),
        patch: PatchStrategy::MergeByKey("name"),
    },
    // apiextensions types carry no patch tags: strategic merge replaces a CRD's
    // versions, server-side apply keys them by name.
    ListField {
        field: "versions",
        parents: &["spec"],
        apply: ApplyList::Map(NAME),
        patch: PatchStrategy::Replace,
    },
    ListField {
        field: "volumeMounts",
        parents: CONTAINERS,
        apply: ApplyList::Map(&["mountPath"]),
        patch: PatchStrategy::MergeByKey("mountPath"),
    },
    ListField {
        field: "volumeDevices",
        parents: CONTAINERS,
        apply: ApplyList::Map(&["devicePath"]),
        patch: PatchStrategy::MergeByKey("devicePath"),
    },
    ListField {
        field: "ports",
        parents: CONTAINERS,
        apply: ApplyList::Map(&["containerPort", "protocol"]),
        patch: PatchStrategy::MergeByKey("containerPort"),
    },
    // ServiceSpec.ports (a NetworkPolicy rule's ports sit in `ingress`/`egress` items
    // and are atomic).
    ListField {
        field: "ports",
        parents: &["spec"],
        apply: ApplyList::Map(&["port", "protocol"]),
        patch: PatchStrategy::MergeByKey("port"),
    },
    ListField {
        field: "hostAliases",
        parents: &[],
        apply: ApplyList::Map(&["ip"]),
        patch: PatchStrategy::MergeByKey("ip"),
    },
    ListField {
        field: "topologySpreadConstraints",
        parents: &[],
        apply: ApplyList::Map(&["topologyKey", "whenUnsatisfiable"]),
        patch: PatchStrategy::MergeByKey("topologyKey"),
    },
    ListField {
        field: "conditions",
        parents: &[],
        apply: ApplyList::Map(&["type"]),
        patch: PatchStrategy::MergeByKey("type"),
    },
    ListField {
        field: "ownerReferences",
        parents: &["metadata"],
        apply: ApplyList::Map(&["uid"]),
        patch: PatchStrategy::MergeByKey("uid"),
    },
    ListField {
        field: "finalizers",
        parents: &["metadata"],
        apply: ApplyList::Set,
        patch: PatchStrategy::MergeScalars,
    },
];

fn list_field(parent: &str, field: &str) -> Option<&'static ListField> {
    TABLE
        .iter()
        .find(|f| f.field == field && (f.parents.is_empty() || f.parents.contains(&parent)))
}

/// How server-side apply treats the list `field` of a mapping held by the field
/// `parent` ("" at the top of the object).
pub fn apply_list_kind(parent: &str, field: &str) -> ApplyList {
    list_field(parent, field).map_or(ApplyList::Atomic, |f| f.apply)
}

/// How a strategic merge patch treats the list `field` of a mapping held by `parent`.
pub fn patch_strategy(parent: &str, field: &str) -> PatchStrategy {
    list_field(parent, field).map_or(PatchStrategy::Replace, |f| f.patch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_depend_on_where_they_are() {
        assert_eq!(
            patch_strategy("containers", "ports"),
            PatchStrategy::MergeByKey("containerPort")
        );
        assert_eq!(
            patch_strategy("spec", "ports"),
            PatchStrategy::MergeByKey("port")
        );
        assert_eq!(patch_strategy("ingress", "ports"), PatchStrategy::Replace);
        assert_eq!(
            apply_list_kind("initContainers", "ports"),
            ApplyList::Map(&["containerPort", "protocol"])
        );
    }

    #[test]
    fn crd_versions_are_keyed_for_apply_but_replaced_by_a_patch() {
        assert_eq!(
            apply_list_kind("spec", "versions"),
            ApplyList::Map(&["name"])
        );
        assert_eq!(patch_strategy("spec", "versions"), PatchStrategy::Replace);
        assert_eq!(
            patch_strategy("spec", "tolerations"),
            PatchStrategy::Replace
        );
    }
}
