//! The trait a provider implements: one method per Terraform RPC, with values
//! already decoded against the right schema.

use async_trait::async_trait;

use crate::diag::{AttributePath, Diagnostic};
use crate::function::{Function, FunctionError};
use crate::resources::{TypeKind, unknown_type};
use crate::schema::ProviderSchemas;
use crate::value::Value;

/// What the Terraform (or OpenTofu) calling the provider says it supports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCapabilities {
    /// Deferred actions (Terraform 1.9+ experiments).
    pub deferral_allowed: bool,
    /// Write-only attributes (protocol 6.8: Terraform 1.11+, OpenTofu 1.11+). A client
    /// without them would store a write-only attribute's value in state like any other.
    pub write_only_attributes_allowed: bool,
    /// The client hands a plan's private data to the next plan of the same resource
    /// (protocol 6.11: Terraform 1.16+; not OpenTofu 1.12): a saved plan's apply can
    /// then be held to what the first plan resolved.
    pub store_planned_private: bool,
}

/// Where a running action reports progress: each message becomes one progress event,
/// which Terraform prints under the action's name as it arrives.
#[derive(Debug, Clone)]
pub struct ActionProgress(tokio::sync::mpsc::UnboundedSender<String>);

impl ActionProgress {
    pub(crate) fn new(tx: tokio::sync::mpsc::UnboundedSender<String>) -> Self {
        ActionProgress(tx)
    }

    /// Reports one step of progress. Ignored once Terraform stopped listening.
    pub fn report(&self, message: impl Into<String>) {
        let _ = self.0.send(message.into());
    }
}

/// One object a list resource found (`terraform query`).
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// What Terraform shows for it.
    pub display_name: String,
    /// Its identity, an object of the type's [`crate::IdentitySchema`].
    pub identity: Value,
    /// The state an import of it would produce; asked for with `-generate-config-out`,
    /// from which Terraform writes its configuration.
    pub state: Option<Value>,
}

/// `ListResource`'s request, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct ListRequest {
    pub type_name: String,
    pub config: Value,
    pub include_resource_object: bool,
    pub limit: i64,
}

/// `ReadResource`: refresh the prior state from the real world.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadRequest {
    pub type_name: String,
    pub current_state: Value,
    pub private: Vec<u8>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadResponse {
    /// `Value::Null` means the object no longer exists; Terraform then plans
    /// to create it again.
    pub new_state: Value,
    pub private: Vec<u8>,
    pub diagnostics: Vec<Diagnostic>,
}

impl ReadResponse {
    /// A refresh that failed or had nothing to read: the state and private data as
    /// Terraform sent them, with `diagnostics`.
    pub fn unchanged(req: ReadRequest, diagnostics: Vec<Diagnostic>) -> ReadResponse {
        ReadResponse {
            new_state: req.current_state,
            private: req.private,
            diagnostics,
        }
    }
}

/// `PlanResourceChange`. On create `prior_state` is `Null`; on destroy
/// (the server advertises `plan_destroy`) `proposed_new_state` and `config`
/// are `Null` and the plan must be `Null` too.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanRequest {
    pub type_name: String,
    pub prior_state: Value,
    pub proposed_new_state: Value,
    pub config: Value,
    pub prior_private: Vec<u8>,
    /// The private data the first plan of this change returned, handed back on the
    /// second plan that `terraform apply` makes before applying (protocol 6.11,
    /// Terraform 1.16+; a saved plan's apply included). Empty on a first plan and
    /// from older clients, which keep nothing of the first plan for the provider.
    pub planned_private: Vec<u8>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanResponse {
    pub planned_state: Value,
    pub requires_replace: Vec<AttributePath>,
    pub planned_private: Vec<u8>,
    pub diagnostics: Vec<Diagnostic>,
}

/// `ApplyResourceChange`. `planned_state` is `Null` for a destroy, and
/// `prior_state` is `Null` for a create.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyRequest {
    pub type_name: String,
    pub prior_state: Value,
    pub planned_state: Value,
    pub config: Value,
    pub planned_private: Vec<u8>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApplyResponse {
    /// Must be `Null` after a destroy. After a create/update, every unknown
    /// in the plan must be known here, and known planned values unchanged.
    pub new_state: Value,
    pub private: Vec<u8>,
    pub diagnostics: Vec<Diagnostic>,
}

impl PlanResponse {
    /// A refused plan: nothing planned, only `diagnostics`.
    pub fn refused(diagnostics: Vec<Diagnostic>) -> PlanResponse {
        PlanResponse {
            diagnostics,
            ..Default::default()
        }
    }
}

impl ApplyResponse {
    /// A failed apply: `state` is what holds now (the prior state when nothing was
    /// done, so that Terraform keeps it), with `diagnostics`.
    pub fn failed(state: Value, diagnostics: Vec<Diagnostic>) -> ApplyResponse {
        ApplyResponse {
            new_state: state,
            diagnostics,
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ImportedResource {
    pub type_name: String,
    pub state: Value,
    pub private: Vec<u8>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportResponse {
    pub imported: Vec<ImportedResource>,
    pub diagnostics: Vec<Diagnostic>,
}

impl ImportResponse {
    /// An import that failed before it found anything.
    pub fn failed(diagnostics: Vec<Diagnostic>) -> ImportResponse {
        ImportResponse {
            imported: Vec::new(),
            diagnostics,
        }
    }
}

/// Stored JSON state of `type_name` decoded against its current schema: what
/// `upgrade_resource_state` does by default, and what an override calls once it has
/// brought an older layout up to date.
pub fn decode_stored_state(
    schemas: &ProviderSchemas,
    type_name: &str,
    raw_json: &serde_json::Value,
) -> Result<Value, Vec<Diagnostic>> {
    let schema = schemas
        .resources
        .get(type_name)
        .ok_or_else(|| vec![unknown_type(TypeKind::Resource, type_name)])?;
    Value::from_json(raw_json, &schema.value_type()).map_err(|e| {
        vec![Diagnostic::error(
            "Stored state does not match the resource schema",
            format!("The state of this {type_name} could not be read: {e}. If it was written by a newer version of the provider, use that version."),
        )]
    })
}

/// A Terraform provider. The server decodes requests against the schemas from
/// [`Provider::schemas`] (called once, lazily, and cached) and encodes the
/// responses; a value that does not fit the schema becomes an error diagnostic.
///
/// Terraform may start the provider process several times per command and
/// call `configure` in each; keep no state that must outlive one process.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    fn schemas(&self) -> ProviderSchemas;

    async fn validate_provider_config(&self, _config: Value) -> Vec<Diagnostic> {
        Vec::new()
    }

    async fn configure(&self, config: Value, terraform_version: String) -> Vec<Diagnostic>;

    /// `client` is what the calling Terraform supports; a configuration that sets a
    /// write-only attribute needs `write_only_attributes_allowed`.
    async fn validate_resource_config(
        &self,
        _type_name: &str,
        _config: Value,
        _client: ClientCapabilities,
    ) -> Vec<Diagnostic> {
        Vec::new()
    }

    async fn validate_data_source_config(
        &self,
        _type_name: &str,
        _config: Value,
    ) -> Vec<Diagnostic> {
        Vec::new()
    }

    /// Turns stored JSON state (written with schema `version`) into a value of
    /// the current schema. The default decodes it against the current schema
    /// ([`decode_stored_state`]), dropping attributes the schema no longer has.
    async fn upgrade_resource_state(
        &self,
        type_name: &str,
        _version: i64,
        raw_json: serde_json::Value,
    ) -> Result<Value, Vec<Diagnostic>> {
        decode_stored_state(&self.schemas(), type_name, &raw_json)
    }

    async fn read_resource(&self, req: ReadRequest) -> ReadResponse;

    async fn plan_resource_change(&self, req: PlanRequest) -> PlanResponse;

    async fn apply_resource_change(&self, req: ApplyRequest) -> ApplyResponse;

    /// Default: import is not supported.
    async fn import_resource_state(&self, type_name: &str, _id: &str) -> ImportResponse {
        ImportResponse {
            imported: Vec::new(),
            diagnostics: vec![Diagnostic::error(
                "Import not supported",
                format!("The resource type {type_name} cannot be imported."),
            )],
        }
    }

    /// `ImportResourceState` from an `import` block's `identity`, decoded against the
    /// type's [`crate::IdentitySchema`]. Default: not supported.
    async fn import_resource_identity(&self, type_name: &str, _identity: Value) -> ImportResponse {
        ImportResponse {
            imported: Vec::new(),
            diagnostics: vec![Diagnostic::error(
                "Import by identity not supported",
                format!(
                    "The resource type {type_name} cannot be imported by identity; use an import id."
                ),
            )],
        }
    }

    /// `ValidateEphemeralResourceConfig`. Default: nothing to check.
    async fn validate_ephemeral_config(&self, _type_name: &str, _config: Value) -> Vec<Diagnostic> {
        Vec::new()
    }

    /// `OpenEphemeralResource`: the ephemeral resource's value (its configuration with
    /// the computed attributes filled), which Terraform never stores. It is opened
    /// for plan and again for apply, and never renewed. Default: an unknown type.
    async fn open_ephemeral(&self, type_name: &str, config: Value) -> (Value, Vec<Diagnostic>) {
        (
            config,
            vec![unknown_type(TypeKind::EphemeralResource, type_name)],
        )
    }

    /// `ValidateListResourceConfig`. Default: nothing to check.
    async fn validate_list_config(&self, _type_name: &str, _config: Value) -> Vec<Diagnostic> {
        Vec::new()
    }

    /// `ListResource`: the objects of a type found in the real world, at most
    /// `limit`. Default: an unknown list resource type.
    async fn list_resource(&self, req: ListRequest) -> (Vec<Listed>, Vec<Diagnostic>) {
        (
            Vec::new(),
            vec![unknown_type(TypeKind::ListResource, &req.type_name)],
        )
    }

    /// `ValidateActionConfig`: checks of an action's configuration that need neither
    /// the provider's settings nor the real world. Values may be unknown.
    async fn validate_action_config(&self, _type_name: &str, _config: Value) -> Vec<Diagnostic> {
        Vec::new()
    }

    /// `PlanAction`: what `terraform plan` can say about an action it will invoke
    /// (errors stop the plan). Default: nothing.
    async fn plan_action(&self, _type_name: &str, _config: Value) -> Vec<Diagnostic> {
        Vec::new()
    }

    /// `InvokeAction`: runs the action, reporting progress through `progress`; the
    /// diagnostics returned complete it (an error fails the Terraform run).
    async fn invoke_action(
        &self,
        type_name: &str,
        _config: Value,
        _progress: ActionProgress,
    ) -> Vec<Diagnostic> {
        vec![unknown_type(TypeKind::Action, type_name)]
    }

    /// Returns the data source's state (config with computed attributes filled).
    async fn read_data_source(&self, type_name: &str, config: Value) -> (Value, Vec<Diagnostic>);

    /// Provider-defined functions by name. Default: none.
    fn functions(&self) -> std::collections::BTreeMap<String, Function> {
        std::collections::BTreeMap::new()
    }

    /// `CallFunction`: `arguments` are decoded against the declared parameter types
    /// (always known; null only where the parameter allows it) and the result is
    /// encoded against the declared return type.
    async fn call_function(
        &self,
        name: &str,
        _arguments: Vec<Value>,
    ) -> Result<Value, FunctionError> {
        Err(FunctionError::new(format!(
            "This provider has no function {name:?}."
        )))
    }

    /// `StopProvider`: Terraform was interrupted; cancel work in flight so the
    /// running RPCs return soon (with errors). Must not block.
    fn stop(&self) {}
}
