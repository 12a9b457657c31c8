//! A small tfplugin6 server library: enough of the Terraform plugin protocol
//! (version 6.9) and of HashiCorp's go-plugin to run a provider written in
//! Rust under Terraform or OpenTofu. It knows nothing about any particular
//! provider.
//!
//! * [`Value`] / [`Type`]: cty values and types, with the msgpack and JSON
//!   wire encodings (`Value::from_msgpack`, `Value::to_msgpack`,
//!   `Value::from_json`, `Value::to_json`).
//! * [`Schema`], [`Block`], [`Attribute`], [`NestedBlock`]: schemas, with
//!   builders (`Attribute::new("name", Type::String).required()`).
//! * [`Diagnostic`], [`AttributePath`]: errors and warnings shown to the user.
//! * [`Provider`]: the trait to implement; [`serve`] runs it as a plugin.
//! * [`Resource`], [`DataSource`], [`Resources`]: one trait per resource type and
//!   data source, and the registry a `Provider` forwards resource RPCs to (dispatch
//!   by type name and the "unknown type" diagnostic live there).
//! * [`model!`], [`Attr`], [`FromValue`], [`IntoValue`]: typed models of values
//!   (`value.decode::<MyModel>()`), keeping null / unknown / known apart.
//! * [`init_logging`]: hclog JSON logs on stderr at `TF_LOG_PROVIDER`/`TF_LOG`.
//!
//! A provider binary's `main`:
//! ```no_run
//! # struct MyProvider;
//! # #[async_trait::async_trait]
//! # impl tfplugin::Provider for MyProvider {
//! #   fn schemas(&self) -> tfplugin::ProviderSchemas { Default::default() }
//! #   async fn configure(&self, _: tfplugin::Value, _: String) -> Vec<tfplugin::Diagnostic> { vec![] }
//! #   async fn read_resource(&self, _: tfplugin::ReadRequest) -> tfplugin::ReadResponse { Default::default() }
//! #   async fn plan_resource_change(&self, _: tfplugin::PlanRequest) -> tfplugin::PlanResponse { Default::default() }
//! #   async fn apply_resource_change(&self, _: tfplugin::ApplyRequest) -> tfplugin::ApplyResponse { Default::default() }
//! #   async fn read_data_source(&self, _: &str, c: tfplugin::Value) -> (tfplugin::Value, Vec<tfplugin::Diagnostic>) { (c, vec![]) }
//! # }
//! #[tokio::main]
//! async fn main() -> std::process::ExitCode {
//!     tfplugin::init_logging();
//!     match tfplugin::serve(MyProvider).await {
//!         Ok(()) => std::process::ExitCode::SUCCESS,
//!         // serve has already told the user (NotStartedByTerraform) or logged it.
//!         Err(_) => std::process::ExitCode::FAILURE,
//!     }
//! }
//! ```
//!
//! stdout belongs to the go-plugin handshake: a provider must never print
//! to it; log with `tracing` instead (stderr, hclog JSON).
//!
//! Differences from the API sketched in `docs/design/interfaces.md`:
//! `Attribute` has `nested: Option<NestedAttributes>` next to `ty` for
//! protocol-6 nested attributes; `Provider::import_resource_state` and
//! `Provider::stop` have defaults; `ReadResponse`/`PlanResponse`/… carry their
//! own `diagnostics` field.

mod codec;
mod convert;
mod diag;
mod function;
mod identity;
mod logging;
pub mod model;
pub mod proto;
mod provider;
mod resources;
mod schema;
mod server;
pub mod timeouts;
mod types;
mod value;

pub use codec::ValueError;
pub use convert::{decode_dynamic, encode_dynamic};
pub use diag::{AttributePath, Diagnostic, PathStep, Severity, has_errors};
pub use function::{Function, FunctionError, FunctionParameter};
pub use identity::{IdentityAttribute, IdentitySchema};
pub use logging::{
    HclogLayer, hclog_line, hclog_timestamp, init_logging, level_from_env, level_from_env_values,
    log_filter,
};
pub use model::{Attr, FromValue, IntoValue, encode};
pub use provider::{
    ActionProgress, ApplyRequest, ApplyResponse, ClientCapabilities, ImportResponse,
    ImportedResource, ListRequest, Listed, PlanRequest, PlanResponse, Provider, ReadRequest,
    ReadResponse, decode_stored_state,
};
pub use resources::{
    Action, DataSource, EphemeralResource, ListResource, Resource, Resources, TypeKind,
    unknown_type,
};
pub use schema::{
    Attribute, Block, NestedAttributes, NestedBlock, NestingMode, ObjectNesting, ProviderSchemas,
    Schema,
};
pub use server::{
    MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE, NotStartedByTerraform, RunningServer, ServeConfig,
    handshake_line, serve, start, started_by_terraform,
};
pub use types::{Type, TypeError};
pub use value::{Number, Value};
