//! `kudo_instance.preview`: the engine's plan of the pending apply
//! ([`kudo_engine::engine::plan_instance`]) as a Terraform value and diagnostics. No
//! decision is made here.

use tfplugin::{Diagnostic, Type, Value};

use kudo_engine::cluster::ObjectRef;
use kudo_engine::engine::{Changes, InstancePlan, PlanNote, Source};

pub use kudo_engine::engine::label;

pub fn preview_type() -> Type {
    Type::object([
        ("create", Type::list(Type::String)),
        ("update", Type::list(Type::String)),
        ("delete", Type::list(Type::String)),
    ])
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

/// The attribute's value for the engine's changes (unknown when they are).
pub fn of_changes(changes: Option<&Changes>) -> Value {
    let Some(c) = changes else {
        return Value::Unknown;
    };
    let labels = |refs: &[ObjectRef]| refs.iter().map(label).collect::<Vec<_>>();
    value(&labels(&c.create), &labels(&c.update), &labels(&c.delete))
}

/// A plan note as a Terraform warning.
pub fn warning(note: &PlanNote) -> Diagnostic {
    Diagnostic::warning(note.summary.clone(), note.detail.clone())
}

/// A preview and what the plan knows of the objects managed after the apply.
pub struct Computed {
    /// The `preview` attribute's value (unknown when webhooks decide).
    pub value: Value,
    /// Plan-time warnings: translated API versions, why the preview is unknown.
    pub warnings: Vec<Diagnostic>,
    /// Every object the instance manages after the apply with where its content comes
    /// from (see `manifests`); `None` when the preview is unknown.
    pub managed: Option<Vec<(ObjectRef, Source)>>,
}

impl Computed {
    pub fn unknown(warnings: Vec<Diagnostic>) -> Computed {
        Computed {
            value: Value::Unknown,
            warnings,
            managed: None,
        }
    }

    pub fn of_plan(plan: InstancePlan) -> Computed {
        Computed {
            value: of_changes(plan.changes.as_ref()),
            warnings: plan.notes.iter().map(warning).collect(),
            managed: plan.managed,
        }
    }
}
