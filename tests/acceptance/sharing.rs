//! Nothing is lost and nothing is taken (issue "Nothing is lost"): instances that share
//! cluster-scoped objects (a CRD, a ClusterRole with a fixed name) keep them for each
//! other, a CRD never takes another instance's custom resources with it, destroying a
//! package with a CRD and its custom resource is reliable, and a second configuration
//! cannot take over an instance another one manages. Package:
//! `tests/fixtures/operators/shared-api` (CRD `widgets.<GROUP>`, ClusterRole
//! `<ROLE_NAME>`, a Widget and a ConfigMap per instance).

use std::path::Path;

use serde_json::Value;

use std::collections::BTreeSet;

use crate::harness::{Terraform, TestContext, own_operator};

const CRD_API: &str = "apiextensions.k8s.io/v1";
const RBAC_API: &str = "rbac.authorization.k8s.io/v1";

/// Group and ClusterRole name of one test: unique, so tests sharing a real cluster do
/// not meet.
fn names(ctx: &TestContext) -> (String, String) {
    (
        format!("{}.kudo.dev", ctx.namespace),
        format!("{}-reader", ctx.namespace),
    )
}

/// One configuration: the shared-api operator and instance `name` in `namespace`.
fn config(name: &str, namespace: &str, group: &str, role: &str, extra: &str) -> String {
    let package = own_operator("shared-api").display().to_string();
    format!(
        r#"terraform {{
  required_providers {{
    kudo = {{
      source = "kudo/kudo"
    }}
  }}
}}

provider "kudo" {{}}

resource "kudo_operator" "this" {{
  package   = {package:?}
  namespace = {namespace:?}
}}

resource "kudo_instance" "this" {{
  name      = {name:?}
  namespace = {namespace:?}
  operator  = kudo_operator.this.id
  parameters = {{
    GROUP     = {group:?}
    ROLE_NAME = {role:?}
  }}
{extra}
}}
"#
    )
}

/// A second Terraform working folder with the test's environment: another
/// configuration (another state) against the same cluster.
fn other_configuration(ctx: &TestContext, dir: &str, main_tf: &str) -> Terraform {
    let mut tf = ctx.tf.clone();
    tf.workdir = ctx.workdir.with_file_name(dir);
    std::fs::create_dir_all(&tf.workdir).expect("second work dir");
    std::fs::write(tf.workdir.join("main.tf"), main_tf).expect("write main.tf");
    tf
}

fn write_config(dir: &Path, main_tf: &str) {
    std::fs::write(dir.join("main.tf"), main_tf).expect("write main.tf");
}

fn crd_name(group: &str) -> String {
    format!("widgets.{group}")
}

/// The instances the object's `kudo.dev/used-by` annotation records.
fn used_by(obj: &Value) -> BTreeSet<String> {
    obj.pointer("/metadata/annotations/kudo.dev~1used-by")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Deletes what a test left in the cluster on purpose (real clusters keep it).
fn remove_crd(ctx: &TestContext, group: &str) {
    if ctx
        .kube()
        .get(CRD_API, "CustomResourceDefinition", None, &crd_name(group))
        .is_some()
    {
        ctx.kube()
            .delete(CRD_API, "CustomResourceDefinition", None, &crd_name(group));
    }
}

#[test]
fn destroying_one_instance_keeps_the_shared_crd_clusterrole_and_the_other_instances_data() {
    let ctx = TestContext::new("share-crd");
    let (group, role) = names(&ctx);
    let ns_a = ctx.namespace.clone();
    let ns_b = format!("{ns_a}-b");
    ctx.kube().create_namespace(&ns_b);

    // Two configurations, as two teams would have them, one instance each.
    write_config(&ctx.workdir, &config("wa", &ns_a, &group, &role, ""));
    let tf_b = other_configuration(&ctx, "team-b", &config("wb", &ns_b, &group, &role, ""));
    ctx.tf.apply(&[]).assert_success();
    tf_b.apply(&[]).assert_success();

    let kube = ctx.kube();
    let crd = kube.must_get(CRD_API, "CustomResourceDefinition", None, &crd_name(&group));
    let both = [format!("{ns_a}/wa"), format!("{ns_b}/wb")];
    let both = set(&[&both[0], &both[1]]);
    assert_eq!(used_by(&crd), both, "{crd:#}");
    let cr = kube.must_get(RBAC_API, "ClusterRole", None, &role);
    assert_eq!(used_by(&cr), both, "{cr:#}");
    let widget_api = format!("{group}/v1");
    let wb_uid = kube
        .must_get(&widget_api, "Widget", Some(&ns_b), "wb")
        .pointer("/metadata/uid")
        .cloned();

    // Team a goes away.
    let run = ctx.tf.destroy(&[]).assert_success();
    let out = run.flat_output();
    assert!(
        out.contains(&format!("still used by {ns_b}/wb")),
        "destroy should say why the shared objects stayed:\n{out}"
    );
    assert!(
        kube.get(&widget_api, "Widget", Some(&ns_a), "wa").is_none(),
        "a's own custom resource goes with a"
    );
    let widget = kube.must_get(&widget_api, "Widget", Some(&ns_b), "wb");
    assert_eq!(
        widget.pointer("/metadata/uid").cloned(),
        wb_uid,
        "b's Widget is the same object"
    );
    let crd = kube.must_get(CRD_API, "CustomResourceDefinition", None, &crd_name(&group));
    assert_eq!(used_by(&crd), set(&[&format!("{ns_b}/wb")]));
    let cr = kube.must_get(RBAC_API, "ClusterRole", None, &role);
    assert_eq!(used_by(&cr), set(&[&format!("{ns_b}/wb")]));

    // b sees nothing wrong: no drift, nothing to do.
    let plan = tf_b.plan(&["-detailed-exitcode"]);
    assert_eq!(plan.code, Some(0), "b's plan must be empty:\n{plan}");

    // The last user takes the shared objects with it.
    tf_b.destroy(&[]).assert_success();
    assert!(
        kube.get(CRD_API, "CustomResourceDefinition", None, &crd_name(&group))
            .is_none(),
        "the CRD goes with its last instance"
    );
    assert!(
        kube.get(RBAC_API, "ClusterRole", None, &role).is_none(),
        "the ClusterRole goes with its last instance"
    );
    ctx.kube().delete_namespace(&ns_b);
    ctx.mark_cleaned();
}

#[test]
fn a_crd_stays_while_custom_resources_it_does_not_manage_exist() {
    let ctx = TestContext::new("share-crd-data");
    let (group, role) = names(&ctx);
    let ns = ctx.namespace.clone();
    ctx.write("main.tf", &config("wa", &ns, &group, &role, ""));
    ctx.tf.apply(&[]).assert_success();
    // Someone keeps their own data in the operator's kind.
    let widget_api = format!("{group}/v1");
    ctx.kube().apply(&serde_json::json!({
        "apiVersion": widget_api,
        "kind": "Widget",
        "metadata": {"name": "hand-made", "namespace": ns},
        "spec": {"size": 3},
    }));

    let run = ctx.tf.destroy(&[]).assert_success();
    let out = run.flat_output();
    assert!(
        out.contains(&format!("Widget {ns}/hand-made")),
        "destroy should name the custom resource that kept the CRD:\n{out}"
    );
    assert!(
        ctx.kube()
            .get(&widget_api, "Widget", Some(&ns), "hand-made")
            .is_some()
    );
    assert!(
        ctx.kube()
            .get(&widget_api, "Widget", Some(&ns), "wa")
            .is_none()
    );
    assert!(
        ctx.kube()
            .get(RBAC_API, "ClusterRole", None, &role)
            .is_none()
    );
    ctx.kube()
        .delete(&widget_api, "Widget", Some(&ns), "hand-made");
    remove_crd(&ctx, &group);
    ctx.mark_cleaned();
}

#[test]
fn crd_deletion_keep_leaves_the_crd_and_removes_the_rest() {
    let ctx = TestContext::new("share-crd-keep");
    let (group, role) = names(&ctx);
    let ns = ctx.namespace.clone();
    ctx.write(
        "main.tf",
        &config("wa", &ns, &group, &role, "  crd_deletion = \"keep\"\n"),
    );
    ctx.tf.apply(&[]).assert_success();
    let run = ctx.tf.destroy(&[]).assert_success();
    assert!(
        !run.output().contains("kept"),
        "a setting the user chose is no warning:\n{run}"
    );
    let crd = ctx
        .kube()
        .must_get(CRD_API, "CustomResourceDefinition", None, &crd_name(&group));
    assert!(
        used_by(&crd).is_empty(),
        "nobody uses the kept CRD any more: {crd:#}"
    );
    assert!(
        ctx.kube()
            .get(RBAC_API, "ClusterRole", None, &role)
            .is_none()
    );
    assert!(ctx.instance_objects("wa").is_empty());
    remove_crd(&ctx, &group);
    ctx.mark_cleaned();
}

#[test]
fn an_invalid_crd_deletion_is_named_at_plan_time() {
    let ctx = TestContext::new("share-crd-invalid");
    let (group, role) = names(&ctx);
    ctx.write(
        "main.tf",
        &config(
            "wa",
            &ctx.namespace,
            &group,
            &role,
            "  crd_deletion = \"always\"\n",
        ),
    );
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let out = run.flat_output();
    for part in [
        "Invalid crd_deletion",
        "crd_deletion",
        "\"when-unused\" or \"keep\"",
        "main.tf",
    ] {
        assert!(out.contains(part), "missing {part:?}:\n{out}");
    }
}

#[test]
fn a_package_with_a_crd_and_its_custom_resource_is_destroyed_twenty_times_in_a_row() {
    let ctx = TestContext::new("crd-destroy-loop");
    let (group, role) = names(&ctx);
    ctx.write("main.tf", &config("wa", &ctx.namespace, &group, &role, ""));
    for round in 1..=20 {
        let apply = ctx.tf.apply(&[]);
        assert!(apply.success(), "apply of round {round}:\n{apply}");
        let destroy = ctx.tf.destroy(&[]);
        assert!(destroy.success(), "destroy of round {round}:\n{destroy}");
        assert!(
            ctx.kube()
                .get(CRD_API, "CustomResourceDefinition", None, &crd_name(&group))
                .is_none(),
            "round {round} left the CRD"
        );
    }
    ctx.mark_cleaned();
}

#[test]
fn a_second_configuration_cannot_take_over_an_existing_instance() {
    let ctx = TestContext::new("share-takeover");
    let (group, role) = names(&ctx);
    let ns = ctx.namespace.clone();
    ctx.write("main.tf", &config("wb", &ns, &group, &role, ""));
    ctx.tf.apply(&[]).assert_success();
    let kube = ctx.kube();
    let before = kube.instance(&ns, "wb").expect("instance wb");
    let objects_before = ctx.instance_objects("wb");

    // Configuration c declares the same instance.
    let tf_c = other_configuration(&ctx, "team-c", &config("wb", &ns, &group, &role, ""));
    let plan = tf_c.plan(&[]).assert_clean_error();
    let out = plan.flat_output();
    for part in [
        format!("Instance {ns}/wb already exists"),
        "terraform-provider-kudo (another Terraform configuration or state)".to_string(),
        format!("terraform import kudo_instance.<resource> {ns}/wb"),
        "main.tf".to_string(),
    ] {
        assert!(out.contains(&part), "missing {part:?}:\n{out}");
    }
    let apply = tf_c.apply(&[]).assert_clean_error();
    assert!(apply.output().contains("already exists"), "{apply}");

    // Nothing in the cluster changed, and configuration b still plans empty.
    let after = kube.instance(&ns, "wb").expect("instance wb");
    assert_eq!(
        before.pointer("/metadata/resourceVersion"),
        after.pointer("/metadata/resourceVersion"),
        "the Instance was written to"
    );
    assert_eq!(objects_before, ctx.instance_objects("wb"));

    // c installing the operator alone (the same OperatorVersion b's instance runs)
    // and then going away leaves that version to b.
    let full = config("wb", &ns, &group, &role, "");
    let operator_only = &full[..full
        .find("resource \"kudo_instance\"")
        .expect("instance block")];
    write_config(&tf_c.workdir, operator_only);
    tf_c.apply(&[]).assert_success();
    let destroy_c = tf_c.destroy(&[]).assert_success();
    assert!(
        destroy_c
            .flat_output()
            .contains(&format!("still used by {ns}/wb")),
        "{destroy_c}"
    );
    assert!(
        kube.get(
            "kudo.dev/v1beta1",
            "OperatorVersion",
            Some(&ns),
            "shared-api-0.1.0"
        )
        .is_some(),
        "b's OperatorVersion was deleted"
    );
    let plan_b = ctx.tf.plan(&["-detailed-exitcode"]);
    assert_eq!(plan_b.code, Some(0), "{plan_b}");

    // Import is the way to adopt it.
    write_config(&tf_c.workdir, &full);
    tf_c.import("kudo_instance.this", &format!("{ns}/wb"), &[])
        .assert_success();
    ctx.tf.destroy(&[]).assert_success();
    remove_crd(&ctx, &group);
    ctx.mark_cleaned();
}

#[test]
fn an_object_of_another_instance_fails_the_plan_and_is_left_alone() {
    let ctx = TestContext::new("share-taken");
    let (group, role) = names(&ctx);
    let ns = ctx.namespace.clone();
    // Both instances name their ConfigMap the same.
    let fixed = |name: &str| {
        config(name, &ns, &group, &role, "").replace(
            "    ROLE_NAME = ",
            "    SETTINGS_NAME = \"shared-settings\"\n    ROLE_NAME = ",
        )
    };
    ctx.write("main.tf", &fixed("wb"));
    ctx.tf.apply(&[]).assert_success();
    let cm_before = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(&ns), "shared-settings");

    let tf_c = other_configuration(&ctx, "team-c", &fixed("wc"));
    let plan = tf_c.plan(&[]).assert_clean_error();
    let out = plan.flat_output();
    for part in [
        "Object belongs to another instance".to_string(),
        format!("ConfigMap {ns}/shared-settings"),
        "belongs to instance wb".to_string(),
        "templates/configmap.yaml".to_string(),
    ] {
        assert!(out.contains(&part), "missing {part:?}:\n{out}");
    }
    let apply = tf_c.apply(&[]).assert_clean_error();
    assert!(
        apply.flat_output().contains("belongs to instance wb"),
        "{apply}"
    );
    let cm_after = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(&ns), "shared-settings");
    assert_eq!(
        cm_before.pointer("/metadata/resourceVersion"),
        cm_after.pointer("/metadata/resourceVersion"),
        "wb's ConfigMap was written to"
    );
    assert!(
        ctx.kube().instance(&ns, "wc").is_none(),
        "nothing of wc was created"
    );
    ctx.tf.destroy(&[]).assert_success();
    remove_crd(&ctx, &group);
    ctx.mark_cleaned();
}

/// An Instance made without this provider (`kubectl`, or a parent instance's
/// KudoOperator task) is not taken over either: the refusal names who manages it, or
/// its parent, and how to import it instead.
#[test]
fn an_instance_made_elsewhere_is_refused_naming_its_manager_or_parent() {
    let ctx = TestContext::new("share-foreign");
    let ns = ctx.namespace.clone();
    let operator = crate::harness::operator_config(&crate::harness::own_operator("lifecycle-v1"));
    ctx.write("main.tf", &operator);
    ctx.tf.apply(&[]).assert_success();
    let instance = |name: &str, owners: serde_json::Value| {
        serde_json::json!({
            "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
            "metadata": {"name": name, "namespace": ns, "ownerReferences": owners},
            "spec": {"operatorVersion": {"name": "lifecycle-0.1.0"}},
        })
    };
    let kube = ctx.kube();
    kube.apply(&instance("by-hand", serde_json::json!([])));
    let parent = kube.apply(&instance("parent", serde_json::json!([])));
    let uid = parent["metadata"]["uid"].as_str().unwrap_or("1");
    kube.apply(&instance(
        "child",
        serde_json::json!([{"apiVersion": "kudo.dev/v1beta1", "kind": "Instance", "name": "parent", "uid": uid}]),
    ));
    for (name, expected) in [
        ("by-hand", "field managers: kubectl"),
        ("child", "it is a dependency of instance parent"),
    ] {
        ctx.write(
            "main.tf",
            &format!(
                "{operator}\nresource \"kudo_instance\" \"this\" {{\n  name      = {name:?}\n  namespace = var.namespace\n  operator  = kudo_operator.this.id\n}}\n"
            ),
        );
        let out = ctx.tf.plan(&[]).assert_clean_error().flat_output();
        for part in [
            format!("Instance {ns}/{name} already exists"),
            expected.to_string(),
            format!("id = \"{ns}/{name}\""),
            format!("terraform import kudo_instance.<resource> {ns}/{name}"),
            "another `name` or `namespace`".to_string(),
        ] {
            assert!(out.contains(&part), "{name}: missing {part:?}:\n{out}");
        }
    }
    for name in ["child", "parent", "by-hand"] {
        kube.delete("kudo.dev/v1beta1", "Instance", Some(&ns), name);
    }
}

/// Many objects of one kind are checked for another instance's hold with one LIST of
/// the namespace instead of a GET each (#48): the refusal is the same, and on kube-sim
/// neither the apply nor the refused plan reads a ConfigMap one by one, the apply's final
/// plan takes the first plan's dry-run answers for objects the LIST found as they were,
/// and the apply's step writes without rehearsing what its final plan judged.
#[test]
fn many_objects_of_another_instance_are_found_by_one_list_and_refused() {
    const FIXED: usize = 10;
    let ctx = TestContext::new("share-many");
    let ns = ctx.namespace.clone();
    let templates: Vec<String> = (1..=FIXED).map(|i| format!("fixed-{i}")).collect();
    let names: Vec<&str> = templates.iter().map(String::as_str).collect();
    ctx.write(
        "operator/operator.yaml",
        &crate::harness::one_task_operator_yaml("many-fixed", "0.1.0", "all", &names),
    );
    for t in &templates {
        // Not derived from the instance name: a second instance collides on each.
        ctx.write(
            &format!("operator/templates/{t}.yaml"),
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {t}\ndata:\n  k: v\n"),
        );
    }
    let instance = |name: &str| {
        format!(
            "resource \"kudo_instance\" {name:?} {{\n  name      = {name:?}\n  namespace = var.namespace\n  operator  = kudo_operator.many.id\n}}\n"
        )
    };
    let operator = format!(
        "{}\nresource \"kudo_operator\" \"many\" {{\n  package   = \"${{path.module}}/operator\"\n  namespace = var.namespace\n}}\n",
        crate::harness::PREAMBLE
    );
    ctx.write("main.tf", &format!("{operator}{}", instance("first")));
    let at_start = ctx.sim().map(|s| s.request_counts());
    ctx.tf.apply(&[]).assert_success();
    if let (Some(sim), Some(before)) = (ctx.sim(), at_start) {
        let after = sim.request_counts();
        let made = |key: &str| {
            after.get(key).copied().unwrap_or(0) - before.get(key).copied().unwrap_or(0)
        };
        // Dry-run by the plan, taken from there by the final plan (the same objects
        // found absent by its LIST: `cluster::dry_run_cache`), then written: the step
        // does not rehearse what the final plan judged moments before.
        assert_eq!(made("patch configmaps"), 2 * FIXED as u64, "{after:?}");
        assert_eq!(made("get configmaps"), 0, "{after:?}");
    }

    ctx.write(
        "main.tf",
        &format!("{operator}{}{}", instance("first"), instance("second")),
    );
    let before = ctx.sim().map(|s| s.request_counts());
    let plan = ctx.tf.plan(&[]).assert_clean_error();
    let out = plan.flat_output();
    for part in [
        "Object belongs to another instance".to_string(),
        format!("ConfigMap {ns}/fixed-1"),
        "belongs to instance first".to_string(),
    ] {
        assert!(out.contains(&part), "missing {part:?}:\n{out}");
    }
    if let (Some(sim), Some(before)) = (ctx.sim(), before) {
        let after = sim.request_counts();
        let made = |key: &str| {
            after.get(key).copied().unwrap_or(0) - before.get(key).copied().unwrap_or(0)
        };
        assert_eq!(
            made("get configmaps"),
            0,
            "the ConfigMaps were read one by one: {after:?}"
        );
        assert!(made("list configmaps") >= 1, "{after:?}");
    }
    assert!(ctx.kube().instance(&ns, "second").is_none());
    ctx.write("main.tf", &format!("{operator}{}", instance("first")));
    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
}
