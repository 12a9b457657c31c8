//! CRD upgrade safety at plan time: a plan that would change a CustomResourceDefinition
//! the cluster already holds (this provider's or another's) is compared with it first,
//! and a change that would strand or reject the objects stored under it fails the plan
//! (or warns, as `crd_upgrade_safety` says) before anything is written.

mod rules;

pub use rules::{Finding, compare};

use serde_json::Value;

use crate::cluster::{Cluster, ClusterError, ObjectRef, Trouble};

/// `crd_upgrade_safety`: what an unsafe CRD change does to the plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CrdSafety {
    /// The plan fails (the default).
    #[default]
    Enforce,
    /// The plan warns and the apply goes ahead.
    Warn,
    /// Not checked.
    Off,
}

impl CrdSafety {
    pub const VALUES: [&'static str; 3] = ["enforce", "warn", "off"];

    pub fn parse(s: &str) -> Option<CrdSafety> {
        match s {
            "enforce" => Some(CrdSafety::Enforce),
            "warn" => Some(CrdSafety::Warn),
            "off" => Some(CrdSafety::Off),
            _ => None,
        }
    }
}

const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";
const CRD_KIND: &str = "CustomResourceDefinition";

/// The unsafe changes one CRD update makes, with the objects they concern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrdReport {
    pub crd: String,
    pub findings: Vec<Finding>,
    /// Custom resources of the CRD in the cluster (all namespaces, all versions);
    /// `None` when the credentials may not list them in every namespace: some are
    /// then assumed to exist.
    pub objects: Option<usize>,
}

impl CrdReport {
    /// The CRD the report is about.
    pub fn object(&self) -> ObjectRef {
        ObjectRef::new(CRD_API_VERSION, CRD_KIND, None, &self.crd)
    }

    /// The report as a diagnostic's text: the CRD, each rule with its version and
    /// field, how many objects are affected, and how to proceed.
    pub fn message(&self) -> String {
        let count = match self.objects {
            Some(1) => "1 object in the cluster".to_string(),
            Some(n) => format!("{n} objects in the cluster"),
            None => "objects in the cluster are assumed: these credentials may not list them in every namespace".to_string(),
        };
        let mut lines = vec![format!(
            "The new CustomResourceDefinition {} would change what its existing objects can be ({count}):",
            self.crd,
        )];
        for f in &self.findings {
            let mut at = Vec::new();
            if let Some(v) = &f.version {
                at.push(format!("version {v}"));
            }
            if let Some(p) = &f.path {
                at.push(format!("field {p}"));
            }
            let at = match at.is_empty() {
                true => String::new(),
                false => format!(" at {}", at.join(", ")),
            };
            let affected = match (f.rule.needs_objects(), self.objects) {
                (true, Some(n)) => format!("{n} affected"),
                (true, None) => "the objects that exist affected".to_string(),
                (false, _) => "refused by the API server whatever objects remain".to_string(),
            };
            lines.push(format!("- rule {}{at}: {} ({affected})", f.rule, f.detail));
        }
        lines.push(
            "Migrate or delete the affected objects first (for a stored version: rewrite every object in the new storage version, then remove the old one from status.storedVersions), or ship a CRD that keeps the old versions and bounds. To apply it anyway, set crd_upgrade_safety = \"warn\" (or \"off\") on the kudo_instance.".to_string(),
        );
        lines.join("\n")
    }
}

/// Compares `rendered` (an object a plan applies, as its template wrote it) with the
/// CRD of that name in the cluster, in the form the apply sends it (a v1beta1 CRD
/// converted to v1). `None` when it is not a CRD, the cluster has none of that name, or
/// nothing unsafe changes; rules that harm only existing objects count only when
/// custom resources of the CRD exist.
pub async fn check_crd(
    cluster: &Cluster,
    rendered: &Value,
) -> Result<Option<CrdReport>, ClusterError> {
    if rendered.get("kind").and_then(Value::as_str) != Some(CRD_KIND) {
        return Ok(None);
    }
    let desired = cluster.served_form(rendered).await?.object;
    if desired.get("apiVersion").and_then(Value::as_str) != Some(CRD_API_VERSION) {
        return Ok(None);
    }
    let Some(name) = desired.pointer("/metadata/name").and_then(Value::as_str) else {
        return Ok(None);
    };
    let r = ObjectRef::new(CRD_API_VERSION, CRD_KIND, None, name);
    let Some(live) = cluster.get(&r).await? else {
        return Ok(None);
    };
    let findings = compare(&live, &desired);
    if findings.is_empty() {
        return Ok(None);
    }
    // Counting lists every namespace; credentials with rights in some namespaces only
    // cannot, and then the rules that harm existing objects are kept, as if some exist.
    let objects = match findings.iter().any(|f| f.rule.needs_objects()) {
        true => match cluster.custom_resources_of(&live).await {
            Ok(found) => Some(found.len()),
            Err(e) if e.trouble() == Trouble::Denied => None,
            Err(e) => return Err(e),
        },
        false => Some(0),
    };
    let findings: Vec<Finding> = findings
        .into_iter()
        .filter(|f| !f.rule.needs_objects() || objects != Some(0))
        .collect();
    if findings.is_empty() {
        return Ok(None);
    }
    Ok(Some(CrdReport {
        crd: name.to_string(),
        findings,
        objects,
    }))
}

#[cfg(test)]
mod tests {
    use super::rules::Rule;
    use super::*;

    #[test]
    fn the_message_names_crd_rule_version_field_and_count() {
        let report = CrdReport {
            crd: "widgets.example.com".into(),
            findings: vec![Finding {
                rule: Rule::NewlyRequired,
                version: Some("v1".into()),
                path: Some("spec.mode".into()),
                detail: "mode is newly required".into(),
            }],
            objects: Some(2),
        };
        let m = report.message();
        for want in [
            "widgets.example.com",
            "rule newly-required at version v1, field spec.mode",
            "2 affected",
            "crd_upgrade_safety = \"warn\"",
        ] {
            assert!(m.contains(want), "{want:?} not in {m}");
        }
    }
}
