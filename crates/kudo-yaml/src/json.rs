//! Conversion of node trees to JSON values the way sigs.k8s.io/yaml does.

use serde_json::{Map, Number, Value};

use crate::error::YamlError;
use crate::gofloat::format_float_g;
use crate::node::{Node, NodeValue};
use crate::resolve::Resolved;

impl Node {
    /// JSON value of this node: YAML 1.1 scalars, merge keys applied, keys stringified.
    /// Non-finite floats (`.inf`, `.nan`) are an error, as JSON cannot hold them
    /// (Kubernetes rejects them too).
    pub fn to_json(&self) -> Result<Value, YamlError> {
        match &self.value {
            NodeValue::Scalar(s) => match s.resolve() {
                Resolved::Null => Ok(Value::Null),
                Resolved::Bool(b) => Ok(Value::Bool(b)),
                Resolved::Int(i) => Ok(Value::from(i)),
                Resolved::UInt(u) => Ok(Value::from(u)),
                // Go's json.Marshal writes float64(3) as `3`, so that is what the API
                // server receives for `replicas: 3.0`; do the same.
                Resolved::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => {
                    Ok(Value::from(f as i64))
                }
                Resolved::Float(f) => Number::from_f64(f).map(Value::Number).ok_or_else(|| {
                    self.error(format!(
                        "`{}` is not a finite number and cannot be represented in JSON; quote it if a string is meant",
                        s.text
                    ))
                }),
                Resolved::Merge | Resolved::String => Ok(Value::String(s.text.clone())),
            },
            NodeValue::Sequence(items) => items
                .iter()
                .map(Node::to_json)
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            NodeValue::Mapping(_) => {
                let mut map = Map::new();
                for (k, v) in self.merged_entries().unwrap_or_default() {
                    map.insert(key_string(k)?, v.to_json()?);
                }
                Ok(Value::Object(map))
            }
        }
    }
}

/// sigs.k8s.io/yaml turns scalar keys into their text form; collection keys are errors.
pub(crate) fn key_string(key: &Node) -> Result<String, YamlError> {
    let NodeValue::Scalar(s) = &key.value else {
        return Err(key.error("a mapping key must be a scalar, not a sequence or mapping"));
    };
    Ok(match s.resolve() {
        Resolved::Null => "null".to_string(),
        Resolved::Bool(b) => b.to_string(),
        Resolved::Int(i) => i.to_string(),
        Resolved::UInt(u) => u.to_string(),
        // sigs.k8s.io/yaml's convertToJSONableObject: strconv.FormatFloat(k, 'g', -1, 64).
        Resolved::Float(f) => format_float_g(f, 6),
        Resolved::Merge | Resolved::String => s.text.clone(),
    })
}

#[cfg(test)]
mod tests {
    use crate::{to_json, to_json_documents};
    use serde_json::json;

    #[test]
    fn kubernetes_scalars() {
        let v = to_json(
            "mode: 0755\nenabled: yes\noff: off\nnothing: ~\nempty:\nq: '0755'\nf: 5.7\nbig: 1_000\nver: 1.2.3\n",
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"mode": 493, "enabled": true, "false": false, "nothing": null, "empty": null,
                   "q": "0755", "f": 5.7, "big": 1000, "ver": "1.2.3"})
        );
    }

    #[test]
    fn keys_are_stringified() {
        let v = to_json("1: a\ntrue: b\n1.5: c\n").unwrap();
        assert_eq!(v, json!({"1": "a", "true": "b", "1.5": "c"}));
    }

    #[test]
    fn anchors_aliases_and_merge() {
        let text = "base: &b {a: 1, b: 2}\nother: &o {c: 3}\nx:\n  <<: [*b, *o]\n  b: 20\nw: *b\nz:\n  a: 0\n  <<: *b\n";
        let v = to_json(text).unwrap();
        assert_eq!(v["x"], json!({"a": 1, "b": 20, "c": 3}));
        assert_eq!(v["w"], json!({"a": 1, "b": 2}));
        // YAML 1.1: a bare `y` key is the boolean true.
        assert_eq!(to_json("y: 1").unwrap(), json!({"true": 1}));
        assert_eq!(v["z"], json!({"a": 0, "b": 2}));
    }

    #[test]
    fn tags_and_styles() {
        let v = to_json("a: !!str 123\nb: \"true\"\nc: |\n  yes\nd: !!float 3\n").unwrap();
        assert_eq!(v, json!({"a": "123", "b": "true", "c": "yes\n", "d": 3}));
        assert_eq!(
            to_json("r: 3.0\ne: 1e3\nh: 0.5").unwrap(),
            json!({"r": 3, "e": 1000, "h": 0.5})
        );
    }

    #[test]
    fn documents() {
        let docs = to_json_documents("a: 1\n---\nb: 2\n---\n").unwrap();
        assert_eq!(docs[0], json!({"a": 1}));
        assert_eq!(docs[1], json!({"b": 2}));
        assert!(to_json("a: 1\n---\nb: 2\n").is_err());
    }

    #[test]
    fn errors_are_one_based() {
        let e = to_json("a: 1\nb: [1, 2\n").unwrap_err();
        assert!(e.line >= 2, "{e}");
        assert!(e.column >= 1);
        let e = to_json("a: .inf\n").unwrap_err();
        assert_eq!((e.line, e.column), (1, 4));
        let e = to_json("a: *nope\n").unwrap_err();
        assert_eq!(e.line, 1, "{e}");
    }

    #[test]
    fn alias_bomb_is_bounded() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        assert!(to_json(&text).is_err());
    }

    #[test]
    fn float_keys_read_as_go_writes_them() {
        let keys = to_json("1.5: a\n1e21: b\n1.5e-7: c\n100.0: d\n1.5e8: e\n").expect("parse");
        let keys: Vec<&str> = keys
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        for key in ["1.5", "1e+21", "1.5e-07", "100", "1.5e+08"] {
            assert!(keys.contains(&key), "{key} in {keys:?}");
        }
    }
}
