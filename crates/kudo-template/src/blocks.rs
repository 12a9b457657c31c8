//! Go rejects a template whose `if`/`range`/`with`/`define`/`block` is never closed
//! ("unexpected EOF"); gotmpl 0.6 accepts it and closes the block at the end of the
//! file. A light scan of the actions restores Go's behaviour.

/// The 1-based line of the first block left open at the end of `text`, if any.
pub(crate) fn unclosed_block(text: &str) -> Option<(usize, &'static str)> {
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
            "end" => {
                open.pop();
            }
            _ => {}
        }
        let advance = body_start + len + 2;
        line += rest[start..advance].matches('\n').count();
        rest = &rest[advance..];
    }
    open.first().copied()
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

    #[test]
    fn finds_unclosed_blocks() {
        assert_eq!(unclosed_block("{{ if true }}x"), Some((1, "if")));
        assert_eq!(
            unclosed_block("a\n{{- range .X -}}\n{{ if .Y }}{{ end }}"),
            Some((2, "range"))
        );
        assert_eq!(unclosed_block("{{ if true }}x{{ end }}"), None);
        assert_eq!(unclosed_block(r#"{{ if eq "}}" "x" }}y{{ end }}"#), None);
        assert_eq!(unclosed_block("{{/* {{ if }} */}}"), None);
        assert_eq!(unclosed_block("{{ with .A }}{{ else }}{{ end }}"), None);
    }
}
