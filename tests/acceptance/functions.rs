//! Provider functions from real Terraform: `provider::kudo::render` returns the objects a
//! fixture package renders, and `provider::kudo::validate_parameters` returns the same
//! diagnostic text `kudo_instance` gives for a bad parameter.

use std::path::Path;

use serde_json::Value;

use crate::harness::{PREAMBLE, TestContext, fixture_operator, flat};
use crate::skip;

fn functions_tf(package: &Path) -> String {
    format!(
        r#"terraform {{
  required_providers {{
    kudo = {{ source = "kudo/kudo" }}
  }}
}}
locals {{
  package  = {package:?}
  rendered = provider::kudo::render(local.package, {{ NODE_COUNT = "5" }})
}}
output "objects" {{
  value = [for m in local.rendered : "${{m.kind}}/${{m.metadata.name}}"]
}}
output "replicas" {{
  value = one([for m in local.rendered : m.spec.replicas if m.kind == "StatefulSet"])
}}
output "valid" {{
  value = provider::kudo::validate_parameters(local.package, {{ NODE_COUNT = "5" }})
}}
output "invalid" {{
  value = provider::kudo::validate_parameters(local.package, {{ NODE_COUNT = "5", NO_SUCH = "x" }})
}}
"#,
        package = package.display().to_string()
    )
}

fn instance_tf(package: &Path) -> String {
    format!(
        r#"{PREAMBLE}
resource "kudo_operator" "zk" {{
  package   = {package:?}
  namespace = var.namespace
}}
resource "kudo_instance" "zk" {{
  name      = "zk"
  namespace = var.namespace
  operator  = kudo_operator.zk.id
  parameters = {{
    NODE_COUNT = "5"
    NO_SUCH    = "x"
  }}
}}
"#,
        package = package.display().to_string()
    )
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v:#}"))
        .iter()
        .map(|s| s.as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn render_and_validate_parameters_answer_from_terraform_as_kudo_instance_does() {
    let Some(pkg) = fixture_operator("zookeeper") else {
        skip!("../shared/fixtures/operators/zookeeper not found (clone without ../shared)");
    };
    let ctx = TestContext::new("functions");
    ctx.write("main.tf", &functions_tf(&pkg));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let outputs = ctx.tf.outputs();

    let objects = strings(&outputs["objects"]);
    // Named as the `render` CLI names an instance by default: `<operator>-instance`.
    for want in [
        "StatefulSet/zookeeper-instance-zookeeper",
        "Service/zookeeper-instance-hs",
        "Service/zookeeper-instance-cs",
    ] {
        assert!(
            objects.iter().any(|o| o == want),
            "{want} not rendered: {objects:?}"
        );
    }
    assert_eq!(outputs["replicas"], 5, "{outputs:#?}");
    assert_eq!(outputs["valid"], Value::Array(Vec::new()), "{outputs:#?}");

    let invalid = outputs["invalid"]
        .as_array()
        .unwrap_or_else(|| panic!("{outputs:#?}"));
    assert_eq!(invalid.len(), 1, "{invalid:#?}");
    let no_such = &invalid[0];
    assert_eq!(no_such["severity"], "error", "{no_such:#}");
    assert_eq!(
        no_such["summary"], "Invalid parameter NO_SUCH",
        "{no_such:#}"
    );
    assert_eq!(no_such["attribute"], "parameters[\"NO_SUCH\"]");

    // kudo_instance says the same, word for word.
    ctx.write("main.tf", &instance_tf(&pkg));
    let plan = ctx.tf.plan(&[]);
    assert!(!plan.success(), "{plan}");
    let out = flat(&plan.output());
    for d in invalid {
        let summary = d["summary"].as_str().unwrap_or_default();
        let detail = flat(d["detail"].as_str().unwrap_or_default());
        assert!(
            out.contains(summary) && out.contains(&detail),
            "kudo_instance's plan does not give the function's diagnostic {summary:?} / {detail:?}:\n{out}"
        );
    }

    // render fails on the same parameters with the same text.
    ctx.write(
        "main.tf",
        &functions_tf(&pkg).replace(
            "render(local.package, { NODE_COUNT = \"5\" })",
            "render(local.package, { NO_SUCH = \"x\" })",
        ),
    );
    let plan = ctx.tf.plan(&[]);
    assert!(!plan.success(), "{plan}");
    let out = flat(&plan.output());
    let detail = flat(no_such["detail"].as_str().unwrap_or_default());
    assert!(
        out.contains("Invalid parameter NO_SUCH") && out.contains(&detail),
        "render's error differs from kudo_instance's:\n{out}"
    );
    ctx.mark_cleaned();
}

#[test]
fn render_refuses_urls_offline() {
    let ctx = TestContext::new("functions-offline");
    ctx.write(
        "main.tf",
        r#"terraform {
  required_providers {
    kudo = { source = "kudo/kudo" }
  }
}
output "x" {
  value = provider::kudo::render("https://example.com/zookeeper-0.3.3.tgz", null)
}
"#,
    );
    let plan = ctx.tf.plan(&[]);
    assert!(!plan.success(), "{plan}");
    let out = flat(&plan.output());
    assert!(out.contains("is a URL") && out.contains("offline"), "{out}");
    ctx.mark_cleaned();
}

/// `CallFunction` of `name` with `package` and `parameters`, in this process.
fn call(
    name: &str,
    package: &str,
    parameters: tfplugin::Value,
) -> Result<tfplugin::Value, tfplugin::FunctionError> {
    use tfplugin::Provider;
    let provider = crate::harness::rpc::KudoProvider::new();
    crate::harness::rpc::block_on(
        provider.call_function(name, vec![tfplugin::Value::string(package), parameters]),
    )
}

/// Manifests come back as Terraform objects and tuples (a YAML list may mix types),
/// JSON null as null.
#[test]
fn render_returns_manifests_as_objects_and_tuples() {
    use tfplugin::Value as V;
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |rel: &str, text: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("folder");
        std::fs::write(&path, text).expect("write");
    };
    write(
        "operator.yaml",
        &crate::harness::one_task_operator_yaml("shapes", "0.1.0", "app", &["widget"]),
    );
    write(
        "templates/widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  data:\n    a: \"1\"\n  items: [1, \"x\"]\n  z: null\n",
    );
    let rendered = call("render", &dir.path().display().to_string(), V::Null)
        .unwrap_or_else(|e| panic!("render: {e:?}"));
    let V::Tuple(objects) = &rendered else {
        panic!("not a tuple: {rendered:?}")
    };
    let widget = &objects[0];
    assert_eq!(widget.get("kind"), &V::string("Widget"));
    let spec = widget.get("spec");
    assert_eq!(spec.get("data").get("a"), &V::string("1"));
    assert_eq!(
        spec.get("items"),
        &V::Tuple(vec![V::int(1), V::string("x")])
    );
    assert_eq!(spec.get("z"), &V::Null);
}

#[test]
fn urls_and_missing_paths_are_refused_offline_on_the_package() {
    let e = call("render", "https://example.com/x.tgz", tfplugin::Value::Null).expect_err("url");
    assert!(e.text.contains("offline"), "{e:?}");
    assert_eq!(e.argument, Some(0));
    let e = call(
        "validate_parameters",
        "no-such-folder-here",
        tfplugin::Value::Null,
    )
    .expect_err("missing");
    assert!(e.text.contains("does not exist"), "{e:?}");
    assert_eq!(e.argument, Some(0));
}
