//! Putting an instance back after its apply failed (`rollback_on_failure`): the
//! version, values and plan of its last completed apply, decided when the change was
//! planned (`kudo_plan::rollback_plan`), run as any change is run. KUDO had no rollback;
//! this is helm's `--atomic` for a KUDO instance and its dependency instances.
//!
//! The change that failed may have removed what the rollback needs: `kudo_operator`
//! removes the OperatorVersion an instance moves away from when it installs the new one
//! (`operator_tree::remove_stale`). The rollback installs it again from the copy the
//! plan kept; dependency OperatorVersions missing from the cluster are installed by the
//! dependency runs, as for any tree (`run::children`).

use tokio_util::sync::CancellationToken;

use super::EngineError;
use super::apply::{Applied, ApplyRequest, apply_change};
use super::operator::{install_operator, operator_version_ref};
use crate::cluster::Cluster;

/// A rollback that ran (its own run may still have failed: see [`Applied::run`]).
#[derive(Debug)]
pub struct RolledBack {
    pub applied: Applied,
    /// The instance's OperatorVersion, when the rollback had to install it again.
    pub reinstalled: Option<String>,
}

/// Why a rollback could not start; nothing of it was written.
#[derive(Debug, thiserror::Error)]
pub enum RollbackError {
    #[error("{0}")]
    Refused(#[from] kudo_plan::Refusal),
    #[error("cannot install OperatorVersion {name} again: {error}")]
    Operator {
        name: String,
        #[source]
        error: Box<EngineError>,
    },
}

/// Runs `back` (the last completed version, values and plan, with the objects the
/// failed run left as `previous` so that what only the failed change made is pruned).
pub async fn roll_back(
    cluster: &Cluster,
    back: &ApplyRequest<'_>,
    cancel: &CancellationToken,
) -> Result<RolledBack, RollbackError> {
    let name = back.package.operator_version_name();
    let ov = operator_version_ref(back.operator_namespace, &name);
    let missing = matches!(cluster.get(&ov).await, Ok(None));
    if missing {
        tracing::info!(operator_version = %name, "installing the previous OperatorVersion again for the rollback");
        install_operator(cluster, back.package, back.operator_namespace)
            .await
            .map_err(|error| RollbackError::Operator {
                name: name.clone(),
                error: Box::new(error),
            })?;
    }
    let applied = apply_change(cluster, back, cancel).await?;
    Ok(RolledBack {
        applied,
        reinstalled: missing.then_some(name),
    })
}
