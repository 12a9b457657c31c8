//! `parameters_wo` / `parameters_wo_version`: a write-only value (from an ephemeral
//! variable) reaches the Secret the package renders, and nothing Terraform keeps or
//! prints; `parameters_wo_version` is what sends a new value. A Terraform without
//! write-only attributes is refused them (`ValidateResourceConfig`, in-process).

use tfplugin::{AttributePath, ClientCapabilities, Diagnostic, Provider, Value};

use crate::harness::rpc::{KudoProvider, block_on, on, text, value_of};
use crate::harness::{PREAMBLE, TestContext};

const SECRET: &str = "wr1te-0nly-Hunter2-value";
const NEW_SECRET: &str = "an0ther-wr1te-0nly-value";

const OPERATOR_YAML: &str = r#"apiVersion: kudo.dev/v1beta1
name: login
operatorVersion: 0.1.0
kudoVersion: 0.19.0
kubernetesVersion: 1.20.0
maintainers:
  - name: tests
    email: tests@example.com
url: https://example.com
tasks:
  - name: login
    kind: Apply
    spec:
      resources:
        - secret.yaml
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: login
            tasks:
              - login
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

const SECRET_YAML: &str = r#"apiVersion: v1
kind: Secret
metadata:
  name: {{ .Name }}-login
type: Opaque
stringData:
  user: {{ .Params.USER | quote }}
  password: {{ .Params.PASSWORD | quote }}
"#;

/// The harness preamble, the variables the tests set through `TF_VAR_*`, and one
/// instance taking its password from the ephemeral variable.
fn main_tf() -> String {
    format!(
        r#"{PREAMBLE}
variable "user" {{ type = string }}
variable "password_version" {{ type = number }}
variable "password" {{
  type      = string
  ephemeral = true
}}
resource "kudo_operator" "op" {{
  package   = "${{path.module}}/operator"
  namespace = var.namespace
}}
resource "kudo_instance" "db" {{
  name      = "db"
  namespace = var.namespace
  operator  = kudo_operator.op.id
  parameters = {{
    USER = var.user
  }}
  parameters_wo = {{
    PASSWORD = var.password
  }}
  parameters_wo_version = var.password_version
}}
output "effective" {{ value = kudo_instance.db.effective_parameters }}
"#
    )
}

/// Standard base64 (the Secret's `data` encoding), so the test reads what a user of the
/// Secret reads.
fn base64(text: &str) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in text.as_bytes().chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn vars<'a>(user: &'a str, password: &'a str, version: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("TF_VAR_user", user),
        ("TF_VAR_password", password),
        ("TF_VAR_password_version", version),
    ]
}

#[track_caller]
fn assert_absent(what: &str, text: &str) {
    for secret in [SECRET, NEW_SECRET] {
        assert!(
            !text.contains(secret),
            "{what} contains a write-only value:\n{text}"
        );
    }
}

#[test]
fn write_only_value_reaches_the_object_and_nothing_terraform_keeps_and_a_version_sends_a_new_one() {
    let ctx = TestContext::new("write-only");
    ctx.write("operator/operator.yaml", OPERATOR_YAML);
    ctx.write("operator/params.yaml", PARAMS_YAML);
    ctx.write("operator/templates/secret.yaml", SECRET_YAML);
    ctx.write("main.tf", &main_tf());
    let ns = ctx.namespace.as_str();
    let kube = ctx.kube();
    let trace = |mut v: Vec<(&'static str, &'static str)>| {
        v.push(("TF_LOG", "TRACE"));
        v
    };

    // Plan to a file and apply that file, with Terraform and the provider at TRACE.
    let plan = ctx.tf.run_with_env(
        &["plan", "-input=false", "-no-color", "-out=tfplan"],
        &trace(vars("alice", SECRET, "1")),
    );
    let plan = plan.assert_success();
    assert_absent("plan output", &plan.stdout);
    assert_absent("TF_LOG=TRACE output of the plan", &plan.stderr);
    assert!(
        plan.stdout.contains("parameters_wo") && plan.stdout.contains("write-only"),
        "the plan does not show the write-only attribute:\n{}",
        plan.stdout
    );
    let plan_file = std::fs::read(ctx.workdir.join("tfplan")).expect("plan file");
    assert_absent("plan file", &String::from_utf8_lossy(&plan_file));
    let shown = ctx
        .tf
        .run(&["show", "-json", "-no-color", "tfplan"])
        .assert_success();
    assert_absent("terraform show -json of the plan file", &shown.stdout);

    let apply = ctx
        .tf
        .run_with_env(
            &["apply", "-input=false", "-no-color", "tfplan"],
            &trace(vars("alice", SECRET, "1")),
        )
        .assert_success();
    assert_absent("apply output", &apply.stdout);
    assert_absent("TF_LOG=TRACE output of the apply", &apply.stderr);

    // The object the package renders has it ...
    let login = kube.must_get("v1", "Secret", Some(ns), "db-login");
    assert_eq!(login["data"]["password"], base64(SECRET), "{login:#}");
    assert_eq!(login["data"]["user"], base64("alice"), "{login:#}");
    // ... the state, `terraform show -json` and the Instance do not.
    let state_file =
        std::fs::read_to_string(ctx.workdir.join("terraform.tfstate")).expect("state file");
    assert_absent("state file", &state_file);
    let show = ctx.tf.run(&["show", "-json", "-no-color"]).assert_success();
    assert_absent("terraform show -json", &show.stdout);
    let state = ctx.tf.state();
    let inst = state
        .resource("kudo_instance.db")
        .expect("instance in state");
    assert!(inst["parameters_wo"].is_null(), "{inst:#}");
    assert_eq!(inst["parameters_wo_version"], "1", "{inst:#}");
    assert!(
        inst["effective_parameters"].get("PASSWORD").is_none(),
        "{inst:#}"
    );
    let instance = kube.instance(ns, "db").expect("Instance object");
    assert_absent("the Instance object", &instance.to_string());
    assert!(
        instance["spec"]["parameters"].get("PASSWORD").is_none(),
        "{instance:#}"
    );

    // Nothing changed: no plan, even though Terraform sends the value on every plan.
    ctx.tf
        .run_with_env(
            &["plan", "-input=false", "-no-color", "-detailed-exitcode"],
            &vars("alice", SECRET, "1"),
        )
        .assert_success()
        .assert_output_contains("No changes");

    // Another parameter changes: the plan re-runs with the value the instance has,
    // even when the variable now holds another one (the version did not change), and
    // says so without quoting either value.
    let apply = ctx
        .tf
        .run_with_env(
            &["apply", "-input=false", "-no-color", "-auto-approve"],
            &vars("bob", NEW_SECRET, "1"),
        )
        .assert_success();
    let out = crate::harness::flat(&apply.output());
    assert!(
        out.contains("Write-only parameters not sent") && out.contains("changes PASSWORD"),
        "no warning that the changed value is not sent:\n{out}"
    );
    assert_absent("apply output", &apply.output());
    let login = kube.must_get("v1", "Secret", Some(ns), "db-login");
    assert_eq!(login["data"]["user"], base64("bob"), "{login:#}");
    assert_eq!(
        login["data"]["password"],
        base64(SECRET),
        "an unrelated change lost or replaced the write-only value: {login:#}"
    );

    // A new version sends the new value and runs the plan for it.
    let plan = ctx
        .tf
        .run_with_env(
            &["plan", "-input=false", "-no-color"],
            &vars("bob", NEW_SECRET, "2"),
        )
        .assert_success();
    assert!(
        plan.stdout.contains("parameters_wo_version") && plan.stdout.contains("update in-place"),
        "a new version plans no update:\n{}",
        plan.stdout
    );
    assert_absent("plan output", &plan.stdout);
    let apply = ctx
        .tf
        .run_with_env(
            &["apply", "-input=false", "-no-color", "-auto-approve"],
            &vars("bob", NEW_SECRET, "2"),
        )
        .assert_success();
    assert_absent("apply output", &apply.stdout);
    let login = kube.must_get("v1", "Secret", Some(ns), "db-login");
    assert_eq!(login["data"]["password"], base64(NEW_SECRET), "{login:#}");
    let instance = kube.instance(ns, "db").expect("Instance object");
    assert_absent("the Instance object", &instance.to_string());
    assert_eq!(
        instance["status"]["planStatus"]["deploy"]["status"], "COMPLETE",
        "{instance:#}"
    );
    let state_file =
        std::fs::read_to_string(ctx.workdir.join("terraform.tfstate")).expect("state file");
    assert_absent("state file", &state_file);

    ctx.tf
        .run_with_env(
            &["destroy", "-input=false", "-no-color", "-auto-approve"],
            &vars("bob", NEW_SECRET, "2"),
        )
        .assert_success();
    ctx.mark_cleaned();
    assert!(ctx.instance_objects("db").is_empty());
}

#[test]
fn a_write_only_name_also_in_parameters_is_an_error_that_does_not_quote_the_value() {
    let ctx = TestContext::new("write-only-twice");
    ctx.write("operator/operator.yaml", OPERATOR_YAML);
    ctx.write("operator/params.yaml", PARAMS_YAML);
    ctx.write("operator/templates/secret.yaml", SECRET_YAML);
    ctx.write(
        "main.tf",
        &main_tf().replace("USER = var.user", "USER = var.user\n    PASSWORD = \"x\""),
    );
    let plan = ctx.tf.run_with_env(
        &["plan", "-input=false", "-no-color"],
        &vars("alice", SECRET, "1"),
    );
    assert!(!plan.success(), "{plan}");
    let out = crate::harness::flat(&plan.output());
    assert!(
        out.contains("Parameter PASSWORD set twice") && out.contains("`parameters_wo`"),
        "{out}"
    );
    assert_absent("the error", &plan.output());
    ctx.mark_cleaned();
}

#[test]
fn a_new_value_of_an_immutable_write_only_parameter_replaces_the_instance_without_quoting_it() {
    let ctx = TestContext::new("write-only-immutable");
    ctx.write("operator/operator.yaml", OPERATOR_YAML);
    ctx.write(
        "operator/params.yaml",
        &PARAMS_YAML.replace("required: true", "required: true\n    immutable: true"),
    );
    ctx.write("operator/templates/secret.yaml", SECRET_YAML);
    ctx.write("main.tf", &main_tf());
    let ns = ctx.namespace.as_str();
    let env = |args: &[&str], password, version| {
        ctx.tf.run_with_env(args, &vars("alice", password, version))
    };
    env(
        &["apply", "-input=false", "-no-color", "-auto-approve"],
        SECRET,
        "1",
    )
    .assert_success();
    let uid = |ctx: &TestContext| {
        ctx.kube().instance(ns, "db").expect("Instance")["metadata"]["uid"].clone()
    };
    let first = uid(&ctx);

    // Without a new version the value is not sent, so nothing is replaced.
    let plan = env(&["plan", "-input=false", "-no-color"], NEW_SECRET, "1").assert_success();
    assert!(!plan.stdout.contains("must be replaced"), "{plan}");

    // With one, Terraform cannot show the value's change: the version carries the
    // replacement, and the warning names the parameter without its values.
    let plan = env(&["plan", "-input=false", "-no-color"], NEW_SECRET, "2").assert_success();
    assert_absent("plan output", &plan.output());
    assert!(
        plan.stdout.contains("kudo_instance.db must be replaced"),
        "{plan}"
    );
    assert!(
        plan.stdout
            .lines()
            .any(|l| l.contains("parameters_wo_version") && l.contains("# forces replacement")),
        "the version is not marked as forcing the replacement:\n{plan}"
    );
    let out = crate::harness::flat(&plan.output());
    assert!(
        out.contains("Immutable parameter PASSWORD changed")
            && out.contains("PASSWORD: (sensitive value) -> (sensitive value)"),
        "{out}"
    );

    let apply = env(
        &["apply", "-input=false", "-no-color", "-auto-approve"],
        NEW_SECRET,
        "2",
    )
    .assert_success();
    assert_absent("apply output", &apply.output());
    assert_ne!(uid(&ctx), first, "the Instance was not created again");
    let login = ctx.kube().must_get("v1", "Secret", Some(ns), "db-login");
    assert_eq!(login["data"]["password"], base64(NEW_SECRET), "{login:#}");
    let state_file =
        std::fs::read_to_string(ctx.workdir.join("terraform.tfstate")).expect("state file");
    assert_absent("state file", &state_file);
    env(
        &["plan", "-input=false", "-no-color", "-detailed-exitcode"],
        NEW_SECRET,
        "2",
    )
    .assert_success()
    .assert_output_contains("No changes");

    env(
        &["destroy", "-input=false", "-no-color", "-auto-approve"],
        NEW_SECRET,
        "2",
    )
    .assert_success();
    ctx.mark_cleaned();
    assert!(ctx.instance_objects("db").is_empty());
}

/// One instance's password handed to another through the ephemeral resource and a
/// write-only attribute: the second instance's Secret has it, and nothing Terraform
/// keeps or prints does.
#[test]
fn an_instances_password_reaches_another_instance_through_the_ephemeral_resource() {
    if let Some(why) = crate::harness::lacks(crate::harness::Feature::WriteOnly) {
        crate::skip!("{why}");
    }
    let ctx = TestContext::new("ephemeral");
    ctx.write("operator/operator.yaml", OPERATOR_YAML);
    ctx.write("operator/params.yaml", PARAMS_YAML);
    ctx.write("operator/templates/secret.yaml", SECRET_YAML);
    let ns = ctx.namespace.as_str();
    let db = format!(
        r#"{PREAMBLE}
variable "password" {{
  type      = string
  sensitive = true
}}
resource "kudo_operator" "op" {{
  package   = "${{path.module}}/operator"
  namespace = var.namespace
}}
resource "kudo_instance" "db" {{
  name                 = "db"
  namespace            = var.namespace
  operator             = kudo_operator.op.id
  sensitive_parameters = {{ PASSWORD = var.password }}
}}
"#
    );
    ctx.write("main.tf", &db);
    let secret = [("TF_VAR_password", SECRET)];
    ctx.tf
        .run_with_env(
            &["apply", "-input=false", "-no-color", "-auto-approve"],
            &secret,
        )
        .assert_success();

    // The instance exists: a second one reads its password without storing it.
    ctx.write(
        "main.tf",
        &format!(
            r#"{db}
ephemeral "kudo_instance_parameters" "db" {{
  name      = kudo_instance.db.name
  namespace = var.namespace
}}
resource "kudo_instance" "app" {{
  name                  = "app"
  namespace             = var.namespace
  operator              = kudo_operator.op.id
  parameters            = {{ USER = "app" }}
  parameters_wo         = {{ PASSWORD = ephemeral.kudo_instance_parameters.db.values["PASSWORD"] }}
  parameters_wo_version = 1
}}
"#
        ),
    );
    let plan = ctx
        .tf
        .run_with_env(&["plan", "-input=false", "-no-color"], &secret)
        .assert_success();
    assert_absent("plan output", &plan.stdout);
    let apply = ctx
        .tf
        .run_with_env(
            &["apply", "-input=false", "-no-color", "-auto-approve"],
            &secret,
        )
        .assert_success()
        .assert_no_crash();
    assert_absent("apply output", &apply.stdout);
    let login = ctx.kube().must_get("v1", "Secret", Some(ns), "app-login");
    assert_eq!(login["data"]["password"], base64(SECRET), "{login:#}");
    assert_eq!(login["data"]["user"], base64("app"), "{login:#}");
    let state_file =
        std::fs::read_to_string(ctx.workdir.join("terraform.tfstate")).expect("state file");
    // Only its address, in the app instance's dependencies; never a value.
    let stored: serde_json::Value = serde_json::from_str(&state_file).expect("state JSON");
    let modes: Vec<&serde_json::Value> = stored["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| &r["mode"])
        .collect();
    assert!(
        modes.iter().all(|m| *m == "managed"),
        "an ephemeral resource never reaches the state:\n{state_file}"
    );
    // The db instance's own state holds its sensitive parameter (that is what
    // `sensitive_parameters` does); the app instance's must not.
    let state = ctx.tf.state();
    let app = state.resource("kudo_instance.app").expect("app in state");
    assert_absent("the app instance's state", &app.to_string());

    // The next plan reads it again and changes nothing.
    let again = ctx.tf.run_with_env(
        &["plan", "-input=false", "-no-color", "-detailed-exitcode"],
        &secret,
    );
    assert_eq!(again.code, Some(0), "{again}");
}

#[test]
fn the_ephemeral_resource_names_a_missing_instance_and_what_to_do() {
    let ctx = TestContext::new("ephemeral-missing");
    ctx.write(
        "main.tf",
        &format!(
            r#"{PREAMBLE}
ephemeral "kudo_instance_parameters" "nope" {{
  name      = "nope"
  namespace = var.namespace
}}
"#
        ),
    );
    let plan = ctx.tf.plan(&[]);
    assert!(!plan.success(), "{plan}");
    let out = plan.flat_output();
    assert!(
        out.contains("There is no Instance nope in namespace")
            && out.contains("terraform apply -target=kudo_instance"),
        "{plan}"
    );
}

/// A Terraform that cannot keep write-only values out of its state would store them:
/// setting any is refused, on `parameters_wo`, naming what to use instead.
#[test]
fn a_client_without_write_only_attributes_is_refused_write_only_values() {
    let provider = KudoProvider::new();
    let validate = |parameters_wo: Value, write_only_attributes_allowed: bool| {
        let config = value_of(
            "kudo_instance",
            [
                ("name", Value::string("db")),
                ("operator", Value::string("ns/db-1.0.0")),
                ("parameters_wo", parameters_wo),
            ],
        );
        let client = ClientCapabilities {
            deferral_allowed: false,
            write_only_attributes_allowed,
            store_planned_private: false,
        };
        block_on(provider.validate_resource_config("kudo_instance", config, client))
    };
    let refusal = |diags: &[Diagnostic]| {
        on(diags, &AttributePath::attribute("parameters_wo"))
            .filter(|d| d.summary == "Write-only parameters need Terraform 1.11 or OpenTofu 1.11")
            .map(|d| d.detail.clone())
    };
    let values = Value::string_map([("PASSWORD", "pw-123")]);
    let diags = validate(values.clone(), false);
    let detail = refusal(&diags).unwrap_or_else(|| panic!("not refused: {}", text(&diags)));
    assert!(
        detail.contains("`sensitive_parameters`") && !detail.contains("pw-123"),
        "{detail}"
    );
    for (value, allowed) in [(values, true), (Value::Null, false)] {
        let diags = validate(value, allowed);
        assert!(diags.is_empty(), "{}", text(&diags));
    }
}

/// `login` 0.2.0: the same Secret, then a Deployment kube-sim and fake-kubelet hold
/// unready, so an upgrade to it fails at its `timeouts`.
fn operator_v2_yaml() -> String {
    let v2 = OPERATOR_YAML
        .replace("operatorVersion: 0.1.0", "operatorVersion: 0.2.0")
        .replace(
            "        - secret.yaml\n",
            "        - secret.yaml\n  - name: app\n    kind: Apply\n    spec:\n      resources:\n        - app.yaml\n",
        )
        .replace(
            "              - login\n",
            "              - login\n          - name: app\n            tasks:\n              - app\n",
        );
    assert!(v2.contains("- app.yaml") && v2.contains("- app\n"), "{v2}");
    v2
}

const NEVER_READY_YAML: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}-app
  annotations:
    test.kudo/never-ready: "true"
spec:
  replicas: 1
  selector:
    matchLabels:
      app: {{ .Name }}-login
  template:
    metadata:
      labels:
        app: {{ .Name }}-login
    spec:
      containers:
        - name: app
          image: example.com/login:0.2.0
"#;

/// A failed upgrade with `rollback_on_failure` puts the instance back with the
/// write-only value it has (never stored by Terraform, read back from its Secret by the
/// engine): the rollback's render needs it, as `PASSWORD` is required. Neither value
/// is quoted.
#[test]
fn a_failed_upgrade_rolls_back_with_the_write_only_values_the_instance_has() {
    let ctx = TestContext::new("write-only-rollback");
    ctx.write("operator/operator.yaml", OPERATOR_YAML);
    ctx.write("operator/params.yaml", PARAMS_YAML);
    ctx.write("operator/templates/secret.yaml", SECRET_YAML);
    let config = main_tf().replace(
        "  parameters_wo_version = var.password_version\n",
        "  parameters_wo_version = var.password_version\n  rollback_on_failure    = true\n  timeouts {\n    update = \"5s\"\n  }\n",
    );
    assert!(config.contains("rollback_on_failure"), "{config}");
    ctx.write("main.tf", &config);
    let apply = |password: &'static str| {
        ctx.tf.run_with_env(
            &["apply", "-input=false", "-no-color", "-auto-approve"],
            &vars("alice", password, "1"),
        )
    };
    apply(SECRET).assert_success();

    // The upgrade, with another value configured but the same version: it runs with
    // the stored value, fails, and is rolled back with it.
    ctx.write("operator/operator.yaml", &operator_v2_yaml());
    ctx.write("operator/templates/app.yaml", NEVER_READY_YAML);
    let run = apply(NEW_SECRET).assert_clean_error();
    let out = crate::harness::flat(&run.output());
    assert!(
        out.contains("rolled back to 0.1.0") && !out.contains("failed too"),
        "the upgrade is not rolled back:\n{run}"
    );
    assert_absent("apply output", &run.output());
    let ns = ctx.namespace.as_str();
    let kube = ctx.kube();
    let login = kube.must_get("v1", "Secret", Some(ns), "db-login");
    assert_eq!(login["data"]["password"], base64(SECRET), "{login:#}");
    let instance = kube.instance(ns, "db").expect("Instance object");
    assert_eq!(
        instance["spec"]["operatorVersion"]["name"], "login-0.1.0",
        "{instance:#}"
    );
    let state_file =
        std::fs::read_to_string(ctx.workdir.join("terraform.tfstate")).expect("state file");
    assert_absent("state file", &state_file);
}
