//! String functions. Byte-indexed ones (`trunc`, `substr`, `abbrev`) slice bytes as Go
//! does; a cut inside a multi-byte character or out of range is an error here where Go
//! would panic (text/template turns that panic into an error too).

use gotmpl::{TemplateError, Value};

use super::Reg;
use super::args::{R, arity, arity_min, check_size, fail, int, s, string, strings};
use super::conv::strval;

fn byte_slice(name: &str, st: &str, from: i64, to: i64) -> R {
    let (Ok(f), Ok(t)) = (usize::try_from(from), usize::try_from(to)) else {
        return Err(fail(
            name,
            format!("runtime error: slice bounds out of range [{from}:{to}]"),
        ));
    };
    match st.as_bytes().get(f..t) {
        Some(b) => Ok(s(String::from_utf8_lossy(b))),
        None => Err(fail(
            name,
            format!(
                "runtime error: slice bounds out of range [{from}:{to}] with length {}",
                st.len()
            ),
        )),
    }
}

/// Apache-commons style abbreviation with "..." (goutils.AbbreviateFull).
fn abbreviate_full(st: &str, offset: i64, max_width: i64) -> String {
    let len = st.len() as i64;
    if len <= max_width {
        return st.to_string();
    }
    let cut = |a: i64, b: i64| -> String {
        String::from_utf8_lossy(
            st.as_bytes()
                .get(a.max(0) as usize..b.clamp(0, len) as usize)
                .unwrap_or_default(),
        )
        .into_owned()
    };
    let mut offset = offset.min(len);
    if len - offset < max_width - 3 {
        offset = len - (max_width - 3);
    }
    if offset <= 4 {
        return format!("{}...", cut(0, max_width - 3));
    }
    if offset + max_width - 3 < len {
        return format!(
            "...{}",
            abbreviate_full(&cut(offset, len), 0, max_width - 3)
        );
    }
    format!("...{}", cut(len - (max_width - 3), len))
}

/// Go maps case rune by rune: a character whose upper case is several characters
/// ("ß" -> "SS" in Rust) stays as it is.
fn upper_rune(c: char) -> char {
    let mut up = c.to_uppercase();
    match (up.next(), up.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

fn lower_rune(c: char) -> char {
    let mut low = c.to_lowercase();
    match (low.next(), low.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// Go's strings.Title: upper-case the first letter of every word.
fn title(st: &str) -> String {
    let mut out = String::with_capacity(st.len());
    let mut prev_sep = true;
    for c in st.chars() {
        if prev_sep {
            out.push(upper_rune(c));
        } else {
            out.push(c);
        }
        prev_sep = is_separator(c);
    }
    out
}

fn is_separator(c: char) -> bool {
    if c.is_ascii() {
        return !(c.is_ascii_alphanumeric() || c == '_');
    }
    if c.is_alphanumeric() {
        return false;
    }
    c.is_whitespace()
}

/// goutils: change the first letter of each whitespace-separated word.
fn map_word_starts(st: &str, f: impl Fn(char) -> String) -> String {
    let mut out = String::with_capacity(st.len());
    let mut at_start = true;
    for c in st.chars() {
        if c.is_whitespace() {
            at_start = true;
            out.push(c);
        } else if at_start {
            out.push_str(&f(c));
            at_start = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn swapcase(st: &str) -> String {
    let mut out = String::with_capacity(st.len());
    for c in st.chars() {
        if c.is_uppercase() {
            out.extend(c.to_lowercase());
        } else if c.is_lowercase() {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Split into words for snake/kebab case: separators ' ', '_', '-', '.', and case
/// changes ("HTTPServer" -> HTTP, Server; "firstName" -> first, Name).
fn words(st: &str) -> Vec<String> {
    let chars: Vec<char> = st.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if matches!(c, ' ' | '_' | '-' | '.') {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_uppercase() && !cur.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn joined_lower(st: &str, sep: &str) -> String {
    words(st)
        .iter()
        .map(|w| w.to_lowercase())
        .collect::<Vec<_>>()
        .join(sep)
}

/// xstrings.ToCamelCase: letters after underscores upper-cased, underscores dropped,
/// first letter upper-cased; leading/trailing and doubled underscores kept once.
fn camelcase(st: &str) -> String {
    let mut out = String::with_capacity(st.len());
    let chars: Vec<char> = st.chars().collect();
    let mut upper_next = true;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '_' {
            let next_is_word = chars.get(i + 1).is_some_and(|n| *n != '_');
            if i == 0 || !next_is_word {
                out.push('_');
            }
            upper_next = true;
        } else if upper_next {
            out.extend(c.to_uppercase());
            upper_next = false;
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

/// goutils.WrapCustom: break at spaces so lines stay within `width`; words longer
/// than the width are split only when `long_words`.
fn wrap(st: &str, width: i64, sep: &str, long_words: bool) -> String {
    let width = width.max(1) as usize;
    let mut out = String::new();
    for (li, line) in st.split('\n').enumerate() {
        if li > 0 {
            out.push_str(sep);
        }
        let mut rest = line.trim_start_matches(' ');
        let mut first = true;
        while rest.len() > width {
            if !first {
                out.push_str(sep);
            }
            first = false;
            let window = rest.get(..=width).unwrap_or(rest);
            if let Some(sp) = window.rfind(' ') {
                out.push_str(&rest[..sp]);
                rest = rest[sp + 1..].trim_start_matches(' ');
            } else if long_words {
                let cut = (0..=width)
                    .rev()
                    .find(|i| rest.is_char_boundary(*i))
                    .unwrap_or(0);
                out.push_str(&rest[..cut]);
                rest = &rest[cut..];
            } else {
                match rest.find(' ') {
                    Some(sp) => {
                        out.push_str(&rest[..sp]);
                        rest = rest[sp + 1..].trim_start_matches(' ');
                    }
                    None => {
                        out.push_str(rest);
                        rest = "";
                    }
                }
            }
        }
        if !rest.is_empty() {
            if !first {
                out.push_str(sep);
            }
            out.push_str(rest);
        }
    }
    out
}

fn indent(name: &str, spaces: i64, v: &str) -> Result<String, TemplateError> {
    let spaces = usize::try_from(spaces.max(0)).unwrap_or(usize::MAX);
    let lines = v.matches('\n').count().saturating_add(1);
    check_size(name, spaces.saturating_mul(lines).saturating_add(v.len()))?;
    let pad = " ".repeat(spaces);
    Ok(format!("{pad}{}", v.replace('\n', &format!("\n{pad}"))))
}

fn go_quote(st: &str) -> String {
    let mut o = String::from("\"");
    for c in st.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            '\u{7}' => o.push_str("\\a"),
            '\u{8}' => o.push_str("\\b"),
            '\u{c}' => o.push_str("\\f"),
            '\u{b}' => o.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                o.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if !go_printable(c) => {
                if (c as u32) <= 0xffff {
                    o.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    o.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// strconv.IsPrint, approximated: Rust has no Unicode category table, so treat
/// controls, non-ASCII spaces and the common format characters as unprintable.
fn go_printable(c: char) -> bool {
    !(c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}'))
}

fn str_fn(m: &mut Reg, name: &'static str, f: fn(&str) -> String) {
    m.add(name, move |a| {
        arity(name, a, 1)?;
        Ok(s(f(&string(name, &a[0])?)))
    });
}

/// Two string parameters where the subject comes last (pipeline friendly).
fn str2_fn(m: &mut Reg, name: &'static str, f: fn(&str, &str) -> Value) {
    m.add(name, move |a| {
        arity(name, a, 2)?;
        Ok(f(&string(name, &a[0])?, &string(name, &a[1])?))
    });
}

pub(super) fn register(m: &mut Reg) {
    str_fn(m, "trim", |x| x.trim().to_string());
    str_fn(m, "upper", |x| x.chars().map(upper_rune).collect());
    str_fn(m, "lower", |x| x.chars().map(lower_rune).collect());
    str_fn(m, "title", title);
    str_fn(m, "untitle", |x| {
        map_word_starts(x, |c| c.to_lowercase().collect())
    });
    str_fn(m, "nospace", |x| {
        x.chars().filter(|c| !c.is_whitespace()).collect()
    });
    str_fn(m, "initials", |x| {
        x.split_whitespace()
            .filter_map(|w| w.chars().next())
            .collect()
    });
    str_fn(m, "swapcase", swapcase);
    str_fn(m, "snakecase", |x| joined_lower(x, "_"));
    str_fn(m, "kebabcase", |x| joined_lower(x, "-"));
    str_fn(m, "camelcase", camelcase);
    for name in ["trimall", "trimAll"] {
        str2_fn(m, name, |cut, x| s(x.trim_matches(|c| cut.contains(c))));
    }
    str2_fn(m, "trimSuffix", |suf, x| {
        s(x.strip_suffix(suf).unwrap_or(x))
    });
    str2_fn(m, "trimPrefix", |pre, x| {
        s(x.strip_prefix(pre).unwrap_or(x))
    });
    str2_fn(m, "contains", |sub, x| Value::Bool(x.contains(sub)));
    str2_fn(m, "hasPrefix", |pre, x| Value::Bool(x.starts_with(pre)));
    str2_fn(m, "hasSuffix", |suf, x| Value::Bool(x.ends_with(suf)));
    str2_fn(m, "splitList", |sep, x| strings(go_split(x, sep, -1)));
    str2_fn(m, "split", |sep, x| split_map(go_split(x, sep, -1)));

    m.add("abbrev", |a| {
        arity("abbrev", a, 2)?;
        let (w, st) = (int("abbrev", &a[0])?, string("abbrev", &a[1])?);
        if w < 4 {
            return Ok(s(&*st));
        }
        Ok(s(abbreviate_full(&st, 0, w)))
    });
    m.add("abbrevboth", |a| {
        arity("abbrevboth", a, 3)?;
        let (l, r, st) = (
            int("abbrevboth", &a[0])?,
            int("abbrevboth", &a[1])?,
            string("abbrevboth", &a[2])?,
        );
        if r < 4 || (l > 0 && r < 7) {
            return Ok(s(&*st));
        }
        Ok(s(abbreviate_full(&st, l, r)))
    });
    m.add("trunc", |a| {
        arity("trunc", a, 2)?;
        let (c, st) = (int("trunc", &a[0])?, string("trunc", &a[1])?);
        if st.len() as i64 <= c {
            return Ok(s(&*st));
        }
        byte_slice("trunc", &st, 0, c)
    });
    m.add("substr", |a| {
        arity("substr", a, 3)?;
        let (start, end, st) = (
            int("substr", &a[0])?,
            int("substr", &a[1])?,
            string("substr", &a[2])?,
        );
        if start < 0 {
            return byte_slice("substr", &st, 0, end);
        }
        if end < 0 || end > st.len() as i64 {
            return byte_slice("substr", &st, start, st.len() as i64);
        }
        byte_slice("substr", &st, start, end)
    });
    m.add("repeat", |a| {
        arity("repeat", a, 2)?;
        let (n, st) = (int("repeat", &a[0])?, string("repeat", &a[1])?);
        let n = usize::try_from(n).map_err(|_| fail("repeat", "strings: negative Repeat count"))?;
        check_size("repeat", n.saturating_mul(st.len()))?;
        Ok(s(st.repeat(n)))
    });
    m.add("wrap", |a| {
        arity("wrap", a, 2)?;
        Ok(s(wrap(
            &string("wrap", &a[1])?,
            int("wrap", &a[0])?,
            "\n",
            false,
        )))
    });
    m.add("wrapWith", |a| {
        arity("wrapWith", a, 3)?;
        Ok(s(wrap(
            &string("wrapWith", &a[2])?,
            int("wrapWith", &a[0])?,
            &string("wrapWith", &a[1])?,
            true,
        )))
    });
    m.add("quote", |a| {
        Ok(s(a
            .iter()
            .filter(|v| !matches!(v, Value::Nil))
            .map(|v| go_quote(&strval(v)))
            .collect::<Vec<_>>()
            .join(" ")))
    });
    m.add("squote", |a| {
        Ok(s(a
            .iter()
            .filter(|v| !matches!(v, Value::Nil))
            .map(|v| format!("'{}'", strval(v)))
            .collect::<Vec<_>>()
            .join(" ")))
    });
    m.add("cat", |a| {
        Ok(s(a
            .iter()
            .filter(|v| !matches!(v, Value::Nil))
            .map(strval)
            .collect::<Vec<_>>()
            .join(" ")))
    });
    m.add("indent", |a| {
        arity("indent", a, 2)?;
        Ok(s(indent(
            "indent",
            int("indent", &a[0])?,
            &string("indent", &a[1])?,
        )?))
    });
    m.add("nindent", |a| {
        arity("nindent", a, 2)?;
        Ok(s(format!(
            "\n{}",
            indent(
                "nindent",
                int("nindent", &a[0])?,
                &string("nindent", &a[1])?
            )?
        )))
    });
    m.add("replace", |a| {
        arity("replace", a, 3)?;
        let (old, new, src) = (
            string("replace", &a[0])?,
            string("replace", &a[1])?,
            string("replace", &a[2])?,
        );
        Ok(s(go_replace_all(&src, &old, &new)))
    });
    m.add("plural", |a| {
        arity("plural", a, 3)?;
        let (one, many, n) = (
            string("plural", &a[0])?,
            string("plural", &a[1])?,
            int("plural", &a[2])?,
        );
        Ok(s(if n == 1 { one } else { many }))
    });
    m.add("splitn", |a| {
        arity("splitn", a, 3)?;
        let (sep, n, x) = (
            string("splitn", &a[0])?,
            int("splitn", &a[1])?,
            string("splitn", &a[2])?,
        );
        Ok(split_map(go_split(&x, &sep, n)))
    });
    m.add("join", |a| {
        arity("join", a, 2)?;
        let sep = string("join", &a[0])?;
        Ok(s(super::conv::strslice(&a[1]).join(&sep)))
    });
    m.add("sortAlpha", |a| {
        arity("sortAlpha", a, 1)?;
        let mut items = match &a[0] {
            Value::List(_) => super::conv::strslice(&a[0]),
            other => vec![strval(other)],
        };
        items.sort();
        Ok(strings(items))
    });
    let _ = arity_min;
}

/// strings.Replace(src, old, new, -1): an empty `old` inserts `new` around every rune.
fn go_replace_all(src: &str, old: &str, new: &str) -> String {
    if old.is_empty() {
        let mut out = String::from(new);
        for c in src.chars() {
            out.push(c);
            out.push_str(new);
        }
        return out;
    }
    src.replace(old, new)
}

/// strings.SplitN: an empty separator splits into runes; n < 0 means no limit, n == 0
/// gives nothing.
fn go_split(x: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = x.chars().map(String::from).collect();
        if n > 0 && chars.len() > n as usize {
            let k = n as usize - 1;
            let mut out: Vec<String> = chars[..k].to_vec();
            out.push(chars[k..].concat());
            return out;
        }
        return chars;
    }
    if n < 0 {
        x.split(sep).map(str::to_string).collect()
    } else {
        x.splitn(n as usize, sep).map(str::to_string).collect()
    }
}

fn split_map(parts: Vec<String>) -> Value {
    let m: std::collections::BTreeMap<std::sync::Arc<str>, Value> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| (std::sync::Arc::from(format!("_{i}").as_str()), s(p)))
        .collect();
    Value::Map(std::sync::Arc::new(m))
}

#[cfg(test)]
mod tests {
    use crate::sprig::test_util::{err, r};

    #[test]
    fn case_and_trim() {
        assert_eq!(
            r(r#"{{ upper "abc" }} {{ lower "ABC" }} {{ title "hello wor-ld" }}"#),
            "ABC abc Hello Wor-Ld"
        );
        assert_eq!(r(r#"{{ untitle "Hello World" }}"#), "hello world");
        assert_eq!(
            r(
                r#"{{ trim "  x  " }}|{{ trimAll "$" "$5.00$" }}|{{ trimSuffix "-" "a-" }}|{{ trimPrefix "-" "-a" }}"#
            ),
            "x|5.00|a|a"
        );
        assert_eq!(
            r(r#"{{ nospace "a b\tc" }} {{ initials "First Try" }}"#),
            "abc FT"
        );
        assert_eq!(r(r#"{{ swapcase "Hello World" }}"#), "hELLO wORLD");
        assert_eq!(
            r(
                r#"{{ snakecase "FirstName" }} {{ snakecase "HTTPServer" }} {{ kebabcase "FirstName" }}"#
            ),
            "first_name http_server first-name"
        );
        assert_eq!(
            r(r#"{{ camelcase "http_server" }} {{ camelcase "_complex__case_" }}"#),
            "HttpServer _Complex_Case_"
        );
    }

    #[test]
    fn slicing() {
        assert_eq!(
            r(r#"{{ trunc 5 "hello world" }}|{{ trunc 50 "hi" }}"#),
            "hello|hi"
        );
        assert_eq!(
            r(r#"{{ substr 0 5 "hello world" }}|{{ substr 6 -1 "hello world" }}"#),
            "hello|world"
        );
        assert_eq!(
            r(r#"{{ abbrev 5 "hello world" }}|{{ abbrev 3 "hello" }}"#),
            "he...|hello"
        );
        assert_eq!(r(r#"{{ abbrevboth 5 10 "1234 5678 9123" }}"#), "...5678...");
        assert!(err(r#"{{ trunc -1 "abc" }}"#).contains("trunc"));
    }

    #[test]
    fn building() {
        assert_eq!(r(r#"{{ quote "\x01é\u2028" }}"#), r#""\x01é\u2028""#);
        assert_eq!(r(r#"{{ upper "straße" }}"#), "STRAßE");
        assert_eq!(
            r(r#"{{ repeat 3 "ab" }}|{{ cat "a" 1 nil "b" }}|{{ replace " " "-" "a b c" }}"#),
            "ababab|a 1 b|a-b-c"
        );
        assert_eq!(
            r(r#"{{ quote "a\"b" 3 }}|{{ squote "x" }}"#),
            r#""a\"b" "3"|'x'"#
        );
        assert_eq!(
            r(r#"{{ indent 2 "a\nb" }}|{{ nindent 1 "x" }}"#),
            "  a\n  b|\n x"
        );
        assert_eq!(
            r(r#"{{ plural "one" "many" 1 }} {{ plural "one" "many" 2 }}"#),
            "one many"
        );
        assert_eq!(r(r#"{{ wrap 5 "hello big world" }}"#), "hello\nbig\nworld");
        assert_eq!(r(r#"{{ wrapWith 5 "\t" "Hello World" }}"#), "Hello\tWorld");
        assert_eq!(
            r(
                r#"{{ contains "cat" "catch" }} {{ hasPrefix "ca" "cat" }} {{ hasSuffix "x" "cat" }}"#
            ),
            "true true false"
        );
    }

    #[test]
    fn splitting_and_joining() {
        assert_eq!(r(r#"{{ splitList "," "a,b,c" }}"#), "[a b c]");
        assert_eq!(
            r(r#"{{ $p := split "$" "foo$bar$baz" }}{{ $p._0 }}{{ $p._2 }}"#),
            "foobaz"
        );
        assert_eq!(
            r(r#"{{ $p := splitn "$" 2 "foo$bar$baz" }}{{ $p._1 }}"#),
            "bar$baz"
        );
        assert_eq!(r(r#"{{ join "-" (list "a" 1 nil true) }}"#), "a-1-true");
        assert_eq!(r(r#"{{ sortAlpha (list "b" "a" "C") }}"#), "[C a b]");
        assert_eq!(r(r#"{{ join "," "solo" }}"#), "solo");
    }

    #[test]
    fn typed_parameters_reject_other_types() {
        assert!(err(r#"{{ upper 3 }}"#).contains("expected string; got int"));
        assert!(err(r#"{{ repeat "3" "x" }}"#).contains("expected int; got string"));
    }
}
