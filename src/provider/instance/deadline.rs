//! Timeouts as cancellation, and engine errors as diagnostics.

use std::time::Duration;

use tfplugin::{AttributePath, Diagnostic};
use tokio_util::sync::CancellationToken;

use kudo_engine::engine::{self};

use crate::provider::Session;

pub(super) fn engine_diagnostic(
    session: &Session,
    summary: &str,
    e: &engine::EngineError,
) -> Diagnostic {
    with_template_attribute(session.engine_error(summary, e), e)
}

/// [`engine_diagnostic`] of a failed destroy.
pub(super) fn destroy_diagnostic(
    session: &Session,
    summary: &str,
    e: &engine::EngineError,
) -> Diagnostic {
    with_template_attribute(session.destroy_error(summary, e), e)
}

pub(super) fn with_template_attribute(d: Diagnostic, e: &engine::EngineError) -> Diagnostic {
    // A rendered object the cluster rejected: its values come from the parameters.
    match &e.template {
        Some(_) => d.with_attribute(AttributePath::attribute("parameters")),
        None => d,
    }
}

/// A cancellation token that fires when Terraform stops the provider or after `limit`
/// (the `timeouts` block). Cancelling, rather than dropping the work, lets the engine
/// say which object it was still waiting for.
pub(super) struct Deadline {
    pub(super) token: CancellationToken,
    pub(super) timer: tokio::task::JoinHandle<()>,
    pub(super) limit: Duration,
}

/// A deadline no longer needed (the work ended, however) stops its timer, whichever
/// way its holder returns.
impl Drop for Deadline {
    fn drop(&mut self) {
        self.timer.abort();
    }
}

impl Deadline {
    pub(super) fn new(stop: &CancellationToken, limit: Duration) -> Deadline {
        let token = stop.child_token();
        let fire = token.clone();
        let timer = tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            fire.cancel();
        });
        Deadline {
            token,
            timer,
            limit,
        }
    }

    /// Says which limit cut the work short, when one did.
    pub(super) fn explain<T>(
        self,
        stop: &CancellationToken,
        what: &str,
        result: &mut Result<T, engine::EngineError>,
    ) {
        self.explain_limit(stop, what, "`timeouts`", result)
    }

    /// [`Deadline::explain`] for a limit set by `setting` (for messages).
    pub(super) fn explain_limit<T>(
        self,
        stop: &CancellationToken,
        what: &str,
        setting: &str,
        result: &mut Result<T, engine::EngineError>,
    ) {
        self.timer.abort();
        if let Err(e) = result
            && e.is_cancelled()
            && !stop.is_cancelled()
        {
            *e = timed_out(e.clone(), what, setting, self.limit);
        }
    }
}

/// `e` said to have run out of the `limit` that `setting` allows `what` (for an engine
/// action that keeps its own time limit and reports running out of it).
pub(super) fn timed_out(
    e: engine::EngineError,
    what: &str,
    setting: &str,
    limit: Duration,
) -> engine::EngineError {
    e.context(format!(
        "{what} did not finish within the {}s allowed by {setting} (raise the timeout or fix what is not becoming ready)",
        limit.as_secs(),
    ))
}
