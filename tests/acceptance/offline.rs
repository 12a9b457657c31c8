//! Planning before the cluster exists (#13 item 3): provider settings that come from a
//! resource of the same configuration (a `terraform_data` standing in for a cluster
//! module) are unknown on the first plan. The provider then plans offline — packages
//! loaded, parameters checked, templates rendered, `preview` and `objects` unknown —
//! and one `terraform apply` creates the cluster stand-in, the operator and the instance.

use serde_json::Value;

use tfplugin::Provider;

use crate::harness::{PREAMBLE, TestContext, flat, rpc};

/// Variables holding the connection, a `terraform_data` passing them through (its
/// output is known only after it is created, as a cluster module's would be), the
/// provider reading that output, and the quickstart operator with `parameters`.
fn cluster_then_operator(parameters: &str) -> String {
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

variable "host" {{
  type = string
}}

variable "token" {{
  type      = string
  sensitive = true
}}

variable "cluster_ca_certificate" {{
  type = string
}}

variable "client_certificate" {{
  type = string
}}

variable "client_key" {{
  type      = string
  sensitive = true
}}

variable "insecure" {{
  type = bool
}}

# Changing it replaces the stand-in cluster, so its outputs are unknown again.
variable "generation" {{
  type    = number
  default = 1
}}

resource "terraform_data" "cluster" {{
  triggers_replace = var.generation
  input = {{
    host                   = var.host
    token                  = var.token
    cluster_ca_certificate = var.cluster_ca_certificate
    client_certificate     = var.client_certificate
    client_key             = var.client_key
    insecure               = var.insecure
  }}
}}

provider "kudo" {{
  host                   = terraform_data.cluster.output.host
  token                  = terraform_data.cluster.output.token
  cluster_ca_certificate = terraform_data.cluster.output.cluster_ca_certificate
  client_certificate     = terraform_data.cluster.output.client_certificate
  client_key             = terraform_data.cluster.output.client_key
  insecure               = terraform_data.cluster.output.insecure
}}

resource "kudo_operator" "webapp" {{
  package   = "./operator"
  namespace = var.namespace
}}

resource "kudo_instance" "web" {{
  name      = "web"
  namespace = var.namespace
  operator  = kudo_operator.webapp.id
  parameters = {{
{parameters}
  }}
}}
"#
    )
}

/// A context with the configuration above; Terraform gets the connection only through
/// the variables (no `KUBE_CONFIG_PATH` to fall back to).
fn offline_context(name: &str, parameters: &str) -> TestContext {
    let mut ctx = TestContext::new(name);
    ctx.use_example("quickstart");
    ctx.write("main.tf", &cluster_then_operator(parameters));
    let vars = ctx.connection().tf_vars("");
    for (k, v) in vars {
        ctx.tf.set_env(&k, v);
    }
    ctx.tf.remove_env("KUBE_CONFIG_PATH");
    ctx
}

fn change<'a>(plan: &'a Value, address: &str) -> &'a Value {
    plan["resource_changes"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["address"] == address))
        .unwrap_or_else(|| panic!("no change for {address}: {plan:#}"))
}

#[test]
fn a_cluster_known_only_after_apply_plans_then_applies_in_one_apply() {
    let ctx = offline_context("offline", r#"    REPLICAS = "1""#);
    let ns = ctx.namespace.as_str();

    // The first plan: the provider's settings are unknown, the plan is still made.
    let plan = ctx
        .tf
        .plan(&["-detailed-exitcode", "-out=tfplan"])
        .assert_no_crash();
    assert_eq!(plan.code, Some(2), "expected a plan with changes:\n{plan}");
    let text = flat(&plan.stdout);
    assert!(
        text.contains("+ preview") && text.contains("(known after apply)"),
        "{plan}"
    );
    // No connection attempt, and one warning (but the harness's own one about the
    // provider's development override): what this plan could not check (#48).
    let warnings = plan.output().matches("Warning:").count()
        - plan
            .output()
            .matches("Warning: Provider development overrides")
            .count();
    assert_eq!(warnings, 1, "{plan}");
    let out = flat(&plan.output());
    for expected in [
        "Warning: Planned without the cluster: checked only at apply",
        "The provider settings `host`",
        "It has not checked what the API server would refuse",
        "objects already held by another owner or field manager",
        "The apply checks all of this before it writes",
    ] {
        assert!(out.contains(expected), "{expected:?} missing:\n{plan}");
    }
    for unwanted in ["Cannot reach", "Parameters not checked"] {
        assert!(!plan.output().contains(unwanted), "{unwanted:?}:\n{plan}");
    }
    let json = ctx
        .tf
        .run(&["show", "-json", "tfplan"])
        .assert_success()
        .json();
    let web = change(&json, "kudo_instance.web");
    assert_eq!(web["change"]["after_unknown"]["preview"], true, "{web:#}");
    assert_eq!(web["change"]["after_unknown"]["objects"], true, "{web:#}");
    // The harness turns the per-object diff on: it needs the cluster too.
    assert_eq!(web["change"]["after_unknown"]["manifests"], true, "{web:#}");
    // Known offline: the package was loaded, parameters checked, the plan chosen.
    assert_eq!(web["change"]["after"]["last_plan"], "deploy", "{web:#}");
    // A create's parameters are what the configuration sets; every default comes with
    // the apply (`effective_parameters`), so that the plan does not list them all.
    assert_eq!(
        web["change"]["after"]["parameters"]["REPLICAS"], "1",
        "{web:#}"
    );
    assert_eq!(
        web["change"]["after_unknown"]["effective_parameters"], true,
        "{web:#}"
    );
    let operator = change(&json, "kudo_operator.webapp");
    assert_eq!(
        operator["change"]["after"]["operator_version_name"], "webapp-1.27.0-0.1.0",
        "{operator:#}"
    );
    // Nothing reached the cluster.
    assert!(ctx.kube().instance(ns, "web").is_none());

    // One apply: the stand-in cluster, then the operator and instance with the now
    // known connection.
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let instance = ctx
        .kube()
        .instance(ns, "web")
        .expect("the Instance exists after the apply");
    assert_eq!(
        instance["spec"]["parameters"]["REPLICAS"], "1",
        "{instance:#}"
    );
    let deployment = ctx
        .kube()
        .must_get("apps/v1", "Deployment", Some(ns), "web");
    assert_eq!(deployment["spec"]["replicas"], 1, "{deployment:#}");
    let state = ctx.tf.state();
    let web = state
        .resource("kudo_instance.web")
        .expect("instance in state");
    assert_eq!(web["status"], "COMPLETE", "{web:#}");
    let uids: Vec<&str> = crate::harness::managed_objects(web)
        .into_iter()
        .filter_map(|o| o["uid"].as_str())
        .collect();
    assert_eq!(
        uids.len(),
        3,
        "every object has its uid in the state: {web:#}"
    );
    // The apply filled what the offline plan could not know.
    let manifests = web["manifests"]
        .as_object()
        .expect("manifests filled by the apply");
    assert!(
        manifests.contains_key(&format!("Deployment.apps {ns}/web")),
        "{web:#}"
    );

    // Connected now: nothing left to do.
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    // The cluster is being replaced: its outputs are unknown again. The kudo resources
    // are not refreshed (a warning each says so) and keep their state.
    let replan = ctx
        .tf
        .plan(&["-detailed-exitcode", "-var", "generation=2", "-out=tfplan2"])
        .assert_no_crash();
    assert_eq!(replan.code, Some(2), "{replan}");
    let text = replan.flat_output();
    assert!(
        text.contains("Not refreshed: cluster connection known only after apply")
            && text.contains(&format!(
                "kudo_operator {ns}/webapp-1.27.0-0.1.0 was not read from the cluster"
            ))
            // Terraform folds the instance's warning of the same summary into this line.
            && text.contains("(and one more similar warning elsewhere)"),
        "{replan}"
    );
    let json = ctx
        .tf
        .run(&["show", "-json", "tfplan2"])
        .assert_success()
        .json();
    for address in ["kudo_operator.webapp", "kudo_instance.web"] {
        assert_eq!(
            change(&json, address)["change"]["actions"],
            serde_json::json!(["no-op"]),
            "{address}: {json:#}"
        );
    }

    let destroy = ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    assert!(ctx.kube().instance(ns, "web").is_none(), "{destroy}");
    assert!(
        ctx.left_after_destroy("web", &destroy.output()).is_empty(),
        "{destroy}"
    );
    ctx.mark_cleaned();
}

#[test]
fn parameters_are_validated_without_the_cluster() {
    let ctx = offline_context("offline-param", r#"    NO_SUCH_PARAMETER = "1""#);
    let run = ctx.tf.plan(&[]).assert_clean_error();
    // The diagnostic a connected plan gives: it names the parameter, points into the
    // configuration and lists what the package declares.
    assert!(run.stderr.contains("NO_SUCH_PARAMETER"), "{run}");
    assert!(run.stderr.contains("with kudo_instance.web"), "{run}");
    let text = flat(&run.stderr);
    assert!(
        text.contains("declares:") && text.contains("MESSAGE"),
        "{run}"
    );
    assert!(!text.contains("Cannot reach"), "{run}");

    // A value of the wrong type too.
    ctx.write(
        "main.tf",
        &cluster_then_operator(r#"    REPLICAS = "many""#),
    );
    let run = ctx.tf.plan(&[]).assert_clean_error();
    assert!(
        run.stderr.contains("REPLICAS") && run.stderr.contains("many"),
        "{run}"
    );
    assert!(ctx.kube().instance(&ctx.namespace, "web").is_none());
}

/// A package with a CRD and a custom resource of it, and a second instance whose
/// custom resource needs that CRD: connected plans of both succeed before the CRD
/// exists (the first instance's preview lists its Widget; the second's is unknown,
/// with a warning), and one apply creates everything.
#[test]
fn custom_resources_of_a_crd_the_same_plan_creates_plan_and_apply() {
    let ctx = TestContext::new("offline-crd");
    let ns = ctx.namespace.as_str();
    // Names of our own: tests on one real cluster must not meet.
    let group = format!("{ns}.example.com");
    ctx.copy_in(
        &crate::harness::own_operator("shared-api"),
        "operators/shared-api",
    );
    ctx.write(
        "operators/widget-user/operator.yaml",
        r#"apiVersion: kudo.dev/v1beta1
name: widget-user
operatorVersion: 0.1.0
kubernetesVersion: 1.16.0
maintainers:
  - name: terraform-provider-kudo tests
    email: tests@example.invalid
url: https://example.invalid/widget-user
tasks:
  - name: widget
    kind: Apply
    spec:
      resources:
        - widget.yaml
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: main
            tasks:
              - widget
"#,
    );
    ctx.write(
        "operators/widget-user/params.yaml",
        "apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: GROUP\n    description: API group of the Widget kind.\n",
    );
    ctx.write(
        "operators/widget-user/templates/widget.yaml",
        "apiVersion: {{ .Params.GROUP }}/v1\nkind: Widget\nmetadata:\n  name: {{ .Name }}\nspec:\n  size: 2\n",
    );
    ctx.write(
        "main.tf",
        &format!(
            r#"{PREAMBLE}
resource "kudo_operator" "api" {{
  package   = "./operators/shared-api"
  namespace = var.namespace
}}

resource "kudo_instance" "api" {{
  name      = "api"
  namespace = var.namespace
  operator  = kudo_operator.api.id
  parameters = {{
    GROUP     = "{group}"
    ROLE_NAME = "{ns}-reader"
  }}
}}

resource "kudo_operator" "user" {{
  package   = "./operators/widget-user"
  namespace = var.namespace
}}

resource "kudo_instance" "user" {{
  name      = "user"
  namespace = var.namespace
  operator  = kudo_operator.user.id
  parameters = {{
    GROUP = "{group}"
  }}
  # Its Widget needs the CRD the other instance installs.
  depends_on = [kudo_instance.api]
}}
"#
        ),
    );

    let plan = ctx
        .tf
        .plan(&["-detailed-exitcode", "-out=tfplan"])
        .assert_no_crash();
    assert_eq!(plan.code, Some(2), "expected a plan with changes:\n{plan}");
    let json = ctx
        .tf
        .run(&["show", "-json", "tfplan"])
        .assert_success()
        .json();
    let api = &change(&json, "kudo_instance.api")["change"]["after"]["preview"];
    let created: Vec<&str> = api["create"]
        .as_object()
        .unwrap_or_else(|| panic!("preview of api: {api:#}"))
        .keys()
        .map(String::as_str)
        .collect();
    assert!(
        created.contains(&format!("Widget.{ns}.example.com {ns}/api").as_str())
            && created
                .iter()
                .any(|o| o.starts_with("CustomResourceDefinition.apiextensions.k8s.io ")),
        "{api:#}"
    );
    let user = change(&json, "kudo_instance.user");
    assert_eq!(user["change"]["after_unknown"]["preview"], true, "{user:#}");
    assert!(
        plan.flat_output().contains("No preview"),
        "the unknown preview is explained:\n{plan}"
    );

    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    for name in ["api", "user"] {
        let widget = ctx
            .kube()
            .must_get(&format!("{group}/v1"), "Widget", Some(ns), name);
        assert_eq!(widget["metadata"]["labels"]["kudo.dev/instance"], name);
    }
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    ctx.tf.destroy(&[]).assert_success().assert_no_crash();
    assert!(ctx.kube().instance(ns, "user").is_none());
    assert!(ctx.kube().instance(ns, "api").is_none());
    ctx.mark_cleaned();
}

/// A provider configured as Terraform configures it on the first plan of a
/// configuration that creates its cluster: the connection settings unknown.
fn offline_provider() -> rpc::KudoProvider {
    rpc::configured(rpc::provider_block([
        ("host", tfplugin::Value::Unknown),
        ("token", tfplugin::Value::Unknown),
        ("cluster_ca_certificate", tfplugin::Value::Unknown),
    ]))
}

#[test]
fn offline_the_cluster_is_not_contacted_and_the_error_names_the_settings() {
    let provider = offline_provider();
    // `terraform query` needs the cluster: the error comes at once, without a
    // connection attempt (which would take the kubeconfig of the environment), and is
    // about the unknown settings.
    let config = rpc::wire(
        &tfplugin::Value::object([("namespace", tfplugin::Value::string("default"))]),
        &rpc::schemas().lists["kudo_instance"].value_type(),
    );
    let (listed, diags) = rpc::block_on(provider.list_resource(tfplugin::ListRequest {
        type_name: "kudo_instance".into(),
        config,
        include_resource_object: false,
        limit: 100,
    }));
    assert!(listed.is_empty(), "{listed:?}");
    assert_eq!(diags.len(), 1, "{}", rpc::text(&diags));
    assert_eq!(diags[0].summary, "Kubernetes connection not known yet");
    assert!(
        diags[0]
            .detail
            .contains("`host`, `token` and `cluster_ca_certificate`"),
        "{}",
        diags[0].detail
    );
}

#[test]
fn offline_refresh_keeps_the_state_and_warns() {
    let provider = offline_provider();
    let state = rpc::value_of(
        "kudo_instance",
        [
            ("id", tfplugin::Value::string("ns/web")),
            ("name", tfplugin::Value::string("web")),
        ],
    );
    let resp = rpc::block_on(provider.read_resource(tfplugin::ReadRequest {
        type_name: "kudo_instance".to_string(),
        current_state: state.clone(),
        private: b"seed".to_vec(),
    }));
    assert_eq!(resp.new_state, state);
    assert_eq!(resp.private, b"seed".to_vec());
    assert_eq!(
        resp.diagnostics.len(),
        1,
        "{}",
        rpc::text(&resp.diagnostics)
    );
    let d = &resp.diagnostics[0];
    assert!(!d.is_error());
    assert!(
        d.detail.contains("kudo_instance ns/web was not read"),
        "{}",
        d.detail
    );
}

#[test]
fn offline_import_is_an_error_saying_what_to_do() {
    let provider = offline_provider();
    let resp = rpc::block_on(provider.import_resource_state("kudo_instance", "ns/web"));
    assert!(resp.imported.is_empty());
    assert!(resp.diagnostics[0].is_error());
    assert!(
        resp.diagnostics[0].detail.contains("-target="),
        "{}",
        resp.diagnostics[0].detail
    );
}
