//! yaml.v2's resolution of plain scalars (YAML 1.1 as Kubernetes applies it).

/// What a plain scalar means.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    Null,
    Bool(bool),
    Int(i64),
    /// Integers above `i64::MAX` that still fit an unsigned 64-bit value (yaml.v2 tries
    /// ParseUint after ParseInt).
    UInt(u64),
    Float(f64),
    /// `<<`, only meaningful as a mapping key.
    Merge,
    String,
}

const TRUE_WORDS: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
];
const FALSE_WORDS: &[&str] = &[
    "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
];
const NULL_WORDS: &[&str] = &["", "~", "null", "Null", "NULL"];
const NAN_WORDS: &[&str] = &[".nan", ".NaN", ".NAN"];
const INF_WORDS: &[&str] = &[".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"];
const NEG_INF_WORDS: &[&str] = &["-.inf", "-.Inf", "-.INF"];

/// Resolve the text of a plain (unquoted, untagged) scalar.
pub fn resolve_plain(text: &str) -> Resolved {
    if NULL_WORDS.contains(&text) {
        return Resolved::Null;
    }
    if TRUE_WORDS.contains(&text) {
        return Resolved::Bool(true);
    }
    if FALSE_WORDS.contains(&text) {
        return Resolved::Bool(false);
    }
    if NAN_WORDS.contains(&text) {
        return Resolved::Float(f64::NAN);
    }
    if INF_WORDS.contains(&text) {
        return Resolved::Float(f64::INFINITY);
    }
    if NEG_INF_WORDS.contains(&text) {
        return Resolved::Float(f64::NEG_INFINITY);
    }
    if text == "<<" {
        return Resolved::Merge;
    }
    // yaml.v2 only tries numbers when the first byte hints at one.
    match text.as_bytes().first() {
        Some(b'.') => match parse_float(text) {
            Some(f) => Resolved::Float(f),
            None => Resolved::String,
        },
        Some(b'0'..=b'9' | b'+' | b'-') => resolve_number(text),
        _ => Resolved::String,
    }
}

fn resolve_number(text: &str) -> Resolved {
    // yaml.v2 drops every underscore before trying the Go parsers.
    let plain: String = text.chars().filter(|c| *c != '_').collect();
    if let Some(i) = go_parse_int(&plain) {
        return Resolved::Int(i);
    }
    if let Some(u) = go_parse_uint(&plain) {
        return Resolved::UInt(u);
    }
    if is_yaml_style_float(&plain)
        && let Some(f) = parse_float(&plain)
    {
        return Resolved::Float(f);
    }
    Resolved::String
}

/// Go's `strconv.ParseFloat` rejects out-of-range values; Rust turns them into infinity.
fn parse_float(text: &str) -> Option<f64> {
    let lower = text.to_ascii_lowercase();
    // Rust also accepts "inf"/"nan" spellings that yaml.v2 never reaches here.
    if lower.contains("inf") || lower.contains("nan") {
        return None;
    }
    text.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Split a Go base-0 literal (sign already removed) into radix and digits.
fn radix_and_digits(s: &str) -> (u32, &str) {
    let b = s.as_bytes();
    if b.len() >= 2 && b[0] == b'0' {
        match b[1] {
            b'x' | b'X' => return (16, &s[2..]),
            b'o' | b'O' => return (8, &s[2..]),
            b'b' | b'B' => return (2, &s[2..]),
            _ => return (8, &s[1..]),
        }
    }
    (10, s)
}

fn parse_magnitude(s: &str) -> Option<u128> {
    let (radix, digits) = radix_and_digits(s);
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u128::from_str_radix(digits, radix).ok()
}

/// Go `strconv.ParseInt(s, 0, 64)`.
pub(crate) fn go_parse_int(s: &str) -> Option<i64> {
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = parse_magnitude(rest)?;
    if negative {
        let v = i128::try_from(magnitude).ok()?;
        i64::try_from(-v).ok()
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Go `strconv.ParseUint(s, 0, 64)`: no sign allowed.
fn go_parse_uint(s: &str) -> Option<u64> {
    if s.starts_with(['+', '-']) {
        return None;
    }
    u64::try_from(parse_magnitude(s)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words() {
        for w in ["y", "Yes", "ON", "true", "True"] {
            assert_eq!(resolve_plain(w), Resolved::Bool(true), "{w}");
        }
        for w in ["n", "NO", "off", "False"] {
            assert_eq!(resolve_plain(w), Resolved::Bool(false), "{w}");
        }
        for w in ["~", "null", "Null", "NULL", ""] {
            assert_eq!(resolve_plain(w), Resolved::Null, "{w}");
        }
        for w in ["yES", "tRUE", "nULL", "Off2", "NaN", "inf"] {
            assert_eq!(resolve_plain(w), Resolved::String, "{w}");
        }
    }

    #[test]
    fn integers_like_go_parse_int_base_zero() {
        let cases = [
            ("0755", 493),
            ("0x1F", 31),
            ("0b101", 5),
            ("0o17", 15),
            ("+12", 12),
            ("-12", -12),
            ("1_000", 1000),
            ("0", 0),
            ("-0x10", -16),
        ];
        for (text, want) in cases {
            assert_eq!(resolve_plain(text), Resolved::Int(want), "{text}");
        }
        assert_eq!(
            resolve_plain("18446744073709551615"),
            Resolved::UInt(u64::MAX)
        );
    }

    #[test]
    fn floats_and_strings() {
        assert_eq!(resolve_plain("5.7"), Resolved::Float(5.7));
        assert_eq!(resolve_plain("1e3"), Resolved::Float(1000.0));
        assert_eq!(resolve_plain(".5"), Resolved::Float(0.5));
        // Invalid octal falls through to the float pattern, as in yaml.v2.
        assert_eq!(resolve_plain("08"), Resolved::Float(8.0));
        assert_eq!(resolve_plain(".inf"), Resolved::Float(f64::INFINITY));
        assert!(matches!(resolve_plain(".NaN"), Resolved::Float(f) if f.is_nan()));
        for s in [
            "1.2.3",
            "2001-12-14",
            "0x",
            "1e",
            "-",
            "12abc",
            "1:20",
            "0.1.0",
        ] {
            assert_eq!(resolve_plain(s), Resolved::String, "{s}");
        }
        assert_eq!(resolve_plain("<<"), Resolved::Merge);
    }
}
