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
    pub(crate) fn from_parse(template: &str, text: &str, e: TemplateError) -> Self {
        match e {
            TemplateError::Lex {
                line, col, message, ..
            } if unclosed(&message) => {
                // gotmpl reports these where the input ends, often the line after the
                // last one; the author needs the action that was left open.
                let (line, col) = last_open_action(text, line, col).unwrap_or((line, col));
                RenderError::new(
                    template,
                    (line > 0).then_some(line),
                    (col > 0).then_some(col),
                    message,
                )
            }
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

/// Lexer errors about an action, comment or quoted string that never ends.
fn unclosed(message: &str) -> bool {
    message.starts_with("unclosed") || message.starts_with("unterminated")
}

/// 1-based line and byte column of the last `{{` at or before the reported position.
fn last_open_action(text: &str, line: usize, col: usize) -> Option<(usize, usize)> {
    let line_start = if line <= 1 {
        0
    } else {
        text.match_indices('\n').nth(line - 2).map(|(i, _)| i + 1)?
    };
    let end = line_start
        .saturating_add(col.saturating_sub(1))
        .min(text.len());
    let open = text.as_bytes()[..end]
        .windows(2)
        .rposition(|w| w == b"{{")?;
    let open_line = text.as_bytes()[..open]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1;
    let open_line_start = text.as_bytes()[..open]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    Some((open_line, open - open_line_start + 1))
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
