//! `kudo_instance.preview`: `terraform plan` says which objects the apply will create,
//! update or delete, from a server-side dry-run.

use serde_json::Value;

use crate::harness::{PREAMBLE, TestContext};

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

/// The objects `preview.<key>` names (the keys of that map, in order), after checking
/// that each entry holds an apiVersion.
fn list(v: &Value, key: &str) -> Vec<String> {
    let map = v[key]
        .as_object()
        .unwrap_or_else(|| panic!("preview.{key} is not a map: {v:#}"));
    for (object, version) in map {
        assert!(
            version.as_str().is_some_and(|v| v.contains('v')),
            "preview.{key}[{object:?}] is not an apiVersion: {v:#}"
        );
    }
    map.keys().cloned().collect()
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
            format!("Deployment.apps {ns}/web"),
            format!("Service {ns}/web"),
        ],
        "{preview:#}"
    );
    assert!(list(&preview, "update").is_empty(), "{preview:#}");
    assert!(
        stdout.contains(&format!("\"Deployment.apps {ns}/web\"")),
        "the plan output does not show the preview:\n{stdout}"
    );

    ctx.tf.apply(&[]).assert_success();
    // Keyed as `objects` is (which the harness checks against each object's kind,
    // group, namespace and name).
    let state = ctx.tf.state();
    let web = state
        .resource("kudo_instance.web")
        .expect("kudo_instance.web");
    crate::harness::managed_objects(web);
    let mut objects: Vec<String> = web["objects"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    objects.sort();
    assert_eq!(
        objects, create,
        "objects and the preview name the same objects"
    );
    // Nothing planned: the preview of the last apply stays, with no diff.
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    // Only the Deployment uses REPLICAS; the ConfigMap and Service stay as they are.
    let (stdout, preview) = planned_preview(&ctx, &["-var", "replicas=3"]);
    assert_eq!(
        list(&preview, "update"),
        [format!("Deployment.apps {ns}/web")],
        "{preview:#}"
    );
    assert!(list(&preview, "create").is_empty(), "{preview:#}");
    assert!(list(&preview, "delete").is_empty(), "{preview:#}");
    assert!(
        stdout.contains(&format!("\"Deployment.apps {ns}/web\"")),
        "the plan output does not show the object to update:\n{stdout}"
    );
}

const PRUNE_OPERATOR: &str = r#"apiVersion: kudo.dev/v1beta1
name: prune
operatorVersion: 0.1.0
kudoVersion: 0.19.0
kubernetesVersion: 1.20.0
maintainers:
  - name: tests
    email: tests@example.com
url: https://example.com
tasks:
  - name: app
    kind: Apply
    spec:
      resources:
        - cms.yaml
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: main
            tasks:
              - app
"#;

const PRUNE_PARAMS: &str = r#"apiVersion: kudo.dev/v1beta1
parameters:
  - name: EXTRA
    description: Whether the extra ConfigMap exists.
    default: "true"
"#;

const PRUNE_CMS: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-main
data:
  k: v
{{- if eq .Params.EXTRA "true" }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-extra
data:
  k: v
{{- end }}
"#;

#[test]
fn plan_previews_the_objects_a_change_prunes() {
    let ctx = TestContext::new("preview-prune");
    let ns = ctx.namespace.as_str();
    ctx.write("operator/operator.yaml", PRUNE_OPERATOR);
    ctx.write("operator/params.yaml", PRUNE_PARAMS);
    ctx.write("operator/templates/cms.yaml", PRUNE_CMS);
    let main = |extra: &str| {
        format!(
            r#"{PREAMBLE}
resource "kudo_operator" "op" {{
  package   = "${{path.module}}/operator"
  namespace = var.namespace
}}
resource "kudo_instance" "web" {{
  name       = "web"
  namespace  = var.namespace
  operator   = kudo_operator.op.id
  parameters = {{ EXTRA = "{extra}" }}
}}
"#
        )
    };
    ctx.write("main.tf", &main("true"));
    ctx.tf.apply(&[]).assert_success();

    ctx.write("main.tf", &main("false"));
    let (stdout, preview) = planned_preview(&ctx, &[]);
    assert_eq!(
        list(&preview, "delete"),
        [format!("ConfigMap {ns}/web-extra")],
        "{preview:#}"
    );
    assert!(list(&preview, "create").is_empty(), "{preview:#}");
    assert!(list(&preview, "update").is_empty(), "{preview:#}");
    assert!(
        stdout.contains(&format!("\"ConfigMap {ns}/web-extra\"")),
        "{stdout}"
    );
    // What the preview promised is what the apply does.
    ctx.tf.apply(&[]).assert_success();
    assert!(
        ctx.kube()
            .get("v1", "ConfigMap", Some(ns), "web-extra")
            .is_none()
    );
    assert!(
        ctx.kube()
            .get("v1", "ConfigMap", Some(ns), "web-main")
            .is_some()
    );
}

/// Terraform plans again during the apply and insists the two plans agree, so the
/// preview must not depend on what the cluster holds at either moment.
#[test]
fn a_saved_plan_applies_after_the_cluster_changed_underneath() {
    let ctx = TestContext::new("preview-saved");
    ctx.use_example("quickstart");
    let ns = ctx.namespace.as_str();
    ctx.tf.apply(&[]).assert_success();

    let (_, preview) = planned_preview(&ctx, &["-var", "replicas=3"]);
    assert_eq!(
        list(&preview, "update"),
        [format!("Deployment.apps {ns}/web")],
        "{preview:#}"
    );
    ctx.kube().delete("v1", "Service", Some(ns), "web");
    let run = ctx
        .tf
        .run(&["apply", "-input=false", "-no-color", "tfplan"])
        .assert_success()
        .assert_no_crash();
    assert!(
        !run.output().contains("inconsistent"),
        "Terraform rejected the provider's second plan:\n{run}"
    );
    let deploy = ctx
        .kube()
        .must_get("apps/v1", "Deployment", Some(ns), "web");
    assert_eq!(deploy["spec"]["replicas"], 3, "{deploy:#}");
    // The plan showed the Service's uid, which its re-creation changed: the next
    // refresh records the new one, and our own re-creation is no drift.
    ctx.tf
        .plan(&["-detailed-exitcode", "-var", "replicas=3"])
        .assert_success()
        .assert_output_contains("No changes");
    ctx.tf
        .apply(&["-refresh-only", "-var", "replicas=3"])
        .assert_success();
    let service = ctx.kube().must_get("v1", "Service", Some(ns), "web");
    let state = ctx.tf.state();
    let web = state
        .resource("kudo_instance.web")
        .expect("kudo_instance.web");
    assert_eq!(
        web["objects"][format!("Service {ns}/web")]["uid"],
        service["metadata"]["uid"],
        "{web:#}"
    );
}
