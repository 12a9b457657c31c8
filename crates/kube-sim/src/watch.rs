//! `?watch=true`: replay from a resourceVersion (or synthetic ADDED events for the current
//! state), then stream live events as newline-delimited JSON until `timeoutSeconds`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::api_error::{ApiError, ApiResult};
use crate::ops::{matching, present};
use crate::resources::ResourceType;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::shared::Shared;
use crate::store::Event;

pub struct WatchParams {
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub resource_version: Option<String>,
    pub timeout: Duration,
    pub bookmarks: bool,
    pub send_initial_events: bool,
}

fn line(kind: &str, object: &Value) -> Bytes {
    let mut s = json!({"type": kind, "object": object}).to_string();
    s.push('\n');
    Bytes::from(s)
}

fn bookmark(rt: &ResourceType, rv: u64, initial_end: bool) -> Bytes {
    let mut md = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        md["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    line(
        "BOOKMARK",
        &json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": md}),
    )
}

/// Decides whether an event reaches a watcher, and as which event type.
type EventFilter = dyn Fn(&Event) -> Option<&'static str> + Send;

/// Starts a watch; the receiver yields the response body chunks.
pub fn start(
    shared: Arc<Shared>,
    rt: ResourceType,
    p: WatchParams,
) -> ApiResult<mpsc::Receiver<Bytes>> {
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let matches = {
        let rt = rt.clone();
        let (ns, labels, fields) = (p.namespace.clone(), p.labels.clone(), p.fields.clone());
        move |e: &Event| -> Option<&'static str> {
            let ours = e.key.group == rt.storage_group()
                && e.key.plural == rt.plural
                && ns
                    .as_deref()
                    .is_none_or(|n| !rt.namespaced || e.key.namespace == n);
            if !ours {
                return None;
            }
            let selected = |o: &Value| labels.matches(o) && fields.matches(o);
            let now = selected(&e.object);
            match (&e.previous, now) {
                (Some(prev), true) if !selected(prev) => Some("ADDED"),
                (Some(prev), false) if selected(prev) => Some("DELETED"),
                (_, true) => Some(e.kind.as_str()),
                (_, false) => None,
            }
        }
    };
    let mut initial = Vec::new();
    let mut expired = false;
    let (rx_events, start_rv) = {
        let store = shared.store();
        let rv = match p.resource_version.as_deref() {
            None | Some("") | Some("0") => None,
            Some(s) => Some(
                s.parse::<u64>()
                    .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {s:?}")))?,
            ),
        };
        match rv {
            Some(rv) if !p.send_initial_events => {
                if rv < store.oldest_resumable_rv() {
                    let status = ApiError::gone(format!(
                        "too old resource version: {rv} ({})",
                        store.oldest_resumable_rv() + 1
                    ))
                    .to_status();
                    initial.push(line("ERROR", &status));
                    expired = true;
                } else {
                    for e in store.events_since(rv) {
                        if let Some(kind) = matches(e) {
                            initial.push(line(kind, &present(&e.object, &rt)));
                        }
                    }
                }
            }
            _ => {
                for (_, obj) in matching(&store, &rt, p.namespace.as_deref(), &p.labels, &p.fields)
                {
                    initial.push(line("ADDED", &present(obj, &rt)));
                }
                if p.send_initial_events {
                    initial.push(bookmark(&rt, store.current_rv(), true));
                }
            }
        }
        (store.events_tx.subscribe(), store.current_rv())
    };
    tokio::spawn(stream(
        shared,
        rt,
        p,
        tx,
        initial,
        rx_events,
        start_rv,
        expired,
        Box::new(matches),
    ));
    Ok(rx)
}

#[allow(clippy::too_many_arguments)]
async fn stream(
    shared: Arc<Shared>,
    rt: ResourceType,
    p: WatchParams,
    tx: mpsc::Sender<Bytes>,
    initial: Vec<Bytes>,
    mut events: broadcast::Receiver<Arc<Event>>,
    start_rv: u64,
    stop_after_initial: bool,
    matches: Box<EventFilter>,
) {
    for l in initial {
        if tx.send(l).await.is_err() {
            return;
        }
    }
    if stop_after_initial {
        return;
    }
    let deadline = tokio::time::sleep(p.timeout);
    tokio::pin!(deadline);
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    ticker.tick().await;
    loop {
        tokio::select! {
            _ = &mut deadline => return,
            _ = tx.closed() => return,
            _ = ticker.tick(), if p.bookmarks => {
                let rv = shared.store().current_rv();
                if tx.send(bookmark(&rt, rv, false)).await.is_err() {
                    return;
                }
            }
            ev = events.recv() => match ev {
                Ok(e) => {
                    if e.rv <= start_rv {
                        continue;
                    }
                    let Some(kind) = matches(&e) else { continue };
                    if tx.send(line(kind, &present(&e.object, &rt))).await.is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let status = ApiError::gone("watch fell behind; too old resource version").to_status();
                    let _ = tx.send(line("ERROR", &status)).await;
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}
