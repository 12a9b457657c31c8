//! Objects a planning call read, handed to the run that follows it in the same process.
//!
//! Terraform plans every change again right before applying it (a saved plan too), in
//! the provider process that then applies it. What that final plan read is moments
//! old when the run starts; a run that decides the same things again from the same
//! reads need not repeat them. The reads are kept per [`Cluster`] (a provider
//! configuration talks to one cluster), keyed by whatever the caller names its
//! subject with, and taken once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::Cluster;

/// Objects as read (`None`: not found), by a name the caller chooses.
pub type Reads = HashMap<String, Option<Value>>;

/// What planning calls handed over and no run has taken yet.
#[derive(Clone, Default)]
pub(super) struct Handoff(Arc<Mutex<HashMap<String, Reads>>>);

impl Cluster {
    /// Keeps `reads` for the next [`Cluster::take_over`] of `key`, in place of any
    /// earlier ones: the latest planning call is the one its apply follows.
    pub fn hand_over(&self, key: String, reads: Reads) {
        if let Ok(mut handed) = self.handoff.0.lock() {
            handed.insert(key, reads);
        }
    }

    /// The reads handed over for `key`, once; empty when there are none (the caller
    /// reads for itself).
    pub fn take_over(&self, key: &str) -> Reads {
        self.handoff
            .0
            .lock()
            .ok()
            .and_then(|mut handed| handed.remove(key))
            .unwrap_or_default()
    }
}
