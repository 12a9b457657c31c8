//! Destroy, which Terraform sends as an apply with a null planned state: runs the
//! package's `cleanup` plan when it has one, removes the instance and its objects, and
//! keeps or deletes the volume claims its StatefulSets leave behind.

use tfplugin::{ApplyResponse, Diagnostic, Value};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::Cluster;
use kudo_engine::engine::{self, Cleanup, InstanceVolumes};

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
    let params = prior.parameters().unwrap_or_default();
    // KudoOperator tasks of the cleanup plan take their packages from the tree, as the
    // apply's plans do. Without one only folder dependencies run, which is no reason to
    // keep the instance: the cleanup run says which task it could not load.
    let tree = match &pkg {
        Some(p) if p.operator.plans.contains_key("cleanup") => {
            cleanup_tree(session, prior, p, seed).await
        }
        _ => None,
    };
    let inventory = prior.object_refs();
    let delete_volumes = prior.delete_volumes();
    let (volumes, not_checked) =
        InstanceVolumes::of_instance(cluster, &namespace, &name, &inventory).await;
    let mut diagnostics: Vec<Diagnostic> = not_checked
        .iter()
        .map(|w| Diagnostic::warning(w.summary(), w.to_string()))
        .collect();
    let deadline = Deadline::new(cancel, limit);
    let mut work = engine::uninstall_instance_keeping(
        cluster,
        &namespace,
        &name,
        &inventory,
        pkg.as_ref().map(|package| Cleanup {
            package,
            parameters: &params,
            render_seed: seed,
            dependencies: tree.as_ref().map(|t| &t.packages),
        }),
        prior.crd_deletion(),
        volumes.keep(delete_volumes),
        &deadline.token,
    )
    .await;
    deadline.explain(cancel, "uninstall", &mut work);
    match work {
        Ok(kept) => {
            diagnostics.extend(super::diag::kept_warnings(&kept));
            // The instance is gone; the claims are what its StatefulSets leave behind.
            let deadline = Deadline::new(cancel, limit);
            let volumes = super::volumes::settle(
                session,
                cluster,
                &name,
                &volumes,
                delete_volumes,
                &deadline.token,
            )
            .await;
            deadline.timer.abort();
            match volumes {
                Ok(d) => diagnostics.extend(d),
                Err(d) => diagnostics.push(d),
            }
            // Last: kept volume claims keep a namespace this instance created.
            let user = crate::provider::namespace::user_for(&prior.create_namespace, || {
                engine::NamespaceUser::instance(&namespace, &name)
            });
            diagnostics.extend(
                crate::provider::namespace::release(cluster, &namespace, user.as_ref(), cancel)
                    .await,
            );
            ApplyResponse {
                diagnostics,
                ..Default::default()
            }
        }
        Err(e) => ApplyResponse {
            new_state: prior_state,
            diagnostics: vec![destroy_diagnostic(
                session,
                &format!("Cannot remove instance {name}"),
                &e,
            )],
            ..Default::default()
        },
    }
}

/// The dependency tree the `cleanup` plan's KudoOperator tasks take their packages
/// from, as the apply's plans do. Without one only folder dependencies run, which is no
/// reason to keep the instance: the cleanup run says which task it could not load.
async fn cleanup_tree(
    session: &Session,
    prior: &InstanceModel,
    pkg: &kudo_package::Package,
    seed: Option<&str>,
) -> Option<kudo_plan::Tree> {
    let namespace = namespace_of(&prior.namespace);
    let name = prior.name.as_deref().unwrap_or_default();
    let operator = prior.operator.as_deref().unwrap_or_default();
    let all = prior.all_parameters().ok().flatten().unwrap_or_default();
    let tree = match resolution(session, operator, pkg, false).await {
        Ok(Some(r)) => kudo_plan::change::tree_of(&r, pkg, name, &namespace, &all, seed, None)
            .map_err(|e| e.to_string()),
        Ok(None) => Err("no dependency tree".to_string()),
        Err(d) => Err(d.detail),
    };
    tree.map_err(|why| tracing::warn!(%why, "cleanup runs without the dependency tree"))
        .ok()
}
