//! Failures only the stand-in can stage on demand (kube-sim's annotations make a
//! workload never become ready, or a Job fail). Skipped against a real cluster.

use crate::harness::{PREAMBLE, TestContext};
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
    // `plan_status` tells the same story without kubectl: the failed step, its message.
    let state = ctx.tf.state();
    let tree = state
        .resource("kudo_instance.web")
        .map(|r| r["plan_status"].clone())
        .unwrap_or_default();
    assert_eq!(tree["name"], "deploy", "{tree:#}");
    assert_eq!(tree["status"], "FATAL_ERROR", "{tree:#}");
    let failed: Vec<&serde_json::Value> = tree["phases"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|ph| ph["steps"].as_array().into_iter().flatten())
        .filter(|st| st["status"] == "FATAL_ERROR")
        .collect();
    assert_eq!(failed.len(), 1, "one failed step: {tree:#}");
    let message = failed[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("web-setup"),
        "the step's message names the Job: {tree:#}"
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

/// The engine waits for health by watching the object by name from the version its
/// write was answered, and after a failed watch by a list and a watch from there.
/// Dropping the watch (every wait that does not end at once opens one) three times
/// mid-wait must not fail the plan.
#[test]
fn connections_dropped_while_waiting_for_health_are_retried() {
    let ctx = TestContext::new("fault-drop");
    let Some(sim) = ctx.sim() else {
        skip!("needs kube-sim's fault injection");
    };
    ctx.use_example("quickstart");
    sim.add_faults([kube_sim::FaultRule {
        verb: Some("watch".into()),
        resource: Some("deployments".into()),
        namespace: Some(ctx.namespace.clone()),
        drop: true,
        count: Some(3),
        ..Default::default()
    }]);
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert!(
        sim.faults().is_empty(),
        "all three watches were dropped and retried"
    );
    assert_complete_then_destroy_cleanly(&ctx);
}

/// Share of requests each kind of fault hits in [`converges_through_faults`]. Rules are
/// tried in order and the first that fires wins, so the five together fault
/// 1 - (1 - p)^5 of the requests: about 20.6% at p = 4.5%.
const FAULT_SHARE_EACH: f64 = 0.045;
/// Injected latency: long enough to reorder concurrent requests, short enough that the
/// test takes minutes, not tens of minutes (the measured fault path had 2 s).
const FAULT_LATENCY_MS: u64 = 300;

/// Every request, discovery included (`/api`, `/apis`, `/apis/<g>/<v>` match resource
/// `discovery`), may get a 503, a 429 asking to retry after 1 s, a 500, a dropped
/// connection, or a delay.
fn fault_mix() -> Vec<kube_sim::FaultRule> {
    let rule = |f: fn(&mut kube_sim::FaultRule)| {
        let mut r = kube_sim::FaultRule {
            probability: Some(FAULT_SHARE_EACH),
            ..Default::default()
        };
        f(&mut r);
        r
    };
    vec![
        rule(|r| r.status = Some(503)),
        rule(|r| {
            r.status = Some(429);
            r.retry_after_seconds = Some(1);
        }),
        rule(|r| r.status = Some(500)),
        rule(|r| r.drop = true),
        rule(|r| r.latency_ms = Some(FAULT_LATENCY_MS)),
    ]
}

/// zookeeper and kafka, each from its own `kudo_operator`, in the test namespace.
pub(crate) fn zookeeper_and_kafka(zk_cpus: &str, mirror_maker: bool) -> String {
    let zk = crate::harness::fixture_operator("zookeeper").expect("zookeeper fixture");
    let kafka = crate::harness::fixture_operator("kafka").expect("kafka fixture");
    format!(
        r#"{PREAMBLE}
resource "kudo_operator" "zookeeper" {{
  package   = {zk:?}
  namespace = var.namespace
}}

resource "kudo_instance" "zk" {{
  name      = "zk"
  namespace = var.namespace
  operator  = kudo_operator.zookeeper.id
  # The destroy below must leave nothing, the StatefulSets' volume claims included.
  delete_volumes_on_destroy = true
  parameters = {{
    NODE_COUNT = "3"
    CPUS       = {zk_cpus:?}
  }}
}}

resource "kudo_operator" "kafka" {{
  package   = {kafka:?}
  namespace = var.namespace
}}

resource "kudo_instance" "kafka" {{
  name      = "kafka"
  namespace = var.namespace
  operator  = kudo_operator.kafka.id
  delete_volumes_on_destroy = true
  parameters = {{
    ZOOKEEPER_URI        = "zk-zookeeper-0.zk-hs:2181,zk-zookeeper-1.zk-hs:2181,zk-zookeeper-2.zk-hs:2181"
    MIRROR_MAKER_ENABLED = "{mirror_maker}"
  }}
}}
"#,
        zk = zk.display().to_string(),
        kafka = kafka.display().to_string(),
    )
}

/// What one Terraform step took through the faults.
struct Step {
    name: &'static str,
    attempts: usize,
    seconds: f64,
    stats: kube_sim::RequestStats,
}

/// Runs `terraform <args>` with the fault mix active until it succeeds, at most three
/// times, and returns how many runs it took. No run may crash or lose the plugin.
fn converge(ctx: &TestContext, sim: &kube_sim::KubeSim, name: &'static str, args: &[&str]) -> Step {
    const RUNS: usize = 3;
    let started = std::time::Instant::now();
    let mut stats = kube_sim::RequestStats::default();
    let mut failures = Vec::new();
    for attempt in 1..=RUNS {
        sim.add_faults(fault_mix());
        let before = sim.request_stats();
        let run = ctx.tf.run(args);
        let after = sim.request_stats();
        // Faults apply to the provider's runs only: the assertions' own client reads
        // the cluster as it is.
        sim.clear_faults();
        stats.requests += after.requests - before.requests;
        stats.faulted += after.faulted - before.faulted;
        stats.failed += after.failed - before.failed;
        stats.discovery_requests += after.discovery_requests - before.discovery_requests;
        stats.discovery_faulted += after.discovery_faulted - before.discovery_faulted;
        let run = run.assert_no_crash();
        assert!(
            !run.output().contains("Plugin did not respond"),
            "{name}: the provider stopped answering:\n{run}"
        );
        if run.success() {
            let step = Step {
                name,
                attempts: attempt,
                seconds: started.elapsed().as_secs_f64(),
                stats,
            };
            eprintln!(
                "[faults] {name}: {} run(s), {:.1} s, {} requests, {} faulted ({:.1}%), {} failed, discovery {}/{} faulted",
                step.attempts,
                step.seconds,
                stats.requests,
                stats.faulted,
                100.0 * stats.faulted as f64 / stats.requests.max(1) as f64,
                stats.failed,
                stats.discovery_faulted,
                stats.discovery_requests,
            );
            return step;
        }
        eprintln!("[faults] {name}: run {attempt} failed:\n{}", run.stderr);
        failures.push(run.stderr);
    }
    panic!(
        "{name} did not converge within {RUNS} runs through the faults:\n{}",
        failures.join("\n----\n")
    );
}

/// Kinds the workload simulator (a real cluster's controllers) makes from the objects the
/// provider applies; they carry the instance label through pod and claim templates
/// but are not the provider's to record.
const CONTROLLER_MADE: [&str; 4] = [
    "Pod",
    "PersistentVolumeClaim",
    "ReplicaSet",
    "ControllerRevision",
];

/// The instance's objects in the cluster are exactly those its state records: none
/// missing, none extra, none twice.
#[track_caller]
fn cluster_matches_state(ctx: &TestContext, resource: &str, instance: &str) {
    let state = ctx.tf.state();
    let inst = state
        .resource(resource)
        .unwrap_or_else(|| panic!("no {resource} in state"));
    assert_eq!(inst["status"], "COMPLETE", "{inst:#}");
    let recorded: Vec<(String, String)> = crate::harness::managed_objects(inst)
        .into_iter()
        .filter(|o| !o["namespace"].as_str().unwrap_or_default().is_empty())
        .map(|o| {
            (
                o["kind"].as_str().unwrap_or_default().to_string(),
                o["name"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let unique: std::collections::BTreeSet<_> = recorded.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        recorded.len(),
        "{resource} records an object twice: {recorded:?}"
    );
    let in_cluster: std::collections::BTreeSet<(String, String)> = ctx
        .instance_objects(instance)
        .into_iter()
        .filter(|o| !CONTROLLER_MADE.contains(&o.kind.as_str()))
        .map(|o| (o.kind, o.name))
        .collect();
    assert_eq!(
        in_cluster, unique,
        "{resource}: the cluster (left) holds other objects than the state records (right)"
    );
}

/// Apply, update and destroy of zookeeper and kafka with a fifth of all requests
/// faulted, discovery included: each step converges within three runs, the cluster
/// holds exactly what the state records, and destroy leaves nothing.
#[test]
fn converges_through_faults() {
    if crate::harness::cluster::real_kubeconfig().is_some() {
        skip!("needs kube-sim's fault injection");
    }
    if crate::harness::fixture_operator("zookeeper").is_none()
        || crate::harness::fixture_operator("kafka").is_none()
    {
        skip!("../shared/fixtures/operators zookeeper or kafka not found");
    }
    let ctx = TestContext::new("fault-mix");
    let Some(sim) = ctx.sim() else {
        skip!("needs kube-sim's fault injection");
    };
    // kafka's deploy plan pipes its TLS files out of a pod; kube-sim serves them.
    for path in ["/tmp/tls.key", "/tmp/tls.crt"] {
        sim.add_exec_file(kube_sim::ExecFile {
            namespace: ctx.namespace.clone(),
            pod: None,
            selector: None,
            path: path.to_string(),
            content: String::new(),
        });
    }
    let ns = ctx.namespace.clone();
    let apply = ["apply", "-input=false", "-no-color", "-auto-approve"];
    let mut steps = Vec::new();

    ctx.write("main.tf", &zookeeper_and_kafka("250m", false));
    steps.push(converge(&ctx, sim, "apply", &apply));
    cluster_matches_state(&ctx, "kudo_instance.zk", "zk");
    cluster_matches_state(&ctx, "kudo_instance.kafka", "kafka");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    ctx.write("main.tf", &zookeeper_and_kafka("300m", true));
    steps.push(converge(&ctx, sim, "update", &apply));
    cluster_matches_state(&ctx, "kudo_instance.zk", "zk");
    cluster_matches_state(&ctx, "kudo_instance.kafka", "kafka");
    let sts = ctx
        .kube()
        .must_get("apps/v1", "StatefulSet", Some(&ns), "zk-zookeeper");
    assert_eq!(
        sts["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"], "300m",
        "{sts:#}"
    );
    ctx.kube()
        .must_get("apps/v1", "Deployment", Some(&ns), "kafka-mirror-maker");

    steps.push(converge(
        &ctx,
        sim,
        "destroy",
        &["destroy", "-input=false", "-no-color", "-auto-approve"],
    ));
    ctx.mark_cleaned();
    assert!(ctx.tf.state().is_empty(), "destroy emptied the state");
    for instance in ["zk", "kafka"] {
        let left = ctx.instance_objects(instance);
        assert!(left.is_empty(), "{instance}: left after destroy: {left:#?}");
        assert!(ctx.kube().instance(&ns, instance).is_none());
        let cluster_scoped = ctx
            .kube()
            .list_cluster(&format!("kudo.dev/instance={instance}"));
        assert!(cluster_scoped.is_empty(), "{cluster_scoped:#?}");
    }
    let operators = ctx.kube().list_namespace(&ns, Some("kudo.dev/operator"));
    assert!(operators.is_empty(), "left after destroy: {operators:#?}");
    for (kind, name) in [("Operator", "zookeeper"), ("Operator", "kafka")] {
        assert!(
            ctx.kube()
                .get("kudo.dev/v1beta1", kind, Some(&ns), name)
                .is_none(),
            "{kind} {name} left after destroy"
        );
    }

    let requests: u64 = steps.iter().map(|s| s.stats.requests).sum();
    let faulted: u64 = steps.iter().map(|s| s.stats.faulted).sum();
    let discovery_faulted: u64 = steps.iter().map(|s| s.stats.discovery_faulted).sum();
    let share = faulted as f64 / requests.max(1) as f64;
    eprintln!(
        "[faults] total: {requests} requests, {faulted} faulted ({:.1}%); runs: {}",
        100.0 * share,
        steps
            .iter()
            .map(|s| format!("{} {} ({:.0} s)", s.name, s.attempts, s.seconds))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(
        share >= 0.15,
        "only {:.1}% of requests were faulted",
        100.0 * share
    );
    assert!(discovery_faulted > 0, "discovery requests were faulted too");
}
