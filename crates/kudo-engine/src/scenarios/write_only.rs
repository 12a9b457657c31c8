//! Write-only values (`ApplyRequest::write_only`, `PlanChangeRequest::write_only`),
//! against kube-sim: a create takes the configured values; a change whose version did
//! not change reads the stored ones back from the instance's Secret, at plan and at
//! apply, and hands them to a rollback whose package declares them; a name also set as
//! a parameter is refused before anything is written. Each action hands its caller the
//! values it used (for redaction).

use std::collections::BTreeMap;
use std::time::Duration;

use kudo_package::Package;
use kudo_plan::write_only::{StoredIn, WriteOnlyRequest, WriteOnlySource};
use kudo_plan::{ChangeRequest, PriorInstance, RunStatus, Seed};
use tokio_util::sync::CancellationToken;

use super::apply_failure::{FAILING_MIGRATION, V1, V2, apply_request};
use crate::cluster::Cluster;
use crate::engine::{
    self, ApplyAnswer, ApplyRequest, CrdSafety, OnFailure, PlanChangeRequest, PlanRefusal,
    TreeRecord,
};
use crate::scenarios::common::*;

/// `PASSWORD` is required: a run without it fails its render. The packages are
/// `apply_failure`'s 1.0.0 and 2.0.0 (whose Job fails) with these values.
const PARAMS: &str = r#"
parameters:
  - name: PASSWORD
    required: true
"#;

const CM: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-vault
data:
  password: {{ .Params.PASSWORD | quote }}
"#;

const FIRST: &str = "first-wo-value";
const SECOND: &str = "second-wo-value";

async fn password(cluster: &Cluster) -> Option<String> {
    let r = oref("v1", "ConfigMap", Some("default"), "l-vault");
    let cm = cluster.get(&r).await.expect("read")?;
    cm.pointer("/data/password")
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

/// Runs `req`, answering the engine's answer and the sensitive values the run used.
async fn apply(
    cluster: &Cluster,
    req: &ApplyRequest<'_>,
) -> (Result<ApplyAnswer, PlanRefusal>, BTreeMap<String, String>) {
    bounded(engine::apply_change(
        cluster,
        req,
        &CancellationToken::new(),
        |ran, answer| (answer, ran.sensitive.clone()),
    ))
    .await
}

/// The write-only request of an update of `l` whose version did not change.
fn kept<'a>(
    configured: &'a BTreeMap<String, String>,
    listed: &'a BTreeMap<String, String>,
) -> WriteOnlyRequest<'a> {
    WriteOnlyRequest {
        source: WriteOnlySource::Stored,
        configured: Some(configured),
        stored: Some(StoredIn {
            namespace: "default",
            name: "l",
            listed,
        }),
    }
}

/// The sensitive values, all values and prior values an update of `l` (to `pkg`, over
/// a prior that ran `pkg` with no values) is planned with.
async fn planned_values(
    cluster: &Cluster,
    pkg: &Package,
    write_only: WriteOnlyRequest<'_>,
) -> [Option<BTreeMap<String, String>>; 3] {
    let none = params(&[]);
    let name = pkg.operator_version_name();
    let change = ChangeRequest {
        name: Some("l"),
        namespace: "default",
        operator_version: Some(&name),
        package: Some(pkg),
        parameters: Some(&none),
        sensitive: &none,
        plan_triggers: None,
        seed: Seed::Known(None),
        resolution: None,
        prior: Some(PriorInstance {
            operator_version: Some(&name),
            package: Some(pkg),
            parameters: Some(&none),
            last_plan: Some("deploy"),
            status: Some(RunStatus::parse(Some(RunStatus::COMPLETE))),
            digest: None,
            plan_triggers: None,
            children: None,
        }),
        replacing: false,
        allow_downgrade: false,
    };
    let record = TreeRecord::default();
    let request = PlanChangeRequest {
        change: &change,
        objects: &[],
        record: &record,
        fresh: false,
        crd_safety: CrdSafety::default(),
        manifests: false,
        must_not_exist: false,
        create_namespace: false,
        operator_namespace: Some("default"),
        prior_operator_namespace: Some("default"),
        write_only: Some(write_only),
    };
    let seen = |change: &ChangeRequest<'_>, _: Result<engine::Planned<'_>, PlanRefusal>| {
        [
            Some(change.sensitive.clone()),
            change.parameters.cloned(),
            change.prior.as_ref().and_then(|p| p.parameters.cloned()),
        ]
    };
    bounded(engine::plan_change(Some(cluster), &request, seen)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_only_values_are_taken_then_read_back_and_handed_to_a_rollback() {
    let v1 = package(V1, PARAMS, &[("cm.yaml", CM)]);
    let v2 = package(
        V2,
        PARAMS,
        &[("cm.yaml", CM), ("job.yaml", FAILING_MIGRATION)],
    );
    let (_sim, cluster) = sim().await;
    let none = params(&[]);
    let first = params(&[("PASSWORD", FIRST)]);
    let second = params(&[("PASSWORD", SECOND)]);

    // A create takes the configured values.
    let create = ApplyRequest {
        write_only: Some(WriteOnlyRequest {
            source: WriteOnlySource::Configured,
            configured: Some(&first),
            stored: None,
        }),
        ..apply_request(&v1, &none, &[], OnFailure::Stay)
    };
    let (created, used) = apply(&cluster, &create).await;
    let Ok(ApplyAnswer::Ran(created)) = created else {
        panic!("the create ran: {created:?}");
    };
    created.run.as_ref().expect("the create's run");
    assert_eq!(used, first, "the values the create used");
    assert_eq!(password(&cluster).await.as_deref(), Some(FIRST));
    let previous: Vec<_> = created.objects.iter().map(|(r, _, _)| r.clone()).collect();

    // Another value configured without a new version: the plan compares with the
    // stored value, for the change and its prior alike.
    let [sensitive, all, prior] = planned_values(&cluster, &v1, kept(&second, &none)).await;
    assert_eq!(sensitive, Some(first.clone()), "planned sensitive values");
    assert_eq!(all, Some(first.clone()), "planned values");
    assert_eq!(prior, Some(first.clone()), "prior values");

    // Its apply runs v2 with the stored value; v2 fails, and the rollback to v1 (given
    // no sensitive values) gets the write-only value v1 declares.
    let back = OnFailure::RollBack {
        package: &v1,
        resolution: None,
        plan: "deploy",
        public: &none,
        sensitive: &none,
        operator_namespace: "default",
        manifests: false,
        timeout: Duration::from_secs(60),
    };
    let update = ApplyRequest {
        write_only: Some(kept(&second, &none)),
        ..apply_request(&v2, &none, &previous, back)
    };
    let (answer, used) = apply(&cluster, &update).await;
    assert_eq!(used, first, "the update ran with the stored value");
    let Ok(ApplyAnswer::RolledBack { failed, rolled }) = answer else {
        panic!("the failed update was rolled back: {answer:?}");
    };
    assert!(failed.run.is_err(), "the update's run failed");
    let rolled = (*rolled).expect("the rollback started");
    rolled.applied.run.as_ref().expect("the rollback's run");
    assert_eq!(rolled.applied.package.operator.operator_version, "1.0.0");
    assert_eq!(password(&cluster).await.as_deref(), Some(FIRST));

    // A write-only name also set as a parameter: refused, nothing written.
    let both = params(&[("PASSWORD", "public-value")]);
    let twice = ApplyRequest {
        write_only: Some(WriteOnlyRequest {
            source: WriteOnlySource::Configured,
            configured: Some(&second),
            stored: None,
        }),
        ..apply_request(&v1, &both, &previous, OnFailure::Stay)
    };
    let (refused, _) = apply(&cluster, &twice).await;
    let Err(refusal @ PlanRefusal::WriteOnlySetTwice(_)) = refused else {
        panic!("a name set twice is refused: {refused:?}");
    };
    assert!(!refusal.to_string().contains(SECOND), "{refusal}");
    assert_eq!(password(&cluster).await.as_deref(), Some(FIRST));
}
