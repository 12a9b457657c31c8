//! Diagnostics and attribute paths, as Terraform shows them to the user.

use std::fmt;

/// One step into a value: an attribute, a map key or a list index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathStep {
    Attribute(String),
    ElementKeyString(String),
    ElementKeyInt(i64),
}

/// Path from the root object of a resource/data source/provider config.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct AttributePath(pub Vec<PathStep>);

impl AttributePath {
    pub fn new() -> AttributePath {
        AttributePath(Vec::new())
    }
    /// Path to a top-level attribute.
    pub fn attribute(name: impl Into<String>) -> AttributePath {
        AttributePath(vec![PathStep::Attribute(name.into())])
    }
    pub fn attr(mut self, name: impl Into<String>) -> AttributePath {
        self.0.push(PathStep::Attribute(name.into()));
        self
    }
    pub fn key(mut self, key: impl Into<String>) -> AttributePath {
        self.0.push(PathStep::ElementKeyString(key.into()));
        self
    }
    pub fn index(mut self, index: i64) -> AttributePath {
        self.0.push(PathStep::ElementKeyInt(index));
        self
    }
    pub fn steps(&self) -> &[PathStep] {
        &self.0
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Terraform-like spelling: `a.b["k"][0]`.
impl fmt::Display for AttributePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                PathStep::Attribute(a) if i == 0 => write!(f, "{a}")?,
                PathStep::Attribute(a) => write!(f, ".{a}")?,
                PathStep::ElementKeyString(k) => write!(f, "[{k:?}]")?,
                PathStep::ElementKeyInt(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub summary: String,
    pub detail: String,
    pub attribute: Option<AttributePath>,
}

impl Diagnostic {
    pub fn error(summary: impl Into<String>, detail: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            summary: summary.into(),
            detail: detail.into(),
            attribute: None,
        }
    }
    pub fn warning(summary: impl Into<String>, detail: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            summary: summary.into(),
            detail: detail.into(),
            attribute: None,
        }
    }
    /// Points Terraform's error display at the configuration of this attribute.
    pub fn with_attribute(mut self, path: AttributePath) -> Diagnostic {
        self.attribute = Some(path);
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// True when any diagnostic is an error.
pub fn has_errors(diags: &[Diagnostic]) -> bool {
    diags.iter().any(Diagnostic::is_error)
}
