//! Waiting for health and for deletion by watching: what it costs in API requests
//! (kube-sim's per-request counters), and that it stays correct when the object is
//! re-created or the wait is cancelled.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::engine;
use tokio_util::sync::CancellationToken;

use crate::scenarios::common::*;

/// Requests made between two snapshots of `sim.request_counts()`, by kind.
fn counts_between(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(k, n)| (k.clone(), n - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// Sum of the counts whose verb is `verb` (`"get"`, `"list"`, `"watch"`, ...).
fn verb_total(counts: &BTreeMap<String, u64>, verb: &str) -> u64 {
    counts
        .iter()
        .filter(|(k, _)| k.split(' ').next() == Some(verb))
        .map(|(_, n)| n)
        .sum()
}

/// Not a test of behaviour: prints the API requests of installing zookeeper (3 nodes)
/// and kafka and running their deploy plans, for `docs/benchmarks.md`. Run with
/// `cargo test -p kudo-engine --test integration waits::requests_of -- --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_of_a_zookeeper_and_a_kafka_deploy() {
    count_deploy_requests(&[Duration::from_millis(100)]).await;
}

/// The same with slower workloads (2 s, and 30 s as on a real cluster); over two
/// minutes, so only on demand: `... waits::requests_of -- --include-ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "takes minutes; run for docs/benchmarks.md"]
async fn requests_of_a_zookeeper_and_a_kafka_deploy_with_slow_workloads() {
    count_deploy_requests(&[Duration::from_secs(2), Duration::from_secs(30)]).await;
}

async fn count_deploy_requests(ready_delays: &[Duration]) {
    let (Some(zk), Some(kafka)) = (fixture_package("zookeeper"), fixture_package("kafka")) else {
        return;
    };
    for &ready_delay in ready_delays {
        let (sim, cluster) = sim().await;
        sim.set_ready_delay(ready_delay);
        namespace(&cluster, "bench").await;
        for (path, content) in [("/tmp/tls.key", "KEY"), ("/tmp/tls.crt", "CERT")] {
            sim.add_exec_file(kube_sim::ExecFile {
                namespace: "bench".into(),
                pod: None,
                selector: Some("kudo.dev/instance=kafka".into()),
                path: path.into(),
                content: content.into(),
            });
        }
        let zk_values = params(&[("NODE_COUNT", "3")]);
        let kafka_values = params(&[(
            "ZOOKEEPER_URI",
            "zk-zookeeper-0.zk-hs:2181,zk-zookeeper-1.zk-hs:2181,zk-zookeeper-2.zk-hs:2181",
        )]);
        for (pkg, instance, values) in [(&zk, "zk", &zk_values), (&kafka, "kafka", &kafka_values)] {
            let before = sim.request_counts();
            let started = std::time::Instant::now();
            engine::install_operator(&cluster, pkg, "bench")
                .await
                .expect("install operator");
            let out = tokio::time::timeout(
                Duration::from_secs(600),
                engine::run_plan(
                    &cluster,
                    request(pkg, instance, "bench", values, "deploy"),
                    &CancellationToken::new(),
                ),
            )
            .await
            .expect("the deploy finishes within 10 minutes")
            .unwrap_or_else(|e| panic!("{instance} deploy: {e}"));
            assert_eq!(out.plan_status["status"], "COMPLETE");
            let took = started.elapsed();
            let counts = counts_between(&before, &sim.request_counts());
            eprintln!(
                "[requests] {instance} (ready delay {ready_delay:?}): {} requests (get {}, list {}, watch {}, patch {}, delete {}) in {took:.1?}",
                counts.values().sum::<u64>(),
                verb_total(&counts, "get"),
                verb_total(&counts, "list"),
                verb_total(&counts, "watch"),
                verb_total(&counts, "patch"),
                verb_total(&counts, "delete"),
            );
            eprintln!("[requests]   {counts:?}");
        }
    }
}

const ONE_DEPLOYMENT: &str = r#"
name: slow
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [deployment.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: app
            tasks: [app]
"#;

/// A Deployment kube-sim reports ready after `annotations` say so.
fn deployment(annotations: &str) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{{{ .Name }}}}
  annotations:
    {annotations}
spec:
  selector:
    matchLabels: {{app: slow}}
  template:
    metadata:
      labels: {{app: slow}}
    spec:
      containers:
        - name: c
          image: busybox
"#
    )
}

/// Reads of deployments (get, list, watch) in `counts`.
fn deployment_reads(counts: &BTreeMap<String, u64>) -> u64 {
    ["get", "list", "watch"]
        .iter()
        .map(|verb| {
            counts
                .get(&format!("{verb} deployments"))
                .copied()
                .unwrap_or(0)
        })
        .sum()
}

/// Two seconds of waiting for a Deployment cost one watch, from the version the apply
/// answered (plus the reads before the apply: the run's check of every object before
/// its first write, and the apply's own), not a read per polling interval: polling at
/// 50 ms doubling to 2 s would read it seven times. No list goes before the watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_seconds_for_health_costs_one_watch() {
    let pkg = package(
        ONE_DEPLOYMENT,
        "parameters: []\n",
        &[(
            "deployment.yaml",
            &deployment(r#"kube-sim.kudo.dev/ready-delay-ms: "2000""#),
        )],
    );
    let (sim, cluster) = sim().await;
    let before = sim.request_counts();
    let none = params(&[]);
    bounded(engine::run_plan(
        &cluster,
        request(&pkg, "w", "default", &none, "deploy"),
        &CancellationToken::new(),
    ))
    .await
    .expect("deploy");
    let counts = counts_between(&before, &sim.request_counts());
    assert_eq!(
        counts.get("watch deployments"),
        Some(&1),
        "one watch: {counts:?}"
    );
    assert_eq!(counts.get("list deployments"), None, "no list: {counts:?}");
    assert!(
        deployment_reads(&counts) <= 4,
        "reads of the Deployment: {counts:?}"
    );
}

/// A wait that is cancelled (the Terraform timeout) stops at once and says what it
/// last saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_health_wait_stops_and_says_what_it_last_saw() {
    let pkg = package(
        ONE_DEPLOYMENT,
        "parameters: []\n",
        &[(
            "deployment.yaml",
            &deployment(r#"kube-sim.kudo.dev/never-ready: "true""#),
        )],
    );
    let (sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let run = spawn_deploy(&cluster, &pkg, "c", &cancel);
    // Watching means the wait has seen the object and found it not ready.
    eventually("the wait to watch the Deployment", || async {
        sim.request_counts()
            .get("watch deployments")
            .is_some_and(|n| *n >= 1)
    })
    .await;
    cancel.cancel();
    let err = bounded(run)
        .await
        .expect("run task")
        .expect_err("cancelled");
    assert!(err.is_cancelled() && !err.fatal, "{err}");
    // What the Deployment rule said last ("... spec update to be observed", "0 of 1
    // ... replicas ..."), depending on how far kube-sim's controller got.
    let last_seen = err
        .message
        .split_once("while waiting for the object to become healthy (last seen: ")
        .map(|(_, rest)| rest.trim_end_matches(')'))
        .unwrap_or_else(|| panic!("names what it waited for: {err}"));
    assert!(
        last_seen.contains("deployment") || last_seen.contains("replicas"),
        "{err}"
    );
    assert_eq!(
        err.object,
        Some(oref("apps/v1", "Deployment", Some("default"), "c"))
    );
}

/// Dropped watch connections are opened again from where they broke; the wait still
/// ends when the object is ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_watches_are_resumed() {
    let pkg = package(
        ONE_DEPLOYMENT,
        "parameters: []\n",
        &[(
            "deployment.yaml",
            // Long enough that the list (right after the apply) finds it not ready.
            &deployment(r#"kube-sim.kudo.dev/ready-delay-ms: "3000""#),
        )],
    );
    let (sim, cluster) = sim().await;
    sim.add_faults([kube_sim::FaultRule {
        verb: Some("watch".into()),
        resource: Some("deployments".into()),
        drop: true,
        count: Some(3),
        ..Default::default()
    }]);
    let before = sim.request_counts();
    let none = params(&[]);
    bounded(engine::run_plan(
        &cluster,
        request(&pkg, "d", "default", &none, "deploy"),
        &CancellationToken::new(),
    ))
    .await
    .expect("deploy through dropped watches");
    let counts = counts_between(&before, &sim.request_counts());
    assert!(sim.faults().is_empty(), "all three watches were dropped");
    assert_eq!(counts.get("watch deployments"), Some(&4), "{counts:?}");
}

const FINALIZER: &str = "example.com/hold";

fn held_config_map(name: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "finalizers": [FINALIZER]},
        "data": {"k": "v"},
    })
}

fn config_maps(cluster: &crate::cluster::Cluster) -> kube::Api<kube::api::DynamicObject> {
    let ar = kube::discovery::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
    kube::Api::namespaced_with(cluster.client().clone(), "default", &ar)
}

async fn release(cluster: &crate::cluster::Cluster, name: &str) {
    let patch = serde_json::json!({"metadata": {"finalizers": null}});
    config_maps(cluster)
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .expect("remove the finalizer");
}

/// A deletion held up by a finalizer is waited for with one watch from the version the
/// delete answered (no list first), and ends when the finalizer goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_wait_watches_until_the_object_is_gone() {
    let (sim, cluster) = sim().await;
    cluster
        .apply(&held_config_map("held"), false)
        .await
        .expect("create");
    let r = oref("v1", "ConfigMap", Some("default"), "held");
    let before = sim.request_counts();
    let wait = {
        let (cluster, r) = (cluster.clone(), r.clone());
        tokio::spawn(async move { cluster.delete_and_wait(&r, &CancellationToken::new()).await })
    };
    eventually("the deletion wait to watch", || async {
        sim.request_counts()
            .get("watch configmaps")
            .is_some_and(|n| *n >= 1)
    })
    .await;
    release(&cluster, "held").await;
    bounded(wait).await.expect("task").expect("deleted");
    assert!(cluster.get(&r).await.expect("read").is_none());
    let counts = counts_between(&before, &sim.request_counts());
    assert_eq!(counts.get("list configmaps"), None, "{counts:?}");
    assert_eq!(counts.get("watch configmaps"), Some(&1), "{counts:?}");
    assert_eq!(
        counts.get("get configmaps"),
        Some(&1),
        "only ours: {counts:?}"
    );
}

/// An object created under the same name after ours went is another object (another
/// uid): the deletion wait ends instead of waiting for the newcomer. Its watch from the
/// delete's version fails (503), and the lists it falls back to fail until the old
/// object is gone and the new one exists, so all it can see is the newcomer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_wait_counts_a_recreated_object_as_gone() {
    let (sim, cluster) = sim().await;
    let old = cluster
        .apply(&held_config_map("again"), false)
        .await
        .expect("create");
    let old_uid = old.pointer("/metadata/uid").cloned();
    const BLOCKED: u32 = 1000;
    sim.add_faults([kube_sim::FaultRule {
        verb: Some("watch".into()),
        resource: Some("configmaps".into()),
        namespace: Some("default".into()),
        status: Some(503),
        count: Some(1),
        ..Default::default()
    }]);
    sim.add_faults([kube_sim::FaultRule {
        verb: Some("list".into()),
        resource: Some("configmaps".into()),
        namespace: Some("default".into()),
        status: Some(503),
        count: Some(BLOCKED),
        ..Default::default()
    }]);
    let r = oref("v1", "ConfigMap", Some("default"), "again");
    let cancel = CancellationToken::new();
    let wait = {
        let (cluster, r, cancel) = (cluster.clone(), r.clone(), cancel.clone());
        tokio::spawn(async move { cluster.delete_and_wait(&r, &cancel).await })
    };
    eventually("the deletion wait to start listing", || async {
        sim.faults()
            .iter()
            .find(|f| f.verb.as_deref() == Some("list"))
            .and_then(|f| f.count)
            < Some(BLOCKED)
    })
    .await;
    release(&cluster, "again").await;
    // The old object is gone once its finalizers are; then the name is free again.
    let api = config_maps(&cluster);
    let fresh: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "again", "namespace": "default"},
        "data": {"k": "new"},
    }))
    .expect("object");
    eventually("a new object under the same name", || async {
        api.create(&kube::api::PostParams::default(), &fresh)
            .await
            .is_ok()
    })
    .await;
    sim.clear_faults();
    bounded(wait)
        .await
        .expect("task")
        .expect("the old object counts as gone");
    let now = cluster
        .get(&r)
        .await
        .expect("read")
        .expect("the new object stays");
    assert_ne!(now.pointer("/metadata/uid").cloned(), old_uid);
    assert_eq!(
        now.pointer("/data/k"),
        Some(&serde_json::Value::from("new"))
    );
}

/// A kind the server will not watch (405 MethodNotAllowed, as for some aggregated APIs)
/// is read on the polling schedule instead: the wait still ends, after one refused watch
/// (from the version the delete answered; no list follows it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_that_cannot_be_watched_is_read_instead() {
    let (sim, cluster) = sim().await;
    cluster
        .apply(&held_config_map("unwatched"), false)
        .await
        .expect("create");
    sim.add_faults([kube_sim::FaultRule {
        verb: Some("watch".into()),
        resource: Some("configmaps".into()),
        status: Some(405),
        ..Default::default()
    }]);
    let r = oref("v1", "ConfigMap", Some("default"), "unwatched");
    let before = sim.request_counts();
    let wait = {
        let (cluster, r) = (cluster.clone(), r.clone());
        tokio::spawn(async move { cluster.delete_and_wait(&r, &CancellationToken::new()).await })
    };
    eventually("the deletion wait to read the object", || async {
        sim.request_counts()
            .get("get configmaps")
            .is_some_and(|n| *n > before.get("get configmaps").copied().unwrap_or(0))
    })
    .await;
    release(&cluster, "unwatched").await;
    bounded(wait).await.expect("task").expect("deleted");
    let counts = counts_between(&before, &sim.request_counts());
    assert_eq!(counts.get("watch configmaps"), Some(&1), "{counts:?}");
    assert_eq!(counts.get("list configmaps"), None, "{counts:?}");
}

/// One ConfigMap, `flag`, whose `data.ready` is `ready`.
fn flag_package(ready: &str) -> kudo_package::Package {
    let operator = ONE_DEPLOYMENT.replace("deployment.yaml", "flag.yaml");
    let flag = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flag\ndata:\n  ready: \"{ready}\"\n"
    );
    package(&operator, "parameters: []\n", &[("flag.yaml", &flag)])
}

/// Under `HealthPolicy::Ready` a user rule decides for its kind: a ConfigMap (healthy as
/// soon as it exists under KUDO's rules) waits until the rule holds, and the timeout
/// names the rule and the value that failed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ready_rule_waits_and_names_what_failed_it() {
    let rules = engine::ReadyRules::new([(
        String::new(),
        "ConfigMap".to_string(),
        "self.data.ready == 'yes'".to_string(),
    )])
    .expect("rule compiles");
    let policy = engine::HealthPolicy::Ready(rules);
    let none = BTreeMap::new();

    let (_sim, cluster) = sim().await;
    let yes = flag_package("yes");
    bounded(run(
        &cluster,
        engine::RunRequest {
            health: &policy,
            progress: None,
            ..request(&yes, "y", "default", &none, "deploy")
        },
    ))
    .await
    .expect("the rule holds");

    let (_sim, cluster) = sim().await;
    let no = flag_package("no");
    // KUDO's rules do not look at the data.
    bounded(run(&cluster, request(&no, "k", "default", &none, "deploy")))
        .await
        .expect("healthy by KUDO's rules");

    let (sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let waiting = engine::run_plan(
        &cluster,
        engine::RunRequest {
            health: &policy,
            progress: None,
            ..request(&no, "n", "default", &none, "deploy")
        },
        &cancel,
    );
    let stop = async {
        // Watching means the wait has judged the ConfigMap and found the rule false.
        eventually("the wait to watch the ConfigMap", || async {
            sim.request_counts()
                .get("watch configmaps")
                .is_some_and(|n| *n >= 1)
        })
        .await;
        cancel.cancel();
    };
    let (result, ()) = bounded(async { tokio::join!(waiting, stop) }).await;
    let err = result.expect_err("cancelled");
    assert!(err.is_cancelled() && !err.fatal, "{err}");
    assert!(
        err.message.contains(
            r#"(last seen: rule "self.data.ready == 'yes'" is false (self.data.ready = "no"))"#
        ),
        "{err}"
    );
    assert_eq!(
        err.object,
        Some(oref("v1", "ConfigMap", Some("default"), "flag"))
    );
}
