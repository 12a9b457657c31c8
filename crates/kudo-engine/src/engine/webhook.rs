//! The HTTP half of a Webhook task: read the header values from Secrets, POST the
//! execution state the walk prepared, and judge the answer by kudo-plan's rules
//! ([`kudo_plan::webhook::read_answer`]). Only a run calls this; plans never do.
//!
//! The call is made with ureq (already the package downloader, so no new client) on a
//! blocking thread; the task's timeout (at most 30 s) bounds the whole call, and a
//! cancelled run stops waiting for it at once.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use kudo_plan::webhook::{self, MAX_ANSWER_BYTES, WebhookCall, WebhookError};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::error::EngineError;
use crate::cluster::{Cluster, ClusterError, ObjectRef, Trouble};

/// Why a webhook call produced no objects.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The URL is not allowed, or the answer is not what a webhook must answer.
    #[error(transparent)]
    Refused(#[from] WebhookError),
    #[error(
        "webhook {url} did not answer within the task's timeout of {}s; make it answer faster or raise `timeout` (at most 30s)",
        timeout.as_secs_f64()
    )]
    Timeout { url: String, timeout: Duration },
    #[error("cannot call webhook {url}: {message}")]
    Transport { url: String, message: String },
    #[error("webhook {url}: caBundle: {message}")]
    CaBundle { url: String, message: String },
    #[error("header {header:?}: {problem}")]
    Header { header: String, problem: String },
    #[error("header {header:?}: reading Secret {secret}: {source}")]
    Secret {
        header: String,
        secret: String,
        #[source]
        source: ClusterError,
    },
    #[error("the run was cancelled while webhook {url} was called")]
    Cancelled { url: String },
}

impl CallError {
    /// FATAL_ERROR when the package or the webhook must change; ERROR when calling
    /// again later may work (no answer, 429/5xx, a Secret not there yet).
    pub fn is_fatal(&self) -> bool {
        match self {
            CallError::Refused(e) => !e.is_transient(),
            CallError::CaBundle { .. } => true,
            CallError::Header { .. } => false,
            CallError::Secret { .. } => false,
            CallError::Timeout { .. } | CallError::Transport { .. } => false,
            CallError::Cancelled { .. } => false,
        }
    }
}

/// One header with its value, kept out of every `Debug` and log line.
struct HeaderValue {
    name: String,
    value: Vec<u8>,
}

/// Reads each header's value from its Secret in `namespace`.
async fn header_values(
    cluster: &Cluster,
    namespace: &str,
    call: &WebhookCall,
) -> Result<Vec<HeaderValue>, CallError> {
    let mut out = Vec::new();
    for h in &call.headers {
        let secret = ObjectRef::new("v1", "Secret", Some(namespace), &h.secret_name);
        let live = cluster
            .get(&secret)
            .await
            .map_err(|source| CallError::Secret {
                header: h.name.clone(),
                secret: format!("{namespace}/{}", h.secret_name),
                source,
            })?;
        let problem = |p: String| CallError::Header {
            header: h.name.clone(),
            problem: p,
        };
        let Some(live) = live else {
            return Err(problem(format!(
                "Secret {namespace}/{} does not exist; create it with key {:?} before the task runs",
                h.secret_name, h.secret_key
            )));
        };
        let encoded = live
            .get("data")
            .and_then(|d| d.get(&h.secret_key))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                problem(format!(
                    "Secret {namespace}/{} has no key {:?}",
                    h.secret_name, h.secret_key
                ))
            })?;
        let value = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| {
                problem(format!(
                    "key {:?} of Secret {namespace}/{} is not base64",
                    h.secret_key, h.secret_name
                ))
            })?;
        // RFC 9110 field values: visible ASCII, spaces and tabs. Say which key, never
        // the value (a token with a trailing newline is the usual mistake).
        if value.is_empty()
            || !value
                .iter()
                .all(|&b| b == b'\t' || b == b' ' || (0x21..0x7f).contains(&b))
        {
            return Err(problem(format!(
                "key {:?} of Secret {namespace}/{} is empty or holds characters a header cannot carry (a line break at the end?)",
                h.secret_key, h.secret_name
            )));
        }
        out.push(HeaderValue {
            name: h.name.clone(),
            value,
        });
    }
    Ok(out)
}

/// Calls the webhook and returns the objects its answer holds, each marked with
/// [`webhook::ANNOTATION_WEBHOOK_TASK`] = `task` (pruning keeps them by it).
pub(crate) async fn call(
    cluster: &Cluster,
    namespace: &str,
    task: &str,
    call: &WebhookCall,
    cancel: &CancellationToken,
) -> Result<Vec<Value>, CallError> {
    webhook::check_url(&call.url, cluster.insecure_webhooks_allowed())?;
    let url = call.shown_url();
    let headers = header_values(cluster, namespace, call).await?;
    let agent = agent(call)?;
    let body = serde_json::to_vec(&call.body).map_err(|e| CallError::Transport {
        url: url.clone(),
        message: format!("cannot encode the request: {e}"),
    })?;
    tracing::info!(task = %task, url = %url, "calling webhook");
    let raw_url = call.url.clone();
    let timeout = call.timeout;
    let shown = url.clone();
    let request =
        tokio::task::spawn_blocking(move || post(&agent, &raw_url, &shown, timeout, headers, body));
    let (status, content_type, answer) = tokio::select! {
        joined = request => joined.map_err(|e| CallError::Transport {
            url: url.clone(),
            message: format!("the call stopped: {e}"),
        })??,
        // The blocking call ends by itself within the timeout; the run need not wait.
        _ = cancel.cancelled() => return Err(CallError::Cancelled { url }),
    };
    tracing::info!(task = %task, url = %url, status, bytes = answer.len(), "webhook answered");
    let mut objects = webhook::read_answer(
        &call.url,
        status,
        content_type.as_deref(),
        &answer,
        namespace,
    )?;
    for object in &mut objects {
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            let annotations = meta
                .entry("annotations")
                .or_insert_with(|| Value::Object(Default::default()));
            if !annotations.is_object() {
                *annotations = Value::Object(Default::default());
            }
            if let Some(a) = annotations.as_object_mut() {
                a.insert(
                    webhook::ANNOTATION_WEBHOOK_TASK.to_string(),
                    Value::String(task.to_string()),
                );
            }
        }
    }
    Ok(objects)
}

fn agent(call: &WebhookCall) -> Result<ureq::Agent, CallError> {
    let crypto = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut tls = ureq::tls::TlsConfig::builder()
        .provider(ureq::tls::TlsProvider::Rustls)
        .unversioned_rustls_crypto_provider(crypto);
    if let Some(pem) = &call.ca_bundle {
        let bad = |message: String| CallError::CaBundle {
            url: call.shown_url(),
            message,
        };
        let mut certs = Vec::new();
        for item in ureq::tls::parse_pem(pem.as_bytes()) {
            match item.map_err(|e| bad(format!("not PEM: {e}")))? {
                ureq::tls::PemItem::Certificate(c) => certs.push(c),
                _ => return Err(bad("holds something other than certificates".to_string())),
            }
        }
        if certs.is_empty() {
            return Err(bad("holds no certificate".to_string()));
        }
        tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&certs));
    }
    Ok(ureq::Agent::config_builder()
        .timeout_global(Some(call.timeout))
        // Every status is judged by read_answer, which names it.
        .http_status_as_error(false)
        // A redirect is an answer other than 200: say so rather than follow it with
        // the header secrets to wherever it points.
        .max_redirects(0)
        .max_redirects_will_error(false)
        .tls_config(tls.build())
        .build()
        .new_agent())
}

/// The blocking POST: status, Content-Type and at most [`MAX_ANSWER_BYTES`] of body.
fn post(
    agent: &ureq::Agent,
    url: &str,
    shown: &str,
    timeout: Duration,
    headers: Vec<HeaderValue>,
    body: Vec<u8>,
) -> Result<(u16, Option<String>, Vec<u8>), CallError> {
    let fail = |e: ureq::Error| match e {
        ureq::Error::Timeout(_) => CallError::Timeout {
            url: shown.to_string(),
            timeout,
        },
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => CallError::Timeout {
            url: shown.to_string(),
            timeout,
        },
        // ureq's words may quote the URL; only the shown form may appear.
        other => CallError::Transport {
            url: shown.to_string(),
            message: other.to_string().replace(url, shown),
        },
    };
    let mut request = agent
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json");
    for h in &headers {
        request = request.header_raw(&h.name, &h.value);
    }
    let mut response = request.send(&body[..]).map_err(fail)?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let answer = response
        .body_mut()
        .with_config()
        .limit(MAX_ANSWER_BYTES)
        .read_to_vec()
        .map_err(fail)?;
    Ok((status, content_type, answer))
}

/// The run's error for a failed call: the location is added by the step.
pub(crate) fn engine_error(e: CallError) -> EngineError {
    let (fatal, trouble) = match &e {
        CallError::Cancelled { url } => {
            return EngineError::from(ClusterError::Cancelled {
                what: format!("calling webhook {url}"),
            });
        }
        CallError::Secret { source, .. } => (false, source.trouble()),
        other => (other.is_fatal(), Trouble::Webhook),
    };
    // The call error is the whole story; this level adds no text of its own.
    let mut err = EngineError::new("", fatal);
    err.trouble = trouble;
    err.caused_by(e)
}
