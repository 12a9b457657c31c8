//! kube-sim: a Kubernetes API server stand-in for tests.
//!
//! It serves HTTPS with a throw-away CA and bearer-token auth, discovery, the built-in kinds
//! the KUDO packages use plus CRDs, server-side apply with managed fields, status
//! subresources, watches, garbage collection and simulated workload controllers. See the
//! crate README for the annotations and the admin endpoint.

mod admin;
mod api_error;
mod auth;
mod claims;
mod containers;
mod controllers;
mod defaults;
mod exec;
mod faults;
mod fieldset;
mod http;
mod managed;
mod merge;
mod ops;
mod rbac;
mod resources;
mod routes;
mod schema;
mod selectors;
mod shared;
mod ssa;
mod store;
mod tls;
mod validate;
mod watch;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use base64::Engine;
use tokio::sync::watch as tokio_watch;
use tracing::info;

pub use auth::{ADMIN_USER, ExpiringTokens, UserToken};
pub use containers::ContainerExit;
pub use controllers::{ANN_JOB_FAIL, ANN_NEVER_READY, ANN_POD_FAIL, ANN_READY_DELAY};
pub use exec::ExecFile;
pub use faults::{DISCOVERY, FaultRule, RequestStats};
pub use kube_api_versions::{CURRENT, OLDEST, Release};

use shared::{Settings, Shared};

/// How to start the simulator.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Listen address; port 0 picks a free port.
    pub bind: SocketAddr,
    /// Bearer token clients must present.
    pub token: String,
    /// How long simulated workloads take to become ready after each spec change.
    pub ready_delay: Duration,
    /// Fault rules active from the start.
    pub faults: Vec<FaultRule>,
    /// The Kubernetes release whose built-in API versions are served (and reported by
    /// `/version`); between [`kube_api_versions::OLDEST`] and
    /// [`kube_api_versions::CURRENT`].
    pub kubernetes_version: Release,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            token: format!("kube-sim-{}", uuid::Uuid::new_v4().simple()),
            ready_delay: Duration::from_millis(100),
            faults: Vec::new(),
            kubernetes_version: kube_api_versions::CURRENT,
        }
    }
}

/// A running simulator; dropping it (or [`KubeSim::shutdown`]) stops it.
pub struct KubeSim {
    addr: SocketAddr,
    token: String,
    ca_pem: String,
    shared: Arc<Shared>,
    stop: Option<tokio_watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl KubeSim {
    /// Start inside the current tokio runtime.
    pub async fn start(cfg: SimConfig) -> anyhow::Result<KubeSim> {
        let (listener, parts) = prepare(&cfg).await?;
        let (stop_tx, stop_rx) = tokio_watch::channel(false);
        let addr = listener.local_addr().context("listener address")?;
        let shared = parts.shared.clone();
        let acceptor = tokio_rustls::TlsAcceptor::from(parts.tls.server_config.clone());
        let server = tokio::spawn(http::serve(listener, acceptor, shared.clone(), stop_rx));
        let ctl = tokio::spawn(controllers::run(shared.clone()));
        info!(%addr, kubernetes_version = %cfg.kubernetes_version, "kube-sim started");
        Ok(KubeSim {
            addr,
            token: cfg.token.clone(),
            ca_pem: parts.tls.ca_pem,
            shared,
            stop: Some(stop_tx),
            thread: None,
            tasks: vec![server, ctl],
        })
    }

    /// Start on a dedicated background thread with its own runtime.
    pub fn spawn(cfg: SimConfig) -> anyhow::Result<KubeSim> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<anyhow::Result<KubeSim>>();
        let thread = std::thread::Builder::new()
            .name("kube-sim".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ =
                            ready_tx.send(Err(anyhow::Error::new(e).context("building runtime")));
                        return;
                    }
                };
                rt.block_on(async move {
                    match KubeSim::start(cfg).await {
                        Ok(mut sim) => {
                            let mut stopped = sim.stop_receiver();
                            let tasks = std::mem::take(&mut sim.tasks);
                            if ready_tx.send(Ok(sim)).is_ok() {
                                // Runs until the handle is dropped (sender closed) or stopped.
                                while stopped.changed().await.is_ok() {
                                    if *stopped.borrow() {
                                        break;
                                    }
                                }
                            }
                            for t in tasks {
                                t.abort();
                            }
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                        }
                    }
                });
            })
            .context("spawning kube-sim thread")?;
        let mut sim = ready_rx
            .recv()
            .context("kube-sim thread exited before starting")??;
        sim.thread = Some(thread);
        Ok(sim)
    }

    fn stop_receiver(&self) -> tokio_watch::Receiver<bool> {
        match &self.stop {
            Some(s) => s.subscribe(),
            None => tokio_watch::channel(true).1,
        }
    }

    /// `https://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    pub fn admin_url(&self) -> String {
        format!("{}/_sim", self.url())
    }

    pub fn ca_pem(&self) -> String {
        self.ca_pem.clone()
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// A kubeconfig with one cluster (CA data), user (token) and context, current.
    pub fn kubeconfig_yaml(&self) -> String {
        self.kubeconfig_yaml_with_token(&self.token)
    }

    /// [`KubeSim::kubeconfig_yaml`] whose user presents `token` instead of the admin's
    /// (one added with [`KubeSim::add_user_token`], say).
    pub fn kubeconfig_yaml_with_token(&self, token: &str) -> String {
        let ca = base64::engine::general_purpose::STANDARD.encode(self.ca_pem.as_bytes());
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kube-sim\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: kube-sim\n  user:\n    token: {token}\ncontexts:\n- name: kube-sim\n  context:\n    cluster: kube-sim\n    user: kube-sim\n    namespace: default\ncurrent-context: kube-sim\npreferences: {{}}\n",
            self.url(),
        )
    }

    /// Bearer `token` authenticates as `user`, member of `groups` (and
    /// `system:authenticated`), whose rights are what RBAC objects grant them (same as
    /// `POST {admin_url}/tokens`). The admin token stays in `system:masters`.
    pub fn add_user_token(&self, token: &str, user: &str, groups: &[&str]) {
        self.shared.tokens().users.push(UserToken {
            token: token.to_string(),
            user: user.to_string(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            expires_at_unix: None,
        });
    }

    /// Every bearer token `<prefix><unix seconds>` authenticates as `user` (and
    /// `groups`) until that second, and is refused (401) from then on (same as `POST
    /// {admin_url}/expiring-tokens`): what a test's credential plugin issues.
    pub fn add_expiring_tokens(&self, prefix: &str, user: &str, groups: &[&str]) {
        self.shared.tokens().families.push(ExpiringTokens {
            prefix: prefix.to_string(),
            user: user.to_string(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        });
    }

    /// How many requests came with a token that had expired (each answered 401).
    pub fn expired_token_refusals(&self) -> u64 {
        self.shared.tokens().expired_refusals
    }

    /// Refuses `token` (401) from now on, before any expiry it carries: a
    /// ServiceAccount token whose ServiceAccount was deleted, a cloud session that was
    /// ended. A fault rule with `revokeToken` does the same to the token of the request
    /// it matches, at that point of a run.
    pub fn revoke_token(&self, token: &str) {
        self.shared.tokens().revoke(token);
    }

    /// The tokens revoked so far, in order of their text.
    pub fn revoked_tokens(&self) -> Vec<String> {
        self.shared.tokens().revoked.iter().cloned().collect()
    }

    /// How many requests came with a revoked token (each answered 401).
    pub fn revoked_token_refusals(&self) -> u64 {
        self.shared.tokens().revoked_refusals
    }

    /// The message of every request RBAC refused so far (each answered 403), in order
    /// (same as `GET {admin_url}/forbidden`).
    pub fn forbidden_requests(&self) -> Vec<String> {
        self.shared.forbidden().clone()
    }

    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml())
    }

    /// Adds fault rules (same as `POST {admin_url}/faults`).
    pub fn add_faults(&self, rules: impl IntoIterator<Item = FaultRule>) {
        self.shared.faults().extend(rules);
    }

    /// Fault rules still active (counted rules disappear once used up).
    pub fn faults(&self) -> Vec<FaultRule> {
        self.shared.faults().clone()
    }

    pub fn clear_faults(&self) {
        self.shared.faults().clear();
    }

    /// Requests served so far and how many of them a fault rule fired on (same as
    /// `GET {admin_url}/stats`).
    pub fn request_stats(&self) -> RequestStats {
        *self.shared.stats()
    }

    /// Requests served so far by kind of request: `"<verb> <resource>"` (with
    /// `/<subresource>`), e.g. `"get deployments"`, `"list configmaps"`, `"watch
    /// statefulsets"`, `"patch instances/status"`, and discovery by path, `"get discovery
    /// /version"`, `"get discovery /apis"` (same as `GET {admin_url}/stats/requests`).
    /// Faulted requests count too.
    pub fn request_counts(&self) -> std::collections::BTreeMap<String, u64> {
        self.shared.counts().clone()
    }

    /// Registers a file exec commands can read (same as `POST {admin_url}/exec-files`).
    pub fn add_exec_file(&self, file: ExecFile) {
        self.shared.exec_files().push(file);
    }

    /// Registers how a container of matching pods ends and what it logged (same as
    /// `POST {admin_url}/container-exits`): the pod's status shows it as a kubelet
    /// reports it, and `pods/log` serves the log.
    pub fn add_container_exit(&self, exit: ContainerExit) {
        self.shared.container_exits().push(exit);
    }

    /// The release whose built-in API versions are served.
    pub fn kubernetes_version(&self) -> Release {
        self.shared.store().registry.release()
    }

    /// Serves the built-in API versions of `release` from now on, keeping every stored
    /// object and CRD registration: the in-process equivalent of restarting the API
    /// server on another release with the same etcd (a cluster upgrade). Objects stay
    /// readable under every version the new release serves for their resource; versions
    /// it no longer serves answer 404. Open watches on such versions keep running.
    pub fn set_kubernetes_version(&self, release: Release) -> anyhow::Result<()> {
        check_release(release)?;
        let mut store = self.shared.store();
        let from = store.registry.release();
        store.registry.set_release(release);
        info!(%from, to = %release, "kube-sim serves another Kubernetes release");
        Ok(())
    }

    pub fn set_ready_delay(&self, delay: Duration) {
        self.shared.settings().ready_delay = delay;
    }

    /// Forgets retained watch events so that resuming an older resourceVersion gets 410.
    pub fn compact_events(&self) {
        self.shared.store().compact();
    }

    /// Stops serving; also done on drop.
    pub fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        for t in self.tasks.drain(..) {
            t.abort();
        }
        if let Some(th) = self.thread.take() {
            let _ = th.join();
        }
    }
}

impl Drop for KubeSim {
    fn drop(&mut self) {
        self.shutdown();
    }
}

struct Prepared {
    shared: Arc<Shared>,
    tls: tls::TlsMaterial,
}

/// Releases the table describes; others would silently serve a guess.
fn check_release(release: Release) -> anyhow::Result<()> {
    let (oldest, current) = (kube_api_versions::OLDEST, kube_api_versions::CURRENT);
    if release < oldest || release > current {
        anyhow::bail!(
            "kube-sim cannot emulate Kubernetes {release}: it knows the API versions of {oldest} to {current}"
        );
    }
    Ok(())
}

async fn prepare(cfg: &SimConfig) -> anyhow::Result<(tokio::net::TcpListener, Prepared)> {
    check_release(cfg.kubernetes_version)?;
    let tls = tls::generate()?;
    let listener = tokio::net::TcpListener::bind(cfg.bind)
        .await
        .with_context(|| format!("binding {}", cfg.bind))?;
    let shared = Arc::new(Shared::new(
        cfg.token.clone(),
        cfg.kubernetes_version,
        Settings {
            ready_delay: cfg.ready_delay,
        },
        cfg.faults.clone(),
    ));
    Ok((listener, Prepared { shared, tls }))
}

/// Runs on `obj` what creating it on a kube-sim serving `release` would run (type checks,
/// decoding, defaults, validation) without a server, and returns the API server's error
/// message when it would be refused: tests elsewhere check converted objects with it.
/// An `apiVersion`/`kind` the release does not serve is an error, worded as kubectl
/// words it. Namespaced objects are checked in their `metadata.namespace` (default
/// `default`), which is assumed to exist.
pub fn check_object(release: Release, obj: &serde_json::Value) -> Result<(), String> {
    check_release(release).map_err(|e| e.to_string())?;
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let kind = obj["kind"].as_str().unwrap_or_default();
    if api_version.is_empty() || kind.is_empty() {
        return Err("Object 'apiVersion' and 'kind' must be set".into());
    }
    let mut store = store::Store::new(release);
    controllers::bootstrap(&mut store);
    let Some(rt) = store.registry.find_kind(api_version, kind).cloned() else {
        return Err(format!(
            "no matches for kind {kind:?} in version {api_version:?}"
        ));
    };
    let opts = ops::WriteOpts {
        manager: "kube-sim-check".into(),
        dry_run: true,
    };
    let ns = obj["metadata"]["namespace"]
        .as_str()
        .filter(|n| !n.is_empty())
        .unwrap_or("default")
        .to_string();
    if rt.namespaced && store.namespace(&ns).is_none() {
        // The namespace is the caller's context, not part of what is checked.
        if let Some(ns_rt) = store.registry.find("", "v1", "namespaces").cloned() {
            let body = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            let create = ops::WriteOpts {
                dry_run: false,
                ..opts.clone()
            };
            ops::create(&mut store, &ns_rt, "", body, &create, None).map_err(|e| e.message)?;
        }
    }
    ops::create(&mut store, &rt, &ns, obj.clone(), &opts, None)
        .map(|_| ())
        .map_err(|e| e.message)
}
