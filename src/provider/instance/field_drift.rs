//! The refresh's look at fields changed out of band: what the instance's last plan
//! applies, dry-run as the apply would send it, against the live objects (the
//! comparison is the engine's, `kudo_engine::engine::field_drift`).

use std::collections::{BTreeMap, HashSet};

use tfplugin::Diagnostic;

use kudo_engine::cluster::{Cluster, ObjectRef};
use kudo_engine::engine::{self, FieldDrift, RunRequest};

use super::decision::find_package;
use super::model::InstanceModel;
use crate::provider::drift::DriftSettings;
use crate::provider::{Session, render_seed};

/// What drifted among the objects in `suspects` (those someone else wrote to since the
/// last apply), and the sensitive values (to redact them). Nothing when the package is
/// not in the cluster any more: there is nothing to compare with.
pub(super) async fn detect(
    session: &Session,
    cluster: &Cluster,
    state: &InstanceModel,
    private: &[u8],
    (namespace, name): (&str, &str),
    settings: &DriftSettings,
    suspects: &HashSet<Identity>,
) -> Result<(Vec<FieldDrift>, BTreeMap<String, String>), Diagnostic> {
    let cannot = |detail: String| {
        Diagnostic::warning(
            "Drift not checked",
            format!(
                "{detail}. Fields changed out of band are not reported by this refresh; the next one tries again."
            ),
        )
    };
    let operator = state.operator.as_deref().unwrap_or_default();
    let Some(pkg) = find_package(session, operator, false)
        .await
        .map_err(|d| cannot(d.detail))?
    else {
        return Ok(Default::default());
    };
    // Sensitive and write-only values live in the instance's Secret, not in the state.
    let secret = engine::read_sensitive(cluster, namespace, name)
        .await
        .map_err(|e| cannot(e.to_string()))?;
    let mut parameters = state.parameters().unwrap_or_default();
    parameters.extend(secret.clone());
    let seed = render_seed::from_private(private);
    let previous = state.object_refs();
    let plan = state.last_plan.as_deref().unwrap_or("deploy");
    let request = RunRequest {
        package: &pkg,
        instance: name,
        namespace,
        parameters: &parameters,
        plan,
        previous_inventory: &previous,
        // Only this instance's own objects are compared; its dependency instances'
        // objects are not (yet): see the drift guide.
        dependencies: None,
        render_seed: seed.as_deref(),
        crd_deletion: state.crd_deletion(),
        // A dry-run for drift: nothing is written, and the plan checks CRDs itself.
        crd_safety: engine::CrdSafety::Off,
        health: &engine::HealthPolicy::Kudo,
        progress: None,
        tree: Default::default(),
    };
    let planned = engine::preview_plan_only(cluster, request, &|r| suspects.contains(&identity(r)))
        .await
        .map_err(|e| cannot(crate::provider::sensitive::redact(&e.to_string(), &secret)))?;
    let drift = engine::field_drift(cluster, &planned, &settings.ignore)
        .await
        .map_err(|e| cannot(e.to_string()))?;
    Ok((drift, secret))
}

/// An object as stored, whatever version names it: (group, kind, namespace, name).
pub(super) type Identity = (String, String, Option<String>, String);

pub(super) fn identity(r: &ObjectRef) -> Identity {
    (
        r.group().to_string(),
        r.kind.clone(),
        r.namespace.clone(),
        r.name.clone(),
    )
}
