//! List functions (Sprig v2: non-list arguments are errors where v2 panics).

use std::sync::Arc;

use gotmpl::Value;

use super::Reg;
use super::args::{R, arity, arity_min, fail};
use super::conv::to_int64;
use crate::gofmt::type_name;

fn list<'a>(name: &str, v: &'a Value) -> Result<&'a [Value], gotmpl::TemplateError> {
    match v {
        Value::List(l) => Ok(l),
        other => Err(fail(
            name,
            format!("Cannot find {name} on type {}", type_name(other)),
        )),
    }
}

/// reflect.DeepEqual on template values (types must match: 1 and 1.0 differ).
pub(crate) fn deep_equal(a: &Value, b: &Value) -> bool {
    a == b
}

fn list_fn(m: &mut Reg, name: &'static str, f: fn(&[Value]) -> Value) {
    m.add(name, move |a| {
        arity(name, a, 1)?;
        if matches!(a[0], Value::Nil) {
            return Ok(Value::Nil);
        }
        Ok(f(list(name, &a[0])?))
    });
}

fn l(v: Vec<Value>) -> Value {
    Value::List(Arc::from(v))
}

pub(super) fn register(m: &mut Reg) {
    for name in ["list", "tuple"] {
        m.add(name, |a| Ok(l(a.to_vec())));
    }
    for name in ["append", "push"] {
        m.add(name, move |a| -> R {
            arity(name, a, 2)?;
            let mut v = list("push", &a[0])?.to_vec();
            v.push(a[1].clone());
            Ok(l(v))
        });
    }
    m.add("prepend", |a| {
        arity("prepend", a, 2)?;
        let mut v = vec![a[1].clone()];
        v.extend_from_slice(list("prepend", &a[0])?);
        Ok(l(v))
    });
    list_fn(m, "first", |v| v.first().cloned().unwrap_or(Value::Nil));
    list_fn(m, "last", |v| v.last().cloned().unwrap_or(Value::Nil));
    list_fn(m, "rest", |v| {
        if v.is_empty() {
            Value::Nil
        } else {
            l(v[1..].to_vec())
        }
    });
    list_fn(m, "initial", |v| {
        if v.is_empty() {
            Value::Nil
        } else {
            l(v[..v.len() - 1].to_vec())
        }
    });
    list_fn(m, "reverse", |v| l(v.iter().rev().cloned().collect()));
    list_fn(m, "uniq", |v| {
        let mut out: Vec<Value> = Vec::new();
        for item in v {
            if !out.iter().any(|o| deep_equal(o, item)) {
                out.push(item.clone());
            }
        }
        l(out)
    });
    list_fn(m, "compact", |v| {
        l(v.iter()
            .filter(|i| !super::defaults::is_empty(i))
            .cloned()
            .collect())
    });
    m.add("without", |a| {
        arity_min("without", a, 1)?;
        let omit = &a[1..];
        Ok(l(list("without", &a[0])?
            .iter()
            .filter(|i| !omit.iter().any(|o| deep_equal(o, i)))
            .cloned()
            .collect()))
    });
    m.add("has", |a| {
        arity("has", a, 2)?;
        match &a[1] {
            Value::Nil => Ok(Value::Bool(false)),
            Value::List(items) => Ok(Value::Bool(items.iter().any(|i| deep_equal(i, &a[0])))),
            other => Err(fail(
                "has",
                format!("Cannot find has on type {}", type_name(other)),
            )),
        }
    });
    m.add("slice", |a| {
        arity_min("slice", a, 1)?;
        let items = list("slice", &a[0])?;
        let start = a.get(1).map_or(0, to_int64);
        let end = a.get(2).map_or(items.len() as i64, to_int64);
        let (Ok(s), Ok(e)) = (usize::try_from(start), usize::try_from(end)) else {
            return Err(fail("slice", "runtime error: slice bounds out of range"));
        };
        items.get(s..e).map(|v| l(v.to_vec())).ok_or_else(|| {
            fail(
                "slice",
                format!("runtime error: slice bounds out of range [{s}:{e}]"),
            )
        })
    });
    m.add("concat", |a| {
        let mut out = Vec::new();
        for v in a {
            out.extend_from_slice(list("concat", v)?);
        }
        Ok(l(out))
    });
}

#[cfg(test)]
mod tests {
    use crate::sprig::test_util::{err, r};

    #[test]
    fn list_basics() {
        assert_eq!(
            r(r#"{{ list 1 "a" }}|{{ tuple }}|{{ append (list 1) 2 }}|{{ prepend (list 1) 0 }}"#),
            "[1 a]|[]|[1 2]|[0 1]"
        );
        assert_eq!(
            r(
                r#"{{ first (list 1 2 3) }} {{ last (list 1 2 3) }} {{ rest (list 1 2 3) }} {{ initial (list 1 2 3) }}"#
            ),
            "1 3 [2 3] [1 2]"
        );
        assert_eq!(r(r#"{{ first (list) }}"#), "<no value>");
        assert_eq!(
            r(
                r#"{{ reverse (list 1 2 3) }} {{ uniq (list 1 1 "1" 2) }} {{ compact (list 0 "" "a" nil 1) }}"#
            ),
            "[3 2 1] [1 1 2] [a 1]"
        );
        assert_eq!(
            r(r#"{{ without (list 1 2 3 2) 2 }} {{ has 2 (list 1 2) }} {{ has "2" (list 1 2) }}"#),
            "[1 3] true false"
        );
        assert_eq!(
            r(
                r#"{{ slice (list 1 2 3 4) 1 3 }} {{ slice (list 1 2 3) 1 }} {{ concat (list 1) (list 2 3) }}"#
            ),
            "[2 3] [2 3] [1 2 3]"
        );
        assert!(err(r#"{{ first "abc" }}"#).contains("Cannot find first on type string"));
    }
}
