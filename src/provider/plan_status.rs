//! `kudo_instance.plan_status`: KUDO's plan -> phase -> step status tree of the last
//! run, so a failed or slow apply can be understood from `terraform show`.

use std::collections::BTreeMap;

use tfplugin::{Type, Value};

use kudo_plan::{ExecutionStatus, PlanStatus};

fn status_type(children: Option<(&str, Type)>) -> Type {
    let mut fields = vec![
        ("name", Type::String),
        ("status", Type::String),
        ("message", Type::String),
    ];
    fields.extend(children);
    Type::object(fields)
}

/// The attribute's type.
pub fn plan_status_type() -> Type {
    let step = status_type(None);
    let phase = status_type(Some(("steps", Type::list(step))));
    let mut plan = vec![
        ("name", Type::String),
        ("status", Type::String),
        ("message", Type::String),
        ("last_updated", Type::String),
    ];
    plan.push(("phases", Type::list(phase)));
    Type::object(plan)
}

/// `plan_steps`' element type: one instance's plan, phases and steps, with strategies.
pub fn plan_steps_type() -> Type {
    let phase = Type::object([
        ("name", Type::String),
        ("strategy", Type::String),
        ("steps", Type::list(Type::String)),
    ]);
    Type::object([
        ("instance", Type::String),
        ("plan", Type::String),
        ("strategy", Type::String),
        ("phases", Type::list(phase)),
    ])
}

/// `plan_steps` of the planned runs, in run order; unknown when what the dependency
/// instances run is not known yet (empty `outlines`).
pub fn plan_steps(outlines: &[kudo_plan::PlanOutline]) -> Value {
    if outlines.is_empty() {
        return Value::Unknown;
    }
    Value::list(outlines.iter().map(|o| {
        Value::object([
            ("instance", Value::string(&o.instance)),
            ("plan", Value::string(&o.plan)),
            ("strategy", Value::string(o.strategy.as_str())),
            (
                "phases",
                Value::list(o.phases.iter().map(|p| {
                    Value::object([
                        ("name", Value::string(&p.name)),
                        ("strategy", Value::string(p.strategy.as_str())),
                        ("steps", Value::list(p.steps.iter().map(Value::string))),
                    ])
                })),
            ),
        ])
    }))
}

/// The attribute's value for a plan's status; null when the Instance has none.
/// Messages quote rendered text and rejected values: every `secret` value in them is
/// redacted, as in diagnostics.
pub fn value(status: Option<&PlanStatus>, secret: &BTreeMap<String, String>) -> Value {
    let Some(plan) = status else {
        return Value::Null;
    };
    let entry = |name: &str, status: ExecutionStatus, message: &str| {
        vec![
            ("name", Value::string(name)),
            ("status", Value::string(status.as_str())),
            (
                "message",
                Value::string(super::sensitive::redact(message, secret)),
            ),
        ]
    };
    let phases = plan.phases.iter().map(|ph| {
        let steps = ph
            .steps
            .iter()
            .map(|st| Value::object(entry(&st.name, st.status, &st.message)));
        let mut fields = entry(&ph.name, ph.status, &ph.message);
        fields.push(("steps", Value::list(steps)));
        Value::object(fields)
    });
    let mut fields = entry(&plan.name, plan.status, &plan.message);
    fields.push((
        "last_updated",
        Value::opt_string(plan.last_updated_timestamp.clone()),
    ));
    fields.push(("phases", Value::list(phases)));
    Value::object(fields)
}
