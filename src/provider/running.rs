//! An existing Instance's parameter values as the cluster holds them
//! ([`engine::instance_parameters`], what the ephemeral resource reads), and the errors
//! of reading an Instance (its import's and the `kudo_plan` action's too) as
//! diagnostics.

use std::collections::BTreeMap;

use tfplugin::Diagnostic;

use kudo_engine::cluster::Cluster;
use kudo_engine::engine::{self, InstanceReadError};

use super::Session;

/// Every parameter value of the Instance `namespace/name`; `Ok(None)` when there is none
/// (each caller says what that means for it).
pub async fn parameters(
    session: &Session,
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<Option<BTreeMap<String, String>>, Diagnostic> {
    engine::instance_parameters(cluster, namespace, name)
        .await
        .map_err(|e| error(session, &e))
}

/// A failure to read an instance, with the advice for its cause.
pub fn error(session: &Session, e: &InstanceReadError) -> Diagnostic {
    match e {
        InstanceReadError::Instance(c) => session.cluster_error("Cannot read the instance", c),
        InstanceReadError::Objects(c) => {
            session.cluster_error("Cannot list the instance's objects", c)
        }
        InstanceReadError::Operator(e) => {
            session.engine_error("Cannot read the instance's operator", e)
        }
        InstanceReadError::OperatorMissing { .. } => {
            Diagnostic::error("The instance's operator is missing", e.to_string())
        }
        InstanceReadError::Sensitive(e) => {
            session.engine_error("Cannot read the sensitive parameters", e)
        }
        InstanceReadError::Parameters(_) => Diagnostic::error(
            "The instance's parameters do not fit its operator",
            e.to_string(),
        ),
    }
}
