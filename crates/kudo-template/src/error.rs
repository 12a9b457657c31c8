use gotmpl::TemplateError;

/// A template that failed to parse or execute, with the best position we know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render_display())]
pub struct RenderError {
    pub template: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl RenderError {
    pub(crate) fn new(
        template: &str,
        line: Option<usize>,
        column: Option<usize>,
        message: impl Into<String>,
    ) -> Self {
        RenderError {
            template: template.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    fn render_display(&self) -> String {
        let mut out = self.template.clone();
        if let Some(line) = self.line {
            out.push_str(&format!(":{line}"));
            if let Some(col) = self.column {
                out.push_str(&format!(":{col}"));
            }
        }
        out.push_str(": ");
        out.push_str(&self.message);
        out
    }

    /// gotmpl's lex/parse errors already carry a position; keep it, drop its prefix.
    pub(crate) fn from_parse(template: &str, e: TemplateError) -> Self {
        match e {
            TemplateError::Parse {
                line, col, message, ..
            }
            | TemplateError::Lex {
                line, col, message, ..
            } => RenderError::new(
                template,
                (line > 0).then_some(line),
                (col > 0).then_some(col),
                message,
            ),
            other => RenderError::new(template, None, None, other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_omits_unknown_parts() {
        let full = RenderError::new("a.yaml", Some(3), Some(7), "boom");
        assert_eq!(full.to_string(), "a.yaml:3:7: boom");
        let line_only = RenderError::new("a.yaml", Some(3), None, "boom");
        assert_eq!(line_only.to_string(), "a.yaml:3: boom");
        let none = RenderError::new("a.yaml", None, None, "boom");
        assert_eq!(none.to_string(), "a.yaml: boom");
    }
}
