//! Strategic merge patch (the `kubectl patch --type=strategic` and Kustomize
//! `patchesStrategicMerge` rules), JSON merge patch and JSON patch.
//!
//! Strategic merge, as implemented here:
//! * mappings merge recursively; a `null` value deletes the field;
//! * lists whose field has a merge key (see [`crate::keys`]) merge item by item: a patch
//!   item changes the object's item with the same key (only the fields it states) or is
//!   appended; `$patch: delete` in an item removes the object's item; `$patch: replace`
//!   in an item replaces that item whole;
//! * `{$patch: replace}` as a list item replaces the whole list with the patch's other
//!   items; `$patch: replace` in a mapping replaces the mapping, `$patch: delete` deletes it;
//! * `$setElementOrder/<field>` orders the merged list's items it names (the others keep
//!   their places), `$deleteFromPrimitiveList/<field>` removes scalars from a list,
//!   `$retainKeys` keeps only the named fields of a mapping;
//! * other lists (no merge key, and every list of a custom resource, `typed = false`) are
//!   replaced by the patch's list, which is JSON merge patch behaviour. `metadata` is
//!   typed even in custom resources: it is the same ObjectMeta everywhere.

use serde_json::{Map, Value};

use crate::PatchError;
use crate::keys::{PatchStrategy, patch_strategy};

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER: &str = "$setElementOrder/";
const DELETE_SCALARS: &str = "$deleteFromPrimitiveList/";

/// RFC 7386 JSON merge patch: mappings merge recursively, `null` deletes, anything else
/// (lists included) replaces.
pub fn json_merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            json_merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// RFC 6902 JSON patch: `ops` is a list of `{op, path, value|from}`; all or nothing.
pub fn json_patch(target: &mut Value, ops: &Value) -> Result<(), PatchError> {
    let ops: json_patch::Patch = serde_json::from_value(ops.clone())
        .map_err(|source| PatchError::Json6902Shape { source })?;
    let mut work = target.clone();
    json_patch::patch(&mut work, &ops).map_err(|source| PatchError::Json6902Apply { source })?;
    *target = work;
    Ok(())
}

/// Strategic merge of `patch` into `target`; `typed` says whether the object is of a
/// built-in kind (lists merge by key) or not (lists are replaced). On error `target` is
/// unchanged.
pub fn strategic_merge(target: &mut Value, patch: &Value, typed: bool) -> Result<(), PatchError> {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return Ok(());
    };
    match directive(p, "")? {
        Directive::Delete => return Err(PatchError::DeleteWholeObject),
        Directive::Replace => {
            *target = stripped(patch);
            return Ok(());
        }
        Directive::Merge => {}
    }
    let mut work = target.clone();
    if !work.is_object() {
        work = Value::Object(Map::new());
    }
    if let Value::Object(t) = &mut work {
        merge_map(
            t,
            p,
            &Ctx {
                parent: "",
                path: String::new(),
                typed,
            },
        )?;
    }
    *target = work;
    Ok(())
}

struct Ctx<'a> {
    /// Name of the field holding this mapping ("" at the top, the list's field name for
    /// list items): with the field name, it picks the row of the key table.
    parent: &'a str,
    path: String,
    typed: bool,
}

enum Directive {
    Merge,
    Replace,
    Delete,
}

fn directive(m: &Map<String, Value>, path: &str) -> Result<Directive, PatchError> {
    match m.get(PATCH) {
        None => Ok(Directive::Merge),
        Some(Value::String(s)) if s == "merge" => Ok(Directive::Merge),
        Some(Value::String(s)) if s == "replace" => Ok(Directive::Replace),
        Some(Value::String(s)) if s == "delete" => Ok(Directive::Delete),
        Some(other) => Err(PatchError::UnknownDirective {
            path: shown(path),
            value: match other {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            },
        }),
    }
}

fn shown(path: &str) -> String {
    if path.is_empty() {
        ".".into()
    } else {
        path.to_string()
    }
}

/// The patch value without directives, as it is stored when nothing is there to merge with.
fn stripped(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), stripped(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(stripped).collect()),
        other => other.clone(),
    }
}

fn merge_map(
    t: &mut Map<String, Value>,
    p: &Map<String, Value>,
    ctx: &Ctx<'_>,
) -> Result<(), PatchError> {
    for (k, v) in p {
        if k.starts_with('$') {
            continue;
        }
        let path = format!("{}.{k}", ctx.path);
        // ObjectMeta is typed in every kind, custom resources too.
        let typed = ctx.typed || (ctx.path.is_empty() && k == "metadata");
        match v {
            Value::Null => {
                t.remove(k);
            }
            Value::Object(pm) => match directive(pm, &path)? {
                Directive::Delete => {
                    t.remove(k);
                }
                Directive::Replace => {
                    t.insert(k.clone(), stripped(v));
                }
                Directive::Merge => {
                    let slot = t
                        .entry(k.clone())
                        .or_insert_with(|| Value::Object(Map::new()));
                    if !slot.is_object() {
                        *slot = Value::Object(Map::new());
                    }
                    if let Value::Object(tm) = slot {
                        let inner = Ctx {
                            parent: k,
                            path,
                            typed,
                        };
                        merge_map(tm, pm, &inner)?;
                    }
                }
            },
            Value::Array(items) => {
                let strategy = if typed {
                    patch_strategy(ctx.parent, k)
                } else {
                    PatchStrategy::Replace
                };
                let slot = t.entry(k.clone()).or_insert(Value::Null);
                merge_list(slot, items, strategy, k, &path, typed)?;
            }
            scalar => {
                t.insert(k.clone(), scalar.clone());
            }
        }
    }
    for (k, v) in p {
        if let Some(field) = k.strip_prefix(DELETE_SCALARS) {
            let Value::Array(gone) = v else {
                return Err(PatchError::DirectiveNotAList {
                    path: shown(&ctx.path),
                    directive: k.clone(),
                });
            };
            if let Some(Value::Array(items)) = t.get_mut(field) {
                items.retain(|i| !gone.contains(i));
            }
        }
    }
    for (k, v) in p {
        if let Some(field) = k.strip_prefix(SET_ORDER) {
            let Value::Array(order) = v else {
                return Err(PatchError::DirectiveNotAList {
                    path: shown(&ctx.path),
                    directive: k.clone(),
                });
            };
            let key = match patch_strategy(ctx.parent, field) {
                PatchStrategy::MergeByKey(key) if ctx.typed => Some(key),
                _ => None,
            };
            if let Some(Value::Array(items)) = t.get_mut(field) {
                set_order(items, order, key);
            }
        }
    }
    if let Some(keep) = p.get(RETAIN_KEYS) {
        let Value::Array(keep) = keep else {
            return Err(PatchError::DirectiveNotAList {
                path: shown(&ctx.path),
                directive: RETAIN_KEYS.into(),
            });
        };
        t.retain(|k, _| keep.iter().any(|n| n.as_str() == Some(k.as_str())));
    }
    Ok(())
}

fn merge_list(
    slot: &mut Value,
    items: &[Value],
    strategy: PatchStrategy,
    field: &str,
    path: &str,
    typed: bool,
) -> Result<(), PatchError> {
    let is_replace_marker = |i: &Value| {
        i.as_object()
            .is_some_and(|m| m.get(PATCH).and_then(Value::as_str) == Some("replace"))
            && i.as_object().is_some_and(|m| m.len() == 1)
    };
    if items.iter().any(is_replace_marker) {
        *slot = Value::Array(
            items
                .iter()
                .filter(|i| !is_replace_marker(i))
                .map(stripped)
                .collect(),
        );
        return Ok(());
    }
    match strategy {
        PatchStrategy::Replace => *slot = Value::Array(items.iter().map(stripped).collect()),
        PatchStrategy::MergeScalars => {
            if !slot.is_array() {
                *slot = Value::Array(Vec::new());
            }
            if let Value::Array(live) = slot {
                for item in items {
                    if !live.contains(item) {
                        live.push(item.clone());
                    }
                }
            }
        }
        PatchStrategy::MergeByKey(key) => {
            if !slot.is_array() {
                *slot = Value::Array(Vec::new());
            }
            let Value::Array(live) = slot else {
                return Ok(());
            };
            for (index, item) in items.iter().enumerate() {
                let Value::Object(pm) = item else {
                    return Err(PatchError::NotAMapping {
                        path: path.into(),
                        index,
                        key,
                    });
                };
                let id = match pm.get(key) {
                    Some(id) if !id.is_null() => id,
                    _ => {
                        return Err(PatchError::MissingMergeKey {
                            path: path.into(),
                            index,
                            key,
                        });
                    }
                };
                let item_path = format!("{path}[{key}={}]", plain(id));
                let pos = live.iter().position(|l| l.get(key) == Some(id));
                match (directive(pm, &item_path)?, pos) {
                    (Directive::Delete, Some(i)) => {
                        live.remove(i);
                    }
                    (Directive::Delete, None) => {}
                    (Directive::Replace, Some(i)) => live[i] = stripped(item),
                    (_, None) => live.push(stripped(item)),
                    (Directive::Merge, Some(i)) => {
                        if !live[i].is_object() {
                            live[i] = Value::Object(Map::new());
                        }
                        if let Value::Object(lm) = &mut live[i] {
                            let ctx = Ctx {
                                parent: field,
                                path: item_path,
                                typed,
                            };
                            merge_map(lm, pm, &ctx)?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// `backup` for a string key, `8080` for a number: as a user writes it.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Puts the items `order` names into that order, on the places such items hold now;
/// items it does not name stay where they are (so a patch that orders only the items it
/// adds or changes does not move the object's others).
fn set_order(items: &mut [Value], order: &[Value], key: Option<&str>) {
    let id = |v: &Value| -> Option<Value> {
        match key {
            Some(key) => v.get(key).cloned(),
            None => Some(v.clone()),
        }
    };
    let rank = |v: &Value| -> Option<usize> {
        let id = id(v)?;
        order.iter().position(|o| match key {
            Some(key) => o.get(key) == Some(&id),
            None => *o == id,
        })
    };
    let places: Vec<usize> = (0..items.len())
        .filter(|&i| rank(&items[i]).is_some())
        .collect();
    let mut named: Vec<Value> = places.iter().map(|&i| items[i].clone()).collect();
    named.sort_by_key(|v| rank(v).unwrap_or(usize::MAX));
    for (place, value) in places.into_iter().zip(named) {
        items[place] = value;
    }
}
