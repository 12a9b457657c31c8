//! What a `kudo_instance` keeps in Terraform's private state (stored with the state,
//! never shown in plans): the secret seed of its template randomness (see
//! [`super::render_seed`]) and, per managed object, a fingerprint of the fields this
//! provider applied (the engine's `observe::applied_fields_fingerprint`), so that a
//! refresh compares field by field only the objects someone else wrote to.
//!
//! JSON, each part optional: state written before fingerprints existed (`{"render_seed":
//! ...}`) reads as having none, and its first refresh checks every object.

use std::collections::BTreeMap;

use kudo_engine::engine::TreeRecord;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivateState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render_seed: Option<String>,
    /// One per entry of the state's `objects`, in its key order; empty where unknown
    /// (the object was missing, or our field manager holds nothing in it). Recorded
    /// before `objects` was a map, they are in the old list's order: harmless, since a
    /// fingerprint covers the object's uid and so never matches another object's; the
    /// first refresh then compares every object once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied_fields: Vec<String>,
    /// The engine's record of the tree, kept as the engine answers it: what each
    /// dependency instance owns, with fingerprints (Terraform's state lists only the
    /// instance's own objects), the objects the last refresh found changed outside
    /// Terraform, and, planned only, what a plan whose dry-run covered the whole tree
    /// hands to the apply right after it (the same change, planned again by Terraform
    /// just before), which then does not dry-run it again. Its fields sit beside these
    /// (`dependencies`, `drifted`, `checked`, `every_object_checked`, `decided`), as
    /// before the engine kept them.
    #[serde(flatten)]
    pub tree: TreeRecord,
    /// How many applies of this instance ran a KUDO plan through this provider: its
    /// `summary` names the next one's number, so the summary of every plan that runs
    /// something differs from the last apply's and is shown whole, while a refresh
    /// leaves it as it is (a refresh-only plan after an apply finds nothing changed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub runs: u64,
    /// By `objects` key: the uid an apply read back where the state keeps the one the
    /// plan showed (an object deleted after the plan and created again by the run, see
    /// `instance::apply`). The next refresh compares the live objects with these, so
    /// that our own re-creation is no drift, and then records them in the state.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub actual_uids: BTreeMap<String, String>,
    /// The `operator` whose plan last completed: kept through failed applies, so that a
    /// plan going back to it after a failed upgrade can say so (see
    /// `instance::refusal::back_after_failure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<String>,
    /// Planned only (never in the state): where the apply puts the instance back if it
    /// fails, with `rollback_on_failure` (see `instance::rollback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<crate::provider::instance::RollbackTarget>,
    /// Planned only (never in the state): the plan decided that no KUDO plan runs
    /// (only settings changed), so the apply writes nothing (`engine::ApplyRequest::settled`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub settled: bool,
}

impl PrivateState {
    pub fn parse(private: &[u8]) -> PrivateState {
        if private.is_empty() {
            return PrivateState::default();
        }
        serde_json::from_slice(private).unwrap_or_else(|e| {
            // Not ours or from an older layout: treat as unknown rather than fail every
            // apply; the instance renders as an imported one would.
            tracing::warn!(error = %e, "ignoring unreadable private state of kudo_instance");
            PrivateState::default()
        })
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        if *self == PrivateState::default() {
            return Vec::new();
        }
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// [`PrivateState::to_bytes`], never empty: an apply that read something back says
    /// so even when it found nothing to keep.
    pub fn to_bytes_always(&self) -> Vec<u8> {
        match self.to_bytes() {
            bytes if bytes.is_empty() => b"{}".to_vec(),
            bytes => bytes,
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
