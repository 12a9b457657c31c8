//! The Terraform surface: the provider block, `kudo_operator`, `kudo_instance` and the
//! `kudo_package` and `kudo_dependencies` data sources.
//! This layer translates between Terraform values and the engine; the KUDO rules live
//! in the `kudo-package`, `kudo-template` and `kudo-engine` crates.

mod config;
mod dependencies_data;
mod diag;
mod drift;
mod ephemeral;
mod existing;
mod functions;
mod health;
mod identity;
mod instance;
mod line_diff;
mod listing;
mod manifests;
mod namespace;
mod offline;
mod operator;
mod package_data;
mod packages;
mod permission;
mod plan_status;
mod preview;
mod private_state;
mod render_seed;
mod resolve;
mod running;
pub mod schema;
mod sensitive;
mod summary;
mod timeouts;
mod volumes;
mod write_only;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use tfplugin::{
    ApplyRequest, ApplyResponse, Attr, ClientCapabilities, Diagnostic, FromValue, ImportResponse,
    ListRequest, Listed, PlanRequest, PlanResponse, Provider, ProviderSchemas, ReadRequest,
    ReadResponse, Resources, Value,
};
use tokio::sync::{OnceCell, RwLock};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::Cluster;

pub use config::ProviderConfig;

/// What `ConfigureProvider` established for this process.
struct Session {
    config: ProviderConfig,
    // Connecting is deferred to the first call that needs the cluster, so that
    // validation and plans of resources that do not need it work without one.
    cluster: OnceCell<Cluster>,
    /// `namespace/name` of every `kudo_instance` this Terraform run has in its state, as
    /// seen by refreshes, updates and imports in this process. A replacement (tainted,
    /// or a changed `name`) plans its create with no prior state while the old Instance
    /// still exists; this tells it apart from another configuration's instance.
    known_instances: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// `namespace/name` -> render seed of the instances this process refreshed or
    /// applied: an action run in the same Terraform walk (`action_trigger`) renders
    /// with the instance's own seed, which only its private state holds.
    render_seeds: std::sync::Mutex<BTreeMap<String, String>>,
}

impl Session {
    /// Records that this run's state holds the instance.
    fn remember_instance(&self, namespace: &str, name: &str) {
        if let Ok(mut known) = self.known_instances.lock() {
            known.insert(format!("{namespace}/{name}"));
        }
    }

    /// Records the render seed of an instance this process saw in state.
    fn remember_render_seed(&self, namespace: &str, name: &str, seed: Option<&str>) {
        if let (Some(seed), Ok(mut seeds)) = (seed, self.render_seeds.lock()) {
            seeds.insert(format!("{namespace}/{name}"), seed.to_string());
        }
    }

    /// The render seed recorded for the instance (see `render_seeds`).
    fn render_seed_of(&self, namespace: &str, name: &str) -> Option<String> {
        self.render_seeds
            .lock()
            .ok()
            .and_then(|seeds| seeds.get(&format!("{namespace}/{name}")).cloned())
    }

    /// Whether this run's state holds the instance (see `known_instances`).
    fn knows_instance(&self, namespace: &str, name: &str) -> bool {
        self.known_instances
            .lock()
            .is_ok_and(|known| known.contains(&format!("{namespace}/{name}")))
    }

    async fn cluster(&self) -> Result<Cluster, Diagnostic> {
        self.cluster_for(diag::Command::Apply).await
    }

    /// [`Session::cluster`] for `command`, whose name the advice of a failure gives.
    /// Offline (connection settings not known yet) it fails at once without trying:
    /// with the settings missing, a connection would fall back to the kubeconfig of the
    /// environment, which is not the cluster the configuration names.
    async fn cluster_for(&self, command: diag::Command) -> Result<Cluster, Diagnostic> {
        if self.config.offline() {
            return Err(offline::error(&self.config.unknown_connection));
        }
        self.cluster
            .get_or_try_init(|| async {
                Cluster::connect(&self.config.connection).await.map(|c| {
                    c.with_translator(self.config.translator.clone())
                        .with_insecure_webhooks(self.config.allow_insecure_webhooks)
                })
            })
            .await
            .cloned()
            .map_err(|e| {
                let summary = match e {
                    kudo_engine::cluster::ClusterError::CredentialPlugin { .. } => {
                        "Cannot get credentials for the Kubernetes cluster"
                    }
                    // Usually found by `configure` already (see `checked_config`).
                    kudo_engine::cluster::ClusterError::Settings { .. } => {
                        "Invalid Kubernetes connection settings"
                    }
                    _ => "Cannot reach the Kubernetes cluster",
                };
                diag::cluster_error_for(summary, &e, &self.config.connection, command)
            })
    }

    /// The cluster a plan works with: `None` only while the connection settings are not
    /// known yet (planned offline, see `offline.rs`). Known settings that do not lead to
    /// a Kubernetes API server (a missing kubeconfig, an unknown context, a CA that did
    /// not sign the server's certificate, nothing answering) fail the plan with the
    /// cause, rather than planning as if offline and failing only at apply.
    async fn planning_cluster(&self) -> Result<Option<Cluster>, Diagnostic> {
        if self.config.offline() {
            return Ok(None);
        }
        self.cluster().await.map(Some)
    }

    /// [`Session::cluster_for`] the change `ApplyResourceChange` makes: a destroy (the
    /// planned state is null) or an apply.
    async fn cluster_for_change(&self, destroy: bool) -> Result<Cluster, Diagnostic> {
        let command = match destroy {
            true => diag::Command::Destroy,
            false => diag::Command::Apply,
        };
        self.cluster_for(command).await
    }

    /// A failed cluster call, with advice that names the connection settings in use.
    fn cluster_error(&self, summary: &str, e: &kudo_engine::cluster::ClusterError) -> Diagnostic {
        diag::cluster_error(summary, e, &self.config.connection)
    }

    /// A failed plan run, install or uninstall, with what to do about it.
    fn engine_error(&self, summary: &str, e: &kudo_engine::engine::EngineError) -> Diagnostic {
        diag::engine_error(summary, e, &self.config.connection)
    }

    /// A failed destroy: the advice ends with `terraform destroy`, which resumes it.
    fn destroy_error(&self, summary: &str, e: &kudo_engine::engine::EngineError) -> Diagnostic {
        diag::engine_error_for(summary, e, &self.config.connection, diag::Command::Destroy)
    }
}

/// The provider block parsed and, once its connection settings are known, checked
/// without contacting the cluster (`ConnectionSettings::check`: kubeconfig, context,
/// PEM texts, proxy, exec). A setting every cluster call would fail on is one error on
/// the provider block here, where Terraform reports it once, rather than one per
/// resource later. `validate_provider_config` and `configure` give the same answer.
async fn checked_config(config: &Value) -> Result<config::ProviderConfig, Vec<Diagnostic>> {
    let parsed = config::parse(config)?;
    if parsed.offline() {
        return Ok(parsed);
    }
    match parsed.connection.check().await {
        Ok(()) => Ok(parsed),
        Err(e) => Err(vec![diag::settings_error(&e)]),
    }
}

pub struct KudoProvider {
    session: RwLock<Option<Arc<Session>>>,
    /// Cancelled by `StopProvider`; every long operation watches a child of it.
    stop: CancellationToken,
    resources: Resources<Call>,
}

/// What a resource or data source gets for one call: the configured session and a
/// token `StopProvider` cancels.
pub struct Call {
    session: Arc<Session>,
    cancel: CancellationToken,
}

impl Default for KudoProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl KudoProvider {
    pub fn new() -> KudoProvider {
        KudoProvider {
            session: RwLock::new(None),
            stop: CancellationToken::new(),
            resources: Resources::new()
                .resource(operator::Operator)
                .resource(instance::Instance)
                .data_source(package_data::PackageData)
                .data_source(dependencies_data::DependenciesData)
                .ephemeral(ephemeral::InstanceParameters)
                .list(listing::InstanceList)
                .list(listing::OperatorList)
                .action(instance::action::PlanAction),
        }
    }

    async fn session(&self) -> Result<Arc<Session>, Diagnostic> {
        self.session.read().await.clone().ok_or_else(|| {
            Diagnostic::error(
                "Provider not configured",
                "Terraform called the provider before configuring it; this is a bug in Terraform or in the provider. Run the command again.",
            )
        })
    }

    /// The call an import (of `what`, for messages) runs in, or its answer when it
    /// cannot run: importing reads the object from the cluster, so there is nothing to
    /// offer while the connection settings are unknown.
    async fn import_call(&self, what: &str) -> Result<Call, ImportResponse> {
        let call = self.call().await.map_err(import_failed)?;
        if call.session.config.offline() {
            return Err(import_failed(Diagnostic::error(
                "Cannot import before the cluster connection is known",
                format!(
                    "Importing {what} reads it from the cluster, but the provider settings {} are known only after apply. Apply the resources the connection comes from first (for example `terraform apply -target=<cluster module>`), then import.",
                    offline::setting_names(&call.session.config.unknown_connection)
                ),
            )));
        }
        Ok(call)
    }

    async fn call(&self) -> Result<Call, Diagnostic> {
        Ok(Call {
            session: self.session().await?,
            cancel: self.stop.child_token(),
        })
    }
}

/// An import that failed before it read anything.
pub(crate) fn import_failed(d: Diagnostic) -> ImportResponse {
    ImportResponse::failed(vec![d])
}

/// Where a resource lives when its configuration names no namespace, as `kubectl` does.
const DEFAULT_NAMESPACE: &str = "default";

/// A `namespace` attribute, defaulted.
fn namespace_of(namespace: &Attr<String>) -> String {
    namespace
        .as_deref()
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_NAMESPACE)
        .to_string()
}

/// The `namespace` attribute of a decoded value (an identity, an ephemeral resource's
/// configuration), defaulted as [`namespace_of`] does.
fn namespace_in(value: &Value) -> &str {
    value
        .get("namespace")
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_NAMESPACE)
}

/// A resource value (state, plan or configuration) as its model; `None` when null
/// (no prior state on create, no plan on destroy).
fn decode<T: FromValue>(value: &Value) -> Result<Option<T>, Vec<Diagnostic>> {
    value.decode().map_err(|d| vec![d])
}

#[async_trait]
impl Provider for KudoProvider {
    fn schemas(&self) -> ProviderSchemas {
        self.resources.schemas(schema::provider())
    }

    async fn validate_provider_config(&self, config: Value) -> Vec<Diagnostic> {
        // Unknown values are checked by `configure`, which knows which of them may stay
        // unknown (connection settings: the plan is then made offline).
        if !config.is_fully_known() {
            return Vec::new();
        }
        checked_config(&config).await.err().unwrap_or_default()
    }

    async fn configure(&self, config: Value, terraform_version: String) -> Vec<Diagnostic> {
        tracing::debug!(%terraform_version, "configuring the provider");
        match checked_config(&config).await {
            Ok(config) => {
                if config.offline() {
                    tracing::info!(
                        unknown = ?config.unknown_connection,
                        "connection settings known only after apply; planning without the cluster"
                    );
                }
                *self.session.write().await = Some(Arc::new(Session {
                    config,
                    cluster: OnceCell::new(),
                    known_instances: Default::default(),
                    render_seeds: Default::default(),
                }));
                Vec::new()
            }
            Err(diags) => diags,
        }
    }

    async fn validate_resource_config(
        &self,
        type_name: &str,
        config: Value,
        client: ClientCapabilities,
    ) -> Vec<Diagnostic> {
        self.resources
            .validate_resource(type_name, config, client)
            .await
    }

    async fn validate_data_source_config(&self, type_name: &str, config: Value) -> Vec<Diagnostic> {
        self.resources.validate_data_source(type_name, config).await
    }

    async fn upgrade_resource_state(
        &self,
        type_name: &str,
        version: i64,
        raw_json: serde_json::Value,
    ) -> Result<Value, Vec<Diagnostic>> {
        let raw_json = match type_name {
            schema::INSTANCE => instance::upgrade_state(version, raw_json),
            _ => raw_json,
        };
        tfplugin::decode_stored_state(&self.schemas(), type_name, &raw_json)
    }

    async fn read_resource(&self, req: ReadRequest) -> ReadResponse {
        match self.call().await {
            Ok(call) if call.session.config.offline() => {
                offline::not_refreshed(&call.session.config.unknown_connection, req)
            }
            Ok(call) => self.resources.read(&call, req).await,
            Err(d) => ReadResponse::unchanged(req, vec![d]),
        }
    }

    async fn plan_resource_change(&self, req: PlanRequest) -> PlanResponse {
        match self.call().await {
            Ok(call) => {
                let offline =
                    call.session.config.offline().then(|| {
                        offline::Unchecked::of(&req, &call.session.config.unknown_connection)
                    });
                let mut resp = self.resources.plan(&call, req).await;
                if let Some(unchecked) = offline {
                    unchecked.warn(&mut resp);
                }
                resp
            }
            Err(d) => PlanResponse::refused(vec![d]),
        }
    }

    async fn apply_resource_change(&self, req: ApplyRequest) -> ApplyResponse {
        match self.call().await {
            Ok(call) => self.resources.apply(&call, req).await,
            Err(d) => ApplyResponse::failed(req.prior_state, vec![d]),
        }
    }

    async fn import_resource_state(&self, type_name: &str, id: &str) -> ImportResponse {
        match self.import_call(&format!("{type_name} {id:?}")).await {
            Ok(call) => self.resources.import(&call, type_name, id).await,
            Err(refused) => refused,
        }
    }

    async fn import_resource_identity(&self, type_name: &str, identity: Value) -> ImportResponse {
        match self.import_call(&format!("{type_name} by identity")).await {
            Ok(call) => {
                self.resources
                    .import_identity(&call, type_name, &identity)
                    .await
            }
            Err(refused) => refused,
        }
    }

    async fn open_ephemeral(&self, type_name: &str, config: Value) -> (Value, Vec<Diagnostic>) {
        match self.call().await {
            Ok(call) => {
                self.resources
                    .open_ephemeral(&call, type_name, config)
                    .await
            }
            Err(d) => (config, vec![d]),
        }
    }

    async fn validate_action_config(&self, type_name: &str, config: Value) -> Vec<Diagnostic> {
        self.resources.validate_action(type_name, config).await
    }

    async fn plan_action(&self, type_name: &str, config: Value) -> Vec<Diagnostic> {
        match self.call().await {
            Ok(call) => self.resources.plan_action(&call, type_name, config).await,
            Err(d) => vec![d],
        }
    }

    async fn invoke_action(
        &self,
        type_name: &str,
        config: Value,
        progress: tfplugin::ActionProgress,
    ) -> Vec<Diagnostic> {
        match self.call().await {
            Ok(call) => {
                self.resources
                    .invoke_action(&call, type_name, config, progress)
                    .await
            }
            Err(d) => vec![d],
        }
    }

    async fn list_resource(&self, req: ListRequest) -> (Vec<Listed>, Vec<Diagnostic>) {
        match self.call().await {
            Ok(call) => self.resources.list_resource(&call, req).await,
            Err(d) => (Vec::new(), vec![d]),
        }
    }

    async fn read_data_source(&self, type_name: &str, config: Value) -> (Value, Vec<Diagnostic>) {
        match self.call().await {
            Ok(call) => {
                self.resources
                    .read_data_source(&call, type_name, config)
                    .await
            }
            Err(d) => (config, vec![d]),
        }
    }

    fn functions(&self) -> BTreeMap<String, tfplugin::Function> {
        functions::all()
    }

    async fn call_function(
        &self,
        name: &str,
        arguments: Vec<Value>,
    ) -> Result<Value, tfplugin::FunctionError> {
        functions::call(name, arguments).await
    }

    fn stop(&self) {
        tracing::info!("Terraform asked the provider to stop; cancelling work in flight");
        self.stop.cancel();
    }
}
