//! Versions only go forward unless asked: an instance moved to an older operator
//! version, or whose dependency instances the new tree would run older, is a
//! downgrade, which the plan refuses unless the user allows it.
//!
//! KUDO refuses the same with `kubectl kudo upgrade` ("upgraded version X is the same or
//! smaller as current version Y -> not upgrading", `compareVersions` in KUDO 0.19's
//! `pkg/kudoctl/resources/upgrade/operatorversion.go`). Unlike KUDO, the same
//! operatorVersion is not refused: an instance is re-pointed at the same version when
//! only the package's content or its appVersion changed, and a higher appVersion of the
//! same operatorVersion is an upgrade. Versions compare as semantic versions (leniently,
//! as KUDO's semver library reads `1.2`), operatorVersion first, then appVersion.

use std::cmp::Ordering;
use std::fmt;

use kudo_package::Package;
use kudo_resolve::LenientVersion;

use crate::tree::Child;

/// An operator's version pair.
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

    /// `1.0.0 (appVersion 3.5)`, or the operatorVersion alone.
    pub fn shown(&self) -> String {
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

/// A move to an older version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Downgrade {
    /// The instance's own operator.
    Operator {
        operator: String,
        from: Version,
        to: Version,
    },
    /// Dependency instances the new tree runs older: (instance, operator, from, to).
    Dependencies(Vec<(String, String, String, String)>),
}

impl Downgrade {
    /// What moves back, in a few words.
    pub fn summary(&self) -> &'static str {
        match self {
            Downgrade::Operator { .. } => "Operator downgrade",
            Downgrade::Dependencies(_) => "Dependency downgrade",
        }
    }
}

/// Why the move is refused, in KUDO's words where KUDO has them; what to change instead
/// is the caller's to say.
impl fmt::Display for Downgrade {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Downgrade::Operator { operator, from, to } => write!(
                f,
                "This change moves the instance from {operator} {} to the older {}. KUDO refuses this (\"upgraded version {} is the same or smaller as current version {} -> not upgrading\"): an operator's plans and the data its objects hold are written for moving forward, and an older version may not read what a newer one stored.",
                from.shown(),
                to.shown(),
                to.operator,
                from.operator,
            ),
            Downgrade::Dependencies(lower) => {
                let lines: Vec<String> = lower
                    .iter()
                    .map(|(name, operator, from, to)| {
                        format!("- {name} ({operator}): {from} -> {to}")
                    })
                    .collect();
                write!(
                    f,
                    "The operator's resolved dependency tree would run these dependency instances at an older version than they have now:\n{}\nDependency instances hold data too, so they only go forward.",
                    lines.join("\n")
                )
            }
        }
    }
}

/// The downgrade when `new` is older than `old` for the instance's own operator.
pub fn check_operator(operator: &str, old: &Version, new: &Version) -> Option<Downgrade> {
    (new.cmp(old) == Ordering::Less).then(|| Downgrade::Operator {
        operator: operator.to_string(),
        from: old.clone(),
        to: new.clone(),
    })
}

/// The downgrade when the new tree (`after`) would run a dependency instance the prior
/// state records (`before`) at an older operatorVersion.
pub fn check_children(before: &[Child], after: &[Child]) -> Option<Downgrade> {
    let lower: Vec<(String, String, String, String)> = after
        .iter()
        .filter_map(|new| {
            let was = before
                .iter()
                .find(|o| o.name == new.name && o.operator == new.operator)?;
            let older = LenientVersion::new(&new.operator_version)
                < LenientVersion::new(&was.operator_version);
            older.then(|| {
                (
                    new.name.clone(),
                    new.operator.clone(),
                    was.operator_version.clone(),
                    new.operator_version.clone(),
                )
            })
        })
        .collect();
    (!lower.is_empty()).then_some(Downgrade::Dependencies(lower))
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
    fn only_an_older_version_is_a_downgrade() {
        assert!(check_operator("zk", &v("0.3.0", None), &v("0.2.0", None)).is_some());
        assert!(check_operator("zk", &v("0.3.0", None), &v("0.3.0", None)).is_none());
        assert!(check_operator("zk", &v("0.3.0", None), &v("0.10.0", None)).is_none());
        assert!(check_operator("zk", &v("1.0", Some("3.5")), &v("1.0.0", Some("3.4"))).is_some());
        assert!(check_operator("zk", &v("1.0", Some("3.4")), &v("1.0.0", Some("3.5"))).is_none());
    }

    #[test]
    fn a_downgrade_says_what_moves_back_in_kudos_words() {
        let d = check_operator("zk", &v("1.0", Some("3.5")), &v("0.9", None)).expect("older");
        assert_eq!(d.summary(), "Operator downgrade");
        assert_eq!(
            d.to_string(),
            "This change moves the instance from zk 1.0 (appVersion 3.5) to the older 0.9. KUDO refuses this (\"upgraded version 0.9 is the same or smaller as current version 1.0 -> not upgrading\"): an operator's plans and the data its objects hold are written for moving forward, and an older version may not read what a newer one stored."
        );
        let d = Downgrade::Dependencies(vec![
            (
                "zk".into(),
                "zookeeper".into(),
                "0.3.0".into(),
                "0.2.0".into(),
            ),
            ("db".into(), "cassandra".into(), "2.0".into(), "1.9".into()),
        ]);
        assert_eq!(d.summary(), "Dependency downgrade");
        assert_eq!(
            d.to_string(),
            "The operator's resolved dependency tree would run these dependency instances at an older version than they have now:\n- zk (zookeeper): 0.3.0 -> 0.2.0\n- db (cassandra): 2.0 -> 1.9\nDependency instances hold data too, so they only go forward."
        );
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
    fn a_child_at_an_older_version_is_a_downgrade() {
        let child = |version: &str| Child {
            name: "zk".into(),
            operator: "zookeeper".into(),
            operator_version: version.into(),
            enabled: true,
            parameters: Default::default(),
            parent: "p".into(),
        };
        let before = [child("0.3.0")];
        assert_eq!(
            check_children(&before, &[child("0.2.0")]),
            Some(Downgrade::Dependencies(vec![(
                "zk".into(),
                "zookeeper".into(),
                "0.3.0".into(),
                "0.2.0".into()
            )]))
        );
        assert!(check_children(&before, &[child("0.3.1")]).is_none());
        assert!(check_children(&[], &[child("0.1.0")]).is_none());
    }
}
