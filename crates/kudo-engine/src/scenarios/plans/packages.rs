//! The fixture packages (first-operator, zookeeper, cowsay, kafka) deployed, previewed and rendered.

use crate::cluster::Cluster;
use crate::engine::{
    self, LABEL_HERITAGE, LABEL_INSTANCE, LABEL_OPERATOR, RunRequest, instance_ref,
};
use crate::scenarios::common::*;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

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
    let loaded = engine::load_operator(&cluster, "fo", &pkg.operator_version_name(), None)
        .await
        .expect("load operator")
        .expect("operator version exists");
    assert_eq!(loaded.operator.name, "first-operator");
    assert!(
        engine::load_operator(&cluster, "fo", "nope-1.0.0", None)
            .await
            .unwrap()
            .is_none()
    );

    let values = params(&[("replicas", "3")]);
    let out = run(&cluster, request(&pkg, "fo1", "fo", &values, "deploy"))
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
    let out = run(&cluster, request(&pkg, "zk1", "zk", &values, "deploy"))
        .await
        .expect("zookeeper deploy plan");
    assert_eq!(out.plan_status["status"], "COMPLETE");
    // What a plan shows before the apply (`kudo_instance.plan_status`), which Terraform
    // holds the apply to: the successful run's status but for its time and uid.
    let mut status: kudo_plan::PlanStatus =
        serde_json::from_value(out.plan_status.clone()).expect("plan status");
    assert!(status.last_updated_timestamp.take().is_some());
    status.uid.clear();
    let deploy = pkg.operator.plans.get("deploy").expect("deploy plan");
    assert_eq!(status, kudo_plan::PlanStatus::completed("deploy", deploy));

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
    let crd = open_crd(
        "policy",
        "v1beta1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
    );
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
    let answer = planned[0].dry_run.as_ref().expect("the dry-run's answer");
    assert_eq!(answer.pointer("/spec/replicas"), Some(&Value::from(4)));
    assert_eq!(label(answer, LABEL_INSTANCE), Some("pv"));
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
    assert!(err.fatal && err.to_string().contains("nope"), "{err}");
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
    assert!(err.fatal && err.to_string().contains("nope"), "{err}");
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
    let out = run(&cluster, request(&pkg, "cow", "default", &none, "deploy"))
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
    let out = run(&cluster, request(&pkg, "k", "kafka", &none, "deploy"))
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
