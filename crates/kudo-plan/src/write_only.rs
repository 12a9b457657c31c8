//! Write-only parameter values: which values a plan or an apply of an instance uses
//! (decided without a cluster; the engine reads the stored ones).
//!
//! Terraform keeps nothing of a write-only value, so nothing can compare it with an
//! earlier one. A version number set beside the values is the signal instead: on create,
//! and whenever the version changes, the configured values are taken; otherwise the
//! values the instance already has are read back from its sensitive parameters Secret.
//! That way a change of another setting re-runs plans with the values the instance was
//! given, rather than losing them (the failure mode of write-only values that are only
//! sent on a version bump).
//!
//! The values share the Secret with the sensitive parameters; which keys of the Secret
//! are write-only follows from the caller's list of sensitive names: every other key.

use std::collections::BTreeMap;

/// Where the write-only values of a change come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOnlySource {
    /// The configured values: a create, or a new version.
    Configured,
    /// The values the instance has now, from its Secret.
    Stored,
}

/// The version decides: a create (`prior` is `None`) or a version that differs (adding or
/// removing it counts) takes the configured values; an unchanged version keeps the
/// stored ones.
pub fn write_only_source<V: PartialEq>(prior: Option<&V>, planned: &V) -> WriteOnlySource {
    match prior.is_none_or(|p| p != planned) {
        true => WriteOnlySource::Configured,
        false => WriteOnlySource::Stored,
    }
}

/// The write-only values of a change as the caller has them: where they come from, the
/// configured ones and where the stored ones are. The engine reads the stored ones and
/// joins the values to the change's sensitive ones, at plan and at apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOnlyRequest<'a> {
    pub source: WriteOnlySource,
    /// The configured values; `None` while unknown.
    pub configured: Option<&'a BTreeMap<String, String>>,
    /// Where the instance's stored values are; `None` for a create.
    pub stored: Option<StoredIn<'a>>,
}

/// The instance whose Secret holds the stored write-only values, and the names of its
/// sensitive parameters (the Secret's other keys are the write-only values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredIn<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub listed: &'a BTreeMap<String, String>,
}

impl<'a> WriteOnlyRequest<'a> {
    /// Where an apply reads its values from: the stored ones unless the configured ones
    /// are taken (a create, or a new version).
    pub fn stored_for_apply(&self) -> Option<StoredIn<'a>> {
        match self.source {
            WriteOnlySource::Stored => self.stored,
            WriteOnlySource::Configured => None,
        }
    }
}

/// The write-only values among what an instance's Secret holds: the keys that are not
/// `listed` as sensitive parameters.
pub fn stored_write_only(
    secret: BTreeMap<String, String>,
    listed: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    secret
        .into_iter()
        .filter(|(k, _)| !listed.contains_key(k))
        .collect()
}

/// The values a plan compares: `planned` for the new state, `prior` for the old one.
/// `None`: not known (unknown configuration, and nothing read from the cluster).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriteOnlyPlan {
    pub planned: Option<BTreeMap<String, String>>,
    pub prior: Option<BTreeMap<String, String>>,
    /// Configured values this change does not send (the version did not change).
    pub unsent: Option<Unsent>,
}

/// Names (never values) that differ between the configured and the stored values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Unsent {
    pub changed: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

/// `changes A, B and adds C and removes D`: what differs, by name only.
impl std::fmt::Display for Unsent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what: Vec<String> = [
            ("changes", &self.changed),
            ("adds", &self.added),
            ("removes", &self.removed),
        ]
        .into_iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(verb, names)| format!("{verb} {}", names.join(", ")))
        .collect();
        f.write_str(&what.join(" and "))
    }
}

/// The values a plan uses. `stored` is a best effort while planning: without it the plan
/// compares as if the stored values were the configured ones (the apply reads them).
pub fn plan_write_only(
    source: WriteOnlySource,
    stored: Option<BTreeMap<String, String>>,
    configured: Option<BTreeMap<String, String>>,
) -> WriteOnlyPlan {
    let unsent = stored
        .as_ref()
        .and_then(|stored| unsent_values(source, stored, configured.as_ref()));
    let planned = match source {
        WriteOnlySource::Configured => configured.clone(),
        WriteOnlySource::Stored => stored.clone().or(configured.clone()),
    };
    WriteOnlyPlan {
        planned,
        prior: stored.or(configured),
        unsent,
    }
}

/// What a change that runs with the write-only values `used` does not send of the
/// `configured` ones: only an unchanged version keeps other values than the configured.
pub fn unsent_values(
    source: WriteOnlySource,
    used: &BTreeMap<String, String>,
    configured: Option<&BTreeMap<String, String>>,
) -> Option<Unsent> {
    match (source, configured) {
        (WriteOnlySource::Stored, Some(configured)) if used != configured => {
            Some(unsent(used, configured))
        }
        _ => None,
    }
}

/// What the configured values add, remove and change compared with the stored ones.
fn unsent(stored: &BTreeMap<String, String>, configured: &BTreeMap<String, String>) -> Unsent {
    let names = |it: &mut dyn Iterator<Item = &String>| it.cloned().collect::<Vec<_>>();
    Unsent {
        changed: names(
            &mut configured
                .iter()
                .filter(|(k, v)| stored.get(*k).is_some_and(|s| s != *v))
                .map(|(k, _)| k),
        ),
        added: names(&mut configured.keys().filter(|k| !stored.contains_key(*k))),
        removed: names(&mut stored.keys().filter(|k| !configured.contains_key(*k))),
    }
}

/// Where a write-only name is set as well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlsoIn {
    Parameters,
    Sensitive,
}

/// A write-only name also set as a parameter or a sensitive parameter: which value would
/// win is unclear, so it is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parameter {name} is set both as a write-only value and as a {}", match .also_in {
    AlsoIn::Parameters => "parameter",
    AlsoIn::Sensitive => "sensitive parameter",
})]
pub struct SetTwice {
    pub name: String,
    pub also_in: AlsoIn,
}

/// `sensitive` with the write-only `values` added: the map the instance is planned and
/// applied with. Every name also in `parameters` or `sensitive` is refused.
pub fn join_write_only(
    values: &BTreeMap<String, String>,
    parameters: &BTreeMap<String, String>,
    sensitive: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, Vec<SetTwice>> {
    let twice: Vec<SetTwice> = values
        .keys()
        .filter_map(|k| {
            let also_in = match (parameters.contains_key(k), sensitive.contains_key(k)) {
                (true, _) => AlsoIn::Parameters,
                (false, true) => AlsoIn::Sensitive,
                (false, false) => return None,
            };
            Some(SetTwice {
                name: k.clone(),
                also_in,
            })
        })
        .collect();
    if !twice.is_empty() {
        return Err(twice);
    }
    let mut joined = sensitive.clone();
    joined.extend(values.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(joined)
}

/// A change's values with the write-only `values` joined: its sensitive values and
/// all its values (`None` while unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joined {
    pub sensitive: BTreeMap<String, String>,
    pub parameters: Option<BTreeMap<String, String>>,
}

/// [`join_write_only`] on a change that carries all its values (`parameters`, public and
/// sensitive; `None` while unknown) and its `sensitive` ones.
pub fn join_values(
    values: &BTreeMap<String, String>,
    parameters: Option<&BTreeMap<String, String>>,
    sensitive: &BTreeMap<String, String>,
) -> Result<Joined, Vec<SetTwice>> {
    let public: BTreeMap<String, String> = parameters
        .into_iter()
        .flatten()
        .filter(|(k, _)| !sensitive.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let sensitive = join_write_only(values, &public, sensitive)?;
    let parameters = parameters.map(|all| {
        let mut all = all.clone();
        all.extend(values.iter().map(|(k, v)| (k.clone(), v.clone())));
        all
    });
    Ok(Joined {
        sensitive,
        parameters,
    })
}

/// The sensitive values a rollback to `package` runs with: its own (`sensitive`, the
/// last completed apply's), and the write-only `values` this apply used that `package`
/// declares and its `public` values do not set. Write-only values are never stored, so
/// the ones just used are the only ones there are.
pub fn rollback_sensitive(
    values: &BTreeMap<String, String>,
    package: &kudo_package::Package,
    public: &BTreeMap<String, String>,
    sensitive: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = sensitive.clone();
    for (k, v) in values {
        let declared = package.parameters.iter().any(|p| &p.name == k);
        if declared && !public.contains_key(k) {
            out.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    out
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
    fn values_join_the_sensitive_map_and_duplicates_are_refused() {
        let (public, secret) = (map(&[("A", "1")]), map(&[("S", "x")]));
        let joined = join_write_only(&map(&[("W", "w")]), &public, &secret).expect("joins");
        assert_eq!(joined, map(&[("S", "x"), ("W", "w")]));
        let err =
            join_write_only(&map(&[("A", "w"), ("S", "v")]), &public, &secret).expect_err("twice");
        assert_eq!(
            err,
            [
                SetTwice {
                    name: "A".into(),
                    also_in: AlsoIn::Parameters
                },
                SetTwice {
                    name: "S".into(),
                    also_in: AlsoIn::Sensitive
                },
            ]
        );
        assert!(
            !err[0].to_string().contains("\"w\""),
            "quotes the value: {err:?}"
        );
    }

    #[test]
    fn values_join_a_change_that_carries_all_its_values() {
        let all = map(&[("A", "1"), ("S", "x")]);
        let secret = map(&[("S", "x")]);
        let joined = join_values(&map(&[("W", "w")]), Some(&all), &secret).expect("joins");
        assert_eq!(joined.sensitive, map(&[("S", "x"), ("W", "w")]));
        assert_eq!(
            joined.parameters,
            Some(map(&[("A", "1"), ("S", "x"), ("W", "w")]))
        );
        let unknown = join_values(&map(&[("W", "w")]), None, &secret).expect("joins");
        assert_eq!(unknown.parameters, None);
        let twice = join_values(&map(&[("A", "w")]), Some(&all), &secret).expect_err("twice");
        assert_eq!(twice[0].also_in, AlsoIn::Parameters);
        let twice = join_values(&map(&[("S", "w")]), Some(&all), &secret).expect_err("twice");
        assert_eq!(twice[0].also_in, AlsoIn::Sensitive);
    }

    #[test]
    fn the_version_decides_and_stored_values_are_those_not_listed_as_sensitive() {
        assert_eq!(write_only_source(Some(&"1"), &"1"), WriteOnlySource::Stored);
        assert_eq!(
            write_only_source(Some(&"1"), &"2"),
            WriteOnlySource::Configured
        );
        assert_eq!(write_only_source(None, &"1"), WriteOnlySource::Configured);
        assert_eq!(
            stored_write_only(map(&[("S", "x"), ("W", "w")]), &map(&[("S", "x")])),
            map(&[("W", "w")])
        );
    }

    #[test]
    fn values_changed_without_a_version_are_named_not_sent() {
        let stored = map(&[("A", "old-secret"), ("B", "b")]);
        let configured = map(&[("A", "new-secret"), ("C", "c")]);
        let plan = plan_write_only(
            WriteOnlySource::Stored,
            Some(stored.clone()),
            Some(configured.clone()),
        );
        assert_eq!(
            plan.unsent,
            Some(Unsent {
                changed: vec!["A".into()],
                added: vec!["C".into()],
                removed: vec!["B".into()],
            })
        );
        assert_eq!(
            plan.unsent.as_ref().map(ToString::to_string).as_deref(),
            Some("changes A and adds C and removes B")
        );
        let two = Unsent {
            added: vec!["C".into(), "D".into()],
            ..Unsent::default()
        };
        assert_eq!(two.to_string(), "adds C, D");
        // The instance keeps its values; the old state compares with them too.
        assert_eq!(plan.planned.as_ref(), Some(&stored));
        assert_eq!(plan.prior.as_ref(), Some(&stored));

        // A new version sends the configured values, with nothing to warn about.
        let plan = plan_write_only(
            WriteOnlySource::Configured,
            Some(stored.clone()),
            Some(configured.clone()),
        );
        assert_eq!(plan.unsent, None);
        assert_eq!(plan.planned, Some(configured.clone()));
        assert_eq!(plan.prior, Some(stored));

        // Nothing read from the cluster: compared as if the stored ones were configured.
        let plan = plan_write_only(WriteOnlySource::Stored, None, Some(configured.clone()));
        assert_eq!(plan.unsent, None);
        assert_eq!(plan.planned, Some(configured.clone()));
        assert_eq!(plan.prior, Some(configured));

        // Unknown configured values on a new version: the planned ones are unknown.
        let plan = plan_write_only(WriteOnlySource::Configured, None, None);
        assert_eq!(plan, WriteOnlyPlan::default());
    }
}
