//! What an RBAC refusal ([`Forbidden`], read by the engine from the API server's
//! message) means for the provider's credentials, as advice on a diagnostic.

use kudo_engine::cluster::Forbidden;

/// What to grant: the role, the binding and the rule.
pub fn advice(refused: &Forbidden) -> String {
    format!(
        "These credentials (User {:?}) may not {} {} {}. The API server allows it with {}, with this rule (docs/guides/permissions.md lists what the provider needs):\n\n{}",
        refused.user,
        refused.verb,
        refused.qualified_resource(),
        refused.scope(),
        refused.grant(),
        refused.rule_yaml("  ")
    )
}
