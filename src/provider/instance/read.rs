//! The read (refresh) RPC: checks the state against the cluster (the Instance's plan
//! status, the managed objects' uids and, unless drift is ignored, their fields) and
//! reports whatever changed outside Terraform.

use std::collections::{BTreeMap, HashSet};

use tfplugin::{Attr, Diagnostic, IntoValue, ReadRequest, ReadResponse, Value};

use kudo_engine::cluster::ObjectRef;
use kudo_engine::engine::{self};

use crate::provider::drift::DriftMode;
use crate::provider::private_state::PrivateState;
use crate::provider::{Session, decode, namespace_of};

use super::field_drift;
use super::model::{InstanceModel, ManagedObject};
use super::values::*;

pub(super) async fn read(session: &Session, req: ReadRequest) -> ReadResponse {
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
    let seed = crate::provider::render_seed::from_private(&private);
    session.remember_render_seed(&namespace, &name, seed.as_deref());
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
    let observed = match observe(&cluster, &refs, &name).await {
        Ok(o) => o,
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
        .zip(&observed)
        .find(|((_, known), now)| match (known, &now.uid) {
            (_, None) => true,
            (Some(known), Some(now)) => known != now,
            (None, Some(_)) => false,
        });
    if let Some(((object, _), now)) = drifted
        && fresh.status.as_deref() == Some(STATUS_COMPLETE)
    {
        match now.uid {
            None => tracing::info!(%object, "managed object is missing; the next plan repairs it"),
            Some(_) => {
                tracing::info!(%object, "managed object was re-created out of band; the next plan applies it again")
            }
        }
        fresh.status = STATUS_DRIFTED.into();
    }
    let mut diagnostics = Vec::new();
    fresh.drifted_fields = Value::list([]);
    let mut recorded = PrivateState::parse(&private);
    let settings = model.drift_settings(&session.config.drift);
    if settings.mode() != DriftMode::Ignore && fresh.status.as_deref() == Some(STATUS_COMPLETE) {
        // Only objects whose applied fields changed since the last apply (or were never
        // fingerprinted) are compared field by field; the others hold what we applied.
        let suspects: HashSet<field_drift::Identity> = observed
            .iter()
            .enumerate()
            .filter(|(i, now)| {
                now.applied_fields.is_none()
                    || now.applied_fields.as_deref()
                        != recorded.applied_fields_of(*i, entries.len())
            })
            .map(|(i, _)| field_drift::identity(&entries[i].0))
            .collect();
        tracing::debug!(
            instance = %name,
            objects = entries.len(),
            compared = suspects.len(),
            "objects whose applied fields someone else wrote to"
        );
        let found = match suspects.is_empty() {
            true => Ok((Vec::new(), BTreeMap::new())),
            false => {
                field_drift::detect(
                    session,
                    &cluster,
                    &model,
                    &private,
                    (&namespace, &name),
                    &settings,
                    &suspects,
                )
                .await
            }
        };
        match found {
            Ok((drift, _)) if drift.is_empty() => {
                // Compared and found as applied: the fields as they are now are the
                // ones to compare with next time.
                recorded.applied_fields =
                    fingerprints(&observed, &entries, &recorded, &HashSet::new());
            }
            Ok((drift, secret)) => {
                let drifted: HashSet<field_drift::Identity> = drift
                    .iter()
                    .map(|d| field_drift::identity(&d.object))
                    .collect();
                recorded.applied_fields = fingerprints(&observed, &entries, &recorded, &drifted);
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
        fresh.objects = Attr::Known(ManagedObject::map(
            entries
                .iter()
                .zip(&observed)
                .map(|((r, _), now)| (r, now.uid.as_deref())),
        ));
    }
    let private = recorded.to_bytes();
    ReadResponse {
        new_state: fresh.into_value(),
        private,
        diagnostics,
    }
}

/// The fingerprints to record: each object's as observed now, except that a drifted
/// object keeps the recorded one, so that the next refresh compares it again.
fn fingerprints(
    observed: &[Observed],
    entries: &[(ObjectRef, Option<String>)],
    recorded: &PrivateState,
    drifted: &HashSet<field_drift::Identity>,
) -> Vec<String> {
    observed
        .iter()
        .zip(entries)
        .enumerate()
        .map(
            |(i, (now, (r, _)))| match drifted.contains(&field_drift::identity(r)) {
                true => recorded
                    .applied_fields_of(i, entries.len())
                    .unwrap_or_default()
                    .to_string(),
                false => now.applied_fields.clone().unwrap_or_default(),
            },
        )
        .collect()
}
