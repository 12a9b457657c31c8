//! `kudo_instance`: an Instance of an installed operator and everything its plans create.
//! This file holds the RPC handlers (plan, apply, destroy, read, import); values,
//! validation, plan-time renders, the plan decision and timeouts live beside it.

mod deadline;
mod decision;
mod rendered;
mod validate;
mod values;

use std::collections::BTreeMap;

use tfplugin::{
    ApplyRequest, ApplyResponse, AttributePath, Diagnostic, ImportResponse, ImportedResource,
    PlanRequest, PlanResponse, ReadRequest, ReadResponse, Value,
};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::{Cluster, ObjectRef};
use kudo_engine::engine::{self, Cleanup, RunRequest};
use kudo_plan::{Desired, Inputs};

use super::children;
use super::packages::{self};
use super::sensitive::{self, sensitive_of};
use super::timeouts::{self, DEFAULT_CREATE, DEFAULT_DELETE, DEFAULT_UPDATE};
use super::{Session, namespace_of, render_seed, schema};

use self::deadline::*;
pub(super) use self::decision::parameter_diagnostics;
use self::decision::*;
use self::rendered::*;
pub use self::validate::validate;
use self::values::*;
pub use self::values::{STATUS_COMPLETE, STATUS_DRIFTED};

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
    // Write-only values join the sensitive ones for planning (see `write_only`).
    let (req, restore) = match super::write_only::for_plan(session, req).await {
        Ok(r) => r,
        Err(diagnostics) => {
            return PlanResponse {
                diagnostics,
                ..Default::default()
            };
        }
    };
    let mut resp = plan_inner(session, req, &seed).await;
    resp.planned_private = planned_private;
    resp.planned_state = restore.state(resp.planned_state);
    restore.diagnostics(&mut resp.diagnostics);
    resp
}

async fn plan_inner(session: &Session, req: PlanRequest, seed: &PlanSeed) -> PlanResponse {
    let proposed = req.proposed_new_state;
    let prior = req.prior_state;
    if proposed.is_null() {
        return PlanResponse::default();
    }
    let schema = schema::instance();
    let namespace = namespace_of(&proposed);
    let name = proposed.get("name").as_str().map(str::to_string);
    let mut planned = proposed.clone();
    planned.set_attr("namespace", Value::string(&namespace));
    planned.set_attr(
        "id",
        name.as_ref().map_or(Value::Unknown, |n| {
            Value::string(format!("{namespace}/{n}"))
        }),
    );

    if let Some(prior_name) = prior.get("name").as_str() {
        session.remember_instance(&namespace_of(&prior), prior_name);
    }
    // A new resource must not find its Instance there already (someone else's). Checked
    // whenever the cluster can be reached while planning, except for an instance this
    // run's state holds (the create half of a replacement); the apply checks again.
    if prior.is_null()
        && let Some(name) = &name
        && !session.knows_instance(&namespace, name)
        && let Ok(cluster) = session.cluster().await
        && let Err(d) = super::existing::check_absent(session, &cluster, &namespace, name).await
    {
        return PlanResponse {
            diagnostics: vec![d],
            ..Default::default()
        };
    }

    let mut diagnostics = Vec::new();
    let operator = proposed.get("operator").as_str().map(str::to_string);
    let params = match all_parameters_of(&proposed) {
        Ok(p) => p,
        Err(diagnostics) => {
            return PlanResponse {
                diagnostics,
                ..Default::default()
            };
        }
    };
    let secret = sensitive_of(&proposed).unwrap_or_default();
    let pkg = match &operator {
        Some(id) => match find_package(session, id, true).await {
            Ok(p) => p,
            Err(d) => {
                return PlanResponse {
                    diagnostics: vec![d],
                    ..Default::default()
                };
            }
        },
        None => None,
    };

    if let (Some(pkg), Some(triggers)) = (&pkg, string_map_of(&proposed, "plan_triggers")) {
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
            return PlanResponse {
                diagnostics: unknown,
                ..Default::default()
            };
        }
    }

    let mut effective = None;
    if let (Some(pkg), Some(params)) = (&pkg, &params) {
        match parameter_diagnostics(pkg, params, &secret) {
            Ok(e) => effective = Some(e),
            Err(d) => {
                return PlanResponse {
                    diagnostics: d,
                    ..Default::default()
                };
            }
        }
    }
    let digest = pkg.as_ref().map(packages::digest);
    let outputs = match (&pkg, &effective, &name) {
        (Some(pkg), Some(effective), Some(name)) => {
            match planned_outputs(pkg, name, &namespace, effective, &secret, seed) {
                Ok(o) => o,
                Err(d) => {
                    return PlanResponse {
                        diagnostics: vec![d],
                        ..Default::default()
                    };
                }
            }
        }
        _ => Value::Unknown,
    };
    planned.set_attr("outputs", outputs);
    match planned_children(
        session, &operator, &pkg, &name, &namespace, &params, &secret, seed,
    )
    .await
    {
        Ok(children) => planned.set_attr("children", children),
        Err(d) => {
            return PlanResponse {
                diagnostics: vec![d],
                ..Default::default()
            };
        }
    };

    let replacing = !schema.requires_replace(&prior, &planned).is_empty();
    let Some(triggers) = string_map_of(&proposed, "plan_triggers") else {
        // Which plan runs depends on a value Terraform does not know yet.
        return PlanResponse {
            planned_state: schema.mark_computed_unknown(&planned),
            ..Default::default()
        };
    };
    let plan_to_run: Option<Value> = match (&pkg, &params) {
        (Some(pkg), Some(new_params)) => {
            let children_changed = children::children_changed(&prior, &planned);
            match decide_plan(
                &prior,
                replacing,
                pkg,
                new_params,
                &triggers,
                children_changed,
            ) {
                Ok(plan) => plan.map(Value::string),
                Err(d) => {
                    return PlanResponse {
                        diagnostics: vec![d],
                        ..Default::default()
                    };
                }
            }
        }
        // Without the package or the parameters only a create is certain, and an
        // instance nothing about has changed stays as it is.
        _ if prior.is_null() || replacing => Some(Value::string("deploy")),
        _ if params.is_some()
            && params == all_parameters_of(&prior).ok().flatten()
            && proposed.get("operator") == prior.get("operator")
            && Some(&triggers) == string_map_of(&prior, "plan_triggers").as_ref()
            && prior.get("status").as_str() == Some(STATUS_COMPLETE) =>
        {
            None
        }
        _ => Some(Value::Unknown),
    };

    if pkg.is_none() && operator.is_some() {
        diagnostics.push(Diagnostic::warning(
            "Parameters not checked",
            "The operator package is neither planned in this configuration nor installed yet, so parameters will be checked when the apply runs.",
        ));
    }
    // Walk what the apply will walk, so that whatever fails without a cluster (template
    // mistakes, a Toggle or enablingParameter that is not a boolean) fails the plan with
    // the apply's own words rather than half-way through the apply.
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
    if let (Some(desired), Some(Value::String(plan_name))) = (&desired, &plan_to_run)
        && let Err(e) = desired.plan(plan_name)
        && let Some(pkg) = &pkg
    {
        return walk_failure(pkg, &secret, e);
    }
    let (preview, warning) = match (&desired, &plan_to_run) {
        (Some(desired), Some(Value::String(plan_name))) => {
            plan_preview(session, desired, plan_name, &prior, params.as_ref()).await
        }
        _ => (Value::Unknown, Vec::new()),
    };
    diagnostics.extend(warning);
    planned.set_attr(super::preview::ATTR, preview);
    finish_plan(
        &schema,
        &prior,
        planned,
        plan_to_run,
        effective.map(|e| sensitive::strip(e, &secret)),
        digest,
        diagnostics,
    )
}

/// Fills the computed attributes: kept from the prior state when no plan runs, else
/// the plan's name and unknowns for what the run decides.
fn finish_plan(
    schema: &tfplugin::Schema,
    prior: &Value,
    mut planned: Value,
    plan_to_run: Option<Value>,
    effective: Option<BTreeMap<String, String>>,
    digest: Option<String>,
    diagnostics: Vec<Diagnostic>,
) -> PlanResponse {
    match plan_to_run {
        None => {
            // Nothing to do: keep what the state says.
            for attr in [
                "status",
                "last_plan",
                "objects",
                "effective_parameters",
                "operator_digest",
                "outputs",
                super::preview::ATTR,
            ] {
                planned.set_attr(attr, prior.get(attr).clone());
            }
        }
        Some(plan_name) => {
            planned.set_attr("last_plan", plan_name);
            planned.set_attr("status", Value::Unknown);
            planned.set_attr("objects", Value::Unknown);
            planned.set_attr(
                "effective_parameters",
                effective.as_ref().map_or(Value::Unknown, string_map),
            );
            planned.set_attr(
                "operator_digest",
                digest.map_or(Value::Unknown, Value::string),
            );
        }
    }
    PlanResponse {
        requires_replace: schema.requires_replace(prior, &planned),
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
    let restore_prior = req.prior_state.clone();
    let seed = match render_seed::for_apply(req.prior_state.is_null(), &req.planned_private) {
        Ok(s) => s,
        Err(d) => {
            return ApplyResponse {
                new_state: req.prior_state,
                diagnostics: vec![d],
                ..Default::default()
            };
        }
    };
    let (req, restore) = match super::write_only::for_apply(session, req).await {
        Ok(r) => r,
        Err(diagnostics) => {
            return ApplyResponse {
                new_state: restore_prior,
                diagnostics,
                ..Default::default()
            };
        }
    };
    let mut resp = apply_inner(session, req, seed.as_deref(), cancel).await;
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

async fn apply_inner(
    session: &Session,
    req: ApplyRequest,
    seed: Option<&str>,
    cancel: &CancellationToken,
) -> ApplyResponse {
    let prior = req.prior_state;
    let planned = req.planned_state;
    let fail = |state: Value, d: Diagnostic| ApplyResponse {
        new_state: state,
        diagnostics: vec![d],
        ..Default::default()
    };
    let cluster = match session.cluster_for_change(&planned).await {
        Ok(c) => c,
        Err(d) => return fail(prior, d),
    };
    if planned.is_null() {
        return destroy(session, &cluster, prior, seed, cancel).await;
    }

    let namespace = namespace_of(&planned);
    let name = planned.get("name").as_str().unwrap_or_default().to_string();
    if prior.is_null()
        && let Err(d) = super::existing::check_absent(session, &cluster, &namespace, &name).await
    {
        return fail(prior, d);
    }
    let operator = planned
        .get("operator")
        .as_str()
        .unwrap_or_default()
        .to_string();
    let pkg = match find_package(session, &operator, false).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            return fail(
                prior,
                Diagnostic::error(
                    "Operator not installed",
                    format!("There is no OperatorVersion for {operator:?} in the cluster. Install it with a kudo_operator resource and reference its id."),
                )
                .with_attribute(AttributePath::attribute("operator")),
            );
        }
        Err(d) => return fail(prior, d),
    };
    let public = parameters_of(&planned).unwrap_or_default();
    let secret = sensitive_of(&planned).unwrap_or_default();
    let params = match sensitive::merge(Some(&public), Some(&secret)) {
        Ok(p) => p.unwrap_or_default(),
        Err(diagnostics) => {
            return ApplyResponse {
                new_state: prior,
                diagnostics,
                ..Default::default()
            };
        }
    };
    let effective = match parameter_diagnostics(&pkg, &params, &secret) {
        Ok(e) => e,
        Err(d) => {
            return ApplyResponse {
                new_state: prior,
                diagnostics: d,
                ..Default::default()
            };
        }
    };
    let plan_name = planned
        .get("last_plan")
        .as_str()
        .unwrap_or("deploy")
        .to_string();
    let (operation, default_limit) = if prior.is_null() {
        ("create", DEFAULT_CREATE)
    } else {
        ("update", DEFAULT_UPDATE)
    };
    let limit = match timeouts::timeout(&planned, operation, default_limit) {
        Ok(l) => l,
        Err(d) => return fail(prior, d),
    };
    // Outputs were checked while planning; computing them before the run means a
    // surprise here cannot lose the record of what the run created.
    let outputs = match render_outputs(&pkg, &name, &namespace, &effective, seed)
        .and_then(|o| sensitive::check_outputs(&o, &secret).map(|()| o))
    {
        Ok(o) => o,
        Err(d) => return fail(prior, d),
    };
    let tree = match children::tree(
        session, &operator, &pkg, &name, &namespace, &params, seed, false,
    )
    .await
    {
        Ok(t) => t.unwrap_or_default(),
        Err(d) => return fail(prior, d),
    };
    let previous = objects_of(&prior);
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
            crd_deletion: crd_deletion_of(&planned),
        },
        &secret,
        &deadline.token,
    )
    .await;
    deadline.explain(cancel, &format!("plan {plan_name:?}"), &mut run);
    let mut state = planned.clone();
    state.set_attr("id", Value::string(format!("{namespace}/{name}")));
    state.set_attr("last_plan", Value::string(&plan_name));
    state.set_attr(
        "effective_parameters",
        string_map(&sensitive::strip(effective, &secret)),
    );
    state.set_attr("operator_digest", Value::string(packages::digest(&pkg)));
    if !state.get(super::preview::ATTR).is_known() {
        // The plan could not look at the cluster; an apply must leave nothing unknown.
        state.set_attr(super::preview::ATTR, Value::Null);
    }
    state.set_attr("outputs", string_map(&outputs));
    state.set_attr("children", tree.value(&secret));
    match run {
        Ok(outcome) => {
            let status = outcome
                .plan_status
                .get("status")
                .and_then(serde_json::Value::as_str)
                .unwrap_or(STATUS_COMPLETE)
                .to_string();
            state.set_attr("status", Value::string(status));
            state.set_attr("objects", objects_value(&cluster, &outcome.inventory).await);
            ApplyResponse {
                new_state: state,
                diagnostics: super::diag::kept_warnings(&outcome.kept),
                ..Default::default()
            }
        }
        Err(e) => {
            // Record what exists so the next plan re-runs the plan (status is not
            // COMPLETE) and destroy finds every object (they also carry the instance label).
            let status = if e.fatal { "FATAL_ERROR" } else { "ERROR" };
            state.set_attr("status", Value::string(status));
            let objects = match &e.inventory {
                Some(known) => known.clone(),
                None if prior.is_null() => Vec::new(),
                None => previous,
            };
            state.set_attr("objects", objects_value(&cluster, &objects).await);
            // Failures can quote rendered text or a rejected value.
            let mut d = engine_diagnostic(
                session,
                &format!("Plan {plan_name} of instance {name} failed"),
                &e,
            );
            d.detail = sensitive::redact(&d.detail, &secret);
            fail(state, d)
        }
    }
}

async fn destroy(
    session: &Session,
    cluster: &Cluster,
    prior: Value,
    seed: Option<&str>,
    cancel: &CancellationToken,
) -> ApplyResponse {
    let namespace = namespace_of(&prior);
    let name = prior.get("name").as_str().unwrap_or_default().to_string();
    let limit = match timeouts::timeout(&prior, "delete", DEFAULT_DELETE) {
        Ok(l) => l,
        Err(d) => {
            return ApplyResponse {
                new_state: prior,
                diagnostics: vec![d],
                ..Default::default()
            };
        }
    };
    let operator = prior
        .get("operator")
        .as_str()
        .unwrap_or_default()
        .to_string();
    // The package is needed only for the `cleanup` plan; without it the objects still go.
    let pkg = find_package(session, &operator, false).await.ok().flatten();
    let params = parameters_of(&prior).unwrap_or_default();
    // KudoOperator tasks of the cleanup plan take their packages from the tree, as the
    // apply's plans do. Without one only folder dependencies run, which is no reason to
    // keep the instance: the cleanup run says which task it could not load.
    let tree = match &pkg {
        Some(p) if p.operator.plans.contains_key("cleanup") => {
            let all = all_parameters_of(&prior).ok().flatten().unwrap_or_default();
            match children::tree(session, &operator, p, &name, &namespace, &all, seed, false).await
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
    let inventory = objects_of(&prior);
    let delete_volumes = super::volumes::delete_of(&prior);
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
        crd_deletion_of(&prior),
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
            new_state: prior,
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
    let namespace = namespace_of(&state);
    let Some(name) = state.get("name").as_str().map(str::to_string) else {
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
    let mut fresh = state.clone();
    let plan = state
        .get("last_plan")
        .as_str()
        .unwrap_or("deploy")
        .to_string();
    if let Some(status) = engine::InstanceObject::from_value(&instance).plan_status(&plan) {
        fresh.set_attr("status", Value::string(status));
    }
    let entries = object_entries(&state);
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
        && fresh.get("status").as_str() == Some(STATUS_COMPLETE)
    {
        match now {
            None => tracing::info!(%object, "managed object is missing; the next plan repairs it"),
            Some(_) => {
                tracing::info!(%object, "managed object was re-created out of band; the next plan applies it again")
            }
        }
        fresh.set_attr("status", Value::string(STATUS_DRIFTED));
    }
    if !entries.is_empty() {
        fresh.set_attr(
            "objects",
            Value::list(
                entries
                    .iter()
                    .zip(&uids)
                    .map(|((r, _), uid)| object_value(r, uid.as_deref())),
            ),
        );
    }
    keep(fresh, Vec::new())
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
        )
        .await
        .ok()
        .flatten()
        .map_or(Value::Null, |t| t.value(&secret)),
        None => Value::Null,
    };
    let state = Value::object([
        ("name", Value::string(name)),
        ("namespace", Value::string(namespace)),
        ("operator", Value::string(operator)),
        (
            "parameters",
            if params.is_empty() {
                Value::Null
            } else {
                string_map(&params)
            },
        ),
        (
            sensitive::ATTR,
            if secret.is_empty() {
                Value::Null
            } else {
                string_map(&secret)
            },
        ),
        ("id", Value::string(format!("{namespace}/{name}"))),
        ("status", Value::string(status)),
        (
            "outputs",
            match (&pkg, &effective) {
                (Some(p), Some(e)) => render_outputs(p, name, namespace, e, None)
                    .map_or(Value::Null, |o| string_map(&o)),
                _ => Value::Null,
            },
        ),
        ("last_plan", Value::string(last_plan)),
        (
            "effective_parameters",
            effective
                .map(|e| sensitive::strip(e, &secret))
                .as_ref()
                .map_or(Value::Null, string_map),
        ),
        (super::preview::ATTR, Value::Null),
        (
            "objects",
            Value::list(
                objects
                    .iter()
                    .map(|(r, uid)| object_value(r, uid.as_deref())),
            ),
        ),
        (
            "operator_digest",
            pkg.as_ref()
                .map_or(Value::Null, |p| Value::string(packages::digest(p))),
        ),
        ("timeouts", Value::Null),
        ("children", children),
        // Write-only values are never in state; an imported instance's Secret shows
        // as `sensitive_parameters` above.
        (super::write_only::ATTR, Value::Null),
        (super::write_only::VERSION_ATTR, Value::Null),
        (super::volumes::ATTR, Value::Null),
    ]);
    ImportResponse {
        imported: vec![ImportedResource {
            type_name: schema::INSTANCE.to_string(),
            state,
            private: Vec::new(),
        }],
        diagnostics: Vec::new(),
    }
}
