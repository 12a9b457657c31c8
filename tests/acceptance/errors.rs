//! Mistakes a user makes must end as Terraform errors that say what is wrong:
//! non-zero exit, an `Error:` diagnostic naming the culprit, no crash.

use crate::harness::TestContext;

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
    assert!(
        ctx.kube().instance(&ctx.namespace, "web").is_none(),
        "no Instance may be created with an invalid parameter"
    );
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
    assert!(run.stderr.contains("configmap.yaml"), "{run}");
    assert!(
        ctx.kube()
            .get("v1", "ConfigMap", Some(&ctx.namespace), "web-content")
            .is_none(),
        "nothing may be applied from a template that failed"
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
}
