//! What a `kudo_instance` keeps in Terraform's private state (stored with the state,
//! never shown in plans): the secret seed of its template randomness (see
//! [`super::render_seed`]) and, per managed object, a fingerprint of the fields this
//! provider applied (see `kudo_engine::engine::applied_fields_fingerprint`), so that a
//! refresh compares field by field only the objects someone else wrote to.
//!
//! JSON, each part optional: state written before fingerprints existed (`{"render_seed":
//! ...}`) reads as having none, and its first refresh checks every object.

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

    /// The fingerprint recorded for the `index`th object when the state records one
    /// for each of `count` objects.
    pub fn applied_fields_of(&self, index: usize, count: usize) -> Option<&str> {
        if self.applied_fields.len() != count {
            return None;
        }
        self.applied_fields
            .get(index)
            .map(String::as_str)
            .filter(|f| !f.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_layouts_and_garbage_read_as_what_they_hold() {
        let old = PrivateState::parse(br#"{"render_seed":"abc"}"#);
        assert_eq!(old.render_seed.as_deref(), Some("abc"));
        assert!(old.applied_fields.is_empty());
        assert_eq!(PrivateState::parse(b"not json"), PrivateState::default());
        assert!(PrivateState::default().to_bytes().is_empty());
        let both = PrivateState {
            render_seed: Some("s".into()),
            applied_fields: vec!["f1".into(), String::new()],
        };
        let read = PrivateState::parse(&both.to_bytes());
        assert_eq!(read, both);
        assert_eq!(read.applied_fields_of(0, 2), Some("f1"));
        assert_eq!(read.applied_fields_of(1, 2), None);
        // Recorded for another list of objects: none of it counts.
        assert_eq!(read.applied_fields_of(0, 3), None);
    }
}
