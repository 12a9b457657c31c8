//! A Pipe task whose pod fails: the error names the container that failed, its exit
//! code and reason, and the last lines of its log, read before the pod is removed (as
//! kudobuilder/operators' cowsay fails where its init container cannot download the
//! page). On kube-sim the container's end is registered (`ContainerExit`); on a real
//! cluster (`KUDO_TEST_KUBECONFIG`) busybox's wget really fails, with the same words:
//! `.invalid` never resolves.

use crate::harness::TestContext;
use crate::semantics::config;
use crate::skip;

const OPERATOR: &str = r#"apiVersion: kudo.dev/v1beta1
name: fetcher
operatorVersion: 0.1.0
kubernetesVersion: 1.16.0
maintainers:
  - name: tests
    email: tests@example.com
url: https://example.com/fetcher
tasks:
  - name: genwww
    kind: Pipe
    spec:
      pod: pipe-pod.yaml
      pipe:
        - file: /tmp/index.html
          kind: ConfigMap
          key: indexHtml
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: genfiles
            tasks:
              - genwww
"#;

/// cowsay's pipe pod, with a host that cannot resolve anywhere.
const PIPE_POD: &str = r#"apiVersion: v1
kind: Pod
spec:
  volumes:
    - name: shared-data
      emptyDir: {}
  initContainers:
    - name: fetch
      image: busybox:1.36
      command: ["/bin/sh", "-c"]
      args:
        - echo "fetching the page"; wget -O /tmp/index.html 'http://cowsay.invalid/say?message=hi'
      volumeMounts:
        - name: shared-data
          mountPath: /tmp
"#;

#[test]
fn a_failed_init_container_is_named_with_its_exit_and_log() {
    let ctx = TestContext::new("pipe-init-fails");
    if !ctx.runs_pods() {
        ctx.mark_cleaned();
        skip!(
            "no node: pods never run here, so a Pipe task cannot (run it on a cluster with a node)"
        );
    }
    ctx.write("fetcher/operator.yaml", OPERATOR);
    ctx.write("fetcher/templates/pipe-pod.yaml", PIPE_POD);
    if let Some(sim) = ctx.sim() {
        sim.add_container_exit(kube_sim::ContainerExit {
            namespace: ctx.namespace.clone(),
            pod: None,
            selector: Some("kudo.dev/instance=fetch".into()),
            container: "fetch".into(),
            exit_code: 1,
            reason: None,
            log: "fetching the page\nwget: bad address 'cowsay.invalid'\n".into(),
        });
    }
    let package = ctx.workdir.join("fetcher").display().to_string();
    ctx.write("main.tf", &config(&package, "fetch", &[], &[]));
    let run = ctx.tf.apply(&[]).assert_clean_error();
    // Terraform wraps long lines; the log's own lines stay as they are.
    let text = run.flat_output();
    for says in [
        "task \"genwww\"",
        "pod failed: init container \"fetch\" exited with code 1 (Error)",
        "last lines of the log of container \"fetch\":",
    ] {
        assert!(text.contains(says), "the error says {says:?}:\n{run}");
    }
    for line in [
        "\n    fetching the page\n",
        "\n    wget: bad address 'cowsay.invalid'",
    ] {
        assert!(run.stderr.contains(line), "the log line {line:?}:\n{run}");
    }
    assert!(!text.contains("no reason given"), "{run}");
    // The pod is scaffolding: removed (and waited for) after its log was read.
    let pods: Vec<_> = ctx
        .kube()
        .list_namespace(&ctx.namespace, Some("kudo.dev/instance=fetch"))
        .into_iter()
        .filter(|o| o.kind == "Pod")
        .collect();
    assert!(pods.is_empty(), "the pipe pod is removed: {pods:?}");
}

/// A Pipe pod no node can run (issue #51: Kafka's `deploy` on a cluster whose pods
/// cannot be scheduled): the error says the pod was never scheduled, with the
/// scheduler's reasons, gives advice about the cluster, and is not a FATAL_ERROR
/// ("fix the package"). kube-sim's scheduler leaves a pod whose `nodeSelector` its one
/// node does not match Pending with `PodScheduled` False, reason `Unschedulable`, as
/// kube-scheduler does; here the pod asks for an arm64 node the cluster does not have.
#[test]
fn a_pipe_pod_no_node_can_run_is_reported_as_unschedulable() {
    let ctx = TestContext::new("pipe-unschedulable");
    if ctx.sim().is_none() {
        ctx.mark_cleaned();
        skip!("needs kube-sim's scheduler: a real cluster may have an arm64 node");
    }
    ctx.write("fetcher/operator.yaml", OPERATOR);
    ctx.write(
        "fetcher/templates/pipe-pod.yaml",
        &format!("{PIPE_POD}  nodeSelector:\n    kubernetes.io/arch: arm64\n"),
    );
    let package = ctx.workdir.join("fetcher").display().to_string();
    let main_tf = config(&package, "fetch", &[], &[]).replace(
        "operator  = kudo_operator.this.id\n",
        "operator  = kudo_operator.this.id\n  timeouts {\n    create = \"6s\"\n  }\n",
    );
    assert!(main_tf.contains("create = \"6s\""), "{main_tf}");
    ctx.write("main.tf", &main_tf);
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let text = run.flat_output();
    for says in [
        "task \"genwww\"",
        "cancelled while waiting for the pod to be scheduled: no node of the cluster can run it (Unschedulable: 0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
        "[ERROR: may pass when run again]",
        "This is about the cluster, not the package: the scheduler found no node Pod",
        "Add nodes or free capacity, remove the taint or label a node as the selector asks",
    ] {
        assert!(text.contains(says), "the error says {says:?}:\n{run}");
    }
    assert!(!text.contains("FATAL_ERROR"), "{run}");
    assert!(!text.contains("fix the package"), "{run}");
}
