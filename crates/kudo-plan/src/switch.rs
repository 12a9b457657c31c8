//! The one rule for a parameter that switches something on or off: a Toggle task's
//! `parameter` and a KudoOperator task's `enablingParameter` (KEP-36). The value is
//! read with Go's `strconv.ParseBool`, as KUDO reads it; a missing value or any other
//! text is FATAL, at plan time as at apply time.

use std::collections::BTreeMap;

use crate::PlanError;

/// What the parameter switches, for the error message.
#[derive(Debug, Clone, Copy)]
pub enum Switched<'a> {
    /// The resources of a Toggle task.
    Toggle,
    /// The dependency a KudoOperator task installs (its `package`).
    Dependency(&'a str),
}

/// Whether `parameter` is on, from the instance's effective values (defaults applied).
pub fn switch_on(
    effective: &BTreeMap<String, String>,
    parameter: &str,
    what: Switched<'_>,
) -> Result<bool, PlanError> {
    let (field, subject) = match what {
        Switched::Toggle => (
            "toggle parameter".to_string(),
            "the task's resources".to_string(),
        ),
        Switched::Dependency(package) => (
            "enablingParameter".to_string(),
            format!("dependency {package:?}"),
        ),
    };
    let raw = effective.get(parameter).ok_or_else(|| {
        PlanError::new(format!(
            "{field} {parameter:?} has no value and no default, so it cannot switch {subject} on or off; set it to true or false"
        ))
        .for_parameter(parameter)
    })?;
    kudo_package::parse_bool(raw).ok_or_else(|| {
        PlanError::new(format!(
            "{field} {parameter} is {raw:?}, which is not a boolean (use true or false); it switches {subject} on or off"
        ))
        .for_parameter(parameter)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_parse_bool_and_nothing_else() {
        let eff: BTreeMap<String, String> = [
            ("ON".to_string(), "T".to_string()),
            ("OFF".to_string(), "0".to_string()),
            ("BAD".to_string(), "maybe".to_string()),
        ]
        .into();
        assert!(switch_on(&eff, "ON", Switched::Toggle).unwrap());
        assert!(!switch_on(&eff, "OFF", Switched::Dependency("zk")).unwrap());
        let bad = switch_on(&eff, "BAD", Switched::Toggle).unwrap_err();
        assert!(
            bad.message.contains("\"maybe\", which is not a boolean"),
            "{bad}"
        );
        let missing = switch_on(&eff, "NONE", Switched::Dependency("zk")).unwrap_err();
        assert!(
            missing
                .message
                .contains("enablingParameter \"NONE\" has no value"),
            "{missing}"
        );
    }
}
