//! The secret seed of an instance's template randomness (`randAlphaNum`, `genPrivateKey`,
//! ...). Without one the engine seeds with "namespace/name", so anyone could compute the
//! passwords a package generates. The seed is made once when the instance is created and
//! kept in the resource's private state (not shown in plans, but stored with the state,
//! which holds secrets anyway): renders stay stable across applies and differ between
//! instances. An imported instance has none and keeps the old seeding, since its objects
//! were rendered by KUDO with randomness nobody can reproduce.

use tfplugin::Diagnostic;

use super::private_state::PrivateState;

/// 32 random bytes as hex.
fn generate() -> Result<String, Diagnostic> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| {
        Diagnostic::error(
            "Cannot generate the instance's random seed",
            format!("The operating system's random source failed: {e}\n\nRun terraform apply again; if it keeps failing, check the host's entropy source."),
        )
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The seed recorded in private state, if any.
pub(super) fn from_private(private: &[u8]) -> Option<String> {
    PrivateState::parse(private).render_seed
}

/// The seed for an apply: the recorded one, a new one when the instance is being
/// created, otherwise none (imported, or created before seeds existed: changing its
/// seed now would change values it already generated).
pub(super) fn for_apply(
    creating: bool,
    planned_private: &[u8],
) -> Result<Option<String>, Diagnostic> {
    if let Some(seed) = from_private(planned_private) {
        return Ok(Some(seed));
    }
    if creating {
        tracing::debug!("generated a render seed for the new instance");
        return generate().map(Some);
    }
    Ok(None)
}
