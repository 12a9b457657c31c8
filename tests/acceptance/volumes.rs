//! Volumes on destroy: the PersistentVolumeClaims zookeeper's StatefulSet creates from
//! its `volumeClaimTemplates` are kept (and named) by default, and deleted with
//! `delete_volumes_on_destroy = true`. kube-sim creates the claims as the StatefulSet
//! controller does, so the test runs the same against a real cluster.

use std::collections::BTreeSet;
use std::path::Path;

use crate::harness::{PREAMBLE, TestContext, fixture_operator, flat};
use crate::skip;

fn config(package: &Path, delete_volumes: Option<bool>) -> String {
    let setting = delete_volumes
        .map(|d| format!("  delete_volumes_on_destroy = {d}\n"))
        .unwrap_or_default();
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
    NODE_COUNT = "2"
  }}
{setting}}}
"#,
        package = package.display().to_string()
    )
}

/// The claims in the namespace, by name.
fn claims(ctx: &TestContext) -> BTreeSet<String> {
    ctx.kube()
        .list_namespace(&ctx.namespace, None)
        .into_iter()
        .filter(|o| o.kind == "PersistentVolumeClaim")
        .map(|o| o.name)
        .collect()
}

const CLAIMS: [&str; 2] = ["zk-datadir-zk-zookeeper-0", "zk-datadir-zk-zookeeper-1"];

/// A cluster without a StatefulSet controller (an API server run by hand with no
/// workload controllers) creates no claims: create them as the controller
/// would (`<template>-<statefulset>-<ordinal>`, the template's labels plus the selector's,
/// the template's spec), so that what the provider does with them is tested all the same.
/// kube-sim and complete clusters make them themselves; then this does nothing.
fn stand_in_for_the_statefulset_controller(ctx: &TestContext) {
    if ctx.sim().is_some() || !claims(ctx).is_empty() {
        return;
    }
    let ns = ctx.namespace.as_str();
    let sts = ctx
        .kube()
        .must_get("apps/v1", "StatefulSet", Some(ns), "zk-zookeeper");
    let replicas = sts["spec"]["replicas"].as_u64().unwrap_or(1);
    let selector = sts["spec"]["selector"]["matchLabels"].clone();
    for template in sts["spec"]["volumeClaimTemplates"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let mut labels = template["metadata"]["labels"].clone();
        if !labels.is_object() {
            labels = serde_json::json!({});
        }
        for (k, v) in selector.as_object().into_iter().flatten() {
            labels[k] = v.clone();
        }
        let claim = template["metadata"]["name"].as_str().unwrap_or_default();
        for ordinal in 0..replicas {
            ctx.kube().apply(&serde_json::json!({
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": format!("{claim}-zk-zookeeper-{ordinal}"),
                    "namespace": ns,
                    "labels": labels,
                },
                "spec": template["spec"],
            }));
        }
    }
}

#[test]
fn zookeeper_destroy_keeps_its_claims_by_default_and_deletes_them_when_asked() {
    let Some(pkg) = fixture_operator("zookeeper") else {
        skip!("../shared/fixtures/operators/zookeeper not found (clone without ../shared)");
    };
    let ctx = TestContext::new("volumes");
    ctx.write("main.tf", &config(&pkg, None));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    stand_in_for_the_statefulset_controller(&ctx);
    let want: BTreeSet<String> = CLAIMS.iter().map(|s| s.to_string()).collect();
    // The StatefulSet is healthy only once its pods run, and the controller creates
    // each pod's claims before the pod.
    assert_eq!(claims(&ctx), want, "claims of the StatefulSet");
    let claim = ctx.kube().must_get(
        "v1",
        "PersistentVolumeClaim",
        Some(&ctx.namespace),
        CLAIMS[0],
    );
    assert_eq!(claim["metadata"]["labels"]["instance"], "zk", "{claim:#}");

    // Default: destroy keeps them and says which.
    let destroy = ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    let out = flat(&destroy.output());
    assert!(
        out.contains("Volumes of instance zk kept")
            && CLAIMS.iter().all(|c| out.contains(c))
            && out.contains("delete_volumes_on_destroy = true"),
        "destroy does not name the claims it kept:\n{out}"
    );
    assert_eq!(claims(&ctx), want, "the claims were not kept");
    let left: Vec<_> = ctx
        .instance_objects("zk")
        .into_iter()
        .filter(|o| o.kind != "PersistentVolumeClaim")
        .collect();
    assert!(left.is_empty(), "objects left after destroy: {left:#?}");

    // Created again, the StatefulSet finds its claims (the data) again; with
    // delete_volumes_on_destroy the destroy removes them and waits until they are gone.
    ctx.write("main.tf", &config(&pkg, Some(true)));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    stand_in_for_the_statefulset_controller(&ctx);
    assert_eq!(claims(&ctx), want);
    let destroy = ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    ctx.mark_cleaned();
    assert!(
        !flat(&destroy.output()).contains("kept"),
        "{}",
        destroy.output()
    );
    assert!(claims(&ctx).is_empty(), "claims left: {:?}", claims(&ctx));
    let left = ctx.instance_objects("zk");
    assert!(left.is_empty(), "objects left after destroy: {left:#?}");
}
