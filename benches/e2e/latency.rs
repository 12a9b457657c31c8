//! What added network latency costs: each scenario at every `--latency`, and how much
//! of its wall time is waiting on the network.
//!
//! kube-sim delays every request by the same fixed time, so the wall time a command
//! gains over its run at latency 0 is time spent waiting on requests, and that gain
//! divided by the latency is the number of round trips one after the other: the
//! critical path, whatever was in flight beside it. A provider that issued every
//! request sequentially would show as many round trips as requests.

use crate::stats::Sample;
use crate::tables::{Row, count_or_na, median_apply, median_count};

/// `at` over `base` (signed: noise can make a small gain negative), and that gain in
/// round trips of `latency_ms`.
fn network_wait(at: &Sample, base: &Sample, latency_ms: u64) -> (String, String) {
    let gain_ms = (at.median().as_secs_f64() - base.median().as_secs_f64()) * 1000.0;
    (
        format!("{gain_ms:.1} ms"),
        format!("{:.0}", gain_ms / latency_ms as f64),
    )
}

pub fn print_table(rows: &[Row]) {
    println!(
        "\n| configuration | added latency per request | `terraform apply` (create) | API requests | no-change `terraform plan` (refresh, drift on) | API requests | network wait of the plan | round trips on the critical path of the plan | network wait of the apply | round trips on the critical path of the apply | peak provider RSS |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for row in rows {
        let m = &row.measured;
        let (i, _) = median_apply(m);
        let apply_requests = m.requests[i].as_ref().map(|r| r.values().sum());
        // Only a run of the same scenario without added latency says what the network
        // added; latency 0 itself has nothing to attribute.
        let base = rows
            .iter()
            .find(|b| std::ptr::eq(b.scenario, row.scenario) && b.latency_ms == 0)
            .filter(|_| row.latency_ms > 0)
            .map(|b| &b.measured);
        let none = || ("—".to_string(), "—".to_string());
        let (plan_wait, plan_trips) = base.map_or_else(none, |b| {
            network_wait(&m.refresh, &b.refresh, row.latency_ms)
        });
        let (apply_wait, apply_trips) =
            base.map_or_else(none, |b| network_wait(&m.apply, &b.apply, row.latency_ms));
        println!(
            "| {} | {} ms | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} MiB |",
            row.scenario.name,
            row.latency_ms,
            m.apply,
            count_or_na(apply_requests),
            m.refresh,
            count_or_na(median_count(&m.refresh_requests)),
            plan_wait,
            plan_trips,
            apply_wait,
            apply_trips,
            m.peak_rss_kib() as f64 / 1024.0
        );
    }
}
