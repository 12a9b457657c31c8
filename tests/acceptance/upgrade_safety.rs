//! Operator upgrades that would lose data fail `terraform plan` before anything is
//! written: each CRD upgrade-safety rule refuses a plan (`crd_upgrade_safety`, default
//! `enforce`; `warn` and `off` let it through), and an operator downgrade is refused
//! unless `allow_downgrade` is set.

use serde_json::{Value, json};

use crate::harness::{PREAMBLE, TestContext, flat, local_instance_config, serial_operator_yaml};

const CRD: (&str, &str) = ("apiextensions.k8s.io/v1", "CustomResourceDefinition");

/// A package applying the CRD, then one Widget of it.
fn write_package(ctx: &TestContext, crd: &Value, widget: &Value) {
    write_package_at(ctx, "0.1.0", crd, widget);
}

/// [`write_package`] with its operatorVersion.
fn write_package_at(ctx: &TestContext, version: &str, crd: &Value, widget: &Value) {
    ctx.write(
        "operator/operator.yaml",
        &serial_operator_yaml("widgets", version, &["crd", "widget"]),
    );
    // JSON is YAML; the group carries the namespace so that tests sharing a real
    // cluster never touch each other's CRD.
    let templated = |v: &Value| {
        v.to_string()
            .replace("NS.example.com", "{{ .Namespace }}.example.com")
    };
    ctx.write("operator/templates/crd.yaml", &templated(crd));
    ctx.write("operator/templates/widget.yaml", &templated(widget));
}

fn write_config(ctx: &TestContext, instance_settings: &str) {
    ctx.write("main.tf", &local_instance_config("w", instance_settings));
}

fn version(name: &str, served: bool, storage: bool, spec: Value) -> Value {
    json!({
        "name": name, "served": served, "storage": storage,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}
    })
}

fn crd(versions: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.NS.example.com"},
        "spec": {
            "group": "NS.example.com",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": versions
        }
    })
}

fn widget(version: &str, spec: Value) -> Value {
    json!({
        "apiVersion": format!("NS.example.com/{version}"),
        "kind": "Widget",
        "metadata": {"name": "{{ .Name }}-widget"},
        "spec": spec
    })
}

/// A schema whose fields every rule can narrow.
fn spec_schema() -> Value {
    json!({"type": "object", "properties": {
        "size": {"type": "integer", "minimum": 0, "maximum": 10},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "label": {"type": "string", "maxLength": 20},
        "tags": {"type": "array", "maxItems": 5, "items": {"type": "string"}}
    }})
}

fn widget_spec() -> Value {
    json!({"size": 3, "mode": "a", "label": "abc", "tags": ["x"]})
}

fn crd_name(ctx: &TestContext) -> String {
    format!("widgets.{}.example.com", ctx.namespace)
}

/// The CRD as the cluster holds it: its spec, which a refused plan must leave alone.
fn crd_spec(ctx: &TestContext) -> Value {
    ctx.kube()
        .must_get(CRD.0, CRD.1, None, &crd_name(ctx))
        .get("spec")
        .cloned()
        .unwrap_or(Value::Null)
}

/// Installs `before` with one Widget, then changes the package to `after` and checks
/// that `terraform plan` fails with each of `expected` and leaves the CRD alone.
#[track_caller]
fn refused(
    name: &str,
    before: (Value, Value),
    after: (Value, Value),
    expected: &[&str],
) -> TestContext {
    let ctx = TestContext::new(name);
    write_package(&ctx, &before.0, &before.1);
    write_config(&ctx, "");
    ctx.tf.apply(&[]).assert_success();
    let installed = crd_spec(&ctx);
    write_package(&ctx, &after.0, &after.1);
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let out = flat(&run.output());
    let mut expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    expected.push("Unsafe CRD change".into());
    expected.push(crd_name(&ctx));
    expected.push("crd_upgrade_safety".into());
    for text in &expected {
        assert!(
            out.contains(text.as_str()),
            "terraform plan does not say {text:?}:\n{run}"
        );
    }
    assert_eq!(
        crd_spec(&ctx),
        installed,
        "the refused plan changed the CRD"
    );
    ctx
}

fn one_version(spec: Value) -> Value {
    crd(json!([version("v1", true, true, spec)]))
}

fn with_spec_field(field: &str, schema: Value) -> Value {
    let mut s = spec_schema();
    s["properties"][field] = schema;
    s
}

#[test]
fn a_stored_version_dropped_is_refused() {
    let before = crd(json!([version("v1alpha1", true, true, spec_schema())]));
    let after = one_version(spec_schema());
    refused(
        "crd-stored",
        (before, widget("v1alpha1", widget_spec())),
        (after, widget("v1", widget_spec())),
        &[
            "rule stored-version-removed at version v1alpha1",
            "status.storedVersions",
        ],
    );
}

#[test]
fn a_served_version_dropped_while_objects_exist_is_refused() {
    let before = crd(json!([
        version("v1", true, true, spec_schema()),
        version("v1beta1", true, false, spec_schema())
    ]));
    let after = one_version(spec_schema());
    refused(
        "crd-served",
        (before, widget("v1", widget_spec())),
        (after, widget("v1", widget_spec())),
        &[
            "rule served-version-removed at version v1beta1",
            "1 object in the cluster",
            "1 affected",
        ],
    );
}

#[test]
fn a_field_type_changed_is_refused() {
    let after = one_version(with_spec_field("size", json!({"type": "string"})));
    refused(
        "crd-type",
        (one_version(spec_schema()), widget("v1", widget_spec())),
        (after, widget("v1", json!({"size": "3"}))),
        &[
            "rule type-changed at version v1, field spec.size",
            "type integer -> string",
        ],
    );
}

#[test]
fn a_newly_required_field_is_refused_by_plan_and_apply() {
    let mut schema = spec_schema();
    schema["required"] = json!(["mode", "owner"]);
    schema["properties"]["owner"] = json!({"type": "string"});
    let ctx = refused(
        "crd-required",
        (one_version(spec_schema()), widget("v1", widget_spec())),
        (one_version(schema), widget("v1", widget_spec())),
        &[
            "rule newly-required at version v1, field spec.mode",
            "rule newly-required at version v1, field spec.owner",
        ],
    );
    // `terraform apply` plans again and refuses the same way, before writing anything.
    let before = crd_spec(&ctx);
    let run = ctx.tf.apply(&[]).assert_clean_error();
    assert!(flat(&run.output()).contains("Unsafe CRD change"), "{run}");
    assert_eq!(crd_spec(&ctx), before, "the refused apply changed the CRD");
}

#[test]
fn an_enum_narrowed_is_refused() {
    let after = one_version(with_spec_field(
        "mode",
        json!({"type": "string", "enum": ["a"]}),
    ));
    refused(
        "crd-enum",
        (one_version(spec_schema()), widget("v1", widget_spec())),
        (after, widget("v1", widget_spec())),
        &[
            "rule enum-narrowed at version v1, field spec.mode",
            "enum drops \"b\"",
        ],
    );
}

#[test]
fn a_maximum_or_minimum_narrowed_is_refused() {
    let after = one_version(with_spec_field(
        "size",
        json!({"type": "integer", "minimum": 1, "maximum": 5}),
    ));
    refused(
        "crd-bounds",
        (one_version(spec_schema()), widget("v1", widget_spec())),
        (after, widget("v1", widget_spec())),
        &[
            "rule maximum-narrowed at version v1, field spec.size",
            "rule minimum-narrowed at version v1, field spec.size",
        ],
    );
}

#[test]
fn a_max_length_narrowed_is_refused() {
    let after = one_version(with_spec_field(
        "label",
        json!({"type": "string", "maxLength": 10}),
    ));
    refused(
        "crd-maxlength",
        (one_version(spec_schema()), widget("v1", widget_spec())),
        (after, widget("v1", widget_spec())),
        &[
            "rule maxLength-narrowed at version v1, field spec.label",
            "maxLength 20 -> 10",
        ],
    );
}

#[test]
fn a_pattern_added_is_refused() {
    let after = one_version(with_spec_field(
        "label",
        json!({"type": "string", "maxLength": 20, "pattern": "^[a-z]+$"}),
    ));
    refused(
        "crd-pattern",
        (one_version(spec_schema()), widget("v1", widget_spec())),
        (after, widget("v1", widget_spec())),
        &["rule pattern-changed at version v1, field spec.label"],
    );
}

#[test]
fn max_items_narrowed_is_refused() {
    let after = one_version(with_spec_field(
        "tags",
        json!({"type": "array", "maxItems": 2, "items": {"type": "string"}}),
    ));
    refused(
        "crd-maxitems",
        (one_version(spec_schema()), widget("v1", widget_spec())),
        (after, widget("v1", widget_spec())),
        &[
            "rule maxItems-narrowed at version v1, field spec.tags",
            "maxItems 5 -> 2",
        ],
    );
}

#[test]
fn a_scope_change_is_refused() {
    let mut after = one_version(spec_schema());
    after["spec"]["scope"] = json!("Cluster");
    refused(
        "crd-scope",
        (one_version(spec_schema()), widget("v1", widget_spec())),
        (after, widget("v1", widget_spec())),
        &["rule scope-changed", "from Namespaced to Cluster"],
    );
}

#[test]
fn a_conversion_webhook_removed_is_refused() {
    // v2 is not served, so that no client (the garbage collector lists every served
    // version) ever asks the webhook, which does not exist, for a conversion.
    let versions = json!([
        version("v1", true, true, spec_schema()),
        version("v2", false, false, spec_schema())
    ]);
    let mut before = crd(versions.clone());
    before["spec"]["conversion"] = json!({
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"service": {"namespace": "default", "name": "widget-conversion", "path": "/convert", "port": 443}}
        }
    });
    let mut after = crd(versions);
    after["spec"]["conversion"] = json!({"strategy": "None"});
    refused(
        "crd-conversion",
        (before, widget("v1", widget_spec())),
        (after, widget("v1", widget_spec())),
        &["rule conversion-removed", "from Webhook to None"],
    );
}

/// With `warn` the plan warns with the same findings and the apply changes the CRD;
/// with `off` nothing is said.
#[test]
fn warn_and_off_let_an_unsafe_change_through() {
    for (mode, warns) in [("warn", true), ("off", false)] {
        let ctx = TestContext::new(&format!("crd-{mode}"));
        write_package(
            &ctx,
            &one_version(spec_schema()),
            &widget("v1", widget_spec()),
        );
        write_config(&ctx, &format!("crd_upgrade_safety = {mode:?}"));
        ctx.tf.apply(&[]).assert_success();
        let narrowed = with_spec_field("label", json!({"type": "string", "maxLength": 10}));
        write_package(&ctx, &one_version(narrowed), &widget("v1", widget_spec()));
        let run = ctx.tf.apply(&[]).assert_success();
        let out = flat(&run.output());
        assert_eq!(
            out.contains("Unsafe CRD change to"),
            warns,
            "crd_upgrade_safety = {mode:?}:\n{run}"
        );
        if warns {
            assert!(
                out.contains("rule maxLength-narrowed at version v1, field spec.label"),
                "{run}"
            );
        }
        let spec = crd_spec(&ctx);
        assert_eq!(
            spec.pointer(
                "/versions/0/schema/openAPIV3Schema/properties/spec/properties/label/maxLength"
            )
            .and_then(Value::as_i64),
            Some(10),
            "crd_upgrade_safety = {mode:?}: the CRD was not changed"
        );
    }
}

#[test]
fn an_invalid_crd_upgrade_safety_names_the_choices() {
    let ctx = TestContext::new("crd-invalid-mode");
    write_package(
        &ctx,
        &one_version(spec_schema()),
        &widget("v1", widget_spec()),
    );
    write_config(&ctx, "crd_upgrade_safety = \"strict\"");
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let out = flat(&run.output());
    for text in [
        "Invalid crd_upgrade_safety",
        "\"enforce\" or \"warn\" or \"off\"",
    ] {
        assert!(out.contains(text), "{text:?}:\n{run}");
    }
    ctx.mark_cleaned();
}

/// A small package at `version`, in `operator-<version>`.
fn write_versioned_package(ctx: &TestContext, version: &str) {
    ctx.write(
        &format!("operator-{version}/operator.yaml"),
        &serial_operator_yaml("versioned", version, &["config"]),
    );
    ctx.write(
        &format!("operator-{version}/templates/config.yaml"),
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Name }}}}-config\ndata:\n  version: \"{version}\"\n"
        ),
    );
}

fn write_versioned_config(ctx: &TestContext, version: &str, allow: bool) {
    ctx.write(
        "main.tf",
        &format!(
            r#"{PREAMBLE}
resource "kudo_operator" "op" {{
  package   = "${{path.module}}/operator-{version}"
  namespace = var.namespace
}}

resource "kudo_instance" "v" {{
  name            = "v"
  namespace       = var.namespace
  operator        = kudo_operator.op.id
  allow_downgrade = {allow}
}}
"#
        ),
    );
}

#[test]
fn a_downgrade_is_refused_unless_allowed() {
    let ctx = TestContext::new("downgrade");
    write_versioned_package(&ctx, "0.2.0");
    write_versioned_package(&ctx, "0.1.0");
    write_versioned_config(&ctx, "0.2.0", false);
    ctx.tf.apply(&[]).assert_success();
    let config = |ctx: &TestContext| {
        ctx.kube()
            .must_get("v1", "ConfigMap", Some(&ctx.namespace), "v-config")
            .pointer("/data/version")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    assert_eq!(config(&ctx).as_deref(), Some("0.2.0"));

    write_versioned_config(&ctx, "0.1.0", false);
    for command in ["plan", "apply"] {
        let run = match command {
            "plan" => ctx.tf.plan(&[]),
            _ => ctx.tf.apply(&[]),
        }
        .assert_clean_error();
        let out = flat(&run.output());
        for text in [
            "Operator downgrade",
            "versioned 0.2.0 to the older 0.1.0",
            "upgraded version 0.1.0 is the same or smaller as current version 0.2.0 -> not upgrading",
            "allow_downgrade = true",
        ] {
            assert!(
                out.contains(text),
                "terraform {command} does not say {text:?}:\n{run}"
            );
        }
        assert_eq!(
            config(&ctx).as_deref(),
            Some("0.2.0"),
            "terraform {command} downgraded"
        );
    }

    write_versioned_config(&ctx, "0.1.0", true);
    let run = ctx.tf.apply(&[]).assert_success();
    assert!(
        flat(&run.output()).contains("Operator downgrade allowed"),
        "{run}"
    );
    assert_eq!(config(&ctx).as_deref(), Some("0.1.0"));
    let instance = ctx
        .kube()
        .instance(&ctx.namespace, "v")
        .expect("the Instance exists");
    assert_eq!(
        instance
            .pointer("/spec/operatorVersion/name")
            .and_then(Value::as_str),
        Some("versioned-0.1.0")
    );
    // Going forward again needs no flag.
    write_versioned_config(&ctx, "0.2.0", false);
    ctx.tf.apply(&[]).assert_success();
    assert_eq!(config(&ctx).as_deref(), Some("0.2.0"));
}

/// With the check off, the API server's own rule still holds: a stored version cannot
/// leave spec.versions, and the dry-run fails the plan with the server's words.
#[test]
fn with_the_check_off_the_api_server_still_refuses_a_stored_version_dropped() {
    let ctx = TestContext::new("crd-stored-off");
    let before = crd(json!([version("v1alpha1", true, true, spec_schema())]));
    write_package(&ctx, &before, &widget("v1alpha1", widget_spec()));
    write_config(&ctx, "crd_upgrade_safety = \"off\"");
    ctx.tf.apply(&[]).assert_success();
    let installed = crd_spec(&ctx);
    write_package(
        &ctx,
        &one_version(spec_schema()),
        &widget("v1", widget_spec()),
    );
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let out = flat(&run.output());
    for text in [
        "The API server refuses this object",
        // 1.24 ends "must appear in spec.versions", 1.36 "missing from spec.versions; ...".
        "status.storedVersions[0]: Invalid value: \"v1alpha1\"",
        "spec.versions",
    ] {
        assert!(
            out.contains(text),
            "terraform plan does not say {text:?}:\n{run}"
        );
    }
    assert!(!out.contains("Unsafe CRD change"), "{run}");
    assert_eq!(
        crd_spec(&ctx),
        installed,
        "the refused plan changed the CRD"
    );
}

/// A dependency instance's CRD is not dry-run at plan time (children are planned by
/// name and version), so the run checks it before the step writes: the apply fails
/// naming the rule, and the CRD stays as it was.
#[test]
fn a_dependency_instances_unsafe_crd_change_is_refused_before_it_is_written() {
    let ctx = TestContext::new("crd-child");
    let child = |version: &str, crd: &Value| {
        write_package_at(&ctx, version, crd, &widget("v1", widget_spec()));
    };
    child("0.1.0", &one_version(spec_schema()));
    ctx.write(
        "parent/operator.yaml",
        r#"apiVersion: kudo.dev/v1beta1
name: parent
operatorVersion: 0.1.0
kudoVersion: 0.19.0
kubernetesVersion: 1.20.0
maintainers:
  - name: tests
    email: tests@example.com
url: https://example.com
tasks:
  - name: widgets
    kind: KudoOperator
    spec:
      package: ../operator
plans:
  deploy:
    strategy: serial
    phases:
      - name: deploy
        strategy: serial
        steps:
          - name: widgets
            tasks:
              - widgets
"#,
    );
    ctx.write(
        "main.tf",
        &format!(
            r#"{PREAMBLE}
resource "kudo_operator" "op" {{
  package   = "${{path.module}}/parent"
  namespace = var.namespace
}}

resource "kudo_instance" "p" {{
  name      = "p"
  namespace = var.namespace
  operator  = kudo_operator.op.id
}}
"#
        ),
    );
    ctx.tf.apply(&[]).assert_success();
    let installed = crd_spec(&ctx);
    let mut schema = spec_schema();
    schema["required"] = json!(["mode"]);
    child("0.2.0", &one_version(schema));
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let out = flat(&run.output());
    for text in [
        "rule newly-required at version v1, field spec.mode",
        "1 affected",
        "crd_upgrade_safety",
    ] {
        assert!(
            out.contains(text),
            "terraform apply does not say {text:?}:\n{run}"
        );
    }
    assert_eq!(
        crd_spec(&ctx),
        installed,
        "the dependency's run changed the CRD"
    );
}
