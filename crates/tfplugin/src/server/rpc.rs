//! The tfplugin6 `Provider` gRPC service: decodes requests against the
//! schemas, calls the [`Provider`] trait and encodes the answers.

use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use futures_util::Stream;

use tonic::{Request, Response, Status};

use crate::convert::{decode_dynamic, diags_to_proto, encode_dynamic};
use crate::diag::Diagnostic;
use crate::function::{Function, FunctionError};
use crate::proto::tfplugin6 as pb;
use crate::proto::tfplugin6::provider_server::Provider as ProviderRpc;
use crate::provider::{
    ApplyRequest, ClientCapabilities, ListRequest, PlanRequest, Provider, ReadRequest,
};
use crate::resources::TypeKind;
use crate::schema::{ProviderSchemas, Schema};
use crate::types::Type;
use crate::value::Value;

type RpcResult<T> = Result<Response<T>, Status>;

pub(crate) struct ProviderService<P> {
    provider: Arc<P>,
    schemas: Arc<OnceLock<Arc<ProviderSchemas>>>,
    functions: Arc<OnceLock<Arc<BTreeMap<String, Function>>>>,
}

impl<P: Provider> ProviderService<P> {
    pub(crate) fn new(provider: Arc<P>) -> Self {
        ProviderService {
            provider,
            schemas: Arc::new(OnceLock::new()),
            functions: Arc::new(OnceLock::new()),
        }
    }

    /// Computed on first use: Terraform may start a provider only to ask for
    /// its metadata, and start-up should stay cheap.
    fn schemas(&self) -> Arc<ProviderSchemas> {
        self.schemas
            .get_or_init(|| Arc::new(self.provider.schemas()))
            .clone()
    }

    fn functions(&self) -> Arc<BTreeMap<String, Function>> {
        self.functions
            .get_or_init(|| Arc::new(self.provider.functions()))
            .clone()
    }

    fn function_protos(&self) -> HashMap<String, pb::Function> {
        self.functions()
            .iter()
            .map(|(k, f)| (k.clone(), f.to_proto()))
            .collect()
    }

    fn resource(&self, type_name: &str) -> Result<(Schema, Type), Vec<pb::Diagnostic>> {
        let schemas = self.schemas();
        match schemas.resources.get(type_name) {
            Some(s) => Ok((s.clone(), s.value_type())),
            None => Err(vec![unknown_type(TypeKind::Resource, type_name)]),
        }
    }

    /// The identity of the object `state` describes, encoded for Terraform; None for
    /// a type without identity, a null state or one with unknown identity attributes.
    fn identity_of(
        &self,
        type_name: &str,
        state: &Value,
        diags: &mut Vec<pb::Diagnostic>,
    ) -> Option<pb::ResourceIdentityData> {
        let schemas = self.schemas();
        let identity = schemas.identities.get(type_name)?;
        let value = identity.of_state(state)?;
        let identity_data = encode_into(&value, &identity.value_type(), "identity", diags)?;
        Some(pb::ResourceIdentityData {
            identity_data: Some(identity_data),
        })
    }

    fn ephemeral(&self, type_name: &str) -> Result<Type, Vec<pb::Diagnostic>> {
        let schemas = self.schemas();
        match schemas.ephemerals.get(type_name) {
            Some(s) => Ok(s.value_type()),
            None => Err(vec![unknown_type(TypeKind::EphemeralResource, type_name)]),
        }
    }

    fn list(&self, type_name: &str) -> Result<Type, Vec<pb::Diagnostic>> {
        let schemas = self.schemas();
        match schemas.lists.get(type_name) {
            Some(s) => Ok(s.value_type()),
            None => Err(vec![unknown_type(TypeKind::ListResource, type_name)]),
        }
    }

    /// `ListResource`'s events: one per object found (identity, name, and the state
    /// when asked for), then one carrying the diagnostics, if any.
    async fn list_events(&self, r: pb::list_resource::Request) -> Vec<pb::list_resource::Event> {
        let failed = |diagnostic| {
            vec![pb::list_resource::Event {
                diagnostic,
                ..Default::default()
            }]
        };
        let ty = match self.list(&r.type_name) {
            Ok(ty) => ty,
            Err(d) => return failed(d),
        };
        let schemas = self.schemas();
        let (Some(identity), Some(resource)) = (
            schemas.identities.get(&r.type_name),
            schemas.resources.get(&r.type_name),
        ) else {
            return failed(vec![
                Diagnostic::error(
                    "List resource without identity",
                    format!("{} has a list resource but no resource identity. This is a bug in the provider.", r.type_name),
                )
                .to_proto(),
            ]);
        };
        let config = match decode_dynamic(r.config.as_ref(), &ty) {
            Ok(v) => v,
            Err(e) => return failed(bad_input("list configuration", e)),
        };
        let (found, diags) = self
            .provider
            .list_resource(ListRequest {
                type_name: r.type_name.clone(),
                config,
                include_resource_object: r.include_resource_object,
                limit: r.limit,
            })
            .await;
        let mut events = Vec::with_capacity(found.len() + 1);
        let mut trailing = diags_to_proto(&diags);
        let identity_type = identity.value_type();
        let state_type = resource.value_type();
        for listed in found {
            let mut diagnostic = Vec::new();
            let identity = encode_into(
                &listed.identity,
                &identity_type,
                "listed identity",
                &mut diagnostic,
            );
            let resource_object = match listed.state.filter(|_| r.include_resource_object) {
                Some(state) => {
                    let state = resource.returned_state(state);
                    encode_into(&state, &state_type, "listed state", &mut diagnostic)
                }
                None => None,
            };
            if !diagnostic.is_empty() {
                trailing.extend(diagnostic);
                continue;
            }
            events.push(pb::list_resource::Event {
                identity: identity.map(|d| pb::ResourceIdentityData {
                    identity_data: Some(d),
                }),
                display_name: listed.display_name,
                resource_object,
                diagnostic: Vec::new(),
            });
        }
        if !trailing.is_empty() {
            events.push(pb::list_resource::Event {
                diagnostic: trailing,
                ..Default::default()
            });
        }
        events
    }

    fn action(&self, type_name: &str) -> Result<Type, Vec<pb::Diagnostic>> {
        let schemas = self.schemas();
        match schemas.actions.get(type_name) {
            Some(s) => Ok(s.value_type()),
            None => Err(vec![unknown_type(TypeKind::Action, type_name)]),
        }
    }

    fn data_source(&self, type_name: &str) -> Result<Type, Vec<pb::Diagnostic>> {
        let schemas = self.schemas();
        match schemas.data_sources.get(type_name) {
            Some(s) => Ok(s.value_type()),
            None => Err(vec![unknown_type(TypeKind::DataSource, type_name)]),
        }
    }
}

fn capabilities() -> pb::ServerCapabilities {
    pb::ServerCapabilities {
        // Destroys go through PlanResourceChange too, so providers can warn or refuse.
        plan_destroy: true,
        // Every RPC builds what it needs of the schema itself (see
        // `configure_plan_apply_read`, which never asks for it), so Terraform may reuse
        // the schema it read from the first process of a command instead of asking each
        // later process again: one schema encoding and decoding per command.
        get_provider_schema_optional: true,
        move_resource_state: false,
        // Terraform writes `-generate-config-out` configuration from the state itself.
        generate_resource_config: false,
    }
}

fn unknown_type(kind: TypeKind, type_name: &str) -> pb::Diagnostic {
    crate::resources::unknown_type(kind, type_name).to_proto()
}

fn bad_input(what: &str, e: impl std::fmt::Display) -> Vec<pb::Diagnostic> {
    vec![
        Diagnostic::error(
            "Invalid value received from Terraform",
            format!("The {what} could not be decoded: {e}. This is a bug in the provider or a protocol mismatch."),
        )
        .to_proto(),
    ]
}

fn bad_output(what: &str, e: impl std::fmt::Display) -> pb::Diagnostic {
    Diagnostic::error(
        "Provider produced an invalid value",
        format!("The {what} does not match the schema: {e}. This is a bug in the provider."),
    )
    .to_proto()
}

/// The answer of every state-storage RPC: `state_store` blocks name a store this
/// provider does not have.
fn no_state_store(type_name: &str) -> Vec<pb::Diagnostic> {
    vec![
        Diagnostic::error(
            "Unknown state store type",
            format!("This provider offers no state store; {type_name:?} is not one of its types."),
        )
        .to_proto(),
    ]
}

fn unsupported(feature: &str) -> Vec<pb::Diagnostic> {
    vec![
        Diagnostic::error(
            format!("{feature} not supported"),
            format!("This provider does not implement {feature}."),
        )
        .to_proto(),
    ]
}

/// Decodes a DynamicValue or returns early with the diagnostics in `$resp`.
macro_rules! decode_or_return {
    ($dv:expr, $ty:expr, $what:expr, $($resp:ident)::+) => {
        match decode_dynamic($dv, $ty) {
            Ok(v) => v,
            Err(e) => {
                // Some responses hold only diagnostics; others have more fields.
                #[allow(clippy::needless_update)]
                let resp = $($resp)::+ {
                    diagnostics: bad_input($what, e),
                    ..Default::default()
                };
                return Ok(Response::new(resp));
            }
        }
    };
}

macro_rules! schema_or_return {
    ($lookup:expr, $($resp:ident)::+) => {
        match $lookup {
            Ok(s) => s,
            Err(diagnostics) => {
                // Some responses hold only diagnostics; others have more fields.
                #[allow(clippy::needless_update)]
                let resp = $($resp)::+ {
                    diagnostics,
                    ..Default::default()
                };
                return Ok(Response::new(resp));
            }
        }
    };
}

/// Encodes a response value, turning a mismatch into an error diagnostic.
fn encode_into(
    v: &Value,
    ty: &Type,
    what: &str,
    diags: &mut Vec<pb::Diagnostic>,
) -> Option<pb::DynamicValue> {
    match encode_dynamic(v, ty) {
        Ok(dv) => Some(dv),
        Err(e) => {
            tracing::error!(what, error = %e, "response value does not match the schema");
            diags.push(bad_output(what, e));
            None
        }
    }
}

#[tonic::async_trait]
impl<P: Provider> ProviderRpc for ProviderService<P> {
    async fn get_metadata(
        &self,
        _r: Request<pb::get_metadata::Request>,
    ) -> RpcResult<pb::get_metadata::Response> {
        tracing::debug!(rpc = "GetMetadata");
        let s = self.schemas();
        Ok(Response::new(pb::get_metadata::Response {
            server_capabilities: Some(capabilities()),
            diagnostics: Vec::new(),
            data_sources: s
                .data_sources
                .keys()
                .map(|k| pb::get_metadata::DataSourceMetadata {
                    type_name: k.clone(),
                })
                .collect(),
            resources: s
                .resources
                .keys()
                .map(|k| pb::get_metadata::ResourceMetadata {
                    type_name: k.clone(),
                })
                .collect(),
            functions: self
                .functions()
                .keys()
                .map(|name| pb::get_metadata::FunctionMetadata { name: name.clone() })
                .collect(),
            ephemeral_resources: s
                .ephemerals
                .keys()
                .map(|k| pb::get_metadata::EphemeralMetadata {
                    type_name: k.clone(),
                })
                .collect(),
            list_resources: s
                .lists
                .keys()
                .map(|k| pb::get_metadata::ListResourceMetadata {
                    type_name: k.clone(),
                })
                .collect(),
            state_stores: Vec::new(),
            actions: s
                .actions
                .keys()
                .map(|k| pb::get_metadata::ActionMetadata {
                    type_name: k.clone(),
                })
                .collect(),
        }))
    }

    async fn get_provider_schema(
        &self,
        _r: Request<pb::get_provider_schema::Request>,
    ) -> RpcResult<pb::get_provider_schema::Response> {
        tracing::debug!(rpc = "GetProviderSchema");
        let s = self.schemas();
        Ok(Response::new(pb::get_provider_schema::Response {
            provider: Some(s.provider.to_proto()),
            resource_schemas: s
                .resources
                .iter()
                .map(|(k, v)| (k.clone(), v.to_proto()))
                .collect(),
            data_source_schemas: s
                .data_sources
                .iter()
                .map(|(k, v)| (k.clone(), v.to_proto()))
                .collect(),
            diagnostics: Vec::new(),
            provider_meta: None,
            server_capabilities: Some(capabilities()),
            functions: self.function_protos(),
            ephemeral_resource_schemas: s
                .ephemerals
                .iter()
                .map(|(k, v)| (k.clone(), v.to_proto()))
                .collect(),
            list_resource_schemas: s
                .lists
                .iter()
                .map(|(k, v)| (k.clone(), v.to_proto()))
                .collect(),
            state_store_schemas: HashMap::new(),
            action_schemas: s
                .actions
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        pb::ActionSchema {
                            schema: Some(v.to_proto()),
                        },
                    )
                })
                .collect(),
        }))
    }

    async fn validate_provider_config(
        &self,
        r: Request<pb::validate_provider_config::Request>,
    ) -> RpcResult<pb::validate_provider_config::Response> {
        tracing::debug!(rpc = "ValidateProviderConfig");
        let r = r.into_inner();
        let ty = self.schemas().provider.value_type();
        let config = decode_or_return!(
            r.config.as_ref(),
            &ty,
            "provider configuration",
            pb::validate_provider_config::Response
        );
        let diags = self.provider.validate_provider_config(config).await;
        Ok(Response::new(pb::validate_provider_config::Response {
            diagnostics: diags_to_proto(&diags),
        }))
    }

    async fn validate_resource_config(
        &self,
        r: Request<pb::validate_resource_config::Request>,
    ) -> RpcResult<pb::validate_resource_config::Response> {
        let r = r.into_inner();
        tracing::debug!(rpc = "ValidateResourceConfig", type_name = %r.type_name);
        let (_, ty) = schema_or_return!(
            self.resource(&r.type_name),
            pb::validate_resource_config::Response
        );
        let config = decode_or_return!(
            r.config.as_ref(),
            &ty,
            "resource configuration",
            pb::validate_resource_config::Response
        );
        let client = r
            .client_capabilities
            .map(|c| ClientCapabilities {
                deferral_allowed: c.deferral_allowed,
                write_only_attributes_allowed: c.write_only_attributes_allowed,
                store_planned_private: c.store_planned_private,
            })
            .unwrap_or_default();
        let diags = self
            .provider
            .validate_resource_config(&r.type_name, config, client)
            .await;
        Ok(Response::new(pb::validate_resource_config::Response {
            diagnostics: diags_to_proto(&diags),
        }))
    }

    async fn validate_data_resource_config(
        &self,
        r: Request<pb::validate_data_resource_config::Request>,
    ) -> RpcResult<pb::validate_data_resource_config::Response> {
        let r = r.into_inner();
        tracing::debug!(rpc = "ValidateDataResourceConfig", type_name = %r.type_name);
        let ty = schema_or_return!(
            self.data_source(&r.type_name),
            pb::validate_data_resource_config::Response
        );
        let config = decode_or_return!(
            r.config.as_ref(),
            &ty,
            "data source configuration",
            pb::validate_data_resource_config::Response
        );
        let diags = self
            .provider
            .validate_data_source_config(&r.type_name, config)
            .await;
        Ok(Response::new(pb::validate_data_resource_config::Response {
            diagnostics: diags_to_proto(&diags),
        }))
    }

    async fn upgrade_resource_state(
        &self,
        r: Request<pb::upgrade_resource_state::Request>,
    ) -> RpcResult<pb::upgrade_resource_state::Response> {
        let r = r.into_inner();
        tracing::debug!(rpc = "UpgradeResourceState", type_name = %r.type_name, version = r.version);
        let mut resp = pb::upgrade_resource_state::Response::default();
        let (_, ty) = schema_or_return!(
            self.resource(&r.type_name),
            pb::upgrade_resource_state::Response
        );
        let raw = r.raw_state.unwrap_or_default();
        if raw.json.is_empty() {
            resp.diagnostics = if raw.flatmap.is_empty() {
                bad_input("stored state", "it is empty")
            } else {
                unsupported("Upgrading flatmap (pre-0.12) state")
            };
            return Ok(Response::new(resp));
        }
        let json: serde_json::Value = match serde_json::from_slice(&raw.json) {
            Ok(j) => j,
            Err(e) => {
                resp.diagnostics = bad_input("stored state JSON", e);
                return Ok(Response::new(resp));
            }
        };
        match self
            .provider
            .upgrade_resource_state(&r.type_name, r.version, json)
            .await
        {
            Ok(v) => {
                resp.upgraded_state = encode_into(&v, &ty, "upgraded state", &mut resp.diagnostics)
            }
            Err(diags) => resp.diagnostics = diags_to_proto(&diags),
        }
        Ok(Response::new(resp))
    }

    async fn get_resource_identity_schemas(
        &self,
        _r: Request<pb::get_resource_identity_schemas::Request>,
    ) -> RpcResult<pb::get_resource_identity_schemas::Response> {
        tracing::debug!(rpc = "GetResourceIdentitySchemas");
        let s = self.schemas();
        Ok(Response::new(pb::get_resource_identity_schemas::Response {
            identity_schemas: s
                .identities
                .iter()
                .map(|(k, v)| (k.clone(), v.to_proto()))
                .collect(),
            diagnostics: Vec::new(),
        }))
    }

    /// Every identity so far is at its first version: a stored identity is decoded
    /// against the current schema, and one of another version is refused by name.
    async fn upgrade_resource_identity(
        &self,
        r: Request<pb::upgrade_resource_identity::Request>,
    ) -> RpcResult<pb::upgrade_resource_identity::Response> {
        let r = r.into_inner();
        tracing::debug!(rpc = "UpgradeResourceIdentity", type_name = %r.type_name, version = r.version);
        let mut resp = pb::upgrade_resource_identity::Response::default();
        let schemas = self.schemas();
        let Some(identity) = schemas.identities.get(&r.type_name) else {
            resp.diagnostics = vec![unknown_type(TypeKind::Resource, &r.type_name)];
            return Ok(Response::new(resp));
        };
        if r.version != identity.version {
            resp.diagnostics = vec![
                Diagnostic::error(
                    "Stored identity of an unknown version",
                    format!(
                        "The stored identity of this {} is version {}, and this provider knows version {}. If a newer version of the provider wrote it, use that version.",
                        r.type_name, r.version, identity.version
                    ),
                )
                .to_proto(),
            ];
            return Ok(Response::new(resp));
        }
        let raw = r.raw_identity.unwrap_or_default();
        let ty = identity.value_type();
        let json: serde_json::Value = match serde_json::from_slice(&raw.json) {
            Ok(j) => j,
            Err(e) => {
                resp.diagnostics = bad_input("stored identity JSON", e);
                return Ok(Response::new(resp));
            }
        };
        match Value::from_json(&json, &ty) {
            Ok(v) => {
                resp.upgraded_identity = encode_into(&v, &ty, "identity", &mut resp.diagnostics)
                    .map(|dv| pb::ResourceIdentityData {
                        identity_data: Some(dv),
                    });
            }
            Err(e) => resp.diagnostics = bad_input("stored identity", e),
        }
        Ok(Response::new(resp))
    }

    async fn configure_provider(
        &self,
        r: Request<pb::configure_provider::Request>,
    ) -> RpcResult<pb::configure_provider::Response> {
        let r = r.into_inner();
        tracing::debug!(rpc = "ConfigureProvider", terraform_version = %r.terraform_version);
        let ty = self.schemas().provider.value_type();
        let config = decode_or_return!(
            r.config.as_ref(),
            &ty,
            "provider configuration",
            pb::configure_provider::Response
        );
        let diags = self.provider.configure(config, r.terraform_version).await;
        Ok(Response::new(pb::configure_provider::Response {
            diagnostics: diags_to_proto(&diags),
        }))
    }

    async fn read_resource(
        &self,
        r: Request<pb::read_resource::Request>,
    ) -> RpcResult<pb::read_resource::Response> {
        let r = r.into_inner();
        tracing::debug!(rpc = "ReadResource", type_name = %r.type_name);
        let type_name = r.type_name.clone();
        let (schema, ty) =
            schema_or_return!(self.resource(&r.type_name), pb::read_resource::Response);
        let current_state = decode_or_return!(
            r.current_state.as_ref(),
            &ty,
            "current state",
            pb::read_resource::Response
        );
        let out = self
            .provider
            .read_resource(ReadRequest {
                type_name: type_name.clone(),
                current_state,
                private: r.private,
            })
            .await;
        let mut diagnostics = diags_to_proto(&out.diagnostics);
        let new_state = schema.returned_state(out.new_state);
        let new_identity = self.identity_of(&type_name, &new_state, &mut diagnostics);
        let new_state = encode_into(&new_state, &ty, "new state", &mut diagnostics);
        Ok(Response::new(pb::read_resource::Response {
            new_state,
            diagnostics,
            private: out.private,
            deferred: None,
            new_identity,
        }))
    }

    async fn plan_resource_change(
        &self,
        r: Request<pb::plan_resource_change::Request>,
    ) -> RpcResult<pb::plan_resource_change::Response> {
        let r = r.into_inner();
        tracing::debug!(rpc = "PlanResourceChange", type_name = %r.type_name);
        let type_name = r.type_name.clone();
        let (schema, ty) = schema_or_return!(
            self.resource(&r.type_name),
            pb::plan_resource_change::Response
        );
        let prior_state = decode_or_return!(
            r.prior_state.as_ref(),
            &ty,
            "prior state",
            pb::plan_resource_change::Response
        );
        let proposed_new_state = decode_or_return!(
            r.proposed_new_state.as_ref(),
            &ty,
            "proposed new state",
            pb::plan_resource_change::Response
        );
        let config = decode_or_return!(
            r.config.as_ref(),
            &ty,
            "configuration",
            pb::plan_resource_change::Response
        );
        let out = self
            .provider
            .plan_resource_change(PlanRequest {
                type_name: type_name.clone(),
                prior_state,
                proposed_new_state,
                config,
                prior_private: r.prior_private,
                planned_private: r.planned_private,
            })
            .await;
        let mut diagnostics = diags_to_proto(&out.diagnostics);
        let planned_state = schema.returned_state(out.planned_state);
        let planned_identity = self.identity_of(&type_name, &planned_state, &mut diagnostics);
        let planned_state = encode_into(&planned_state, &ty, "planned state", &mut diagnostics);
        Ok(Response::new(pb::plan_resource_change::Response {
            planned_state,
            requires_replace: out.requires_replace.iter().map(|p| p.to_proto()).collect(),
            planned_private: out.planned_private,
            diagnostics,
            legacy_type_system: false,
            deferred: None,
            planned_identity,
        }))
    }

    async fn apply_resource_change(
        &self,
        r: Request<pb::apply_resource_change::Request>,
    ) -> RpcResult<pb::apply_resource_change::Response> {
        let r = r.into_inner();
        tracing::debug!(rpc = "ApplyResourceChange", type_name = %r.type_name);
        let type_name = r.type_name.clone();
        let (schema, ty) = schema_or_return!(
            self.resource(&r.type_name),
            pb::apply_resource_change::Response
        );
        let prior_state = decode_or_return!(
            r.prior_state.as_ref(),
            &ty,
            "prior state",
            pb::apply_resource_change::Response
        );
        let planned_state = decode_or_return!(
            r.planned_state.as_ref(),
            &ty,
            "planned state",
            pb::apply_resource_change::Response
        );
        let config = decode_or_return!(
            r.config.as_ref(),
            &ty,
            "configuration",
            pb::apply_resource_change::Response
        );
        let out = self
            .provider
            .apply_resource_change(ApplyRequest {
                type_name: type_name.clone(),
                prior_state,
                planned_state,
                config,
                planned_private: r.planned_private,
            })
            .await;
        let mut diagnostics = diags_to_proto(&out.diagnostics);
        let new_state = schema.returned_state(out.new_state);
        let new_identity = self.identity_of(&type_name, &new_state, &mut diagnostics);
        let new_state = encode_into(&new_state, &ty, "new state", &mut diagnostics);
        Ok(Response::new(pb::apply_resource_change::Response {
            new_state,
            private: out.private,
            diagnostics,
            legacy_type_system: false,
            new_identity,
        }))
    }

    async fn import_resource_state(
        &self,
        r: Request<pb::import_resource_state::Request>,
    ) -> RpcResult<pb::import_resource_state::Response> {
        let r = r.into_inner();
        tracing::debug!(rpc = "ImportResourceState", type_name = %r.type_name, id = %r.id);
        // An `import` block with `identity = {...}` sends the identity and no id.
        let by_identity = r
            .identity
            .and_then(|i| i.identity_data)
            .filter(|_| r.id.is_empty());
        let out = match by_identity {
            Some(data) => {
                let schemas = self.schemas();
                let Some(identity) = schemas.identities.get(&r.type_name) else {
                    return Ok(Response::new(pb::import_resource_state::Response {
                        diagnostics: vec![unknown_type(TypeKind::Resource, &r.type_name)],
                        ..Default::default()
                    }));
                };
                let identity = decode_or_return!(
                    Some(&data),
                    &identity.value_type(),
                    "import identity",
                    pb::import_resource_state::Response
                );
                self.provider
                    .import_resource_identity(&r.type_name, identity)
                    .await
            }
            None => {
                self.provider
                    .import_resource_state(&r.type_name, &r.id)
                    .await
            }
        };
        let mut diagnostics = diags_to_proto(&out.diagnostics);
        let mut imported_resources = Vec::new();
        for res in out.imported {
            match self.resource(&res.type_name) {
                Ok((schema, ty)) => {
                    let state = schema.returned_state(res.state);
                    let identity = self.identity_of(&res.type_name, &state, &mut diagnostics);
                    let state = encode_into(&state, &ty, "imported state", &mut diagnostics);
                    imported_resources.push(pb::import_resource_state::ImportedResource {
                        type_name: res.type_name,
                        state,
                        private: res.private,
                        identity,
                    });
                }
                Err(d) => diagnostics.extend(d),
            }
        }
        Ok(Response::new(pb::import_resource_state::Response {
            imported_resources,
            diagnostics,
            deferred: None,
        }))
    }

    async fn move_resource_state(
        &self,
        _r: Request<pb::move_resource_state::Request>,
    ) -> RpcResult<pb::move_resource_state::Response> {
        Ok(Response::new(pb::move_resource_state::Response {
            diagnostics: unsupported("Moving resource state between types"),
            ..Default::default()
        }))
    }

    async fn read_data_source(
        &self,
        r: Request<pb::read_data_source::Request>,
    ) -> RpcResult<pb::read_data_source::Response> {
        let r = r.into_inner();
        tracing::debug!(rpc = "ReadDataSource", type_name = %r.type_name);
        let ty = schema_or_return!(
            self.data_source(&r.type_name),
            pb::read_data_source::Response
        );
        let config = decode_or_return!(
            r.config.as_ref(),
            &ty,
            "configuration",
            pb::read_data_source::Response
        );
        let (state, diags) = self.provider.read_data_source(&r.type_name, config).await;
        let mut diagnostics = diags_to_proto(&diags);
        let state = encode_into(&state, &ty, "data source state", &mut diagnostics);
        Ok(Response::new(pb::read_data_source::Response {
            state,
            diagnostics,
            deferred: None,
        }))
    }

    async fn validate_ephemeral_resource_config(
        &self,
        r: Request<pb::validate_ephemeral_resource_config::Request>,
    ) -> RpcResult<pb::validate_ephemeral_resource_config::Response> {
        let r = r.into_inner();
        tracing::debug!(rpc = "ValidateEphemeralResourceConfig", type_name = %r.type_name);
        let ty = schema_or_return!(
            self.ephemeral(&r.type_name),
            pb::validate_ephemeral_resource_config::Response
        );
        let config = decode_or_return!(
            r.config.as_ref(),
            &ty,
            "ephemeral resource configuration",
            pb::validate_ephemeral_resource_config::Response
        );
        let diags = self
            .provider
            .validate_ephemeral_config(&r.type_name, config)
            .await;
        Ok(Response::new(
            pb::validate_ephemeral_resource_config::Response {
                diagnostics: diags_to_proto(&diags),
            },
        ))
    }

    async fn open_ephemeral_resource(
        &self,
        r: Request<pb::open_ephemeral_resource::Request>,
    ) -> RpcResult<pb::open_ephemeral_resource::Response> {
        let r = r.into_inner();
        // The result is never logged: it is what the user wants kept out of records.
        tracing::debug!(rpc = "OpenEphemeralResource", type_name = %r.type_name);
        let ty = schema_or_return!(
            self.ephemeral(&r.type_name),
            pb::open_ephemeral_resource::Response
        );
        let config = decode_or_return!(
            r.config.as_ref(),
            &ty,
            "ephemeral resource configuration",
            pb::open_ephemeral_resource::Response
        );
        let (value, diags) = self.provider.open_ephemeral(&r.type_name, config).await;
        let mut diagnostics = diags_to_proto(&diags);
        let result = encode_into(&value, &ty, "ephemeral result", &mut diagnostics);
        Ok(Response::new(pb::open_ephemeral_resource::Response {
            diagnostics,
            result,
            ..Default::default()
        }))
    }

    /// Never asked for: no result carries a renewal time.
    async fn renew_ephemeral_resource(
        &self,
        r: Request<pb::renew_ephemeral_resource::Request>,
    ) -> RpcResult<pb::renew_ephemeral_resource::Response> {
        let r = r.into_inner();
        Ok(Response::new(pb::renew_ephemeral_resource::Response {
            diagnostics: self.ephemeral(&r.type_name).err().unwrap_or_default(),
            ..Default::default()
        }))
    }

    /// Nothing to release: opening holds nothing open.
    async fn close_ephemeral_resource(
        &self,
        r: Request<pb::close_ephemeral_resource::Request>,
    ) -> RpcResult<pb::close_ephemeral_resource::Response> {
        let r = r.into_inner();
        Ok(Response::new(pb::close_ephemeral_resource::Response {
            diagnostics: self.ephemeral(&r.type_name).err().unwrap_or_default(),
        }))
    }

    async fn get_functions(
        &self,
        _r: Request<pb::get_functions::Request>,
    ) -> RpcResult<pb::get_functions::Response> {
        tracing::debug!(rpc = "GetFunctions");
        Ok(Response::new(pb::get_functions::Response {
            functions: self.function_protos(),
            diagnostics: Vec::new(),
        }))
    }

    async fn call_function(
        &self,
        r: Request<pb::call_function::Request>,
    ) -> RpcResult<pb::call_function::Response> {
        let r = r.into_inner();
        // Arguments are not logged: they may hold secrets (parameter values).
        tracing::debug!(rpc = "CallFunction", name = %r.name);
        let failed = |e: FunctionError| {
            Ok(Response::new(pb::call_function::Response {
                result: None,
                error: Some(e.to_proto()),
            }))
        };
        let functions = self.functions();
        let Some(function) = functions.get(&r.name) else {
            return failed(FunctionError::new(format!(
                "This provider has no function {:?}.",
                r.name
            )));
        };
        if r.arguments.len() != function.parameters.len() {
            return failed(FunctionError::new(format!(
                "{} takes {} arguments, not {}.",
                r.name,
                function.parameters.len(),
                r.arguments.len()
            )));
        }
        let mut arguments = Vec::with_capacity(r.arguments.len());
        for (i, (dv, p)) in r.arguments.iter().zip(&function.parameters).enumerate() {
            match decode_dynamic(Some(dv), &p.ty) {
                Ok(v) => arguments.push(v),
                Err(e) => {
                    return failed(
                        FunctionError::new(format!(
                            "Argument {} could not be decoded: {e}.",
                            p.name
                        ))
                        .at_argument(i),
                    );
                }
            }
        }
        match self.provider.call_function(&r.name, arguments).await {
            Ok(v) => match encode_dynamic(&v, &function.return_type) {
                Ok(dv) => Ok(Response::new(pb::call_function::Response {
                    result: Some(dv),
                    error: None,
                })),
                Err(e) => failed(FunctionError::new(format!(
                    "The result of {} does not match its declared type: {e}. This is a bug in the provider.",
                    r.name
                ))),
            },
            Err(e) => failed(e),
        }
    }

    async fn generate_resource_config(
        &self,
        _r: Request<pb::generate_resource_config::Request>,
    ) -> RpcResult<pb::generate_resource_config::Response> {
        // Not announced in the capabilities, so Terraform does not ask.
        Ok(Response::new(pb::generate_resource_config::Response {
            config: None,
            diagnostics: unsupported("Generating resource configuration"),
        }))
    }

    type ListResourceStream =
        Pin<Box<dyn Stream<Item = Result<pb::list_resource::Event, Status>> + Send + 'static>>;

    async fn list_resource(
        &self,
        r: Request<pb::list_resource::Request>,
    ) -> RpcResult<Self::ListResourceStream> {
        let r = r.into_inner();
        tracing::debug!(rpc = "ListResource", type_name = %r.type_name, limit = r.limit);
        let events = self.list_events(r).await;
        Ok(Response::new(Box::pin(futures_util::stream::iter(
            events.into_iter().map(Ok),
        ))))
    }

    async fn validate_list_resource_config(
        &self,
        r: Request<pb::validate_list_resource_config::Request>,
    ) -> RpcResult<pb::validate_list_resource_config::Response> {
        let r = r.into_inner();
        tracing::debug!(rpc = "ValidateListResourceConfig", type_name = %r.type_name);
        let ty = schema_or_return!(
            self.list(&r.type_name),
            pb::validate_list_resource_config::Response
        );
        let config = decode_or_return!(
            r.config.as_ref(),
            &ty,
            "list configuration",
            pb::validate_list_resource_config::Response
        );
        let diags = self
            .provider
            .validate_list_config(&r.type_name, config)
            .await;
        Ok(Response::new(pb::validate_list_resource_config::Response {
            diagnostics: diags_to_proto(&diags),
        }))
    }

    async fn validate_state_store_config(
        &self,
        r: Request<pb::validate_state_store::Request>,
    ) -> RpcResult<pb::validate_state_store::Response> {
        Ok(Response::new(pb::validate_state_store::Response {
            diagnostics: no_state_store(&r.into_inner().type_name),
        }))
    }

    async fn configure_state_store(
        &self,
        r: Request<pb::configure_state_store::Request>,
    ) -> RpcResult<pb::configure_state_store::Response> {
        Ok(Response::new(pb::configure_state_store::Response {
            diagnostics: no_state_store(&r.into_inner().type_name),
            capabilities: None,
        }))
    }

    type ReadStateBytesStream = Pin<
        Box<dyn Stream<Item = Result<pb::read_state_bytes::Response, Status>> + Send + 'static>,
    >;

    async fn read_state_bytes(
        &self,
        r: Request<pb::read_state_bytes::Request>,
    ) -> RpcResult<Self::ReadStateBytesStream> {
        let answer = pb::read_state_bytes::Response {
            diagnostics: no_state_store(&r.into_inner().type_name),
            ..Default::default()
        };
        Ok(Response::new(Box::pin(futures_util::stream::once(
            async move { Ok(answer) },
        ))))
    }

    async fn write_state_bytes(
        &self,
        r: Request<tonic::Streaming<pb::write_state_bytes::RequestChunk>>,
    ) -> RpcResult<pb::write_state_bytes::Response> {
        let mut chunks = r.into_inner();
        let first = chunks.message().await?;
        let type_name = first
            .and_then(|c| c.meta)
            .map(|m| m.type_name)
            .unwrap_or_default();
        Ok(Response::new(pb::write_state_bytes::Response {
            diagnostics: no_state_store(&type_name),
        }))
    }

    async fn lock_state(
        &self,
        r: Request<pb::lock_state::Request>,
    ) -> RpcResult<pb::lock_state::Response> {
        Ok(Response::new(pb::lock_state::Response {
            lock_id: String::new(),
            diagnostics: no_state_store(&r.into_inner().type_name),
        }))
    }

    async fn unlock_state(
        &self,
        r: Request<pb::unlock_state::Request>,
    ) -> RpcResult<pb::unlock_state::Response> {
        Ok(Response::new(pb::unlock_state::Response {
            diagnostics: no_state_store(&r.into_inner().type_name),
        }))
    }

    async fn get_states(
        &self,
        r: Request<pb::get_states::Request>,
    ) -> RpcResult<pb::get_states::Response> {
        Ok(Response::new(pb::get_states::Response {
            state_id: Vec::new(),
            diagnostics: no_state_store(&r.into_inner().type_name),
        }))
    }

    async fn delete_state(
        &self,
        r: Request<pb::delete_state::Request>,
    ) -> RpcResult<pb::delete_state::Response> {
        Ok(Response::new(pb::delete_state::Response {
            diagnostics: no_state_store(&r.into_inner().type_name),
        }))
    }

    async fn validate_action_config(
        &self,
        r: Request<pb::validate_action_config::Request>,
    ) -> RpcResult<pb::validate_action_config::Response> {
        let r = r.into_inner();
        tracing::debug!(rpc = "ValidateActionConfig", type_name = %r.type_name);
        let ty = schema_or_return!(
            self.action(&r.type_name),
            pb::validate_action_config::Response
        );
        let config = decode_or_return!(
            r.config.as_ref(),
            &ty,
            "action configuration",
            pb::validate_action_config::Response
        );
        let diags = self
            .provider
            .validate_action_config(&r.type_name, config)
            .await;
        Ok(Response::new(pb::validate_action_config::Response {
            diagnostics: diags_to_proto(&diags),
        }))
    }

    async fn plan_action(
        &self,
        r: Request<pb::plan_action::Request>,
    ) -> RpcResult<pb::plan_action::Response> {
        let r = r.into_inner();
        tracing::debug!(rpc = "PlanAction", action_type = %r.action_type);
        let ty = schema_or_return!(self.action(&r.action_type), pb::plan_action::Response);
        let config = decode_or_return!(
            r.config.as_ref(),
            &ty,
            "action configuration",
            pb::plan_action::Response
        );
        let diags = self.provider.plan_action(&r.action_type, config).await;
        Ok(Response::new(pb::plan_action::Response {
            diagnostics: diags_to_proto(&diags),
            deferred: None,
        }))
    }

    type InvokeActionStream = super::actions::EventStream;

    async fn invoke_action(
        &self,
        r: Request<pb::invoke_action::Request>,
    ) -> RpcResult<Self::InvokeActionStream> {
        let r = r.into_inner();
        let ty = match self.action(&r.action_type) {
            Ok(ty) => ty,
            Err(diags) => return Ok(Response::new(super::actions::completed(diags))),
        };
        let config = match decode_dynamic(r.config.as_ref(), &ty) {
            Ok(v) => v,
            Err(e) => {
                return Ok(Response::new(super::actions::completed(bad_input(
                    "action configuration",
                    e,
                ))));
            }
        };
        Ok(Response::new(super::actions::invoke(
            self.provider.clone(),
            r.action_type,
            config,
        )))
    }

    async fn stop_provider(
        &self,
        _r: Request<pb::stop_provider::Request>,
    ) -> RpcResult<pb::stop_provider::Response> {
        tracing::debug!(rpc = "StopProvider");
        self.provider.stop();
        Ok(Response::new(pb::stop_provider::Response {
            error: String::new(),
        }))
    }
}
