//! The one rule for translating an object to an API version the cluster serves.
//!
//! The engine asks it with the cluster's discovery, the author tools with a release
//! profile; both get the same answer for the same object and the same `served`.

use serde_json::Value;

use crate::convert::{self, ConvertError};

/// A user-declared mapping for a third-party kind (e.g. a CRD group's `v1alpha1` ->
/// `v1`): only `apiVersion` changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// The apiVersion templates write.
    pub from_api_version: String,
    /// `None`: every kind of that group/version.
    pub kind: Option<String>,
    /// The apiVersion to apply instead.
    pub to_api_version: String,
}

/// A field of a [`Mapping`] as written (the provider's `api_version_mapping` block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MappingField {
    From,
    Kind,
    To,
}

impl MappingField {
    /// The field's name in the block.
    pub fn name(self) -> &'static str {
        match self {
            MappingField::From => "from",
            MappingField::Kind => "kind",
            MappingField::To => "to",
        }
    }
}

impl std::fmt::Display for MappingField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a written mapping cannot be used. `Display` names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MappingProblem {
    /// `from` and `to` say what is swapped for what.
    #[error("`{field}` is required.")]
    Missing { field: MappingField },
    /// Third-party kinds are never in the core group, so both API versions name one.
    #[error(
        "`{field}` is {text:?}; write an API version as `group/version` (for example `example.com/v1`)."
    )]
    NotGroupVersion { field: MappingField, text: String },
}

impl MappingProblem {
    /// The field at fault.
    pub fn field(&self) -> MappingField {
        match self {
            MappingProblem::Missing { field } | MappingProblem::NotGroupVersion { field, .. } => {
                *field
            }
        }
    }
}

impl Mapping {
    /// A mapping from its fields as written (`None` or blank: unset; surrounding
    /// spaces do not count), or every problem found, in field order.
    pub fn parse(
        from: Option<&str>,
        kind: Option<&str>,
        to: Option<&str>,
    ) -> Result<Mapping, Vec<MappingProblem>> {
        let mut problems = Vec::new();
        let mut api_version = |field, text: Option<&str>| {
            let text = text.map(str::trim).filter(|s| !s.is_empty());
            match text {
                None => problems.push(MappingProblem::Missing { field }),
                Some(t) if !is_group_version(t) => problems.push(MappingProblem::NotGroupVersion {
                    field,
                    text: t.to_string(),
                }),
                Some(t) => return Some(t.to_string()),
            }
            None
        };
        let from = api_version(MappingField::From, from);
        let to = api_version(MappingField::To, to);
        match (from, to) {
            (Some(from_api_version), Some(to_api_version)) => Ok(Mapping {
                from_api_version,
                kind: kind
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
                to_api_version,
            }),
            _ => Err(problems),
        }
    }

    fn matches(&self, api_version: &str, kind: &str) -> bool {
        self.from_api_version == api_version && self.kind.as_deref().is_none_or(|k| k == kind)
    }
}

/// `group/version` with both parts present and no spaces.
fn is_group_version(s: &str) -> bool {
    s.split_once('/').is_some_and(|(g, v)| {
        !g.is_empty() && !v.is_empty() && !v.contains('/') && !s.contains(char::is_whitespace)
    })
}

/// Translation settings: on by default, plus user mappings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translator {
    /// The provider setting `translate_api_versions`.
    pub enabled: bool,
    /// The provider blocks `api_version_mapping`, in the order written.
    pub mappings: Vec<Mapping>,
}

impl Default for Translator {
    fn default() -> Self {
        Translator {
            enabled: true,
            mappings: Vec::new(),
        }
    }
}

/// An object moved to a served version.
#[derive(Debug, Clone, PartialEq)]
pub struct Translation {
    /// The object as applied.
    pub object: Value,
    /// The version the template wrote (no longer served).
    pub from_api_version: String,
    /// The version the object is applied as.
    pub to_api_version: String,
    /// What the conversion changed or dropped, for the plan's warnings.
    pub notes: Vec<String>,
}

/// Why an object cannot be applied as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranslateError {
    /// The version is not served and translation is off or knows no served successor.
    #[error("{}", not_served_message(kind, name, api_version, use_instead.as_deref(), *disabled))]
    NotServed {
        /// The object's kind.
        kind: String,
        /// The object's name (empty when it has none).
        name: String,
        /// The apiVersion the template wrote.
        api_version: String,
        /// A served successor, when one exists (translation off).
        use_instead: Option<String>,
        /// Translation is switched off by the provider setting.
        disabled: bool,
    },
    /// A built-in API Kubernetes removed with nothing to replace it (PodSecurityPolicy):
    /// no version, mapping or conversion can make the object apply.
    #[error("{}", removed_message(kind, name, api_version, *removed_in))]
    Removed {
        kind: String,
        name: String,
        api_version: String,
        /// The 1.x minor release that stopped serving it.
        removed_in: u32,
    },
    /// A served successor exists but this object cannot be converted to it.
    #[error(transparent)]
    Convert(#[from] ConvertError),
}

fn removed_message(kind: &str, name: &str, api_version: &str, removed_in: u32) -> String {
    format!(
        "{kind} {name:?} uses {api_version}, which Kubernetes removed in 1.{removed_in} with \
         nothing to replace it: no API version of this cluster can hold a {kind}, so the \
         object cannot be applied here. The package author can drop this template, or render \
         it only when a parameter asks for it (for example `{{{{ if eq .Params.ENABLE_{upper} \
         \"true\" }}}}` around the whole file) for clusters older than 1.{removed_in}",
        upper = kind.to_uppercase()
    )
}

fn not_served_message(
    kind: &str,
    name: &str,
    api_version: &str,
    use_instead: Option<&str>,
    disabled: bool,
) -> String {
    let mut msg =
        format!("{kind} {name:?} uses {api_version}, which this cluster no longer serves");
    match use_instead {
        Some(v) => msg.push_str(&format!("; write {v} in the template")),
        None => msg.push_str(
            " and no served version is known to convert it to: update the template to a \
             version the cluster serves",
        ),
    }
    if disabled {
        msg.push_str(
            " (API version translation is switched off by the provider setting \
             translate_api_versions)",
        );
    } else if use_instead.is_none() {
        msg.push_str(", or add an api_version_mapping block");
    }
    msg
}

impl Translator {
    /// apiVersions to try for `kind` at `api_version` when the cluster does not serve it,
    /// most preferred first: user mappings, then built-in successors. Empty when
    /// translation is off.
    pub fn candidates(&self, api_version: &str, kind: &str) -> Vec<String> {
        if !self.enabled {
            return Vec::new();
        }
        let mut out: Vec<String> = Vec::new();
        let mapped = self
            .mappings
            .iter()
            .filter(|m| m.matches(api_version, kind))
            .map(|m| m.to_api_version.as_str());
        for to in mapped.chain(convert::successors(api_version, kind).iter().copied()) {
            if !out.iter().any(|o| o == to) {
                out.push(to.to_string());
            }
        }
        out
    }

    /// Converts `obj` to `to_api_version` (a candidate).
    pub fn convert(&self, obj: &Value, to_api_version: &str) -> Result<Translation, ConvertError> {
        let from = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        let mapped = self
            .mappings
            .iter()
            .any(|m| m.matches(from, kind) && m.to_api_version == to_api_version);
        let converted = if mapped {
            // The user vouches that the two versions share their fields.
            let mut object = obj.clone();
            match object.as_object_mut() {
                Some(root) => root.insert(
                    "apiVersion".to_string(),
                    Value::String(to_api_version.to_string()),
                ),
                None => {
                    return Err(ConvertError {
                        kind: kind.to_string(),
                        name: convert::object_name(obj),
                        from: from.to_string(),
                        to: to_api_version.to_string(),
                        message: "the object is not a JSON object".to_string(),
                    });
                }
            };
            convert::Converted {
                object,
                notes: Vec::new(),
            }
        } else {
            convert::convert(obj, to_api_version)?
        };
        Ok(Translation {
            object: converted.object,
            from_api_version: from.to_string(),
            to_api_version: to_api_version.to_string(),
            notes: converted.notes,
        })
    }

    /// The whole rule with a synchronous `served(api_version, kind)` (a release profile,
    /// a discovery snapshot): `Ok(None)` when the object's own version is served,
    /// `Ok(Some)` when it was converted, `Err(NotServed)` otherwise.
    ///
    /// An object without `apiVersion` or `kind` is left alone (`Ok(None)`): there is
    /// nothing to translate, and applying it reports the real problem.
    pub fn translate(
        &self,
        obj: &Value,
        served: impl Fn(&str, &str) -> bool,
    ) -> Result<Option<Translation>, TranslateError> {
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        if api_version.is_empty() || kind.is_empty() || served(api_version, kind) {
            return Ok(None);
        }
        if let Some(to) = self
            .candidates(api_version, kind)
            .into_iter()
            .find(|to| served(to, kind))
        {
            return Ok(Some(self.convert(obj, &to)?));
        }
        let use_instead = if self.enabled {
            None
        } else {
            convert::successors(api_version, kind)
                .iter()
                .find(|to| served(to, kind))
                .map(|to| to.to_string())
        };
        Err(self.not_served(obj, use_instead))
    }

    /// Why `obj`, whose version is not served and for which no candidate is served,
    /// cannot be applied: removed with no successor, or not served (with the served
    /// successor to write instead when translation is off and one exists). The one
    /// wording, for the cluster's discovery and for a release profile alike.
    pub fn not_served(&self, obj: &Value, use_instead: Option<String>) -> TranslateError {
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        let no_mapping = !self.mappings.iter().any(|m| m.matches(api_version, kind));
        if let Some(removed_in) = crate::releases::removed_without_successor(api_version, kind)
            && no_mapping
        {
            return TranslateError::Removed {
                kind: kind.to_string(),
                name: convert::object_name(obj),
                api_version: api_version.to_string(),
                removed_in,
            };
        }
        TranslateError::NotServed {
            kind: kind.to_string(),
            name: convert::object_name(obj),
            api_version: api_version.to_string(),
            use_instead,
            disabled: !self.enabled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pdb() -> Value {
        json!({
            "apiVersion": "policy/v1beta1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "zk-pdb"},
            "spec": {"selector": {"matchLabels": {"app": "zk"}}, "maxUnavailable": 1}
        })
    }

    /// A 1.25+ cluster: policy/v1 only.
    fn modern(api_version: &str, _kind: &str) -> bool {
        api_version != "policy/v1beta1" && api_version != "example.com/v1alpha1"
    }

    // PodSecurityPolicy: policy/v1beta1 removed in 1.25 with no successor (Kubernetes'
    // deprecation guide); a PodDisruptionBudget lives on as policy/v1.
    #[test]
    fn a_removed_api_without_successor_says_so() {
        let psp = json!({"apiVersion": "policy/v1beta1", "kind": "PodSecurityPolicy",
                         "metadata": {"name": "restricted"}, "spec": {}});
        let err = Translator::default().translate(&psp, modern).unwrap_err();
        assert_eq!(
            err,
            TranslateError::Removed {
                kind: "PodSecurityPolicy".into(),
                name: "restricted".into(),
                api_version: "policy/v1beta1".into(),
                removed_in: 25,
            }
        );
        let text = err.to_string();
        assert!(
            text.contains("removed in 1.25 with nothing to replace it"),
            "{text}"
        );
        assert!(text.contains("drop this template"), "{text}");
        assert_eq!(
            crate::removed_without_successor("policy/v1beta1", "PodDisruptionBudget"),
            None
        );
        // A user mapping is the user's own successor.
        let mapped = Translator {
            enabled: true,
            mappings: vec![Mapping {
                from_api_version: "policy/v1beta1".into(),
                kind: Some("PodSecurityPolicy".into()),
                to_api_version: "example.com/v1".into(),
            }],
        };
        assert!(matches!(
            mapped.translate(&psp, |_, _| false).unwrap_err(),
            TranslateError::NotServed { .. }
        ));
    }

    #[test]
    fn served_objects_are_left_alone() {
        let t = Translator::default();
        let mut obj = pdb();
        obj["apiVersion"] = json!("policy/v1");
        assert_eq!(t.translate(&obj, modern).unwrap(), None);
    }

    #[test]
    fn enabled_translation_converts_to_the_first_served_candidate() {
        let t = Translator::default();
        let out = t.translate(&pdb(), modern).unwrap().unwrap();
        assert_eq!(out.from_api_version, "policy/v1beta1");
        assert_eq!(out.to_api_version, "policy/v1");
        assert_eq!(out.object["apiVersion"], "policy/v1");

        // On a 1.19 cluster an extensions Ingress goes to networking v1beta1...
        let ing = json!({"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": "i"},
                         "spec": {"backend": {"serviceName": "s", "servicePort": 80}}});
        let old = |v: &str, _: &str| v == "networking.k8s.io/v1beta1";
        assert_eq!(
            t.translate(&ing, old).unwrap().unwrap().to_api_version,
            "networking.k8s.io/v1beta1"
        );
        // ...and on a current one to networking v1.
        let new = |v: &str, _: &str| v == "networking.k8s.io/v1";
        assert_eq!(
            t.translate(&ing, new).unwrap().unwrap().to_api_version,
            "networking.k8s.io/v1"
        );
    }

    #[test]
    fn disabled_translation_names_what_to_write() {
        let t = Translator {
            enabled: false,
            mappings: Vec::new(),
        };
        assert!(
            t.candidates("policy/v1beta1", "PodDisruptionBudget")
                .is_empty()
        );
        let err = t.translate(&pdb(), modern).unwrap_err();
        assert_eq!(
            err,
            TranslateError::NotServed {
                kind: "PodDisruptionBudget".into(),
                name: "zk-pdb".into(),
                api_version: "policy/v1beta1".into(),
                use_instead: Some("policy/v1".into()),
                disabled: true,
            }
        );
        assert_eq!(
            err.to_string(),
            "PodDisruptionBudget \"zk-pdb\" uses policy/v1beta1, which this cluster no longer \
             serves; write policy/v1 in the template (API version translation is switched off \
             by the provider setting translate_api_versions)"
        );
    }

    #[test]
    fn nothing_served_says_what_to_do() {
        let t = Translator::default();
        let widget = json!({"apiVersion": "example.com/v1alpha1", "kind": "Widget", "metadata": {"name": "w"}});
        let err = t.translate(&widget, modern).unwrap_err();
        assert!(matches!(
            err,
            TranslateError::NotServed {
                use_instead: None,
                disabled: false,
                ..
            }
        ));
        assert_eq!(
            err.to_string(),
            "Widget \"w\" uses example.com/v1alpha1, which this cluster no longer serves and no \
             served version is known to convert it to: update the template to a version the \
             cluster serves, or add an api_version_mapping block"
        );
        // A built-in kind whose successor is not served either.
        let none = |_: &str, _: &str| false;
        assert!(matches!(
            t.translate(&pdb(), none).unwrap_err(),
            TranslateError::NotServed {
                use_instead: None,
                ..
            }
        ));
    }

    #[test]
    fn user_mappings_come_first_and_only_swap_the_version() {
        let t = Translator {
            enabled: true,
            mappings: vec![
                Mapping {
                    from_api_version: "example.com/v1alpha1".into(),
                    kind: Some("Gadget".into()),
                    to_api_version: "example.com/v2".into(),
                },
                Mapping {
                    from_api_version: "example.com/v1alpha1".into(),
                    kind: None,
                    to_api_version: "example.com/v1".into(),
                },
                Mapping {
                    from_api_version: "policy/v1beta1".into(),
                    kind: None,
                    to_api_version: "policy/v1".into(),
                },
            ],
        };
        assert_eq!(
            t.candidates("example.com/v1alpha1", "Widget"),
            ["example.com/v1"]
        );
        assert_eq!(
            t.candidates("example.com/v1alpha1", "Gadget"),
            ["example.com/v2", "example.com/v1"]
        );
        // A mapping that repeats a built-in target is listed once.
        assert_eq!(
            t.candidates("policy/v1beta1", "PodDisruptionBudget"),
            ["policy/v1"]
        );

        let widget = json!({"apiVersion": "example.com/v1alpha1", "kind": "Widget",
                            "metadata": {"name": "w"}, "spec": {"size": 3}});
        let out = t.translate(&widget, modern).unwrap().unwrap();
        assert_eq!(out.to_api_version, "example.com/v1");
        assert_eq!(out.object["spec"], widget["spec"]);
        assert!(out.notes.is_empty());
    }

    #[test]
    fn conversion_errors_surface() {
        let t = Translator::default();
        let ing = json!({"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": "i"},
                         "spec": {"backend": {"serviceName": "s", "servicePort": {"port": 80}}}});
        let new = |v: &str, _: &str| v == "networking.k8s.io/v1";
        assert!(matches!(
            t.translate(&ing, new),
            Err(TranslateError::Convert(_))
        ));
    }

    #[test]
    fn a_mapping_is_parsed_from_its_fields_as_written() {
        assert_eq!(
            Mapping::parse(
                Some(" example.com/v1beta1 "),
                Some(" "),
                Some("example.com/v1")
            ),
            Ok(Mapping {
                from_api_version: "example.com/v1beta1".into(),
                kind: None,
                to_api_version: "example.com/v1".into(),
            })
        );
        assert_eq!(
            Mapping::parse(
                Some("example.com/v1beta1"),
                Some("Widget"),
                Some("example.com/v1")
            )
            .map(|m| m.kind),
            Ok(Some("Widget".to_string()))
        );
    }

    #[test]
    fn a_mapping_names_each_field_at_fault() {
        let problems = Mapping::parse(Some("  "), None, Some("example.com/ v1"))
            .expect_err("blank from, spaced to");
        assert_eq!(
            problems,
            [
                MappingProblem::Missing {
                    field: MappingField::From
                },
                MappingProblem::NotGroupVersion {
                    field: MappingField::To,
                    text: "example.com/ v1".into()
                }
            ]
        );
        assert_eq!(problems[0].to_string(), "`from` is required.");
        assert_eq!(
            problems[1].to_string(),
            "`to` is \"example.com/ v1\"; write an API version as `group/version` (for example `example.com/v1`)."
        );
        for bad in ["v1beta1", "a/b/c", "/v1", "example.com/"] {
            let problems = Mapping::parse(Some(bad), None, Some("example.com/v1")).expect_err(bad);
            assert_eq!(problems.len(), 1, "{bad}");
            assert_eq!(problems[0].field(), MappingField::From, "{bad}");
        }
        let missing = Mapping::parse(Some("example.com/v1beta1"), None, None).expect_err("no to");
        assert_eq!(missing[0].field().name(), "to");
    }
}
