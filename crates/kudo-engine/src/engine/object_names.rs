//! How objects are named in plans, diagnostics and the state's `objects` keys, as
//! `kubectl` prints them.

use crate::cluster::ObjectRef;

/// How objects are named in plans, like `kubectl` prints them.
pub fn label(r: &ObjectRef) -> String {
    named(&r.kind, r)
}

/// [`label`] with the kind qualified by its group outside the core group, as
/// `kubectl` names a resource (`StatefulSet.apps ns/name`): unique per stored object,
/// whatever version it is addressed under.
pub fn qualified_label(r: &ObjectRef) -> String {
    match r.group() {
        "" => label(r),
        group => named(&format!("{}.{group}", r.kind), r),
    }
}

/// `kind ns/name`, or `kind name` for a cluster-scoped object.
fn named(kind: &str, r: &ObjectRef) -> String {
    match &r.namespace {
        Some(ns) => format!("{kind} {ns}/{}", r.name),
        None => format!("{kind} {}", r.name),
    }
}
