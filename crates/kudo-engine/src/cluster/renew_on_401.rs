//! The credential of every request, and the one retry after the API server refuses it.
//!
//! Every request the client makes (reads, applies, watches, exec, logs) passes through
//! this layer, which sets its `Authorization` from the [`CredentialCache`]. When the
//! server answers 401 the credential was revoked before the expiry it stated (a rotated
//! ServiceAccount token, an ended cloud session, a plugin that states no expiry): the
//! layer renews it (runs the plugin again, reads the token file again) and sends the
//! request once more. Only a second 401 reaches the caller. client-go renews after a
//! 401 too (`Authenticator.maybeRefreshCreds`) but answers the 401; a provider in the
//! middle of an apply has no user to run the command again, so the request is repeated.

use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::header::{AUTHORIZATION, HeaderValue};
use http::{Request, Response, StatusCode};
use kube::client::Body;
use tower::{BoxError, Layer, Service, ServiceExt as _};

use super::credential::Credential;
use super::credential_cache::CredentialCache;

/// Adds [`RenewOn401`] around a service. The service must be cheap to clone (a
/// `Buffer`): the retry is sent through a clone once the first answer is in.
#[derive(Clone)]
pub(crate) struct RenewOn401Layer {
    cache: Arc<CredentialCache>,
}

impl RenewOn401Layer {
    pub(crate) fn new(cache: Arc<CredentialCache>) -> RenewOn401Layer {
        RenewOn401Layer { cache }
    }
}

impl<S> Layer<S> for RenewOn401Layer {
    type Service = RenewOn401<S>;

    fn layer(&self, inner: S) -> RenewOn401<S> {
        RenewOn401 {
            inner,
            cache: self.cache.clone(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct RenewOn401<S> {
    inner: S,
    cache: Arc<CredentialCache>,
}

/// `request` with `credential`'s token, when it has one (a client certificate is in
/// the TLS connection instead).
fn authorize(request: &mut Request<Body>, credential: &Credential) -> Result<(), BoxError> {
    if let Some(token) = credential.token() {
        let mut value = HeaderValue::try_from(format!("Bearer {token}")).map_err(|_| {
            BoxError::from("the credential's token cannot be sent in an HTTP header (it has characters a header may not)")
        })?;
        value.set_sensitive(true);
        request.headers_mut().insert(AUTHORIZATION, value);
    }
    Ok(())
}

/// A copy of `request` to send again, when its body can be copied (every request the
/// client builds has its body in memory; a streamed one cannot be sent twice).
fn copy(request: &Request<Body>) -> Option<Request<Body>> {
    let body = request.body().try_clone()?;
    let mut copy = Request::new(body);
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    *copy.extensions_mut() = request.extensions().clone();
    Some(copy)
}

impl<S, B> Service<Request<Body>> for RenewOn401<S>
where
    S: Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Response<B>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: Request<Body>) -> Self::Future {
        // The service `poll_ready` readied is the one to call first; the clone left in
        // its place readies itself for the next request.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let cache = self.cache.clone();
        Box::pin(async move {
            let credential = cache.get().await?;
            let again = copy(&request);
            authorize(&mut request, &credential)?;
            let answer = inner.call(request).await.map_err(Into::into)?;
            // Only a token can be renewed here: a client certificate is part of the
            // connection, which outlives this request.
            if answer.status() != StatusCode::UNAUTHORIZED || credential.token().is_none() {
                return Ok(answer);
            }
            let Some(mut again) = again else {
                tracing::debug!("refused (HTTP 401), and the request's body cannot be sent again");
                return Ok(answer);
            };
            drop(answer);
            let renewed = cache.renew(&credential).await?;
            authorize(&mut again, &renewed)?;
            tracing::debug!(
                method = %again.method(),
                uri = %again.uri(),
                "sending the request refused with HTTP 401 again, with the new credential"
            );
            let answer = inner
                .ready()
                .await
                .map_err(Into::into)?
                .call(again)
                .await
                .map_err(Into::into)?;
            if answer.status() == StatusCode::UNAUTHORIZED {
                tracing::warn!(
                    source = %cache.describe(),
                    "the Kubernetes API server refused the new credential too (HTTP 401)"
                );
            }
            Ok(answer)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::credential_cache::{Fetch, FetchError};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::SystemTime;

    /// Tokens `token-1`, `token-2`, ... one per run, without expiry.
    struct Numbered(AtomicU64);

    impl Fetch for Arc<Numbered> {
        fn fetch<'a>(
            &'a self,
            _previous: Option<&'a Credential>,
        ) -> BoxFuture<'a, Result<Credential, FetchError>> {
            Box::pin(async move {
                let run = self.0.fetch_add(1, Ordering::SeqCst) + 1;
                Ok(Credential::new(
                    Some(format!("token-{run}")),
                    None,
                    None,
                    SystemTime::now(),
                ))
            })
        }

        fn describe(&self) -> String {
            "the credential plugin `numbered`".into()
        }
    }

    /// The `Authorization` and body of a request.
    type Seen = (String, Vec<u8>);

    /// An API server that accepts only the tokens in `accepted`, recording what every
    /// request carried.
    #[derive(Clone)]
    struct Server {
        accepted: Arc<Vec<&'static str>>,
        seen: Arc<Mutex<Vec<Seen>>>,
    }

    impl Service<Request<Body>> for Server {
        type Response = Response<()>;
        type Error = BoxError;
        type Future = BoxFuture<'static, Result<Response<()>, BoxError>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: Request<Body>) -> Self::Future {
            let this = self.clone();
            Box::pin(async move {
                let auth = request
                    .headers()
                    .get(AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                let body = request.into_body().collect_bytes().await?.to_vec();
                let ok = this.accepted.iter().any(|t| auth == format!("Bearer {t}"));
                this.seen
                    .lock()
                    .map_err(|e| e.to_string())?
                    .push((auth, body));
                let status = match ok {
                    true => StatusCode::OK,
                    false => StatusCode::UNAUTHORIZED,
                };
                Ok(Response::builder().status(status).body(())?)
            })
        }
    }

    fn stack(accepted: &[&'static str]) -> (RenewOn401<Server>, Arc<Numbered>, Server) {
        let source = Arc::new(Numbered(AtomicU64::new(0)));
        let cache = Arc::new(CredentialCache::new(Box::new(source.clone())));
        let server = Server {
            accepted: Arc::new(accepted.to_vec()),
            seen: Arc::default(),
        };
        (
            RenewOn401Layer::new(cache).layer(server.clone()),
            source,
            server,
        )
    }

    fn post() -> Request<Body> {
        Request::post("/api/v1/namespaces/ns/configmaps")
            .body(Body::from(b"{\"kind\":\"ConfigMap\"}".to_vec()))
            .expect("a request")
    }

    #[tokio::test]
    async fn a_refused_request_is_sent_again_with_a_new_credential() {
        // token-1 was revoked; the plugin's next run gives token-2.
        let (mut svc, source, server) = stack(&["token-2"]);
        let answer = svc.ready().await.unwrap().call(post()).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(
            source.0.load(Ordering::SeqCst),
            2,
            "run again after the 401"
        );
        let seen = server.seen.lock().unwrap().clone();
        let body = b"{\"kind\":\"ConfigMap\"}".to_vec();
        assert_eq!(
            seen,
            vec![
                ("Bearer token-1".to_string(), body.clone()),
                ("Bearer token-2".to_string(), body)
            ],
            "the same request, with the new token"
        );
        // The next request uses the new credential at once.
        let answer = svc.ready().await.unwrap().call(post()).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(source.0.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_second_refusal_is_the_answer() {
        let (mut svc, source, server) = stack(&[]);
        let answer = svc.ready().await.unwrap().call(post()).await.unwrap();
        assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            source.0.load(Ordering::SeqCst),
            2,
            "one renewal, not a loop"
        );
        assert_eq!(server.seen.lock().unwrap().len(), 2, "sent twice, not more");
    }
}
