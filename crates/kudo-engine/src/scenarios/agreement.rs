//! Plan and apply cannot drift apart: for every fixture package and generated parameter
//! sets, what the plan's preview says a run creates and deletes is what the run does,
//! and an offline plan fails exactly when the run fails for a reason that needs no
//! cluster, with the same text, before anything is applied.

use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::{Cluster, ObjectRef};
use crate::engine::{self, LABEL_INSTANCE, PreviewAction};
use crate::scenarios::common::*;
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
/// The plan of a new instance's `deploy`, as a create plans it.
async fn first_deploy(
    cluster: &Cluster,
    desired: &kudo_plan::Desired<'_>,
) -> Result<engine::InstancePlan, engine::PlanFailure> {
    let prior = engine::Prior {
        objects: &[],
        parameters: None,
        drifted: &[],
    };
    engine::plan_instance(
        cluster,
        desired,
        "deploy",
        &prior,
        engine::CrdSafety::default(),
        engine::Contents::Skip,
    )
    .await
}

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
    let mut predictions = 0;
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
            // The inventory the planning call predicts for a successful run, when it can.
            let predicted = match kudo_plan::Desired::new(kudo_plan::Inputs {
                package: &pkg,
                instance: &instance,
                namespace: &ns,
                parameters: &values,
                seed: None,
                dependencies: None,
            }) {
                Ok(desired) => first_deploy(&cluster, &desired)
                    .await
                    .ok()
                    .and_then(|p| p.after),
                Err(_) => None,
            };
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
                    // The predicted inventory (packages whose tasks name their objects).
                    if let Some(after) = &predicted {
                        let after: Vec<&ObjectRef> = after.iter().map(|r| &r.object).collect();
                        let mut ran: Vec<&ObjectRef> = outcome.inventory.iter().collect();
                        ran.sort();
                        assert_eq!(after, ran, "{what}: the predicted inventory");
                        predictions += 1;
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
    // zookeeper, first-operator, redis, ...: every package without Pipe tasks.
    assert!(predictions >= 3, "only {predictions} inventories predicted");
    assert!(
        refused >= 1,
        "no generated case was refused (expected a non-boolean toggle)"
    );
}

/// One piece of a generated package: a template, and whether the API server of the
/// current release (kube-sim's default, 1.36) takes it.
struct Piece {
    name: &'static str,
    template: &'static str,
    accepted: bool,
}

/// Templates of every class the plan must judge like the apply: plain objects, removed
/// APIs with and without a successor, objects the server refuses (invalid fields, a body
/// it cannot decode), CRDs of protected groups written for v1 and for v1beta1, and a CRD
/// with its custom resource. Names are prefixed with the instance so cases never meet.
const PIECES: &[Piece] = &[
    Piece {
        name: "configmap",
        template: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\ndata:\n  k: v\n",
        accepted: true,
    },
    Piece {
        name: "pdb-v1beta1",
        template: "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: {{ .Name }}-pdb\nspec:\n  maxUnavailable: 1\n  selector:\n    matchLabels:\n      app: x\n",
        accepted: true,
    },
    Piece {
        name: "psp",
        template: "apiVersion: policy/v1beta1\nkind: PodSecurityPolicy\nmetadata:\n  name: {{ .Namespace }}-{{ .Name }}-psp\nspec:\n  seLinux:\n    rule: RunAsAny\n  runAsUser:\n    rule: RunAsAny\n  supplementalGroups:\n    rule: RunAsAny\n  fsGroup:\n    rule: RunAsAny\n",
        accepted: false,
    },
    Piece {
        name: "secret-not-base64",
        template: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name }}-secret\ndata:\n  password: not base64!\n",
        accepted: false,
    },
    Piece {
        name: "configmap-number",
        template: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-num\ndata:\n  replicas: 3\n",
        accepted: false,
    },
    Piece {
        name: "service-invalid",
        template: "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Name }}-svc\nspec:\n  type: NoSuchType\n  ports:\n    - port: 80\n",
        accepted: false,
    },
    Piece {
        name: "crd-protected-v1",
        template: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.{{ .Namespace }}-{{ .Name }}.example.k8s.io\nspec:\n  group: {{ .Namespace }}-{{ .Name }}.example.k8s.io\n  scope: Namespaced\n  names:\n    kind: Widget\n    plural: widgets\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n",
        accepted: false,
    },
    Piece {
        name: "crd-protected-v1beta1",
        template: "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.{{ .Namespace }}-{{ .Name }}.example.k8s.io\nspec:\n  group: {{ .Namespace }}-{{ .Name }}.example.k8s.io\n  version: v1\n  names:\n    kind: Gadget\n    plural: gadgets\n",
        accepted: true,
    },
    Piece {
        name: "crd-and-resource",
        template: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gizmos.{{ .Namespace }}-{{ .Name }}.example.com\nspec:\n  group: {{ .Namespace }}-{{ .Name }}.example.com\n  scope: Namespaced\n  names:\n    kind: Gizmo\n    plural: gizmos\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          x-kubernetes-preserve-unknown-fields: true\n---\napiVersion: {{ .Namespace }}-{{ .Name }}.example.com/v1\nkind: Gizmo\nmetadata:\n  name: {{ .Name }}-gizmo\nspec:\n  size: 1\n",
        accepted: true,
    },
];

/// operator.yaml of a generated package: one Apply task per piece, each in its own
/// serial phase, in the order given.
fn generated_operator(pieces: &[&Piece]) -> String {
    let mut tasks = String::new();
    let mut phases = String::new();
    for (i, p) in pieces.iter().enumerate() {
        tasks.push_str(&format!(
            "  - name: t{i}\n    kind: Apply\n    spec:\n      resources:\n        - p{i}-{}.yaml\n",
            p.name
        ));
        phases.push_str(&format!(
            "      - name: phase{i}\n        strategy: serial\n        steps:\n          - name: step{i}\n            tasks:\n              - t{i}\n"
        ));
    }
    format!(
        "apiVersion: kudo.dev/v1beta1\nname: generated\noperatorVersion: 0.1.0\nkudoVersion: 0.19.0\nkubernetesVersion: 1.20.0\nmaintainers:\n  - name: tests\n    email: tests@example.com\nurl: https://example.com\ntasks:\n{tasks}plans:\n  deploy:\n    strategy: serial\n    phases:\n{phases}"
    )
}

/// A plan succeeds exactly when the apply does, and what the plan says the apply
/// creates is what it creates: generated packages mix the classes of [`PIECES`] in
/// random order, so a refusal may sit in any phase, after objects that would apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_succeeds_exactly_when_the_apply_does_for_generated_packages() {
    let (_sim, cluster) = sim().await;
    let cluster = cluster.with_translator(kube_api_versions::Translator::default());
    let mut cases = Cases(0x00dd_ba11_5eed_0026);
    let (mut agreed_ok, mut agreed_refused) = (0, 0);
    for case in 0..16 {
        let count = 1 + (cases.next() % 3) as usize;
        let pieces: Vec<&Piece> = (0..count)
            .map(|_| &PIECES[(cases.next() % PIECES.len() as u64) as usize])
            .collect();
        let names: Vec<&str> = pieces.iter().map(|p| p.name).collect();
        let what = format!("case {case} {names:?}");
        let templates: Vec<(String, &str)> = pieces
            .iter()
            .enumerate()
            .map(|(i, p)| (format!("p{i}-{}.yaml", p.name), p.template))
            .collect();
        let template_refs: Vec<(&str, &str)> =
            templates.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        let pkg = package(
            &generated_operator(&pieces),
            "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
            &template_refs,
        );
        let ns = format!("gen-{case}");
        namespace(&cluster, &ns).await;
        engine::install_operator(&cluster, &pkg, &ns)
            .await
            .expect("install operator");
        let instance = format!("g{case}");
        let values = BTreeMap::new();
        let desired = kudo_plan::Desired::new(kudo_plan::Inputs {
            package: &pkg,
            instance: &instance,
            namespace: &ns,
            parameters: &values,
            seed: None,
            dependencies: None,
        })
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        let plan = first_deploy(&cluster, &desired).await;
        let expected = pieces.iter().all(|p| p.accepted);
        let req = request(&pkg, &instance, &ns, &values, "deploy");
        let run = bounded(engine::run_plan(&cluster, req, &CancellationToken::new())).await;
        match (&plan, &run) {
            (Ok(plan), Ok(outcome)) => {
                assert!(
                    expected,
                    "{what}: plan and apply took a piece the server refuses"
                );
                let changes = plan
                    .changes
                    .as_ref()
                    .unwrap_or_else(|| panic!("{what}: no changes planned: {:?}", plan.notes));
                let planned: BTreeSet<String> = changes
                    .create
                    .iter()
                    .map(|r| format!("{} {}", r.kind, r.name))
                    .collect();
                let applied: BTreeSet<String> = outcome
                    .inventory
                    .iter()
                    .map(|r| format!("{} {}", r.kind, r.name))
                    .collect();
                assert_eq!(
                    planned, applied,
                    "{what}: the plan's creates are not the apply's"
                );
                // The inventory the plan predicts (`kudo_instance.objects` in a plan) is
                // the run's, ref for ref (the apiVersion included).
                let after: Vec<ObjectRef> = plan
                    .after
                    .as_ref()
                    .unwrap_or_else(|| panic!("{what}: no inventory predicted"))
                    .iter()
                    .map(|r| r.object.clone())
                    .collect();
                let mut ran = outcome.inventory.clone();
                ran.sort();
                assert_eq!(
                    after, ran,
                    "{what}: the predicted inventory is not the run's"
                );
                agreed_ok += 1;
            }
            (Err(engine::PlanFailure::Refused { error, .. }), Err(run_error)) => {
                assert!(
                    !expected,
                    "{what}: refused although every piece is accepted: {error}"
                );
                // The apply's own words: the run fails on the same object.
                assert_eq!(
                    error.object.as_ref().map(|o| (&o.kind, &o.name)),
                    run_error.object.as_ref().map(|o| (&o.kind, &o.name)),
                    "{what}: the plan refused {error}\nbut the run failed with {run_error}"
                );
                agreed_refused += 1;
            }
            (Err(engine::PlanFailure::Unknown(note)), _) => {
                panic!("{what}: the plan could not decide: {note:?}; the run: {run:?}")
            }
            (Ok(plan), Err(e)) => panic!(
                "{what}: the plan passed (notes {:?}) but the apply failed: {e}",
                plan.notes
            ),
            (Err(engine::PlanFailure::Refused { error, .. }), Ok(_)) => {
                panic!("{what}: the plan refused ({error}) but the apply succeeded")
            }
        }
    }
    assert!(agreed_ok >= 2, "only {agreed_ok} accepted cases");
    assert!(agreed_refused >= 2, "only {agreed_refused} refused cases");
}
