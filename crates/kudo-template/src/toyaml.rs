//! `toYaml`: the text Go's yaml.v2 `Marshal` produces for template values.
//!
//! yaml.v2 behaviours matched here: map keys sorted with its "natural" order (runs of
//! digits compare as numbers, letters before other characters), 2-space indentation,
//! sequences inside mappings not indented, strings quoted only when they would read
//! back as another type (YAML 1.1: `yes`, `on`, `1e3`, `0777`, timestamps, ...) or
//! cannot be written plain (leading/trailing blanks, indicators, `: `, ` #`),
//! multi-line strings as literal blocks (`|`, `|-`, `|+`), floats in Go's `%g`
//! shortest form, a trailing newline. Long plain scalars are folded at column 80 as
//! yaml.v2's emitter does.

use std::cmp::Ordering;

use gotmpl::Value;

use crate::gofmt::format_float_g;

const BEST_WIDTH: usize = 80;

/// Marshal a value as yaml.v2 does (output ends with a newline).
pub(crate) fn to_yaml(v: &Value) -> String {
    let mut w = Writer::default();
    match v {
        Value::Map(m) if !m.is_empty() => w.map(m, 0),
        Value::List(l) if !l.is_empty() => w.list(l, 0),
        other => {
            w.scalar(other, 2, false);
            w.newline();
        }
    }
    w.out
}

#[derive(Default)]
struct Writer {
    out: String,
    column: usize,
}

impl Writer {
    fn push(&mut self, s: &str) {
        self.out.push_str(s);
        match s.rfind('\n') {
            Some(i) => self.column = s[i + 1..].chars().count(),
            None => self.column += s.chars().count(),
        }
    }

    fn newline(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn indent(&mut self, n: usize) {
        for _ in 0..n {
            self.out.push(' ');
        }
        self.column += n;
    }

    fn map(&mut self, m: &std::collections::BTreeMap<std::sync::Arc<str>, Value>, indent: usize) {
        let mut keys: Vec<&std::sync::Arc<str>> = m.keys().collect();
        keys.sort_by(|a, b| natural_cmp(a, b));
        for (i, k) in keys.into_iter().enumerate() {
            // The first key of a mapping inside a sequence item sits after "- ".
            if i > 0 || self.column == 0 {
                self.indent(indent.saturating_sub(self.column));
            }
            let v = &m[k];
            // yaml.v2 writes multi-line or long (> 128 bytes) keys as "? key" / ": value".
            if k.contains('\n') || k.len() > 128 {
                self.push("? ");
                self.string(k, indent + 2, false);
                if !self.out.ends_with('\n') {
                    self.newline();
                }
                self.indent(indent);
                self.push(": ");
                self.item(v, indent + 2);
                continue;
            }
            self.string(k, indent + 2, true);
            self.push(":");
            match v {
                Value::Map(inner) if !inner.is_empty() => {
                    self.newline();
                    self.map(inner, indent + 2);
                }
                Value::List(inner) if !inner.is_empty() => {
                    self.newline();
                    self.list(inner, indent);
                }
                other => {
                    self.push(" ");
                    self.scalar(other, indent + 2, false);
                    self.newline();
                }
            }
        }
    }

    fn list(&mut self, l: &[Value], indent: usize) {
        for (i, v) in l.iter().enumerate() {
            if i > 0 || self.column == 0 {
                self.indent(indent.saturating_sub(self.column));
            }
            self.push("- ");
            self.item(v, indent + 2);
        }
    }

    /// A value written after "- " or "? key\n: ", nested collections starting inline.
    fn item(&mut self, v: &Value, indent: usize) {
        match v {
            Value::Map(inner) if !inner.is_empty() => self.map(inner, indent),
            Value::List(inner) if !inner.is_empty() => self.list(inner, indent),
            other => {
                self.scalar(other, indent, false);
                self.newline();
            }
        }
    }

    /// A scalar, or an empty collection in flow style. `indent` is where continuation
    /// lines (folds, literal block lines) go.
    fn scalar(&mut self, v: &Value, indent: usize, key: bool) {
        match v {
            Value::Nil => self.push("null"),
            Value::Bool(b) => self.push(if *b { "true" } else { "false" }),
            Value::Int(i) => self.push(&i.to_string()),
            Value::Uint(u) => self.push(&u.to_string()),
            Value::Float(f) => self.push(&yaml_float(*f)),
            Value::String(s) => self.string(s, indent, key),
            Value::List(_) => self.push("[]"),
            Value::Map(_) => self.push("{}"),
            #[allow(unreachable_patterns)]
            other => self.string(&other.to_string(), indent, key),
        }
    }

    fn string(&mut self, s: &str, indent: usize, key: bool) {
        let a = analyze(s);
        let can_use_plain = resolves_to_string(s) && !is_base60_float(s);
        let multiline = s.contains('\n');
        let style = if multiline && !key {
            if a.block_allowed {
                Style::Literal
            } else {
                Style::Double
            }
        } else if key && a.multiline {
            Style::Double
        } else if can_use_plain {
            if !a.block_plain_allowed || (s.is_empty() && key) {
                if a.single_quoted_allowed {
                    Style::Single
                } else {
                    Style::Double
                }
            } else {
                Style::Plain
            }
        } else {
            Style::Double
        };
        match style {
            Style::Plain => self.plain(s, indent, !key),
            Style::Single => self.single_quoted(s, indent, !key),
            Style::Double => self.double_quoted(s, indent, !key),
            Style::Literal => self.literal(s, indent),
        }
    }

    fn plain(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        let chars: Vec<char> = s.chars().collect();
        let mut prev_space = false;
        for (i, c) in chars.iter().enumerate() {
            if *c == ' ' {
                let next_is_space = chars.get(i + 1) == Some(&' ');
                if allow_breaks && !prev_space && self.column > BEST_WIDTH && !next_is_space {
                    self.newline();
                    self.indent(indent);
                } else {
                    self.out.push(' ');
                    self.column += 1;
                }
                prev_space = true;
            } else {
                self.out.push(*c);
                self.column += 1;
                prev_space = false;
            }
        }
    }

    /// Spaces past column 80 become line breaks (not first or last character, not
    /// before another space), as in yaml.v2's emitter.
    fn single_quoted(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        let chars: Vec<char> = s.chars().collect();
        self.push("'");
        let mut prev_space = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let fold = allow_breaks
                    && !prev_space
                    && self.column > BEST_WIDTH
                    && i != 0
                    && i + 1 != chars.len()
                    && chars.get(i + 1) != Some(&' ');
                if fold {
                    self.newline();
                    self.indent(indent);
                } else {
                    self.push(" ");
                }
                prev_space = true;
            } else {
                if c == '\'' {
                    self.push("''");
                } else {
                    self.out.push(c);
                    self.column += 1;
                }
                prev_space = false;
            }
        }
        self.push("'");
    }

    /// Like single quotes, but a fold before a second space is marked with '\\' so
    /// the space survives.
    fn double_quoted(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        let chars: Vec<char> = s.chars().collect();
        self.push("\"");
        let mut prev_space = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let fold = allow_breaks
                    && !prev_space
                    && self.column > BEST_WIDTH
                    && i != 0
                    && i + 1 != chars.len();
                if fold {
                    self.newline();
                    self.indent(indent);
                    if chars.get(i + 1) == Some(&' ') {
                        self.push("\\");
                    }
                } else {
                    self.push(" ");
                }
                prev_space = true;
            } else {
                self.push(&escape_double(c));
                prev_space = false;
            }
        }
        self.push("\"");
    }

    fn literal(&mut self, s: &str, indent: usize) {
        let mut header = String::from("|");
        if s.starts_with(' ') || s.starts_with('\n') {
            header.push('2');
        }
        let chars: Vec<char> = s.chars().collect();
        match chars.len() {
            0 => header.push('-'),
            n if chars[n - 1] != '\n' => header.push('-'),
            1 => header.push('+'),
            n if chars[n - 2] == '\n' => header.push('+'),
            _ => {}
        }
        self.push(&header);
        self.newline();
        let mut at_line_start = true;
        for c in chars {
            if c == '\n' {
                self.newline();
                at_line_start = true;
            } else {
                if at_line_start {
                    self.indent(indent);
                    at_line_start = false;
                }
                self.out.push(c);
                self.column += 1;
            }
        }
        // The caller ends the line; a value ending in a newline already did.
        if s.ends_with('\n') {
            self.out.pop();
        }
    }
}

enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn is_printable(c: char) -> bool {
    matches!(c, '\n' | '\u{85}')
        || ('\u{20}'..='\u{7e}').contains(&c)
        || ('\u{a0}'..='\u{d7ff}').contains(&c)
        || (('\u{e000}'..='\u{fffd}').contains(&c) && c != '\u{feff}')
        || ('\u{10000}'..='\u{10ffff}').contains(&c)
}

fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// What the emitter allows for a string, following libyaml's scalar analysis.
fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let mut line_breaks = false;
    let mut special = false;
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut prev_space, mut prev_break) = (false, false);
    let mut preceded_by_ws = true;
    let n = chars.len();
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_ws =
            i + 1 >= n || matches!(chars[i + 1], ' ' | '\t') || is_break(chars[i + 1]);
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_ws => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_ws => block_indicators = true,
                '#' if preceded_by_ws => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= i + 1 == n;
            break_space |= prev_break;
            prev_space = true;
            prev_break = false;
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= i + 1 == n;
            space_break |= prev_space;
            prev_space = false;
            prev_break = true;
        } else {
            prev_space = false;
            prev_break = false;
        }
        preceded_by_ws = matches!(c, ' ' | '\t') || is_break(c);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

fn escape_double(c: char) -> String {
    match c {
        '\0' => "\\0".into(),
        '\u{7}' => "\\a".into(),
        '\u{8}' => "\\b".into(),
        '\t' => "\\t".into(),
        '\n' => "\\n".into(),
        '\u{b}' => "\\v".into(),
        '\u{c}' => "\\f".into(),
        '\r' => "\\r".into(),
        '\u{1b}' => "\\e".into(),
        '"' => "\\\"".into(),
        '\\' => "\\\\".into(),
        '\u{85}' => "\\N".into(),
        '\u{a0}' => "\\_".into(),
        '\u{2028}' => "\\L".into(),
        '\u{2029}' => "\\P".into(),
        c if !is_printable(c) || c == '\u{feff}' => {
            let v = c as u32;
            if v <= 0xff {
                format!("\\x{v:02X}")
            } else if v <= 0xffff {
                format!("\\u{v:04X}")
            } else {
                format!("\\U{v:08X}")
            }
        }
        c => c.to_string(),
    }
}

fn yaml_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    format_float_g(f, 6)
}

/// Would yaml.v2 read this plain text back as a string? (Its `resolve` with no tag.)
fn resolves_to_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no",
        "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null",
        "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF", "<<",
    ];
    if SPECIAL.contains(&s) {
        return false;
    }
    let first = match s.bytes().next() {
        Some(b) => b,
        None => return false,
    };
    match first {
        b'.' => s.parse::<f64>().is_err() || !go_float_syntax(s),
        b'0'..=b'9' | b'+' | b'-' => {
            if is_timestamp(s) {
                return false;
            }
            let plain: String = s.chars().filter(|c| *c != '_').collect();
            if go_parse_int_base0(&plain) || yaml_style_float(&plain) {
                return false;
            }
            if let Some(bin) = plain
                .strip_prefix("0b")
                .or_else(|| plain.strip_prefix("-0b"))
            {
                return bin.is_empty() || !bin.chars().all(|c| c == '0' || c == '1');
            }
            true
        }
        _ => true,
    }
}

/// Rust accepts "inf"/"nan" words Go's ParseFloat also accepts, but a leading '.'
/// rules those out; this only guards against Rust-only spellings.
fn go_float_syntax(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
}

/// `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` succeeding.
fn go_parse_int_base0(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let unsigned_ok = !s.starts_with('+') && !s.starts_with('-');
    let (digits, radix) =
        if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (h, 16)
        } else if let Some(b) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
            (b, 2)
        } else if let Some(o) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
            (o, 8)
        } else if body.len() > 1 && body.starts_with('0') {
            (&body[1..], 8)
        } else {
            (body, 10)
        };
    if digits.is_empty() {
        return false;
    }
    let signed = format!("{}{}", if s.starts_with('-') { "-" } else { "" }, digits);
    i64::from_str_radix(&signed, radix).is_ok()
        || (unsigned_ok && u64::from_str_radix(digits, radix).is_ok())
}

/// yaml.v2's `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// yaml.v2's timestamp guess: four digits, '-', then a date (optionally with a time).
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 8 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let (date, rest) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let parts: Vec<&str> = date.split('-').collect();
    if parts.len() != 3 {
        return false;
    }
    let num = |p: &str, max_len: usize| -> Option<u32> {
        (!p.is_empty() && p.len() <= max_len && p.bytes().all(|c| c.is_ascii_digit()))
            .then(|| p.parse().ok())
            .flatten()
    };
    let (Some(_), Some(m), Some(d)) = (num(parts[0], 4), num(parts[1], 2), num(parts[2], 2)) else {
        return false;
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return false;
    }
    match rest {
        None => true,
        Some(t) => {
            let t = t.trim_end_matches('Z');
            let hms: Vec<&str> = t.split(':').collect();
            hms.len() >= 3 && hms[..2].iter().all(|p| num(p, 2).is_some())
        }
    }
}

fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !(b[0] == b'+' || b[0] == b'-' || b[0].is_ascii_digit()) || !s.contains(':')
    {
        return false;
    }
    // ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (main, frac) = match body.split_once('.') {
        Some((m, f)) => (m, Some(f)),
        None => (body, None),
    };
    if let Some(f) = frac
        && !f.bytes().all(|c| c.is_ascii_digit() || c == b'_')
    {
        return false;
    }
    let mut groups = main.split(':');
    let head = groups.next().unwrap_or("");
    if head.is_empty()
        || !head.as_bytes()[0].is_ascii_digit()
        || !head.bytes().all(|c| c.is_ascii_digit() || c == b'_')
    {
        return false;
    }
    let mut any = false;
    for g in groups {
        any = true;
        let ok = match g.as_bytes() {
            [d] => d.is_ascii_digit(),
            [a, d] => (b'0'..=b'5').contains(a) && d.is_ascii_digit(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    any
}

/// yaml.v2's key order.
fn natural_cmp(a: &str, b: &str) -> Ordering {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(ar[ai] as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(br[bi] as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn s(v: &str) -> Value {
        Value::String(v.into())
    }

    fn map(entries: &[(&str, Value)]) -> Value {
        let m: BTreeMap<Arc<str>, Value> = entries
            .iter()
            .map(|(k, v)| (Arc::from(*k), v.clone()))
            .collect();
        Value::Map(Arc::new(m))
    }

    #[test]
    fn scalars_quote_like_yaml_v2() {
        assert_eq!(to_yaml(&s("hello")), "hello\n");
        assert_eq!(to_yaml(&s("")), "\"\"\n");
        assert_eq!(to_yaml(&s("true")), "\"true\"\n");
        assert_eq!(to_yaml(&s("yes")), "\"yes\"\n");
        assert_eq!(to_yaml(&s("0755")), "\"0755\"\n");
        assert_eq!(to_yaml(&s("08")), "\"08\"\n");
        assert_eq!(to_yaml(&s("1e3")), "\"1e3\"\n");
        assert_eq!(to_yaml(&s("1.2.3")), "1.2.3\n");
        assert_eq!(to_yaml(&s("2001-12-14")), "\"2001-12-14\"\n");
        assert_eq!(to_yaml(&s("1:20")), "\"1:20\"\n");
        assert_eq!(to_yaml(&s(" lead")), "' lead'\n");
        assert_eq!(to_yaml(&s("a: b")), "'a: b'\n");
        assert_eq!(to_yaml(&s("- x")), "'- x'\n");
        assert_eq!(to_yaml(&s("it's")), "it's\n");
        assert_eq!(to_yaml(&s("tab\there")), "\"tab\\there\"\n");
        assert_eq!(to_yaml(&Value::Float(1e6)), "1e+06\n");
        assert_eq!(to_yaml(&Value::Float(2.0)), "2\n");
        assert_eq!(to_yaml(&Value::Nil), "null\n");
    }

    #[test]
    fn nested_structures() {
        let v = map(&[
            (
                "b",
                Value::List(
                    vec![
                        s("x"),
                        map(&[("k", Value::Int(1)), ("j", Value::Bool(true))]),
                    ]
                    .into(),
                ),
            ),
            ("a", map(&[("inner", s("v"))])),
            ("e", Value::List(Vec::new().into())),
            ("d", map(&[])),
        ]);
        assert_eq!(
            to_yaml(&v),
            "a:\n  inner: v\nb:\n- x\n- j: true\n  k: 1\nd: {}\ne: []\n"
        );
    }

    #[test]
    fn literal_blocks() {
        let v = map(&[("script", s("echo a\necho b\n")), ("two", s("x\ny"))]);
        assert_eq!(
            to_yaml(&v),
            "script: |\n  echo a\n  echo b\ntwo: |-\n  x\n  y\n"
        );
        assert_eq!(to_yaml(&s("a\n\n")), "|+\n  a\n\n");
    }

    #[test]
    fn complex_keys() {
        let v = map(&[
            ("multi\nkey", map(&[("a", Value::Int(1))])),
            ("x", Value::Int(1)),
        ]);
        assert_eq!(to_yaml(&v), "? |-\n  multi\n  key\n: a: 1\nx: 1\n");
        let long = "k".repeat(129);
        let v = map(&[(long.as_str(), s("v"))]);
        assert_eq!(to_yaml(&v), format!("? {long}\n: v\n"));
        let v = Value::List(
            vec![map(&[(
                "a\nb",
                Value::List(vec![Value::Int(1), Value::Int(2)].into()),
            )])]
            .into(),
        );
        assert_eq!(to_yaml(&v), "- ? |-\n    a\n    b\n  : - 1\n    - 2\n");
    }

    #[test]
    fn keys_sort_naturally() {
        let v = map(&[
            ("a10", Value::Int(1)),
            ("a2", Value::Int(2)),
            ("B", Value::Int(3)),
        ]);
        assert_eq!(to_yaml(&v), "B: 3\na2: 2\na10: 1\n");
    }

    #[test]
    fn long_quoted_strings_fold_at_80() {
        let long = " a very long string with many words that goes on and on and on past the eighty column limit of the emitter";
        assert_eq!(
            to_yaml(&map(&[("k", s(long))])),
            "k: ' a very long string with many words that goes on and on and on past the eighty\n  column limit of the emitter'\n"
        );
        let tab = "a very long string with many words that goes on and on and on past the eighty column\tlimit of the emitter for sure yes";
        assert_eq!(
            to_yaml(&map(&[("k", s(tab))])),
            "k: \"a very long string with many words that goes on and on and on past the eighty\n  column\\tlimit of the emitter for sure yes\"\n"
        );
    }

    #[test]
    fn long_plain_strings_fold_at_80() {
        let long = "word ".repeat(30).trim_end().to_string();
        let out = to_yaml(&map(&[("k", s(&long))]));
        let first = out.lines().next().unwrap_or_default();
        assert!(first.len() > 80 && first.len() < 90, "{out}");
        assert!(out.lines().nth(1).unwrap_or_default().starts_with("  word"));
    }
}
