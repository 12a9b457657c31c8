//! The Terraform surface: the provider block, `kudo_operator`, `kudo_instance` and the
//! `kudo_package` and `kudo_dependencies` data sources.
//! This layer translates between Terraform values and the engine; the KUDO rules live
//! in the `kudo-package`, `kudo-template` and `kudo-engine` crates.

mod children;
mod config;
mod dependencies_data;
mod diag;
mod existing;
mod functions;
mod instance;
mod operator;
mod package_data;
mod packages;
mod preview;
mod render_seed;
mod resolve;
pub mod schema;
mod sensitive;
mod timeouts;
mod volumes;
mod write_only;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use tfplugin::{
    ApplyRequest, ApplyResponse, ClientCapabilities, Diagnostic, ImportResponse, PlanRequest,
    PlanResponse, Provider, ProviderSchemas, ReadRequest, ReadResponse, Value,
};
use tokio::sync::{OnceCell, RwLock};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::Cluster;

pub use config::{ProviderConfig, RepositoryConfig};

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
}

impl Session {
    /// Records that this run's state holds the instance.
    fn remember_instance(&self, namespace: &str, name: &str) {
        if let Ok(mut known) = self.known_instances.lock() {
            known.insert(format!("{namespace}/{name}"));
        }
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
    async fn cluster_for(&self, command: diag::Command) -> Result<Cluster, Diagnostic> {
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
                diag::cluster_error_for(
                    "Cannot reach the Kubernetes cluster",
                    &e,
                    &self.config.connection,
                    command,
                )
            })
    }

    /// [`Session::cluster_for`] the change `ApplyResourceChange` makes: a destroy when
    /// the planned state is null, else an apply.
    async fn cluster_for_change(&self, planned: &tfplugin::Value) -> Result<Cluster, Diagnostic> {
        let command = match planned.is_null() {
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

pub struct KudoProvider {
    session: RwLock<Option<Arc<Session>>>,
    /// Cancelled by `StopProvider`; every long operation watches a child of it.
    stop: CancellationToken,
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
}

/// Where a resource lives when its configuration names no namespace, as `kubectl` does.
const DEFAULT_NAMESPACE: &str = "default";

/// The `namespace` attribute of a resource value, defaulted.
fn namespace_of(v: &Value) -> String {
    v.get("namespace")
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_NAMESPACE)
        .to_string()
}

fn unknown_type(type_name: &str) -> Diagnostic {
    Diagnostic::error(
        "Unknown resource type",
        format!("This provider has no resource or data source {type_name:?}."),
    )
}

#[async_trait]
impl Provider for KudoProvider {
    fn schemas(&self) -> ProviderSchemas {
        let mut resources = BTreeMap::new();
        resources.insert(schema::OPERATOR.to_string(), schema::operator());
        resources.insert(schema::INSTANCE.to_string(), schema::instance());
        ProviderSchemas {
            provider: schema::provider(),
            resources,
            data_sources: BTreeMap::from([
                (package_data::NAME.to_string(), package_data::schema()),
                (
                    dependencies_data::NAME.to_string(),
                    dependencies_data::schema(),
                ),
            ]),
        }
    }

    async fn validate_provider_config(&self, config: Value) -> Vec<Diagnostic> {
        // Unknown values are allowed while validating; `configure` insists on them.
        if !config.is_fully_known() {
            return Vec::new();
        }
        config::parse(&config).err().unwrap_or_default()
    }

    async fn configure(&self, config: Value, terraform_version: String) -> Vec<Diagnostic> {
        tracing::debug!(%terraform_version, "configuring the provider");
        match config::parse(&config) {
            Ok(config) => {
                *self.session.write().await = Some(Arc::new(Session {
                    config,
                    cluster: OnceCell::new(),
                    known_instances: Default::default(),
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
        match type_name {
            schema::OPERATOR => Vec::new(),
            schema::INSTANCE => {
                let mut diags = write_only::validate(&config, client);
                diags.extend(instance::validate(&config));
                diags
            }
            other => vec![unknown_type(other)],
        }
    }

    async fn read_resource(&self, req: ReadRequest) -> ReadResponse {
        let session = match self.session().await {
            Ok(s) => s,
            Err(d) => {
                return ReadResponse {
                    new_state: req.current_state,
                    private: req.private,
                    diagnostics: vec![d],
                };
            }
        };
        match req.type_name.as_str() {
            schema::OPERATOR => operator::read(&session, req).await,
            schema::INSTANCE => instance::read(&session, req).await,
            other => ReadResponse {
                new_state: req.current_state,
                private: req.private,
                diagnostics: vec![unknown_type(other)],
            },
        }
    }

    async fn plan_resource_change(&self, req: PlanRequest) -> PlanResponse {
        let session = match self.session().await {
            Ok(s) => s,
            Err(d) => {
                return PlanResponse {
                    diagnostics: vec![d],
                    ..Default::default()
                };
            }
        };
        match req.type_name.as_str() {
            schema::OPERATOR => operator::plan(&session, req).await,
            schema::INSTANCE => instance::plan(&session, req).await,
            other => PlanResponse {
                diagnostics: vec![unknown_type(other)],
                ..Default::default()
            },
        }
    }

    async fn apply_resource_change(&self, req: ApplyRequest) -> ApplyResponse {
        let session = match self.session().await {
            Ok(s) => s,
            Err(d) => {
                return ApplyResponse {
                    new_state: req.prior_state,
                    diagnostics: vec![d],
                    ..Default::default()
                };
            }
        };
        let cancel = self.stop.child_token();
        match req.type_name.as_str() {
            schema::OPERATOR => operator::apply(&session, req, &cancel).await,
            schema::INSTANCE => instance::apply(&session, req, &cancel).await,
            other => ApplyResponse {
                new_state: req.prior_state,
                diagnostics: vec![unknown_type(other)],
                ..Default::default()
            },
        }
    }

    async fn import_resource_state(&self, type_name: &str, id: &str) -> ImportResponse {
        let session = match self.session().await {
            Ok(s) => s,
            Err(d) => {
                return ImportResponse {
                    imported: Vec::new(),
                    diagnostics: vec![d],
                };
            }
        };
        match type_name {
            schema::OPERATOR => operator::import(&session, id).await,
            schema::INSTANCE => instance::import(&session, id).await,
            other => ImportResponse {
                imported: Vec::new(),
                diagnostics: vec![unknown_type(other)],
            },
        }
    }

    async fn read_data_source(&self, type_name: &str, config: Value) -> (Value, Vec<Diagnostic>) {
        if type_name != package_data::NAME && type_name != dependencies_data::NAME {
            return (config, vec![unknown_type(type_name)]);
        }
        let session = match self.session().await {
            Ok(s) => s,
            Err(d) => return (config, vec![d]),
        };
        if type_name == dependencies_data::NAME {
            // Never asks for `session.cluster()`: CI runs this without any cluster.
            return dependencies_data::read(&config, &session.config.repositories).await;
        }
        let repositories = packages::repositories(&session.config.repositories);
        // Loading may download; keep it off the async workers.
        let fallback = config.clone();
        tokio::task::spawn_blocking(move || package_data::read(&config, &repositories))
            .await
            .unwrap_or_else(|e| {
                (
                    fallback,
                    vec![Diagnostic::error(
                        "Reading the package failed",
                        diag::with_advice(
                            e,
                            &format!(
                                "This is a bug in the provider; please report it, {}",
                                diag::AGAIN
                            ),
                        ),
                    )],
                )
            })
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
