//! Plans run against kube-sim: deploy, failure, concurrency, pruning, uninstall.

use crate::common::*;
use kudo_engine::cluster::{Cluster, ClusterError, ConnectionSettings};
use kudo_engine::engine::{
    self, Cleanup, LABEL_HERITAGE, LABEL_INSTANCE, LABEL_OPERATOR, RunRequest, instance_ref,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kudo_crds_are_installed_once_and_resolvable() {
    let (_sim, cluster) = sim().await;
    cluster
        .ensure_kudo_crds()
        .await
        .expect("second ensure is a no-op");
    for kind in ["Operator", "OperatorVersion", "Instance"] {
        assert!(
            cluster
                .is_namespaced("kudo.dev/v1beta1", kind)
                .await
                .unwrap(),
            "{kind}"
        );
    }
    let err = cluster
        .is_namespaced("example.com/v1", "Nope")
        .await
        .unwrap_err();
    assert!(matches!(err, ClusterError::UnknownKind { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_file_and_unreachable_host() {
    let sim = kube_sim::KubeSim::start(kube_sim::SimConfig::default())
        .await
        .unwrap();
    let path = temp_dir("kc").join("config");
    sim.write_kubeconfig(&path).unwrap();
    let s = ConnectionSettings {
        config_path: Some(path.to_string_lossy().into()),
        ..Default::default()
    };
    Cluster::connect(&s)
        .await
        .expect("connect through kubeconfig");

    let s = ConnectionSettings {
        host: Some("https://127.0.0.1:1".into()),
        insecure: true,
        ..Default::default()
    };
    let err = Cluster::connect(&s).await.unwrap_err();
    assert!(matches!(err, ClusterError::Unreachable { .. }), "{err}");
    assert!(err.to_string().contains("https://127.0.0.1:1"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_operator_deploys_labelled_owned_objects() {
    let Some(pkg) = fixture_package("first-operator") else {
        return;
    };
    let (_sim, cluster) = sim().await;
    namespace(&cluster, "fo").await;
    engine::install_operator(&cluster, &pkg, "fo")
        .await
        .expect("install operator");
    let loaded = engine::load_operator(&cluster, "fo", &pkg.operator_version_name())
        .await
        .expect("load operator")
        .expect("operator version exists");
    assert_eq!(loaded.operator.name, "first-operator");
    assert!(
        engine::load_operator(&cluster, "fo", "nope-1.0.0")
            .await
            .unwrap()
            .is_none()
    );

    let values = params(&[("replicas", "3")]);
    let out = engine::run_plan(
        &cluster,
        request(&pkg, "fo1", "fo", &values, "deploy"),
        &CancellationToken::new(),
    )
    .await
    .expect("deploy plan");
    assert_eq!(out.plan_status["status"], "COMPLETE");
    assert_eq!(
        out.plan_status["phases"][0]["steps"][0]["status"],
        "COMPLETE"
    );
    let deployment = oref("apps/v1", "Deployment", Some("fo"), "nginx-deployment");
    assert_eq!(out.inventory, vec![deployment.clone()]);

    let d = cluster
        .get(&deployment)
        .await
        .unwrap()
        .expect("deployment exists");
    assert_eq!(d.pointer("/spec/replicas"), Some(&Value::from(3)));
    assert_eq!(label(&d, LABEL_HERITAGE), Some("kudo"));
    assert_eq!(label(&d, LABEL_OPERATOR), Some("first-operator"));
    assert_eq!(label(&d, LABEL_INSTANCE), Some("fo1"));
    assert_eq!(
        d.pointer("/spec/template/metadata/labels/kudo.dev~1instance"),
        Some(&Value::from("fo1"))
    );
    assert_eq!(
        d.pointer("/metadata/annotations/kudo.dev~1plan"),
        Some(&Value::from("deploy"))
    );

    let inst = cluster
        .get(&instance_ref("fo", "fo1"))
        .await
        .unwrap()
        .expect("instance exists");
    assert_eq!(
        d.pointer("/metadata/ownerReferences/0/uid"),
        inst.pointer("/metadata/uid")
    );
    assert_eq!(
        d.pointer("/metadata/ownerReferences/0/kind"),
        Some(&Value::from("Instance"))
    );
    assert_eq!(
        inst.pointer("/spec/operatorVersion/name"),
        Some(&Value::from("first-operator-0.2.0"))
    );
    assert_eq!(
        inst.pointer("/spec/parameters/replicas"),
        Some(&Value::from("3"))
    );
    assert_eq!(
        inst.pointer("/status/planStatus/deploy/status"),
        Some(&Value::from("COMPLETE"))
    );
    assert_eq!(
        inst.pointer("/status/conditions/0/status"),
        Some(&Value::from("True"))
    );
    assert_eq!(engine::health(&inst), engine::Health::Healthy);

    // uninstall removes everything labelled and the Instance
    engine::uninstall_instance(
        &cluster,
        "fo",
        "fo1",
        &out.inventory,
        None,
        engine::CrdDeletion::default(),
        &CancellationToken::new(),
    )
    .await
    .expect("uninstall");
    assert!(cluster.get(&deployment).await.unwrap().is_none());
    assert!(
        cluster
            .get(&instance_ref("fo", "fo1"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        cluster
            .list_labelled("fo", "kudo.dev/instance=fo1")
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_three_nodes_deploy_and_uninstall() {
    let Some(pkg) = fixture_package("zookeeper") else {
        return;
    };
    let (_sim, cluster) = sim().await;
    serve_pdb_v1beta1(&cluster).await;
    namespace(&cluster, "zk").await;
    engine::install_operator(&cluster, &pkg, "zk")
        .await
        .expect("install operator");
    let values = params(&[("NODE_COUNT", "3")]);
    let out = engine::run_plan(
        &cluster,
        request(&pkg, "zk1", "zk", &values, "deploy"),
        &CancellationToken::new(),
    )
    .await
    .expect("zookeeper deploy plan");
    assert_eq!(out.plan_status["status"], "COMPLETE");

    let sts = cluster
        .get(&oref("apps/v1", "StatefulSet", Some("zk"), "zk1-zookeeper"))
        .await
        .unwrap()
        .expect("statefulset");
    assert_eq!(sts.pointer("/spec/replicas"), Some(&Value::from(3)));
    assert_eq!(
        sts.pointer("/spec/volumeClaimTemplates/0/metadata/labels/kudo.dev~1instance"),
        Some(&Value::from("zk1"))
    );
    for svc in ["zk1-hs", "zk1-cs"] {
        let s = cluster
            .get(&oref("v1", "Service", Some("zk"), svc))
            .await
            .unwrap()
            .expect("service");
        assert_eq!(label(&s, LABEL_INSTANCE), Some("zk1"));
    }
    // the validation Job was applied, then removed by the cleanup step
    let job = oref("batch/v1", "Job", Some("zk"), "zk1-validation");
    assert!(cluster.get(&job).await.unwrap().is_none());
    assert!(!out.inventory.contains(&job), "{:?}", out.inventory);

    engine::uninstall_instance(
        &cluster,
        "zk",
        "zk1",
        &out.inventory,
        None,
        engine::CrdDeletion::default(),
        &CancellationToken::new(),
    )
    .await
    .expect("uninstall");
    assert!(
        cluster
            .list_labelled("zk", "kudo.dev/instance=zk1")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        cluster
            .get(&instance_ref("zk", "zk1"))
            .await
            .unwrap()
            .is_none()
    );
}

/// The zookeeper package still uses policy/v1beta1 PodDisruptionBudgets (removed in
/// Kubernetes 1.25); kube-sim serves only policy/v1, so stand in for an older cluster with
/// a CRD of that shape.
async fn serve_pdb_v1beta1(cluster: &Cluster) {
    let crd = serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "poddisruptionbudgets.policy"},
        "spec": {
            "group": "policy",
            "scope": "Namespaced",
            "names": {"kind": "PodDisruptionBudget", "plural": "poddisruptionbudgets", "singular": "poddisruptionbudget", "listKind": "PodDisruptionBudgetList"},
            "versions": [{"name": "v1beta1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    });
    cluster
        .apply(&crd, false)
        .await
        .expect("policy/v1beta1 stand-in CRD");
    eventually(
        "policy/v1beta1 PodDisruptionBudget to be served",
        || async {
            cluster
                .is_namespaced("policy/v1beta1", "PodDisruptionBudget")
                .await
                .is_ok()
        },
    )
    .await;
}

const ONE_STEP: &str = r#"
name: failing
operatorVersion: 0.1.0
tasks:
  - name: run-job
    kind: Apply
    spec:
      resources: [job.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: migrate
            tasks: [run-job]
"#;

const FAILING_JOB: &str = r#"
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Name }}-migrate
  annotations:
    kube-sim.kudo.dev/job-fail: "true"
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: m
          image: busybox
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_job_is_fatal_and_names_where() {
    let pkg = package(
        ONE_STEP,
        "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
        &[("job.yaml", FAILING_JOB)],
    );
    let (_sim, cluster) = sim().await;
    let none = params(&[]);
    let err = engine::run_plan(
        &cluster,
        request(&pkg, "f", "default", &none, "deploy"),
        &CancellationToken::new(),
    )
    .await
    .expect_err("a failing job fails the plan");
    assert!(err.fatal, "{err}");
    assert_eq!(err.plan.as_deref(), Some("deploy"));
    assert_eq!(err.phase.as_deref(), Some("main"));
    assert_eq!(err.step.as_deref(), Some("migrate"));
    assert_eq!(err.task.as_deref(), Some("run-job"));
    assert_eq!(
        err.object,
        Some(oref("batch/v1", "Job", Some("default"), "f-migrate"))
    );

    let inst = cluster
        .get(&instance_ref("default", "f"))
        .await
        .unwrap()
        .expect("instance");
    assert_eq!(
        inst.pointer("/status/planStatus/deploy/status"),
        Some(&Value::from("FATAL_ERROR"))
    );
    assert_eq!(
        inst.pointer("/status/planStatus/deploy/phases/0/steps/0/status"),
        Some(&Value::from("FATAL_ERROR"))
    );
    assert_eq!(
        inst.pointer("/status/conditions/0/reason"),
        Some(&Value::from("PlanInFatalError"))
    );
}

fn two_step_operator(strategy: &str) -> String {
    format!(
        r#"
name: twosteps
operatorVersion: 0.1.0
tasks:
  - name: slow
    kind: Apply
    spec:
      resources: [slow.yaml]
  - name: quick
    kind: Apply
    spec:
      resources: [quick.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: both
        strategy: {strategy}
        steps:
          - name: slow
            tasks: [slow]
          - name: quick
            tasks: [quick]
"#
    )
}

const NEVER_READY: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}-slow
  annotations:
    kube-sim.kudo.dev/never-ready: "true"
spec:
  selector:
    matchLabels: {app: slow}
  template:
    metadata:
      labels: {app: slow}
    spec:
      containers:
        - name: c
          image: busybox
"#;

const QUICK: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-quick
data:
  k: v
"#;

async fn status_of(cluster: &Cluster, ns: &str, name: &str, pointer: &str) -> Option<String> {
    let inst = cluster.get(&instance_ref(ns, name)).await.ok()??;
    inst.pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// A never-ready first step does not hold back the second one when the phase is parallel:
/// the second completes while the first is still in progress. Serial never reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_steps_run_concurrently_serial_do_not() {
    let (_sim, cluster) = sim().await;
    let templates = [("slow.yaml", NEVER_READY), ("quick.yaml", QUICK)];

    let pkg = package(
        &two_step_operator("parallel"),
        "parameters: []\n",
        &templates,
    );
    let cancel = CancellationToken::new();
    let run = spawn_deploy(&cluster, &pkg, "par", &cancel);
    let quick = "/status/planStatus/deploy/phases/0/steps/1/status";
    let slow = "/status/planStatus/deploy/phases/0/steps/0/status";
    eventually("the quick step to complete", || async {
        status_of(&cluster, "default", "par", quick)
            .await
            .as_deref()
            == Some("COMPLETE")
    })
    .await;
    assert_eq!(
        status_of(&cluster, "default", "par", slow).await.as_deref(),
        Some("IN_PROGRESS")
    );
    cancel.cancel();
    let err = run.await.unwrap().expect_err("cancelled run fails");
    assert!(!err.fatal && err.is_cancelled(), "{err}");
    assert_eq!(err.step.as_deref(), Some("slow"));
    assert_eq!(
        status_of(
            &cluster,
            "default",
            "par",
            "/status/planStatus/deploy/status"
        )
        .await
        .as_deref(),
        Some("ERROR")
    );

    let pkg = package(&two_step_operator("serial"), "parameters: []\n", &templates);
    let cancel = CancellationToken::new();
    let run = spawn_deploy(&cluster, &pkg, "ser", &cancel);
    eventually("the slow step to start", || async {
        status_of(&cluster, "default", "ser", slow).await.as_deref() == Some("IN_PROGRESS")
    })
    .await;
    cancel.cancel();
    run.await.unwrap().expect_err("cancelled run fails");
    assert_eq!(
        status_of(&cluster, "default", "ser", quick)
            .await
            .as_deref(),
        Some("PENDING")
    );
    assert!(
        cluster
            .get(&oref("v1", "ConfigMap", Some("default"), "ser-quick"))
            .await
            .unwrap()
            .is_none()
    );
}

const PRUNE_OPERATOR: &str = r#"
name: prune
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [cms.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: main
            tasks: [app]
"#;

const PRUNE_PARAMS: &str = r#"
parameters:
  - name: EXTRA
    default: "true"
  - name: SUFFIX
    default: a
"#;

const PRUNE_CMS: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-{{ .Params.SUFFIX }}
data: {k: v}
{{- if eq .Params.EXTRA "true" }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-extra
data: {k: v}
{{- end }}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_no_longer_rendered_are_pruned() {
    let pkg = package(PRUNE_OPERATOR, PRUNE_PARAMS, &[("cms.yaml", PRUNE_CMS)]);
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let first = params(&[]);
    let out1 = engine::run_plan(
        &cluster,
        request(&pkg, "p", "default", &first, "deploy"),
        &cancel,
    )
    .await
    .expect("first run");
    let a = oref("v1", "ConfigMap", Some("default"), "p-a");
    let b = oref("v1", "ConfigMap", Some("default"), "p-b");
    let extra = oref("v1", "ConfigMap", Some("default"), "p-extra");
    assert_eq!(out1.inventory, vec![a.clone(), extra.clone()]);

    let second = params(&[("EXTRA", "false"), ("SUFFIX", "b")]);
    let out2 = engine::run_plan(
        &cluster,
        RunRequest {
            previous_inventory: &out1.inventory,
            ..request(&pkg, "p", "default", &second, "deploy")
        },
        &cancel,
    )
    .await
    .expect("second run");
    assert_eq!(out2.inventory, vec![b.clone()]);
    assert!(
        cluster.get(&a).await.unwrap().is_none(),
        "renamed object pruned"
    );
    assert!(
        cluster.get(&extra).await.unwrap().is_none(),
        "disabled object pruned"
    );
    assert!(cluster.get(&b).await.unwrap().is_some());
}

const TOGGLE_OPERATOR: &str = r#"
name: toggler
operatorVersion: 0.1.0
tasks:
  - name: maybe
    kind: Toggle
    spec:
      parameter: ENABLED
      resources: [cm.yaml]
  - name: boom
    kind: Dummy
    spec:
      wantErr: true
      fatal: true
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: toggle
            tasks: [maybe]
  cleanup:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: fail
            tasks: [boom]
"#;

const TOGGLE_PARAMS: &str = r#"
parameters:
  - name: ENABLED
    type: boolean
    default: "true"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toggle_applies_and_deletes_and_cleanup_failure_stops_uninstall() {
    let pkg = package(TOGGLE_OPERATOR, TOGGLE_PARAMS, &[("cm.yaml", QUICK)]);
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let cm = oref("v1", "ConfigMap", Some("default"), "t-quick");
    let on = params(&[("ENABLED", "T")]);
    let out = engine::run_plan(
        &cluster,
        request(&pkg, "t", "default", &on, "deploy"),
        &cancel,
    )
    .await
    .expect("toggle on");
    assert!(cluster.get(&cm).await.unwrap().is_some());
    let off = params(&[("ENABLED", "0")]);
    let out = engine::run_plan(
        &cluster,
        RunRequest {
            previous_inventory: &out.inventory,
            ..request(&pkg, "t", "default", &off, "deploy")
        },
        &cancel,
    )
    .await
    .expect("toggle off");
    assert!(cluster.get(&cm).await.unwrap().is_none());
    assert!(out.inventory.is_empty());

    let err = engine::uninstall_instance(
        &cluster,
        "default",
        "t",
        &out.inventory,
        Some(Cleanup {
            dependencies: None,
            package: &pkg,
            parameters: &off,
            render_seed: None,
        }),
        engine::CrdDeletion::default(),
        &cancel,
    )
    .await
    .expect_err("failing cleanup plan stops uninstall");
    assert!(err.fatal && err.plan.as_deref() == Some("cleanup"), "{err}");
    assert!(
        cluster
            .get(&instance_ref("default", "t"))
            .await
            .unwrap()
            .is_some()
    );
    engine::uninstall_instance(
        &cluster,
        "default",
        "t",
        &out.inventory,
        None,
        engine::CrdDeletion::default(),
        &cancel,
    )
    .await
    .expect("uninstall");
    assert!(
        cluster
            .get(&instance_ref("default", "t"))
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_renders_and_dry_runs_without_persisting() {
    let Some(pkg) = fixture_package("first-operator") else {
        return;
    };
    let (_sim, cluster) = sim().await;
    let values = params(&[("replicas", "4")]);
    let req = request(&pkg, "pv", "default", &values, "deploy");
    let planned = engine::preview_plan(&cluster, req).await.expect("preview");
    assert_eq!(planned.len(), 1);
    assert!(planned[0].checked);
    assert_eq!(
        planned[0].manifest.pointer("/spec/replicas"),
        Some(&Value::from(4))
    );
    assert_eq!(label(&planned[0].manifest, LABEL_INSTANCE), Some("pv"));
    assert!(
        cluster.get(&planned[0].object).await.unwrap().is_none(),
        "dry-run persisted nothing"
    );
    assert!(
        cluster
            .get(&instance_ref("default", "pv"))
            .await
            .unwrap()
            .is_none()
    );

    let bad = params(&[("nope", "1")]);
    let err = engine::preview_plan(
        &cluster,
        RunRequest {
            dependencies: None,
            parameters: &bad,
            ..req
        },
    )
    .await
    .expect_err("unknown parameter");
    assert!(err.fatal && err.message.contains("nope"), "{err}");
}

/// A server that never answers must not outlive cancellation (the Terraform timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_beats_a_hanging_api_server() {
    let (sim, cluster) = sim().await;
    let pkg = package(
        &two_step_operator("serial"),
        "parameters: []\n",
        &[("slow.yaml", NEVER_READY), ("quick.yaml", QUICK)],
    );
    sim.add_faults([kube_sim::FaultRule {
        verb: Some("get".into()),
        resource: Some("deployments".into()),
        hang: true,
        ..Default::default()
    }]);
    let cancel = CancellationToken::new();
    let run = spawn_deploy(&cluster, &pkg, "h", &cancel);
    eventually("the slow step to start", || async {
        status_of(
            &cluster,
            "default",
            "h",
            "/status/planStatus/deploy/phases/0/steps/0/status",
        )
        .await
        .as_deref()
            == Some("IN_PROGRESS")
    })
    .await;
    cancel.cancel();
    let result = tokio::time::timeout(std::time::Duration::from_secs(20), run)
        .await
        .expect("run_plan returned after cancellation despite the hanging server")
        .unwrap();
    let err = result.expect_err("cancelled");
    assert!(err.is_cancelled() && !err.fatal, "{err}");
}

#[test]
fn offline_render_of_zookeeper_deploy() {
    let Some(pkg) = fixture_package("zookeeper") else {
        return;
    };
    let values = params(&[("NODE_COUNT", "3")]);
    let objects = engine::render_plan(&pkg, "zk1", "zk", &values, "deploy").expect("render");
    let summary: Vec<(String, engine::PreviewAction, String)> = objects
        .iter()
        .map(|o| {
            (
                o.task.clone(),
                o.action,
                format!(
                    "{}/{}",
                    o.object["kind"].as_str().unwrap_or("?"),
                    o.object["metadata"]["name"].as_str().unwrap_or("?")
                ),
            )
        })
        .collect();
    assert!(
        summary.contains(&(
            "app".into(),
            engine::PreviewAction::Apply,
            "StatefulSet/zk1-zookeeper".into()
        )),
        "{summary:?}"
    );
    assert!(
        summary.contains(&(
            "validation-cleanup".into(),
            engine::PreviewAction::Delete,
            "Job/zk1-validation".into()
        )),
        "{summary:?}"
    );
    let err = engine::render_plan(&pkg, "zk1", "zk", &values, "nope").expect_err("unknown plan");
    assert!(err.fatal && err.message.contains("nope"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cowsay_pipe_task_copies_a_file_into_a_configmap() {
    let Some(pkg) = fixture_package("cowsay") else {
        return;
    };
    let (sim, cluster) = sim().await;
    sim.add_exec_file(kube_sim::ExecFile {
        namespace: "default".into(),
        pod: None,
        selector: Some("kudo.dev/instance=cow".into()),
        path: "/tmp/index.html".into(),
        content: "<pre>moo</pre>".into(),
    });
    let none = params(&[]);
    let out = engine::run_plan(
        &cluster,
        request(&pkg, "cow", "default", &none, "deploy"),
        &CancellationToken::new(),
    )
    .await
    .expect("cowsay deploy");
    let cm = oref(
        "v1",
        "ConfigMap",
        Some("default"),
        "cow.deploy.main.genfiles.genwww.indexhtml",
    );
    let deployment = oref("apps/v1", "Deployment", Some("default"), "cow-deployment");
    assert_eq!(out.inventory, vec![deployment.clone(), cm.clone()]);
    let data = cluster.get(&cm).await.unwrap().expect("pipe artifact");
    assert_eq!(
        data.pointer("/data/index.html"),
        Some(&Value::from("<pre>moo</pre>"))
    );
    assert_eq!(label(&data, LABEL_INSTANCE), Some("cow"));
    let d = cluster.get(&deployment).await.unwrap().expect("deployment");
    assert_eq!(
        d.pointer("/spec/template/spec/volumes/0/configMap/name"),
        Some(&Value::from(cm.name.as_str()))
    );
    let pod = oref(
        "v1",
        "Pod",
        Some("default"),
        "cow.deploy.main.genfiles.genwww.pipepod",
    );
    assert!(
        cluster.get(&pod).await.unwrap().is_none(),
        "pipe pod removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_deploy_with_certificate_pipe_and_toggles() {
    let Some(pkg) = fixture_package("kafka") else {
        return;
    };
    let (sim, cluster) = sim().await;
    serve_pdb_v1beta1(&cluster).await;
    namespace(&cluster, "kafka").await;
    for (path, content) in [("/tmp/tls.key", "KEY"), ("/tmp/tls.crt", "CERT")] {
        sim.add_exec_file(kube_sim::ExecFile {
            namespace: "kafka".into(),
            pod: None,
            selector: Some("kudo.dev/instance=k".into()),
            path: path.into(),
            content: content.into(),
        });
    }
    let none = params(&[]);
    let out = engine::run_plan(
        &cluster,
        request(&pkg, "k", "kafka", &none, "deploy"),
        &CancellationToken::new(),
    )
    .await
    .expect("kafka deploy");
    assert_eq!(out.plan_status["status"], "COMPLETE");
    let secret = oref(
        "v1",
        "Secret",
        Some("kafka"),
        "k.deploy.deploykafka.generatetlscertificates.generatetlscertificates.certificate",
    );
    let s = cluster
        .get(&secret)
        .await
        .unwrap()
        .expect("certificate secret");
    assert_eq!(s.pointer("/data/tls.crt"), Some(&Value::from("Q0VSVA==")));
    let sts = out
        .inventory
        .iter()
        .find(|r| r.kind == "StatefulSet")
        .expect("statefulset applied");
    let sts = cluster.get(sts).await.unwrap().expect("statefulset");
    // `defaultMode: 0777` in the template is YAML 1.1 octal
    assert_eq!(
        sts.pointer("/spec/template/spec/volumes/0/configMap/defaultMode"),
        Some(&Value::from(511))
    );
    assert!(out.inventory.contains(&secret));
}

const WORKLOAD_OPERATOR: &str = r#"
name: workloads
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [app.yaml]
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

const WORKLOAD_PARAMS: &str = r#"
parameters:
  - name: IMAGE
    default: busybox:1
  - name: STUCK
    default: "false"
"#;

const WORKLOADS: &str = r#"
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Name }}-sts
spec:
  serviceName: {{ .Name }}
  replicas: 2
  updateStrategy:
    type: OnDelete
  selector:
    matchLabels: {app: sts}
  template:
    metadata:
      labels: {app: sts}
    spec:
      containers:
        - name: c
          image: {{ .Params.IMAGE }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}-web
  {{- if eq .Params.STUCK "true" }}
  annotations:
    kube-sim.kudo.dev/never-ready: "true"
  {{- end }}
spec:
  progressDeadlineSeconds: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: c
          image: {{ .Params.IMAGE }}
"#;

/// OnDelete StatefulSets finish once the controller caught up (kubectl would wait for
/// ever); a Deployment past its progress deadline is FATAL instead of a hang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_delete_statefulset_updates_and_progress_deadline() {
    let pkg = package(
        WORKLOAD_OPERATOR,
        WORKLOAD_PARAMS,
        &[("app.yaml", WORKLOADS)],
    );
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let v1 = params(&[]);
    let out = engine::run_plan(
        &cluster,
        request(&pkg, "w", "default", &v1, "deploy"),
        &cancel,
    )
    .await
    .expect("first deploy");
    let v2 = params(&[("IMAGE", "busybox:2")]);
    bounded(engine::run_plan(
        &cluster,
        RunRequest {
            previous_inventory: &out.inventory,
            ..request(&pkg, "w", "default", &v2, "deploy")
        },
        &cancel,
    ))
    .await
    .expect("OnDelete update completes");

    let stuck = params(&[("IMAGE", "busybox:3"), ("STUCK", "true")]);
    let err = engine::run_plan(
        &cluster,
        RunRequest {
            previous_inventory: &out.inventory,
            ..request(&pkg, "w", "default", &stuck, "deploy")
        },
        &cancel,
    )
    .await
    .expect_err("progress deadline exceeded");
    assert!(
        err.fatal && err.message.contains("progress deadline"),
        "{err}"
    );
    assert_eq!(
        err.object,
        Some(oref("apps/v1", "Deployment", Some("default"), "w-web"))
    );
}

const PARENT: &str = r#"
name: parent
operatorVersion: 0.1.0
tasks:
  - name: dep
    kind: KudoOperator
    spec:
      package: ../child
      parameterFile: child-params.yaml
      enablingParameter: WITH_CHILD
plans:
  deploy:
    strategy: serial
    phases:
      - name: deps
        strategy: serial
        steps:
          - name: child
            tasks: [dep]
"#;

const PARENT_PARAMS: &str = r#"
parameters:
  - name: WITH_CHILD
    type: boolean
    default: "true"
  - name: SIZE
    default: "2"
"#;

const CHILD_PARAMS: &str = "GREETING: hello-{{ .Name }}\nSIZE: {{ .Params.SIZE }}\n";

const CHILD: &str = r#"
name: child
operatorVersion: 1.0.0
tasks:
  - name: cm
    kind: Apply
    spec:
      resources: [cm.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: main
            tasks: [cm]
"#;

const CHILD_PARAMS_YAML: &str = r#"
parameters:
  - name: GREETING
  - name: SIZE
    type: integer
"#;

const CHILD_CM: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-cm
data:
  greeting: {{ .Params.GREETING }}
  size: "{{ .Params.SIZE }}"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kudo_operator_dependency_is_installed_owned_and_disabled() {
    let root = temp_dir("deps");
    std::fs::create_dir_all(root.join("parent")).unwrap();
    std::fs::create_dir_all(root.join("child")).unwrap();
    write_package(
        &root.join("parent"),
        PARENT,
        PARENT_PARAMS,
        &[("child-params.yaml", CHILD_PARAMS)],
    );
    write_package(
        &root.join("child"),
        CHILD,
        CHILD_PARAMS_YAML,
        &[("cm.yaml", CHILD_CM)],
    );
    let pkg = kudo_package::Package::load_dir(&root.join("parent")).expect("parent package");
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();

    let on = params(&[("SIZE", "5")]);
    let out = engine::run_plan(
        &cluster,
        request(&pkg, "p", "default", &on, "deploy"),
        &cancel,
    )
    .await
    .expect("parent deploy");
    let child = instance_ref("default", "p-child");
    assert_eq!(out.inventory, vec![child.clone()]);
    let c = cluster.get(&child).await.unwrap().expect("child instance");
    let parent = cluster
        .get(&instance_ref("default", "p"))
        .await
        .unwrap()
        .expect("parent instance");
    assert_eq!(
        c.pointer("/metadata/ownerReferences/0/uid"),
        parent.pointer("/metadata/uid")
    );
    assert_eq!(
        c.pointer("/status/planStatus/deploy/status"),
        Some(&Value::from("COMPLETE"))
    );
    let cm = oref("v1", "ConfigMap", Some("default"), "p-child-cm");
    let data = cluster.get(&cm).await.unwrap().expect("child object");
    assert_eq!(
        data.pointer("/data/greeting"),
        Some(&Value::from("hello-p"))
    );
    assert_eq!(data.pointer("/data/size"), Some(&Value::from("5")));
    assert!(
        engine::load_operator(&cluster, "default", "child-1.0.0")
            .await
            .unwrap()
            .is_some()
    );

    let off = params(&[("WITH_CHILD", "false")]);
    let out = engine::run_plan(
        &cluster,
        RunRequest {
            previous_inventory: &out.inventory,
            ..request(&pkg, "p", "default", &off, "deploy")
        },
        &cancel,
    )
    .await
    .expect("parent deploy without the dependency");
    assert!(out.inventory.is_empty(), "{:?}", out.inventory);
    assert!(cluster.get(&child).await.unwrap().is_none());
    assert!(cluster.get(&cm).await.unwrap().is_none());
}

const REPO_PARENT: &str = r#"
name: parent
operatorVersion: 0.1.0
tasks:
  - name: middle
    kind: KudoOperator
    spec:
      package: middle
      operatorVersion: ">=1.0.0 <2.0.0"
      parameterFile: child-params.yaml
      enablingParameter: WITH_CHILD
plans:
  deploy:
    strategy: serial
    phases:
      - name: deps
        strategy: serial
        steps:
          - name: middle
            tasks: [middle]
"#;

const MIDDLE: &str = r#"
name: middle
operatorVersion: 1.2.0
tasks:
  - name: leaf
    kind: KudoOperator
    spec:
      package: https://example.invalid/leaf.tgz
  - name: cm
    kind: Apply
    spec:
      resources: [cm.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: leaf
            tasks: [leaf]
          - name: cm
            tasks: [cm]
"#;

const LEAF: &str = r#"
name: leaf
operatorVersion: 3.0.0
tasks:
  - name: cm
    kind: Apply
    spec:
      resources: [cm.yaml]
  - name: boom
    kind: Dummy
    spec:
      wantErr: true
      fatal: true
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: cm
            tasks: [cm]
  broken:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: boom
            tasks: [boom]
"#;

const LEAF_CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\n";

/// Repository and URL dependencies run from the packages the caller resolved; a
/// disabled subtree goes away whole, and a FATAL grandchild makes the parent FATAL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolved_dependency_tree_runs_and_its_subtree_is_disabled() {
    let root = temp_dir("resolved-deps");
    for (dir, op, params, templates) in [
        (
            "parent",
            REPO_PARENT,
            PARENT_PARAMS,
            vec![("child-params.yaml", CHILD_PARAMS)],
        ),
        (
            "middle",
            MIDDLE,
            CHILD_PARAMS_YAML,
            vec![("cm.yaml", CHILD_CM)],
        ),
        ("leaf", LEAF, "", vec![("cm.yaml", LEAF_CM)]),
    ] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
        write_package(&root.join(dir), op, params, &templates);
    }
    let load = |d: &str| kudo_package::Package::load_dir(&root.join(d)).expect(d);
    let (parent, middle, mut leaf) = (load("parent"), load("middle"), load("leaf"));
    let mut deps = engine::DependencyPackages::new();
    deps.insert(&parent.operator_version_name(), "middle", middle.clone());
    deps.insert(&middle.operator_version_name(), "leaf", leaf.clone());
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let run = |parameters: &std::collections::BTreeMap<String, String>,
               deps: &engine::DependencyPackages| {
        let (cluster, cancel, parent, parameters, deps) =
            (&cluster, &cancel, &parent, parameters.clone(), deps.clone());
        async move {
            engine::run_plan(
                cluster,
                RunRequest {
                    dependencies: Some(&deps),
                    ..request(parent, "p", "default", &parameters, "deploy")
                },
                cancel,
            )
            .await
        }
    };

    let err = engine::run_plan(
        &cluster,
        request(&parent, "p", "default", &params(&[]), "deploy"),
        &cancel,
    )
    .await
    .expect_err("a repository dependency needs a resolved package");
    assert!(
        err.fatal && err.message.contains("no resolved package"),
        "{err}"
    );

    run(&params(&[]), &deps).await.expect("tree deploys");
    for (name, cm) in [
        ("p-middle", "p-middle-cm"),
        ("p-middle-leaf", "p-middle-leaf-cm"),
    ] {
        let i = cluster
            .get(&instance_ref("default", name))
            .await
            .unwrap()
            .expect(name);
        assert_eq!(
            i.pointer("/status/planStatus/deploy/status"),
            Some(&Value::from("COMPLETE")),
            "{name}"
        );
        let cm = oref("v1", "ConfigMap", Some("default"), cm);
        assert!(cluster.get(&cm).await.unwrap().is_some(), "{cm}");
    }

    // A new middle version renders another ConfigMap: the old one is pruned. (A child
    // whose version and parameters stay the same is left alone, so the version must
    // really change.)
    let mut renamed = middle.clone();
    renamed.operator.operator_version = "1.3.0".into();
    renamed
        .templates
        .insert("cm.yaml".into(), CHILD_CM.replace("-cm\n", "-cm2\n"));
    let mut swapped = deps.clone();
    swapped.insert(&renamed.operator_version_name(), "leaf", leaf.clone());
    swapped.insert(&parent.operator_version_name(), "middle", renamed);
    run(&params(&[]), &swapped).await.expect("new middle");
    let old_cm = oref("v1", "ConfigMap", Some("default"), "p-middle-cm");
    let new_cm = oref("v1", "ConfigMap", Some("default"), "p-middle-cm2");
    assert!(cluster.get(&old_cm).await.unwrap().is_none(), "pruned");
    assert!(cluster.get(&new_cm).await.unwrap().is_some());
    assert!(
        cluster
            .get(&oref(
                "v1",
                "ConfigMap",
                Some("default"),
                "p-middle-leaf-cm"
            ))
            .await
            .unwrap()
            .is_some(),
        "the leaf's objects are not the middle's to prune"
    );

    // Running the same tree again touches neither child.
    let rv = |obj: Option<Value>| {
        obj.and_then(|o| o.pointer("/metadata/resourceVersion").cloned())
            .expect("an object with a resourceVersion")
    };
    let (middle_ref, leaf_ref) = (
        instance_ref("default", "p-middle"),
        instance_ref("default", "p-middle-leaf"),
    );
    let before = (
        rv(cluster.get(&middle_ref).await.unwrap()),
        rv(cluster.get(&leaf_ref).await.unwrap()),
    );
    run(&params(&[]), &swapped).await.expect("same tree");
    let after = (
        rv(cluster.get(&middle_ref).await.unwrap()),
        rv(cluster.get(&leaf_ref).await.unwrap()),
    );
    assert_eq!(before, after, "settled children are left alone");

    // A new leaf version under an unchanged middle still reaches the leaf.
    let mut newer_leaf = leaf.clone();
    newer_leaf.operator.operator_version = "3.1.0".into();
    let middle_ov = swapped
        .get(&parent.operator_version_name(), "middle")
        .map(|m| m.operator_version_name())
        .expect("middle in the tree");
    swapped.insert(&middle_ov, "leaf", newer_leaf);
    run(&params(&[]), &swapped).await.expect("new leaf");
    let leaf_now = cluster.get(&leaf_ref).await.unwrap().expect("leaf");
    assert_eq!(
        leaf_now.pointer("/spec/operatorVersion/name"),
        Some(&Value::from("leaf-3.1.0"))
    );
    assert_eq!(
        leaf_now.pointer("/status/planStatus/deploy/status"),
        Some(&Value::from("COMPLETE"))
    );

    run(&params(&[("WITH_CHILD", "false")]), &deps)
        .await
        .expect("tree without the subtree");
    for name in ["p-middle", "p-middle-leaf"] {
        assert!(
            cluster
                .get(&instance_ref("default", name))
                .await
                .unwrap()
                .is_none(),
            "{name}"
        );
    }
    let leaf_cm = oref("v1", "ConfigMap", Some("default"), "p-middle-leaf-cm");
    assert!(cluster.get(&leaf_cm).await.unwrap().is_none());

    // The leaf's deploy plan now fails fatally: the whole chain reports FATAL.
    if let Some(plan) = leaf.operator.plans.remove("broken") {
        leaf.operator.plans.insert("deploy".into(), plan);
    }
    deps.insert(&middle.operator_version_name(), "leaf", leaf);
    let err = run(&params(&[]), &deps)
        .await
        .expect_err("fatal grandchild");
    assert!(err.fatal, "{err}");
    assert!(err.message.contains("p-middle-leaf"), "{err}");
    assert_eq!(
        err.to_string().matches("FATAL_ERROR").count(),
        1,
        "the verdict is stated once: {err}"
    );
    let p = cluster
        .get(&instance_ref("default", "p"))
        .await
        .unwrap()
        .expect("parent");
    assert_eq!(
        p.pointer("/status/planStatus/deploy/status"),
        Some(&Value::from("FATAL_ERROR"))
    );
}

const CLEANUP_PARENT: &str = r#"
name: tidy
operatorVersion: 0.1.0
tasks:
  - name: noop
    kind: Dummy
    spec:
      done: true
  - name: leaf
    kind: KudoOperator
    spec:
      package: https://example.invalid/leaf.tgz
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: noop
            tasks: [noop]
  cleanup:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: leaf
            tasks: [leaf]
"#;

/// A cleanup plan's KudoOperator task runs a URL dependency from the tree the caller
/// resolved, as the other plans do; without the tree it cannot, and nothing is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_runs_dependencies_from_the_resolved_tree() {
    let pkg = package(CLEANUP_PARENT, "", &[]);
    let leaf = package(LEAF, "", &[("cm.yaml", LEAF_CM)]);
    let mut deps = engine::DependencyPackages::new();
    deps.insert(&pkg.operator_version_name(), "leaf", leaf);
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let none = params(&[]);
    let out = engine::run_plan(
        &cluster,
        RunRequest {
            dependencies: Some(&deps),
            ..request(&pkg, "c", "default", &none, "deploy")
        },
        &cancel,
    )
    .await
    .expect("deploy");
    let cleanup = |dependencies| Cleanup {
        dependencies,
        package: &pkg,
        parameters: &none,
        render_seed: None,
    };

    let err = engine::uninstall_instance(
        &cluster,
        "default",
        "c",
        &out.inventory,
        Some(cleanup(None)),
        engine::CrdDeletion::default(),
        &cancel,
    )
    .await
    .expect_err("a URL dependency needs the resolved tree");
    assert!(
        err.plan.as_deref() == Some("cleanup") && err.message.contains("no resolved package"),
        "{err}"
    );
    let instance = instance_ref("default", "c");
    assert!(cluster.get(&instance).await.unwrap().is_some());

    engine::uninstall_instance(
        &cluster,
        "default",
        "c",
        &out.inventory,
        Some(cleanup(Some(&deps))),
        engine::CrdDeletion::default(),
        &cancel,
    )
    .await
    .expect("cleanup runs the dependency from the tree");
    for gone in [
        instance,
        instance_ref("default", "c-leaf"),
        oref("v1", "ConfigMap", Some("default"), "c-leaf-cm"),
    ] {
        assert!(
            cluster.get(&gone).await.unwrap().is_none(),
            "{gone} removed"
        );
    }
}
