//! `health = "ready"`: the apply waits for what the objects' controllers report (a
//! custom resource's `Ready` condition, a DaemonSet's rollout) and for `health_rule`
//! CEL expressions, and a timeout names the object, the rule and the value. KUDO's
//! rules stay the default.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{TestContext, flat, local_instance_config, serial_operator_yaml};

/// A package applying `templates` (name -> JSON/YAML text), one step each, in order.
fn write_package(ctx: &TestContext, templates: &[(&str, String)]) {
    let names: Vec<&str> = templates.iter().map(|(name, _)| *name).collect();
    ctx.write(
        "operator/operator.yaml",
        &serial_operator_yaml("health", "0.1.0", &names),
    );
    for (name, text) in templates {
        ctx.write(&format!("operator/templates/{name}.yaml"), text);
    }
}

fn write_config(ctx: &TestContext, instance_settings: &str) {
    ctx.write("main.tf", &local_instance_config("h", instance_settings));
}

/// A Gadget CRD whose controller reports on its objects (a status subresource), and
/// one Gadget. The group carries the namespace: tests may share a real cluster.
fn gadget_templates() -> Vec<(&'static str, String)> {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.NS.example.com"},
        "spec": {
            "group": "NS.example.com",
            "scope": "Namespaced",
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    });
    let gadget = json!({
        "apiVersion": "NS.example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "{{ .Name }}-gadget"},
        "spec": {"size": 1}
    });
    let text = |v: &Value| {
        v.to_string()
            .replace("NS.example.com", "{{ .Namespace }}.example.com")
    };
    vec![("crd", text(&crd)), ("gadget", text(&gadget))]
}

fn instance_status(ctx: &TestContext) -> Option<String> {
    let instance = ctx.kube().instance(&ctx.namespace, "h")?;
    instance
        .pointer("/status/planStatus/deploy/status")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Runs `terraform apply` while `meanwhile` plays the controllers, and returns its run.
fn apply_while(ctx: &TestContext, meanwhile: impl FnOnce(&TestContext)) -> crate::harness::TfRun {
    let tf = &ctx.tf;
    std::thread::scope(|s| {
        let apply = s.spawn(move || tf.apply(&[]));
        meanwhile(ctx);
        apply.join().expect("the apply thread panicked")
    })
}

#[test]
fn kudo_health_takes_a_custom_resource_as_soon_as_it_exists() {
    let ctx = TestContext::new("health-kudo-cr");
    write_package(&ctx, &gadget_templates());
    write_config(&ctx, "");
    ctx.tf.apply(&[]).assert_success();
    let gadget = ctx.kube().must_get(
        &format!("{}.example.com/v1", ctx.namespace),
        "Gadget",
        Some(&ctx.namespace),
        "h-gadget",
    );
    assert!(
        gadget.get("status").is_none(),
        "nobody reported on the gadget: {gadget:#}"
    );
    assert_eq!(instance_status(&ctx).as_deref(), Some("COMPLETE"));
}

#[test]
fn ready_health_waits_for_a_custom_resource_ready_condition() {
    let ctx = TestContext::new("health-ready-cr");
    write_package(&ctx, &gadget_templates());
    write_config(&ctx, "health = \"ready\"");
    let api_version = format!("{}.example.com/v1", ctx.namespace);
    let run = apply_while(&ctx, |ctx| {
        let kube = ctx.kube();
        kube.wait_for("the gadget", Duration::from_secs(60), |k| {
            k.get(&api_version, "Gadget", Some(&ctx.namespace), "h-gadget")
        });
        // The controller says it is not ready yet: the plan keeps waiting.
        kube.patch_status(
            &api_version,
            "Gadget",
            Some(&ctx.namespace),
            "h-gadget",
            &json!({"conditions": [{"type": "Ready", "status": "False", "reason": "Provisioning", "message": "volume pending", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
        );
        assert_eq!(
            instance_status(ctx).as_deref(),
            Some("IN_PROGRESS"),
            "the plan did not wait for the gadget's Ready condition"
        );
        kube.patch_status(
            &api_version,
            "Gadget",
            Some(&ctx.namespace),
            "h-gadget",
            &json!({"conditions": [{"type": "Ready", "status": "True", "reason": "Provisioned", "message": "", "lastTransitionTime": "2026-01-01T00:00:01Z"}]}),
        );
    });
    run.assert_success();
    assert_eq!(instance_status(&ctx).as_deref(), Some("COMPLETE"));
    assert_eq!(
        ctx.tf.state().attr_str("kudo_instance.h", "status"),
        "COMPLETE"
    );
}

fn daemonset() -> String {
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "{{ .Name }}-agent", "annotations": {"test.kudo/never-ready": "true"}},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "agent", "image": "busybox", "command": ["sleep", "3600"]}]}
            }
        }
    })
    .to_string()
}

/// kube-sim and fake-kubelet hold a workload annotated `test.kudo/never-ready` unready:
/// KUDO's rules take the DaemonSet at once, `ready` waits until the annotation goes
/// and the rollout completes.
#[test]
fn ready_health_waits_for_a_daemonset_rollout() {
    for (mode, waits) in [("kudo", false), ("ready", true)] {
        let ctx = TestContext::new(&format!("health-ds-{mode}"));
        if ctx.is_real_cluster() && !ctx.kube().has_nodes() {
            eprintln!("SKIPPED: no node, so no DaemonSet is ever scheduled or reported on");
            ctx.mark_cleaned();
            return;
        }
        write_package(&ctx, &[("agent", daemonset())]);
        write_config(&ctx, &format!("health = {mode:?}"));
        if !waits {
            ctx.tf.apply(&[]).assert_success();
            continue;
        }
        let run = apply_while(&ctx, |ctx| {
            let kube = ctx.kube();
            kube.wait_for("the daemonset", Duration::from_secs(60), |k| {
                k.get("apps/v1", "DaemonSet", Some(&ctx.namespace), "h-agent")
            });
            assert_eq!(
                instance_status(ctx).as_deref(),
                Some("IN_PROGRESS"),
                "the plan did not wait for the rollout"
            );
            kube.patch_merge(
                "apps/v1",
                "DaemonSet",
                Some(&ctx.namespace),
                "h-agent",
                &json!({"metadata": {"annotations": {"test.kudo/never-ready": null}}}),
            );
        });
        run.assert_success();
        assert_eq!(instance_status(&ctx).as_deref(), Some("COMPLETE"));
    }
}

#[test]
fn a_cel_rule_that_stays_false_times_out_naming_the_object_rule_and_value() {
    let ctx = TestContext::new("health-cel");
    let config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-flag\ndata:\n  ready: \"no\"\n";
    write_package(&ctx, &[("flag", config.to_string())]);
    write_config(
        &ctx,
        r#"health = "ready"
  health_rule {
    kind       = "ConfigMap"
    expression = "self.data.ready == 'yes'"
  }
  timeouts {
    create = "3s"
  }"#,
    );
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let out = flat(&run.output());
    for text in [
        "ConfigMap",
        "h-flag",
        "rule \"self.data.ready == 'yes'\" is false (self.data.ready = \"no\")",
    ] {
        assert!(
            out.contains(text),
            "terraform apply does not say {text:?}:\n{run}"
        );
    }
    assert_ne!(instance_status(&ctx).as_deref(), Some("COMPLETE"));
}

#[test]
fn invalid_health_settings_fail_the_plan_naming_the_attribute() {
    let ctx = TestContext::new("health-invalid");
    write_package(
        &ctx,
        &[(
            "flag",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n".to_string(),
        )],
    );
    for (settings, expected) in [
        ("health = \"strict\"", "\"kudo\" or \"ready\""),
        (
            "health = \"ready\"\n  health_rule {\n    kind       = \"ConfigMap\"\n    expression = \"self.data.ready ==\"\n  }",
            "Invalid health_rule expression",
        ),
    ] {
        write_config(&ctx, settings);
        let run = ctx.tf.plan(&[]).assert_clean_error();
        assert!(
            flat(&run.output()).contains(expected),
            "{expected:?}:\n{run}"
        );
    }
    ctx.mark_cleaned();
}

/// The instance's `health` over the provider's, KUDO's rules when neither sets it: the
/// plan warns that `health_rule` blocks are unused exactly when KUDO's rules apply.
#[test]
fn the_instance_health_overrides_the_providers() {
    let ctx = TestContext::new("health-override");
    write_package(
        &ctx,
        &[(
            "flag",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n".to_string(),
        )],
    );
    let rule = "health_rule {\n    kind       = \"ConfigMap\"\n    expression = \"true\"\n  }";
    for (provider, instance, unused) in [
        ("", "", true),
        ("health = \"ready\"", "", false),
        ("health = \"ready\"", "health = \"kudo\"", true),
    ] {
        let config = local_instance_config("h", &format!("{instance}\n  {rule}")).replacen(
            "provider \"kudo\" {}",
            &format!("provider \"kudo\" {{\n  {provider}\n}}"),
            1,
        );
        ctx.write("main.tf", &config);
        let run = ctx.tf.plan(&[]).assert_success();
        assert_eq!(
            flat(&run.output()).contains("Warning: health_rule not used"),
            unused,
            "provider {provider:?}, instance {instance:?}:\n{run}"
        );
    }
    ctx.mark_cleaned();
}

/// The provider block's `health` and `health_rule` are checked as the instance's are
/// (`ValidateProviderConfig`).
#[test]
fn invalid_provider_health_settings_name_the_attribute() {
    use crate::harness::rpc::{KudoProvider, block_on, provider_block, text};
    use tfplugin::{AttributePath, Provider, Value as V};

    let validate = |config| block_on(KudoProvider::new().validate_provider_config(config));
    let diags = validate(provider_block([("health", V::string("soon"))]));
    assert!(!diags.is_empty(), "accepted");
    assert!(
        diags[0].detail.contains("\"kudo\" or \"ready\""),
        "{}",
        text(&diags)
    );
    assert_eq!(diags[0].attribute, Some(AttributePath::attribute("health")));
    let diags = validate(provider_block([
        ("health", V::string("ready")),
        (
            "health_rule",
            V::list([V::object([
                ("group", V::string("apps")),
                ("kind", V::string("DaemonSet")),
                ("expression", V::string("self.status.numberReady ==")),
            ])]),
        ),
    ]));
    assert!(!diags.is_empty(), "accepted");
    assert_eq!(
        diags[0].summary,
        "Invalid health_rule expression",
        "{}",
        text(&diags)
    );
}
