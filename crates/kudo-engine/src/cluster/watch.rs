//! Waiting on one object by watching it instead of reading it again and again.
//!
//! A wait follows the object through kube-runtime's single-object watcher
//! ([`watch_object`]: a field selector `metadata.name=<name>` in the object's namespace),
//! at the version the cluster serves the kind, with the same discovery and dynamic
//! objects as every other call in this module. The watcher lists first, which returns
//! the object as it is and the resourceVersion to watch from; an object that already
//! satisfies the wait therefore costs one request, and only one that does not opens a
//! watch, which then brings each change as it happens. A wait of minutes costs a list
//! and a watch instead of a read every two seconds.
//!
//! The watcher resumes a broken watch from the last resourceVersion it saw and lists
//! again after `410 Gone`, but retries at once; between failed attempts we wait with a
//! growing delay (honouring `Retry-After`). Where watching cannot work — the kind is not
//! served, list or watch is refused (403, 405, ...), the server sends no
//! resourceVersion, or the watch keeps failing — the wait reads the object with GET on
//! the polling schedule ([`super::Backoff`]) instead, so it never hangs on a watch that
//! will not come and never spins on one that fails.
//!
//! One case stays with the watcher: a watch the server ends cleanly is opened again at
//! once, as client-go's reflector does. API servers end a watch only at the timeout the
//! watcher asks for (290 s), so that is one request every few minutes; a proxy that
//! closed every watch the moment it opened would make the watcher re-open it without
//! pause until the wait is cancelled.

use std::time::Duration;

use futures::StreamExt;
use kube::api::DynamicObject;
use kube::api::{WatchEvent, WatchParams};
use kube::discovery::ApiResource;
use kube::runtime::watcher::{self, watch_object};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::retry::{self, Verdict};
use super::{Backoff, Cluster, ClusterError, ObjectRef};

/// How a wait ended when nothing went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Waited<T> {
    /// The judge decided.
    Done(T),
    /// The cancellation token fired first.
    Cancelled,
}

/// How long a watch from a written version asks the server to keep it open, as
/// kube-runtime's watcher asks.
const WATCH_TIMEOUT_SECS: u32 = 290;
/// Delay before the first retry of a failed list or watch; doubles up to `MAX_DELAY`.
const FIRST_DELAY: Duration = Duration::from_millis(100);
const MAX_DELAY: Duration = Duration::from_secs(5);
/// A server asking for longer than this is treated as asking for this.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
/// Failed list/watch attempts in a row (without the object being seen in between)
/// after which the wait stops watching and reads the object instead: as many as one
/// request gets in [`retry::with_retry`].
const FAILURES_BEFORE_POLLING: u32 = 8;

/// What a watcher error means for the wait.
enum Failure {
    /// Worth another try after a delay (the server's, when it named one).
    Transient(kube::Error, Option<Duration>),
    /// Watching this kind, here, will not work; read the object instead.
    Unwatchable(String),
}

fn triage(e: watcher::Error) -> Failure {
    let request_error = match e {
        watcher::Error::InitialListFailed(e) | watcher::Error::WatchStartFailed(e) => e,
        // Trouble inside an open watch (a broken connection, an ERROR event; for 410 the
        // watcher lists again by itself): the watcher resumes or starts over, so it is
        // worth another try whatever it was. Repeated, it ends in reading instead.
        watcher::Error::WatchFailed(e) => return Failure::Transient(e, None),
        watcher::Error::WatchError(status) => {
            return Failure::Transient(kube::Error::Api(status), None);
        }
        watcher::Error::NoResourceVersion => {
            return Failure::Unwatchable(
                "the server's list carries no resourceVersion to watch from".into(),
            );
        }
    };
    match retry::classify(&request_error) {
        Verdict::RetryAfter(asked) => Failure::Transient(request_error, asked),
        // The connection broke while the answer was read.
        Verdict::Fail if matches!(request_error, kube::Error::ReadEvents(_)) => {
            Failure::Transient(request_error, None)
        }
        // Refused (403), not offered for this kind (405), the kind is gone (404), ...
        Verdict::Fail => Failure::Unwatchable(request_error.to_string()),
    }
}

/// Whether the object that had `uid` is gone, judging by what the wait sees now: nothing
/// under the name, or an object with another uid (someone created a new one after ours
/// went). Without a uid only absence counts.
pub(crate) fn is_gone(seen: Option<&Value>, uid: Option<&str>) -> bool {
    match (seen, uid) {
        (None, _) => true,
        (Some(obj), Some(uid)) => obj.pointer("/metadata/uid").and_then(Value::as_str) != Some(uid),
        (Some(_), None) => false,
    }
}

impl Cluster {
    /// Follows the object `r` names until `judge` returns `Some`, or `cancel` fires.
    /// `judge` sees the object as the cluster serves it (apiVersion and kind filled in),
    /// or `None` while nothing of that name exists; it is called once with the state at
    /// the start and again on each change.
    pub(crate) async fn watch_until<T>(
        &self,
        r: &ObjectRef,
        cancel: &CancellationToken,
        mut judge: impl FnMut(Option<&Value>) -> Option<T>,
    ) -> Result<Waited<T>, ClusterError> {
        let (api, ar) = match self.api_and_resource(r).await {
            Ok(found) => found,
            // Not served (now): nothing to watch, but a read still answers "absent", and
            // a kind that appears later (a CRD being established) is found by reads.
            Err(ClusterError::UnknownKind { .. }) => {
                return self.poll_until(r, cancel, judge).await;
            }
            Err(e) => return Err(e),
        };
        let mut sightings = watch_object(api, &r.name).boxed();
        let mut failures = 0;
        // Not reset when the object is seen: a server that lists fine but breaks every
        // watch (410 each time, say) is then asked at most every MAX_DELAY.
        let mut delay = FIRST_DELAY;
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Ok(Waited::Cancelled),
                next = sightings.next() => next,
            };
            let error = match next {
                Some(Ok(seen)) => {
                    failures = 0;
                    let seen = seen.map(|o| served_json(o, &ar, r)).transpose()?;
                    if let Some(done) = judge(seen.as_ref()) {
                        return Ok(Waited::Done(done));
                    }
                    continue;
                }
                Some(Err(e)) => e,
                // The watcher's stream does not end; if it ever did, reads still finish.
                None => return self.poll_until(r, cancel, judge).await,
            };
            match triage(error) {
                Failure::Transient(e, asked) => {
                    failures += 1;
                    if failures >= FAILURES_BEFORE_POLLING {
                        tracing::info!(object = %r, error = %e, "watching keeps failing; reading the object periodically instead");
                        return self.poll_until(r, cancel, judge).await;
                    }
                    let wait = asked.map_or(delay, |d| d.min(MAX_RETRY_AFTER));
                    tracing::debug!(object = %r, error = %e, attempt = failures, wait_ms = wait.as_millis() as u64, "watch failed, retrying");
                    tokio::select! {
                        _ = cancel.cancelled() => return Ok(Waited::Cancelled),
                        _ = tokio::time::sleep(wait) => {}
                    }
                    delay = (delay * 2).min(MAX_DELAY);
                }
                Failure::Unwatchable(why) => {
                    tracing::info!(object = %r, reason = %why, "cannot watch; reading the object periodically instead");
                    return self.poll_until(r, cancel, judge).await;
                }
            }
        }
    }

    /// [`Cluster::watch_until`] for an object last seen at `resource_version` (the
    /// server's answer to a write of it, judged already by the caller): the watch starts
    /// from that version, so no list goes first and every change after it is seen.
    /// Whatever the server will not do from there (a version too old for it, 410; a
    /// refused or broken watch; the watch's end) is followed as [`Cluster::watch_until`]
    /// follows it, from a fresh list; so is a wait with no version (`None`).
    pub(crate) async fn watch_until_after<T>(
        &self,
        r: &ObjectRef,
        resource_version: Option<&str>,
        cancel: &CancellationToken,
        mut judge: impl FnMut(Option<&Value>) -> Option<T>,
    ) -> Result<Waited<T>, ClusterError> {
        let Some(resource_version) = resource_version else {
            return self.watch_until(r, cancel, judge).await;
        };
        let Ok((api, ar)) = self.api_and_resource(r).await else {
            return self.watch_until(r, cancel, judge).await;
        };
        let params = WatchParams::default()
            .fields(&format!("metadata.name={}", r.name))
            .timeout(WATCH_TIMEOUT_SECS);
        let started = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Ok(Waited::Cancelled),
            started = api.watch(&params, resource_version) => started,
        };
        match started {
            Ok(events) => {
                let mut events = events.boxed();
                loop {
                    let next = tokio::select! {
                        biased;
                        _ = cancel.cancelled() => return Ok(Waited::Cancelled),
                        next = events.next() => next,
                    };
                    let seen = match next {
                        Some(Ok(WatchEvent::Added(o) | WatchEvent::Modified(o))) => {
                            Some(served_json(o, &ar, r)?)
                        }
                        Some(Ok(WatchEvent::Deleted(_))) => None,
                        Some(Ok(WatchEvent::Bookmark(_))) => continue,
                        Some(Ok(WatchEvent::Error(status))) => {
                            tracing::debug!(object = %r, code = status.code, "watch from the written version ended; listing");
                            break;
                        }
                        Some(Err(e)) => {
                            tracing::debug!(object = %r, error = %e, "watch from the written version failed; listing");
                            break;
                        }
                        None => break,
                    };
                    if let Some(done) = judge(seen.as_ref()) {
                        return Ok(Waited::Done(done));
                    }
                }
            }
            // Too old a version: the watcher lists and watches from the list's.
            Err(kube::Error::Api(s)) if s.code == 410 => {
                tracing::debug!(object = %r, "the written version is gone from the watch cache; listing")
            }
            Err(e) => match triage(watcher::Error::WatchStartFailed(e)) {
                // Refused (403, 405, ...): the watcher would only be refused again.
                Failure::Unwatchable(why) => {
                    tracing::info!(object = %r, reason = %why, "cannot watch; reading the object periodically instead");
                    return self.poll_until(r, cancel, judge).await;
                }
                Failure::Transient(e, _) => {
                    tracing::debug!(object = %r, error = %e, "cannot watch from the written version; listing")
                }
            },
        }
        self.watch_until(r, cancel, judge).await
    }

    /// [`Cluster::watch_until`] by reading the object on the polling schedule.
    async fn poll_until<T>(
        &self,
        r: &ObjectRef,
        cancel: &CancellationToken,
        mut judge: impl FnMut(Option<&Value>) -> Option<T>,
    ) -> Result<Waited<T>, ClusterError> {
        let mut backoff = Backoff::new();
        loop {
            let seen = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Ok(Waited::Cancelled),
                seen = self.get(r) => seen?,
            };
            if let Some(done) = judge(seen.as_ref()) {
                return Ok(Waited::Done(done));
            }
            if !backoff.wait(cancel).await {
                return Ok(Waited::Cancelled);
            }
        }
    }

    /// Waits until the object that had `uid` is gone (see [`is_gone`]).
    /// `after`: the resourceVersion the delete's answer had (see
    /// [`Cluster::watch_until_after`]).
    pub(crate) async fn wait_gone(
        &self,
        r: &ObjectRef,
        uid: Option<&str>,
        after: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<(), ClusterError> {
        let gone = |seen: Option<&Value>| is_gone(seen, uid).then_some(());
        match self.watch_until_after(r, after, cancel, gone).await? {
            Waited::Done(()) => {
                tracing::debug!(object = %r, "deleted");
                Ok(())
            }
            Waited::Cancelled => Err(ClusterError::Cancelled {
                what: format!("waiting for {r} to be deleted"),
            }),
        }
    }
}

/// A watched object as JSON with the apiVersion and kind it is served as: list items
/// carry no type information, and the health rules need it.
fn served_json(obj: DynamicObject, ar: &ApiResource, r: &ObjectRef) -> Result<Value, ClusterError> {
    let mut v = super::to_json(&obj, r)?;
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), Value::String(ar.api_version.clone()));
        m.insert("kind".into(), Value::String(ar.kind.clone()));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_is_gone_when_absent_or_replaced() {
        let old = json!({"metadata": {"name": "x", "uid": "u1"}});
        let new = json!({"metadata": {"name": "x", "uid": "u2"}});
        assert!(is_gone(None, Some("u1")));
        assert!(is_gone(None, None));
        assert!(!is_gone(Some(&old), Some("u1")));
        assert!(
            is_gone(Some(&new), Some("u1")),
            "a re-created object is another one"
        );
        assert!(
            !is_gone(Some(&new), None),
            "without a uid only absence counts"
        );
    }

    fn status(code: u16) -> Box<kube::core::Status> {
        kube::core::Status::failure("x", "Reason")
            .with_code(code)
            .boxed()
    }

    #[test]
    fn failures_are_retried_or_end_watching() {
        let transient = |e| matches!(triage(e), Failure::Transient(..));
        let api = |code| kube::Error::Api(status(code));
        assert!(transient(watcher::Error::WatchError(status(410))));
        assert!(transient(watcher::Error::WatchError(status(500))));
        assert!(transient(watcher::Error::InitialListFailed(api(503))));
        assert!(transient(watcher::Error::WatchStartFailed(api(429))));
        assert!(transient(watcher::Error::WatchFailed(
            kube::Error::ReadEvents(std::io::ErrorKind::ConnectionReset.into())
        )));
        // Refused or not offered: reading is the way left.
        assert!(!transient(watcher::Error::InitialListFailed(api(403))));
        assert!(!transient(watcher::Error::WatchStartFailed(api(405))));
        assert!(!transient(watcher::Error::InitialListFailed(api(404))));
        assert!(!transient(watcher::Error::NoResourceVersion));
    }
}
