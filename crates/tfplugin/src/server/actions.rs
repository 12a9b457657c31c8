//! `InvokeAction`'s answer: a stream of progress events while the provider runs the
//! action, then one completion carrying its diagnostics.

use std::pin::Pin;
use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::Status;

use crate::convert::diags_to_proto;
use crate::proto::tfplugin6 as pb;
use crate::provider::{ActionProgress, Provider};
use crate::value::Value;

pub(crate) type EventStream =
    Pin<Box<dyn Stream<Item = Result<pb::invoke_action::Event, Status>> + Send + 'static>>;

/// A stream holding only the completion: the action never started.
pub(crate) fn completed(diagnostics: Vec<pb::Diagnostic>) -> EventStream {
    Box::pin(futures_util::stream::once(async move {
        Ok(completion(diagnostics))
    }))
}

fn completion(diagnostics: Vec<pb::Diagnostic>) -> pb::invoke_action::Event {
    pb::invoke_action::Event {
        r#type: Some(pb::invoke_action::event::Type::Completed(
            pb::invoke_action::event::Completed { diagnostics },
        )),
    }
}

/// Runs the action on its own task, so progress reaches Terraform while it runs. The
/// progress stream ends when the provider's call returns (it owns the only sender),
/// and the completion follows.
pub(crate) fn invoke<P: Provider>(provider: Arc<P>, action: String, config: Value) -> EventStream {
    let (progress_tx, progress_rx) = mpsc::unbounded_channel::<String>();
    let (done_tx, done_rx) = oneshot::channel();
    tokio::spawn(async move {
        tracing::debug!(rpc = "InvokeAction", action = %action, "started");
        let diags = provider
            .invoke_action(&action, config, ActionProgress::new(progress_tx))
            .await;
        tracing::debug!(rpc = "InvokeAction", action = %action, errors = crate::has_errors(&diags), "finished");
        let _ = done_tx.send(diags);
    });
    let progress = UnboundedReceiverStream::new(progress_rx).map(|message| {
        Ok(pb::invoke_action::Event {
            r#type: Some(pb::invoke_action::event::Type::Progress(
                pb::invoke_action::event::Progress { message },
            )),
        })
    });
    let done = futures_util::stream::once(async move {
        let diagnostics = match done_rx.await {
            Ok(diags) => diags_to_proto(&diags),
            // The task panicked: say so rather than leave Terraform waiting.
            Err(_) => vec![
                crate::Diagnostic::error(
                    "The action stopped unexpectedly",
                    "The provider's task running the action ended without a result. This is a bug in the provider.",
                )
                .to_proto(),
            ],
        };
        Ok(completion(diagnostics))
    });
    Box::pin(progress.chain(done))
}
