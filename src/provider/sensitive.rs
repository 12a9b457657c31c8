//! `kudo_instance.sensitive_parameters`: parameter values Terraform hides in plans and
//! that the provider keeps out of the Instance object, `effective_parameters`, `outputs`
//! and its logs. The engine stores them in a Secret the Instance refers to.

use std::collections::BTreeMap;

use tfplugin::{AttributePath, Diagnostic};

pub const ATTR: &str = "sensitive_parameters";

/// Stands for a sensitive value in messages.
pub(super) use kudo_plan::change::REDACTED;

/// `parameters` and `sensitive_parameters` together, as the templates see them. A name
/// in both would leave it unclear which value wins, so it is an error.
pub fn merge(
    public: Option<&BTreeMap<String, String>>,
    sensitive: Option<&BTreeMap<String, String>>,
) -> Result<Option<BTreeMap<String, String>>, Vec<Diagnostic>> {
    let (Some(public), Some(sensitive)) = (public, sensitive) else {
        return Ok(None);
    };
    let twice: Vec<Diagnostic> = sensitive
        .keys()
        .filter(|k| public.contains_key(*k))
        .map(|k| {
            Diagnostic::error(
                format!("Parameter {k} set twice"),
                format!("{k:?} is in both `parameters` and `sensitive_parameters`; set it in one of them (`sensitive_parameters` keeps it out of plans and of the Instance object)."),
            )
            // Pointing at the plain entry: Terraform quotes the configuration line the
            // diagnostic points at, which for the sensitive entry would be the secret.
            .with_attribute(AttributePath::attribute("parameters").key(k.clone()))
        })
        .collect();
    if !twice.is_empty() {
        return Err(twice);
    }
    let mut all = public.clone();
    all.extend(sensitive.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(Some(all))
}

/// `effective` without the sensitive parameters: `effective_parameters` is not a
/// sensitive attribute, so they are left out of it rather than shown in clear.
pub fn strip(
    mut effective: BTreeMap<String, String>,
    sensitive: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    effective.retain(|k, _| !sensitive.contains_key(k));
    effective
}

/// `text` with every non-empty sensitive value replaced ([`kudo_plan::change::redact`]).
pub fn redact(text: &str, sensitive: &BTreeMap<String, String>) -> String {
    kudo_plan::change::redact(text, sensitive)
}
