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
