//! The plan RPC: works out the state an apply will aim for from what Terraform proposes,
//! decides which KUDO plan (if any) has to run, and fills in as much as can be known
//! before the apply, marking the rest unknown.

use std::collections::BTreeMap;

use tfplugin::{Attr, AttributePath, Diagnostic, IntoValue, PlanRequest, PlanResponse, Value};

use kudo_engine::engine;
use kudo_plan::{Desired, Inputs};

use crate::provider::children;
use crate::provider::manifests;
use crate::provider::packages::{self};
use crate::provider::preview::Computed;
use crate::provider::sensitive::{self};
use crate::provider::{Session, decode, namespace_of, render_seed, schema};

use super::decision::*;
use super::model::InstanceModel;
use super::rendered::*;
use super::values::STATUS_COMPLETE;

pub(super) async fn plan(session: &Session, req: PlanRequest) -> PlanResponse {
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
    restore.replace_paths(&mut resp.requires_replace);
    if !req.prior_state.is_null() {
        crate::provider::diag::with_destroy_advice(&mut resp.diagnostics);
    }
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
    // Known connection settings must lead to a cluster before anything is planned.
    if let Err(d) = session.planning_cluster().await {
        return fail(vec![d]);
    }
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
    // An immutable parameter's change replaces the instance (see
    // `immutable_replacement`); the rest of this plan is then that of a new instance,
    // as for a new name.
    let mut also_replace = Vec::new();
    if let (Some(pkg), Some(new_params), Some(prior), false) = (&pkg, &params, &prior, replacing)
        && let Some(r) = immutable_replacement(pkg, prior, &proposed, new_params)
    {
        also_replace = r.paths;
        diagnostics.push(r.warning);
    }
    let replacing = replacing || !also_replace.is_empty();
    if let Ok(settings) = crate::provider::health::parse(&proposed.health, &proposed.health_rule) {
        diagnostics.extend(settings.unused_rules(&session.config.health));
    }
    if let (Some(prior), Some(pkg), false) = (&prior, &pkg, replacing) {
        for refusal in super::downgrade::refusals(session, prior, &proposed, pkg, &planned).await {
            match proposed.allows_downgrade() {
                true => diagnostics.push(super::downgrade::allowed(&refusal)),
                false => return fail(vec![refusal]),
            }
        }
    }
    let Some(triggers) = proposed.plan_triggers() else {
        // Which plan runs depends on a value Terraform does not know yet.
        let planned = schema.mark_computed_unknown(&planned.into_value());
        let mut requires_replace = schema.requires_replace(&prior_state, &planned);
        requires_replace.extend(also_replace);
        return PlanResponse {
            planned_state: planned,
            requires_replace,
            diagnostics,
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
    let show_manifests = manifests::wanted(&proposed.show_manifests, session.config.show_manifests);
    let computed = match (&desired, plan_name) {
        (Some(desired), Some(plan_name)) => {
            let safety = proposed.crd_safety(session.config.crd_upgrade_safety);
            // Every object's content is copied only for `manifests` to show.
            let contents = match show_manifests {
                Some(true) => engine::Contents::Keep,
                _ => engine::Contents::Skip,
            };
            plan_preview(session, desired, plan_name, prior_attrs, safety, contents).await
        }
        _ => Computed::unknown(Vec::new()),
    };
    diagnostics.extend(computed.warnings);
    planned.preview = computed.value;
    planned.manifests = match show_manifests {
        None => Value::Unknown,
        Some(false) => Value::Null,
        Some(true) => match (&computed.managed, &plan_to_run, &desired) {
            (Some(managed), _, _) => manifests::value(managed, &prior_attrs.manifests, &secret),
            // No plan runs: what the state shows, else what the last run applied.
            (None, None, _) if !prior_attrs.manifests.is_null() => prior_attrs.manifests.clone(),
            (None, None, Some(desired)) => {
                let last = prior_attrs.last_plan.as_deref().unwrap_or("deploy");
                match current_objects(session, desired, last, &prior_attrs.object_refs()).await {
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
        also_replace,
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
    also_replace: Vec<AttributePath>,
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
    let mut requires_replace = schema.requires_replace(prior_state, &planned);
    requires_replace.extend(also_replace);
    PlanResponse {
        requires_replace,
        planned_state: planned,
        planned_private: Vec::new(),
        diagnostics,
    }
}
