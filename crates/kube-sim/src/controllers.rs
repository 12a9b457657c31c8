//! Simulated controllers: workload status after a ready delay, LoadBalancer ingress, PVC
//! binding, ownerReference garbage collection, namespace and CRD cleanup.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tracing::warn;

use crate::containers::{self, ContainerExit};
use crate::ops::{self, FOREGROUND, ORPHAN, Ownership, Propagation, WriteOpts};
use crate::resources::ResourceType;
use crate::shared::Shared;
use crate::store::{EventType, ObjKey, Store, now_rfc3339};

pub const ANN_READY_DELAY: &str = "kube-sim.kudo.dev/ready-delay-ms";
pub const ANN_NEVER_READY: &str = "kube-sim.kudo.dev/never-ready";
/// The same, as `../shared/tools/fake-kubelet.py` reads it on real API servers, so that
/// one test holds a workload unready on either.
pub const ANN_NEVER_READY_REAL: &str = "test.kudo/never-ready";
pub const ANN_JOB_FAIL: &str = "kube-sim.kudo.dev/job-fail";
pub const ANN_POD_FAIL: &str = "kube-sim.kudo.dev/pod-fail";

const TICK: Duration = Duration::from_millis(20);
const CONTROLLER: &str = "kube-controller-manager";

/// Objects every cluster starts with.
pub fn bootstrap(store: &mut Store) {
    let opts = WriteOpts {
        manager: "kube-apiserver".into(),
        dry_run: false,
    };
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        if let Some(rt) = store.registry.find("", "v1", "namespaces").cloned() {
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            if let Err(e) = ops::create(store, &rt, "", body, &opts, None) {
                warn!(error = %e, "bootstrap namespace");
            }
        }
    }
    if let Some(rt) = store
        .registry
        .find("storage.k8s.io", "v1", "storageclasses")
        .cloned()
    {
        let body = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "kube-sim.kudo.dev/none", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"});
        if let Err(e) = ops::create(store, &rt, "", body, &opts, None) {
            warn!(error = %e, "bootstrap storage class");
        }
    }
}

/// When the current generation of a workload was first seen.
struct Track {
    generation: i64,
    since: Instant,
    /// Generation that last reached ready (a later generation is a rollout).
    ready_generation: Option<i64>,
    /// `ready_generation` when the current generation appeared (the rollout's origin).
    rollout_from: Option<i64>,
}

pub async fn run(shared: Arc<Shared>) {
    let mut tracks: HashMap<String, Track> = HashMap::new();
    let mut interval = tokio::time::interval(TICK);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let delay = shared.settings().ready_delay;
        let exits = shared.container_exits().clone();
        let mut store = shared.store();
        reconcile(&mut store, &mut tracks, delay, Instant::now(), &exits);
    }
}

fn reconcile(
    store: &mut Store,
    tracks: &mut HashMap<String, Track>,
    delay: Duration,
    now: Instant,
    exits: &[ContainerExit],
) {
    simulate_workloads(store, tracks, delay, now, exits);
    crate::claims::create_missing(store);
    collect_garbage(store);
    publish_namespace_defaults(store);
    finish_namespaces(store);
    finish_crds(store);
}

/// The served type of a stored object: the version it was written as while that is
/// served (kube-sim keeps each object in the shape it was written in and does not
/// convert between versions, so validating it as another version could reject a valid
/// object), else any served version of its group and resource.
fn rt_of(store: &Store, key: &ObjKey) -> Option<ResourceType> {
    let written = store
        .objects
        .get(key)
        .and_then(|o| o["apiVersion"].as_str())
        .map(crate::resources::split_api_version)
        .and_then(|(_, version)| store.registry.find(&key.group, version, &key.plural));
    written
        .or_else(|| store.registry.find_any_version(&key.group, &key.plural))
        .cloned()
}

fn annotation<'a>(obj: &'a Value, name: &str) -> Option<&'a str> {
    obj["metadata"]["annotations"][name].as_str()
}

fn flag(obj: &Value, name: &str) -> bool {
    annotation(obj, name) == Some("true")
}

const WORKLOADS: &[(&str, &str)] = &[
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "replicasets"),
    ("apps", "daemonsets"),
    ("batch", "jobs"),
    ("", "pods"),
    ("", "services"),
    ("", "persistentvolumeclaims"),
    ("networking.k8s.io", "ingresses"),
];

fn simulate_workloads(
    store: &mut Store,
    tracks: &mut HashMap<String, Track>,
    delay: Duration,
    now: Instant,
    exits: &[ContainerExit],
) {
    let keys: Vec<ObjKey> = store
        .objects
        .keys()
        .filter(|k| WORKLOADS.contains(&(k.group.as_str(), k.plural.as_str())))
        .cloned()
        .collect();
    let mut seen = HashSet::new();
    for key in keys {
        let Some(obj) = store.objects.get(&key) else {
            continue;
        };
        if !obj["metadata"]["deletionTimestamp"].is_null() {
            continue;
        }
        let uid = obj["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let generation = obj["metadata"]["generation"].as_i64().unwrap_or(1);
        seen.insert(uid.clone());
        let track = tracks.entry(uid).or_insert(Track {
            generation,
            since: now,
            ready_generation: None,
            rollout_from: None,
        });
        if track.generation != generation {
            track.generation = generation;
            track.since = now;
            track.rollout_from = track.ready_generation;
        }
        let delay = annotation(obj, ANN_READY_DELAY)
            .and_then(|d| d.parse::<u64>().ok())
            .map(Duration::from_millis)
            .unwrap_or(delay);
        let elapsed = now.saturating_duration_since(track.since);
        let delay_passed = elapsed >= delay;
        // OnDelete StatefulSets never roll pods themselves: an update stays pending.
        let on_delete_pending = key.plural == "statefulsets"
            && obj["spec"]["updateStrategy"]["type"] == "OnDelete"
            && track.ready_generation.is_some_and(|g| g != generation);
        let never = flag(obj, ANN_NEVER_READY) || flag(obj, ANN_NEVER_READY_REAL);
        let ready = delay_passed && !never && !on_delete_pending;
        if ready {
            track.ready_generation = Some(generation);
        }
        let sim = Sim {
            obj,
            generation,
            ready,
            delay_passed,
            rollout: track.ready_generation.is_some_and(|g| g != generation),
            elapsed,
        };
        let status = match (key.group.as_str(), key.plural.as_str()) {
            ("apps", "deployments") => deployment_status(&sim),
            ("apps", "statefulsets") => {
                statefulset_status(&sim, track.ready_generation, track.rollout_from)
            }
            ("apps", "replicasets") => replicaset_status(&sim),
            ("apps", "daemonsets") => daemonset_status(&sim),
            ("batch", "jobs") => job_status(&sim),
            ("", "pods") => {
                let mine: Vec<ContainerExit> = exits
                    .iter()
                    .filter(|e| e.matches(&key.namespace, obj))
                    .cloned()
                    .collect();
                pod_status(&sim, &mine)
            }
            ("", "services") => service_status(&sim, &key),
            ("", "persistentvolumeclaims") => pvc_status(&sim),
            ("networking.k8s.io", "ingresses") => ingress_status(&sim, &key),
            _ => None,
        };
        let Some(status) = status else { continue };
        if obj.get("status") == Some(&status) {
            continue;
        }
        let mut new = obj.clone();
        new["status"] = status;
        if let Some(rt) = rt_of(store, &key) {
            let opts = WriteOpts {
                manager: CONTROLLER.into(),
                dry_run: false,
            };
            if let Err(e) = ops::write_existing(
                store,
                &rt,
                &key,
                new,
                Some("status"),
                &opts,
                Ownership::Update,
            ) {
                warn!(error = %e, name = %key.name, "workload status update");
            }
        }
    }
    tracks.retain(|uid, _| seen.contains(uid));
}

struct Sim<'a> {
    obj: &'a Value,
    generation: i64,
    ready: bool,
    delay_passed: bool,
    /// A new generation after an earlier one was ready.
    rollout: bool,
    elapsed: Duration,
}

impl Sim<'_> {
    fn replicas(&self) -> i64 {
        self.obj["spec"]["replicas"].as_i64().unwrap_or(1)
    }

    fn name(&self) -> &str {
        self.obj["metadata"]["name"].as_str().unwrap_or_default()
    }

    /// Stable per-generation hash (pod-template-hash / controller-revision-hash stand-in).
    fn revision(&self, generation: i64) -> String {
        let uid = self.obj["metadata"]["uid"].as_str().unwrap_or_default();
        let mut h: u64 = 0xcbf29ce484222325;
        for b in uid.bytes().chain(generation.to_le_bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100000001b3);
        }
        format!("{}-{:x}", self.name(), h & 0xffffffffff)
    }

    /// A condition keeping its transition time while its status is unchanged.
    fn condition(
        &self,
        ctype: &str,
        status: &str,
        reason: &str,
        message: &str,
        update_time: bool,
    ) -> Value {
        let old = self.obj["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == ctype));
        let same = old.is_some_and(|c| c["status"] == status);
        let same_reason = old.is_some_and(|c| c["status"] == status && c["reason"] == reason);
        let t = |f: &str, keep: bool| -> Value {
            match old.and_then(|c| c[f].as_str()) {
                Some(s) if keep => json!(s),
                _ => json!(now_rfc3339()),
            }
        };
        let mut c = json!({"type": ctype, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": t("lastTransitionTime", same)});
        if update_time {
            c["lastUpdateTime"] = t("lastUpdateTime", same_reason);
        }
        c
    }
}

/// Kubernetes omits zero counters (`omitempty`).
fn omit_zero(mut status: Value, fields: &[&str]) -> Value {
    if let Some(m) = status.as_object_mut() {
        m.retain(|k, v| !(fields.contains(&k.as_str()) && v.as_i64() == Some(0)));
    }
    status
}

fn deployment_status(s: &Sim) -> Option<Value> {
    let r = s.replicas();
    let rs_name = s.revision(s.generation);
    let deadline = s.obj["spec"]["progressDeadlineSeconds"]
        .as_u64()
        .unwrap_or(600);
    let (updated, ready, available) = match (s.ready, s.rollout) {
        (true, _) => (r, r, r),
        (false, true) => (0, r, r),
        (false, false) => (r, 0, 0),
    };
    let available_cond = if available >= r {
        s.condition(
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            true,
        )
    } else {
        s.condition(
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            true,
        )
    };
    let progressing = if s.ready {
        s.condition(
            "Progressing",
            "True",
            "NewReplicaSetAvailable",
            &format!("ReplicaSet \"{rs_name}\" has successfully progressed."),
            true,
        )
    } else if s.elapsed >= Duration::from_secs(deadline) {
        s.condition(
            "Progressing",
            "False",
            "ProgressDeadlineExceeded",
            &format!("ReplicaSet \"{rs_name}\" has timed out progressing."),
            true,
        )
    } else {
        s.condition(
            "Progressing",
            "True",
            "ReplicaSetUpdated",
            &format!("ReplicaSet \"{rs_name}\" is progressing."),
            true,
        )
    };
    Some(omit_zero(
        json!({
            "observedGeneration": s.generation,
            "replicas": r,
            "updatedReplicas": updated,
            "readyReplicas": ready,
            "availableReplicas": available,
            "unavailableReplicas": r - available,
            "conditions": [available_cond, progressing],
        }),
        &[
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
            "unavailableReplicas",
        ],
    ))
}

fn statefulset_status(
    s: &Sim,
    ready_generation: Option<i64>,
    rollout_from: Option<i64>,
) -> Option<Value> {
    let r = s.replicas();
    let update_rev = s.revision(s.generation);
    let partition = s.obj["spec"]["updateStrategy"]["rollingUpdate"]["partition"]
        .as_i64()
        .unwrap_or(0)
        .clamp(0, r);
    let (current_rev, updated, ready, current) = match (s.ready, s.rollout) {
        // A partitioned rolling update only replaces the ordinals at or above the partition.
        (true, _) if partition > 0 && rollout_from.is_some_and(|g| g != s.generation) => (
            s.revision(rollout_from.unwrap_or(s.generation)),
            r - partition,
            r,
            partition,
        ),
        (true, _) => (update_rev.clone(), r, r, r),
        (false, true) => (
            s.revision(ready_generation.unwrap_or(s.generation)),
            0,
            r,
            r,
        ),
        (false, false) => (update_rev.clone(), r, 0, r),
    };
    Some(omit_zero(
        json!({
            "observedGeneration": s.generation,
            "replicas": r,
            "readyReplicas": ready,
            "currentReplicas": current,
            "updatedReplicas": updated,
            "availableReplicas": ready,
            "currentRevision": current_rev,
            "updateRevision": update_rev,
            "collisionCount": 0,
        }),
        &["readyReplicas", "currentReplicas", "updatedReplicas"],
    ))
}

fn replicaset_status(s: &Sim) -> Option<Value> {
    let r = s.replicas();
    let ready = if s.ready { r } else { 0 };
    Some(omit_zero(
        json!({"observedGeneration": s.generation, "replicas": r, "fullyLabeledReplicas": r,
               "readyReplicas": ready, "availableReplicas": ready}),
        &["fullyLabeledReplicas", "readyReplicas", "availableReplicas"],
    ))
}

fn daemonset_status(s: &Sim) -> Option<Value> {
    let ready = i64::from(s.ready);
    Some(omit_zero(
        json!({"observedGeneration": s.generation, "currentNumberScheduled": 1, "desiredNumberScheduled": 1,
               "numberMisscheduled": 0, "numberReady": ready, "updatedNumberScheduled": 1,
               "numberAvailable": ready, "numberUnavailable": 1 - ready}),
        &[
            "numberAvailable",
            "numberUnavailable",
            "updatedNumberScheduled",
        ],
    ))
}

fn job_status(s: &Sim) -> Option<Value> {
    let start = s.obj["status"]["startTime"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(now_rfc3339);
    let completions = s.obj["spec"]["completions"].as_i64().unwrap_or(1);
    let parallelism = s.obj["spec"]["parallelism"].as_i64().unwrap_or(1);
    let fail = flag(s.obj, ANN_JOB_FAIL) || flag(s.obj, "kube-sim.kudo.dev/fail");
    if !s.ready {
        return Some(
            json!({"startTime": start, "active": parallelism.min(completions), "ready": 0, "terminating": 0, "uncountedTerminatedPods": {}}),
        );
    }
    let end = s.obj["status"]["completionTime"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(now_rfc3339);
    if fail {
        let backoff = s.obj["spec"]["backoffLimit"].as_i64().unwrap_or(6);
        return Some(json!({
            "startTime": start, "failed": backoff + 1, "ready": 0, "terminating": 0, "uncountedTerminatedPods": {},
            "conditions": [
                s.condition("FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit", true),
                s.condition("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit", true),
            ],
        }));
    }
    Some(json!({
        "startTime": start, "completionTime": end, "succeeded": completions, "ready": 0, "terminating": 0,
        "uncountedTerminatedPods": {},
        "conditions": [
            s.condition("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods", true),
            s.condition("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods", true),
        ],
    }))
}

/// The labels of kube-sim's one (implicit) node, as a kubelet registers them: what a
/// pod's `nodeSelector` is matched against.
pub const NODE_LABELS: &[(&str, &str)] = &[
    ("kubernetes.io/hostname", "kube-sim"),
    ("kubernetes.io/os", "linux"),
    ("kubernetes.io/arch", "amd64"),
];

/// Why the scheduler cannot place `pod`, in its words (kube-scheduler 1.36, one node):
/// a `nodeSelector` the node's labels do not satisfy. `None` when it fits, or when
/// `spec.nodeName` is set (such a pod bypasses the scheduler).
fn unschedulable(pod: &Value) -> Option<String> {
    if pod["spec"]["nodeName"]
        .as_str()
        .is_some_and(|n| !n.is_empty())
    {
        return None;
    }
    let selector = pod["spec"]["nodeSelector"].as_object()?;
    let fits = selector.iter().all(|(key, want)| {
        NODE_LABELS
            .iter()
            .any(|(k, v)| k == key && want.as_str() == Some(v))
    });
    (!fits).then(|| {
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. \
         preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
            .to_string()
    })
}

fn pod_status(s: &Sim, exits: &[ContainerExit]) -> Option<Value> {
    // The scheduler comes first: a pod no node fits stays Pending, unscheduled, for
    // ever (its spec cannot change), as kube-scheduler leaves it.
    if let Some(message) = unschedulable(s.obj) {
        return Some(json!({"phase": "Pending", "qosClass": "BestEffort",
            "conditions": [s.condition("PodScheduled", "False", "Unschedulable", &message, false)]}));
    }
    let start = s.obj["status"]["startTime"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(now_rfc3339);
    let containers: Vec<Value> = s.obj["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let fail = flag(s.obj, ANN_POD_FAIL) || flag(s.obj, "kube-sim.kudo.dev/fail");
    if !s.delay_passed {
        return Some(json!({"phase": "Pending", "qosClass": "BestEffort",
            "conditions": [s.condition("PodScheduled", "True", "", "", false)]}));
    }
    if let Some(o) = containers::outcome(s.obj, exits, &start) {
        let ready = if s.ready && o.all_running && o.phase == "Running" {
            "True"
        } else {
            "False"
        };
        let (initialized, init_reason, init_message) = if o.initialized {
            ("True", "", String::new())
        } else {
            let waiting: Vec<&str> = o
                .init_statuses
                .iter()
                .filter(|c| c["ready"] != true)
                .filter_map(|c| c["name"].as_str())
                .collect();
            (
                "False",
                "ContainersNotInitialized",
                format!("containers with incomplete status: [{}]", waiting.join(" ")),
            )
        };
        let reason = if ready == "True" {
            ""
        } else {
            "ContainersNotReady"
        };
        let mut status = json!({
            "phase": o.phase,
            "hostIP": "10.0.0.1", "podIP": "10.244.0.10", "podIPs": [{"ip": "10.244.0.10"}],
            "qosClass": "BestEffort", "startTime": start,
            "conditions": [
                s.condition("Initialized", initialized, init_reason, &init_message, false),
                s.condition("Ready", ready, reason, "", false),
                s.condition("ContainersReady", ready, reason, "", false),
                s.condition("PodScheduled", "True", "", "", false),
            ],
            "containerStatuses": o.statuses,
        });
        if !o.init_statuses.is_empty() {
            status["initContainerStatuses"] = json!(o.init_statuses);
        }
        return Some(status);
    }
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| {
            let state = if fail {
                json!({"terminated": {"exitCode": 1, "reason": "Error", "startedAt": start, "finishedAt": start}})
            } else {
                json!({"running": {"startedAt": start}})
            };
            json!({"name": c["name"], "image": c["image"], "imageID": "", "ready": s.ready && !fail,
                   "started": !fail, "restartCount": 0, "state": state})
        })
        .collect();
    let ready = if s.ready && !fail { "True" } else { "False" };
    let reason = if ready == "True" {
        ""
    } else {
        "ContainersNotReady"
    };
    Some(json!({
        "phase": if fail { "Failed" } else { "Running" },
        "hostIP": "10.0.0.1", "podIP": "10.244.0.10", "podIPs": [{"ip": "10.244.0.10"}],
        "qosClass": "BestEffort", "startTime": start,
        "conditions": [
            s.condition("Initialized", "True", "", "", false),
            s.condition("Ready", ready, reason, "", false),
            s.condition("ContainersReady", ready, reason, "", false),
            s.condition("PodScheduled", "True", "", "", false),
        ],
        "containerStatuses": statuses,
    }))
}

fn service_status(s: &Sim, key: &ObjKey) -> Option<Value> {
    if s.obj["spec"]["type"] != "LoadBalancer" || !s.ready {
        return Some(json!({"loadBalancer": {}}));
    }
    let octet = key
        .name
        .bytes()
        .fold(0u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)))
        % 250
        + 2;
    Some(
        json!({"loadBalancer": {"ingress": [{"ip": format!("172.18.255.{octet}"), "ipMode": "VIP"}]}}),
    )
}

fn ingress_status(s: &Sim, key: &ObjKey) -> Option<Value> {
    if !s.ready {
        return Some(json!({"loadBalancer": {}}));
    }
    let octet = key
        .name
        .bytes()
        .fold(7u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)))
        % 250
        + 2;
    Some(json!({"loadBalancer": {"ingress": [{"ip": format!("172.18.254.{octet}")}]}}))
}

fn pvc_status(s: &Sim) -> Option<Value> {
    if !s.ready {
        return Some(json!({"phase": "Pending"}));
    }
    let storage = s.obj["spec"]["resources"]["requests"]["storage"].clone();
    Some(
        json!({"phase": "Bound", "accessModes": s.obj["spec"]["accessModes"], "capacity": {"storage": storage}}),
    )
}

fn is_deleting(obj: &Value) -> bool {
    !obj["metadata"]["deletionTimestamp"].is_null()
}

fn has_finalizer(obj: &Value, f: &str) -> bool {
    obj["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|fs| fs.iter().any(|x| x == f))
}

fn delete_key(store: &mut Store, key: &ObjKey, propagation: Propagation) {
    let Some(rt) = rt_of(store, key) else { return };
    if let Err(e) = ops::delete(
        store,
        &rt,
        &key.namespace,
        &key.name,
        propagation,
        &Value::Null,
        false,
    ) {
        warn!(error = %e, name = %key.name, "garbage collection delete");
    }
}

/// ownerReference garbage collection (background, foreground and orphan propagation).
fn collect_garbage(store: &mut Store) {
    // uid -> (namespace, deleting in foreground)
    let owners: HashMap<String, (String, bool)> = store
        .objects
        .iter()
        .filter_map(|(k, v)| {
            let uid = v["metadata"]["uid"].as_str()?.to_string();
            Some((
                uid,
                (
                    k.namespace.clone(),
                    is_deleting(v) && has_finalizer(v, FOREGROUND),
                ),
            ))
        })
        .collect();
    let mut deletes = Vec::new();
    let mut dependents_of: HashMap<String, Vec<(ObjKey, bool)>> = HashMap::new();
    for (key, obj) in &store.objects {
        let Some(refs) = obj["metadata"]["ownerReferences"].as_array() else {
            continue;
        };
        if refs.is_empty() {
            continue;
        }
        let mut alive = false;
        let mut foreground = false;
        for r in refs {
            let uid = r["uid"].as_str().unwrap_or_default();
            dependents_of
                .entry(uid.to_string())
                .or_default()
                .push((key.clone(), r["blockOwnerDeletion"] == true));
            // A cluster-scoped dependent cannot resolve a namespaced owner; Kubernetes
            // leaves such objects alone rather than collecting them.
            let unresolvable = key.namespace.is_empty()
                && store
                    .registry
                    .kind_is_namespaced(
                        r["apiVersion"].as_str().unwrap_or_default(),
                        r["kind"].as_str().unwrap_or_default(),
                    )
                    .unwrap_or(false);
            match owners.get(uid) {
                _ if unresolvable => alive = true,
                Some((ns, fg)) if ns.is_empty() || *ns == key.namespace => {
                    if *fg {
                        foreground = true;
                    } else {
                        alive = true;
                    }
                }
                _ => {}
            }
        }
        if !alive && !is_deleting(obj) {
            let p = if foreground {
                Propagation::Foreground
            } else {
                Propagation::Background
            };
            deletes.push((key.clone(), p));
        }
    }
    for (key, p) in deletes {
        delete_key(store, &key, p);
    }

    let pending: Vec<(ObjKey, String, bool, bool)> = store
        .objects
        .iter()
        .filter(|(_, v)| is_deleting(v))
        .filter_map(|(k, v)| {
            let uid = v["metadata"]["uid"].as_str()?.to_string();
            let fg = has_finalizer(v, FOREGROUND);
            let orphan = has_finalizer(v, ORPHAN);
            (fg || orphan).then(|| (k.clone(), uid, fg, orphan))
        })
        .collect();
    for (key, uid, fg, orphan) in pending {
        let Some(rt) = rt_of(store, &key) else {
            continue;
        };
        let dependents: Vec<(ObjKey, bool)> = dependents_of
            .get(&uid)
            .map(|d| {
                d.iter()
                    .filter(|(k, _)| store.objects.contains_key(k))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if orphan {
            for (dkey, _) in &dependents {
                orphan_dependent(store, dkey, &uid);
            }
            if let Err(e) = ops::remove_finalizer(store, &rt, &key, ORPHAN) {
                warn!(error = %e, "orphan finalizer");
            }
        } else if fg
            && !dependents.iter().any(|(_, block)| *block)
            && let Err(e) = ops::remove_finalizer(store, &rt, &key, FOREGROUND)
        {
            warn!(error = %e, "foreground finalizer");
        }
    }
}

fn orphan_dependent(store: &mut Store, key: &ObjKey, owner_uid: &str) {
    let Some(rt) = rt_of(store, key) else { return };
    let Some(mut obj) = store.objects.get(key).cloned() else {
        return;
    };
    if let Some(refs) = obj["metadata"]["ownerReferences"].as_array_mut() {
        refs.retain(|r| r["uid"] != owner_uid);
        if refs.is_empty()
            && let Some(md) = obj["metadata"].as_object_mut()
        {
            md.remove("ownerReferences");
        }
    }
    let opts = WriteOpts {
        manager: CONTROLLER.into(),
        dry_run: false,
    };
    if let Err(e) = ops::write_existing(store, &rt, key, obj, None, &opts, Ownership::Update) {
        warn!(error = %e, "orphaning dependent");
    }
}

/// What a real cluster's controllers put in every active namespace, and put back when
/// deleted: the `kube-root-ca.crt` ConfigMap (root-ca-cert-publisher) and the `default`
/// ServiceAccount (serviceaccounts-controller). Code that decides whether a namespace is
/// empty must not count them. A new namespace gets them at once (see `ops::create`), so
/// that tests do not depend on a controller tick.
fn publish_namespace_defaults(store: &mut Store) {
    let active: Vec<String> = store
        .objects
        .iter()
        .filter(|(k, v)| k.group.is_empty() && k.plural == "namespaces" && !is_deleting(v))
        .map(|(k, _)| k.name.clone())
        .collect();
    for ns in active {
        namespace_defaults(store, &ns);
    }
}

/// [`publish_namespace_defaults`] for one namespace.
pub(crate) fn namespace_defaults(store: &mut Store, ns: &str) {
    let defaults = [
        ("configmaps", "ConfigMap", "kube-root-ca.crt"),
        ("serviceaccounts", "ServiceAccount", "default"),
    ];
    let opts = WriteOpts {
        manager: CONTROLLER.into(),
        dry_run: false,
    };
    for (plural, kind, name) in defaults {
        let key = ObjKey {
            group: String::new(),
            plural: plural.to_string(),
            namespace: ns.to_string(),
            name: name.to_string(),
        };
        if store.objects.contains_key(&key) {
            continue;
        }
        let Some(rt) = store.registry.find("", "v1", plural).cloned() else {
            continue;
        };
        let mut body =
            json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": ns}});
        if kind == "ConfigMap" {
            body["data"] = json!({"ca.crt": "-----BEGIN CERTIFICATE-----\n(kube-sim)\n-----END CERTIFICATE-----\n"});
        }
        if let Err(e) = ops::create(store, &rt, ns, body, &opts, None) {
            warn!(error = %e, namespace = %ns, kind, "namespace default");
        }
    }
}

/// Terminating namespaces: delete their contents, then the namespace.
fn finish_namespaces(store: &mut Store) {
    let terminating: Vec<ObjKey> = store
        .objects
        .iter()
        .filter(|(k, v)| k.group.is_empty() && k.plural == "namespaces" && is_deleting(v))
        .map(|(k, _)| k.clone())
        .collect();
    for ns_key in terminating {
        let contents: Vec<(ObjKey, bool)> = store
            .objects
            .iter()
            .filter(|(k, _)| k.namespace == ns_key.name)
            .map(|(k, v)| (k.clone(), is_deleting(v)))
            .collect();
        if contents.is_empty() {
            let Some(obj) = store.objects.get(&ns_key).cloned() else {
                continue;
            };
            if obj["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| !f.is_empty())
            {
                continue;
            }
            let mut obj = obj;
            obj["spec"]["finalizers"] = json!([]);
            store.commit(ns_key, obj, EventType::Deleted);
            continue;
        }
        for (k, deleting) in contents {
            if !deleting {
                delete_key(store, &k, Propagation::Background);
            }
        }
    }
}

/// Terminating CRDs: delete their custom objects, then release the cleanup finalizer.
fn finish_crds(store: &mut Store) {
    const CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";
    let terminating: Vec<(ObjKey, String, String)> = store
        .objects
        .iter()
        .filter(|(k, v)| {
            k.plural == "customresourcedefinitions" && is_deleting(v) && has_finalizer(v, CLEANUP)
        })
        .filter_map(|(k, v)| {
            Some((
                k.clone(),
                v["spec"]["group"].as_str()?.to_string(),
                v["spec"]["names"]["plural"].as_str()?.to_string(),
            ))
        })
        .collect();
    for (crd_key, group, plural) in terminating {
        let objects: Vec<(ObjKey, bool)> = store
            .objects
            .iter()
            .filter(|(k, _)| k.group == group && k.plural == plural)
            .map(|(k, v)| (k.clone(), is_deleting(v)))
            .collect();
        if objects.is_empty() {
            if let Some(rt) = rt_of(store, &crd_key)
                && let Err(e) = ops::remove_finalizer(store, &rt, &crd_key, CLEANUP)
            {
                warn!(error = %e, "crd cleanup finalizer");
            }
            continue;
        }
        for (k, deleting) in objects {
            if !deleting {
                delete_key(store, &k, Propagation::Background);
            }
        }
    }
}
