//! Operator dependencies (KudoOperator tasks, KEP-29/36) through real Terraform: the
//! tree `kudo_operator` resolves is shown on `kudo_instance.children` at plan time, the
//! apply deploys every child in the parent plan's order, an `enablingParameter` removes
//! and restores a subtree, and resolution errors (missing versions, cycles) stop the plan.
//!
//! Order is read from the cluster: kube-sim's resourceVersion is one counter for every
//! write, so the last write to each Instance (its plan result) orders completions, and
//! the resourceVersion of objects nobody updates after creating them orders creations.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::{FileServer, TestContext, fixture_operator, repo_root, tool};
use crate::skip;

fn deps_fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/deps").join(name)
}

/// A root module with repositories, one operator from `package` and its instance.
fn config(
    repositories: &[(&str, &str)],
    package: &Path,
    instance: &str,
    params: &[(&str, &str)],
) -> String {
    config_with_overrides(repositories, package, instance, params, "")
}

/// [`config`] with `dependency_overrides` entries (HCL text) on the operator.
fn config_with_overrides(
    repositories: &[(&str, &str)],
    package: &Path,
    instance: &str,
    params: &[(&str, &str)],
    overrides: &str,
) -> String {
    let repos: String = repositories
        .iter()
        .map(|(name, url)| {
            format!("  repository {{\n    name = {name:?}\n    url  = {url:?}\n  }}\n")
        })
        .collect();
    let params: String = params
        .iter()
        .map(|(k, v)| format!("    {k} = {v:?}\n"))
        .collect();
    format!(
        r#"terraform {{
  required_providers {{
    kudo = {{ source = "kudo/kudo" }}
  }}
}}
variable "namespace" {{ type = string }}
provider "kudo" {{
{repos}}}
resource "kudo_operator" "this" {{
  package   = {package:?}
  namespace = var.namespace
  dependency_overrides = {{ {overrides} }}
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

fn resource_version(obj: &Value) -> u64 {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no numeric resourceVersion in {obj:#}"))
}

/// Every named Instance has completed its deploy plan; returns the resourceVersion of
/// each one's last write, in the order given.
fn completed_instances(ctx: &TestContext, names: &[&str]) -> Vec<u64> {
    names
        .iter()
        .map(|name| {
            let inst = ctx
                .kube()
                .instance(&ctx.namespace, name)
                .unwrap_or_else(|| panic!("Instance {name} exists"));
            assert_eq!(
                inst["status"]["planStatus"]["deploy"]["status"], "COMPLETE",
                "{name}: {inst:#}"
            );
            resource_version(&inst)
        })
        .collect()
}

fn assert_increasing(what: &str, names: &[&str], versions: &[u64]) {
    assert!(
        versions.windows(2).all(|w| w[0] < w[1]),
        "{what} not in order {names:?}: resourceVersions {versions:?}"
    );
}

/// `children` of the instance in the state, as (name, operator, version, enabled, parent).
fn children(ctx: &TestContext) -> Vec<(String, String, String, bool, String)> {
    let state = ctx.tf.state();
    let inst = state
        .resource("kudo_instance.this")
        .expect("instance in state");
    inst["children"]
        .as_array()
        .unwrap_or_else(|| panic!("children is a list: {inst:#}"))
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (
                s("name"),
                s("operator"),
                s("operator_version"),
                c["enabled"].as_bool().unwrap_or_default(),
                s("parent"),
            )
        })
        .collect()
}

fn child(
    name: &str,
    operator: &str,
    version: &str,
    enabled: bool,
    parent: &str,
) -> (String, String, String, bool, String) {
    (
        name.into(),
        operator.into(),
        version.into(),
        enabled,
        parent.into(),
    )
}

#[test]
fn kep29_tree_deploys_children_before_parents_in_plan_order() {
    let ctx = TestContext::new("deps-kep29");
    let repo = deps_fixture("kep29");
    let url = repo.display().to_string();
    ctx.write(
        "main.tf",
        &config(&[("fixtures", &url)], &repo.join("aa"), "aa", &[]),
    );

    let plan = ctx.tf.plan(&[]).assert_success().assert_no_crash();
    for name in ["aa-bb", "aa-bb-ee", "aa-bb-gg", "aa-cc"] {
        assert!(
            plan.output().contains(&format!("\"{name}\"")),
            "plan shows child {name}:\n{plan}"
        );
    }

    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(
        children(&ctx),
        vec![
            child("aa-bb", "bb", "0.1.0", true, "aa"),
            child("aa-bb-ee", "ee", "0.1.0", true, "aa-bb"),
            child("aa-bb-gg", "gg", "0.1.0", true, "aa-bb"),
            child("aa-cc", "cc", "0.1.0", true, "aa"),
        ]
    );
    let order = ["aa-bb-ee", "aa-bb-gg", "aa-bb", "aa-cc", "aa"];
    let versions = completed_instances(&ctx, &order);
    assert_increasing("plan completions", &order, &versions);
    // ee's ConfigMap is created before cc's (children of bb come before bb's sibling).
    let cm = |name: &str| {
        ctx.kube()
            .must_get("v1", "ConfigMap", Some(&ctx.namespace), name)
    };
    let created = [
        resource_version(&cm("aa-bb-ee-ee")),
        resource_version(&cm("aa-cc-cc")),
    ];
    assert_increasing(
        "ConfigMap creations",
        &["aa-bb-ee-ee", "aa-cc-cc"],
        &created,
    );
    // kudo_operator installs each OperatorVersion after the ones it needs (bb after ee
    // and gg, the root aa after bb and cc), packages that need nothing of each other side
    // by side (nothing writes an OperatorVersion after creating it).
    let ov_created = |name: &str| {
        resource_version(&ctx.kube().must_get(
            "kudo.dev/v1beta1",
            "OperatorVersion",
            Some(&ctx.namespace),
            name,
        ))
    };
    for (first, then) in [
        ("ee-0.1.0", "bb-0.1.0"),
        ("gg-0.1.0", "bb-0.1.0"),
        ("bb-0.1.0", "aa-0.1.0"),
        ("cc-0.1.0", "aa-0.1.0"),
    ] {
        assert_increasing(
            "OperatorVersion creations",
            &[first, then],
            &[ov_created(first), ov_created(then)],
        );
    }
    ctx.tf.plan(&["-detailed-exitcode"]).assert_success();

    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    for name in order {
        assert!(
            ctx.kube().instance(&ctx.namespace, name).is_none(),
            "{name} removed"
        );
        assert!(
            ctx.instance_objects(name).is_empty(),
            "{name}'s objects removed"
        );
    }
}

#[test]
fn a_dependency_cycle_fails_the_plan_with_its_path() {
    let ctx = TestContext::new("deps-cycle");
    ctx.write(
        "main.tf",
        &config(&[], &deps_fixture("cycle").join("a"), "a", &[]),
    );
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let text = run.output();
    assert!(text.contains("cycle"), "{run}");
    assert!(text.contains("a -> b -> c -> a"), "names the path:\n{run}");
    // The advice fits a cycle, not a missing version.
    let flat = crate::harness::flat(&text);
    assert!(
        flat.contains("Remove the KudoOperator task that closes the loop")
            && !flat.contains("Add a repository that has the missing versions"),
        "{run}"
    );
    assert!(ctx.kube().instance(&ctx.namespace, "a").is_none());
    ctx.mark_cleaned();
}

#[test]
fn enabling_parameter_removes_and_restores_the_subtree() {
    let ctx = TestContext::new("deps-enabling");
    let repo = deps_fixture("enabling");
    let url = repo.display().to_string();
    let main = |on: &str| {
        config(
            &[("fixtures", &url)],
            &repo.join("parent"),
            "p",
            &[("MONITORING_ENABLED", on)],
        )
    };
    let monitor_cm = "p-monitor-monitor";
    let present = |ctx: &TestContext| {
        ctx.kube()
            .get("v1", "ConfigMap", Some(&ctx.namespace), monitor_cm)
            .is_some()
    };

    ctx.write("main.tf", &main("true"));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(
        children(&ctx),
        vec![child("p-monitor", "monitor", "0.2.0", true, "p")]
    );
    completed_instances(&ctx, &["p-monitor", "p"]);
    assert!(present(&ctx), "the child's ConfigMap exists");

    ctx.write("main.tf", &main("false"));
    let plan = ctx.tf.plan(&[]).assert_success();
    assert!(
        plan.output().contains("enabled") && plan.output().contains("true -> false"),
        "the plan shows the child switching off:\n{plan}"
    );
    ctx.tf.apply(&[]).assert_success();
    assert_eq!(
        children(&ctx),
        vec![child("p-monitor", "monitor", "0.2.0", false, "p")]
    );
    assert!(ctx.kube().instance(&ctx.namespace, "p-monitor").is_none());
    assert!(!present(&ctx), "the child's ConfigMap is gone");
    assert!(ctx.instance_objects("p-monitor").is_empty());
    completed_instances(&ctx, &["p"]);

    ctx.write("main.tf", &main("true"));
    ctx.tf.apply(&[]).assert_success();
    completed_instances(&ctx, &["p-monitor", "p"]);
    assert!(present(&ctx), "the child's ConfigMap is back");

    // A child deleted out of band is drift of the parent: the next apply recreates it.
    ctx.kube().delete(
        "kudo.dev/v1beta1",
        "Instance",
        Some(&ctx.namespace),
        "p-monitor",
    );
    let run = ctx.tf.plan(&["-detailed-exitcode"]);
    assert_eq!(run.code, Some(2), "the plan has changes:\n{run}");
    ctx.tf.apply(&[]).assert_success();
    completed_instances(&ctx, &["p-monitor", "p"]);
    assert!(present(&ctx), "the child's ConfigMap is restored");

    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    assert!(ctx.kube().instance(&ctx.namespace, "p-monitor").is_none());
    assert!(!present(&ctx));
}

/// An HTTP repository of the real kafka, zookeeper and flink packages (`package
/// create` + `repo index`, as an author would publish them).
pub(crate) fn fixture_repository(ctx: &TestContext) -> Option<(FileServer, PathBuf)> {
    let repo_dir = ctx.workdir.join("repo");
    std::fs::create_dir_all(&repo_dir).expect("repo dir");
    let server = FileServer::start(repo_dir.clone());
    for name in ["kafka", "zookeeper", "flink"] {
        let dir = fixture_operator(name)?;
        tool(&[
            "package",
            "create",
            dir.to_str().expect("utf-8"),
            "-o",
            repo_dir.to_str().expect("utf-8"),
        ]);
    }
    tool(&[
        "repo",
        "index",
        repo_dir.to_str().expect("utf-8"),
        "--url",
        &server.url,
    ]);
    Some((server, repo_dir))
}

#[test]
fn flink_demo_needs_ranges_and_then_deploys_zookeeper_kafka_flink() {
    let ctx = TestContext::new("deps-flink");
    if !ctx.runs_pods() {
        ctx.mark_cleaned();
        skip!(
            "no node: pods never run here, so a Pipe task cannot (run it on a cluster with a node)"
        );
    }
    let Some(demo) = fixture_operator("flink-demo") else {
        skip!("../shared/fixtures/operators is absent");
    };
    let Some((server, _repo)) = fixture_repository(&ctx) else {
        skip!("kafka, zookeeper or flink fixture is absent");
    };
    ctx.copy_in(&demo, "flink-demo");
    let package = ctx.workdir.join("flink-demo");
    ctx.write(
        "main.tf",
        &config(&[("fixtures", &server.url)], &package, "demo", &[]),
    );

    // As published, flink-demo pins versions the repository does not have.
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let text = run.output();
    for needle in ["kafka", "1.3.1", "zookeeper", "0.3.1", "1.3.2", "0.3.3"] {
        assert!(text.contains(needle), "the error names {needle}:\n{run}");
    }

    // Ranges instead of pins resolve to what the repository has.
    let operator_yaml = package.join("operator.yaml");
    let original = std::fs::read_to_string(&operator_yaml).expect("operator.yaml");
    let ranged = original
        .replace(
            "operatorVersion: 1.3.1\n      appVersion: 2.5.0",
            "operatorVersion: \">=1.3.1 <2.0.0\"",
        )
        .replace(
            "operatorVersion: 0.3.1\n      appVersion: 3.4.14",
            "operatorVersion: \">=0.3.1 <0.4.0\"",
        );
    assert_ne!(ranged, original, "the KudoOperator tasks were edited");
    std::fs::write(&operator_yaml, ranged).expect("write operator.yaml");

    // kube-sim runs no containers: the files kafka's certificate pipe pod would write
    // are served to its `cat`. A real cluster runs the pod.
    if let Some(sim) = ctx.sim() {
        for (path, content) in [("/tmp/tls.key", "KEY"), ("/tmp/tls.crt", "CERT")] {
            sim.add_exec_file(kube_sim::ExecFile {
                namespace: ctx.namespace.clone(),
                pod: None,
                selector: Some("kudo.dev/instance=kafka".into()),
                path: path.into(),
                content: content.into(),
            });
        }
    }
    let plan = ctx.tf.plan(&[]).assert_success().assert_no_crash();
    for needle in ["\"1.3.2\"", "\"0.3.3\"", "\"zk\"", "\"kafka\"", "\"flink\""] {
        assert!(
            plan.output().contains(needle),
            "plan shows {needle}:\n{plan}"
        );
    }
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(
        children(&ctx),
        vec![
            child("zk", "zookeeper", "0.3.3", true, "demo"),
            child("kafka", "kafka", "1.3.2", true, "demo"),
            child("flink", "flink", "0.2.1", true, "demo"),
        ]
    );
    // The parameter files reached the children: in state and in the Instance objects.
    let state = ctx.tf.state();
    let kafka_params = state
        .resource("kudo_instance.this")
        .and_then(|i| i["children"].as_array())
        .and_then(|c| c.iter().find(|c| c["name"] == "kafka"))
        .map(|c| c["parameters"].clone())
        .expect("kafka child in state");
    assert_eq!(kafka_params["BROKER_COUNT"], "3", "{kafka_params:#}");
    assert_eq!(kafka_params["ZOOKEEPER_PATH"], "/flink-demo-kafka");
    let kafka = ctx
        .kube()
        .instance(&ctx.namespace, "kafka")
        .expect("kafka Instance");
    assert_eq!(
        kafka["spec"]["parameters"]["ZOOKEEPER_PATH"], "/flink-demo-kafka",
        "{kafka:#}"
    );
    render_agrees_with_the_apply(&ctx, &package);
    let order = ["zk", "kafka", "flink", "demo"];
    let versions = completed_instances(&ctx, &order);
    assert_increasing("plan completions", &order, &versions);
    // Settled: the whole tree plans empty (on the current profile its PDBs were
    // converted from policy/v1beta1, which must not show as a change either).
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    let destroy = ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    for name in order {
        assert!(
            ctx.kube().instance(&ctx.namespace, name).is_none(),
            "{name}"
        );
        let left = ctx.left_after_destroy(name, &destroy.output());
        assert!(left.is_empty(), "objects of {name} left: {left:#?}");
    }
    // The dependencies' data stays, as the instance's own would: zookeeper's claims
    // (kube-sim's StatefulSet controller makes them; a real one too) are kept and named.
    if ctx.sim().is_some() {
        let claims: Vec<String> = ctx
            .instance_objects("zk")
            .into_iter()
            .filter(|o| o.kind == "PersistentVolumeClaim")
            .map(|o| o.name)
            .collect();
        assert!(!claims.is_empty(), "zookeeper's claims were deleted");
        let out = crate::harness::flat(&destroy.output());
        for claim in &claims {
            assert!(
                out.contains(claim.as_str()),
                "the destroy does not name {claim}:\n{destroy}"
            );
        }
    }
}

const APP_OPERATOR: &str = r#"apiVersion: kudo.dev/v1beta1
name: "app"
operatorVersion: "0.1.0"
kudoVersion: 0.17.0
kubernetesVersion: 1.18.0
maintainers:
  - name: acceptance tests
    email: tests@example.com
url: https://example.com/app
tasks:
  - name: shared
    kind: KudoOperator
    spec:
      package: shared
      operatorVersion: ">=1.0.0 <2.0.0"
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: shared
            tasks:
              - shared
"#;

#[test]
fn a_dependency_override_changes_the_child_version_in_place() {
    let ctx = TestContext::new("deps-override");
    let repo = deps_fixture("conflict");
    let url = repo.display().to_string();
    ctx.write("app/operator.yaml", APP_OPERATOR);
    ctx.write(
        "app/params.yaml",
        "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
    );
    let package = ctx.workdir.join("app");
    let main = |overrides: &str| {
        config_with_overrides(&[("fixtures", &url)], &package, "app", &[], overrides)
    };
    let child_ov = |ctx: &TestContext| {
        let inst = ctx
            .kube()
            .instance(&ctx.namespace, "app-shared")
            .expect("child Instance");
        assert_eq!(
            inst["status"]["planStatus"]["deploy"]["status"], "COMPLETE",
            "{inst:#}"
        );
        inst["spec"]["operatorVersion"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };

    ctx.write("main.tf", &main(""));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(
        children(&ctx),
        vec![child("app-shared", "shared", "1.1.0", true, "app")],
        "the newest version in the range"
    );
    assert_eq!(child_ov(&ctx), "shared-1.1.0");

    // An older child is a downgrade: refused until the instance allows it.
    ctx.write("main.tf", &main(r#"shared = "1.0.0""#));
    let refused = ctx.tf.plan(&[]).assert_clean_error();
    let out = crate::harness::flat(&refused.output());
    for text in [
        "Dependency downgrade",
        "- app-shared (shared): 1.1.0 -> 1.0.0",
        "allow_downgrade = true",
    ] {
        assert!(
            out.contains(text),
            "the plan does not say {text:?}:\n{refused}"
        );
    }
    assert_eq!(
        child_ov(&ctx),
        "shared-1.1.0",
        "the refused plan changed the child"
    );
    let allowed = main(r#"shared = "1.0.0""#).replace(
        "  operator  = kudo_operator.this.id\n",
        "  operator  = kudo_operator.this.id\n  allow_downgrade = true\n",
    );
    ctx.write("main.tf", &allowed);
    let plan = ctx.tf.plan(&[]).assert_success();
    assert!(
        plan.output().contains(r#""1.1.0" -> "1.0.0""#),
        "the plan shows the child's new version:\n{plan}"
    );
    assert!(
        crate::harness::flat(&plan.output()).contains("Dependency downgrade allowed"),
        "{plan}"
    );
    ctx.tf.apply(&[]).assert_success();
    assert_eq!(
        children(&ctx),
        vec![child("app-shared", "shared", "1.0.0", true, "app")]
    );
    assert_eq!(child_ov(&ctx), "shared-1.0.0");
    let ov = |name: &str| {
        ctx.kube().get(
            "kudo.dev/v1beta1",
            "OperatorVersion",
            Some(&ctx.namespace),
            name,
        )
    };
    assert!(
        ov("shared-1.0.0").is_some(),
        "the chosen version is installed"
    );
    assert!(
        ov("shared-1.1.0").is_none(),
        "the one no longer chosen is removed"
    );
    ctx.tf.plan(&["-detailed-exitcode"]).assert_success();

    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    assert!(ctx.kube().instance(&ctx.namespace, "app-shared").is_none());
    assert!(ctx.instance_objects("app-shared").is_empty());
}

const FAILING_PARENT: &str = r#"apiVersion: kudo.dev/v1beta1
name: "outer"
operatorVersion: "0.1.0"
kudoVersion: 0.17.0
kubernetesVersion: 1.18.0
maintainers:
  - name: acceptance tests
    email: tests@example.com
url: https://example.com/outer
tasks:
  - name: inner
    kind: KudoOperator
    spec:
      package: ../inner
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: inner
            tasks:
              - inner
"#;

const FAILING_CHILD: &str = r#"apiVersion: kudo.dev/v1beta1
name: "inner"
operatorVersion: "0.1.0"
kudoVersion: 0.17.0
kubernetesVersion: 1.18.0
maintainers:
  - name: acceptance tests
    email: tests@example.com
url: https://example.com/inner
tasks:
  - name: boom
    kind: Dummy
    spec:
      wantErr: true
      fatal: true
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: boom
            tasks:
              - boom
"#;

#[test]
fn a_fatal_child_fails_the_parent_fatally() {
    let ctx = TestContext::new("deps-fatal");
    let params = "apiVersion: kudo.dev/v1beta1\nparameters: []\n";
    ctx.write("outer/operator.yaml", FAILING_PARENT);
    ctx.write("outer/params.yaml", params);
    ctx.write("inner/operator.yaml", FAILING_CHILD);
    ctx.write("inner/params.yaml", params);
    ctx.write(
        "main.tf",
        &config(&[], &ctx.workdir.join("outer"), "o", &[]),
    );

    let run = ctx.tf.apply(&[]).assert_clean_error();
    // Terraform wraps diagnostics at 80 columns.
    let text = run
        .output()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains("dependency instance o-inner") && text.contains("FATAL_ERROR"),
        "the error names the child and says it is fatal:\n{run}"
    );
    assert_eq!(
        ctx.tf.state().attr_str("kudo_instance.this", "status"),
        "FATAL_ERROR"
    );
    for name in ["o-inner", "o"] {
        let inst = ctx
            .kube()
            .instance(&ctx.namespace, name)
            .unwrap_or_else(|| panic!("Instance {name}"));
        assert_eq!(
            inst["status"]["planStatus"]["deploy"]["status"], "FATAL_ERROR",
            "{name}: {inst:#}"
        );
    }
    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    assert!(ctx.kube().instance(&ctx.namespace, "o-inner").is_none());
}

/// What shows whether a child was touched: its Instance's last write and plan
/// execution, and its ConfigMap's last write.
#[derive(Debug, PartialEq)]
struct Touch {
    instance_version: u64,
    plan_uid: String,
    cm_version: u64,
    cm_value: String,
}

fn touch(ctx: &TestContext, instance: &str) -> Touch {
    let inst = ctx
        .kube()
        .instance(&ctx.namespace, instance)
        .unwrap_or_else(|| panic!("Instance {instance} exists"));
    assert_eq!(
        inst["status"]["planStatus"]["deploy"]["status"], "COMPLETE",
        "{instance}: {inst:#}"
    );
    let cm = ctx.kube().must_get(
        "v1",
        "ConfigMap",
        Some(&ctx.namespace),
        &format!("{instance}-cm"),
    );
    Touch {
        instance_version: resource_version(&inst),
        plan_uid: inst["spec"]["planExecution"]["uid"]
            .as_str()
            .unwrap_or_else(|| panic!("{instance} has a plan execution uid: {inst:#}"))
            .to_string(),
        cm_version: resource_version(&cm),
        cm_value: cm["data"]["value"].as_str().unwrap_or_default().to_string(),
    }
}

#[test]
fn a_parameter_change_cascades_only_to_the_child_it_feeds() {
    let ctx = TestContext::new("deps-cascade");
    let repo = deps_fixture("cascade");
    let url = repo.display().to_string();
    let main = |a: &str, note: &str| {
        config(
            &[("fixtures", &url)],
            &repo.join("hub"),
            "hub",
            &[("A_VALUE", a), ("B_VALUE", "b1"), ("NOTE", note)],
        )
    };
    let hub_note = |ctx: &TestContext| {
        ctx.kube()
            .must_get("v1", "ConfigMap", Some(&ctx.namespace), "hub-hub")["data"]["note"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };

    ctx.write("main.tf", &main("a1", "n1"));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    completed_instances(&ctx, &["hub-alpha", "hub-beta", "hub"]);
    let alpha0 = touch(&ctx, "hub-alpha");
    let beta0 = touch(&ctx, "hub-beta");
    assert_eq!(alpha0.cm_value, "a1");
    assert_eq!(beta0.cm_value, "b1");

    // The hub's deploy plan runs again, but neither child's rendered parameters change.
    ctx.write("main.tf", &main("a1", "n2"));
    ctx.tf.apply(&[]).assert_success();
    assert_eq!(hub_note(&ctx), "n2", "the hub's plan ran");
    assert_eq!(touch(&ctx, "hub-alpha"), alpha0, "alpha left alone");
    assert_eq!(touch(&ctx, "hub-beta"), beta0, "beta left alone");

    // A_VALUE feeds only alpha's parameterFile.
    ctx.write("main.tf", &main("a2", "n2"));
    let plan = ctx.tf.plan(&[]).assert_success();
    assert!(
        plan.output().contains(r#""a1" -> "a2""#),
        "the plan shows alpha's new parameter:\n{plan}"
    );
    assert!(
        !plan.output().contains(r#""b1" ->"#),
        "the plan changes nothing of beta:\n{plan}"
    );
    ctx.tf.apply(&[]).assert_success();
    let alpha1 = touch(&ctx, "hub-alpha");
    assert_eq!(alpha1.cm_value, "a2");
    assert_ne!(alpha1.plan_uid, alpha0.plan_uid, "alpha ran a new plan");
    assert!(alpha1.instance_version > alpha0.instance_version);
    assert!(alpha1.cm_version > alpha0.cm_version);
    assert_eq!(touch(&ctx, "hub-beta"), beta0, "beta left alone");
    let alpha_children = children(&ctx);
    assert_eq!(
        alpha_children,
        vec![
            child("hub-alpha", "alpha", "0.1.0", true, "hub"),
            child("hub-beta", "beta", "0.1.0", true, "hub"),
        ]
    );

    // A no-op reapply touches neither.
    ctx.tf.plan(&["-detailed-exitcode"]).assert_success();
    ctx.tf.apply(&[]).assert_success();
    assert_eq!(touch(&ctx, "hub-alpha"), alpha1);
    assert_eq!(touch(&ctx, "hub-beta"), beta0);

    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    for name in ["hub-alpha", "hub-beta", "hub"] {
        assert!(ctx.kube().instance(&ctx.namespace, name).is_none());
    }
}

/// `render --output-dir` shows what the apply used: flink-demo's dependency parameters
/// are the ones its child Instances got, and kafka's templates name the `.Pipes`
/// artifacts the apply created and mounted.
fn render_agrees_with_the_apply(ctx: &TestContext, demo: &Path) {
    let ns = ctx.namespace.as_str();
    let out = ctx.workdir.join("rendered-demo");
    let (demo_dir, out_dir) = (demo.to_str().expect("utf-8"), out.to_str().expect("utf-8"));
    tool(&[
        "render",
        demo_dir,
        "--name",
        "demo",
        "--namespace",
        ns,
        "--output-dir",
        out_dir,
    ]);
    for (task, instance) in [("kafka", "kafka"), ("zookeeper", "zk"), ("flink", "flink")] {
        let file = out.join("dependencies").join(format!("{task}.yaml"));
        let text = std::fs::read_to_string(&file).expect("render wrote the dependency");
        let shown = kudo_yaml::to_json(&text).expect("dependency YAML");
        let live = ctx.kube().instance(ns, instance).expect("child Instance");
        assert_eq!(
            shown["parameters"], live["spec"]["parameters"],
            "render shows other parameters for {instance} than the apply gave it:\n{text}"
        );
    }

    let Some(kafka) = fixture_operator("kafka") else {
        return;
    };
    let out = ctx.workdir.join("rendered-kafka");
    let kafka_params =
        ctx.kube().instance(ns, "kafka").expect("kafka Instance")["spec"]["parameters"].clone();
    let mut args: Vec<String> = [
        "render",
        kafka.to_str().expect("utf-8"),
        "--name",
        "kafka",
        "--namespace",
        ns,
        "--output-dir",
        out.to_str().expect("utf-8"),
    ]
    .map(str::to_string)
    .to_vec();
    for (k, v) in kafka_params.as_object().into_iter().flatten() {
        args.push("-p".into());
        args.push(format!("{k}={}", v.as_str().unwrap_or_default()));
    }
    // Only kafka's TLS volumes read `.Pipes`; the names do not depend on the values, and
    // the apply ran the certificate pipe whatever they are.
    for flag in [
        "TRANSPORT_ENCRYPTION_ENABLED=true",
        "USE_AUTO_TLS_CERTIFICATE=true",
    ] {
        args.push("-p".into());
        args.push(flag.into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    tool(&args);
    let sts = std::fs::read_to_string(out.join("templates/statefulset.yaml")).expect("sts");
    let rendered: Vec<&str> = sts
        .lines()
        .filter_map(|l| l.trim().strip_prefix("secretName: "))
        .collect();
    assert!(
        !rendered.is_empty(),
        "kafka's statefulset reads .Pipes:\n{sts}"
    );
    for name in rendered {
        let secret = ctx.kube().get("v1", "Secret", Some(ns), name);
        assert!(
            secret.is_some(),
            "render names the pipe artifact {name}, which the apply did not create"
        );
    }
}

#[test]
fn an_enabling_parameter_that_is_not_a_boolean_fails_the_plan_as_the_apply_would() {
    let ctx = TestContext::new("deps-enabling-maybe");
    // The fixture declares the parameter boolean, which parameter checks already catch;
    // without the type only the enabling rule can refuse "maybe".
    ctx.copy_in(&deps_fixture("enabling"), "enabling");
    let repo = ctx.workdir.join("enabling");
    let params_file = repo.join("parent/params.yaml");
    let params = std::fs::read_to_string(&params_file).expect("params.yaml");
    let untyped = params.replacen("    type: boolean\n", "", 1);
    assert_ne!(untyped, params, "the type was removed");
    std::fs::write(&params_file, untyped).expect("write params.yaml");
    let url = repo.display().to_string();
    let values = [("MONITORING_ENABLED", "maybe")];
    ctx.write(
        "main.tf",
        &config(&[("fixtures", &url)], &repo.join("parent"), "p", &values),
    );
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let text = run.flat_output();
    // The run's own words (the walk the engine runs), naming the parameter and task.
    let parent = kudo_package::Package::load_dir(&repo.join("parent")).expect("parent");
    let values = values
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let e = kudo_engine::engine::rendered_objects(&parent, "p", &ctx.namespace, &values, "deploy")
        .expect_err("the walk refuses the value");
    let expected = crate::harness::flat(&format!("task \"monitoring\": {}", e.message));
    for needle in [
        "enablingParameter MONITORING_ENABLED is \"maybe\", which is not a boolean",
        expected.as_str(),
    ] {
        assert!(
            text.contains(needle),
            "the plan error lacks {needle:?}:\n{run}"
        );
    }
    assert!(ctx.kube().instance(&ctx.namespace, "p").is_none());
}

/// A child's parameter rendered from a sensitive parameter of its parent is
/// `(sensitive value)` in `children`, the others as rendered; the next plan reads them
/// back as they were and has nothing to do.
#[test]
fn children_hide_values_rendered_from_sensitive_parameters() {
    let ctx = TestContext::new("deps-children-sensitive");
    let main =
        cascade_hub("  sensitive_parameters = { A_VALUE = \"hunter2-secret\" }\n  parameters = {");
    ctx.write("main.tf", &main);
    let plan = ctx.tf.plan(&[]).assert_success();
    assert!(!plan.output().contains("hunter2-secret"), "{plan}");
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let state = ctx.tf.state();
    let hub = state.resource("kudo_instance.this").expect("hub in state");
    let value_of = |name: &str| child_of(hub, name)["parameters"]["VALUE"].clone();
    assert_eq!(value_of("hub-alpha"), "(sensitive value)");
    assert_eq!(value_of("hub-beta"), "b1");
    // Only the attribute that holds it (which Terraform keeps as sensitive) has it.
    let mut others = hub.clone();
    if let Some(attrs) = others.as_object_mut() {
        attrs.remove("sensitive_parameters");
    }
    assert!(!others.to_string().contains("hunter2-secret"), "{hub:#}");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
}

/// A parameter known only after apply that feeds a child: the plan leaves
/// `effective_parameters` and `children` unknown (rather than planning the package's
/// default), and the apply fills them with the value.
#[test]
fn children_are_unknown_while_a_parameter_they_depend_on_is() {
    let ctx = TestContext::new("deps-children-unknown");
    let main = cascade_hub("  parameters = {\n    A_VALUE = terraform_data.later.output");
    ctx.write(
        "main.tf",
        &format!("{main}\nresource \"terraform_data\" \"later\" {{\n  input = \"a-late\"\n}}\n"),
    );
    // The operator first, so that only the parameter is unknown in the plan.
    ctx.tf
        .apply(&["-target=kudo_operator.this"])
        .assert_success();
    ctx.tf.plan(&["-out=tfplan"]).assert_success();
    let shown = ctx
        .tf
        .run(&["show", "-json", "tfplan"])
        .assert_success()
        .json();
    let change = shown["resource_changes"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["address"] == "kudo_instance.this"))
        .cloned()
        .unwrap_or_else(|| panic!("no change for kudo_instance.this: {shown:#}"));
    for attribute in ["children", "effective_parameters"] {
        assert_eq!(
            change["change"]["after_unknown"][attribute], true,
            "{attribute}: {change:#}"
        );
    }
    ctx.tf.apply(&["tfplan"]).assert_success().assert_no_crash();
    let state = ctx.tf.state();
    let hub = state.resource("kudo_instance.this").expect("hub in state");
    assert_eq!(hub["effective_parameters"]["A_VALUE"], "a-late", "{hub:#}");
    let alpha = child_of(hub, "hub-alpha");
    assert_eq!(alpha["parameters"]["VALUE"], "a-late", "{hub:#}");
}

/// The cascade fixture's hub instance with `B_VALUE = "b1"`, its `parameters = {` line
/// replaced by `first` (attributes before it, or entries at its top).
fn cascade_hub(first: &str) -> String {
    let repo = deps_fixture("cascade");
    let url = repo.display().to_string();
    config(
        &[("fixtures", &url)],
        &repo.join("hub"),
        "hub",
        &[("B_VALUE", "b1")],
    )
    .replacen("  parameters = {", first, 1)
}

/// The `children` entry of `instance` (a state resource) named `name`.
fn child_of<'a>(instance: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    instance["children"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no child {name}: {instance:#}"))
}
