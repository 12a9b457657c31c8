//! operator.yaml `kubernetesVersion` (issue 16): a package that needs a newer cluster
//! fails `terraform plan` naming both versions, and a dependency range resolves to the
//! newest version the cluster runs. kube-sim reports the release each test chooses
//! (`/version`), so these tests skip on a real cluster, whose version they cannot choose.

use crate::harness::terraform::flat;
use crate::harness::{TestContext, repo_root};

fn config(package: &str, repository: &str, overrides: &str) -> String {
    format!(
        r#"terraform {{
  required_providers {{
    kudo = {{ source = "kudo/kudo" }}
  }}
}}
variable "namespace" {{ type = string }}
provider "kudo" {{
  repository {{
    name = "local"
    url  = {repository:?}
  }}
}}
resource "kudo_operator" "this" {{
  package              = {package:?}
  namespace            = var.namespace
  dependency_overrides = {{ {overrides} }}
}}
resource "kudo_instance" "this" {{
  name      = "app"
  namespace = var.namespace
  operator  = kudo_operator.this.id
}}
"#
    )
}

#[test]
fn a_package_needing_a_newer_kubernetes_fails_the_plan_naming_both_versions() {
    let Some(ctx) = TestContext::on_kubernetes("k8sneeds", "1.36") else {
        eprintln!("SKIPPED: needs kube-sim to choose the cluster's version");
        return;
    };
    let repo = repo_root().join("tests/fixtures/deps/kube-versions");
    let future = repo.join("future");
    ctx.write(
        "main.tf",
        &config(
            &future.display().to_string(),
            &repo.display().to_string(),
            "",
        ),
    );
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let text = flat(&run.output());
    for wanted in [
        "The operator package needs a newer Kubernetes version",
        "declares kubernetesVersion 1.99.0 in operator.yaml",
        "needs Kubernetes 1.99 or newer",
        "runs v1.36.0",
        "future 0.1.0",
        "package",
    ] {
        assert!(text.contains(wanted), "{wanted:?} missing from:\n{run}");
    }
    assert!(
        ctx.instance_objects("app").is_empty(),
        "nothing was installed"
    );
    ctx.mark_cleaned();
}

#[test]
fn a_dependency_range_resolves_to_the_newest_version_the_cluster_runs() {
    // engine 1.0.0 / 1.1.0 / 1.2.0 need Kubernetes 1.16 / 1.30 / 1.99; app asks >=1.0.0 <2.0.0.
    let Some(ctx) = TestContext::on_kubernetes("k8srange", "1.24") else {
        eprintln!("SKIPPED: needs kube-sim to choose the cluster's version");
        return;
    };
    let repo = repo_root().join("tests/fixtures/deps/kube-versions");
    let app = repo.join("app").display().to_string();
    let repo = repo.display().to_string();
    ctx.write("main.tf", &config(&app, &repo, ""));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let state = ctx.tf.state();
    let op = state.resource("kudo_operator.this").expect("operator");
    let engine = op["dependencies"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d["package"] == "engine"))
        .unwrap_or_else(|| panic!("no engine dependency: {op:#}"));
    assert_eq!(engine["operator_version"], "1.0.0", "{engine:#}");
    let cm = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(&ctx.namespace), "app-engine-engine");
    assert_eq!(cm["data"]["version"], "1.0.0", "{cm:#}");

    // Asking for versions the cluster cannot run is explained, naming each candidate's
    // kubernetesVersion and the cluster's version.
    ctx.write("main.tf", &config(&app, &repo, r#"engine = ">=1.1.0""#));
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let text = flat(&run.output());
    for wanted in [
        "no version of engine fits the ranges and runs on this cluster (Kubernetes v1.24.0)",
        "1.2.0 needs kubernetesVersion 1.99.0",
        "1.1.0 needs kubernetesVersion 1.30.0",
    ] {
        assert!(text.contains(wanted), "{wanted:?} missing from:\n{run}");
    }

    // After a cluster upgrade to 1.36 the same range chooses 1.1.0 (1.2.0 still needs 1.99).
    ctx.upgrade_cluster("1.36");
    ctx.write("main.tf", &config(&app, &repo, ""));
    let plan = ctx.tf.plan(&[]).assert_success();
    assert!(
        flat(&plan.output()).contains(r#""1.0.0" -> "1.1.0""#),
        "the plan shows the dependency moving to 1.1.0:\n{plan}"
    );

    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
}
