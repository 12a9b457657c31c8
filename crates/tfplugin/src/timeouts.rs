//! The conventional `timeouts` block of a resource (`create`, `update`, `delete`, each a
//! duration such as `90s`, `10m` or `1h30m`), as Terraform providers write it: its
//! schema, its model, and the limit of an operation with the provider's defaults.

use std::time::Duration;

use crate::{Attr, AttributePath, Block, Diagnostic, NestedBlock, NestingMode, Type};

crate::model! {
    /// The `timeouts` block.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct Timeouts {
        pub create: Attr<String>,
        pub update: Attr<String>,
        pub delete: Attr<String>,
    }
}

/// What a timeout limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    pub const ALL: [Operation; 3] = [Operation::Create, Operation::Update, Operation::Delete];

    /// The attribute of the `timeouts` block.
    pub fn attribute(self) -> &'static str {
        match self {
            Operation::Create => "create",
            Operation::Update => "update",
            Operation::Delete => "delete",
        }
    }
}

impl Timeouts {
    /// The configured text for `operation`, if any.
    pub fn text(&self, operation: Operation) -> Option<&str> {
        match operation {
            Operation::Create => self.create.as_deref(),
            Operation::Update => self.update.as_deref(),
            Operation::Delete => self.delete.as_deref(),
        }
    }

    /// The block's schema; `descriptions` are those of `create`, `update`, `delete`.
    pub fn block(description: &str, descriptions: [&str; 3]) -> NestedBlock {
        let mut block = Block::new().description(description);
        for (op, text) in Operation::ALL.iter().zip(descriptions) {
            block = block.attribute(
                crate::Attribute::new(op.attribute(), Type::String)
                    .optional()
                    .description(text),
            );
        }
        NestedBlock::new("timeouts", NestingMode::Single, block)
    }
}

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

/// The duration for `operation` from a resource's `timeouts` block, else `default`.
pub fn timeout(
    timeouts: &Attr<Timeouts>,
    operation: Operation,
    default: Duration,
) -> Result<Duration, Diagnostic> {
    match timeouts.known().and_then(|t| t.text(operation)) {
        None => Ok(default),
        Some(text) => parse_duration(text).ok_or_else(|| invalid(text, operation)),
    }
}

/// The error for a timeout that is not a duration.
pub fn invalid(text: &str, operation: Operation) -> Diagnostic {
    Diagnostic::error(
        "Invalid timeout",
        format!(
            "`timeouts.{}` = {text:?} is not a duration: write a positive one like `30s`, `10m` or `1h30m`.",
            operation.attribute()
        ),
    )
    .with_attribute(AttributePath::attribute("timeouts").attr(operation.attribute()))
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
        let t = Attr::Known(Timeouts {
            create: "soon".into(),
            ..Default::default()
        });
        let ten = Duration::from_secs(600);
        let d = timeout(&t, Operation::Create, ten).expect_err("invalid");
        assert_eq!(timeout(&Attr::Null, Operation::Delete, ten), Ok(ten));
        assert_eq!(
            d.attribute,
            Some(AttributePath::attribute("timeouts").attr("create"))
        );
    }
}
