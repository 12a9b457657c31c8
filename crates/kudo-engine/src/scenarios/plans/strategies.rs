//! Serial and parallel phases and steps.

use super::*;
use crate::scenarios::common::*;
use tokio_util::sync::CancellationToken;

/// A never-ready first step does not hold back the second one when the phase is parallel:
/// the second completes while the first is still in progress. Serial never reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_steps_run_concurrently_serial_do_not() {
    let (_sim, cluster) = sim().await;
    let templates = [("slow.yaml", NEVER_READY), ("quick.yaml", QUICK)];

    let pkg = package(
        &two_step_operator("parallel"),
        "parameters: []\n",
        &templates,
    );
    let cancel = CancellationToken::new();
    let run = spawn_deploy(&cluster, &pkg, "par", &cancel);
    let quick = "/status/planStatus/deploy/phases/0/steps/1/status";
    let slow = "/status/planStatus/deploy/phases/0/steps/0/status";
    eventually("the quick step to complete", || async {
        status_of(&cluster, "default", "par", quick)
            .await
            .as_deref()
            == Some("COMPLETE")
    })
    .await;
    assert_eq!(
        status_of(&cluster, "default", "par", slow).await.as_deref(),
        Some("IN_PROGRESS")
    );
    cancel.cancel();
    let err = run.await.unwrap().expect_err("cancelled run fails");
    assert!(!err.fatal && err.is_cancelled(), "{err}");
    assert_eq!(err.step.as_deref(), Some("slow"));
    assert_eq!(
        status_of(
            &cluster,
            "default",
            "par",
            "/status/planStatus/deploy/status"
        )
        .await
        .as_deref(),
        Some("ERROR")
    );

    let pkg = package(&two_step_operator("serial"), "parameters: []\n", &templates);
    let cancel = CancellationToken::new();
    let run = spawn_deploy(&cluster, &pkg, "ser", &cancel);
    eventually("the slow step to start", || async {
        status_of(&cluster, "default", "ser", slow).await.as_deref() == Some("IN_PROGRESS")
    })
    .await;
    cancel.cancel();
    run.await.unwrap().expect_err("cancelled run fails");
    assert_eq!(
        status_of(&cluster, "default", "ser", quick)
            .await
            .as_deref(),
        Some("PENDING")
    );
    assert!(
        cluster
            .get(&oref("v1", "ConfigMap", Some("default"), "ser-quick"))
            .await
            .unwrap()
            .is_none()
    );
}
