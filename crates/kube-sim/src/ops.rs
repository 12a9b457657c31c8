//! The verbs on stored objects (get, list, create, update, patch, delete), shared by the
//! HTTP handlers and the simulated controllers.

use serde_json::{Value, json};
use tracing::debug;

use crate::api_error::{ApiError, ApiResult};
use crate::defaults;
use crate::managed::{self, Entry};
use crate::resources::{ResourceType, types_from_crd};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::store::{EventType, ObjKey, Store, now_rfc3339};

/// Who writes, and whether the write is only simulated.
#[derive(Debug, Clone)]
pub struct WriteOpts {
    pub manager: String,
    pub dry_run: bool,
}

/// How `managedFields` changes with a write.
pub enum Ownership {
    /// A non-apply write: the manager takes the fields it changed.
    Update,
    /// Entries already computed (server-side apply).
    Preset(Vec<Entry>),
    /// Controllers of the simulator that should not appear as managers.
    Untracked,
}

/// The object as served at `rt`'s version.
pub fn present(obj: &Value, rt: &ResourceType) -> Value {
    let mut o = obj.clone();
    o["apiVersion"] = json!(rt.api_version());
    o["kind"] = json!(rt.kind);
    o
}

pub fn is_typed(rt: &ResourceType) -> bool {
    !rt.from_crd
}

pub fn get(store: &Store, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<Value> {
    store
        .objects
        .get(&ObjKey::new(rt, ns, name))
        .map(|o| present(o, rt))
        .ok_or_else(|| ApiError::not_found(&rt.qualified(), name))
}

pub fn matching<'a>(
    store: &'a Store,
    rt: &'a ResourceType,
    ns: Option<&'a str>,
    labels: &'a LabelSelector,
    fields: &'a FieldSelector,
) -> impl Iterator<Item = (&'a ObjKey, &'a Value)> + 'a {
    store.objects.iter().filter(move |(k, v)| {
        k.group == rt.storage_group()
            && k.plural == rt.plural
            && ns.is_none_or(|n| !rt.namespaced || k.namespace == n)
            && labels.matches(v)
            && fields.matches(v)
    })
}

/// One page of a list: `limit` items after the object a `continue` token names.
#[derive(Debug, Default, Clone)]
pub struct Page<'a> {
    pub limit: Option<usize>,
    pub continue_token: Option<&'a str>,
}

fn encode_continue(key: &ObjKey) -> String {
    use base64::Engine;
    let raw = json!({"namespace": key.namespace, "name": key.name}).to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

fn decode_continue(token: &str) -> ApiResult<(String, String)> {
    use base64::Engine;
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    match (v["namespace"].as_str(), v["name"].as_str()) {
        (Some(ns), Some(name)) => Ok((ns.to_string(), name.to_string())),
        _ => Err(bad()),
    }
}

pub fn list(
    store: &Store,
    rt: &ResourceType,
    ns: Option<&str>,
    labels: &LabelSelector,
    fields: &FieldSelector,
    page: &Page<'_>,
) -> ApiResult<Value> {
    let after = page.continue_token.map(decode_continue).transpose()?;
    let mut all = matching(store, rt, ns, labels, fields).filter(|(k, _)| {
        after
            .as_ref()
            .is_none_or(|(ans, aname)| (&k.namespace, &k.name) > (ans, aname))
    });
    let limit = page.limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
    let mut items = Vec::new();
    let mut last = None;
    for (k, v) in all.by_ref().take(limit) {
        items.push(present(v, rt));
        last = Some(k);
    }
    let remaining = all.count();
    let mut metadata = json!({"resourceVersion": store.current_rv().to_string()});
    if remaining > 0
        && let Some(k) = last
    {
        metadata["continue"] = json!(encode_continue(k));
        metadata["remainingItemCount"] = json!(remaining);
    }
    Ok(json!({
        "kind": format!("{}List", rt.kind),
        "apiVersion": rt.api_version(),
        "metadata": metadata,
        "items": items,
    }))
}

fn random_suffix() -> String {
    use rand::Rng;
    const CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| CHARS[rng.random_range(0..CHARS.len())] as char)
        .collect()
}

/// Checks `apiVersion`/`kind` of a body against the URL's resource, filling them in when
/// absent (Kubernetes accepts bodies without type meta on typed endpoints).
pub fn check_type(rt: &ResourceType, body: &mut Value, required: bool) -> ApiResult<()> {
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    match body["kind"].as_str() {
        Some(k) if k != rt.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind of the object ({k}) does not match the kind served at this endpoint ({})",
                rt.kind
            )));
        }
        None if required => return Err(ApiError::bad_request("invalid object: kind must be set")),
        _ => {}
    }
    match body["apiVersion"].as_str() {
        Some(av) => {
            let group = crate::resources::split_api_version(av).0;
            if group != rt.group {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({av}) does not match the expected API version ({})",
                    rt.api_version()
                )));
            }
        }
        None if required => {
            return Err(ApiError::bad_request(
                "invalid object: apiVersion must be set",
            ));
        }
        None => {}
    }
    body["apiVersion"] = json!(rt.api_version());
    body["kind"] = json!(rt.kind);
    Ok(())
}

/// Namespace checks for writes: the body agrees with the URL and the namespace exists.
fn check_namespace(
    store: &Store,
    rt: &ResourceType,
    ns: &str,
    body: &mut Value,
    creating: bool,
) -> ApiResult<()> {
    if !rt.namespaced {
        if let Some(m) = body["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        return Ok(());
    }
    match body["metadata"]["namespace"].as_str() {
        Some(n) if !n.is_empty() && n != ns => {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        _ => body["metadata"]["namespace"] = json!(ns),
    }
    let Some(nsobj) = store.namespace(ns) else {
        return Err(ApiError::not_found("namespaces", ns));
    };
    if creating && !nsobj["metadata"]["deletionTimestamp"].is_null() {
        return Err(ApiError::forbidden(format!(
            "{} \"{}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
            rt.qualified(),
            body["metadata"]["name"].as_str().unwrap_or_default()
        ))
        .with_details(json!({"name": body["metadata"]["name"], "kind": rt.plural, "causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]})));
    }
    Ok(())
}

/// POST: creates `body` in `ns`. `preset` carries the entries of a create-by-apply.
pub fn create(
    store: &mut Store,
    rt: &ResourceType,
    ns: &str,
    mut body: Value,
    opts: &WriteOpts,
    preset: Option<Vec<Entry>>,
) -> ApiResult<Value> {
    check_type(rt, &mut body, false)?;
    if !body["metadata"].is_object() {
        body["metadata"] = json!({});
    }
    let name = match (
        body["metadata"]["name"].as_str(),
        body["metadata"]["generateName"].as_str(),
    ) {
        (Some(n), _) if !n.is_empty() => n.to_string(),
        (_, Some(g)) if !g.is_empty() => format!("{g}{}", random_suffix()),
        _ => {
            return Err(ApiError::invalid(
                &rt.qualified_kind(),
                "",
                "metadata.name",
                "Required value: name or generateName is required",
            ));
        }
    };
    body["metadata"]["name"] = json!(name);
    defaults::validate_name(rt, &name)?;
    check_namespace(store, rt, ns, &mut body, true)?;
    defaults::validate_metadata(rt, &body)?;
    let key = ObjKey::new(rt, ns, &name);
    if store.objects.contains_key(&key) {
        return Err(ApiError::already_exists(&rt.qualified(), &name));
    }
    if rt.has_status
        && let Some(m) = body.as_object_mut()
    {
        m.remove("status");
    }
    if let Some(md) = body["metadata"].as_object_mut() {
        for f in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
            "selfLink",
        ] {
            md.remove(f);
        }
        md.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        md.insert("creationTimestamp".into(), json!(now_rfc3339()));
        md.insert("generation".into(), json!(1));
    }
    crate::validate::drop_unknown_fields(rt, &mut body);
    crate::validate::decode(rt, &body)?;
    if let Some(schema) = crate::schema::for_type(store, rt) {
        crate::schema::apply(&schema, rt, &mut body)?;
    }
    defaults::apply(rt, &mut body, None, store)?;
    crate::validate::object(rt, &body)?;
    crate::validate::api_approval(rt, None, &body)?;
    let entries = match preset {
        Some(e) => e,
        None => {
            let mut e = Vec::new();
            let after = managed::managed_view(&body, None, rt.has_status);
            managed::record_update(
                &mut e,
                &json!({}),
                &after,
                &opts.manager,
                &rt.api_version(),
                None,
                is_typed(rt),
            );
            e
        }
    };
    managed::write(&mut body, &entries);
    crate::validate::stored_size(&body)?;
    if opts.dry_run {
        return Ok(body);
    }
    debug!(resource = %rt.qualified(), %ns, %name, "create");
    let stored = store.commit(key, body, EventType::Added);
    after_commit(store, rt, &stored);
    Ok(present(&stored, rt))
}

/// Side effects of stored CRDs on the served API.
fn after_commit(store: &mut Store, rt: &ResourceType, obj: &Value) {
    if rt.group.is_empty()
        && rt.plural == "namespaces"
        && obj["metadata"]["deletionTimestamp"].is_null()
        && let Some(name) = obj["metadata"]["name"].as_str()
    {
        crate::controllers::namespace_defaults(store, name);
    }
    if rt.group == "apiextensions.k8s.io"
        && rt.plural == "customresourcedefinitions"
        && let Some((group, plural, types)) = types_from_crd(obj)
    {
        store.registry.register_crd(&group, &plural, types);
    }
}

/// The part of an object that bumps `metadata.generation` when it changes.
fn spec_part(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.as_object_mut() {
        for f in ["metadata", "status", "apiVersion", "kind"] {
            m.remove(f);
        }
    }
    o
}

/// Completes a write of `new` over the stored `old`: enforces the subresource split,
/// immutable metadata, optimistic concurrency, generation, ownership, defaults, and
/// finishes deletions whose finalizers are gone.
pub fn write_existing(
    store: &mut Store,
    rt: &ResourceType,
    key: &ObjKey,
    mut new: Value,
    sub: Option<&str>,
    opts: &WriteOpts,
    ownership: Ownership,
) -> ApiResult<Value> {
    let old = store
        .objects
        .get(key)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&rt.qualified(), &key.name))?;
    check_type(rt, &mut new, false)?;
    if let Some(want) = new["metadata"]["resourceVersion"].as_str()
        && !want.is_empty()
        && Some(want) != old["metadata"]["resourceVersion"].as_str()
    {
        return Err(ApiError::conflict(
            &rt.qualified(),
            &key.name,
            "the object has been modified; please apply your changes to the latest version and try again",
        ));
    }
    if let Some(n) = new["metadata"]["name"].as_str()
        && n != key.name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({})",
            key.name
        )));
    }
    let mut body = match sub {
        Some("status") => {
            let mut b = old.clone();
            match new.get("status") {
                Some(s) => b["status"] = s.clone(),
                None => {
                    if let Some(m) = b.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            b
        }
        _ => {
            let mut b = new;
            if rt.has_status {
                match old.get("status") {
                    Some(s) => b["status"] = s.clone(),
                    None => {
                        if let Some(m) = b.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
            }
            if !b["metadata"].is_object() {
                b["metadata"] = json!({});
            }
            check_namespace(store, rt, &key.namespace, &mut b, false)?;
            defaults::validate_metadata(rt, &b)?;
            for f in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "name",
            ] {
                match old["metadata"].get(f) {
                    Some(v) => b["metadata"][f] = v.clone(),
                    None => {
                        if let Some(md) = b["metadata"].as_object_mut() {
                            md.remove(f);
                        }
                    }
                }
            }
            b
        }
    };
    body["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
    crate::validate::drop_unknown_fields(rt, &mut body);
    if let Some(schema) = crate::schema::for_type(store, rt) {
        crate::schema::apply(&schema, rt, &mut body)?;
    }
    if sub.is_none() {
        crate::validate::decode(rt, &body)?;
        defaults::apply(rt, &mut body, Some(&old), store)?;
        crate::validate::object(rt, &body)?;
        crate::validate::api_approval(rt, Some(&old), &body)?;
        crate::validate::update(rt, &old, &body)?;
    }
    if spec_part(&old) != spec_part(&body) {
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
        body["metadata"]["generation"] = json!(generation);
    }
    match ownership {
        Ownership::Preset(entries) => managed::write(&mut body, &entries),
        Ownership::Update => {
            let mut entries = managed::read(&old);
            let before = managed::managed_view(&old, sub, rt.has_status);
            let after = managed::managed_view(&body, sub, rt.has_status);
            managed::record_update(
                &mut entries,
                &before,
                &after,
                &opts.manager,
                &rt.api_version(),
                sub,
                is_typed(rt),
            );
            managed::write(&mut body, &entries);
        }
        Ownership::Untracked => {
            body["metadata"]["managedFields"] = old["metadata"]["managedFields"].clone();
            if body["metadata"]["managedFields"].is_null()
                && let Some(md) = body["metadata"].as_object_mut()
            {
                md.remove("managedFields");
            }
        }
    }
    if body == old {
        return Ok(present(&old, rt));
    }
    crate::validate::stored_size(&body)?;
    if opts.dry_run {
        return Ok(present(&body, rt));
    }
    let deleting = !body["metadata"]["deletionTimestamp"].is_null();
    let no_finalizers = body["metadata"]["finalizers"]
        .as_array()
        .is_none_or(|f| f.is_empty());
    if deleting && no_finalizers {
        let gone = store.commit(key.clone(), body, EventType::Deleted);
        after_remove(store, rt, &gone);
        return Ok(present(&gone, rt));
    }
    let stored = store.commit(key.clone(), body, EventType::Modified);
    after_commit(store, rt, &stored);
    Ok(present(&stored, rt))
}

/// PUT
pub fn update(
    store: &mut Store,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    mut body: Value,
    sub: Option<&str>,
    opts: &WriteOpts,
) -> ApiResult<Value> {
    check_type(rt, &mut body, false)?;
    let key = ObjKey::new(rt, ns, name);
    write_existing(store, rt, &key, body, sub, opts, Ownership::Update)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    Merge,
    Json,
    Strategic,
}

/// PATCH with a merge, JSON or strategic merge patch.
#[allow(clippy::too_many_arguments)]
pub fn patch(
    store: &mut Store,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    kind: PatchKind,
    patch: &Value,
    sub: Option<&str>,
    opts: &WriteOpts,
) -> ApiResult<Value> {
    let key = ObjKey::new(rt, ns, name);
    let old = store
        .objects
        .get(&key)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&rt.qualified(), name))?;
    let mut target = old.clone();
    // A patch carries a resourceVersion precondition only when it names one itself.
    if let Some(md) = target["metadata"].as_object_mut() {
        md.remove("resourceVersion");
    }
    match kind {
        PatchKind::Merge => crate::merge::merge_patch(&mut target, patch),
        PatchKind::Strategic => {
            if rt.from_crd {
                return Err(ApiError::unsupported_media_type(
                    "application/strategic-merge-patch+json (not supported for custom resources)",
                ));
            }
            crate::merge::strategic_merge(&mut target, patch, true).map_err(|e| {
                ApiError::new(
                    422,
                    "Invalid",
                    format!("the server rejected our request due to an error in our request: {e}"),
                )
            })?
        }
        PatchKind::Json => {
            let ops: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
            json_patch::patch(&mut target, &ops).map_err(|e| {
                ApiError::new(
                    422,
                    "Invalid",
                    format!("the server rejected our request due to an error in our request: {e}"),
                )
            })?;
        }
    }
    write_existing(store, rt, &key, target, sub, opts, Ownership::Update)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    Background,
    Foreground,
    Orphan,
}

pub const FOREGROUND: &str = "foregroundDeletion";
pub const ORPHAN: &str = "orphan";

/// What a DELETE answered: the object still exists (finalizers pending) or is gone.
pub enum Deleted {
    Pending(Value),
    Gone(Value),
}

/// DELETE: marks the object for deletion (finalizers) or removes it.
#[allow(clippy::too_many_arguments)]
pub fn delete(
    store: &mut Store,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    propagation: Propagation,
    preconditions: &Value,
    dry_run: bool,
) -> ApiResult<Deleted> {
    let key = ObjKey::new(rt, ns, name);
    let old = store
        .objects
        .get(&key)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&rt.qualified(), name))?;
    if rt.group.is_empty()
        && rt.plural == "namespaces"
        && matches!(name, "default" | "kube-system" | "kube-public")
    {
        return Err(ApiError::forbidden(format!(
            "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
        )));
    }
    for f in ["uid", "resourceVersion"] {
        if let Some(want) = preconditions[f].as_str()
            && Some(want) != old["metadata"][f].as_str()
        {
            return Err(ApiError::conflict(
                &rt.qualified(),
                name,
                &format!(
                    "Precondition failed: {f}: {want}, {f} in object meta: {}",
                    old["metadata"][f].as_str().unwrap_or_default()
                ),
            ));
        }
    }
    let mut obj = old.clone();
    let mut finalizers: Vec<Value> = obj["metadata"]["finalizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let already = !obj["metadata"]["deletionTimestamp"].is_null();
    let extra = match propagation {
        Propagation::Foreground => Some(FOREGROUND),
        Propagation::Orphan => Some(ORPHAN),
        Propagation::Background => None,
    };
    if let Some(f) = extra
        && !finalizers.iter().any(|x| x == f)
    {
        finalizers.push(json!(f));
    }
    let namespace_pending = rt.group.is_empty() && rt.plural == "namespaces";
    if finalizers.is_empty() && !namespace_pending {
        if dry_run {
            return Ok(Deleted::Gone(present(&old, rt)));
        }
        let gone = store.commit(key, obj, EventType::Deleted);
        after_remove(store, rt, &gone);
        return Ok(Deleted::Gone(present(&gone, rt)));
    }
    if already && obj["metadata"]["finalizers"].as_array().map(Vec::len) == Some(finalizers.len()) {
        return Ok(Deleted::Pending(present(&old, rt)));
    }
    if !finalizers.is_empty() {
        obj["metadata"]["finalizers"] = json!(finalizers);
    }
    if !already {
        obj["metadata"]["deletionTimestamp"] = json!(now_rfc3339());
        obj["metadata"]["deletionGracePeriodSeconds"] = json!(0);
    }
    if namespace_pending {
        obj["status"]["phase"] = json!("Terminating");
    }
    if rt.plural == "customresourcedefinitions" {
        let _ = defaults::apply(rt, &mut obj, None, store);
    }
    if dry_run {
        return Ok(Deleted::Pending(present(&obj, rt)));
    }
    let stored = store.commit(key, obj, EventType::Modified);
    Ok(Deleted::Pending(present(&stored, rt)))
}

/// Side effects of an object leaving the store.
pub fn after_remove(store: &mut Store, rt: &ResourceType, obj: &Value) {
    if rt.group == "apiextensions.k8s.io"
        && rt.plural == "customresourcedefinitions"
        && let Some((group, plural, _)) = types_from_crd(obj)
    {
        store.registry.unregister_crd(&group, &plural);
    }
}

/// Removes one finalizer (used by the simulated controllers).
pub fn remove_finalizer(
    store: &mut Store,
    rt: &ResourceType,
    key: &ObjKey,
    finalizer: &str,
) -> ApiResult<()> {
    let Some(obj) = store.objects.get(key) else {
        return Ok(());
    };
    let mut obj = obj.clone();
    if let Some(f) = obj["metadata"]["finalizers"].as_array_mut() {
        f.retain(|x| x != finalizer);
    }
    if obj["metadata"]["finalizers"]
        .as_array()
        .is_some_and(Vec::is_empty)
        && let Some(md) = obj["metadata"].as_object_mut()
    {
        md.remove("finalizers");
    }
    let opts = WriteOpts {
        manager: "kube-sim".into(),
        dry_run: false,
    };
    write_existing(store, rt, key, obj, None, &opts, Ownership::Untracked).map(|_| ())
}
