//! Mistakes a user makes must end as Terraform errors that say what is wrong:
//! non-zero exit, an `Error:` diagnostic naming the culprit, no crash.

use crate::harness::flat;
use crate::harness::{PREAMBLE, TestContext};

/// The quickstart operator with a configuration of our own around it.
fn quickstart_with(ctx: &TestContext, provider_block: &str, parameters: &str) {
    ctx.use_example("quickstart");
    ctx.write(
        "main.tf",
        &format!(
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

{provider_block}

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
        ),
    );
}

/// The line of the working folder's main.tf that starts with `prefix` (after
/// indentation), 1-based, as Terraform prints it in `on main.tf line N`.
fn main_tf_line(ctx: &TestContext, prefix: &str) -> usize {
    let text = std::fs::read_to_string(ctx.workdir.join("main.tf")).expect("read main.tf");
    text.lines()
        .position(|l| l.trim_start().starts_with(prefix))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("main.tf has no line starting with {prefix:?}"))
}

#[test]
fn unknown_parameter_is_a_diagnostic_naming_it() {
    let ctx = TestContext::new("err-unknown-param");
    quickstart_with(
        &ctx,
        r#"provider "kudo" {}"#,
        r#"    NO_SUCH_PARAMETER = "1""#,
    );
    // Plan or apply may catch it (the package is local, so plan can); either way the
    // user must see which parameter is wrong.
    let run = ctx.tf.apply(&[]).assert_clean_error();
    assert!(run.stderr.contains("NO_SUCH_PARAMETER"), "{run}");
    // The diagnostic points into the configuration: Terraform then quotes the
    // offending line of `parameters` under "with kudo_instance.web".
    assert!(run.stderr.contains("with kudo_instance.web"), "{run}");
    assert!(run.stderr.contains(r#"NO_SUCH_PARAMETER = "1""#), "{run}");
    // It lists the parameters the package does declare, and says what to do.
    let text = flat(&run.stderr);
    assert!(
        text.contains("declares:") && text.contains("MESSAGE"),
        "{run}"
    );
    assert!(
        text.contains("Correct the parameter's name or value in this resource's `parameters` in the configuration, then run terraform apply again"),
        "{run}"
    );
    assert!(
        ctx.kube().instance(&ctx.namespace, "web").is_none(),
        "no Instance may be created with an invalid parameter"
    );
}

/// An invalid value on an instance that exists stops `terraform destroy` too (Terraform
/// plans the configuration before destroying), so the error says how to destroy anyway,
/// and that way works.
#[test]
fn an_invalid_value_on_an_existing_instance_says_how_to_destroy_anyway() {
    let ctx = TestContext::new("err-destroy-anyway");
    quickstart_with(&ctx, r#"provider "kudo" {}"#, "");
    ctx.tf.apply(&[]).assert_success();
    quickstart_with(
        &ctx,
        r#"provider "kudo" {}"#,
        r#"    NO_SUCH_PARAMETER = "1""#,
    );
    let run = ctx.tf.destroy(&[]).assert_clean_error();
    let text = flat(&run.output());
    assert!(text.contains("NO_SUCH_PARAMETER"), "{run}");
    assert!(
        text.contains("If this error stopped `terraform destroy`: Terraform plans the configuration before destroying, so the same error stops it; `terraform destroy -refresh=false` destroys what the state records without that plan."),
        "{run}"
    );
    assert!(ctx.kube().instance(&ctx.namespace, "web").is_some());
    ctx.tf.destroy(&["-refresh=false"]).assert_success();
    ctx.mark_cleaned();
    assert!(ctx.kube().instance(&ctx.namespace, "web").is_none());
    assert!(ctx.instance_objects("web").is_empty());
}

/// A typo in a parameter's name (issue #51): the error offers the declared name it is
/// closest to, and says the mistake is in the configuration's `parameters`, not in the
/// package's params.yaml. A name close to nothing gets no guess.
#[test]
fn a_parameter_typo_says_did_you_mean_and_points_at_the_configuration() {
    let ctx = TestContext::new("err-did-you-mean");
    quickstart_with(
        &ctx,
        r#"provider "kudo" {}"#,
        "    REPLICSA = \"3\"\n    COLOUR_SCHEME = \"dark\"",
    );
    let run = ctx.tf.plan(&[]).assert_clean_error();
    ctx.mark_cleaned();
    let text = flat(&run.stderr);
    assert!(
        text.contains(r#"parameter REPLICSA: unknown parameter; operator webapp declares no parameter of that name; did you mean "REPLICAS"?"#),
        "{run}"
    );
    assert!(
        text.contains("parameter COLOUR_SCHEME: unknown parameter; operator webapp declares no parameter of that name."),
        "{run}"
    );
    assert!(!text.contains("did you mean \"MESSAGE\""), "{run}");
    assert!(
        text.contains("Correct the parameter's name or value in this resource's `parameters` in the configuration"),
        "{run}"
    );
    assert!(!text.contains("params.yaml"), "{run}");
    // On the entry itself: Terraform quotes the line with the typo.
    assert!(run.stderr.contains(r#"REPLICSA = "3""#), "{run}");
}

/// `package` naming a repository checkout whose package sits in `operator/` (issue #51):
/// the error names that subfolder as it would be written in `package`.
#[test]
fn a_folder_holding_the_package_in_a_subfolder_says_did_you_mean_it() {
    let ctx = TestContext::new("err-package-subfolder");
    quickstart_with(&ctx, r#"provider "kudo" {}"#, "");
    let main_tf = std::fs::read_to_string(ctx.workdir.join("main.tf")).expect("read main.tf");
    ctx.write(
        "main.tf",
        &main_tf.replace(r#"package   = "./operator""#, r#"package   = ".""#),
    );
    let run = ctx.tf.plan(&[]).assert_clean_error();
    ctx.mark_cleaned();
    let text = flat(&run.stderr);
    assert!(
        text.contains(r#"no operator.yaml in this folder; a package needs operator.yaml (and usually params.yaml and templates/); did you mean "./operator"? (that subfolder holds an operator.yaml)"#),
        "{run}"
    );
}

/// The "destroy anyway" paragraph (issue #51) is kept to errors of the configuration:
/// a plan of an installed instance that cannot reach the cluster does not offer
/// `terraform destroy -refresh=false`, which needs the cluster as much.
#[test]
fn a_cluster_error_on_an_existing_instance_does_not_offer_destroy_without_refresh() {
    let ctx = TestContext::new("err-no-destroy-advice");
    quickstart_with(&ctx, r#"provider "kudo" {}"#, "");
    ctx.tf.apply(&[]).assert_success();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    quickstart_with(
        &ctx,
        &format!(
            "provider \"kudo\" {{\n  host     = \"https://127.0.0.1:{port}\"\n  insecure = true\n}}"
        ),
        "",
    );
    let mut tf = ctx.tf.clone();
    tf.remove_env("KUBE_CONFIG_PATH");
    tf.remove_env("KUBECONFIG");
    // Without the refresh, the plan of the resources in state meets the cluster error.
    let run = tf.plan(&["-refresh=false"]).assert_clean_error();
    let text = flat(&run.stderr);
    assert!(
        text.contains("Cannot reach the Kubernetes cluster"),
        "{run}"
    );
    assert!(!text.contains("-refresh=false"), "{run}");
    assert!(!text.contains("If this error stopped"), "{run}");
}

/// A `config_context` the kubeconfig lacks (issue #51): one error, on the provider
/// block's attribute, with what to change, instead of one "Cannot reach" per resource.
#[test]
fn an_unknown_config_context_is_one_error_on_the_provider_block() {
    let ctx = TestContext::new("err-config-context");
    let kubeconfig = ctx.cluster.kubeconfig.display().to_string();
    quickstart_with(
        &ctx,
        &format!(
            "provider \"kudo\" {{\n  config_path    = {kubeconfig:?}\n  config_context = \"prod\"\n}}"
        ),
        "",
    );
    let line = main_tf_line(&ctx, "config_context");
    let mut tf = ctx.tf.clone();
    tf.remove_env("KUBE_CONFIG_PATH");
    tf.remove_env("KUBECONFIG");
    let run = tf.plan(&[]).assert_clean_error();
    ctx.mark_cleaned();
    let text = flat(&run.stderr);
    assert_eq!(
        text.matches("Error: Invalid Kubernetes connection settings")
            .count(),
        1,
        "one error for the provider block:\n{run}"
    );
    assert!(
        text.contains(r#"provider setting `config_context`: context "prod" is not in the kubeconfig (it has ["#),
        "{run}"
    );
    assert!(
        text.contains(&format!("on main.tf line {line}, in provider \"kudo\"")),
        "the error points at config_context (line {line}):\n{run}"
    );
    assert!(
        text.contains(r#"Correct `config_context` in the provider "kudo" block (or the kubeconfig it reads) as the message says, then run Terraform again."#),
        "{run}"
    );
    assert!(
        !text.contains("Cannot reach the Kubernetes cluster"),
        "{run}"
    );
    assert!(!text.contains("with kudo_instance"), "{run}");
}

#[test]
fn template_error_names_the_template_file() {
    let ctx = TestContext::new("err-template");
    quickstart_with(&ctx, r#"provider "kudo" {}"#, "");
    // A key the package does not declare: Go templates with missingkey=error fail.
    ctx.write(
        "operator/templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-content\ndata:\n  MESSAGE: {{ .Params.NOT_DECLARED }}\n",
    );
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let text = flat(&run.stderr);
    // Where in the package: the package-relative file and the line of the mistake.
    assert!(
        text.contains("templates/configmap.yaml:6: template uses parameter \"NOT_DECLARED\""),
        "{run}"
    );
    // Where in the configuration: the operator's `package` (the package check fails).
    let line = main_tf_line(&ctx, "package ");
    assert!(
        text.contains(&format!(
            "on main.tf line {line}, in resource \"kudo_operator\" \"webapp\""
        )),
        "the error should point at main.tf line {line}:\n{run}"
    );
    // What to do.
    assert!(
        text.contains("Fix the file and line named above in the operator package")
            && text.contains("then run terraform apply again"),
        "{run}"
    );
    assert!(
        ctx.kube()
            .get("v1", "ConfigMap", Some(&ctx.namespace), "web-content")
            .is_none(),
        "nothing may be applied from a template that failed"
    );
}

#[test]
fn template_failing_for_a_parameter_value_points_at_the_parameters() {
    let ctx = TestContext::new("err-template-value");
    quickstart_with(&ctx, r#"provider "kudo" {}"#, r#"    MESSAGE = "boom""#);
    // A valid package whose template refuses one value: only rendering finds it.
    ctx.write(
        "operator/templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-content\ndata:\n  MESSAGE: {{ if eq .Params.MESSAGE \"boom\" }}{{ fail \"MESSAGE may not be boom\" }}{{ end }}\n",
    );
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let text = flat(&run.stderr);
    assert!(text.contains("templates/configmap.yaml:6"), "{run}");
    assert!(text.contains("MESSAGE may not be boom"), "{run}");
    // The Error: block points at the instance's `parameters`, which feed the template.
    let line = main_tf_line(&ctx, "parameters = {");
    assert!(
        text.contains(&format!(
            "on main.tf line {line}, in resource \"kudo_instance\" \"web\""
        )),
        "the error should point at main.tf line {line}:\n{run}"
    );
    assert!(
        text.contains("Fix the template named above in the operator package, or the parameter value it uses, then run terraform apply again"),
        "{run}"
    );
    assert!(
        ctx.kube().instance(&ctx.namespace, "web").is_none(),
        "nothing may be applied from a template that failed"
    );
}

#[test]
fn rejected_object_names_the_object_and_its_template() {
    let ctx = TestContext::new("err-rejected");
    quickstart_with(&ctx, r#"provider "kudo" {}"#, "");
    // Renders fine, but label values may not hold a space: the API server answers 422.
    // (An invalid name is refused before the server sees it; see the next test.)
    ctx.write(
        "operator/templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-content\n  labels:\n    tier: \"web content\"\ndata:\n  MESSAGE: {{ .Params.MESSAGE | quote }}\n",
    );
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let text = flat(&run.stderr);
    let object = format!("object ConfigMap {}/web-content (v1)", ctx.namespace);
    assert!(
        text.contains(&format!(
            "{object} (rendered from templates/configmap.yaml)"
        )),
        "the error should name the object and the template that rendered it:\n{run}"
    );
    assert!(text.contains("metadata.labels"), "{run}");
    assert!(
        text.contains("Fix templates/configmap.yaml in the operator package")
            && text.contains("then run terraform apply again"),
        "{run}"
    );
    let line = main_tf_line(&ctx, "parameters = {");
    assert!(
        text.contains(&format!("on main.tf line {line}")),
        "the error should point at the instance's parameters (line {line}):\n{run}"
    );
}

/// What the walk of the plan knows about the objects without a cluster fails the
/// plan before anything of the instance is written: a name Kubernetes refuses, and two
/// templates of one task rendering the same object.
#[test]
fn invalid_names_and_duplicate_objects_fail_the_plan_naming_the_templates() {
    let ctx = TestContext::new("err-objects");
    quickstart_with(&ctx, r#"provider "kudo" {}"#, "");
    ctx.write(
        "operator/templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-Content\ndata:\n  MESSAGE: {{ .Params.MESSAGE | quote }}\n",
    );
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let text = flat(&run.stderr);
    assert!(
        text.contains("template templates/configmap.yaml: ConfigMap \"web-Content\" (document 1): metadata.name is not a valid name: a lowercase RFC 1123 subdomain"),
        "{run}"
    );
    assert!(
        ctx.kube()
            .get("v1", "ConfigMap", Some(&ctx.namespace), "web-Content")
            .is_none()
            && ctx.kube().instance(&ctx.namespace, "web").is_none(),
        "nothing of the instance may be written"
    );

    // The page content is fine again; the service template now renders the Deployment
    // a second time in the same task.
    quickstart_with(&ctx, r#"provider "kudo" {}"#, "");
    let deployment =
        std::fs::read_to_string(ctx.workdir.join("operator/templates/deployment.yaml"))
            .expect("read deployment.yaml");
    ctx.write("operator/templates/service.yaml", &deployment);
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let text = flat(&run.stderr);
    assert!(
        text.contains(&format!(
            "templates/deployment.yaml (document 1) and templates/service.yaml (document 1) both render Deployment \"web\" in namespace {:?}",
            ctx.namespace
        )),
        "{run}"
    );
    assert!(
        ctx.kube()
            .get("apps/v1", "Deployment", Some(&ctx.namespace), "web")
            .is_none(),
        "nothing of the task may be written"
    );
}

#[test]
fn unreachable_cluster_error_names_the_url() {
    let ctx = TestContext::new("err-unreachable");
    // A port that was free a moment ago: connections are refused at once, so the
    // error comes quickly and names the address.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let host = format!("https://127.0.0.1:{port}");
    quickstart_with(
        &ctx,
        &format!("provider \"kudo\" {{\n  host     = {host:?}\n  insecure = true\n}}"),
        "",
    );
    let mut tf = ctx.tf.clone();
    // Only the explicit host, so the provider cannot fall back to the working cluster.
    tf.remove_env("KUBE_CONFIG_PATH");
    let run = tf.apply(&[]).assert_clean_error();
    assert!(
        run.stderr.contains(&format!("127.0.0.1:{port}")),
        "error should name the cluster address:\n{run}"
    );
    // ... and the provider setting to check, and what then.
    let text = flat(&run.stderr);
    assert!(
        text.contains(&format!("Check the provider's `host` setting ({host})"))
            && text.contains("then run terraform apply again"),
        "error should name the `host` setting:\n{run}"
    );
}

/// Runs `terraform plan` with only the given provider block (no fallback to the test
/// cluster's kubeconfig) and returns the failed run's flattened error text.
fn plan_fails_with(ctx: &TestContext, provider_block: &str) -> String {
    quickstart_with(ctx, provider_block, "");
    let mut tf = ctx.tf.clone();
    tf.remove_env("KUBE_CONFIG_PATH");
    tf.remove_env("KUBECONFIG");
    let run = tf.plan(&[]).assert_clean_error();
    ctx.mark_cleaned();
    flat(&run.stderr)
}

#[test]
fn known_but_unreachable_settings_fail_the_plan_instead_of_planning_offline() {
    let ctx = TestContext::new("err-refused-plan");
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let host = format!("https://127.0.0.1:{port}");
    let text = plan_fails_with(
        &ctx,
        &format!("provider \"kudo\" {{\n  host     = {host:?}\n  insecure = true\n}}"),
    );
    assert!(
        text.contains("Cannot reach the Kubernetes cluster")
            && text.contains(&format!("127.0.0.1:{port}")),
        "{text}"
    );
}

#[test]
fn a_server_that_accepts_connections_and_never_answers_fails_within_request_timeout() {
    let ctx = TestContext::new("err-silent");
    // Accepts every connection and holds it open without a byte, for the whole test.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let text = plan_fails_with(
        &ctx,
        &format!(
            "provider \"kudo\" {{\n  host            = \"https://127.0.0.1:{port}\"\n  insecure        = true\n  request_timeout = \"2s\"\n}}"
        ),
    );
    assert!(
        text.contains("no answer within 2s") && text.contains(&format!("127.0.0.1:{port}")),
        "{text}"
    );
}

#[test]
fn a_missing_kubeconfig_fails_the_plan_naming_config_path() {
    let ctx = TestContext::new("err-no-kubeconfig");
    let missing = ctx.workdir.join("no-such-kubeconfig");
    let text = plan_fails_with(
        &ctx,
        &format!(
            "provider \"kudo\" {{\n  config_path = {:?}\n}}",
            missing.display().to_string()
        ),
    );
    assert!(
        text.contains("config_path") && text.contains("no-such-kubeconfig"),
        "{text}"
    );
}

#[test]
fn a_ca_that_did_not_sign_the_server_certificate_fails_the_plan_saying_certificate() {
    let ctx = TestContext::new("err-wrong-ca");
    let connection = ctx.connection();
    let host = connection.host.clone();
    if !host.starts_with("https://") {
        eprintln!("SKIPPED: the test cluster is not served over TLS");
        return;
    }
    // A CA of its own (not the cluster's): the server's certificate must be refused.
    let ca = rcgen::generate_simple_self_signed(vec!["unrelated-ca".to_string()])
        .expect("generate a CA")
        .cert
        .pem();
    let text = plan_fails_with(
        &ctx,
        &format!(
            "provider \"kudo\" {{\n  host                   = {host:?}\n  cluster_ca_certificate = {ca:?}\n  token                  = \"unused\"\n}}"
        ),
    );
    assert!(
        text.contains("certificate") && text.contains("cluster_ca_certificate"),
        "{text}"
    );
}

#[test]
fn a_server_that_is_not_kubernetes_fails_the_plan_saying_so() {
    let ctx = TestContext::new("err-not-kubernetes");
    // A plain HTTP file server: GET /version answers 404 with no Kubernetes Status.
    let served = ctx.workdir.join("served");
    std::fs::create_dir_all(&served).expect("served dir");
    let files = crate::harness::http::FileServer::start(served);
    let host = files.url.trim_end_matches('/').to_string();
    let text = plan_fails_with(
        &ctx,
        &format!("provider \"kudo\" {{\n  host = {host:?}\n}}"),
    );
    assert!(text.contains("is not a Kubernetes API server"), "{text}");
}

#[test]
fn an_invalid_request_timeout_is_refused_naming_the_setting() {
    let ctx = TestContext::new("err-request-timeout");
    let text = plan_fails_with(&ctx, "provider \"kudo\" {\n  request_timeout = \"soon\"\n}");
    assert!(
        text.contains("Invalid request_timeout") && text.contains("\"soon\""),
        "{text}"
    );
}

#[test]
fn an_invalid_namespace_or_name_is_refused_at_plan_time_by_kubernetes_naming_rule() {
    let ctx = TestContext::new("err-bad-ns");
    quickstart_with(&ctx, r#"provider "kudo" {}"#, "");
    let main = std::fs::read_to_string(ctx.workdir.join("main.tf")).expect("read main.tf");
    let bad = main.replacen(
        "name      = \"web\"\n  namespace = var.namespace",
        "name      = \"Web_1\"\n  namespace = \"Bad_NS!\"",
        1,
    );
    assert_ne!(bad, main, "the configuration did not change");
    ctx.write("main.tf", &bad);
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let text = flat(&run.stderr);
    assert!(
        text.contains("Invalid namespace")
            && text.contains("\"Bad_NS!\" is not a valid Kubernetes name"),
        "{run}"
    );
    assert!(
        text.contains("Invalid name") && text.contains("\"Web_1\""),
        "{run}"
    );
    assert!(!text.contains("may pass when run again"), "{run}");
    ctx.mark_cleaned();
}

#[test]
fn a_namespace_that_does_not_exist_is_named_with_true_advice() {
    let ctx = TestContext::new("err-missing-ns");
    quickstart_with(&ctx, r#"provider "kudo" {}"#, "");
    let main = std::fs::read_to_string(ctx.workdir.join("main.tf")).expect("read main.tf");
    let missing = format!("{}-missing", ctx.namespace);
    ctx.write(
        "main.tf",
        &main.replace(
            "namespace = var.namespace",
            &format!("namespace = {missing:?}"),
        ),
    );
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let text = flat(&run.stderr);
    assert!(text.contains(&missing), "{run}");
    assert!(
        text.contains("does not exist")
            && !text.contains("was deleted (or is being deleted) while"),
        "{run}"
    );
    ctx.mark_cleaned();
}

#[test]
fn an_invalid_timeout_names_the_timeouts_attribute() {
    let ctx = TestContext::new("err-timeouts");
    quickstart_with(&ctx, r#"provider "kudo" {}"#, "");
    let main = std::fs::read_to_string(ctx.workdir.join("main.tf")).expect("read main.tf");
    let with = main.replacen(
        "operator  = kudo_operator.webapp.id",
        "operator  = kudo_operator.webapp.id\n  timeouts {\n    create = \"-5m\"\n  }",
        1,
    );
    ctx.write("main.tf", &with);
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let text = flat(&run.stderr);
    assert!(
        text.contains("`timeouts.create` = \"-5m\" is not a duration"),
        "{run}"
    );
    ctx.mark_cleaned();
}

#[test]
fn a_cluster_package_source_naming_no_operator_version_says_so() {
    let ctx = TestContext::new("err-cluster-source");
    let ns = ctx.namespace.clone();
    ctx.write(
        "main.tf",
        &format!(
            "{PREAMBLE}\nresource \"kudo_operator\" \"gone\" {{\n  package   = \"cluster:{ns}/nothing-1.0.0\"\n  namespace = var.namespace\n}}\n\nresource \"kudo_operator\" \"malformed\" {{\n  package   = \"cluster:nothing\"\n  namespace = var.namespace\n}}\n"
        ),
    );
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let text = flat(&run.output());
    assert!(
        text.contains(&format!(
            "there is no OperatorVersion nothing-1.0.0 in namespace {ns}"
        )),
        "{run}"
    );
    assert!(
        text.contains("a cluster package source is `cluster:<namespace>/<operatorversion-name>`"),
        "{run}"
    );
    assert!(
        text.contains("in resource \"kudo_operator\" \"gone\""),
        "{run}"
    );
}

/// A template that renders something no API server can take as one object (no
/// `kind`, no `metadata.name`, a `List`) fails the plan naming the template and the
/// document, before anything of the instance is written.
#[test]
fn a_manifest_without_kind_or_name_or_a_list_fails_the_plan_naming_template_and_document() {
    let ctx = TestContext::new("err-manifest-shape");
    for (content, says) in [
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-extra\n---\napiVersion: v1\nmetadata:\n  name: {{ .Name }}-content\ndata:\n  MESSAGE: x\n",
            "template templates/configmap.yaml: document 2: the object has no `kind`",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels:\n    app: {{ .Name }}\ndata:\n  MESSAGE: x\n",
            "template templates/configmap.yaml: document 1: ConfigMap has no `metadata.name`",
        ),
        (
            "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: {{ .Name }}-content\n",
            "template templates/configmap.yaml: document 1: a List of 1 objects cannot be applied",
        ),
    ] {
        quickstart_with(&ctx, r#"provider "kudo" {}"#, "");
        ctx.write("operator/templates/configmap.yaml", content);
        let run = ctx.tf.plan(&[]).assert_clean_error();
        let text = flat(&run.stderr);
        assert!(text.contains(says), "{says}:\n{run}");
        assert!(
            text.contains("plan \"deploy\", phase \"config\", step \"content\""),
            "the plan location:\n{run}"
        );
    }
    assert!(
        ctx.kube().instance(&ctx.namespace, "web").is_none(),
        "nothing of the instance may be written"
    );
    ctx.mark_cleaned();
}

/// operator.yaml's `name` must be able to name the Operator object: a name Kubernetes
/// would refuse fails the plan on `package`, naming the file, its line and the field.
#[test]
fn an_invalid_operator_name_fails_the_plan_naming_operator_yaml() {
    let ctx = TestContext::new("err-operator-name");
    quickstart_with(&ctx, r#"provider "kudo" {}"#, "");
    let path = ctx.workdir.join("operator/operator.yaml");
    let original = std::fs::read_to_string(&path).expect("read operator.yaml");
    let line = original
        .lines()
        .position(|l| l.starts_with("name: "))
        .map(|i| i + 1)
        .expect("operator.yaml has a name line");
    std::fs::write(
        &path,
        original.replacen("name: webapp", "name: Bad_Operator!", 1),
    )
    .expect("write operator.yaml");
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let text = flat(&run.stderr);
    assert!(
        text.contains(&format!(
            "operator/operator.yaml:{line}:7: field `name`: \"Bad_Operator!\" is not a valid operator name"
        )),
        "{run}"
    );
    assert!(text.contains("use e.g. \"bad-operator\""), "{run}");
    let package_line = main_tf_line(&ctx, "package ");
    assert!(
        text.contains(&format!(
            "on main.tf line {package_line}, in resource \"kudo_operator\" \"webapp\""
        )),
        "{run}"
    );
    ctx.mark_cleaned();
}

/// A repository URL of a scheme the provider cannot read is refused on the block's
/// `url`, naming the repository and the schemes that work, not read as a folder.
#[test]
fn an_unsupported_repository_scheme_is_refused_on_its_url() {
    let ctx = TestContext::new("err-repo-scheme");
    let text = plan_fails_with(
        &ctx,
        "provider \"kudo\" {\n  repository {\n    name = \"mirror\"\n    url  = \"ftp://example.com/kudo\"\n  }\n}",
    );
    assert!(text.contains("Unsupported repository URL"), "{text}");
    assert!(
        text.contains("Repository \"mirror\": \"ftp://example.com/kudo\" uses the ftp:// scheme, which is not supported; a repository URL is an http:// or https:// URL, a file:// URL, or a path to a folder"),
        "{text}"
    );
    assert!(!text.contains("No such file"), "{text}");
    let url_line = main_tf_line(&ctx, "url ");
    assert!(
        text.contains(&format!("on main.tf line {url_line}, in provider \"kudo\"")),
        "the error points at the url line {url_line}:\n{text}"
    );
}

/// An `operator` id naming no OperatorVersion (a literal, not a `kudo_operator`
/// reference, so the plan cannot tell whether something else installs it first): the
/// plan says what it could not check, and the apply fails on `operator` in the engine's
/// words before writing anything.
#[test]
fn an_operator_id_naming_no_operator_version_fails_the_apply_on_operator() {
    let ctx = TestContext::new("err-no-ov");
    ctx.write(
        "main.tf",
        &format!(
            r#"{PREAMBLE}
resource "kudo_instance" "web" {{
  name      = "web"
  namespace = var.namespace
  operator  = "${{var.namespace}}/nothing-1.0.0"
}}
"#
        ),
    );
    let plan = ctx.tf.plan(&[]).assert_success();
    assert!(
        flat(&plan.output()).contains("Parameters not checked"),
        "the plan does not say what it could not check:\n{plan}"
    );
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let out = flat(&run.output());
    let line = main_tf_line(&ctx, "operator");
    for text in [
        "Error: Operator not installed".to_string(),
        format!("on main.tf line {line}"),
        format!(
            "There is no OperatorVersion {}/nothing-1.0.0 in the cluster",
            ctx.namespace
        ),
    ] {
        assert!(
            out.contains(&text),
            "the apply does not say {text:?}:\n{run}"
        );
    }
    let instances: Vec<String> = ctx
        .kube()
        .list_namespace(&ctx.namespace, None)
        .into_iter()
        .filter(|o| o.kind == "Instance")
        .map(|o| o.name)
        .collect();
    assert_eq!(instances, Vec::<String>::new(), "{run}");
}
