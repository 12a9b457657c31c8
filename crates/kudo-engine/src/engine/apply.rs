//! The apply of an instance's change ([`apply_change`]): the reads before its first
//! write side by side, the run ([`super::apply_run`]), and, when the run fails, what
//! the request says a failure does ([`OnFailure`]: the rollback of an update, in
//! [`super::rollback`], or the removal of a create, as destroy removes an instance).

use kudo_package::Package;
use kudo_plan::write_only::{join_write_only, rollback_sensitive};
use tokio_util::sync::CancellationToken;

use super::apply_run::{
    Applied, ApplyRequest, Loaded, OnFailure, PackageSource, installed, not_installed, read_first,
    run_looked,
};
use super::change::PlanRefusal;
use super::destroy::{DestroyRequest, Destroyed, destroy_instance};
use super::installed_package::read_package;
use super::manifests::Manifests;
use super::namespace::{NamespaceUser, ensure_namespace};
use super::plan_run::look;
use super::planning::current_of;
use super::removal::DestroyError;
use super::rollback::{RollbackError, RolledBack, put_back};
use super::write_only;
use crate::cluster::{Cluster, ObjectRef};

/// What an apply did.
#[derive(Debug)]
pub enum ApplyAnswer {
    /// The plan ran, for the instance and its tree (and failed or not).
    Ran(Box<Applied>),
    /// The plan's run failed and [`OnFailure::RollBack`] followed: what the failed run
    /// left, and the rollback that ran (its own run may have failed too: see
    /// [`Applied::run`]) or why it could not start (nothing of it was written).
    RolledBack {
        failed: Box<Applied>,
        rolled: Box<Result<RolledBack, RollbackError>>,
    },
    /// The plan's run, a create's, failed and [`OnFailure::Remove`] followed: what the
    /// failed run left, and what the removal did.
    Removed {
        failed: Box<Applied>,
        removed: Box<Result<Destroyed, DestroyError>>,
    },
    /// No KUDO plan ran, as planned ([`ApplyRequest::settled`]); with
    /// [`ApplyRequest::manifests`], what the managed objects hold (`None` when their values no
    /// longer render, or without it).
    Settled { managed: Option<Manifests> },
}

/// Applies the change the plan decided: its namespace first, then the plan run for the
/// instance and its tree, or nothing when the plan decided no plan runs. Fails without
/// writing anything when what the plan checked no longer holds (the namespace, values,
/// outputs, the dependency tree, a create's Instance still absent); a run that fails
/// half-way is an [`Applied`] whose `run` says so, followed by what
/// [`ApplyRequest::on_failure`] asks for.
///
/// `answer` is handed the request as it ran (its write-only values joined to its
/// sensitive ones and to its rollback's: see [`ApplyRequest::write_only`]) and the
/// answer or refusal, and what it returns is the result: the joined values live only as
/// long as this call.
pub async fn apply_change<R>(
    cluster: &Cluster,
    req: &ApplyRequest<'_>,
    cancel: &CancellationToken,
    answer: impl FnOnce(&ApplyRequest<'_>, Result<ApplyAnswer, PlanRefusal>) -> R,
) -> R {
    let Some(request) = &req.write_only else {
        return answer(req, apply_joined(cluster, req, cancel).await);
    };
    let values = match write_only::for_apply(cluster, request).await {
        Ok(values) => values,
        Err(e) => return answer(req, Err(PlanRefusal::write_only_unreadable(e))),
    };
    let sensitive = match join_write_only(&values, req.public, req.sensitive) {
        Ok(joined) => joined,
        Err(twice) => return answer(req, Err(PlanRefusal::WriteOnlySetTwice(twice))),
    };
    let back;
    let on_failure = match req.on_failure {
        OnFailure::RollBack {
            package,
            resolution,
            plan,
            public,
            sensitive,
            operator_namespace,
            manifests,
            timeout,
        } => {
            back = rollback_sensitive(&values, package, public, sensitive);
            OnFailure::RollBack {
                package,
                resolution,
                plan,
                public,
                sensitive: &back,
                operator_namespace,
                manifests,
                timeout,
            }
        }
        other => other,
    };
    let joined = ApplyRequest {
        sensitive: &sensitive,
        on_failure,
        ..*req
    };
    let applied = apply_joined(cluster, &joined, cancel).await;
    answer(&joined, applied)
}

/// [`apply_change`] once the write-only values are joined.
async fn apply_joined(
    cluster: &Cluster,
    req: &ApplyRequest<'_>,
    cancel: &CancellationToken,
) -> Result<ApplyAnswer, PlanRefusal> {
    let found;
    let req = &match req.read_first() {
        Some(what) => {
            found = read_first(cluster, req, what).await?;
            req.running(&found)
        }
        None => *req,
    };
    let user = req
        .create_namespace
        .then(|| NamespaceUser::instance(req.namespace, req.name));
    // Everything read before the first write goes out together, none depending on
    // another: a create's Instance still absent (as the plan of a create found it), the
    // look at the plan's objects (see `plan_run::look`), the package and the dependency
    // packages `kudo_operator` installed.
    let absent = async {
        match req.must_not_exist {
            true => super::change::check_absent(cluster, req.namespace, req.name).await,
            false => Ok(()),
        }
    };
    let looked = async {
        match req.settled {
            true => None,
            false => look(cluster, &req.record.for_run(req.fresh)).await,
        }
    };
    let dependencies = async {
        match req.settled {
            true => None,
            false => installed(cluster, req).await,
        }
    };
    let (ensured, absent, looked, package, dependencies) = futures::join!(
        ensure_namespace(cluster, req.namespace, user.as_ref()),
        absent,
        looked,
        load_package(cluster, req),
        dependencies,
    );
    ensured.map_err(|p| PlanRefusal::namespace(req.namespace, p))?;
    absent?;
    let package = package?;
    let Some(pkg) = package.as_deref().or(req.given()) else {
        return Err(not_installed(req));
    };
    if !req.settled {
        let loaded = Loaded {
            package: pkg,
            dependencies,
        };
        let applied = run_looked(cluster, req, loaded, looked, cancel).await?;
        return Ok(after_failure(cluster, req, applied).await);
    }
    let managed = match req.manifests {
        true => {
            let all = req.all_values();
            let inputs = kudo_plan::Inputs {
                package: pkg,
                instance: req.name,
                namespace: req.namespace,
                parameters: &all,
                seed: req.seed,
                dependencies: None,
            };
            current_of(cluster, inputs, req.plan, req.previous).await
        }
        false => None,
    };
    Ok(ApplyAnswer::Settled { managed })
}

/// The package of [`PackageSource::Installed`] as the cluster holds it, else its copy
/// (`None` for a given one: see [`ApplyRequest::given`]).
async fn load_package(
    cluster: &Cluster,
    req: &ApplyRequest<'_>,
) -> Result<Option<Box<Package>>, PlanRefusal> {
    let PackageSource::Installed {
        operator_version,
        copy,
        ..
    } = req.package
    else {
        return Ok(None);
    };
    read_package(cluster, req.operator_namespace, operator_version, copy)
        .await
        .map(|p| Some(Box::new(p)))
}

/// The answer once the run (`ran`, of `failed`) is over: that run, followed by what
/// `failed.on_failure` asks for when it failed. What follows runs under its own time
/// limit on a token of its own, not under the apply's.
async fn after_failure(cluster: &Cluster, failed: &ApplyRequest<'_>, ran: Applied) -> ApplyAnswer {
    if ran.run.is_ok() {
        return ApplyAnswer::Ran(Box::new(ran));
    }
    match failed.on_failure {
        OnFailure::Stay => ApplyAnswer::Ran(Box::new(ran)),
        // Boxed, as a dependency instance's run is: the rollback is a whole run (with its
        // tree) inside the apply's future, and nested in place the two overflow a
        // worker thread's stack.
        OnFailure::RollBack { .. } => match Box::pin(put_back(cluster, failed, &ran)).await {
            Some(rolled) => ApplyAnswer::RolledBack {
                failed: Box::new(ran),
                rolled: Box::new(rolled),
            },
            None => ApplyAnswer::Ran(Box::new(ran)),
        },
        OnFailure::Remove {
            delete_volumes,
            timeout,
        } => {
            let inventory: Vec<ObjectRef> = ran.objects.iter().map(|(r, _, _)| r.clone()).collect();
            let request = DestroyRequest {
                namespace: failed.namespace,
                name: failed.name,
                inventory: &inventory,
                package: PackageSource::Given(&ran.package),
                operator_namespace: failed.operator_namespace,
                parameters: failed.public,
                sensitive: failed.sensitive,
                render_seed: failed.seed,
                resolution: failed.resolution,
                crd_deletion: failed.crd_deletion,
                delete_volumes,
                create_namespace: failed.create_namespace,
                timeout,
            };
            tracing::info!(instance = %failed.name, "removing what the failed create wrote");
            // As a rollback: the removal runs even when the apply was stopped.
            let removed = Box::pin(destroy_instance(
                cluster,
                request,
                &CancellationToken::new(),
            ))
            .await;
            ApplyAnswer::Removed {
                failed: Box::new(ran),
                removed: Box::new(removed),
            }
        }
    }
}
