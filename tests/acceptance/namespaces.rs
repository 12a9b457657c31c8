//! `create_namespace` on `kudo_operator` and `kudo_instance` (issue #51): the plan shows
//! the namespace the apply creates, destroy removes it only when the provider created
//! it and nothing else is left in it (the last of the resources sharing it removes it),
//! and a namespace nothing creates fails the plan saying what to do.

use crate::harness::{PREAMBLE, TestContext, flat};

/// A package whose one plan writes the ConfigMap `<instance>-config`.
fn write_package(ctx: &TestContext) {
    ctx.write(
        "operator/operator.yaml",
        &crate::harness::serial_operator_yaml("ns-app", "0.1.0", &["config"]),
    );
    ctx.write(
        "operator/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-config\ndata:\n  greeting: hello\n",
    );
}

/// The operator in `operator_ns` and its instance `app` in `instance_ns`, each with
/// `create_namespace` as given (None: not set).
fn config(
    operator_ns: &str,
    operator_creates: Option<bool>,
    instance_ns: &str,
    instance_creates: Option<bool>,
) -> String {
    let create = |c: Option<bool>| match c {
        Some(c) => format!("\n  create_namespace = {c}"),
        None => String::new(),
    };
    format!(
        r#"{PREAMBLE}
resource "kudo_operator" "app" {{
  package   = "${{path.module}}/operator"
  namespace = {operator_ns:?}{}
}}

resource "kudo_instance" "app" {{
  name      = "app"
  namespace = {instance_ns:?}
  operator  = kudo_operator.app.id{}
}}
"#,
        create(operator_creates),
        create(instance_creates)
    )
}

fn namespace_exists(ctx: &TestContext, name: &str) -> bool {
    ctx.kube().get("v1", "Namespace", None, name).is_some()
}

// Both resources set `create_namespace` for the same new namespace: the plan lists it,
// the apply creates it (labelled, one annotation per resource) with the instance's
// objects inside, and destroy removes it when the last of the two goes.
#[test]
fn create_namespace_creates_it_and_the_last_resource_destroyed_removes_it() {
    let ctx = TestContext::new("ns-create");
    let target = format!("{}-own", ctx.namespace);
    write_package(&ctx);
    ctx.write("main.tf", &config(&target, Some(true), &target, Some(true)));
    let plan = ctx.tf.plan(&[]).assert_success();
    assert!(
        plan.stdout.contains(&format!("\"Namespace {target}\"")),
        "the plan does not show the namespace in preview.create:\n{plan}"
    );
    assert!(!namespace_exists(&ctx, &target), "the plan created it");
    ctx.tf.apply(&[]).assert_success();
    let ns = ctx.kube().must_get("v1", "Namespace", None, &target);
    assert_eq!(
        ns["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "terraform-provider-kudo"
    );
    let users: Vec<&str> = ns["metadata"]["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("namespace-users.kudo.dev/"))
        .filter_map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(users.len(), 2, "{ns:#}");
    assert!(
        users.contains(&format!("kudo_instance {target}/app").as_str()),
        "{ns:#}"
    );
    assert!(
        users.contains(&format!("kudo_operator {target}/ns-app").as_str()),
        "{ns:#}"
    );
    ctx.kube()
        .must_get("v1", "ConfigMap", Some(&target), "app-config");
    // A second plan has nothing to do.
    let again = ctx.tf.plan(&["-detailed-exitcode"]);
    assert_eq!(again.code, Some(0), "{again}");
    let destroy = ctx.tf.destroy(&[]).assert_success();
    let out = flat(&destroy.output());
    assert!(
        out.contains(&format!(
            "Namespace {target} is kept for kudo_operator {target}/ns-app"
        )),
        "the first resource destroyed does not say why the namespace stays:\n{destroy}"
    );
    assert!(
        !namespace_exists(&ctx, &target),
        "the namespace is left:\n{destroy}"
    );
    ctx.mark_cleaned();
}

// A namespace the instance created but someone else put an object into stays at
// destroy, with a warning naming the object.
#[test]
fn a_created_namespace_holding_another_object_stays_with_a_warning() {
    let ctx = TestContext::new("ns-foreign");
    let target = format!("{}-own", ctx.namespace);
    write_package(&ctx);
    ctx.write(
        "main.tf",
        &config(&ctx.namespace, None, &target, Some(true)),
    );
    ctx.tf.apply(&[]).assert_success();
    ctx.kube().apply(&serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "someone-elses", "namespace": target},
        "data": {"a": "b"},
    }));
    let destroy = ctx.tf.destroy(&[]).assert_success();
    let out = flat(&destroy.output());
    assert!(
        out.contains(&format!("Namespace {target} kept"))
            && out.contains(&format!("ConfigMap {target}/someone-elses"))
            && out.contains(&format!("kubectl delete namespace {target}")),
        "{destroy}"
    );
    assert!(
        namespace_exists(&ctx, &target),
        "the namespace was deleted:\n{destroy}"
    );
    // The instance's own objects went; only the other one (and Kubernetes' defaults) stay.
    assert!(
        ctx.kube()
            .get("v1", "ConfigMap", Some(&target), "app-config")
            .is_none(),
        "{destroy}"
    );
    ctx.kube().delete_namespace(&target);
    ctx.mark_cleaned();
}

// A namespace known at plan time that does not exist, which neither resource creates,
// fails the plan with the three ways out, on both resources, and is never called
// something that may pass when run again.
#[test]
fn a_missing_namespace_fails_the_plan_saying_what_to_do() {
    let ctx = TestContext::new("ns-missing");
    let missing = format!("{}-missing", ctx.namespace);
    write_package(&ctx);
    // The operator's plan fails first (the instance waits for its id); then the
    // instance's, with the operator in a namespace that exists.
    let cases = [
        (
            config(&missing, None, &missing, None),
            "with kudo_operator.app",
        ),
        (
            config(&ctx.namespace, None, &missing, None),
            "with kudo_instance.app",
        ),
    ];
    for ((main, resource), command) in cases
        .iter()
        .flat_map(|case| ["plan", "apply"].map(|command| (case, command)))
    {
        ctx.write("main.tf", main);
        let run = match command {
            "plan" => ctx.tf.plan(&[]),
            _ => ctx.tf.apply(&[]),
        }
        .assert_clean_error();
        let text = flat(&run.stderr);
        for expected in [
            "Error: Namespace does not exist",
            &format!(
                "Namespace {missing} does not exist. Nothing in this configuration is known to create it."
            ),
            &format!("(`kubectl create namespace {missing}`)"),
            "set `namespace` from that resource's attribute (for example `namespace = kubernetes_namespace.this.metadata[0].name`)",
            "with only `depends_on` and a literal name the plan still checks a namespace that is not there yet",
            "or set `create_namespace = true` so that this resource creates it",
            resource,
        ] {
            assert!(
                text.contains(expected),
                "terraform {command} does not say {expected:?}:\n{run}"
            );
        }
        assert!(!text.contains("may pass when run again"), "{run}");
        assert!(!namespace_exists(&ctx, &missing), "{run}");
    }
    ctx.mark_cleaned();
}

// A namespace another resource decides (here `terraform_data`, whose `output` is
// unknown until it is created) stays unknown at plan time; the apply checks it, and
// creates it for `create_namespace`. Without `create_namespace` the apply fails with
// the plan's text, never as something that may pass when run again.
#[test]
fn a_namespace_known_only_at_apply_is_checked_at_apply() {
    let ctx = TestContext::new("ns-unknown");
    let target = format!("{}-own", ctx.namespace);
    write_package(&ctx);
    let main = |create: &str| {
        format!(
            r#"{PREAMBLE}
resource "terraform_data" "ns" {{
  input = {target:?}
}}

resource "kudo_operator" "app" {{
  package   = "${{path.module}}/operator"
  namespace = var.namespace
}}

resource "kudo_instance" "app" {{
  name      = "app"
  namespace = terraform_data.ns.output
  operator  = kudo_operator.app.id{create}
}}
"#
        )
    };
    ctx.write("main.tf", &main("\n  create_namespace = true"));
    ctx.tf.apply(&[]).assert_success();
    ctx.kube()
        .must_get("v1", "ConfigMap", Some(&target), "app-config");
    ctx.tf.destroy(&[]).assert_success();
    assert!(!namespace_exists(&ctx, &target));
    ctx.write("main.tf", &main(""));
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let text = flat(&run.stderr);
    assert!(
        text.contains(&format!("Namespace {target} does not exist. Nothing in this configuration is known to create it.")),
        "{run}"
    );
    assert!(!text.contains("may pass when run again"), "{run}");
    // The pre-destroy plan would meet the same error (the namespace is known now).
    ctx.tf.destroy(&["-refresh=false"]).assert_success();
    ctx.mark_cleaned();
}
