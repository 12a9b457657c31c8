//! Child instance names.
//!
//! KUDO's rule: the task's `instanceName`, else `<parent instance>-<package>`. Default
//! names are therefore hierarchical: the same package under two parents, or a parent
//! installed twice in one namespace, gives different names. An explicit `instanceName`
//! is used as written (as KUDO did), so two of them can still clash; the graph step
//! reports any clash inside one resolution, and [`crate::Resolution::instance_names`]
//! lets a caller check across resolutions that share a namespace.

/// Longest name: instance names end up in the `kudo.dev/instance` label, and label
/// values are limited to 63 characters.
pub const MAX_NAME_LEN: usize = 63;

/// The name of a child instance.
pub fn child_instance_name(
    parent_instance: &str,
    package: &str,
    instance_name: Option<&str>,
) -> String {
    match instance_name.map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) => n.to_string(),
        None => format!("{parent_instance}-{package}"),
    }
}

/// Kubernetes DNS-1123 label rules (lowercase letters, digits, `-`; starts and ends
/// alphanumeric; at most 63 characters). `Err` says what is wrong.
pub fn check_instance_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("it is empty".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "it is {} characters long, over the {MAX_NAME_LEN} allowed in a label value",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "it contains {c:?}; only lowercase letters, digits and '-' are allowed"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("it must start and end with a letter or digit".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(child_instance_name("aa", "bb", None), "aa-bb");
        assert_eq!(child_instance_name("aa", "bb", Some("x")), "x");
        assert_eq!(child_instance_name("aa", "bb", Some(" ")), "aa-bb");
        assert!(check_instance_name("aa-bb-1").is_ok());
        assert!(check_instance_name("Aa").is_err());
        assert!(check_instance_name("-a").is_err());
        assert!(
            check_instance_name(&"a".repeat(64))
                .unwrap_err()
                .contains("64")
        );
    }
}
