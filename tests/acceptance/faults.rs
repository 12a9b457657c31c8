//! Failures only the stand-in can stage on demand (kube-sim's annotations make a
//! workload never become ready, or a Job fail). Skipped against a real cluster.

use crate::harness::TestContext;
use crate::skip;

/// The quickstart example with one template replaced and the instance's create
/// timeout set.
fn quickstart_with_template(
    ctx: &TestContext,
    template: &str,
    content: &str,
    create_timeout: &str,
) {
    ctx.use_example("quickstart");
    ctx.write(&format!("operator/templates/{template}"), content);
    let main_tf = std::fs::read_to_string(ctx.workdir.join("main.tf")).expect("read main.tf");
    let main_tf = main_tf.replace("create = \"5m\"", &format!("create = \"{create_timeout}\""));
    ctx.write("main.tf", &main_tf);
}

#[test]
fn workload_that_never_gets_ready_hits_the_create_timeout() {
    if crate::harness::cluster::real_kubeconfig().is_some() {
        skip!("needs kube-sim's never-ready annotation");
    }
    let ctx = TestContext::new("fault-timeout");
    quickstart_with_template(
        &ctx,
        "deployment.yaml",
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}
  annotations:
    kube-sim.kudo.dev/never-ready: "true"
spec:
  replicas: 1
  selector:
    matchLabels:
      app: webapp
  template:
    metadata:
      labels:
        app: webapp
    spec:
      containers:
        - name: nginx
          image: nginx
"#,
        "3s",
    );
    let started = std::time::Instant::now();
    let run = ctx.tf.apply(&[]).assert_clean_error();
    // The 3s budget is honoured (generous bound for a loaded 2-core machine), and the
    // message says what was still not ready.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "apply took {:?} despite a 3s timeout",
        started.elapsed()
    );
    assert!(
        run.stderr.contains("3s"),
        "error should state the limit:\n{run}"
    );
    // Which object held things up is what the user needs to look at next.
    assert!(
        run.stderr.contains("Deployment") && run.stderr.contains("web"),
        "error should name the object that is not ready:\n{run}"
    );
}

#[test]
fn failed_job_fails_the_plan_and_names_the_job() {
    if crate::harness::cluster::real_kubeconfig().is_some() {
        skip!("needs kube-sim's job-fail annotation");
    }
    let ctx = TestContext::new("fault-job");
    // A Job in the first phase; KUDO treats a failed Job as terminal (FATAL_ERROR).
    quickstart_with_template(
        &ctx,
        "configmap.yaml",
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Name }}-setup
  annotations:
    kube-sim.kudo.dev/job-fail: "true"
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: setup
          image: busybox
          command: ["false"]
"#,
        "2m",
    );
    let run = ctx.tf.apply(&[]).assert_clean_error();
    assert!(run.stderr.contains("web-setup"), "{run}");
    // The app phase never ran: the plan stops at the failed step.
    assert!(
        ctx.kube()
            .get("apps/v1", "Deployment", Some(&ctx.namespace), "web")
            .is_none(),
        "the app phase must not run after a failed Job"
    );
}

/// The quickstart instance finished its plan, and destroy leaves nothing labelled with
/// it: how every fault scenario must end once the fault is gone.
fn assert_complete_then_destroy_cleanly(ctx: &TestContext) {
    assert_eq!(
        ctx.tf.state().attr_str("kudo_instance.web", "status"),
        "COMPLETE"
    );
    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    let left = ctx.instance_objects("web");
    assert!(left.is_empty(), "destroy left objects behind: {left:?}");
}

#[test]
fn server_errors_on_one_object_fail_the_apply_and_the_next_apply_finishes() {
    let ctx = TestContext::new("fault-503");
    let Some(sim) = ctx.sim() else {
        skip!("needs kube-sim's fault injection");
    };
    ctx.use_example("quickstart");
    // The Service is the third object the deploy plan applies (ConfigMap, Deployment,
    // Service). More 503s than the engine's retry budget make the failure reach the user.
    sim.add_faults([kube_sim::FaultRule {
        verb: Some("patch".into()),
        resource: Some("services".into()),
        namespace: Some(ctx.namespace.clone()),
        name: Some("web".into()),
        status: Some(503),
        count: Some(50),
        ..Default::default()
    }]);
    let run = ctx.tf.apply(&[]).assert_clean_error();
    assert!(
        run.stderr.contains("Service") && run.stderr.contains("web"),
        "the diagnostic names the object:\n{run}"
    );
    // The state records the instance, so Terraform knows what to finish or remove.
    let state = ctx.tf.state();
    let status = state.attr_str("kudo_instance.web", "status");
    assert!(status.contains("ERROR"), "status {status:?}");
    let before = ctx.instance_objects("web");
    assert!(
        before.iter().any(|o| o.kind == "ConfigMap"),
        "what the plan applied before the failure exists: {before:?}"
    );

    sim.clear_faults();
    ctx.tf.apply(&[]).assert_success();
    let after = ctx.instance_objects("web");
    assert_eq!(
        after.iter().filter(|o| o.kind == "Service").count(),
        1,
        "exactly one Service, no duplicates: {after:?}"
    );
    assert_complete_then_destroy_cleanly(&ctx);
}

#[test]
fn too_many_requests_are_retried_after_the_time_the_server_asks_for() {
    let ctx = TestContext::new("fault-429");
    let Some(sim) = ctx.sim() else {
        skip!("needs kube-sim's fault injection");
    };
    ctx.use_example("quickstart");
    sim.add_faults([kube_sim::FaultRule {
        verb: Some("patch".into()),
        resource: Some("configmaps".into()),
        namespace: Some(ctx.namespace.clone()),
        status: Some(429),
        retry_after_seconds: Some(1),
        count: Some(2),
        ..Default::default()
    }]);
    let run = ctx.tf.run_with_env(
        &["apply", "-input=false", "-no-color", "-auto-approve"],
        &[("TF_LOG_PROVIDER", "DEBUG")],
    );
    let run = run.assert_success();
    assert!(sim.faults().is_empty(), "both 429s were answered");
    // The provider waited as long as the server's Retry-After said.
    assert!(
        run.stderr.contains("wait_ms=1000"),
        "a retry honouring Retry-After (1 s) is logged:\n{}",
        run.stderr
            .lines()
            .filter(|l| l.contains("retrying"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_complete_then_destroy_cleanly(&ctx);
}

/// The engine waits for health by polling (not by watching), so the stream a watch
/// would hold is a series of reads here: dropping them mid-wait must not fail the plan.
#[test]
fn connections_dropped_while_waiting_for_health_are_retried() {
    let ctx = TestContext::new("fault-drop");
    let Some(sim) = ctx.sim() else {
        skip!("needs kube-sim's fault injection");
    };
    ctx.use_example("quickstart");
    sim.add_faults([kube_sim::FaultRule {
        verb: Some("get".into()),
        resource: Some("deployments".into()),
        namespace: Some(ctx.namespace.clone()),
        name: Some("web".into()),
        drop: true,
        count: Some(3),
        ..Default::default()
    }]);
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert!(
        sim.faults().is_empty(),
        "all three reads were dropped and retried"
    );
    assert_complete_then_destroy_cleanly(&ctx);
}
