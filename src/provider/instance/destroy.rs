//! Destroy, which Terraform sends as an apply with a null planned state: the prior
//! state decoded into one [`engine::destroy_instance`] call (which runs the package's
//! `cleanup` plan when it has one, removes the instance and its objects, and keeps or
//! deletes the volume claims its StatefulSets leave behind), and its answer as
//! diagnostics.

use tfplugin::{ApplyResponse, AttributePath, Diagnostic, Value};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::Cluster;
use kudo_engine::engine::{self, DestroyError, DestroyRequest, Destroyed};
use kudo_package::Package;
use kudo_resolve::Resolution;

use crate::provider::timeouts::{self, Operation};
use crate::provider::{Session, namespace_of};

use super::deadline::*;
use super::lookup::{find_package, resolution};
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
    // The package is needed only for the `cleanup` plan; without it the objects still go.
    let pkg = find_package(session, &operator, false).await.ok().flatten();
    let parameters = prior.parameters().unwrap_or_default();
    let sensitive = prior.sensitive().unwrap_or_default();
    let inventory = prior.object_refs();
    let request = DestroyRequest {
        namespace: &namespace,
        name: &name,
        inventory: &inventory,
        package: pkg.as_ref(),
        parameters: &parameters,
        sensitive: &sensitive,
        render_seed: seed,
        resolution: Box::pin(dependency_tree(session, &operator, pkg.as_ref())),
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

/// The dependency tree the `cleanup` plan's KudoOperator tasks take their packages
/// from, as the apply's plans do (the engine asks for it only when the package has a
/// `cleanup` plan); the error says why there is none.
async fn dependency_tree(
    session: &Session,
    operator: &str,
    pkg: Option<&Package>,
) -> Result<Resolution, String> {
    let Some(pkg) = pkg else {
        return Err("no package".to_string());
    };
    match resolution(session, operator, pkg, false).await {
        Ok(Some(r)) => Ok(r),
        Ok(None) => Err("no dependency tree".to_string()),
        Err(d) => Err(d.detail),
    }
}
