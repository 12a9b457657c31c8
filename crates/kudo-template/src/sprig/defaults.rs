//! `default`, `empty`, `coalesce`, `ternary`, `compact`, `deepCopy`.

use gotmpl::Value;

use super::Reg;
use super::args::{arity, arity_min, boolean};

/// Sprig's `empty`: the zero value of its type (nil, false, 0, "", empty list or map).
pub(crate) fn is_empty(v: &Value) -> bool {
    match v {
        Value::Nil => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Uint(u) => *u == 0,
        Value::Float(f) => *f == 0.0,
        Value::String(st) => st.is_empty(),
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.is_empty(),
        _ => false,
    }
}

pub(super) fn register(m: &mut Reg) {
    m.add("default", |a| {
        arity_min("default", a, 1)?;
        match a.get(1) {
            Some(given) if !is_empty(given) => Ok(given.clone()),
            _ => Ok(a[0].clone()),
        }
    });
    m.add("empty", |a| {
        arity("empty", a, 1)?;
        Ok(Value::Bool(is_empty(&a[0])))
    });
    m.add("coalesce", |a| {
        Ok(a.iter()
            .find(|v| !is_empty(v))
            .cloned()
            .unwrap_or(Value::Nil))
    });
    m.add("ternary", |a| {
        arity("ternary", a, 3)?;
        Ok(if boolean("ternary", &a[2])? {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
    m.add("deepCopy", |a| {
        arity("deepCopy", a, 1)?;
        Ok(a[0].clone())
    });
}

#[cfg(test)]
mod tests {
    use crate::sprig::test_util::{r, rp};

    #[test]
    fn default_and_empty_follow_go_zero_values() {
        assert_eq!(
            r(
                r#"{{ default "d" "" }}|{{ default "d" "x" }}|{{ default "d" 0 }}|{{ default "d" nil }}|{{ "" | default "p" }}"#
            ),
            "d|x|d|d|p"
        );
        assert_eq!(r(r#"{{ default "d" }}"#), "d");
        assert_eq!(
            r(
                r#"{{ empty 0 }} {{ empty "" }} {{ empty nil }} {{ empty (list) }} {{ empty (dict) }} {{ empty false }} {{ empty 0.0 }}"#
            ),
            "true true true true true true true"
        );
        assert_eq!(
            r(r#"{{ empty 1 }} {{ empty "0" }} {{ empty (list 0) }}"#),
            "false false false"
        );
        assert_eq!(rp(r#"{{ empty .Params.X }}"#, &[("X", "false")]), "false");
    }

    #[test]
    fn coalesce_and_ternary() {
        assert_eq!(
            r(r#"{{ coalesce 0 "" "x" "y" }}|{{ coalesce 0 nil }}"#),
            "x|<no value>"
        );
        assert_eq!(
            r(r#"{{ ternary "a" "b" true }}{{ ternary "a" "b" false }}{{ true | ternary 1 2 }}"#),
            "ab1"
        );
    }

    #[test]
    fn params_are_strings_so_bool_comparison_fails_as_in_go() {
        use crate::sprig::test_util::try_rp;
        assert!(try_rp(r#"{{ eq .Params.X true }}"#, &[("X", "true")]).is_err());
        assert_eq!(
            rp(r#"{{ if .Params.X }}set{{ end }}"#, &[("X", "false")]),
            "set"
        );
    }

    #[test]
    fn eq_compares_strings_as_kudo_templates_do() {
        assert_eq!(
            rp(
                r#"{{ if eq .Params.X "true" }}on{{ else }}off{{ end }}"#,
                &[("X", "true")]
            ),
            "on"
        );
        assert_eq!(
            rp(
                r#"{{ if eq .Params.X "true" }}on{{ else }}off{{ end }}"#,
                &[("X", "True")]
            ),
            "off"
        );
    }
}
