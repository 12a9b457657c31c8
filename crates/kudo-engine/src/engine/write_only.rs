//! The write-only parameter values an instance has now, read back from its Secret
//! (which values a change uses is decided in `kudo_plan::write_only`).

use std::collections::BTreeMap;

use kudo_plan::write_only::stored_write_only;

use super::error::EngineError;
use super::sensitive::read_sensitive;
use crate::cluster::Cluster;

/// The write-only values instance `name` in `namespace` has now: its Secret's keys not
/// `listed` as sensitive parameters.
pub async fn read_write_only(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    listed: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, EngineError> {
    read_sensitive(cluster, namespace, name)
        .await
        .map(|secret| stored_write_only(secret, listed))
}
