//! `sensitive_parameters`: the value reaches the object that uses it, and nowhere else a
//! user or an operator of the cluster could read it in passing.

use crate::harness::{PREAMBLE, TestContext};

const SECRET: &str = "s3cr3t-Hunter2-value";
const NEW_SECRET: &str = "an0ther-Hunter3-value";

const OPERATOR_YAML: &str = r#"apiVersion: kudo.dev/v1beta1
name: vault-ish
operatorVersion: 0.1.0
kudoVersion: 0.19.0
kubernetesVersion: 1.20.0
maintainers:
  - name: tests
    email: tests@example.com
url: https://example.com
tasks:
  - name: config
    kind: Apply
    spec:
      resources:
        - config.yaml
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: config
            tasks:
              - config
"#;

const PARAMS_YAML: &str = r#"apiVersion: kudo.dev/v1beta1
parameters:
  - name: USER
    description: Login name.
    default: admin
  - name: PASSWORD
    description: Login password.
    required: true
"#;

const CONFIG_YAML: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-login
data:
  user: {{ .Params.USER | quote }}
  password: {{ .Params.PASSWORD | quote }}
"#;

fn main_tf(sensitive: &str, extra_public: &str) -> String {
    format!(
        r#"{PREAMBLE}
resource "kudo_operator" "op" {{
  package   = "${{path.module}}/operator"
  namespace = var.namespace
}}
resource "kudo_instance" "db" {{
  name      = "db"
  namespace = var.namespace
  operator  = kudo_operator.op.id
  parameters = {{
    USER = "alice"
    {extra_public}
  }}
  sensitive_parameters = {{
    PASSWORD = "{sensitive}"
  }}
}}
output "effective" {{ value = kudo_instance.db.effective_parameters }}
"#
    )
}

fn setup(ctx: &TestContext) {
    ctx.write("operator/operator.yaml", OPERATOR_YAML);
    ctx.write("operator/params.yaml", PARAMS_YAML);
    ctx.write("operator/templates/config.yaml", CONFIG_YAML);
    ctx.write("main.tf", &main_tf(SECRET, ""));
}

/// Lines the provider logged, as Terraform relays them.
fn provider_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("provider.terraform-provider-kudo"))
        .collect()
}

#[test]
fn sensitive_value_is_rendered_but_never_shown_logged_or_stored_in_the_instance() {
    let ctx = TestContext::new("sensitive");
    setup(&ctx);
    let ns = ctx.namespace.as_str();
    let trace = [("TF_LOG", "TRACE")];

    let plan = ctx
        .tf
        .run_with_env(&["plan", "-input=false", "-no-color"], &trace)
        .assert_success();
    assert!(
        !plan.stdout.contains(SECRET),
        "the plan shows the sensitive value:\n{}",
        plan.stdout
    );
    assert!(
        plan.stdout.contains("sensitive_parameters") && plan.stdout.contains("(sensitive value)"),
        "the plan does not mention the hidden attribute:\n{}",
        plan.stdout
    );
    let logged = provider_lines(&plan.stderr);
    assert!(!logged.is_empty(), "no provider log lines at TRACE");
    assert!(
        !logged.iter().any(|l| l.contains(SECRET)),
        "the provider logged the sensitive value while planning:\n{}",
        logged.join("\n")
    );

    let apply = ctx
        .tf
        .run_with_env(
            &["apply", "-input=false", "-no-color", "-auto-approve"],
            &trace,
        )
        .assert_success();
    assert!(!apply.stdout.contains(SECRET), "{}", apply.stdout);
    let logged = provider_lines(&apply.stderr);
    assert!(
        !logged.iter().any(|l| l.contains(SECRET)),
        "the provider logged the sensitive value while applying:\n{}",
        logged.join("\n")
    );

    // The object that uses it has it.
    let kube = ctx.kube();
    let cm = kube.must_get("v1", "ConfigMap", Some(ns), "db-login");
    assert_eq!(cm["data"]["password"], SECRET, "{cm:#}");
    assert_eq!(cm["data"]["user"], "alice", "{cm:#}");

    // The Instance does not, in any field; it names the Secret that holds it.
    let instance = kube.instance(ns, "db").expect("Instance object");
    let text = instance.to_string();
    assert!(
        !text.contains(SECRET),
        "the Instance holds the value: {instance:#}"
    );
    assert_eq!(
        instance["spec"]["parameters"]["USER"], "alice",
        "{instance:#}"
    );
    assert_eq!(
        instance["metadata"]["annotations"]["kudo.dev/sensitive-parameters-secret"],
        "db-kudo-sensitive",
        "{instance:#}"
    );
    let secret = kube.must_get("v1", "Secret", Some(ns), "db-kudo-sensitive");
    assert_eq!(
        secret["metadata"]["ownerReferences"][0]["kind"], "Instance",
        "{secret:#}"
    );

    // effective_parameters leaves it out rather than showing it.
    let outputs = ctx.tf.outputs();
    assert_eq!(outputs["effective"]["USER"], "alice", "{outputs:#?}");
    assert!(
        outputs["effective"].get("PASSWORD").is_none(),
        "{outputs:#?}"
    );

    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    // A new value is an update that shows neither value, and reaches the object.
    ctx.write("main.tf", &main_tf(NEW_SECRET, ""));
    let plan = ctx.tf.plan(&[]).assert_success();
    assert!(
        plan.stdout.contains("update in-place"),
        "changing a sensitive value plans no update:\n{}",
        plan.stdout
    );
    assert!(
        !plan.stdout.contains(SECRET) && !plan.stdout.contains(NEW_SECRET),
        "{}",
        plan.stdout
    );
    ctx.tf.apply(&[]).assert_success();
    let cm = kube.must_get("v1", "ConfigMap", Some(ns), "db-login");
    assert_eq!(cm["data"]["password"], NEW_SECRET, "{cm:#}");
    let instance = kube.instance(ns, "db").expect("Instance object");
    assert!(!instance.to_string().contains(NEW_SECRET), "{instance:#}");

    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    assert!(
        kube.get("v1", "Secret", Some(ns), "db-kudo-sensitive")
            .is_none(),
        "the sensitive parameters Secret outlived the instance"
    );
}

#[test]
fn a_parameter_in_both_maps_is_an_error_naming_it() {
    let ctx = TestContext::new("sensitive-twice");
    setup(&ctx);
    ctx.write("main.tf", &main_tf(SECRET, "PASSWORD = \"plain\""));
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let text = run.output();
    assert!(
        text.contains("Parameter PASSWORD set twice"),
        "the error does not name the parameter:\n{text}"
    );
    assert!(!text.contains(SECRET), "{text}");
}

#[test]
fn a_new_value_of_an_immutable_sensitive_parameter_replaces_the_instance_without_quoting_it() {
    let ctx = TestContext::new("sensitive-immutable");
    setup(&ctx);
    ctx.write(
        "operator/params.yaml",
        &PARAMS_YAML.replace("required: true", "required: true\n    immutable: true"),
    );
    ctx.tf.apply(&[]).assert_success();
    let ns = ctx.namespace.as_str();

    ctx.write("main.tf", &main_tf(NEW_SECRET, ""));
    let plan = ctx.tf.plan(&[]).assert_success();
    let text = plan.output();
    assert!(
        !text.contains(SECRET) && !text.contains(NEW_SECRET),
        "the plan quotes a sensitive value:\n{text}"
    );
    assert!(text.contains("kudo_instance.db must be replaced"), "{text}");
    let out = crate::harness::flat(&text);
    assert!(
        out.contains("Immutable parameter PASSWORD changed")
            && out.contains("PASSWORD: (sensitive value) -> (sensitive value)")
            && out.contains("set PASSWORD back to its previous value"),
        "{out}"
    );

    let apply = ctx.tf.apply(&[]).assert_success();
    let text = apply.output();
    assert!(
        !text.contains(SECRET) && !text.contains(NEW_SECRET),
        "the apply quotes a sensitive value:\n{text}"
    );
    let login = ctx.kube().must_get("v1", "ConfigMap", Some(ns), "db-login");
    assert_eq!(login["data"]["password"], NEW_SECRET, "{login:#}");
    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    assert!(ctx.instance_objects("db").is_empty());
}
