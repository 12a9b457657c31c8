//! Webhook tasks (the operator toolkit proposal): what the walk decides without a
//! network (the rendered URL, the request body, the Secrets its headers need) and the
//! rules the call is judged by (which URLs may be called, what an answer must be).
//! The engine makes the HTTP call; nothing here talks to a server, so that the plan,
//! the `render` command and the run share these decisions and a plan never calls a
//! webhook (it may have side effects).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use kudo_package::WebhookSpec;
use serde_json::{Value, json};

use crate::render::RenderContext;
use crate::{Location, PlanError};

/// The largest answer read; an answer is a handful of Kubernetes objects, not a stream.
pub const MAX_ANSWER_BYTES: u64 = 16 * 1024 * 1024;

/// How much of an unexpected answer's body an error quotes.
pub const EXCERPT_BYTES: usize = 200;

/// The annotation that marks an object a Webhook task's answer made, with the task's
/// name; pruning reads it (see `docs/webhook-tasks.md`, "Pruning").
pub const ANNOTATION_WEBHOOK_TASK: &str = "kudo.dev/webhook-task";

/// One call a Webhook task makes when it runs.
#[derive(Clone, PartialEq)]
pub struct WebhookCall {
    /// Rendered and trimmed; may hold credentials, so messages use [`redact_url`].
    pub url: String,
    /// PEM certificates to trust instead of the public roots (rendered).
    pub ca_bundle: Option<String>,
    /// Headers whose values the engine reads from Secrets in the instance's namespace
    /// (Secret names rendered).
    pub headers: Vec<kudo_package::WebhookHeader>,
    pub timeout: Duration,
    /// The execution state POSTed as JSON (see [`request_body`]).
    pub body: Value,
}

// The body carries parameter values, sensitive ones included, and the URL may carry
// credentials: neither belongs in a debug print.
impl std::fmt::Debug for WebhookCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookCall")
            .field("url", &redact_url(&self.url))
            .field("ca_bundle", &self.ca_bundle.is_some())
            .field("headers", &self.headers)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl WebhookCall {
    /// The URL as messages and logs show it.
    pub fn shown_url(&self) -> String {
        redact_url(&self.url)
    }
}

/// Why a webhook URL may not be called, or why its answer cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    #[error("url {url:?} is not a URL ({reason}); write `https://host/path`")]
    BadUrl { url: String, reason: String },
    #[error(
        "url {url} uses scheme {scheme:?}; a webhook is called over https:// (or http:// to this machine)"
    )]
    Scheme { url: String, scheme: String },
    #[error(
        "url {url} is plain http:// to a host other than this machine (127.0.0.0/8, ::1, localhost), which would send the execution state and header secrets unencrypted; use https://, or set `allow_insecure_webhooks = true` in the provider block"
    )]
    Insecure { url: String },
    #[error("webhook {url} answered HTTP {status} (expected 200); body starts: {excerpt}")]
    Status {
        url: String,
        status: u16,
        excerpt: String,
    },
    #[error(
        "webhook {url} answered HTTP 200 with Content-Type {content_type} (expected application/json); body starts: {excerpt}"
    )]
    ContentType {
        url: String,
        content_type: String,
        excerpt: String,
    },
    #[error(
        "webhook {url} answered HTTP 200 with a body that is not JSON ({reason}); body starts: {excerpt}"
    )]
    NotJson {
        url: String,
        reason: String,
        excerpt: String,
    },
    #[error(
        "webhook {url} answered HTTP 200, but {problem}; the answer must be one Kubernetes object or a `List` of them; body starts: {excerpt}"
    )]
    InvalidAnswer {
        url: String,
        problem: String,
        excerpt: String,
    },
}

impl WebhookError {
    /// Whether calling again may help: a server that is overloaded or failing now
    /// (429, 5xx). Every other wrong answer needs a change to the webhook or the
    /// package (KUDO's FATAL_ERROR).
    pub fn is_transient(&self) -> bool {
        matches!(self, WebhookError::Status { status, .. } if *status == 429 || *status >= 500)
    }
}

/// The task's call, rendered with the instance's variables at `loc`. The URL must be an
/// http(s) URL once rendered; whether plain http is allowed is the provider's setting,
/// judged by [`check_url`] where the setting is known.
pub(crate) fn call(
    ctx: &RenderContext<'_>,
    loc: &Location,
    task: &str,
    spec: &WebhookSpec,
    effective: &BTreeMap<String, String>,
) -> Result<WebhookCall, PlanError> {
    let render = |what: &str, text: &str| -> Result<String, PlanError> {
        let name = format!("operator.yaml task {task:?} {what}");
        let options = kudo_template::RenderOptions {
            now: None,
            seed: ctx.seed.map(str::to_string),
        };
        kudo_template::render_with(&name, text, &ctx.vars(loc), &options)
            .map_err(|e| PlanError::new(format!("rendering {what}: {e}")))
    };
    let url = render("url", &spec.url)?.trim().to_string();
    parse_url(&url).map_err(|e| PlanError::new(e.to_string()))?;
    let ca_bundle = match &spec.ca_bundle {
        Some(ca) => {
            let ca = render("caBundle", ca)?;
            if !ca.contains("-----BEGIN CERTIFICATE-----") {
                return Err(PlanError::new(
                    "caBundle holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                ));
            }
            Some(ca)
        }
        None => None,
    };
    let headers = spec
        .headers
        .iter()
        .map(|h| {
            let secret_name = render("secretKeyRef.name", &h.secret_name)?
                .trim()
                .to_string();
            if secret_name.is_empty() {
                return Err(PlanError::new(format!(
                    "header {:?}: secretKeyRef.name renders empty",
                    h.name
                )));
            }
            Ok(kudo_package::WebhookHeader {
                secret_name,
                ..h.clone()
            })
        })
        .collect::<Result<Vec<_>, PlanError>>()?;
    Ok(WebhookCall {
        url,
        ca_bundle,
        headers,
        timeout: spec.timeout,
        body: request_body(ctx, loc, task, effective),
    })
}

/// The execution state a Webhook task POSTs: which instance of which operator, where in
/// which plan, and its parameters (every effective value as the Instance stores it: a
/// string, defaults applied, sensitive ones included, as templates see them).
pub fn request_body(
    ctx: &RenderContext<'_>,
    loc: &Location,
    task: &str,
    effective: &BTreeMap<String, String>,
) -> Value {
    let op = &ctx.package.operator;
    json!({
        "apiVersion": kudo_package::API_VERSION,
        "kind": "WebhookRequest",
        "instance": { "name": ctx.instance, "namespace": ctx.namespace },
        "operator": {
            "name": op.name,
            "operatorVersion": op.operator_version,
            "appVersion": op.app_version.clone().unwrap_or_default(),
        },
        "plan": loc.plan,
        "phase": loc.phase,
        "step": loc.step,
        "task": task,
        "parameters": effective,
    })
}

fn parse_url(url: &str) -> Result<url::Url, WebhookError> {
    let parsed = url::Url::parse(url).map_err(|e| WebhookError::BadUrl {
        url: redact_url(url),
        reason: e.to_string(),
    })?;
    match parsed.scheme() {
        "http" | "https" if parsed.has_host() => Ok(parsed),
        "http" | "https" => Err(WebhookError::BadUrl {
            url: redact_url(url),
            reason: "no host".to_string(),
        }),
        other => Err(WebhookError::Scheme {
            url: redact_url(url),
            scheme: other.to_string(),
        }),
    }
}

/// The security rule: https:// anywhere; http:// only to this machine (127.0.0.0/8,
/// ::1, `localhost`), unless the provider's `allow_insecure_webhooks` says otherwise.
pub fn check_url(url: &str, allow_insecure: bool) -> Result<(), WebhookError> {
    let parsed = parse_url(url)?;
    if parsed.scheme() == "https" || allow_insecure || is_loopback(&parsed) {
        return Ok(());
    }
    Err(WebhookError::Insecure {
        url: redact_url(url),
    })
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        // RFC 6761: `localhost` and names below it are this machine.
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        None => false,
    }
}

/// `url` without what may be a secret: the user name and password are dropped, query
/// values are replaced by `redacted` (names stay, to tell calls apart), the fragment
/// is dropped. Something that is not a URL is not shown at all.
pub fn redact_url(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url.trim()) else {
        return "(an unparsable URL)".to_string();
    };
    // Both fail only for URLs that cannot have credentials (no host).
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    parsed.set_fragment(None);
    if parsed.query().is_some() {
        let names: Vec<String> = parsed.query_pairs().map(|(k, _)| k.into_owned()).collect();
        if names.is_empty() {
            parsed.set_query(None);
        } else {
            let mut pairs = parsed.query_pairs_mut();
            pairs.clear();
            for name in &names {
                pairs.append_pair(name, "redacted");
            }
        }
    }
    parsed.to_string()
}

/// The first [`EXCERPT_BYTES`] of a body, quoted, as errors show it.
pub fn excerpt(body: &[u8]) -> String {
    if body.is_empty() {
        return "(empty)".to_string();
    }
    let cut = &body[..body.len().min(EXCERPT_BYTES)];
    let text = String::from_utf8_lossy(cut);
    let more = if body.len() > EXCERPT_BYTES {
        "..."
    } else {
        ""
    };
    format!("{text:?}{more}")
}

/// Judges a webhook's answer and returns the objects to apply, in answer order: HTTP
/// 200, `Content-Type: application/json`, a JSON object that is either a `List` (its
/// `items`) or one Kubernetes object; each object with apiVersion, kind and
/// metadata.name, no namespace other than the instance's, none twice.
pub fn read_answer(
    url: &str,
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
    namespace: &str,
) -> Result<Vec<Value>, WebhookError> {
    let url = redact_url(url);
    if status != 200 {
        return Err(WebhookError::Status {
            url,
            status,
            excerpt: excerpt(body),
        });
    }
    let media_type = content_type
        .and_then(|c| c.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase());
    if media_type.as_deref() != Some("application/json") {
        return Err(WebhookError::ContentType {
            url,
            content_type: content_type.map_or_else(|| "(none)".to_string(), |c| format!("{c:?}")),
            excerpt: excerpt(body),
        });
    }
    let answer: Value = serde_json::from_slice(body).map_err(|e| WebhookError::NotJson {
        url: url.clone(),
        reason: e.to_string(),
        excerpt: excerpt(body),
    })?;
    let invalid = |problem: String| WebhookError::InvalidAnswer {
        url: url.clone(),
        problem,
        excerpt: excerpt(body),
    };
    let objects = match &answer {
        Value::Object(map) if map.get("kind").and_then(Value::as_str) == Some("List") => {
            match map.get("items") {
                Some(Value::Array(items)) => items.clone(),
                // `kubectl` writes an empty List with `items: null` at times.
                None | Some(Value::Null) => Vec::new(),
                Some(_) => return Err(invalid("the List's `items` is not a list".to_string())),
            }
        }
        Value::Object(_) => vec![answer.clone()],
        other => {
            return Err(invalid(format!(
                "the JSON is {} instead of an object",
                crate::render::type_name(other)
            )));
        }
    };
    let mut seen: Vec<(String, String)> = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        let at = |problem: &str| {
            let name = object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            invalid(format!("object {}{name} {problem}", i + 1))
        };
        if !object.is_object() {
            return Err(at(&format!(
                "is {}, not an object",
                crate::render::type_name(object)
            )));
        }
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let Some(_) = text("/apiVersion") else {
            return Err(at("has no apiVersion"));
        };
        let Some(kind) = text("/kind") else {
            return Err(at("has no kind"));
        };
        if kind == "List" || (kind.ends_with("List") && object.get("items").is_some()) {
            return Err(at("is itself a list; answer one List of objects"));
        }
        let Some(name) = text("/metadata/name") else {
            return Err(at("has no metadata.name"));
        };
        if let Some(ns) = object.pointer("/metadata/namespace")
            && !ns.is_null()
            && ns.as_str() != Some(namespace)
        {
            return Err(at(&format!(
                "is in namespace {ns}; a webhook's objects belong to the instance's namespace {namespace:?} (or are cluster-scoped)"
            )));
        }
        let key = (kind.to_string(), name.to_string());
        if seen.contains(&key) {
            return Err(at(&format!("repeats {kind} {name}")));
        }
        seen.push(key);
    }
    Ok(objects)
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: Option<&str> = Some("application/json");

    fn read(status: u16, ct: Option<&str>, body: &str) -> Result<Vec<Value>, WebhookError> {
        read_answer(
            "https://hooks.example.com/h?token=s3cret",
            status,
            ct,
            body.as_bytes(),
            "ns",
        )
    }

    #[test]
    fn a_list_answer_gives_its_items_in_order() {
        let body = r#"{"apiVersion":"v1","kind":"List","items":[
            {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}},
            {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"b","namespace":"ns"}}]}"#;
        let objects = read(200, JSON, body).unwrap();
        let names: Vec<&str> = objects
            .iter()
            .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert!(
            read(200, JSON, r#"{"kind":"List","items":[]}"#)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_single_object_answer_is_one_object() {
        let body =
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}"#;
        let objects = read(200, Some("Application/JSON; charset=utf-8"), body).unwrap();
        assert_eq!(objects.len(), 1);
        assert_eq!(objects[0]["data"]["k"], "v");
    }

    #[test]
    fn a_status_other_than_200_names_status_url_and_body() {
        let e = read(500, JSON, "database is down").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("HTTP 500"), "{text}");
        assert!(text.contains("\"database is down\""), "{text}");
        assert!(
            text.contains("https://hooks.example.com/h?token=redacted"),
            "{text}"
        );
        assert!(!text.contains("s3cret"), "{text}");
        assert!(e.is_transient());
        // 201 is success elsewhere, but the proposal asks for 200.
        let e = read(201, JSON, "{}").unwrap_err();
        assert!(matches!(e, WebhookError::Status { status: 201, .. }));
        assert!(!e.is_transient());
    }

    #[test]
    fn the_body_quoted_is_at_most_200_bytes() {
        let long = "x".repeat(1000);
        let text = read(404, JSON, &long).unwrap_err().to_string();
        assert!(
            text.contains(&format!("\"{}\"...", "x".repeat(200))),
            "{text}"
        );
        assert!(!text.contains(&"x".repeat(201)), "{text}");
    }

    #[test]
    fn content_type_must_be_json() {
        for ct in [Some("text/html"), None, Some("application/jsonx")] {
            let e = read(200, ct, "<html>hi</html>").unwrap_err();
            assert!(matches!(e, WebhookError::ContentType { .. }), "{ct:?}: {e}");
            assert!(e.to_string().contains("<html>hi</html>"), "{e}");
        }
    }

    #[test]
    fn not_json_is_a_clear_error() {
        let e = read(200, JSON, "this is not json").unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, WebhookError::NotJson { .. }), "{text}");
        assert!(text.contains("not JSON"), "{text}");
        assert!(text.contains("\"this is not json\""), "{text}");
    }

    #[test]
    fn invalid_objects_are_refused_with_their_position() {
        let cases = [
            ("[1, 2]", "is a list instead of an object"),
            (r#"{"kind":"List","items":{}}"#, "`items` is not a list"),
            (r#"{"kind":"List","items":[7]}"#, "object 1 is a number"),
            (
                r#"{"kind":"ConfigMap","metadata":{"name":"a"}}"#,
                "object 1 (a) has no apiVersion",
            ),
            (
                r#"{"apiVersion":"v1","metadata":{"name":"a"}}"#,
                "has no kind",
            ),
            (
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#,
                "has no metadata.name",
            ),
            (
                r#"{"kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}},{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}]}"#,
                "object 2 (a) repeats ConfigMap a",
            ),
            (
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"other"}}"#,
                "is in namespace \"other\"",
            ),
            (
                r#"{"kind":"List","items":[{"apiVersion":"v1","kind":"List","metadata":{"name":"l"},"items":[]}]}"#,
                "is itself a list",
            ),
        ];
        for (body, want) in cases {
            let e = read(200, JSON, body).unwrap_err();
            assert!(
                matches!(e, WebhookError::InvalidAnswer { .. }),
                "{body}: {e}"
            );
            assert!(e.to_string().contains(want), "{body}: {e}");
        }
    }

    #[test]
    fn urls_lose_credentials_query_values_and_fragment() {
        assert_eq!(
            redact_url("https://user:pass@hooks.example.com:8443/a/b?token=abc&x=1#frag"),
            "https://hooks.example.com:8443/a/b?token=redacted&x=redacted"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:9000/hook"),
            "http://127.0.0.1:9000/hook"
        );
        assert_eq!(redact_url("not a url :: pass"), "(an unparsable URL)");
    }

    #[test]
    fn plain_http_only_to_this_machine_unless_allowed() {
        for ok in [
            "https://hooks.example.com/h",
            "http://127.0.0.1:8080/h",
            "http://127.9.8.7/h",
            "http://[::1]:8080/h",
            "http://localhost/h",
            "http://LOCALHOST./h",
            "http://api.localhost/h",
        ] {
            assert_eq!(check_url(ok, false), Ok(()), "{ok}");
        }
        for refused in [
            "http://hooks.example.com/h",
            "http://10.0.0.1/h",
            "http://[::2]/h",
            "http://localhost.example.com/h",
            "http://128.0.0.1/h",
        ] {
            let e = check_url(refused, false).unwrap_err();
            assert!(matches!(e, WebhookError::Insecure { .. }), "{refused}: {e}");
            assert!(e.to_string().contains("allow_insecure_webhooks"), "{e}");
            assert_eq!(check_url(refused, true), Ok(()), "{refused}");
        }
        let e = check_url("ftp://hooks.example.com/h", true).unwrap_err();
        assert!(matches!(e, WebhookError::Scheme { .. }), "{e}");
        let e = check_url("http://u:p@example.com/h", false).unwrap_err();
        assert!(!e.to_string().contains("u:p"), "{e}");
    }
}

#[cfg(test)]
mod walk_tests {
    use std::collections::BTreeMap;

    use kudo_package::{Files, Origin, Package};
    use serde_json::json;

    use crate::{Action, Desired, Inputs};

    const OPERATOR: &str = r#"name: hooked
operatorVersion: 0.2.0
appVersion: 1.5.0
tasks:
- name: fetch
  kind: Webhook
  spec:
    url: "{{ .Params.URL }}/objects?instance={{ .Name }}"
    timeout: 5s
    headers:
    - name: Authorization
      secretKeyRef: {name: "{{ .Name }}-token", key: token}
plans:
  deploy:
    strategy: serial
    phases:
    - name: main
      strategy: serial
      steps:
      - name: remote
        tasks: [fetch]
"#;
    const PARAMS: &str = "parameters:\n- name: URL\n  default: https://hooks.example.com\n- name: MODE\n  default: small\n";

    fn package() -> Package {
        let mut files = Files::new();
        files.insert("operator.yaml".into(), OPERATOR.as_bytes().to_vec());
        files.insert("params.yaml".into(), PARAMS.as_bytes().to_vec());
        Package::from_files(&files, "hooked/", Origin::Memory).unwrap()
    }

    #[test]
    fn the_walk_renders_the_call_and_the_body_carries_the_execution_state() {
        let pkg = package();
        let params = BTreeMap::from([("MODE".to_string(), "large".to_string())]);
        let desired = Desired::new(Inputs {
            package: &pkg,
            instance: "web",
            namespace: "ns",
            parameters: &params,
            seed: None,
            dependencies: None,
        })
        .unwrap();
        let walk = desired.plan("deploy").unwrap();
        let (step, task, call) = walk.webhooks().next().expect("one webhook task");
        assert_eq!(task, "fetch");
        assert_eq!(step.location.step, "remote");
        assert_eq!(call.url, "https://hooks.example.com/objects?instance=web");
        assert_eq!(call.timeout, std::time::Duration::from_secs(5));
        assert_eq!(call.headers[0].secret_name, "web-token");
        assert_eq!(
            call.body,
            json!({
                "apiVersion": "kudo.dev/v1beta1",
                "kind": "WebhookRequest",
                "instance": {"name": "web", "namespace": "ns"},
                "operator": {"name": "hooked", "operatorVersion": "0.2.0", "appVersion": "1.5.0"},
                "plan": "deploy", "phase": "main", "step": "remote", "task": "fetch",
                "parameters": {"MODE": "large", "URL": "https://hooks.example.com"},
            })
        );
        // Nothing a webhook answers is known without calling it.
        assert!(desired.wanted().unwrap().objects.is_empty());
        assert_eq!(
            desired.webhook_tasks().into_iter().collect::<Vec<_>>(),
            ["fetch"]
        );
        assert!(matches!(
            walk.tasks().next().unwrap().action,
            Action::Webhook(_)
        ));
        // The Debug form shows neither parameter values nor URL secrets.
        let debug = format!("{call:?}");
        assert!(
            !debug.contains("large") && !debug.contains("instance=web"),
            "{debug}"
        );
    }

    #[test]
    fn a_url_that_renders_to_no_url_fails_the_walk_at_the_task() {
        let pkg = package();
        let params = BTreeMap::from([("URL".to_string(), "ftp://x".to_string())]);
        let desired = Desired::new(Inputs {
            package: &pkg,
            instance: "web",
            namespace: "ns",
            parameters: &params,
            seed: None,
            dependencies: None,
        })
        .unwrap();
        let e = desired.plan("deploy").unwrap_err();
        assert_eq!(e.task.as_deref(), Some("fetch"));
        assert!(e.to_string().contains("scheme \"ftp\""), "{e}");
    }
}
