//! Field-level drift (`drift`, `drift_ignore`, `drifted_fields`): a field the provider
//! applied and someone changed out of band (`kubectl apply --server-side
//! --force-conflicts`, as `kubectl edit` or `scale` would) shows in the next plan, in
//! each mode; an ignored path does not. Package: `tests/fixtures/operators/lifecycle-v1`
//! (ConfigMap `app-settings`, `data.greeting` from GREETING).

use serde_json::json;

use crate::harness::{TestContext, TfRun, operator_config, own_operator};

/// `kudo_instance.this` (`app`, GREETING = "hi") with the given drift settings inside
/// the resource block.
fn config(settings: &str) -> String {
    let operator = operator_config(&own_operator("lifecycle-v1"));
    format!(
        r#"{operator}
resource "kudo_instance" "this" {{
  name      = "app"
  namespace = var.namespace
  operator  = kudo_operator.this.id
  parameters = {{
    GREETING = "hi"
  }}
{settings}
}}
"#
    )
}

/// Changes the greeting as `kubectl` would, taking the field from the provider.
fn change_greeting(ctx: &TestContext) {
    ctx.kube().apply(&json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "app-settings", "namespace": ctx.namespace },
        "data": { "greeting": "changed out of band" },
    }));
}

fn greeting(ctx: &TestContext) -> String {
    let cm = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(&ctx.namespace), "app-settings");
    cm["data"]["greeting"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// `terraform plan -detailed-exitcode`: exit 2 means changes.
fn plan(ctx: &TestContext) -> TfRun {
    ctx.tf
        .plan(&["-detailed-exitcode", "-no-color"])
        .assert_no_crash()
}

fn deployed(name: &str, settings: &str) -> TestContext {
    let ctx = TestContext::new(name);
    ctx.write("main.tf", &config(settings));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(greeting(&ctx), "hi");
    // Right after an apply nothing has drifted: the server's defaults and its
    // bookkeeping are not drift.
    let second = plan(&ctx);
    assert_eq!(
        second.code,
        Some(0),
        "no changes after the apply:\n{second}"
    );
    ctx
}

#[test]
fn correct_mode_plans_the_field_back_and_the_apply_restores_it() {
    let ctx = deployed("drift-correct", "");
    change_greeting(&ctx);
    let run = plan(&ctx);
    assert_eq!(run.code, Some(2), "drift is a change to plan:\n{run}");
    eprintln!(
        "[drift] the plan after an out-of-band change:\n{}",
        run.stdout
    );
    let out = run.output();
    for needle in [
        "ConfigMap",
        "app-settings",
        "data.greeting",
        "changed out of band",
        "DRIFTED",
    ] {
        assert!(
            out.contains(needle),
            "the plan must show {needle:?}:\n{run}"
        );
    }
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(greeting(&ctx), "hi");
    let state = ctx.tf.state();
    assert_eq!(state.attr_str("kudo_instance.this", "status"), "COMPLETE");
    let after = plan(&ctx);
    assert_eq!(after.code, Some(0), "repaired, nothing left:\n{after}");
}

#[test]
fn warn_mode_warns_and_plans_no_change() {
    let ctx = deployed("drift-warn", "  drift = \"warn\"");
    change_greeting(&ctx);
    let run = plan(&ctx);
    assert_eq!(run.code, Some(0), "warn plans no change:\n{run}");
    let out = run.flat_output();
    for needle in [
        "Warning: Fields of app changed outside Terraform",
        "ConfigMap",
        "data.greeting",
        "\"changed out of band\" in the cluster, \"hi\" applied",
    ] {
        assert!(
            out.contains(needle),
            "the warning must say {needle:?}:\n{run}"
        );
    }
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(
        greeting(&ctx),
        "changed out of band",
        "warn keeps their value"
    );
    let state = ctx.tf.state();
    let fields = state
        .resource("kudo_instance.this")
        .map(|r| r["drifted_fields"].clone())
        .unwrap_or_default();
    assert_eq!(
        fields,
        json!([{
            "instance": "app",
            "object": format!("ConfigMap {}/app-settings", ctx.namespace),
            "field": "data.greeting",
            "applied": "hi",
            "live": "changed out of band",
        }]),
        "the state records what drifted"
    );
}

#[test]
fn ignore_mode_and_ignored_paths_see_nothing() {
    for (name, settings) in [
        ("drift-ignore", "  drift = \"ignore\""),
        (
            "drift-ignore-path",
            "  drift_ignore {\n    kind = \"ConfigMap\"\n    path = \"data.greeting\"\n  }",
        ),
    ] {
        let ctx = deployed(name, settings);
        change_greeting(&ctx);
        let run = plan(&ctx);
        assert_eq!(run.code, Some(0), "{name}: no changes:\n{run}");
        assert!(
            !run.output().contains("changed outside Terraform"),
            "{name}: no warning:\n{run}"
        );
        assert_eq!(greeting(&ctx), "changed out of band");
    }
}

#[test]
fn an_invalid_mode_names_the_attribute_and_the_choices() {
    let ctx = TestContext::new("drift-invalid");
    ctx.write("main.tf", &config("  drift = \"fix\""));
    let run = ctx.tf.plan(&["-no-color"]).assert_clean_error();
    let out = run.flat_output();
    for needle in [
        "Invalid drift",
        "\"fix\"",
        "\"correct\"",
        "\"warn\"",
        "\"ignore\"",
        "drift = \"fix\"",
    ] {
        assert!(
            out.contains(needle),
            "the error must say {needle:?}:\n{run}"
        );
    }
}
