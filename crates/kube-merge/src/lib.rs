//! How Kubernetes merges objects, without a cluster: the one table of list fields and
//! their keys (used by kube-sim's server-side apply and strategic merge patch, and by
//! task `patches` in kudo-plan), strategic merge patch as `kubectl patch
//! --type=strategic` and Kustomize apply it, JSON merge patch (RFC 7386) and JSON patch
//! (RFC 6902).
//!
//! ```text
//! keys::list_field(parent, field) ─┬─► apply_list_kind   (server-side apply: list-map-keys)
//!                                  └─► patch_strategy    (strategic merge: patchMergeKey)
//! strategic_merge(target, patch, typed)   typed = a built-in kind (see is_builtin)
//! ```

mod keys;
mod strategic;

pub use keys::{ApplyList, PatchStrategy, apply_list_kind, patch_strategy};
pub use strategic::{json_merge_patch, json_patch, strategic_merge};

/// A patch that cannot be applied; `path` is where in the object (`.spec.containers`).
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error(
        "{path}: item {index} has no {key:?}; this list merges items by {key:?}, so a patch names the item it changes by its {key:?}"
    )]
    MissingMergeKey {
        path: String,
        index: usize,
        key: &'static str,
    },
    #[error("{path}: item {index} is not a mapping, but this list merges mappings by {key:?}")]
    NotAMapping {
        path: String,
        index: usize,
        key: &'static str,
    },
    #[error("{path}: unknown directive `$patch: {value}`; use merge, replace or delete")]
    UnknownDirective { path: String, value: String },
    #[error("{path}: `{directive}` must be a list")]
    DirectiveNotAList { path: String, directive: String },
    #[error(
        "`$patch: delete` at the top of a patch would delete the whole object; use a Delete task instead"
    )]
    DeleteWholeObject,
    #[error("JSON patch (RFC 6902): not a list of operations ({{op, path, value}}): {source}")]
    Json6902Shape {
        #[source]
        source: serde_json::Error,
    },
    #[error("JSON patch (RFC 6902): {source}")]
    Json6902Apply {
        #[source]
        source: json_patch::PatchError,
    },
}

/// Whether `kind` of `api_version` is a built-in Kubernetes kind (of any release this
/// project knows): those have merge keys; custom resources do not, and are patched
/// with JSON merge semantics as Kustomize does for kinds it has no schema for.
pub fn is_builtin(api_version: &str, kind: &str) -> bool {
    let group = match api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    };
    kube_api_versions::builtin_kinds()
        .iter()
        .any(|k| k.group == group && k.kind == kind)
}

/// Strategic merge of `patch` into the object `target`, typed by the target's own
/// `apiVersion` and `kind` (see [`is_builtin`]).
pub fn patch_object(
    target: &mut serde_json::Value,
    patch: &serde_json::Value,
) -> Result<(), PatchError> {
    let api_version = target
        .get("apiVersion")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    let kind = target.get("kind").and_then(|v| v.as_str()).unwrap_or("");
    let typed = is_builtin(api_version, kind);
    strategic_merge(target, patch, typed)
}
