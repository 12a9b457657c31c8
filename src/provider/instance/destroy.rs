//! Destroy, which Terraform sends as an apply with a null planned state: the prior
//! state decoded into one [`engine::destroy_instance`] call (which runs the package's
//! `cleanup` plan when it has one, removes the instance and its objects, and keeps or
//! deletes the volume claims its StatefulSets leave behind), and its answer as
//! diagnostics.

use tfplugin::{ApplyResponse, AttributePath, Diagnostic, Value};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::Cluster;
use kudo_engine::engine::{self, DestroyError, DestroyRequest, Destroyed};

use crate::provider::timeouts::{self, Operation};
use crate::provider::{Session, namespace_of};

use super::deadline::*;
use super::lookup::Installed;
use super::model::InstanceModel;

/// Removes the instance `prior` describes; `prior_state` is the same state as
/// Terraform sent it, handed back when the destroy fails.
pub(super) async fn destroy(
    session: &Session,
    cluster: &Cluster,
    prior_state: Value,
    prior: &InstanceModel,
    seed: Option<&str>,
    cancel: &CancellationToken,
) -> ApplyResponse {
    let namespace = namespace_of(&prior.namespace);
    let name = prior.name.as_deref().unwrap_or_default().to_string();
    let limit = match timeouts::timeout(&prior.timeouts, Operation::Delete) {
        Ok(l) => l,
        Err(d) => {
            return ApplyResponse::failed(prior_state, vec![d]);
        }
    };
    let operator = prior.operator.as_deref().unwrap_or_default().to_string();
    // The plan-time copy and its recorded tree when this process has them; otherwise
    // the engine reads the cluster's OperatorVersion (needed only for the `cleanup`
    // plan: without it the objects still go).
    let installed = Installed::of(session, &operator, &namespace);
    let parameters = prior.parameters().unwrap_or_default();
    let sensitive = prior.sensitive().unwrap_or_default();
    let inventory = prior.object_refs();
    let request = DestroyRequest {
        namespace: &namespace,
        name: &name,
        inventory: &inventory,
        package: installed.source(),
        operator_namespace: &installed.namespace,
        parameters: &parameters,
        sensitive: &sensitive,
        render_seed: seed,
        resolution: installed.recorded.as_ref(),
        crd_deletion: prior.crd_deletion(),
        delete_volumes: prior.delete_volumes(),
        create_namespace: prior.create_namespace.known() == Some(&true),
        timeout: limit,
    };
    let destroyed = engine::destroy_instance(cluster, request, cancel).await;
    answer(session, prior_state, &name, &namespace, destroyed)
}

/// The answer of the destroy of instance `name` (a failed create's removal too):
/// `prior_state`, the state as Terraform sent it, is handed back when it fails.
pub(super) fn answer(
    session: &Session,
    prior_state: Value,
    name: &str,
    namespace: &str,
    destroyed: Result<Destroyed, DestroyError>,
) -> ApplyResponse {
    match destroyed {
        Ok(destroyed) => ApplyResponse {
            diagnostics: diagnostics(session, name, namespace, destroyed),
            ..Default::default()
        },
        Err(e) => ApplyResponse {
            new_state: prior_state,
            diagnostics: vec![failure(session, name, e)],
            ..Default::default()
        },
    }
}

/// The destroy's error: the uninstall's, or (the instance gone) the volume claims'.
fn failure(session: &Session, name: &str, e: DestroyError) -> Diagnostic {
    match e {
        DestroyError::Uninstall { error, timed_out } => {
            let error = match timed_out {
                Some(limit) => super::deadline::timed_out(error, "uninstall", "`timeouts`", limit),
                None => error,
            };
            destroy_diagnostic(session, &format!("Cannot remove instance {name}"), &error)
        }
        DestroyError::ListClaims(e) => {
            session.destroy_error("Cannot list the instance's volume claims", &e)
        }
        DestroyError::DeleteClaims(e) => session
            .destroy_error("Cannot delete the instance's volume claims", &e)
            .with_attribute(AttributePath::attribute(super::volumes::ATTR)),
    }
}

/// The destroy's answer: warnings for the claims not checked, the objects kept, the
/// claims kept and the namespace kept, in that order; an error when the claims could not
/// be settled.
fn diagnostics(
    session: &Session,
    name: &str,
    namespace: &str,
    destroyed: Destroyed,
) -> Vec<Diagnostic> {
    let mut diagnostics: Vec<Diagnostic> = destroyed
        .not_checked
        .iter()
        .map(|w| Diagnostic::warning(w.summary(), w.to_string()))
        .collect();
    diagnostics.extend(super::diag::kept_warnings(&destroyed.kept));
    match destroyed.volumes {
        Ok(kept) => diagnostics.extend(super::volumes::kept(name, &kept)),
        Err(e) => diagnostics.push(failure(session, name, e)),
    }
    if let Some(released) = &destroyed.namespace {
        diagnostics.extend(crate::provider::namespace::released(namespace, released));
    }
    diagnostics
}
