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

/// Decode an array/map parameter value. Values are YAML (JSON is YAML too); empty text
/// and `null` decode to JSON null, as KUDO's `ToYAMLArray`/`ToYAMLMap`
/// (pkg/util/convert/convert.go) give templates a nil slice/map for them.
fn decode_structured(value: &str) -> Result<serde_json::Value, String> {
    kudo_yaml::to_json(value).map_err(|e| format!("cannot be read as YAML/JSON ({e})"))
}

/// Go `strconv.ParseInt(s, 10, 64)`: optional sign, decimal digits, no spaces, no
/// underscores, within i64. Rust's `i64::from_str` accepts exactly that.
fn go_parse_int(s: &str) -> bool {
    s.parse::<i64>().is_ok()
}

/// Go `strconv.ParseFloat(s, 64)` without error: decimal or hexadecimal (`0x1p-2`)
/// floats, `inf`/`infinity` with an optional sign and `nan` without one (case-insensitive);
/// finite text that overflows is `ErrRange`, i.e. invalid.
fn go_parse_float(s: &str) -> bool {
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let lower = unsigned.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" {
        return true;
    }
    if lower == "nan" {
        return unsigned.len() == s.len();
    }
    if let Some(hex) = lower.strip_prefix("0x") {
        return go_hex_float(hex);
    }
    // Rust also accepts "inf"/"nan" spellings, handled above; anything else it reads
    // is Go syntax too. Overflow to infinity is Go's ErrRange.
    lower
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | '+' | '-'))
        && unsigned.parse::<f64>().is_ok_and(f64::is_finite)
}

/// The part of a Go hexadecimal float after `0x`: hex mantissa (at least one digit, at
/// most one '.') and a mandatory `p` exponent. The value's range is not checked.
fn go_hex_float(hex: &str) -> bool {
    let Some((mantissa, exponent)) = hex.split_once('p') else {
        return false;
    };
    let digits = mantissa.chars().filter(char::is_ascii_hexdigit).count();
    let dots = mantissa.chars().filter(|c| *c == '.').count();
    let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    digits > 0
        && digits + dots == mantissa.len()
        && dots <= 1
        && !exponent.is_empty()
        && exponent.chars().all(|c| c.is_ascii_digit())
}

/// Whether `value` has the parameter's type. `default` relaxes integers and numbers to
/// any YAML 1.1 number literal (`0x1F`, `1_000`): a default keeps its literal text where
/// KUDO would have stored the decimal value (see `parse::default_text`).
fn has_type(t: ParamType, value: &str, default: bool) -> Result<bool, String> {
    let yaml_int = || {
        default
            && matches!(
                kudo_yaml::resolve_plain(value),
                Resolved::Int(_) | Resolved::UInt(_)
            )
    };
    // KUDO's `ValidateParameterValueForType` (pkg/apis/kudo/v1beta1/parameter_types_helpers.go)
    // on a string value: ParseInt / ParseFloat / ParseBool, and for array/map a
    // `yaml.Unmarshal` into `[]interface{}` / `map[string]interface{}`, which accepts
    // `null` (nil) but no other kind of value.
    Ok(match t {
        ParamType::String => true,
        ParamType::Integer => go_parse_int(value) || yaml_int(),
        ParamType::Number => {
            go_parse_float(value)
                || yaml_int()
                || default
                    && matches!(kudo_yaml::resolve_plain(value), Resolved::Float(f) if f.is_finite())
        }
        ParamType::Boolean => parse_bool(value).is_some(),
        ParamType::Array => matches!(
            decode_structured(value)?,
            serde_json::Value::Array(_) | serde_json::Value::Null
        ),
        ParamType::Map => matches!(
            decode_structured(value)?,
            serde_json::Value::Object(_) | serde_json::Value::Null
        ),
    })
}

fn type_error(t: ParamType, value: &str) -> String {
    let hint = match t {
        ParamType::Integer => "an integer such as 3",
        ParamType::Number => "a number such as 1.5",
        ParamType::Boolean => "a boolean: true or false (also 1/0, t/f)",
        ParamType::Array => "a YAML or JSON list such as [a, b] (or null)",
        ParamType::Map => "a YAML or JSON map such as {key: value} (or null)",
        ParamType::String => "a string",
    };
    format!(
        "value {value:?} is not of type {}; expected {hint}",
        t.as_str()
    )
}

/// KUDO's `ValidateParameterValueForEnum`: the value must equal one of the allowed
/// strings exactly (array/map items compare as their YAML text).
fn check_enum(param: &Parameter, value: &str) -> Result<(), String> {
    match &param.enum_values {
        Some(allowed) if !allowed.iter().any(|a| a == value) => Err(format!(
            "value {value:?} is not allowed; expected one of {}",
            allowed
                .iter()
                .map(|a| format!("{a:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        _ => Ok(()),
    }
}

/// Check an instance value against a parameter's type and enum, as KUDO's
/// `Parameter.ValidateValue` (pkg/apis/kudo/v1beta1/parameter_types_helpers.go) does:
/// the empty string is accepted for every type and enum (it is "no value"; whether a
/// required parameter may be empty is decided by `effective_params`).
pub fn check_value(param: &Parameter, value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    if !has_type(param.value_type, value, false)? {
        return Err(type_error(param.value_type, value));
    }
    check_enum(param, value)
}

/// Check a default (or an enum item, with `enum_values` cleared) as KUDO's
/// `package verify` does with `Parameter.ValidateDefault` (pkg/kudoctl/packages/types.go):
/// type, then enum. Unlike `check_value`, an empty default is type-checked, and integers
/// and numbers may be any YAML number literal (see `has_type`).
pub fn check_default(param: &Parameter, value: &str) -> Result<(), String> {
    if !has_type(param.value_type, value, true)? {
        return Err(type_error(param.value_type, value));
    }
    check_enum(param, value)
}

impl Parameter {
    /// The default KUDO puts into the OperatorVersion. An array or map parameter without
    /// a `default` gets `null`: `WrapParamValue` (pkg/util/convert/convert.go)
    /// `yaml.Marshal`s the nil default to "null", so such a parameter always has a
    /// default and is never "required but missing". Other types stay without one.
    pub fn default_value(&self) -> Option<&str> {
        match (&self.default, self.value_type) {
            (Some(d), _) => Some(d),
            (None, ParamType::Array | ParamType::Map) => Some("null"),
            (None, _) => None,
        }
    }
}

impl Package {
    /// `Operator <name> <operatorVersion> declares: A, B`: the parameters a value may
    /// name, in params.yaml's order, for a message about one that is wrong.
    pub fn declared_parameters(&self) -> String {
        let names: Vec<&str> = self.parameters.iter().map(|p| p.name.as_str()).collect();
        format!(
            "Operator {} {} declares: {}",
            self.operator.name,
            self.operator.operator_version,
            names.join(", ")
        )
    }

    /// Why `name` is refused: the operator declares no such parameter, and the declared
    /// one it most likely means, when one is close. The mistake is in the instance's
    /// values (the configuration), so nothing here points at params.yaml.
    fn unknown_parameter(&self, name: &str) -> String {
        let declared = format!(
            "unknown parameter; operator {} declares no parameter of that name",
            self.operator.name
        );
        match self.closest_parameter(name) {
            Some(close) => format!("{declared}; did you mean {close:?}?"),
            None => declared,
        }
    }

    /// The declared parameter `name` is most likely a typo of: the closest by edit
    /// distance (case ignored; a swap of two neighbouring letters counts as one edit),
    /// only when it is within a third of the name's length (at least one edit), so that
    /// an unrelated name gets no suggestion. Ties go to the first in params.yaml.
    pub fn closest_parameter(&self, name: &str) -> Option<&str> {
        let wanted = name.to_lowercase();
        let limit = (wanted.chars().count() / 3).max(1);
        self.parameters
            .iter()
            .map(|p| {
                let distance = strsim::osa_distance(&wanted, &p.name.to_lowercase());
                (distance, p.name.as_str())
            })
            .filter(|(distance, _)| *distance <= limit)
            .min_by_key(|(distance, _)| *distance)
            .map(|(_, declared)| declared)
    }

    /// Instance values over defaults; every declared parameter with a value is returned.
    /// All problems are reported at once; each names the parameter.
    pub fn effective_params(
        &self,
        values: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, Vec<ParamError>> {
        let mut errors = Vec::new();
        // **[better]** KUDO accepted unknown names at create (the webhook's
        // `validateParameters` walks only declared ones) and refused them only on update
        // (`GetParamDefinitions`); we refuse them always, as they are typos.
        for name in values.keys() {
            if self.parameter(name).is_none() {
                errors.push(ParamError {
                    parameter: name.clone(),
                    message: self.unknown_parameter(name),
                });
            }
        }
        let mut out = BTreeMap::new();
        for p in &self.parameters {
            let mut fail = |message: String| {
                errors.push(ParamError {
                    parameter: p.name.clone(),
                    message,
                })
            };
            match (values.get(&p.name), p.default_value()) {
                (Some(v), default) => {
                    // The webhook's `ValidateValue`: an empty value counts as none, which
                    // a required parameter without a default may not have.
                    if v.is_empty() && p.required && default.is_none() {
                        fail("required parameter has no default and an empty value; set a non-empty value".to_string());
                    } else if let Err(message) = check_value(p, v) {
                        fail(message);
                    }
                    out.insert(p.name.clone(), v.clone());
                }
                (None, Some(d)) => {
                    // KUDO never checks defaults at install, only in `package verify`;
                    // we check them here too, so an unverified package fails with the
                    // parameter's name rather than in a template.
                    if let Err(message) = check_default(p, d) {
                        fail(format!("default {message}"));
                    }
                    out.insert(p.name.clone(), d.to_string());
                }
                // `validateParameters` (pkg/kudoctl/packages/install/package.go).
                (None, None) if p.required => {
                    fail("required parameter has no default; set a value for it".to_string())
                }
                (None, None) => {}
            }
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(errors)
        }
    }

    /// What templates see as `.Params` (KUDO's `ParamsMap`,
    /// pkg/controller/instance/instance_controller.go, via `UnwrapParamValue`): every
    /// declared parameter (missing optional ones as empty strings); `array`/`map` decoded
    /// (JSON-like; `null` and "" become JSON null), all others strings.
    pub fn template_params(
        &self,
        effective: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, serde_json::Value>, ParamError> {
        let mut out = BTreeMap::new();
        for p in &self.parameters {
            let raw = effective.get(&p.name).map(String::as_str);
            let value = match p.value_type {
                ParamType::Array | ParamType::Map => {
                    let text = raw.or(p.default_value()).unwrap_or_default();
                    decode_structured(text).map_err(|message| ParamError {
                        parameter: p.name.clone(),
                        message,
                    })?
                }
                _ => serde_json::Value::String(raw.unwrap_or_default().to_string()),
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

    /// A package with only `params.yaml` (shared with the `rules` tests).
    pub(super) fn pkg(params: &str) -> Package {
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

    #[test]
    fn the_declared_parameters_are_listed_in_order() {
        let p = pkg("parameters:\n- name: Z\n- name: A\n");
        assert_eq!(p.declared_parameters(), "Operator t 1.0.0 declares: Z, A");
    }

    #[test]
    fn a_close_typo_gets_the_declared_name_and_a_far_one_none() {
        let p = pkg("parameters:\n- name: NODE_COUNT\n- name: BROKER_COUNT\n- name: ZK_URI\n");
        // A swap of two letters, a wrong case, a missing letter: one edit each.
        assert_eq!(p.closest_parameter("NODE_CONUT"), Some("NODE_COUNT"));
        assert_eq!(p.closest_parameter("node_count"), Some("NODE_COUNT"));
        assert_eq!(p.closest_parameter("BROKER_CONT"), Some("BROKER_COUNT"));
        // Nothing close: no guess.
        assert_eq!(p.closest_parameter("MEMORY"), None);
        assert_eq!(p.closest_parameter("ZK"), None);
        let e = p
            .effective_params(&values(&[("NODE_CONUT", "3")]))
            .unwrap_err();
        assert_eq!(
            e[0].message,
            "unknown parameter; operator t declares no parameter of that name; did you mean \"NODE_COUNT\"?"
        );
        let e = p.effective_params(&values(&[("MEMORY", "1")])).unwrap_err();
        assert_eq!(
            e[0].message,
            "unknown parameter; operator t declares no parameter of that name"
        );
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

/// One test per rule of docs/parameters.md, in its order.
#[cfg(test)]
mod rules {
    use super::*;

    use super::tests::pkg;

    fn param(p: &Package, name: &str) -> Parameter {
        p.parameter(name).cloned().expect("declared")
    }

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn errors(p: &Package, v: &[(&str, &str)]) -> Vec<String> {
        match p.effective_params(&values(v)) {
            Ok(_) => vec![],
            Err(errs) => errs.iter().map(ToString::to_string).collect(),
        }
    }

    /// `verify` errors about params.yaml (the test packages have no plans).
    fn params_errors(p: &Package) -> Vec<String> {
        crate::verify(p)
            .into_iter()
            .filter(|f| f.severity == crate::Severity::Error && f.file == "params.yaml")
            .map(|f| f.message)
            .collect()
    }

    fn typed(t: &str) -> Parameter {
        param(&pkg(&format!("parameters:\n- name: X\n  type: {t}\n")), "X")
    }

    #[test]
    fn r01_required_defaults_to_true_and_immutable_to_false() {
        let p = pkg("parameters:\n- name: A\n- name: B\n  required: false\n  immutable: true\n");
        assert!(param(&p, "A").required && !param(&p, "A").immutable);
        assert!(!param(&p, "B").required && param(&p, "B").immutable);
    }

    #[test]
    fn r02_null_default_is_no_default() {
        let p = pkg(
            "parameters:\n- name: A\n  default: null\n- name: B\n  default: ~\n- name: C\n  default:\n- name: D\n  default: \"null\"\n",
        );
        for n in ["A", "B", "C"] {
            assert_eq!(param(&p, n).default_value(), None, "{n}");
        }
        assert_eq!(param(&p, "D").default_value(), Some("null"));
        let errs = errors(&p, &[]);
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert!(errs[0].contains("required parameter has no default"));
    }

    #[test]
    fn r03_scalar_defaults_stringified_booleans_normalised_numbers_literal() {
        let p = pkg(
            "parameters:\n- name: A\n  type: boolean\n  default: yes\n- name: B\n  default: Off\n- name: C\n  type: integer\n  default: 1000000\n- name: D\n  type: number\n  default: 1.50\n- name: E\n  default: \"yes\"\n",
        );
        let d = |n: &str| param(&p, n).default;
        assert_eq!(d("A").as_deref(), Some("true"));
        assert_eq!(d("B").as_deref(), Some("false"));
        assert_eq!(d("C").as_deref(), Some("1000000"));
        assert_eq!(d("D").as_deref(), Some("1.50"));
        assert_eq!(d("E").as_deref(), Some("yes"));
        assert!(errors(&p, &[]).is_empty());
    }

    #[test]
    fn r04_array_and_map_defaults_are_yaml_text() {
        let p = pkg(
            "parameters:\n- name: L\n  type: array\n  default: [b, {k: 1}]\n- name: M\n  type: map\n  default: {z: 1, a: [x]}\n",
        );
        assert_eq!(param(&p, "L").default.as_deref(), Some("- b\n- k: 1\n"));
        assert_eq!(param(&p, "M").default.as_deref(), Some("a:\n- x\nz: 1\n"));
    }

    #[test]
    fn r05_array_and_map_without_default_default_to_null() {
        let p = pkg(
            "parameters:\n- name: L\n  type: array\n- name: M\n  type: map\n  default: null\n- name: S\n  required: false\n",
        );
        assert_eq!(param(&p, "L").default, None, "the file wrote none");
        assert_eq!(param(&p, "L").default_value(), Some("null"));
        assert_eq!(param(&p, "M").default_value(), Some("null"));
        let eff = p
            .effective_params(&BTreeMap::new())
            .expect("defaults suffice");
        assert_eq!(eff["L"], "null");
        assert_eq!(eff["M"], "null");
        assert!(!eff.contains_key("S"));
        let t = p.template_params(&eff).expect("decodes");
        assert_eq!(t["L"], serde_json::Value::Null);
        assert_eq!(t["M"], serde_json::Value::Null);
        assert_eq!(t["S"], serde_json::json!(""));
        let spec = crate::crd::operator_version_spec(&p);
        assert_eq!(spec["parameters"][0]["default"], "null");
        assert_eq!(params_errors(&p), Vec::<String>::new());
    }

    #[test]
    fn r06_null_is_a_valid_array_and_map_value() {
        for t in ["array", "map"] {
            let x = typed(t);
            for v in ["null", "~", "# nothing"] {
                assert_eq!(check_value(&x, v), Ok(()), "{t} {v}");
            }
        }
    }

    #[test]
    fn r07_required_without_default_needs_a_value() {
        let p = pkg("parameters:\n- name: A\n");
        assert!(errors(&p, &[])[0].contains("required parameter has no default"));
        assert!(errors(&p, &[("A", "x")]).is_empty());
    }

    #[test]
    fn r08_required_without_default_rejects_an_empty_value() {
        let p =
            pkg("parameters:\n- name: A\n- name: B\n  default: b\n- name: C\n  required: false\n");
        let errs = errors(&p, &[("A", ""), ("B", ""), ("C", "")]);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].starts_with("parameter A:"), "{errs:?}");
        let eff = p
            .effective_params(&values(&[("A", "a"), ("B", "")]))
            .expect("valid");
        assert_eq!(eff["B"], "", "an empty value overrides the default");
    }

    #[test]
    fn r09_empty_value_passes_type_and_enum_checks() {
        for t in ["integer", "number", "boolean", "array", "map"] {
            assert_eq!(check_value(&typed(t), ""), Ok(()), "{t}");
        }
        let p = pkg(
            "parameters:\n- name: E\n  enum: [a]\n  default: a\n- name: L\n  type: array\n  default: [1]\n",
        );
        assert_eq!(check_value(&param(&p, "E"), ""), Ok(()));
        let eff = p.effective_params(&values(&[("L", "")])).expect("valid");
        let t = p.template_params(&eff).expect("decodes");
        assert_eq!(t["L"], serde_json::Value::Null);
    }

    #[test]
    fn r10_integer_is_go_parse_int_base_10() {
        let x = typed("integer");
        for ok in ["3", "-3", "+3", "0755", "9223372036854775807"] {
            assert_eq!(check_value(&x, ok), Ok(()), "{ok}");
        }
        for bad in [
            "0x1F",
            "1_000",
            " 3",
            "1.5",
            "1e3",
            "9223372036854775808",
            "three",
        ] {
            assert!(check_value(&x, bad).is_err(), "{bad}");
        }
        // A default keeps its literal text where KUDO stored the decimal value.
        assert_eq!(check_default(&x, "0x1F"), Ok(()));
        assert!(check_default(&x, "").is_err());
    }

    #[test]
    fn r11_number_is_go_parse_float() {
        let x = typed("number");
        for ok in [
            "1.5",
            "-2",
            "1e3",
            ".5",
            "1.",
            "Inf",
            "-infinity",
            "NaN",
            "0x1p-2",
            "0X1.8P+1",
        ] {
            assert_eq!(check_value(&x, ok), Ok(()), "{ok}");
        }
        for bad in ["1e400", "+nan", "1_0", "0x1", " 1", "one", "1e"] {
            assert!(check_value(&x, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn r12_boolean_is_go_parse_bool() {
        let x = typed("boolean");
        assert_eq!(check_value(&x, "True"), Ok(()));
        assert_eq!(check_value(&x, "0"), Ok(()));
        assert!(check_value(&x, "yes").is_err());
    }

    #[test]
    fn r13_array_and_map_values_must_decode_to_their_kind() {
        let (a, m) = (typed("array"), typed("map"));
        assert_eq!(check_value(&a, "[a, 1]"), Ok(()));
        assert_eq!(check_value(&a, "- a\n- b\n"), Ok(()));
        assert_eq!(check_value(&m, "{\"k\": [1]}"), Ok(()));
        for bad in ["{a: 1}", "abc", "3", "[a"] {
            assert!(check_value(&a, bad).is_err(), "array {bad}");
        }
        for bad in ["[1]", "abc", "true"] {
            assert!(check_value(&m, bad).is_err(), "map {bad}");
        }
        // String parameters take anything.
        assert_eq!(check_value(&typed("string"), "[a"), Ok(()));
    }

    #[test]
    fn r14_enum_values_match_exactly_and_defaults_are_checked() {
        let p = pkg(
            "parameters:\n- name: E\n  enum: [a, 1, yes]\n  default: a\n- name: L\n  type: array\n  enum: [[x], [p, q]]\n  default: [x]\n",
        );
        let e = param(&p, "E");
        assert_eq!(
            e.enum_values,
            Some(vec!["a".into(), "1".into(), "true".into()])
        );
        assert_eq!(check_value(&e, "1"), Ok(()));
        assert!(check_value(&e, "A").is_err());
        assert!(check_value(&e, "yes").is_err());
        let l = param(&p, "L");
        assert_eq!(check_value(&l, "- p\n- q\n"), Ok(()));
        assert!(
            check_value(&l, "[p, q]").is_err(),
            "compared as text, as KUDO does"
        );
        assert_eq!(params_errors(&p), Vec::<String>::new());
        let bad = pkg(
            "parameters:\n- name: E\n  enum: [a]\n  default: b\n- name: N\n  type: integer\n  enum: [1, x]\n  default: 1\n",
        );
        let errs = params_errors(&bad);
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(
            errs[0].contains("default value \"b\" is not allowed"),
            "{errs:?}"
        );
        assert!(errs[1].contains("invalid enum value"), "{errs:?}");
    }

    #[test]
    fn r15_unknown_parameter_is_an_error() {
        let p = pkg("parameters:\n- name: A\n  default: a\n");
        assert!(errors(&p, &[("B", "x")])[0].contains("unknown parameter"));
    }

    #[test]
    fn r16_only_arrays_and_maps_are_decoded_for_templates() {
        let p = pkg(
            "parameters:\n- name: N\n  type: integer\n  default: 3\n- name: B\n  type: boolean\n  default: true\n- name: M\n  type: map\n  default: {a: 1.5}\n",
        );
        let t = p
            .template_params(&p.effective_params(&BTreeMap::new()).expect("valid"))
            .expect("decodes");
        assert_eq!(t["N"], serde_json::json!("3"));
        assert_eq!(t["B"], serde_json::json!("true"));
        assert_eq!(t["M"], serde_json::json!({"a": 1.5}));
    }

    #[test]
    fn r17_immutable_needs_required_or_a_written_default() {
        let p = pkg(
            "parameters:\n- name: A\n  immutable: true\n  required: false\n- name: L\n  type: array\n  immutable: true\n  required: false\n- name: OK\n  immutable: true\n",
        );
        let errs = params_errors(&p);
        // KUDO's verify looks at the package file, where the array has no default yet.
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs.iter().all(|e| e.contains("is immutable")), "{errs:?}");
    }

    #[test]
    fn r18_advanced_and_required_needs_a_default() {
        let p = pkg(
            "parameters:\n- name: A\n  advanced: true\n- name: B\n  advanced: true\n  default: b\n",
        );
        let errs = params_errors(&p);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("\"A\" is advanced"), "{errs:?}");
    }
}
