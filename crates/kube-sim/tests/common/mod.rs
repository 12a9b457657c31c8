//! Shared helpers: a simulator plus a real kube-rs client configured from its kubeconfig.
#![allow(dead_code)]

use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, discovery};
use kube_sim::{KubeSim, SimConfig};
use serde_json::Value;

pub const MANAGER: &str = "terraform-provider-kudo";
pub const WAIT: Duration = Duration::from_secs(10);

pub async fn config_for(sim: &KubeSim) -> Config {
    let kc = Kubeconfig::from_yaml(&sim.kubeconfig_yaml()).expect("kubeconfig parses");
    Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config from kubeconfig")
}

pub async fn start_with(cfg: SimConfig) -> (KubeSim, Client) {
    let sim = KubeSim::start(cfg).await.expect("kube-sim starts");
    let client = Client::try_from(config_for(&sim).await).expect("client");
    (sim, client)
}

pub async fn start() -> (KubeSim, Client) {
    start_with(SimConfig::default()).await
}

/// Resolves a kind through discovery, as the provider does.
pub async fn api_for(
    client: &Client,
    api_version: &str,
    kind: &str,
    ns: Option<&str>,
) -> (Api<DynamicObject>, ApiResource) {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (ar, _caps) = discovery::pinned_kind(client, &gvk)
        .await
        .expect("pinned_kind");
    let api = match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    (api, ar)
}

pub fn dynamic(v: Value) -> DynamicObject {
    serde_json::from_value(v).expect("valid object")
}

/// Server-side apply with the provider's manager (forced) unless `manager` is given.
pub async fn apply(
    api: &Api<DynamicObject>,
    v: Value,
    manager: &str,
    force: bool,
) -> kube::Result<DynamicObject> {
    let name = v["metadata"]["name"].as_str().expect("name").to_string();
    let mut pp = PatchParams::apply(manager);
    pp.force = force;
    api.patch(&name, &pp, &Patch::Apply(v)).await
}

pub fn to_value(o: &DynamicObject) -> Value {
    serde_json::to_value(o).expect("serialize")
}

/// The code of an API error, panicking on other errors.
pub fn api_code(e: kube::Error) -> (u16, String, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}
