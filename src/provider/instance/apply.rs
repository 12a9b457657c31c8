//! The apply RPC: runs the KUDO plan that the plan step chose through the engine
//! ([`engine::apply_change`]: the instance and its whole dependency tree, checked
//! before the first write), or only refreshes `manifests` when no plan has to run, and
//! records what the run created. With `rollback_on_failure` the same call puts a failed
//! update back or removes a failed create ([`engine::OnFailure`]); `rollback` words
//! that. A planned null state is a destroy, handed to `destroy`.

use tfplugin::{ApplyRequest, ApplyResponse, Attr, IntoValue, Value};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::Cluster;
use kudo_engine::engine::{self, Applied, ApplyAnswer, Manifests};

use crate::provider::manifests;
use crate::provider::packages;
use crate::provider::private_state::PrivateState;
use crate::provider::sensitive;
use crate::provider::timeouts::{self, Operation};
use crate::provider::{Session, decode, namespace_of, render_seed};

use std::collections::BTreeMap;

use super::deadline::*;
use super::destroy::destroy;
use super::lookup::Installed;
use super::model::{InstanceModel, ManagedObject};
use super::rollback::{Undo, Undone};
use super::views;
use super::write_only::{Restore, WriteOnly};

pub(super) async fn apply(
    session: &Session,
    req: ApplyRequest,
    cancel: &CancellationToken,
) -> ApplyResponse {
    let seed = match render_seed::for_apply(req.prior_state.is_null(), &req.planned_private) {
        Ok(s) => s,
        Err(d) => return ApplyResponse::failed(req.prior_state, vec![d]),
    };
    let (prior, planned, config) = match (
        decode::<InstanceModel>(&req.prior_state),
        decode::<InstanceModel>(&req.planned_state),
        decode::<InstanceModel>(&req.config),
    ) {
        (Ok(prior), Ok(planned), Ok(config)) => (prior, planned, config),
        (Err(d), _, _) | (_, Err(d), _) | (_, _, Err(d)) => {
            return ApplyResponse::failed(req.prior_state, d);
        }
    };
    // Write-only values join the sensitive ones in the engine (see `write_only`).
    let write_only = planned
        .as_ref()
        .and_then(|p| WriteOnly::of(prior.as_ref(), p, config.as_ref()));
    if let Some(Err(diagnostics)) = write_only.as_ref().map(WriteOnly::check_apply) {
        return ApplyResponse::failed(req.prior_state, diagnostics);
    }
    let private = PrivateState::parse(&req.planned_private);
    let planned_private = req.planned_private.clone();
    let change = Change {
        prior_state: req.prior_state,
        prior,
        seed: seed.clone(),
        private,
    };
    let (mut resp, restore) =
        apply_inner(session, change, planned, write_only.as_ref(), cancel).await;
    resp.new_state = restore.state(resp.new_state);
    restore.diagnostics(&mut resp.diagnostics);
    // Every outcome that leaves an instance in state keeps the seed, failures included:
    // a lost seed would change generated passwords on the next run.
    // An apply that ran nothing keeps the planned private state (fingerprints, records).
    if !resp.new_state.is_null() {
        let mut private = match resp.private.is_empty() {
            true => PrivateState::parse(&planned_private),
            false => PrivateState::parse(&resp.private),
        };
        private.render_seed = seed;
        let planned = PrivateState::parse(&planned_private);
        // The planned count, which counts this apply when its summary said so.
        private.runs = planned.runs;
        private.completed = completed(&resp.new_state).or(planned.completed);
        private.tree = private.tree.spent();
        private.rollback = None;
        resp.private = private.to_bytes();
    }
    resp
}

/// The `operator` of a state whose last plan completed.
fn completed(state: &Value) -> Option<String> {
    let complete = state.get("status").as_str() == Some(kudo_plan::RunStatus::COMPLETE);
    complete
        .then(|| state.get("operator").as_str().map(str::to_string))
        .flatten()
}

/// The apply's starting point: the prior state (as Terraform sent it, handed back on
/// failures, and decoded), the render seed and the planned private state.
struct Change {
    prior_state: Value,
    prior: Option<InstanceModel>,
    seed: Option<String>,
    private: PrivateState,
}

async fn apply_inner(
    session: &Session,
    change: Change,
    planned: Option<InstanceModel>,
    write_only: Option<&WriteOnly>,
    cancel: &CancellationToken,
) -> (ApplyResponse, Restore) {
    let seed = change.seed.as_deref();
    let cluster = match session.cluster_for_change(planned.is_none()).await {
        Ok(c) => c,
        Err(d) => {
            return (
                ApplyResponse::failed(change.prior_state, vec![d]),
                Restore::none(),
            );
        }
    };
    let Some(planned) = planned else {
        let prior = change.prior.unwrap_or_default();
        let destroyed = destroy(session, &cluster, change.prior_state, &prior, seed, cancel).await;
        return (destroyed, Restore::none());
    };
    let namespace = namespace_of(&planned.namespace);
    let name = planned.name.as_deref().unwrap_or_default().to_string();
    session.remember_render_seed(&namespace, &name, seed);
    run(session, &cluster, change, planned, write_only, cancel).await
}

/// Applies the planned change through the engine (the namespace, then the KUDO plan,
/// or nothing when the plan decided none runs) and records what it did.
async fn run(
    session: &Session,
    cluster: &Cluster,
    change: Change,
    planned: InstanceModel,
    write_only: Option<&WriteOnly>,
    cancel: &CancellationToken,
) -> (ApplyResponse, Restore) {
    let seed = change.seed.as_deref();
    let namespace = namespace_of(&planned.namespace);
    let name = planned.name.as_deref().unwrap_or_default().to_string();
    let operator = planned.operator.as_deref().unwrap_or_default().to_string();
    let public = planned.parameters().unwrap_or_default();
    let configured_secret = planned.sensitive().unwrap_or_default();
    let operation = match change.prior {
        None => Operation::Create,
        Some(_) => Operation::Update,
    };
    let limit = match timeouts::timeout(&planned.timeouts, operation) {
        Ok(l) => l,
        Err(d) => {
            return (
                ApplyResponse::failed(change.prior_state, vec![d]),
                Restore::none(),
            );
        }
    };
    // The plan decided no KUDO plan runs: no dependency tree is needed.
    let settled = change.private.settled;
    // The plan-time copy `kudo_operator` made, with the tree it recorded; without them
    // (a state made elsewhere, a saved plan applied from a fresh checkout) the engine
    // reads the cluster's OperatorVersion first and resolves its tree again.
    let installed = Installed::of(session, &operator, &namespace);
    let plan_name = planned
        .last_plan
        .as_deref()
        .unwrap_or(kudo_plan::DEFAULT_PLAN)
        .to_string();
    let previous = change
        .prior
        .as_ref()
        .map(InstanceModel::object_refs)
        .unwrap_or_default();
    let health = planned.health_settings(&session.config.health);
    let wants_manifests = planned.manifests == Value::Unknown;
    let undo = Undo::new(
        session,
        change.prior.as_ref(),
        change.private.rollback.as_ref(),
        &planned,
        limit,
    );
    let request = engine::ApplyRequest {
        name: &name,
        namespace: &namespace,
        package: installed.source(),
        public: &public,
        sensitive: &configured_secret,
        plan: &plan_name,
        seed,
        resolution: installed.recorded.as_ref(),
        operator_namespace: &installed.namespace,
        previous: &previous,
        record: &change.private.tree,
        fresh: change.prior.is_none(),
        crd_deletion: planned.crd_deletion(),
        crd_safety: planned.crd_safety(session.config.crd_upgrade_safety),
        health: &health,
        manifests: wants_manifests,
        progress: None,
        must_not_exist: change.prior.is_none(),
        create_namespace: planned.create_namespace.known() == Some(&true),
        settled,
        on_failure: undo.on_failure(),
        write_only: write_only.map(WriteOnly::request),
    };
    let deadline = Deadline::new(cancel, limit);
    // Every sensitive value the run used, write-only ones included (the engine joined
    // them): what nothing going back to Terraform may show.
    let (applied, secret) =
        engine::apply_change(cluster, &request, &deadline.token, |ran, applied| {
            (applied, ran.sensitive.clone())
        })
        .await;
    let restore = match write_only {
        Some(w) => w.for_apply(w.used(&secret)),
        None => Restore::none(),
    };
    let ran = Ran {
        plan_name: &plan_name,
        public: &public,
        copy: installed.copy.as_ref(),
        secret: &secret,
    };
    let stop = (deadline, cancel);
    let resp = answer(
        session,
        change.prior_state,
        planned,
        applied,
        ran,
        undo,
        stop,
    );
    (resp, restore)
}

/// What [`answer`] words the engine's answer with: the plan that ran, its values
/// (`secret`: every sensitive one, write-only ones included) and the package copy.
struct Ran<'a> {
    plan_name: &'a str,
    public: &'a BTreeMap<String, String>,
    copy: Option<&'a kudo_package::Package>,
    secret: &'a BTreeMap<String, String>,
}

/// The apply's answer from the engine's (`applied`).
fn answer(
    session: &Session,
    prior_state: Value,
    planned: InstanceModel,
    applied: Result<ApplyAnswer, engine::PlanRefusal>,
    ran: Ran<'_>,
    undo: Undo<'_>,
    (deadline, cancel): (Deadline, &CancellationToken),
) -> ApplyResponse {
    let Ran {
        plan_name,
        public,
        copy,
        secret,
    } = ran;
    let (mut applied, undone) = match applied {
        Ok(ApplyAnswer::Ran(a)) => (*a, Undone::Nothing),
        Ok(ApplyAnswer::RolledBack { failed, rolled }) => (
            *failed,
            Undone::RolledBack((*rolled).map(Box::new).map_err(|e| e.to_string())),
        ),
        Ok(ApplyAnswer::Removed { failed, removed }) => (*failed, Undone::Removed(removed)),
        Ok(ApplyAnswer::Settled { managed }) => {
            deadline.timer.abort();
            return settled_state(planned, managed.as_ref(), secret);
        }
        Err(r) => {
            deadline.timer.abort();
            let params = sensitive::merge(Some(public), Some(secret))
                .ok()
                .flatten()
                .unwrap_or_default();
            return ApplyResponse::failed(
                prior_state,
                super::refusal::diagnostics(session, copy, &params, secret, r),
            );
        }
    };
    deadline.explain(cancel, &format!("plan {plan_name:?}"), &mut applied.run);
    if applied.run.is_ok() || matches!(undo, Undo::Stay) {
        return record(session, planned, plan_name, secret, applied);
    }
    let failed = record(session, planned.clone(), plan_name, secret, applied);
    undo.answer(session, &planned, failed, undone, secret)
}

/// The state after a run, successful or not, and the private state with what it read
/// back (fingerprints, the dependency instances' records).
pub(super) fn record(
    session: &Session,
    mut state: InstanceModel,
    plan_name: &str,
    secret: &std::collections::BTreeMap<String, String>,
    applied: Applied,
) -> ApplyResponse {
    let namespace = namespace_of(&state.namespace);
    let name = state.name.as_deref().unwrap_or_default().to_string();
    state.id = format!("{namespace}/{name}").into();
    state.last_plan = plan_name.into();
    // Recorded failures included, so the next plan re-runs the plan (status is not
    // COMPLETE) and destroy finds every object (they also carry the instance label).
    state.status = applied.status().into();
    state.effective_parameters = Attr::Known(sensitive::strip(applied.effective, secret));
    state.operator_digest = packages::digest(&applied.package).into();
    if !state.preview.is_known() {
        // The plan could not look at the cluster; an apply must leave nothing unknown.
        state.preview = Value::Null;
    }
    if !state.plan_steps.is_known() {
        state.plan_steps = Value::Null;
    }
    if !state.summary.is_known() {
        state.summary = Value::Null;
    }
    state.outputs = views::string_map(&applied.outputs);
    state.children = views::children(Some(&applied.children));
    let planned_objects = state.objects.clone();
    state.objects = Attr::Known(ManagedObject::map(
        applied
            .objects
            .iter()
            .map(|(r, uid, _)| (r, uid.as_deref())),
    ));
    let actual_uids = match applied.run.is_ok() {
        true => keep_planned_uids(&mut state.objects, &planned_objects),
        false => Default::default(),
    };
    if state.manifests == Value::Unknown {
        // Planned without the cluster: what the run applied, rendered again (the next
        // plan shows them after a failure).
        state.manifests = match &applied.managed {
            Some(managed) => manifests::value(managed, &Value::Null, secret),
            None => Value::Null,
        };
    }
    // Planned as a successful run leaves it but for its time (see `plan::Answer`).
    if !state.plan_status.is_fully_known() {
        state.plan_status = super::plan_status::value(applied.plan_status.as_ref(), secret);
    }
    let private = PrivateState {
        applied_fields: applied.objects.into_iter().map(|(_, _, f)| f).collect(),
        tree: applied.record,
        actual_uids,
        ..Default::default()
    };
    match applied.run {
        Ok(outcome) => ApplyResponse {
            new_state: state.into_value(),
            private: private.to_bytes_always(),
            diagnostics: super::diag::kept_warnings(&outcome.kept),
        },
        Err(e) => {
            // Failures can quote rendered text or a rejected value.
            let mut d = engine_diagnostic(
                session,
                &format!("Plan {plan_name} of instance {name} failed"),
                &e,
            );
            d.detail = sensitive::redact(&d.detail, secret);
            ApplyResponse {
                new_state: state.into_value(),
                private: private.to_bytes_always(),
                diagnostics: vec![d],
            }
        }
    }
}

/// The uids the plan showed, where the run wrote the same objects: an object that
/// was deleted after the plan (someone, or a saved plan applied later) is created again
/// by the run with a new uid, and Terraform holds a successful apply to every value it
/// planned. The state then keeps the planned uid until the next refresh; the uids read
/// back are returned, by key, for the private state, so that this refresh compares the
/// live objects with them (our own re-creation is no drift) and records them. Any other
/// difference from the plan is left for Terraform to report.
fn keep_planned_uids(
    objects: &mut Attr<std::collections::BTreeMap<String, ManagedObject>>,
    planned: &Attr<std::collections::BTreeMap<String, ManagedObject>>,
) -> std::collections::BTreeMap<String, String> {
    let mut actual = std::collections::BTreeMap::new();
    let (Attr::Known(objects), Attr::Known(planned)) = (objects, planned) else {
        return actual;
    };
    if objects.len() != planned.len() {
        tracing::warn!(
            planned = planned.len(),
            applied = objects.len(),
            "the run left other objects than the plan predicted"
        );
        return actual;
    }
    for (key, object) in objects.iter_mut() {
        let Some(Attr::Known(planned_uid)) = planned.get(key).map(|p| &p.uid) else {
            continue;
        };
        if object.uid.known() != Some(planned_uid) {
            tracing::warn!(object = %key, "created again after the plan; its new uid is recorded by the next refresh");
            if let Some(uid) = object.uid.known() {
                actual.insert(key.clone(), uid.clone());
            }
            object.uid = Attr::Known(planned_uid.clone());
        }
    }
    actual
}

/// An apply that ran no plan: the planned state, with `manifests` filled in when the
/// plan could not know them (from what the engine read).
fn settled_state(
    mut state: InstanceModel,
    managed: Option<&Manifests>,
    secret: &std::collections::BTreeMap<String, String>,
) -> ApplyResponse {
    if state.manifests == Value::Unknown {
        state.manifests = match managed {
            Some(managed) => manifests::value(managed, &Value::Null, secret),
            None => Value::Null,
        };
    }
    ApplyResponse {
        new_state: state.into_value(),
        ..Default::default()
    }
}
