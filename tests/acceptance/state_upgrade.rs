//! `kudo_instance` state stored by older provider versions, as Terraform hands it to
//! `UpgradeResourceState` and gets it back under the current schema: version 0 kept
//! `objects` and `preview`'s lists as lists, version 1 named objects by label rather
//! than as `objects` keys them.

use serde_json::{Value as Json, json};
use tfplugin::Provider;

use crate::harness::rpc::{KudoProvider, block_on, schemas, text};

/// `stored` (schema `version`) as the provider returns it, in the JSON a current state
/// stores (every attribute present, null when unset).
#[track_caller]
fn upgraded(version: i64, stored: Json) -> Json {
    let provider = KudoProvider::new();
    let state = block_on(provider.upgrade_resource_state("kudo_instance", version, stored))
        .unwrap_or_else(|d| panic!("upgrade refused: {}", text(&d)));
    let ty = schemas().resources["kudo_instance"].value_type();
    state.to_json(&ty).expect("the upgraded state encodes")
}

#[test]
fn a_version_0_list_becomes_the_map_and_entries_without_identity_go() {
    let new = upgraded(
        0,
        json!({
            "id": "ns/zk",
            "objects": [
                {"api_version": "apps/v1", "kind": "StatefulSet", "namespace": "ns", "name": "zk", "uid": "u1"},
                {"api_version": "v1", "kind": "Namespace", "namespace": "", "name": "extra", "uid": null},
                {"api_version": null, "kind": "Secret", "namespace": "ns", "name": "s", "uid": null},
            ],
        }),
    );
    assert_eq!(new["id"], "ns/zk");
    assert_eq!(
        new["objects"],
        json!({
            "StatefulSet.apps ns/zk": {"api_version": "apps/v1", "kind": "StatefulSet", "namespace": "ns", "name": "zk", "uid": "u1"},
            "Namespace extra": {"api_version": "v1", "kind": "Namespace", "namespace": "", "name": "extra", "uid": null},
        })
    );
}

#[test]
fn version_0_preview_lists_become_maps_of_the_objects_api_versions() {
    let new = upgraded(
        0,
        json!({
            "objects": [
                {"api_version": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "web", "uid": "u1"},
            ],
            "preview": {
                "create": ["Deployment ns/web"],
                "update": [],
                "delete": ["ConfigMap ns/gone"],
            },
        }),
    );
    assert_eq!(
        new["preview"],
        json!({
            "create": {"Deployment.apps ns/web": "apps/v1"},
            "update": {},
            "delete": {"ConfigMap ns/gone": ""},
            "dependencies": {},
        })
    );
    let unknown = upgraded(0, json!({"objects": null, "preview": null}));
    assert_eq!(
        (&unknown["objects"], &unknown["preview"]),
        (&Json::Null, &Json::Null)
    );
}

#[test]
fn null_objects_and_current_versions_are_left_alone() {
    let null = upgraded(0, json!({"id": "ns/zk", "objects": null}));
    assert_eq!(
        (&null["id"], &null["objects"]),
        (&json!("ns/zk"), &Json::Null)
    );
    let object = json!({"api_version": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "c", "uid": "u"});
    let current = upgraded(2, json!({"objects": {"ConfigMap ns/c": object}}));
    assert_eq!(current["objects"], json!({"ConfigMap ns/c": object}));
}

#[test]
fn version_1_labels_become_the_objects_keys() {
    let new = upgraded(
        1,
        json!({
            "name": "app",
            "objects": {
                "StatefulSet.apps ns/db": {"api_version": "apps/v1", "kind": "StatefulSet", "namespace": "ns", "name": "db", "uid": "u1"},
                "ClusterRole.rbac.authorization.k8s.io r": {"api_version": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "namespace": "", "name": "r", "uid": "u2"},
                "ConfigMap ns/c": {"api_version": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "c", "uid": "u3"},
            },
            "preview": {
                "create": {"ClusterRole r": "rbac.authorization.k8s.io/v1"},
                "update": {"StatefulSet ns/db": "apps/v1", "ConfigMap ns/c": "v1"},
                "delete": {"Deployment ns/gone": "apps/v1"},
            },
            "manifests": {"StatefulSet ns/db": "kind: StatefulSet\n"},
            "drifted_fields": [{"object": "StatefulSet ns/db", "field": "spec.replicas", "applied": "1", "live": "2"}],
        }),
    );
    assert_eq!(
        new["preview"],
        json!({
            "create": {"ClusterRole.rbac.authorization.k8s.io r": "rbac.authorization.k8s.io/v1"},
            "update": {"StatefulSet.apps ns/db": "apps/v1", "ConfigMap ns/c": "v1"},
            "delete": {"Deployment.apps ns/gone": "apps/v1"},
            "dependencies": {},
        })
    );
    assert_eq!(
        new["manifests"],
        json!({"StatefulSet.apps ns/db": "kind: StatefulSet\n"})
    );
    assert_eq!(
        new["drifted_fields"],
        // `diff` (added without a new schema version) decodes as null.
        json!([{"instance": "app", "object": "StatefulSet.apps ns/db", "field": "spec.replicas", "applied": "1", "live": "2", "diff": null}])
    );
}
