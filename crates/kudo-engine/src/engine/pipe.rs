//! Pipe tasks: run a pod whose init containers produce files, copy the files into a
//! Secret or ConfigMap, remove the pod. Later templates name the artifact through
//! `.Pipes.<key>`; the pod and the artifact names come from the walk (kudo-plan).

use std::collections::BTreeMap;

use base64::Engine as _;
use kudo_package::PipeSpec;
use serde_json::{Map, Value, json};

use super::error::EngineError;

pub(crate) use kudo_plan::pipe::PIPE_CONTAINER;

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
