//! HTTPS listener, bearer-token authentication, fault injection and the mapping of
//! requests onto API verbs.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_stream_shim::ReceiverStream;
use tracing::{debug, info};

use crate::api_error::{ApiError, ApiResult};
use crate::faults::{self, Action, RequestInfo};
use crate::ops::{self, Deleted, PatchKind, Propagation, WriteOpts};
use crate::resources::ResourceType;
use crate::routes::{self, Query, ResPath, Route};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::shared::Shared;
use crate::ssa::{self, ApplyOpts};
use crate::watch::{self, WatchParams};
use crate::{admin, auth, exec, rbac};

pub type Body = BoxBody<Bytes, std::io::Error>;
pub type Resp = Response<Body>;

/// Returned by the service to make hyper close the connection without an answer.
#[derive(Debug, thiserror::Error)]
#[error("connection dropped by fault injection")]
pub struct Dropped;

mod tokio_stream_shim {
    //! A minimal `Stream` over an mpsc receiver (saves a dependency).
    use std::pin::Pin;
    use std::task::{Context, Poll};

    pub struct ReceiverStream<T>(pub tokio::sync::mpsc::Receiver<T>);

    impl<T> futures_util::Stream for ReceiverStream<T> {
        type Item = T;
        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
            self.0.poll_recv(cx)
        }
    }
}

pub fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Resp {
    let mut r = Response::new(
        Full::new(body.into())
            .map_err(|e: Infallible| match e {})
            .boxed(),
    );
    *r.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(CONTENT_TYPE, v);
    }
    r
}

pub fn json_response(status: StatusCode, v: &Value) -> Resp {
    full(status, "application/json", v.to_string())
}

pub fn error_response(e: &ApiError) -> Resp {
    let status = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if e.plain_text {
        return full(
            status,
            "text/plain; charset=utf-8",
            format!("{}\n", e.message),
        );
    }
    let mut r = json_response(status, &e.to_status());
    if let Some(secs) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert("Retry-After", v);
    }
    r
}

pub async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    shared: Arc<Shared>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => {
                let Ok((tcp, peer)) = accepted else { continue };
                let (acceptor, shared) = (acceptor.clone(), shared.clone());
                conns.spawn(async move {
                    let tls = match acceptor.accept(tcp).await {
                        Ok(t) => t,
                        Err(e) => {
                            debug!(%peer, error = %e, "TLS handshake failed");
                            return;
                        }
                    };
                    let svc = service_fn(move |req| handle(shared.clone(), req));
                    if let Err(e) = http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), svc)
                        .with_upgrades()
                        .await
                    {
                        debug!(%peer, error = %e, "connection ended");
                    }
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    info!("kube-sim stopping");
    conns.abort_all();
}

/// What RBAC is asked about a request (`k8s.io/apiserver/pkg/endpoints/request`
/// `RequestInfoFactory`): a resource request's verb, group, resource, subresource,
/// namespace (a namespace's own, for `namespaces/<name>`) and name (from a
/// `metadata.name` field selector for list and watch); anything else is a
/// non-resource request of its path with the method as verb.
fn rbac_request(route: &Route, method: &Method, query: &Query, path: &str) -> rbac::Request {
    match route {
        Route::Resource(p) => {
            let exec = p.plural == "pods" && p.sub.as_deref() == Some("exec");
            let verb = match exec {
                // Exec over a WebSocket is a GET, but Kubernetes 1.35+ authorizes it as
                // the create it is (AuthorizePodWebsocketUpgradeCreatePermission).
                true => "create",
                false => verb_of(method, p, query),
            };
            let namespace = match (&p.namespace, p.group.is_empty() && p.plural == "namespaces") {
                (Some(ns), _) => ns.clone(),
                (None, true) => p.name.clone().unwrap_or_default(),
                (None, false) => String::new(),
            };
            let name = p.name.clone().unwrap_or_else(|| match verb {
                "list" | "watch" => query
                    .get("fieldSelector")
                    .unwrap_or_default()
                    .split(',')
                    .find_map(|term| {
                        term.strip_prefix("metadata.name=")
                            .map(|n| n.trim_start_matches('=').to_string())
                    })
                    .unwrap_or_default(),
                _ => String::new(),
            });
            rbac::Request::Resource {
                verb: verb.to_string(),
                group: p.group.clone(),
                resource: p.plural.clone(),
                subresource: p.sub.clone(),
                namespace,
                name,
            }
        }
        _ => rbac::Request::NonResource {
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_string(),
        },
    }
}

/// Authentication, then authorization: who made the request; 401 for a missing,
/// unknown or expired token;
/// 403 when RBAC does not allow the request. The admin endpoint is for
/// `system:masters` only.
fn admit(
    shared: &Shared,
    req: &Request<Incoming>,
    route: &Route,
    query: &Query,
) -> Result<auth::Identity, ApiError> {
    let who = auth::bearer(req.headers())
        .and_then(|t| shared.tokens().authenticate(t))
        .ok_or_else(ApiError::unauthorized)?;
    let request = rbac_request(route, req.method(), query, req.uri().path());
    let allowed = match route {
        Route::Admin(_) if !who.is_master() => Err(rbac::forbidden(&who, &request)),
        _ => rbac::authorize(&shared.store(), &who, &request),
    };
    if let Err(e) = &allowed {
        debug!(user = %who.user, message = %e.message, "forbidden");
        shared.forbidden().push(e.message.clone());
    }
    allowed.map(|()| who)
}

fn verb_of(method: &Method, p: &ResPath, q: &Query) -> &'static str {
    match *method {
        Method::GET if p.name.is_none() && q.flag("watch") => "watch",
        Method::GET if p.name.is_none() => "list",
        Method::GET => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if p.name.is_none() => "deletecollection",
        Method::DELETE => "delete",
        _ => "unknown",
    }
}

/// What fault rules match a request against: resource requests by verb and resource,
/// discovery as verb `get` on [`faults::DISCOVERY`] named by its path. Health checks and
/// the admin endpoint are never faulted.
fn request_info(route: &Route, method: &Method, query: &Query, path: &str) -> Option<RequestInfo> {
    match route {
        Route::Resource(p) => Some(RequestInfo {
            verb: verb_of(method, p, query).to_string(),
            resource: p.plural.clone(),
            subresource: p.sub.clone(),
            namespace: p.namespace.clone(),
            name: p.name.clone(),
        }),
        Route::Version
        | Route::Api
        | Route::CoreVersion(_)
        | Route::Apis
        | Route::Group(_)
        | Route::GroupVersion(..) => Some(RequestInfo {
            verb: "get".to_string(),
            resource: faults::DISCOVERY.to_string(),
            subresource: None,
            namespace: None,
            name: Some(path.to_string()),
        }),
        Route::Health | Route::Admin(_) | Route::Unknown => None,
    }
}

async fn handle(shared: Arc<Shared>, mut req: Request<Incoming>) -> Result<Resp, Dropped> {
    let route = routes::parse(req.uri().path());
    let query = Query::parse(req.uri().query());
    let who = match admit(&shared, &req, &route, &query) {
        Ok(who) => who,
        Err(e) => return Ok(error_response(&e)),
    };
    debug!(method = %req.method(), uri = %req.uri(), "request");

    if let Some(info) = request_info(&route, req.method(), &query, req.uri().path()) {
        let fired = faults::check(&mut shared.faults(), &info);
        shared.stats().record(&info, fired.as_ref());
        *shared.counts().entry(info.key()).or_default() += 1;
        if let Some(t) = fired {
            debug!(?t, ?info, "fault injected");
            if !t.latency.is_zero() {
                tokio::time::sleep(t.latency).await;
            }
            match t.action {
                Action::Drop => return Err(Dropped),
                Action::Hang => std::future::pending::<()>().await,
                Action::RevokeToken => {
                    if let Some(token) = auth::bearer(req.headers()) {
                        shared.tokens().revoke(token);
                    }
                    // The request itself is refused as the next ones will be: a token
                    // revoked a moment before it arrived.
                    shared.tokens().revoked_refusals += 1;
                    return Ok(error_response(&ApiError::unauthorized()));
                }
                Action::Status {
                    code,
                    retry_after,
                    message,
                } => {
                    let reason = match code {
                        400 => "BadRequest",
                        401 => "Unauthorized",
                        403 => "Forbidden",
                        404 => "NotFound",
                        405 => "MethodNotAllowed",
                        409 => "Conflict",
                        410 => "Expired",
                        422 => "Invalid",
                        429 => "TooManyRequests",
                        503 => "ServiceUnavailable",
                        504 => "Timeout",
                        _ => "InternalError",
                    };
                    let mut e = ApiError::new(code, reason, message);
                    e.retry_after = retry_after;
                    if let Some(s) = retry_after {
                        e.details = Some(json!({"retryAfterSeconds": s}));
                    }
                    return Ok(error_response(&e));
                }
                Action::Delay => {}
            }
        }
    }
    if let Route::Resource(p) = &route
        && p.sub.as_deref() == Some("log")
        && p.plural == "pods"
        && req.method() == Method::GET
    {
        return Ok(log_request(&shared, p, &query).unwrap_or_else(|e| error_response(&e)));
    }
    if let Route::Resource(p) = &route
        && p.sub.as_deref() == Some("exec")
        && p.plural == "pods"
    {
        return Ok(
            exec_request(&shared, p, &query, &mut req).unwrap_or_else(|e| error_response(&e))
        );
    }

    let (parts, body) = req.into_parts();
    // The API server caps request bodies at 3 MiB.
    let limited = http_body_util::Limited::new(body, 3 * 1024 * 1024);
    let body = match limited.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Ok(error_response(&ApiError::new(
                413,
                "RequestEntityTooLarge",
                "Request entity too large: limit is 3145728",
            )));
        }
        Err(e) => {
            return Ok(error_response(&ApiError::bad_request(format!(
                "reading request body: {e}"
            ))));
        }
    };
    let content_type = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let accept = parts
        .headers
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let user_agent = parts
        .headers
        .get(hyper::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("unknown")
        .to_string();
    let ctx = Ctx {
        shared,
        method: parts.method,
        query,
        body,
        content_type,
        user_agent,
        who,
    };
    let result = match route {
        Route::Admin(rest) => admin::handle(&ctx.shared, &ctx.method, &rest, &ctx.body),
        Route::Resource(p) => resource(&ctx, &p).await,
        other => discovery(&ctx, other, &accept),
    };
    Ok(result.unwrap_or_else(|e| error_response(&e)))
}

struct Ctx {
    shared: Arc<Shared>,
    method: Method,
    query: Query,
    body: Bytes,
    content_type: String,
    user_agent: String,
    /// Who made the request.
    who: auth::Identity,
}

fn discovery(ctx: &Ctx, route: Route, accept: &str) -> ApiResult<Resp> {
    if ctx.method != Method::GET {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let store = ctx.shared.store();
    let reg = &store.registry;
    let aggregated = accept
        .split(',')
        .next()
        .is_some_and(|a| a.contains("as=APIGroupDiscoveryList"));
    let aggregated_type = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let not_found = || {
        // The real server sends empty details for an unserved path.
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    };
    let doc = match route {
        Route::Version => {
            let minor = reg.release().minor.to_string();
            json!({
                "major": "1", "minor": minor, "gitVersion": format!("v1.{minor}.0"),
                "gitCommit": "0000000000000000000000000000000000000000",
                "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24.0",
                "compiler": "gc", "platform": "linux/amd64", "emulationMajor": "1", "emulationMinor": minor,
            })
        }
        Route::Health => return Ok(full(StatusCode::OK, "text/plain", "ok")),
        Route::Api if aggregated => {
            return Ok(full(
                StatusCode::OK,
                aggregated_type,
                reg.aggregated(true).to_string(),
            ));
        }
        Route::Api => reg.api_versions(),
        Route::Apis if aggregated => {
            return Ok(full(
                StatusCode::OK,
                aggregated_type,
                reg.aggregated(false).to_string(),
            ));
        }
        Route::Apis => reg.api_group_list(),
        Route::CoreVersion(v) if v == "v1" => reg.resource_list("", "v1"),
        Route::Group(g) => reg.api_group(&g).ok_or_else(not_found)?,
        Route::GroupVersion(g, v) if reg.has_group_version(&g, &v) => reg.resource_list(&g, &v),
        _ => return Err(not_found()),
    };
    Ok(json_response(StatusCode::OK, &doc))
}

fn dry_run(q: &Query) -> ApiResult<bool> {
    let values = q.all("dryRun");
    for v in &values {
        if v != "All" {
            return Err(ApiError::bad_request(format!(
                "Invalid dry run value: {v:?}: supported values: \"All\""
            )));
        }
    }
    Ok(!values.is_empty())
}

fn decode_body(ctx: &Ctx) -> ApiResult<Value> {
    if let Ok(v) = serde_json::from_slice::<Value>(&ctx.body) {
        // The API server reads an apply patch with its YAML parser even when it is
        // JSON, and YAML ends an implicit key (every JSON key is one) at 1024
        // characters.
        if ctx.content_type == "application/apply-patch+yaml" && has_key_longer_than(&v, 1024) {
            return Err(ApiError::bad_request(
                "error decoding YAML: error converting YAML to JSON: yaml: did not find expected ',' or '}'",
            ));
        }
        return Ok(v);
    }
    if ctx.content_type == "application/apply-patch+yaml" {
        return serde_yaml_ng::from_slice::<Value>(&ctx.body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")));
    }
    Err(ApiError::bad_request(format!(
        "the body of the request could not be decoded as JSON ({} bytes)",
        ctx.body.len()
    )))
}

fn has_key_longer_than(v: &Value, limit: usize) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| k.len() > limit || has_key_longer_than(v, limit)),
        Value::Array(items) => items.iter().any(|v| has_key_longer_than(v, limit)),
        _ => false,
    }
}

/// `fieldValidation=Strict` refuses fields the kind does not have (the default, Warn,
/// drops them; see `validate::unknown_fields`).
fn strict_fields(ctx: &Ctx, rt: &ResourceType, body: &Value) -> ApiResult<()> {
    if ctx.query.get("fieldValidation") != Some("Strict") {
        return Ok(());
    }
    let unknown = crate::validate::unknown_fields(rt, body);
    if unknown.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field {}", json!(f)))
        .collect();
    Err(ApiError::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {}",
        list.join(", "),
        kind = rt.kind,
        version = rt.version
    )))
}

fn manager(ctx: &Ctx) -> ApiResult<String> {
    let m = match ctx.query.get("fieldManager") {
        Some(m) => m.to_string(),
        None => ctx
            .user_agent
            .split('/')
            .next()
            .unwrap_or("unknown")
            .to_string(),
    };
    if m.len() > 128 {
        return Err(ApiError::bad_request(
            "fieldManager: Too long: may not be more than 128 bytes",
        ));
    }
    Ok(m)
}

fn resolve(ctx: &Ctx, p: &ResPath) -> ApiResult<ResourceType> {
    let not_found = || {
        // The real server sends empty details for an unserved path.
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    };
    let store = ctx.shared.store();
    let rt = match store.registry.find(&p.group, &p.version, &p.plural) {
        Some(rt) => rt.clone(),
        // A group nothing serves (a CRD's, once deleted) is not routed at all on a
        // real server; a served group's unknown version or resource gets the Status.
        None if !p.group.is_empty() && !store.registry.serves_group(&p.group) => {
            return Err(ApiError::page_not_found());
        }
        None => return Err(not_found()),
    };
    if p.namespace.is_some() && !rt.namespaced {
        return Err(not_found());
    }
    if rt.namespaced && p.name.is_some() && p.namespace.is_none() {
        return Err(not_found());
    }
    match p.sub.as_deref() {
        None => {}
        Some("status") if rt.has_status => {}
        Some("finalize") if rt.plural == "namespaces" => {}
        Some("token") if rt.group.is_empty() && rt.plural == "serviceaccounts" => {}
        Some(_) => return Err(not_found()),
    }
    Ok(rt)
}

async fn resource(ctx: &Ctx, p: &ResPath) -> ApiResult<Resp> {
    let rt = resolve(ctx, p)?;
    let ns = p.namespace.clone().unwrap_or_default();
    let sub = p
        .sub
        .as_deref()
        .map(|s| if s == "finalize" { "status" } else { s });
    let q = &ctx.query;
    let labels = LabelSelector::parse(q.get("labelSelector").unwrap_or_default())?;
    let fields = FieldSelector::parse(q.get("fieldSelector").unwrap_or_default())?;
    match (&ctx.method, &p.name) {
        (&Method::GET, None) if q.flag("watch") => {
            let timeout = q
                .get("timeoutSeconds")
                .and_then(|t| t.parse::<u64>().ok())
                .unwrap_or(1800);
            let params = WatchParams {
                namespace: p.namespace.clone(),
                labels,
                fields,
                resource_version: q.get("resourceVersion").map(str::to_string),
                timeout: std::time::Duration::from_secs(timeout),
                bookmarks: q.flag("allowWatchBookmarks"),
                send_initial_events: q.get("sendInitialEvents") == Some("true"),
            };
            let rx = watch::start(ctx.shared.clone(), rt, params)?;
            let stream = ReceiverStream(rx).map(|b| Ok::<_, std::io::Error>(Frame::data(b)));
            let mut r = Response::new(BodyExt::boxed(StreamBody::new(stream)));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            Ok(r)
        }
        (&Method::GET, None) => {
            let store = ctx.shared.store();
            let page = ops::Page {
                limit: q.get("limit").and_then(|l| l.parse().ok()),
                continue_token: q.get("continue").filter(|c| !c.is_empty()),
            };
            let v = ops::list(&store, &rt, p.namespace.as_deref(), &labels, &fields, &page)?;
            Ok(json_response(StatusCode::OK, &v))
        }
        (&Method::GET, Some(name)) => {
            let store = ctx.shared.store();
            Ok(json_response(
                StatusCode::OK,
                &ops::get(&store, &rt, &ns, name)?,
            ))
        }
        (&Method::POST, None) => {
            if rt.namespaced && p.namespace.is_none() {
                return Err(ApiError::method_not_allowed(
                    "POST on a namespaced resource needs a namespace in the path",
                ));
            }
            let body = decode_body(ctx)?;
            strict_fields(ctx, &rt, &body)?;
            let opts = WriteOpts {
                manager: manager(ctx)?,
                dry_run: dry_run(q)?,
            };
            let mut store = ctx.shared.store();
            let v = ops::create(&mut store, &rt, &ns, body, &opts, None)?;
            Ok(json_response(StatusCode::CREATED, &v))
        }
        (&Method::POST, Some(name)) if p.sub.as_deref() == Some("token") => {
            token_request(ctx, &rt, &ns, name)
        }
        (&Method::PUT, Some(name)) => {
            let body = decode_body(ctx)?;
            strict_fields(ctx, &rt, &body)?;
            let opts = WriteOpts {
                manager: manager(ctx)?,
                dry_run: dry_run(q)?,
            };
            let mut store = ctx.shared.store();
            let v = ops::update(&mut store, &rt, &ns, name, body, sub, &opts)?;
            Ok(json_response(StatusCode::OK, &v))
        }
        (&Method::PATCH, Some(name)) => patch(ctx, &rt, &ns, name, sub),
        (&Method::DELETE, Some(name)) => delete(ctx, &rt, &ns, name),
        (&Method::DELETE, None) => {
            let (propagation, preconditions, dry) = delete_options(ctx)?;
            let mut store = ctx.shared.store();
            let names: Vec<(String, String)> =
                ops::matching(&store, &rt, p.namespace.as_deref(), &labels, &fields)
                    .map(|(k, _)| (k.namespace.clone(), k.name.clone()))
                    .collect();
            let mut items = Vec::new();
            for (n_ns, name) in names {
                match ops::delete(
                    &mut store,
                    &rt,
                    &n_ns,
                    &name,
                    propagation,
                    &preconditions,
                    dry,
                )? {
                    Deleted::Gone(v) | Deleted::Pending(v) => items.push(v),
                }
            }
            Ok(json_response(
                StatusCode::OK,
                &json!({"kind": format!("{}List", rt.kind), "apiVersion": rt.api_version(), "metadata": {}, "items": items}),
            ))
        }
        _ => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({} {})",
            ctx.method,
            rt.qualified()
        ))),
    }
}

/// The shortest token the TokenRequest API issues (`spec.expirationSeconds`), and the
/// lifetime it gives when none is asked for.
const MIN_TOKEN_SECONDS: u64 = 600;
const DEFAULT_TOKEN_SECONDS: u64 = 3600;

/// `POST .../serviceaccounts/<name>/token` (TokenRequest): a bearer token for the
/// ServiceAccount, valid for `spec.expirationSeconds`
/// (kubernetes.io/docs/reference/kubernetes-api/authentication-resources/token-request-v1/).
fn token_request(ctx: &Ctx, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<Resp> {
    ops::get(&ctx.shared.store(), rt, ns, name)?;
    let body = match ctx.body.is_empty() {
        true => json!({}),
        false => decode_body(ctx)?,
    };
    let seconds = body["spec"]["expirationSeconds"]
        .as_u64()
        .unwrap_or(DEFAULT_TOKEN_SECONDS);
    if seconds < MIN_TOKEN_SECONDS {
        // The real server names no object (the request body has none).
        let mut e = ApiError::invalid(
            "TokenRequest.authentication.k8s.io",
            "",
            "spec.expirationSeconds",
            &format!("Invalid value: {seconds}: may not specify a duration less than 10 minutes"),
        );
        if let Some(details) = e.details.as_mut().and_then(Value::as_object_mut) {
            details.remove("name");
        }
        return Err(e);
    }
    let audiences = match body["spec"]["audiences"].as_array() {
        Some(a) if !a.is_empty() => json!(a),
        _ => json!(["https://kubernetes.default.svc"]),
    };
    let (token, expires) =
        ctx.shared
            .tokens()
            .issue(ns, name, std::time::Duration::from_secs(seconds));
    Ok(json_response(
        StatusCode::CREATED,
        &json!({
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": null},
            "spec": {"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": null},
            "status": {"token": token, "expirationTimestamp": auth::rfc3339(expires)},
        }),
    ))
}

fn patch(ctx: &Ctx, rt: &ResourceType, ns: &str, name: &str, sub: Option<&str>) -> ApiResult<Resp> {
    let q = &ctx.query;
    let body = decode_body(ctx)?;
    let dry = dry_run(q)?;
    let mut store = ctx.shared.store();
    let kind = match ctx.content_type.as_str() {
        "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
            // An apply that creates the object is a create too: the API server asks
            // RBAC again (patch was asked before), dry-run or not.
            if sub.is_none() && ops::get(&store, rt, ns, name).is_err() {
                let create = rbac::Request::Resource {
                    verb: "create".to_string(),
                    group: rt.group.clone(),
                    resource: rt.plural.clone(),
                    subresource: None,
                    namespace: ns.to_string(),
                    name: name.to_string(),
                };
                if let Err(e) = rbac::authorize(&store, &ctx.who, &create) {
                    ctx.shared.forbidden().push(e.message.clone());
                    return Err(e);
                }
            }
            let opts = ApplyOpts {
                manager: q.get("fieldManager").unwrap_or_default().to_string(),
                force: q.flag("force"),
                dry_run: dry,
            };
            let (v, created) = ssa::apply(&mut store, rt, ns, name, body, sub, &opts)?;
            let code = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            return Ok(json_response(code, &v));
        }
        "application/merge-patch+json" => PatchKind::Merge,
        "application/json-patch+json" => PatchKind::Json,
        "application/strategic-merge-patch+json" => PatchKind::Strategic,
        other => return Err(ApiError::unsupported_media_type(other)),
    };
    if q.flag("force") {
        return Err(ApiError::bad_request(
            "force: Forbidden: may not be specified for non-apply patch",
        ));
    }
    let opts = WriteOpts {
        manager: manager(ctx)?,
        dry_run: dry,
    };
    let v = ops::patch(&mut store, rt, ns, name, kind, &body, sub, &opts)?;
    Ok(json_response(StatusCode::OK, &v))
}

fn delete_options(ctx: &Ctx) -> ApiResult<(Propagation, Value, bool)> {
    let q = &ctx.query;
    let body: Value = if ctx.body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&ctx.body)
            .map_err(|e| ApiError::bad_request(format!("decoding DeleteOptions: {e}")))?
    };
    let policy = body["propagationPolicy"]
        .as_str()
        .map(str::to_string)
        .or_else(|| q.get("propagationPolicy").map(str::to_string));
    let propagation = match (policy.as_deref(), body["orphanDependents"].as_bool()) {
        (Some("Foreground"), _) => Propagation::Foreground,
        (Some("Orphan"), _) => Propagation::Orphan,
        (Some("Background"), _) | (None, None | Some(false)) => Propagation::Background,
        (None, Some(true)) => Propagation::Orphan,
        (Some(other), _) => {
            return Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
            )));
        }
    };
    let mut dry = dry_run(q)?;
    if let Some(d) = body["dryRun"].as_array() {
        for v in d {
            if v != "All" {
                return Err(ApiError::bad_request(format!("Invalid dry run value: {v}")));
            }
            dry = true;
        }
    }
    Ok((propagation, body["preconditions"].clone(), dry))
}

fn delete(ctx: &Ctx, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<Resp> {
    let (propagation, preconditions, dry) = delete_options(ctx)?;
    let mut store = ctx.shared.store();
    match ops::delete(&mut store, rt, ns, name, propagation, &preconditions, dry)? {
        Deleted::Pending(v) => Ok(json_response(StatusCode::ACCEPTED, &v)),
        Deleted::Gone(v) => {
            let mut details = json!({"name": name, "kind": rt.plural, "uid": v["metadata"]["uid"]});
            if !rt.group.is_empty() {
                details["group"] = json!(rt.group);
            }
            Ok(json_response(
                StatusCode::OK,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
            ))
        }
    }
}

/// Pod logs (`GET .../pods/{name}/log?container=&tailLines=`): what the test registered
/// the container as writing (see [`crate::ContainerExit`]), as plain text.
fn log_request(shared: &Arc<Shared>, p: &ResPath, q: &Query) -> ApiResult<Resp> {
    let ns = p.namespace.clone().unwrap_or_default();
    let name = p.name.clone().unwrap_or_default();
    let pod = {
        let store = shared.store();
        let rt = store
            .registry
            .find("", "v1", "pods")
            .cloned()
            .ok_or_else(|| ApiError::internal("pods are not served"))?;
        ops::get(&store, &rt, &ns, &name)?
    };
    let exits: Vec<crate::ContainerExit> = shared
        .container_exits()
        .iter()
        .filter(|e| e.matches(&ns, &pod))
        .cloned()
        .collect();
    let text = crate::containers::log(&pod, &exits, q.get("container"), q.get("tailLines"))?;
    Ok(full(StatusCode::OK, "text/plain", text))
}

/// Pod exec: checks the pod, answers the WebSocket handshake and runs the command on the
/// upgraded connection.
fn exec_request(
    shared: &Arc<Shared>,
    p: &ResPath,
    q: &Query,
    req: &mut Request<Incoming>,
) -> ApiResult<Resp> {
    let ns = p.namespace.clone().unwrap_or_default();
    let name = p.name.clone().unwrap_or_default();
    let pod = {
        let store = shared.store();
        let rt = store
            .registry
            .find("", "v1", "pods")
            .cloned()
            .ok_or_else(|| ApiError::internal("pods are not served"))?;
        ops::get(&store, &rt, &ns, &name)?
    };
    if pod["status"]["phase"] != "Running" {
        return Err(ApiError::bad_request(format!(
            "unable to upgrade connection: pod {name} is not running (phase {})",
            pod["status"]["phase"].as_str().unwrap_or("Pending")
        )));
    }
    let command = q.all("command");
    if command.is_empty() {
        return Err(ApiError::bad_request("you must specify at least 1 command"));
    }
    let key = req
        .headers()
        .get(hyper::header::SEC_WEBSOCKET_KEY)
        .map(|k| k.as_bytes().to_vec())
        .ok_or_else(|| {
            ApiError::bad_request("exec needs a WebSocket upgrade (Sec-WebSocket-Key missing)")
        })?;
    let offered = req
        .headers()
        .get(hyper::header::SEC_WEBSOCKET_PROTOCOL)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let protocol = ["v5.channel.k8s.io", "v4.channel.k8s.io"]
        .into_iter()
        .find(|p| offered.split(',').any(|o| o.trim() == *p))
        .ok_or_else(|| {
            ApiError::bad_request(format!("unsupported WebSocket subprotocols: {offered:?}"))
        })?;
    let files: Vec<exec::ExecFile> = shared
        .exec_files()
        .iter()
        .filter(|f| f.matches(&ns, &pod))
        .cloned()
        .collect();
    let outcome = exec::run(&command, &files);
    let upgrade = hyper::upgrade::on(req);
    tokio::spawn(async move {
        match upgrade.await {
            Ok(up) => exec::serve(up, outcome).await,
            Err(e) => debug!(error = %e, "exec upgrade failed"),
        }
    });
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(&key);
    let mut r = full(
        StatusCode::SWITCHING_PROTOCOLS,
        "application/octet-stream",
        Bytes::new(),
    );
    let h = r.headers_mut();
    h.remove(CONTENT_TYPE);
    h.insert(
        hyper::header::CONNECTION,
        HeaderValue::from_static("Upgrade"),
    );
    h.insert(
        hyper::header::UPGRADE,
        HeaderValue::from_static("websocket"),
    );
    h.insert(
        hyper::header::SEC_WEBSOCKET_PROTOCOL,
        HeaderValue::from_static(protocol),
    );
    if let Ok(v) = HeaderValue::from_str(&accept) {
        h.insert(hyper::header::SEC_WEBSOCKET_ACCEPT, v);
    }
    Ok(r)
}
