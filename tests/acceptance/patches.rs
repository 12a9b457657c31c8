//! Task `patches` (KEP toolkit, issue 16): strategic merge patches the Kustomize way,
//! JSON merge semantics for custom resources, and JSON 6902 operations, through real
//! Terraform and the `render` command, asserting on the objects in the cluster.

use std::process::Command;

use serde_json::{Value, json};

use crate::harness::{PREAMBLE, TestContext, own_operator, provider_binary};

fn container<'v>(pod_spec_owner: &'v Value, name: &str) -> &'v Value {
    pod_spec_owner["spec"]["template"]["spec"]["containers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no container {name:?} in {pod_spec_owner:#}"))
}

fn env_of(c: &Value) -> Vec<(String, String)> {
    c["env"]
        .as_array()
        .map(|e| {
            e.iter()
                .map(|v| {
                    (
                        v["name"].as_str().unwrap_or("").to_string(),
                        v["value"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The KEP-12 extension patches the base's backup Job with a partial container (only
/// `name`, `command` and one added env variable): `render` and the applied Job keep the
/// base container's image, env, volume mounts and probe.
#[test]
fn kep12_partial_container_patch_keeps_the_base_container() {
    let fixtures = crate::harness::repo_root().join("tests/fixtures/operators");

    let out = Command::new(provider_binary())
        .args(["render"])
        .arg(fixtures.join("kep12-extension"))
        .args(["--plan", "backup", "--name", "db"])
        .env_remove("TF_PLUGIN_MAGIC_COOKIE")
        .output()
        .expect("render runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for wanted in [
        "dump --host db --compress gzip --to s3://backups/db",
        "image: postgres:11",
        "name: PGHOST",
        "name: COMPRESSION",
        "mountPath: /scratch",
        "livenessProbe:",
        "backup-compression: gzip",
    ] {
        assert!(
            stdout.contains(wanted),
            "render lacks {wanted:?}:\n{stdout}"
        );
    }
    assert!(
        !stdout.contains("templates/backup-compression-patch.yaml"),
        "the patch is shown applied, not as an object of its own:\n{stdout}"
    );

    let ctx = TestContext::new("kep12patch");
    ctx.copy_in(&fixtures.join("kep12-base"), "operators/kep12-base");
    ctx.copy_in(
        &fixtures.join("kep12-extension"),
        "operators/kep12-extension",
    );
    let main = |trigger: &str| {
        format!(
            r#"{PREAMBLE}
resource "kudo_operator" "db" {{
  package   = "${{path.module}}/operators/kep12-extension"
  namespace = var.namespace
}}
resource "kudo_instance" "db" {{
  name          = "db"
  namespace     = var.namespace
  operator      = kudo_operator.db.id
  parameters    = {{ BACKUP_COMPRESSION = "none" }}
  plan_triggers = {{ {trigger} }}
}}
"#
        )
    };
    ctx.write("main.tf", &main(""));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    ctx.write("main.tf", &main(r#"backup = "1""#));
    ctx.tf.apply(&[]).assert_success();
    let state = ctx.tf.state();
    assert_eq!(state.attr_str("kudo_instance.db", "last_plan"), "backup");
    assert_eq!(state.attr_str("kudo_instance.db", "status"), "COMPLETE");

    let job = ctx
        .kube()
        .must_get("batch/v1", "Job", Some(&ctx.namespace), "db-backup");
    assert_eq!(job["metadata"]["labels"]["backup-compression"], "none");
    let c = container(&job, "backup");
    assert_eq!(
        c["command"],
        json!([
            "sh",
            "-c",
            "dump --host db --compress none --to s3://backups/db"
        ])
    );
    assert_eq!(c["image"], "postgres:11", "{c:#}");
    assert_eq!(
        env_of(c),
        pairs(&[
            ("PGHOST", "db"),
            ("PGUSER", "backup"),
            ("COMPRESSION", "none")
        ]),
        "{c:#}"
    );
    assert_eq!(c["volumeMounts"][0]["mountPath"], "/scratch", "{c:#}");
    assert_eq!(
        c["livenessProbe"]["exec"]["command"],
        json!(["sh", "-c", "test -d /scratch"]),
        "{c:#}"
    );

    let destroy = ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    let left = ctx.left_after_destroy("db", &destroy.output());
    assert!(left.is_empty(), "{left:#?}");
}

/// `$patch: delete` removes a container, a partial container changes one env value, a
/// custom resource is merged with JSON merge semantics, and JSON 6902 operations apply;
/// a later change of the patch's parameter reaches the cluster.
#[test]
fn delete_directive_custom_resource_merge_and_json_operations_reach_the_cluster() {
    let ctx = TestContext::new("patches");
    ctx.copy_in(&own_operator("patches"), "operators/patches");
    // Its own API group, so runs on one real cluster do not share the CRD.
    let group = format!("{}.patches.example", ctx.namespace);
    let main = |mode: &str| {
        format!(
            r#"{PREAMBLE}
resource "kudo_operator" "p" {{
  package   = "${{path.module}}/operators/patches"
  namespace = var.namespace
}}
resource "kudo_instance" "p" {{
  name       = "p"
  namespace  = var.namespace
  operator   = kudo_operator.p.id
  parameters = {{ GROUP = "{group}", MODE = "{mode}" }}
}}
"#
        )
    };
    ctx.write("main.tf", &main("patched"));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();

    let ns = Some(ctx.namespace.as_str());
    let web = ctx.kube().must_get("apps/v1", "Deployment", ns, "p-web");
    let names: Vec<&str> = web["spec"]["template"]["spec"]["containers"]
        .as_array()
        .map(|cs| cs.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["web"], "`$patch: delete` removed debug: {web:#}");
    let c = container(&web, "web");
    assert_eq!(
        env_of(c),
        pairs(&[("MODE", "patched"), ("KEEP", "yes")]),
        "{c:#}"
    );
    assert_eq!(c["image"], "nginx:1.27");
    assert_eq!(c["ports"][0]["containerPort"], 80);
    assert_eq!(c["volumeMounts"][0]["mountPath"], "/cache");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/");
    // JSON 6902 operations.
    assert_eq!(web["spec"]["replicas"], 2);
    assert_eq!(c["args"], json!(["-g", "daemon off;"]));

    let gadget = ctx
        .kube()
        .must_get(&format!("{group}/v1"), "Gadget", ns, "p-gadget");
    assert_eq!(
        gadget["spec"],
        json!({"size": 3, "colors": ["blue"], "settings": {"keep": "1", "added": "3"}}),
        "JSON merge: list replaced, null deleted, the rest merged: {gadget:#}"
    );

    // The patch is a template: a new parameter value changes the merged field only.
    ctx.write("main.tf", &main("again"));
    ctx.tf.apply(&[]).assert_success();
    let web = ctx.kube().must_get("apps/v1", "Deployment", ns, "p-web");
    assert_eq!(
        env_of(container(&web, "web")),
        pairs(&[("MODE", "again"), ("KEEP", "yes")])
    );
    ctx.tf.plan(&["-detailed-exitcode"]).assert_success();

    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
}

/// A patch that does not name a merge key is a plan error naming the patch file, the
/// task and the list.
#[test]
fn a_patch_item_without_its_merge_key_fails_the_plan_naming_the_file() {
    let ctx = TestContext::new("badpatch");
    ctx.copy_in(&own_operator("patches"), "operators/patches");
    ctx.write(
        "operators/patches/templates/trim-patch.yaml",
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}-web
spec:
  template:
    spec:
      containers:
        - image: busybox:1.37
"#,
    );
    ctx.write(
        "main.tf",
        &format!(
            r#"{PREAMBLE}
resource "kudo_operator" "p" {{
  package   = "${{path.module}}/operators/patches"
  namespace = var.namespace
}}
resource "kudo_instance" "p" {{
  name      = "p"
  namespace = var.namespace
  operator  = kudo_operator.p.id
}}
"#
        ),
    );
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let text = crate::harness::terraform::flat(&run.output());
    for wanted in [
        "templates/trim-patch.yaml",
        r#"task "app""#,
        ".spec.template.spec.containers: item 0 has no \"name\"",
    ] {
        assert!(text.contains(wanted), "{wanted:?} missing from:\n{run}");
    }
    ctx.mark_cleaned();
}
