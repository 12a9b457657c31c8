//! `kudo_instance.parameters_wo` and `parameters_wo_version`: parameter values Terraform
//! sends to the provider but never stores (write-only attributes, protocol 6.9).
//!
//! Terraform keeps nothing of a write-only value, so the provider cannot compare it with
//! an earlier one. `parameters_wo_version` is the signal instead: on create, and whenever
//! the version changes, the configured values are taken; otherwise the values the
//! instance already has are read back from its Secret. That way a change of another
//! attribute re-runs plans with the values the instance was given, rather than losing
//! them (the failure mode of write-only values that are only sent on a version bump).
//!
//! The values travel the `sensitive_parameters` path inside the provider: they are added
//! to that map of the values `instance.rs` plans and applies with (never to what goes
//! back to Terraform), so they are stored in the same Secret, left out of the Instance
//! object, `effective_parameters`, messages and logs, and read back by cleanup plans.
//! Which keys of the Secret are write-only follows from the state: every key that is not
//! in the prior `sensitive_parameters`.

use std::collections::{BTreeMap, BTreeSet};

use tfplugin::{AttributePath, ClientCapabilities, Diagnostic, PathStep, Value};

use super::instance::InstanceModel;
use super::sensitive;

pub const ATTR: &str = "parameters_wo";
pub const VERSION_ATTR: &str = "parameters_wo_version";

/// The configured `parameters_wo` (null = empty); `None` while unknown.
pub fn configured(config: &InstanceModel) -> Option<BTreeMap<String, String>> {
    match &config.parameters_wo {
        Value::Unknown => None,
        v if !v.is_fully_known() => None,
        v => Some(v.to_string_map().ok().flatten().unwrap_or_default()),
    }
}

/// Whether this change takes the configured values: a create, or a new
/// `parameters_wo_version` (adding or removing it counts).
pub fn takes_configured(prior: Option<&InstanceModel>, planned: &InstanceModel) -> bool {
    prior.is_none_or(|p| p.parameters_wo_version != planned.parameters_wo_version)
}

/// The write-only values among what the instance's Secret holds: the keys the prior
/// state does not list in `sensitive_parameters`.
pub fn stored(secret: BTreeMap<String, String>, prior: &InstanceModel) -> BTreeMap<String, String> {
    let listed = prior.sensitive().unwrap_or_default();
    secret
        .into_iter()
        .filter(|(k, _)| !listed.contains_key(k))
        .collect()
}

/// `state` with `values` added to its `sensitive_parameters`, for the plan and apply code
/// to see them as sensitive values; `None` values make that map unknown. A name also in
/// `parameters` or `sensitive_parameters` is an error (which value would win?).
pub fn with_values(
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
    let public = state
        .parameters
        .to_string_map()
        .ok()
        .flatten()
        .unwrap_or_default();
    let Some(mut secret) = state.sensitive() else {
        return Ok(out);
    };
    let twice: Vec<Diagnostic> = values
        .keys()
        .filter_map(|k| {
            let other = if public.contains_key(k) {
                "parameters"
            } else if secret.contains_key(k) {
                sensitive::ATTR
            } else {
                return None;
            };
            Some(
                Diagnostic::error(
                    format!("Parameter {k} set twice"),
                    format!("{k:?} is in both `{other}` and `{ATTR}`; set it in one of them."),
                )
                // Pointing at the other entry: Terraform quotes the configuration line a
                // diagnostic points at, and the write-only one holds the secret.
                .with_attribute(AttributePath::attribute(other).key(k.clone())),
            )
        })
        .collect();
    if !twice.is_empty() {
        return Err(twice);
    }
    secret.extend(values.iter().map(|(k, v)| (k.clone(), v.clone())));
    out.sensitive_parameters = Value::string_map(secret);
    Ok(out)
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
    kudo_engine::engine::read_sensitive(&cluster, &namespace, name)
        .await
        .map(|secret| stored(secret, prior))
        .map_err(|e| session.engine_error("Cannot read the write-only parameters", &e))
}

/// The prior and proposed states `instance.rs` plans with: write-only values added to
/// the sensitive ones of the proposed state (the configured values when the version
/// changes, else the stored ones) and of the prior state (the stored ones), so that a
/// new version with new values selects the plan those parameters call for, like any
/// parameter change.
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
    // The stored values while planning are a best effort: without the cluster, the plan
    // compares as if they were the configured ones and the apply reads them again.
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
    let taken = takes_configured(prior.as_ref(), &proposed);
    let mut warnings = Vec::new();
    if !taken
        && let (Some(stored), Some(configured)) = (&stored, &configured)
        && stored != configured
    {
        warnings.push(unsent_names(stored, configured));
    }
    let new = if taken {
        configured.clone()
    } else {
        stored.clone().or(configured.clone())
    };
    let old = stored.or(configured);
    let keys = new.clone().unwrap_or_default();
    let prior_keys = old
        .as_ref()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    proposed = with_values(&proposed, new.as_ref())?;
    if let (Some(old), Some(p)) = (&old, &prior) {
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
fn unsent_names(
    stored: &BTreeMap<String, String>,
    configured: &BTreeMap<String, String>,
) -> Diagnostic {
    let added: Vec<&str> = configured
        .keys()
        .filter(|k| !stored.contains_key(*k))
        .map(String::as_str)
        .collect();
    let removed: Vec<&str> = stored
        .keys()
        .filter(|k| !configured.contains_key(*k))
        .map(String::as_str)
        .collect();
    let changed: Vec<&str> = configured
        .iter()
        .filter(|(k, v)| stored.get(*k).is_some_and(|s| s != *v))
        .map(|(k, _)| k.as_str())
        .collect();
    let mut what = Vec::new();
    if !changed.is_empty() {
        what.push(format!("changes {}", changed.join(", ")));
    }
    if !added.is_empty() {
        what.push(format!("adds {}", added.join(", ")));
    }
    if !removed.is_empty() {
        what.push(format!("removes {}", removed.join(", ")));
    }
    Diagnostic::warning(
        "Write-only parameters not sent",
        format!(
            "`{ATTR}` {} compared with what the instance has, but `{VERSION_ATTR}` did not change, so this apply keeps the instance's values. Change `{VERSION_ATTR}` to send the configured values.",
            what.join(" and ")
        ),
    )
    .with_attribute(AttributePath::attribute(VERSION_ATTR))
}

/// The planned state `instance.rs` applies with: the configured values on create or a
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
    let values = match prior {
        Some(p) if !takes_configured(Some(p), &planned) => {
            read_stored(session, p).await.map_err(|d| vec![d])?
        }
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

    fn state(
        public: &[(&str, &str)],
        secret: &[(&str, &str)],
        version: Option<&str>,
    ) -> InstanceModel {
        InstanceModel {
            parameters: Value::string_map(map(public)),
            sensitive_parameters: Value::string_map(map(secret)),
            parameters_wo_version: version.map(str::to_string).into(),
            ..Default::default()
        }
    }

    #[test]
    fn values_join_the_sensitive_map_and_duplicates_are_errors() {
        let s = state(&[("A", "1")], &[("S", "x")], None);
        let out = with_values(&s, Some(&map(&[("W", "w")]))).expect("merge");
        assert_eq!(out.sensitive(), Some(map(&[("S", "x"), ("W", "w")])));
        let err = with_values(&s, Some(&map(&[("A", "w")]))).expect_err("twice");
        assert!(err[0].detail.contains("`parameters`"), "{err:?}");
        assert!(
            !err[0].detail.contains("\"w\""),
            "quotes the value: {err:?}"
        );
        let unknown = with_values(&s, None).expect("unknown");
        assert_eq!(unknown.sensitive_parameters, Value::Unknown);
    }

    #[test]
    fn the_version_decides_and_stored_values_are_those_not_listed_as_sensitive() {
        let prior = state(&[], &[("S", "x")], Some("1"));
        assert!(!takes_configured(Some(&prior), &state(&[], &[], Some("1"))));
        assert!(takes_configured(Some(&prior), &state(&[], &[], Some("2"))));
        assert!(takes_configured(None, &prior));
        assert_eq!(
            stored(map(&[("S", "x"), ("W", "w")]), &prior),
            map(&[("W", "w")])
        );
    }

    #[test]
    fn values_changed_without_a_version_are_named_but_not_quoted() {
        let d = unsent_names(
            &map(&[("A", "old-secret"), ("B", "b")]),
            &map(&[("A", "new-secret"), ("C", "c")]),
        );
        assert!(d.detail.contains("changes A"), "{d:?}");
        assert!(d.detail.contains("adds C"), "{d:?}");
        assert!(d.detail.contains("removes B"), "{d:?}");
        assert!(!d.detail.contains("secret"), "{d:?}");
    }

    #[test]
    fn an_old_client_is_refused_only_when_values_are_set() {
        let with = InstanceModel {
            parameters_wo: Value::string_map(map(&[("W", "w")])),
            ..Default::default()
        };
        let old = ClientCapabilities::default();
        let new = ClientCapabilities {
            write_only_attributes_allowed: true,
            ..Default::default()
        };
        assert_eq!(validate(&with, old).len(), 1);
        assert!(validate(&with, new).is_empty());
        assert!(validate(&InstanceModel::default(), old).is_empty());
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
