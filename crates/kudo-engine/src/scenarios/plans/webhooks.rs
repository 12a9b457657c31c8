//! Webhook tasks and pruning: the objects a webhook answered stay while its latest
//! answer holds them, whatever other plans run, and a failed call prunes nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::engine::{self, RunRequest};
use crate::scenarios::common::*;
use serde_json::{Value, json};

/// A webhook on 127.0.0.1 answering ConfigMaps `<instance>-<n>` for each letter of
/// the `ITEMS` parameter (`ab` -> `-a`, `-b`), or 500 when `ITEMS` is `fail`.
/// Returns the URL and the call counter; the thread ends with the test process.
fn webhook() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            counter.fetch_add(1, Ordering::SeqCst);
            let Ok(clone) = stream.try_clone() else {
                continue;
            };
            let mut reader = BufReader::new(clone);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).map_or(true, |n| n == 0) || line.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let name = request["instance"]["name"]
                .as_str()
                .unwrap_or("x")
                .to_string();
            let items = request["parameters"]["ITEMS"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let (status, answer) = if items == "fail" {
                ("500 Error", "down".to_string())
            } else {
                let objects: Vec<Value> = items
                    .chars()
                    .map(|c| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("{name}-{c}")}}))
                    .collect();
                (
                    "200 OK",
                    json!({"kind": "List", "items": objects}).to_string(),
                )
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (url, calls)
}

fn operator(with_webhook: bool) -> String {
    let (task, step) = if with_webhook {
        (
            "  - name: remote\n    kind: Webhook\n    spec:\n      url: \"{{ .Params.URL }}\"\n      timeout: 5s\n",
            "          - name: remote\n            tasks: [remote]\n",
        )
    } else {
        ("", "")
    };
    format!(
        "name: hooked\noperatorVersion: 0.1.0\ntasks:\n  - name: local\n    kind: Apply\n    spec:\n      resources: [local.yaml]\n{task}plans:\n  deploy:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n          - name: local\n            tasks: [local]\n{step}  other:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n          - name: local\n            tasks: [local]\n"
    )
}

const PARAMS: &str = "parameters:\n  - name: URL\n  - name: ITEMS\n    default: ab\n";
const LOCAL: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-local\ndata:\n  items: {{ .Params.ITEMS | quote }}\n";

fn cm(name: &str) -> crate::cluster::ObjectRef {
    oref("v1", "ConfigMap", Some("default"), name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_objects_stay_while_the_latest_answer_holds_them() {
    let (url, calls) = webhook();
    let pkg = package(&operator(true), PARAMS, &[("local.yaml", LOCAL)]);
    let (_sim, cluster) = sim().await;
    let values = params(&[("URL", &url)]);
    let out = run(&cluster, request(&pkg, "w", "default", &values, "deploy"))
        .await
        .expect("deploy");
    assert_eq!(out.inventory, vec![cm("w-a"), cm("w-b"), cm("w-local")]);
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // Another plan, without the webhook task: no new answer, so nothing it answered
    // goes, although no template renders those objects.
    let out = run(
        &cluster,
        RunRequest {
            previous_inventory: &out.inventory,
            ..request(&pkg, "w", "default", &values, "other")
        },
    )
    .await
    .expect("other plan");
    assert_eq!(out.inventory, vec![cm("w-a"), cm("w-b"), cm("w-local")]);
    assert!(cluster.get(&cm("w-b")).await.expect("get").is_some());
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // A failed call fails the run before anything is pruned.
    let failing = params(&[("URL", &url), ("ITEMS", "fail")]);
    let e = run(
        &cluster,
        RunRequest {
            previous_inventory: &out.inventory,
            ..request(&pkg, "w", "default", &failing, "deploy")
        },
    )
    .await
    .expect_err("500 fails the run");
    assert_eq!(e.task.as_deref(), Some("remote"));
    assert!(
        e.to_string().contains("HTTP 500") && e.to_string().contains("\"down\""),
        "{e}"
    );
    assert!(!e.fatal, "a 500 may pass later: {e}");
    for name in ["w-a", "w-b"] {
        assert!(
            cluster.get(&cm(name)).await.expect("get").is_some(),
            "{name} was pruned"
        );
    }

    // The webhook answers without `b`: its latest answer no longer holds it.
    let fewer = params(&[("URL", &url), ("ITEMS", "a")]);
    let out = run(
        &cluster,
        RunRequest {
            previous_inventory: &out.inventory,
            ..request(&pkg, "w", "default", &fewer, "deploy")
        },
    )
    .await
    .expect("deploy with fewer items");
    assert_eq!(out.inventory, vec![cm("w-a"), cm("w-local")]);
    assert!(cluster.get(&cm("w-b")).await.expect("get").is_none());

    // A package version without the webhook task: nothing can answer for `a` any more.
    let plain = package(&operator(false), PARAMS, &[("local.yaml", LOCAL)]);
    let out = run(
        &cluster,
        RunRequest {
            previous_inventory: &out.inventory,
            ..request(&plain, "w", "default", &fewer, "deploy")
        },
    )
    .await
    .expect("deploy without the webhook");
    assert_eq!(out.inventory, vec![cm("w-local")]);
    assert!(cluster.get(&cm("w-a")).await.expect("get").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_to_another_machine_is_refused_without_calling() {
    let pkg = package(&operator(true), PARAMS, &[("local.yaml", LOCAL)]);
    let (_sim, cluster) = sim().await;
    let values = params(&[("URL", "http://192.0.2.1/hook")]);
    let e = run(&cluster, request(&pkg, "w", "default", &values, "deploy"))
        .await
        .expect_err("refused");
    assert!(e.fatal, "{e}");
    assert!(e.to_string().contains("allow_insecure_webhooks"), "{e}");
    let walk =
        engine::desired_state(&request(&pkg, "w", "default", &values, "deploy")).expect("walk");
    // The plan-time check says the same.
    let e = engine::preview_walk(
        &cluster,
        &request(&pkg, "w", "default", &values, "deploy"),
        walk.plan("deploy").expect("deploy"),
        engine::Answers::Drop,
    )
    .await
    .expect_err("refused at plan time");
    assert_eq!(e.task.as_deref(), Some("remote"));
    assert!(e.to_string().contains("allow_insecure_webhooks"), "{e}");
}
