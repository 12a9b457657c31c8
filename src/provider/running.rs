//! An existing Instance as the cluster holds it ([`engine::running`]), what the
//! ephemeral resource and the `kudo_plan` action start from: its errors as diagnostics.

use tfplugin::Diagnostic;

use kudo_engine::cluster::Cluster;
use kudo_engine::engine::{self, Running, RunningError};

use super::Session;

/// The Instance `namespace/name`; `Ok(None)` when there is none (each caller says what
/// that means for it).
pub async fn read(
    session: &Session,
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<Option<Running>, Diagnostic> {
    engine::running(cluster, namespace, name)
        .await
        .map_err(|e| error(session, &e))
}

/// A failure to read a running instance, with the advice for its cause.
pub fn error(session: &Session, e: &RunningError) -> Diagnostic {
    match e {
        RunningError::Instance(c) => session.cluster_error("Cannot read the instance", c),
        RunningError::Operator(e) => session.engine_error("Cannot read the instance's operator", e),
        RunningError::OperatorMissing { .. } => {
            Diagnostic::error("The instance's operator is missing", e.to_string())
        }
        RunningError::Sensitive(e) => {
            session.engine_error("Cannot read the sensitive parameters", e)
        }
    }
}
