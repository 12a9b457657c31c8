//! The floor under a big instance's apply (#48 item 5): the same ConfigMaps server-side
//! applied straight from this process with kube-rs, the client library the provider
//! uses, with 16 requests in flight (the provider's default `max_requests_in_flight`),
//! no Terraform and no KUDO objects. Each run gets a fresh cluster (kube-sim with the
//! same per-request delay) or a fresh namespace, as the Terraform runs do.

use std::path::Path;
use std::time::Instant;

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::cluster::{Cluster, Target};
use crate::stats::{Sample, ms};

/// Requests waiting for the API server at once: the provider's default.
const IN_FLIGHT: usize = 16;

/// One run: a fresh cluster or namespace, `count` ConfigMaps applied, timed from the
/// client's creation (its TLS handshake included, as the provider's is) to the last
/// answer.
pub fn measure_once(
    rt: &tokio::runtime::Runtime,
    target: &Target,
    count: usize,
    into: &mut Sample,
) {
    let dir = tempfile::tempdir().expect("temp dir");
    let cluster = Cluster::start(rt, target, dir.path());
    let objects = crate::configmaps::objects(count);
    let took = rt.block_on(async {
        let started = Instant::now();
        let api = configmaps(cluster.kubeconfig(), cluster.namespace()).await;
        let params = PatchParams::apply("kudo-bench-direct").force();
        let answers: Vec<_> = futures::stream::iter(objects.iter())
            .map(|object| {
                let name = object["metadata"]["name"].as_str().unwrap_or_default();
                let api = &api;
                let params = &params;
                async move { api.patch(name, params, &Patch::Apply(object)).await }
            })
            .buffer_unordered(IN_FLIGHT)
            .collect()
            .await;
        let took = started.elapsed();
        if let Some(Err(e)) = answers.iter().find(|a| a.is_err()) {
            panic!("direct server-side apply failed: {e}");
        }
        took
    });
    eprintln!(
        "[bench] direct server-side apply, {count} ConfigMaps: {}",
        ms(took)
    );
    into.push(took);
}

async fn configmaps(kubeconfig: &Path, namespace: &str) -> Api<DynamicObject> {
    let config = Kubeconfig::read_from(kubeconfig).expect("read kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig");
    let client = kube::Client::try_from(config).expect("client");
    let resource = ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
    };
    Api::namespaced_with(client, namespace, &resource)
}

/// `terraform apply` of N objects against the direct apply of the same N, per target:
/// medians over the runs. Two passes (the apply plans again before it writes) is the
/// honest floor; #48's target is at most 2.5x at 1,000 objects. The apply after a
/// `terraform plan` (the user's review) and the apply alone (`-auto-approve`, no plan
/// before it, nothing kept from one) are both shown.
pub fn print_comparison(rows: &[(usize, u64, &Sample, &Sample, &Sample)]) {
    println!(
        "\n| N | latency | `terraform apply` (create) after `terraform plan` | `terraform apply` alone | direct server-side apply, {IN_FLIGHT} in flight | ratio after a plan | ratio alone |"
    );
    println!("|---|---|---|---|---|---|---|");
    let ratio = |terraform: &Sample, direct: &Sample| match terraform.is_empty() {
        true => "—".to_string(),
        false => format!(
            "{:.2}x",
            terraform.median().as_secs_f64() / direct.median().as_secs_f64().max(1e-9)
        ),
    };
    for (count, latency_ms, terraform, alone, direct) in rows {
        println!(
            "| {count} | {latency_ms} ms | {terraform} | {alone} | {direct} | {} | {} |",
            ratio(terraform, direct),
            ratio(alone, direct)
        );
    }
}
