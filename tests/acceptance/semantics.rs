//! KUDO semantics end to end (docs: `../shared/docs/kudo-semantics.md` sections 3, 4, 6
//! and 7): toggles, plans run by trigger, immutable parameters, upgrades, Pipe tasks,
//! pruning, import of an instance nobody created through Terraform, `cleanup` on
//! destroy, and parallel phases. Real packages come from `../shared/fixtures/operators`,
//! small purpose-built ones from `tests/fixtures/operators` (see its README).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{PREAMBLE, State, TestContext, fixture_operator, own_operator};
use crate::skip;

const KUDO: &str = "kudo.dev/v1beta1";

/// A root module with `kudo_operator.this` (from `package`) and `kudo_instance.this`.
pub(crate) fn config(
    package: &str,
    instance: &str,
    params: &[(&str, &str)],
    triggers: &[(&str, &str)],
) -> String {
    // Empty maps are left out, as a user would (an import records them as null).
    let map = |attr: &str, entries: &[(&str, &str)]| -> String {
        if entries.is_empty() {
            return String::new();
        }
        let body: String = entries
            .iter()
            .map(|(k, v)| format!("    {k} = {v:?}\n"))
            .collect();
        format!("  {attr} = {{\n{body}  }}\n")
    };
    format!(
        r#"{PREAMBLE}
resource "kudo_operator" "this" {{
  package   = {package:?}
  namespace = var.namespace
}}

resource "kudo_instance" "this" {{
  name      = {instance:?}
  namespace = var.namespace
  operator  = kudo_operator.this.id
{params}{triggers}}}
"#,
        params = map("parameters", params),
        triggers = map("plan_triggers", triggers),
    )
}

pub(crate) fn path_str(p: &Path) -> String {
    p.display().to_string()
}

fn instance_state(state: &State) -> &Value {
    state
        .resource("kudo_instance.this")
        .unwrap_or_else(|| panic!("no kudo_instance.this in state:\n{:#}", state.0))
}

/// `Kind/name` of every object the state says the instance manages.
fn state_objects(state: &State) -> Vec<String> {
    crate::harness::managed_objects(instance_state(state))
        .into_iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or("?"),
                o["name"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

/// `terraform plan` succeeds and announces which KUDO plan the apply will run:
/// `~ last_plan = "<from>" -> "<to>"`.
#[track_caller]
fn plan_shows_next_plan(ctx: &TestContext, from: &str, to: &str) {
    let run = ctx.tf.plan(&[]).assert_success().assert_no_crash();
    let expected = format!("{from:?} -> {to:?}");
    assert!(
        run.stdout
            .lines()
            .any(|l| l.trim_start().starts_with("~ last_plan") && l.ends_with(&expected)),
        "plan should show last_plan {expected}:\n{run}"
    );
}

/// Apply, then the instance is COMPLETE after `plan`. Returns the state.
#[track_caller]
fn apply_expecting(ctx: &TestContext, plan: &str) -> State {
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let state = ctx.tf.state();
    let inst = instance_state(&state);
    assert_eq!(inst["status"], "COMPLETE", "{inst:#}");
    assert_eq!(inst["last_plan"], plan, "{inst:#}");
    state
}

/// `planStatus.<plan>` of the Instance object, which must be COMPLETE.
#[track_caller]
pub(crate) fn completed_plan_status(ctx: &TestContext, instance: &str, plan: &str) -> Value {
    let obj = ctx
        .kube()
        .instance(&ctx.namespace, instance)
        .expect("Instance object exists");
    let status = obj["status"]["planStatus"][plan].clone();
    assert_eq!(status["status"], "COMPLETE", "planStatus.{plan}: {obj:#}");
    status
}

/// Destroy; nothing labelled with the instance may remain in the namespace.
#[track_caller]
pub(crate) fn destroy_leaves_nothing(ctx: &TestContext, instance: &str) {
    let destroy = ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    ctx.mark_cleaned();
    let left = ctx.left_after_destroy(instance, &destroy.output());
    assert!(left.is_empty(), "objects left after destroy: {left:#?}");
    assert!(ctx.kube().instance(&ctx.namespace, instance).is_none());
}

/// Registers a file every pod in the test namespace serves to `cat` (kube-sim only).
fn serve_pod_file(ctx: &TestContext, path: &str, content: &str) {
    if let Some(sim) = ctx.sim() {
        sim.add_exec_file(kube_sim::ExecFile {
            namespace: ctx.namespace.clone(),
            pod: None,
            selector: None,
            path: path.to_string(),
            content: content.to_string(),
        });
    }
}

// 1. Toggle tasks: true applies the resources, false deletes them.
#[test]
fn kafka_toggle_creates_then_deletes_the_mirror_maker() {
    let Some(pkg) = fixture_operator("kafka") else {
        skip!("../shared/fixtures/operators/kafka not found (clone without ../shared)");
    };
    let ctx = TestContext::new("kafka-toggle");
    if !ctx.runs_pods() {
        ctx.mark_cleaned();
        skip!(
            "no node: pods never run here, so a Pipe task cannot (run it on a cluster with a node)"
        );
    }
    // The deploy plan pipes the TLS files out of a pod (empty files unless
    // USE_AUTO_TLS_CERTIFICATE); on a real cluster the pod writes them itself.
    serve_pod_file(&ctx, "/tmp/tls.key", "");
    serve_pod_file(&ctx, "/tmp/tls.crt", "");
    let ns = ctx.namespace.as_str();
    let pkg = path_str(&pkg);
    let with_mirror_maker = |enabled: &str| {
        ctx.write(
            "main.tf",
            &config(&pkg, "kafka", &[("MIRROR_MAKER_ENABLED", enabled)], &[]),
        );
    };
    let mirror_maker_objects = || {
        (
            ctx.kube()
                .get("v1", "ConfigMap", Some(ns), "kafka-mirror-maker-config"),
            ctx.kube()
                .get("apps/v1", "Deployment", Some(ns), "kafka-mirror-maker"),
        )
    };

    with_mirror_maker("false");
    let state = apply_expecting(&ctx, "deploy");
    assert!(
        !state_objects(&state).contains(&"Deployment/kafka-mirror-maker".to_string()),
        "{:#}",
        instance_state(&state)
    );
    let (config_map, deployment) = mirror_maker_objects();
    assert!(
        config_map.is_none() && deployment.is_none(),
        "toggle is off"
    );

    // On: the parameter's trigger plan runs the Toggle task, which applies.
    with_mirror_maker("true");
    plan_shows_next_plan(&ctx, "deploy", "mirrormaker");
    let state = apply_expecting(&ctx, "mirrormaker");
    completed_plan_status(&ctx, "kafka", "mirrormaker");
    let (config_map, deployment) = mirror_maker_objects();
    let deployment = deployment.expect("mirror maker Deployment applied by the toggle");
    assert!(
        config_map.is_some(),
        "mirror maker ConfigMap applied by the toggle"
    );
    assert_eq!(
        deployment["metadata"]["annotations"]["kudo.dev/plan"], "mirrormaker",
        "{deployment:#}"
    );
    let objects = state_objects(&state);
    for o in [
        "Deployment/kafka-mirror-maker",
        "ConfigMap/kafka-mirror-maker-config",
    ] {
        assert!(objects.contains(&o.to_string()), "{o} not in {objects:#?}");
    }

    // Off again: the same Toggle task deletes what it applied.
    with_mirror_maker("false");
    let state = apply_expecting(&ctx, "mirrormaker");
    let (config_map, deployment) = mirror_maker_objects();
    assert!(
        config_map.is_none() && deployment.is_none(),
        "toggle off must delete the objects: {config_map:#?} {deployment:#?}"
    );
    let objects = state_objects(&state);
    assert!(
        !objects.iter().any(|o| o.contains("mirror-maker")),
        "deleted objects still in state: {objects:#?}"
    );
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    destroy_leaves_nothing(&ctx, "kafka");
}

// 2. A named plan run through `plan_triggers` (`kubectl kudo plan trigger`).
#[test]
fn mysql_backup_plan_runs_by_trigger() {
    let Some(pkg) = fixture_operator("mysql") else {
        skip!("../shared/fixtures/operators/mysql not found (clone without ../shared)");
    };
    let ctx = TestContext::new("mysql-backup");
    let ns = ctx.namespace.as_str();
    let pkg = path_str(&pkg);
    ctx.write("main.tf", &config(&pkg, "db", &[], &[]));
    apply_expecting(&ctx, "deploy");
    assert!(
        ctx.kube()
            .get("v1", "PersistentVolumeClaim", Some(ns), "db-backup-pv")
            .is_none(),
        "the backup volume belongs to the backup plan"
    );

    ctx.write(
        "main.tf",
        &config(&pkg, "db", &[], &[("backup", "2026-11-22")]),
    );
    plan_shows_next_plan(&ctx, "deploy", "backup");
    let state = apply_expecting(&ctx, "backup");

    // Every step of the backup plan ran: pv, the Job (waited for until it succeeded),
    // and the cleanup step that deletes the Job again.
    let status = completed_plan_status(&ctx, "db", "backup");
    let steps: Vec<(String, String)> = status["phases"][0]["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default().to_string(),
                s["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("pv", "COMPLETE"),
            ("backup", "COMPLETE"),
            ("cleanup", "COMPLETE")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string())),
        "{status:#}"
    );
    let pvc = ctx
        .kube()
        .must_get("v1", "PersistentVolumeClaim", Some(ns), "db-backup-pv");
    assert_eq!(
        pvc["metadata"]["annotations"]["kudo.dev/plan"], "backup",
        "{pvc:#}"
    );
    assert!(
        ctx.kube()
            .get("batch/v1", "Job", Some(ns), "backup-job")
            .is_none(),
        "the backup plan's last step deletes its Job"
    );
    assert!(
        state_objects(&state).contains(&"PersistentVolumeClaim/db-backup-pv".to_string()),
        "{:#}",
        instance_state(&state)
    );
    // The deploy plan's record is kept beside the backup's.
    completed_plan_status(&ctx, "db", "deploy");

    // Same token: nothing to run.
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    // A new token runs the plan again: a new execution uid in planStatus.
    ctx.write(
        "main.tf",
        &config(&pkg, "db", &[], &[("backup", "2026-11-23")]),
    );
    ctx.tf
        .plan(&[])
        .assert_success()
        .assert_output_contains(r#"~ "backup" = "2026-11-22" -> "2026-11-23""#);
    apply_expecting(&ctx, "backup");
    let again = completed_plan_status(&ctx, "db", "backup");
    assert_ne!(
        again["uid"], status["uid"],
        "the backup plan ran again: {again:#}"
    );
    assert!(again["uid"].is_string(), "{again:#}");
    destroy_leaves_nothing(&ctx, "db");
}

// 3. Immutable parameters cannot change once the instance exists: KUDO refuses the
// change, so the provider plans a replacement instead (destroy, then create with the new
// value) and warns. Refusing the plan would also stop `terraform destroy` and
// `apply -replace`, which plan the configuration first.

/// The lifecycle instance `app` applied with `DATABASE = "orders"`, then the
/// configuration changed to `DATABASE = "billing"`. Returns the first Instance's uid.
fn immutable_changed(ctx: &TestContext) -> String {
    let pkg = path_str(&own_operator("lifecycle-v1"));
    ctx.write(
        "main.tf",
        &config(&pkg, "app", &[("DATABASE", "orders")], &[]),
    );
    apply_expecting(ctx, "deploy");
    let uid = instance_uid(ctx, "app");
    ctx.write(
        "main.tf",
        &config(&pkg, "app", &[("DATABASE", "billing")], &[]),
    );
    uid
}

#[track_caller]
fn instance_uid(ctx: &TestContext, name: &str) -> String {
    let obj = ctx
        .kube()
        .instance(&ctx.namespace, name)
        .expect("Instance object exists");
    obj["metadata"]["uid"]
        .as_str()
        .unwrap_or_else(|| panic!("no uid: {obj:#}"))
        .to_string()
}

/// The Instance and its objects were created again with `DATABASE = "billing"`.
#[track_caller]
fn recreated_with_billing(ctx: &TestContext, old_uid: &str) {
    let ns = ctx.namespace.as_str();
    assert_ne!(
        instance_uid(ctx, "app"),
        old_uid,
        "the Instance was changed in place, not created again"
    );
    let obj = ctx.kube().instance(ns, "app").expect("Instance");
    assert_eq!(obj["spec"]["parameters"]["DATABASE"], "billing", "{obj:#}");
    let cm = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(ns), "app-settings");
    assert_eq!(cm["data"]["database"], "billing", "{cm:#}");
    let state = ctx.tf.state();
    let inst = instance_state(&state);
    assert_eq!(inst["status"], "COMPLETE", "{inst:#}");
    assert_eq!(inst["last_plan"], "deploy", "{inst:#}");
    assert_eq!(
        inst["effective_parameters"]["DATABASE"], "billing",
        "{inst:#}"
    );
}

#[test]
fn changed_immutable_parameter_plans_a_replacement_with_a_warning() {
    let ctx = TestContext::new("immutable");
    let pkg = path_str(&own_operator("lifecycle-v1"));
    let old_uid = immutable_changed(&ctx);

    // A mutable parameter changes in place ...
    ctx.write(
        "main.tf",
        &config(
            &pkg,
            "app",
            &[("DATABASE", "orders"), ("GREETING", "hi")],
            &[],
        ),
    );
    let run = ctx.tf.plan(&[]).assert_success();
    assert!(
        run.stdout.contains("update in-place") && !run.stdout.contains("must be replaced"),
        "{run}"
    );

    // ... the immutable one replaces the instance: the plan says so, marks the
    // parameter, and warns with the values, the cost and the way back.
    ctx.write(
        "main.tf",
        &config(&pkg, "app", &[("DATABASE", "billing")], &[]),
    );
    let run = ctx.tf.plan(&[]).assert_success().assert_no_crash();
    eprintln!("[semantics] immutable parameter change:\n{run}");
    assert!(
        run.stdout.contains("kudo_instance.this must be replaced"),
        "{run}"
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.contains(r#""DATABASE" = "orders" -> "billing""#)
                && l.contains("# forces replacement")),
        "the parameter is not marked as forcing the replacement:\n{run}"
    );
    let out = crate::harness::flat(&run.output());
    for needle in [
        "Warning: Immutable parameter DATABASE changed",
        &format!("instance {}/app will be replaced", ctx.namespace),
        r#"DATABASE: "orders" -> "billing""#,
        "destroys instance",
        "`cleanup` plan",
        "PersistentVolumeClaims",
        r#"set DATABASE back to "orders""#,
    ] {
        assert!(
            out.contains(needle),
            "{needle:?} missing from the plan:\n{out}"
        );
    }

    // The guard the warning names: Terraform's own `prevent_destroy` refuses the
    // replacement at plan time.
    ctx.write(
        "main.tf",
        &config(&pkg, "app", &[("DATABASE", "billing")], &[]).replace(
            "  operator  = kudo_operator.this.id\n",
            "  operator  = kudo_operator.this.id\n  lifecycle {\n    prevent_destroy = true\n  }\n",
        ),
    );
    ctx.tf
        .plan(&[])
        .assert_clean_error()
        .assert_output_contains("prevent_destroy");
    ctx.write(
        "main.tf",
        &config(&pkg, "app", &[("DATABASE", "billing")], &[]),
    );

    let apply = ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert!(
        apply.stdout.contains("1 added, 0 changed, 1 destroyed"),
        "{apply}"
    );
    recreated_with_billing(&ctx, &old_uid);
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    destroy_leaves_nothing(&ctx, "app");
}

#[test]
fn destroy_succeeds_with_a_changed_immutable_parameter_in_the_configuration() {
    let ctx = TestContext::new("immutable-destroy");
    immutable_changed(&ctx);
    destroy_leaves_nothing(&ctx, "app");
    assert!(
        ctx.tf.state().resource("kudo_instance.this").is_none(),
        "the instance is still in the state"
    );
}

#[test]
fn apply_replace_works_with_a_changed_immutable_parameter_in_the_configuration() {
    let ctx = TestContext::new("immutable-replace");
    let old_uid = immutable_changed(&ctx);
    ctx.tf
        .apply(&["-replace=kudo_instance.this"])
        .assert_success()
        .assert_no_crash();
    recreated_with_billing(&ctx, &old_uid);
    destroy_leaves_nothing(&ctx, "app");
}

// 4. A new operator version runs the `upgrade` plan.
#[test]
fn new_package_version_runs_the_upgrade_plan() {
    let ctx = TestContext::new("upgrade");
    let ns = ctx.namespace.as_str();
    let v1 = path_str(&own_operator("lifecycle-v1"));
    let v2 = path_str(&own_operator("lifecycle-v2"));
    ctx.write("main.tf", &config(&v1, "app", &[("GREETING", "hi")], &[]));
    let state = apply_expecting(&ctx, "deploy");
    assert_eq!(
        instance_state(&state)["operator"],
        format!("{ns}/lifecycle-0.1.0").as_str()
    );

    ctx.write("main.tf", &config(&v2, "app", &[("GREETING", "hi")], &[]));
    plan_shows_next_plan(&ctx, "deploy", "upgrade");
    let state = apply_expecting(&ctx, "upgrade");
    assert_eq!(
        instance_state(&state)["operator"],
        format!("{ns}/lifecycle-0.2.0").as_str()
    );
    let status = completed_plan_status(&ctx, "app", "upgrade");
    assert_eq!(
        status["phases"][0]["steps"][0]["name"], "migrate",
        "{status:#}"
    );
    let instance = ctx.kube().instance(ns, "app").expect("Instance");
    assert_eq!(
        instance["spec"]["operatorVersion"]["name"], "lifecycle-0.2.0",
        "{instance:#}"
    );

    // The upgrade plan's own step ran, and the app step rendered the new version.
    let migration = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(ns), "app-migration");
    assert_eq!(migration["data"]["plan"], "upgrade", "{migration:#}");
    assert_eq!(migration["data"]["migrated-to"], "0.2.0", "{migration:#}");
    let settings = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(ns), "app-settings");
    assert_eq!(settings["data"]["version"], "0.2.0", "{settings:#}");
    assert_eq!(settings["data"]["greeting"], "hi", "{settings:#}");
    // 0.2.0 no longer renders the legacy ConfigMap: pruned.
    assert!(
        ctx.kube()
            .get("v1", "ConfigMap", Some(ns), "app-legacy")
            .is_none()
    );
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    destroy_leaves_nothing(&ctx, "app");
}

// 5. Pipe tasks copy a file out of a pod into a ConfigMap that templates can name.
#[test]
fn cowsay_pipe_task_produces_its_config_map() {
    let Some(pkg) = fixture_operator("cowsay") else {
        skip!("../shared/fixtures/operators/cowsay not found (clone without ../shared)");
    };
    if ctx_is_real() {
        skip!("cowsay's pipe pod downloads from the internet; kube-sim serves the file instead");
    }
    let ctx = TestContext::new("cowsay");
    let ns = ctx.namespace.as_str();
    let page = "<html><pre> ______\n< moo! >\n ------\n</pre></html>\n";
    serve_pod_file(&ctx, "/tmp/index.html", page);
    ctx.write("main.tf", &config(&path_str(&pkg), "cow", &[], &[]));
    let state = apply_expecting(&ctx, "deploy");

    // `<instance>.<plan>.<phase>.<step>.<task>.<key>`, each part lower case with all but
    // `[a-z0-9]` removed (KUDO 0.19 task_pipe.go `name`); the pod ends in `.pipepod`.
    let artifact = "cow.deploy.main.genfiles.genwww.indexhtml";
    let cm = ctx.kube().must_get("v1", "ConfigMap", Some(ns), artifact);
    assert_eq!(cm["data"]["index.html"], page, "{cm:#}");
    assert_eq!(
        cm["metadata"]["labels"]["kudo.dev/instance"], "cow",
        "{cm:#}"
    );
    // `.Pipes.indexHtml` in the next step names it.
    let deploy = ctx
        .kube()
        .must_get("apps/v1", "Deployment", Some(ns), "cow-deployment");
    assert_eq!(
        deploy["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"], artifact,
        "{deploy:#}"
    );
    // The pipe pod was scaffolding.
    assert!(
        ctx.kube()
            .get(
                "v1",
                "Pod",
                Some(ns),
                "cow.deploy.main.genfiles.genwww.pipepod"
            )
            .is_none()
    );
    assert!(
        state_objects(&state).contains(&format!("ConfigMap/{artifact}")),
        "{:#}",
        instance_state(&state)
    );
    destroy_leaves_nothing(&ctx, "cow");
}

fn ctx_is_real() -> bool {
    crate::harness::cluster::real_kubeconfig().is_some()
}

// 6. Objects a template no longer renders are pruned; the others stay.
#[test]
fn template_change_that_drops_an_object_prunes_it() {
    let ctx = TestContext::new("prune");
    let ns = ctx.namespace.as_str();
    ctx.copy_in(&own_operator("lifecycle-v1"), "pkg");
    ctx.write("main.tf", &config("pkg", "app", &[], &[]));
    apply_expecting(&ctx, "deploy");
    let kept = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(ns), "app-settings");
    ctx.kube()
        .must_get("v1", "ConfigMap", Some(ns), "app-legacy");

    // Same operator version, one document fewer in the template.
    let one_document =
        std::fs::read_to_string(own_operator("lifecycle-v2").join("templates/configmaps.yaml"))
            .expect("read v2 template");
    ctx.write("pkg/templates/configmaps.yaml", &one_document);
    ctx.tf
        .plan(&[])
        .assert_success()
        .assert_output_contains("operator_digest");
    let state = apply_expecting(&ctx, "deploy");

    assert!(
        ctx.kube()
            .get("v1", "ConfigMap", Some(ns), "app-legacy")
            .is_none(),
        "the dropped object must be deleted"
    );
    let after = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(ns), "app-settings");
    assert_eq!(
        after["metadata"]["uid"], kept["metadata"]["uid"],
        "the object still rendered is kept, not recreated"
    );
    assert_eq!(
        state_objects(&state),
        ["ConfigMap/app-settings"],
        "{:#}",
        instance_state(&state)
    );
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
}

/// What `kubectl kudo init` and `kubectl kudo install` leave behind, written as KUDO
/// writes it: the CRDs, the Operator and OperatorVersion `lifecycle-0.1.0` of the
/// `lifecycle-v1` package, the Instance `app` (GREETING=hi) with its deploy plan's
/// objects and a COMPLETE status. Returns the package folder.
pub(crate) fn install_like_kudo(ctx: &TestContext) -> std::path::PathBuf {
    let ns = ctx.namespace.as_str();
    let kube = ctx.kube();
    // What `kubectl kudo init` and `kubectl kudo install` leave behind, applied as
    // plain manifests: the CRDs, Operator, OperatorVersion, Instance; then what KUDO's
    // manager does: the deploy plan's objects and the Instance status.
    for (kind, plural) in [
        ("Operator", "operators"),
        ("OperatorVersion", "operatorversions"),
        ("Instance", "instances"),
    ] {
        let mut version = json!({
            "name": "v1beta1", "served": true, "storage": true,
            "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } },
        });
        if kind == "Instance" {
            version["subresources"] = json!({ "status": {} });
        }
        let name = format!("{plural}.kudo.dev");
        kube.apply(&json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": { "name": name },
            "spec": {
                "group": "kudo.dev",
                "scope": "Namespaced",
                "names": { "kind": kind, "listKind": format!("{kind}List"), "plural": plural, "singular": kind.to_lowercase() },
                "versions": [version],
            },
        }));
        kube.wait_for(
            &format!("CRD {name} to be established"),
            Duration::from_secs(60),
            |k| {
                let crd = k.get(
                    "apiextensions.k8s.io/v1",
                    "CustomResourceDefinition",
                    None,
                    &name,
                )?;
                crd["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
                    .then_some(())
            },
        );
    }
    let pkg_dir = own_operator("lifecycle-v1");
    let template =
        std::fs::read_to_string(pkg_dir.join("templates/configmaps.yaml")).expect("read template");
    kube.apply(&json!({
        "apiVersion": KUDO, "kind": "Operator",
        "metadata": { "name": "lifecycle", "namespace": ns },
        "spec": { "kubernetesVersion": "1.16.0", "url": "https://example.com/lifecycle",
                  "maintainers": [{ "name": "terraform-provider-kudo tests", "email": "tests@example.com" }] },
    }));
    kube.apply(&json!({
        "apiVersion": KUDO, "kind": "OperatorVersion",
        "metadata": { "name": "lifecycle-0.1.0", "namespace": ns },
        "spec": {
            "operator": { "name": "lifecycle", "kind": "Operator" },
            "version": "0.1.0",
            "templates": { "configmaps.yaml": template },
            "tasks": [{ "name": "app", "kind": "Apply", "spec": { "resources": ["configmaps.yaml"] } }],
            "parameters": [
                { "name": "GREETING", "description": "Text stored in the settings ConfigMap.", "required": true, "default": "hello" },
                { "name": "DATABASE", "description": "Name of the database; fixed once the instance exists.", "required": true, "default": "main", "immutable": true },
            ],
            "plans": { "deploy": { "strategy": "serial", "phases": [
                { "name": "main", "strategy": "serial", "steps": [{ "name": "app", "tasks": ["app"] }] },
            ] } },
        },
    }));
    let instance = kube.apply(&json!({
        "apiVersion": KUDO, "kind": "Instance",
        "metadata": { "name": "app", "namespace": ns,
                      "labels": { "kudo.dev/operator": "lifecycle" } },
        "spec": { "operatorVersion": { "name": "lifecycle-0.1.0" },
                  "parameters": { "GREETING": "hi" } },
    }));
    let uid = instance["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_string();
    let kudo_object = |name: &str, data: Value| {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": name, "namespace": ns,
                "labels": { "heritage": "kudo", "kudo.dev/operator": "lifecycle", "kudo.dev/instance": "app" },
                "annotations": { "kudo.dev/plan": "deploy", "kudo.dev/phase": "main", "kudo.dev/step": "app" },
                "ownerReferences": [{ "apiVersion": KUDO, "kind": "Instance", "name": "app", "uid": uid,
                                       "controller": true, "blockOwnerDeletion": true }],
            },
            "data": data,
        })
    };
    kube.apply(&kudo_object(
        "app-settings",
        json!({ "greeting": "hi", "database": "main", "version": "0.1.0" }),
    ));
    kube.apply(&kudo_object(
        "app-legacy",
        json!({ "note": "only version 0.1.0 renders this object" }),
    ));
    let step = json!({ "name": "app", "status": "COMPLETE" });
    kube.patch_status(
        KUDO,
        "Instance",
        Some(ns),
        "app",
        &json!({ "planStatus": { "deploy": {
            "name": "deploy", "status": "COMPLETE", "lastUpdatedTimestamp": "2026-11-22T00:00:00Z",
            "phases": [{ "name": "main", "status": "COMPLETE", "steps": [step] }],
        } } }),
    );

    pkg_dir
}

// 7. An instance created with kubectl (no provider) is imported.
#[test]
fn instance_created_with_kubectl_is_imported() {
    let ctx = TestContext::new("kubectl-import");
    let ns = ctx.namespace.as_str();
    let pkg_dir = install_like_kudo(&ctx);
    let kube = ctx.kube();
    let pkg = path_str(&pkg_dir);
    ctx.write("main.tf", &config(&pkg, "app", &[("GREETING", "hi")], &[]));
    ctx.tf
        .import("kudo_operator.this", &format!("{ns}/lifecycle-0.1.0"), &[])
        .assert_success()
        .assert_no_crash();
    ctx.tf
        .import("kudo_instance.this", &format!("{ns}/app"), &[])
        .assert_success()
        .assert_no_crash();
    let state = ctx.tf.state();
    let inst = instance_state(&state);
    assert_eq!(inst["status"], "COMPLETE", "{inst:#}");
    assert_eq!(inst["last_plan"], "deploy", "{inst:#}");
    assert_eq!(inst["parameters"]["GREETING"], "hi", "{inst:#}");
    assert_eq!(inst["effective_parameters"]["DATABASE"], "main", "{inst:#}");
    assert_eq!(
        state_objects(&state),
        ["ConfigMap/app-legacy", "ConfigMap/app-settings"],
        "{inst:#}"
    );

    let plan = ctx.tf.plan(&["-detailed-exitcode"]);
    eprintln!("[semantics] plan after importing a kubectl-created instance:\n{plan}");
    // Observed: the instance has no changes; the operator shows only `package`, which
    // the cluster does not record (an in-place update that rewrites the same objects),
    // and the `graph` that names it.
    assert_eq!(plan.code, Some(2), "{plan}");
    assert!(
        !plan.stdout.contains("# kudo_instance.this"),
        "the imported instance matches the configuration:\n{plan}"
    );
    let operator_changes: Vec<&str> = plan
        .stdout
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("+ ") || l.starts_with("~ ") || l.starts_with("- "))
        .filter(|l| l.contains(" = "))
        .collect();
    assert_eq!(
        operator_changes.len(),
        2,
        "only the package path and the graph naming it may differ: {operator_changes:#?}\n{plan}"
    );
    assert!(operator_changes[0].starts_with("+ graph"), "{plan}");
    assert!(operator_changes[1].starts_with("+ package"), "{plan}");
    assert!(
        plan.stdout
            .contains("Plan: 0 to add, 1 to change, 0 to destroy."),
        "{plan}"
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let kept = kube.must_get("v1", "ConfigMap", Some(ns), "app-settings");
    assert_eq!(kept["data"]["greeting"], "hi", "{kept:#}");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    destroy_leaves_nothing(&ctx, "app");
}

// 8. Destroy runs `cleanup`, then removes every object, cluster-scoped ones included.
#[test]
fn destroy_runs_cleanup_and_leaves_nothing_behind() {
    let ctx = TestContext::new("cleanup");
    let ns = ctx.namespace.as_str();
    let kube = ctx.kube();
    ctx.write(
        "main.tf",
        &config(&path_str(&own_operator("cleanup-demo")), "demo", &[], &[]),
    );
    let state = apply_expecting(&ctx, "deploy");
    let role_name = format!("{ns}-demo-reader");
    let role = kube.must_get(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        None,
        &role_name,
    );
    assert_eq!(
        role["metadata"]["labels"]["kudo.dev/instance"], "demo",
        "{role:#}"
    );
    assert!(
        state_objects(&state).contains(&format!("ClusterRole/{role_name}")),
        "{:#}",
        instance_state(&state)
    );
    // What the application registered at run time; only the cleanup plan knows it.
    kube.apply(&json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "demo-registration", "namespace": ns },
        "data": { "registered": "true" },
    }));

    ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    ctx.mark_cleaned();

    assert!(
        kube.get("v1", "ConfigMap", Some(ns), "demo-registration")
            .is_none(),
        "the cleanup plan's Delete task must have run"
    );
    assert!(
        kube.get("batch/v1", "Job", Some(ns), "demo-cleanup")
            .is_none(),
        "the cleanup plan's Job is removed with the rest"
    );
    assert!(
        kube.get(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            None,
            &role_name
        )
        .is_none(),
        "cluster-scoped objects are removed too"
    );
    let cluster_left = kube.list_cluster("kudo.dev/instance=demo");
    assert!(
        cluster_left.is_empty(),
        "cluster-scoped leftovers: {cluster_left:#?}"
    );
    // Everything in the namespace, labelled or not: only what every namespace has.
    let left: Vec<_> = kube
        .list_namespace(ns, None)
        .into_iter()
        .filter(|o| {
            !(o.kind == "Event"
                || (o.kind == "ServiceAccount" && o.name == "default")
                || (o.kind == "ConfigMap" && o.name == "kube-root-ca.crt"))
        })
        .collect();
    assert!(
        left.is_empty(),
        "namespace not empty after destroy: {left:#?}"
    );
}

// 8b. A first run that fails still records what it created: destroy removes the
// cluster-scoped objects too (they have no owner reference to be collected by).
#[test]
fn failed_first_run_is_destroyed_without_leaking_cluster_scoped_objects() {
    if ctx_is_real() {
        skip!("needs kube-sim's job-fail annotation");
    }
    let ctx = TestContext::new("failed-first-run");
    let ns = ctx.namespace.as_str();
    let kube = ctx.kube();
    ctx.write(
        "main.tf",
        &config(
            &path_str(&own_operator("cleanup-demo")),
            "demo",
            &[("FAIL_SETUP", "true")],
            &[],
        ),
    );
    let run = ctx.tf.apply(&[]).assert_clean_error();
    assert!(run.stderr.contains("demo-setup"), "{run}");
    let role_name = format!("{ns}-demo-reader");
    kube.must_get(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        None,
        &role_name,
    );
    let state = ctx.tf.state();
    assert_eq!(
        instance_state(&state)["status"],
        "FATAL_ERROR",
        "{:#}",
        state.0
    );
    let objects = state_objects(&state);
    for o in [
        format!("ClusterRole/{role_name}"),
        "ConfigMap/demo-config".to_string(),
        "Job/demo-setup".to_string(),
    ] {
        assert!(
            objects.contains(&o),
            "{o} missing from the failed run's objects: {objects:#?}"
        );
    }

    ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    ctx.mark_cleaned();
    assert!(
        kube.get(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            None,
            &role_name
        )
        .is_none(),
        "the ClusterRole of a failed first run leaked"
    );
    let cluster_left = kube.list_cluster("kudo.dev/instance=demo");
    assert!(
        cluster_left.is_empty(),
        "cluster-scoped leftovers: {cluster_left:#?}"
    );
    let left = ctx.instance_objects("demo");
    assert!(left.is_empty(), "objects left after destroy: {left:#?}");
}

// 9. A parallel phase takes about as long as its slowest step (measured, not asserted).
#[test]
fn parallel_phase_takes_as_long_as_its_slowest_step() {
    let ctx = TestContext::new("parallel");
    let ns = ctx.namespace.as_str();
    let pkg = path_str(&own_operator("parallel-steps"));
    ctx.write("main.tf", &config(&pkg, "par", &[], &[]));

    let timed = |what: &str| {
        let started = Instant::now();
        let run = ctx.tf.apply(&[]).assert_success().assert_no_crash();
        let took = started.elapsed();
        eprintln!("[semantics] {what}: terraform apply took {took:.2?}");
        (run, took)
    };
    let (_, parallel) = timed("deploy (one parallel phase: 1s, 2s, 3s steps)");
    let state = ctx.tf.state();
    assert_eq!(instance_state(&state)["status"], "COMPLETE");
    let status = completed_plan_status(&ctx, "par", "deploy");
    let steps = status["phases"][0]["steps"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(steps.len(), 3, "{status:#}");
    assert!(
        steps.iter().all(|s| s["status"] == "COMPLETE"),
        "{status:#}"
    );

    let (_, noop) = timed("no changes (Terraform's own overhead)");

    ctx.write("main.tf", &config(&pkg, "par", &[], &[("sequential", "1")]));
    let (_, serial) = timed("sequential (the same steps in a serial phase)");
    let state = ctx.tf.state();
    assert_eq!(instance_state(&state)["last_plan"], "sequential");
    completed_plan_status(&ctx, "par", "sequential");

    for plan in ["deploy", "sequential"] {
        let created: Vec<String> = ["fast", "medium", "slow"]
            .iter()
            .map(|s| {
                let d = ctx.kube().must_get(
                    "apps/v1",
                    "Deployment",
                    Some(ns),
                    &format!("par-{plan}-{s}"),
                );
                format!(
                    "{s} created {}",
                    d["metadata"]["creationTimestamp"].as_str().unwrap_or("?")
                )
            })
            .collect();
        eprintln!("[semantics] {plan}: {created:?}");
    }
    eprintln!(
        "[semantics] MEASURED parallel={:.2}s serial={:.2}s no-op={:.2}s (step delays 1s/2s/3s)",
        parallel.as_secs_f64(),
        serial.as_secs_f64(),
        noop.as_secs_f64()
    );
}

// 10. Array and map parameters without a default default to YAML null (KUDO's
// `WrapParamValue`), so a package with such parameters installs with its defaults.
#[test]
fn array_and_map_parameters_without_default_install_as_null() {
    let ctx = TestContext::new("nullcoll");
    let ns = ctx.namespace.as_str();
    let pkg = path_str(&own_operator("null-collections"));
    ctx.write("main.tf", &config(&pkg, "coll", &[], &[]));
    apply_expecting(&ctx, "deploy");
    completed_plan_status(&ctx, "coll", "deploy");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    let summary = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(ns), "coll-summary");
    assert_eq!(
        summary["data"],
        json!({"tolerations": "none", "extraEnv": "none", "podLabels": "none"}),
        "{summary:#}"
    );
    let deploy = ctx
        .kube()
        .must_get("apps/v1", "Deployment", Some(ns), "coll-app");
    let pod = &deploy["spec"]["template"]["spec"];
    assert!(pod.get("tolerations").is_none(), "{deploy:#}");
    assert_eq!(
        pod["containers"][0]["env"].as_array().map(Vec::len),
        Some(1)
    );

    // Now with values: a YAML list, a JSON list, and a map.
    ctx.write(
        "main.tf",
        &config(
            &pkg,
            "coll",
            &[
                (
                    "TOLERATIONS",
                    "- key: dedicated\n  operator: Exists\n  effect: NoSchedule\n",
                ),
                ("EXTRA_ENV", r#"[{"name": "MODE", "value": "fast"}]"#),
                ("POD_LABELS", "{tier: backend}"),
            ],
            &[],
        ),
    );
    apply_expecting(&ctx, "deploy");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    let summary = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(ns), "coll-summary");
    assert_eq!(
        summary["data"],
        json!({"tolerations": "1", "extraEnv": "1", "podLabels": "1"}),
        "{summary:#}"
    );
    let deploy = ctx
        .kube()
        .must_get("apps/v1", "Deployment", Some(ns), "coll-app");
    let template = &deploy["spec"]["template"];
    assert_eq!(
        template["metadata"]["labels"]["tier"], "backend",
        "{deploy:#}"
    );
    assert_eq!(
        template["spec"]["tolerations"],
        json!([{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]),
        "{deploy:#}"
    );
    assert_eq!(
        template["spec"]["containers"][0]["env"][1],
        json!({"name": "MODE", "value": "fast"}),
        "{deploy:#}"
    );

    // And back to null explicitly: the value "null" is valid for arrays and maps.
    ctx.write(
        "main.tf",
        &config(&pkg, "coll", &[("TOLERATIONS", "null")], &[]),
    );
    apply_expecting(&ctx, "deploy");
    let deploy = ctx
        .kube()
        .must_get("apps/v1", "Deployment", Some(ns), "coll-app");
    assert!(
        deploy["spec"]["template"]["spec"]
            .get("tolerations")
            .is_none(),
        "{deploy:#}"
    );
    destroy_leaves_nothing(&ctx, "coll");
}

/// The text the engine gives for a plan it cannot walk (kudo-plan's error as the run
/// reports it), for comparing with what `terraform plan` printed.
fn walk_error(pkg: &Path, instance: &str, ns: &str, values: &[(&str, &str)]) -> String {
    let package = kudo_package::Package::load_dir(pkg).expect("load the package");
    let values = values
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let e = kudo_engine::engine::rendered_objects(&package, instance, ns, &values, "deploy")
        .expect_err("the walk refuses the values");
    crate::harness::flat(&e.to_string())
}

#[test]
fn a_toggle_that_is_not_a_boolean_fails_the_plan_as_the_apply_would() {
    let Some(pkg) = fixture_operator("kafka") else {
        skip!("../shared/fixtures/operators/kafka not found (clone without ../shared)");
    };
    let ctx = TestContext::new("toggle-maybe");
    let values = [("ADD_SERVICE_MONITOR", "maybe")];
    ctx.write("main.tf", &config(&path_str(&pkg), "kafka", &values, &[]));
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let text = run.flat_output();
    // The run's own words, naming the parameter and the task.
    let expected = walk_error(&pkg, "kafka", &ctx.namespace, &values);
    for needle in [
        "toggle parameter ADD_SERVICE_MONITOR is \"maybe\", which is not a boolean",
        "task \"service-monitor\"",
        expected.as_str(),
    ] {
        assert!(
            text.contains(needle),
            "the plan error lacks {needle:?}:\n{run}"
        );
    }
    // Nothing was applied: the plan stopped the apply before it began.
    assert!(ctx.kube().instance(&ctx.namespace, "kafka").is_none());
    assert!(ctx.instance_objects("kafka").is_empty());
}
