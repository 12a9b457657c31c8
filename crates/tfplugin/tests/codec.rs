//! cty msgpack / JSON encodings of values and types.

use std::collections::BTreeMap;

use tfplugin::{PathStep, Type, Value};

fn obj_type() -> Type {
    Type::object([
        ("name", Type::String),
        ("count", Type::Number),
        ("enabled", Type::Bool),
        ("tags", Type::map(Type::String)),
        (
            "items",
            Type::list(Type::object([("k", Type::String), ("n", Type::Number)])),
        ),
        ("uniq", Type::set(Type::String)),
        ("pair", Type::Tuple(vec![Type::String, Type::Number])),
        ("any", Type::Dynamic),
    ])
}

#[test]
fn unknown_is_extension_zero() {
    let bytes = Value::Unknown.to_msgpack(&Type::String).unwrap();
    assert_eq!(bytes, vec![0xd4, 0x00, 0x00]);
    assert_eq!(
        Value::from_msgpack(&bytes, &Type::String).unwrap(),
        Value::Unknown
    );
}

#[test]
fn simple_object_bytes_match_cty() {
    // {"a": "x"} as cty writes it: fixmap(1), fixstr "a", fixstr "x".
    let ty = Type::object([("a", Type::String)]);
    let bytes = Value::object([("a", Value::string("x"))])
        .to_msgpack(&ty)
        .unwrap();
    assert_eq!(bytes, vec![0x81, 0xa1, b'a', 0xa1, b'x']);
}

#[test]
fn nested_round_trip_with_nulls_and_unknowns() {
    let ty = obj_type();
    let v = Value::object([
        ("name", Value::string("demo")),
        ("count", Value::int(3)),
        ("enabled", Value::Unknown),
        ("tags", Value::string_map([("a", "1"), ("b", "2")])),
        (
            "items",
            Value::list([
                Value::object([("k", Value::string("x")), ("n", Value::Null)]),
                Value::object([("k", Value::Unknown), ("n", Value::float(1.5).unwrap())]),
            ]),
        ),
        ("uniq", Value::set([Value::string("p"), Value::Unknown])),
        (
            "pair",
            Value::Tuple(vec![Value::string("t"), Value::int(-7)]),
        ),
        ("any", Value::Null),
    ]);
    let bytes = v.to_msgpack(&ty).unwrap();
    let back = Value::from_msgpack(&bytes, &ty).unwrap();
    assert_eq!(back, v);
    assert!(!back.is_fully_known());
    assert!(back.get("name").is_fully_known());
    assert_eq!(back.get("count").as_i64(), Some(3));
    assert_eq!(
        back.get("items").as_slice().unwrap()[1].get("n").as_f64(),
        Some(1.5)
    );
}

#[test]
fn missing_attributes_encode_as_null() {
    let ty = obj_type();
    let bytes = Value::object([("name", Value::string("only"))])
        .to_msgpack(&ty)
        .unwrap();
    let back = Value::from_msgpack(&bytes, &ty).unwrap();
    assert_eq!(back.get("name").as_str(), Some("only"));
    assert!(back.get("tags").is_null());
    assert_eq!(
        back.as_map().unwrap().len(),
        8,
        "every attribute present after decode"
    );
}

#[test]
fn refined_unknown_decodes_as_unknown() {
    // {"s": <unknown refined: not null, prefix "ab">}: ext type 12 with a payload.
    let ty = Type::object([("s", Type::String), ("n", Type::Number)]);
    let mut bytes = vec![0x82, 0xa1, b's'];
    let payload = [0x82, 0x01, 0xc2, 0x02, 0xa2, b'a', b'b'];
    bytes.extend([0xc7, payload.len() as u8, 12]);
    bytes.extend(payload);
    bytes.extend([0xa1, b'n', 0xd4, 0x0c, 0x00]);
    let v = Value::from_msgpack(&bytes, &ty).unwrap();
    assert_eq!(v.get("s"), &Value::Unknown);
    assert_eq!(v.get("n"), &Value::Unknown);
    // Written back as plain unknowns.
    let again = v.to_msgpack(&ty).unwrap();
    assert_eq!(Value::from_msgpack(&again, &ty).unwrap(), v);
}

#[test]
fn dynamic_is_type_value_pair() {
    let ty = Type::object([("d", Type::Dynamic)]);
    let v = Value::object([(
        "d",
        Value::object([("x", Value::list([Value::int(1), Value::int(2)]))]),
    )]);
    let bytes = v.to_msgpack(&ty).unwrap();
    // Look inside: the attribute value must be a 2-array whose first element is type JSON.
    let raw = String::from_utf8_lossy(&bytes);
    assert!(
        raw.contains(r#"["object",{"x":["list","number"]}]"#),
        "{raw}"
    );
    assert_eq!(Value::from_msgpack(&bytes, &ty).unwrap(), v);

    // A dynamic written by cty: [bin type JSON, value].
    let mut cty = vec![0x81, 0xa1, b'd', 0x92, 0xc4];
    let tj = br#""string""#;
    cty.push(tj.len() as u8);
    cty.extend(tj);
    cty.extend([0xa2, b'h', b'i']);
    assert_eq!(
        Value::from_msgpack(&cty, &ty).unwrap().get("d").as_str(),
        Some("hi")
    );

    // Unknown and null dynamic values carry no type wrapper.
    let unk = Value::object([("d", Value::Unknown)])
        .to_msgpack(&ty)
        .unwrap();
    assert_eq!(unk, vec![0x81, 0xa1, b'd', 0xd4, 0, 0]);
}

#[test]
fn numbers_as_cty_writes_them() {
    // Whole floats are written as integers; big integers survive; strings parse.
    let n = Value::float(4.0)
        .unwrap()
        .to_msgpack(&Type::Number)
        .unwrap();
    assert_eq!(n, vec![0x04]);
    let big = Value::Number(u64::MAX.into())
        .to_msgpack(&Type::Number)
        .unwrap();
    assert_eq!(
        Value::from_msgpack(&big, &Type::Number).unwrap(),
        Value::Number(u64::MAX.into())
    );
    let s = [0xa3, b'2', b'.', b'5'];
    assert_eq!(
        Value::from_msgpack(&s, &Type::Number).unwrap().as_f64(),
        Some(2.5)
    );
}

#[test]
fn type_mismatch_reports_path() {
    let ty = obj_type();
    let v = Value::object([(
        "items",
        Value::list([Value::object([("k", Value::int(1))])]),
    )]);
    let e = v.to_msgpack(&ty).unwrap_err();
    assert_eq!(
        e.path.0,
        vec![
            PathStep::Attribute("items".into()),
            PathStep::ElementKeyInt(0),
            PathStep::Attribute("k".into())
        ]
    );
    assert!(e.to_string().starts_with("at items[0].k: "), "{e}");

    let extra = Value::object([("nope", Value::Null)])
        .to_msgpack(&ty)
        .unwrap_err();
    assert!(extra.message.contains("nope"));
    assert!(
        Value::from_msgpack(&[0x81], &ty).is_err(),
        "truncated map must not decode"
    );
    assert!(
        Value::from_msgpack(&[0xa1, b'x'], &ty).is_err(),
        "a string is not an object"
    );
}

#[test]
fn json_state_decodes_leniently() {
    let ty = Type::object([
        ("id", Type::String),
        ("n", Type::Number),
        ("labels", Type::map(Type::String)),
        ("d", Type::Dynamic),
        ("gone_from_config", Type::String),
    ]);
    let state = serde_json::json!({
        "id": "abc",
        "n": "12",
        "labels": {"a": "b"},
        "d": {"value": ["x", true], "type": ["tuple", ["string", "bool"]]},
        "removed_attribute": 1
    });
    let v = Value::from_json(&state, &ty).unwrap();
    assert_eq!(v.get("id").as_str(), Some("abc"));
    assert_eq!(v.get("n").as_i64(), Some(12));
    assert_eq!(
        v.get("labels").to_string_map().unwrap().unwrap(),
        BTreeMap::from([("a".into(), "b".into())])
    );
    assert_eq!(
        v.get("d"),
        &Value::Tuple(vec![Value::string("x"), Value::bool(true)])
    );
    assert!(v.get("gone_from_config").is_null());
    assert!(v.as_map().unwrap().get("removed_attribute").is_none());

    let back = v.to_json(&ty).unwrap();
    assert_eq!(
        back["d"]["type"],
        serde_json::json!(["tuple", ["string", "bool"]])
    );
    assert_eq!(back["n"], serde_json::json!(12));
    assert!(Value::Unknown.to_json(&Type::String).is_err());
}

#[test]
fn type_json_round_trip() {
    let ty = obj_type();
    let json = ty.to_json();
    assert_eq!(json[0], "object");
    assert_eq!(json[1]["tags"], serde_json::json!(["map", "string"]));
    assert_eq!(json[1]["any"], "dynamic");
    assert_eq!(Type::from_json(&json).unwrap(), ty);
    assert_eq!(Type::from_json_bytes(&ty.to_json_bytes()).unwrap(), ty);
    // Optional-attribute markers are accepted.
    let with_opt = serde_json::json!(["object", {"a": "string"}, ["a"]]);
    assert_eq!(
        Type::from_json(&with_opt).unwrap(),
        Type::object([("a", Type::String)])
    );
    assert!(Type::from_json(&serde_json::json!("float")).is_err());
}

#[test]
fn helpers() {
    let v = Value::object([("a", Value::string("x"))]).with("b", Value::bool(true));
    assert_eq!(v.get("a").as_str(), Some("x"));
    assert_eq!(v.get("b").as_bool(), Some(true));
    assert!(v.get("missing").is_null());
    assert!(Value::Unknown.get("x").is_null());
    assert!(!Value::Unknown.is_known());
    assert!(Value::Null.is_known());
    let m = Value::string_map([("k", "v")]);
    assert_eq!(m.to_string_map().unwrap().unwrap()["k"], "v");
    assert!(Value::map([("k", Value::Unknown)]).to_string_map().is_err());
    assert_eq!(Value::Null.to_string_map().unwrap(), None);
    assert_eq!(
        Value::list([Value::string("a"), Value::string("b")])
            .to_string_list()
            .unwrap()
            .unwrap(),
        vec!["a", "b"]
    );
    assert_eq!(Value::opt_string(None::<String>), Value::Null);
}

#[test]
fn dynamic_value_prefers_msgpack_then_json() {
    use tfplugin::proto::tfplugin6::DynamicValue;
    let ty = Type::object([("a", Type::String)]);
    assert_eq!(tfplugin::decode_dynamic(None, &ty).unwrap(), Value::Null);
    let json = DynamicValue {
        msgpack: Vec::new(),
        json: br#"{"a":"j"}"#.to_vec(),
    };
    assert_eq!(
        tfplugin::decode_dynamic(Some(&json), &ty)
            .unwrap()
            .get("a")
            .as_str(),
        Some("j")
    );
    let both = DynamicValue {
        msgpack: vec![0x81, 0xa1, b'a', 0xa1, b'm'],
        json: br#"{"a":"j"}"#.to_vec(),
    };
    assert_eq!(
        tfplugin::decode_dynamic(Some(&both), &ty)
            .unwrap()
            .get("a")
            .as_str(),
        Some("m")
    );
    let encoded =
        tfplugin::encode_dynamic(&Value::object([("a", Value::string("m"))]), &ty).unwrap();
    assert_eq!(encoded.msgpack, both.msgpack);
    assert!(encoded.json.is_empty());
}

#[test]
fn untyped_json_becomes_objects_and_tuples() {
    let json = serde_json::json!({
        "kind": "Service",
        "spec": {"ports": [{"port": 80}, "mixed", 1.5, null, true]},
    });
    let value = Value::from_untyped_json(&json);
    assert_eq!(value.get("kind"), &Value::string("Service"));
    let ports = value.get("spec").get("ports");
    let Value::Tuple(items) = ports else {
        panic!("arrays become tuples: {ports:?}");
    };
    assert_eq!(items[0].get("port").as_i64(), Some(80));
    assert_eq!(items[1], Value::string("mixed"));
    assert_eq!(items[2].as_f64(), Some(1.5));
    assert_eq!(items[3], Value::Null);
    assert_eq!(items[4], Value::Bool(true));
    // The inferred type is what a `dynamic` result is encoded with.
    let Type::Object(attrs) = value.infer_type() else {
        panic!("objects stay objects");
    };
    assert_eq!(attrs.get("kind"), Some(&Type::String));
}
