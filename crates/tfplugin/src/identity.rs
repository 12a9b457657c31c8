//! Resource identity (Terraform 1.12+, protocol 6.9): a small, stable object naming
//! the real-world thing a resource instance manages, which Terraform stores beside the
//! state and accepts in `import { identity = {...} }` blocks.
//!
//! Every identity attribute is a copy of a top-level state attribute, so the server
//! derives the identity from whatever state a read, plan, apply or import returns and
//! no resource has to keep the two in step.

use crate::proto::tfplugin6 as pb;
use crate::types::Type;
use crate::value::Value;

/// The identity of one managed resource type.
#[derive(Debug, Clone, PartialEq)]
pub struct IdentitySchema {
    /// Bumped whenever the attributes change; stored identities of an older version go
    /// through `UpgradeResourceIdentity`.
    pub version: i64,
    pub attributes: Vec<IdentityAttribute>,
}

/// One identity attribute, copied from the state attribute `state_attribute`.
#[derive(Debug, Clone, PartialEq)]
pub struct IdentityAttribute {
    pub name: String,
    pub ty: Type,
    pub state_attribute: String,
    /// Whether an `import` block's identity must set it (otherwise the provider can
    /// supply a default, such as the `default` namespace).
    pub required_for_import: bool,
    pub description: String,
}

impl IdentityAttribute {
    /// A string attribute named like the state attribute it copies.
    pub fn string(name: &str, description: &str) -> IdentityAttribute {
        IdentityAttribute {
            name: name.to_string(),
            ty: Type::String,
            state_attribute: name.to_string(),
            required_for_import: true,
            description: description.to_string(),
        }
    }

    /// Copies another state attribute than the one of its own name.
    pub fn from_state_attribute(mut self, state_attribute: &str) -> IdentityAttribute {
        self.state_attribute = state_attribute.to_string();
        self
    }

    /// Optional in an `import` block's identity.
    pub fn optional_for_import(mut self) -> IdentityAttribute {
        self.required_for_import = false;
        self
    }
}

impl IdentitySchema {
    pub fn new(version: i64, attributes: Vec<IdentityAttribute>) -> IdentitySchema {
        IdentitySchema {
            version,
            attributes,
        }
    }

    /// The identity's type: an object of its attributes.
    pub fn value_type(&self) -> Type {
        Type::object(
            self.attributes
                .iter()
                .map(|a| (a.name.clone(), a.ty.clone())),
        )
    }

    /// The identity of the object `state` describes; None when the state is null (no
    /// object) or an attribute is not known yet (a create whose name comes from an
    /// apply): Terraform then keeps no planned identity and takes the apply's.
    pub fn of_state(&self, state: &Value) -> Option<Value> {
        if state.is_null() {
            return None;
        }
        let mut attrs = Vec::with_capacity(self.attributes.len());
        for a in &self.attributes {
            let v = state.get(&a.state_attribute);
            if !v.is_fully_known() {
                return None;
            }
            attrs.push((a.name.clone(), v.clone()));
        }
        Some(Value::object(attrs))
    }

    pub fn to_proto(&self) -> pb::ResourceIdentitySchema {
        pb::ResourceIdentitySchema {
            version: self.version,
            identity_attributes: self
                .attributes
                .iter()
                .map(|a| pb::resource_identity_schema::IdentityAttribute {
                    name: a.name.clone(),
                    r#type: a.ty.to_json_bytes(),
                    required_for_import: a.required_for_import,
                    optional_for_import: !a.required_for_import,
                    description: a.description.clone(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> IdentitySchema {
        IdentitySchema::new(
            0,
            vec![
                IdentityAttribute::string("namespace", "ns").optional_for_import(),
                IdentityAttribute::string("version", "v").from_state_attribute("operator_version"),
            ],
        )
    }

    #[test]
    fn identity_copies_state_attributes_and_waits_for_unknowns() {
        let state = Value::object([
            ("namespace", Value::string("a")),
            ("operator_version", Value::string("1.0.0")),
            ("other", Value::string("x")),
        ]);
        assert_eq!(
            schema().of_state(&state),
            Some(Value::object([
                ("namespace", Value::string("a")),
                ("version", Value::string("1.0.0")),
            ]))
        );
        let pending = state.clone().with("operator_version", Value::Unknown);
        assert_eq!(schema().of_state(&pending), None);
        assert_eq!(schema().of_state(&Value::Null), None);
        let proto = schema().to_proto();
        assert!(proto.identity_attributes[0].optional_for_import);
        assert!(proto.identity_attributes[1].required_for_import);
    }
}
