//! Operator packages from every kind of source, through real Terraform: a repository
//! index served over HTTP on 127.0.0.1, a `.tgz`, a digest that does not match, and a
//! KEP-12 extension package whose added plan runs through `plan_triggers`.

use std::path::PathBuf;

use crate::harness::{FileServer, PREAMBLE, TestContext, repo_root, tool};

/// A repository folder holding the quickstart package as a tgz and an index for `url`.
fn repository(ctx: &TestContext, server_url: &str) -> PathBuf {
    let repo = ctx.workdir.join("repo");
    std::fs::create_dir_all(&repo).expect("repo dir");
    let package = repo_root().join("examples/terraform/quickstart/operator");
    tool(&[
        "package",
        "create",
        package.to_str().expect("utf-8"),
        "-o",
        repo.to_str().expect("utf-8"),
    ]);
    tool(&[
        "repo",
        "index",
        repo.to_str().expect("utf-8"),
        "--url",
        server_url,
    ]);
    repo
}

fn config(repository_url: &str, package: &str) -> String {
    format!(
        r#"
terraform {{
  required_providers {{
    kudo = {{ source = "kudo/kudo" }}
  }}
}}
variable "namespace" {{ type = string }}
provider "kudo" {{
  repository {{
    name = "local"
    url  = "{repository_url}"
  }}
}}
resource "kudo_operator" "web" {{
  package   = "{package}"
  namespace = var.namespace
}}
resource "kudo_instance" "web" {{
  name      = "web"
  namespace = var.namespace
  operator  = kudo_operator.web.id
}}
"#
    )
}

#[test]
fn installs_from_a_repository_index_served_over_http() {
    let ctx = TestContext::new("repo-http");
    // The server serves the repo folder, which exists once the index is written; the
    // index's URLs must name the server, so bind first.
    let repo_dir = ctx.workdir.join("repo");
    std::fs::create_dir_all(&repo_dir).expect("repo dir");
    let server = FileServer::start(repo_dir.clone());
    repository(&ctx, &server.url);
    ctx.write("main.tf", &config(&server.url, "webapp"));

    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let state = ctx.tf.state();
    assert_eq!(state.attr_str("kudo_instance.web", "status"), "COMPLETE");
    assert_eq!(
        state.attr_str("kudo_operator.web", "operator_version_name"),
        "webapp-1.27.0-0.1.0"
    );
    assert!(
        !ctx.instance_objects("web").is_empty(),
        "the instance's objects are in the cluster"
    );
    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    assert!(ctx.instance_objects("web").is_empty());
}

#[test]
fn installs_from_a_tgz() {
    let ctx = TestContext::new("tgz");
    let repo = repository(&ctx, "http://127.0.0.1:1/");
    let tgz = std::fs::read_dir(&repo)
        .expect("repo dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "tgz"))
        .expect("package create wrote a tgz");
    ctx.write(
        "main.tf",
        &config("http://127.0.0.1:1/", tgz.to_str().expect("utf-8")),
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(
        ctx.tf.state().attr_str("kudo_instance.web", "status"),
        "COMPLETE"
    );
    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
}

#[test]
fn a_digest_mismatch_fails_the_plan_naming_package_and_repository() {
    let ctx = TestContext::new("digest");
    let repo_dir = ctx.workdir.join("repo");
    std::fs::create_dir_all(&repo_dir).expect("repo dir");
    let server = FileServer::start(repo_dir.clone());
    repository(&ctx, &server.url);
    let index_path = repo_dir.join("index.yaml");
    let index = std::fs::read_to_string(&index_path).expect("index");
    let digest_line = index
        .lines()
        .find(|l| l.trim_start().starts_with("digest:"))
        .expect("index has a digest");
    let tampered = index.replace(
        digest_line,
        &format!(
            "{}digest: {}",
            &digest_line[..digest_line.find("digest").unwrap_or(0)],
            "0".repeat(64)
        ),
    );
    std::fs::write(&index_path, tampered).expect("write index");
    ctx.write("main.tf", &config(&server.url, "webapp"));

    let run = ctx.tf.plan(&[]).assert_clean_error();
    let text = run.output();
    assert!(text.contains("digest mismatch"), "{run}");
    assert!(
        text.contains("webapp") && text.contains("local"),
        "names package and repository:\n{run}"
    );
    assert!(
        ctx.instance_objects("web").is_empty(),
        "nothing was installed"
    );
    ctx.mark_cleaned();
}

#[test]
fn kep12_extension_applies_and_runs_its_added_plan() {
    let ctx = TestContext::new("kep12");
    let fixtures = repo_root().join("tests/fixtures/operators");
    // The extension finds its base in a sibling folder.
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
  plan_triggers = {{ {trigger} }}
}}
"#
        )
    };
    ctx.write("main.tf", &main(""));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(
        ctx.tf.state().attr_str("kudo_instance.db", "last_plan"),
        "deploy"
    );

    // Asking for the extension's `load` plan runs it, visible in the plan first.
    ctx.write("main.tf", &main(r#"load = "1""#));
    let plan = ctx.tf.plan(&[]).assert_success();
    assert!(plan.output().contains(r#""deploy" -> "load""#), "{plan}");
    ctx.tf.apply(&[]).assert_success();
    let state = ctx.tf.state();
    assert_eq!(state.attr_str("kudo_instance.db", "last_plan"), "load");
    assert_eq!(state.attr_str("kudo_instance.db", "status"), "COMPLETE");
    let instance = ctx
        .kube()
        .instance(&ctx.namespace, "db")
        .expect("Instance object");
    assert_eq!(
        instance["status"]["planStatus"]["load"]["status"], "COMPLETE",
        "{instance:#}"
    );

    // A plan the operator does not have is refused at plan time, naming the entry.
    ctx.write("main.tf", &main(r#"nope = "1""#));
    let run = ctx.tf.plan(&[]).assert_clean_error();
    assert!(run.output().contains("plan_triggers"), "{run}");

    ctx.write("main.tf", &main(r#"load = "1""#));
    let destroy = ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    // The base's StatefulSet claims stay (the destroy names them); nothing else does.
    let left = ctx.left_after_destroy("db", &destroy.output());
    assert!(left.is_empty(), "{left:#?}");
}

/// A template path longer than YAML's 1024-character key limit becomes such a key of the
/// OperatorVersion's `templates`; the apply still stores it and renders from it.
#[test]
fn a_template_path_longer_than_yamls_key_limit_installs() {
    let ctx = TestContext::new("long-template-path");
    let ns = ctx.namespace.clone();
    let deep = format!("{}/settings.yaml", vec!["d".repeat(200); 6].join("/"));
    assert!(deep.len() > 1024);
    ctx.write(
        "operator/operator.yaml",
        "apiVersion: kudo.dev/v1beta1\nname: longpath\noperatorVersion: 0.1.0\nkubernetesVersion: 1.16.0\nmaintainers:\n  - name: tests\n    email: tests@example.com\nurl: https://example.com/longpath\ntasks:\n  - name: app\n    kind: Apply\n    spec:\n      resources:\n        - DEEP\nplans:\n  deploy:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n          - name: app\n            tasks:\n              - app\n"
            .replace("DEEP", &deep)
            .as_str(),
    );
    ctx.write(
        "operator/params.yaml",
        "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
    );
    ctx.write(
        &format!("operator/templates/{deep}"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-settings\ndata:\n  from: deep\n",
    );
    ctx.write(
        "main.tf",
        &format!(
            "{PREAMBLE}\nresource \"kudo_operator\" \"this\" {{\n  package   = \"${{path.module}}/operator\"\n  namespace = var.namespace\n}}\n\nresource \"kudo_instance\" \"this\" {{\n  name      = \"app\"\n  namespace = var.namespace\n  operator  = kudo_operator.this.id\n}}\n"
        ),
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let ov = ctx.kube().must_get(
        "kudo.dev/v1beta1",
        "OperatorVersion",
        Some(&ns),
        "longpath-0.1.0",
    );
    assert!(ov["spec"]["templates"][&deep].is_string(), "{ov:#}");
    let cm = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(&ns), "app-settings");
    assert_eq!(cm["data"]["from"], "deep");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    assert!(
        ctx.kube()
            .get(
                "kudo.dev/v1beta1",
                "OperatorVersion",
                Some(&ns),
                "longpath-0.1.0"
            )
            .is_none()
    );
}
