//! Server-side apply: ownership per field manager, conflicts, removal of fields a manager
//! stopped applying, and create-on-apply.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::api_error::{ApiError, ApiResult};
use crate::fieldset::{FieldPath, FieldSet, describe, get_at, remove_at};
use crate::managed::{self, Entry, Operation, changed, managed_view};
use crate::merge::{apply_merge, strip_nulls};
use crate::ops::{self, Ownership, WriteOpts, is_typed};
use crate::resources::ResourceType;
use crate::store::{ObjKey, Store, now_rfc3339};

#[derive(Debug, Clone)]
pub struct ApplyOpts {
    pub manager: String,
    pub force: bool,
    pub dry_run: bool,
}

/// PATCH with `application/apply-patch+yaml`. Returns the object and whether it was created.
pub fn apply(
    store: &mut Store,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    mut applied: Value,
    sub: Option<&str>,
    opts: &ApplyOpts,
) -> ApiResult<(Value, bool)> {
    if opts.manager.is_empty() {
        return Err(ApiError::bad_request(
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        ));
    }
    ops::check_type(rt, &mut applied, true)?;
    // Apply types the patch against the kind's schema, so unknown fields fail whatever
    // fieldValidation says (a 500 without reason on the real server).
    if let Some(field) = crate::validate::unknown_fields(rt, &applied).first() {
        return Err(ApiError::internal(format!(
            "failed to create typed patch object (/{name}; {}, Kind={}): .{field}: field not declared in schema",
            rt.api_version(),
            rt.kind
        )));
    }
    crate::validate::apply_decode(rt, ns, name, &applied)?;
    strip_nulls(&mut applied);
    match applied["metadata"]["name"].as_str() {
        Some(n) if n == name => {}
        Some(n) => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        None => applied["metadata"]["name"] = json!(name),
    }
    if applied["metadata"].get("managedFields").is_some() {
        return Err(ApiError::bad_request(
            "metadata.managedFields must be nil in an applied configuration",
        ));
    }
    let write = WriteOpts {
        manager: opts.manager.clone(),
        dry_run: opts.dry_run,
    };
    let key = ObjKey::new(rt, ns, name);
    let typed = is_typed(rt);
    let applied_view = managed_view(&applied, sub, rt.has_status);
    let new_set = FieldSet::from_value(&applied_view, typed);
    let Some(old) = store.objects.get(&key).cloned() else {
        if sub.is_some() {
            return Err(ApiError::not_found(&rt.qualified(), name));
        }
        let entry = Entry {
            manager: opts.manager.clone(),
            operation: Operation::Apply,
            api_version: rt.api_version(),
            time: now_rfc3339(),
            subresource: None,
            fields: new_set,
        };
        let created = ops::create(store, rt, ns, applied, &write, Some(vec![entry]))?;
        return Ok((created, true));
    };

    let mut entries = managed::read(&old);
    let live_view = managed_view(&old, sub, rt.has_status);
    let mine = |e: &Entry| e.is(&opts.manager, &Operation::Apply, sub);

    // Conflicts: another manager owns a field this apply sets to a different value.
    let mut conflicts: BTreeMap<(String, String), Vec<FieldPath>> = BTreeMap::new();
    for e in entries.iter().filter(|e| !mine(e)) {
        for p in new_set.0.intersection(&e.fields.0) {
            if changed(p, &live_view, &applied_view) && get_at(&live_view, p).is_some() {
                conflicts
                    .entry((e.manager.clone(), e.api_version.clone()))
                    .or_default()
                    .push(p.clone());
            }
        }
    }
    if !conflicts.is_empty() {
        if !opts.force {
            return Err(conflict_error(rt, name, &conflicts));
        }
        for e in entries.iter_mut().filter(|e| !mine(e)) {
            e.fields
                .0
                .retain(|p| !(new_set.contains(p) && changed(p, &live_view, &applied_view)));
        }
    }

    let previous = entries
        .iter()
        .find(|e| mine(e))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    let mut merged = live_view.clone();
    apply_merge(&mut merged, &applied_view, typed);

    // Fields this manager applied before and omits now go, unless someone else owns them.
    let owned_by_others = |p: &FieldPath| entries.iter().any(|e| !mine(e) && e.fields.contains(p));
    let removals: Vec<&FieldPath> = previous
        .0
        .iter()
        .filter(|p| !new_set.contains(p) && !owned_by_others(p))
        .collect();
    // Removing a list item removes its fields too; removing those first would erase the
    // key that finds the item.
    let covered =
        |p: &FieldPath| (1..p.len()).any(|n| removals.iter().any(|r| r.as_slice() == &p[..n]));
    for p in removals.iter().filter(|p| !covered(p)) {
        if remove_at(&mut merged, p) {
            prune_empty_parents(&mut merged, p, &new_set, &entries);
        }
    }

    match entries.iter_mut().find(|e| mine(e)) {
        Some(e) => {
            if e.fields != new_set {
                e.time = now_rfc3339();
            }
            e.fields = new_set;
            e.api_version = rt.api_version();
        }
        None => entries.push(Entry {
            manager: opts.manager.clone(),
            operation: Operation::Apply,
            api_version: rt.api_version(),
            time: now_rfc3339(),
            subresource: sub.map(str::to_string),
            fields: new_set,
        }),
    }
    entries.retain(|e| !e.fields.is_empty());

    let mut new = match sub {
        Some(_) => {
            let mut b = old.clone();
            b["status"] = merged.get("status").cloned().unwrap_or(Value::Null);
            b
        }
        None => {
            let mut b = merged;
            b["apiVersion"] = old["apiVersion"].clone();
            b["kind"] = old["kind"].clone();
            if !b["metadata"].is_object() {
                b["metadata"] = json!({});
            }
            for f in [
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "generation",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ] {
                if let Some(v) = old["metadata"].get(f) {
                    b["metadata"][f] = v.clone();
                }
            }
            if rt.has_status
                && let Some(s) = old.get("status")
            {
                b["status"] = s.clone();
            }
            b
        }
    };
    // An applied resourceVersion is a precondition, as for updates.
    match applied["metadata"]["resourceVersion"].as_str() {
        Some(rv) => new["metadata"]["resourceVersion"] = json!(rv),
        None => {
            if let Some(md) = new["metadata"].as_object_mut() {
                md.remove("resourceVersion");
            }
        }
    }
    let out = ops::write_existing(
        store,
        rt,
        &key,
        new,
        sub,
        &write,
        Ownership::Preset(entries),
    )?;
    Ok((out, false))
}

/// Removes maps left empty by a field removal when nobody owns them.
fn prune_empty_parents(
    merged: &mut Value,
    removed: &FieldPath,
    applied: &FieldSet,
    entries: &[Entry],
) {
    let mut parent = removed.clone();
    while parent.len() > 1 {
        parent.pop();
        let empty =
            get_at(merged, &parent).is_some_and(|v| v.as_object().is_some_and(|m| m.is_empty()));
        let owned = applied.contains(&parent) || entries.iter().any(|e| e.fields.contains(&parent));
        if !empty || owned || !parent.last().is_some_and(|l| l.starts_with("f:")) {
            return;
        }
        remove_at(merged, &parent);
    }
}

fn conflict_error(
    rt: &ResourceType,
    name: &str,
    conflicts: &BTreeMap<(String, String), Vec<FieldPath>>,
) -> ApiError {
    let total: usize = conflicts.values().map(Vec::len).sum();
    let mut causes = Vec::new();
    let mut lines = Vec::new();
    for ((manager, api_version), paths) in conflicts {
        let who = format!("conflict with \"{manager}\" using {api_version}");
        for p in paths {
            causes.push(
                json!({"reason": "FieldManagerConflict", "message": who, "field": describe(p)}),
            );
        }
        if total == 1 {
            lines.push(format!("{who}: {}", describe(&paths[0])));
        } else {
            let fields: Vec<String> = paths.iter().map(|p| format!("- {}", describe(p))).collect();
            lines.push(format!(
                "conflicts with \"{manager}\" using {api_version}:\n{}",
                fields.join("\n")
            ));
        }
    }
    let plural = if total == 1 { "conflict" } else { "conflicts" };
    let message = format!("Apply failed with {total} {plural}: {}", lines.join("\n"));
    let (kind, group) = (rt.plural.clone(), rt.group.clone());
    ApiError::new(409, "Conflict", message)
        .with_details(json!({"name": name, "group": group, "kind": kind, "causes": causes}))
}
