//! Talking to the Kubernetes API: a client from provider settings, a discovery cache
//! (shared through a file by the processes of one Terraform run), server-side apply,
//! get, delete-and-wait, waiting by watching, and the KUDO CRDs.

mod apply_body;
mod conflict;
mod crds;
mod credential;
mod credential_cache;
mod credential_plugin;
mod credentials;
mod discovery;
mod discovery_cache;
mod dry_run_cache;
mod error;
mod established;
mod exec;
mod failure;
mod forbidden;
mod guarded;
mod listing;
mod object_ref;
mod pod_log;
mod renew_on_401;
mod retry;
mod setting_problem;
mod settings;
mod watch;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::discovery::{ApiResource, Scope};
use kube_api_versions::{Translation, Translator};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use conflict::FieldConflict;
pub use crds::{CrdsEnsured, KUDO_API_VERSION, KUDO_GROUP};
pub(crate) use dry_run_cache::Seen;
pub use error::{ClusterError, Trouble, rejects_content};
pub use failure::Failure;
pub use forbidden::Forbidden;
pub use guarded::{BOOKKEEPING_MANAGER, Guarded, Propagation};
pub use object_ref::ObjectRef;
pub use setting_problem::{
    MAX_IN_FLIGHT_LIMIT, SettingPath, SettingProblem, max_requests_in_flight, request_timeout,
};
pub use settings::{
    ConnectionSettings, DEFAULT_MAX_REQUESTS_IN_FLIGHT, EXEC_API_VERSIONS, ExecSettings,
    KUBECONFIG_VARIABLES,
};
pub(crate) use watch::Waited;

use discovery::ServedKind;
use retry::{RetryError, with_retry};

/// Field manager for every server-side apply this provider makes.
pub const FIELD_MANAGER: &str = "terraform-provider-kudo";

/// A connected cluster. Cheap to clone: clones share the client and the discovery cache.
#[derive(Clone)]
pub struct Cluster {
    client: Client,
    url: String,
    /// The kinds of each group-version resolved, and every served kind for the label
    /// sweep (discovered once and again after we create a CRD): from the server, or
    /// from the discovery file of an earlier process ([`discovery_cache`]).
    discovery: Arc<Mutex<discovery_cache::Known>>,
    /// Where discovery is shared with the other processes of the Terraform run
    /// ([`ConnectionSettings::discovery_cache_dir`]).
    discovery_file: Option<Arc<discovery_cache::DiscoveryFile>>,
    /// Where a plan's dry-run answers are kept for a later plan's same question
    /// ([`ConnectionSettings::dry_run_cache_dir`]).
    dry_runs: Option<Arc<dry_run_cache::DryRunCache>>,
    /// One discovery at a time per group-version: the objects of a task resolve their
    /// kinds concurrently, and the first answer serves the others.
    discovering: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
    /// One discovery of every served kind at a time: concurrent sweeps share one
    /// instead of each making its own.
    discovering_all: Arc<tokio::sync::Mutex<()>>,
    /// Kinds found unserved during one planning call ([`Cluster::remembering_misses`]):
    /// asked again, such a kind would cost a discovery request per object (a tree's
    /// child Instances before KUDO's CRDs exist, the custom kinds a plan's CRDs
    /// define). `None` outside a planning call: a miss always asks again there, because
    /// a run creates CRDs.
    misses: Option<Arc<Mutex<KindMisses>>>,
    /// How objects written for API versions the cluster no longer serves are moved to
    /// a served successor (provider settings `translate_api_versions`,
    /// `api_version_mapping`).
    translator: Arc<Translator>,
    /// The API server's `gitVersion` (`v1.36.0`), read when connecting.
    server_version: Arc<str>,
    /// Provider setting `allow_insecure_webhooks`: Webhook tasks may call plain
    /// http:// URLs on other machines.
    insecure_webhooks: bool,
    /// The credential plugin's command line, when the client runs one (for messages).
    exec_command: Option<Arc<str>>,
    /// The credential the provider renews itself (a plugin's, a token file's): a 401
    /// reaching a caller was the second, after a renewal (see `renew_on_401`).
    credentials: Option<Arc<credential_cache::CredentialCache>>,
}

/// A manifest in the form the cluster serves (see [`Cluster::served_form`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ServedObject {
    pub object: Value,
    /// Set when the manifest was converted from a version the cluster does not serve.
    pub translation: Option<Translation>,
    /// Fields Kubernetes removed that the template still writes, left out (see
    /// [`kube_api_versions::strip_removed_fields`]); one note each.
    pub removed_fields: Vec<String>,
}

/// (apiVersion, kind) pairs a planning call found unserved.
type KindMisses = HashSet<(String, String)>;

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("url", &self.url).finish()
    }
}

/// Polling schedule for waits: quick at first (kube-sim and small objects settle fast),
/// then backing off so a long rollout does not hammer the API server.
pub(crate) struct Backoff {
    next: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff {
            next: Duration::from_millis(50),
        }
    }

    /// Sleeps for the next interval; false if `cancel` fired first.
    pub(crate) async fn wait(&mut self, cancel: &CancellationToken) -> bool {
        let d = self.next;
        self.next = (self.next * 2).min(Duration::from_secs(2));
        tokio::select! {
            _ = cancel.cancelled() => false,
            _ = tokio::time::sleep(d) => true,
        }
    }
}

/// The verb of the first request, whose failure means the settings or the server are
/// wrong rather than a connection that faltered.
const CONNECT: &str = "connect to";

/// The namespace named by a Status saying the request's namespace does not exist (404
/// with details of kind `namespaces`) or is being deleted (403 with the cause
/// `NamespaceTerminating`).
fn namespace_gone(status: &kube::core::Status) -> Option<String> {
    let details = status.details.as_ref()?;
    match status.code {
        404 if details.kind == "namespaces" => Some(details.name.clone()),
        403 => details
            .causes
            .iter()
            .find(|c| c.reason == "NamespaceTerminating")
            .map(|c| {
                // "namespace <name> is being terminated"
                c.message
                    .strip_prefix("namespace ")
                    .and_then(|m| m.split_whitespace().next())
                    .unwrap_or("of the object")
                    .to_string()
            }),
        _ => None,
    }
}

impl Cluster {
    /// Builds the client from `settings` and checks that the API server answers.
    pub async fn connect(settings: &ConnectionSettings) -> Result<Cluster, ClusterError> {
        let env = |k: &str| std::env::var(k).ok();
        let mut config = settings::build_config(settings, &env).await?;
        let url = config.cluster_url.to_string();
        // Part of the discovery file's name: a cluster created again at the same
        // address has a new CA, and must not take the old one's discovery.
        let ca = config.root_cert.clone().unwrap_or_default();
        // Part of the dry-run answers' key: what one user may write is never taken as
        // what another may. Hashed there, never kept.
        let credentials_entry = serde_json::to_vec(&config.auth_info).unwrap_or_default();
        // A plugin or token file is the provider's to run and renew, not kube-rs'.
        let source = credential_cache::take_renewable(&mut config.auth_info);
        let exec_command = match &source {
            Some(source) => source.plugin(),
            None => settings::exec_command_line(&config),
        }
        .map(Arc::<str>::from);
        let credentials = match source {
            Some(source) => {
                let cache = Arc::new(credential_cache::CredentialCache::new(source));
                // The first credential now: a plugin that cannot run fails the connection
                // with its own words, and a client certificate it gives must be in the
                // TLS configuration the client is built with.
                let first = cache.get().await.map_err(|e| match e.plugin {
                    Some(command) => ClusterError::CredentialPlugin {
                        command,
                        message: e.message,
                    },
                    None => ClusterError::Settings {
                        setting: settings::kubeconfig_setting(settings, &env),
                        message: format!("the kubeconfig user's tokenFile: {e}"),
                    },
                })?;
                if let Some((cert, key)) = first.certificate() {
                    settings::set_client_certificate(&mut config.auth_info, cert, key)?;
                }
                // A certificate alone is part of the connections the client opens: a new
                // one could not be presented, so the plugin is not run again for it.
                first.token().is_some().then_some(cache)
            }
            None => None,
        };
        // Every request, whoever makes it, takes a slot: callers issue independent
        // reads and dry-runs all at once and this one bound keeps the API server from
        // being flooded. A slot is held until the answer's headers arrive, so a watch's
        // long body does not hold one; a request sent again after a 401 keeps its slot.
        let builder = kube::client::ClientBuilder::try_from(config).map_err(|e| {
            credentials::credential_failure(&e, exec_command.as_deref(), CONNECT, &url)
                .unwrap_or_else(|| ClusterError::Settings {
                    setting: "host",
                    message: format!("cannot build a client for {url}: {e}"),
                })
        })?;
        let limit = tower::limit::ConcurrencyLimitLayer::new(settings.max_requests_in_flight());
        let client = match &credentials {
            // The buffer makes kube's service stack cheap to clone, for the retry.
            Some(cache) => builder
                .with_layer(&tower::buffer::BufferLayer::<
                    http::Request<kube::client::Body>,
                >::new(1024))
                .with_layer(&renew_on_401::RenewOn401Layer::new(cache.clone()))
                .with_layer(&limit)
                .build(),
            None => builder.with_layer(&limit).build(),
        };
        let cluster = Cluster {
            client,
            url: url.clone(),
            discovery: Arc::default(),
            discovery_file: None,
            dry_runs: None,
            discovering: Arc::new(Mutex::new(HashMap::new())),
            discovering_all: Arc::default(),
            misses: None,
            translator: Arc::new(Translator::default()),
            server_version: Arc::from(""),
            insecure_webhooks: false,
            exec_command,
            credentials,
        };
        // The first contact says whether the settings point at a Kubernetes API server
        // at all, so it is bounded as a whole: an endpoint that accepts connections and
        // never answers must fail in seconds, not after every retry of every request.
        let deadline = settings.request_timeout();
        let first_contact = with_retry("server version", None, || {
            cluster.client.apiserver_version()
        });
        let version = match tokio::time::timeout(deadline, first_contact).await {
            Ok(answer) => answer.map_err(|e| cluster.first_contact_error(&url, e))?,
            Err(_) => {
                return Err(ClusterError::Unreachable {
                    url,
                    message: format!(
                        "no answer within {}s (the provider's `request_timeout`): something \
                         accepts connections there but does not answer as a Kubernetes API \
                         server",
                        deadline.as_secs()
                    ),
                });
            }
        };
        tracing::info!(url = %url, version = %version.git_version, "connected to Kubernetes");
        let discovery_file = settings.discovery_cache_dir.as_deref().map(|dir| {
            Arc::new(discovery_cache::DiscoveryFile::new(
                dir,
                &url,
                &ca,
                &version.git_version,
            ))
        });
        let dry_runs = settings.dry_run_cache_dir.as_deref().map(|dir| {
            Arc::new(dry_run_cache::DryRunCache::new(
                dir,
                &url,
                &ca,
                &version.git_version,
                &credentials_entry,
            ))
        });
        let cluster = Cluster {
            server_version: Arc::from(version.git_version.as_str()),
            discovery_file,
            dry_runs,
            ..cluster
        };
        cluster.read_discovery_file();
        Ok(cluster)
    }

    /// Uses `translator` for objects written for API versions the cluster does not serve.
    pub fn with_translator(mut self, translator: Translator) -> Cluster {
        self.translator = Arc::new(translator);
        self
    }

    /// The API server's version as its `/version` reports it (`gitVersion`, `v1.36.0`):
    /// what operator.yaml `kubernetesVersion` is checked against.
    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    /// [`Cluster::server_version`] as the release packages are checked and resolved
    /// against; `None` when the API server reports a version that is not a 1.x release
    /// (a development build): then nothing is checked, as without a cluster.
    pub fn kubernetes_version(&self) -> Option<kudo_resolve::ClusterVersion> {
        match kudo_resolve::ClusterVersion::parse(&self.server_version) {
            Ok(version) => Some(version),
            Err(e) => {
                tracing::warn!(error = %e, "the cluster's version is not a Kubernetes release; kubernetesVersion is not checked");
                None
            }
        }
    }

    /// Lets Webhook tasks call plain http:// URLs of other machines (the provider's
    /// `allow_insecure_webhooks`); by default only https:// and loopback http://.
    pub fn with_insecure_webhooks(mut self, allow: bool) -> Cluster {
        self.insecure_webhooks = allow;
        self
    }

    /// See [`Cluster::with_insecure_webhooks`].
    pub fn insecure_webhooks_allowed(&self) -> bool {
        self.insecure_webhooks
    }

    /// The API server URL (for messages).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The underlying kube client, for callers that need more than this wrapper offers.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// What the first request's failure says about the connection settings: a server
    /// certificate the configured CA does not trust, something that is not a Kubernetes
    /// API server, or (as any request) an unreachable server or an API error.
    fn first_contact_error(&self, url: &str, e: RetryError) -> ClusterError {
        match e {
            RetryError::Kube(ref err) if credentials::is_credential_failure(err) => {
                self.error(CONNECT, url, e)
            }
            RetryError::Kube(ref err) => {
                let chain = error_chain(err);
                if is_certificate_problem(&chain) {
                    return ClusterError::Certificate {
                        url: url.to_string(),
                        message: chain,
                    };
                }
                match err {
                    kube::Error::Api(status) if status.code != 401 && status.code != 403 => {
                        ClusterError::NotKubernetes {
                            url: url.to_string(),
                            message: format!(
                                "GET /version answered HTTP {}: {}",
                                status.code, status.message
                            ),
                        }
                    }
                    kube::Error::SerdeError(_) => ClusterError::NotKubernetes {
                        url: url.to_string(),
                        message: format!(
                            "GET /version did not answer with Kubernetes' version object: {chain}"
                        ),
                    },
                    _ => self.error(CONNECT, url, e),
                }
            }
            RetryError::Cancelled => self.error(CONNECT, url, e),
        }
    }

    fn error(&self, verb: &'static str, object: &str, e: RetryError) -> ClusterError {
        if let RetryError::Kube(err) = &e
            && let Some(failure) =
                credentials::credential_failure(err, self.exec_command.as_deref(), verb, object)
        {
            return failure;
        }
        // The layer that sets the credential renewed it after a first refusal and sent
        // the request again: this refusal is the second.
        if let RetryError::Kube(kube::Error::Api(status)) = &e
            && status.code == 401
            && let Some(credentials) = &self.credentials
        {
            return ClusterError::CredentialRefused {
                verb,
                object: object.to_string(),
                origin: credentials.describe(),
                plugin: credentials.plugin(),
                reason: status.reason.clone(),
                message: status.message.clone(),
            };
        }
        match e {
            RetryError::Cancelled => ClusterError::Cancelled {
                what: format!("{verb} {object}"),
            },
            RetryError::Kube(kube::Error::Api(status)) => match namespace_gone(&status) {
                Some(namespace) => ClusterError::NamespaceGone {
                    verb,
                    object: object.to_string(),
                    namespace,
                    code: status.code,
                    message: status.message.clone(),
                },
                None => ClusterError::Api {
                    verb,
                    object: object.to_string(),
                    code: status.code,
                    reason: status.reason.clone(),
                    message: status.message.clone(),
                },
            },
            // Only the first contact says whether the settings point at a server at all;
            // after that a failed connection is the network or the server faltering.
            RetryError::Kube(e) if retry::is_connection_error(&e) && verb == CONNECT => {
                ClusterError::Unreachable {
                    url: self.url.clone(),
                    message: e.to_string(),
                }
            }
            RetryError::Kube(e) if retry::is_connection_error(&e) => ClusterError::ConnectionLost {
                url: self.url.clone(),
                verb,
                object: object.to_string(),
                message: e.to_string(),
            },
            RetryError::Kube(e) => ClusterError::Other {
                verb,
                object: object.to_string(),
                message: e.to_string(),
            },
        }
    }

    /// This cluster for one planning call, which writes nothing: a kind found unserved
    /// is not asked for again by this clone (and its clones, and theirs), as the
    /// cluster cannot change under a plan in a way it must see within the call. The
    /// discovery cache of served kinds stays shared with `self`.
    pub fn remembering_misses(&self) -> Cluster {
        // Already remembering (a call inside a planning call): the same misses, so that
        // what the outer call found unserved is not asked for again either.
        let misses = match &self.misses {
            Some(misses) => Arc::clone(misses),
            None => Arc::new(Mutex::new(HashSet::new())),
        };
        Cluster {
            misses: Some(misses),
            ..self.clone()
        }
    }

    /// Whether this planning call found the kind unserved, or its whole group-version
    /// (recorded with an empty kind).
    fn known_miss(&self, key: &(String, String)) -> bool {
        let Some(misses) = self.misses.as_ref().and_then(|m| m.lock().ok()) else {
            return false;
        };
        misses.contains(key) || misses.contains(&(key.0.clone(), String::new()))
    }

    fn remember_miss(&self, key: (String, String)) {
        if let Some(mut misses) = self.misses.as_ref().and_then(|m| m.lock().ok()) {
            misses.insert(key);
        }
    }

    /// Resolves apiVersion + kind to the served resource (plural, scope) by asking the
    /// server. One request lists the whole group-version and caches every kind it
    /// serves (a package's Services, ConfigMaps and Secrets cost one request, not three);
    /// hits are cached, also for the next processes ([`discovery_cache`]), and a miss
    /// asks again, so CRDs created a moment ago are found (except within one planning
    /// call: [`Cluster::remembering_misses`]).
    pub async fn resolve(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<(ApiResource, Scope), ClusterError> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(hit) = self.known_kind(api_version, kind) {
            return Ok(hit);
        }
        if self.known_miss(&key) || self.known_unserved(api_version) {
            return Err(self.unknown(api_version, kind));
        }
        let gate = self
            .discovering
            .lock()
            .ok()
            .map(|mut gates| gates.entry(api_version.to_string()).or_default().clone());
        let _turn = match &gate {
            Some(gate) => Some(gate.lock().await),
            None => None,
        };
        // Whoever held the turn may have discovered it meanwhile.
        if let Some(hit) = self.known_kind(api_version, kind) {
            return Ok(hit);
        }
        if self.known_miss(&key) {
            return Err(self.unknown(api_version, kind));
        }
        // Asked also when the discovery file lists the group-version without the kind:
        // a CRD may have been created since, and then the file is forgotten.
        match self.ask_group_version(api_version).await {
            Ok(served) => {
                self.learned_group_version(api_version, served);
                self.known_kind(api_version, kind).ok_or_else(|| {
                    self.remember_miss(key);
                    self.unknown(api_version, kind)
                })
            }
            Err(RetryError::Kube(kube::Error::Discovery(_))) => {
                self.remember_miss(key);
                Err(self.unknown(api_version, kind))
            }
            Err(RetryError::Kube(kube::Error::Api(s))) if s.code == 404 => {
                // Nothing of the group-version is served: no kind of it is.
                self.group_version_gone(api_version);
                self.remember_miss((api_version.to_string(), String::new()));
                Err(self.unknown(api_version, kind))
            }
            Err(e) => Err(self.error("discover", &format!("{kind} in {api_version}"), e)),
        }
    }

    fn unknown(&self, api_version: &str, kind: &str) -> ClusterError {
        ClusterError::UnknownKind {
            url: self.url.clone(),
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        }
    }

    /// Whether objects of this kind live in a namespace (asked of the served successor
    /// when the cluster no longer serves `api_version`).
    pub async fn is_namespaced(&self, api_version: &str, kind: &str) -> Result<bool, ClusterError> {
        Ok(matches!(
            self.resolve_addressable(api_version, kind).await?.1,
            Scope::Namespaced
        ))
    }

    /// The first of `candidates` the cluster serves for `kind`.
    async fn first_served(
        &self,
        candidates: &[String],
        kind: &str,
    ) -> Result<Option<String>, ClusterError> {
        for candidate in candidates {
            match self.resolve(candidate, kind).await {
                Ok(_) => return Ok(Some(candidate.clone())),
                Err(ClusterError::UnknownKind { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Like [`Cluster::resolve`], but an object stored under a version the cluster no
    /// longer serves is addressed through a served version of its group: Kubernetes
    /// stores an object once and serves it under every version of the group, so reading
    /// and deleting need no conversion. This holds even with translation switched off,
    /// so that objects recorded before a cluster upgrade can still be read and removed.
    async fn resolve_addressable(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<(ApiResource, Scope), ClusterError> {
        match self.resolve(api_version, kind).await {
            Err(ClusterError::UnknownKind { .. }) => {
                let addressing = Translator {
                    enabled: true,
                    mappings: self.translator.mappings.clone(),
                };
                match self
                    .first_served(&addressing.candidates(api_version, kind), kind)
                    .await?
                {
                    Some(served) => self.resolve(&served, kind).await,
                    None => Err(self.unknown(api_version, kind)),
                }
            }
            other => other,
        }
    }

    /// `r` under the version the cluster serves it as (itself when served).
    pub async fn served_ref(&self, r: &ObjectRef) -> Result<ObjectRef, ClusterError> {
        let (ar, _) = self.resolve_addressable(&r.api_version, &r.kind).await?;
        Ok(r.with_api_version(&ar.api_version))
    }

    /// `manifest` as it must be sent to this cluster: unchanged when the cluster serves
    /// its apiVersion; converted to a served successor otherwise (when translation is
    /// on and a conversion is known). The one place that decides translation, for
    /// applies, dry-runs, the inventory and pruning alike.
    pub async fn served_form(&self, manifest: &Value) -> Result<ServedObject, ClusterError> {
        let mut served = self.served_version(manifest).await?;
        served.removed_fields = kube_api_versions::strip_removed_fields(&mut served.object);
        Ok(served)
    }

    /// The group-versions [`Cluster::served_form`] tries for `kind` when `api_version`
    /// is not served, in its order (the translation's successors).
    pub(crate) fn successors(&self, api_version: &str, kind: &str) -> Vec<String> {
        self.translator.candidates(api_version, kind)
    }

    /// The version part of [`Cluster::served_form`].
    async fn served_version(&self, manifest: &Value) -> Result<ServedObject, ClusterError> {
        let r = ObjectRef::from_object(manifest)?;
        match self.resolve(&r.api_version, &r.kind).await {
            Ok(_) => {
                return Ok(ServedObject {
                    object: manifest.clone(),
                    translation: None,
                    removed_fields: Vec::new(),
                });
            }
            Err(ClusterError::UnknownKind { .. }) => {}
            Err(e) => return Err(e),
        }
        let candidates = self.translator.candidates(&r.api_version, &r.kind);
        let Some(to) = self.first_served(&candidates, &r.kind).await? else {
            let use_instead = match self.translator.enabled {
                true => None,
                false => {
                    let builtin = Translator::default().candidates(&r.api_version, &r.kind);
                    self.first_served(&builtin, &r.kind).await?
                }
            };
            // A built-in API removed with nothing in its place, or one whose successor
            // translation may not use: the translation rule words it (the same words
            // `package verify --kubernetes-version` prints). Anything else unserved may
            // be a CRD that is not installed.
            let removed =
                kube_api_versions::removed_without_successor(&r.api_version, &r.kind).is_some();
            if use_instead.is_some() || removed {
                return Err(ClusterError::Translate(
                    self.translator.not_served(manifest, use_instead),
                ));
            }
            return Err(self.unknown(&r.api_version, &r.kind));
        };
        let translation = self
            .translator
            .convert(manifest, &to)
            .map_err(|e| ClusterError::Translate(e.into()))?;
        tracing::info!(
            object = %r,
            to = %translation.to_api_version,
            "converted to an API version the cluster serves"
        );
        Ok(ServedObject {
            object: translation.object.clone(),
            translation: Some(translation),
            removed_fields: Vec::new(),
        })
    }

    async fn api_for(&self, r: &ObjectRef) -> Result<Api<DynamicObject>, ClusterError> {
        Ok(self.api_and_resource(r).await?.0)
    }

    /// The API handle for `r` (in its namespace) and the resource it is served as.
    async fn api_and_resource(
        &self,
        r: &ObjectRef,
    ) -> Result<(Api<DynamicObject>, ApiResource), ClusterError> {
        let (ar, scope) = self.resolve_addressable(&r.api_version, &r.kind).await?;
        let api = match (scope, r.namespace.as_deref()) {
            (Scope::Namespaced, Some(ns)) if !ns.is_empty() => {
                Api::namespaced_with(self.client.clone(), ns, &ar)
            }
            (Scope::Namespaced, _) => {
                return Err(ClusterError::InvalidObject {
                    object: Some(r.clone()),
                    message: "this kind is namespaced but the object has no namespace".into(),
                });
            }
            (Scope::Cluster, _) => Api::all_with(self.client.clone(), &ar),
        };
        Ok((api, ar))
    }

    /// Server-side apply with our field manager. `dry_run` asks the server to validate
    /// without persisting.
    ///
    /// The apply is not forced: a field another manager owns is theirs. On a conflict we
    /// force only when the object carries our own apply entry, i.e. we applied it before
    /// and the conflicting fields are ones someone took from us out of band (`kubectl
    /// edit`, a forced apply): drift we must repair. An object someone else created and
    /// manages fails with [`ClusterError::FieldConflict`] instead.
    pub async fn apply(&self, obj: &Value, dry_run: bool) -> Result<Value, ClusterError> {
        self.apply_inner(obj, dry_run, false).await
    }

    /// A dry-run apply of an object a LIST has just shown `seen` ([`Cluster::apply`], or
    /// [`Cluster::apply_owned`] when `owned`): the answer an earlier plan of the run got
    /// to the same question when it is kept (see [`dry_run_cache`]), else the server's,
    /// then kept for the plans after. Without `seen` (the LIST is still out) only the
    /// server is asked.
    pub(crate) async fn dry_run_as_seen(
        &self,
        obj: &Value,
        owned: bool,
        seen: Option<Seen<'_>>,
    ) -> Result<Value, ClusterError> {
        let cached = self
            .dry_runs
            .as_ref()
            .zip(seen)
            .and_then(|(c, seen)| c.get(obj, owned, seen));
        if let Some(answer) = cached {
            tracing::debug!(
                kind = obj["kind"].as_str().unwrap_or_default(),
                name = obj
                    .pointer("/metadata/name")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default(),
                "dry-run answer of an earlier plan"
            );
            return Ok(answer);
        }
        let answer = self.apply_inner(obj, true, owned).await?;
        if let Some(cache) = &self.dry_runs {
            cache.put(obj, owned, &answer);
        }
        Ok(answer)
    }

    /// Whether dry-run answers of earlier plans are kept that a plan could take
    /// ([`Cluster::dry_run_as_seen`]): without any, a plan need not list before it asks.
    pub(crate) fn keeps_dry_runs(&self) -> bool {
        self.dry_runs.as_ref().is_some_and(|c| c.holds_any())
    }

    /// Like [`Cluster::apply`], for an object Terraform state records as ours although
    /// our manager may never have applied it: an imported instance's objects and the KUDO
    /// objects a resource stands for, which KUDO's own manager wrote before a migration.
    /// Conflicts are forced (and logged).
    pub async fn apply_owned(&self, obj: &Value, dry_run: bool) -> Result<Value, ClusterError> {
        self.apply_inner(obj, dry_run, true).await
    }

    async fn apply_inner(
        &self,
        obj: &Value,
        dry_run: bool,
        owned: bool,
    ) -> Result<Value, ClusterError> {
        let api_version = obj["apiVersion"].as_str().unwrap_or_default();
        let kind = obj["kind"].as_str().unwrap_or_default();
        self.asked_again_if_unserved(api_version, kind, || self.apply_once(obj, dry_run, owned))
            .await
    }

    async fn apply_once(
        &self,
        obj: &Value,
        dry_run: bool,
        owned: bool,
    ) -> Result<Value, ClusterError> {
        // Callers normally pass the served form already; converting here too keeps a
        // manifest for a removed version from ever reaching the server.
        let mut body = self.served_form(obj).await?.object;
        let mut r = ObjectRef::from_object(&body)?;
        let (_, scope) = self.resolve(&r.api_version, &r.kind).await?;
        if matches!(scope, Scope::Cluster) {
            // A namespace on a cluster-scoped object is rejected by some servers.
            r.namespace = None;
            if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("namespace");
            }
        }
        let api = self.api_for(&r).await?;
        let params = |force: bool| {
            let mut pp = PatchParams::apply(FIELD_MANAGER);
            pp.force = force;
            if dry_run {
                pp = pp.dry_run();
            }
            pp
        };
        let pp = params(false);
        let conflicts = match with_retry("apply", None, || {
            apply_body::apply(&api, &r.name, &pp, &body)
        })
        .await
        {
            Ok(applied) => {
                tracing::debug!(object = %r, dry_run, "applied");
                let applied = to_json(&applied, &r)?;
                if !dry_run && is_crd(&r) {
                    self.forget_served_kinds();
                    self.saw_crd(&applied);
                }
                return Ok(applied);
            }
            Err(RetryError::Kube(kube::Error::Api(status)))
                if status.code == 409 && conflict::is_field_conflict(&status) =>
            {
                conflict::causes(&status)
            }
            Err(e) => return Err(self.error("apply", &r.to_string(), e)),
        };
        let ours = owned || {
            let live = with_retry("get", None, || api.get_opt(&r.name))
                .await
                .map_err(|e| self.error("read", &r.to_string(), e))?;
            live.as_ref()
                .is_some_and(|o| conflict::applied_by(o, FIELD_MANAGER))
        };
        if !ours {
            tracing::warn!(object = %r, ?conflicts, "apply conflicts with another field manager");
            return Err(ClusterError::FieldConflict {
                object: r.to_string(),
                conflicts,
            });
        }
        tracing::warn!(
            object = %r,
            ?conflicts,
            "fields we applied before were changed by another field manager; taking them back"
        );
        let pp = params(true);
        let applied = with_retry("apply", None, || {
            apply_body::apply(&api, &r.name, &pp, &body)
        })
        .await
        .map_err(|e| self.error("apply", &r.to_string(), e))?;
        tracing::debug!(object = %r, dry_run, "applied (forced)");
        let applied = to_json(&applied, &r)?;
        if !dry_run && is_crd(&r) {
            self.forget_served_kinds();
            self.saw_crd(&applied);
        }
        Ok(applied)
    }

    /// Merge-patches the status subresource (objects whose CRD has `subresources.status`).
    pub async fn patch_status(&self, r: &ObjectRef, status: &Value) -> Result<Value, ClusterError> {
        let api = self.api_for(r).await?;
        let body = serde_json::json!({ "status": status });
        let patch = Patch::Merge(&body);
        let pp = PatchParams::default();
        let out = with_retry("patch status", None, || {
            api.patch_status(&r.name, &pp, &patch)
        })
        .await
        .map_err(|e| self.error("update status of", &r.to_string(), e))?;
        to_json(&out, r)
    }

    /// Creates `obj` (a POST, not an apply): an object that already exists fails with 409,
    /// which tells the caller someone else made it first. `dry_run` asks the server to
    /// judge the request (admission, RBAC) without storing anything.
    pub async fn create(&self, obj: &Value, dry_run: bool) -> Result<Value, ClusterError> {
        let api_version = obj["apiVersion"].as_str().unwrap_or_default();
        let kind = obj["kind"].as_str().unwrap_or_default();
        self.asked_again_if_unserved(api_version, kind, || self.create_once(obj, dry_run))
            .await
    }

    async fn create_once(&self, obj: &Value, dry_run: bool) -> Result<Value, ClusterError> {
        let r = ObjectRef::from_object(obj)?;
        let api = self.api_for(&r).await?;
        let body: DynamicObject =
            serde_json::from_value(obj.clone()).map_err(|e| ClusterError::Other {
                verb: "create",
                object: r.to_string(),
                message: e.to_string(),
            })?;
        let pp = kube::api::PostParams {
            dry_run,
            ..Default::default()
        };
        let out = with_retry("create", None, || api.create(&pp, &body))
            .await
            .map_err(|e| self.error("create", &r.to_string(), e))?;
        to_json(&out, &r)
    }

    /// Merge-patches the object (RFC 7386): keys set to null are removed, others are set,
    /// and what the patch does not name is left as it is, whoever wrote it.
    pub async fn merge_patch(&self, r: &ObjectRef, patch: &Value) -> Result<Value, ClusterError> {
        let api = self.api_for(r).await?;
        let pp = PatchParams::default();
        let merge = Patch::Merge(patch);
        let out = with_retry("patch", None, || api.patch(&r.name, &pp, &merge))
            .await
            .map_err(|e| self.error("patch", &r.to_string(), e))?;
        to_json(&out, r)
    }

    /// The object, or None when it does not exist or the server does not know its kind.
    pub async fn get(&self, r: &ObjectRef) -> Result<Option<Value>, ClusterError> {
        // An absent object is `None`; a 404 left over is the server's "page not found".
        self.asked_again_if_unserved(&r.api_version, &r.kind, || self.get_once(r))
            .await
    }

    /// `once`, and once more when the server answers that it does not serve the
    /// resource the discovery file mapped the kind to (a CRD deleted and created again,
    /// not established yet): the file is forgotten and the kind asked for again. Also
    /// when a request beside this one forgot the file first: the mapping this request
    /// went by came from it all the same. And, after pauses of 0.1, 0.2, 0.4, 0.8 and
    /// 1.6 s, when the kind is known only from its CRD seen established
    /// ([`established`]): the server's handler of the new resource may lag the condition
    /// by a moment.
    async fn asked_again_if_unserved<T, F, Fut>(
        &self,
        api_version: &str,
        kind: &str,
        once: F,
    ) -> Result<T, ClusterError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, ClusterError>>,
    {
        let from_file = self.mapped_by_file(api_version);
        let mut answer = match once().await {
            Err(e) if resource_not_served(&e) && (self.forget_discovery_file() || from_file) => {
                once().await
            }
            answer => answer,
        };
        let mut pause = Duration::from_millis(100);
        while matches!(&answer, Err(e) if resource_not_served(e))
            && pause <= established::HANDLER_LAG
            && self.mapped_by_established_crd(api_version, kind)
        {
            tracing::debug!(
                api_version,
                kind,
                "the resource of a CRD just established is not served yet; asking again"
            );
            tokio::time::sleep(pause).await;
            pause *= 2;
            answer = once().await;
        }
        answer
    }

    async fn get_once(&self, r: &ObjectRef) -> Result<Option<Value>, ClusterError> {
        let api = match self.api_for(r).await {
            Ok(api) => api,
            Err(ClusterError::UnknownKind { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let found = with_retry("get", None, || api.get_opt(&r.name))
            .await
            .map_err(|e| self.error("read", &r.to_string(), e))?;
        found.map(|o| to_json(&o, r)).transpose()
    }

    /// Deletes with foreground propagation and waits until the object is gone. NotFound
    /// and kinds the server does not serve count as done.
    pub async fn delete_and_wait(
        &self,
        r: &ObjectRef,
        cancel: &CancellationToken,
    ) -> Result<(), ClusterError> {
        self.delete_as_and_wait(r, Propagation::Foreground, cancel)
            .await
    }

    /// [`Cluster::delete_and_wait`] with the propagation the caller chose.
    pub async fn delete_as_and_wait(
        &self,
        r: &ObjectRef,
        propagation: Propagation,
        cancel: &CancellationToken,
    ) -> Result<(), ClusterError> {
        self.delete_with_and_wait(r, &propagation.params(), cancel)
            .await
    }

    /// [`Cluster::delete_and_wait`] with the caller's delete options (preconditions).
    /// A failed precondition is returned as the server's 409.
    async fn delete_with_and_wait(
        &self,
        r: &ObjectRef,
        dp: &DeleteParams,
        cancel: &CancellationToken,
    ) -> Result<(), ClusterError> {
        let api = match self.api_for(r).await {
            Ok(api) => api,
            Err(ClusterError::UnknownKind { .. }) => {
                tracing::info!(object = %r, "kind not served by the cluster; nothing to delete");
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        if is_crd(r) {
            self.crd_deleted(&r.name);
        }
        let answer = match with_retry("delete", Some(cancel), || api.delete(&r.name, dp)).await {
            Ok(answer) => answer,
            Err(RetryError::Kube(kube::Error::Api(s))) if s.code == 404 => return Ok(()),
            Err(e) => return Err(self.error("delete", &r.to_string(), e)),
        };
        // The server answers the object while finalizers (foreground deletion adds one)
        // hold it, and a Success `Status` when it removed it at once.
        let (gone, uid, version) = answer.either(
            |pending| {
                (
                    false,
                    pending.metadata.uid,
                    pending.metadata.resource_version,
                )
            },
            |status| {
                let uid = status.details.as_ref().map(|d| d.uid.clone());
                (status.is_success(), uid.filter(|u| !u.is_empty()), None)
            },
        );
        if gone {
            tracing::debug!(object = %r, "deleted");
            return Ok(());
        }
        // Waiting by uid: an object someone creates under the name meanwhile is not ours.
        // Watched from the version the answer had: nothing to list first.
        self.wait_gone(r, uid.as_deref(), version.as_deref(), cancel)
            .await
    }

    /// Every kind the server serves (see [`discovery`]), from the cache when this
    /// process or an earlier one of the run discovered them before and no CRD was
    /// created since.
    async fn served_kinds(&self) -> Result<Arc<Vec<ServedKind>>, ClusterError> {
        if let Some(kinds) = self.known_served_kinds() {
            return Ok(kinds);
        }
        let _turn = self.discovering_all.lock().await;
        // Whoever held the turn discovered them meanwhile.
        if let Some(kinds) = self.known_served_kinds() {
            return Ok(kinds);
        }
        let kinds = Arc::new(
            discovery::served_kinds(&self.client, None)
                .await
                .map_err(|e| self.error("discover", "API groups", e))?,
        );
        tracing::debug!(kinds = kinds.len(), "discovered the served kinds");
        self.learned_served_kinds(kinds.clone());
        Ok(kinds)
    }

    /// Creates the Operator, OperatorVersion and Instance CRDs when missing and waits
    /// until the server has established them. Existing CRDs (e.g. from a real KUDO
    /// install) are left as they are. When discovery shows the three kinds served, no
    /// CRD is read: credentials with rights in a namespace only need no more.
    pub async fn ensure_kudo_crds(&self) -> Result<crds::CrdsEnsured, ClusterError> {
        crds::ensure(self).await
    }

    /// What [`Cluster::ensure_kudo_crds`] would meet, by server-side dry-runs of the
    /// CRDs it would create: `Err` only with the API server's refusal of these
    /// credentials (HTTP 401/403), for a plan to fail with.
    pub async fn check_kudo_crds(&self) -> Result<(), ClusterError> {
        crds::check(self).await
    }
}

/// A write answered 404 outside a missing namespace: the resource it went to is not
/// served (any more). When the discovery file mapped it, the file is out of date.
fn resource_not_served(e: &ClusterError) -> bool {
    matches!(e, ClusterError::Api { code: 404, .. })
}

fn is_crd(r: &ObjectRef) -> bool {
    r.kind == "CustomResourceDefinition" && r.group() == "apiextensions.k8s.io"
}

fn to_json(obj: &DynamicObject, r: &ObjectRef) -> Result<Value, ClusterError> {
    serde_json::to_value(obj).map_err(|e| ClusterError::Other {
        verb: "decode",
        object: r.to_string(),
        message: e.to_string(),
    })
}

/// An error and all its causes, as one line.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

/// Whether a failed connection is the TLS handshake refusing the server's certificate
/// (rustls' words: "invalid peer certificate: UnknownIssuer", "certificate expired", ...).
fn is_certificate_problem(chain: &str) -> bool {
    let lower = chain.to_ascii_lowercase();
    lower.contains("certificate")
        || lower.contains("unknownissuer")
        || lower.contains("badsignature")
}
