//! The run of an apply: what it is asked ([`ApplyRequest`]), the plan the planning call
//! chose run for the instance and its whole dependency tree
//! ([`super::plan_run::run_plan_looked`], which checks the tree before its first write),
//! and what the state records afterwards ([`Applied`]: outputs, dependency instances,
//! the objects with their uids and fingerprints). Under both the apply action
//! ([`super::apply_change`]) and the rollback it may follow with.

use std::collections::BTreeMap;
use std::time::Duration;

use kudo_package::{LoadContext, Package};
use kudo_plan::change::{ChildView, Refusal, check_outputs, render_outputs, tree_of};
use kudo_plan::write_only::WriteOnlyRequest;
use kudo_resolve::Resolution;
use tokio_util::sync::CancellationToken;

use super::change::PlanRefusal;
use super::crd_safety::CrdSafety;
use super::decisions::{DependencyRecords, TreeRecord};
use super::error::EngineError;
use super::installed_package::{dependency_tree, read_package};
use super::instance_object::instance_ref;
use super::manifests::Manifests;
use super::plan_run::{Looked, run_plan_looked};
use super::planning::current_of;
use super::progress::Progress;
use super::readiness::HealthSettings;
use super::removal::CrdDeletion;
use super::run::{AnsweredWrite, RunOutcome, RunRequest, WriteAnswers};
use crate::cluster::{Cluster, ObjectRef};
use kudo_plan::status::PlanStatus;
use kudo_plan::status::plan_status_of;

/// What an apply runs.
#[derive(Debug, Clone, Copy)]
pub struct ApplyRequest<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub package: PackageSource<'a>,
    /// The values stored in the Instance spec.
    pub public: &'a BTreeMap<String, String>,
    /// The values kept in the instance's Secret.
    pub sensitive: &'a BTreeMap<String, String>,
    pub plan: &'a str,
    pub seed: Option<&'a str>,
    /// The dependency tree as `kudo_operator` resolved it; the packages it installed
    /// in `operator_namespace` are run rather than the resolver's copies.
    pub resolution: Option<&'a Resolution>,
    pub operator_namespace: &'a str,
    /// The objects the state records.
    pub previous: &'a [ObjectRef],
    /// The record of the instance's tree, as the plan right before handed it over
    /// ([`super::Planned::record`]).
    pub record: &'a TreeRecord,
    /// The instance is created by this apply (a new one, or the create half of a
    /// replacement): its dependency instances are all created too.
    pub fresh: bool,
    pub crd_deletion: CrdDeletion,
    pub crd_safety: CrdSafety,
    /// The instance's health settings over the provider's ([`HealthSettings::over`]).
    pub health: &'a HealthSettings,
    /// Whether the content of every managed object is wanted afterwards: the answer's
    /// [`Manifests`] (`kudo_instance.manifests`).
    pub manifests: bool,
    pub progress: Option<&'a Progress>,
    /// A create: the Instance must not exist yet (see [`super::change::check_absent`]).
    pub must_not_exist: bool,
    /// `create_namespace`: a missing namespace is created before anything else is
    /// written (else it fails the apply as it failed the plan).
    pub create_namespace: bool,
    /// The plan decided that no KUDO plan runs (`kudo_plan::PlanChoice::Settled`: only
    /// settings changed); `plan` is then the last plan that ran, and nothing is written.
    pub settled: bool,
    /// What a run that fails does afterwards (`rollback_on_failure`).
    pub on_failure: OnFailure<'a>,
    /// Write-only values in use: the configured ones, or the stored ones read back
    /// first, joined to `sensitive` (and to a rollback's, for the parameters its package
    /// declares) before anything is written ([`super::apply_change`]).
    pub write_only: Option<WriteOnlyRequest<'a>>,
}

/// What [`apply_change`] does once its run failed. Either way the answer keeps the
/// failed run's [`Applied`].
#[derive(Debug, Clone, Copy)]
pub enum OnFailure<'a> {
    /// Nothing: the instance stays as the failure left it ([`ApplyAnswer::Ran`]).
    Stay,
    /// An update: put the instance back where the plan decided, the version, values and
    /// plan of its last completed apply ([`ApplyAnswer::RolledBack`]). Its OperatorVersion
    /// is installed again when `kudo_operator` removed it, then `plan` of `package` runs
    /// with these values, the failed run's objects as the previous ones (what only the
    /// failed change made is pruned) and the dependency instances found by their label;
    /// the templates holding only CustomResourceDefinitions are left out and no CRD is
    /// deleted: CRDs stay as the failed change made them. The request's name, namespace,
    /// seed, `crd_deletion`, `crd_safety` and `health` hold for it too.
    RollBack {
        /// The last completed apply's package (given: `kudo_operator` may have removed
        /// its OperatorVersion).
        package: &'a Package,
        /// Its dependency tree, with its packages.
        resolution: Option<&'a Resolution>,
        /// The plan that puts the instance back (`kudo_plan::rollback_plan`).
        plan: &'a str,
        public: &'a BTreeMap<String, String>,
        sensitive: &'a BTreeMap<String, String>,
        /// Where its OperatorVersion is.
        operator_namespace: &'a str,
        /// As [`ApplyRequest::manifests`], for the rollback's answer.
        manifests: bool,
        /// How long the rollback may take. It runs under this limit alone, not under the
        /// apply's token: a rollback of an interrupted apply still runs.
        timeout: Duration,
    },
    /// A create: remove what it wrote as [`super::destroy_instance`] does, with the package
    /// that ran (its `cleanup` plan), the request's values, tree, `crd_deletion` and
    /// `create_namespace`, and the failed run's objects as the inventory
    /// ([`ApplyAnswer::Removed`]). Like a rollback it runs under its own `timeout` alone.
    Remove {
        delete_volumes: bool,
        timeout: Duration,
    },
}

/// The package an apply runs.
#[derive(Debug, Clone, Copy)]
pub enum PackageSource<'a> {
    /// This one (read by the caller, or a rollback's copy).
    Given(&'a Package),
    /// The OperatorVersion `operator_version` in the request's `operator_namespace` as
    /// the cluster holds it (what the cluster has is what runs).
    ///
    /// With `copy`, the plan-time copy, and the request's `resolution` (or a run that
    /// needs none: settled, or no KudoOperator task), the OperatorVersion is read beside
    /// the apply's other reads before its first write; the copy names the Operator (read
    /// at the same time) and runs when the cluster has no such OperatorVersion (a saved
    /// plan's copy applied before its `kudo_operator`). Otherwise the OperatorVersion is
    /// read first (the copy still standing in for a missing one; with neither the apply
    /// fails, [`super::PlanRefusal::NotInstalled`]) and its dependency tree resolved again
    /// from `sources` for the cluster's version, as `kudo_operator`'s plan resolved it
    /// ([`super::PlanRefusal::Unresolved`] when it cannot be).
    Installed {
        operator_version: &'a str,
        copy: Option<&'a Package>,
        sources: &'a LoadContext,
    },
}

impl<'a> ApplyRequest<'a> {
    /// The package the request names without a read: the given one, else the plan-time
    /// copy.
    pub(crate) fn given(&self) -> Option<&'a Package> {
        match self.package {
            PackageSource::Given(pkg) => Some(pkg),
            PackageSource::Installed { copy, .. } => copy,
        }
    }

    /// What must be read before anything else, when something must: the
    /// [`PackageSource::Installed`] OperatorVersion without a copy, or one whose run needs
    /// a tree the request does not carry. `None`: the package is given, or read beside
    /// the apply's other first reads.
    pub(crate) fn read_first(&self) -> Option<ReadFirst<'a>> {
        let PackageSource::Installed {
            operator_version,
            copy,
            sources,
        } = self.package
        else {
            return None;
        };
        let needed = match copy {
            None => true,
            Some(copy) => {
                !self.settled && self.resolution.is_none() && kudo_plan::has_dependency_tasks(copy)
            }
        };
        needed.then_some(ReadFirst {
            operator_version,
            copy,
            sources,
        })
    }

    /// This request running `found` (read by [`read_first`]).
    pub(crate) fn running(&self, found: &'a Found) -> ApplyRequest<'a> {
        ApplyRequest {
            package: PackageSource::Given(&found.package),
            resolution: found.resolution.as_ref().or(self.resolution),
            ..*self
        }
    }

    /// Every value, sensitive ones included: what the templates see.
    pub(crate) fn all_values(&self) -> BTreeMap<String, String> {
        let mut all = self.public.clone();
        all.extend(self.sensitive.iter().map(|(k, v)| (k.clone(), v.clone())));
        all
    }
}

/// What the state records after an apply, whether its run succeeded or not.
#[derive(Debug)]
pub struct Applied {
    /// The package that ran (the cluster's, with [`PackageSource::Installed`]).
    pub package: Package,
    pub effective: BTreeMap<String, String>,
    pub outputs: BTreeMap<String, String>,
    pub children: Vec<ChildView>,
    /// The run's outcome, or its error (with what exists afterwards).
    pub run: Result<RunOutcome, EngineError>,
    /// The objects the instance owns now, with their uid and fingerprint.
    pub objects: Vec<(ObjectRef, Option<String>, String)>,
    /// The record of the tree after the run: what each dependency instance owns now
    /// (nothing handed over, no drift: the run took it back).
    pub record: TreeRecord,
    /// The plan's status tree, as the run left it (read back after a failure).
    pub plan_status: Option<PlanStatus>,
    /// With [`ApplyRequest::manifests`]: each object's content as this apply rendered it.
    pub managed: Option<Manifests>,
}

impl Applied {
    /// The Instance's status after the run, as KUDO spells it: the plan status's own
    /// (COMPLETE unless it says otherwise) after a run that finished; after a failure,
    /// FATAL_ERROR when the package or the values must change, else ERROR (a run
    /// again may get past it).
    pub fn status(&self) -> &str {
        run_status(&self.run)
    }
}

fn run_status(run: &Result<RunOutcome, EngineError>) -> &str {
    match run {
        Ok(outcome) => outcome
            .plan_status
            .get("status")
            .and_then(serde_json::Value::as_str)
            .unwrap_or(kudo_plan::RunStatus::COMPLETE),
        Err(e) if e.fatal => kudo_plan::status::ExecutionStatus::FatalError.as_str(),
        Err(_) => kudo_plan::status::ExecutionStatus::Error.as_str(),
    }
}

/// The fields of [`PackageSource::Installed`], when they must be read first
/// ([`ApplyRequest::read_first`]).
pub(crate) struct ReadFirst<'a> {
    operator_version: &'a str,
    copy: Option<&'a Package>,
    sources: &'a LoadContext,
}

/// The package and tree read first.
pub(crate) struct Found {
    pub package: Package,
    pub resolution: Option<Resolution>,
}

/// Reads the package `what` names and, unless the run needs none or the request
/// carries it, resolves its tree.
pub(crate) async fn read_first(
    cluster: &Cluster,
    req: &ApplyRequest<'_>,
    what: ReadFirst<'_>,
) -> Result<Found, PlanRefusal> {
    let ReadFirst {
        operator_version,
        copy,
        sources,
    } = what;
    let package = read_package(cluster, req.operator_namespace, operator_version, copy).await?;
    let resolution = match (req.settled, req.resolution) {
        (true, _) | (false, Some(_)) => None,
        (false, None) => Some(dependency_tree(cluster, &package, sources).await?),
    };
    Ok(Found {
        package,
        resolution,
    })
}

/// The refusal of a request whose package is neither in the cluster nor given.
pub(crate) fn not_installed(req: &ApplyRequest<'_>) -> PlanRefusal {
    let operator_version = match req.package {
        PackageSource::Installed {
            operator_version, ..
        } => operator_version.to_string(),
        PackageSource::Given(p) => p.operator_version_name(),
    };
    PlanRefusal::NotInstalled {
        operator_namespace: req.operator_namespace.to_string(),
        operator_version,
    }
}

/// What [`super::apply_change`] read before its run: the package that runs and the
/// dependency tree with the packages the cluster has.
pub(crate) struct Loaded<'p> {
    pub package: &'p Package,
    pub dependencies: Option<Resolution>,
}

/// The run of [`super::apply_change`] once the namespace is there and a create's Instance
/// found absent (a rollback's run too), without what [`ApplyRequest::on_failure`] asks.
pub(crate) async fn run_change(
    cluster: &Cluster,
    req: &ApplyRequest<'_>,
    cancel: &CancellationToken,
) -> Result<Applied, PlanRefusal> {
    let Some(package) = req.given() else {
        return Err(not_installed(req));
    };
    let loaded = Loaded {
        package,
        dependencies: installed(cluster, req).await,
    };
    run_looked(cluster, req, loaded, None, cancel).await
}

/// [`run_change`] with the look at the plan's objects already taken.
pub(super) async fn run_looked(
    cluster: &Cluster,
    req: &ApplyRequest<'_>,
    loaded: Loaded<'_>,
    looked: Option<Looked>,
    cancel: &CancellationToken,
) -> Result<Applied, PlanRefusal> {
    apply_checked(cluster, req, loaded, looked, cancel)
        .await
        .map_err(PlanRefusal::Change)
}

async fn apply_checked(
    cluster: &Cluster,
    req: &ApplyRequest<'_>,
    loaded: Loaded<'_>,
    looked: Option<Looked>,
    cancel: &CancellationToken,
) -> Result<Applied, Refusal> {
    let pkg = loaded.package;
    let all = req.all_values();
    let effective = pkg.effective_params(&all).map_err(Refusal::Parameters)?;
    // Computed before the run, so that a surprise here cannot lose the record of what
    // the run created.
    let outputs = render_outputs(pkg, req.name, req.namespace, &effective, req.seed)?;
    check_outputs(&outputs, req.sensitive)?;
    let tree = match &loaded.dependencies {
        Some(r) => {
            tree_of(r, pkg, req.name, req.namespace, &all, req.seed, None).map_err(Refusal::Tree)?
        }
        None => kudo_plan::Tree::default(),
    };
    let health = req.health.policy();
    let run = run_plan_looked(
        cluster,
        RunRequest {
            package: pkg,
            instance: req.name,
            namespace: req.namespace,
            parameters: req.public,
            plan: req.plan,
            previous_inventory: req.previous,
            dependencies: Some(&tree.packages),
            render_seed: req.seed,
            crd_deletion: req.crd_deletion,
            crd_safety: req.crd_safety,
            health: &health,
            progress: req.progress,
            tree: req.record.for_run(req.fresh),
        },
        req.sensitive,
        looked,
        cancel,
    )
    .await;
    let no_answers = WriteAnswers::new();
    let (inventory, records, plan_status, answers) = match &run {
        Ok(outcome) => (
            outcome.inventory.clone(),
            outcome.dependencies.clone(),
            serde_json::from_value(outcome.plan_status.clone()).ok(),
            &outcome.answers,
        ),
        Err(e) => {
            let inventory = e.inventory.clone().unwrap_or_else(|| req.previous.to_vec());
            let status = match cluster.get(&instance_ref(req.namespace, req.name)).await {
                Ok(Some(instance)) => plan_status_of(&instance, req.plan),
                _ => None,
            };
            // What the dependency instances own is read again by the next refresh.
            let records = req.record.dependencies.clone();
            (inventory, records, status, &no_answers)
        }
    };
    let objects = read_back(cluster, &inventory, req.name, answers).await;
    let dependencies = read_back_records(cluster, records, answers).await;
    let managed = match (req.manifests, &run) {
        (true, Ok(_)) => rendered(cluster, req, pkg, &all, &inventory).await,
        _ => None,
    };
    let children = tree
        .children
        .iter()
        .map(|c| ChildView::of(c, req.sensitive))
        .collect();
    Ok(Applied {
        package: pkg.clone(),
        effective,
        outputs,
        children,
        run,
        objects,
        record: TreeRecord {
            dependencies,
            ..TreeRecord::default()
        },
        plan_status,
        managed,
    })
}

/// The resolution with the dependency packages `kudo_operator` installed in the
/// cluster in place of the resolver's copies (what the cluster has is what runs, as
/// for the instance's own package).
pub(super) async fn installed(cluster: &Cluster, req: &ApplyRequest<'_>) -> Option<Resolution> {
    let mut resolution = req.resolution?.clone();
    // All at once: each read waits on the network, none depends on another.
    let reads = resolution.nodes.iter().skip(1).map(|node| async move {
        // A package is named for its operator.
        let read = super::operator::load_operator(
            cluster,
            req.operator_namespace,
            &node.operator_version_name,
            Some(&node.package),
        )
        .await;
        (node, read)
    });
    let read: Vec<_> = futures::future::join_all(reads).await;
    let mut found = Vec::new();
    for (node, read) in read {
        match read {
            Ok(Some(pkg)) => found.push((node.package.clone(), pkg)),
            Ok(None) => {}
            Err(e) => {
                tracing::debug!(error = %e, ov = %node.operator_version_name, "using the resolver's copy")
            }
        }
    }
    resolution.packages.extend(found);
    Some(resolution)
}

/// Each object's uid and fingerprint now, one per object in key order: as the run's
/// write of it was answered, else read. A failed read leaves them empty rather than
/// failing an apply whose objects exist (the next refresh fills them in).
async fn read_back(
    cluster: &Cluster,
    inventory: &[ObjectRef],
    instance: &str,
    answers: &WriteAnswers,
) -> Vec<(ObjectRef, Option<String>, String)> {
    // One entry per stored object; of two refs of one object (two versions of its
    // group) the later, as the state's map keeps it.
    let by_key: BTreeMap<String, &ObjectRef> =
        inventory.iter().map(|r| (r.qualified_label(), r)).collect();
    let entries: Vec<(&ObjectRef, Option<AnsweredWrite>)> = by_key
        .into_iter()
        .map(|(key, r)| (r, answers.get(&key).cloned().flatten()))
        .collect();
    let unanswered: Vec<ObjectRef> = entries
        .iter()
        .filter(|(_, answer)| answer.is_none())
        .map(|(r, _)| (*r).clone())
        .collect();
    let mut read = super::observe::live_objects(cluster, &unanswered, instance, AnsweredWrite::of)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot read the uids of the managed objects");
            vec![None; unanswered.len()]
        })
        .into_iter();
    entries
        .into_iter()
        .map(|(r, answer)| {
            let now = answer.or_else(|| read.next().flatten());
            let (uid, fingerprint) = now.map(|a| (a.uid, a.fingerprint)).unwrap_or_default();
            (r.clone(), uid, fingerprint)
        })
        .collect()
}

/// The dependency instances' records with the fingerprints their objects have now.
async fn read_back_records(
    cluster: &Cluster,
    records: DependencyRecords,
    answers: &WriteAnswers,
) -> DependencyRecords {
    let reads = records.into_iter().map(|(name, mut record)| async move {
        let live = read_back(cluster, &record.inventory, &name, answers).await;
        record.inventory = live.iter().map(|(r, _, _)| r.clone()).collect();
        record.fingerprints = live.into_iter().map(|(_, _, f)| f).collect();
        (name, record)
    });
    futures::future::join_all(reads).await.into_iter().collect()
}

/// The content of `objects` as the values of this apply render them.
async fn rendered(
    cluster: &Cluster,
    req: &ApplyRequest<'_>,
    package: &Package,
    all: &BTreeMap<String, String>,
    objects: &[ObjectRef],
) -> Option<Manifests> {
    let inputs = kudo_plan::Inputs {
        package,
        instance: req.name,
        namespace: req.namespace,
        parameters: all,
        seed: req.seed,
        dependencies: None,
    };
    current_of(cluster, inputs, req.plan, objects).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_after_a_run_is_the_plan_status_or_the_failures_kind() {
        let finished = |plan_status| {
            Ok(RunOutcome {
                plan_status,
                inventory: Vec::new(),
                kept: Vec::new(),
                dependencies: DependencyRecords::new(),
                ran: BTreeMap::new(),
                answers: WriteAnswers::new(),
                instance: None,
            })
        };
        let status = serde_json::json!({"status": "IN_PROGRESS"});
        assert_eq!(run_status(&finished(status)), "IN_PROGRESS");
        assert_eq!(run_status(&finished(serde_json::json!({}))), "COMPLETE");
        assert_eq!(run_status(&Err(EngineError::fatal("bad"))), "FATAL_ERROR");
        assert_eq!(run_status(&Err(EngineError::new("later", false))), "ERROR");
    }
}
