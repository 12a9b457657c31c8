//! The pod of a Pipe task as it will be created: KUDO's rules on what the template
//! renders, checked before anything runs.

use serde_json::{Map, Value, json};

use crate::PlanError;

/// The container we add to the pipe pod; it only keeps the volumes alive while we copy.
pub const PIPE_CONTAINER: &str = "kudo-pipe-files";
const PIPE_IMAGE: &str = "busybox:1.36";

/// Makes the rendered pod a pipe pod: our name, and a long-running container mounting
/// every volume the init containers write to, so the files can be read after they ran.
pub fn prepare_pod(mut pod: Value, name: &str) -> Result<Value, PlanError> {
    if pod.get("kind").and_then(Value::as_str) != Some("Pod") {
        return Err(PlanError::new(
            "the pipe template must render exactly one Pod",
        ));
    }
    if pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty())
    {
        return Err(PlanError::new(
            "the pipe Pod must only have initContainers that write the files; the provider adds the container that serves them",
        ));
    }
    let mut mounts: Vec<Value> = Vec::new();
    for init in pod
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for m in init
            .get("volumeMounts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let path = m.get("mountPath");
            if !mounts.iter().any(|x| x.get("mountPath") == path) {
                mounts.push(json!({ "name": m.get("name"), "mountPath": path }));
            }
        }
    }
    if mounts.is_empty() {
        return Err(PlanError::new(
            "the pipe Pod's initContainers mount no volume, so their files cannot be read afterwards (add an emptyDir volume)",
        ));
    }
    let Some(obj) = pod.as_object_mut() else {
        return Err(PlanError::new("the pipe template must render a Pod object"));
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert("name".into(), json!(name));
    }
    let spec = obj
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(spec) = spec.as_object_mut() {
        spec.insert("restartPolicy".into(), json!("Never"));
        spec.insert(
            "containers".into(),
            json!([{
                "name": PIPE_CONTAINER,
                "image": PIPE_IMAGE,
                "command": ["/bin/sh", "-c", "sleep 3600"],
                "volumeMounts": mounts,
            }]),
        );
    }
    Ok(pod)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_pod_gets_a_file_serving_container() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "spec": {
            "volumes": [{"name": "shared", "emptyDir": {}}],
            "initContainers": [{"name": "init", "image": "busybox", "volumeMounts": [{"name": "shared", "mountPath": "/tmp"}]}]}});
        let p = prepare_pod(pod, "x").unwrap();
        assert_eq!(p.pointer("/metadata/name"), Some(&json!("x")));
        assert_eq!(
            p.pointer("/spec/containers/0/volumeMounts/0/mountPath"),
            Some(&json!("/tmp"))
        );
        let with_container = json!({"kind": "Pod", "spec": {"containers": [{"name": "c"}]}});
        assert!(prepare_pod(with_container, "x").is_err());
        assert!(
            prepare_pod(
                json!({"kind": "Pod", "spec": {"initContainers": [{"name": "i"}]}}),
                "x"
            )
            .is_err()
        );
    }
}
