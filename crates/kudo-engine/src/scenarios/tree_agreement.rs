//! The plan and the apply agree for whole dependency trees: generated packages three
//! levels deep (an instance, its dependency instance, and that one's), each level
//! possibly holding an object the API server refuses, a CRD change that would strand
//! custom resources, or an object changed outside Terraform. The plan of the tree
//! (`engine::plan_tree`) succeeds exactly when the apply (`engine::run_plan`) does; a
//! refused apply writes nothing anywhere in the tree; and what the plan says each
//! instance creates, updates and deletes is what the apply does.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::cluster::{Cluster, ObjectRef};
use crate::engine::{
    self, Changes, DependencyRecords, LABEL_INSTANCE, PlanFailure, TreePlan, TreePrior, TreeRequest,
};
use crate::scenarios::common::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// What one level of a generated tree holds besides its ConfigMap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trouble {
    /// Nothing: a ConfigMap that every later step changes.
    None,
    /// A Secret whose data is not base64: the server refuses it (400/422).
    InvalidObject,
    /// A PodSecurityPolicy: policy/v1beta1 is gone from 1.25 with no successor.
    RemovedApi,
    /// A CRD with a custom resource; a later change makes a field required, which
    /// would strand the custom resource (crd_upgrade_safety refuses it).
    UnsafeCrd,
    /// Its ConfigMap is changed by another field manager after the first apply.
    Drifted,
}

const TROUBLES: &[Trouble] = &[
    Trouble::None,
    Trouble::None,
    Trouble::InvalidObject,
    Trouble::RemovedApi,
    Trouble::UnsafeCrd,
    Trouble::Drifted,
];

const LEVELS: [&str; 3] = ["top", "mid", "low"];

/// A small deterministic generator (xorshift), so a failing case is reproducible.
struct Cases(u64);

impl Cases {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// One level's package: its ConfigMap, its trouble (in the first phase or after its
/// dependency, as `late` says), and the KudoOperator task of the next level.
fn write_level(root: &Path, level: usize, trouble: Trouble, late: bool) {
    let dir = root.join(LEVELS[level]);
    std::fs::create_dir_all(&dir).expect("level folder");
    let mut own = vec!["cm.yaml".to_string()];
    let mut later = Vec::new();
    let mut templates: Vec<(&str, String)> = vec![(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\ndata:\n  gen: \"{{ .Params.GEN }}\"\n".to_string(),
    )];
    let extra: Vec<(&str, String)> = match trouble {
        Trouble::None | Trouble::Drifted => Vec::new(),
        Trouble::InvalidObject => vec![(
            "bad.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name }}-secret\ndata:\n  password: not base64!\n".to_string(),
        )],
        Trouble::RemovedApi => vec![(
            "bad.yaml",
            "apiVersion: policy/v1beta1\nkind: PodSecurityPolicy\nmetadata:\n  name: {{ .Namespace }}-{{ .Name }}-psp\nspec:\n  seLinux:\n    rule: RunAsAny\n  runAsUser:\n    rule: RunAsAny\n  supplementalGroups:\n    rule: RunAsAny\n  fsGroup:\n    rule: RunAsAny\n".to_string(),
        )],
        Trouble::UnsafeCrd => vec![
            (
                "crd.yaml",
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.{{ .Namespace }}-{{ .Name }}.example.com\nspec:\n  group: {{ .Namespace }}-{{ .Name }}.example.com\n  scope: Namespaced\n  names:\n    kind: Widget\n    plural: widgets\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          properties:\n            spec:\n              type: object\n{{- if eq .Params.GEN \"2\" }}\n              required: [color]\n{{- end }}\n              properties:\n                size:\n                  type: integer\n                color:\n                  type: string\n".to_string(),
            ),
            (
                "cr.yaml",
                "apiVersion: {{ .Namespace }}-{{ .Name }}.example.com/v1\nkind: Widget\nmetadata:\n  name: {{ .Name }}-w\nspec:\n  size: 1\n".to_string(),
            ),
        ],
    };
    for (name, _) in &extra {
        match late {
            true => later.push(name.to_string()),
            false => own.push(name.to_string()),
        }
    }
    templates.extend(extra);
    let list = |files: &[String]| {
        files
            .iter()
            .map(|f| format!("        - {f}\n"))
            .collect::<String>()
    };
    let mut tasks = format!(
        "  - name: own\n    kind: Apply\n    spec:\n      resources:\n{}",
        list(&own)
    );
    let mut phases = "      - name: own\n        strategy: serial\n        steps:\n          - name: own\n            tasks: [own]\n".to_string();
    if level + 1 < LEVELS.len() {
        tasks.push_str(&format!(
            "  - name: dep\n    kind: KudoOperator\n    spec:\n      package: ../{}\n      parameterFile: next.yaml\n",
            LEVELS[level + 1]
        ));
        phases.push_str("      - name: deps\n        strategy: serial\n        steps:\n          - name: deps\n            tasks: [dep]\n");
        templates.push(("next.yaml", "GEN: \"{{ .Params.GEN }}\"\n".to_string()));
    }
    if !later.is_empty() {
        tasks.push_str(&format!(
            "  - name: late\n    kind: Apply\n    spec:\n      resources:\n{}",
            list(&later)
        ));
        phases.push_str("      - name: late\n        strategy: serial\n        steps:\n          - name: late\n            tasks: [late]\n");
    }
    let operator = format!(
        "apiVersion: kudo.dev/v1beta1\nname: gen-{}\noperatorVersion: 0.1.0\nkubernetesVersion: 1.20.0\ntasks:\n{tasks}plans:\n  deploy:\n    strategy: serial\n    phases:\n{phases}",
        LEVELS[level]
    );
    let refs: Vec<(&str, &str)> = templates.iter().map(|(n, t)| (*n, t.as_str())).collect();
    write_package(
        &dir,
        &operator,
        "apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: GEN\n    default: \"1\"\n",
        &refs,
    );
}

/// Every object the tree's instances own in `namespace` (labelled with an instance),
/// cluster-scoped ones and the Instances included, with its resourceVersion.
async fn snapshot(cluster: &Cluster, namespace: &str) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    let mut add = |o: &Value| {
        let owner = o
            .pointer(&format!(
                "/metadata/labels/{}",
                LABEL_INSTANCE.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let Ok(r) = ObjectRef::from_object(o) else {
            return;
        };
        let owner = match r.kind.as_str() {
            "Instance" => r.name.clone(),
            _ => owner,
        };
        let rv = o
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        out.insert((owner, key(&r)), rv.to_string());
    };
    for o in cluster
        .list_labelled(namespace, LABEL_INSTANCE)
        .await
        .expect("list labelled objects")
    {
        add(&o);
    }
    for (api_version, kind) in [
        ("kudo.dev/v1beta1", "Instance"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ] {
        let namespaced = kind == "Instance";
        for o in cluster
            .list_kind(api_version, kind, namespaced.then_some(namespace))
            .await
            .expect("list")
        {
            let mine = o
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_some_and(|n| namespaced || n.contains(namespace));
            if mine {
                add(&o);
            }
        }
    }
    out
}

fn key(r: &ObjectRef) -> String {
    format!("{} {}", r.kind, r.name)
}

/// What an apply did to each instance, from two snapshots.
#[derive(Debug, Default, PartialEq)]
struct Done {
    created: BTreeSet<String>,
    changed: BTreeSet<String>,
    deleted: BTreeSet<String>,
}

fn done(
    before: &BTreeMap<(String, String), String>,
    after: &BTreeMap<(String, String), String>,
) -> BTreeMap<String, Done> {
    let mut out: BTreeMap<String, Done> = BTreeMap::new();
    for ((owner, k), rv) in after {
        match before.get(&(owner.clone(), k.clone())) {
            None => out
                .entry(owner.clone())
                .or_default()
                .created
                .insert(k.clone()),
            Some(old) if old != rv => out
                .entry(owner.clone())
                .or_default()
                .changed
                .insert(k.clone()),
            Some(_) => false,
        };
    }
    for (owner, k) in before.keys() {
        if !after.contains_key(&(owner.clone(), k.clone())) {
            out.entry(owner.clone())
                .or_default()
                .deleted
                .insert(k.clone());
        }
    }
    out
}

/// The plan's changes by instance (the top one's, then each dependency instance's).
fn planned(tree: &TreePlan, top: &str) -> BTreeMap<String, Changes> {
    let mut out = BTreeMap::new();
    let unknown = |what: &str, notes: &Vec<engine::PlanNote>| -> Changes {
        panic!("{what}: changes unknown: {notes:?}")
    };
    out.insert(
        top.to_string(),
        tree.instance
            .changes
            .clone()
            .unwrap_or_else(|| unknown(top, &tree.instance.notes)),
    );
    for d in &tree.dependencies {
        if let Some(plan) = &d.plan {
            let changes = plan
                .changes
                .clone()
                .unwrap_or_else(|| unknown(&d.instance, &plan.notes));
            out.insert(d.instance.clone(), changes);
        }
    }
    out
}

/// Asserts that what the apply did is what the plan said, instance by instance.
fn assert_agree(what: &str, tree: &TreePlan, top: &str, did: &BTreeMap<String, Done>) {
    let plans = planned(tree, top);
    for (instance, done) in did {
        let set = |refs: &[ObjectRef]| refs.iter().map(key).collect::<BTreeSet<_>>();
        // A dependency Instance is its parent's object; its own run writes it too.
        let own = |keys: &BTreeSet<String>| {
            keys.iter()
                .filter(|k| !k.starts_with("Instance "))
                .cloned()
                .collect::<BTreeSet<_>>()
        };
        let Some(changes) = plans.get(instance) else {
            // Settled: nothing of it may change.
            assert!(
                own(&done.created).is_empty()
                    && own(&done.changed).is_empty()
                    && own(&done.deleted).is_empty(),
                "{what}: the plan leaves {instance} alone, the apply did {done:?}"
            );
            continue;
        };
        assert_eq!(
            own(&done.created),
            set(&changes.create),
            "{what}: {instance}: the plan's creates are not the apply's"
        );
        assert_eq!(
            own(&done.deleted),
            set(&changes.delete),
            "{what}: {instance}: the plan's deletes are not the apply's"
        );
        let updated = set(&changes.update);
        for k in own(&done.changed) {
            assert!(
                updated.contains(&k),
                "{what}: {instance}: the apply changed {k}, which the plan does not update ({updated:?})"
            );
        }
    }
}

struct Step<'a> {
    cluster: &'a Cluster,
    namespace: &'a str,
    top: &'a str,
    pkg: &'a kudo_package::Package,
}

/// What the state recorded after the last apply, and what a refresh found drifted.
struct Before<'a> {
    inventory: &'a [ObjectRef],
    values: Option<&'a BTreeMap<String, String>>,
    records: &'a DependencyRecords,
    drifted: &'a BTreeMap<String, Vec<ObjectRef>>,
}

/// Plans and applies `values` for the top instance, checks that both agree, and
/// returns whether they succeeded (with the inventory and records of the apply).
async fn plan_and_apply(
    step: &Step<'_>,
    what: &str,
    values: &BTreeMap<String, String>,
    prev: Before<'_>,
) -> Option<(Vec<ObjectRef>, DependencyRecords)> {
    let (previous, previous_values, records, drifted) =
        (prev.inventory, prev.values, prev.records, prev.drifted);
    let plan = "deploy";
    let desired = kudo_plan::Desired::new(kudo_plan::Inputs {
        package: step.pkg,
        instance: step.top,
        namespace: step.namespace,
        parameters: values,
        seed: None,
        dependencies: None,
    })
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    let top_drifted = drifted.get(step.top).cloned().unwrap_or_default();
    let below: BTreeMap<String, Vec<ObjectRef>> = drifted
        .iter()
        .filter(|(n, _)| n.as_str() != step.top)
        .map(|(n, o)| (n.clone(), o.clone()))
        .collect();
    let tree_prior = TreePrior {
        decided: None,
        confirmed: false,
        records: Some(records),
        drifted: Some(&below),
        fresh: previous.is_empty(),
        checked: false,
        every_object_checked: false,
    };
    let planned = engine::plan_tree(
        step.cluster,
        &TreeRequest {
            desired: &desired,
            plan,
            prior: engine::Prior {
                objects: previous,
                parameters: previous_values,
                drifted: &top_drifted,
            },
            tree: tree_prior,
            crd_safety: engine::CrdSafety::default(),
            contents: engine::Contents::Skip,
        },
    )
    .await;
    let before = snapshot(step.cluster, step.namespace).await;
    let req = engine::RunRequest {
        previous_inventory: previous,
        tree: tree_prior,
        ..request(step.pkg, step.top, step.namespace, values, plan)
    };
    let run = bounded(engine::run_plan(
        step.cluster,
        req,
        &CancellationToken::new(),
    ))
    .await;
    let after = snapshot(step.cluster, step.namespace).await;
    match (planned, run) {
        (Ok(tree), Ok(outcome)) => {
            assert_agree(what, &tree, step.top, &done(&before, &after));
            Some((outcome.inventory, outcome.dependencies))
        }
        (Err(PlanFailure::Refused { error, .. }), Err(run_error)) => {
            assert_eq!(
                before, after,
                "{what}: refused ({error}), but the apply wrote"
            );
            // The apply's own words, naming the same object.
            assert_eq!(
                error.to_string(),
                run_error.to_string(),
                "{what}: the plan and the apply refuse in other words"
            );
            None
        }
        (Err(PlanFailure::Unknown(note)), run) => {
            panic!("{what}: the plan could not decide: {note:?}; the apply: {run:?}")
        }
        (Ok(tree), Err(e)) => panic!(
            "{what}: the plan passed ({} dependency instances) but the apply failed: {e}",
            tree.dependencies.len()
        ),
        (Err(PlanFailure::Refused { error, .. }), Ok(_)) => {
            panic!("{what}: the plan refused ({error}) but the apply succeeded")
        }
    }
}

/// Changes the ConfigMap of each of `instances` as another field manager would: what a
/// refresh then reports as drifted, by instance.
async fn drift(
    cluster: &Cluster,
    namespace: &str,
    instances: &[String],
) -> BTreeMap<String, Vec<ObjectRef>> {
    let mut drifted = BTreeMap::new();
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        cluster.client().clone(),
        namespace,
        &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk("", "v1", "ConfigMap")),
    );
    for instance in instances {
        // `kubectl edit` as kubectl does it: a merge patch under its own field manager.
        api.patch(
            &format!("{instance}-cm"),
            &kube::api::PatchParams {
                field_manager: Some("kubectl".into()),
                ..Default::default()
            },
            &kube::api::Patch::Merge(json!({"data": {"gen": "changed by hand"}})),
        )
        .await
        .expect("change the ConfigMap as kubectl would");
        drifted.insert(
            instance.clone(),
            vec![oref(
                "v1",
                "ConfigMap",
                Some(namespace),
                &format!("{instance}-cm"),
            )],
        );
    }
    drifted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_and_apply_agree_for_generated_dependency_trees() {
    let (_sim, cluster) = sim().await;
    let cluster = cluster.with_translator(kube_api_versions::Translator::default());
    let mut cases = Cases(0x7ee5_0037_5eed_0001);
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for case in 0..12 {
        let troubles: Vec<Trouble> = (0..LEVELS.len())
            .map(|_| TROUBLES[(cases.next() % TROUBLES.len() as u64) as usize])
            .collect();
        let late: Vec<bool> = (0..LEVELS.len())
            .map(|_| cases.next().is_multiple_of(2))
            .collect();
        let what = format!("case {case} {troubles:?} late {late:?}");
        let root = temp_dir("tree");
        for (level, trouble) in troubles.iter().enumerate() {
            write_level(&root, level, *trouble, late[level]);
        }
        let pkg = kudo_package::Package::load_dir(&root.join("top")).expect("top package");
        let ns = format!("tree-{case}");
        namespace(&cluster, &ns).await;
        let top = format!("t{case}");
        let step = Step {
            cluster: &cluster,
            namespace: &ns,
            top: &top,
            pkg: &pkg,
        };
        let none = BTreeMap::new();
        let first = params(&[("GEN", "1")]);
        // 1. Create the tree.
        let nothing = DependencyRecords::new();
        let created = plan_and_apply(
            &step,
            &format!("{what} create"),
            &first,
            Before {
                inventory: &[],
                values: None,
                records: &nothing,
                drifted: &none,
            },
        )
        .await;
        let refused = troubles
            .iter()
            .any(|t| matches!(t, Trouble::InvalidObject | Trouble::RemovedApi));
        assert_eq!(created.is_none(), refused, "{what}: create");
        let Some((inventory, records)) = created else {
            *seen.entry("refused at create").or_default() += 1;
            continue;
        };
        // 2. Objects of some levels changed outside Terraform: the plan names the
        // instances that run again, and the apply takes the changes back.
        let names: Vec<String> = std::iter::once(top.clone())
            .chain(records.keys().cloned())
            .collect();
        let drifted_names: Vec<String> = names
            .iter()
            .zip(&troubles)
            .filter(|(_, t)| **t == Trouble::Drifted)
            .map(|(n, _)| n.clone())
            .collect();
        let (inventory, records) = if drifted_names.is_empty() {
            (inventory, records)
        } else {
            let drifted = drift(&cluster, &ns, &drifted_names).await;
            let after = plan_and_apply(
                &step,
                &format!("{what} drift"),
                &first,
                Before {
                    inventory: &inventory,
                    values: Some(&first),
                    records: &records,
                    drifted: &drifted,
                },
            )
            .await
            .unwrap_or_else(|| panic!("{what}: drift repair refused"));
            for name in &drifted_names {
                let cm = cluster
                    .get(&oref("v1", "ConfigMap", Some(&ns), &format!("{name}-cm")))
                    .await
                    .expect("read")
                    .expect("ConfigMap");
                assert_eq!(
                    cm.pointer("/data/gen"),
                    Some(&json!("1")),
                    "{what}: the drift of {name} was not taken back"
                );
            }
            *seen.entry("drift repaired").or_default() += 1;
            after
        };
        // 3. A change that cascades through the tree (GEN = 2 reaches every level).
        let second = params(&[("GEN", "2")]);
        let changed = plan_and_apply(
            &step,
            &format!("{what} change"),
            &second,
            Before {
                inventory: &inventory,
                values: Some(&first),
                records: &records,
                drifted: &none,
            },
        )
        .await;
        let unsafe_crd = troubles.contains(&Trouble::UnsafeCrd);
        assert_eq!(changed.is_none(), unsafe_crd, "{what}: change");
        *seen
            .entry(match unsafe_crd {
                true => "refused at change",
                false => "changed",
            })
            .or_default() += 1;
        if let Some((_, records)) = changed {
            for d in records.values() {
                assert!(!d.inventory.is_empty(), "{what}: a record without objects");
            }
        }
    }
    for class in [
        "refused at create",
        "drift repaired",
        "refused at change",
        "changed",
    ] {
        assert!(
            seen.get(class).is_some_and(|n| *n >= 1),
            "no generated case was {class}: {seen:?}"
        );
    }
}
