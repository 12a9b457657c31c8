//! Versions only go forward unless asked: an instance moved to an older operator
//! version, or whose dependency instances the new tree would install older, fails the
//! plan unless `allow_downgrade = true`.
//!
//! KUDO refuses the same with `kubectl kudo upgrade` ("upgraded version X is the same or
//! smaller as current version Y -> not upgrading", `compareVersions` in KUDO 0.19's
//! `pkg/kudoctl/resources/upgrade/operatorversion.go`). Unlike KUDO, the same
//! operatorVersion is not refused: Terraform re-points an instance at the same version
//! when only the package's content or its appVersion changed, and a higher appVersion
//! of the same operatorVersion is an upgrade. Versions compare as semantic versions
//! (leniently, as KUDO's semver library reads `1.2`), operatorVersion first, then
//! appVersion.

use std::cmp::Ordering;

use tfplugin::{AttributePath, Diagnostic, Value};

use kudo_package::Package;
use kudo_resolve::LenientVersion;

use super::model::InstanceModel;
use crate::provider::Session;
use crate::provider::packages::parse_operator_id;

/// An operator's version pair as `kudo_operator` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub operator: String,
    pub app: Option<String>,
}

impl Version {
    pub fn of(pkg: &Package) -> Version {
        Version {
            operator: pkg.operator.operator_version.clone(),
            app: pkg.operator.app_version.clone(),
        }
    }

    fn cmp(&self, other: &Version) -> Ordering {
        let v = |s: &str| LenientVersion::new(s);
        v(&self.operator)
            .cmp(&v(&other.operator))
            .then_with(|| match (&self.app, &other.app) {
                (Some(a), Some(b)) => v(a).cmp(&v(b)),
                // An appVersion appearing or going away is not an order.
                _ => Ordering::Equal,
            })
    }

    fn shown(&self) -> String {
        match &self.app {
            Some(app) => format!("{} (appVersion {app})", self.operator),
            None => self.operator.clone(),
        }
    }
}

/// The version an OperatorVersion name carries, `<name>-<appVersion>-<operatorVersion>`
/// or `<name>-<operatorVersion>`, for an instance whose old package cannot be read any
/// more (its OperatorVersion is gone). `None` when the name does not split one way only.
pub fn version_of_name(operator: &str, ov_name: &str) -> Option<Version> {
    let rest = ov_name.strip_prefix(operator)?.strip_prefix('-')?;
    let parts: Vec<&str> = rest.split('-').collect();
    let ok = |s: &str| kudo_resolve::range::parse_lenient(s).is_some();
    match parts.as_slice() {
        [ov] if ok(ov) => Some(Version {
            operator: ov.to_string(),
            app: None,
        }),
        [app, ov] if ok(app) && ok(ov) => Some(Version {
            operator: ov.to_string(),
            app: Some(app.to_string()),
        }),
        _ => None,
    }
}

/// The refusal when `new` is older than `old` for the instance's own operator.
pub fn check_operator(operator: &str, old: &Version, new: &Version) -> Option<Diagnostic> {
    if new.cmp(old) != Ordering::Less {
        return None;
    }
    Some(
        Diagnostic::error(
            "Operator downgrade",
            format!(
                "This change moves the instance from {operator} {} to the older {}. KUDO refuses this (\"upgraded version {} is the same or smaller as current version {} -> not upgrading\"): an operator's plans and the data its objects hold are written for moving forward, and an older version may not read what a newer one stored. Point `operator` at a version at least {}, or set `allow_downgrade = true` on this kudo_instance to run the older version anyway.",
                old.shown(),
                new.shown(),
                new.operator,
                old.operator,
                old.shown()
            ),
        )
        .with_attribute(AttributePath::attribute("operator")),
    )
}

/// A dependency instance as `children` records it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Child {
    name: String,
    operator: String,
    version: String,
}

fn children(v: &Value) -> Vec<Child> {
    v.as_slice()
        .unwrap_or_default()
        .iter()
        .filter_map(|c| {
            Some(Child {
                name: c.get("name").as_str()?.to_string(),
                operator: c.get("operator").as_str()?.to_string(),
                version: c.get("operator_version").as_str()?.to_string(),
            })
        })
        .collect()
}

/// The refusal when the new tree (`after`, the planned `children`) would run a
/// dependency instance the prior state records (`before`) at an older operatorVersion.
pub fn check_children(before: &Value, after: &Value) -> Option<Diagnostic> {
    let old = children(before);
    let lines: Vec<String> = children(after)
        .into_iter()
        .filter_map(|new| {
            let was = old
                .iter()
                .find(|o| o.name == new.name && o.operator == new.operator)?;
            let lower = LenientVersion::new(&new.version) < LenientVersion::new(&was.version);
            lower.then(|| {
                format!(
                    "- {} ({}): {} -> {}",
                    new.name, new.operator, was.version, new.version
                )
            })
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    Some(
        Diagnostic::error(
            "Dependency downgrade",
            format!(
                "The operator's resolved dependency tree would run these dependency instances at an older version than they have now:\n{}\nDependency instances hold data too, so they only go forward. Pin the dependency at its installed version or newer with `dependency_overrides` on the kudo_operator, or set `allow_downgrade = true` on this kudo_instance to run the older versions anyway.",
                lines.join("\n")
            ),
        )
        .with_attribute(AttributePath::attribute("children")),
    )
}

/// Every downgrade the change from `prior` to `proposed` (running `pkg`, with the
/// `planned` children) makes: of the instance's own operator, and of its dependency
/// instances. The old version comes from the old package when it can still be read,
/// else from the OperatorVersion's name; when neither tells, nothing is refused.
pub(super) async fn refusals(
    session: &Session,
    prior: &InstanceModel,
    proposed: &InstanceModel,
    pkg: &Package,
    planned: &InstanceModel,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let (Some(old_id), Some(new_id)) = (prior.operator.as_deref(), proposed.operator.as_deref())
        && old_id != new_id
    {
        let name = &pkg.operator.name;
        let old = match super::decision::find_package(session, old_id, true).await {
            Ok(Some(old)) if &old.operator.name == name => Some(Version::of(&old)),
            // Another operator altogether: no order between the two.
            Ok(Some(_)) => None,
            _ => parse_operator_id(old_id).and_then(|(_, ov)| version_of_name(name, ov)),
        };
        if let Some(old) = old
            && let Some(d) = check_operator(name, &old, &Version::of(pkg))
        {
            out.push(d);
        }
    }
    out.extend(check_children(&prior.children, &planned.children));
    out
}

/// The warning when a downgrade goes ahead because `allow_downgrade` is set.
pub fn allowed(refusal: &Diagnostic) -> Diagnostic {
    Diagnostic::warning(
        format!("{} allowed", refusal.summary),
        format!(
            "allow_downgrade = true lets this through: {}",
            refusal.detail
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(op: &str, app: Option<&str>) -> Version {
        Version {
            operator: op.into(),
            app: app.map(str::to_string),
        }
    }

    #[test]
    fn only_an_older_version_is_refused() {
        assert!(check_operator("zk", &v("0.3.0", None), &v("0.2.0", None)).is_some());
        assert!(check_operator("zk", &v("0.3.0", None), &v("0.3.0", None)).is_none());
        assert!(check_operator("zk", &v("0.3.0", None), &v("0.10.0", None)).is_none());
        assert!(check_operator("zk", &v("1.0", Some("3.5")), &v("1.0.0", Some("3.4"))).is_some());
        assert!(check_operator("zk", &v("1.0", Some("3.4")), &v("1.0.0", Some("3.5"))).is_none());
        let d = check_operator("zk", &v("0.3.0", None), &v("0.2.0", None)).expect("refused");
        assert!(
            d.detail.contains("zk 0.3.0 to the older 0.2.0"),
            "{}",
            d.detail
        );
        assert!(d.detail.contains("allow_downgrade = true"), "{}", d.detail);
    }

    #[test]
    fn versions_are_read_from_operatorversion_names() {
        assert_eq!(version_of_name("zk", "zk-0.3.0"), Some(v("0.3.0", None)));
        assert_eq!(
            version_of_name("kafka", "kafka-2.5.1-1.3.3"),
            Some(v("1.3.3", Some("2.5.1")))
        );
        assert_eq!(version_of_name("zk", "other-0.3.0"), None);
        assert_eq!(version_of_name("zk", "zk-1.0.0-rc-1-2"), None);
    }

    #[test]
    fn a_child_at_an_older_version_is_refused() {
        let child = |version: &str| {
            Value::object([
                ("name", Value::string("zk")),
                ("operator", Value::string("zookeeper")),
                ("operator_version", Value::string(version)),
            ])
        };
        let before = Value::list([child("0.3.0")]);
        let d = check_children(&before, &Value::list([child("0.2.0")])).expect("refused");
        assert!(
            d.detail.contains("- zk (zookeeper): 0.3.0 -> 0.2.0"),
            "{}",
            d.detail
        );
        assert!(check_children(&before, &Value::list([child("0.3.1")])).is_none());
        assert!(check_children(&Value::Null, &Value::list([child("0.1.0")])).is_none());
    }
}
