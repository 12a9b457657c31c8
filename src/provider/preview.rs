//! `kudo_instance.preview`: what the pending apply will do to the cluster's objects,
//! computed at plan time from a server-side dry-run of the plan the apply will run.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value as Json;
use tfplugin::{Diagnostic, Type, Value};

use kudo_engine::cluster::{Cluster, ObjectRef};
use kudo_engine::engine::{self, PreviewAction, RunRequest};
use kudo_package::Package;

pub const ATTR: &str = "preview";

pub fn preview_type() -> Type {
    Type::object([
        ("create", Type::list(Type::String)),
        ("update", Type::list(Type::String)),
        ("delete", Type::list(Type::String)),
    ])
}

/// How objects are named in the preview, like `kubectl` prints them.
fn label(r: &ObjectRef) -> String {
    match &r.namespace {
        Some(ns) => format!("{} {ns}/{}", r.kind, r.name),
        None => format!("{} {}", r.kind, r.name),
    }
}

/// The attribute's value; also what an apply records when the plan had none to show.
pub fn value(create: &[String], update: &[String], delete: &[String]) -> Value {
    let list = |items: &[String]| Value::list(items.iter().map(Value::string));
    Value::object([
        ("create", list(create)),
        ("update", list(update)),
        ("delete", list(delete)),
    ])
}

/// True when applying `desired` would leave `live` as it is. Metadata is left out:
/// KUDO's plan/phase/step annotations change with every plan that touches an object,
/// which is not a change worth showing.
fn unchanged(desired: &Json, live: &Json) -> bool {
    fn subset(want: &Json, have: &Json) -> bool {
        match (want, have) {
            (Json::Object(w), Json::Object(h)) => w
                .iter()
                .all(|(k, v)| h.get(k).is_some_and(|hv| subset(v, hv)) || v.is_null()),
            (Json::Array(w), Json::Array(h)) => {
                w.len() == h.len() && w.iter().zip(h).all(|(a, b)| subset(a, b))
            }
            _ => want == have,
        }
    }
    match (desired.as_object(), live.as_object()) {
        (Some(d), Some(l)) => d
            .iter()
            .filter(|(k, _)| k.as_str() != "metadata" && k.as_str() != "status")
            .all(|(k, v)| l.get(k).is_some_and(|lv| subset(v, lv))),
        _ => false,
    }
}

/// What running `plan` with `parameters` (sensitive ones included; only object names
/// come out) would create, update and delete. `Err` carries a warning: the preview is
/// then unknown, and the apply reports real problems itself.
pub async fn compute(
    cluster: &Cluster,
    pkg: &Package,
    instance: &str,
    namespace: &str,
    parameters: &BTreeMap<String, String>,
    plan: &str,
    previous: &[ObjectRef],
) -> Result<Value, Diagnostic> {
    let warn = |e: &dyn std::fmt::Display| {
        Diagnostic::warning(
            "No preview",
            format!(
                "The dry-run of plan {plan:?} failed, so `preview` is unknown until the apply: {e}"
            ),
        )
    };
    let request = RunRequest {
        package: pkg,
        instance,
        namespace,
        parameters,
        plan,
        previous_inventory: previous,
    };
    let planned = engine::preview_plan(cluster, request)
        .await
        .map_err(|e| warn(&e))?;
    let (mut create, mut update, mut delete) = (Vec::new(), Vec::new(), Vec::new());
    let mut applied = BTreeSet::new();
    for p in &planned {
        if !applied.insert(p.object.clone()) {
            continue;
        }
        match cluster.get(&p.object).await.map_err(|e| warn(&e))? {
            None => create.push(label(&p.object)),
            Some(live) if !unchanged(&p.manifest, &live) => update.push(label(&p.object)),
            Some(_) => {}
        }
    }
    // Delete tasks and disabled toggles of this plan, then what the run will prune:
    // earlier objects that no plan renders any more.
    let offline = |plan_name: &str| {
        engine::render_plan(pkg, instance, namespace, parameters, plan_name).map_err(|e| warn(&e))
    };
    let mut gone: BTreeSet<ObjectRef> = BTreeSet::new();
    for o in offline(plan)? {
        if o.action == PreviewAction::Delete
            && let Ok(r) = ObjectRef::from_object(&o.object)
        {
            gone.insert(with_namespace(cluster, r, namespace).await);
        }
    }
    let mut rendered: BTreeSet<ObjectRef> = BTreeSet::new();
    for plan_name in pkg.operator.plans.keys() {
        for o in offline(plan_name)? {
            if o.action == PreviewAction::Apply
                && let Ok(r) = ObjectRef::from_object(&o.object)
            {
                rendered.insert(with_namespace(cluster, r, namespace).await);
            }
        }
    }
    // Dependency Instances are not rendered from templates; their own runs decide.
    gone.extend(
        previous
            .iter()
            .filter(|r| r.kind != "Instance" && !rendered.contains(*r))
            .filter(|r| !applied.contains(*r))
            .cloned(),
    );
    for r in gone {
        if !applied.contains(&r) && cluster.get(&r).await.map_err(|e| warn(&e))?.is_some() {
            delete.push(label(&r));
        }
    }
    Ok(value(&create, &update, &delete))
}

/// Rendered objects without a namespace land in the instance's, unless their kind is
/// cluster-scoped (the inventory records those without one).
async fn with_namespace(cluster: &Cluster, mut r: ObjectRef, namespace: &str) -> ObjectRef {
    if r.namespace.is_none()
        && cluster
            .is_namespaced(&r.api_version, &r.kind)
            .await
            .unwrap_or(true)
    {
        r.namespace = Some(namespace.to_string());
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_defaults_are_not_changes_but_new_values_are() {
        let desired = json!({"kind": "ConfigMap", "metadata": {"annotations": {"kudo.dev/plan": "update"}}, "data": {"A": "1"}});
        let live = json!({"kind": "ConfigMap", "metadata": {"annotations": {"kudo.dev/plan": "deploy"}, "uid": "u"}, "data": {"A": "1"}});
        assert!(unchanged(&desired, &live));
        let live2 = json!({"kind": "ConfigMap", "metadata": {}, "data": {"A": "2"}});
        assert!(!unchanged(&desired, &live2));
        let d = json!({"spec": {"containers": [{"name": "c"}]}});
        let l =
            json!({"spec": {"containers": [{"name": "c", "terminationMessagePath": "/dev/x"}]}});
        assert!(unchanged(&d, &l));
    }
}
