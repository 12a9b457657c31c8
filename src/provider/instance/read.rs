//! The read (refresh) RPC: the state into the engine's refresh of the instance and its
//! dependency instances ([`engine::refresh`]: plan status, uids, drift by the drift
//! mode), and its answer back into the state, the private state and warnings.

use tfplugin::{Attr, Diagnostic, IntoValue, ReadRequest, ReadResponse, Value};

use kudo_engine::engine::{self, DriftMode, RefreshRequest, Refreshed};
use kudo_plan::RunStatus;

use crate::provider::packages::parse_operator_id;
use crate::provider::private_state::PrivateState;
use crate::provider::{Session, decode, namespace_of};

use super::model::{InstanceModel, ManagedObject};

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
    let mut recorded = PrivateState::parse(&private);
    session.remember_render_seed(&namespace, &name, recorded.render_seed.as_deref());
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return keep(state, vec![d]),
    };
    // An object the last apply created again after its plan: the uid it read back.
    let entries: Vec<_> = model
        .object_entries()
        .into_iter()
        .map(
            |(r, uid)| match recorded.actual_uids.get(&ManagedObject::key(&r)) {
                Some(actual) => (r, Some(actual.clone())),
                None => (r, uid),
            },
        )
        .collect();
    let settings = model.drift_settings(&session.config.drift);
    let parameters = model.parameters().unwrap_or_default();
    let status = model.status.as_deref().map(|s| RunStatus::parse(Some(s)));
    let request = RefreshRequest {
        name: &name,
        namespace: &namespace,
        parameters: &parameters,
        operator_version: model.operator.as_deref().and_then(parse_operator_id),
        seed: recorded.render_seed.as_deref(),
        last_plan: model
            .last_plan
            .as_deref()
            .unwrap_or(kudo_plan::DEFAULT_PLAN),
        status: status.as_ref(),
        objects: &entries,
        fingerprints: &recorded.applied_fields,
        record: &recorded.tree,
        drift: &settings,
    };
    let found = match engine::refresh(&cluster, &request).await {
        Ok(Some(found)) => found,
        Ok(None) => return keep(Value::Null, Vec::new()),
        Err(e) => {
            return keep(
                state,
                vec![session.cluster_error("Cannot read the instance", &e)],
            );
        }
    };
    // `summary` stays as the last apply left it, as `preview` does: a refresh that
    // changed it would make every `-refresh-only` plan after an apply report a change.
    // The next plan that runs something shows its own whole (it names its run number).
    let mut fresh = model.clone();
    if let Some(status) = &found.status {
        fresh.status = status.as_str().into();
    }
    fresh.plan_status = super::plan_status::value(found.plan_status.as_ref(), &found.sensitive);
    fresh.drifted_fields = super::drift::drifted_fields(&found.drift, &found.sensitive);
    let diagnostics = warnings(&found, settings.mode(), &name, &fresh.drifted_fields);
    if !entries.is_empty() {
        fresh.objects = Attr::Known(ManagedObject::map(
            entries
                .iter()
                .zip(&found.uids)
                .map(|((r, _), uid)| (r, uid.as_deref())),
        ));
    }
    recorded.applied_fields = found.fingerprints;
    recorded.tree = found.record;
    recorded.actual_uids.clear();
    ReadResponse {
        new_state: fresh.into_value(),
        private: recorded.to_bytes(),
        diagnostics,
    }
}

/// What the refresh warns about: drift it could not compare, and with `drift = "warn"`
/// the fields that changed.
fn warnings(found: &Refreshed, mode: DriftMode, name: &str, fields: &Value) -> Vec<Diagnostic> {
    let mut diagnostics: Vec<Diagnostic> = found
        .unchecked
        .iter()
        .map(|why| {
            Diagnostic::warning(
                "Drift not checked",
                format!(
                    "{why}. Fields changed out of band are not reported by this refresh; the next one tries again."
                ),
            )
        })
        .collect();
    if mode == DriftMode::Warn && !found.drift.is_empty() {
        diagnostics.push(Diagnostic::warning(
            format!("Fields of {name} changed outside Terraform"),
            format!(
                "{}\n\nWith `drift = \"warn\"` the plan leaves them as they are. Set `drift = \"correct\"` to take them back, or add a `drift_ignore` rule for fields another tool manages.",
                super::drift::describe(fields)
            ),
        ));
    }
    diagnostics
}
