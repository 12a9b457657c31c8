//! The `timeouts` block: durations such as `90s`, `10m`, `1h30m`.

use std::time::Duration;

use tfplugin::{AttributePath, Diagnostic, Value};

pub const DEFAULT_CREATE: Duration = Duration::from_secs(20 * 60);
pub const DEFAULT_UPDATE: Duration = Duration::from_secs(20 * 60);
pub const DEFAULT_DELETE: Duration = Duration::from_secs(10 * 60);

/// Parses Go-style durations made of `h`, `m`, `s` and `ms` parts.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit() && c != '.')?;
        let (number, tail) = rest.split_at(digits);
        let value: f64 = number.parse().ok()?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let seconds = match unit {
            "h" => value * 3600.0,
            "m" => value * 60.0,
            "s" => value,
            "ms" => value / 1000.0,
            _ => return None,
        };
        total += Duration::try_from_secs_f64(seconds).ok()?;
        rest = next;
    }
    Some(total)
}

/// The duration for `operation` (`create`, `update`, `delete`) from a resource value.
pub fn timeout(
    resource: &Value,
    operation: &str,
    default: Duration,
) -> Result<Duration, Diagnostic> {
    match resource.get("timeouts").get(operation).as_str() {
        None => Ok(default),
        Some(text) => parse_duration(text).ok_or_else(|| {
            Diagnostic::error(
                "Invalid timeout",
                format!("{text:?} is not a duration; write it like `30s`, `10m` or `1h30m`."),
            )
            .with_attribute(AttributePath::attribute("timeouts").attr(operation))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("10"), None);
        assert_eq!(parse_duration("5 minutes"), None);
        assert_eq!(parse_duration(""), None);
    }

    #[test]
    fn bad_timeout_names_the_attribute() {
        let v = Value::object([(
            "timeouts",
            Value::object([("create", Value::string("soon"))]),
        )]);
        let d = timeout(&v, "create", DEFAULT_CREATE).expect_err("invalid");
        assert_eq!(
            d.attribute,
            Some(AttributePath::attribute("timeouts").attr("create"))
        );
    }
}
