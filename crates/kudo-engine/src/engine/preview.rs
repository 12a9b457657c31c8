//! What a plan would apply, for Terraform's plan step: the same rendering and metadata as
//! a run, checked by the API server with a server-side dry-run, nothing persisted.

use std::collections::{BTreeMap, BTreeSet};

use kudo_plan::{Action, Desired, Inputs, PlanWalk, Rendered};
use serde_json::Value;

use super::concurrent::each_until_failure;
use super::error::EngineError;
use super::error::Location;
use super::metadata::{Owner, decorate};
use super::prune::ObjectIndex;
use super::run::RunRequest;
use crate::cluster::{Cluster, ClusterError, ObjectRef};

/// One object the plan would apply, checked with KUDO metadata (no owner reference: the
/// Instance may not exist yet). The manifest sent is not kept: the server's answer says
/// what the object would hold, and a plan of 10,000 objects would keep both.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedObject {
    pub object: ObjectRef,
    /// False when the server could not judge it yet; `unchecked` says why.
    pub checked: bool,
    /// Why the server could not judge it at plan time: its kind comes from a CRD the
    /// same plan creates, or its namespace does not exist yet. The apply checks it
    /// before writing anything of its step.
    pub unchecked: Option<String>,
    /// The template that renders it (`templates/pdb.yaml`).
    pub template: String,
    /// Set when the template writes an API version the cluster no longer serves and the
    /// object will be applied converted (see [`Cluster::served_form`]).
    pub translation: Option<kube_api_versions::Translation>,
    /// Fields Kubernetes removed that the template writes, left out; one note each.
    pub removed_fields: Vec<String>,
    /// The server's answer to the dry-run: the object as it would be after the apply,
    /// with the server's defaults and normalisation, `metadata.managedFields` left out
    /// (None when not `checked`, or when the preview was asked to drop answers).
    pub dry_run: Option<Value>,
    /// Whether the dry-run found it existing, and held by whom (None when not
    /// `checked`): what the apply expects to find ([`super::decisions::Expected`]).
    pub found: Option<super::decisions::Found>,
}

/// [`preview_walk`] of `req.plan`, walking the package for it.
#[cfg(test)] // the crate's scenarios; the actions go through the `_only`/`_keeping` forms
pub async fn preview_plan(
    cluster: &Cluster,
    req: RunRequest<'_>,
) -> Result<Vec<PlannedObject>, EngineError> {
    preview_plan_only(cluster, req, &|_| true).await
}

/// [`preview_plan`] of the objects `only` picks (see [`preview_walk_only`]).
pub async fn preview_plan_only(
    cluster: &Cluster,
    req: RunRequest<'_>,
    only: &(dyn Fn(&ObjectRef) -> bool + Sync),
) -> Result<Vec<PlannedObject>, EngineError> {
    let desired = desired_state(&req)?;
    let walk = desired.plan(req.plan)?;
    preview_walk_only(cluster, &req, walk, only).await
}

/// The desired state a run of `req` works from.
pub fn desired_state<'p>(req: &RunRequest<'p>) -> Result<Desired<'p>, EngineError> {
    Desired::new(Inputs {
        package: req.package,
        instance: req.instance,
        namespace: req.namespace,
        parameters: req.parameters,
        seed: req.render_seed,
        dependencies: req.dependencies,
    })
    .map_err(|e| EngineError::from(e).with_plan(req.plan))
}

/// Whether a preview keeps the server's dry-run answers ([`PlannedObject::dry_run`]).
/// Drift compares them; a plan only needs the verdicts, and at 10,000 objects the
/// answers are tens of megabytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answers {
    Keep,
    Drop,
}

/// Dry-runs against the server, in plan order, every object the walk of `req.plan`
/// applies. Kinds nobody serves and objects the server rejects fail like the real run
/// would; what needs no cluster already failed in the walk.
#[cfg(test)] // the crate's scenarios; the actions go through the `_only`/`_keeping` forms
pub async fn preview_walk(
    cluster: &Cluster,
    req: &RunRequest<'_>,
    walk: &PlanWalk<'_>,
    answers: Answers,
) -> Result<Vec<PlannedObject>, EngineError> {
    checked_walk(cluster, req, walk, &|_| true, answers).await
}

/// [`preview_walk`] of the objects `only` picks (named as the run names them, in their
/// namespace), keeping the answers; the others are left out of the answer. A refresh
/// dry-runs only the objects someone else wrote to since the last apply.
pub async fn preview_walk_only(
    cluster: &Cluster,
    req: &RunRequest<'_>,
    walk: &PlanWalk<'_>,
    only: &(dyn Fn(&ObjectRef) -> bool + Sync),
) -> Result<Vec<PlannedObject>, EngineError> {
    checked_walk(cluster, req, walk, only, Answers::Keep).await
}

async fn checked_walk(
    cluster: &Cluster,
    req: &RunRequest<'_>,
    walk: &PlanWalk<'_>,
    only: &(dyn Fn(&ObjectRef) -> bool + Sync),
    answers: Answers,
) -> Result<Vec<PlannedObject>, EngineError> {
    checked_walk_in(cluster, req, walk, only, answers, &OtherKinds::new()).await
}

/// Kinds that CustomResourceDefinitions of other instances of the same apply define
/// (a dependency instance installs its CRD before its parent's later steps use it),
/// with the instance that defines each: the server cannot judge such objects yet.
pub(crate) type OtherKinds = BTreeMap<(String, String), String>;

/// [`preview_walk`] inside a tree: objects of `others`' kinds are left unchecked.
pub(crate) async fn preview_walk_in(
    cluster: &Cluster,
    req: &RunRequest<'_>,
    walk: &PlanWalk<'_>,
    answers: Answers,
    others: &OtherKinds,
) -> Result<Vec<PlannedObject>, EngineError> {
    checked_walk_in(cluster, req, walk, &|_| true, answers, others).await
}

async fn checked_walk_in(
    cluster: &Cluster,
    req: &RunRequest<'_>,
    walk: &PlanWalk<'_>,
    only: &(dyn Fn(&ObjectRef) -> bool + Sync),
    answers: Answers,
    others: &OtherKinds,
) -> Result<Vec<PlannedObject>, EngineError> {
    let (mut picked, unprepared) = prepare_walk(cluster, req, walk, others).await;
    // The checks read and dry-run, persisting nothing: they all go at once (the
    // cluster bounds how many are in flight).
    picked.retain(|p| only(&p.object));
    let previous = ObjectIndex::new(req.previous_inventory);
    // Every namespaced object, not only those the ownership check reads: what the LIST
    // finds of an object already ours (its version) lets a later plan of the run take
    // this plan's dry-run answer for it (an update's final plan, `cluster::dry_run_cache`).
    let namespaced: Vec<&ObjectRef> = picked
        .iter()
        .filter(|p| p.namespaced == Some(true))
        .map(|p| &p.object)
        .collect();
    let listing = &super::ownership::Listing::new(&namespaced);
    // What the LIST finds picks the answers earlier plans kept: listed first when there
    // are any; otherwise the dry-runs go out beside it (one round trip fewer).
    if cluster.keeps_dry_runs() {
        listing.get(cluster).await;
    }
    let checked = each_until_failure(picked, |p| {
        check(cluster, req, &previous, listing, p, answers)
    })
    .await?;
    // An object before the one that could not be prepared fails first, as in the run.
    match unprepared {
        Some(e) => Err(e),
        None => Ok(checked),
    }
}

/// One object of the walk, decorated as the run sends it, before the server's check.
struct Prepared<'w> {
    location: &'w Location,
    task: &'w str,
    template: String,
    object: ObjectRef,
    manifest: Value,
    /// None: the kind comes from a CRD created first (`pending` says by whom).
    namespaced: Option<bool>,
    /// Who creates the CRD of an object whose scope is not known yet.
    pending: Option<String>,
    translation: Option<kube_api_versions::Translation>,
    removed_fields: Vec<String>,
}

impl Prepared<'_> {
    fn fail(&self, e: ClusterError) -> EngineError {
        EngineError::from(e)
            .at(self.location)
            .with_task(self.task)
            .with_object(&self.object)
            .with_template(self.template.clone())
    }
}

/// Every object the walk applies, in plan order, in the form and with the metadata the
/// run gives it, up to the first that fails (and that failure). Only discovery is asked
/// (once per API group version).
async fn prepare_walk<'w>(
    cluster: &Cluster,
    req: &RunRequest<'_>,
    walk: &'w PlanWalk<'_>,
    others: &OtherKinds,
) -> (Vec<Prepared<'w>>, Option<EngineError>) {
    let mut prepared = Vec::new();
    let failure = prepare_into(cluster, req, walk, others, &mut prepared)
        .await
        .err();
    (prepared, failure)
}

/// Asks discovery for every kind the walk applies, side by side: the planning call's
/// object-by-object loops (and [`prepare_into`]'s) then find each group-version known
/// instead of asking for them one after another. What fails here is met again, in order
/// and with its own words, by those loops.
pub(crate) async fn discover_at_once(cluster: &Cluster, walk: &PlanWalk<'_>) {
    let mut kinds = BTreeSet::new();
    let manifests: Vec<&Value> = walk
        .steps()
        .flat_map(|step| &step.tasks)
        .filter_map(|task| match &task.action {
            Action::Apply(objects) => Some(objects),
            _ => None,
        })
        .flatten()
        .map(|rendered| &rendered.object)
        .filter(|m| {
            let kind = (m["apiVersion"].as_str(), m["kind"].as_str());
            kinds.insert(kind)
        })
        .collect();
    // The group-versions a removed API's objects would move to are asked at the same
    // time: where the original is not served, `served_form` then finds the successor
    // known instead of asking for it after the miss.
    let successors: BTreeSet<(String, String)> = kinds
        .iter()
        .filter_map(|(api_version, kind)| Some((api_version.as_deref()?, kind.as_deref()?)))
        .flat_map(|(api_version, kind)| {
            cluster
                .successors(api_version, kind)
                .into_iter()
                .map(move |to| (to, kind.to_string()))
        })
        .collect();
    futures::future::join(
        futures::future::join_all(manifests.into_iter().map(|m| cluster.served_form(m))),
        futures::future::join_all(
            successors
                .iter()
                .map(|(api_version, kind)| cluster.resolve(api_version, kind)),
        ),
    )
    .await;
}

async fn prepare_into<'w>(
    cluster: &Cluster,
    req: &RunRequest<'_>,
    walk: &'w PlanWalk<'_>,
    others: &OtherKinds,
    prepared: &mut Vec<Prepared<'w>>,
) -> Result<(), EngineError> {
    let pkg = req.package;
    let owner = Owner {
        operator: pkg.operator.name.clone(),
        instance: req.instance.to_string(),
        namespace: req.namespace.to_string(),
        uid: String::new(),
    };
    discover_at_once(cluster, walk).await;
    // Kinds defined by CRDs this plan creates: the server cannot know them yet.
    let mut pending_kinds: BTreeSet<(String, String)> = BTreeSet::new();
    for step in walk.steps() {
        let loc = &step.location;
        for task in &step.tasks {
            if let Action::Webhook(call) = &task.action {
                // Never called while planning (it may have side effects); only the
                // rule on its URL can be checked, with the run's words.
                kudo_plan::webhook::check_url(&call.url, cluster.insecure_webhooks_allowed())
                    .map_err(|e| {
                        let mut err = EngineError::fatal("")
                            .caused_by(e)
                            .at(loc)
                            .with_task(&task.name);
                        err.trouble = crate::cluster::Trouble::Webhook;
                        err
                    })?;
                continue;
            }
            let Action::Apply(objects) = &task.action else {
                continue;
            };
            let task_name = task.name.as_str();
            for Rendered { template, object } in objects {
                let manifest = object.clone();
                let template = template.clone();
                let r = ObjectRef::from_object(&manifest)
                    .map_err(|e| EngineError::from(e).at(loc).with_task(task_name))?;
                let fail = |e: ClusterError| {
                    EngineError::from(e)
                        .at(loc)
                        .with_task(task_name)
                        .with_object(&r)
                        .with_template(template.clone())
                };
                let key = (r.api_version.clone(), r.kind.clone());
                // Who creates the CRD of this kind before the object is applied.
                let pending = match pending_kinds.contains(&key) {
                    true => Some("this plan".to_string()),
                    false => others
                        .get(&key)
                        .map(|by| format!("dependency instance {by}")),
                };
                // The same translation rule as the run (Run::prepare).
                let (mut manifest, translation, removed_fields) =
                    match cluster.served_form(&manifest).await {
                        Ok(served) => (served.object, served.translation, served.removed_fields),
                        Err(ClusterError::UnknownKind { .. }) if pending.is_some() => {
                            (manifest, None, Vec::new())
                        }
                        Err(e) => return Err(fail(e)),
                    };
                // Scope of the version the object is sent as (no second discovery
                // miss for a version the cluster does not serve).
                let api_version = manifest["apiVersion"].as_str().unwrap_or(&r.api_version);
                let namespaced = match cluster.is_namespaced(api_version, &r.kind).await {
                    Ok(n) => Some(n),
                    Err(ClusterError::UnknownKind { .. }) if pending.is_some() => None,
                    Err(e) => return Err(fail(e)),
                };
                // Unknown scope: most custom kinds are namespaced.
                decorate(&mut manifest, &owner, loc, namespaced.unwrap_or(true));
                pending_kinds.extend(defined_kinds(&manifest));
                // From here on the object is named as the run names it: in its namespace.
                let object = ObjectRef::from_object(&manifest).map_err(fail)?;
                prepared.push(Prepared {
                    location: loc,
                    task: task_name,
                    template,
                    object,
                    manifest,
                    namespaced,
                    pending,
                    translation,
                    removed_fields,
                });
            }
        }
    }
    Ok(())
}

/// The same ownership rule as the run (see `Run::apply_one`): a namespaced object the
/// previous inventory does not record must not be another instance's.
fn needs_owner_check(previous: &ObjectIndex<'_>, p: &Prepared<'_>) -> bool {
    !previous.contains(&p.object) && p.namespaced == Some(true)
}

/// The server's verdict on one prepared object: the ownership check and a dry-run.
async fn check(
    cluster: &Cluster,
    req: &RunRequest<'_>,
    previous: &ObjectIndex<'_>,
    listing: &super::ownership::Listing,
    p: Prepared<'_>,
    answers: Answers,
) -> Result<PlannedObject, EngineError> {
    let mut checked = false;
    let mut dry_run = None;
    let mut found = None;
    let mut unchecked = None;
    if p.namespaced.is_none() {
        unchecked = Some(format!(
            "its kind {} comes from a CustomResourceDefinition {} creates first",
            p.object.kind,
            p.pending.as_deref().unwrap_or("this plan")
        ));
    } else {
        // The owner's read and the dry-run go out together (neither writes); the
        // owner's verdict is taken first, as the run takes it before its write.
        let owner = async {
            match needs_owner_check(previous, &p) {
                true => {
                    let listed = listing.get(cluster).await;
                    super::ownership::controller_of(cluster, listed, &p.object)
                        .await
                        .map(Some)
                }
                false => Ok(None),
            }
        };
        // An object the LIST just found as an earlier plan of this run found it gets
        // that plan's answer (`terraform apply`'s final plan: see
        // `cluster::dry_run_cache`); the others are asked.
        let checked_apply = async {
            match listing.covers(&p.object) {
                true => {
                    let ours = previous.contains(&p.object);
                    let seen = listing
                        .got()
                        .and_then(|listed| listed.get(&p.object))
                        .map(super::ownership::Listed::seen);
                    cluster.dry_run_as_seen(&p.manifest, ours, seen).await
                }
                false => {
                    super::ownership::apply_as_recorded(
                        cluster,
                        previous,
                        &p.object,
                        &p.manifest,
                        true,
                    )
                    .await
                }
            }
        };
        let (owner, checked_apply) = futures::future::join(owner, checked_apply).await;
        if let Some(controller) = owner.map_err(|e| p.fail(e))? {
            super::ownership::check_controller(&p.object, controller.as_deref(), req.instance)
                .map_err(|e| {
                    e.at(p.location)
                        .with_task(p.task)
                        .with_template(p.template.clone())
                })?;
        }
        match checked_apply {
            Ok(mut answer) => {
                checked = true;
                found = Some(super::decisions::Found::of(Some(&answer)));
                if answers == Answers::Keep {
                    // Nothing reads them (drift compares fields, labels and annotations),
                    // and they are most of an answer.
                    if let Some(meta) = answer.get_mut("metadata").and_then(Value::as_object_mut) {
                        meta.remove("managedFields");
                    }
                    dry_run = Some(answer);
                }
            }
            // The namespace is created by the apply (`create_namespace`; the plan
            // refused a missing instance namespace otherwise), or a template names
            // another one.
            Err(e) if e.is_not_found() => {
                unchecked = Some(format!(
                    "namespace {} does not exist yet, so the API server cannot check it before the apply",
                    p.manifest
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or(req.namespace)
                ));
            }
            Err(e) => return Err(p.fail(e)),
        }
    }
    Ok(PlannedObject {
        object: p.object,
        checked,
        unchecked,
        template: p.template,
        translation: p.translation,
        removed_fields: p.removed_fields,
        dry_run,
        found,
    })
}

pub(crate) fn defined_kinds(manifest: &Value) -> Vec<(String, String)> {
    if manifest.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
        return Vec::new();
    }
    let group = manifest.pointer("/spec/group").and_then(Value::as_str);
    let kind = manifest.pointer("/spec/names/kind").and_then(Value::as_str);
    let (Some(group), Some(kind)) = (group, kind) else {
        return Vec::new();
    };
    manifest
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .map(|version| (format!("{group}/{version}"), kind.to_string()))
        .collect()
}

/// What a task would do with one rendered object (offline preview).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewAction {
    Apply,
    Delete,
}

/// One object of an offline preview, before KUDO metadata is added.
#[derive(Debug, Clone, PartialEq)]
pub struct PreviewObject {
    pub location: Location,
    pub task: String,
    pub action: PreviewAction,
    pub object: Value,
}

/// The objects the walk of `plan_name` applies, in plan order, rendered without a
/// cluster (the `render` provider function's answer; the objects of Delete tasks are
/// not among them).
pub fn rendered_objects(
    pkg: &kudo_package::Package,
    instance: &str,
    namespace: &str,
    parameters: &std::collections::BTreeMap<String, String>,
    plan_name: &str,
) -> Result<Vec<Value>, EngineError> {
    let objects = render_plan(pkg, instance, namespace, parameters, plan_name)?;
    let applied = objects
        .into_iter()
        .filter(|o| o.action == PreviewAction::Apply);
    Ok(applied.map(|o| o.object).collect())
}

/// The objects the walk of `plan_name` applies and deletes, in plan order, without a
/// cluster (template errors and invalid YAML surface at `terraform plan`).
pub(crate) fn render_plan(
    pkg: &kudo_package::Package,
    instance: &str,
    namespace: &str,
    parameters: &std::collections::BTreeMap<String, String>,
    plan_name: &str,
) -> Result<Vec<PreviewObject>, EngineError> {
    let desired = Desired::new(Inputs {
        package: pkg,
        instance,
        namespace,
        parameters,
        // Only errors matter offline, and they do not depend on the seed.
        seed: None,
        dependencies: None,
    })
    .map_err(|e| EngineError::from(e).with_plan(plan_name))?;
    Ok(preview_objects(desired.plan(plan_name)?))
}

/// The objects a walked plan applies and deletes, in plan order.
pub fn preview_objects(walk: &PlanWalk<'_>) -> Vec<PreviewObject> {
    walk_objects(walk)
        .map(|o| PreviewObject {
            location: o.location.clone(),
            task: o.task.to_string(),
            action: o.action,
            object: o.object.clone(),
        })
        .collect()
}

/// [`preview_objects`] borrowed from the walk: the planning keeps each object once
/// (10,000 objects are about 20 MB a copy).
pub(crate) fn walk_objects<'w>(walk: &'w PlanWalk<'_>) -> impl Iterator<Item = WalkObject<'w>> {
    walk.steps().flat_map(|step| {
        step.tasks.iter().flat_map(move |task| {
            let (objects, action) = match &task.action {
                Action::Apply(o) => (o.as_slice(), PreviewAction::Apply),
                Action::Delete(o) => (o.as_slice(), PreviewAction::Delete),
                _ => (&[][..], PreviewAction::Apply),
            };
            objects.iter().map(move |r| WalkObject {
                location: &step.location,
                task: &task.name,
                action,
                object: &r.object,
                template: &r.template,
            })
        })
    })
}

/// One object of [`walk_objects`].
pub(crate) struct WalkObject<'w> {
    pub location: &'w Location,
    pub task: &'w str,
    pub action: PreviewAction,
    pub object: &'w Value,
    /// The template that renders it (`templates/<file>`).
    pub template: &'w str,
}
