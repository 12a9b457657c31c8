//! Block YAML in the style of Go's yaml.v2 `Marshal`: the one emitter behind the
//! templates' `toYaml` and every YAML document the provider and CLI write.
//!
//! yaml.v2 behaviours matched here: map keys sorted with its "natural" order (runs of
//! digits compare as numbers, letters before other characters), 2-space indentation,
//! sequences inside mappings not indented, strings quoted only when they would read
//! back as another type (YAML 1.1: `yes`, `on`, `1e3`, `0777`, timestamps, ...) or
//! cannot be written plain (leading/trailing blanks, indicators, `: `, ` #`),
//! multi-line strings as literal blocks (`|`, `|-`, `|+`), floats in Go's `%g`
//! shortest form, a trailing newline. Long scalars are folded at column 80 as
//! yaml.v2's emitter does.
//!
//! The emitter walks any tree that can show itself as a [`View`] ([`YamlTree`]), so
//! JSON values and the template engine's values share it.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::ops::RangeInclusive;

use crate::gofloat::format_float_g;
use crate::resolve::{Resolved, resolve_plain};

/// One level of a tree as the emitter sees it.
pub enum View<'a, T> {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    /// A string, or the text of a value YAML has no type for (Go's `%v` of it).
    Str(Cow<'a, str>),
    Seq(Vec<T>),
    /// Entries in any order; the emitter sorts keys as yaml.v2 does.
    Map(Vec<(&'a str, T)>),
}

/// A value the emitter can write. Implemented for `&serde_json::Value`; other value
/// types implement it on a borrowed wrapper.
pub trait YamlTree<'a>: Copy {
    fn view(self) -> View<'a, Self>;
}

impl<'a> YamlTree<'a> for &'a serde_json::Value {
    fn view(self) -> View<'a, Self> {
        use serde_json::Value;
        match self {
            Value::Null => View::Null,
            Value::Bool(b) => View::Bool(*b),
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => View::Int(i),
                (None, Some(u)) => View::Uint(u),
                _ => View::Float(n.as_f64().unwrap_or(0.0)),
            },
            Value::String(s) => View::Str(Cow::Borrowed(s)),
            Value::Array(items) => View::Seq(items.iter().collect()),
            Value::Object(m) => View::Map(m.iter().map(|(k, v)| (k.as_str(), v)).collect()),
        }
    }
}

const BEST_WIDTH: usize = 80;

/// Marshal a value as yaml.v2 does (output ends with a newline; `{}`, `[]` and
/// scalars alone on their line).
pub fn to_yaml<'a, T: YamlTree<'a>>(v: T) -> String {
    let mut w = Writer::default();
    match v.view() {
        View::Map(m) if !m.is_empty() => w.map(m, 0),
        View::Seq(l) if !l.is_empty() => w.list(l, 0),
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

    fn map<'a, T: YamlTree<'a>>(&mut self, m: Vec<(&'a str, T)>, indent: usize) {
        let m = merge_sort_by(m, &|a: &(&str, T), b: &(&str, T)| {
            natural_cmp(a.0, b.0).is_lt()
        });
        for (i, (k, v)) in m.into_iter().enumerate() {
            // The first key of a mapping inside a sequence item sits after "- ".
            if i > 0 || self.column == 0 {
                self.indent(indent.saturating_sub(self.column));
            }
            let v = v.view();
            // yaml.v2 writes multi-line or long (> 128 bytes) keys as "? key" / ": value".
            if k.contains('\n') || k.len() > 128 {
                self.push("? ");
                self.string(k, indent + 2, false);
                // Every key form ends without its last line break (a literal drops
                // its own), so the line always ends here; a key ending in blank lines
                // already ends in '\n' and still needs this one.
                self.newline();
                self.indent(indent);
                self.push(": ");
                self.item(v, indent + 2);
                continue;
            }
            self.string(k, indent + 2, true);
            self.push(":");
            match v {
                View::Map(inner) if !inner.is_empty() => {
                    self.newline();
                    self.map(inner, indent + 2);
                }
                View::Seq(inner) if !inner.is_empty() => {
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

    fn list<'a, T: YamlTree<'a>>(&mut self, l: Vec<T>, indent: usize) {
        for (i, v) in l.into_iter().enumerate() {
            if i > 0 || self.column == 0 {
                self.indent(indent.saturating_sub(self.column));
            }
            self.push("- ");
            self.item(v.view(), indent + 2);
        }
    }

    /// A value written after "- " or "? key\n: ", nested collections starting inline.
    fn item<'a, T: YamlTree<'a>>(&mut self, v: View<'a, T>, indent: usize) {
        match v {
            View::Map(inner) if !inner.is_empty() => self.map(inner, indent),
            View::Seq(inner) if !inner.is_empty() => self.list(inner, indent),
            other => {
                self.scalar(other, indent, false);
                self.newline();
            }
        }
    }

    /// A scalar, or an empty collection in flow style. `indent` is where continuation
    /// lines (folds, literal block lines) go.
    fn scalar<T>(&mut self, v: View<'_, T>, indent: usize, key: bool) {
        match v {
            View::Null => self.push("null"),
            View::Bool(b) => self.push(if b { "true" } else { "false" }),
            View::Int(i) => self.push(&i.to_string()),
            View::Uint(u) => self.push(&u.to_string()),
            View::Float(f) => self.push(&yaml_float(f)),
            View::Str(s) => self.string(&s, indent, key),
            View::Seq(_) => self.push("[]"),
            View::Map(_) => self.push("{}"),
        }
    }

    fn string(&mut self, s: &str, indent: usize, key: bool) {
        let a = analyze(s);
        // yaml.v2 writes a string plain only when reading it back resolves to a string
        // (the reader's own rules) and it is no YAML 1.1 base-60 float or timestamp.
        let can_use_plain =
            resolve_plain(s) == Resolved::String && !is_timestamp(s) && !is_base60_float(s);
        let multiline = s.contains('\n');
        // Only line breaks: a literal block of empty lines reads back empty here, so
        // such a string is double-quoted (a fuzz finding; yaml.v2 would write `|2+`).
        let only_breaks = s.chars().all(|c| c == '\n');
        let style = if multiline && !key {
            if a.block_allowed && !only_breaks {
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

/// Would yaml.v2 (2.4) read this plain text as a timestamp (and so must quote it)? Its
/// layouts are `2006-1-2`, optionally followed by `T`/`t` and `15:4:5[.frac]` with `Z`
/// or a `±hh:mm` offset, or by a space and `15:4:5[.frac]` alone. Go's `time.Parse`
/// rejects out-of-range fields, and text it rejects stays a plain string.
fn is_timestamp(s: &str) -> bool {
    /// `min` to `max` digits at the start of `s` with a value in `range`; the rest.
    fn field(s: &str, min: usize, max: usize, range: RangeInclusive<u32>) -> Option<&str> {
        let n = s.bytes().take_while(u8::is_ascii_digit).count();
        let value: u32 = s[..n].parse().ok()?;
        ((min..=max).contains(&n) && range.contains(&value)).then(|| &s[n..])
    }
    let Some(rest) = field(s, 4, 4, 0..=9999)
        .and_then(|r| r.strip_prefix('-'))
        .and_then(|r| field(r, 1, 2, 1..=12))
        .and_then(|r| r.strip_prefix('-'))
        .and_then(|r| field(r, 1, 2, 1..=31))
    else {
        return false;
    };
    let Some(sep) = rest.chars().next() else {
        return true;
    };
    if !matches!(sep, 'T' | 't' | ' ') {
        return false;
    }
    let Some(time) = field(&rest[1..], 1, 2, 0..=23)
        .and_then(|r| r.strip_prefix(':'))
        .and_then(|r| field(r, 1, 2, 0..=59))
        .and_then(|r| r.strip_prefix(':'))
        .and_then(|r| field(r, 1, 2, 0..=59))
    else {
        return false;
    };
    let time = match time.strip_prefix('.') {
        Some(f) => match f.bytes().take_while(u8::is_ascii_digit).count() {
            0 => return false,
            n => &f[n..],
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
            .and_then(|z| field(z, 2, 2, 0..=99))
            .and_then(|z| z.strip_prefix(':'))
            .and_then(|z| field(z, 2, 2, 0..=99))
            .is_some_and(str::is_empty)
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

/// A stable merge sort by `less`. yaml.v2's key order (`natural_cmp`) is not a total
/// order (digit runs overflow; punctuation against digits is not transitive), which
/// Go's `sort.Sort` tolerates and std's sort may answer with a panic. Merging only
/// asks which of two heads goes first, so it always ends with every element kept; for
/// keys the order does rank consistently the result is the one yaml.v2 writes.
fn merge_sort_by<T>(mut v: Vec<T>, less: &impl Fn(&T, &T) -> bool) -> Vec<T> {
    if v.len() < 2 {
        return v;
    }
    let right = v.split_off(v.len() / 2);
    let (left, right) = (merge_sort_by(v, less), merge_sort_by(right, less));
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut l, mut r) = (left.into_iter().peekable(), right.into_iter().peekable());
    while let (Some(a), Some(b)) = (l.peek(), r.peek()) {
        // Equal heads take the left one: stable.
        let next = if less(b, a) { r.next() } else { l.next() };
        out.extend(next);
    }
    out.extend(l);
    out.extend(r);
    out
}

/// yaml.v2's key order (`keyList.Less` in gopkg.in/yaml.v2 sorter.go).
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
            // Found by the fuzz target in CI: a key ending in two line breaks lost one.
            "|\n\n",
            "\n\n",
            "x\n\n\n",
            "  x\n\n",
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
            "2001-13-14",
            "2001-00-14",
            "2001-12-32",
            "2001-12-14T25:00:00Z",
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

#[cfg(test)]
mod key_order_tests {
    use super::*;

    /// Keys over a small alphabet of digits, letters and punctuation, many with digit
    /// runs long enough to overflow, where yaml.v2's order is not transitive.
    fn awkward_keys() -> Vec<String> {
        let parts = [
            "0",
            "1",
            "9",
            "00",
            "a",
            "-",
            ".",
            "99999999999999999999",
            "é",
            "٣",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut keys = std::collections::BTreeSet::new();
        while keys.len() < 4000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = 1 + (seed % 5) as usize;
            let key: String = (0..len)
                .map(|i| parts[((seed >> (8 * i)) % parts.len() as u64) as usize])
                .collect();
            keys.insert(key);
        }
        keys.into_iter().collect()
    }

    /// Found by the `yaml` fuzz target: std's sort may panic when the comparison is not
    /// a total order, and yaml.v2's is not one. Every key must still be written.
    #[test]
    fn keys_in_no_total_order_are_all_written() {
        let keys = awkward_keys();
        let v: serde_json::Map<String, serde_json::Value> = keys
            .iter()
            .map(|k| (k.clone(), serde_json::Value::Null))
            .collect();
        let text = to_yaml(&serde_json::Value::Object(v.clone()));
        let back = crate::to_json(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, serde_json::Value::Object(v));
    }
}
