//! `kudo_instance.preview`: the engine's plan of the pending apply for the instance and
//! every dependency instance below it ([`kudo_engine::engine::plan_change`]) as a
//! Terraform value. No decision is made here.

use tfplugin::{Diagnostic, Type, Value};

use kudo_engine::cluster::ObjectRef;
use kudo_engine::engine::{Changes, DependencyAction, PlanNote, TreePlan};

/// `create`, `update` and `delete` are maps keyed by object, not lists: Terraform's
/// plan renderer matches list elements pairwise, which is quadratic in their number
/// (seconds and a gigabyte at 10,000 objects on every no-change plan, which keeps the
/// last apply's preview), and map entries by key. Keys are `kudo_instance.objects`'
/// (one spelling of an object's identity everywhere).
fn changes_type() -> [(&'static str, Type); 3] {
    [
        ("create", Type::map(Type::String)),
        ("update", Type::map(Type::String)),
        ("delete", Type::map(Type::String)),
    ]
}

/// A dependency instance's entry of `preview.dependencies`.
pub fn dependency_type() -> Type {
    let mut fields = vec![
        ("action", Type::String),
        ("plan", Type::String),
        ("reason", Type::String),
        ("parent", Type::String),
    ];
    fields.extend(changes_type());
    Type::object(fields)
}

pub fn preview_type() -> Type {
    let mut fields = changes_type().to_vec();
    fields.push(("dependencies", Type::map(dependency_type())));
    Type::object(fields)
}

/// The attribute's value for the whole tree's plan: unknown when the instance's own
/// changes are (a dependency instance's unknown changes leave only its entry unknown).
pub fn of_tree(tree: &TreePlan) -> Value {
    let Some(changes) = &tree.instance.changes else {
        return Value::Unknown;
    };
    let mut fields = change_fields(Some(changes));
    let dependencies = tree.dependencies.iter().map(|d| {
        let (action, plan, reason) = match &d.action {
            DependencyAction::Create { plan } => ("create", Some(plan.as_str()), ""),
            DependencyAction::Run { plan, reason } => ("run", Some(plan.as_str()), reason.as_str()),
            DependencyAction::Leave { reason } => ("leave", None, reason.as_str()),
            DependencyAction::Remove => ("remove", None, ""),
        };
        let mut entry = vec![
            ("action", Value::string(action)),
            ("plan", plan.map_or(Value::Null, Value::string)),
            ("reason", Value::string(reason)),
            ("parent", Value::string(&d.parent)),
        ];
        let none = Changes::default();
        let changes = match &d.plan {
            Some(p) => p.changes.as_ref(),
            None => Some(&none),
        };
        entry.extend(change_fields(changes));
        (d.instance.clone(), Value::object(entry))
    });
    fields.push(("dependencies", Value::map(dependencies)));
    Value::object(fields)
}

fn change_fields(changes: Option<&Changes>) -> Vec<(&'static str, Value)> {
    let part = |refs: Option<&Vec<ObjectRef>>| refs.map_or(Value::Unknown, |r| entries(r));
    vec![
        ("create", part(changes.map(|c| &c.create))),
        ("update", part(changes.map(|c| &c.update))),
        ("delete", part(changes.map(|c| &c.delete))),
    ]
}

/// One entry per object, keyed as `kudo_instance.objects` is ([`qualified_label`]) and
/// holding the apiVersion it is applied (or was recorded) as.
fn entries(refs: &[ObjectRef]) -> Value {
    Value::map(
        refs.iter()
            .map(|r| (r.qualified_label(), Value::string(r.api_version.clone()))),
    )
}

/// A plan note as a Terraform warning.
pub fn warning(note: &PlanNote) -> Diagnostic {
    Diagnostic::warning(note.summary.clone(), note.detail.clone())
}
