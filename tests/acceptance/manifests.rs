//! `show_manifests` / `manifests`: with the per-object diff on, a plan shows exactly the
//! changed lines of the changed objects and never a sensitive value; the apply's result
//! is the plan's; turning it off or on runs no KUDO plan. Package:
//! `tests/fixtures/operators/manifests-demo` (ConfigMaps `app-settings` with GREETING,
//! `app-static`, `app-dsn` with PASSWORD inside a URL; Secret `app-credentials`;
//! Deployment `app-web` with REPLICAS).

use std::collections::BTreeMap;

use crate::harness::{TestContext, TfRun, operator_config, own_operator};

const PASSWORD: &str = "pw-7f3a-do-not-show";

/// The instance with the given greeting, replica count and `show_manifests`.
fn config(greeting: &str, replicas: u32, show: &str) -> String {
    let operator = operator_config(&own_operator("manifests-demo"));
    format!(
        r#"{operator}
resource "kudo_instance" "this" {{
  name      = "app"
  namespace = var.namespace
  operator  = kudo_operator.this.id
  parameters = {{
    GREETING = {greeting:?}
    REPLICAS = "{replicas}"
  }}
  sensitive_parameters = {{
    PASSWORD = "{PASSWORD}"
  }}
  {show}
}}
"#
    )
}

fn plan(ctx: &TestContext) -> TfRun {
    ctx.tf
        .plan(&["-detailed-exitcode", "-no-color"])
        .assert_no_crash()
}

fn manifests(ctx: &TestContext) -> BTreeMap<String, String> {
    let state = ctx.tf.state();
    let v = state
        .resource("kudo_instance.this")
        .map(|r| r["manifests"].clone())
        .unwrap_or_default();
    serde_json::from_value(v).unwrap_or_default()
}

/// The `manifests` block of a plan's rendering of the instance: from its line to the
/// closing brace at the same indentation.
fn manifests_block(out: &str) -> Vec<&str> {
    let mut lines = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("~ manifests"));
    let Some(first) = lines.next() else {
        return Vec::new();
    };
    let indent = first.len() - first.trim_start().len();
    let mut block = vec![first];
    for l in lines {
        block.push(l);
        if l.trim() == "}" && l.len() - l.trim_start().len() == indent + 2 {
            break;
        }
    }
    block
}

/// The lines of the `manifests` block that add or remove text (`+`/`-`), with their
/// spacing collapsed.
fn changed_lines(out: &str) -> Vec<String> {
    manifests_block(out)
        .into_iter()
        .map(str::trim)
        .filter(|l| l.starts_with("+ ") || l.starts_with("- "))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn a_parameter_change_shows_exactly_its_lines_and_no_secret() {
    let ctx = TestContext::new("manifests-diff");
    let ns = ctx.namespace.clone();
    ctx.write("main.tf", &config("hi", 1, "show_manifests = true"));
    let first = ctx.tf.plan(&["-no-color"]).assert_success();
    assert!(
        !first.output().contains(PASSWORD),
        "the first plan shows no secret:\n{first}"
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();

    let applied = manifests(&ctx);
    let keys: Vec<&str> = applied.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            format!("ConfigMap {ns}/app-dsn"),
            format!("ConfigMap {ns}/app-settings"),
            format!("ConfigMap {ns}/app-static"),
            format!("Deployment.apps {ns}/app-web"),
            format!("Secret {ns}/app-credentials"),
        ],
        "every managed object, keyed Kind namespace/name"
    );
    assert_eq!(
        applied[&format!("ConfigMap {ns}/app-settings")],
        "apiVersion: v1\ndata:\n  greeting: hi\n  language: en\n  theme: dark\n  timezone: UTC\nkind: ConfigMap\nmetadata:\n  name: app-settings\n",
        "the render, keys sorted, nothing the server adds"
    );
    assert_eq!(
        applied[&format!("Secret {ns}/app-credentials")],
        "(sensitive value)"
    );
    assert_eq!(
        applied[&format!("ConfigMap {ns}/app-dsn")],
        "(sensitive value)",
        "an object that contains a sensitive value is hidden whole"
    );
    // (`sensitive_parameters` itself is in the state, as Terraform keeps every
    // sensitive attribute; `manifests` must not add a copy.)
    assert!(
        applied.values().all(|v| !v.contains(PASSWORD)),
        "manifests hold no secret: {applied:#?}"
    );

    let second = plan(&ctx);
    assert_eq!(
        second.code,
        Some(0),
        "nothing to do after the apply:\n{second}"
    );

    ctx.write(
        "main.tf",
        &config("hello there", 1, "show_manifests = true"),
    );
    let run = plan(&ctx);
    assert_eq!(run.code, Some(2), "a parameter change:\n{run}");
    eprintln!("[manifests] the plan of a greeting change:\n{}", run.stdout);
    let out = run.output();
    assert!(!out.contains(PASSWORD), "no secret in the plan:\n{run}");
    let changed = changed_lines(&out);
    assert_eq!(
        changed,
        ["- greeting: hi", "+ greeting: hello there"],
        "exactly the changed line of the changed object:\n{run}"
    );
    assert!(
        // Terraform pads keys to the longest (`Deployment.apps ...`): compared flat.
        crate::harness::flat(&out).contains(&format!("~ \"ConfigMap {ns}/app-settings\" = <<-EOT")),
        "the changed entry is named:\n{run}"
    );
    let block = manifests_block(&out).join("\n");
    assert!(
        block.contains("# (4 unchanged elements hidden)"),
        "the other four objects do not change:\n{block}"
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let after = plan(&ctx);
    assert_eq!(
        after.code,
        Some(0),
        "the apply did what the plan said:\n{after}"
    );
    assert!(
        manifests(&ctx)[&format!("ConfigMap {ns}/app-settings")].contains("greeting: hello there")
    );
}

#[test]
fn turning_manifests_on_and_off_runs_no_plan() {
    let mut ctx = TestContext::new("manifests-toggle");
    // The suite turns the diff on for every test; this one checks the default.
    ctx.tf.remove_env("KUDO_SHOW_MANIFESTS");
    let ns = ctx.namespace.clone();
    ctx.write("main.tf", &config("hi", 2, ""));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert!(manifests(&ctx).is_empty(), "off by default");
    // A run rewrites the Instance's plan status (its timestamps), so an unchanged
    // Instance means no KUDO plan ran.
    let instance = || ctx.kube().instance(&ns, "app").map(|i| i["status"].clone());
    let before = instance();
    assert!(before.is_some(), "the Instance exists");

    ctx.write("main.tf", &config("hi", 2, "show_manifests = true"));
    let run = plan(&ctx);
    assert_eq!(run.code, Some(2), "the attribute changes:\n{run}");
    let out = run.output();
    assert!(
        out.contains("replicas: 2"),
        "the manifests are shown at once:\n{run}"
    );
    assert!(
        !out.contains("last_plan") && !out.contains("(known after apply)"),
        "no KUDO plan runs:\n{run}"
    );
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(manifests(&ctx).len(), 5);
    let again = plan(&ctx);
    assert_eq!(again.code, Some(0), "{again}");

    ctx.write("main.tf", &config("hi", 2, "show_manifests = false"));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert!(manifests(&ctx).is_empty(), "off again");
    assert_eq!(before, instance(), "no plan ran for either change");
}
