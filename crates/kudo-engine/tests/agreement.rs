//! Plan and apply cannot drift apart: for every fixture package and generated parameter
//! sets, what the plan's preview says a run creates and deletes is what the run does,
//! and an offline plan fails exactly when the run fails for a reason that needs no
//! cluster, with the same text, before anything is applied.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::*;
use kudo_engine::cluster::{Cluster, ObjectRef};
use kudo_engine::engine::{self, LABEL_INSTANCE, PreviewAction};
use kudo_package::{Package, TaskSpec};
use tokio_util::sync::CancellationToken;

/// Packages whose deploy plan runs on kube-sim without dependencies resolved elsewhere.
const PACKAGES: &[&str] = &[
    "cowsay",
    "first-operator",
    "flink",
    "kafka",
    "mysql",
    "redis",
    "zookeeper",
];

/// Values a Toggle parameter gets across the generated cases: both booleans in Go's
/// other spellings too, and what KUDO refuses.
const SWITCH_VALUES: &[&str] = &["true", "false", "T", "0", "maybe", "yes"];

/// A small deterministic generator (xorshift): the same cases on every run, so that a
/// failure is reproducible from its seed alone.
struct Cases(u64);

impl Cases {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        let n = from.len() as u64;
        from[(self.next() % n) as usize]
    }
}

/// Parameters a Toggle task of the package reads.
fn switch_parameters(pkg: &Package) -> BTreeSet<String> {
    pkg.operator
        .tasks
        .iter()
        .filter_map(|t| match &t.spec {
            TaskSpec::Toggle { parameter, .. } => Some(parameter.clone()),
            _ => None,
        })
        .collect()
}

/// Serves every file the package's Pipe tasks read (kube-sim runs no containers).
fn serve_pipe_files(sim: &kube_sim::KubeSim, pkg: &Package, namespace: &str) {
    for task in &pkg.operator.tasks {
        if let TaskSpec::Pipe { pipe, .. } = &task.spec {
            for p in pipe {
                let path = p.file.clone().or(p.env_file.clone()).unwrap_or_default();
                sim.add_exec_file(kube_sim::ExecFile {
                    namespace: namespace.into(),
                    pod: None,
                    selector: None,
                    path,
                    content: "A=1\n".into(),
                });
            }
        }
    }
}

/// Objects labelled with the instance, by stored-object identity.
async fn labelled(cluster: &Cluster, namespace: &str, instance: &str) -> Vec<ObjectRef> {
    cluster
        .list_labelled(namespace, &format!("{LABEL_INSTANCE}={instance}"))
        .await
        .expect("list labelled objects")
        .iter()
        .filter_map(|o| ObjectRef::from_object(o).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_and_run_agree_for_every_fixture_package() {
    if fixtures().is_none() {
        return;
    }
    let (sim, cluster) = sim().await;
    let cluster = cluster.with_translator(kube_api_versions::Translator::default());
    let mut cases = Cases(0x5eed_cafe_f00d_0001);
    let mut checked = 0;
    let mut refused = 0;
    for name in PACKAGES {
        let Some(pkg) = fixture_package(name) else {
            return;
        };
        let ns = format!("agree-{name}");
        namespace(&cluster, &ns).await;
        serve_pipe_files(&sim, &pkg, &ns);
        engine::install_operator(&cluster, &pkg, &ns)
            .await
            .expect("install operator");
        let switches = switch_parameters(&pkg);
        // The defaults, then generated values for every switch.
        let count = if switches.is_empty() { 1 } else { 3 };
        for case in 0..count {
            let values: BTreeMap<String, String> = switches
                .iter()
                .filter(|_| case > 0)
                .map(|p| (p.clone(), cases.pick(SWITCH_VALUES).to_string()))
                .collect();
            let instance = format!("c{case}");
            let what = format!("{name} {values:?}");
            let req = request(&pkg, &instance, &ns, &values, "deploy");
            let offline = engine::render_plan(&pkg, &instance, &ns, &values, "deploy");
            let preview = engine::preview_plan(&cluster, req).await;
            let run = bounded(engine::run_plan(&cluster, req, &CancellationToken::new())).await;
            match (&offline, &run) {
                (Err(plan_error), Err(run_error)) => {
                    assert_eq!(
                        plan_error.to_string(),
                        run_error.to_string(),
                        "{what}: the plan and the run fail in other words"
                    );
                    assert!(plan_error.fatal, "{what}: {plan_error}");
                    assert!(preview.is_err(), "{what}: the preview passed: {preview:?}");
                    // Refused before anything was applied: only the Instance records it.
                    let left: Vec<ObjectRef> = labelled(&cluster, &ns, &instance)
                        .await
                        .into_iter()
                        .filter(|r| r.kind != "Instance")
                        .collect();
                    assert!(left.is_empty(), "{what}: applied {left:?}");
                    refused += 1;
                }
                (Err(e), Ok(_)) => panic!("{what}: the plan fails ({e}) but the run succeeds"),
                (Ok(_), Err(e)) if e.fatal && e.object.is_none() && !e.is_cancelled() => {
                    panic!(
                        "{what}: the plan passes but the run fails without a cluster reason: {e}"
                    )
                }
                (Ok(walked), Ok(outcome)) => {
                    let planned = preview.unwrap_or_else(|e| {
                        panic!("{what}: the run succeeded, the preview failed: {e}")
                    });
                    let applied: BTreeSet<&ObjectRef> = outcome.inventory.iter().collect();
                    // Objects a Delete task (or a Toggle switched off) of the plan removes.
                    let deleted = |kind: &str, name: &str| {
                        walked.iter().any(|o| {
                            o.action == PreviewAction::Delete
                                && o.object["kind"] == kind
                                && o.object["metadata"]["name"] == name
                        })
                    };
                    for p in planned
                        .iter()
                        .filter(|p| !deleted(&p.object.kind, &p.object.name))
                    {
                        assert!(
                            outcome.inventory.iter().any(|r| r.same_object(&p.object)),
                            "{what}: the preview applies {} but the run did not: {applied:?}",
                            p.object
                        );
                    }
                    // What the run applied beyond the preview are pipe artifacts only.
                    for r in &outcome.inventory {
                        let previewed = planned.iter().any(|p| p.object.same_object(r));
                        assert!(
                            previewed || r.name.contains(&format!("{instance}.deploy.")),
                            "{what}: the run applied {r}, which the preview did not show"
                        );
                    }
                    // A Toggle switched off deletes: none of its objects is left.
                    let live = labelled(&cluster, &ns, &instance).await;
                    for gone in walked.iter().filter(|o| o.action == PreviewAction::Delete) {
                        let kind = gone.object["kind"].as_str().unwrap_or_default();
                        let obj_name = gone.object["metadata"]["name"].as_str().unwrap_or_default();
                        assert!(
                            !live.iter().any(|r| r.kind == kind && r.name == obj_name),
                            "{what}: {kind} {obj_name} should be deleted"
                        );
                    }
                    checked += 1;
                }
                (Ok(_), Err(e)) => {
                    eprintln!("{what}: the run failed for a cluster reason: {e}");
                }
            }
        }
    }
    assert!(checked >= PACKAGES.len(), "only {checked} runs compared");
    assert!(
        refused >= 1,
        "no generated case was refused (expected a non-boolean toggle)"
    );
}
