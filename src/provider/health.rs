//! `health` and `health_rule`, on the provider and on `kudo_instance`: which rules say
//! an applied object is done ([`kudo_engine::engine::HealthSettings`]). `kudo` (the
//! default) is KUDO 0.19's behaviour; `ready` waits for what kstatus-style tools wait
//! for, plus the user's CEL rules per group and kind.

use tfplugin::{Attr, AttributePath, Block, Diagnostic, NestedBlock, NestingMode, Type};

pub use kudo_engine::engine::HealthSettings;

use super::diag::invalid_choice;

/// The `health_rule` block of the provider and of `kudo_instance`.
pub fn rule_block() -> NestedBlock {
    let attr = |name: &str| tfplugin::Attribute::new(name, Type::String);
    NestedBlock::new(
        "health_rule",
        NestingMode::List,
        Block::new()
            .description("With `health = \"ready\"`: a CEL expression over the object (bound as `self`) that must be true before objects of one kind count as healthy, instead of the built-in rules for that kind.")
            .attribute(attr("group").optional().description("API group of the kind, for example `apps` or `kafka.strimzi.io`; unset or empty for the core group (`v1` kinds)."))
            .attribute(attr("kind").required().description("The kind the rule is for, for example `DaemonSet` or `Kafka`."))
            .attribute(attr("expression").required().description("A CEL expression that returns a bool, for example `self.status.phase == 'Running'` or `self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')`. An expression that fails to evaluate (a field not there yet) counts as not healthy yet.")),
    )
}

tfplugin::model! {
    /// A `health_rule` block as configured.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct RuleBlock {
        pub group: Attr<String>,
        pub kind: Attr<String>,
        pub expression: Attr<String>,
    }
}

/// Reads `health` and `health_rule`, compiling every expression so that a mistake fails
/// the plan naming the block. Unknown values (only known at apply) count as unset.
pub fn parse(
    health: &Attr<String>,
    rules: &Attr<Vec<RuleBlock>>,
) -> Result<HealthSettings, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let ready = match health.as_deref() {
        None => None,
        Some(text) => HealthSettings::parse_mode(text).or_else(|| {
            diags.push(invalid_choice(
                "health",
                text,
                &HealthSettings::VALUES,
                "kudo",
            ));
            None
        }),
    };
    let mut out = Vec::new();
    for (i, block) in rules
        .known()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let (Some(kind), Some(expression)) = (block.kind.known(), block.expression.known()) else {
            continue;
        };
        let group = block.group.as_deref().unwrap_or_default();
        let rule = match HealthSettings::rule(group, kind, expression) {
            Ok(rule) => rule,
            Err(e) => {
                diags.push(
                    Diagnostic::error(
                        "Invalid health_rule expression",
                        format!("{e}. Write a CEL expression over the object, bound as `self`, that returns a bool, for example `self.status.phase == 'Running'`."),
                    )
                    .with_attribute(
                        AttributePath::attribute("health_rule")
                            .index(i as i64)
                            .attr("expression"),
                    ),
                );
                continue;
            }
        };
        out.push(rule);
    }
    match diags.is_empty() {
        true => Ok(HealthSettings { ready, rules: out }),
        false => Err(diags),
    }
}

/// The warning for `health_rule` blocks that KUDO's rules leave unused.
pub fn unused_rules(own: &HealthSettings, provider: &HealthSettings) -> Option<Diagnostic> {
    own.rules_unused(provider).then(|| {
        Diagnostic::warning(
            "health_rule not used",
            "`health_rule` blocks are used only with `health = \"ready\"`; with KUDO's rules (`health = \"kudo\"`, the default) they are ignored. Set `health = \"ready\"` here or in the provider block.",
        )
        .with_attribute(AttributePath::attribute("health_rule"))
    })
}
