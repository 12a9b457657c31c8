//! The one planning call: what an apply of one instance's plan will do, computed at
//! plan time from the desired state, the prior run and a read-only view of the cluster
//! (server-side dry-runs, GETs, discovery; nothing is written).
//!
//! Every view of a pending apply is made from [`InstancePlan`]: the provider's
//! `preview` and `manifests`, the objects it will manage, and the refusals that fail
//! `terraform plan`. The run ([`super::run_plan`]) decides the same things with the same
//! functions: which objects a plan applies ([`super::preview_walk`]'s translation and
//! ownership rules), what pruning removes ([`super::prune::unwanted`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use kudo_plan::{Desired, Inputs};
use serde_json::Value;

use super::crd_safety::CrdSafety;
use super::error::EngineError;
use super::manifests::{Manifests, Source};
use super::preview::{
    Answers, OtherKinds, PlannedObject, PreviewAction, preview_walk_in, walk_objects,
};
use super::prune::ObjectIndex;
use super::prune::{wanted_refs, with_namespace};
use super::run::RunRequest;
use crate::cluster::{Cluster, ClusterError, ObjectRef, Trouble};

/// What the instance's last run worked from, as the Terraform state records it.
#[derive(Debug, Clone, Copy)]
pub struct Prior<'a> {
    /// The `objects` inventory.
    pub objects: &'a [ObjectRef],
    /// The parameters of the last run (sensitive ones included), when it ran this same
    /// package; `None` on create, upgrade or a changed package, where every object
    /// already managed counts as updated.
    pub parameters: Option<&'a BTreeMap<String, String>>,
    /// Objects whose fields changed outside Terraform (a refresh found them): the
    /// apply applies them again, so they count as updated.
    pub drifted: &'a [ObjectRef],
}

/// The objects the apply creates, updates and deletes, in plan order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    pub create: Vec<ObjectRef>,
    pub update: Vec<ObjectRef>,
    pub delete: Vec<ObjectRef>,
}

/// Something the plan tells the user without failing: an object converted to a served
/// API version, or why part of the plan stays unknown until the apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanNote {
    pub summary: String,
    pub detail: String,
}

/// The whole plan of one instance's run.
#[derive(Debug, Clone)]
pub struct InstancePlan {
    /// Every object the plan applies, as the server's dry-run judged it (the verdicts;
    /// the answers themselves are not kept).
    pub planned: Vec<PlannedObject>,
    /// What changes; `None` when it cannot be known before the apply (a note says why).
    pub changes: Option<Changes>,
    /// Warnings: translated API versions, objects checked only at apply, unknowns.
    pub notes: Vec<PlanNote>,
    /// Every object the instance manages after the apply with where its content comes
    /// from; `None` when `changes` is, or when [`Contents::Skip`] was asked.
    pub managed: Option<Manifests>,
    /// The inventory the run leaves when it succeeds (what the state's `objects` then
    /// holds), by the run's own rule: `None` when a task of the plan writes objects the
    /// plan cannot name (Pipe, KudoOperator or Webhook tasks) or `changes` is unknown.
    pub after: Option<Vec<Remaining>>,
}

/// An object a successful run leaves ([`InstancePlan::after`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remaining {
    pub object: ObjectRef,
    /// A Delete task of the run removes it before a later task applies it again: it is
    /// a new object (a new uid) even when it existed before.
    pub recreated: bool,
}

/// Why there is no plan.
#[derive(Debug)]
pub enum PlanFailure {
    /// The apply would certainly fail the same way, so the plan fails now and nothing
    /// is written. `summary` heads the diagnostic; `error` is the apply's own error.
    Refused {
        summary: &'static str,
        error: Box<EngineError>,
    },
    /// The plan cannot be known now and may well work at apply (the cluster was not
    /// reachable, a transient server error, a kind another resource of the
    /// configuration may install): `changes` stays unknown and the note says why.
    Unknown(PlanNote),
}

/// The one classification of a failure met while planning: refused when the apply
/// would meet the same failure whatever happens in between, unknown otherwise.
pub fn classify(error: EngineError, plan: &str) -> PlanFailure {
    let refuse = |summary| PlanFailure::Refused {
        summary,
        error: Box::new(error.clone()),
    };
    if error.is_cancelled() {
        return unknown(plan, &error);
    }
    match error.trouble {
        Trouble::ApiVersion => match error.cluster_cause() {
            Some(ClusterError::Translate(kube_api_versions::TranslateError::Removed {
                ..
            })) => refuse("API removed, with nothing to replace it"),
            _ => refuse("API version not served"),
        },
        Trouble::Taken => refuse("Object belongs to another instance"),
        Trouble::Webhook => refuse("Webhook URL not allowed"),
        Trouble::Denied => refuse("Not allowed for these credentials"),
        // A custom kind no CRD serves yet: another resource of the configuration (an
        // operator instance applied first) may install it, which only the apply shows.
        Trouble::Content
            if matches!(
                error.cluster_cause(),
                Some(ClusterError::UnknownKind { .. })
            ) =>
        {
            unknown(plan, &error)
        }
        Trouble::Content => refuse("The API server refuses this object"),
        Trouble::Unreachable
        | Trouble::Transient
        | Trouble::Namespace
        | Trouble::Cancelled
        | Trouble::Unschedulable => unknown(plan, &error),
    }
}

fn unknown(plan: &str, error: &EngineError) -> PlanFailure {
    PlanFailure::Unknown(PlanNote {
        summary: "No preview".to_string(),
        detail: format!(
            "The dry-run of plan {plan:?} could not be completed, so `preview` is unknown until the apply, which checks again before it writes: {error}"
        ),
    })
}

/// What running `plan` of the desired state (sensitive parameters included; only object
/// names come out) would create, update and delete. The server-side dry-run checks the
/// objects and names them; which of them change is decided from the prior run and the
/// walks alone, never from what the cluster holds: Terraform plans again during the
/// apply (after the destroy half of a replacement, after other resources changed the
/// cluster) and the two plans must agree. `contents` says whether the content of every
/// managed object is wanted too ([`InstancePlan::managed`]).
pub async fn plan_instance(
    cluster: &Cluster,
    desired: &Desired<'_>,
    plan: &str,
    prior: &Prior<'_>,
    crd_safety: CrdSafety,
    contents: Contents,
) -> Result<InstancePlan, PlanFailure> {
    let others = OtherKinds::new();
    plan_instance_in(cluster, desired, plan, prior, crd_safety, contents, &others).await
}

/// [`plan_instance`] of one instance of a tree: objects of a kind that a CRD of
/// another instance of the tree defines (`others`) are checked only at apply.
pub(crate) async fn plan_instance_in(
    cluster: &Cluster,
    desired: &Desired<'_>,
    plan: &str,
    prior: &Prior<'_>,
    crd_safety: CrdSafety,
    contents: Contents,
    others: &OtherKinds,
) -> Result<InstancePlan, PlanFailure> {
    let inputs = desired.inputs;
    let request = RunRequest {
        package: inputs.package,
        instance: inputs.instance,
        namespace: inputs.namespace,
        parameters: inputs.parameters,
        plan,
        previous_inventory: prior.objects,
        // This instance's own objects; its dependency instances are planned by
        // `tree::plan_tree`, each with a call of its own.
        dependencies: None,
        render_seed: inputs.seed,
        // A plan deletes nothing.
        crd_deletion: super::removal::CrdDeletion::default(),
        // Checked below, before the dry-run, with notes for `warn`.
        crd_safety,
        // A plan waits for nothing.
        health: &super::readiness::HealthPolicy::Kudo,
        progress: None,
        tree: Default::default(),
    };
    let walk = desired
        .plan(plan)
        .map_err(|e| classify(EngineError::from(e).with_plan(plan), plan))?;
    // Every group-version the walk uses, asked side by side (what follows asks object
    // by object, and would wait on each group-version in turn).
    super::preview::discover_at_once(cluster, walk).await;
    // Before the dry-run: the API server refuses some of these changes itself (a stored
    // version dropped) in words that do not say what is at stake.
    let mut notes = crd_safety_notes(cluster, walk, plan, crd_safety).await?;
    let namespace = inputs.namespace;
    let mut new_render: BTreeMap<ObjectRef, &Value> = BTreeMap::new();
    let mut deleted_by_tasks: BTreeSet<ObjectRef> = BTreeSet::new();
    // Each object's last action in run order: the run's inventory keeps what it applied
    // last and drops what it deleted last (`run::objects`).
    let mut last_actions = LastActions::new(walk);
    for o in walk_objects(walk) {
        let Ok(r) = ObjectRef::from_object(o.object) else {
            last_actions.unnamed();
            continue;
        };
        let r = with_namespace(cluster, r, namespace).await;
        last_actions.record(&r, o.action);
        match o.action {
            PreviewAction::Apply => {
                new_render.insert(r, o.object);
            }
            PreviewAction::Delete => {
                deleted_by_tasks.insert(r);
            }
        }
    }
    // The last run's render (the same walk with the old values), compared and let go
    // before the dry-runs: at 10,000 objects each walk is tens of megabytes.
    let old = match prior.parameters {
        Some(old) => {
            OldRender::compare(cluster, inputs, old, plan, &new_render, prior, contents).await
        }
        None => None,
    };
    let planned = preview_walk_in(cluster, &request, walk, Answers::Drop, others)
        .await
        .map_err(|e| classify(e.with_plan(plan), plan))?;
    // Converted objects are announced after the CRD notes; where the changes are known,
    // only those the conversion reaches in this apply (see `announced`).
    let translations = translated_objects(&planned);
    let mut later = removed_field_notes(&planned);
    later.extend(unchecked_notes(&planned));
    let every_note = |mut notes: Vec<PlanNote>, later: Vec<PlanNote>| {
        notes.extend(translations.iter().map(|(_, n)| n.clone()));
        notes.extend(later);
        notes
    };
    // A webhook is called by the apply only: what it answers cannot be shown.
    let calls: Vec<String> = walk
        .webhooks()
        .map(|(step, task, call)| {
            format!(
                "task {task:?} (phase {:?}, step {:?}) calls {}",
                step.location.phase,
                step.location.step,
                call.shown_url()
            )
        })
        .collect();
    if !calls.is_empty() {
        notes = every_note(notes, later);
        let from_templates: Vec<String> = planned.iter().map(|p| p.object.label()).collect();
        notes.push(PlanNote {
            summary: "Preview unknown: webhook tasks run at apply time".to_string(),
            detail: format!(
                "Plan {plan:?} runs Webhook tasks: {}. A webhook is never called while planning, because the call may have side effects, so the objects it answers, and with them what the apply creates, updates and deletes, are known only after the apply; `preview` is unknown. Objects from templates the plan applies: {}.",
                calls.join("; "),
                if from_templates.is_empty() {
                    "none".to_string()
                } else {
                    from_templates.join(", ")
                }
            ),
        });
        return Ok(InstancePlan {
            planned,
            changes: None,
            notes,
            managed: None,
            after: None,
        });
    }

    // Compared by stored object: after a cluster upgrade the state may name an object
    // under the version it was applied as, the plan under the version served now.
    let prior_ids = ObjectIndex::new(prior.objects);
    let known = |r: &ObjectRef| prior_ids.contains(r);
    let drifted = ObjectIndex::new(prior.drifted);
    let mut changes = Changes::default();
    let mut applied = BTreeSet::new();
    for p in &planned {
        if !applied.insert(p.object.clone()) {
            continue;
        }
        if !known(&p.object) {
            changes.create.push(p.object.clone());
            continue;
        }
        let same = !drifted.contains(&p.object)
            && old
                .as_ref()
                .is_some_and(|old| old.unchanged.contains(&p.object));
        if !same {
            changes.update.push(p.object.clone());
        }
    }
    // What the run prunes: the same rule as the run's (nothing when some plan does not
    // walk, like the run).
    let mut gone: Vec<ObjectRef> = deleted_by_tasks.into_iter().collect();
    let mut pruned: Vec<ObjectRef> = Vec::new();
    if let Some(wanted) = wanted_refs(cluster, desired).await {
        let unwanted = super::prune::unwanted(prior.objects, &applied, &wanted);
        pruned.clone_from(&unwanted);
        // A webhook's earlier answer may hold them (the run then keeps them), which
        // only the objects in the cluster can tell: the plan does not guess.
        let webhook_tasks = desired.webhook_tasks();
        if !webhook_tasks.is_empty() && !unwanted.is_empty() {
            notes = every_note(notes, later);
            let tasks: Vec<String> = webhook_tasks.iter().map(|t| format!("{t:?}")).collect();
            let objects: Vec<String> = unwanted.iter().map(ObjectRef::label).collect();
            notes.push(PlanNote {
                summary: "Preview unknown: objects a webhook may hold".to_string(),
                detail: format!(
                    "No template renders {} any more, but Webhook task {} of this package may have answered them; the apply keeps what a webhook's latest answer holds and prunes the rest, which only the objects in the cluster tell. `preview` is unknown.",
                    objects.join(", "),
                    tasks.join(", ")
                ),
            });
            return Ok(InstancePlan {
                planned,
                changes: None,
                notes,
                managed: None,
                after: None,
            });
        }
        gone.extend(unwanted);
    }
    // A translation is announced when it reaches the cluster in this apply: the object
    // is created or its content changes, or the state records it under another version
    // (a cluster upgrade). Every plan re-applies it converted, but saying so on every
    // parameter change only buries the change.
    let announced = |r: &ObjectRef| {
        changes.create.contains(r)
            || changes.update.contains(r)
            || prior
                .objects
                .iter()
                .any(|o| o.same_object(r) && o.api_version != r.api_version)
    };
    notes.extend(
        translations
            .iter()
            .filter(|(r, _)| announced(r))
            .map(|(_, n)| n.clone()),
    );
    notes.extend(later);
    let applied_ids = ObjectIndex::new(&applied);
    let mut deleted: Vec<ObjectRef> = Vec::new();
    let mut deleted_ids = HashSet::new();
    for r in &gone {
        if known(r) && !applied_ids.contains(r) && deleted_ids.insert(r.identity()) {
            deleted.push(r.clone());
        }
    }
    deleted.sort();
    changes.delete = deleted.clone();
    let managed = match contents {
        Contents::Skip => None,
        // After the apply: what the run applies, as rendered now, and the earlier
        // objects it neither applies nor removes, as the last run's values render them.
        Contents::Keep => {
            let mut managed: Vec<(ObjectRef, Source)> = applied
                .iter()
                .filter_map(|r| Some((r.clone(), Source::Applied((*new_render.get(r)?).clone()))))
                .collect();
            let mut kept = old.map(|old| old.kept).unwrap_or_default();
            for (i, r) in prior.objects.iter().enumerate() {
                if applied_ids.contains(r) || deleted_ids.contains(&r.identity()) {
                    continue;
                }
                managed.push((r.clone(), Source::Kept(kept.remove(&i))));
            }
            Some(Manifests(managed))
        }
    };
    let after = last_actions.inventory_after(prior.objects, &pruned);
    Ok(InstancePlan {
        planned,
        changes: Some(changes),
        notes,
        managed,
        after,
    })
}

/// An object's identity ([`ObjectRef::identity`]), owned.
type Identity = (String, String, Option<String>, String);

fn owned_identity(r: &ObjectRef) -> Identity {
    let (group, kind, namespace, name) = r.identity();
    (
        group.to_string(),
        kind.to_string(),
        namespace.map(str::to_string),
        name.to_string(),
    )
}

/// The last action of each object a plan's walk names, in run order, for the
/// inventory a successful run leaves ([`InstancePlan::after`]).
struct LastActions {
    /// `None` when the walk writes objects it does not name (Pipe, KudoOperator and
    /// Webhook tasks) or names one that has no identity: the inventory is then not
    /// predicted.
    last: Option<HashMap<Identity, (ObjectRef, PreviewAction)>>,
    /// Objects a Delete task removes and a later task applies again.
    recreated: HashSet<Identity>,
}

impl LastActions {
    fn new(walk: &kudo_plan::PlanWalk<'_>) -> Self {
        let named_only = walk.tasks().all(|t| {
            matches!(
                t.action,
                kudo_plan::Action::Apply(_)
                    | kudo_plan::Action::Delete(_)
                    | kudo_plan::Action::Dummy { .. }
            )
        });
        LastActions {
            last: named_only.then(HashMap::new),
            recreated: HashSet::new(),
        }
    }

    fn unnamed(&mut self) {
        self.last = None;
    }

    fn record(&mut self, r: &ObjectRef, action: PreviewAction) {
        if let Some(last) = &mut self.last {
            let id = owned_identity(r);
            if action == PreviewAction::Apply
                && matches!(last.get(&id), Some((_, PreviewAction::Delete)))
            {
                self.recreated.insert(id.clone());
            }
            last.insert(id, (r.clone(), action));
        }
    }

    /// The run's rule (`run::pruning`): the earlier objects the run does not touch, and
    /// every object whose last action applies it, less what pruning removes. An object
    /// applied again replaces the ref the earlier run recorded (another version of its
    /// group, as the run keeps it).
    fn inventory_after(&self, prior: &[ObjectRef], pruned: &[ObjectRef]) -> Option<Vec<Remaining>> {
        let last = self.last.as_ref()?;
        let touched = |r: &ObjectRef| last.contains_key(&owned_identity(r));
        let pruned = ObjectIndex::new(pruned);
        let mut after: BTreeMap<ObjectRef, bool> = prior
            .iter()
            .filter(|r| !touched(r) && !pruned.contains(r))
            .map(|r| (r.clone(), false))
            .collect();
        after.extend(
            last.iter()
                .filter(|(_, (_, action))| *action == PreviewAction::Apply)
                .map(|(id, (r, _))| (r.clone(), self.recreated.contains(id))),
        );
        Some(
            after
                .into_iter()
                .map(|(object, recreated)| Remaining { object, recreated })
                .collect(),
        )
    }
}

/// Whether [`plan_instance`] gives the content of every object managed after the apply
/// ([`InstancePlan::managed`]): a copy of each, which only the `manifests` attribute
/// shows. The actions' requests ask with a `manifests` flag ([`Contents::wanted`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contents {
    Keep,
    Skip,
}

impl Contents {
    /// A request's `manifests` flag.
    pub(crate) fn wanted(manifests: bool) -> Contents {
        match manifests {
            true => Contents::Keep,
            false => Contents::Skip,
        }
    }
}

/// What the plan needs of the last run's render: which objects render as they did, and
/// (with [`Contents::Keep`]) the old content of the prior objects this plan does not
/// render, by their index in the prior inventory.
struct OldRender {
    unchanged: HashSet<ObjectRef>,
    kept: HashMap<usize, Value>,
}

impl OldRender {
    /// None when some plan of the old values cannot be walked (every object then
    /// counts as updated, and kept objects' content is unknown).
    async fn compare(
        cluster: &Cluster,
        inputs: Inputs<'_>,
        old: &BTreeMap<String, String>,
        plan: &str,
        new_render: &BTreeMap<ObjectRef, &Value>,
        prior: &Prior<'_>,
        contents: Contents,
    ) -> Option<OldRender> {
        let old_desired = Desired::new(Inputs {
            parameters: old,
            ..inputs
        })
        .ok()?;
        let old_render = renders(cluster, &old_desired, plan).await?;
        let unchanged = new_render
            .iter()
            .filter(|(r, new)| old_render.get(*r) == Some(*new))
            .map(|(r, _)| r.clone())
            .collect();
        let mut kept = HashMap::new();
        if contents == Contents::Keep {
            let rendered_now = ObjectIndex::new(new_render.keys());
            let old_by_id: HashMap<_, &Value> =
                old_render.iter().map(|(k, o)| (k.identity(), *o)).collect();
            for (i, r) in prior.objects.iter().enumerate() {
                if rendered_now.contains(r) {
                    continue;
                }
                if let Some(o) = old_by_id.get(&r.identity()) {
                    kept.insert(i, (*o).clone());
                }
            }
        }
        Some(OldRender { unchanged, kept })
    }
}

/// [`current`] for the instance `inputs` describes; `None` when its values do not walk.
pub async fn current_of(
    cluster: &Cluster,
    inputs: Inputs<'_>,
    plan: &str,
    objects: &[ObjectRef],
) -> Option<Manifests> {
    let desired = Desired::new(inputs).ok()?;
    current(cluster, &desired, plan, objects).await
}

/// The content of each of `objects` as `desired` renders it, `plan`'s render winning
/// (see [`renders`]); objects no plan renders get `Kept(None)`. What the managed objects
/// hold when no plan runs, or after an apply that was planned without the cluster.
pub(crate) async fn current(
    cluster: &Cluster,
    desired: &Desired<'_>,
    plan: &str,
    objects: &[ObjectRef],
) -> Option<Manifests> {
    let rendered = renders(cluster, desired, plan).await?;
    let by_id: HashMap<_, &Value> = rendered.iter().map(|(k, o)| (k.identity(), *o)).collect();
    Some(Manifests(
        objects
            .iter()
            .map(|r| {
                let render = by_id.get(&r.identity()).map(|o| (*o).clone());
                (r.clone(), Source::Kept(render))
            })
            .collect(),
    ))
}

/// The CRD upgrade-safety check of every CRD `walk` applies (see [`super::crd_safety`]):
/// with `Enforce` the first unsafe change refuses the plan, with `Warn` each is a note.
async fn crd_safety_notes(
    cluster: &Cluster,
    walk: &kudo_plan::PlanWalk<'_>,
    plan: &str,
    mode: CrdSafety,
) -> Result<Vec<PlanNote>, PlanFailure> {
    let mut notes = Vec::new();
    if mode == CrdSafety::Off {
        return Ok(notes);
    }
    // The reads go at once; the verdicts are taken in plan order.
    let applied: Vec<_> = walk_objects(walk)
        .filter(|o| o.action == PreviewAction::Apply)
        .collect();
    let checks = futures::future::join_all(
        applied
            .iter()
            .map(|o| super::crd_safety::check_crd(cluster, o.object)),
    )
    .await;
    for (o, checked) in applied.into_iter().zip(checks) {
        let report = match checked {
            Ok(Some(report)) => report,
            Ok(None) => continue,
            // Credentials that may not read the CRD: the dry-run of its apply below
            // says what they may not do, in the apply's own words.
            Err(e) if e.trouble() == Trouble::Denied => {
                notes.push(PlanNote {
                    summary: "CRD upgrade safety not checked".to_string(),
                    detail: format!(
                        "Task {:?} of plan {plan:?} applies a CustomResourceDefinition that was not compared with the one in the cluster: {e}",
                        o.task
                    ),
                });
                continue;
            }
            Err(e) => return Err(classify(EngineError::from(e).with_plan(plan), plan)),
        };
        match mode {
            CrdSafety::Enforce => {
                let error = EngineError::fatal(report.message())
                    .with_plan(plan)
                    .at(o.location)
                    .with_task(o.task)
                    .with_object(&report.object())
                    .with_template(o.template);
                return Err(PlanFailure::Refused {
                    summary: "Unsafe CRD change",
                    error: Box::new(error),
                });
            }
            _ => notes.push(PlanNote {
                summary: format!(
                    "Unsafe CRD change to {} (crd_upgrade_safety = \"warn\")",
                    report.crd
                ),
                detail: report.message(),
            }),
        }
    }
    Ok(notes)
}

/// One note per object a template writes for an API version the cluster no longer
/// serves, naming the template, the object and both versions, with the object each is
/// about.
fn translated_objects(planned: &[PlannedObject]) -> Vec<(ObjectRef, PlanNote)> {
    planned
        .iter()
        .filter_map(|p| {
            let t = p.translation.as_ref()?;
            let mut detail = format!(
                "{} renders {} with apiVersion {}, which this cluster no longer serves. It will be applied as {}, converted field by field.",
                p.template,
                p.object.label(),
                t.from_api_version,
                t.to_api_version
            );
            for note in &t.notes {
                detail.push_str("\n- ");
                detail.push_str(note);
            }
            detail.push_str("\nTo stop this warning, write the new apiVersion in the template; to fail instead, set `translate_api_versions = false` in the provider block.");
            // The object in the summary too: Terraform folds warnings with one summary
            // into "and N more similar warnings", and each object deserves its line.
            let note = PlanNote {
                summary: format!(
                    "{}: {} converted to {}",
                    p.object.label(),
                    t.from_api_version,
                    t.to_api_version
                ),
                detail,
            };
            Some((p.object.clone(), note))
        })
        .collect()
}

/// One note per object whose template writes fields Kubernetes removed.
fn removed_field_notes(planned: &[PlannedObject]) -> Vec<PlanNote> {
    planned
        .iter()
        .filter(|p| !p.removed_fields.is_empty())
        .map(|p| PlanNote {
            summary: format!("{}: removed fields left out", p.object.label()),
            detail: format!(
                "{} renders {} with fields no Kubernetes release since 1.14 knows:\n- {}\nTo stop this warning, remove them from the template.",
                p.template,
                p.object.label(),
                p.removed_fields.join("\n- ")
            ),
        })
        .collect()
}

/// One note listing the objects the server could not judge at plan time, with why.
fn unchecked_notes(planned: &[PlannedObject]) -> Option<PlanNote> {
    let lines: Vec<String> = planned
        .iter()
        .filter_map(|p| {
            let why = p.unchecked.as_ref()?;
            Some(format!("- {} ({}): {why}", p.object.label(), p.template))
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    Some(PlanNote {
        summary: "Some objects are checked only at apply".to_string(),
        detail: format!(
            "The API server cannot judge these objects before the apply, because what they need does not exist yet; the apply checks each step's objects before it writes any of them:\n{}",
            lines.join("\n")
        ),
    })
}

/// Every object any plan of `desired` applies, as rendered; `plan`'s version wins
/// when plans render one object differently. None when some plan cannot be walked.
async fn renders<'d>(
    cluster: &Cluster,
    desired: &'d Desired<'_>,
    plan: &str,
) -> Option<BTreeMap<ObjectRef, &'d Value>> {
    let pkg = desired.inputs.package;
    let mut out = BTreeMap::new();
    let order = std::iter::once(plan).chain(
        pkg.operator
            .plans
            .keys()
            .map(String::as_str)
            .filter(|p| *p != plan),
    );
    for plan_name in order {
        let walk = desired.plan(plan_name).ok()?;
        for o in walk_objects(walk) {
            if o.action == PreviewAction::Apply
                && let Ok(r) = ObjectRef::from_object(o.object)
            {
                let r = with_namespace(cluster, r, desired.inputs.namespace).await;
                out.entry(r).or_insert(o.object);
            }
        }
    }
    Some(out)
}
