//! Schemas: what a provider, resource or data source accepts and returns.
//!
//! Descriptions are sent as Markdown. `requires_replace` is not part of the
//! protocol; [`Schema::requires_replace`] uses it to compute the
//! `requires_replace` paths of a plan.

use std::collections::BTreeMap;

use crate::diag::AttributePath;
use crate::types::Type;
use crate::value::Value;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    /// Resource schema version, compared with the version in state to decide
    /// whether `UpgradeResourceState` must change the stored value.
    pub version: i64,
    pub block: Block,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Block {
    pub attributes: Vec<Attribute>,
    pub blocks: Vec<NestedBlock>,
    /// Markdown.
    pub description: String,
    pub deprecated: bool,
}

/// Nesting of an attribute whose type is a set of nested attributes
/// (protocol 6 "nested attribute types").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectNesting {
    Single,
    List,
    Set,
    Map,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NestedAttributes {
    pub nesting: ObjectNesting,
    pub attributes: Vec<Attribute>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    pub name: String,
    /// Ignored when `nested` is set.
    pub ty: Type,
    pub nested: Option<NestedAttributes>,
    /// Markdown.
    pub description: String,
    pub required: bool,
    pub optional: bool,
    pub computed: bool,
    pub sensitive: bool,
    pub deprecated: bool,
    /// Write-only (protocol 6.9, Terraform/OpenTofu 1.11+): Terraform sends the
    /// configured value to plan and apply but never stores it; plans and new states
    /// must hold null here. Cannot be combined with `computed`.
    pub write_only: bool,
    /// A change of this attribute forces a new resource; not sent to Terraform.
    pub requires_replace: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NestingMode {
    Single,
    List,
    Set,
    Map,
    Group,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NestedBlock {
    pub type_name: String,
    pub block: Block,
    pub nesting: NestingMode,
    pub min_items: i64,
    pub max_items: i64,
}

/// Everything `GetProviderSchema` returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderSchemas {
    pub provider: Schema,
    pub resources: BTreeMap<String, Schema>,
    pub data_sources: BTreeMap<String, Schema>,
    /// Ephemeral resources (`ephemeral` blocks), by type name.
    pub ephemerals: BTreeMap<String, Schema>,
    /// List resources (`list` blocks of `terraform query`), by the resource type they
    /// list: the schema of their `config` block.
    pub lists: BTreeMap<String, Schema>,
    /// Actions (`action` blocks), by type name: the schema of their `config` block.
    pub actions: BTreeMap<String, Schema>,
    /// Identities of the resource types that have one, by type name.
    pub identities: BTreeMap<String, crate::identity::IdentitySchema>,
}

impl Attribute {
    /// A new attribute with no flags set; call `.required()`, `.optional()` or
    /// `.computed()` (Terraform rejects an attribute with none of them).
    pub fn new(name: impl Into<String>, ty: Type) -> Attribute {
        Attribute {
            name: name.into(),
            ty,
            nested: None,
            description: String::new(),
            required: false,
            optional: false,
            computed: false,
            sensitive: false,
            deprecated: false,
            write_only: false,
            requires_replace: false,
        }
    }
    /// An attribute holding nested attributes (protocol 6 only).
    pub fn nested(
        name: impl Into<String>,
        nesting: ObjectNesting,
        attributes: Vec<Attribute>,
    ) -> Attribute {
        let mut a = Attribute::new(name, Type::Dynamic);
        a.nested = Some(NestedAttributes {
            nesting,
            attributes,
        });
        a
    }
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }
    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }
    pub fn computed(mut self) -> Self {
        self.computed = true;
        self
    }
    pub fn sensitive(mut self) -> Self {
        self.sensitive = true;
        self
    }
    pub fn deprecated(mut self) -> Self {
        self.deprecated = true;
        self
    }
    pub fn requires_replace(mut self) -> Self {
        self.requires_replace = true;
        self
    }
    pub fn write_only(mut self) -> Self {
        self.write_only = true;
        self
    }
    pub fn description(mut self, markdown: impl Into<String>) -> Self {
        self.description = markdown.into();
        self
    }

    /// The type of this attribute's value.
    pub fn value_type(&self) -> Type {
        match &self.nested {
            None => self.ty.clone(),
            Some(n) => {
                let obj = attributes_type(&n.attributes);
                match n.nesting {
                    // Unlike blocks, nested attributes stay list/map even
                    // with `dynamic` inside (Terraform's Object.ImpliedType).
                    ObjectNesting::Single => obj,
                    ObjectNesting::List => Type::list(obj),
                    ObjectNesting::Set => Type::set(obj),
                    ObjectNesting::Map => Type::map(obj),
                }
            }
        }
    }
}

fn attributes_type(attributes: &[Attribute]) -> Type {
    Type::Object(
        attributes
            .iter()
            .map(|a| (a.name.clone(), a.value_type()))
            .collect(),
    )
}

impl NestedBlock {
    pub fn new(type_name: impl Into<String>, nesting: NestingMode, block: Block) -> NestedBlock {
        NestedBlock {
            type_name: type_name.into(),
            block,
            nesting,
            min_items: 0,
            max_items: 0,
        }
    }
    pub fn min_items(mut self, n: i64) -> Self {
        self.min_items = n;
        self
    }
    pub fn max_items(mut self, n: i64) -> Self {
        self.max_items = n;
        self
    }
    pub fn value_type(&self) -> Type {
        let obj = self.block.value_type();
        match self.nesting {
            NestingMode::Single | NestingMode::Group => obj,
            // Same rule as Terraform's configschema: list/map blocks holding
            // `dynamic` attributes travel as one dynamic (tuple/object) value.
            NestingMode::List | NestingMode::Map if obj.has_dynamic() => Type::Dynamic,
            NestingMode::List => Type::list(obj),
            NestingMode::Set => Type::set(obj),
            NestingMode::Map => Type::map(obj),
        }
    }
}

impl Block {
    pub fn new() -> Block {
        Block::default()
    }

    /// `v` (an object of this block's type) with each null list, set or map block an
    /// empty collection, recursively (see [`Schema::returned_state`]). Single and
    /// group blocks stay as they are: those may be null. Blocks whose type is dynamic
    /// (list or map blocks holding `dynamic` attributes) are left alone.
    pub fn with_blocks_present(&self, mut v: Value) -> Value {
        if !matches!(v, Value::Object(_)) {
            return v;
        }
        for nested in &self.blocks {
            let dynamic = matches!(nested.value_type(), Type::Dynamic);
            let current = v
                .get_mut(&nested.type_name)
                .map(std::mem::take)
                .unwrap_or_default();
            let fixed = match (nested.nesting, current) {
                (NestingMode::List, Value::Null) if !dynamic => Value::List(Vec::new()),
                (NestingMode::Set, Value::Null) => Value::Set(Vec::new()),
                (NestingMode::Map, Value::Null) if !dynamic => Value::Map(Default::default()),
                (NestingMode::List, Value::List(items)) => Value::List(
                    items
                        .into_iter()
                        .map(|i| nested.block.with_blocks_present(i))
                        .collect(),
                ),
                (NestingMode::Set, Value::Set(items)) => Value::Set(
                    items
                        .into_iter()
                        .map(|i| nested.block.with_blocks_present(i))
                        .collect(),
                ),
                (NestingMode::Map, Value::Map(items)) => Value::Map(
                    items
                        .into_iter()
                        .map(|(k, i)| (k, nested.block.with_blocks_present(i)))
                        .collect(),
                ),
                (NestingMode::Single | NestingMode::Group, o @ Value::Object(_)) => {
                    nested.block.with_blocks_present(o)
                }
                (_, other) => other,
            };
            v.set_attr(nested.type_name.clone(), fixed);
        }
        v
    }
    pub fn attribute(mut self, a: Attribute) -> Self {
        self.attributes.push(a);
        self
    }
    pub fn block(mut self, b: NestedBlock) -> Self {
        self.blocks.push(b);
        self
    }
    pub fn description(mut self, markdown: impl Into<String>) -> Self {
        self.description = markdown.into();
        self
    }
    pub fn deprecated(mut self) -> Self {
        self.deprecated = true;
        self
    }
    /// The object type of a value of this block: attributes and nested blocks.
    pub fn value_type(&self) -> Type {
        let mut attrs: BTreeMap<String, Type> = self
            .attributes
            .iter()
            .map(|a| (a.name.clone(), a.value_type()))
            .collect();
        for b in &self.blocks {
            attrs.insert(b.type_name.clone(), b.value_type());
        }
        Type::Object(attrs)
    }
    pub fn find_attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }
}

impl Schema {
    pub fn new(version: i64, block: Block) -> Schema {
        Schema { version, block }
    }
    /// Implied object type of the block.
    pub fn value_type(&self) -> Type {
        self.block.value_type()
    }

    /// Top-level attributes marked `requires_replace` whose planned value
    /// differs from the prior one (an unknown planned value counts as a
    /// change). Empty when there is no prior state (create) or no plan (destroy).
    pub fn requires_replace(&self, prior: &Value, planned: &Value) -> Vec<AttributePath> {
        if prior.is_null() || planned.is_null() {
            return Vec::new();
        }
        self.block
            .attributes
            .iter()
            .filter(|a| a.requires_replace)
            .filter(|a| {
                let p = planned.get(&a.name);
                !p.is_known() || p != prior.get(&a.name)
            })
            .map(|a| AttributePath::attribute(a.name.clone()))
            .collect()
    }

    /// A state (planned, new, imported, read or listed) as Terraform must receive it:
    /// the server applies this to every state it returns, so a provider can neither
    /// leak a write-only value nor leave a block null.
    /// - every top-level write-only attribute null;
    /// - every absent list, set or map block an empty collection: in Terraform's type
    ///   system a block of those nesting modes is never null (the configuration
    ///   decodes an absent block as empty). Terraform 1.15 and older normalised a null
    ///   one themselves; 1.16 (which lets providers compute blocks) compares it as
    ///   given, so an imported state with `null` blocks planned an update with nothing
    ///   to show.
    pub fn returned_state(&self, v: Value) -> Value {
        self.block.with_blocks_present(self.without_write_only(v))
    }

    /// `v` with every top-level write-only attribute null (see [`Schema::returned_state`]).
    pub fn without_write_only(&self, mut v: Value) -> Value {
        if !matches!(v, Value::Object(_)) {
            return v;
        }
        for a in self.block.attributes.iter().filter(|a| a.write_only) {
            v.set_attr(a.name.clone(), Value::Null);
        }
        v
    }

    /// The usual planned value for a create/update: `proposed` with every
    /// top-level computed attribute that is null in it marked unknown.
    /// Terraform's proposed value already carries the prior value of computed
    /// attributes the config leaves unset, so a null here means "no value yet".
    /// Providers that recompute an attribute on update must mark it themselves.
    pub fn mark_computed_unknown(&self, proposed: &Value) -> Value {
        let mut planned = proposed.clone();
        if !matches!(planned, Value::Object(_)) {
            return planned;
        }
        for a in &self.block.attributes {
            if a.computed && planned.get(&a.name).is_null() {
                planned.set_attr(a.name.clone(), Value::Unknown);
            }
        }
        planned
    }
}
