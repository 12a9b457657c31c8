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
            "diff": null,
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

/// [`config`]'s package and instance with `provider` (HCL lines) in the provider block.
fn config_with_provider(provider: &str, settings: &str) -> String {
    config(settings).replacen(
        "provider \"kudo\" {}",
        &format!("provider \"kudo\" {{\n{provider}\n}}"),
        1,
    )
}

/// The provider's `drift` and `drift_ignore` hold for an instance that has its own
/// `drift_ignore`: the instance's rules are added to the provider's, and the mode is
/// the provider's while the instance sets none.
#[test]
fn provider_drift_settings_hold_under_the_instances_own() {
    let instance_rule =
        "  drift_ignore {\n    kind = \"Deployment\"\n    path = \"metadata.labels\"\n  }";
    // The provider's mode: a warning, no change.
    let ctx = TestContext::new("drift-provider-warn");
    ctx.write(
        "main.tf",
        &config_with_provider("  drift = \"warn\"", instance_rule),
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    change_greeting(&ctx);
    let run = plan(&ctx);
    assert_eq!(run.code, Some(0), "warn plans no change:\n{run}");
    assert!(
        run.flat_output()
            .contains("Warning: Fields of app changed outside Terraform"),
        "{run}"
    );

    // The provider's ignored path, next to the instance's.
    let ctx = TestContext::new("drift-provider-ignore");
    ctx.write(
        "main.tf",
        &config_with_provider(
            "  drift_ignore {\n    kind = \"ConfigMap\"\n    path = \"data.greeting\"\n  }",
            instance_rule,
        ),
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    change_greeting(&ctx);
    let run = plan(&ctx);
    assert_eq!(run.code, Some(0), "ignored: no changes:\n{run}");
    assert!(!run.output().contains("changed outside Terraform"), "{run}");
}

/// A package whose ConfigMap holds a URL with the password in it and a plain number,
/// and whose Secret holds the password.
fn write_secret_package(ctx: &TestContext) {
    ctx.write(
        "operator/operator.yaml",
        &crate::harness::one_task_operator_yaml("drift-secrets", "0.1.0", "app", &["objects"]),
    );
    ctx.write(
        "operator/params.yaml",
        "apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: PASSWORD\n    default: \"x\"\n",
    );
    ctx.write(
        "operator/templates/objects.yaml",
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: c
data:
  url: "postgres://u:{{ .Params.PASSWORD }}@db"
  replicas: "1"
---
apiVersion: v1
kind: Secret
metadata:
  name: s
data:
  password: {{ .Params.PASSWORD | b64enc }}
"#,
    );
}

/// `drifted_fields` and the warning show what changed, but never a value of a Secret
/// or one that contains a sensitive parameter's value, old or new.
#[test]
fn secrets_and_sensitive_values_are_redacted() {
    let ctx = TestContext::new("drift-redacted");
    write_secret_package(&ctx);
    ctx.write(
        "main.tf",
        &crate::harness::local_instance_config(
            "app",
            "drift = \"warn\"\n  sensitive_parameters = { PASSWORD = \"hunter2\" }",
        ),
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let ns = ctx.namespace.as_str();
    ctx.kube().apply(&json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "c", "namespace": ns },
        "data": { "url": "postgres://u:other@db", "replicas": "2" },
    }));
    ctx.kube().apply(&json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": { "name": "s", "namespace": ns },
        "data": { "password": "b3RoZXI=" },
    }));
    let run = plan(&ctx);
    assert_eq!(run.code, Some(0), "warn plans no change:\n{run}");
    assert!(
        run.flat_output().contains(&format!(
            "ConfigMap {ns}/c (instance app) data.replicas: \"2\" in the cluster, \"1\" applied"
        )),
        "{run}"
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let state = ctx.tf.state();
    let fields = state
        .resource("kudo_instance.app")
        .map(|r| r["drifted_fields"].clone())
        .unwrap_or_default();
    let field = |object: &str, path: &str| {
        fields
            .as_array()
            .and_then(|all| {
                all.iter()
                    .find(|f| f["object"] == object && f["field"] == path)
            })
            .cloned()
            .unwrap_or_else(|| panic!("no drift of {object} {path}: {fields:#}"))
    };
    let url = field(&format!("ConfigMap {ns}/c"), "data.url");
    assert_eq!(url["applied"], "(sensitive value)", "{url}");
    assert_eq!(url["live"], "postgres://u:other@db", "{url}");
    let password = field(&format!("Secret {ns}/s"), "data.password");
    assert_eq!(password["applied"], "(sensitive value)", "{password}");
    assert_eq!(password["live"], "(sensitive value)", "{password}");
    let replicas = field(&format!("ConfigMap {ns}/c"), "data.replicas");
    assert_eq!(replicas["live"], "2");
    assert_eq!(replicas["instance"], "app");
    let text = serde_json::to_string(&fields).unwrap_or_default();
    assert!(
        !text.contains("hunter2") && !text.contains("aHVudGVyMg") && !text.contains("b3RoZXI"),
        "{text}"
    );
}

/// A `drift` that is not a mode and a `drift_ignore` path that is not a field path in
/// the provider block: one error each, naming the choices and the form of a path.
#[test]
fn bad_provider_drift_settings_name_the_attribute() {
    use crate::harness::rpc::{block_on, provider_block, text};
    use tfplugin::{AttributePath, Provider, Value};

    let config = provider_block([
        ("drift", Value::string("fix")),
        (
            "drift_ignore",
            Value::list([Value::object([("path", Value::string(".spec"))])]),
        ),
    ]);
    let provider = crate::harness::rpc::KudoProvider::new();
    let errs = block_on(provider.validate_provider_config(config));
    assert_eq!(errs.len(), 2, "{}", text(&errs));
    assert!(errs[0].detail.contains("\"correct\""), "{}", text(&errs));
    assert_eq!(errs[0].attribute, Some(AttributePath::attribute("drift")));
    assert!(errs[1].detail.contains("spec.replicas"), "{}", text(&errs));
    assert_eq!(
        errs[1].attribute,
        Some(
            AttributePath::attribute("drift_ignore")
                .index(0)
                .attr("path")
        )
    );
}
