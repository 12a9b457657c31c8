//! The one planning call after a run: which objects a changed parameter updates, and
//! what the plan keeps of object contents (only what `manifests` will show).

use crate::engine::{self, Contents, RunRequest, Source};
use crate::scenarios::common::*;
use kudo_plan::{Desired, Inputs};
use tokio_util::sync::CancellationToken;

/// `deploy` applies a greeting ConfigMap (which GREETING renders) and a fixed one;
/// `extra` applies a third, which `deploy` leaves as it is.
const OPERATOR: &str = r#"
name: planning
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [greeting.yaml, fixed.yaml]
  - name: more
    kind: Apply
    spec:
      resources: [extra.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: main
            tasks: [app]
  extra:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: main
            tasks: [more]
"#;

const PARAMS: &str = "parameters:\n  - name: GREETING\n    default: hello\n";

fn configmap(name: &str, data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Name }}}}-{name}\ndata: {{k: {data}}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_parameter_updates_what_it_renders_and_contents_are_copied_only_when_asked() {
    let greeting = configmap("greeting", "\"{{ .Params.GREETING }}\"");
    let fixed = configmap("fixed", "fixed");
    let extra = configmap("extra", "extra");
    let pkg = package(
        OPERATOR,
        PARAMS,
        &[
            ("greeting.yaml", greeting.as_str()),
            ("fixed.yaml", fixed.as_str()),
            ("extra.yaml", extra.as_str()),
        ],
    );
    let (_sim, cluster) = sim().await;
    let cancel = CancellationToken::new();
    let old = params(&[]);
    let deployed = engine::run_plan(
        &cluster,
        request(&pkg, "p", "default", &old, "deploy"),
        &cancel,
    )
    .await
    .expect("deploy");
    let both = engine::run_plan(
        &cluster,
        RunRequest {
            previous_inventory: &deployed.inventory,
            ..request(&pkg, "p", "default", &old, "extra")
        },
        &cancel,
    )
    .await
    .expect("extra");
    let cm = |name: &str| oref("v1", "ConfigMap", Some("default"), &format!("p-{name}"));
    assert_eq!(
        both.inventory,
        vec![cm("extra"), cm("fixed"), cm("greeting")]
    );

    let new = params(&[("GREETING", "hi")]);
    let desired = Desired::new(Inputs {
        package: &pkg,
        instance: "p",
        namespace: "default",
        parameters: &new,
        seed: None,
        dependencies: None,
    })
    .expect("walk");
    let prior = engine::Prior {
        objects: &both.inventory,
        parameters: Some(&old),
        drifted: &[],
    };
    let plan = |contents| {
        engine::plan_instance(
            &cluster,
            &desired,
            "deploy",
            &prior,
            engine::CrdSafety::default(),
            contents,
        )
    };

    let skipped = plan(Contents::Skip).await.expect("plan");
    let changes = skipped.changes.as_ref().expect("known");
    assert_eq!(
        changes.update,
        vec![cm("greeting")],
        "only what GREETING renders"
    );
    assert!(
        changes.create.is_empty() && changes.delete.is_empty(),
        "{changes:?}"
    );
    assert!(skipped.managed.is_none(), "no contents unless asked");
    assert!(
        skipped
            .planned
            .iter()
            .all(|p| p.checked && p.dry_run.is_none()),
        "verdicts, not answers: {:?}",
        skipped.planned
    );

    let kept = plan(Contents::Keep).await.expect("plan");
    assert_eq!(kept.changes, skipped.changes);
    let managed = kept.managed.expect("contents asked for");
    let content = |name: &str| {
        managed
            .0
            .iter()
            .find(|(r, _)| *r == cm(name))
            .map(|(_, source)| source.clone())
            .unwrap_or_else(|| panic!("{name} not managed: {managed:?}"))
    };
    let data = |v: &serde_json::Value| v.pointer("/data/k").cloned();
    match content("greeting") {
        Source::Applied(v) => assert_eq!(data(&v), Some("hi".into())),
        other => panic!("greeting: {other:?}"),
    }
    match content("fixed") {
        Source::Applied(v) => assert_eq!(data(&v), Some("fixed".into())),
        other => panic!("fixed: {other:?}"),
    }
    // Not applied by deploy: kept as the last run's values render it.
    match content("extra") {
        Source::Kept(Some(v)) => assert_eq!(data(&v), Some("extra".into())),
        other => panic!("extra: {other:?}"),
    }
}
