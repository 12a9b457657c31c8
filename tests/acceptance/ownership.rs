//! Server-side apply ownership (docs: `../shared/docs/kudo-semantics.md` section 7): the
//! provider applies with its own field manager and forces conflicts only for fields it
//! applied before. A field another manager set on an object we never applied stays
//! theirs and the apply fails saying so; a field of ours someone took out of band is
//! drift and the next run takes it back. Package: `tests/fixtures/operators/lifecycle-v1`.

use serde_json::{Value, json};

use crate::harness::{TestContext, operator_config, own_operator};

const MANAGER: &str = "terraform-provider-kudo";

/// `kudo_operator.this` from lifecycle-v1 and `kudo_instance.this` named `app` with
/// GREETING = "hi" and a `deploy` trigger token (changing it runs deploy again).
fn config(deploy_token: &str) -> String {
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
  plan_triggers = {{
    deploy = {deploy_token:?}
  }}
}}
"#
    )
}

/// The field managers owning `.data.<key>` of the object.
fn owners_of_data_key(obj: &Value, key: &str) -> Vec<String> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| !e["fieldsV1"]["f:data"][format!("f:{key}")].is_null())
        .filter_map(|e| e["manager"].as_str().map(str::to_string))
        .collect()
}

// kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts
#[test]
fn a_field_another_manager_owns_fails_the_apply_and_keeps_their_value() {
    let ctx = TestContext::new("ownership-foreign");
    let ns = ctx.namespace.as_str();
    // Someone created the object our template renders, with their own greeting, as
    // `kubectl apply --server-side` does.
    ctx.kube().apply(&json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "app-settings", "namespace": ns },
        "data": { "greeting": "set by hand" },
    }));
    ctx.write("main.tf", &config("1"));

    let run = ctx.tf.apply(&[]).assert_clean_error().assert_no_crash();
    eprintln!("[ownership] conflict diagnostic:\n{}", run.stderr);
    let stderr = run.stderr.replace('\n', " ");
    for needle in [
        "ConfigMap",
        "app-settings",
        ".data.greeting",
        "\"kubectl\"",
        "delete the object",
    ] {
        assert!(
            stderr.contains(needle),
            "the diagnostic must say `{needle}`:\n{run}"
        );
    }

    let cm = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(ns), "app-settings");
    assert_eq!(cm["data"]["greeting"], "set by hand", "{cm:#}");
    assert_eq!(owners_of_data_key(&cm, "greeting"), ["kubectl"], "{cm:#}");
}

#[test]
fn a_field_of_ours_taken_by_a_forced_apply_is_restored_by_the_next_run() {
    let ctx = TestContext::new("ownership-drift");
    let ns = ctx.namespace.as_str();
    ctx.write("main.tf", &config("1"));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let cm = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(ns), "app-settings");
    assert_eq!(cm["data"]["greeting"], "hi", "{cm:#}");
    assert_eq!(owners_of_data_key(&cm, "greeting"), [MANAGER], "{cm:#}");

    // `kubectl apply --server-side --force-conflicts` of a different greeting: kubectl
    // now owns the field and we no longer do.
    let taken = ctx.kube().apply(&json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "app-settings", "namespace": ns },
        "data": { "greeting": "changed out of band" },
    }));
    assert_eq!(taken["data"]["greeting"], "changed out of band");
    assert_eq!(
        owners_of_data_key(&taken, "greeting"),
        ["kubectl"],
        "{taken:#}"
    );

    // Running deploy again applies our greeting: drift, repaired by forcing.
    ctx.write("main.tf", &config("2"));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let cm = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(ns), "app-settings");
    assert_eq!(cm["data"]["greeting"], "hi", "{cm:#}");
    assert_eq!(owners_of_data_key(&cm, "greeting"), [MANAGER], "{cm:#}");
    assert_eq!(
        ctx.tf.state().attr_str("kudo_instance.this", "status"),
        "COMPLETE"
    );
}
