//! What a cluster of a given Kubernetes release does with a package's manifests: the
//! provider's one translation rule (`kube_api_versions::Translator`), asked with the
//! versions that release serves instead of the cluster's discovery. Used by
//! `render --kubernetes-version` and `package verify --kubernetes-version`.

use kube_api_versions::{Release, TranslateError, Translator, builtin_kinds};
use serde_json::Value;

/// One object whose written API version the release does not serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// It will be converted; the line says from what to what.
    Converted(String),
    /// It cannot be applied to that release; the line says why and what to do.
    NotServed(String),
}

/// Whether `release` serves `kind` at `api_version`; kinds the table does not know are
/// custom resources, which only the cluster can answer for, so they count as served.
fn served(release: Release, api_version: &str, kind: &str) -> bool {
    release.serves(api_version, kind).unwrap_or(true)
}

/// "removed in 1.25" for a built-in version, when the table knows it.
fn removed_in(api_version: &str, kind: &str) -> String {
    builtin_kinds()
        .iter()
        .find(|k| k.kind == kind && k.api_version() == api_version)
        .and_then(|k| k.removed_in)
        .map(|minor| format!(" (removed in 1.{minor})"))
        .unwrap_or_default()
}

/// The note for one object, and its converted form when it has one.
pub fn check(
    release: Release,
    translator: &Translator,
    file: &str,
    object: &Value,
) -> Option<(Note, Option<Value>)> {
    let text = |path: &str| {
        object
            .pointer(path)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (api_version, kind, name) = (text("/apiVersion"), text("/kind"), text("/metadata/name"));
    match translator.translate(object, |v, k| served(release, v, k)) {
        Ok(None) => {
            // Fields Kubernetes removed are left out as the engine does (Cluster::served_form).
            let mut object = object.clone();
            let removed = kube_api_versions::strip_removed_fields(&mut object);
            if removed.is_empty() {
                return None;
            }
            let line = format!("templates/{file}: {kind} {name:?}: {}", removed.join("; "));
            Some((Note::Converted(line), Some(object)))
        }
        Ok(Some(mut t)) => {
            let mut line = format!(
                "templates/{file}: {kind} {name:?} uses {api_version}, which Kubernetes {release} does not serve{}; it will be applied as {}",
                removed_in(&api_version, &kind),
                t.to_api_version
            );
            let removed = kube_api_versions::strip_removed_fields(&mut t.object);
            for note in t.notes.iter().chain(&removed) {
                line.push_str("; ");
                line.push_str(note);
            }
            Some((Note::Converted(line), Some(t.object)))
        }
        // Its own words say when it was removed.
        Err(e @ TranslateError::Removed { .. }) => Some((
            Note::NotServed(format!(
                "templates/{file}: {e} (checked against Kubernetes {release})"
            )),
            None,
        )),
        Err(e @ TranslateError::NotServed { .. }) | Err(e @ TranslateError::Convert(_)) => Some((
            Note::NotServed(format!(
                "templates/{file}: {e} (checked against Kubernetes {release}{})",
                removed_in(&api_version, &kind)
            )),
            None,
        )),
    }
}

/// The rendered text of one template as a cluster of `release` receives it, and a note
/// per object whose version that release does not serve. Text without such objects is
/// returned unchanged, byte for byte.
pub fn for_release(
    release: Release,
    translator: &Translator,
    file: &str,
    text: &str,
) -> (String, Vec<Note>) {
    let mut notes = Vec::new();
    let mut docs = Vec::new();
    let mut changed = false;
    for doc in kudo_template::split_documents(text) {
        let converted = match kudo_yaml::to_json(&doc) {
            Ok(object @ Value::Object(_)) => check(release, translator, file, &object),
            // Not an object: `render` reports it on its own.
            _ => None,
        };
        match converted {
            Some((note, Some(object))) => {
                notes.push(note);
                changed = true;
                docs.push(kudo_yaml::to_yaml(&object));
            }
            Some((note, None)) => {
                notes.push(note);
                docs.push(doc);
            }
            None => docs.push(doc),
        }
    }
    if !changed {
        return (text.to_string(), notes);
    }
    let joined = docs
        .iter()
        .map(|d| d.trim_start_matches("---").trim_start_matches('\n'))
        .map(|d| match d.ends_with('\n') {
            true => d.to_string(),
            false => format!("{d}\n"),
        })
        .collect::<Vec<_>>()
        .join("---\n");
    (joined, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(s: &str) -> Release {
        s.parse().expect("release")
    }

    #[test]
    fn unchanged_text_stays_byte_for_byte() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n";
        let (out, notes) = for_release(release("1.36"), &Translator::default(), "cm.yaml", text);
        assert_eq!(out, text);
        assert!(notes.is_empty());
    }
}
