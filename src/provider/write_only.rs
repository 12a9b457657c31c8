//! `kudo_instance.parameters_wo` and `parameters_wo_version`: parameter values Terraform
//! sends to the provider but never stores (write-only attributes, protocol 6.9).
//!
//! Which values a change uses (the version decides: configured or stored in the
//! instance's Secret) is decided in `kudo_plan::write_only` (`write_only_source`,
//! `plan_write_only`, `join_write_only`); the engine reads the stored ones
//! (`kudo_engine::engine::read_write_only`). This module decodes the two
//! attributes, checks the client can keep them out of its state, and translates: the
//! values travel the `sensitive_parameters` path inside the provider (added to the map
//! `instance/` plans and applies with, never to what goes back to Terraform), and
//! diagnostics and replacements about them point at `parameters_wo` /
//! `parameters_wo_version`.

use std::collections::{BTreeMap, BTreeSet};

use kudo_engine::engine;
use kudo_plan::write_only::{
    AlsoIn, SetTwice, Unsent, WriteOnlySource, join_write_only, plan_write_only, write_only_source,
};
use tfplugin::{AttributePath, ClientCapabilities, Diagnostic, PathStep, Value};

use super::instance::InstanceModel;
use super::sensitive;

pub const ATTR: &str = "parameters_wo";
pub const VERSION_ATTR: &str = "parameters_wo_version";

/// The configured `parameters_wo` (null = empty); `None` while unknown.
fn configured(config: &InstanceModel) -> Option<BTreeMap<String, String>> {
    match &config.parameters_wo {
        Value::Unknown => None,
        v if !v.is_fully_known() => None,
        v => Some(v.to_string_map().ok().flatten().unwrap_or_default()),
    }
}

/// Where this change's values come from: `parameters_wo_version` decides.
fn source(prior: Option<&InstanceModel>, planned: &InstanceModel) -> WriteOnlySource {
    write_only_source(
        prior.map(|p| &p.parameters_wo_version),
        &planned.parameters_wo_version,
    )
}

/// `state` with `values` added to its `sensitive_parameters`, for the plan and apply code
/// to see them as sensitive values; `None` values make that map unknown. A name also in
/// `parameters` or `sensitive_parameters` is an error (which value would win?).
fn with_values(
    state: &InstanceModel,
    values: Option<&BTreeMap<String, String>>,
) -> Result<InstanceModel, Vec<Diagnostic>> {
    let mut out = state.clone();
    let Some(values) = values else {
        out.sensitive_parameters = Value::Unknown;
        return Ok(out);
    };
    if values.is_empty() {
        return Ok(out);
    }
    let Some(secret) = state.sensitive() else {
        return Ok(out);
    };
    let public = state.parameters().unwrap_or_default();
    let joined = join_write_only(values, &public, &secret)
        .map_err(|twice| twice.iter().map(set_twice).collect::<Vec<_>>())?;
    out.sensitive_parameters = Value::string_map(joined);
    Ok(out)
}

fn set_twice(t: &SetTwice) -> Diagnostic {
    let (k, other) = match t.also_in {
        AlsoIn::Parameters => (&t.name, "parameters"),
        AlsoIn::Sensitive => (&t.name, sensitive::ATTR),
    };
    Diagnostic::error(
        format!("Parameter {k} set twice"),
        format!("{k:?} is in both `{other}` and `{ATTR}`; set it in one of them."),
    )
    // Pointing at the other entry: Terraform quotes the configuration line a
    // diagnostic points at, and the write-only one holds the secret.
    .with_attribute(AttributePath::attribute(other).key(k.clone()))
}

/// Diagnostics about a write-only value point at `parameters_wo`, not at the map the
/// value travelled in.
pub fn retarget(diagnostics: &mut [Diagnostic], keys: &BTreeMap<String, String>) {
    for d in diagnostics {
        let Some(path) = &mut d.attribute else {
            continue;
        };
        if let [PathStep::Attribute(a), PathStep::ElementKeyString(k), ..] = path.0.as_mut_slice()
            && a == sensitive::ATTR
            && keys.contains_key(k.as_str())
        {
            *a = ATTR.to_string();
        }
    }
}

/// A configuration setting `parameters_wo` on a Terraform that does not know write-only
/// attributes would have the values stored in its state: refuse it, saying what to use.
pub fn validate(config: &InstanceModel, client: ClientCapabilities) -> Vec<Diagnostic> {
    let set = match &config.parameters_wo {
        Value::Null => false,
        Value::Map(m) => !m.is_empty(),
        _ => true,
    };
    if !set || client.write_only_attributes_allowed {
        return Vec::new();
    }
    vec![
        Diagnostic::error(
            "Write-only parameters need Terraform 1.11 or OpenTofu 1.11",
            format!(
                "`{ATTR}` is a write-only attribute, and this Terraform client does not support write-only attributes: it would store the values in its state. Upgrade to Terraform 1.11 / OpenTofu 1.11 or later, or move the values to `sensitive_parameters` (hidden in plans and kept out of the Instance object, but stored in the state)."
            ),
        )
        .with_attribute(AttributePath::attribute(ATTR)),
    ]
}

/// Undoes [`for_plan`] / [`for_apply`] on what goes back to Terraform.
pub struct Restore {
    /// `sensitive_parameters` as configured, and as handed to `instance.rs`.
    sensitive: Value,
    injected: Option<Value>,
    /// Plan warnings (names only, never values).
    warnings: Vec<Diagnostic>,
    /// The write-only values used (only the keys matter, for diagnostics).
    keys: BTreeMap<String, String>,
    /// The names of the write-only values the prior state was planned with.
    prior_keys: BTreeSet<String>,
}

impl Restore {
    pub fn none() -> Restore {
        Restore {
            sensitive: Value::Null,
            injected: None,
            warnings: Vec::new(),
            keys: BTreeMap::new(),
            prior_keys: BTreeSet::new(),
        }
    }

    /// `state` as Terraform must see it: its own `sensitive_parameters`, no write-only value.
    pub fn state(&self, state: Value) -> Value {
        let mut model = match state.decode::<Option<InstanceModel>>() {
            Ok(Some(m)) => m,
            // Null (a destroy, or a failure before there was a state) holds nothing to
            // undo; the handlers produce no other value that is not an instance.
            Ok(None) | Err(_) => return state,
        };
        // Only a state carrying the values it was given back (not, say, the prior
        // state an early failure returns) gets the configured map back.
        if let Some(injected) = &self.injected
            && model.sensitive_parameters == *injected
        {
            model.sensitive_parameters = self.sensitive.clone();
        }
        model.parameters_wo = Value::Null;
        tfplugin::encode(model)
    }

    pub fn diagnostics(&self, diagnostics: &mut Vec<Diagnostic>) {
        retarget(diagnostics, &self.keys);
        diagnostics.extend(self.warnings.iter().cloned());
    }

    /// `requires_replace` paths Terraform can see change. Terraform replaces only for a
    /// path whose value differs between the prior and the planned state, and reports a
    /// path that holds nothing in either as a provider bug; a write-only value is in
    /// neither. Its change is taken only with a new `parameters_wo_version` (see
    /// `for_plan`), so that is the attribute that carries the replacement.
    pub fn replace_paths(&self, paths: &mut Vec<AttributePath>) {
        let version = AttributePath::attribute(VERSION_ATTR);
        let mut out: Vec<AttributePath> = Vec::with_capacity(paths.len());
        for path in paths.drain(..) {
            let write_only = matches!(
                path.0.as_slice(),
                [PathStep::Attribute(a), PathStep::ElementKeyString(k)]
                    if a == sensitive::ATTR
                        && (self.keys.contains_key(k) || self.prior_keys.contains(k))
            );
            let path = if write_only { version.clone() } else { path };
            if !out.contains(&path) {
                out.push(path);
            }
        }
        *paths = out;
    }
}

/// Whether the configuration or state uses write-only parameters at all; if not, the
/// Secret is not read.
fn in_use(
    prior: Option<&InstanceModel>,
    planned: &InstanceModel,
    config: Option<&InstanceModel>,
) -> bool {
    config.is_some_and(|c| !c.parameters_wo.is_null())
        || prior.is_some_and(|p| !p.parameters_wo_version.is_null())
        || !planned.parameters_wo_version.is_null()
}

/// The write-only values the instance has now, from its Secret.
async fn read_stored(
    session: &super::Session,
    prior: &InstanceModel,
) -> Result<BTreeMap<String, String>, Diagnostic> {
    let cluster = session.cluster().await?;
    let namespace = super::namespace_of(&prior.namespace);
    let name = prior.name.as_deref().unwrap_or_default();
    let listed = prior.sensitive().unwrap_or_default();
    engine::read_write_only(&cluster, &namespace, name, &listed)
        .await
        .map_err(|e| session.engine_error("Cannot read the write-only parameters", &e))
}

/// The prior and proposed states `instance/` plans with: write-only values added to
/// the sensitive ones of the proposed state and of the prior state, as
/// `plan_write_only` chooses them, so that a new version with new values selects
/// the plan those parameters call for, like any parameter change.
pub async fn for_plan(
    session: &super::Session,
    mut prior: Option<InstanceModel>,
    mut proposed: InstanceModel,
    config: Option<&InstanceModel>,
) -> Result<(Option<InstanceModel>, InstanceModel, Restore), Vec<Diagnostic>> {
    if !in_use(prior.as_ref(), &proposed, config) {
        return Ok((prior, proposed, Restore::none()));
    }
    let restore_sensitive = proposed.sensitive_parameters.clone();
    let configured = config.map_or(Some(BTreeMap::new()), configured);
    // Reading them while planning is a best effort (see `plan_write_only`).
    let stored = match &prior {
        None => None,
        Some(p) => match read_stored(session, p).await {
            Ok(s) => Some(s),
            Err(d) => {
                tracing::debug!(detail = %d.detail, "write-only parameters not read while planning");
                None
            }
        },
    };
    let chosen = plan_write_only(source(prior.as_ref(), &proposed), stored, configured);
    let warnings = chosen.unsent.iter().map(unsent_names).collect();
    let keys = chosen.planned.clone().unwrap_or_default();
    let prior_keys = chosen
        .prior
        .as_ref()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    proposed = with_values(&proposed, chosen.planned.as_ref())?;
    if let (Some(old), Some(p)) = (&chosen.prior, &prior) {
        // A prior state that fails the duplicate check (a name moved between maps in
        // this change) is compared without the write-only values.
        if let Ok(p) = with_values(p, Some(old)) {
            prior = Some(p);
        }
    }
    let injected = Some(proposed.sensitive_parameters.clone());
    Ok((
        prior,
        proposed,
        Restore {
            sensitive: restore_sensitive,
            injected,
            warnings,
            keys,
            prior_keys,
        },
    ))
}

/// Names added to, removed from or changed in `parameters_wo` without a new version:
/// Terraform cannot show that change, so the plan says it is not sent (naming the
/// parameters, never their values).
fn unsent_names(unsent: &Unsent) -> Diagnostic {
    Diagnostic::warning(
        "Write-only parameters not sent",
        format!(
            "`{ATTR}` {unsent} compared with what the instance has, but `{VERSION_ATTR}` did not change, so this apply keeps the instance's values. Change `{VERSION_ATTR}` to send the configured values."
        ),
    )
    .with_attribute(AttributePath::attribute(VERSION_ATTR))
}

/// The planned state `instance/` applies with: the configured values on create or a
/// new version, else the stored ones (so an unrelated change keeps them).
pub async fn for_apply(
    session: &super::Session,
    prior: Option<&InstanceModel>,
    planned: InstanceModel,
    config: Option<&InstanceModel>,
) -> Result<(InstanceModel, Restore), Vec<Diagnostic>> {
    if !in_use(prior, &planned, config) {
        return Ok((planned, Restore::none()));
    }
    let restore_sensitive = planned.sensitive_parameters.clone();
    let values = match (source(prior, &planned), prior) {
        (WriteOnlySource::Stored, Some(p)) => read_stored(session, p).await.map_err(|d| vec![d])?,
        _ => config
            .map_or(Some(BTreeMap::new()), configured)
            .ok_or_else(|| {
                vec![
                    Diagnostic::error(
                        "Write-only parameters unknown",
                        format!("`{ATTR}` is still unknown while applying; its values must be known when the apply runs."),
                    )
                    .with_attribute(AttributePath::attribute(ATTR)),
                ]
            })?,
    };
    let planned = with_values(&planned, Some(&values))?;
    let injected = Some(planned.sensitive_parameters.clone());
    Ok((
        planned,
        Restore {
            sensitive: restore_sensitive,
            injected,
            warnings: Vec::new(),
            keys: values,
            prior_keys: BTreeSet::new(),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn diagnostics_on_write_only_keys_point_at_the_write_only_attribute() {
        let mut d = vec![
            Diagnostic::error("x", "y")
                .with_attribute(AttributePath::attribute(sensitive::ATTR).key("W")),
            Diagnostic::error("x", "y")
                .with_attribute(AttributePath::attribute(sensitive::ATTR).key("S")),
        ];
        retarget(&mut d, &map(&[("W", "")]));
        assert_eq!(
            d[0].attribute,
            Some(AttributePath::attribute(ATTR).key("W"))
        );
        assert_eq!(
            d[1].attribute,
            Some(AttributePath::attribute(sensitive::ATTR).key("S"))
        );
    }

    #[test]
    fn a_replacement_for_a_write_only_value_rests_on_the_version() {
        let restore = Restore {
            keys: map(&[("NEW", "n")]),
            prior_keys: ["OLD".to_string()].into_iter().collect(),
            ..Restore::none()
        };
        let key = |attr: &str, k: &str| AttributePath::attribute(attr).key(k);
        let mut paths = vec![
            key("parameters", "PLAIN"),
            key(sensitive::ATTR, "NEW"),
            key(sensitive::ATTR, "OLD"),
            key(sensitive::ATTR, "SECRET"),
        ];
        restore.replace_paths(&mut paths);
        assert_eq!(
            paths,
            [
                key("parameters", "PLAIN"),
                AttributePath::attribute(VERSION_ATTR),
                key(sensitive::ATTR, "SECRET"),
            ]
        );
    }
}
