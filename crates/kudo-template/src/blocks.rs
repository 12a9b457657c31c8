//! Go rejects a template whose `if`/`range`/`with`/`define`/`block` is never closed
//! ("unexpected EOF"), and a stray `{{end}}` or `{{else}}`; gotmpl 0.6 accepts both.
//! A light scan of the actions restores Go's behaviour.

/// The first block structure error: its 1-based line and Go's message.
pub(crate) fn block_error(text: &str) -> Option<(usize, String)> {
    let mut open: Vec<(usize, &'static str)> = Vec::new();
    let mut rest = text;
    let mut line = 1usize;
    while let Some(start) = rest.find("{{") {
        line += rest[..start].matches('\n').count();
        let body_start = start + 2;
        let Some(len) = action_len(&rest[body_start..]) else {
            break;
        };
        let body = &rest[body_start..body_start + len];
        let body = body.strip_prefix('-').unwrap_or(body);
        let body = body.strip_suffix('-').unwrap_or(body).trim();
        let word: String = body
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .collect();
        match word.as_str() {
            "if" => open.push((line, "if")),
            "range" => open.push((line, "range")),
            "with" => open.push((line, "with")),
            "define" => open.push((line, "define")),
            "block" => open.push((line, "block")),
            "end" | "else" if open.is_empty() => {
                return Some((line, format!("unexpected {{{{{word}}}}}")));
            }
            "end" => {
                open.pop();
            }
            _ => {}
        }
        let advance = body_start + len + 2;
        line += rest[start..advance].matches('\n').count();
        rest = &rest[advance..];
    }
    open.first().map(|(line, keyword)| {
        (
            *line,
            format!("unexpected EOF: {{{{{keyword}}}}} is never closed with {{{{end}}}}"),
        )
    })
}

/// Length of an action body up to its closing `}}`, skipping quoted strings and
/// comments.
fn action_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'`' => {
                i += 1;
                while i < b.len() && b[i] != b'`' {
                    i += 1;
                }
            }
            b'\'' => {
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = s[i + 2..].find("*/")?;
                i += 2 + end + 1;
            }
            b'}' if b.get(i + 1) == Some(&b'}') => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(text: &str) -> Option<(usize, String)> {
        block_error(text)
    }

    #[test]
    fn finds_block_errors() {
        assert_eq!(msg("{{ if true }}x").map(|e| e.0), Some(1));
        assert_eq!(
            msg("a\n{{- range .X -}}\n{{ if .Y }}{{ end }}"),
            Some((
                2,
                "unexpected EOF: {{range}} is never closed with {{end}}".to_string()
            ))
        );
        assert_eq!(
            msg("x\n{{ end }}"),
            Some((2, "unexpected {{end}}".to_string()))
        );
        assert_eq!(
            msg("{{ else }}"),
            Some((1, "unexpected {{else}}".to_string()))
        );
    }

    #[test]
    fn accepts_balanced_templates() {
        assert_eq!(msg("{{ if true }}x{{ end }}"), None);
        assert_eq!(msg(r#"{{ if eq "}}" "x" }}y{{ end }}"#), None);
        assert_eq!(msg("{{/* {{ if }} */}}"), None);
        assert_eq!(msg("{{ with .A }}{{ else }}{{ end }}"), None);
        assert_eq!(msg("{{ if .A }}{{ else if .B }}{{ else }}{{ end }}"), None);
        assert_eq!(
            msg("{{ define \"x\" }}{{ block \"y\" . }}{{ end }}{{ end }}"),
            None
        );
    }
}
