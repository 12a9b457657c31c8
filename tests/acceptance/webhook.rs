//! Webhook tasks through Terraform: the task POSTs the execution state to a URL and
//! applies the objects the answer holds. The test runs the webhook itself (a small
//! HTTP server on 127.0.0.1 that counts calls), so it can show that `terraform plan`
//! never calls it, that the answer is applied, health-checked and pruned, and what a
//! user reads when the webhook times out or answers something that is not JSON.
//! Package: `tests/fixtures/operators/webhook-objects`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{TestContext, own_operator};
use crate::skip;

const TOKEN: &str = "Bearer hook-s3cret-4711";

/// One request the server received.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    authorization: Option<String>,
    content_type: Option<String>,
    body: Value,
}

#[derive(Default)]
struct Shared {
    received: Mutex<Vec<Received>>,
    /// Connections of `/hang` requests, held open without an answer until the
    /// server is dropped.
    held: Mutex<Vec<TcpStream>>,
}

/// The webhook: `/objects` answers a List chosen by the `SIZE` parameter of the
/// request; `/text` answers 200 `application/json` with a body that is not JSON;
/// `/down` answers 500; `/hang` never answers.
struct Webhook {
    base: String,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    addr: SocketAddr,
}

impl Webhook {
    fn start() -> Webhook {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (serving, stopping) = (shared.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = conn {
                    let shared = serving.clone();
                    std::thread::spawn(move || serve(&shared, stream));
                }
            }
        });
        Webhook {
            base: format!("http://{addr}"),
            shared,
            stop,
            addr,
        }
    }

    fn calls(&self) -> Vec<Received> {
        self.shared.received.lock().expect("lock").clone()
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Ok(mut held) = self.shared.held.lock() {
            held.clear();
        }
    }
}

fn serve(shared: &Shared, stream: TcpStream) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut length = 0usize;
    let (mut authorization, mut content_type) = (None, None);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).map_or(true, |n| n == 0) {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let value = value.trim().to_string();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse().unwrap_or(0),
                "authorization" => authorization = Some(value),
                "content-type" => content_type = Some(value),
                _ => {}
            }
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let target = request_line.split_whitespace().nth(1).unwrap_or("/");
    let path = target.split('?').next().unwrap_or("/").to_string();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.received.lock().expect("lock").push(Received {
        path: path.clone(),
        authorization: authorization.clone(),
        content_type,
        body: body.clone(),
    });
    let (status, content_type, answer) = match path.as_str() {
        "/hang" => {
            shared.held.lock().expect("lock").push(stream);
            return;
        }
        "/text" => (200, "application/json", "this is not json".to_string()),
        "/down" => (
            500,
            "text/plain",
            "backend down for maintenance".to_string(),
        ),
        _ if authorization.as_deref() != Some(TOKEN) => {
            (401, "text/plain", "wrong token".to_string())
        }
        _ => (200, "application/json", answer_for(&body).to_string()),
    };
    let reason = if status == 200 { "OK" } else { "Error" };
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    );
    let mut stream = stream;
    let _ = stream.write_all(response.as_bytes());
}

/// What `/objects` answers: named after the instance, chosen by `SIZE`.
fn answer_for(request: &Value) -> Value {
    let name = request["instance"]["name"].as_str().unwrap_or("x");
    let config_map = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{name}-remote-a")},
        "data": {"from": "webhook"},
    });
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": format!("{name}-remote-web")},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "remote-web"}},
            "template": {
                "metadata": {"labels": {"app": "remote-web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    });
    let failing_job = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {
            "name": format!("{name}-remote-job"),
            "annotations": {"kube-sim.kudo.dev/job-fail": "true"},
        },
        "spec": {
            "backoffLimit": 0,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "job", "image": "busybox", "command": ["false"]}],
            }},
        },
    });
    let items = match request["parameters"]["SIZE"].as_str() {
        Some("one") => vec![config_map],
        Some("failjob") => vec![config_map, failing_job],
        _ => vec![config_map, deployment],
    };
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

fn config(url: &str, size: &str, allow_insecure: bool) -> String {
    let package = own_operator("webhook-objects").display().to_string();
    let setting = if allow_insecure {
        "allow_insecure_webhooks = true"
    } else {
        ""
    };
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

provider "kudo" {{
  {setting}
}}

resource "kudo_operator" "this" {{
  package   = {package:?}
  namespace = var.namespace
}}

resource "kudo_instance" "hooks" {{
  name      = "hooks"
  namespace = var.namespace
  operator  = kudo_operator.this.id
  parameters = {{
    WEBHOOK_URL = {url:?}
    SIZE        = {size:?}
  }}
}}
"#
    )
}

/// The Secret the task's Authorization header is read from.
fn token_secret(ctx: &TestContext) {
    ctx.kube().apply(&json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "hooks-webhook", "namespace": ctx.namespace},
        "stringData": {"token": TOKEN},
    }));
}

/// `preview` of the instance in a saved plan: (plan stdout, after, after_unknown).
fn planned_preview(ctx: &TestContext) -> (String, Value, Value) {
    let plan = ctx.tf.plan(&["-out=tfplan"]).assert_success();
    let shown = ctx.tf.run(&["show", "-json", "tfplan"]).assert_success();
    let json = shown.json();
    let change = json["resource_changes"]
        .as_array()
        .and_then(|all| {
            all.iter()
                .find(|c| c["address"] == "kudo_instance.hooks")
                .cloned()
        })
        .unwrap_or_else(|| panic!("no change for kudo_instance.hooks: {json:#}"));
    (
        plan.output(),
        change["change"]["after"]["preview"].clone(),
        change["change"]["after_unknown"]["preview"].clone(),
    )
}

#[test]
fn webhook_objects_are_applied_pruned_and_never_planned_by_calling() {
    let ctx = TestContext::new("webhook");
    let hook = Webhook::start();
    token_secret(&ctx);
    let url = format!("{}/objects", hook.base);
    let ns = ctx.namespace.clone();
    ctx.write("main.tf", &config(&url, "two", false));

    // Planning never calls the webhook: its objects are unknown, and the plan says why.
    let (output, after, unknown) = planned_preview(&ctx);
    assert!(
        hook.calls().is_empty(),
        "plan called the webhook: {:?}",
        hook.calls()
    );
    assert_eq!(
        unknown,
        Value::Bool(true),
        "preview must be unknown: {after:#}"
    );
    let flat = crate::harness::terraform::flat(&output);
    assert!(
        flat.contains("Preview unknown: webhook tasks run at apply time")
            && flat.contains("task \"remote\"")
            && flat.contains("never called while planning"),
        "{output}"
    );

    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let calls = hook.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let call = &calls[0];
    assert_eq!(call.path, "/objects");
    assert_eq!(call.authorization.as_deref(), Some(TOKEN));
    assert_eq!(call.content_type.as_deref(), Some("application/json"));
    let body = &call.body;
    assert_eq!(body["kind"], "WebhookRequest", "{body:#}");
    assert_eq!(body["instance"], json!({"name": "hooks", "namespace": ns}));
    assert_eq!(body["operator"]["name"], "webhook-objects");
    assert_eq!(body["operator"]["operatorVersion"], "0.1.0");
    assert_eq!(
        (&body["plan"], &body["phase"], &body["step"], &body["task"]),
        (
            &json!("deploy"),
            &json!("main"),
            &json!("remote"),
            &json!("remote")
        )
    );
    assert_eq!(body["parameters"]["SIZE"], "two");
    assert_eq!(body["parameters"]["WEBHOOK_URL"], json!(url));

    // Applied like an Apply task's objects: labels, owner, and waited for.
    let kube = ctx.kube();
    let cm = kube.must_get("v1", "ConfigMap", Some(&ns), "hooks-remote-a");
    assert_eq!(
        cm["metadata"]["labels"]["kudo.dev/instance"], "hooks",
        "{cm:#}"
    );
    assert_eq!(cm["metadata"]["labels"]["heritage"], "kudo", "{cm:#}");
    assert_eq!(
        cm["metadata"]["annotations"]["kudo.dev/webhook-task"], "remote",
        "{cm:#}"
    );
    assert_eq!(
        cm["metadata"]["ownerReferences"][0]["kind"], "Instance",
        "{cm:#}"
    );
    let deployment = kube.must_get("apps/v1", "Deployment", Some(&ns), "hooks-remote-web");
    assert_eq!(deployment["status"]["readyReplicas"], 1, "{deployment:#}");
    let state = ctx.tf.state();
    assert_eq!(state.attr_str("kudo_instance.hooks", "status"), "COMPLETE");
    let objects = state
        .resource("kudo_instance.hooks")
        .map(|r| r["objects"].to_string())
        .unwrap_or_default();
    assert!(
        objects.contains("hooks-remote-web") && objects.contains("hooks-remote-a"),
        "{objects}"
    );
    // The header's value is read at apply time: never in state or output.
    let raw_state =
        std::fs::read_to_string(ctx.workdir.join("terraform.tfstate")).expect("read state");
    assert!(
        !raw_state.contains("hook-s3cret"),
        "the token reached the state"
    );
    // Nothing changed: no plan runs, nothing is called.
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
    assert_eq!(
        hook.calls().len(),
        1,
        "a plan without changes called the webhook"
    );

    // SIZE changes: the deploy plan runs, the webhook answers without the
    // Deployment, and the run prunes it. The plan still calls nothing.
    ctx.write("main.tf", &config(&url, "one", false));
    let (_, _, unknown) = planned_preview(&ctx);
    assert_eq!(unknown, Value::Bool(true));
    assert_eq!(hook.calls().len(), 1, "plan called the webhook");
    let run = ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert!(!run.output().contains("hook-s3cret"), "{run}");
    assert_eq!(hook.calls().len(), 2);
    assert_eq!(hook.calls()[1].body["parameters"]["SIZE"], "one");
    assert!(
        kube.get("apps/v1", "Deployment", Some(&ns), "hooks-remote-web")
            .is_none(),
        "the Deployment the webhook stopped answering must be pruned"
    );
    kube.must_get("v1", "ConfigMap", Some(&ns), "hooks-remote-a");
    kube.must_get("v1", "ConfigMap", Some(&ns), "hooks-settings");

    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    assert!(
        kube.get("v1", "ConfigMap", Some(&ns), "hooks-remote-a")
            .is_none(),
        "destroy removes what the webhook answered"
    );
}

#[test]
fn webhook_failures_name_task_url_status_and_body_and_prune_nothing() {
    let ctx = TestContext::new("webhook-errors");
    let hook = Webhook::start();
    token_secret(&ctx);
    let ns = ctx.namespace.clone();
    ctx.write(
        "main.tf",
        &config(&format!("{}/objects", hook.base), "two", false),
    );
    ctx.tf.apply(&[]).assert_success();
    let kube = ctx.kube();
    kube.must_get("apps/v1", "Deployment", Some(&ns), "hooks-remote-web");

    // 200 application/json, but not JSON. SIZE=one would prune the Deployment had the
    // call worked; a failed call must prune nothing. The query value is a secret.
    let text_url = format!("{}/text?key=query-s3cret", hook.base);
    ctx.write("main.tf", &config(&text_url, "one", false));
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let out = crate::harness::terraform::flat(&run.stderr);
    assert!(out.contains("task \"remote\""), "{run}");
    assert!(
        out.contains(&format!("{}/text?key=redacted", hook.base)),
        "the error must name the URL without the query secret:\n{run}"
    );
    // (Terraform's own plan diff shows the configured URL; the diagnostics must not.)
    assert!(!run.stderr.contains("query-s3cret"), "{run}");
    assert!(out.contains("not JSON"), "{run}");
    assert!(
        out.contains("\"this is not json\""),
        "the body's start:\n{run}"
    );
    kube.must_get("apps/v1", "Deployment", Some(&ns), "hooks-remote-web");

    // 500 with a body: the status and the body's start.
    ctx.write(
        "main.tf",
        &config(&format!("{}/down", hook.base), "one", false),
    );
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let out = crate::harness::terraform::flat(&run.stderr);
    assert!(
        out.contains("task \"remote\"")
            && out.contains(&format!("webhook {}/down answered HTTP 500", hook.base))
            && out.contains("backend down for maintenance"),
        "{run}"
    );
    kube.must_get("apps/v1", "Deployment", Some(&ns), "hooks-remote-web");

    // No answer: the task's 2s timeout ends the call with an error that says so.
    ctx.write(
        "main.tf",
        &config(&format!("{}/hang", hook.base), "one", false),
    );
    let started = Instant::now();
    let run = ctx.tf.apply(&[]).assert_clean_error();
    assert!(
        started.elapsed() < Duration::from_secs(90),
        "a 2s webhook timeout took {:?}",
        started.elapsed()
    );
    let out = crate::harness::terraform::flat(&run.stderr);
    assert!(
        out.contains("task \"remote\"")
            && out.contains(&format!("webhook {}/hang did not answer within", hook.base))
            && out.contains("timeout of 2s"),
        "{run}"
    );
    kube.must_get("apps/v1", "Deployment", Some(&ns), "hooks-remote-web");
    assert!(hook.calls().iter().any(|c| c.path == "/hang"));
}

#[test]
fn webhook_objects_are_health_checked() {
    if crate::harness::cluster::real_kubeconfig().is_some() {
        skip!("needs kube-sim's job-fail annotation");
    }
    let ctx = TestContext::new("webhook-health");
    let hook = Webhook::start();
    token_secret(&ctx);
    ctx.write(
        "main.tf",
        &config(&format!("{}/objects", hook.base), "failjob", false),
    );
    // The Job the webhook answered fails: the step waits for its health like an Apply
    // task's, and the failed Job stops the plan (FATAL_ERROR) naming it.
    let run = ctx.tf.apply(&[]).assert_clean_error();
    let out = crate::harness::terraform::flat(&run.stderr);
    assert!(out.contains("hooks-remote-job"), "{run}");
    assert!(out.contains("FATAL_ERROR"), "{run}");
}

#[test]
fn plain_http_to_another_machine_needs_the_provider_setting() {
    let ctx = TestContext::new("webhook-insecure");
    let url = "http://hooks.example.invalid/objects?token=abc";
    ctx.write("main.tf", &config(url, "two", false));
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let out = crate::harness::terraform::flat(&run.stderr);
    assert!(
        out.contains("Webhook URL not allowed")
            && out.contains("task \"remote\"")
            && out.contains("http://hooks.example.invalid/objects?token=redacted")
            && out.contains("allow_insecure_webhooks = true"),
        "{run}"
    );
    // Allowed: the plan passes (and calls nothing, there is nothing to call).
    ctx.write("main.tf", &config(url, "two", true));
    ctx.tf
        .plan(&[])
        .assert_success()
        .assert_output_contains("Preview unknown: webhook tasks run at apply time");
}

#[test]
fn render_and_verify_show_the_webhook_without_calling_it() {
    let hook = Webhook::start();
    let package = own_operator("webhook-objects");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(crate::harness::provider_binary())
            .args(args)
            .env_remove("TF_PLUGIN_MAGIC_COOKIE")
            .output()
            .expect("the binary runs");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    };
    let (ok, _, stderr) = run(&["package", "verify", &package.display().to_string()]);
    assert!(ok && stderr.contains("package is valid"), "{stderr}");

    let url = format!("{}/objects?token=query-s3cret", hook.base);
    let (ok, stdout, stderr) = run(&[
        "render",
        &package.display().to_string(),
        "--name",
        "hooks",
        "-p",
        &format!("WEBHOOK_URL={url}"),
    ]);
    assert!(ok, "{stdout}\n{stderr}");
    assert!(hook.calls().is_empty(), "render called the webhook");
    assert!(
        stdout.contains("# Webhook: task remote (called at apply time, never by render"),
        "{stdout}"
    );
    // The task's URL loses its query value; the request body shows the parameters
    // as given on the command line, as templates would.
    assert!(
        stdout.contains(&format!("url: {}/objects?token=redacted", hook.base)),
        "{stdout}"
    );
    // What the apply would send, and where its header comes from (never a value).
    assert!(
        stdout.contains("kind: WebhookRequest")
            && stdout.contains("task: remote")
            && stdout.contains("name: hooks-webhook")
            && stdout.contains("SIZE: two"),
        "{stdout}"
    );
    assert!(
        stdout.contains("# Source: templates/settings.yaml"),
        "{stdout}"
    );
}
