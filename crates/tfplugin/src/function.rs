//! Provider-defined functions (protocol 6.5+; Terraform 1.8+, OpenTofu 1.7+):
//! `provider::<name>::<function>(...)` in configurations. Functions are pure: Terraform
//! may call them before (or without) configuring the provider, so they must not need
//! provider settings.

use crate::proto::tfplugin6 as pb;
use crate::types::Type;

/// One positional parameter of a function.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionParameter {
    pub name: String,
    pub ty: Type,
    /// Whether `null` may be passed; otherwise Terraform rejects it before calling.
    pub allow_null: bool,
    /// Markdown.
    pub description: String,
}

impl FunctionParameter {
    pub fn new(name: impl Into<String>, ty: Type) -> FunctionParameter {
        FunctionParameter {
            name: name.into(),
            ty,
            allow_null: false,
            description: String::new(),
        }
    }
    pub fn allow_null(mut self) -> Self {
        self.allow_null = true;
        self
    }
    pub fn description(mut self, markdown: impl Into<String>) -> Self {
        self.description = markdown.into();
        self
    }
}

/// A function's signature and documentation, as `GetFunctions` and
/// `GetProviderSchema` describe it.
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    pub parameters: Vec<FunctionParameter>,
    /// `Type::Dynamic` lets the result's type depend on the arguments.
    pub return_type: Type,
    pub summary: String,
    /// Markdown.
    pub description: String,
}

/// Why a call failed; Terraform shows `text` as the error of the call expression,
/// pointing at argument `argument` (0-based) when set.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionError {
    pub text: String,
    pub argument: Option<i64>,
}

impl FunctionError {
    pub fn new(text: impl Into<String>) -> FunctionError {
        FunctionError {
            text: text.into(),
            argument: None,
        }
    }
    pub fn at_argument(mut self, index: usize) -> Self {
        self.argument = i64::try_from(index).ok();
        self
    }
    pub fn to_proto(&self) -> pb::FunctionError {
        pb::FunctionError {
            text: self.text.clone(),
            function_argument: self.argument,
        }
    }
}

impl Function {
    pub fn to_proto(&self) -> pb::Function {
        let param = |p: &FunctionParameter| pb::function::Parameter {
            name: p.name.clone(),
            r#type: p.ty.to_json_bytes(),
            allow_null_value: p.allow_null,
            // Unknown arguments are resolved by Terraform (the call's result is then
            // unknown) so functions only ever see known values.
            allow_unknown_values: false,
            description: p.description.clone(),
            description_kind: pb::StringKind::Markdown as i32,
        };
        pb::Function {
            parameters: self.parameters.iter().map(param).collect(),
            variadic_parameter: None,
            r#return: Some(pb::function::Return {
                r#type: self.return_type.to_json_bytes(),
            }),
            summary: self.summary.clone(),
            description: self.description.clone(),
            description_kind: pb::StringKind::Markdown as i32,
            deprecation_message: String::new(),
        }
    }
}
