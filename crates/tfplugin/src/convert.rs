//! Conversions between our model and the generated protobuf messages.

use crate::codec::ValueError;
use crate::diag::{AttributePath, Diagnostic, PathStep, Severity};
use crate::proto::tfplugin6 as pb;
use crate::schema::{Attribute, Block, NestedBlock, NestingMode, ObjectNesting, Schema};
use crate::types::Type;
use crate::value::Value;

impl Schema {
    pub fn to_proto(&self) -> pb::Schema {
        pb::Schema {
            version: self.version,
            block: Some(block_to_proto(&self.block, self.version)),
        }
    }
}

fn block_to_proto(b: &Block, version: i64) -> pb::schema::Block {
    pb::schema::Block {
        version,
        attributes: b.attributes.iter().map(attribute_to_proto).collect(),
        block_types: b.blocks.iter().map(nested_block_to_proto).collect(),
        description: b.description.clone(),
        description_kind: pb::StringKind::Markdown as i32,
        deprecated: b.deprecated,
    }
}

fn attribute_to_proto(a: &Attribute) -> pb::schema::Attribute {
    let (ty, nested_type) = match &a.nested {
        None => (a.ty.to_json_bytes(), None),
        Some(n) => {
            let nesting = match n.nesting {
                ObjectNesting::Single => pb::schema::object::NestingMode::Single,
                ObjectNesting::List => pb::schema::object::NestingMode::List,
                ObjectNesting::Set => pb::schema::object::NestingMode::Set,
                ObjectNesting::Map => pb::schema::object::NestingMode::Map,
            };
            #[allow(deprecated)]
            let obj = pb::schema::Object {
                attributes: n.attributes.iter().map(attribute_to_proto).collect(),
                nesting: nesting as i32,
                min_items: 0,
                max_items: 0,
            };
            (Vec::new(), Some(obj))
        }
    };
    pb::schema::Attribute {
        name: a.name.clone(),
        r#type: ty,
        nested_type,
        description: a.description.clone(),
        required: a.required,
        optional: a.optional,
        computed: a.computed,
        sensitive: a.sensitive,
        description_kind: pb::StringKind::Markdown as i32,
        deprecated: a.deprecated,
        write_only: a.write_only,
    }
}

fn nested_block_to_proto(b: &NestedBlock) -> pb::schema::NestedBlock {
    use pb::schema::nested_block::NestingMode as M;
    let nesting = match b.nesting {
        NestingMode::Single => M::Single,
        NestingMode::List => M::List,
        NestingMode::Set => M::Set,
        NestingMode::Map => M::Map,
        NestingMode::Group => M::Group,
    };
    pb::schema::NestedBlock {
        type_name: b.type_name.clone(),
        block: Some(block_to_proto(&b.block, 0)),
        nesting: nesting as i32,
        min_items: b.min_items,
        max_items: b.max_items,
    }
}

impl AttributePath {
    pub fn to_proto(&self) -> pb::AttributePath {
        use pb::attribute_path::step::Selector;
        pb::AttributePath {
            steps: self
                .0
                .iter()
                .map(|s| pb::attribute_path::Step {
                    selector: Some(match s {
                        PathStep::Attribute(a) => Selector::AttributeName(a.clone()),
                        PathStep::ElementKeyString(k) => Selector::ElementKeyString(k.clone()),
                        PathStep::ElementKeyInt(i) => Selector::ElementKeyInt(*i),
                    }),
                })
                .collect(),
        }
    }
}

impl Diagnostic {
    pub fn to_proto(&self) -> pb::Diagnostic {
        pb::Diagnostic {
            severity: match self.severity {
                Severity::Error => pb::diagnostic::Severity::Error,
                Severity::Warning => pb::diagnostic::Severity::Warning,
            } as i32,
            summary: self.summary.clone(),
            detail: self.detail.clone(),
            attribute: self.attribute.as_ref().map(AttributePath::to_proto),
        }
    }
}

pub(crate) fn diags_to_proto(diags: &[Diagnostic]) -> Vec<pb::Diagnostic> {
    diags.iter().map(Diagnostic::to_proto).collect()
}

/// Decodes a `DynamicValue`: msgpack when present, else JSON; an absent value
/// is `Null` (Terraform omits e.g. the prior state on create).
pub fn decode_dynamic(dv: Option<&pb::DynamicValue>, ty: &Type) -> Result<Value, ValueError> {
    match dv {
        None => Ok(Value::Null),
        Some(dv) if !dv.msgpack.is_empty() => Value::from_msgpack(&dv.msgpack, ty),
        Some(dv) if !dv.json.is_empty() => Value::from_json_bytes(&dv.json, ty),
        Some(_) => Ok(Value::Null),
    }
}

pub fn encode_dynamic(v: &Value, ty: &Type) -> Result<pb::DynamicValue, ValueError> {
    Ok(pb::DynamicValue {
        msgpack: v.to_msgpack(ty)?,
        json: Vec::new(),
    })
}
