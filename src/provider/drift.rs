//! Field-level drift settings and their Terraform shape: `drift` and `drift_ignore` on
//! the provider and on `kudo_instance`, and the computed `drifted_fields`.
//!
//! The comparison itself is the engine's (`kudo_engine::engine::drift`); this module
//! only translates settings and results, and redacts what must not be shown.

use std::collections::BTreeMap;

use tfplugin::{Attr, AttributePath, Block, Diagnostic, NestedBlock, NestingMode, Type, Value};

use kudo_engine::engine::FieldDrift;

use super::sensitive::REDACTED;

pub use kudo_engine::engine::{DriftMode, DriftSettings};

tfplugin::model! {
    /// A `drift_ignore` block.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct IgnoreBlock {
        pub kind: Attr<String>,
        pub path: Attr<String>,
    }
}

/// Reads `drift` and `drift_ignore`; errors name the attribute and the choices.
pub fn parse(
    mode: &Attr<String>,
    ignore: &Attr<Vec<IgnoreBlock>>,
) -> Result<DriftSettings, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let mode = match mode.known().map(String::as_str) {
        None => None,
        Some(text) => match DriftMode::parse(text) {
            Some(m) => Some(m),
            None => {
                diags.push(
                    Diagnostic::error(
                        "Invalid drift",
                        format!(
                            "{text:?} is not a choice; set `drift` to \"correct\" (plan an update that takes changed fields back), \"warn\" (a warning, no change) or \"ignore\", or leave it unset for \"correct\"."
                        ),
                    )
                    .with_attribute(AttributePath::attribute("drift")),
                );
                None
            }
        },
    };
    let mut settings = DriftSettings::default();
    settings.mode = mode;
    for (i, block) in ignore
        .known()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        // Unknown while validating: checked again when known.
        if block.path.is_unknown() {
            continue;
        }
        let kind = block.kind.known().map(String::as_str);
        match settings.ignore_path(kind, block.path.as_deref().unwrap_or_default()) {
            Ok(()) => {}
            Err(e) => diags.push(
                Diagnostic::error("Invalid drift_ignore path", e.to_string()).with_attribute(
                    AttributePath::attribute("drift_ignore")
                        .index(i as i64)
                        .attr("path"),
                ),
            ),
        }
    }
    match diags.is_empty() {
        true => Ok(settings),
        false => Err(diags),
    }
}

/// The `drift_ignore` block of the provider and of `kudo_instance`.
pub fn ignore_block() -> NestedBlock {
    NestedBlock::new(
        "drift_ignore",
        NestingMode::List,
        Block::new()
            .description("A field whose out-of-band changes are not drift, such as `spec.replicas` of a Deployment an autoscaler scales.")
            .attribute(tfplugin::Attribute::new("kind", Type::String).optional().description("The kind the rule is for (`Deployment`); every kind when unset."))
            .attribute(tfplugin::Attribute::new("path", Type::String).required().description("The field, dotted from the object's top: `spec.replicas`, `metadata.labels.team`, `spec.template.spec.containers[*].image` (`[*]` stands for any list item). The field and everything below it are ignored.")),
    )
}

/// The element type of `drifted_fields`.
pub fn drifted_field_type() -> Type {
    Type::object([
        ("instance", Type::String),
        ("object", Type::String),
        ("field", Type::String),
        ("applied", Type::String),
        ("live", Type::String),
        ("diff", Type::String),
    ])
}

/// `drifted_fields` for `drift` (by instance: the resource's own, or a dependency
/// instance below it). Values are JSON (strings unquoted); every value of a Secret, and
/// every value that contains a sensitive parameter's value, is redacted. Objects are
/// keyed as in `objects` and `preview`. When both values are strings and either has
/// several lines (a script in a ConfigMap), the entry holds their line diff in `diff`
/// instead of the two values: a plan then shows the changed lines, once.
pub fn drifted_fields(drift: &[(String, FieldDrift)], secret: &BTreeMap<String, String>) -> Value {
    let show = |d: &FieldDrift, v: &Option<serde_json::Value>| -> Option<String> {
        let text = match v.as_ref()? {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match kudo_plan::change::object_reveals(&d.object.kind, &text, secret) {
            true => Some(REDACTED.to_string()),
            false => Some(text),
        }
    };
    Value::list(drift.iter().map(|(instance, d)| {
        let (applied, live) = (show(d, &d.applied), show(d, &d.live));
        let multi_line = |v: &Option<serde_json::Value>| {
            matches!(v, Some(serde_json::Value::String(s)) if s.contains('\n'))
        };
        let strings = |v: &Option<serde_json::Value>| {
            matches!(v, None | Some(serde_json::Value::String(_)))
        };
        let as_diff = (multi_line(&d.applied) || multi_line(&d.live))
            && strings(&d.applied)
            && strings(&d.live)
            && applied.as_deref() != Some(REDACTED)
            && live.as_deref() != Some(REDACTED);
        let (applied, live, diff) = match as_diff {
            true => {
                let diff = super::line_diff::unified(
                    applied.as_deref().unwrap_or_default(),
                    live.as_deref().unwrap_or_default(),
                );
                (Value::Null, Value::Null, Value::string(diff))
            }
            false => (
                Value::opt_string(applied),
                Value::opt_string(live),
                Value::Null,
            ),
        };
        Value::object([
            ("instance", Value::string(instance)),
            (
                "object",
                Value::string(d.object.qualified_label()),
            ),
            ("field", Value::string(d.path.clone())),
            ("applied", applied),
            ("live", live),
            ("diff", diff),
        ])
    }))
}

/// One line per drifted field, for warnings: `ConfigMap ns/x data.greeting: "hi" -> "changed"`.
pub fn describe(fields: &Value) -> String {
    let Value::List(items) = fields else {
        return String::new();
    };
    items
        .iter()
        .map(|f| {
            let text = |name: &str| match f.get(name).as_str() {
                Some(s) => format!("{s:?}"),
                None => "(absent)".to_string(),
            };
            let what = format!(
                "- {} (instance {}) {}",
                f.get("object").as_str().unwrap_or_default(),
                f.get("instance").as_str().unwrap_or_default(),
                f.get("field").as_str().unwrap_or_default(),
            );
            match f.get("diff").as_str() {
                // Applied (`-`) -> in the cluster (`+`), the changed lines only.
                Some(diff) => format!("{what}, applied (-) and in the cluster (+):\n{diff}"),
                None => format!(
                    "{what}: {} in the cluster, {} applied",
                    text("live"),
                    text("applied")
                ),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
