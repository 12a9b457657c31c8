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

/// The largest peak RSS of the provider processes of one command over the runs, in MiB.
fn peak_mib(uses: &[crate::terraform::ProviderUse]) -> f64 {
    uses.iter().map(|p| p.peak_rss_kib).max().unwrap_or(0) as f64 / 1024.0
}

/// How each command of a big-instance scenario grows with the number of objects (#29:
/// at most linearly, at most 11x from 1,000 to 10,000, every provider process under
/// 256 MB): one row per scenario with an update, medians and each command's peak
/// provider RSS, then the ratios of the largest scenario to the smallest.
pub fn print_growth_table(rows: &[Row]) {
    let sized: Vec<(usize, &Measured)> = rows
        .iter()
        .filter(|r| r.latency_ms == 0 && r.scenario.update.is_some())
        .filter_map(|r| Some((r.scenario.manifests.as_ref()?.count, &r.measured)))
        .collect();
    if sized.is_empty() {
        return;
    }
    // (column, time, provider processes) in the order a user runs them.
    let commands = |m: &'_ Measured| -> [(&'static str, Duration, f64); 5] {
        [
            ("`terraform apply` (create)", m.apply.median(), {
                peak_mib(&m.plan_provider).max(peak_mib(&m.apply_provider))
            }),
            (
                "no-change `terraform plan`",
                m.refresh.median(),
                peak_mib(&m.refresh_provider),
            ),
            (
                "`terraform plan`, every object changing",
                m.changing_plan.median(),
                peak_mib(&m.changing_plan_provider),
            ),
            (
                "`terraform apply` (every object updated)",
                m.update.median(),
                peak_mib(&m.update_provider),
            ),
            (
                "`terraform destroy`",
                m.destroy.median(),
                peak_mib(&m.destroy_provider),
            ),
        ]
    };
    let header: Vec<&str> = commands(sized[0].1).iter().map(|c| c.0).collect();
    println!(
        "\n| objects | {} |",
        header
            .iter()
            .map(|h| format!("{h} | peak provider RSS"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}", "---|---|".repeat(header.len()));
    for (count, m) in &sized {
        let cells: Vec<String> = commands(m)
            .iter()
            .map(|(_, time, rss)| format!("{} | {rss:.1} MiB", ms(*time)))
            .collect();
        println!("| {count} | {} |", cells.join(" | "));
    }
    let (Some(small), Some(large)) = (
        sized.iter().min_by_key(|(n, _)| *n),
        sized.iter().max_by_key(|(n, _)| *n),
    ) else {
        return;
    };
    if small.0 == large.0 {
        return;
    }
    // The time ratios; the RSS columns stay empty (the bound is absolute).
    let ratios: Vec<String> = commands(large.1)
        .iter()
        .zip(commands(small.1).iter())
        .map(|(l, s)| format!("{:.1}x | ", l.1.as_secs_f64() / s.1.as_secs_f64().max(1e-9)))
        .collect();
    println!(
        "| {} / {} ({:.0}x the objects) | {} |",
        large.0,
        small.0,
        large.0 as f64 / small.0 as f64,
        ratios.join(" | ")
    );
}
