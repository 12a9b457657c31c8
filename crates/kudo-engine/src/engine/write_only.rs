//! The write-only values of a change, read and joined to its sensitive ones: at plan
//! ([`for_plan`]) and at apply ([`for_apply`]). Which values a change uses is decided in
//! `kudo_plan::write_only`; the stored ones are read back from the instance's Secret.

use std::collections::BTreeMap;

use kudo_plan::ChangeRequest;
use kudo_plan::write_only::{
    Joined, SetTwice, StoredIn, WriteOnlyRequest, join_values, plan_write_only, stored_write_only,
};

use super::error::EngineError;
use super::sensitive::read_sensitive;
use crate::cluster::Cluster;

type Values = BTreeMap<String, String>;

/// The write-only values the instance `stored` names has now: its Secret's keys not
/// listed as sensitive parameters.
pub(crate) async fn read_stored(
    cluster: &Cluster,
    stored: StoredIn<'_>,
) -> Result<Values, EngineError> {
    read_sensitive(cluster, stored.namespace, stored.name)
        .await
        .map(|secret| stored_write_only(secret, stored.listed))
}

/// What a plan reads: the stored values when there are any and the cluster can tell.
/// When the change keeps them, its apply reads them too: a read that fails is the
/// apply's failure, which the plan meets first. Otherwise they are only compared with, a
/// best effort: without them the plan compares as if they were the configured ones.
pub(crate) async fn stored_for_plan(
    cluster: Option<&Cluster>,
    request: Option<&WriteOnlyRequest<'_>>,
) -> Result<Option<Values>, EngineError> {
    let (Some(cluster), Some(request)) = (cluster, request) else {
        return Ok(None);
    };
    let Some(stored) = request.stored else {
        return Ok(None);
    };
    match read_stored(cluster, stored).await {
        Ok(values) => Ok(Some(values)),
        Err(e) if request.stored_for_apply().is_some() => Err(e),
        Err(e) => {
            tracing::debug!(error = %e, "write-only parameters not read while planning");
            Ok(None)
        }
    }
}

/// A plan's values with the write-only ones joined: the change's and its prior's.
#[derive(Debug)]
pub(crate) struct PlanValues {
    pub change: Joined,
    /// The prior instance's values with the write-only ones it ran with; `None`: as the
    /// request has them.
    pub prior: Option<Values>,
}

/// The values `change` is planned with, the write-only ones `request` names (with the
/// `stored` ones read) joined: the change's, or unknown while the values the change
/// takes are; and the prior's (compared without them when a name moved between the
/// maps in this change, as that prior would fail the same check).
pub(crate) fn for_plan(
    request: &WriteOnlyRequest<'_>,
    stored: Option<Values>,
    change: &ChangeRequest<'_>,
) -> Result<PlanValues, Vec<SetTwice>> {
    let chosen = plan_write_only(request.source, stored, request.configured.cloned());
    let joined = match &chosen.planned {
        Some(values) => join_values(values, change.parameters, change.sensitive)?,
        None => Joined {
            sensitive: change.sensitive.clone(),
            parameters: None,
        },
    };
    let prior = chosen.prior.as_ref().and_then(|old| {
        let before = change.prior.as_ref()?.parameters?;
        let clash = old.keys().any(|k| before.contains_key(k));
        (!clash).then(|| {
            let mut all = before.clone();
            all.extend(old.iter().map(|(k, v)| (k.clone(), v.clone())));
            all
        })
    });
    Ok(PlanValues {
        change: joined,
        prior,
    })
}

/// The write-only values an apply runs with: the stored ones (read here) unless the
/// configured ones are taken. An apply's configuration is known; a value still unknown
/// there is refused by the caller before it asks.
pub(crate) async fn for_apply(
    cluster: &Cluster,
    request: &WriteOnlyRequest<'_>,
) -> Result<Values, EngineError> {
    match request.stored_for_apply() {
        Some(stored) => read_stored(cluster, stored).await,
        None => Ok(request.configured.cloned().unwrap_or_default()),
    }
}
