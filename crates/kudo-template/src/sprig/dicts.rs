//! Dict functions. Template values are immutable here, so `set`, `unset`, `merge` and
//! `mergeOverwrite` return the changed dict instead of also changing their argument in
//! place as Go does (`{{ $_ := set $d "k" "v" }}{{ $d.k }}` does not see the change).

use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::Value;

use super::Reg;
use super::args::{arity, arity_min, dict, s, string, strings};
use super::conv::strval;

type Map = BTreeMap<Arc<str>, Value>;

fn d(m: Map) -> Value {
    Value::Map(Arc::new(m))
}

/// mergo.Merge: fill keys missing from `dst` (or holding an empty value when
/// `overwrite`), recursing into nested dicts.
fn merge_into(dst: &mut Map, src: &Map, overwrite: bool) {
    for (k, v) in src {
        match (dst.get_mut(k), v) {
            (Some(Value::Map(dm)), Value::Map(sm)) => {
                let mut inner = (**dm).clone();
                merge_into(&mut inner, sm, overwrite);
                *dm = Arc::new(inner);
            }
            (Some(existing), _) => {
                let replace = if overwrite {
                    !super::defaults::is_empty(v)
                } else {
                    super::defaults::is_empty(existing)
                };
                if replace {
                    *existing = v.clone();
                }
            }
            (None, _) => {
                dst.insert(k.clone(), v.clone());
            }
        }
    }
}

pub(super) fn register(m: &mut Reg) {
    m.add("dict", |a| {
        let mut out = Map::new();
        for pair in a.chunks(2) {
            let key = strval(&pair[0]);
            let val = pair.get(1).cloned().unwrap_or_else(|| s(""));
            out.insert(Arc::from(key.as_str()), val);
        }
        Ok(d(out))
    });
    m.add("set", |a| {
        arity("set", a, 3)?;
        let mut out = (*dict("set", &a[0])?).clone();
        out.insert(string("set", &a[1])?, a[2].clone());
        Ok(d(out))
    });
    m.add("unset", |a| {
        arity("unset", a, 2)?;
        let mut out = (*dict("unset", &a[0])?).clone();
        out.remove(&string("unset", &a[1])?);
        Ok(d(out))
    });
    m.add("hasKey", |a| {
        arity("hasKey", a, 2)?;
        Ok(Value::Bool(
            dict("hasKey", &a[0])?.contains_key(&string("hasKey", &a[1])?),
        ))
    });
    m.add("pluck", |a| {
        arity_min("pluck", a, 1)?;
        let key = string("pluck", &a[0])?;
        let mut out = Vec::new();
        for v in &a[1..] {
            if let Some(x) = dict("pluck", v)?.get(&key) {
                out.push(x.clone());
            }
        }
        Ok(Value::List(out.into()))
    });
    m.add("keys", |a| {
        let mut out = Vec::new();
        for v in a {
            out.extend(dict("keys", v)?.keys().map(|k| k.to_string()));
        }
        Ok(strings(out))
    });
    m.add("values", |a| {
        arity("values", a, 1)?;
        Ok(Value::List(
            dict("values", &a[0])?.values().cloned().collect(),
        ))
    });
    m.add("pick", |a| {
        arity_min("pick", a, 1)?;
        let src = dict("pick", &a[0])?;
        let mut out = Map::new();
        for k in &a[1..] {
            let k = string("pick", k)?;
            if let Some(v) = src.get(&k) {
                out.insert(k, v.clone());
            }
        }
        Ok(d(out))
    });
    m.add("omit", |a| {
        arity_min("omit", a, 1)?;
        let mut out = (*dict("omit", &a[0])?).clone();
        for k in &a[1..] {
            out.remove(&string("omit", k)?);
        }
        Ok(d(out))
    });
    for (name, overwrite) in [("merge", false), ("mergeOverwrite", true)] {
        m.add(name, move |a| {
            arity_min(name, a, 1)?;
            let mut out = (*dict(name, &a[0])?).clone();
            for src in &a[1..] {
                merge_into(&mut out, &*dict(name, src)?, overwrite);
            }
            Ok(d(out))
        });
    }
}

#[cfg(test)]
mod tests {
    use crate::sprig::test_util::{err, r};

    #[test]
    fn dict_basics() {
        assert_eq!(
            r(r#"{{ $d := dict "a" 1 "b" "x" 3 }}{{ $d.a }} {{ $d.b }} {{ index $d "3" }}"#),
            "1 x "
        );
        assert_eq!(
            r(
                r#"{{ $d := dict "a" 1 }}{{ (set $d "b" 2).b }} {{ hasKey $d "a" }} {{ hasKey (unset $d "a") "a" }}"#
            ),
            "2 true false"
        );
        assert_eq!(
            r(r#"{{ keys (dict "b" 1 "a" 2) }} {{ values (dict "b" 1 "a" 2) }}"#),
            "[a b] [2 1]"
        );
        assert_eq!(
            r(r#"{{ pluck "a" (dict "a" 1) (dict "b" 2) (dict "a" 3) }}"#),
            "[1 3]"
        );
        assert_eq!(
            r(r#"{{ pick (dict "a" 1 "b" 2) "a" }} {{ omit (dict "a" 1 "b" 2) "a" }}"#),
            "map[a:1] map[b:2]"
        );
        assert!(err(r#"{{ hasKey "x" "a" }}"#).contains("expected map"));
    }

    #[test]
    fn merging() {
        let t = r#"{{ $dst := dict "a" 1 "n" (dict "x" 1) }}{{ $src := dict "a" 2 "b" 3 "n" (dict "x" 2 "y" 2) }}"#;
        assert_eq!(
            r(&format!("{t}{{{{ merge $dst $src }}}}")),
            "map[a:1 b:3 n:map[x:1 y:2]]"
        );
        assert_eq!(
            r(&format!("{t}{{{{ mergeOverwrite $dst $src }}}}")),
            "map[a:2 b:3 n:map[x:2 y:2]]"
        );
    }
}
