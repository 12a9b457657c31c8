//! Block YAML output in the style of Go's yaml.v2 `Marshal` (used for parameter
//! defaults and usable for `toYaml`): keys sorted, sequences inside mappings not
//! indented, strings quoted only when needed to keep them strings.
//!
//! Known difference: yaml.v2 folds long plain strings at 80 columns; we never fold.

use std::cmp::Ordering;

use serde_json::Value;

use crate::json::format_go_float;
use crate::resolve::{Resolved, resolve_plain};

/// Serialise a JSON value as block YAML ending with a newline (`{}`/`[]`/scalars alone on
/// their line).
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(m) if !m.is_empty() => mapping(m, 0, &mut out),
        Value::Array(a) if !a.is_empty() => sequence(a, 0, &mut out),
        other => {
            out.push_str(&inline(other, 0));
            out.push('\n');
        }
    }
    out
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// yaml.v2 sorts keys so that digit runs compare numerically ("a2" < "a10").
fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (ab, bb) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < ab.len() && j < bb.len() {
        if ab[i].is_ascii_digit() && bb[j].is_ascii_digit() {
            let si = i;
            while i < ab.len() && ab[i].is_ascii_digit() {
                i += 1;
            }
            let sj = j;
            while j < bb.len() && bb[j].is_ascii_digit() {
                j += 1;
            }
            let na = a[si..i].trim_start_matches('0');
            let nb = b[sj..j].trim_start_matches('0');
            let ord = na.len().cmp(&nb.len()).then_with(|| na.cmp(nb));
            if ord != Ordering::Equal {
                return ord;
            }
        } else {
            let ord = ab[i].cmp(&bb[j]);
            if ord != Ordering::Equal {
                return ord;
            }
            i += 1;
            j += 1;
        }
    }
    (ab.len() - i).cmp(&(bb.len() - j))
}

fn mapping(m: &serde_json::Map<String, Value>, indent: usize, out: &mut String) {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort_by(|a, b| natural_cmp(a, b));
    for (n, key) in keys.into_iter().enumerate() {
        // The first key of a mapping inside a sequence item shares the "- " line.
        if n > 0 {
            pad(out, indent);
        }
        // libyaml (and so yaml.v2) writes keys longer than 128 bytes as explicit
        // `? key` / `: value` pairs; an implicit key may not exceed 1024 characters.
        let explicit = key.len() > 128;
        if explicit {
            out.push_str("? ");
            out.push_str(&key_scalar(key, indent + 2));
            out.push('\n');
            pad(out, indent);
        } else {
            out.push_str(&key_scalar(key, indent));
        }
        out.push(':');
        let Some(value) = m.get(key) else { continue };
        match value {
            Value::Object(child) if !child.is_empty() => {
                out.push('\n');
                pad(out, indent + 2);
                mapping(child, indent + 2, out);
            }
            Value::Array(items) if !items.is_empty() => {
                // After `:` of an explicit pair the sequence must be indented.
                let at = if explicit { indent + 2 } else { indent };
                out.push('\n');
                pad(out, at);
                sequence(items, at, out);
            }
            other => {
                out.push(' ');
                out.push_str(&inline(other, indent + 2));
                out.push('\n');
            }
        }
    }
}

fn sequence(items: &[Value], indent: usize, out: &mut String) {
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            pad(out, indent);
        }
        out.push_str("- ");
        match item {
            Value::Object(child) if !child.is_empty() => mapping(child, indent + 2, out),
            Value::Array(inner) if !inner.is_empty() => sequence(inner, indent + 2, out),
            other => {
                out.push_str(&inline(other, indent + 2));
                out.push('\n');
            }
        }
    }
}

fn inline(value: &Value, indent: usize) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                n.to_string()
            } else {
                format_go_float(n.as_f64().unwrap_or(0.0))
            }
        }
        Value::String(s) => string_scalar(s, indent),
        Value::Object(_) => "{}".to_string(),
        Value::Array(_) => "[]".to_string(),
    }
}

/// A mapping key: as a value, except that a multi-line key cannot be a block literal
/// (`|-` starts a value, not a key), so it is double-quoted.
fn key_scalar(s: &str, indent: usize) -> String {
    if s.contains('\n') {
        double_quoted(s)
    } else {
        string_scalar(s, indent)
    }
}

fn string_scalar(s: &str, indent: usize) -> String {
    // A literal block needs some content: one of only line breaks reads back empty.
    // A byte order mark may not appear raw inside a document at all.
    if s.contains('\n')
        && s.chars().any(|c| c != '\n')
        && s.chars()
            .all(|c| (c == '\n' || !c.is_control() || c == '\t') && c != '\u{feff}')
    {
        return literal(s, indent);
    }
    if resolve_plain(s) != Resolved::String || is_base60(s) || is_timestamp(s) {
        return double_quoted(s);
    }
    if s.chars().any(|c| c.is_control() && c != '\t') || s.contains('\u{feff}') {
        return double_quoted(s);
    }
    if plain_allowed(s) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

fn is_base60(s: &str) -> bool {
    // yaml.v2 quotes YAML 1.1 sexagesimal floats like 1:20 or 190:20:30.15.
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let mut parts = body.split(':');
    let first_ok = parts
        .next()
        .is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit() || c == '_'));
    let rest: Vec<&str> = parts.collect();
    first_ok
        && !rest.is_empty()
        && rest.iter().enumerate().all(|(i, p)| {
            let (int, frac) = match p.split_once('.') {
                Some((a, b)) if i + 1 == rest.len() => (a, Some(b)),
                Some(_) => return false,
                None => (*p, None),
            };
            (1..=2).contains(&int.len())
                && int.chars().all(|c| c.is_ascii_digit())
                && frac.is_none_or(|f| f.chars().all(|c| c.is_ascii_digit() || c == '_'))
        })
}

/// yaml.v2 (2.4) resolves these as timestamps and therefore quotes them on output:
/// `2006-1-2`, optionally followed by `T`/`t`/space and `15:4:5[.frac]` and, for the
/// `T`/`t` forms, `Z` or a `±hh:mm` offset.
fn is_timestamp(s: &str) -> bool {
    fn digits(s: &str, min: usize, max: usize) -> Option<&str> {
        let n = s.bytes().take_while(u8::is_ascii_digit).count();
        (min..=max).contains(&n).then(|| &s[n..])
    }
    let Some(rest) = digits(s, 4, 4).and_then(|r| r.strip_prefix('-')) else {
        return false;
    };
    let Some(rest) = digits(rest, 1, 2).and_then(|r| r.strip_prefix('-')) else {
        return false;
    };
    let Some(rest) = digits(rest, 1, 2) else {
        return false;
    };
    let Some(sep) = rest.chars().next() else {
        return true;
    };
    if !matches!(sep, 'T' | 't' | ' ') {
        return false;
    }
    let time = &rest[1..];
    let Some(time) = digits(time, 1, 2)
        .and_then(|r| r.strip_prefix(':'))
        .and_then(|r| digits(r, 1, 2))
        .and_then(|r| r.strip_prefix(':'))
        .and_then(|r| digits(r, 1, 2))
    else {
        return false;
    };
    let time = match time.strip_prefix('.') {
        Some(f) => match digits(f, 1, 9) {
            Some(r) => r,
            None => return false,
        },
        None => time,
    };
    if sep == ' ' {
        return time.is_empty();
    }
    time.is_empty()
        || time == "Z"
        || time
            .strip_prefix(['+', '-'])
            .and_then(|z| digits(z, 2, 2))
            .and_then(|z| z.strip_prefix(':'))
            .and_then(|z| digits(z, 2, 2))
            .is_some_and(str::is_empty)
}

fn plain_allowed(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if s.starts_with(' ') || s.ends_with(' ') || s.starts_with('\t') || s.ends_with('\t') {
        return false;
    }
    // A tab separates indicators just as a space does (`-\tx` is a sequence entry).
    let second_is_blank = s.chars().nth(1).is_none_or(|c| c == ' ' || c == '\t');
    match first {
        '[' | ']' | '{' | '}' | ',' | '#' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%'
        | '@' | '`' => return false,
        '-' | '?' | ':' if second_is_blank => return false,
        _ => {}
    }
    if s.starts_with("---") || s.starts_with("...") {
        return false;
    }
    !(s.contains(": ")
        || s.contains(":\t")
        || s.contains(" #")
        || s.contains("\t#")
        || s.ends_with(':'))
}

fn double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if c.is_control() || c == '\u{feff}' => {
                let code = c as u32;
                if code <= 0xff {
                    out.push_str(&format!("\\x{code:02X}"));
                } else {
                    out.push_str(&format!("\\u{code:04X}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn literal(s: &str, indent: usize) -> String {
    let chomp = if !s.ends_with('\n') {
        "-"
    } else if s.ends_with("\n\n") {
        "+"
    } else {
        ""
    };
    // Block indentation is detected from the first non-empty line, so content that
    // itself starts with spaces needs an explicit indentation indicator.
    let first_content = s.split('\n').find(|l| !l.is_empty()).unwrap_or("");
    let indicator = if first_content.starts_with([' ', '\t']) {
        "2"
    } else {
        ""
    };
    let mut out = format!("|{indicator}{chomp}\n");
    let body = s.strip_suffix('\n').unwrap_or(s);
    for line in body.split('\n') {
        if !line.is_empty() {
            pad(&mut out, indent.max(2));
            out.push_str(line);
        }
        out.push('\n');
    }
    // The caller appends the newline that ends the entry.
    out.pop();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Found by the `yaml` fuzz target: a key of 1100 characters written as an
    /// implicit key, which YAML limits to 1024.
    #[test]
    fn long_keys_are_explicit_and_read_back() {
        let long = "k".repeat(1100);
        let quoted = "\u{1c}".repeat(400);
        for key in [long.as_str(), quoted.as_str(), "a\nb"] {
            let key = format!("{key}{}", "x".repeat(129));
            let v = json!({ &key: {"a": [1, {&key: [key.clone()]}]}, "b": 1, "c": [key.clone()] });
            let text = to_yaml(&v);
            let back = crate::to_json(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(back, v, "{text}");
        }
        assert!(to_yaml(&json!({ "k".repeat(129): 1 })).starts_with("? "));
        assert!(!to_yaml(&json!({ "k".repeat(128): 1 })).starts_with("? "));
    }

    /// Found by the `yaml` fuzz target (`? a-, B]\n\n d`): a key with a line break
    /// was written as a `|-` block literal, which does not read back as a key; and a
    /// value of only line breaks as a literal with no content, which reads back empty;
    /// a multi-line value with a byte order mark raw in a literal; and plain scalars
    /// where a tab follows an indicator (`-\tx` reads back as a sequence).
    #[test]
    fn multi_line_keys_read_back() {
        for key in [
            "-\t->\t--",
            "a:\tb",
            "a\t#b",
            "?\tx",
            "a-, B]\nd",
            "x\n",
            "\n",
            "a\n\nb: c",
            "a\n\u{feff}b",
        ] {
            let v = json!({ key: null, "other": {key: [key]} });
            let text = to_yaml(&v);
            let back = crate::to_json(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(back, v, "{text}");
        }
    }

    #[test]
    fn yaml_v2_layout() {
        let v = json!({"b": [1, "two", {"x": true, "a": null}], "a": {"k": "v"}, "e": [], "m": {}});
        assert_eq!(
            to_yaml(&v),
            "a:\n  k: v\nb:\n- 1\n- two\n- a: null\n  x: true\ne: []\nm: {}\n"
        );
    }

    #[test]
    fn quoting_keeps_strings_strings() {
        let v = json!([
            "true",
            "0755",
            "",
            "a: b",
            "- x",
            "1:20",
            "plain text",
            1.5,
            "*x"
        ]);
        assert_eq!(
            to_yaml(&v),
            "- \"true\"\n- \"0755\"\n- \"\"\n- 'a: b'\n- '- x'\n- \"1:20\"\n- plain text\n- 1.5\n- '*x'\n"
        );
    }

    #[test]
    fn literal_blocks_and_round_trip() {
        let v = json!({"script": "echo hi\necho there\n", "k2": "a\nb"});
        let text = to_yaml(&v);
        assert_eq!(
            text,
            "k2: |-\n  a\n  b\nscript: |\n  echo hi\n  echo there\n"
        );
        assert_eq!(crate::to_json(&text).unwrap(), v);
    }

    #[test]
    fn timestamps_are_quoted() {
        for t in [
            "2001-12-14",
            "2001-12-14T21:59:43.10Z",
            "2001-1-2 3:04:05",
            "2020-01-01t00:00:00+01:00",
        ] {
            assert!(is_timestamp(t), "{t}");
        }
        for t in [
            "2001-12",
            "20011-12-14",
            "2001-12-14x",
            "2001-12-14 3:04:05Z",
            "1.2.3",
        ] {
            assert!(!is_timestamp(t), "{t}");
        }
        assert_eq!(to_yaml(&json!({"d": "2001-12-14"})), "d: \"2001-12-14\"\n");
    }

    #[test]
    fn tricky_strings_round_trip() {
        let tricky = [
            "\n  x\ny\n",
            "  lead\nnext",
            "trailing  \n",
            "a\n\n\n",
            "tab\there\nx",
            "crlf\r\nline",
            "'quoted' \"both\"",
            "# not a comment",
            "key: value",
            "- dash",
            "@at",
            "%pct",
            "",
            " ",
            "null",
            "0o17",
            "1e3",
            ".5",
            "yes",
            "~",
            "x #y",
            "ends:",
            "\u{e9}t\u{e9}",
        ];
        for t in tricky {
            let v = json!({"k": t, "l": [t, [t]], "m": {"n": t}});
            let text = to_yaml(&v);
            let back = crate::to_json(&text).unwrap_or_else(|e| panic!("{t:?}: {e}\n{text}"));
            assert_eq!(back, v, "{t:?}\n{text}");
        }
    }

    #[test]
    fn natural_key_order() {
        let v = json!({"a10": 1, "a2": 2, "b": 3});
        assert_eq!(to_yaml(&v), "a2: 2\na10: 1\nb: 3\n");
    }
}
