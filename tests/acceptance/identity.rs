//! Resource identity (Terraform 1.12+): `kudo_instance` and `kudo_operator` carry an
//! identity in the state, and `import` blocks may name what to adopt by identity
//! instead of an id string.

use serde_json::json;

use crate::harness::{Feature, TestContext, lacks};
use crate::skip;

const OV_NAME: &str = "webapp-1.27.0-0.1.0";

/// Why the client in use has no resource identity (Terraform before 1.12, OpenTofu
/// before 1.12).
fn without_identity() -> Option<String> {
    lacks(Feature::Identity)
}

#[test]
fn instances_and_operators_are_imported_by_identity() {
    if let Some(why) = without_identity() {
        skip!("{why}");
    }
    let ctx = TestContext::new("identity");
    crate::quickstart::use_quickstart_without_timeouts(&ctx);
    let ns = ctx.namespace.as_str();
    ctx.tf.apply(&[]).assert_success();

    // What Terraform stored beside the state.
    let identities = ctx.tf.stored_identities();
    assert_eq!(
        identities.get("kudo_instance.web"),
        Some(&json!({"namespace": ns, "name": "web"})),
        "{identities:#?}"
    );
    assert_eq!(
        identities.get("kudo_operator.webapp"),
        Some(&json!({"namespace": ns, "name": "webapp", "version": "0.1.0"})),
        "{identities:#?}"
    );

    // Terraform forgets both; the cluster keeps them.
    ctx.tf
        .run(&["state", "rm", "kudo_instance.web", "kudo_operator.webapp"])
        .assert_success();
    assert!(ctx.kube().instance(ns, "web").is_some());

    ctx.write(
        "imports.tf",
        &format!(
            r#"import {{
  to       = kudo_operator.webapp
  identity = {{ namespace = "{ns}", name = "webapp", version = "0.1.0" }}
}}

import {{
  to       = kudo_instance.web
  identity = {{ namespace = "{ns}", name = "web" }}
}}
"#
        ),
    );
    let plan = ctx.tf.plan(&[]).assert_success();
    assert!(
        plan.stdout.contains("kudo_instance.web: Preparing import")
            || plan.stdout.contains("will be imported"),
        "{plan}"
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let state = ctx.tf.state();
    let instance = state.resource("kudo_instance.web").expect("imported");
    assert_eq!(instance["status"], "COMPLETE", "{instance:#}");
    assert_eq!(instance["operator"], format!("{ns}/{OV_NAME}").as_str());
    let operator = state.resource("kudo_operator.webapp").expect("imported");
    assert_eq!(operator["operator_version_name"], OV_NAME, "{operator:#}");
    assert_eq!(
        ctx.tf.stored_identities().get("kudo_instance.web"),
        Some(&json!({"namespace": ns, "name": "web"}))
    );

    let again = ctx.tf.plan(&["-detailed-exitcode"]);
    assert_eq!(
        again.code,
        Some(0),
        "the configuration matches what was imported:\n{again}"
    );
}

#[test]
fn an_identity_that_names_nothing_says_what_is_missing() {
    if let Some(why) = without_identity() {
        skip!("{why}");
    }
    let ctx = TestContext::new("identity-missing");
    crate::quickstart::use_quickstart_without_timeouts(&ctx);
    let ns = ctx.namespace.as_str();
    ctx.write(
        "imports.tf",
        &format!(
            r#"import {{
  to       = kudo_operator.webapp
  identity = {{ namespace = "{ns}", name = "webapp", version = "9.9.9" }}
}}
"#
        ),
    );
    let plan = ctx.tf.plan(&[]);
    assert!(!plan.success(), "{plan}");
    let out = plan.flat_output();
    assert!(
        out.contains("There is no OperatorVersion of operator \"webapp\" at version \"9.9.9\"")
            && out.contains(ns),
        "{plan}"
    );
}

/// `ImportResourceState` with an identity: a `kudo_instance` identity is its import id,
/// `<namespace>/<name>`, the namespace `default` when null; without a `name` it is
/// refused naming it.
#[test]
fn an_instance_identity_is_its_import_id_with_the_default_namespace() {
    use crate::harness::rpc::{block_on, connected, text, wire};
    use tfplugin::{Provider, Value};

    let ctx = TestContext::new("identity-import-id");
    let ns = ctx.namespace.as_str();
    let provider = connected(&ctx);
    let ty = crate::harness::rpc::schemas().identities["kudo_instance"].value_type();
    let import = |namespace: Value, name: Value| {
        let identity = wire(
            &Value::object([("namespace", namespace), ("name", name)]),
            &ty,
        );
        let resp = block_on(provider.import_resource_identity("kudo_instance", identity));
        assert!(resp.imported.is_empty(), "{:?}", resp.imported);
        text(&resp.diagnostics)
    };
    let named = import(Value::string(ns), Value::string("kudo-test-absent"));
    assert!(
        named.contains(&format!(
            "There is no Instance kudo-test-absent in namespace {ns}."
        )),
        "{named}"
    );
    let defaulted = import(Value::Null, Value::string("kudo-test-absent"));
    assert!(
        defaulted.contains("There is no Instance kudo-test-absent in namespace default."),
        "{defaulted}"
    );
    let missing = import(Value::string(ns), Value::Null);
    assert!(missing.contains("`name`"), "{missing}");
}
