//! Transport, authentication and discovery as kube-rs uses them.

use std::time::Instant;

use crate::common::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ListParams};
use kube::discovery::{Discovery, Scope};
use kube_sim::{KubeSim, SimConfig};

// kubernetes.io/docs/concepts/overview/kubernetes-api/#discovery-api
#[tokio::test]
async fn discovery_lists_builtin_kinds_with_scope_and_subresources() {
    let (_sim, client) = start().await;
    let d = Discovery::new(client.clone())
        .run()
        .await
        .expect("discovery");
    let apps = d.get("apps").expect("apps group");
    let (ar, caps) = apps
        .recommended_resources()
        .into_iter()
        .find(|(ar, _)| ar.kind == "Deployment")
        .expect("deployments");
    assert_eq!(ar.plural, "deployments");
    assert_eq!(caps.scope, Scope::Namespaced);
    assert!(caps.subresources.iter().any(|(s, _)| s.plural == "status"));
    let core = d.get("").expect("core group");
    let ns = core
        .recommended_resources()
        .into_iter()
        .find(|(ar, _)| ar.kind == "Namespace")
        .expect("namespaces");
    assert_eq!(ns.1.scope, Scope::Cluster);
    for (api_version, kind) in [
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ("policy/v1", "PodDisruptionBudget"),
        ("batch/v1", "CronJob"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("storage.k8s.io/v1", "StorageClass"),
        ("networking.k8s.io/v1", "Ingress"),
        ("v1", "PersistentVolumeClaim"),
    ] {
        let (_, ar) = api_for(&client, api_version, kind, None).await;
        assert_eq!(ar.kind, kind);
    }
}

// kubernetes.io/docs/concepts/overview/kubernetes-api/#aggregated-discovery
#[tokio::test]
async fn aggregated_discovery_matches_plain_discovery() {
    let (_sim, client) = start().await;
    let d = Discovery::new(client)
        .run_aggregated()
        .await
        .expect("aggregated discovery");
    let apps = d.get("apps").expect("apps group");
    assert!(apps.recommended_kind("StatefulSet").is_some());
    let core = d.get("").expect("core group");
    let (ar, caps) = core.recommended_kind("ConfigMap").expect("configmaps");
    assert_eq!(ar.plural, "configmaps");
    assert_eq!(caps.scope, Scope::Namespaced);
}

// kubernetes.io/docs/reference/access-authn-authz/authentication/#anonymous-requests
#[tokio::test]
async fn requests_without_the_bearer_token_get_401() {
    let (sim, _client) = start().await;
    let mut cfg = config_for(&sim).await;
    cfg.auth_info.token = None;
    let anonymous = Client::try_from(cfg).expect("client");
    let cms: Api<ConfigMap> = Api::namespaced(anonymous, "default");
    let (code, reason, _) = api_code(
        cms.list(&ListParams::default())
            .await
            .expect_err("must be refused"),
    );
    assert_eq!((code, reason.as_str()), (401, "Unauthorized"));
}

// kubernetes.io/docs/reference/using-api/health-checks/ (version endpoint)
#[tokio::test]
async fn version_endpoint_answers() {
    let (_sim, client) = start().await;
    let v = client.apiserver_version().await.expect("version");
    assert_eq!(v.major, "1");
}

// The simulator's own contract: spawn() from a synchronous test, and record start-up time.
#[test]
fn spawn_on_background_thread_serves_and_reports_startup_time() {
    let t0 = Instant::now();
    let sim = KubeSim::spawn(SimConfig::default()).expect("spawn");
    let startup = t0.elapsed();
    eprintln!("kube-sim start-up time: {startup:?}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let client = Client::try_from(config_for(&sim).await).expect("client");
        let ns: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
        let default = ns.get("default").await.expect("default namespace exists");
        assert_eq!(
            default.status.and_then(|s| s.phase).as_deref(),
            Some("Active")
        );
    });
    drop(sim);
}

// kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/
#[tokio::test]
async fn written_kubeconfig_file_connects_a_client() {
    let sim = KubeSim::start(SimConfig::default()).await.expect("start");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&path).expect("write");
    let kc = kube::config::Kubeconfig::read_from(&path).expect("read back");
    assert_eq!(kc.current_context.as_deref(), Some("kube-sim"));
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    let client = Client::try_from(cfg).expect("client");
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.list(&ListParams::default())
        .await
        .expect("list through the file's credentials");
}
