//! End-to-end benchmark: real Terraform, the release provider and kube-sim with
//! instant readiness. Run by hand (`scripts/bench.sh`), never part of CI's verdict;
//! prints Markdown tables for `docs/benchmarks.md`.
//!
//! Options:
//! - `--runs N`: Terraform runs per scenario (default 3); `--startup-runs N` (default 30).
//! - `--only startup|render|zookeeper|kafka|graph|parallel|baseline|configmaps<N>`
//!   (repeatable; default: all but `configmaps<N>`). `configmaps<N>` is one instance
//!   whose package renders N ConfigMaps (`configmaps1000`, `configmaps10000`, any N).
//! - `--objects N`: the same as `--only configmaps<N>`.
//! - `--latency MS` (repeatable): every Terraform scenario runs once per value with
//!   kube-sim delaying every request by MS, and a table of the network wait and round
//!   trips on the critical path is added (against the run at latency 0, when given).
//! - `--kubeconfig PATH`: the Terraform scenarios named run against that cluster instead
//!   of kube-sim, each run in a fresh namespace (request counts are then "n/a"); the
//!   configmaps scenarios are also timed against `kubectl apply --server-side` and
//!   `kubectl diff --server-side` of the same objects.
//! - `--kubectl-up-to N`: time kubectl only beside configmaps scenarios of at most N
//!   objects.
//!
//! Scenarios with an update (configmaps<N>) also run a plan and an apply that change
//! every object, and a table of how each command grows with N is printed. Each of their
//! runs is followed by the same objects server-side applied directly (kube-rs, 16 in
//! flight, no Terraform) on the same kind of target, and a table gives the ratio.

mod cluster;
mod configmaps;
mod direct;
mod kubectl;
mod latency;
mod options;
mod render;
mod run;
mod scenarios;
mod startup;
mod stats;
mod tables;
mod terraform;
mod wrap;

use std::path::PathBuf;

use cluster::Target;
use scenarios::Scenario;
use tables::Row;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn terraform_path() -> PathBuf {
    if let Some(p) = std::env::var_os("TF_ACC_TERRAFORM_PATH") {
        return PathBuf::from(p);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join("terraform"))
        .find(|p| p.is_file())
        .expect("no terraform on PATH (or set TF_ACC_TERRAFORM_PATH)")
}

/// The provider under test: this build's, or `KUDO_BENCH_PROVIDER` (another build kept
/// aside, to measure before and after a change with the same benchmark).
pub fn provider_binary() -> PathBuf {
    std::env::var_os("KUDO_BENCH_PROVIDER").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_terraform-provider-kudo")),
        PathBuf::from,
    )
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(wrap::FLAG) {
        return wrap::run(&args[1..]);
    }
    bench();
    std::process::ExitCode::SUCCESS
}

fn bench() {
    let o = options::parse();
    let provider = &provider_binary();
    let fixtures = repo_root().join("../shared/fixtures/operators");
    println!(
        "# End-to-end benchmark ({}; {} cores)\n",
        std::env::consts::ARCH,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    if o.wants("startup") {
        let (plain, mtls) = startup::measure(provider, o.startup_runs);
        println!("| provider start-up (exec to handshake line) | median (min, max) |");
        println!("|---|---|");
        println!("| plain | {plain} |");
        println!("| AutoMTLS (`PLUGIN_CLIENT_CERT` set, as Terraform starts it) | {mtls} |");
        println!(
            "| ratio AutoMTLS / plain | {:.2}x |\n",
            mtls.median().as_secs_f64() / plain.median().as_secs_f64().max(1e-9)
        );
    }
    if o.wants("render") {
        let kafka = render::measure(provider, &fixtures.join("kafka"), o.startup_runs);
        println!(
            "| whole-process `render --output-dir` of kafka | median (min, max) | / Go ({} ms) |",
            render::GO_KAFKA_WHOLE_PROCESS_MS
        );
        println!("|---|---|---|");
        println!(
            "| this provider | {kafka} | {:.2}x |\n",
            kafka.median().as_secs_f64() * 1000.0 / render::GO_KAFKA_WHOLE_PROCESS_MS
        );
    }
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mut scenarios: Vec<Scenario> = Vec::new();
    if o.wants("zookeeper") {
        scenarios.push(scenarios::zookeeper(&fixtures));
    }
    if o.wants("kafka") {
        scenarios.push(scenarios::kafka(&fixtures));
    }
    if o.wants("graph") {
        scenarios.push(scenarios::dependency_tree(
            &repo_root().join("tests/fixtures/deps/kep29"),
        ));
    }
    let webapp = repo_root().join("examples/terraform/quickstart/operator");
    if o.wants("parallel") {
        scenarios.push(scenarios::web_apps(&webapp, 1, None));
        scenarios.push(scenarios::web_apps(&webapp, 50, Some(10)));
    }
    if o.wants("baseline") {
        // Terraform alone (its built-in terraform_data, no provider process): what one
        // and fifty resources cost Terraform itself, the floor under (d).
        scenarios.push(scenarios::terraform_data(1, None));
        scenarios.push(scenarios::terraform_data(50, Some(10)));
    }
    // The generated packages and manifests live as long as the runs that use them.
    let generated = tempfile::tempdir().expect("temp dir");
    for &count in &o.configmaps {
        scenarios.push(configmaps::scenario(generated.path(), count));
    }
    let targets: Vec<Target> = match &o.kubeconfig {
        Some(kubeconfig) => {
            println!(
                "Against the cluster of {} (Kubernetes {}), not kube-sim.\n",
                kubeconfig.display(),
                kubectl::server_version(kubeconfig)
            );
            vec![Target::Real {
                kubeconfig: kubeconfig.clone(),
            }]
        }
        None => o
            .latencies()
            .into_iter()
            .map(|latency_ms| Target::Sim { latency_ms })
            .collect(),
    };
    let mut rows: Vec<Row> = Vec::new();
    // (index in `rows`, kubectl's timings beside it)
    let mut compared: Vec<(usize, kubectl::Timings)> = Vec::new();
    // (index in `rows`, the direct server-side apply's timings beside it)
    let mut floors: Vec<(usize, stats::Sample)> = Vec::new();
    for scenario in &scenarios {
        for target in &targets {
            let mut measured = run::Measured::default();
            let mut timings = kubectl::Timings::default();
            let mut direct = stats::Sample::default();
            for _ in 0..o.runs {
                run::run_once(&rt, scenario, target, &mut measured);
                if let Some(manifests) = &scenario.manifests {
                    direct::measure_once(&rt, target, manifests.count, &mut direct);
                }
                // Right after each Terraform run, so both see the machine alike.
                if let (Target::Real { kubeconfig }, Some(manifests)) =
                    (target, &scenario.manifests)
                    && o.compares_kubectl(manifests.count)
                {
                    kubectl::measure_once(kubeconfig, manifests, &mut timings);
                }
            }
            if !timings.apply.is_empty() {
                compared.push((rows.len(), timings));
            }
            if !direct.is_empty() {
                floors.push((rows.len(), direct));
            }
            rows.push(Row {
                scenario,
                latency_ms: target.latency_ms(),
                measured,
            });
        }
    }
    if !rows.is_empty() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        tables::print_table(&rows);
        tables::print_cpu_table(&rows, cores);
        tables::print_refresh_table(&rows);
        tables::print_growth_table(&rows);
    }
    if o.latency_table() {
        latency::print_table(&rows);
    }
    if !compared.is_empty() {
        let comparison: Vec<_> = compared
            .iter()
            .filter_map(|(i, timings)| {
                let row = &rows[*i];
                let count = row.scenario.manifests.as_ref()?.count;
                Some((count, &row.measured, timings))
            })
            .collect();
        kubectl::print_comparison(&comparison);
    }
    if !floors.is_empty() {
        let comparison: Vec<_> = floors
            .iter()
            .filter_map(|(i, direct)| {
                let row = &rows[*i];
                let count = row.scenario.manifests.as_ref()?.count;
                let m = &row.measured;
                Some((count, row.latency_ms, &m.apply, &m.apply_alone, direct))
            })
            .collect();
        direct::print_comparison(&comparison);
    }
    tables::print_ratio(
        &rows,
        ("1 web app", "50 web apps"),
        "\n50 instances with -parallelism=10 / one instance (`terraform apply`)",
    );
    tables::print_ratio(
        &rows,
        ("1 terraform_data", "50 terraform_data"),
        "50 terraform_data with -parallelism=10 / one (`terraform apply`, Terraform alone)",
    );
}
