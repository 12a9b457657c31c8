//! Watches, fault injection and pod exec.

use std::time::Duration;

use crate::common::*;
use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Api;
use kube::api::{AttachParams, ListParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::wait::await_condition;
use kube_sim::{ExecFile, FaultRule};
use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio::time::timeout;

fn cm(name: &str, v: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"v": v}})).unwrap()
}

// kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes
#[tokio::test]
async fn watch_from_list_resource_version_streams_changes_in_order() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("before", "0"))
        .await
        .unwrap();
    let rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &cm("w", "1"))
        .await
        .unwrap();
    api.replace("w", &PostParams::default(), &{
        let mut c = api.get("w").await.unwrap();
        c.data = Some([("v".to_string(), "2".to_string())].into());
        c
    })
    .await
    .unwrap();
    api.delete("w", &Default::default()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let ev = timeout(WAIT, stream.try_next())
            .await
            .expect("event in time")
            .expect("stream ok")
            .expect("open");
        seen.push(match ev {
            WatchEvent::Added(o) => format!("ADDED {}", o.metadata.name.unwrap()),
            WatchEvent::Modified(o) => format!("MODIFIED {}", o.data.unwrap()["v"]),
            WatchEvent::Deleted(o) => format!("DELETED {}", o.metadata.name.unwrap()),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(seen, vec!["ADDED w", "MODIFIED 2", "DELETED w"]);
}

// kubernetes.io/docs/reference/using-api/api-concepts/#410-gone-responses
#[tokio::test]
async fn watch_from_an_expired_resource_version_gets_410() {
    let (sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("a", "0"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("b", "0"))
        .await
        .unwrap();
    sim.compact_events();
    let mut stream = api
        .watch(&WatchParams::default(), "2")
        .await
        .unwrap()
        .boxed();
    let ev = timeout(WAIT, stream.try_next())
        .await
        .expect("in time")
        .expect("ok")
        .expect("event");
    match ev {
        WatchEvent::Error(e) => assert_eq!(e.code, 410),
        other => panic!("expected 410, got {other:?}"),
    }
}

// The simulator's fault injection (not a Kubernetes page): a counted 503 then success;
// kube-rs surfaces the Status.
#[tokio::test]
async fn injected_faults_fail_the_next_matching_requests_only() {
    let (sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("f", "0"))
        .await
        .unwrap();
    sim.add_faults([FaultRule {
        verb: Some("get".into()),
        resource: Some("configmaps".into()),
        status: Some(429),
        retry_after_seconds: Some(1),
        count: Some(1),
        ..Default::default()
    }]);
    // kube-rs 5 retries 429/503/504 (honouring Retry-After), so one throttle is absorbed.
    api.get("f").await.expect("retried after the throttle");
    assert!(sim.faults().is_empty(), "the counted rule was consumed");
    sim.add_faults([FaultRule {
        verb: Some("get".into()),
        status: Some(500),
        count: Some(1),
        ..Default::default()
    }]);
    let (code, reason, _) = api_code(api.get("f").await.expect_err("injected 500"));
    assert_eq!((code, reason.as_str()), (500, "InternalError"));
    api.get("f").await.expect("next request passes");

    sim.add_faults([FaultRule {
        verb: Some("list".into()),
        drop: true,
        count: Some(1),
        ..Default::default()
    }]);
    assert!(
        api.list(&ListParams::default()).await.is_err(),
        "connection dropped"
    );
    sim.add_faults([FaultRule {
        verb: Some("list".into()),
        hang: true,
        count: Some(1),
        ..Default::default()
    }]);
    assert!(
        timeout(Duration::from_millis(300), api.list(&ListParams::default()))
            .await
            .is_err(),
        "request hangs"
    );
    api.list(&ListParams::default())
        .await
        .expect("faults expired");
}

// The simulator's fault injection (not a Kubernetes page): discovery paths match as
// verb `get`, resource `discovery`, named by their path, and the request counters say
// how many requests a rule fired on.
#[tokio::test]
async fn discovery_requests_are_faulted_and_counted() {
    let (sim, client) = start().await;
    sim.add_faults([FaultRule {
        verb: Some("get".into()),
        resource: Some(kube_sim::DISCOVERY.into()),
        name: Some("/apis/apps/v1".into()),
        status: Some(500),
        count: Some(1),
        ..Default::default()
    }]);
    let before = sim.request_stats();
    let Err(err) = kube::Discovery::new(client.clone()).run().await else {
        panic!("the injected 500 on /apis/apps/v1 fails discovery");
    };
    assert!(format!("{err:?}").contains("500"), "{err:?}");
    assert!(
        sim.faults().is_empty(),
        "the rule fired on the discovery request"
    );
    let after = sim.request_stats();
    assert_eq!(after.faulted - before.faulted, 1, "{after:?}");
    assert_eq!(after.failed - before.failed, 1, "{after:?}");
    assert_eq!(
        after.discovery_faulted - before.discovery_faulted,
        1,
        "{after:?}"
    );
    assert!(
        after.discovery_requests - before.discovery_requests >= 2,
        "/apis and /apis/apps/v1 at least: {after:?}"
    );
    kube::Discovery::new(client.clone())
        .run()
        .await
        .expect("discovery passes once the fault is used up");
    // Resource requests are counted too, but not as discovery.
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mid = sim.request_stats();
    api.list(&ListParams::default()).await.expect("list");
    let end = sim.request_stats();
    assert_eq!(end.requests - mid.requests, 1);
    assert_eq!(end.discovery_requests, mid.discovery_requests);
}

// kubernetes.io/docs/tasks/debug/debug-application/get-shell-running-container/ (exec)
#[tokio::test]
async fn exec_cat_returns_registered_file_content() {
    let (sim, client) = start().await;
    let (pods, _) = api_for(&client, "v1", "Pod", Some("default")).await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "labels": {"app": "x"}},
                     "spec": {"containers": [{"name": "c", "image": "img:1"}]}});
    apply(&pods, pod, MANAGER, true).await.unwrap();
    let typed: Api<Pod> = Api::namespaced(client, "default");
    timeout(
        WAIT,
        await_condition(
            typed.clone(),
            "p",
            kube::runtime::conditions::is_pod_running(),
        ),
    )
    .await
    .expect("running in time")
    .expect("watch");
    sim.add_exec_file(ExecFile {
        namespace: "default".into(),
        pod: None,
        selector: Some("app=x".into()),
        path: "/tmp/out.txt".into(),
        content: "hello from the pod\n".into(),
    });
    let mut proc = typed
        .exec(
            "p",
            ["cat", "/tmp/out.txt"],
            &AttachParams::default().stdout(true).stderr(false),
        )
        .await
        .expect("exec");
    let mut out = String::new();
    proc.stdout()
        .expect("stdout")
        .read_to_string(&mut out)
        .await
        .unwrap();
    let status = proc
        .take_status()
        .expect("status")
        .await
        .expect("status sent");
    assert_eq!(status.status.as_deref(), Some("Success"));
    assert_eq!(out, "hello from the pod\n");

    let mut missing = typed
        .exec(
            "p",
            ["cat", "/nope"],
            &AttachParams::default().stdout(true).stderr(true),
        )
        .await
        .expect("exec");
    let status = missing
        .take_status()
        .expect("status")
        .await
        .expect("status sent");
    assert_eq!(status.status.as_deref(), Some("Failure"));
}

// kubernetes.io/docs/reference/using-api/api-concepts/#watch-bookmarks (kube-runtime's list+watch)
#[tokio::test]
async fn kube_runtime_watcher_sees_initial_state_and_changes() {
    use kube::runtime::watcher::{self, Event};
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("pre", "0"))
        .await
        .unwrap();
    let mut events = watcher::watcher(api.clone(), watcher::Config::default()).boxed();
    let mut initial = Vec::new();
    loop {
        match timeout(WAIT, events.try_next())
            .await
            .expect("in time")
            .expect("ok")
            .expect("open")
        {
            Event::InitApply(o) => initial.push(o.metadata.name.unwrap()),
            Event::InitDone => break,
            _ => {}
        }
    }
    // Every namespace also holds the kube-root-ca.crt ConfigMap, as on a real cluster.
    initial.retain(|n| n != "kube-root-ca.crt");
    assert_eq!(initial, vec!["pre"]);
    api.create(&PostParams::default(), &cm("post", "1"))
        .await
        .unwrap();
    loop {
        if let Event::Apply(o) = timeout(WAIT, events.try_next())
            .await
            .expect("in time")
            .expect("ok")
            .expect("open")
        {
            assert_eq!(o.metadata.name.as_deref(), Some("post"));
            break;
        }
    }
}

// The simulator's admin endpoint over HTTPS with the same token (README "Admin endpoint").
#[tokio::test]
async fn admin_endpoint_accepts_faults_and_exec_files_over_http() {
    let (sim, client) = start().await;
    let post = |path: &str, body: serde_json::Value| {
        http::Request::post(format!("/_sim/{path}"))
            .header("Content-Type", "application/json")
            .body(body.to_string().into_bytes())
            .unwrap()
    };
    client
        .request_text(post(
            "faults",
            json!([{"verb": "create", "resource": "configmaps", "status": 500, "count": 1}]),
        ))
        .await
        .expect("fault accepted");
    assert_eq!(sim.faults().len(), 1);
    client
        .request_text(post(
            "exec-files",
            json!({"namespace": "default", "pod": "p", "path": "/x", "content": "y"}),
        ))
        .await
        .expect("exec file accepted");
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let (code, _, _) = api_code(
        api.create(&PostParams::default(), &cm("z", "0"))
            .await
            .expect_err("injected"),
    );
    assert_eq!(code, 500);
    let bad = client
        .request_text(post("faults", json!({"verb": "get", "bogus": 1})))
        .await;
    assert!(bad.is_err(), "unknown fields are rejected");
}

// kubernetes.io/docs/reference/using-api/api-concepts/#semantics-for-watch (selector transitions)
#[tokio::test]
async fn label_selected_watch_reports_objects_leaving_the_selection_as_deleted() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut c = cm("sel", "0");
    c.metadata.labels = Some([("app".to_string(), "a".to_string())].into());
    api.create(&PostParams::default(), &c).await.unwrap();
    let rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = api
        .watch(&WatchParams::default().labels("app=a").timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    api.patch(
        "sel",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"labels": {"app": "b"}}})),
    )
    .await
    .unwrap();
    let ev = loop {
        match timeout(WAIT, stream.try_next())
            .await
            .expect("in time")
            .expect("ok")
            .expect("event")
        {
            WatchEvent::Bookmark(_) => continue,
            other => break other,
        }
    };
    assert!(matches!(ev, WatchEvent::Deleted(_)), "{ev:?}");
}

// kubernetes.io/docs/reference/using-api/api-concepts/#streaming-lists
#[tokio::test]
async fn streaming_list_watch_ends_initial_events_with_a_bookmark() {
    use kube::runtime::watcher::{self, Event};
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("s1", "0"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("s2", "0"))
        .await
        .unwrap();
    let mut events = watcher::watcher(api, watcher::Config::default().streaming_lists()).boxed();
    let mut initial = Vec::new();
    loop {
        match timeout(WAIT, events.try_next())
            .await
            .expect("in time")
            .expect("ok")
            .expect("open")
        {
            Event::InitApply(o) => initial.push(o.metadata.name.unwrap()),
            Event::InitDone => break,
            _ => {}
        }
    }
    initial.sort();
    initial.retain(|n| n != "kube-root-ca.crt");
    assert_eq!(initial, vec!["s1", "s2"]);
}

// kubernetes.io/docs/reference/using-api/api-concepts/#dry-run (delete) and deletecollection
#[tokio::test]
async fn dry_run_delete_keeps_the_object_and_delete_collection_honours_selectors() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    for (name, app) in [("d1", "a"), ("d2", "a"), ("d3", "b")] {
        let mut c = cm(name, "0");
        c.metadata.labels = Some([("app".to_string(), app.to_string())].into());
        api.create(&PostParams::default(), &c).await.unwrap();
    }
    let dp = kube::api::DeleteParams {
        dry_run: true,
        ..Default::default()
    };
    api.delete("d1", &dp).await.expect("dry-run delete");
    assert!(api.get_opt("d1").await.unwrap().is_some());
    api.delete_collection(&Default::default(), &ListParams::default().labels("app=a"))
        .await
        .expect("deletecollection");
    let left: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|c| c.metadata.name.unwrap())
        .filter(|n| n != "kube-root-ca.crt")
        .collect();
    assert_eq!(left, vec!["d3"]);
}

// kubernetes.io/docs/reference/kubernetes-api/common-parameters/common-parameters/#timeoutseconds
#[tokio::test]
async fn watch_ends_after_timeout_seconds() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = api
        .watch(&WatchParams::default().disable_bookmarks().timeout(1), &rv)
        .await
        .unwrap()
        .boxed();
    let end = timeout(WAIT, stream.try_next())
        .await
        .expect("stream ends in time");
    assert!(matches!(end, Ok(None)), "{end:?}");
}

// kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes and
// #field-selectors (metadata.name), kubernetes.io/docs/concepts/overview/working-with-objects/finalizers/:
// a watch on one name sees the deletion held by a finalizer (MODIFIED with
// deletionTimestamp), the object going (DELETED) and a new object under the name (ADDED,
// another uid). Counted per kind of request.
#[tokio::test]
async fn name_selected_watch_sees_deletion_then_a_recreated_object_with_a_new_uid() {
    let (sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut held = cm("one", "0");
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    let first = api.create(&PostParams::default(), &held).await.unwrap();
    api.create(&PostParams::default(), &cm("other", "0"))
        .await
        .unwrap();
    let before = sim.request_counts();
    let list = api
        .list(&ListParams::default().fields("metadata.name=one"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    let rv = list.metadata.resource_version.unwrap();
    let mut stream = api
        .watch(
            &WatchParams::default()
                .fields("metadata.name=one")
                .timeout(10),
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    api.delete("one", &Default::default()).await.unwrap();
    api.patch(
        "other",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"data": {"v": "1"}})),
    )
    .await
    .unwrap();
    api.patch(
        "one",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let second = api
        .create(&PostParams::default(), &cm("one", "1"))
        .await
        .unwrap();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let ev = timeout(WAIT, stream.try_next())
            .await
            .expect("event in time")
            .expect("stream ok")
            .expect("open");
        let (kind, o) = match ev {
            WatchEvent::Added(o) => ("ADDED", o),
            WatchEvent::Modified(o) => ("MODIFIED", o),
            WatchEvent::Deleted(o) => ("DELETED", o),
            other => panic!("unexpected {other:?}"),
        };
        seen.push((
            kind,
            o.metadata.name.unwrap(),
            o.metadata.uid.unwrap(),
            o.metadata.deletion_timestamp.is_some(),
        ));
    }
    let (old, new) = (first.metadata.uid.unwrap(), second.metadata.uid.unwrap());
    assert_ne!(old, new);
    assert_eq!(
        seen,
        vec![
            ("MODIFIED", "one".into(), old.clone(), true),
            ("DELETED", "one".into(), old, true),
            ("ADDED", "one".into(), new, false),
        ]
    );
    let after = sim.request_counts();
    let made =
        |key: &str| after.get(key).copied().unwrap_or(0) - before.get(key).copied().unwrap_or(0);
    assert_eq!(made("list configmaps"), 1);
    assert_eq!(made("watch configmaps"), 1);
    assert_eq!(made("delete configmaps"), 1);
    assert_eq!(made("patch configmaps"), 2);
    assert_eq!(made("create configmaps"), 1);
}
