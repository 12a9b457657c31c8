//! The engine's typed answers as `kudo_instance` attribute values, and the prior
//! state's values read back into the engine's types.

use std::collections::BTreeMap;

use tfplugin::Value;

use kudo_plan::{ChildView, Shown};

use crate::provider::sensitive::REDACTED;

/// A value the plan shows: sensitive ones as [`REDACTED`], seed-dependent ones unknown.
fn shown(v: &Shown) -> Value {
    match v {
        Shown::Value(s) => Value::string(s),
        Shown::Sensitive => Value::string(REDACTED),
        Shown::DependsOnSeed => Value::Unknown,
    }
}

/// `outputs`: unknown until known.
pub(super) fn outputs(outputs: Option<&BTreeMap<String, Shown>>) -> Value {
    match outputs {
        Some(o) => Value::map(o.iter().map(|(k, v)| (k.clone(), shown(v)))),
        None => Value::Unknown,
    }
}

/// A `map(string)` value of known strings (`outputs` after an apply, parameters).
pub(super) fn string_map(m: &BTreeMap<String, String>) -> Value {
    Value::string_map(m.iter().map(|(k, v)| (k.clone(), v.clone())))
}

/// `children`: unknown until known.
pub(super) fn children(children: Option<&[ChildView]>) -> Value {
    let Some(children) = children else {
        return Value::Unknown;
    };
    Value::list(children.iter().map(|c| {
        Value::object([
            ("name", Value::string(&c.name)),
            ("operator", Value::string(&c.operator)),
            ("operator_version", Value::string(&c.operator_version)),
            ("enabled", Value::bool(c.enabled)),
            (
                "parameters",
                Value::map(c.parameters.iter().map(|(k, v)| (k.clone(), shown(v)))),
            ),
            ("parent", Value::string(&c.parent)),
        ])
    }))
}

/// The prior state's `children`, as the engine compares them (`None` when the state
/// does not say).
pub(super) fn prior_children(v: &Value) -> Option<Vec<ChildView>> {
    if !v.is_known() || v.is_null() {
        return None;
    }
    let text = |c: &Value, name: &str| c.get(name).as_str().unwrap_or_default().to_string();
    Some(
        v.as_slice()
            .unwrap_or_default()
            .iter()
            .map(|c| ChildView {
                name: text(c, "name"),
                operator: text(c, "operator"),
                operator_version: text(c, "operator_version"),
                enabled: c.get("enabled").as_bool().unwrap_or(true),
                parameters: c
                    .get("parameters")
                    .to_string_map()
                    .ok()
                    .flatten()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| {
                        let shown = match v == REDACTED {
                            true => Shown::Sensitive,
                            false => Shown::Value(v),
                        };
                        (k, shown)
                    })
                    .collect(),
                parent: text(c, "parent"),
            })
            .collect(),
    )
}
