//! Waiting until an applied object is healthy, by watching it (see
//! `cluster::watch`): each change the server reports is judged by the health rules.

use tokio_util::sync::CancellationToken;

use super::EngineError;
use super::health::Health;
use super::readiness::{HealthPolicy, judge};
use crate::cluster::{Cluster, ObjectRef, Waited};

/// Follows `r` until `policy` says healthy (Ok), fatal (Err, fatal) or `cancel` fires
/// (Err, not fatal, with the last thing we were waiting for).
pub(crate) async fn wait_healthy(
    cluster: &Cluster,
    r: &ObjectRef,
    policy: &HealthPolicy,
    cancel: &CancellationToken,
) -> Result<(), EngineError> {
    let mut last = String::new();
    let waited = cluster
        .watch_until(r, cancel, |seen| {
            let verdict = match seen {
                Some(obj) => judge(obj, policy),
                None => Health::Progressing("object does not exist (yet)".into()),
            };
            match verdict {
                Health::Healthy => Some(Ok(())),
                Health::Fatal(msg) => Some(Err(EngineError::fatal(msg).with_object(r))),
                Health::Progressing(msg) => {
                    if msg != last {
                        tracing::info!(object = %r, waiting_for = %msg, "waiting for object to become healthy");
                        last = msg;
                    }
                    None
                }
            }
        })
        .await
        .map_err(|e| EngineError::from(e).with_object(r))?;
    match waited {
        Waited::Done(verdict) => {
            if verdict.is_ok() {
                tracing::debug!(object = %r, "healthy");
            }
            verdict
        }
        Waited::Cancelled => {
            // Cancelled before the server answered at all: say so rather than print an
            // empty "last seen".
            if last.is_empty() {
                last = "no answer from the API server yet".into();
            }
            Err(EngineError::cancelled(format!(
                "cancelled while waiting for the object to become healthy (last seen: {last})"
            ))
            .with_object(r))
        }
    }
}
