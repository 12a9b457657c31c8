//! Schema model, implied types and conversion to the protocol messages.

use tfplugin::proto::tfplugin6 as pb;
use tfplugin::{
    Attribute, AttributePath, Block, NestedBlock, NestingMode, ObjectNesting, PathStep, Schema,
    Type, Value,
};

fn schema() -> Schema {
    Schema::new(
        2,
        Block::new()
            .description("An *instance*.")
            .attribute(
                Attribute::new("name", Type::String)
                    .required()
                    .requires_replace()
                    .description("Name."),
            )
            .attribute(Attribute::new("id", Type::String).computed())
            .attribute(
                Attribute::new("token", Type::String)
                    .optional()
                    .sensitive()
                    .deprecated(),
            )
            .attribute(Attribute::nested(
                "ports",
                ObjectNesting::List,
                vec![Attribute::new("port", Type::Number).required()],
            ))
            .block(
                NestedBlock::new(
                    "timeouts",
                    NestingMode::Single,
                    Block::new().attribute(Attribute::new("create", Type::String).optional()),
                )
                .max_items(1),
            )
            .block(NestedBlock::new(
                "rule",
                NestingMode::Set,
                Block::new().attribute(Attribute::new("x", Type::Bool).optional()),
            )),
    )
}

#[test]
fn implied_type_covers_attributes_and_blocks() {
    let ty = schema().value_type();
    let expected = Type::object([
        ("name", Type::String),
        ("id", Type::String),
        ("token", Type::String),
        ("ports", Type::list(Type::object([("port", Type::Number)]))),
        ("timeouts", Type::object([("create", Type::String)])),
        ("rule", Type::set(Type::object([("x", Type::Bool)]))),
    ]);
    assert_eq!(ty, expected);
}

#[test]
fn converts_to_proto() {
    let p = schema().to_proto();
    assert_eq!(p.version, 2);
    let block = p.block.unwrap();
    assert_eq!(block.version, 2);
    assert_eq!(block.description, "An *instance*.");
    assert_eq!(block.description_kind, pb::StringKind::Markdown as i32);

    let name = &block.attributes[0];
    assert_eq!(name.name, "name");
    assert_eq!(name.r#type, br#""string""#.to_vec());
    assert!(name.required && !name.optional && !name.computed);
    assert_eq!(name.description, "Name.");

    let token = &block.attributes[2];
    assert!(token.optional && token.sensitive && token.deprecated);

    let ports = &block.attributes[3];
    assert!(ports.r#type.is_empty(), "nested attributes send no type");
    let nested = ports.nested_type.as_ref().unwrap();
    assert_eq!(nested.nesting, pb::schema::object::NestingMode::List as i32);
    assert_eq!(nested.attributes[0].r#type, br#""number""#.to_vec());

    assert_eq!(block.block_types.len(), 2);
    let timeouts = &block.block_types[0];
    assert_eq!(timeouts.type_name, "timeouts");
    assert_eq!(
        timeouts.nesting,
        pb::schema::nested_block::NestingMode::Single as i32
    );
    assert_eq!(timeouts.max_items, 1);
    assert_eq!(
        block.block_types[1].nesting,
        pb::schema::nested_block::NestingMode::Set as i32
    );
}

#[test]
fn complex_attribute_type_is_cty_json() {
    let a = Attribute::new("m", Type::map(Type::list(Type::String))).optional();
    let p = Schema::new(0, Block::new().attribute(a)).to_proto();
    let bytes = &p.block.unwrap().attributes[0].r#type;
    let json: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    assert_eq!(json, serde_json::json!(["map", ["list", "string"]]));
}

#[test]
fn requires_replace_helper() {
    let s = schema();
    let prior = Value::object([("name", Value::string("a")), ("id", Value::string("1"))]);
    let same = prior.clone();
    assert!(s.requires_replace(&prior, &same).is_empty());
    let renamed = prior.clone().with("name", Value::string("b"));
    assert_eq!(
        s.requires_replace(&prior, &renamed),
        vec![AttributePath::attribute("name")]
    );
    let unknown = prior.clone().with("name", Value::Unknown);
    assert_eq!(s.requires_replace(&prior, &unknown).len(), 1);
    assert!(
        s.requires_replace(&Value::Null, &renamed).is_empty(),
        "create never replaces"
    );
}

#[test]
fn computed_marked_unknown() {
    let proposed = Value::object([("name", Value::string("a")), ("id", Value::Null)]);
    let planned = schema().mark_computed_unknown(&proposed);
    assert_eq!(planned.get("id"), &Value::Unknown);
    assert_eq!(planned.get("name").as_str(), Some("a"));
}

/// Terraform never has a null list, set or map block (an absent one is empty); 1.16
/// compares a returned state as given, so the server fills them in, at every depth.
#[test]
fn returned_states_have_no_null_list_set_or_map_blocks() {
    let inner = Block::new()
        .attribute(Attribute::new("x", Type::Bool).optional())
        .block(NestedBlock::new("deep", NestingMode::List, Block::new()));
    let schema = Schema::new(
        1,
        Block::new()
            .attribute(
                Attribute::new("secret", Type::String)
                    .optional()
                    .write_only(),
            )
            .block(NestedBlock::new(
                "timeouts",
                NestingMode::Single,
                Block::new(),
            ))
            .block(NestedBlock::new("rules", NestingMode::List, inner.clone()))
            .block(NestedBlock::new("tags", NestingMode::Set, Block::new()))
            .block(NestedBlock::new("named", NestingMode::Map, Block::new())),
    );
    let returned = schema.returned_state(Value::object([
        ("secret", Value::string("s")),
        ("timeouts", Value::Null),
        (
            "rules",
            Value::List(vec![Value::object([("x", Value::Bool(true))])]),
        ),
    ]));
    assert_eq!(returned.get("secret"), &Value::Null, "write-only stays out");
    assert_eq!(
        returned.get("timeouts"),
        &Value::Null,
        "a single block may be null"
    );
    assert_eq!(returned.get("tags"), &Value::Set(Vec::new()));
    assert_eq!(returned.get("named"), &Value::Map(Default::default()));
    let Value::List(rules) = returned.get("rules") else {
        panic!("rules: {returned:?}")
    };
    assert_eq!(
        rules[0].get("deep"),
        &Value::List(Vec::new()),
        "nested blocks too"
    );
    assert_eq!(rules[0].get("x"), &Value::Bool(true));
    // A null state (a deleted resource) stays null.
    assert_eq!(schema.returned_state(Value::Null), Value::Null);
}

#[test]
fn attribute_path_to_proto_and_display() {
    let p = AttributePath::attribute("a").key("k").index(3).attr("b");
    assert_eq!(p.to_string(), r#"a["k"][3].b"#);
    assert_eq!(p.steps()[1], PathStep::ElementKeyString("k".into()));
    let proto = p.to_proto();
    use pb::attribute_path::step::Selector;
    assert_eq!(
        proto.steps[0].selector,
        Some(Selector::AttributeName("a".into()))
    );
    assert_eq!(proto.steps[2].selector, Some(Selector::ElementKeyInt(3)));
}

#[test]
fn diagnostics_to_proto() {
    let d =
        tfplugin::Diagnostic::error("Bad", "very").with_attribute(AttributePath::attribute("x"));
    let p = d.to_proto();
    assert_eq!(p.severity, pb::diagnostic::Severity::Error as i32);
    assert_eq!((p.summary.as_str(), p.detail.as_str()), ("Bad", "very"));
    assert_eq!(p.attribute.unwrap().steps.len(), 1);
    let w = tfplugin::Diagnostic::warning("Hm", "").to_proto();
    assert_eq!(w.severity, pb::diagnostic::Severity::Warning as i32);
    assert!(tfplugin::has_errors(&[d]));
}

#[test]
fn list_and_map_blocks_with_dynamic_content_become_dynamic() {
    let inner = Block::new().attribute(Attribute::new("v", Type::Dynamic).optional());
    let b = Block::new()
        .block(NestedBlock::new("l", NestingMode::List, inner.clone()))
        .block(NestedBlock::new("m", NestingMode::Map, inner.clone()))
        .block(NestedBlock::new("s", NestingMode::Single, inner.clone()))
        .attribute(Attribute::nested("n", ObjectNesting::Map, inner.attributes.clone()).optional());
    let ty = b.value_type();
    let Type::Object(attrs) = ty else {
        panic!("object expected")
    };
    assert_eq!(attrs["l"], Type::Dynamic);
    assert_eq!(attrs["m"], Type::Dynamic);
    // Nested attributes keep their collection type.
    assert_eq!(attrs["n"], Type::map(Type::object([("v", Type::Dynamic)])));
    assert_eq!(attrs["s"], Type::object([("v", Type::Dynamic)]));
}
