//! encoding/json output for `toJson`/`toPrettyJson`: HTML-safe escaping (`<`, `>`,
//! `&`, U+2028/9 as `\u` escapes), sorted keys, Go's float formatting.

use gotmpl::Value;

pub(crate) fn to_json(v: &Value, pretty: bool) -> String {
    let mut out = String::new();
    write(&mut out, v, pretty, 0);
    out
}

fn newline(out: &mut String, pretty: bool, depth: usize) {
    if pretty {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    }
}

fn write(out: &mut String, v: &Value, pretty: bool, depth: usize) {
    match v {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Uint(u) => out.push_str(&u.to_string()),
        Value::Float(f) => out.push_str(&float(*f)),
        Value::String(st) => string(out, st),
        Value::List(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, pretty, depth + 1);
                write(out, item, pretty, depth + 1);
            }
            newline(out, pretty, depth);
            out.push(']');
        }
        Value::Map(m) => {
            if m.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, pretty, depth + 1);
                string(out, k);
                out.push(':');
                if pretty {
                    out.push(' ');
                }
                write(out, item, pretty, depth + 1);
            }
            newline(out, pretty, depth);
            out.push('}');
        }
        _ => out.push_str("null"),
    }
}

fn float(f: f64) -> String {
    if !f.is_finite() {
        // json.Marshal fails on these; Sprig then prints an empty string. Rare enough
        // to render as null rather than thread an error through.
        return "null".into();
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let e = crate::gofmt::format_float_g(f, 0);
        // Go writes e-07 as e-7 in JSON.
        return e.replace("e-0", "e-");
    }
    let st = format!("{f}");
    st
}

fn string(out: &mut String, st: &str) {
    out.push('"');
    for c in st.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use crate::sprig::test_util::r;

    #[test]
    fn json_like_encoding_json() {
        assert_eq!(
            r(r#"{{ toJson (dict "b" 1 "a" (list "x<y" 1.5 nil true)) }}"#),
            r#"{"a":["x\u003cy",1.5,null,true],"b":1}"#
        );
        assert_eq!(
            r(r#"{{ toPrettyJson (dict "a" (list 1)) }}"#),
            "{\n  \"a\": [\n    1\n  ]\n}"
        );
        assert_eq!(
            r(r#"{{ toJson 1e21 }} {{ toJson 0.0000001 }} {{ toJson 100.0 }}"#),
            "1e+21 1e-7 100"
        );
    }
}
