//! `kudo_instance`: an Instance of an installed operator and everything its plans create.
//! This file holds the RPC handlers (plan, apply, destroy, read, import); values,
//! validation, plan-time renders, the plan decision and timeouts live beside it.

mod deadline;
mod decision;
mod field_drift;
mod model;
mod rendered;
mod validate;
mod values;

use std::collections::BTreeMap;

use async_trait::async_trait;
use tfplugin::{
    ApplyRequest, ApplyResponse, Attr, AttributePath, ClientCapabilities, Diagnostic,
    ImportResponse, ImportedResource, IntoValue, PlanRequest, PlanResponse, ReadRequest,
    ReadResponse, Resource, Schema, Value,
};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::{Cluster, ObjectRef};
use kudo_engine::engine::{self, Cleanup, RunRequest};
use kudo_plan::{Desired, Inputs};

use super::children;
use super::drift::DriftMode;
use super::manifests;
use super::packages::{self};
use super::preview::Computed;
use super::sensitive::{self};
use super::timeouts::{self, Operation};
use super::{Call, Session, decode, namespace_of, render_seed, schema};

use self::deadline::*;
pub(super) use self::decision::parameter_diagnostics;
use self::decision::*;
pub use self::model::{InstanceModel, ManagedObject};
use self::rendered::*;
pub use self::validate::validate;
use self::values::*;
pub use self::values::{STATUS_COMPLETE, STATUS_DRIFTED};

/// The `kudo_instance` resource type.
pub struct Instance;

#[async_trait]
impl Resource<Call> for Instance {
    fn name(&self) -> &'static str {
        schema::INSTANCE
    }

    fn schema(&self) -> Schema {
        schema::instance()
    }

    async fn validate(&self, config: Value, client: ClientCapabilities) -> Vec<Diagnostic> {
        let config: InstanceModel = match config.decode() {
            Ok(c) => c,
            Err(d) => return vec![d],
        };
        let mut diags = super::write_only::validate(&config, client);
        diags.extend(validate(&config));
        diags
    }

    async fn read(&self, call: &Call, req: ReadRequest) -> ReadResponse {
        read(&call.session, req).await
    }

    async fn plan(&self, call: &Call, req: PlanRequest) -> PlanResponse {
        plan(&call.session, req).await
    }

    async fn apply(&self, call: &Call, req: ApplyRequest) -> ApplyResponse {
        apply(&call.session, req, &call.cancel).await
    }

    async fn import(&self, call: &Call, id: &str) -> ImportResponse {
        import(&call.session, id).await
    }
}

pub async fn plan(session: &Session, req: PlanRequest) -> PlanResponse {
    // Private state carries the render seed; a plan must hand it on unchanged. A create
    // (a replacement's included: Terraform then passes the old object's private state)
    // hands on none, so the new object gets a seed of its own.
    let (seed, planned_private) = if req.prior_state.is_null() {
        (PlanSeed::AtApply, Vec::new())
    } else {
        (
            PlanSeed::Known(render_seed::from_private(&req.prior_private)),
            req.prior_private.clone(),
        )
    };
    let fail = |diagnostics| PlanResponse {
        diagnostics,
        ..Default::default()
    };
    let (prior, proposed, config) = match (
        decode::<InstanceModel>(&req.prior_state),
        decode::<InstanceModel>(&req.proposed_new_state),
        decode::<InstanceModel>(&req.config),
    ) {
        (Ok(prior), Ok(proposed), Ok(config)) => (prior, proposed, config),
        (Err(d), _, _) | (_, Err(d), _) | (_, _, Err(d)) => return fail(d),
    };
    let Some(proposed) = proposed else {
        // A destroy: nothing to plan, and the seed stays until the apply.
        return PlanResponse {
            planned_private,
            ..Default::default()
        };
    };
    // Write-only values join the sensitive ones for planning (see `write_only`).
    let (prior, proposed, restore) =
        match super::write_only::for_plan(session, prior, proposed, config.as_ref()).await {
            Ok(r) => r,
            Err(diagnostics) => return fail(diagnostics),
        };
    let mut resp = plan_inner(session, prior, proposed, &seed).await;
    resp.planned_private = planned_private;
    resp.planned_state = restore.state(resp.planned_state);
    restore.diagnostics(&mut resp.diagnostics);
    resp
}

async fn plan_inner(
    session: &Session,
    prior: Option<InstanceModel>,
    proposed: InstanceModel,
    seed: &PlanSeed,
) -> PlanResponse {
    let fail = |diagnostics| PlanResponse {
        diagnostics,
        ..Default::default()
    };
    let schema = schema::instance();
    let prior_state = prior.clone().into_value();
    let none = InstanceModel::default();
    // The prior state's attributes, null on create, as the rules below read them.
    let prior_attrs = prior.as_ref().unwrap_or(&none);
    let namespace = namespace_of(&proposed.namespace);
    let name = proposed.name.known().cloned();
    let mut planned = proposed.clone();
    planned.namespace = namespace.as_str().into();
    planned.id = name
        .as_ref()
        .map_or(Attr::Unknown, |n| format!("{namespace}/{n}").into());

    if let Some(prior_name) = prior_attrs.name.as_deref() {
        session.remember_instance(&namespace_of(&prior_attrs.namespace), prior_name);
    }
    // A new resource must not find its Instance there already (someone else's). Checked
    // whenever the cluster can be reached while planning, except for an instance this
    // run's state holds (the create half of a replacement); the apply checks again.
    if prior.is_none()
        && let Some(name) = &name
        && !session.knows_instance(&namespace, name)
        && let Ok(cluster) = session.cluster().await
        && let Err(d) = super::existing::check_absent(session, &cluster, &namespace, name).await
    {
        return fail(vec![d]);
    }

    let mut diagnostics = Vec::new();
    let operator = proposed.operator.known().cloned();
    let params = match proposed.all_parameters() {
        Ok(p) => p,
        Err(diagnostics) => return fail(diagnostics),
    };
    let secret = proposed.sensitive().unwrap_or_default();
    let pkg = match &operator {
        Some(id) => match find_package(session, id, true).await {
            Ok(p) => p,
            Err(d) => return fail(vec![d]),
        },
        None => None,
    };

    if let (Some(pkg), Some(triggers)) = (&pkg, proposed.plan_triggers()) {
        let unknown: Vec<Diagnostic> = triggers
            .keys()
            .filter(|plan| !pkg.operator.plans.contains_key(*plan))
            .map(|plan| {
                Diagnostic::error(
                    format!("No plan {plan}"),
                    kudo_plan::unknown_plan(pkg, plan),
                )
                .with_attribute(AttributePath::attribute("plan_triggers").key(plan.clone()))
            })
            .collect();
        if !unknown.is_empty() {
            return fail(unknown);
        }
    }

    let mut effective = None;
    if let (Some(pkg), Some(params)) = (&pkg, &params) {
        match parameter_diagnostics(pkg, params, &secret) {
            Ok(e) => effective = Some(e),
            Err(d) => return fail(d),
        }
    }
    let digest = pkg.as_ref().map(packages::digest);
    planned.outputs = match (&pkg, &effective, &name) {
        (Some(pkg), Some(effective), Some(name)) => {
            match planned_outputs(pkg, name, &namespace, effective, &secret, seed) {
                Ok(o) => o,
                Err(d) => return fail(vec![d]),
            }
        }
        _ => Value::Unknown,
    };
    // Walk what the apply will walk, so that whatever fails without a cluster (template
    // mistakes, a Toggle or enablingParameter that is not a boolean) fails the plan with
    // the apply's own words rather than half-way through the apply. Made before
    // `children`, whose walk of this instance then reuses its renders.
    let desired = match (&pkg, &params, &name) {
        (Some(pkg), Some(params), Some(name)) => {
            match Desired::new(Inputs {
                package: pkg,
                instance: name,
                namespace: &namespace,
                parameters: params,
                seed: seed.known(),
                dependencies: None,
            }) {
                Ok(d) => Some(d),
                Err(e) => return walk_failure(pkg, &secret, e),
            }
        }
        _ => None,
    };
    match planned_children(
        session,
        &operator,
        &pkg,
        &name,
        &namespace,
        &params,
        &secret,
        seed,
        desired.as_ref(),
    )
    .await
    {
        Ok(children) => planned.children = children,
        Err(d) => return fail(vec![d]),
    };

    let replacing = !schema
        .requires_replace(&prior_state, &planned.clone().into_value())
        .is_empty();
    let Some(triggers) = proposed.plan_triggers() else {
        // Which plan runs depends on a value Terraform does not know yet.
        return PlanResponse {
            planned_state: schema.mark_computed_unknown(&planned.into_value()),
            ..Default::default()
        };
    };
    let plan_to_run: Option<Attr<String>> = match (&pkg, &params) {
        (Some(pkg), Some(new_params)) => {
            let children_changed =
                children::children_changed(prior.as_ref().map(|p| &p.children), &planned.children);
            match decide_plan(
                prior.as_ref(),
                replacing,
                pkg,
                new_params,
                &triggers,
                children_changed,
            ) {
                Ok(plan) => plan.map(Attr::Known),
                Err(d) => return fail(vec![d]),
            }
        }
        // Without the package or the parameters only a create is certain, and an
        // instance nothing about has changed stays as it is.
        _ if prior.is_none() || replacing => Some("deploy".into()),
        _ if params.is_some()
            && params == prior_attrs.all_parameters().ok().flatten()
            && proposed.operator == prior_attrs.operator
            && Some(&triggers) == prior_attrs.plan_triggers().as_ref()
            && prior_attrs.status.as_deref() == Some(STATUS_COMPLETE) =>
        {
            None
        }
        _ => Some(Attr::Unknown),
    };

    if pkg.is_none() && operator.is_some() {
        diagnostics.push(Diagnostic::warning(
            "Parameters not checked",
            "The operator package is neither planned in this configuration nor installed yet, so parameters will be checked when the apply runs.",
        ));
    }
    let plan_name = plan_to_run.as_ref().and_then(Attr::known);
    if let (Some(desired), Some(plan_name)) = (&desired, plan_name)
        && let Err(e) = desired.plan(plan_name)
        && let Some(pkg) = &pkg
    {
        return walk_failure(pkg, &secret, e);
    }
    let computed = match (&desired, plan_name) {
        (Some(desired), Some(plan_name)) => {
            plan_preview(session, desired, plan_name, prior_attrs).await
        }
        _ => Computed::unknown(Vec::new()),
    };
    diagnostics.extend(computed.warnings);
    planned.preview = computed.value;
    planned.manifests =
        match manifests::wanted(&proposed.show_manifests, session.config.show_manifests) {
            None => Value::Unknown,
            Some(false) => Value::Null,
            Some(true) => match (&computed.managed, &plan_to_run, &desired) {
                (Some(managed), _, _) => manifests::value(managed, &prior_attrs.manifests, &secret),
                // No plan runs: what the state shows, else what the last run applied.
                (None, None, _) if !prior_attrs.manifests.is_null() => {
                    prior_attrs.manifests.clone()
                }
                (None, None, Some(desired)) => {
                    let last = prior_attrs.last_plan.as_deref().unwrap_or("deploy");
                    match current_objects(session, desired, last, &prior_attrs.object_refs()).await
                    {
                        Some(managed) => manifests::value(&managed, &Value::Null, &secret),
                        None => Value::Unknown,
                    }
                }
                _ => Value::Unknown,
            },
        };
    finish_plan(
        &schema,
        &prior_state,
        prior_attrs,
        planned,
        plan_to_run,
        effective.map(|e| sensitive::strip(e, &secret)),
        digest,
        diagnostics,
    )
}

/// Fills the computed attributes: kept from the prior state when no plan runs, else
/// the plan's name and unknowns for what the run decides.
#[allow(clippy::too_many_arguments)]
fn finish_plan(
    schema: &tfplugin::Schema,
    prior_state: &Value,
    prior: &InstanceModel,
    mut planned: InstanceModel,
    plan_to_run: Option<Attr<String>>,
    effective: Option<BTreeMap<String, String>>,
    digest: Option<String>,
    diagnostics: Vec<Diagnostic>,
) -> PlanResponse {
    match plan_to_run {
        None => {
            // Nothing to do: keep what the state says.
            planned.status = prior.status.clone();
            planned.last_plan = prior.last_plan.clone();
            planned.objects = prior.objects.clone();
            planned.effective_parameters = prior.effective_parameters.clone();
            planned.operator_digest = prior.operator_digest.clone();
            planned.outputs = prior.outputs.clone();
            planned.preview = prior.preview.clone();
            planned.drifted_fields = prior.drifted_fields.clone();
            planned.plan_status = prior.plan_status.clone();
        }
        Some(plan_name) => {
            planned.last_plan = plan_name;
            planned.status = Attr::Unknown;
            planned.objects = Attr::Unknown;
            planned.effective_parameters = effective.map_or(Attr::Unknown, Attr::Known);
            planned.operator_digest = digest.map_or(Attr::Unknown, Attr::Known);
            // The run applies every object again, taking drifted fields back.
            planned.drifted_fields = Value::list([]);
            planned.plan_status = Value::Unknown;
        }
    }
    let planned = planned.into_value();
    PlanResponse {
        requires_replace: schema.requires_replace(prior_state, &planned),
        planned_state: planned,
        planned_private: Vec::new(),
        diagnostics,
    }
}

pub async fn apply(
    session: &Session,
    req: ApplyRequest,
    cancel: &CancellationToken,
) -> ApplyResponse {
    let fail = |state: Value, diagnostics| ApplyResponse {
        new_state: state,
        diagnostics,
        ..Default::default()
    };
    let seed = match render_seed::for_apply(req.prior_state.is_null(), &req.planned_private) {
        Ok(s) => s,
        Err(d) => return fail(req.prior_state, vec![d]),
    };
    let (prior, planned, config) = match (
        decode::<InstanceModel>(&req.prior_state),
        decode::<InstanceModel>(&req.planned_state),
        decode::<InstanceModel>(&req.config),
    ) {
        (Ok(prior), Ok(planned), Ok(config)) => (prior, planned, config),
        (Err(d), _, _) | (_, Err(d), _) | (_, _, Err(d)) => return fail(req.prior_state, d),
    };
    let (planned, restore) = match planned {
        None => (None, super::write_only::Restore::none()),
        Some(planned) => {
            match super::write_only::for_apply(session, prior.as_ref(), planned, config.as_ref())
                .await
            {
                Ok((planned, restore)) => (Some(planned), restore),
                Err(diagnostics) => return fail(req.prior_state, diagnostics),
            }
        }
    };
    let mut resp = apply_inner(
        session,
        req.prior_state,
        prior,
        planned,
        seed.as_deref(),
        cancel,
    )
    .await;
    resp.new_state = restore.state(resp.new_state);
    restore.diagnostics(&mut resp.diagnostics);
    // Every outcome that leaves an instance in state keeps the seed, failures included:
    // a lost seed would change generated passwords on the next run.
    if !resp.new_state.is_null() {
        resp.private = seed
            .as_deref()
            .map(render_seed::to_private)
            .unwrap_or_default();
    }
    resp
}

/// `prior_state` is the prior state as Terraform sent it, handed back on failures.
async fn apply_inner(
    session: &Session,
    prior_state: Value,
    prior: Option<InstanceModel>,
    planned: Option<InstanceModel>,
    seed: Option<&str>,
    cancel: &CancellationToken,
) -> ApplyResponse {
    let fail = |state: Value, d: Diagnostic| ApplyResponse {
        new_state: state,
        diagnostics: vec![d],
        ..Default::default()
    };
    let cluster = match session.cluster_for_change(planned.is_none()).await {
        Ok(c) => c,
        Err(d) => return fail(prior_state, d),
    };
    let Some(planned) = planned else {
        let prior = prior.unwrap_or_default();
        return destroy(session, &cluster, prior_state, &prior, seed, cancel).await;
    };

    let namespace = namespace_of(&planned.namespace);
    let name = planned.name.as_deref().unwrap_or_default().to_string();
    if prior.is_none()
        && let Err(d) = super::existing::check_absent(session, &cluster, &namespace, &name).await
    {
        return fail(prior_state, d);
    }
    // The plan runs no KUDO plan when it keeps the status (see `finish_plan`): only
    // settings changed (`show_manifests`, `timeouts`, `drift`, ...), so nothing is
    // applied again.
    let runs_plan = prior.is_none() || !planned.status.is_known();
    let operator = planned.operator.as_deref().unwrap_or_default().to_string();
    let pkg = match find_package(session, &operator, false).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            return fail(
                prior_state,
                Diagnostic::error(
                    "Operator not installed",
                    format!("There is no OperatorVersion for {operator:?} in the cluster. Install it with a kudo_operator resource and reference its id."),
                )
                .with_attribute(AttributePath::attribute("operator")),
            );
        }
        Err(d) => return fail(prior_state, d),
    };
    let public = planned.parameters().unwrap_or_default();
    let secret = planned.sensitive().unwrap_or_default();
    let params = match sensitive::merge(Some(&public), Some(&secret)) {
        Ok(p) => p.unwrap_or_default(),
        Err(diagnostics) => {
            return ApplyResponse {
                new_state: prior_state,
                diagnostics,
                ..Default::default()
            };
        }
    };
    let effective = match parameter_diagnostics(&pkg, &params, &secret) {
        Ok(e) => e,
        Err(d) => {
            return ApplyResponse {
                new_state: prior_state,
                diagnostics: d,
                ..Default::default()
            };
        }
    };
    let plan_name = planned.last_plan.as_deref().unwrap_or("deploy").to_string();
    if !runs_plan {
        let mut state = planned;
        if state.manifests == Value::Unknown {
            let objects = state.object_refs();
            state.manifests = applied_manifests(
                &cluster, &pkg, &name, &namespace, &params, seed, &plan_name, &objects, &secret,
            )
            .await;
        }
        return ApplyResponse {
            new_state: state.into_value(),
            ..Default::default()
        };
    }
    let operation = match prior {
        None => Operation::Create,
        Some(_) => Operation::Update,
    };
    let limit = match timeouts::timeout(&planned.timeouts, operation) {
        Ok(l) => l,
        Err(d) => return fail(prior_state, d),
    };
    // Outputs were checked while planning; computing them before the run means a
    // surprise here cannot lose the record of what the run created.
    let outputs = match render_outputs(&pkg, &name, &namespace, &effective, seed)
        .and_then(|o| sensitive::check_outputs(&o, &secret).map(|()| o))
    {
        Ok(o) => o,
        Err(d) => return fail(prior_state, d),
    };
    let tree = match children::tree(
        session, &operator, &pkg, &name, &namespace, &params, seed, false, None,
    )
    .await
    {
        Ok(t) => t.unwrap_or_default(),
        Err(d) => return fail(prior_state, d),
    };
    let previous = prior
        .as_ref()
        .map(InstanceModel::object_refs)
        .unwrap_or_default();
    let deadline = Deadline::new(cancel, limit);
    let mut run = engine::run_plan_with_sensitive(
        &cluster,
        RunRequest {
            dependencies: Some(&tree.packages),
            package: &pkg,
            instance: &name,
            namespace: &namespace,
            parameters: &public,
            plan: &plan_name,
            previous_inventory: &previous,
            render_seed: seed,
            crd_deletion: planned.crd_deletion(),
        },
        &secret,
        &deadline.token,
    )
    .await;
    deadline.explain(cancel, &format!("plan {plan_name:?}"), &mut run);
    let mut state = planned;
    state.id = format!("{namespace}/{name}").into();
    state.last_plan = plan_name.as_str().into();
    state.effective_parameters = Attr::Known(sensitive::strip(effective, &secret));
    state.operator_digest = packages::digest(&pkg).into();
    if !state.preview.is_known() {
        // The plan could not look at the cluster; an apply must leave nothing unknown.
        state.preview = Value::Null;
    }
    state.outputs = string_map(&outputs);
    state.children = tree.value(&secret);
    match run {
        Ok(outcome) => {
            let status = outcome
                .plan_status
                .get("status")
                .and_then(serde_json::Value::as_str)
                .unwrap_or(STATUS_COMPLETE)
                .to_string();
            state.status = status.into();
            state.objects = objects_value(&cluster, &outcome.inventory).await;
            if state.manifests == Value::Unknown {
                // Planned without the cluster: what the run applied, rendered again.
                state.manifests = applied_manifests(
                    &cluster,
                    &pkg,
                    &name,
                    &namespace,
                    &params,
                    seed,
                    &plan_name,
                    &outcome.inventory,
                    &secret,
                )
                .await;
            }
            if state.plan_status == Value::Unknown {
                let tree = serde_json::from_value(outcome.plan_status.clone()).ok();
                state.plan_status = super::plan_status::value(tree.as_ref(), &secret);
            }
            ApplyResponse {
                new_state: state.into_value(),
                diagnostics: super::diag::kept_warnings(&outcome.kept),
                ..Default::default()
            }
        }
        Err(e) => {
            // Record what exists so the next plan re-runs the plan (status is not
            // COMPLETE) and destroy finds every object (they also carry the instance label).
            let status = if e.fatal { "FATAL_ERROR" } else { "ERROR" };
            state.status = status.into();
            let objects = match &e.inventory {
                Some(known) => known.clone(),
                None if prior.is_none() => Vec::new(),
                None => previous,
            };
            state.objects = objects_value(&cluster, &objects).await;
            if state.manifests == Value::Unknown {
                // The next plan runs the plan again and shows them.
                state.manifests = Value::Null;
            }
            if state.plan_status == Value::Unknown {
                let tree = match cluster.get(&engine::instance_ref(&namespace, &name)).await {
                    Ok(Some(instance)) => engine::plan_status_of(&instance, &plan_name),
                    _ => None,
                };
                state.plan_status = super::plan_status::value(tree.as_ref(), &secret);
            }
            // Failures can quote rendered text or a rejected value.
            let mut d = engine_diagnostic(
                session,
                &format!("Plan {plan_name} of instance {name} failed"),
                &e,
            );
            d.detail = sensitive::redact(&d.detail, &secret);
            fail(state.into_value(), d)
        }
    }
}

/// `manifests` of `objects` after an apply whose plan could not know them (planned
/// without the cluster): the package rendered with the run's values, `plan_name`'s
/// render winning. Null when that render fails (the apply itself succeeded).
#[allow(clippy::too_many_arguments)]
async fn applied_manifests(
    cluster: &Cluster,
    pkg: &kudo_package::Package,
    name: &str,
    namespace: &str,
    params: &BTreeMap<String, String>,
    seed: Option<&str>,
    plan_name: &str,
    objects: &[ObjectRef],
    secret: &BTreeMap<String, String>,
) -> Value {
    let Ok(desired) = Desired::new(Inputs {
        package: pkg,
        instance: name,
        namespace,
        parameters: params,
        seed,
        dependencies: None,
    }) else {
        return Value::Null;
    };
    match engine::current(cluster, &desired, plan_name, objects).await {
        Some(managed) => manifests::value(&managed, &Value::Null, secret),
        None => Value::Null,
    }
}

/// Removes the instance `prior` describes; `prior_state` is the same state as
/// Terraform sent it, handed back when the destroy fails.
async fn destroy(
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
            return ApplyResponse {
                new_state: prior_state,
                diagnostics: vec![d],
                ..Default::default()
            };
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
            let all = prior.all_parameters().ok().flatten().unwrap_or_default();
            match children::tree(
                session, &operator, p, &name, &namespace, &all, seed, false, None,
            )
            .await
            {
                Ok(t) => t,
                Err(d) => {
                    tracing::warn!(summary = %d.summary, detail = %d.detail, "cleanup runs without the dependency tree");
                    None
                }
            }
        }
        _ => None,
    };
    let inventory = prior.object_refs();
    let delete_volumes = prior.delete_volumes();
    // Dependency instances' StatefulSets hold the same user's data: their claims are
    // kept (or deleted) with this instance's.
    let mut with_children = inventory.clone();
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    match engine::descendant_objects(cluster, &namespace, &name).await {
        Ok(objects) => with_children.extend(objects),
        Err(e) => diagnostics.push(Diagnostic::warning(
            "Dependency volumes not checked",
            format!(
                "The dependency instances of {name} could not be listed ({e}), so the volume claims of their StatefulSets are handled as the uninstall handles any object labelled with them (deleted). List what is left with `kubectl get pvc`."
            ),
        )),
    }
    let (volumes, warning) = super::volumes::before(cluster, &with_children).await;
    diagnostics.extend(warning);
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

pub async fn read(session: &Session, req: ReadRequest) -> ReadResponse {
    let state = req.current_state;
    let private = req.private;
    let keep = |state: Value, diagnostics: Vec<Diagnostic>| ReadResponse {
        new_state: state,
        private: private.clone(),
        diagnostics,
    };
    let model = match decode::<InstanceModel>(&state) {
        Ok(Some(m)) => m,
        Ok(None) => return keep(state, Vec::new()),
        Err(d) => return keep(state, d),
    };
    let namespace = namespace_of(&model.namespace);
    let Some(name) = model.name.known().cloned() else {
        return keep(state, Vec::new());
    };
    session.remember_instance(&namespace, &name);
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return keep(state, vec![d]),
    };
    let instance = match cluster.get(&engine::instance_ref(&namespace, &name)).await {
        Ok(Some(i)) => i,
        Ok(None) => return keep(Value::Null, Vec::new()),
        Err(e) => {
            return keep(
                state,
                vec![session.cluster_error("Cannot read the instance", &e)],
            );
        }
    };
    let mut fresh = model.clone();
    let plan = model.last_plan.as_deref().unwrap_or("deploy");
    if let Some(status) = engine::InstanceObject::from_value(&instance).plan_status(plan) {
        fresh.status = status.into();
    }
    let tree = engine::plan_status_of(&instance, plan);
    // Only failure messages can quote a sensitive value; the Secret is read for them.
    let secret = match &tree {
        Some(t) if super::plan_status::has_messages(t) => {
            engine::read_sensitive(&cluster, &namespace, &name)
                .await
                .unwrap_or_default()
        }
        _ => BTreeMap::new(),
    };
    fresh.plan_status = super::plan_status::value(tree.as_ref(), &secret);
    let entries = model.object_entries();
    let refs: Vec<ObjectRef> = entries.iter().map(|(r, _)| r.clone()).collect();
    let uids = match cluster_uids(&cluster, &refs).await {
        Ok(u) => u,
        Err(e) => {
            return keep(
                state,
                vec![session.cluster_error("Cannot read a managed object", &e)],
            );
        }
    };
    // A missing object, or one deleted and created again out of band (a new uid), may
    // not hold what the package renders; the next plan applies it again. A uid the
    // state never learned (an apply that could not read it back) is no evidence.
    let drifted = entries
        .iter()
        .zip(&uids)
        .find(|((_, known), now)| match (known, now) {
            (_, None) => true,
            (Some(known), Some(now)) => known != now,
            (None, Some(_)) => false,
        });
    if let Some(((object, _), now)) = drifted
        && fresh.status.as_deref() == Some(STATUS_COMPLETE)
    {
        match now {
            None => tracing::info!(%object, "managed object is missing; the next plan repairs it"),
            Some(_) => {
                tracing::info!(%object, "managed object was re-created out of band; the next plan applies it again")
            }
        }
        fresh.status = STATUS_DRIFTED.into();
    }
    let mut diagnostics = Vec::new();
    fresh.drifted_fields = Value::list([]);
    let settings = model.drift_settings(&session.config.drift);
    if settings.mode() != DriftMode::Ignore && fresh.status.as_deref() == Some(STATUS_COMPLETE) {
        let found = field_drift::detect(
            session,
            &cluster,
            &model,
            &private,
            (&namespace, &name),
            &settings,
        )
        .await;
        match found {
            Ok((drift, _)) if drift.is_empty() => {}
            Ok((drift, secret)) => {
                let fields = super::drift::drifted_fields(&drift, &secret);
                match settings.mode() {
                    DriftMode::Warn => diagnostics.push(Diagnostic::warning(
                        format!("Fields of {name} changed outside Terraform"),
                        format!(
                            "{}

With `drift = \"warn\"` the plan leaves them as they are. Set `drift = \"correct\"` to take them back, or add a `drift_ignore` rule for fields another tool manages.",
                            super::drift::describe(&fields)
                        ),
                    )),
                    _ => {
                        tracing::info!(instance = %name, fields = drift.len(), "managed fields changed out of band; the next plan takes them back");
                        fresh.status = STATUS_DRIFTED.into();
                    }
                }
                fresh.drifted_fields = fields;
            }
            Err(d) => diagnostics.push(d),
        }
    }
    if !entries.is_empty() {
        fresh.objects = Attr::Known(
            entries
                .iter()
                .zip(&uids)
                .map(|((r, _), uid)| ManagedObject::new(r, uid.as_deref()))
                .collect(),
        );
    }
    keep(fresh.into_value(), diagnostics)
}

pub async fn import(session: &Session, id: &str) -> ImportResponse {
    let fail = |d: Diagnostic| ImportResponse {
        imported: Vec::new(),
        diagnostics: vec![d],
    };
    let Some((namespace, name)) = id
        .split_once('/')
        .filter(|(n, m)| !n.is_empty() && !m.is_empty())
    else {
        return fail(Diagnostic::error(
            "Invalid import id",
            format!("{id:?} is not `<namespace>/<name>`."),
        ));
    };
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return fail(d),
    };
    let instance = match cluster.get(&engine::instance_ref(namespace, name)).await {
        Ok(Some(i)) => i,
        Ok(None) => {
            return fail(Diagnostic::error(
                "Nothing to import",
                format!("There is no Instance {name} in namespace {namespace}."),
            ));
        }
        Err(e) => return fail(session.cluster_error("Cannot read the instance", &e)),
    };
    // The same reading of the Instance as the engine's (which plan ran last, and how).
    let record = engine::InstanceObject::from_value(&instance);
    let ov_name = record.spec.operator_version.name.clone();
    let ov_namespace = match record.spec.operator_version.namespace.as_str() {
        "" => namespace,
        ns => ns,
    };
    let operator = format!("{ov_namespace}/{ov_name}");
    let params = record.parameters();
    let last_plan = record.last_plan().unwrap_or_else(|| "deploy".to_string());
    let status = record
        .plan_status(&last_plan)
        .unwrap_or_else(|| "NEVER_RUN".to_string());
    let objects = match cluster
        .list_labelled(namespace, &format!("{}={name}", engine::LABEL_INSTANCE))
        .await
    {
        Ok(list) => {
            let mut found: Vec<(ObjectRef, Option<String>)> = list
                .iter()
                .filter_map(|o| {
                    let r = ObjectRef::from_object(o).ok()?;
                    Some((r, uid_of(o).map(str::to_string)))
                })
                .collect();
            found.sort();
            found
        }
        Err(e) => {
            return fail(session.cluster_error("Cannot list the instance's objects", &e));
        }
    };
    let pkg = engine::load_operator(&cluster, ov_namespace, &ov_name)
        .await
        .ok()
        .flatten();
    // The Secret, when there is one, is where the sensitive values went.
    let secret = match engine::read_sensitive(&cluster, namespace, name).await {
        Ok(s) => s,
        Err(e) => {
            return fail(session.engine_error("Cannot read the sensitive parameters", &e));
        }
    };
    let mut all_params = params.clone();
    all_params.extend(secret.iter().map(|(k, v)| (k.clone(), v.clone())));
    let effective = pkg
        .as_ref()
        .and_then(|p| p.effective_params(&all_params).ok());
    let children = match &pkg {
        // An imported instance has no render seed (see `render_seed`).
        Some(p) => children::tree(
            session,
            &operator,
            p,
            name,
            namespace,
            &all_params,
            None,
            true,
            None,
        )
        .await
        .ok()
        .flatten()
        .map_or(Value::Null, |t| t.value(&secret)),
        None => Value::Null,
    };
    // With the provider's default on, the configuration most likely leaves
    // `show_manifests` unset: the objects as the package renders them, so that the
    // first plan after the import is empty.
    let refs: Vec<ObjectRef> = objects.iter().map(|(r, _)| r.clone()).collect();
    let manifests = match (&pkg, session.config.show_manifests) {
        (Some(p), true) => {
            applied_manifests(
                &cluster,
                p,
                name,
                namespace,
                &all_params,
                None,
                &last_plan,
                &refs,
                &secret,
            )
            .await
        }
        _ => Value::Null,
    };
    let state = InstanceModel {
        name: name.into(),
        namespace: namespace.into(),
        operator: operator.into(),
        manifests,
        parameters: match params.is_empty() {
            true => Value::Null,
            false => string_map(&params),
        },
        sensitive_parameters: match secret.is_empty() {
            true => Value::Null,
            false => string_map(&secret),
        },
        id: format!("{namespace}/{name}").into(),
        status: status.into(),
        outputs: match (&pkg, &effective) {
            (Some(p), Some(e)) => {
                render_outputs(p, name, namespace, e, None).map_or(Value::Null, |o| string_map(&o))
            }
            _ => Value::Null,
        },
        last_plan: last_plan.into(),
        effective_parameters: effective.map(|e| sensitive::strip(e, &secret)).into(),
        objects: Attr::Known(
            objects
                .iter()
                .map(|(r, uid)| ManagedObject::new(r, uid.as_deref()))
                .collect(),
        ),
        operator_digest: pkg.as_ref().map(packages::digest).into(),
        children,
        // Write-only values are never in state; an imported instance's Secret shows
        // as `sensitive_parameters` above. Preview, timeouts and the settings are
        // null until the configuration sets them.
        ..Default::default()
    }
    .into_value();
    ImportResponse {
        imported: vec![ImportedResource {
            type_name: schema::INSTANCE.to_string(),
            state,
            private: Vec::new(),
        }],
        diagnostics: Vec::new(),
    }
}
