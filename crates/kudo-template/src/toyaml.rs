//! `toYaml`: Go's yaml.v2 `Marshal` of a template value, through the one emitter in
//! `kudo-yaml` (layout, quoting, folding and key order live there).

use std::borrow::Cow;

use gotmpl::Value;
use kudo_yaml::{View, YamlTree};

/// Marshal a value as yaml.v2 does (output ends with a newline).
pub(crate) fn to_yaml(v: &Value) -> String {
    kudo_yaml::to_yaml(Tree(v))
}

/// A template value as the emitter sees it.
#[derive(Clone, Copy)]
struct Tree<'a>(&'a Value);

impl<'a> YamlTree<'a> for Tree<'a> {
    fn view(self) -> View<'a, Self> {
        match self.0 {
            Value::Nil => View::Null,
            Value::Bool(b) => View::Bool(*b),
            Value::Int(i) => View::Int(*i),
            Value::Uint(u) => View::Uint(*u),
            Value::Float(f) => View::Float(*f),
            Value::String(s) => View::Str(Cow::Borrowed(s)),
            Value::List(items) => View::Seq(items.iter().map(Tree).collect()),
            Value::Map(m) => View::Map(m.iter().map(|(k, v)| (&**k, Tree(v))).collect()),
            // Functions and other values YAML has no type for: Go's `%v` of them.
            #[allow(unreachable_patterns)]
            other => View::Str(Cow::Owned(other.to_string())),
        }
    }
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
