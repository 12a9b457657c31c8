//! Failing and never-ready steps: FATAL_ERROR, where it happened, and the status written.

use crate::engine::instance_ref;
use crate::scenarios::common::*;
use serde_json::Value;

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
    let err = run(&cluster, request(&pkg, "f", "default", &none, "deploy"))
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
