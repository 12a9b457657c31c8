//! Object lifecycle: namespaces, CRDs, status subresource, finalizers and garbage collection.

use crate::common::*;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::conditions;
use kube::runtime::wait::await_condition;
use serde_json::json;
use tokio::time::timeout;

// kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/
#[tokio::test]
async fn creating_in_a_missing_namespace_is_404() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "ConfigMap", Some("nowhere")).await;
    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "nowhere"}});
    let (code, reason, message) = api_code(apply(&api, obj, MANAGER, true).await.expect_err("404"));
    assert_eq!((code, reason.as_str()), (404, "NotFound"));
    assert!(
        message.contains("namespaces \"nowhere\" not found"),
        "{message}"
    );
}

fn crd(scope: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.dev"},
        "spec": {"group": "example.dev", "scope": scope,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    })
}

// kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#create-a-customresourcedefinition
#[tokio::test]
async fn crd_registration_serves_custom_objects_and_deletion_removes_them() {
    let (_sim, client) = start().await;
    let (crds, _) = api_for(
        &client,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    apply(&crds, crd("Namespaced"), MANAGER, true)
        .await
        .expect("crd");
    let typed: Api<CustomResourceDefinition> = Api::all(client.clone());
    timeout(
        WAIT,
        await_condition(
            typed.clone(),
            "widgets.example.dev",
            conditions::is_crd_established(),
        ),
    )
    .await
    .expect("established in time")
    .expect("watch");

    let (widgets, ar) = api_for(&client, "example.dev/v1", "Widget", Some("default")).await;
    assert_eq!(ar.plural, "widgets");
    let w = json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": "default"}, "spec": {"size": 3}});
    let created = apply(&widgets, w, MANAGER, true)
        .await
        .expect("custom object");
    assert_eq!(to_value(&created)["spec"]["size"], 3);

    let uid = typed
        .get("widgets.example.dev")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    typed
        .delete("widgets.example.dev", &DeleteParams::default())
        .await
        .expect("delete crd");
    timeout(
        WAIT,
        await_condition(typed, "widgets.example.dev", conditions::is_deleted(&uid)),
    )
    .await
    .expect("crd gone in time")
    .expect("watch");
    let gvk = kube::api::GroupVersionKind::gvk("example.dev", "v1", "Widget");
    assert!(
        kube::discovery::pinned_kind(&client, &gvk).await.is_err(),
        "kind no longer served"
    );
}

// kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#status-subresource
#[tokio::test]
async fn status_subresource_separates_main_and_status_writes() {
    let (_sim, client) = start().await;
    let (crds, _) = api_for(
        &client,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    apply(&crds, crd("Namespaced"), MANAGER, true)
        .await
        .expect("crd");
    let (widgets, _) = api_for(&client, "example.dev/v1", "Widget", Some("default")).await;
    let w = json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w2", "namespace": "default"},
                   "spec": {"size": 1}, "status": {"phase": "ignored"}});
    let v = to_value(&apply(&widgets, w, MANAGER, true).await.expect("apply"));
    assert!(
        v.get("status").is_none(),
        "main-resource write ignores status: {v}"
    );

    let status = json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w2"},
                        "spec": {"size": 99}, "status": {"phase": "Ready"}});
    let v = to_value(
        &widgets
            .patch_status("w2", &PatchParams::default(), &Patch::Merge(status))
            .await
            .expect("status patch"),
    );
    assert_eq!(v["status"]["phase"], "Ready");
    assert_eq!(v["spec"]["size"], 1, "status write ignores spec");
    assert_eq!(v["metadata"]["generation"], 1);
}

fn cm(name: &str, owner: Option<(&str, &str, bool)>) -> DynamicObject {
    let mut v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}});
    if let Some((oname, uid, block)) = owner {
        v["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": oname, "uid": uid, "blockOwnerDeletion": block}]);
    }
    dynamic(v)
}

// kubernetes.io/docs/concepts/overview/working-with-objects/finalizers/
#[tokio::test]
async fn finalizers_keep_a_deleted_object_until_removed() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    let mut o = cm("fin", None);
    o.metadata.finalizers = Some(vec!["example.dev/hold".into()]);
    let created = api
        .create(&PostParams::default(), &o)
        .await
        .expect("create");
    let pending = api
        .delete("fin", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(
        pending.is_left(),
        "object still present while finalizers remain"
    );
    let still = api.get("fin").await.expect("still there");
    assert!(still.metadata.deletion_timestamp.is_some());
    api.patch(
        "fin",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("drop finalizer");
    let uid = created.metadata.uid.unwrap();
    timeout(
        WAIT,
        await_condition(api, "fin", conditions::is_deleted(&uid)),
    )
    .await
    .expect("gone in time")
    .expect("watch");
}

// kubernetes.io/docs/concepts/architecture/garbage-collection/#background-deletion
#[tokio::test]
async fn background_deletion_collects_dependents() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    let owner = api
        .create(&PostParams::default(), &cm("owner-bg", None))
        .await
        .unwrap();
    let ouid = owner.metadata.uid.clone().unwrap();
    let dep = api
        .create(
            &PostParams::default(),
            &cm("dep-bg", Some(("owner-bg", &ouid, false))),
        )
        .await
        .unwrap();
    let res = api
        .delete("owner-bg", &DeleteParams::background())
        .await
        .expect("delete owner");
    assert!(res.is_right(), "owner goes at once");
    let duid = dep.metadata.uid.unwrap();
    timeout(
        WAIT,
        await_condition(api, "dep-bg", conditions::is_deleted(&duid)),
    )
    .await
    .expect("collected in time")
    .expect("watch");
}

// kubernetes.io/docs/concepts/architecture/garbage-collection/#foreground-deletion
#[tokio::test]
async fn foreground_deletion_waits_for_blocking_dependents() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    let owner = api
        .create(&PostParams::default(), &cm("owner-fg", None))
        .await
        .unwrap();
    let ouid = owner.metadata.uid.clone().unwrap();
    let mut dep = cm("dep-fg", Some(("owner-fg", &ouid, true)));
    dep.metadata.finalizers = Some(vec!["example.dev/hold".into()]);
    api.create(&PostParams::default(), &dep).await.unwrap();
    let res = api
        .delete("owner-fg", &DeleteParams::foreground())
        .await
        .expect("delete owner");
    let pending = res.left().expect("owner waits");
    assert!(
        pending
            .metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"foregroundDeletion".to_string())
    );
    // The dependent gets deleted (it is held by its own finalizer) while the owner waits.
    let dep_deleting = timeout(
        WAIT,
        await_condition(api.clone(), "dep-fg", |o: Option<&DynamicObject>| {
            o.is_some_and(|o| o.metadata.deletion_timestamp.is_some())
        }),
    )
    .await
    .expect("dependent deleting in time")
    .expect("watch");
    assert!(dep_deleting.is_some());
    assert!(
        api.get("owner-fg").await.is_ok(),
        "owner still waits for the blocking dependent"
    );
    api.patch(
        "dep-fg",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    timeout(
        WAIT,
        await_condition(api, "owner-fg", conditions::is_deleted(&ouid)),
    )
    .await
    .expect("owner gone")
    .expect("watch");
}

// kubernetes.io/docs/concepts/architecture/garbage-collection/#orphaned-dependents
#[tokio::test]
async fn orphan_deletion_strips_owner_references() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    let owner = api
        .create(&PostParams::default(), &cm("owner-or", None))
        .await
        .unwrap();
    let ouid = owner.metadata.uid.clone().unwrap();
    api.create(
        &PostParams::default(),
        &cm("dep-or", Some(("owner-or", &ouid, false))),
    )
    .await
    .unwrap();
    api.delete("owner-or", &DeleteParams::orphan())
        .await
        .expect("delete owner");
    timeout(
        WAIT,
        await_condition(api.clone(), "owner-or", conditions::is_deleted(&ouid)),
    )
    .await
    .expect("owner gone")
    .expect("watch");
    let dep = api.get("dep-or").await.expect("dependent survives");
    assert!(dep.metadata.owner_references.unwrap_or_default().is_empty());
}

// kubernetes.io/docs/tasks/administer-cluster/namespaces/#deleting-a-namespace
#[tokio::test]
async fn namespace_deletion_terminates_then_removes_contents() {
    let (_sim, client) = start().await;
    let (nss, _) = api_for(&client, "v1", "Namespace", None).await;
    let ns = apply(
        &nss,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}}),
        MANAGER,
        true,
    )
    .await
    .unwrap();
    assert_eq!(to_value(&ns)["status"]["phase"], "Active");
    let (cms, _) = api_for(&client, "v1", "ConfigMap", Some("doomed")).await;
    let c = apply(&cms, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "doomed"}}), MANAGER, true).await.unwrap();
    let res = nss
        .delete("doomed", &DeleteParams::default())
        .await
        .expect("delete ns");
    let terminating = res.left().expect("namespace deletion is asynchronous");
    assert_eq!(to_value(&terminating)["status"]["phase"], "Terminating");
    let cuid = c.metadata.uid.unwrap();
    timeout(
        WAIT,
        await_condition(cms, "c", conditions::is_deleted(&cuid)),
    )
    .await
    .expect("content gone")
    .expect("watch");
    let nuid = ns.metadata.uid.unwrap();
    timeout(
        WAIT,
        await_condition(nss, "doomed", conditions::is_deleted(&nuid)),
    )
    .await
    .expect("namespace gone")
    .expect("watch");
}

// kubernetes.io/docs/concepts/services-networking/service/#choosing-your-own-ip-address
#[tokio::test]
async fn services_get_unique_cluster_ips_unless_headless() {
    let (_sim, client) = start().await;
    let (svcs, _) = api_for(&client, "v1", "Service", Some("default")).await;
    let svc = |name: &str, ip: Option<&str>| {
        let mut v = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
                           "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}});
        if let Some(ip) = ip {
            v["spec"]["clusterIP"] = json!(ip);
        }
        v
    };
    let a = to_value(&apply(&svcs, svc("a", None), MANAGER, true).await.unwrap());
    let b = to_value(&apply(&svcs, svc("b", None), MANAGER, true).await.unwrap());
    let h = to_value(
        &apply(&svcs, svc("h", Some("None")), MANAGER, true)
            .await
            .unwrap(),
    );
    assert!(
        a["spec"]["clusterIP"]
            .as_str()
            .unwrap()
            .starts_with("10.96.")
    );
    assert_ne!(a["spec"]["clusterIP"], b["spec"]["clusterIP"]);
    assert_eq!(h["spec"]["clusterIP"], "None");
    assert_eq!(a["spec"]["ports"][0]["targetPort"], 80);
    // Re-applying without the clusterIP keeps it.
    let again = to_value(&apply(&svcs, svc("a", None), MANAGER, true).await.unwrap());
    assert_eq!(again["spec"]["clusterIP"], a["spec"]["clusterIP"]);
}

// kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors
#[tokio::test]
async fn list_filters_by_label_and_field_selectors() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    for (name, tier) in [("l1", "fe"), ("l2", "be"), ("l3", "db")] {
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default", "labels": {"tier": tier}}});
        apply(&api, v, MANAGER, true).await.unwrap();
    }
    let names = |l: kube::core::ObjectList<DynamicObject>| {
        l.items
            .into_iter()
            .map(|o| o.metadata.name.unwrap())
            .collect::<Vec<_>>()
    };
    let lp = kube::api::ListParams::default().labels("tier in (fe,be)");
    assert_eq!(names(api.list(&lp).await.unwrap()), vec!["l1", "l2"]);
    let lp = kube::api::ListParams::default()
        .labels("tier!=fe")
        .fields("metadata.name=l3");
    assert_eq!(names(api.list(&lp).await.unwrap()), vec!["l3"]);
}

// kubernetes.io/docs/concepts/configuration/configmap/ (data values are strings). The
// answers to server-side apply are the real 1.36 server's (probed 2026-11-25): HTTP 500
// from the typed patch, and from the Secret's conversion for data that is not base64.
#[tokio::test]
async fn configmap_data_must_be_strings() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "typed", "namespace": "default"}, "data": {"port": 8080}});
    let (code, _, message) = api_code(
        apply(&api, bad, MANAGER, true)
            .await
            .expect_err("number in data"),
    );
    assert_eq!(code, 500);
    assert_eq!(
        message,
        "failed to create typed patch object (default/typed; /v1, Kind=ConfigMap): .data.port: expected string, got &value.valueUnstructured{Value:8080}"
    );
    let (secrets, _) = api_for(&client, "v1", "Secret", Some("default")).await;
    let bad = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1", "namespace": "default"}, "data": {"password": "not base64!"}});
    let (code, _, message) = api_code(
        apply(&secrets, bad, MANAGER, true)
            .await
            .expect_err("not base64"),
    );
    assert_eq!(code, 500);
    assert_eq!(
        message,
        "failed to convert new object (default/s1; /v1, Kind=Secret) to proper version: unable to convert unstructured object to /v1, Kind=Secret: error decoding from json: illegal base64 data at input byte 3"
    );
}

// The real 1.36 server's answers (probed 2026-11-25): every field error of a Service in
// one Status, and the API approval rule for v1 CRDs of protected groups.
#[tokio::test]
async fn validation_reports_every_error_and_protected_groups_need_approval() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "Service", Some("default")).await;
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "namespace": "default"},
        "spec": {"ports": [{"name": "a", "port": 80}, {"port": 81}], "type": "NoSuchType"}});
    let (code, _, message) = api_code(apply(&api, svc, MANAGER, true).await.expect_err("invalid"));
    assert_eq!(code, 422);
    assert_eq!(
        message,
        "Service \"svc\" is invalid: [spec.ports[1].name: Required value, spec.type: Unsupported value: \"NoSuchType\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"]"
    );
    let (crds, _) = api_for(
        &client,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    let crd = |annotations: serde_json::Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.probe.example.k8s.io", "annotations": annotations},
        "spec": {"group": "probe.example.k8s.io", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
    };
    let (code, _, message) = api_code(
        apply(&crds, crd(json!({})), MANAGER, true)
            .await
            .expect_err("unapproved"),
    );
    assert_eq!(code, 422);
    assert_eq!(
        message,
        "CustomResourceDefinition.apiextensions.k8s.io \"widgets.probe.example.k8s.io\" is invalid: metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
    );
    let (code, _, _) = api_code(
        apply(
            &crds,
            crd(json!({"api-approved.kubernetes.io": "bad value"})),
            MANAGER,
            true,
        )
        .await
        .expect_err("invalid approval"),
    );
    assert_eq!(code, 422);
    apply(
        &crds,
        crd(json!({"api-approved.kubernetes.io": "unapproved, testing"})),
        MANAGER,
        true,
    )
    .await
    .expect("an unapproved reason is accepted");
}

// kubernetes.io/docs/concepts/configuration/secret/#restriction-names-data (stringData is write-only)
#[tokio::test]
async fn secret_string_data_is_stored_as_base64_data() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "Secret", Some("default")).await;
    let s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}, "stringData": {"pw": "hunter2"}});
    let v = to_value(&apply(&api, s, MANAGER, true).await.expect("apply"));
    assert_eq!(v["data"]["pw"], "aHVudGVyMg==");
    assert!(v.get("stringData").is_none());
    assert_eq!(v["type"], "Opaque");
}

// kubernetes.io/docs/concepts/workloads/controllers/deployment/#label-selector-updates
#[tokio::test]
async fn workload_selectors_must_match_templates_and_are_immutable() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "apps/v1", "Deployment", Some("default")).await;
    let d = |sel: &str, label: &str| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sel", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"app": sel}},
                        "template": {"metadata": {"labels": {"app": label}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    };
    let (code, _, message) = api_code(
        apply(&api, d("a", "b"), MANAGER, true)
            .await
            .expect_err("mismatch"),
    );
    assert_eq!(code, 422);
    assert!(
        message.contains("selector` does not match template `labels`"),
        "{message}"
    );
    apply(&api, d("a", "a"), MANAGER, true)
        .await
        .expect("valid");
    let (code, _, message) = api_code(
        apply(&api, d("b", "b"), MANAGER, true)
            .await
            .expect_err("immutable"),
    );
    assert_eq!(code, 422);
    assert!(
        message.contains("spec.selector") && message.contains("immutable"),
        "{message}"
    );
}

// kubernetes.io/docs/concepts/workloads/controllers/statefulset/#limitations (forbidden updates)
#[tokio::test]
async fn statefulset_volume_claim_templates_cannot_change() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "apps/v1", "StatefulSet", Some("default")).await;
    let s = |size: &str| {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
               "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                        "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
                        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}}]}})
    };
    apply(&api, s("1Gi"), MANAGER, true).await.expect("create");
    let (code, _, message) = api_code(
        apply(&api, s("2Gi"), MANAGER, true)
            .await
            .expect_err("forbidden"),
    );
    assert_eq!(code, 422);
    assert!(
        message.contains("Forbidden: updates to statefulset spec"),
        "{message}"
    );
}

// kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/#owner-references-in-object-specifications
#[tokio::test]
async fn dangling_owners_collect_namespaced_dependents_but_not_cluster_scoped_ones() {
    let (_sim, client) = start().await;
    let (cms, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    let (roles, _) = api_for(&client, "rbac.authorization.k8s.io/v1", "ClusterRole", None).await;
    let missing = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"}]);
    let orphan = apply(&cms, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "orphan", "namespace": "default", "ownerReferences": missing}}), MANAGER, true).await.unwrap();
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                      "metadata": {"name": "kudo:reader", "ownerReferences": missing}, "rules": []});
    apply(&roles, role, MANAGER, true).await.unwrap();
    let uid = orphan.metadata.uid.unwrap();
    timeout(
        WAIT,
        await_condition(cms, "orphan", conditions::is_deleted(&uid)),
    )
    .await
    .expect("collected")
    .expect("watch");
    assert!(
        roles.get("kudo:reader").await.is_ok(),
        "cluster-scoped dependent of a namespaced kind is never collected"
    );
}

// kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks
#[tokio::test]
async fn list_pages_with_limit_and_continue() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    for i in 0..5 {
        apply(&api, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("p{i}"), "namespace": "default"}}), MANAGER, true).await.unwrap();
    }
    // Every namespace also holds the kube-root-ca.crt ConfigMap, as on a real cluster;
    // it sorts first.
    let first = api
        .list(&kube::api::ListParams::default().limit(3))
        .await
        .unwrap();
    let names: Vec<String> = first
        .items
        .iter()
        .map(|o| o.metadata.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(names, vec!["kube-root-ca.crt", "p0", "p1"]);
    assert_eq!(first.metadata.remaining_item_count, Some(3));
    let token = first.metadata.continue_.clone().expect("continue token");
    let second = api
        .list(
            &kube::api::ListParams::default()
                .limit(10)
                .continue_token(&token),
        )
        .await
        .unwrap();
    let names: Vec<String> = second
        .items
        .into_iter()
        .map(|o| o.metadata.name.unwrap())
        .collect();
    assert_eq!(names, vec!["p2", "p3", "p4"]);
    assert!(second.metadata.continue_.is_none_or(|c| c.is_empty()));
}

// kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#field-pruning
// and #validation
#[tokio::test]
async fn custom_objects_are_pruned_and_type_checked_by_the_crd_schema() {
    let (_sim, client) = start().await;
    let (crds, _) = api_for(
        &client,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    let mut def = crd("Namespaced");
    def["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer"},
                "mode": {"type": "string", "default": "fast"},
                "params": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    });
    apply(&crds, def, MANAGER, true).await.expect("crd");
    let (widgets, _) = api_for(&client, "example.dev/v1", "Widget", Some("default")).await;
    let w = |spec: serde_json::Value| json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w3", "namespace": "default"}, "spec": spec});
    let v = to_value(
        &apply(
            &widgets,
            w(json!({"size": 1, "unknown": true, "params": {"a": "1"}, "free": {"x": {"y": 1}}})),
            MANAGER,
            true,
        )
        .await
        .expect("apply"),
    );
    assert_eq!(
        v["spec"],
        json!({"size": 1, "mode": "fast", "params": {"a": "1"}, "free": {"x": {"y": 1}}}),
        "pruned and defaulted"
    );
    let (code, _, message) = api_code(
        apply(
            &widgets,
            w(json!({"size": 1, "params": {"a": 1}})),
            MANAGER,
            true,
        )
        .await
        .expect_err("typed"),
    );
    assert_eq!(code, 422);
    assert!(
        message.contains("spec.params.a") && message.contains("must be of type string"),
        "{message}"
    );
    let (code, _, message) = api_code(
        apply(&widgets, w(json!({"params": {}})), MANAGER, true)
            .await
            .expect_err("required"),
    );
    assert_eq!(code, 422);
    assert!(message.contains("spec.size: Required value"), "{message}");
}

// kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names
// and kubernetes.io/docs/concepts/configuration/configmap/ (1 MiB limit)
#[tokio::test]
async fn names_and_sizes_are_limited_as_in_kubernetes() {
    let (_sim, client) = start().await;
    let (svcs, _) = api_for(&client, "v1", "Service", Some("default")).await;
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1bad", "namespace": "default"},
                     "spec": {"ports": [{"port": 80}]}});
    let (code, _, message) = api_code(
        apply(&svcs, svc, MANAGER, true)
            .await
            .expect_err("DNS-1035"),
    );
    assert_eq!(code, 422);
    assert!(message.contains("DNS-1035"), "{message}");
    let (cms, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    let big = "x".repeat(1024 * 1024 + 1);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "default"}, "data": {"k": big}});
    let (code, _, message) = api_code(apply(&cms, cm, MANAGER, true).await.expect_err("too big"));
    assert_eq!(code, 422);
    assert!(message.contains("1048576"), "{message}");
}
