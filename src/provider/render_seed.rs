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

#[cfg(test)]
fn to_private(seed: &str) -> Vec<u8> {
    PrivateState {
        render_seed: Some(seed.to_string()),
        ..Default::default()
    }
    .to_bytes()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_created_instance_gets_a_fresh_secret_seed_each_time() {
        let a = for_apply(true, &[]).expect("seed").expect("created");
        let b = for_apply(true, &[]).expect("seed").expect("created");
        assert_eq!(a.len(), 64, "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn a_recorded_seed_is_kept_and_an_unseeded_instance_stays_unseeded() {
        let private = to_private("abc");
        assert_eq!(
            for_apply(false, &private).expect("seed").as_deref(),
            Some("abc")
        );
        assert_eq!(
            for_apply(true, &private).expect("seed").as_deref(),
            Some("abc")
        );
        assert_eq!(for_apply(false, &[]).expect("seed"), None);
        assert_eq!(for_apply(false, b"not json").expect("seed"), None);
    }
}
