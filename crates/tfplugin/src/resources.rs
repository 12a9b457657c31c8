//! One trait per resource type and per data source, and [`Resources`], the registry a
//! [`Provider`](crate::Provider) forwards the resource RPCs to: dispatch by type name,
//! and the "unknown type" diagnostic, live here once.
//!
//! `C` is the provider's context for a call: whatever `ConfigureProvider` established
//! (a client, settings) plus per-call state such as a cancellation token. The provider
//! builds it and hands it to the registry, which hands it to the resource.

use std::collections::BTreeMap;

use async_trait::async_trait;

use crate::diag::Diagnostic;
use crate::identity::IdentitySchema;
use crate::provider::{
    ActionProgress, ApplyRequest, ApplyResponse, ClientCapabilities, ImportResponse, ListRequest,
    Listed, PlanRequest, PlanResponse, ReadRequest, ReadResponse,
};
use crate::schema::{ProviderSchemas, Schema};
use crate::value::Value;

/// A managed resource type. Requests carry values already decoded against
/// [`Resource::schema`]; decode them into the resource's model with [`Value::decode`].
#[async_trait]
pub trait Resource<C: Sync>: Send + Sync {
    /// The type name, such as `example_thing`.
    fn name(&self) -> &'static str;

    fn schema(&self) -> Schema;

    /// `ValidateResourceConfig`: checks that need neither the provider's configuration
    /// nor the real world. Values may be unknown. Default: nothing to check.
    async fn validate(&self, _config: Value, _client: ClientCapabilities) -> Vec<Diagnostic> {
        Vec::new()
    }

    /// `ReadResource`: refresh the prior state from the real world.
    async fn read(&self, ctx: &C, req: ReadRequest) -> ReadResponse;

    /// `PlanResourceChange`, destroys included (`proposed_new_state` is then null).
    async fn plan(&self, ctx: &C, req: PlanRequest) -> PlanResponse;

    /// `ApplyResourceChange`, destroys included (`planned_state` is then null).
    async fn apply(&self, ctx: &C, req: ApplyRequest) -> ApplyResponse;

    /// `ImportResourceState`. Default: import is not supported.
    async fn import(&self, _ctx: &C, _id: &str) -> ImportResponse {
        ImportResponse {
            imported: Vec::new(),
            diagnostics: vec![Diagnostic::error(
                "Import not supported",
                format!("The resource type {} cannot be imported.", self.name()),
            )],
        }
    }

    /// The type's identity (Terraform 1.12+). Default: none.
    fn identity(&self) -> Option<IdentitySchema> {
        None
    }

    /// `ImportResourceState` from an `import` block's `identity` (decoded against
    /// [`Resource::identity`]). Default: not supported.
    async fn import_identity(&self, _ctx: &C, _identity: &Value) -> ImportResponse {
        ImportResponse {
            imported: Vec::new(),
            diagnostics: vec![Diagnostic::error(
                "Import by identity not supported",
                format!(
                    "The resource type {} cannot be imported by identity; use an import id.",
                    self.name()
                ),
            )],
        }
    }
}

/// A data source.
#[async_trait]
pub trait DataSource<C: Sync>: Send + Sync {
    fn name(&self) -> &'static str;

    fn schema(&self) -> Schema;

    /// `ValidateDataResourceConfig`. Default: nothing to check.
    async fn validate(&self, _config: Value) -> Vec<Diagnostic> {
        Vec::new()
    }

    /// `ReadDataSource`: the data source's state (the config with its computed
    /// attributes filled) and diagnostics.
    async fn read(&self, ctx: &C, config: Value) -> (Value, Vec<Diagnostic>);
}

/// An ephemeral resource (`ephemeral` blocks, protocol 6.7+): opened while Terraform
/// works, never stored.
#[async_trait]
pub trait EphemeralResource<C: Sync>: Send + Sync {
    fn name(&self) -> &'static str;

    fn schema(&self) -> Schema;

    /// `OpenEphemeralResource`: the configuration with its computed attributes filled.
    async fn open(&self, ctx: &C, config: Value) -> (Value, Vec<Diagnostic>);
}

/// A list resource (`list` blocks of `terraform query`, protocol 6.10).
#[async_trait]
pub trait ListResource<C: Sync>: Send + Sync {
    fn name(&self) -> &'static str;

    /// The schema of the `list` block's `config`.
    fn schema(&self) -> Schema;

    /// `ListResource`: what the query finds.
    async fn list(&self, ctx: &C, req: ListRequest) -> (Vec<Listed>, Vec<Diagnostic>);
}

/// An action (`action` blocks, protocol 6.10).
#[async_trait]
pub trait Action<C: Sync>: Send + Sync {
    fn name(&self) -> &'static str;

    fn schema(&self) -> Schema;

    /// `ValidateActionConfig`: the configuration's own form. Default: nothing to check.
    async fn validate(&self, _config: Value) -> Vec<Diagnostic> {
        Vec::new()
    }

    /// `PlanAction`. Default: nothing to say.
    async fn plan(&self, _ctx: &C, _config: Value) -> Vec<Diagnostic> {
        Vec::new()
    }

    /// `InvokeAction`, reporting progress as it goes.
    async fn invoke(&self, ctx: &C, config: Value, progress: ActionProgress) -> Vec<Diagnostic>;
}

/// Which kind of type a name was looked up as, for [`unknown_type`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeKind {
    Resource,
    DataSource,
    /// `ephemeral` blocks (protocol 6.7+).
    EphemeralResource,
    /// `list` blocks of `terraform query` (protocol 6.10).
    ListResource,
    /// `action` blocks (protocol 6.10).
    Action,
}

/// The error for a type name the provider does not have. The server answers with it
/// before a provider is called; the registry and the default
/// `upgrade_resource_state` use the same words.
pub fn unknown_type(kind: TypeKind, type_name: &str) -> Diagnostic {
    let kind = match kind {
        TypeKind::Resource => "resource",
        TypeKind::DataSource => "data source",
        TypeKind::EphemeralResource => "ephemeral resource",
        TypeKind::ListResource => "list resource",
        TypeKind::Action => "action",
    };
    Diagnostic::error(
        format!("Unknown {kind} type"),
        format!("This provider has no {kind} type {type_name:?}."),
    )
}

/// The resources, data sources, ephemeral resources, list resources and actions of a
/// provider, by type name.
pub struct Resources<C> {
    resources: BTreeMap<&'static str, Box<dyn Resource<C>>>,
    data_sources: BTreeMap<&'static str, Box<dyn DataSource<C>>>,
    ephemerals: BTreeMap<&'static str, Box<dyn EphemeralResource<C>>>,
    lists: BTreeMap<&'static str, Box<dyn ListResource<C>>>,
    actions: BTreeMap<&'static str, Box<dyn Action<C>>>,
}

impl<C> Default for Resources<C> {
    fn default() -> Self {
        Resources {
            resources: BTreeMap::new(),
            data_sources: BTreeMap::new(),
            ephemerals: BTreeMap::new(),
            lists: BTreeMap::new(),
            actions: BTreeMap::new(),
        }
    }
}

impl<C: Send + Sync> Resources<C> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a resource type; a second one of the same name replaces the first.
    pub fn resource(mut self, resource: impl Resource<C> + 'static) -> Self {
        self.resources.insert(resource.name(), Box::new(resource));
        self
    }

    /// Adds a data source; a second one of the same name replaces the first.
    pub fn data_source(mut self, data_source: impl DataSource<C> + 'static) -> Self {
        self.data_sources
            .insert(data_source.name(), Box::new(data_source));
        self
    }

    /// Adds an ephemeral resource type.
    pub fn ephemeral(mut self, ephemeral: impl EphemeralResource<C> + 'static) -> Self {
        self.ephemerals
            .insert(ephemeral.name(), Box::new(ephemeral));
        self
    }

    /// Adds a list resource type.
    pub fn list(mut self, list: impl ListResource<C> + 'static) -> Self {
        self.lists.insert(list.name(), Box::new(list));
        self
    }

    /// Adds an action type.
    pub fn action(mut self, action: impl Action<C> + 'static) -> Self {
        self.actions.insert(action.name(), Box::new(action));
        self
    }

    /// The schemas for `GetProviderSchema`, with `provider` as the provider block.
    pub fn schemas(&self, provider: Schema) -> ProviderSchemas {
        ProviderSchemas {
            provider,
            resources: self
                .resources
                .iter()
                .map(|(name, r)| (name.to_string(), r.schema()))
                .collect(),
            data_sources: self
                .data_sources
                .iter()
                .map(|(name, d)| (name.to_string(), d.schema()))
                .collect(),
            ephemerals: schemas_of(&self.ephemerals, |e| e.schema()),
            lists: schemas_of(&self.lists, |l| l.schema()),
            actions: schemas_of(&self.actions, |a| a.schema()),
            identities: self
                .resources
                .iter()
                .filter_map(|(name, r)| Some((name.to_string(), r.identity()?)))
                .collect(),
        }
    }

    fn find(&self, type_name: &str) -> Result<&dyn Resource<C>, Diagnostic> {
        self.resources
            .get(type_name)
            .map(Box::as_ref)
            .ok_or_else(|| unknown_type(TypeKind::Resource, type_name))
    }

    fn find_data_source(&self, type_name: &str) -> Result<&dyn DataSource<C>, Diagnostic> {
        self.data_sources
            .get(type_name)
            .map(Box::as_ref)
            .ok_or_else(|| unknown_type(TypeKind::DataSource, type_name))
    }

    pub async fn validate_resource(
        &self,
        type_name: &str,
        config: Value,
        client: ClientCapabilities,
    ) -> Vec<Diagnostic> {
        match self.find(type_name) {
            Ok(r) => r.validate(config, client).await,
            Err(d) => vec![d],
        }
    }

    /// An unknown type keeps the current state, as a failed refresh does.
    pub async fn read(&self, ctx: &C, req: ReadRequest) -> ReadResponse {
        match self.find(&req.type_name) {
            Ok(r) => r.read(ctx, req).await,
            Err(d) => ReadResponse::unchanged(req, vec![d]),
        }
    }

    pub async fn plan(&self, ctx: &C, req: PlanRequest) -> PlanResponse {
        match self.find(&req.type_name) {
            Ok(r) => r.plan(ctx, req).await,
            Err(d) => PlanResponse::refused(vec![d]),
        }
    }

    /// An unknown type keeps the prior state, as a failed apply does.
    pub async fn apply(&self, ctx: &C, req: ApplyRequest) -> ApplyResponse {
        match self.find(&req.type_name) {
            Ok(r) => r.apply(ctx, req).await,
            Err(d) => ApplyResponse::failed(req.prior_state, vec![d]),
        }
    }

    pub async fn import(&self, ctx: &C, type_name: &str, id: &str) -> ImportResponse {
        match self.find(type_name) {
            Ok(r) => r.import(ctx, id).await,
            Err(d) => ImportResponse::failed(vec![d]),
        }
    }

    pub async fn import_identity(
        &self,
        ctx: &C,
        type_name: &str,
        identity: &Value,
    ) -> ImportResponse {
        match self.find(type_name) {
            Ok(r) => r.import_identity(ctx, identity).await,
            Err(d) => ImportResponse::failed(vec![d]),
        }
    }

    pub async fn validate_data_source(&self, type_name: &str, config: Value) -> Vec<Diagnostic> {
        match self.find_data_source(type_name) {
            Ok(d) => d.validate(config).await,
            Err(d) => vec![d],
        }
    }

    /// Whether `type_name` is a data source here: lets a provider report an unknown
    /// name before it builds a context that might fail for another reason.
    pub fn has_data_source(&self, type_name: &str) -> bool {
        self.data_sources.contains_key(type_name)
    }

    /// Whether `type_name` is a resource type here.
    pub fn has_resource(&self, type_name: &str) -> bool {
        self.resources.contains_key(type_name)
    }

    /// `OpenEphemeralResource`; an unknown type hands the config back.
    pub async fn open_ephemeral(
        &self,
        ctx: &C,
        type_name: &str,
        config: Value,
    ) -> (Value, Vec<Diagnostic>) {
        match self.ephemerals.get(type_name) {
            Some(e) => e.open(ctx, config).await,
            None => (
                config,
                vec![unknown_type(TypeKind::EphemeralResource, type_name)],
            ),
        }
    }

    /// `ListResource`.
    pub async fn list_resource(&self, ctx: &C, req: ListRequest) -> (Vec<Listed>, Vec<Diagnostic>) {
        match self.lists.get(req.type_name.as_str()) {
            Some(l) => l.list(ctx, req).await,
            None => (
                Vec::new(),
                vec![unknown_type(TypeKind::ListResource, &req.type_name)],
            ),
        }
    }

    fn find_action(&self, type_name: &str) -> Result<&dyn Action<C>, Diagnostic> {
        self.actions
            .get(type_name)
            .map(Box::as_ref)
            .ok_or_else(|| unknown_type(TypeKind::Action, type_name))
    }

    /// `ValidateActionConfig`.
    pub async fn validate_action(&self, type_name: &str, config: Value) -> Vec<Diagnostic> {
        match self.find_action(type_name) {
            Ok(a) => a.validate(config).await,
            Err(d) => vec![d],
        }
    }

    /// `PlanAction`.
    pub async fn plan_action(&self, ctx: &C, type_name: &str, config: Value) -> Vec<Diagnostic> {
        match self.find_action(type_name) {
            Ok(a) => a.plan(ctx, config).await,
            Err(d) => vec![d],
        }
    }

    /// `InvokeAction`.
    pub async fn invoke_action(
        &self,
        ctx: &C,
        type_name: &str,
        config: Value,
        progress: ActionProgress,
    ) -> Vec<Diagnostic> {
        match self.find_action(type_name) {
            Ok(a) => a.invoke(ctx, config, progress).await,
            Err(d) => vec![d],
        }
    }

    /// An unknown type hands the config back, as a failed read does.
    pub async fn read_data_source(
        &self,
        ctx: &C,
        type_name: &str,
        config: Value,
    ) -> (Value, Vec<Diagnostic>) {
        match self.find_data_source(type_name) {
            Ok(d) => d.read(ctx, config).await,
            Err(d) => (config, vec![d]),
        }
    }
}

fn schemas_of<T: ?Sized>(
    registered: &BTreeMap<&'static str, Box<T>>,
    schema: impl Fn(&T) -> Schema,
) -> BTreeMap<String, Schema> {
    registered
        .iter()
        .map(|(name, t)| (name.to_string(), schema(t)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Attribute, Block};
    use crate::types::Type;

    struct Thing;

    #[async_trait]
    impl Resource<u32> for Thing {
        fn name(&self) -> &'static str {
            "example_thing"
        }
        fn schema(&self) -> Schema {
            Schema::new(
                0,
                Block::new().attribute(Attribute::new("id", Type::String).computed()),
            )
        }
        async fn read(&self, ctx: &u32, req: ReadRequest) -> ReadResponse {
            ReadResponse {
                new_state: Value::object([("id", Value::string(ctx.to_string()))]),
                private: req.private,
                diagnostics: Vec::new(),
            }
        }
        async fn plan(&self, _: &u32, req: PlanRequest) -> PlanResponse {
            PlanResponse {
                planned_state: req.proposed_new_state,
                ..Default::default()
            }
        }
        async fn apply(&self, _: &u32, req: ApplyRequest) -> ApplyResponse {
            ApplyResponse {
                new_state: req.planned_state,
                ..Default::default()
            }
        }
    }

    struct Lookup;

    #[async_trait]
    impl DataSource<u32> for Lookup {
        fn name(&self) -> &'static str {
            "example_lookup"
        }
        fn schema(&self) -> Schema {
            Schema::new(0, Block::new())
        }
        async fn read(&self, _: &u32, config: Value) -> (Value, Vec<Diagnostic>) {
            (config, Vec::new())
        }
    }

    fn registry() -> Resources<u32> {
        Resources::new().resource(Thing).data_source(Lookup)
    }

    fn read_request(type_name: &str) -> ReadRequest {
        ReadRequest {
            type_name: type_name.to_string(),
            current_state: Value::object([("id", Value::string("old"))]),
            private: b"p".to_vec(),
        }
    }

    #[tokio::test]
    async fn dispatches_by_type_name() {
        let r = registry();
        let resp = r.read(&7, read_request("example_thing")).await;
        assert!(resp.diagnostics.is_empty(), "{:?}", resp.diagnostics);
        assert_eq!(resp.new_state.get("id"), &Value::string("7"));
        let schemas = r.schemas(Schema::new(0, Block::new()));
        assert_eq!(
            schemas.resources.keys().collect::<Vec<_>>(),
            ["example_thing"]
        );
        assert_eq!(
            schemas.data_sources.keys().collect::<Vec<_>>(),
            ["example_lookup"]
        );
        let import = r.import(&7, "example_thing", "x").await;
        assert_eq!(import.diagnostics[0].summary, "Import not supported");
    }

    #[tokio::test]
    async fn an_unknown_type_is_one_diagnostic_and_keeps_the_input() {
        let r = registry();
        let resp = r.read(&7, read_request("example_other")).await;
        assert_eq!(resp.diagnostics.len(), 1);
        assert_eq!(resp.diagnostics[0].summary, "Unknown resource type");
        assert!(resp.diagnostics[0].detail.contains("\"example_other\""));
        assert_eq!(resp.new_state.get("id"), &Value::string("old"));
        assert_eq!(resp.private, b"p");

        let apply = r
            .apply(
                &7,
                ApplyRequest {
                    type_name: "example_lookup".to_string(),
                    prior_state: Value::string("prior"),
                    planned_state: Value::Null,
                    config: Value::Null,
                    planned_private: Vec::new(),
                },
            )
            .await;
        assert_eq!(apply.new_state, Value::string("prior"));
        assert_eq!(apply.diagnostics[0].summary, "Unknown resource type");

        let (state, diags) = r
            .read_data_source(&7, "example_thing", Value::string("c"))
            .await;
        assert_eq!(state, Value::string("c"));
        assert_eq!(diags[0].summary, "Unknown data source type");
        assert_eq!(
            r.validate_resource("nope", Value::Null, ClientCapabilities::default())
                .await[0]
                .summary,
            "Unknown resource type"
        );
    }

    struct Count;

    #[async_trait]
    impl ListResource<u32> for Count {
        fn name(&self) -> &'static str {
            "example_count"
        }
        fn schema(&self) -> Schema {
            Schema::new(0, Block::new())
        }
        async fn list(&self, ctx: &u32, _: ListRequest) -> (Vec<Listed>, Vec<Diagnostic>) {
            let found = (0..*ctx).map(|i| Listed {
                display_name: i.to_string(),
                identity: Value::Null,
                state: None,
            });
            (found.collect(), Vec::new())
        }
    }

    struct Noop;

    #[async_trait]
    impl Action<u32> for Noop {
        fn name(&self) -> &'static str {
            "example_noop"
        }
        fn schema(&self) -> Schema {
            Schema::new(0, Block::new())
        }
        async fn invoke(&self, ctx: &u32, _: Value, _: ActionProgress) -> Vec<Diagnostic> {
            vec![Diagnostic::warning("ran", ctx.to_string())]
        }
    }

    #[tokio::test]
    async fn lists_and_actions_dispatch_by_type_name() {
        let r = Resources::<u32>::new().list(Count).action(Noop);
        let schemas = r.schemas(Schema::new(0, Block::new()));
        assert!(schemas.lists.contains_key("example_count"));
        assert!(schemas.actions.contains_key("example_noop"));
        let req = |type_name: &str| ListRequest {
            type_name: type_name.to_string(),
            config: Value::Null,
            include_resource_object: false,
            limit: 10,
        };
        assert_eq!(r.list_resource(&3, req("example_count")).await.0.len(), 3);
        let (none, diags) = r.list_resource(&3, req("example_other")).await;
        assert!(none.is_empty());
        assert_eq!(diags[0].summary, "Unknown list resource type");
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let ran = r
            .invoke_action(&5, "example_noop", Value::Null, ActionProgress::new(tx))
            .await;
        assert_eq!(ran[0].detail, "5");
        assert!(
            r.plan_action(&5, "example_noop", Value::Null)
                .await
                .is_empty()
        );
        assert_eq!(
            r.validate_action("example_other", Value::Null).await[0].summary,
            "Unknown action type"
        );
    }
}
