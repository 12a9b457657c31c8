//! The cluster under test (kube-sim in this process, or a real one) and a small client
//! for assertions, independent of the provider's own client code.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{self, Discovery, Scope, verbs};
use serde_json::{Value, json};

/// Where the cluster comes from.
pub enum Backend {
    /// kube-sim started by this test; stopped when dropped.
    Sim(kube_sim::KubeSim),
    /// `KUDO_TEST_KUBECONFIG`: a real cluster shared by all tests.
    Real,
}

/// A cluster plus a kubeconfig file the provider can read.
pub struct TestCluster {
    pub backend: Backend,
    pub kubeconfig: PathBuf,
    pub kube: Kube,
}

impl TestCluster {
    /// kube-sim, unless `KUDO_TEST_KUBECONFIG` names a real cluster's kubeconfig.
    /// kube-sim serves the API versions of `KUDO_TEST_KUBE_VERSION` (for example `1.24`;
    /// default: the newest release it knows). `dir` receives the stand-in's kubeconfig.
    pub fn start(dir: &Path) -> TestCluster {
        if let Some(path) = real_kubeconfig() {
            let kube = Kube::connect(&path);
            return TestCluster {
                backend: Backend::Real,
                kubeconfig: path,
                kube,
            };
        }
        let cfg = kube_sim::SimConfig {
            kubernetes_version: sim_kube_version(),
            ..kube_sim::SimConfig::default()
        };
        let sim = kube_sim::KubeSim::spawn(cfg)
            .unwrap_or_else(|e| panic!("kube-sim did not start: {e:#}"));
        let kubeconfig = dir.join("kubeconfig.yaml");
        std::fs::write(&kubeconfig, sim.kubeconfig_yaml())
            .unwrap_or_else(|e| panic!("write {}: {e}", kubeconfig.display()));
        let kube = Kube::connect(&kubeconfig);
        TestCluster {
            backend: Backend::Sim(sim),
            kubeconfig,
            kube,
        }
    }

    pub fn is_real(&self) -> bool {
        matches!(self.backend, Backend::Real)
    }

    /// The running kube-sim starts serving `release`'s API versions with every stored
    /// object kept (a cluster upgrade). Tests that upgrade cannot run on a real cluster:
    /// check [`TestCluster::is_real`] and skip first; this panics there.
    #[track_caller]
    pub fn upgrade_to(&self, release: kube_sim::Release) {
        match &self.backend {
            Backend::Sim(sim) => sim
                .set_kubernetes_version(release)
                .unwrap_or_else(|e| panic!("upgrade to {release}: {e:#}")),
            Backend::Real => panic!(
                "upgrade_to({release}) needs kube-sim; skip this test on a real cluster (is_real())"
            ),
        }
    }
}

/// `KUDO_TEST_KUBE_VERSION` (`1.24`, `v1.29`, ...), else the newest release kube-sim
/// knows. A value kube-sim cannot emulate fails the test run rather than silently
/// testing another release.
pub fn sim_kube_version() -> kube_sim::Release {
    match std::env::var("KUDO_TEST_KUBE_VERSION") {
        Ok(v) if !v.trim().is_empty() => v
            .parse()
            .unwrap_or_else(|e| panic!("KUDO_TEST_KUBE_VERSION: {e}")),
        _ => kube_sim::CURRENT,
    }
}

/// `KUDO_TEST_KUBECONFIG`, when set and not empty.
pub fn real_kubeconfig() -> Option<PathBuf> {
    std::env::var_os("KUDO_TEST_KUBECONFIG")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// An object as the assertions name it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl std::fmt::Display for ObjRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {} {ns}/{}", self.api_version, self.kind, self.name),
            None => write!(f, "{} {} {}", self.api_version, self.kind, self.name),
        }
    }
}

/// Blocking wrapper over a kube-rs client: tests are plain `#[test]` functions, and the
/// client's background tasks live on this runtime.
pub struct Kube {
    rt: tokio::runtime::Runtime,
    client: kube::Client,
}

impl Kube {
    #[track_caller]
    pub fn connect(kubeconfig: &Path) -> Kube {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("tokio runtime");
        let client = rt
            .block_on(async {
                let kc = Kubeconfig::read_from(kubeconfig)?;
                let config =
                    kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
                anyhow::Ok(kube::Client::try_from(config)?)
            })
            .unwrap_or_else(|e| panic!("kube client from {}: {e:#}", kubeconfig.display()));
        Kube { rt, client }
    }

    fn resource(&self, api_version: &str, kind: &str) -> anyhow::Result<(ApiResource, Scope)> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (ar, caps) = self
            .rt
            .block_on(discovery::pinned_kind(&self.client, &gvk))?;
        Ok((ar, caps.scope))
    }

    fn api(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> anyhow::Result<Api<DynamicObject>> {
        let (ar, scope) = self.resource(api_version, kind)?;
        Ok(match (scope, namespace) {
            (Scope::Namespaced, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &ar),
            _ => Api::all_with(self.client.clone(), &ar),
        })
    }

    /// One object as JSON, `None` when it does not exist (or its kind is unknown to
    /// the server, which for a test means the same thing).
    #[track_caller]
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let api = match self.api(api_version, kind, namespace) {
            Ok(api) => api,
            Err(e) if is_unknown_kind(&e) => return None,
            Err(e) => panic!("discovery of {api_version} {kind}: {e:#}"),
        };
        self.rt
            .block_on(api.get_opt(name))
            .unwrap_or_else(|e| panic!("get {api_version} {kind} {namespace:?}/{name}: {e:#}"))
            .map(|o| serde_json::to_value(o).expect("object to JSON"))
    }

    /// As [`Kube::get`], panicking with a clear message when the object is missing.
    #[track_caller]
    pub fn must_get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Value {
        self.get(api_version, kind, namespace, name).unwrap_or_else(|| {
            panic!(
                "expected {api_version} {kind} {}/{name} to exist; objects in the namespace: {:#?}",
                namespace.unwrap_or("-"),
                namespace.map(|ns| self.list_namespace(ns, None)).unwrap_or_default()
            )
        })
    }

    /// Whether the server serves `kind` at `api_version` (its discovery says so).
    #[track_caller]
    pub fn serves(&self, api_version: &str, kind: &str) -> bool {
        match self.resource(api_version, kind) {
            Ok(_) => true,
            Err(e) if is_unknown_kind(&e) => false,
            Err(e) => panic!("discovery of {api_version} {kind}: {e:#}"),
        }
    }

    /// The KUDO Instance object.
    pub fn instance(&self, namespace: &str, name: &str) -> Option<Value> {
        self.get("kudo.dev/v1beta1", "Instance", Some(namespace), name)
    }

    /// Every object in `namespace` of every listable namespaced kind, optionally
    /// filtered by a label selector (`kudo.dev/instance=web`). Uses full discovery,
    /// so it also sees kinds we did not think of.
    #[track_caller]
    pub fn list_namespace(&self, namespace: &str, selector: Option<&str>) -> BTreeSet<ObjRef> {
        self.rt
            .block_on(async {
                let discovery = discover_all(&self.client).await?;
                let mut found = BTreeSet::new();
                for group in discovery.groups() {
                    for (ar, caps) in group.recommended_resources() {
                        if caps.scope != Scope::Namespaced || !caps.supports_operation(verbs::LIST)
                        {
                            continue;
                        }
                        let api: Api<DynamicObject> =
                            Api::namespaced_with(self.client.clone(), namespace, &ar);
                        let mut lp = ListParams::default();
                        if let Some(s) = selector {
                            lp = lp.labels(s);
                        }
                        // Some aggregated kinds cannot be listed (e.g. metrics without a
                        // metrics server); they cannot hold our objects either.
                        let Ok(list) = api.list(&lp).await else {
                            continue;
                        };
                        for o in list {
                            found.insert(ObjRef {
                                api_version: ar.api_version.clone(),
                                kind: ar.kind.clone(),
                                namespace: Some(namespace.to_string()),
                                name: o.metadata.name.unwrap_or_default(),
                            });
                        }
                    }
                }
                anyhow::Ok(found)
            })
            .unwrap_or_else(|e| panic!("list objects in {namespace}: {e:#}"))
    }

    /// Every cluster-scoped object of every listable kind matching a label selector
    /// (`kudo.dev/instance=web`), found through full discovery like
    /// [`Kube::list_namespace`].
    #[track_caller]
    pub fn list_cluster(&self, selector: &str) -> BTreeSet<ObjRef> {
        self.rt
            .block_on(async {
                let discovery = discover_all(&self.client).await?;
                let mut found = BTreeSet::new();
                for group in discovery.groups() {
                    for (ar, caps) in group.recommended_resources() {
                        if caps.scope != Scope::Cluster || !caps.supports_operation(verbs::LIST) {
                            continue;
                        }
                        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
                        let Ok(list) = api.list(&ListParams::default().labels(selector)).await
                        else {
                            continue;
                        };
                        for o in list {
                            found.insert(ObjRef {
                                api_version: ar.api_version.clone(),
                                kind: ar.kind.clone(),
                                namespace: None,
                                name: o.metadata.name.unwrap_or_default(),
                            });
                        }
                    }
                }
                anyhow::Ok(found)
            })
            .unwrap_or_else(|e| panic!("list cluster-scoped objects ({selector}): {e:#}"))
    }

    /// Server-side applies `obj` as `kubectl apply --server-side` would (field manager
    /// `kubectl`): how a test creates objects without the provider.
    #[track_caller]
    pub fn apply(&self, obj: &Value) -> Value {
        let api_version = obj["apiVersion"].as_str().expect("apiVersion");
        let kind = obj["kind"].as_str().expect("kind");
        let name = obj["metadata"]["name"].as_str().expect("metadata.name");
        let namespace = obj["metadata"]["namespace"].as_str();
        let api = self
            .api(api_version, kind, namespace)
            .unwrap_or_else(|e| panic!("discovery of {api_version} {kind}: {e:#}"));
        let params = PatchParams::apply("kubectl").force();
        let applied = self
            .rt
            .block_on(api.patch(name, &params, &Patch::Apply(obj)))
            .unwrap_or_else(|e| panic!("apply {kind} {name}: {e:#}"));
        serde_json::to_value(applied).expect("object to JSON")
    }

    /// Server-side applies every document of a YAML file (`kubectl apply
    /// --server-side -f`), in order; returns the objects as applied.
    #[track_caller]
    pub fn apply_yaml(&self, text: &str) -> Vec<Value> {
        kudo_yaml::to_json_documents(text)
            .unwrap_or_else(|e| panic!("YAML documents: {e}"))
            .iter()
            .filter(|d| d.is_object())
            .map(|d| self.apply(d))
            .collect()
    }

    /// A token of ServiceAccount `namespace/name` from the TokenRequest API, valid for
    /// `seconds` (`kubectl create token NAME -n NAMESPACE --duration`).
    #[track_caller]
    pub fn create_token(&self, namespace: &str, name: &str, seconds: u64) -> String {
        let body = json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds},
        });
        let request = http::Request::post(format!(
            "/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
        ))
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&body).expect("TokenRequest body"))
        .expect("TokenRequest request");
        let answer: Value = self
            .rt
            .block_on(self.client.request(request))
            .unwrap_or_else(|e| panic!("TokenRequest for {namespace}/{name}: {e:#}"));
        answer["status"]["token"]
            .as_str()
            .unwrap_or_else(|| panic!("TokenRequest answer without a token: {answer}"))
            .to_string()
    }

    /// Merge-patches the status subresource, as a controller (here: KUDO's manager)
    /// writes status.
    #[track_caller]
    pub fn patch_status(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
        status: &Value,
    ) {
        let api = self
            .api(api_version, kind, namespace)
            .unwrap_or_else(|e| panic!("discovery of {api_version} {kind}: {e:#}"));
        self.rt
            .block_on(api.patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            ))
            .unwrap_or_else(|e| panic!("patch status of {kind} {name}: {e:#}"));
    }

    /// Whether the cluster has a node, so that DaemonSets are scheduled and their
    /// controller reports on them: a real API server run without a kubelet has
    /// none (and its daemonset controller is off). kube-sim reports on DaemonSets itself.
    #[track_caller]
    pub fn has_nodes(&self) -> bool {
        let api = self.api("v1", "Node", None).expect("discover nodes");
        let list = self
            .rt
            .block_on(api.list(&ListParams::default().limit(1)))
            .unwrap_or_else(|e| panic!("list nodes: {e:#}"));
        !list.items.is_empty()
    }

    /// Merge-patches an object, as `kubectl patch --type merge` (someone else's change).
    #[track_caller]
    pub fn patch_merge(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
        patch: &Value,
    ) {
        let api = self
            .api(api_version, kind, namespace)
            .unwrap_or_else(|e| panic!("discovery of {api_version} {kind}: {e:#}"));
        self.rt
            .block_on(api.patch(name, &PatchParams::default(), &Patch::Merge(patch)))
            .unwrap_or_else(|e| panic!("patch {kind} {name}: {e:#}"));
    }

    /// Creates a namespace (the provider expects it to exist, as a user's would).
    #[track_caller]
    pub fn create_namespace(&self, name: &str) {
        let api = self
            .api("v1", "Namespace", None)
            .expect("discover namespaces");
        let ns: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": { "name": name, "labels": { "app.kubernetes.io/created-by": "kudo-acceptance-tests" } }
        }))
        .expect("namespace object");
        self.rt
            .block_on(api.create(&PostParams::default(), &ns))
            .unwrap_or_else(|e| panic!("create namespace {name}: {e:#}"));
    }

    /// Starts deleting a namespace; does not wait (a real cluster may take a while and
    /// nothing after the test depends on it).
    pub fn delete_namespace(&self, name: &str) {
        if let Ok(api) = self.api("v1", "Namespace", None) {
            let _ = self
                .rt
                .block_on(api.delete(name, &DeleteParams::background()));
        }
    }

    /// Deletes one object as `kubectl delete` would (background propagation) and waits
    /// until the server no longer has it.
    #[track_caller]
    pub fn delete(&self, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) {
        let api = self
            .api(api_version, kind, namespace)
            .unwrap_or_else(|e| panic!("discovery of {api_version} {kind}: {e:#}"));
        self.rt
            .block_on(api.delete(name, &DeleteParams::background()))
            .unwrap_or_else(|e| panic!("delete {kind} {name}: {e:#}"));
        self.wait_for(
            &format!("{kind} {name} to be gone"),
            Duration::from_secs(60),
            |k| {
                k.get(api_version, kind, namespace, name)
                    .is_none()
                    .then_some(())
            },
        );
    }

    /// Polls `check` until it returns `Some`, up to `timeout`; for state the cluster
    /// reaches on its own after Terraform returned (e.g. garbage collection).
    #[track_caller]
    pub fn wait_for<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut check: impl FnMut(&Kube) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(v) = check(self) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {timeout:?} waiting for {what}"
            );
            // Polling interval between checks of a condition, not a synchronisation sleep.
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

fn is_unknown_kind(e: &anyhow::Error) -> bool {
    match e.downcast_ref::<kube::Error>() {
        Some(kube::Error::Discovery(_)) => true,
        Some(kube::Error::Api(status)) => status.code == 404,
        _ => false,
    }
}

/// Full discovery, started again when a group listed by `/apis` vanished before its
/// versions were read (a test on the same cluster deleted its CRD meanwhile: 404).
async fn discover_all(client: &kube::Client) -> anyhow::Result<Discovery> {
    let mut attempt = 1;
    loop {
        match Discovery::new(client.clone()).run().await {
            Err(kube::Error::Api(s)) if s.code == 404 && attempt < 5 => attempt += 1,
            other => return Ok(other?),
        }
    }
}
