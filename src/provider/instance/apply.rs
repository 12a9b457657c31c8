//! The apply RPC: runs the KUDO plan that the plan step chose, or only refreshes
//! `manifests` when no plan has to run, and records what the run created. A planned
//! null state is a destroy, handed to `destroy`.

use std::collections::BTreeMap;

use tfplugin::{ApplyRequest, ApplyResponse, Attr, AttributePath, Diagnostic, IntoValue, Value};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::{Cluster, ObjectRef};
use kudo_engine::engine::{self, RunRequest};
use kudo_plan::{Desired, Inputs};

use crate::provider::children;
use crate::provider::manifests;
use crate::provider::packages::{self};
use crate::provider::private_state::PrivateState;
use crate::provider::sensitive::{self};
use crate::provider::timeouts::{self, Operation};
use crate::provider::{Session, decode, namespace_of, render_seed};

use super::deadline::*;
use super::decision::*;
use super::destroy::destroy;
use super::model::InstanceModel;
use super::rendered::*;
use super::values::*;

pub(super) async fn apply(
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
    // a lost seed would change generated passwords on the next run. The fingerprints
    // are those the apply read back; an apply that wrote nothing keeps the planned ones.
    if !resp.new_state.is_null() {
        let mut private = match resp.private.is_empty() {
            true => PrivateState::parse(&req.planned_private),
            false => PrivateState::parse(&resp.private),
        };
        private.render_seed = seed;
        resp.private = private.to_bytes();
    }
    resp
}

/// Private state holding only the fingerprints an apply read back (never empty, so the
/// caller can tell it from an apply that read nothing); the caller adds the seed.
fn private_fingerprints(applied_fields: Vec<String>) -> Vec<u8> {
    let bytes = PrivateState {
        applied_fields,
        ..Default::default()
    }
    .to_bytes();
    match bytes.is_empty() {
        true => b"{}".to_vec(),
        false => bytes,
    }
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
    session.remember_render_seed(&namespace, &name, seed);
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
    let health = planned.health_policy(&session.config.health);
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
            crd_safety: planned.crd_safety(session.config.crd_upgrade_safety),
            health: &health,
            progress: None,
            tree: Default::default(),
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
    state.children = children::children_value(&tree, &secret);
    match run {
        Ok(outcome) => {
            let status = outcome
                .plan_status
                .get("status")
                .and_then(serde_json::Value::as_str)
                .unwrap_or(STATUS_COMPLETE)
                .to_string();
            state.status = status.into();
            let (objects, applied_fields) =
                objects_value(&cluster, &outcome.inventory, &name).await;
            state.objects = objects;
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
                private: private_fingerprints(applied_fields),
                diagnostics: super::diag::kept_warnings(&outcome.kept),
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
            let (objects, applied_fields) = objects_value(&cluster, &objects, &name).await;
            state.objects = objects;
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
            ApplyResponse {
                private: private_fingerprints(applied_fields),
                ..fail(state.into_value(), d)
            }
        }
    }
}

/// `manifests` of `objects` after an apply whose plan could not know them (planned
/// without the cluster): the package rendered with the run's values, `plan_name`'s
/// render winning. Null when that render fails (the apply itself succeeded).
#[allow(clippy::too_many_arguments)]
pub(super) async fn applied_manifests(
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
