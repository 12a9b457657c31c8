//! Go's `fmt` view of template values: `%v` text and type names, as Sprig sees them
//! through `fmt.Sprintf("%v")` and reflection.

use gotmpl::Value;

/// `fmt.Sprint(v)` for the value shapes templates can hold.
pub(crate) fn sprint(v: &Value) -> String {
    let mut out = String::new();
    write_v(&mut out, v);
    out
}

fn write_v(out: &mut String, v: &Value) {
    match v {
        Value::Nil => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Uint(u) => out.push_str(&u.to_string()),
        Value::Float(f) => out.push_str(&format_float_v(*f)),
        Value::String(s) => out.push_str(s),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_v(out, item);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push_str("map[");
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_v(out, item);
            }
            out.push(']');
        }
        Value::Function(_) => out.push_str("<func>"),
        #[allow(unreachable_patterns)]
        other => out.push_str(&other.to_string()),
    }
}

/// `%v` of a float64 (same as `strconv.FormatFloat(f, 'g', -1, 64)`).
pub(crate) fn format_float_v(f: f64) -> String {
    format_float_g(f, 6)
}

pub(crate) use kudo_yaml::format_float_g;

/// Go's `%T` for the types the data and Sprig produce.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "<nil>",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Uint(_) => "uint64",
        Value::Float(_) => "float64",
        Value::String(_) => "string",
        Value::List(_) => "[]interface {}",
        Value::Map(_) => "map[string]interface {}",
        Value::Function(_) => "func",
        #[allow(unreachable_patterns)]
        _ => "string",
    }
}

/// Go's `reflect.Kind` names.
pub(crate) fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "invalid",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Uint(_) => "uint64",
        Value::Float(_) => "float64",
        Value::String(_) => "string",
        Value::List(_) => "slice",
        Value::Map(_) => "map",
        Value::Function(_) => "func",
        #[allow(unreachable_patterns)]
        _ => "string",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_go() {
        assert_eq!(format_float_v(1.0), "1");
        assert_eq!(format_float_v(1.5), "1.5");
        assert_eq!(format_float_v(0.0001), "0.0001");
        assert_eq!(format_float_v(0.00001), "1e-05");
        assert_eq!(format_float_v(1e20), "1e+20");
        assert_eq!(format_float_v(123456.0), "123456");
        assert_eq!(format_float_v(1e8), "1e+08");
        assert_eq!(format_float_v(-2.5e-7), "-2.5e-07");
        assert_eq!(format_float_g(1e6, 6), "1e+06");
        assert_eq!(format_float_g(123456.0, 6), "123456");
        assert_eq!(format_float_g(1234567.0, 6), "1.234567e+06");
    }

    #[test]
    fn composite_values_print_like_go() {
        let v = Value::List(vec![Value::Int(1), Value::String("a".into()), Value::Nil].into());
        assert_eq!(sprint(&v), "[1 a <nil>]");
    }
}
