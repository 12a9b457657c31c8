//! Bounded retries for transient API failures: throttling (429, honouring the server's
//! retry-after), server errors (5xx) and broken connections. Anything else is the
//! caller's problem and returned at once.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

// Eight attempts, about 16 s of backoff at most (plus what the server asks for): a
// request that fails 15% of the time fails all eight about once in 400 million, so a
// destroy's few thousand requests get through; a server that is really down is still
// reported in well under a minute.
const ATTEMPTS: u32 = 8;
const FIRST_DELAY: Duration = Duration::from_millis(200);
const MAX_DELAY: Duration = Duration::from_secs(5);
// A server asking for more than this is effectively down; give up rather than stall apply.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// What to do after a failed attempt.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Fail,
    RetryAfter(Option<Duration>),
}

pub(crate) fn classify(err: &kube::Error) -> Verdict {
    match err {
        kube::Error::Api(status) if status.code == 429 => {
            let secs = status
                .details
                .as_ref()
                .map(|d| d.retry_after_seconds)
                .unwrap_or(0);
            Verdict::RetryAfter((secs > 0).then(|| Duration::from_secs(u64::from(secs))))
        }
        kube::Error::Api(status)
            if status.code >= 500
                && status.code != 501
                && !super::error::rejects_content(&status.message) =>
        {
            Verdict::RetryAfter(None)
        }
        // A credential plugin that failed says why at once; running it seven more
        // times would only delay that.
        kube::Error::Auth(_) => Verdict::Fail,
        kube::Error::Service(e) if super::credentials::is_credential_failure(e.as_ref()) => {
            Verdict::Fail
        }
        // A certificate the TLS handshake refuses is refused the same way every time.
        kube::Error::HyperError(_) | kube::Error::Service(_)
            if super::is_certificate_problem(&super::error_chain(err)) =>
        {
            Verdict::Fail
        }
        kube::Error::HyperError(_) | kube::Error::Service(_) => Verdict::RetryAfter(None),
        _ => Verdict::Fail,
    }
}

/// Whether the error is a failure to talk to the server at all (as opposed to an answer).
pub(crate) fn is_connection_error(err: &kube::Error) -> bool {
    matches!(err, kube::Error::HyperError(_) | kube::Error::Service(_))
}

/// Outcome of `with_retry` when it does not return a value.
pub(crate) enum RetryError {
    Kube(kube::Error),
    Cancelled,
}

/// Runs `op` until it succeeds, fails permanently, runs out of attempts, or `cancel` fires.
pub(crate) async fn with_retry<T, F, Fut>(
    what: &str,
    cancel: Option<&CancellationToken>,
    mut op: F,
) -> Result<T, RetryError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut delay = FIRST_DELAY;
    let mut attempt = 1;
    loop {
        let outcome = match cancel {
            Some(c) => tokio::select! {
                r = op() => r,
                _ = c.cancelled() => return Err(RetryError::Cancelled),
            },
            None => op().await,
        };
        let err = match outcome {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let wait = match classify(&err) {
            Verdict::RetryAfter(_) if attempt >= ATTEMPTS => return Err(RetryError::Kube(err)),
            Verdict::Fail => return Err(RetryError::Kube(err)),
            Verdict::RetryAfter(Some(server)) => server.min(MAX_RETRY_AFTER),
            Verdict::RetryAfter(None) => delay,
        };
        tracing::debug!(what, attempt, error = %err, wait_ms = wait.as_millis() as u64, "transient API error, retrying");
        match cancel {
            Some(c) => {
                tokio::select! {
                    _ = c.cancelled() => return Err(RetryError::Cancelled),
                    _ = tokio::time::sleep(wait) => {}
                }
            }
            None => tokio::time::sleep(wait).await,
        }
        delay = (delay * 2).min(MAX_DELAY);
        attempt += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn api(code: u16, retry_after: u32) -> kube::Error {
        let mut st = Status::failure("x", "Reason").with_code(code);
        if retry_after > 0 {
            st.details = Some(
                serde_json::from_value(serde_json::json!({ "retryAfterSeconds": retry_after }))
                    .unwrap(),
            );
        }
        kube::Error::Api(st.boxed())
    }

    #[test]
    fn classification() {
        assert_eq!(
            classify(&api(429, 3)),
            Verdict::RetryAfter(Some(Duration::from_secs(3)))
        );
        assert_eq!(classify(&api(429, 0)), Verdict::RetryAfter(None));
        assert_eq!(classify(&api(503, 0)), Verdict::RetryAfter(None));
        assert_eq!(classify(&api(501, 0)), Verdict::Fail);
        assert_eq!(classify(&api(404, 0)), Verdict::Fail);
        assert_eq!(classify(&api(409, 0)), Verdict::Fail);
    }

    #[tokio::test(start_paused = true)]
    async fn retries_transient_then_succeeds_and_gives_up_on_permanent() {
        let calls = AtomicU32::new(0);
        let r = with_retry("t", None, || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move { if n < 2 { Err(api(503, 0)) } else { Ok(n) } }
        })
        .await;
        assert!(matches!(r, Ok(2)));

        let calls = AtomicU32::new(0);
        let r: Result<(), _> = with_retry("t", None, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(api(403, 0)) }
        })
        .await;
        assert!(matches!(r, Err(RetryError::Kube(_))));
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        let calls = AtomicU32::new(0);
        let r: Result<(), _> = with_retry("t", None, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(api(500, 0)) }
        })
        .await;
        assert!(matches!(r, Err(RetryError::Kube(_))));
        assert_eq!(calls.load(Ordering::SeqCst), ATTEMPTS);
    }
}
