//! One scenario's runs: plan, apply, two no-change plans, a changing plan and an
//! update apply (for scenarios that have an update) and destroy with real Terraform,
//! each run against a fresh cluster (see [`crate::cluster`]).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::cluster::{Cluster, Target};
use crate::scenarios::{Scenario, with_provider_setting};
use crate::stats::{Sample, ms};
use crate::terraform::{ProviderUse, Workspace};

/// What one scenario measured over its runs. Request counts are `None` on a real
/// cluster, whose requests the benchmark cannot see.
#[derive(Default)]
pub struct Measured {
    pub plan: Sample,
    pub apply: Sample,
    pub destroy: Sample,
    pub plan_provider: Vec<ProviderUse>,
    pub apply_provider: Vec<ProviderUse>,
    /// Terraform's own CPU and kube-sim's during each apply (`None`: a real cluster's
    /// API server, whose CPU is not this process's).
    pub apply_terraform_cpu: Vec<Duration>,
    pub apply_sim_cpu: Vec<Option<Duration>>,
    pub requests: Vec<Option<BTreeMap<String, u64>>>,
    /// `terraform plan` right after the apply (a refresh, nothing to change), with
    /// field-level drift on (the default) and with the provider's `drift = "ignore"`,
    /// and the API requests each made.
    pub refresh: Sample,
    pub refresh_requests: Vec<Option<u64>>,
    pub refresh_no_drift: Sample,
    pub refresh_no_drift_requests: Vec<Option<u64>>,
    /// The provider processes of the no-change plans (drift on, then off) and of the
    /// destroy.
    pub refresh_provider: Vec<ProviderUse>,
    pub destroy_provider: Vec<ProviderUse>,
    /// `terraform plan` and `terraform apply` of the scenario's update, which changes
    /// every object (empty for scenarios without one).
    pub changing_plan: Sample,
    pub update: Sample,
    pub changing_plan_provider: Vec<ProviderUse>,
    pub update_provider: Vec<ProviderUse>,
    /// `terraform apply` (create) with no `terraform plan` before it and no dry-run
    /// answers kept from one (`-auto-approve` in a fresh job), for the scenarios compared
    /// with the direct apply: its own plan dry-runs, its final plan takes those answers.
    pub apply_alone: Sample,
}

impl Measured {
    /// The largest peak RSS of any provider process of any command of any run, in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        self.plan_provider
            .iter()
            .chain(&self.apply_provider)
            .chain(&self.refresh_provider)
            .chain(&self.destroy_provider)
            .chain(&self.changing_plan_provider)
            .chain(&self.update_provider)
            .map(|p| p.peak_rss_kib)
            .max()
            .unwrap_or(0)
    }
}

/// Requests per verb made between two snapshots of kube-sim's counters.
pub fn verbs(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (key, n) in after {
        let made = n - before.get(key).copied().unwrap_or(0);
        let verb = key.split(' ').next().unwrap_or_default().to_uppercase();
        *out.entry(verb).or_insert(0) += made;
    }
    out.retain(|_, n| *n > 0);
    out
}

/// With `KUDO_BENCH_REQUESTS` set, every request a command made by verb and resource:
/// which ones a change saves.
fn log_requests(
    command: &str,
    before: &Option<BTreeMap<String, u64>>,
    after: &Option<BTreeMap<String, u64>>,
) {
    let (Some(before), Some(after)) = (before, after) else {
        return;
    };
    if std::env::var_os("KUDO_BENCH_REQUESTS").is_none() {
        return;
    }
    eprintln!("[bench]   requests of the {command}:");
    for (key, n) in after {
        let made = n - before.get(key).copied().unwrap_or(0);
        if made > 0 {
            eprintln!("[bench]   {made:6} {key}");
        }
    }
}

/// One run, its figures appended to `m`.
pub fn run_once(
    rt: &tokio::runtime::Runtime,
    scenario: &Scenario,
    target: &Target,
    m: &mut Measured,
) {
    let root = tempfile::tempdir().expect("temp dir");
    let cluster = Cluster::start(rt, target, root.path());
    let mut ws = Workspace::new(
        root.path(),
        &crate::terraform_path(),
        &crate::provider_binary(),
        cluster.kubeconfig(),
    );
    ws.set_env("TF_VAR_namespace", cluster.namespace());
    // On a real cluster the provider block names the kubeconfig, as a user's would.
    let for_target = |text: &str| {
        if cluster.is_real() {
            with_provider_setting(
                text,
                &format!(
                    "config_path = {:?}",
                    cluster.kubeconfig().display().to_string()
                ),
            )
        } else {
            text.to_string()
        }
    };
    let config = for_target(&scenario.config);
    ws.write_config(&config);
    let latency = match target.latency_ms() {
        0 => String::new(),
        l => format!(" (+{l} ms per request)"),
    };

    let before = cluster.request_counts();
    let plan = ws.plan();
    m.plan.push(plan.wall);
    m.plan_provider.push(plan.provider);
    log_requests("plan", &before, &cluster.request_counts());
    let before = cluster.request_counts();
    let apply = ws.apply(scenario.parallelism);
    let after = cluster.request_counts();
    log_requests("apply", &before, &after);
    m.requests
        .push(before.zip(after).map(|(b, a)| verbs(&b, &a)));
    m.apply.push(apply.wall);
    m.apply_provider.push(apply.provider);
    m.apply_terraform_cpu.push(apply.terraform_cpu);
    m.apply_sim_cpu
        .push((!cluster.is_real()).then_some(apply.sim_cpu));

    // Runs a no-change plan: its wall time and the requests it made.
    let refresh = |ws: &Workspace, m: &mut Measured, what: &str| {
        let before = cluster.request_counts();
        let run = ws.plan();
        m.refresh_provider.push(run.provider);
        let after = cluster.request_counts();
        log_requests(what, &before, &after);
        let made = before.zip(after).map(|(b, a)| verbs(&b, &a).values().sum());
        (run.wall, made)
    };
    let (wall, made) = refresh(&ws, m, "no-change plan");
    m.refresh.push(wall);
    m.refresh_requests.push(made);
    ws.write_config(&with_provider_setting(&config, "drift = \"ignore\""));
    let (no_drift, made) = refresh(&ws, m, "no-change plan, drift = \"ignore\"");
    m.refresh_no_drift.push(no_drift);
    m.refresh_no_drift_requests.push(made);
    // The destroy runs with the configuration last applied, as a user's would: its
    // pre-destroy refresh then plans no change.
    let mut last_applied = config.clone();
    let mut updated = String::new();
    if let Some(update) = &scenario.update {
        last_applied = for_target(update);
        ws.write_config(&last_applied);
        let changing = ws.plan();
        m.changing_plan.push(changing.wall);
        m.changing_plan_provider.push(changing.provider);
        let apply = ws.apply(scenario.parallelism);
        m.update.push(apply.wall);
        m.update_provider.push(apply.provider);
        updated = format!(
            ", changing plan {}, update apply {}",
            ms(changing.wall),
            ms(apply.wall)
        );
    }
    ws.write_config(&last_applied);
    let destroy = ws.destroy();
    m.destroy.push(destroy.wall);
    m.destroy_provider.push(destroy.provider);
    if scenario.manifests.is_some() {
        // The same create again, alone: without the earlier plans' dry-run answers.
        ws.write_config(&config);
        let _ = std::fs::remove_dir_all(ws.dir.join(".terraform/kudo/dry-runs"));
        let alone = ws.apply(scenario.parallelism);
        m.apply_alone.push(alone.wall);
        ws.destroy();
    }
    eprintln!(
        "[bench] {}{latency}: plan {}, apply {}, no-change plan {}{updated}, destroy {}",
        scenario.name,
        ms(plan.wall),
        ms(apply.wall),
        ms(wall),
        ms(destroy.wall)
    );
}
