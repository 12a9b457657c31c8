//! Cloud credentials: the provider's `exec` block runs a credential plugin (here a
//! shell script standing in for `aws eks get-token`) that prints an `ExecCredential`;
//! the plugin is run again when the credential it gave expires, so an apply longer
//! than its lifetime completes; a plugin that is missing or fails fails the plan naming
//! the command and what it wrote on stderr.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::harness::{TestContext, flat, repo_root, serial_operator_yaml};

/// The tenant of the permissions guide in the test's namespace (a test that needs the
/// credential to be that of a namespace's tenant, as cloud users often are).
fn tenant_role(ctx: &TestContext) {
    let path = repo_root().join("examples/permissions/kudo-tenant.yaml");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    ctx.kube().apply_yaml(&text.replace(
        "namespace: team-a",
        &format!("namespace: {}", ctx.namespace),
    ));
}

/// Writes an executable shell script at `rel` in the working folder.
fn script(ctx: &TestContext, rel: &str, body: &str) -> PathBuf {
    ctx.write(rel, &format!("#!/bin/sh\n{body}"));
    let path = ctx.workdir.join(rel);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
    path
}

/// A provider block with `host`, `cluster_ca_certificate` and an `exec` block running
/// `command` with `args`, then `resources`.
fn exec_config(command: &Path, args: &[&str], resources: &str) -> String {
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

variable "cluster_ca_certificate" {{
  type = string
}}

provider "kudo" {{
  host                   = var.host
  cluster_ca_certificate = var.cluster_ca_certificate

  exec {{
    api_version = "client.authentication.k8s.io/v1beta1"
    command     = {command:?}
    args        = {args:?}
    env = {{
      PLUGIN_CALLS = "${{path.module}}/calls.log"
    }}
  }}
}}
{resources}"#,
        command = command.display().to_string(),
    )
}

/// Terraform of `ctx` connects through `host` and the CA only; the harness's
/// kubeconfig (the administrator's) is not read.
fn without_kubeconfig(ctx: &mut TestContext) {
    let connection = ctx.connection();
    ctx.tf.remove_env("KUBE_CONFIG_PATH");
    ctx.tf.set_env("TF_VAR_host", &connection.host);
    ctx.tf.set_env(
        "TF_VAR_cluster_ca_certificate",
        &connection.cluster_ca_certificate,
    );
}

/// The calls the plugin logged (one line each: the Unix second it ran at and the
/// expiry of the token it printed).
fn calls(ctx: &TestContext) -> Vec<(u64, u64)> {
    let log = std::fs::read_to_string(ctx.workdir.join("calls.log")).unwrap_or_default();
    log.lines()
        .filter_map(|l| {
            let (at, expires) = l.split_once(' ')?;
            Some((at.parse().ok()?, expires.parse().ok()?))
        })
        .collect()
}

const RESOURCES: &str = r#"
resource "kudo_operator" "app" {
  package   = "${path.module}/operator"
  namespace = var.namespace
}

resource "kudo_instance" "app" {
  name      = "app"
  namespace = var.namespace
  operator  = kudo_operator.app.id
}
"#;

// The plugin prints a ServiceAccount token from the TokenRequest API, as `aws eks
// get-token` prints one from STS: the provider installs, plans empty and destroys with
// nothing else to authenticate with.
#[test]
fn an_exec_plugin_authenticates() {
    let mut ctx = TestContext::new("exec-plugin");
    tenant_role(&ctx);
    let token = ctx.kube().create_token(&ctx.namespace, "tenant", 3600);
    without_kubeconfig(&mut ctx);
    ctx.write(
        "operator/operator.yaml",
        &serial_operator_yaml("exec-app", "0.1.0", &["config"]),
    );
    ctx.write(
        "operator/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-config\ndata:\n  a: b\n",
    );
    let plugin = script(
        &ctx,
        "plugin.sh",
        &format!(
            r#"echo "$(date +%s) 0" >> "$PLUGIN_CALLS"
cat <<EOF
{{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": {{"token": "{token}"}}}}
EOF
"#
        ),
    );
    if !ctx.kube().serves("kudo.dev/v1beta1", "Instance") {
        crate::permissions::admin_installs_kudo(&ctx);
    }
    ctx.write("main.tf", &exec_config(&plugin, &[], RESOURCES));
    ctx.tf.apply(&[]).assert_success();
    ctx.kube()
        .must_get("v1", "ConfigMap", Some(&ctx.namespace), "app-config");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    assert!(
        !calls(&ctx).is_empty(),
        "the plugin was never run, yet the provider authenticated"
    );
}

// A credential that lasts three seconds, and an apply that waits longer than that for
// a Deployment kube-sim makes ready after six: kube-sim refuses expired tokens, so the
// apply completes only because the provider ran the plugin again for a fresh one.
#[test]
fn an_expiring_credential_is_fetched_again_during_a_longer_apply() {
    let mut ctx = TestContext::new("exec-expiry");
    let Some(sim) = ctx.sim() else {
        crate::skip!(
            "needs kube-sim: tokens of a few seconds and a Deployment ready after a set delay"
        );
    };
    let user = format!("system:serviceaccount:{}:tenant", ctx.namespace);
    let groups = [
        "system:serviceaccounts".to_string(),
        format!("system:serviceaccounts:{}", ctx.namespace),
    ];
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    sim.add_expiring_tokens("tenant-exp-", &user, &groups);
    drop(groups);
    tenant_role(&ctx);
    without_kubeconfig(&mut ctx);
    ctx.write(
        "operator/operator.yaml",
        &serial_operator_yaml("slow-app", "0.1.0", &["deployment", "config"]),
    );
    ctx.write(
        "operator/templates/deployment.yaml",
        &format!(
            r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{{{ .Name }}}}
  annotations:
    {}: "6000"
spec:
  replicas: 1
  selector:
    matchLabels:
      app: slow
  template:
    metadata:
      labels:
        app: slow
    spec:
      containers:
        - name: app
          image: nginx
"#,
            kube_sim::ANN_READY_DELAY
        ),
    );
    ctx.write(
        "operator/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-config\ndata:\n  a: b\n",
    );
    let plugin = script(
        &ctx,
        "plugin.sh",
        r#"now=$(date +%s)
expires=$((now + 3))
echo "$now $expires" >> "$PLUGIN_CALLS"
cat <<EOF
{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": {"token": "tenant-exp-$expires", "expirationTimestamp": "$(date -u -d "@$expires" +%Y-%m-%dT%H:%M:%SZ)"}}
EOF
"#,
    );
    if !ctx.kube().serves("kudo.dev/v1beta1", "Instance") {
        crate::permissions::admin_installs_kudo(&ctx);
    }
    ctx.write("main.tf", &exec_config(&plugin, &[], RESOURCES));
    ctx.tf.apply(&[]).assert_success();
    let deployment = ctx
        .kube()
        .must_get("apps/v1", "Deployment", Some(&ctx.namespace), "app");
    assert_eq!(deployment["status"]["readyReplicas"], 1);
    ctx.kube()
        .must_get("v1", "ConfigMap", Some(&ctx.namespace), "app-config");
    let calls = calls(&ctx);
    let (_, first_expiry) = *calls.first().expect("the plugin ran");
    let (last_run, _) = *calls.last().expect("the plugin ran");
    assert!(
        calls.len() >= 2 && last_run >= first_expiry,
        "the plugin was not run again after its first credential expired: {calls:?}"
    );
    let sim = ctx.sim().expect("kube-sim");
    assert_eq!(
        sim.expired_token_refusals(),
        0,
        "the provider sent a credential after it had expired"
    );
    assert_eq!(sim.forbidden_requests(), Vec::<String>::new());
}

// A plugin that is not installed, and one that fails: the plan fails naming the
// command, and, for the one that ran, what it wrote on stderr.
#[test]
fn exec_errors_name_the_command() {
    let mut ctx = TestContext::new("exec-errors");
    without_kubeconfig(&mut ctx);
    ctx.write(
        "operator/operator.yaml",
        &serial_operator_yaml("exec-app", "0.1.0", &["config"]),
    );
    ctx.write(
        "operator/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-config\n",
    );
    let missing = ctx.workdir.join("bin/kudo-credential-plugin-not-installed");
    ctx.write("main.tf", &exec_config(&missing, &["get-token"], RESOURCES));
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let out = flat(&run.output());
    for text in [
        &format!(
            "the credential plugin `{} get-token` could not be started: the command was not found",
            missing.display()
        ),
        "install it, or give its full path in `command`",
    ] {
        assert!(out.contains(&flat(text)), "{text:?} not in:\n{run}");
    }

    let failing = script(
        &ctx,
        "failing.sh",
        "echo 'error: the SSO session has expired; run aws sso login --profile ops' >&2\nexit 255\n",
    );
    ctx.write(
        "main.tf",
        &exec_config(&failing, &["eks", "get-token"], RESOURCES),
    );
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let out = flat(&run.output());
    assert!(
        out.contains("Error: Cannot get credentials for the Kubernetes cluster"),
        "{run}"
    );
    let expected = format!(
        "the credential plugin `{} eks get-token` failed (exit status: 255): error: the SSO session has expired; run aws sso login --profile ops",
        failing.display()
    );
    assert!(
        out.contains(&flat(&expected)),
        "{expected:?} not in:\n{run}"
    );
    ctx.mark_cleaned();
}
