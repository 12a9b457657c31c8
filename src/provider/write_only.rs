//! `kudo_instance.parameters_wo` and `parameters_wo_version`: parameter values Terraform
//! sends to the provider but never stores (write-only attributes, protocol 6.9).
//!
//! Which values a change uses (the version decides: configured or stored in the
//! instance's Secret) is decided in `kudo_plan::write_only`; the engine reads the stored
//! ones and joins them to the sensitive ones, at plan and at apply
//! (`PlanChangeRequest::write_only`, `ApplyRequest::write_only`). This module decodes
//! the two attributes into that request, checks the client can keep them out of its
//! state, and translates back: the values the engine used are redacted like sensitive
//! ones and never reach what goes back to Terraform, and diagnostics and replacements
//! about them point at `parameters_wo` / `parameters_wo_version`.

use std::collections::{BTreeMap, BTreeSet};

use kudo_plan::write_only::{
    AlsoIn, SetTwice, StoredIn, Unsent, WriteOnlyRequest, WriteOnlySource, join_write_only,
    unsent_values, write_only_source,
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

/// The diagnostics of write-only names also set as parameters or sensitive parameters.
pub fn set_twice_all(twice: &[SetTwice]) -> Vec<Diagnostic> {
    twice.iter().map(set_twice).collect()
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

/// What the write-only values change in what goes back to Terraform.
pub struct Restore {
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
            warnings: Vec::new(),
            keys: BTreeMap::new(),
            prior_keys: BTreeSet::new(),
        }
    }

    /// `state` as Terraform must see it: no write-only value.
    pub fn state(&self, state: Value) -> Value {
        let mut model = match state.decode::<Option<InstanceModel>>() {
            Ok(Some(m)) => m,
            // Null (a destroy, or a failure before there was a state) holds nothing to
            // undo; the handlers produce no other value that is not an instance.
            Ok(None) | Err(_) => return state,
        };
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
    /// `kudo_plan::write_only`), so that is the attribute that carries the replacement.
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

/// The write-only values of a change, decoded (see [`WriteOnly::request`]).
pub struct WriteOnly {
    source: WriteOnlySource,
    /// The configured values; `None` while unknown.
    configured: Option<BTreeMap<String, String>>,
    /// The prior instance (namespace, name) and its sensitive parameters.
    stored: Option<(String, String, BTreeMap<String, String>)>,
    /// The planned state's own sensitive values: the values the engine used are the
    /// joined ones less these.
    sensitive: BTreeMap<String, String>,
}

impl WriteOnly {
    /// The write-only values of the change from `prior` to `planned`; `None` when
    /// neither uses any.
    pub fn of(
        prior: Option<&InstanceModel>,
        planned: &InstanceModel,
        config: Option<&InstanceModel>,
    ) -> Option<WriteOnly> {
        if !in_use(prior, planned, config) {
            return None;
        }
        // `parameters_wo_version` decides.
        let source = write_only_source(
            prior.map(|p| &p.parameters_wo_version),
            &planned.parameters_wo_version,
        );
        let stored = prior.map(|p| {
            let name = p.name.as_deref().unwrap_or_default().to_string();
            let listed = p.sensitive().unwrap_or_default();
            (super::namespace_of(&p.namespace), name, listed)
        });
        Some(WriteOnly {
            source,
            configured: config.map_or(Some(BTreeMap::new()), configured),
            stored,
            sensitive: planned.sensitive().unwrap_or_default(),
        })
    }

    /// The engine's request: where the values come from, the configured ones and where
    /// the stored ones are.
    pub fn request(&self) -> WriteOnlyRequest<'_> {
        WriteOnlyRequest {
            source: self.source,
            configured: self.configured.as_ref(),
            stored: self
                .stored
                .as_ref()
                .map(|(namespace, name, listed)| StoredIn {
                    namespace,
                    name,
                    listed,
                }),
        }
    }

    /// An apply that takes the configured values needs them known.
    pub fn check_apply(&self) -> Result<(), Vec<Diagnostic>> {
        match (self.source, &self.configured) {
            (WriteOnlySource::Configured, None) => Err(vec![
                Diagnostic::error(
                    "Write-only parameters unknown",
                    format!("`{ATTR}` is still unknown while applying; its values must be known when the apply runs."),
                )
                .with_attribute(AttributePath::attribute(ATTR)),
            ]),
            _ => Ok(()),
        }
    }

    /// The configured names also set as parameters or sensitive parameters in `planned`
    /// (`kudo_plan::write_only::join_write_only`'s refusal), for a plan that does not
    /// reach the engine's join (its namespace is known only at apply: a create, which
    /// takes the configured values).
    pub fn set_twice_in(&self, planned: &InstanceModel) -> Vec<Diagnostic> {
        let Some(values) = &self.configured else {
            return Vec::new();
        };
        let public = planned.parameters().unwrap_or_default();
        match join_write_only(values, &public, &self.sensitive) {
            Ok(_) => Vec::new(),
            Err(twice) => set_twice_all(&twice),
        }
    }

    /// The write-only values a change ran with: the engine's joined sensitive values
    /// (`joined`) less the configured sensitive ones.
    pub fn used(&self, joined: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        joined
            .iter()
            .filter(|(k, _)| !self.sensitive.contains_key(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// What the plan of a change that used `used` (and compared with a prior state
    /// holding write-only values named `prior_keys`) changes in its answer: a warning
    /// naming the configured values it does not send.
    pub fn for_plan(
        &self,
        used: BTreeMap<String, String>,
        prior_keys: BTreeSet<String>,
    ) -> Restore {
        let unsent = unsent_values(self.source, &used, self.configured.as_ref());
        Restore {
            warnings: unsent.iter().map(unsent_names).collect(),
            keys: used,
            prior_keys,
        }
    }

    /// What the apply of a change that used `used` changes in its answer.
    pub fn for_apply(&self, used: BTreeMap<String, String>) -> Restore {
        Restore {
            warnings: Vec::new(),
            keys: used,
            prior_keys: BTreeSet::new(),
        }
    }
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
    fn a_configured_name_also_a_parameter_is_refused_on_the_other_attribute() {
        let model = |parameters: Value, wo: Value| InstanceModel {
            parameters,
            parameters_wo: wo,
            parameters_wo_version: tfplugin::Attr::Known("1".to_string()),
            ..InstanceModel::default()
        };
        let wo = Value::string_map(map(&[("PASSWORD", "s3cret")]));
        let config = model(Value::string_map(map(&[("PASSWORD", "plain")])), wo.clone());
        let write_only = WriteOnly::of(None, &config, Some(&config)).expect("in use");
        let refused = write_only.set_twice_in(&config);
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert_eq!(
            refused[0].attribute,
            Some(AttributePath::attribute("parameters").key("PASSWORD"))
        );
        assert!(!refused[0].detail.contains("s3cret"), "{refused:?}");
        let config = model(Value::string_map(map(&[("USER", "a")])), wo);
        let write_only = WriteOnly::of(None, &config, Some(&config)).expect("in use");
        assert!(write_only.set_twice_in(&config).is_empty());
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
