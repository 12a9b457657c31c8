//! How the containers of simulated pods end, and what they wrote: kube-sim runs no
//! containers, so a test registers what one does (its exit code and its log) and the
//! pod's status and its `pods/log` subresource show it as a kubelet would report it.
//! Containers nobody registered run for ever (init containers complete at once) and
//! wrote nothing.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api_error::{ApiError, ApiResult};
use crate::selectors::LabelSelector;

/// How one container of matching pods ends.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContainerExit {
    pub namespace: String,
    /// Pod name; when absent, `selector` chooses pods by label.
    #[serde(default)]
    pub pod: Option<String>,
    #[serde(default)]
    pub selector: Option<String>,
    /// The container (an init container or a regular one).
    pub container: String,
    pub exit_code: i32,
    /// The kubelet's reason; default `Error` for a non-zero exit, `Completed` for 0.
    #[serde(default)]
    pub reason: Option<String>,
    /// What the container wrote to stdout and stderr, served by `pods/log`.
    #[serde(default)]
    pub log: String,
}

impl ContainerExit {
    pub fn matches(&self, namespace: &str, pod: &Value) -> bool {
        if self.namespace != namespace {
            return false;
        }
        match (&self.pod, &self.selector) {
            (Some(name), _) => pod["metadata"]["name"].as_str() == Some(name.as_str()),
            (None, Some(sel)) => LabelSelector::parse(sel).is_ok_and(|s| s.matches(pod)),
            (None, None) => true,
        }
    }

    fn reason(&self) -> &str {
        match &self.reason {
            Some(r) => r,
            None if self.exit_code == 0 => "Completed",
            None => "Error",
        }
    }

    fn terminated(&self, at: &str) -> Value {
        json!({"terminated": {"exitCode": self.exit_code, "reason": self.reason(),
            "startedAt": at, "finishedAt": at}})
    }
}

/// The registered exit of `container`, among those matching the pod.
fn exit_of<'e>(exits: &'e [ContainerExit], container: &str) -> Option<&'e ContainerExit> {
    exits.iter().rev().find(|e| e.container == container)
}

/// What the pod's containers did once it started, when any registered exit applies:
/// `phase`, `initContainerStatuses`, `containerStatuses`, and whether the pod is
/// initialized; `None` leaves the pod to the default simulation.
pub struct Outcome {
    pub phase: &'static str,
    pub initialized: bool,
    pub init_statuses: Vec<Value>,
    pub statuses: Vec<Value>,
    /// Every regular container running (the pod may become ready).
    pub all_running: bool,
}

/// Statuses as the kubelet reports them: init containers run in order and the first
/// that fails stops the others (with `restartPolicy: Never` the pod fails; otherwise it
/// restarts that container, `CrashLoopBackOff`); regular containers then run, and with
/// `Never` a failed one fails the pod, all exited with 0 make it `Succeeded`.
pub fn outcome(pod: &Value, exits: &[ContainerExit], at: &str) -> Option<Outcome> {
    if exits.is_empty() {
        return None;
    }
    let never = pod["spec"]["restartPolicy"].as_str() == Some("Never");
    let names = |list: &str| -> Vec<(String, Value)> {
        pod["spec"][list]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or_default().to_string(),
                    c["image"].clone(),
                )
            })
            .collect()
    };
    let status = |name: &str, image: &Value, state: Value, ready: bool, restarts: i64| {
        json!({"name": name, "image": image, "imageID": "", "ready": ready,
               "started": state.get("running").is_some(), "restartCount": restarts, "state": state})
    };
    let crash_loop = |e: &ContainerExit, name: &str, image: &Value| {
        let mut s = status(
            name,
            image,
            json!({"waiting": {"reason": "CrashLoopBackOff",
                "message": format!("back-off 10s restarting failed container={name}")}}),
            false,
            1,
        );
        s["lastState"] = e.terminated(at);
        s
    };
    let mut init_statuses = Vec::new();
    let mut failed_init = false;
    for (name, image) in names("initContainers") {
        if failed_init {
            init_statuses.push(status(
                &name,
                &image,
                json!({"waiting": {"reason": "PodInitializing"}}),
                false,
                0,
            ));
            continue;
        }
        match exit_of(exits, &name) {
            Some(e) if e.exit_code != 0 => {
                failed_init = true;
                init_statuses.push(if never {
                    status(&name, &image, e.terminated(at), false, 0)
                } else {
                    crash_loop(e, &name, &image)
                });
            }
            Some(e) => init_statuses.push(status(&name, &image, e.terminated(at), true, 0)),
            None => init_statuses.push(status(
                &name,
                &image,
                json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": at, "finishedAt": at}}),
                true,
                0,
            )),
        }
    }
    let regular = names("containers");
    if failed_init {
        let statuses = regular
            .iter()
            .map(|(name, image)| {
                status(
                    name,
                    image,
                    json!({"waiting": {"reason": "PodInitializing"}}),
                    false,
                    0,
                )
            })
            .collect();
        return Some(Outcome {
            phase: if never { "Failed" } else { "Pending" },
            initialized: false,
            init_statuses,
            statuses,
            all_running: false,
        });
    }
    let mut failed = false;
    let mut exited = 0;
    let mut statuses = Vec::new();
    for (name, image) in &regular {
        match exit_of(exits, name) {
            Some(e) if never || e.exit_code == 0 => {
                failed |= e.exit_code != 0;
                exited += 1;
                statuses.push(status(name, image, e.terminated(at), false, 0));
            }
            Some(e) => statuses.push(crash_loop(e, name, image)),
            None => statuses.push(status(
                name,
                image,
                json!({"running": {"startedAt": at}}),
                true,
                0,
            )),
        }
    }
    let phase = if failed {
        "Failed"
    } else if exited == regular.len() && !regular.is_empty() {
        "Succeeded"
    } else {
        "Running"
    };
    Some(Outcome {
        phase,
        initialized: true,
        all_running: statuses.iter().all(|s| s["state"].get("running").is_some()),
        init_statuses,
        statuses,
    })
}

/// `GET .../pods/{name}/log`: the registered log of the container (`container` may be
/// left out when the pod has one regular container), its last `tail_lines` lines when
/// asked. Refused as the API server refuses it: an unknown container, a missing choice,
/// a container that has not started.
pub fn log(
    pod: &Value,
    exits: &[ContainerExit],
    container: Option<&str>,
    tail_lines: Option<&str>,
) -> ApiResult<String> {
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let list = |key: &str| -> Vec<&str> {
        pod["spec"][key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str())
            .collect()
    };
    let (regular, init) = (list("containers"), list("initContainers"));
    let name = match container.filter(|c| !c.is_empty()) {
        Some(c) => c,
        None => match regular.as_slice() {
            [only] => only,
            _ => {
                return Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {pod_name}, choose one of: [{}] or one of the init containers: [{}]",
                    regular.join(" "),
                    init.join(" ")
                )));
            }
        },
    };
    if !regular.contains(&name) && !init.contains(&name) {
        return Err(ApiError::bad_request(format!(
            "container {name} is not valid for pod {pod_name}"
        )));
    }
    let state = ["initContainerStatuses", "containerStatuses"]
        .iter()
        .flat_map(|k| pod["status"][k].as_array().into_iter().flatten())
        .find(|s| s["name"] == name)
        .map(|s| s["state"].clone());
    let started = state
        .as_ref()
        .is_some_and(|s| s.get("running").is_some() || s.get("terminated").is_some());
    let restarted = ["initContainerStatuses", "containerStatuses"]
        .iter()
        .flat_map(|k| pod["status"][k].as_array().into_iter().flatten())
        .any(|s| s["name"] == name && s.get("lastState").is_some_and(|l| !l.is_null()));
    if !started && !restarted {
        let reason = state
            .as_ref()
            .and_then(|s| s["waiting"]["reason"].as_str())
            .unwrap_or("ContainerCreating");
        return Err(ApiError::bad_request(format!(
            "container \"{name}\" in pod \"{pod_name}\" is waiting to start: {reason}"
        )));
    }
    let text = exit_of(exits, name)
        .map(|e| e.log.as_str())
        .unwrap_or_default();
    Ok(match tail_lines.and_then(|t| t.parse::<usize>().ok()) {
        Some(n) => tail(text, n),
        None => text.to_string(),
    })
}

/// The last `n` lines of `text`, each with its newline.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    lines[lines.len().saturating_sub(n)..].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipe_pod() -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"restartPolicy": "Never",
            "initContainers": [{"name": "fetch", "image": "busybox"}, {"name": "after", "image": "busybox"}],
            "containers": [{"name": "serve", "image": "busybox"}]}})
    }

    fn exit(container: &str, code: i32, log: &str) -> ContainerExit {
        ContainerExit {
            namespace: "ns".into(),
            pod: Some("p".into()),
            selector: None,
            container: container.into(),
            exit_code: code,
            reason: None,
            log: log.into(),
        }
    }

    #[test]
    fn a_failing_init_container_fails_a_never_restarted_pod() {
        let exits = [exit("fetch", 1, "a\nb\nc\n")];
        let o = outcome(&pipe_pod(), &exits, "t").expect("an outcome");
        assert_eq!(o.phase, "Failed");
        assert!(!o.initialized);
        assert_eq!(o.init_statuses[0]["state"]["terminated"]["exitCode"], 1);
        assert_eq!(o.init_statuses[0]["state"]["terminated"]["reason"], "Error");
        assert_eq!(
            o.init_statuses[1]["state"]["waiting"]["reason"],
            "PodInitializing"
        );
        assert_eq!(
            o.statuses[0]["state"]["waiting"]["reason"],
            "PodInitializing"
        );
        let mut pod = pipe_pod();
        pod["status"]["initContainerStatuses"] = json!(o.init_statuses);
        pod["status"]["containerStatuses"] = json!(o.statuses);
        assert_eq!(
            log(&pod, &exits, Some("fetch"), Some("2")).unwrap(),
            "b\nc\n"
        );
        assert_eq!(log(&pod, &exits, Some("fetch"), None).unwrap(), "a\nb\nc\n");
        let waiting = log(&pod, &exits, Some("serve"), None).unwrap_err();
        assert!(
            waiting
                .message
                .contains("is waiting to start: PodInitializing"),
            "{waiting:?}"
        );
        let unknown = log(&pod, &exits, Some("nope"), None).unwrap_err();
        assert!(
            unknown
                .message
                .contains("container nope is not valid for pod p"),
            "{unknown:?}"
        );
    }

    #[test]
    fn restarted_pods_crash_loop_and_regular_containers_end_the_pod() {
        let mut pod = pipe_pod();
        pod["spec"]["restartPolicy"] = json!("Always");
        let o = outcome(&pod, &[exit("fetch", 2, "")], "t").expect("an outcome");
        assert_eq!(o.phase, "Pending");
        assert_eq!(
            o.init_statuses[0]["state"]["waiting"]["reason"],
            "CrashLoopBackOff"
        );
        assert_eq!(o.init_statuses[0]["lastState"]["terminated"]["exitCode"], 2);
        let o = outcome(&pipe_pod(), &[exit("serve", 0, "done\n")], "t").expect("an outcome");
        assert_eq!(o.phase, "Succeeded");
        let o = outcome(&pipe_pod(), &[exit("serve", 3, "")], "t").expect("an outcome");
        assert_eq!(o.phase, "Failed");
        assert!(outcome(&pipe_pod(), &[], "t").is_none());
    }
}
