//! `rollback_on_failure` (issue #50): a failed upgrade puts the instance back on the
//! version it last completed, in the same apply; a failed create removes what it wrote;
//! without the attribute a failure stays as it is, and going back afterwards gets one
//! diagnostic with the ways out.
//!
//! Package `ledger`: 1.0.0 writes ConfigMap `<name>-v1-config` and Deployment
//! `<name>-app` (image `ledger:1.0.0`). 2.0.0's `upgrade` plan deletes that ConfigMap,
//! writes Secret `<name>-v2-secret` and the Deployment on image `ledger:2.0.0`, which
//! kube-sim and fake-kubelet hold unready (`test.kudo/never-ready`), so the upgrade
//! times out; before it, a Job marked `rollback.kudo.dev/migrates-data` runs.

use crate::harness::{PREAMBLE, TestContext, flat};

const KUDO: &str = "kudo.dev/v1beta1";

fn deployment(version: &str, never_ready: bool) -> String {
    let annotations = match never_ready {
        true => "\n  annotations:\n    test.kudo/never-ready: \"true\"",
        false => "",
    };
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{{{ .Name }}}}-app{annotations}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: {{{{ .Name }}}}-ledger
  template:
    metadata:
      labels:
        app: {{{{ .Name }}}}-ledger
    spec:
      containers:
        - name: app
          image: example.com/ledger:{version}
"#
    )
}

const CONFIG_V1: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-v1-config\ndata:\n  schema: \"1\"\n";
/// 2.0.0's schema migration, marked as changing data a rollback cannot put back.
const MIGRATE_V2: &str = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Name }}-migrate\n  annotations:\n    rollback.kudo.dev/migrates-data: \"true\"\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n        - name: migrate\n          image: example.com/ledger-migrate:2.0.0\n";
const SECRET_V2: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name }}-v2-secret\nstringData:\n  key: \"2\"\n";

/// The ledger package at 1.0.0 in `dir` (a folder of the working directory).
fn write_v1(ctx: &TestContext, dir: &str) {
    // 2.0.0's templates must not stay behind: they would be part of the package.
    let _ = std::fs::remove_dir_all(ctx.workdir.join(dir).join("templates"));
    ctx.write(
        &format!("{dir}/operator.yaml"),
        r#"apiVersion: kudo.dev/v1beta1
name: ledger
operatorVersion: 1.0.0
kubernetesVersion: 1.20.0
tasks:
  - name: config
    kind: Apply
    spec:
      resources: [config.yaml]
  - name: app
    kind: Apply
    spec:
      resources: [app.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: config
            tasks: [config]
          - name: app
            tasks: [app]
"#,
    );
    ctx.write(
        &format!("{dir}/params.yaml"),
        "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
    );
    ctx.write(&format!("{dir}/templates/config.yaml"), CONFIG_V1);
    ctx.write(
        &format!("{dir}/templates/app.yaml"),
        &deployment("1.0.0", false),
    );
}

/// The ledger package at 2.0.0, whose upgrade never becomes ready.
fn write_v2(ctx: &TestContext, dir: &str) {
    ctx.write(
        &format!("{dir}/operator.yaml"),
        r#"apiVersion: kudo.dev/v1beta1
name: ledger
operatorVersion: 2.0.0
kubernetesVersion: 1.20.0
tasks:
  - name: drop-config
    kind: Delete
    spec:
      resources: [config.yaml]
  - name: secret
    kind: Apply
    spec:
      resources: [secret.yaml]
  - name: migrate
    kind: Apply
    spec:
      resources: [migrate.yaml]
  - name: app
    kind: Apply
    spec:
      resources: [app.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: secret
            tasks: [secret]
          - name: app
            tasks: [app]
  upgrade:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: drop-config
            tasks: [drop-config]
          - name: secret
            tasks: [secret]
          - name: migrate
            tasks: [migrate]
          - name: app
            tasks: [app]
"#,
    );
    ctx.write(
        &format!("{dir}/params.yaml"),
        "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
    );
    ctx.write(&format!("{dir}/templates/config.yaml"), CONFIG_V1);
    ctx.write(&format!("{dir}/templates/secret.yaml"), SECRET_V2);
    ctx.write(&format!("{dir}/templates/migrate.yaml"), MIGRATE_V2);
    ctx.write(
        &format!("{dir}/templates/app.yaml"),
        &deployment("2.0.0", true),
    );
}

fn write_config(ctx: &TestContext, settings: &str) {
    write_main(
        ctx,
        "operator",
        "ledger",
        settings,
        "create = \"5s\"\n    update = \"5s\"",
    );
}

/// `main.tf`: `kudo_operator.op` of the package in `package` and `kudo_instance.<name>`
/// of it with `settings` and the `timeouts` lines `timeouts` (HCL).
fn write_main(ctx: &TestContext, package: &str, name: &str, settings: &str, timeouts: &str) {
    ctx.write(
        "main.tf",
        &format!(
            r#"{PREAMBLE}
resource "kudo_operator" "op" {{
  package   = "${{path.module}}/{package}"
  namespace = var.namespace
}}

resource "kudo_instance" "{name}" {{
  name      = "{name}"
  namespace = var.namespace
  operator  = kudo_operator.op.id
  {settings}
  timeouts {{
    {timeouts}
  }}
}}
"#
        ),
    );
}

fn image(ctx: &TestContext) -> Option<String> {
    let d = ctx
        .kube()
        .get("apps/v1", "Deployment", Some(&ctx.namespace), "ledger-app")?;
    d.pointer("/spec/template/spec/containers/0/image")
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

fn running_version(ctx: &TestContext) -> Option<String> {
    let instance = ctx.kube().instance(&ctx.namespace, "ledger")?;
    instance
        .pointer("/spec/operatorVersion/name")
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

fn exists(ctx: &TestContext, api_version: &str, kind: &str, name: &str) -> bool {
    ctx.kube()
        .get(api_version, kind, Some(&ctx.namespace), name)
        .is_some()
}

/// Installs 1.0.0 with `settings`, then applies 2.0.0, which fails.
fn failed_upgrade(name: &str, settings: &str) -> (TestContext, crate::harness::TfRun) {
    let ctx = TestContext::new(name);
    write_v1(&ctx, "operator");
    write_config(&ctx, settings);
    ctx.tf.apply(&[]).assert_success();
    assert_eq!(image(&ctx).as_deref(), Some("example.com/ledger:1.0.0"));
    write_v2(&ctx, "operator");
    let run = ctx.tf.apply(&[]).assert_clean_error();
    (ctx, run)
}

#[test]
fn a_failed_upgrade_rolls_back_to_the_version_that_last_completed() {
    let (ctx, run) = failed_upgrade("rollback-upgrade", "rollback_on_failure = true");
    let out = flat(&run.output());
    for text in [
        "rolled back to 1.0.0",
        "did not finish within the 5s allowed by `timeouts`",
        "ledger-app",
        "rollback_on_failure put the instance and its dependency instances back to",
        "the next plan shows the change again",
        "Not undone: the failed version's Job",
        "ledger-migrate",
        "rollback.kudo.dev/migrates-data",
    ] {
        assert!(
            out.contains(text),
            "the apply does not say {text:?}:\n{run}"
        );
    }
    assert_eq!(
        run.stderr.matches("Error:").count(),
        1,
        "one error, saying both what failed and the rollback:\n{run}"
    );
    // The cluster runs 1.0.0 again: the Instance, the image, 1.0.0's ConfigMap (which
    // the upgrade deleted) back, 2.0.0's Secret gone.
    assert_eq!(running_version(&ctx).as_deref(), Some("ledger-1.0.0"));
    assert_eq!(image(&ctx).as_deref(), Some("example.com/ledger:1.0.0"));
    assert!(exists(&ctx, "v1", "ConfigMap", "ledger-v1-config"));
    assert!(!exists(&ctx, "v1", "Secret", "ledger-v2-secret"));
    assert!(!exists(&ctx, "batch/v1", "Job", "ledger-migrate"));
    let state = ctx.tf.state();
    assert_eq!(state.attr_str("kudo_instance.ledger", "status"), "COMPLETE");
    assert!(
        state
            .attr_str("kudo_instance.ledger", "operator")
            .ends_with("/ledger-1.0.0"),
        "the state records 1.0.0"
    );
    // The configuration still asks for 2.0.0: the plan shows the upgrade again.
    let again = ctx.tf.plan(&["-detailed-exitcode"]);
    assert_eq!(again.code, Some(2), "expected the upgrade again:\n{again}");
    let again_out = flat(&again.output());
    assert!(
        again_out.contains("kudo_instance.ledger will be updated in-place")
            && again_out.contains("ledger-2.0.0"),
        "the plan does not show the upgrade to 2.0.0 again:\n{again}"
    );
    // Back to 1.0.0 in the configuration: nothing for the instance to do; only the
    // kudo_operator, whose apply of 2.0.0 succeeded, goes back to 1.0.0.
    write_v1(&ctx, "operator");
    let back = ctx.tf.plan(&[]).assert_success();
    let back_out = flat(&back.output());
    assert!(
        !back_out.contains("kudo_instance.ledger will be")
            && !back_out.contains("kudo_instance.ledger must be"),
        "the instance, back on 1.0.0, should plan nothing:\n{back}"
    );
    ctx.tf.apply(&[]).assert_success();
    assert_eq!(
        ctx.tf.plan(&["-detailed-exitcode"]).code,
        Some(0),
        "after going back to 1.0.0 everything is settled"
    );
    assert!(
        ctx.kube()
            .get(
                KUDO,
                "OperatorVersion",
                Some(&ctx.namespace),
                "ledger-2.0.0"
            )
            .is_none(),
        "kudo_operator's move back to 1.0.0 removes 2.0.0's OperatorVersion"
    );
}

#[test]
fn without_rollback_a_failed_upgrade_stays_and_going_back_says_how() {
    let (ctx, run) = failed_upgrade("rollback-off", "");
    assert!(
        !run.output().contains("rolled back"),
        "no rollback without the attribute:\n{run}"
    );
    // Today's behaviour: the cluster and the state stay on the failed 2.0.0.
    assert_eq!(running_version(&ctx).as_deref(), Some("ledger-2.0.0"));
    assert_eq!(image(&ctx).as_deref(), Some("example.com/ledger:2.0.0"));
    assert!(exists(&ctx, "v1", "Secret", "ledger-v2-secret"));
    assert_eq!(
        ctx.tf.state().attr_str("kudo_instance.ledger", "status"),
        "ERROR"
    );
    // Reverting the configuration: one diagnostic saying what happened and the ways out.
    write_v1(&ctx, "operator");
    let plan = ctx.tf.plan(&[]).assert_clean_error();
    let out = flat(&plan.output());
    for text in [
        "The upgrade to 2.0.0 did not complete",
        "moved this instance to 2.0.0 and failed there (status ERROR)",
        "It last completed on 1.0.0, which this configuration asks for again",
        "allow_downgrade = true",
        "rollback_on_failure = true",
    ] {
        assert!(
            out.contains(text),
            "the plan does not say {text:?}:\n{plan}"
        );
    }
    assert_eq!(plan.stderr.matches("Error:").count(), 1, "{plan}");
    // The first way out works.
    write_config(&ctx, "allow_downgrade = true");
    ctx.tf.apply(&[]).assert_success();
    assert_eq!(image(&ctx).as_deref(), Some("example.com/ledger:1.0.0"));
}

#[test]
fn a_failed_create_with_rollback_removes_what_it_wrote() {
    let ctx = TestContext::new("rollback-create");
    write_v2(&ctx, "operator");
    write_config(&ctx, "rollback_on_failure = true");
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let out = flat(&run.output());
    for text in [
        "the create was rolled back",
        "rollback_on_failure removed what the create wrote",
    ] {
        assert!(
            out.contains(text),
            "the apply does not say {text:?}:\n{run}"
        );
    }
    assert!(ctx.kube().instance(&ctx.namespace, "ledger").is_none());
    assert!(!exists(&ctx, "apps/v1", "Deployment", "ledger-app"));
    assert!(!exists(&ctx, "v1", "Secret", "ledger-v2-secret"));
    let state = ctx.tf.state();
    assert!(
        state.resource("kudo_instance.ledger").is_none(),
        "nothing of the instance is left in the state"
    );
    assert!(state.resource("kudo_operator.op").is_some());
}

/// One level of a three-level tree (`top` -> `mid` -> `leaf`) at `version`: `top` and
/// `mid` write a ConfigMap and run the next level through a KudoOperator task; `leaf`
/// writes a Deployment (unready at 2.0.0) and, at 2.0.0 only, a Secret.
fn write_level(ctx: &TestContext, level: &str, version: &str, child: Option<&str>) {
    let (tasks, steps) = match child {
        Some(child) => (
            format!("  - name: own\n    kind: Apply\n    spec:\n      resources: [own.yaml]\n  - name: child\n    kind: KudoOperator\n    spec:\n      package: ../{child}\n"),
            "          - name: own\n            tasks: [own]\n          - name: child\n            tasks: [child]\n".to_string(),
        ),
        None => (
            "  - name: own\n    kind: Apply\n    spec:\n      resources: [own.yaml]\n".to_string(),
            "          - name: own\n            tasks: [own]\n".to_string(),
        ),
    };
    ctx.write(
        &format!("{level}/operator.yaml"),
        &format!("apiVersion: kudo.dev/v1beta1\nname: {level}\noperatorVersion: {version}\nkubernetesVersion: 1.20.0\ntasks:\n{tasks}plans:\n  deploy:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n{steps}"),
    );
    ctx.write(
        &format!("{level}/params.yaml"),
        "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
    );
    let own = match (child, version) {
        (Some(_), _) => format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Name }}}}-own\ndata:\n  version: \"{version}\"\n"
        ),
        (None, "1.0.0") => deployment(version, false),
        (None, _) => format!("{}---\n{SECRET_V2}", deployment(version, true)),
    };
    ctx.write(&format!("{level}/templates/own.yaml"), &own);
}

fn write_tree(ctx: &TestContext, version: &str) {
    write_level(ctx, "top", version, Some("mid"));
    write_level(ctx, "mid", version, Some("leaf"));
    write_level(ctx, "leaf", version, None);
}

/// Every Instance in the test's namespace: (name, OperatorVersion name).
fn instances(ctx: &TestContext) -> Vec<(String, String)> {
    ctx.kube()
        .list_namespace(&ctx.namespace, None)
        .into_iter()
        .filter(|r| r.kind == "Instance")
        .map(|r| {
            let ov = ctx
                .kube()
                .instance(&ctx.namespace, &r.name)
                .and_then(|i| {
                    i.pointer("/spec/operatorVersion/name")
                        .and_then(|v| v.as_str())
                        .map(str::to_string)
                })
                .unwrap_or_default();
            (r.name, ov)
        })
        .collect()
}

#[test]
fn a_dependency_failing_two_levels_down_rolls_the_whole_tree_back() {
    let ctx = TestContext::new("rollback-tree");
    write_tree(&ctx, "1.0.0");
    write_main(
        &ctx,
        "top",
        "t",
        "rollback_on_failure = true",
        "update = \"5s\"",
    );
    ctx.tf.apply(&[]).assert_success();
    let before = instances(&ctx);
    assert_eq!(before.len(), 3, "top, mid and leaf: {before:?}");
    let (leaf, _) = before
        .iter()
        .find(|(_, ov)| ov.starts_with("leaf-"))
        .cloned()
        .expect("the leaf instance");
    write_tree(&ctx, "2.0.0");
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let out = flat(&run.output());
    for text in ["rolled back to 1.0.0", &format!("{leaf}-app")] {
        assert!(
            out.contains(text),
            "the apply does not say {text:?}:\n{run}"
        );
    }
    let after = instances(&ctx);
    assert_eq!(after.len(), 3, "{after:?}");
    for (name, ov) in &after {
        assert!(
            ov.ends_with("-1.0.0"),
            "instance {name} runs {ov} after the rollback: {after:?}"
        );
    }
    let app = ctx.kube().must_get(
        "apps/v1",
        "Deployment",
        Some(&ctx.namespace),
        &format!("{leaf}-app"),
    );
    assert_eq!(
        app.pointer("/spec/template/spec/containers/0/image")
            .and_then(|v| v.as_str()),
        Some("example.com/ledger:1.0.0"),
        "the leaf's Deployment is back on 1.0.0"
    );
    assert!(
        !exists(&ctx, "v1", "Secret", &format!("{leaf}-v2-secret")),
        "the Secret only the leaf's 2.0.0 made is removed"
    );
    let state = ctx.tf.state();
    assert_eq!(state.attr_str("kudo_instance.t", "status"), "COMPLETE");
    assert!(
        state
            .attr_str("kudo_instance.t", "operator")
            .ends_with("/top-1.0.0")
    );
}

/// A CRD of the test's own group (so tests sharing a real cluster never meet) whose
/// `storage` version is `storage`, serving v1 and, when `storage` is v2, v2.
fn gadget_crd(storage: &str) -> String {
    let version = |name: &str| {
        format!(
            "    - name: {name}\n      served: true\n      storage: {}\n      schema:\n        openAPIV3Schema:\n          type: object\n          x-kubernetes-preserve-unknown-fields: true\n",
            name == storage
        )
    };
    let versions = match storage {
        "v1" => version("v1"),
        _ => format!("{}{}", version("v1"), version("v2")),
    };
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.{{{{ .Namespace }}}}.example.com\nspec:\n  group: {{{{ .Namespace }}}}.example.com\n  scope: Namespaced\n  names:\n    kind: Gadget\n    plural: gadgets\n    singular: gadget\n    listKind: GadgetList\n  versions:\n{versions}"
    )
}

fn write_gadgets(ctx: &TestContext, version: &str) {
    ctx.write(
        "operator/operator.yaml",
        &crate::harness::serial_operator_yaml("gadgets", version, &["crd", "app"]),
    );
    ctx.write(
        "operator/params.yaml",
        "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
    );
    let (storage, unready) = match version {
        "1.0.0" => ("v1", false),
        _ => ("v2", true),
    };
    ctx.write("operator/templates/crd.yaml", &gadget_crd(storage));
    ctx.write("operator/templates/app.yaml", &deployment(version, unready));
}

#[test]
fn a_rollback_leaves_a_crd_whose_new_version_is_stored() {
    let ctx = TestContext::new("rollback-crd");
    write_gadgets(&ctx, "1.0.0");
    write_config(&ctx, "rollback_on_failure = true");
    ctx.tf.apply(&[]).assert_success();
    write_gadgets(&ctx, "2.0.0");
    let plan = ctx.tf.plan(&[]).assert_success();
    assert!(
        flat(&plan.output()).contains("A rollback leaves CRDs as this apply makes them"),
        "the plan warns that the CRD change stays:\n{plan}"
    );
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let out = flat(&run.output());
    for text in [
        "rolled back to 1.0.0",
        "CustomResourceDefinitions not rolled back",
        "its templates crd.yaml were not applied again",
    ] {
        assert!(
            out.contains(text),
            "the apply does not say {text:?}:\n{run}"
        );
    }
    let name = format!("gadgets.{}.example.com", ctx.namespace);
    let crd = ctx.kube().must_get(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
        &name,
    );
    let stored = crd.pointer("/status/storedVersions").cloned();
    assert!(
        stored
            .as_ref()
            .and_then(|v| v.as_array())
            .is_some_and(|a| a.iter().any(|v| v == "v2")),
        "2.0.0 made v2 a stored version: {stored:?}"
    );
    assert_eq!(
        crd.pointer("/spec/versions/1/storage")
            .and_then(|v| v.as_bool()),
        Some(true),
        "the CRD keeps the failed change's definition"
    );
    assert_eq!(image(&ctx).as_deref(), Some("example.com/ledger:1.0.0"));
    assert_eq!(
        ctx.tf.state().attr_str("kudo_instance.ledger", "status"),
        "COMPLETE"
    );
}

#[test]
fn an_interrupted_upgrade_rolls_back_too() {
    let ctx = TestContext::new("rollback-interrupt");
    write_v1(&ctx, "operator");
    // Limits far longer than the test: only the interrupt stops the upgrade.
    write_main(
        &ctx,
        "operator",
        "ledger",
        "rollback_on_failure = true",
        "update = \"10m\"",
    );
    ctx.tf.apply(&[]).assert_success();
    write_v2(&ctx, "operator");
    // Interrupted once the unready 2.0.0 Deployment is written.
    let run = ctx.tf.run_interrupted_when(
        &["apply", "-input=false", "-no-color", "-auto-approve"],
        || image(&ctx).as_deref() == Some("example.com/ledger:2.0.0"),
    );
    assert!(!run.timed_out && run.code.is_some_and(|c| c != 0), "{run}");
    let out = flat(&run.output());
    for text in ["rolled back to 1.0.0", "cancelled"] {
        assert!(
            out.contains(text),
            "the apply does not say {text:?}:\n{run}"
        );
    }
    assert_eq!(running_version(&ctx).as_deref(), Some("ledger-1.0.0"));
    assert_eq!(image(&ctx).as_deref(), Some("example.com/ledger:1.0.0"));
    assert_eq!(
        ctx.tf.state().attr_str("kudo_instance.ledger", "status"),
        "COMPLETE"
    );
}

#[test]
fn a_saved_plan_applied_without_the_plan_time_copies_still_rolls_back() {
    let ctx = TestContext::new("rollback-saved");
    write_v1(&ctx, "operator");
    write_config(&ctx, "rollback_on_failure = true");
    ctx.tf.apply(&[]).assert_success();
    write_v2(&ctx, "operator");
    ctx.tf.plan(&["-out=upgrade.tfplan"]).assert_success();
    // As in a pipeline whose apply job starts from a fresh checkout: none of the copies
    // the plan job kept of the packages.
    std::fs::remove_dir_all(ctx.workdir.join(".terraform/kudo/operators"))
        .expect("the plan kept package copies");
    let run = ctx
        .tf
        .run(&["apply", "-input=false", "-no-color", "upgrade.tfplan"])
        .assert_clean_error();
    assert!(
        flat(&run.output()).contains("rolled back to 1.0.0"),
        "the saved plan's apply does not roll back:\n{run}"
    );
    assert_eq!(running_version(&ctx).as_deref(), Some("ledger-1.0.0"));
    assert_eq!(image(&ctx).as_deref(), Some("example.com/ledger:1.0.0"));
}
