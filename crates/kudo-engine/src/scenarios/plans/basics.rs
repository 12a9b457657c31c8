//! Connecting, the KUDO CRDs, and cancellation against a hanging API server.

use super::*;
use crate::cluster::{Cluster, ClusterError, ConnectionSettings};
use crate::scenarios::common::*;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kudo_crds_are_installed_once_and_resolvable() {
    let (_sim, cluster) = sim().await;
    cluster
        .ensure_kudo_crds()
        .await
        .expect("second ensure is a no-op");
    for kind in ["Operator", "OperatorVersion", "Instance"] {
        assert!(
            cluster
                .is_namespaced("kudo.dev/v1beta1", kind)
                .await
                .unwrap(),
            "{kind}"
        );
    }
    let err = cluster
        .is_namespaced("example.com/v1", "Nope")
        .await
        .unwrap_err();
    assert!(matches!(err, ClusterError::UnknownKind { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_file_and_unreachable_host() {
    let sim = kube_sim::KubeSim::start(kube_sim::SimConfig::default())
        .await
        .unwrap();
    let path = temp_dir("kc").join("config");
    sim.write_kubeconfig(&path).unwrap();
    let s = ConnectionSettings {
        config_path: Some(path.to_string_lossy().into()),
        ..Default::default()
    };
    Cluster::connect(&s)
        .await
        .expect("connect through kubeconfig");

    let s = ConnectionSettings {
        host: Some("https://127.0.0.1:1".into()),
        insecure: true,
        ..Default::default()
    };
    let err = Cluster::connect(&s).await.unwrap_err();
    assert!(matches!(err, ClusterError::Unreachable { .. }), "{err}");
    assert!(err.to_string().contains("https://127.0.0.1:1"), "{err}");
}

/// A server that never answers must not outlive cancellation (the Terraform timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_beats_a_hanging_api_server() {
    let (sim, cluster) = sim().await;
    let pkg = package(
        &two_step_operator("serial"),
        "parameters: []\n",
        &[("slow.yaml", NEVER_READY), ("quick.yaml", QUICK)],
    );
    sim.add_faults([kube_sim::FaultRule {
        verb: Some("get".into()),
        resource: Some("deployments".into()),
        hang: true,
        ..Default::default()
    }]);
    let cancel = CancellationToken::new();
    let run = spawn_deploy(&cluster, &pkg, "h", &cancel);
    // The first read of the Deployment hangs: the run's check of every object before it
    // writes reads it (is it someone else's?), so that is where it hangs now.
    eventually("a read of the Deployment to hang", || async {
        sim.request_counts()
            .get("get deployments")
            .is_some_and(|n| *n >= 1)
    })
    .await;
    cancel.cancel();
    let result = tokio::time::timeout(std::time::Duration::from_secs(20), run)
        .await
        .expect("run_plan returned after cancellation despite the hanging server")
        .unwrap();
    let err = result.expect_err("cancelled");
    assert!(err.is_cancelled() && !err.fatal, "{err}");
}
