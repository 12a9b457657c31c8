//! `kudo_instance.summary`: the engine's plan of the pending apply
//! ([`kudo_engine::engine::TreePlan`]: which KUDO plan each instance runs, its phases
//! and steps, what it creates, updates and deletes) as a few lines a reviewer reads
//! first. A view of the same answer as `preview` and `plan_steps`; nothing is decided
//! here.

use std::collections::{HashMap, HashSet};

use kudo_engine::cluster::ObjectRef;
use kudo_engine::engine::{Changes, DependencyAction, TreePlan};
use kudo_plan::PlanOutline;
use tfplugin::Value;

/// The attribute's value for `instance`'s plan `tree`; `recreated` are its own managed
/// objects a refresh found deleted, which the apply creates again. Unknown while what
/// the dependency instances run is (as `plan_steps` is).
pub fn of_tree(
    instance: &str,
    run: u64,
    tree: &TreePlan,
    recreated: &[ObjectRef],
    drifted_fields: &Value,
) -> Value {
    if tree.outlines.is_empty() {
        return Value::Unknown;
    }
    let outline = |name: &str| tree.outlines.iter().find(|o| o.instance == name);
    let mut lines = Vec::new();
    run_lines(
        &mut lines,
        instance.to_string(),
        Some(run),
        outline(instance),
        tree.instance.changes.as_ref(),
    );
    // Which objects each instance's run applies (`None`: not known before the apply).
    let own = tree.instance.changes.as_ref().map(applied_keys);
    for key in recreated.iter().map(ObjectRef::qualified_label) {
        if own.as_ref().is_some_and(|applied| applied.contains(&key)) {
            lines.push(format!("  {key}: deleted, will be re-created"));
        }
    }
    let mut applies: HashMap<&str, Option<HashSet<String>>> = HashMap::new();
    applies.insert(instance, own);
    for d in &tree.dependencies {
        let changes = d.plan.as_ref().and_then(|p| p.changes.as_ref());
        let applied = match &d.action {
            DependencyAction::Create { .. } | DependencyAction::Run { .. } => {
                changes.map(applied_keys)
            }
            DependencyAction::Leave { .. } | DependencyAction::Remove => Some(HashSet::new()),
        };
        applies.insert(&d.instance, applied);
    }
    lines.extend(drift_lines(instance, drifted_fields, &applies));
    for d in &tree.dependencies {
        let who = format!("{} (dependency instance of {})", d.instance, d.parent);
        let changes = d.plan.as_ref().and_then(|p| p.changes.as_ref());
        match &d.action {
            DependencyAction::Create { .. } | DependencyAction::Run { .. } => {
                run_lines(&mut lines, who, None, outline(&d.instance), changes);
            }
            DependencyAction::Leave { reason } if reason.is_empty() => {
                lines.push(format!("{who}: left as it is"));
            }
            DependencyAction::Leave { reason } => {
                lines.push(format!("{who}: left as it is ({reason})"));
            }
            DependencyAction::Remove => {
                lines.push(format!("{who}: removed, {}", counts(changes)));
            }
        }
    }
    let mut text = lines.join("\n");
    text.push('\n');
    Value::string(text)
}

/// `<who> runs plan <plan> (<strategy>): <counts>` and a line per phase.
/// `run`: the top instance's run number (see `PrivateState::runs`), which makes every
/// plan's summary differ from the last apply's, so Terraform shows it whole.
fn run_lines(
    lines: &mut Vec<String>,
    who: String,
    run: Option<u64>,
    outline: Option<&PlanOutline>,
    changes: Option<&Changes>,
) {
    let number = run.map(|n| format!(", its run #{n}")).unwrap_or_default();
    let Some(o) = outline else {
        lines.push(format!("{who}{number}: {}", counts(changes)));
        return;
    };
    lines.push(format!(
        "{who} runs plan {} ({}){number}: {}",
        o.plan,
        o.strategy.as_str(),
        counts(changes)
    ));
    for p in &o.phases {
        lines.push(format!(
            "  phase {} ({}): {}",
            p.name,
            p.strategy.as_str(),
            p.steps.join(", ")
        ));
    }
}

fn counts(changes: Option<&Changes>) -> String {
    match changes {
        Some(c) => format!(
            "{} to create, {} to update, {} to delete",
            c.create.len(),
            c.update.len(),
            c.delete.len()
        ),
        None => "objects known at apply".to_string(),
    }
}

/// The keys of the objects a run creates or updates (applies).
fn applied_keys(changes: &Changes) -> HashSet<String> {
    changes
        .create
        .iter()
        .chain(&changes.update)
        .map(ObjectRef::qualified_label)
        .collect()
}

/// A line per field the last refresh found changed outside Terraform, saying whether
/// this run takes it back (it applies the object again), with the line diff of a
/// multi-line value below it.
fn drift_lines(
    instance: &str,
    drifted_fields: &Value,
    applies: &HashMap<&str, Option<HashSet<String>>>,
) -> Vec<String> {
    let mut lines = Vec::new();
    for f in drifted_fields.as_slice().unwrap_or_default() {
        let text = |name: &str| f.get(name).as_str().unwrap_or_default().to_string();
        let owner_name = match text("instance") {
            i if i.is_empty() => instance.to_string(),
            i => i,
        };
        let owner = match owner_name == instance {
            true => String::new(),
            false => format!(" (instance {owner_name})"),
        };
        let object = text("object");
        let fate = match applies.get(owner_name.as_str()) {
            Some(Some(keys)) if !keys.contains(&object) => "left as it is by this plan",
            Some(None) => "taken back if the plan applies it",
            _ => "taken back",
        };
        let what = format!(
            "  {object} {}{owner} changed outside Terraform, {fate}",
            text("field")
        );
        match f.get("diff").as_str() {
            Some(diff) => {
                // The first hunk's header joins the field's line: one line fewer.
                let mut rest = diff.lines().peekable();
                let at = match rest.peek() {
                    Some(h) if h.starts_with("@@ ") => rest.next().map(|h| format!(" {h}")),
                    _ => None,
                };
                lines.push(format!(
                    "{what} (- applied, + in the cluster){}:",
                    at.unwrap_or_default()
                ));
                lines.extend(rest.map(|l| format!("    {l}")));
            }
            None => {
                let value = |name: &str| match f.get(name).as_str() {
                    Some(s) => format!("{s:?}"),
                    None => "(absent)".to_string(),
                };
                lines.push(format!(
                    "{what}: {} in the cluster, {} applied",
                    value("live"),
                    value("applied")
                ));
            }
        }
    }
    lines
}
