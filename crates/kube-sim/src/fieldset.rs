//! Field sets as server-side apply tracks them: paths in the `FieldsV1` notation
//! (`f:name`, `k:{"name":"x"}`, `v:"x"`, `i:0`), their trie encoding in `managedFields`, and
//! the list semantics (associative / set / atomic) that decide how paths are formed.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

pub type FieldPath = Vec<String>;

/// How a list merges. Built-in kinds follow the Kubernetes OpenAPI list markers for the
/// common fields; lists in custom resources are atomic (no `x-kubernetes-list-type` support).
#[derive(Debug, Clone, PartialEq)]
pub enum ListKind {
    Atomic,
    Set,
    Map(Vec<&'static str>),
}

/// Key fields that Kubernetes defaults, so an item without them still has a full key.
fn key_default(key: &str) -> Option<Value> {
    (key == "protocol").then(|| Value::String("TCP".into()))
}

/// The list kind the shared table (`kube_merge`, also used by task patches) declares
/// for `field` in a mapping held by `parent`.
fn declared_kind(parent: &str, field: &str) -> ListKind {
    match kube_merge::apply_list_kind(parent, field) {
        kube_merge::ApplyList::Atomic => ListKind::Atomic,
        kube_merge::ApplyList::Set => ListKind::Set,
        kube_merge::ApplyList::Map(keys) => ListKind::Map(keys.to_vec()),
    }
}

/// The list kind for `field` (in a mapping held by `parent`) holding `items`, falling
/// back to atomic when the items cannot be keyed (missing key fields, duplicates,
/// non-objects).
pub fn list_kind(parent: &str, field: &str, items: &[Value], typed: bool) -> ListKind {
    let always_typed = matches!(field, "ownerReferences" | "finalizers");
    if !typed && !always_typed {
        return ListKind::Atomic;
    }
    let kind = declared_kind(parent, field);
    match &kind {
        ListKind::Atomic => kind,
        ListKind::Set => {
            let mut seen = BTreeSet::new();
            let ok = items
                .iter()
                .all(|i| !i.is_object() && !i.is_array() && seen.insert(i.to_string()));
            if ok { kind } else { ListKind::Atomic }
        }
        ListKind::Map(_) => {
            let mut seen = BTreeSet::new();
            for item in items {
                match item_key(item, &kind) {
                    Some(k) if seen.insert(k.clone()) => {}
                    _ => return ListKind::Atomic,
                }
            }
            kind
        }
    }
}

/// The path element naming `item` inside a list of `kind` (`None` for atomic lists or
/// items lacking a key field).
pub fn item_key(item: &Value, kind: &ListKind) -> Option<String> {
    match kind {
        ListKind::Atomic => None,
        ListKind::Set => Some(format!("v:{item}")),
        ListKind::Map(keys) => {
            let obj = item.as_object()?;
            let mut key: BTreeMap<&str, Value> = BTreeMap::new();
            for k in keys {
                let v = match obj.get(*k) {
                    Some(v) if !v.is_null() => v.clone(),
                    _ => key_default(k)?,
                };
                key.insert(k, v);
            }
            serde_json::to_string(&key).ok().map(|s| format!("k:{s}"))
        }
    }
}

/// Paths a value sets: leaves, atomic lists, empty maps, and the items of keyed lists.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSet(pub BTreeSet<FieldPath>);

impl FieldSet {
    pub fn from_value(v: &Value, typed: bool) -> FieldSet {
        let mut set = BTreeSet::new();
        walk(v, &mut Vec::new(), "", "", typed, &mut set);
        FieldSet(set)
    }

    pub fn contains(&self, p: &FieldPath) -> bool {
        self.0.contains(p)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `FieldsV1` trie: every path element is a key, members that also have children
    /// carry a `"."` entry.
    pub fn to_fields_v1(&self) -> Value {
        #[derive(Default)]
        struct Node {
            member: bool,
            children: BTreeMap<String, Node>,
        }
        fn encode(n: &Node) -> Value {
            let mut m = Map::new();
            if n.member && !n.children.is_empty() {
                m.insert(".".into(), Value::Object(Map::new()));
            }
            for (k, c) in &n.children {
                m.insert(k.clone(), encode(c));
            }
            Value::Object(m)
        }
        let mut root = Node::default();
        for path in &self.0 {
            let mut node = &mut root;
            for el in path {
                node = node.children.entry(el.clone()).or_default();
            }
            node.member = true;
        }
        encode(&root)
    }

    pub fn from_fields_v1(v: &Value) -> FieldSet {
        fn decode(v: &Value, path: &mut FieldPath, out: &mut BTreeSet<FieldPath>) {
            let Some(m) = v.as_object() else { return };
            if m.is_empty() {
                if !path.is_empty() {
                    out.insert(path.clone());
                }
                return;
            }
            for (k, c) in m {
                if k == "." {
                    out.insert(path.clone());
                    continue;
                }
                path.push(k.clone());
                decode(c, path, out);
                path.pop();
            }
        }
        let mut out = BTreeSet::new();
        decode(v, &mut Vec::new(), &mut out);
        FieldSet(out)
    }
}

/// `field`: the name `v` sits under; `parent`: the field holding the mapping `v` is in.
fn walk(
    v: &Value,
    path: &mut FieldPath,
    parent: &str,
    field: &str,
    typed: bool,
    out: &mut BTreeSet<FieldPath>,
) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, c) in m {
                path.push(format!("f:{k}"));
                walk(c, path, field, k, typed, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            let kind = list_kind(parent, field, items, typed);
            if kind == ListKind::Atomic {
                out.insert(path.clone());
                return;
            }
            for item in items {
                let Some(key) = item_key(item, &kind) else {
                    continue;
                };
                path.push(key);
                out.insert(path.clone());
                if let Value::Object(m) = item {
                    for (k, c) in m {
                        path.push(format!("f:{k}"));
                        walk(c, path, field, k, typed, out);
                        path.pop();
                    }
                }
                path.pop();
            }
        }
        _ => {
            if !path.is_empty() {
                out.insert(path.clone());
            }
        }
    }
}

/// Index of the list item a `k:`/`v:` element names.
fn find_item(items: &[Value], el: &str) -> Option<usize> {
    if let Some(v) = el.strip_prefix("v:") {
        let want: Value = serde_json::from_str(v).ok()?;
        return items.iter().position(|i| *i == want);
    }
    if let Some(k) = el.strip_prefix("k:") {
        let want: Map<String, Value> = serde_json::from_str(k).ok()?;
        return items.iter().position(|i| {
            want.iter().all(|(f, wv)| match i.get(f) {
                Some(iv) if !iv.is_null() => iv == wv,
                _ => key_default(f).as_ref() == Some(wv),
            })
        });
    }
    if let Some(n) = el.strip_prefix("i:") {
        let n: usize = n.parse().ok()?;
        return (n < items.len()).then_some(n);
    }
    None
}

pub fn get_at<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = v;
    for el in path {
        cur = match (cur, el.strip_prefix("f:")) {
            (Value::Object(m), Some(f)) => m.get(f)?,
            (Value::Array(items), None) => &items[find_item(items, el)?],
            _ => return None,
        };
    }
    Some(cur)
}

fn get_at_mut<'a>(v: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut cur = v;
    for el in path {
        cur = match (cur, el.strip_prefix("f:")) {
            (Value::Object(m), Some(f)) => m.get_mut(f)?,
            (Value::Array(items), None) => {
                let i = find_item(items, el)?;
                &mut items[i]
            }
            _ => return None,
        };
    }
    Some(cur)
}

/// Removes the field or list item at `path`; returns whether something was removed.
pub fn remove_at(v: &mut Value, path: &[String]) -> bool {
    let Some((last, parent)) = path.split_last() else {
        return false;
    };
    match (get_at_mut(v, parent), last.strip_prefix("f:")) {
        (Some(Value::Object(m)), Some(f)) => m.remove(f).is_some(),
        (Some(Value::Array(items)), None) => match find_item(items, last) {
            Some(i) => {
                items.remove(i);
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// Human form of a path as Kubernetes prints it in conflict messages:
/// `.spec.template.spec.containers[name="nginx"].image`.
pub fn describe(path: &[String]) -> String {
    let mut s = String::new();
    for el in path {
        if let Some(f) = el.strip_prefix("f:") {
            s.push('.');
            s.push_str(f);
        } else if let Some(k) = el.strip_prefix("k:") {
            let parts: Vec<String> = serde_json::from_str::<Map<String, Value>>(k)
                .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect())
                .unwrap_or_default();
            s.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(v) = el.strip_prefix("v:") {
            s.push_str(&format!("[={v}]"));
        } else if let Some(i) = el.strip_prefix("i:") {
            s.push_str(&format!("[{i}]"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_v1_round_trip_and_item_member_marker() {
        let v = json!({"spec": {"replicas": 1, "containers": [{"name": "a", "image": "x", "ports": [{"containerPort": 80}]}]}});
        let set = FieldSet::from_value(&v, true);
        let encoded = set.to_fields_v1();
        assert_eq!(
            encoded,
            json!({"f:spec": {"f:replicas": {}, "f:containers": {"k:{\"name\":\"a\"}": {
                ".": {}, "f:name": {}, "f:image": {},
                "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
            }}}})
        );
        assert_eq!(FieldSet::from_fields_v1(&encoded), set);
        let port = vec![
            "f:spec".to_string(),
            "f:containers".into(),
            "k:{\"name\":\"a\"}".into(),
            "f:ports".into(),
            "k:{\"containerPort\":80,\"protocol\":\"TCP\"}".into(),
            "f:containerPort".into(),
        ];
        assert_eq!(get_at(&v, &port), Some(&json!(80)));
        assert_eq!(describe(&port[..3]), ".spec.containers[name=\"a\"]");
    }

    #[test]
    fn untyped_lists_are_atomic() {
        let v = json!({"spec": {"containers": [{"name": "a"}]}});
        let set = FieldSet::from_value(&v, false);
        assert_eq!(set.0.len(), 1);
    }
}
