//! The `kudo_dependencies` data source through real Terraform, with no cluster
//! configured, against `terraform-provider-kudo resolve --json` (and `--format mermaid`
//! for its `graph`) for the same package, repositories and overrides: CI pipelines may
//! use either and must get one answer.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::dependencies::fixture_repository;
use crate::harness::{TestContext, fixture_operator, provider_binary, repo_root};
use crate::skip;

fn deps_fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/deps").join(name)
}

/// A test context whose Terraform cannot find any cluster: the harness already drops
/// `KUBECONFIG` and `KUBE_*` from the parent environment, this drops the kube-sim
/// kubeconfig it would add, and the provider blocks below name none.
fn without_cluster(test_name: &str) -> TestContext {
    let mut ctx = TestContext::new(test_name);
    ctx.tf.remove_env("KUBE_CONFIG_PATH");
    // Nothing is installed, so there is nothing for the harness to destroy.
    ctx.mark_cleaned();
    ctx
}

/// Provider block with one repository, the data source and its two results as outputs.
fn config(repository: Option<&str>, package: &Path, overrides: &str) -> String {
    let repo = repository
        .map(|url| format!("  repository {{\n    name = \"fixtures\"\n    url  = {url:?}\n  }}\n"))
        .unwrap_or_default();
    format!(
        r#"terraform {{
  required_providers {{
    kudo = {{ source = "kudo/kudo" }}
  }}
}}
provider "kudo" {{
{repo}}}
data "kudo_dependencies" "this" {{
  package              = {package:?}
  dependency_overrides = {{ {overrides} }}
}}
output "dependencies" {{
  value = data.kudo_dependencies.this.dependencies
}}
output "install_order" {{
  value = data.kudo_dependencies.this.install_order
}}
output "graph" {{
  value = data.kudo_dependencies.this.graph
}}
"#,
        package = package.display().to_string(),
    )
}

struct CliRun {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// `terraform-provider-kudo resolve PACKAGE --json` with the same repository and
/// overrides as [`config`].
fn cli_resolve(repository: Option<&str>, package: &Path, overrides: &[(&str, &str)]) -> CliRun {
    cli_resolve_as(repository, package, overrides, "json")
}

/// The same, printing `format` (`json`, `mermaid`, ...).
fn cli_resolve_as(
    repository: Option<&str>,
    package: &Path,
    overrides: &[(&str, &str)],
    format: &str,
) -> CliRun {
    let mut cmd = Command::new(provider_binary());
    cmd.arg("resolve")
        .arg(package)
        .args(["--format", format])
        .env_remove("TF_PLUGIN_MAGIC_COOKIE");
    if let Some(url) = repository {
        cmd.arg("--repo").arg(format!("fixtures={url}"));
    }
    for (k, v) in overrides {
        cmd.arg("--override").arg(format!("{k}={v}"));
    }
    let out = cmd.output().expect("the provider binary runs");
    CliRun {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The CLI's JSON, after checking it succeeded.
fn cli_json(run: &CliRun) -> Value {
    assert_eq!(
        run.code,
        Some(0),
        "resolve failed:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("resolve --json printed no JSON ({e}):\n{}", run.stdout))
}

/// Applies the configuration (data sources only) and checks that its outputs are
/// exactly what the CLI printed (`graph`: what `--format mermaid` printed); returns the
/// install order.
fn assert_same_answer(ctx: &TestContext, cli: &Value, mermaid: &CliRun) -> Vec<String> {
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let outputs = ctx.tf.outputs();
    assert_eq!(
        mermaid.code,
        Some(0),
        "{}\n{}",
        mermaid.stdout,
        mermaid.stderr
    );
    assert!(
        mermaid.stdout.starts_with("flowchart TD\n"),
        "{}",
        mermaid.stdout
    );
    assert_eq!(
        outputs.get("graph").and_then(Value::as_str),
        Some(mermaid.stdout.as_str()),
        "data source graph vs resolve --format mermaid"
    );
    assert_eq!(
        outputs.get("dependencies"),
        cli.get("dependencies"),
        "data source vs CLI dependencies"
    );
    assert_eq!(
        outputs.get("install_order"),
        cli.get("install_order"),
        "data source vs CLI install_order"
    );
    outputs
        .get("install_order")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn kep29_tree_matches_the_cli_without_a_cluster() {
    let ctx = without_cluster("resolve-data-kep29");
    let repo = deps_fixture("kep29");
    let url = repo.display().to_string();
    let package = repo.join("aa");
    ctx.write("main.tf", &config(Some(&url), &package, ""));

    let cli = cli_json(&cli_resolve(Some(&url), &package, &[]));
    let mermaid = cli_resolve_as(Some(&url), &package, &[], "mermaid");
    let order = assert_same_answer(&ctx, &cli, &mermaid);
    assert_eq!(
        order,
        ["ee-0.1.0", "gg-0.1.0", "bb-0.1.0", "cc-0.1.0", "aa-0.1.0"]
    );
    let deps = ctx.tf.outputs()["dependencies"].clone();
    let ee = deps
        .as_array()
        .and_then(|d| d.iter().find(|d| d["package"] == "ee"))
        .unwrap_or_else(|| panic!("ee is a dependency: {deps:#}"));
    assert_eq!(ee["required_by"], "bb", "{ee:#}");
    assert_eq!(ee["source"], "repository fixtures", "{ee:#}");
    assert_eq!(ee["enabled"], true, "{ee:#}");
}

#[test]
fn flink_demo_needs_overrides_and_then_matches_the_cli() {
    let ctx = without_cluster("resolve-data-flink");
    let Some(demo) = fixture_operator("flink-demo") else {
        skip!("../shared/fixtures/operators is absent");
    };
    let Some((server, _repo)) = fixture_repository(&ctx) else {
        skip!("kafka, zookeeper or flink fixture is absent");
    };
    ctx.copy_in(&demo, "flink-demo");
    let package = ctx.workdir.join("flink-demo");

    // As published, flink-demo pins versions the repository does not have: both say
    // which versions were asked for and which exist.
    ctx.write("main.tf", &config(Some(&server.url), &package, ""));
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let text = run.output();
    let cli = cli_resolve(Some(&server.url), &package, &[]);
    assert_eq!(cli.code, Some(1), "{}\n{}", cli.stdout, cli.stderr);
    for needle in ["kafka", "1.3.1", "zookeeper", "0.3.1", "1.3.2", "0.3.3"] {
        assert!(text.contains(needle), "the error names {needle}:\n{run}");
        assert!(
            cli.stderr.contains(needle),
            "the CLI names {needle}:\n{}",
            cli.stderr
        );
    }
    assert!(
        text.contains("Cannot resolve the operator's dependencies"),
        "{run}"
    );
    // The diagnostic points at the `package` argument (Terraform quotes its line).
    assert!(text.contains("  package "), "error on `package`:\n{run}");

    // Ranges given as overrides resolve to what the repository has.
    let overrides = [("kafka", ">=1.3.1 <2.0.0"), ("zookeeper", ">=0.3.1 <0.4.0")];
    let hcl: String = overrides
        .iter()
        .map(|(k, v)| format!("{k} = {v:?}, "))
        .collect();
    ctx.write("main.tf", &config(Some(&server.url), &package, &hcl));
    let cli = cli_json(&cli_resolve(Some(&server.url), &package, &overrides));
    let mermaid = cli_resolve_as(Some(&server.url), &package, &overrides, "mermaid");
    let order = assert_same_answer(&ctx, &cli, &mermaid);
    // The picture names every instance with the version chosen for it.
    for line in [
        "instance kafka<br/>kafka 1.3.2",
        "instance zk<br/>zookeeper 0.3.3",
    ] {
        assert!(mermaid.stdout.contains(line), "{line}:\n{}", mermaid.stdout);
    }
    let last = order.last().map(String::as_str).unwrap_or_default();
    assert!(
        last.starts_with("flink-demo-") && last.ends_with("-0.1.6"),
        "the package itself goes last: {order:?}"
    );
    let deps = ctx.tf.outputs()["dependencies"].clone();
    let version_of = |name: &str| {
        deps.as_array()
            .and_then(|d| d.iter().find(|d| d["package"] == name))
            .map(|d| d["operator_version"].clone())
            .unwrap_or(Value::Null)
    };
    assert_eq!(version_of("kafka"), "1.3.2", "{deps:#}");
    assert_eq!(version_of("zookeeper"), "0.3.3", "{deps:#}");
}

#[test]
fn a_cycle_is_an_error_with_its_path_in_both() {
    let ctx = without_cluster("resolve-data-cycle");
    let package = deps_fixture("cycle").join("a");
    ctx.write("main.tf", &config(None, &package, ""));
    let run = ctx.tf.apply(&[]).assert_clean_error();
    assert!(
        run.output().contains("a -> b -> c -> a"),
        "names the path:\n{run}"
    );
    let cli = cli_resolve(None, &package, &[]);
    assert_eq!(cli.code, Some(1), "{}\n{}", cli.stdout, cli.stderr);
    assert!(cli.stderr.contains("a -> b -> c -> a"), "{}", cli.stderr);
}
