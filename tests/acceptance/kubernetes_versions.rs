//! Real KUDO packages on the Kubernetes releases people run today: every fixture package
//! installs with its defaults; objects written for API versions the cluster no longer
//! serves are converted, with one plan warning each; translation can be switched off
//! (the plan fails and says what to write) or extended for third-party kinds; and an
//! instance keeps its objects when the cluster is upgraded underneath it.

use std::path::Path;

use serde_json::Value;

use crate::harness::flat;
use crate::harness::{State, TestContext, fixture_operator, own_operator};
use crate::skip;

/// A root module installing `package` as `kudo_instance.this` named `instance` with its
/// default parameters; `provider` is the provider block's body.
fn config(package: &Path, instance: &str, provider: &str, params: &[(&str, &str)]) -> String {
    let params: String = params
        .iter()
        .map(|(k, v)| format!("    {k} = {v:?}\n"))
        .collect();
    format!(
        r#"terraform {{
  required_providers {{
    kudo = {{
      source = "kudo/kudo"
    }}
  }}
}}

variable "namespace" {{
  type = string
}}

provider "kudo" {{
{provider}
}}

resource "kudo_operator" "this" {{
  package   = {package:?}
  namespace = var.namespace
}}

resource "kudo_instance" "this" {{
  name      = {instance:?}
  namespace = var.namespace
  operator  = kudo_operator.this.id
  parameters = {{
{params}  }}
}}
"#,
        package = package.display().to_string(),
    )
}

/// `(template file, apiVersion, kind)` of every document of the package's templates, as
/// written (read from each document's top-level lines, so template code elsewhere does
/// not matter).
fn written_versions(package: &Path) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let dir = package.join("templates");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("template text");
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        for doc in text.split("\n---") {
            let top = |key: &str| {
                doc.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .map(|v| v.trim().trim_matches('"').to_string())
            };
            if let (Some(v), Some(k)) = (top("apiVersion:"), top("kind:")) {
                out.push((name.clone(), v, k));
            }
        }
    }
    out
}

/// Built-in kinds whose written version the cluster does not serve: each must appear in
/// the plan as a warning naming the template and the removed version. Custom kinds
/// (from a CRD of the package, or not installed) are left out.
fn removed_versions(ctx: &TestContext, package: &Path) -> Vec<(String, String, String)> {
    const BUILT_IN_GROUPS: &[&str] = &[
        "policy",
        "rbac.authorization.k8s.io",
        "apiextensions.k8s.io",
        "apps",
        "extensions",
        "batch",
        "autoscaling",
        "networking.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "admissionregistration.k8s.io",
    ];
    written_versions(package)
        .into_iter()
        .filter(|(_, v, _)| {
            v.split_once('/')
                .is_some_and(|(g, _)| BUILT_IN_GROUPS.contains(&g))
        })
        .filter(|(_, v, k)| !ctx.kube().serves(v, k))
        .collect()
}

fn has_pipe_task(package: &Path) -> bool {
    std::fs::read_to_string(package.join("operator.yaml"))
        .is_ok_and(|t| t.lines().any(|l| l.trim() == "kind: Pipe"))
}

/// Every `objects` entry of the instance is addressed under a version the cluster
/// serves.
#[track_caller]
fn assert_objects_served(ctx: &TestContext, state: &State) {
    let inst = state.resource("kudo_instance.this").expect("instance");
    for o in crate::harness::managed_objects(inst) {
        let (v, k) = (
            o["api_version"].as_str().unwrap_or_default(),
            o["kind"].as_str().unwrap_or_default(),
        );
        assert!(
            ctx.kube().serves(v, k),
            "state records {k} {} as {v}, which the cluster does not serve: {inst:#}",
            o["name"]
        );
    }
}

/// Plan (warnings per converted object), apply, second plan empty, destroy, nothing left
/// labelled with the instance, in the namespace or cluster-wide.
fn installs_with_defaults(name: &str, files: &[(&str, &str)]) {
    let Some(pkg) = fixture_operator(name) else {
        skip!("../shared/fixtures/operators/{name} not found (clone without ../shared)");
    };
    let ctx = TestContext::new(&format!("defaults-{name}"));
    if has_pipe_task(&pkg) {
        let Some(sim) = ctx.sim() else {
            skip!(
                "{name}'s deploy plan runs a Pipe task, which needs pods that run (kube-sim simulates exec)"
            );
        };
        for (path, content) in files {
            sim.add_exec_file(kube_sim::ExecFile {
                namespace: ctx.namespace.clone(),
                pod: None,
                selector: None,
                path: path.to_string(),
                content: content.to_string(),
            });
        }
    }
    let instance = format!("d-{name}");
    ctx.write("main.tf", &config(&pkg, &instance, "", &[]));

    let plan = ctx.tf.plan(&[]).assert_success().assert_no_crash();
    for (file, version, kind) in removed_versions(&ctx, &pkg) {
        let out = flat(&plan.output());
        assert!(
            out.contains(&format!("{version} converted to"))
                && out.contains(&format!("templates/{file} renders {kind}")),
            "no plan warning for {kind} ({version}) from templates/{file}:\n{out}"
        );
    }

    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let state = ctx.tf.state();
    let inst = state.resource("kudo_instance.this").expect("instance");
    assert_eq!(inst["status"], "COMPLETE", "{inst:#}");
    assert_objects_served(&ctx, &state);
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    let destroy = ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    ctx.mark_cleaned();
    let selector = format!("kudo.dev/instance={instance}");
    let left = ctx.left_after_destroy(&instance, &destroy.output());
    assert!(left.is_empty(), "objects left after destroy: {left:#?}");
    let left = ctx.kube().list_cluster(&selector);
    assert!(left.is_empty(), "cluster-scoped objects left: {left:#?}");
}

#[test]
fn cowsay_installs_with_its_defaults() {
    installs_with_defaults("cowsay", &[("/tmp/index.html", "<pre>moo</pre>\n")]);
}

#[test]
fn first_operator_installs_with_its_defaults() {
    installs_with_defaults("first-operator", &[]);
}

#[test]
fn flink_installs_with_its_defaults() {
    installs_with_defaults("flink", &[]);
}

#[test]
fn kafka_installs_with_its_defaults() {
    installs_with_defaults("kafka", &[("/tmp/tls.key", ""), ("/tmp/tls.crt", "")]);
}

#[test]
fn mysql_installs_with_its_defaults() {
    installs_with_defaults("mysql", &[]);
}

#[test]
fn redis_installs_with_its_defaults() {
    installs_with_defaults("redis", &[]);
}

#[test]
fn zookeeper_installs_with_its_defaults() {
    installs_with_defaults("zookeeper", &[]);
}

/// Every removed version the provider converts, through one package: the plan warns
/// once per converted object, the cluster holds each object under the served version
/// with the converted fields, and the next plan is empty.
#[test]
fn legacy_api_versions_are_converted_and_announced() {
    let pkg = own_operator("legacy-apis");
    let ctx = TestContext::new("legacy-apis");
    let ns = ctx.namespace.as_str();
    ctx.write("main.tf", &config(&pkg, "old", "", &[]));
    let removed = removed_versions(&ctx, &pkg);

    let plan = ctx.tf.plan(&[]).assert_success().assert_no_crash();
    let out = flat(&plan.output());
    for (file, version, kind) in &removed {
        // Kinds of the package's own CRD are planned unchecked; all these are built in.
        assert!(
            out.contains(&format!("templates/{file} renders {kind}"))
                && out.contains(&format!("{version} converted to")),
            "no plan warning for {kind} ({version}) from templates/{file}:\n{out}"
        );
    }

    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let state = ctx.tf.state();
    assert_objects_served(&ctx, &state);
    let kube = ctx.kube();
    // Whatever version each was written for, it now exists under one the cluster serves.
    let crd = kube.must_get(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
        "gadgets.legacy.kudo.dev",
    );
    let version = &crd["spec"]["versions"][0];
    assert_eq!(version["name"], "v1beta1", "{crd:#}");
    assert_eq!(
        version["additionalPrinterColumns"][0]["jsonPath"], ".spec.size",
        "{crd:#}"
    );
    assert_eq!(
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]["minimum"],
        1,
        "{crd:#}"
    );
    let deploy = kube.must_get("apps/v1", "Deployment", Some(ns), "old-web");
    assert_eq!(
        deploy["spec"]["selector"]["matchLabels"]["app"], "legacy-web",
        "{deploy:#}"
    );
    let ingress = kube.must_get("networking.k8s.io/v1", "Ingress", Some(ns), "old-web");
    let backend = &ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"];
    assert_eq!(backend["name"], "old-web", "{ingress:#}");
    assert_eq!(backend["port"]["number"], 80, "{ingress:#}");
    kube.must_get(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        Some(ns),
        "old-reader",
    );
    kube.must_get("policy/v1", "PodDisruptionBudget", Some(ns), "old-web");
    kube.must_get("batch/v1", "CronJob", Some(ns), "old-report");
    // Read under the version it was applied as (the state records it): a real server
    // converts between the versions it serves on every read, kube-sim does not.
    let hpa_version = state
        .resource("kudo_instance.this")
        .map(crate::harness::managed_objects)
        .and_then(|o| {
            o.into_iter()
                .find(|o| o["kind"] == "HorizontalPodAutoscaler")
        })
        .and_then(|o| o["api_version"].as_str())
        .unwrap_or_default()
        .to_string();
    let hpa = kube.must_get(&hpa_version, "HorizontalPodAutoscaler", Some(ns), "old-web");
    let metric = &hpa["spec"]["metrics"][0]["resource"];
    match hpa_version.as_str() {
        "autoscaling/v2beta1" => assert_eq!(metric["targetAverageUtilization"], 80, "{hpa:#}"),
        _ => assert_eq!(metric["target"]["averageUtilization"], 80, "{hpa:#}"),
    }
    kube.must_get(
        "scheduling.k8s.io/v1",
        "PriorityClass",
        None,
        &format!("{ns}-old-high"),
    );

    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    // A parameter change re-applies every object under the same versions: no duplicate,
    // nothing pruned by mistake.
    ctx.write("main.tf", &config(&pkg, "old", "", &[("REPLICAS", "2")]));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let deploy = kube.must_get("apps/v1", "Deployment", Some(ns), "old-web");
    assert_eq!(deploy["spec"]["replicas"], 2, "{deploy:#}");
    kube.must_get("policy/v1", "PodDisruptionBudget", Some(ns), "old-web");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    ctx.mark_cleaned();
    let left = ctx.instance_objects("old");
    assert!(left.is_empty(), "objects left after destroy: {left:#?}");
    let left = kube.list_cluster("kudo.dev/instance=old");
    assert!(left.is_empty(), "cluster-scoped objects left: {left:#?}");
}

/// `translate_api_versions = false`: the plan fails before anything is created, naming
/// the template, the removed version and the version to write instead.
#[test]
fn translation_off_fails_the_plan_naming_template_and_version() {
    let Some(pkg) = fixture_operator("zookeeper") else {
        skip!("../shared/fixtures/operators/zookeeper not found (clone without ../shared)");
    };
    let ctx = TestContext::new("translation-off");
    if ctx.kube().serves("policy/v1beta1", "PodDisruptionBudget") {
        skip!("this cluster still serves policy/v1beta1, so nothing needs translating");
    }
    ctx.write(
        "main.tf",
        &config(&pkg, "zk", "  translate_api_versions = false", &[]),
    );
    // The operator is planned in the same configuration, so the instance's plan is the
    // first to see the package; apply fails at its plan stage too.
    let run = ctx.tf.apply(&[]);
    let out = run.output();
    assert!(!run.success(), "apply must fail:\n{out}");
    let run = run.assert_clean_error();
    for needle in [
        "templates/pdb.yaml",
        "policy/v1beta1",
        "write policy/v1",
        "translate_api_versions",
    ] {
        assert!(
            flat(&run.output()).contains(needle),
            "error lacks {needle:?}:\n{out}"
        );
    }
    assert!(
        ctx.kube().instance(&ctx.namespace, "zk").is_none(),
        "no Instance may be created"
    );
    let left = ctx.instance_objects("zk");
    assert!(left.is_empty(), "objects created: {left:#?}");
}

/// A third-party kind whose group dropped `v1alpha1`: applied through an
/// `api_version_mapping` block, under the version the CRD serves.
#[test]
fn an_api_version_mapping_translates_a_custom_resource() {
    let pkg = own_operator("mapped-kinds");
    let ctx = TestContext::new("mapped-kinds");
    let ns = ctx.namespace.as_str();
    let mapping = r#"  api_version_mapping {
    from = "mapped.kudo.dev/v1alpha1"
    kind = "Widget"
    to   = "mapped.kudo.dev/v1"
  }"#;
    ctx.write("main.tf", &config(&pkg, "map", mapping, &[]));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let widget = ctx
        .kube()
        .must_get("mapped.kudo.dev/v1", "Widget", Some(ns), "map-widget");
    assert_eq!(widget["spec"]["size"], 2, "{widget:#}");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    // A change reaches the Widget through the mapping too, and the plan names it.
    ctx.write("main.tf", &config(&pkg, "map", mapping, &[("SIZE", "5")]));
    let plan = ctx.tf.plan(&[]).assert_success();
    assert!(
        flat(&plan.output()).contains("mapped.kudo.dev/v1alpha1 converted to mapped.kudo.dev/v1"),
        "{plan}"
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let widget = ctx
        .kube()
        .must_get("mapped.kudo.dev/v1", "Widget", Some(ns), "map-widget");
    assert_eq!(widget["spec"]["size"], 5, "{widget:#}");
    ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    ctx.mark_cleaned();
    let left = ctx.instance_objects("map");
    assert!(left.is_empty(), "objects left after destroy: {left:#?}");
}

/// The PodDisruptionBudget of a zookeeper instance as the cluster serves it now.
fn pdb(ctx: &TestContext) -> Value {
    let ns = ctx.namespace.as_str();
    ["policy/v1", "policy/v1beta1"]
        .iter()
        .filter(|v| ctx.kube().serves(v, "PodDisruptionBudget"))
        .find_map(|v| ctx.kube().get(v, "PodDisruptionBudget", Some(ns), "zk-pdb"))
        .unwrap_or_else(|| panic!("no PodDisruptionBudget zk-pdb"))
}

/// Applied on Kubernetes 1.24 (which still serves `policy/v1beta1`), then the API
/// server is upgraded to the current release with the same storage: the instance's
/// objects are still found (no drift, an empty plan), the next apply addresses the
/// stored PDB under `policy/v1` without creating a second one, and destroy is clean.
#[test]
fn an_instance_survives_a_cluster_upgrade() {
    let Some(pkg) = fixture_operator("zookeeper") else {
        skip!("../shared/fixtures/operators/zookeeper not found (clone without ../shared)");
    };
    let Some(ctx) = TestContext::on_kubernetes("cluster-upgrade", "1.24") else {
        skip!("upgrading the API server needs kube-sim");
    };
    ctx.write("main.tf", &config(&pkg, "zk", "", &[("NODE_COUNT", "1")]));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let before = pdb(&ctx);
    let state = ctx.tf.state();
    let inst = state.resource("kudo_instance.this").expect("instance");
    assert!(
        crate::harness::managed_objects(inst)
            .iter()
            .any(|o| o["api_version"] == "policy/v1beta1"),
        "1.24 serves policy/v1beta1, so zookeeper's PDB is applied as written: {inst:#}"
    );

    ctx.upgrade_cluster("1.36");
    assert!(!ctx.kube().serves("policy/v1beta1", "PodDisruptionBudget"));
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    ctx.write("main.tf", &config(&pkg, "zk", "", &[("NODE_COUNT", "2")]));
    let plan = ctx.tf.plan(&[]).assert_success();
    assert!(
        flat(&plan.output()).contains("PodDisruptionBudget")
            && flat(&plan.output()).contains("zk-pdb: policy/v1beta1 converted to policy/v1"),
        "{plan}"
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let after = pdb(&ctx);
    assert_eq!(
        after["metadata"]["uid"], before["metadata"]["uid"],
        "the same stored PDB, not a new one: {after:#}"
    );
    let pdbs: Vec<_> = ctx
        .instance_objects("zk")
        .into_iter()
        .filter(|o| o.kind == "PodDisruptionBudget")
        .collect();
    assert_eq!(pdbs.len(), 1, "{pdbs:#?}");
    let state = ctx.tf.state();
    assert_objects_served(&ctx, &state);
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    let destroy = ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    ctx.mark_cleaned();
    let left = ctx.left_after_destroy("zk", &destroy.output());
    assert!(left.is_empty(), "objects left after destroy: {left:#?}");
}
