//! `kubectl` against a real cluster: the namespaces each run works in, and the yardstick
//! the provider is compared with, `kubectl apply --server-side` and `kubectl diff
//! --server-side` of the same objects as plain manifests.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::configmaps::Manifests;
use crate::run::Measured;
use crate::stats::{Sample, ms};

fn kubectl(kubeconfig: &Path) -> Command {
    let mut c = Command::new("kubectl");
    c.arg("--kubeconfig").arg(kubeconfig);
    c
}

/// Runs `cmd`; panics with its output unless it exits with one of `ok`.
fn run(mut cmd: Command, ok: &[i32]) -> (Output, Duration) {
    let started = Instant::now();
    let out = cmd.output().expect("run kubectl (is it on PATH?)");
    let took = started.elapsed();
    assert!(
        out.status.code().is_some_and(|c| ok.contains(&c)),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, took)
}

/// Creates a namespace no earlier run used and returns its name.
pub fn create_namespace(kubeconfig: &Path, prefix: &str) -> String {
    static CREATED: AtomicUsize = AtomicUsize::new(0);
    let name = format!(
        "{prefix}-{}-{}",
        std::process::id(),
        CREATED.fetch_add(1, Ordering::Relaxed)
    );
    let mut cmd = kubectl(kubeconfig);
    cmd.args(["create", "namespace", &name]);
    run(cmd, &[0]);
    name
}

/// Deletes a namespace and waits until it is gone, so the next run does not share the
/// API server with the garbage collection of this one.
pub fn delete_namespace(kubeconfig: &Path, name: &str) {
    let started = Instant::now();
    let mut cmd = kubectl(kubeconfig);
    cmd.args(["delete", "namespace", name, "--wait=true", "--timeout=10m"]);
    run(cmd, &[0]);
    eprintln!(
        "[bench]   deleted namespace {name} in {}",
        ms(started.elapsed())
    );
}

/// The cluster's version as its API server reports it (`gitVersion`).
pub fn server_version(kubeconfig: &Path) -> String {
    let mut cmd = kubectl(kubeconfig);
    cmd.args(["get", "--raw", "/version"]);
    let (out, _) = run(cmd, &[0]);
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v["gitVersion"].as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

/// `kubectl`'s times over the runs of one scenario.
#[derive(Default)]
pub struct Timings {
    pub apply: Sample,
    pub diff: Sample,
}

/// One run: the manifests applied server-side into a fresh namespace (create), then
/// diffed server-side (nothing to change), then the namespace deleted.
pub fn measure_once(kubeconfig: &Path, manifests: &Manifests, into: &mut Timings) {
    let namespace = create_namespace(kubeconfig, "kudo-bench-kubectl");
    let mut apply = kubectl(kubeconfig);
    apply
        .args(["apply", "--server-side", "-n", &namespace, "-f"])
        .arg(&manifests.dir);
    let (_, took) = run(apply, &[0]);
    into.apply.push(took);
    let mut diff = kubectl(kubeconfig);
    diff.args(["diff", "--server-side", "-n", &namespace, "-f"])
        .arg(&manifests.dir);
    // kubectl diff exits 1 when it found a difference: still a valid timing, but worth
    // seeing, since nothing should differ right after the apply.
    let (out, took) = run(diff, &[0, 1]);
    if out.status.code() == Some(1) {
        let text = String::from_utf8_lossy(&out.stdout);
        let head: Vec<&str> = text.lines().take(20).collect();
        eprintln!(
            "[bench]   kubectl diff found differences right after the apply:\n{}",
            head.join("\n")
        );
    }
    into.diff.push(took);
    eprintln!(
        "[bench] kubectl, {} ConfigMaps: apply {}, diff {}",
        manifests.count,
        ms(into.apply.nth(into.apply.len() - 1)),
        ms(took)
    );
    delete_namespace(kubeconfig, &namespace);
}

/// The provider against kubectl, one row per scenario: medians over the runs.
pub fn print_comparison(rows: &[(usize, &Measured, &Timings)]) {
    println!(
        "\n| N | `terraform apply` (create) | `kubectl apply --server-side` | ratio | no-change `terraform plan` | `kubectl diff --server-side` | ratio | peak provider RSS |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let ratio = |a: &Sample, b: &Sample| {
        format!(
            "{:.2}x",
            a.median().as_secs_f64() / b.median().as_secs_f64().max(1e-9)
        )
    };
    for (count, m, k) in rows {
        println!(
            "| {count} | {} | {} | {} | {} | {} | {} | {:.1} MiB |",
            m.apply,
            k.apply,
            ratio(&m.apply, &k.apply),
            m.refresh,
            k.diff,
            ratio(&m.refresh, &k.diff),
            m.peak_rss_kib() as f64 / 1024.0
        );
    }
}
