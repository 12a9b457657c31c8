//! Template data: KUDO's variables as gotmpl values.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::Value;

use crate::Vars;

/// Callers render every template of a package with the same variables; converting
/// (and later freeing) a few hundred parameter strings per template would dominate the
/// render time, so the last conversion is kept per thread and reused when equal.
pub(crate) fn cached_vars_value(vars: &Vars) -> Value {
    thread_local! {
        static LAST: RefCell<Option<(Vars, Value)>> = const { RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((cached, value)) = last.as_ref()
            && cached == vars
        {
            return value.clone();
        }
        let value = vars_to_value(vars);
        *last = Some((vars.clone(), value.clone()));
        value
    })
}

pub(crate) fn vars_to_value(vars: &Vars) -> Value {
    let params: BTreeMap<Arc<str>, Value> = vars
        .params
        .iter()
        .map(|(k, v)| (Arc::from(k.as_str()), json_to_value(v)))
        .collect();
    let pipes: BTreeMap<Arc<str>, Value> = vars
        .pipes
        .iter()
        .map(|(k, v)| (Arc::from(k.as_str()), Value::String(Arc::from(v.as_str()))))
        .collect();
    let mut root: BTreeMap<Arc<str>, Value> = BTreeMap::new();
    let s = |v: &str| Value::String(Arc::from(v));
    root.insert("OperatorName".into(), s(&vars.operator_name));
    root.insert("Name".into(), s(&vars.name));
    root.insert("Namespace".into(), s(&vars.namespace));
    root.insert("OperatorVersion".into(), s(&vars.operator_version));
    root.insert("AppVersion".into(), s(&vars.app_version));
    root.insert("PlanName".into(), s(&vars.plan_name));
    root.insert("PhaseName".into(), s(&vars.phase_name));
    root.insert("StepName".into(), s(&vars.step_name));
    root.insert("Params".into(), Value::Map(Arc::new(params)));
    root.insert("Pipes".into(), Value::Map(Arc::new(pipes)));
    Value::Map(Arc::new(root))
}

/// KUDO decodes array/map parameters with encoding/json-like rules: every number is a
/// float64, so integers here become floats too.
pub(crate) fn json_to_value(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Value::String(Arc::from(s.as_str())),
        serde_json::Value::Array(a) => Value::List(a.iter().map(json_to_value).collect()),
        serde_json::Value::Object(o) => Value::Map(Arc::new(
            o.iter()
                .map(|(k, v)| (Arc::from(k.as_str()), json_to_value(v)))
                .collect(),
        )),
    }
}
