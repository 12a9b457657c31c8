//! Server-side apply semantics against a real kube-rs client.

use crate::common::*;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

fn cm(name: &str, data: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": data})
}

// kubernetes.io/docs/reference/using-api/server-side-apply/#field-management
#[tokio::test]
async fn apply_creates_and_records_managed_fields_in_fields_v1() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    let created = apply(&api, cm("c1", json!({"a": "1"})), MANAGER, true)
        .await
        .expect("apply creates");
    let v = to_value(&created);
    assert!(v["metadata"]["uid"].is_string());
    assert!(v["metadata"]["resourceVersion"].is_string());
    let mf = &v["metadata"]["managedFields"][0];
    assert_eq!(mf["manager"], MANAGER);
    assert_eq!(mf["operation"], "Apply");
    assert_eq!(mf["fieldsType"], "FieldsV1");
    assert_eq!(mf["fieldsV1"], json!({"f:data": {"f:a": {}}}));
    let updated = apply(&api, cm("c1", json!({"a": "2"})), MANAGER, true)
        .await
        .expect("apply updates");
    assert_eq!(to_value(&updated)["data"]["a"], "2");
}

// kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts
#[tokio::test]
async fn conflicting_apply_is_409_naming_field_and_manager_unless_forced() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    apply(&api, cm("c2", json!({"a": "1"})), "alice", false)
        .await
        .expect("first apply");
    let err = apply(&api, cm("c2", json!({"a": "2"})), "bob", false)
        .await
        .expect_err("conflict");
    let (code, reason, message) = api_code(err);
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert!(
        message.contains(".data.a") && message.contains("\"alice\""),
        "{message}"
    );

    let forced = apply(&api, cm("c2", json!({"a": "2"})), "bob", true)
        .await
        .expect("forced apply");
    let v = to_value(&forced);
    assert_eq!(v["data"]["a"], "2");
    let managers: Vec<&str> = v["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(managers, vec!["bob"], "alice lost her only field");
}

// kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts (same value: shared ownership)
#[tokio::test]
async fn applying_the_same_value_shares_ownership_without_conflict() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    apply(&api, cm("c3", json!({"a": "1"})), "alice", false)
        .await
        .expect("alice");
    let v = to_value(
        &apply(&api, cm("c3", json!({"a": "1"})), "bob", false)
            .await
            .expect("bob, same value"),
    );
    assert_eq!(v["metadata"]["managedFields"].as_array().unwrap().len(), 2);
}

// kubernetes.io/docs/reference/using-api/server-side-apply/#field-management (removing fields)
#[tokio::test]
async fn fields_omitted_from_a_later_apply_are_removed_unless_co_owned() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    apply(
        &api,
        cm("c4", json!({"a": "1", "b": "2", "c": "3"})),
        MANAGER,
        true,
    )
    .await
    .expect("apply");
    apply(&api, cm("c4", json!({"c": "3"})), "other", false)
        .await
        .expect("co-owner of c");
    let v = to_value(
        &apply(&api, cm("c4", json!({"a": "1"})), MANAGER, true)
            .await
            .expect("re-apply"),
    );
    assert_eq!(v["data"], json!({"a": "1", "c": "3"}));
}

// kubernetes.io/docs/reference/using-api/api-concepts/#dry-run
#[tokio::test]
async fn dry_run_apply_returns_result_without_storing() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    let mut pp = PatchParams::apply(MANAGER).force();
    pp.dry_run = true;
    let preview = api
        .patch("c5", &pp, &Patch::Apply(cm("c5", json!({"a": "1"}))))
        .await
        .expect("dry-run create");
    assert_eq!(to_value(&preview)["data"]["a"], "1");
    assert!(
        api.get_opt("c5").await.expect("get").is_none(),
        "dry run must not store"
    );

    let real = apply(&api, cm("c5", json!({"a": "1"})), MANAGER, true)
        .await
        .expect("apply");
    let preview = api
        .patch("c5", &pp, &Patch::Apply(cm("c5", json!({"a": "9"}))))
        .await
        .expect("dry-run update");
    assert_eq!(to_value(&preview)["data"]["a"], "9");
    let stored = api.get("c5").await.expect("get");
    assert_eq!(to_value(&stored)["data"]["a"], "1");
    assert_eq!(
        stored.metadata.resource_version,
        real.metadata.resource_version
    );
}

fn deployment(containers: serde_json::Value, replicas: i64) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}}
    })
}

// kubernetes.io/docs/reference/using-api/server-side-apply/#merge-strategy (list-map keys)
#[tokio::test]
async fn containers_merge_by_name_across_managers_and_conflicts_name_the_item() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "apps/v1", "Deployment", Some("default")).await;
    apply(
        &api,
        deployment(
            json!([{"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]}]),
            1,
        ),
        MANAGER,
        true,
    )
    .await
    .expect("apply app");
    let sidecar = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "side", "image": "side:1"}]}}}});
    apply(&api, sidecar, "injector", false)
        .await
        .expect("sidecar apply");
    let v = to_value(
        &apply(
            &api,
            deployment(
                json!([{"name": "app", "image": "app:2", "ports": [{"containerPort": 80}]}]),
                1,
            ),
            MANAGER,
            true,
        )
        .await
        .expect("re-apply"),
    );
    let names: Vec<&str> = v["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["app", "side"]);
    let fields = v["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == MANAGER)
        .unwrap()["fieldsV1"]
        .clone();
    let app = &fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"app\"}"];
    assert!(
        app["f:ports"]["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"].is_object(),
        "{fields}"
    );

    let steal = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "evil:1"}]}}}});
    let (code, _, message) = api_code(
        apply(&api, steal, "injector", false)
            .await
            .expect_err("conflict"),
    );
    assert_eq!(code, 409);
    assert!(
        message.contains(".spec.template.spec.containers[name=\"app\"].image"),
        "{message}"
    );
}

// kubernetes.io/docs/reference/using-api/api-concepts/ (metadata.generation tracks spec changes)
#[tokio::test]
async fn generation_bumps_on_spec_changes_only() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "apps/v1", "Deployment", Some("default")).await;
    let c = json!([{"name": "app", "image": "app:1"}]);
    let g1 = apply(&api, deployment(c.clone(), 1), MANAGER, true)
        .await
        .unwrap()
        .metadata
        .generation;
    let mut labelled = deployment(c.clone(), 1);
    labelled["metadata"]["labels"]["extra"] = json!("x");
    let g2 = apply(&api, labelled, MANAGER, true)
        .await
        .unwrap()
        .metadata
        .generation;
    let g3 = apply(&api, deployment(c, 2), MANAGER, true)
        .await
        .unwrap()
        .metadata
        .generation;
    assert_eq!((g1, g2, g3), (Some(1), Some(1), Some(2)));
}

// kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions (optimistic concurrency)
#[tokio::test]
async fn update_with_stale_resource_version_is_409() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    let first = api
        .create(
            &PostParams::default(),
            &dynamic(cm("c6", json!({"a": "1"}))),
        )
        .await
        .expect("create");
    let mut second = first.clone();
    second.data["data"]["a"] = json!("2");
    api.replace("c6", &PostParams::default(), &second)
        .await
        .expect("update with fresh rv");
    let mut stale = first;
    stale.data["data"]["a"] = json!("3");
    let (code, reason, _) = api_code(
        api.replace("c6", &PostParams::default(), &stale)
            .await
            .expect_err("stale"),
    );
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
}

// kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/
#[tokio::test]
async fn merge_json_and_strategic_patches() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "apps/v1", "Deployment", Some("default")).await;
    apply(
        &api,
        deployment(
            json!([{"name": "app", "image": "app:1"}, {"name": "b", "image": "b:1"}]),
            1,
        ),
        MANAGER,
        true,
    )
    .await
    .unwrap();
    let pp = PatchParams::default();
    let smp =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}}});
    let v = to_value(
        &api.patch("web", &pp, &Patch::Strategic(smp))
            .await
            .expect("strategic"),
    );
    assert_eq!(
        v["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        v["spec"]["template"]["spec"]["containers"][1]["image"],
        "b:2"
    );
    let v = to_value(
        &api.patch(
            "web",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"app": null, "m": "1"}}})),
        )
        .await
        .expect("merge"),
    );
    assert_eq!(v["metadata"]["labels"], json!({"m": "1"}));
    let ops: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]))
            .unwrap();
    let v = to_value(
        &api.patch("web", &pp, &Patch::<()>::Json(ops))
            .await
            .expect("json patch"),
    );
    assert_eq!(v["spec"]["replicas"], 3);
}

// kubernetes.io/docs/reference/using-api/server-side-apply/ (a no-op apply changes nothing)
#[tokio::test]
async fn reapplying_the_same_configuration_keeps_the_resource_version() {
    let (_sim, client) = start().await;
    // A CronJob has keyed lists but no simulated controller writing its status meanwhile.
    let (api, _) = api_for(&client, "batch/v1", "CronJob", Some("default")).await;
    let cj = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick", "namespace": "default"},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "app", "image": "app:1", "ports": [{"containerPort": 80}], "env": [{"name": "A", "value": "1"}]}]}}}}}});
    let first = apply(&api, cj.clone(), MANAGER, true).await.unwrap();
    let again = apply(&api, cj, MANAGER, true).await.unwrap();
    assert_eq!(
        first.metadata.resource_version,
        again.metadata.resource_version
    );
    assert_eq!(first.metadata.managed_fields, again.metadata.managed_fields);
}

// kubernetes.io/docs/reference/using-api/server-side-apply/#merge-strategy (removing list items)
#[tokio::test]
async fn omitted_keyed_list_items_are_removed_and_sets_merge() {
    let (_sim, client) = start().await;
    let (api, _) = api_for(&client, "apps/v1", "Deployment", Some("default")).await;
    let two = json!([
        {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
        {"name": "extra", "image": "extra:1"}
    ]);
    apply(&api, deployment(two, 1), MANAGER, true)
        .await
        .unwrap();
    let one = json!([{"name": "app", "image": "app:1", "env": [{"name": "B", "value": "2"}]}]);
    let v = to_value(
        &apply(&api, deployment(one, 1), MANAGER, true)
            .await
            .unwrap(),
    );
    let containers = &v["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers.as_array().unwrap().len(), 1);
    assert_eq!(containers[0]["env"], json!([{"name": "B", "value": "2"}]));

    let (cms, _) = api_for(&client, "v1", "ConfigMap", Some("default")).await;
    let with_fin = |f: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fin-set", "namespace": "default", "finalizers": [f]}});
    apply(&cms, with_fin("a.example/x"), "alice", false)
        .await
        .unwrap();
    let v = to_value(
        &apply(&cms, with_fin("b.example/y"), "bob", false)
            .await
            .expect("sets do not conflict"),
    );
    assert_eq!(
        v["metadata"]["finalizers"],
        json!(["a.example/x", "b.example/y"])
    );
}
