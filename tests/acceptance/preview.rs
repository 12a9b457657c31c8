//! `kudo_instance.preview`: `terraform plan` says which objects the apply will create,
//! update or delete, from a server-side dry-run.

use serde_json::Value;

use crate::harness::TestContext;

/// `preview` of `kudo_instance.web` in a saved plan, as `terraform show -json` has it.
fn planned_preview(ctx: &TestContext, extra: &[&str]) -> (String, Value) {
    let mut args = vec!["-out=tfplan"];
    args.extend_from_slice(extra);
    let plan = ctx.tf.plan(&args).assert_success();
    let shown = ctx.tf.run(&["show", "-json", "tfplan"]).assert_success();
    let json = shown.json();
    let change = json["resource_changes"]
        .as_array()
        .and_then(|all| {
            all.iter()
                .find(|c| c["address"] == "kudo_instance.web")
                .cloned()
        })
        .unwrap_or_else(|| panic!("no change for kudo_instance.web: {json:#}"));
    (plan.stdout, change["change"]["after"]["preview"].clone())
}

fn list(v: &Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("preview.{key} is not a list: {v:#}"))
        .iter()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

#[test]
fn plan_previews_creates_then_the_update_a_parameter_change_makes() {
    let ctx = TestContext::new("preview");
    ctx.use_example("quickstart");
    let ns = ctx.namespace.as_str();

    let (stdout, preview) = planned_preview(&ctx, &[]);
    let mut create = list(&preview, "create");
    create.sort();
    assert_eq!(
        create,
        [
            format!("ConfigMap {ns}/web-content"),
            format!("Deployment {ns}/web"),
            format!("Service {ns}/web"),
        ],
        "{preview:#}"
    );
    assert!(list(&preview, "update").is_empty(), "{preview:#}");
    assert!(
        stdout.contains(&format!("\"Deployment {ns}/web\"")),
        "the plan output does not show the preview:\n{stdout}"
    );

    ctx.tf.apply(&[]).assert_success();
    // Nothing planned: the preview of the last apply stays, with no diff.
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    // Only the Deployment uses REPLICAS; the ConfigMap and Service stay as they are.
    let (stdout, preview) = planned_preview(&ctx, &["-var", "replicas=3"]);
    assert_eq!(
        list(&preview, "update"),
        [format!("Deployment {ns}/web")],
        "{preview:#}"
    );
    assert!(list(&preview, "create").is_empty(), "{preview:#}");
    assert!(list(&preview, "delete").is_empty(), "{preview:#}");
    assert!(
        stdout.contains(&format!("\"Deployment {ns}/web\"")),
        "the plan output does not show the object to update:\n{stdout}"
    );
}

#[test]
fn without_a_reachable_cluster_the_plan_works_and_preview_is_unknown() {
    let ctx = TestContext::new("preview-offline");
    ctx.use_example("quickstart");
    // A port that was free a moment ago: connections are refused at once.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    ctx.write(
        "provider.tf",
        &format!(
            "provider \"kudo\" {{\n  host     = \"https://127.0.0.1:{port}\"\n  insecure = true\n}}\n"
        ),
    );
    let main = std::fs::read_to_string(ctx.workdir.join("main.tf")).expect("read main.tf");
    ctx.write("main.tf", &main.replace("provider \"kudo\" {}", ""));
    let mut tf = ctx.tf.clone();
    tf.remove_env("KUBE_CONFIG_PATH");

    let plan = tf.plan(&["-out=tfplan"]).assert_success().assert_no_crash();
    assert!(
        plan.stdout.contains("preview") && plan.stdout.contains("(known after apply)"),
        "{plan}"
    );
    let json = tf.run(&["show", "-json", "tfplan"]).assert_success().json();
    let change = json["resource_changes"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["address"] == "kudo_instance.web"))
        .unwrap_or_else(|| panic!("no change for kudo_instance.web: {json:#}"))
        .clone();
    assert_eq!(
        change["change"]["after_unknown"]["preview"], true,
        "{change:#}"
    );
    ctx.mark_cleaned();
}
