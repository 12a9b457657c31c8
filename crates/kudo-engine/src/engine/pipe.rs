//! Pipe tasks: run a pod whose init containers produce files, copy the files into a
//! Secret or ConfigMap, remove the pod. Later templates name the artifact through
//! `.Pipes.<key>`; artifact names are deterministic, so they are known before the run.

use std::collections::BTreeMap;

use base64::Engine as _;
use kudo_package::{PipeSpec, Plan, TaskSpec};
use serde_json::{Map, Value, json};

use super::EngineError;
use super::error::Location;

/// The container we add to the pipe pod; it only keeps the volumes alive while we copy.
pub(crate) const PIPE_CONTAINER: &str = "kudo-pipe-files";
const PIPE_IMAGE: &str = "busybox:1.36";

/// DNS-1123 subdomain: lowercase, `[a-z0-9.-]`, at most 253 characters.
fn dns_name(raw: &str) -> String {
    let mut s: String = raw
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    s.truncate(253);
    s.trim_matches(|c| c == '-' || c == '.').to_string()
}

/// `<instance>.<plan>.<phase>.<step>.<task>`: the pipe pod.
pub(crate) fn pod_name(instance: &str, loc: &Location, task: &str) -> String {
    dns_name(&format!(
        "{instance}.{}.{}.{}.{task}",
        loc.plan, loc.phase, loc.step
    ))
}

/// `<instance>.<plan>.<phase>.<step>.<task>.<key>`: the Secret/ConfigMap of one pipe file.
pub(crate) fn artifact_name(instance: &str, loc: &Location, task: &str, key: &str) -> String {
    dns_name(&format!(
        "{instance}.{}.{}.{}.{task}.{key}",
        loc.plan, loc.phase, loc.step
    ))
}

/// `.Pipes` for templates of `plan`: every pipe key of every Pipe task in it.
pub(crate) fn plan_pipes(
    package: &kudo_package::Package,
    instance: &str,
    plan_name: &str,
    plan: &Plan,
) -> BTreeMap<String, String> {
    let mut pipes = BTreeMap::new();
    for phase in &plan.phases {
        for step in &phase.steps {
            let loc = Location {
                plan: plan_name.to_string(),
                phase: phase.name.clone(),
                step: step.name.clone(),
            };
            for task_name in &step.tasks {
                if let Some(TaskSpec::Pipe { pipe, .. }) = package.task(task_name).map(|t| &t.spec)
                {
                    for p in pipe {
                        pipes.insert(
                            p.key.clone(),
                            artifact_name(instance, &loc, task_name, &p.key),
                        );
                    }
                }
            }
        }
    }
    pipes
}

/// Makes the rendered pod a pipe pod: our name, and a long-running container mounting
/// every volume the init containers write to, so the files can be read after they ran.
pub(crate) fn prepare_pod(mut pod: Value, name: &str) -> Result<Value, EngineError> {
    if pod.get("kind").and_then(Value::as_str) != Some("Pod") {
        return Err(EngineError::fatal(
            "the pipe template must render exactly one Pod",
        ));
    }
    if pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty())
    {
        return Err(EngineError::fatal(
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
        return Err(EngineError::fatal(
            "the pipe Pod's initContainers mount no volume, so their files cannot be read afterwards (add an emptyDir volume)",
        ));
    }
    let Some(obj) = pod.as_object_mut() else {
        return Err(EngineError::fatal(
            "the pipe template must render a Pod object",
        ));
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

/// The Secret or ConfigMap holding one pipe file. A plain file becomes one entry named
/// after the file; an `envFile` (KEY=VALUE lines) becomes one entry per line.
pub(crate) fn artifact(spec: &PipeSpec, name: &str, content: &[u8]) -> Result<Value, EngineError> {
    let mut entries: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    match (&spec.file, &spec.env_file) {
        (Some(file), _) => {
            let base = file.rsplit('/').next().unwrap_or(file).to_string();
            entries.insert(base, content.to_vec());
        }
        (None, Some(_)) => {
            for line in String::from_utf8_lossy(content).lines() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                if let Some((k, v)) = line.split_once('=') {
                    entries.insert(k.trim().to_string(), v.as_bytes().to_vec());
                }
            }
        }
        (None, None) => {
            return Err(EngineError::fatal(format!(
                "pipe {} names neither file nor envFile",
                spec.key
            )));
        }
    }
    match spec.kind.as_str() {
        "Secret" => {
            let data: Map<String, Value> = entries
                .into_iter()
                .map(|(k, v)| {
                    (
                        k,
                        json!(base64::engine::general_purpose::STANDARD.encode(v)),
                    )
                })
                .collect();
            Ok(
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": "Opaque", "data": data}),
            )
        }
        "ConfigMap" => {
            let mut data = Map::new();
            let mut binary = Map::new();
            for (k, v) in entries {
                match String::from_utf8(v) {
                    Ok(text) => data.insert(k, json!(text)),
                    Err(e) => binary.insert(
                        k,
                        json!(base64::engine::general_purpose::STANDARD.encode(e.into_bytes())),
                    ),
                };
            }
            let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data});
            if !binary.is_empty() {
                cm["binaryData"] = Value::Object(binary);
            }
            Ok(cm)
        }
        other => Err(EngineError::fatal(format!(
            "pipe {} has kind {other:?}; it must be Secret or ConfigMap",
            spec.key
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc() -> Location {
        Location {
            plan: "deploy".into(),
            phase: "Main".into(),
            step: "gen_files".into(),
        }
    }

    #[test]
    fn names_are_dns_subdomains() {
        assert_eq!(
            artifact_name("cow", &loc(), "genwww", "indexHtml"),
            "cow.deploy.main.gen-files.genwww.indexhtml"
        );
        assert_eq!(
            pod_name("cow", &loc(), "genwww"),
            "cow.deploy.main.gen-files.genwww"
        );
    }

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

    #[test]
    fn artifacts() {
        let spec = |file: Option<&str>, env: Option<&str>, kind: &str| PipeSpec {
            file: file.map(str::to_string),
            env_file: env.map(str::to_string),
            kind: kind.into(),
            key: "k".into(),
        };
        let cm = artifact(
            &spec(Some("/tmp/index.html"), None, "ConfigMap"),
            "n",
            b"<p>hi</p>",
        )
        .unwrap();
        assert_eq!(cm.pointer("/data/index.html"), Some(&json!("<p>hi</p>")));
        let s = artifact(&spec(Some("/tmp/tls.key"), None, "Secret"), "n", b"abc").unwrap();
        assert_eq!(s.pointer("/data/tls.key"), Some(&json!("YWJj")));
        let env = artifact(
            &spec(None, Some("/tmp/env"), "ConfigMap"),
            "n",
            b"A=1\n# c\nB=x=y\n",
        )
        .unwrap();
        assert_eq!(env.pointer("/data/A"), Some(&json!("1")));
        assert_eq!(env.pointer("/data/B"), Some(&json!("x=y")));
        assert!(artifact(&spec(Some("/f"), None, "Deployment"), "n", b"").is_err());
    }
}
