//! A step writing objects of a kind whose CRD the step before it created, while the API
//! server has not caught up: a real server sets a new CRD's `Established` condition and
//! publishes its group-version in discovery from two controllers, so discovery may
//! still answer 404 for the group-version once the CRD is established, and the
//! resource's handler may see the definition a moment after we do. kube-sim catches up
//! at once; its fault rules stand in for the lag.

use kube_sim::FaultRule;

use crate::engine::LABEL_INSTANCE;
use crate::scenarios::common::*;

const OPERATOR: &str = r#"
name: lag
operatorVersion: 1.0.0
tasks:
  - name: crd
    kind: Apply
    spec:
      resources: [crd.yaml]
  - name: gadget
    kind: Apply
    spec:
      resources: [gadget.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: crd
            tasks: [crd]
          - name: gadget
            tasks: [gadget]
"#;

const GADGET: &str = r#"
apiVersion: lag.example.com/v1
kind: Gadget
metadata:
  name: {{ .Name }}-gadget
spec:
  size: 1
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kind_of_a_crd_just_established_is_written_while_discovery_lags() {
    let (sim, cluster) = sim().await;
    let crd = serde_json::to_string(&open_crd("lag.example.com", "v1", "Gadget", "gadgets"))
        .expect("crd text");
    let pkg = package(
        OPERATOR,
        "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
        &[("crd.yaml", &crd), ("gadget.yaml", GADGET)],
    );
    sim.add_faults([
        // Discovery never lists the new group-version during the run.
        FaultRule {
            verb: Some("get".into()),
            resource: Some(kube_sim::DISCOVERY.into()),
            name: Some("/apis/lag.example.com/v1".into()),
            status: Some(404),
            ..Default::default()
        },
        // And the resource's handler answers the first write as not served.
        FaultRule {
            verb: Some("patch".into()),
            resource: Some("gadgets".into()),
            status: Some(404),
            count: Some(1),
            ..Default::default()
        },
    ]);
    let values = params(&[]);
    let outcome = bounded(run(
        &cluster,
        request(&pkg, "app", "default", &values, "deploy"),
    ))
    .await
    .unwrap_or_else(|e| panic!("the gadget step failed: {e}"));
    assert_eq!(
        outcome.plan_status["status"], "COMPLETE",
        "{:#}",
        outcome.plan_status
    );
    let gadget = cluster
        .get(&oref(
            "lag.example.com/v1",
            "Gadget",
            Some("default"),
            "app-gadget",
        ))
        .await
        .expect("read the gadget")
        .expect("the gadget was written");
    assert_eq!(label(&gadget, LABEL_INSTANCE), Some("app"));
}
