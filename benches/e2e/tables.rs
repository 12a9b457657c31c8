//! The Markdown tables of the Terraform scenarios, one row per scenario and latency.

use std::time::Duration;

use crate::run::Measured;
use crate::scenarios::Scenario;
use crate::stats::ms;

/// One scenario measured at one added latency.
pub struct Row<'a> {
    pub scenario: &'a Scenario,
    pub latency_ms: u64,
    pub measured: Measured,
}

impl Row<'_> {
    /// The scenario's name, with the added latency when there is one.
    pub fn label(&self) -> String {
        match self.latency_ms {
            0 => self.scenario.name.clone(),
            l => format!("{} (+{l} ms per request)", self.scenario.name),
        }
    }
}

/// The run with the median apply (its index and wall time): the run whose figures the
/// tables show.
pub fn median_apply(m: &Measured) -> (usize, Duration) {
    let applies: Vec<Duration> = (0..m.apply.len()).map(|i| m.apply.nth(i)).collect();
    let mut idx: Vec<usize> = (0..applies.len()).collect();
    idx.sort_by_key(|&i| applies[i]);
    let i = idx.get(idx.len() / 2).copied().unwrap_or(0);
    (i, applies.get(i).copied().unwrap_or_default())
}

/// The median of request counts; `None` when they were not counted (a real cluster).
pub fn median_count(v: &[Option<u64>]) -> Option<u64> {
    let mut v: Vec<u64> = v.iter().copied().collect::<Option<_>>()?;
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// A count, or "n/a" where the requests could not be counted.
pub fn count_or_na(n: Option<u64>) -> String {
    n.map_or_else(|| "n/a".to_string(), |n| n.to_string())
}

fn share(cpu: Duration, wall: Duration) -> String {
    format!(
        "{:.1}%",
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64().max(1e-9)
    )
}

pub fn print_table(rows: &[Row]) {
    println!(
        "| configuration | instances | `terraform plan` | provider CPU (share) | `terraform apply` | provider CPU (share) | provider processes (plan/apply) | peak provider RSS | API requests per apply |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for row in rows {
        let m = &row.measured;
        let (i, apply) = median_apply(m);
        let (pp, ap) = (m.plan_provider[i], m.apply_provider[i]);
        let requests = match &m.requests[i] {
            Some(requests) => {
                let total: u64 = requests.values().sum();
                let detail: Vec<String> =
                    requests.iter().map(|(v, n)| format!("{v} {n}")).collect();
                format!("{total} ({})", detail.join(", "))
            }
            None => "n/a".to_string(),
        };
        let rss = pp.peak_rss_kib.max(ap.peak_rss_kib);
        println!(
            "| {} | {} | {} | {} ({}) | {} | {} ({}) | {}/{} | {:.1} MiB | {} |",
            row.label(),
            row.scenario.instances,
            m.plan,
            ms(pp.cpu),
            share(pp.cpu, m.plan.median()),
            m.apply,
            ms(ap.cpu),
            share(ap.cpu, apply),
            pp.processes,
            ap.processes,
            rss as f64 / 1024.0,
            requests
        );
    }
}

/// Where the CPU of each `terraform apply` goes (the run with the median apply), and
/// the shortest the apply could take if that CPU were spread perfectly over the cores.
/// A real cluster's API server is not measured, so its rows stop at the provider.
pub fn print_cpu_table(rows: &[Row], cores: usize) {
    println!(
        "\n| configuration | `terraform apply` | Terraform CPU | provider CPU | kube-sim CPU | all CPU / ({cores} cores x wall) | CPU-bound floor (all CPU / {cores}) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for row in rows {
        let m = &row.measured;
        let (i, apply) = median_apply(m);
        let (tf, provider) = (m.apply_terraform_cpu[i], m.apply_provider[i].cpu);
        let Some(sim) = m.apply_sim_cpu[i] else {
            println!(
                "| {} | {} | {} | {} | n/a | n/a | n/a |",
                row.label(),
                ms(apply),
                ms(tf),
                ms(provider)
            );
            continue;
        };
        let all = tf + provider + sim;
        println!(
            "| {} | {} | {} | {} | {} | {:.0}% | {} |",
            row.label(),
            ms(apply),
            ms(tf),
            ms(provider),
            ms(sim),
            100.0 * all.as_secs_f64() / (cores as f64 * apply.as_secs_f64()).max(1e-9),
            ms(all / cores as u32),
        );
    }
}

/// The median apply of scenario `names.1` over that of `names.0`, when both ran
/// without added latency.
pub fn print_ratio(rows: &[Row], names: (&str, &str), label: &str) {
    let find = |name: &str| {
        rows.iter()
            .find(|r| r.scenario.name == name && r.latency_ms == 0)
            .map(|r| &r.measured)
    };
    if let (Some(one), Some(many)) = (find(names.0), find(names.1)) {
        println!(
            "{label}: {:.2}x",
            many.apply.median().as_secs_f64() / one.apply.median().as_secs_f64().max(1e-9)
        );
    }
}

/// What a refresh costs with field-level drift on and off.
pub fn print_refresh_table(rows: &[Row]) {
    println!(
        "\n| configuration | refresh plan, drift on | API requests | refresh plan, `drift = \"ignore\"` | API requests |"
    );
    println!("|---|---|---|---|---|");
    for row in rows {
        let m = &row.measured;
        println!(
            "| {} | {} | {} | {} | {} |",
            row.label(),
            m.refresh,
            count_or_na(median_count(&m.refresh_requests)),
            m.refresh_no_drift,
            count_or_na(median_count(&m.refresh_no_drift_requests))
        );
    }
}
