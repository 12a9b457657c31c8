//! The one planning call of an instance: kudo-plan's decision about the change
//! ([`kudo_plan::decide_change`]: values, outputs, dependency instances, replacement,
//! downgrades, which plan runs) completed with what only the cluster tells: whether the
//! Instance already belongs to someone, and the dry-run of the whole tree
//! ([`super::plan_tree`]). Plan, apply, refresh, import, `manifests`, `children` and
//! the `kudo_plan` action are views of its answer.

use kudo_package::Package;
use kudo_plan::write_only::{SetTwice, WriteOnlyRequest};
use kudo_plan::{Change, ChangeRequest, Refusal};
use kudo_resolve::Resolution;

use super::crd_safety::CrdSafety;
use super::decisions::{TreePrior, TreeRecord};
use super::error::EngineError;
use super::instance_object::instance_ref;
use super::manifests::Manifests;
use super::namespace::{NamespacePlan, NamespaceProblem, NamespaceUser, plan_namespace};
use super::ownership::InstanceHolders;
use super::planning::{Contents, PlanFailure, PlanNote, Prior, current};
use super::tree::{TreePlan, TreeRequest, plan_tree};
use super::write_only;
use crate::cluster::{Cluster, FIELD_MANAGER, ObjectRef};

/// What [`plan_change`] plans: the change kudo-plan decides (`change`), what the state
/// records of the instance that only a cluster plan reads, and how to plan.
#[derive(Debug, Clone, Copy)]
pub struct PlanChangeRequest<'r, 'a> {
    pub change: &'r ChangeRequest<'a>,
    /// The instance's `objects`.
    pub objects: &'r [ObjectRef],
    /// The record of its tree: its dependency instances' records, and the drift a
    /// refresh found in it and in them.
    pub record: &'r TreeRecord,
    /// The instance is created by this apply ([`TreePrior::fresh`]).
    pub fresh: bool,
    pub crd_safety: CrdSafety,
    /// Whether every managed object's content is wanted: the answer's [`Manifests`]
    /// (`kudo_instance.manifests`).
    pub manifests: bool,
    /// A new resource: an Instance of its name must not exist yet (it is someone
    /// else's). Off for the create half of a replacement, whose old Instance still
    /// stands.
    pub must_not_exist: bool,
    /// `create_namespace`: a missing namespace is created by the apply rather than
    /// failing the plan.
    pub create_namespace: bool,
    /// Where the OperatorVersion `change` names is (`kudo_operator`'s namespace), and the
    /// prior one: a package `change` does not carry (no plan-time copy) is read from
    /// there when the cluster can be asked ([`plan_change`]).
    pub operator_namespace: Option<&'r str>,
    pub prior_operator_namespace: Option<&'r str>,
    /// Write-only values in use: read (the stored ones, when the cluster can be asked)
    /// and joined to `change`'s sensitive values and to its prior's ([`plan_change`]).
    pub write_only: Option<WriteOnlyRequest<'r>>,
}

impl PlanChangeRequest<'_, '_> {
    fn prior(&self) -> ClusterPrior<'_> {
        ClusterPrior {
            objects: self.objects,
            record: self.record,
            fresh: self.fresh,
        }
    }

    fn options(&self) -> ChangeOptions {
        ChangeOptions {
            crd_safety: self.crd_safety,
            manifests: self.manifests,
            must_not_exist: self.must_not_exist,
            create_namespace: self.create_namespace,
        }
    }
}

/// What the state records that only a cluster plan reads.
#[derive(Debug, Clone, Copy)]
struct ClusterPrior<'a> {
    /// The instance's `objects`.
    pub objects: &'a [ObjectRef],
    /// The record of its tree: its dependency instances' records, and the drift a
    /// refresh found in it and in them.
    pub record: &'a TreeRecord,
    /// The instance is created by this apply ([`TreePrior::fresh`]).
    pub fresh: bool,
}

/// How to plan ([`PlanChangeRequest`]'s settings).
#[derive(Debug, Clone, Copy)]
struct ChangeOptions {
    crd_safety: CrdSafety,
    manifests: bool,
    must_not_exist: bool,
    create_namespace: bool,
}

/// The whole plan of a change.
#[derive(Debug)]
pub struct Planned<'a> {
    /// Whether the dry-run covered the whole tree (the instance and every dependency
    /// instance that runs), so an apply made right after need not dry-run it again
    /// ([`TreePrior::checked`]).
    pub checked: bool,
    /// Whether that dry-run also judged every object of the tree (none waited for a CRD
    /// or namespace the apply creates), so the run's steps need not rehearse their
    /// writes either ([`TreePrior::every_object_checked`]).
    pub every_object_checked: bool,
    /// What needs no cluster.
    pub change: Change<'a>,
    /// The dry-run of the instance and every dependency instance below it; `None` when
    /// no plan runs, the plan is not known yet, or the cluster cannot be asked (a note
    /// says why when that is worth saying).
    pub tree: Option<TreePlan>,
    pub notes: Vec<PlanNote>,
    /// When no plan runs: every managed object with the content its last run rendered
    /// (only with [`PlanChangeRequest::manifests`]).
    pub current: Option<Manifests>,
}

impl Planned<'_> {
    /// The record the apply right after this plan starts from: `prior`'s records and
    /// drift, with what this plan hands over: whether its dry-run covered the whole tree
    /// (and judged every object), and then its decisions, which the apply runs as they
    /// are.
    pub fn record(&self, prior: &TreeRecord) -> TreeRecord {
        let decided = match self.checked {
            true => self.tree.as_ref().map(|t| t.decisions.clone()),
            false => None,
        };
        TreeRecord {
            checked: self.checked,
            every_object_checked: self.every_object_checked,
            decided,
            ..prior.clone()
        }
    }
}

/// Why the plan fails.
#[derive(Debug, thiserror::Error)]
pub enum PlanRefusal {
    /// What kudo-plan refuses (no cluster needed).
    #[error(transparent)]
    Change(Refusal),
    /// The Instance exists, and this resource did not make it.
    #[error("instance {namespace}/{name} already exists")]
    Exists {
        namespace: String,
        name: String,
        /// Who holds it, as far as the object tells: ` (it is a dependency of instance
        /// p; field managers: a, b; created t)`, empty when it tells nothing.
        holders: String,
    },
    /// The apply would fail the same way: the apply's own error.
    #[error("{summary}: {error}")]
    Cluster {
        summary: &'static str,
        error: Box<EngineError>,
    },
    /// The cluster could not be asked whether the Instance exists.
    #[error("{0}")]
    Unreachable(Box<EngineError>),
    /// The instance's namespace is not there (and it is not to be created), is being
    /// deleted, or creating it is refused: the same at plan and at apply.
    #[error("{problem}")]
    Namespace {
        namespace: String,
        problem: NamespaceProblem,
    },
    /// The OperatorVersion the instance runs is not in the cluster, and the caller has
    /// no copy of it.
    #[error("there is no OperatorVersion {operator_namespace}/{operator_version} in the cluster")]
    NotInstalled {
        operator_namespace: String,
        operator_version: String,
    },
    /// The dependency tree had to be resolved again (no recorded one) and could not be.
    #[error("{0}")]
    Unresolved(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Write-only names also set as parameters or sensitive parameters.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    WriteOnlySetTwice(Vec<SetTwice>),
}

impl PlanRefusal {
    /// The stored write-only values cannot be read: the same at plan and at apply.
    pub(crate) fn write_only_unreadable(error: EngineError) -> Self {
        PlanRefusal::Cluster {
            summary: "Cannot read the write-only parameters",
            error: Box::new(error),
        }
    }

    pub(crate) fn namespace(namespace: &str, problem: NamespaceProblem) -> Self {
        PlanRefusal::Namespace {
            namespace: namespace.to_string(),
            problem,
        }
    }
}

/// Fails when the Instance `namespace/name` exists: a new instance must not take over
/// one someone else made (import adopts it). Asked by the plan of a create and again by
/// its apply, which may come later (a saved plan).
pub(crate) async fn check_absent(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<(), PlanRefusal> {
    let r = instance_ref(namespace, name);
    match cluster.get(&r).await {
        Ok(None) => Ok(()),
        Ok(Some(found)) => Err(PlanRefusal::Exists {
            namespace: namespace.to_string(),
            name: name.to_string(),
            // Our own field manager named for what it means to whoever reads this.
            holders: InstanceHolders::of(&found).describe(|m| match m {
                FIELD_MANAGER => format!("{m} (another Terraform configuration or state)"),
                other => other.to_string(),
            }),
        }),
        Err(e) => Err(PlanRefusal::Unreachable(Box::new(
            EngineError::from(e).with_object(&r),
        ))),
    }
}

/// Plans the change `request` asks for: `cluster` is `None` while the connection is not
/// known yet (the views that need it stay unknown). `answer` is handed the change as
/// planned (with the packages read here, see [`PlanChangeRequest::operator_namespace`],
/// and the write-only values joined, see [`PlanChangeRequest::write_only`]) and the plan
/// or its refusal, and what it returns is the result: the plan borrows the packages,
/// which live only as long as this call.
pub async fn plan_change<R>(
    cluster: Option<&Cluster>,
    request: &PlanChangeRequest<'_, '_>,
    answer: impl for<'p> FnOnce(&ChangeRequest<'p>, Result<Planned<'p>, PlanRefusal>) -> R,
) -> R {
    // A plan writes nothing: what it finds unserved stays so while it asks.
    let cluster = cluster.map(Cluster::remembering_misses);
    let cluster = cluster.as_ref();
    let (read, stored) = futures::future::join(
        PlanPackages::read(cluster, request),
        write_only::stored_for_plan(cluster, request.write_only.as_ref()),
    )
    .await;
    let req = read.complete(request.change);
    let stored = match stored {
        Ok(stored) => stored,
        Err(e) => return answer(&req, Err(PlanRefusal::write_only_unreadable(e))),
    };
    let values = match &request.write_only {
        Some(w) => match write_only::for_plan(w, stored, &req) {
            Ok(values) => Some(values),
            Err(twice) => return answer(&req, Err(PlanRefusal::WriteOnlySetTwice(twice))),
        },
        None => None,
    };
    let req = with_values(req, values.as_ref());
    let planned = decide(cluster, &req, request).await;
    answer(&req, planned)
}

/// `req` with the write-only values joined.
fn with_values<'p>(
    mut req: ChangeRequest<'p>,
    values: Option<&'p write_only::PlanValues>,
) -> ChangeRequest<'p> {
    let Some(values) = values else {
        return req;
    };
    req.sensitive = &values.change.sensitive;
    req.parameters = values.change.parameters.as_ref();
    if let (Some(prior), Some(before)) = (req.prior.as_mut(), &values.prior) {
        prior.parameters = Some(before);
    }
    req
}

/// The packages a plan reads from the cluster because its request has no copy of them.
struct PlanPackages {
    package: Option<Package>,
    prior: Option<Package>,
    /// The dependency tree of a package read here that has no KudoOperator task:
    /// empty, known without resolving.
    resolution: Option<Resolution>,
}

impl PlanPackages {
    async fn read(cluster: Option<&Cluster>, request: &PlanChangeRequest<'_, '_>) -> PlanPackages {
        let change = request.change;
        let prior = change.prior.as_ref();
        // The prior package is wanted for the version order of a change of operator.
        let same_operator = prior.is_some_and(|p| {
            p.operator_version == change.operator_version
                && request.prior_operator_namespace == request.operator_namespace
        });
        let (package, prior) = futures::future::join(
            read_for_plan(
                cluster,
                request.operator_namespace,
                change.operator_version,
                change.package,
            ),
            async {
                match (prior, same_operator) {
                    (Some(p), false) => {
                        let ns = request.prior_operator_namespace;
                        read_for_plan(cluster, ns, p.operator_version, p.package).await
                    }
                    _ => None,
                }
            },
        )
        .await;
        // No copy, so no recorded tree either: only one known without resolving.
        let resolution = package
            .as_ref()
            .filter(|_| change.resolution.is_none())
            .and_then(|p| kudo_plan::known_tree(p, || None));
        PlanPackages {
            package,
            prior,
            resolution,
        }
    }

    /// `change` with the packages read here.
    fn complete<'p>(&'p self, change: &ChangeRequest<'p>) -> ChangeRequest<'p> {
        let mut req = change.clone();
        req.package = req.package.or(self.package.as_ref());
        req.resolution = req.resolution.or(self.resolution.as_ref());
        if let Some(prior) = req.prior.as_mut() {
            prior.package = prior.package.or(self.prior.as_ref());
        }
        req
    }
}

/// The package of OperatorVersion `name` in `namespace` when the caller has none and the
/// cluster can tell; `None` otherwise: the plan goes ahead without it (its parameters are
/// then checked by the apply, which reads the package itself).
async fn read_for_plan(
    cluster: Option<&Cluster>,
    namespace: Option<&str>,
    name: Option<&str>,
    have: Option<&Package>,
) -> Option<Package> {
    if have.is_some() {
        return None;
    }
    let (cluster, namespace, name) = (cluster?, namespace?, name?);
    match super::operator::load_operator(cluster, namespace, name, None).await {
        Ok(found) => found,
        Err(e) => {
            tracing::debug!(error = %e, "package not available while planning");
            None
        }
    }
}

/// The plan of `req` (`request.change` with the packages read).
async fn decide<'a>(
    cluster: Option<&Cluster>,
    req: &ChangeRequest<'a>,
    request: &PlanChangeRequest<'_, '_>,
) -> Result<Planned<'a>, PlanRefusal> {
    let (prior, options) = (request.prior(), request.options());
    // Decided without the cluster; a refusal counts after the namespace's (below).
    let change = kudo_plan::decide_change(req);
    // A namespace that is not there fails the plan, unless this resource creates it;
    // a create's Instance must not be there yet. Asked side by side, the namespace's
    // answer first.
    let checks = async {
        let Some(cluster) = cluster else {
            return Ok(NamespacePlan::Exists);
        };
        let name = req.name.unwrap_or("(known at apply)");
        let user = options
            .create_namespace
            .then(|| NamespaceUser::instance(req.namespace, name));
        let absent = async {
            match (req.name, options.must_not_exist) {
                (Some(name), true) => check_absent(cluster, req.namespace, name).await,
                _ => Ok(()),
            }
        };
        let (namespace, absent) = futures::future::join(
            plan_namespace(cluster, req.namespace, user.as_ref()),
            absent,
        )
        .await;
        let namespace = namespace.map_err(|p| PlanRefusal::namespace(req.namespace, p))?;
        absent?;
        Ok(namespace)
    };
    // The dry-run of the tree goes beside those checks rather than after them: it
    // writes nothing, needs nothing they find (an object a missing namespace holds is
    // judged unchecked), and its answer counts only when they pass.
    let looks = async {
        let (Some(cluster), Ok(change)) = (cluster, &change) else {
            return Looks::Nothing;
        };
        match change.plan() {
            Some(plan) => Looks::DryRun(Box::new(
                dry_run(cluster, req, prior, options, plan, change).await,
            )),
            None if options.manifests => {
                Looks::Current(current_objects(cluster, req, change, prior.objects).await)
            }
            None => Looks::Nothing,
        }
    };
    let (namespace, looks) = futures::future::join(checks, looks).await;
    let namespace = namespace?;
    let change = change.map_err(PlanRefusal::Change)?;
    let mut planned = Planned {
        checked: false,
        every_object_checked: false,
        change,
        tree: None,
        notes: Vec::new(),
        current: None,
    };
    match looks {
        Looks::DryRun(dry_run) => {
            let dry_run = (*dry_run)?;
            planned.checked = dry_run.whole;
            planned.every_object_checked =
                dry_run.whole && dry_run.tree.as_ref().is_some_and(every_object_judged);
            planned.tree = dry_run.tree;
            planned.notes = dry_run.notes;
        }
        Looks::Current(current) => planned.current = current,
        Looks::Nothing => {}
    }
    if let Some(created) = namespace.created(req.namespace)
        && let Some(changes) = planned
            .tree
            .as_mut()
            .and_then(|t| t.instance.changes.as_mut())
    {
        changes.create.insert(0, created);
    }
    Ok(planned)
}

/// What [`plan_change`] looked at in the cluster beside its checks.
enum Looks {
    /// The dry-run of the tree for the plan that runs.
    DryRun(Box<Result<DryRun, PlanRefusal>>),
    /// No plan runs: the managed objects' content ([`PlanChangeRequest::manifests`]).
    Current(Option<Manifests>),
    Nothing,
}

/// The dry-run of the whole tree for `plan`.
async fn dry_run(
    cluster: &Cluster,
    req: &ChangeRequest<'_>,
    prior: ClusterPrior<'_>,
    options: ChangeOptions,
    plan: &str,
    change: &Change<'_>,
) -> Result<DryRun, PlanRefusal> {
    let Some(desired) = &change.desired else {
        return Ok(DryRun::default());
    };
    // Object contents can be compared only with what the same package rendered.
    let same_package = req.prior.as_ref().is_some_and(|p| {
        p.operator_version == req.operator_version
            && p.digest.is_some()
            && p.digest == change.digest.as_deref()
    });
    let replaced = change.replaces();
    let old_values = req
        .prior
        .as_ref()
        .and_then(|p| p.parameters)
        .filter(|_| same_package && !replaced);
    let (objects, drifted) = match replaced {
        // A replacement starts from nothing.
        true => (&[][..], &[][..]),
        false => (
            prior.objects,
            prior.record.drifted_of(req.name.unwrap_or_default()),
        ),
    };
    let tree_prior = prior.record.for_plan(prior.fresh);
    let root_prior = Prior {
        objects,
        parameters: old_values,
        drifted,
    };
    match &change.tree {
        Some(tree) => {
            let desired = desired.with_dependencies(&tree.packages);
            dry_run_tree(cluster, &desired, plan, root_prior, tree_prior, options).await
        }
        None if kudo_plan::has_dependency_tasks(desired.inputs.package) => {
            let note = PlanNote {
                summary: "Dependency instances not planned yet".to_string(),
                detail: "The operator's dependency tree is known once its kudo_operator resource is planned with the cluster, so this plan checks only the instance's own objects; the apply checks every dependency instance before it writes anything.".to_string(),
            };
            let mut alone = dry_run_alone(cluster, desired, plan, root_prior, options).await?;
            alone.notes.insert(0, note);
            Ok(alone)
        }
        None => dry_run_tree(cluster, desired, plan, root_prior, tree_prior, options).await,
    }
}

async fn dry_run_tree(
    cluster: &Cluster,
    desired: &kudo_plan::Desired<'_>,
    plan: &str,
    prior: Prior<'_>,
    tree: TreePrior<'_>,
    options: ChangeOptions,
) -> Result<DryRun, PlanRefusal> {
    let request = TreeRequest {
        desired,
        plan,
        prior,
        tree,
        crd_safety: options.crd_safety,
        contents: Contents::wanted(options.manifests),
    };
    match plan_tree(cluster, &request).await {
        Ok(tree) => {
            let mut notes = tree.instance.notes.clone();
            for d in &tree.dependencies {
                if let Some(p) = &d.plan {
                    notes.extend(p.notes.iter().map(|n| in_dependency(n, &d.instance)));
                }
            }
            Ok(DryRun {
                tree: Some(tree),
                notes,
                whole: true,
            })
        }
        Err(failure) => refused_or_unknown(failure),
    }
}

/// Whether the dry-run judged every object of the instance and of each dependency
/// instance that runs (their changes known, no object left to the apply).
fn every_object_judged(tree: &TreePlan) -> bool {
    let judged = |p: &crate::engine::planning::InstancePlan| {
        p.changes.is_some() && p.planned.iter().all(|o| o.checked)
    };
    judged(&tree.instance)
        && tree
            .dependencies
            .iter()
            .all(|d| d.plan.as_ref().is_none_or(judged))
}

/// What the dry-run of a change found.
#[derive(Default)]
struct DryRun {
    /// `None`: not known now (the notes say why).
    tree: Option<TreePlan>,
    notes: Vec<PlanNote>,
    /// Whether `tree` covers every dependency instance (the tree was known), so the
    /// apply right after need not check it again ([`Planned::checked`]).
    whole: bool,
}

/// The dry-run of the instance's own objects, for a plan made before its dependency
/// tree is known.
async fn dry_run_alone(
    cluster: &Cluster,
    desired: &kudo_plan::Desired<'_>,
    plan: &str,
    prior: Prior<'_>,
    options: ChangeOptions,
) -> Result<DryRun, PlanRefusal> {
    let alone = super::planning::plan_instance(
        cluster,
        desired,
        plan,
        &prior,
        options.crd_safety,
        Contents::wanted(options.manifests),
    )
    .await;
    match alone {
        Ok(instance) => {
            let notes = instance.notes.clone();
            let tree = TreePlan {
                instance,
                decisions: Default::default(),
                dependencies: Vec::new(),
                // What the dependency instances run is not known yet.
                outlines: Vec::new(),
            };
            Ok(DryRun {
                tree: Some(tree),
                notes,
                whole: false,
            })
        }
        Err(failure) => refused_or_unknown(failure),
    }
}

fn refused_or_unknown(failure: PlanFailure) -> Result<DryRun, PlanRefusal> {
    match failure {
        PlanFailure::Refused { summary, error } => Err(PlanRefusal::Cluster { summary, error }),
        PlanFailure::Unknown(note) => Ok(DryRun {
            tree: None,
            notes: vec![note],
            whole: false,
        }),
    }
}

/// A dependency instance's note, saying whose it is.
fn in_dependency(note: &PlanNote, instance: &str) -> PlanNote {
    PlanNote {
        summary: format!("{} (dependency instance {instance})", note.summary),
        detail: note.detail.clone(),
    }
}

/// The managed objects' content when no plan runs: the last plan's render of the
/// values the last run had (nothing changed).
async fn current_objects(
    cluster: &Cluster,
    req: &ChangeRequest<'_>,
    change: &Change<'_>,
    objects: &[ObjectRef],
) -> Option<Manifests> {
    let desired = change.desired.as_ref()?;
    let last = req
        .prior
        .as_ref()
        .and_then(|p| p.last_plan)
        .unwrap_or(kudo_plan::DEFAULT_PLAN);
    current(cluster, desired, last, objects).await
}
