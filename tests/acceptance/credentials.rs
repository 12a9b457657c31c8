//! Cloud credentials: the provider's `exec` block runs a credential plugin (here a
//! shell script standing in for `aws eks get-token`) that prints an `ExecCredential`;
//! the plugin is run again when the credential it gave expires, so an apply longer
//! than its lifetime completes, and when the cluster refuses (revokes) it before then;
//! a short-lived credential is kept until shortly before its expiry rather than fetched
//! for every request; a plugin that is missing or fails fails the plan naming the
//! command and what it wrote on stderr.

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
    slow_package(&ctx, 6000);
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

/// Groups of ServiceAccount `tenant` of the test's namespace (what the tenant Role binds).
fn tenant_groups(ctx: &TestContext) -> Vec<String> {
    vec![
        "system:serviceaccounts".to_string(),
        format!("system:serviceaccounts:{}", ctx.namespace),
    ]
}

/// A package of a Deployment kube-sim makes ready after `ready_ms` (so the apply waits
/// for it, by watching) and then a ConfigMap.
fn slow_package(ctx: &TestContext, ready_ms: u32) {
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
    {}: "{ready_ms}"
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
}

/// kube-sim revokes the token of the apply's watch of the Deployment (the wait for it
/// to become ready), long before the hour the token states: from then on the cluster
/// refuses it, as it refuses a token whose ServiceAccount was deleted.
fn revoke_at_the_deployment_watch(ctx: &TestContext, sim: &kube_sim::KubeSim) {
    sim.add_faults([kube_sim::FaultRule {
        verb: Some("watch".into()),
        resource: Some("deployments".into()),
        namespace: Some(ctx.namespace.clone()),
        revoke_token: true,
        count: Some(1),
        ..Default::default()
    }]);
}

/// The line of `calls` whose token is `token` (`<prefix><expiry>`).
fn run_that_printed(calls: &[(u64, u64)], prefix: &str, token: &str) -> Option<usize> {
    calls
        .iter()
        .position(|(_, expires)| format!("{prefix}{expires}") == token)
}

/// A plugin script printing a token `<prefix><expiry>`, and a line `<now> <expiry>` in
/// the calls log; `expiry` is what the shell snippet `expiry` leaves in `$expires`.
fn token_plugin(ctx: &TestContext, prefix: &str, expiry: &str) -> PathBuf {
    script(
        ctx,
        "plugin.sh",
        &format!(
            r#"{expiry}
echo "$(date +%s) $expires" >> "$PLUGIN_CALLS"
printf '{{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": {{"token": "%s", "expirationTimestamp": "%s"}}}}\n' \
  "{prefix}$expires" "$(date -u -d "@$expires" +%Y-%m-%dT%H:%M:%SZ)"
"#
        ),
    )
}

/// A test of the tenant's credentials from a plugin handing out `<prefix><expiry>`
/// tokens, with the slow package and the tenant's rights.
fn tenant_with_plugin(ctx: &mut TestContext, prefix: &str) {
    let sim = ctx.sim().expect("kube-sim");
    let user = format!("system:serviceaccount:{}:tenant", ctx.namespace);
    let groups = tenant_groups(ctx);
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    sim.add_expiring_tokens(prefix, &user, &groups);
    tenant_role(ctx);
    without_kubeconfig(ctx);
    slow_package(ctx, 1500);
    if !ctx.kube().serves("kudo.dev/v1beta1", "Instance") {
        crate::permissions::admin_installs_kudo(ctx);
    }
}

// A plugin whose credential states an hour, revoked by the cluster in the middle of the
// apply (while it waits for the Deployment): the provider runs the plugin again after
// the 401 and sends the refused request once more, and the apply completes.
#[test]
fn a_credential_revoked_mid_apply_is_fetched_again() {
    let mut ctx = TestContext::new("exec-revoked");
    if ctx.sim().is_none() {
        crate::skip!("needs kube-sim: revoking a token at a chosen request of the apply");
    }
    let prefix = "tenant-rev-";
    tenant_with_plugin(&mut ctx, prefix);
    // Each run prints another token (its expiry is an hour and the run's number ahead),
    // as a cloud CLI prints a new session's token.
    let plugin = token_plugin(
        &ctx,
        prefix,
        r#"runs=0
[ -f "$PLUGIN_CALLS" ] && runs=$(wc -l < "$PLUGIN_CALLS")
expires=$(( $(date +%s) + 3600 + runs ))"#,
    );
    ctx.write("main.tf", &exec_config(&plugin, &[], RESOURCES));
    revoke_at_the_deployment_watch(&ctx, ctx.sim().expect("kube-sim"));
    ctx.tf.apply(&[]).assert_success();
    let deployment = ctx
        .kube()
        .must_get("apps/v1", "Deployment", Some(&ctx.namespace), "app");
    assert_eq!(deployment["status"]["readyReplicas"], 1);
    ctx.kube()
        .must_get("v1", "ConfigMap", Some(&ctx.namespace), "app-config");

    let sim = ctx.sim().expect("kube-sim");
    assert!(
        sim.faults().is_empty(),
        "the apply never watched the Deployment"
    );
    let revoked = sim.revoked_tokens();
    assert_eq!(revoked.len(), 1, "{revoked:?}");
    assert!(
        sim.revoked_token_refusals() >= 1,
        "the cluster never refused the revoked token"
    );
    let calls = calls(&ctx);
    let revoked_run = run_that_printed(&calls, prefix, &revoked[0])
        .unwrap_or_else(|| panic!("no run printed {}: {calls:?}", revoked[0]));
    assert!(
        revoked_run + 1 < calls.len(),
        "the plugin did not run again after the cluster refused its credential: {calls:?}"
    );
    assert_eq!(sim.forbidden_requests(), Vec::<String>::new());
}

// A plugin that keeps printing the credential the cluster revoked (its own cache of an
// ended session): after the 401 the provider runs it once more, the cluster refuses
// the same credential again, and the apply fails with one error naming the command.
#[test]
fn a_credential_refused_again_after_a_new_run_is_one_error_naming_the_plugin() {
    let mut ctx = TestContext::new("exec-refused-twice");
    if ctx.sim().is_none() {
        crate::skip!("needs kube-sim: revoking a token at a chosen request of the apply");
    }
    let prefix = "tenant-stale-";
    tenant_with_plugin(&mut ctx, prefix);
    // The first run makes a token and keeps it in a file; every later run prints it.
    let plugin = token_plugin(
        &ctx,
        prefix,
        r#"cache="$PLUGIN_CALLS.token"
[ -f "$cache" ] || echo "$(( $(date +%s) + 3600 ))" > "$cache"
expires=$(cat "$cache")"#,
    );
    ctx.write(
        "main.tf",
        &exec_config(&plugin, &["--profile", "ops"], RESOURCES),
    );
    revoke_at_the_deployment_watch(&ctx, ctx.sim().expect("kube-sim"));
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let out = flat(&run.output());
    let command = format!("{} --profile ops", plugin.display());
    let expected = format!(
        "the Kubernetes API server does not accept the credentials of the credential plugin `{command}`: it refused them (HTTP 401 Unauthorized: Unauthorized), and refused the new ones the provider fetched from the credential plugin `{command}` right after that refusal too"
    );
    assert!(
        out.contains(&flat(&expected)),
        "{expected:?} not in:\n{run}"
    );
    assert_eq!(
        run.output().matches("Error: ").count(),
        1,
        "one error, not one per request:\n{run}"
    );

    let sim = ctx.sim().expect("kube-sim");
    assert!(
        sim.faults().is_empty(),
        "the apply never watched the Deployment"
    );
    let refusals = sim.revoked_token_refusals();
    assert!(refusals >= 2, "refused {refusals} times");
    // The plugin ran when each provider process connected (at most three in an apply),
    // and again once per refused request (as client-go does), never in a loop.
    let calls = calls(&ctx);
    assert!(
        calls.len() as u64 <= refusals + 3,
        "the plugin ran {} times for {refusals} refusals: {calls:?}",
        calls.len()
    );
}

// A credential of 15 seconds, from a kubeconfig user's `exec` (as `aws eks
// update-kubeconfig` writes one): a plan of the quickstart makes dozens of requests and
// runs the plugin about once per provider process that connects, not once per request
// as while the credential was renewed from a minute before its expiry.
#[test]
fn a_short_lived_credential_is_not_fetched_for_every_request() {
    let mut ctx = TestContext::new("exec-short-lived");
    let Some(sim) = ctx.sim() else {
        crate::skip!("needs kube-sim: tokens of a few seconds");
    };
    ctx.use_example("quickstart");
    let prefix = format!("{}-short-", ctx.namespace);
    sim.add_expiring_tokens(&prefix, "platform-admin", &["system:masters"]);
    let plugin = token_plugin(&ctx, &prefix, "expires=$(( $(date +%s) + 15 ))");
    let connection = ctx.connection();
    ctx.write("ca.crt", &connection.cluster_ca_certificate);
    ctx.write(
        "kubeconfig",
        &format!(
            r#"apiVersion: v1
kind: Config
clusters:
- name: sim
  cluster:
    server: {host}
    certificate-authority: {ca}
users:
- name: platform
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: {command}
      env:
      - name: PLUGIN_CALLS
        value: {calls}
contexts:
- name: sim
  context:
    cluster: sim
    user: platform
current-context: sim
"#,
            host = connection.host,
            ca = ctx.workdir.join("ca.crt").display(),
            command = plugin.display(),
            calls = ctx.workdir.join("calls.log").display(),
        ),
    );
    let kubeconfig = ctx.workdir.join("kubeconfig");
    ctx.tf.set_env("KUBE_CONFIG_PATH", &kubeconfig);
    let sim = ctx.sim().expect("kube-sim");
    let requests_before = sim.request_stats().requests;
    ctx.tf.plan(&[]).assert_success();
    let requests = sim.request_stats().requests - requests_before;
    let runs = calls(&ctx).len();
    eprintln!("[acceptance] the plugin ran {runs} times for {requests} requests");
    assert!(runs >= 1, "the plugin never ran");
    assert!(
        runs <= 3,
        "the plugin ran {runs} times for {requests} requests"
    );
    assert!(
        requests >= 10 * runs as u64,
        "only {requests} requests: the plan does not show the difference"
    );
    assert_eq!(sim.expired_token_refusals(), 0);
}
