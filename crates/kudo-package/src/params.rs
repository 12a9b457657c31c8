//! Parameter values: instance values over defaults, and what templates see.

use std::collections::BTreeMap;

use kudo_yaml::Resolved;

use crate::error::ParamError;
use crate::model::{Package, ParamType, Parameter};

/// Go `strconv.ParseBool`.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Decode an array/map parameter value. Values are YAML (JSON is YAML too).
fn decode_structured(value: &str) -> Result<serde_json::Value, String> {
    kudo_yaml::to_json(value).map_err(|e| format!("cannot be read as YAML/JSON ({e})"))
}

/// Check one value against a parameter's type and enum; the message says what was
/// expected.
pub fn check_value(param: &Parameter, value: &str) -> Result<(), String> {
    let t = param.value_type;
    let ok = match t {
        ParamType::String => true,
        ParamType::Integer => matches!(
            kudo_yaml::resolve_plain(value.trim()),
            Resolved::Int(_) | Resolved::UInt(_)
        ),
        ParamType::Number => {
            matches!(
                kudo_yaml::resolve_plain(value.trim()),
                Resolved::Int(_) | Resolved::UInt(_)
            ) || value.trim().parse::<f64>().is_ok_and(f64::is_finite)
        }
        ParamType::Boolean => parse_bool(value).is_some(),
        ParamType::Array => matches!(decode_structured(value)?, serde_json::Value::Array(_)),
        ParamType::Map => matches!(decode_structured(value)?, serde_json::Value::Object(_)),
    };
    if !ok {
        let hint = match t {
            ParamType::Integer => "an integer such as 3",
            ParamType::Number => "a number such as 1.5",
            ParamType::Boolean => "a boolean: true or false (also 1/0, t/f)",
            ParamType::Array => "a YAML or JSON list such as [a, b]",
            ParamType::Map => "a YAML or JSON map such as {key: value}",
            ParamType::String => "a string",
        };
        return Err(format!(
            "value {value:?} is not of type {}; expected {hint}",
            t.as_str()
        ));
    }
    if let Some(allowed) = &param.enum_values
        && !allowed.iter().any(|a| a == value)
    {
        return Err(format!(
            "value {value:?} is not allowed; expected one of {}",
            allowed
                .iter()
                .map(|a| format!("{a:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(())
}

impl Package {
    /// Instance values over defaults; every declared parameter with a value is returned.
    /// All problems are reported at once; each names the parameter.
    pub fn effective_params(
        &self,
        values: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, Vec<ParamError>> {
        let mut errors = Vec::new();
        for name in values.keys() {
            if self.parameter(name).is_none() {
                errors.push(ParamError {
                    parameter: name.clone(),
                    message: format!(
                        "unknown parameter; operator {} declares no parameter of that name (check the spelling in params.yaml)",
                        self.operator.name
                    ),
                });
            }
        }
        let mut out = BTreeMap::new();
        for p in &self.parameters {
            let value = values.get(&p.name).or(p.default.as_ref());
            match value {
                Some(v) => {
                    if let Err(message) = check_value(p, v) {
                        errors.push(ParamError {
                            parameter: p.name.clone(),
                            message,
                        });
                    }
                    out.insert(p.name.clone(), v.clone());
                }
                None if p.required => errors.push(ParamError {
                    parameter: p.name.clone(),
                    message: "required parameter has no default; set a value for it".to_string(),
                }),
                None => {}
            }
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(errors)
        }
    }

    /// What templates see as `.Params`: every declared parameter (missing optional ones
    /// as empty strings); `array`/`map` decoded (JSON-like), all others strings.
    pub fn template_params(
        &self,
        effective: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, serde_json::Value>, ParamError> {
        let mut out = BTreeMap::new();
        for p in &self.parameters {
            let raw = effective.get(&p.name);
            let value = match (p.value_type, raw) {
                (ParamType::Array | ParamType::Map, Some(v)) => {
                    decode_structured(v).map_err(|message| ParamError {
                        parameter: p.name.clone(),
                        message,
                    })?
                }
                (_, Some(v)) => serde_json::Value::String(v.clone()),
                (_, None) => serde_json::Value::String(String::new()),
            };
            out.insert(p.name.clone(), value);
        }
        // Values for names the package does not declare are passed through as strings so
        // that templates of older versions keep rendering during upgrades.
        for (k, v) in effective {
            out.entry(k.clone())
                .or_insert_with(|| serde_json::Value::String(v.clone()));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Origin;

    fn pkg(params: &str) -> Package {
        let mut files = crate::load::Files::new();
        files.insert(
            "operator.yaml".into(),
            b"name: t\noperatorVersion: 1.0.0\nplans: {}\n".to_vec(),
        );
        files.insert("params.yaml".into(), params.as_bytes().to_vec());
        Package::from_files(&files, "t/", Origin::Memory).unwrap()
    }

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const PARAMS: &str = "parameters:
- name: N
  type: integer
  default: 0755
- name: F
  type: number
  default: 1.5
- name: B
  type: boolean
  default: \"yes\"
  required: false
- name: L
  type: array
  default: [a, 1]
- name: M
  type: map
  default: {k: v, num: 2}
- name: BIG
  default: 1000000
- name: OPT
  required: false
- name: E
  enum: [x, y]
  default: x
";

    #[test]
    fn defaults_are_literal_and_structures_are_yaml() {
        let p = pkg(PARAMS);
        let d = |n: &str| p.parameter(n).and_then(|x| x.default.clone());
        assert_eq!(d("N").as_deref(), Some("0755"));
        assert_eq!(d("BIG").as_deref(), Some("1000000"));
        assert_eq!(d("L").as_deref(), Some("- a\n- 1\n"));
        assert_eq!(d("M").as_deref(), Some("k: v\nnum: 2\n"));
        assert!(
            p.parameter("OPT")
                .is_some_and(|x| !x.required && x.default.is_none())
        );
    }

    #[test]
    fn type_checks() {
        let p = pkg(PARAMS);
        // "yes" is not a Go ParseBool value.
        let errs = p.effective_params(&BTreeMap::new()).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].parameter, "B");
        let ok = p
            .effective_params(&values(&[("B", "true"), ("N", "-3"), ("F", "2e3")]))
            .unwrap();
        assert_eq!(ok["N"], "-3");
        assert!(!ok.contains_key("OPT"));
        let bad = p
            .effective_params(&values(&[
                ("B", "1"),
                ("N", "1.5"),
                ("F", "abc"),
                ("L", "{a: 1}"),
                ("M", "[1]"),
                ("E", "z"),
            ]))
            .unwrap_err();
        let names: Vec<&str> = bad.iter().map(|e| e.parameter.as_str()).collect();
        assert_eq!(names, ["N", "F", "L", "M", "E"]);
    }

    #[test]
    fn template_params_decode_only_arrays_and_maps() {
        let p = pkg(PARAMS);
        let eff = p
            .effective_params(&values(&[("B", "false"), ("L", "[\"x\", 2]")]))
            .unwrap();
        let t = p.template_params(&eff).unwrap();
        assert_eq!(t["N"], serde_json::json!("0755"));
        assert_eq!(t["B"], serde_json::json!("false"));
        assert_eq!(t["L"], serde_json::json!(["x", 2]));
        assert_eq!(t["M"], serde_json::json!({"k": "v", "num": 2}));
        assert_eq!(t["OPT"], serde_json::json!(""));
    }

    #[test]
    fn go_parse_bool() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_bool(t), Some(true));
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_bool(f), Some(false));
        }
        for x in ["yes", "on", "tRUE", ""] {
            assert_eq!(parse_bool(x), None);
        }
    }
}
