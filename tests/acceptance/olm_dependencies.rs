//! operator.yaml `dependencies:` (OLM-style required operators) through real Terraform:
//! the plan lists them in `kudo_operator.dependencies`, the apply installs their
//! OperatorVersions (and no instances of them), the destroy removes them.

use crate::harness::{TestContext, provider_binary, repo_root};

const KUDO: &str = "kudo.dev/v1beta1";

#[test]
fn listed_dependencies_are_planned_installed_and_removed() {
    let ctx = TestContext::new("deps-olm");
    let repo = repo_root().join("tests/fixtures/deps/olm");
    ctx.write(
        "main.tf",
        &format!(
            r#"terraform {{
  required_providers {{
    kudo = {{ source = "kudo/kudo" }}
  }}
}}
variable "namespace" {{ type = string }}
provider "kudo" {{
  repository {{
    name = "olm"
    url  = {url:?}
  }}
}}
resource "kudo_operator" "this" {{
  package   = {package:?}
  namespace = var.namespace
}}
resource "kudo_instance" "this" {{
  name      = "shop"
  namespace = var.namespace
  operator  = kudo_operator.this.id
}}
"#,
            url = repo.display().to_string(),
            package = repo.join("shop").display().to_string(),
        ),
    );

    let plan = ctx.tf.plan(&[]).assert_success().assert_no_crash();
    // The picture is known at plan time: Terraform shows it.
    assert!(
        plan.output().contains("flowchart TD"),
        "plan shows the graph:\n{plan}"
    );
    for shown in [
        "\"zookeeper-0.3.1\"",
        "\"operatorVersion >=0.3.0 <0.4.0\"",
        "\"kafka-1.1.0\"",
        "\"provides kafka.example.com/v1 Broker\"",
    ] {
        assert!(plan.output().contains(shown), "plan shows {shown}:\n{plan}");
    }

    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let state = ctx.tf.state();
    let op = state
        .resource("kudo_operator.this")
        .expect("operator in state");
    let deps: Vec<(&str, &str, &str)> = op["dependencies"]
        .as_array()
        .unwrap_or_else(|| panic!("dependencies is a list: {op:#}"))
        .iter()
        .map(|d| {
            (
                d["operator_version_name"].as_str().unwrap_or_default(),
                d["required_by"].as_str().unwrap_or_default(),
                d["constraint"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        deps,
        [
            ("zookeeper-0.3.1", "shop", "operatorVersion >=0.3.0 <0.4.0"),
            (
                "kafka-1.1.0",
                "shop",
                "provides kafka.example.com/v1 Broker"
            ),
        ]
    );
    assert_eq!(
        op["install_order"],
        serde_json::json!(["zookeeper-0.3.1", "kafka-1.1.0", "shop-0.1.0"])
    );
    for ov in ["zookeeper-0.3.1", "kafka-1.1.0", "shop-0.1.0"] {
        ctx.kube()
            .must_get(KUDO, "OperatorVersion", Some(&ctx.namespace), ov);
    }
    // `graph` is what `resolve --format mermaid` prints for the same package and
    // repository: the required operators as hexagons, with what asked for them.
    let cli = std::process::Command::new(provider_binary())
        .env_remove("TF_PLUGIN_MAGIC_COOKIE")
        .arg("resolve")
        .arg(repo.join("shop"))
        .arg("--repo")
        .arg(format!("olm={}", repo.display()))
        .args(["--format", "mermaid"])
        .output()
        .expect("the provider binary runs");
    let mermaid = String::from_utf8_lossy(&cli.stdout);
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    assert_eq!(op["graph"].as_str(), Some(&*mermaid), "{op:#}");
    for shown in [
        "o0{{\"zookeeper 0.3.1<br/>operator only, no instance<br/>from repository olm\"}}",
        "i0 -->|\"requires (dependencies[1])<br/>provides kafka.example.com/v1 Broker\"| o1",
    ] {
        assert!(mermaid.contains(shown), "{shown}:\n{mermaid}");
    }
    // Required operators are installed, not run: the instance has no children.
    let inst = state
        .resource("kudo_instance.this")
        .expect("instance in state");
    assert_eq!(inst["children"], serde_json::json!([]), "{inst:#}");
    for name in ["shop-zookeeper", "shop-kafka"] {
        assert!(
            ctx.kube().instance(&ctx.namespace, name).is_none(),
            "{name}"
        );
    }
    ctx.tf.plan(&["-detailed-exitcode"]).assert_success();

    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    for ov in ["zookeeper-0.3.1", "kafka-1.1.0", "shop-0.1.0"] {
        assert!(
            ctx.kube()
                .get(KUDO, "OperatorVersion", Some(&ctx.namespace), ov)
                .is_none(),
            "{ov} removed"
        );
    }
}
