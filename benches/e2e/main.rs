//! End-to-end benchmark: real Terraform, the release provider and kube-sim with
//! instant readiness. Run by hand (`scripts/bench.sh`), never part of CI's verdict;
//! prints Markdown tables for `docs/benchmarks.md`.
//!
//! Options: `--runs N` (Terraform runs per scenario, default 3), `--startup-runs N`
//! (default 30), `--only startup|render|zookeeper|kafka|graph|parallel|baseline` (repeatable).

mod render;
mod scenarios;
mod startup;
mod stats;
mod terraform;
mod wrap;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use kube_sim::{ExecFile, KubeSim, SimConfig};
use scenarios::Scenario;
use stats::{Sample, ms};
use terraform::{ProviderUse, Workspace};

struct Options {
    runs: usize,
    startup_runs: usize,
    only: Vec<String>,
}

fn options() -> Options {
    let mut o = Options {
        runs: 3,
        startup_runs: 30,
        only: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut number = |name: &str| -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} needs a number"))
        };
        match a.as_str() {
            "--runs" => o.runs = number("--runs"),
            "--startup-runs" => o.startup_runs = number("--startup-runs"),
            "--only" => o.only.push(args.next().expect("--only needs a name")),
            // cargo bench passes --bench to every bench binary.
            "--bench" => {}
            other => panic!("unknown argument {other:?}"),
        }
    }
    o
}

impl Options {
    fn wants(&self, part: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == part)
    }
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn terraform_path() -> PathBuf {
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
fn provider_binary() -> PathBuf {
    std::env::var_os("KUDO_BENCH_PROVIDER").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_terraform-provider-kudo")),
        PathBuf::from,
    )
}

/// What one scenario measured over its runs.
#[derive(Default)]
struct Measured {
    plan: Sample,
    apply: Sample,
    destroy: Sample,
    plan_provider: Vec<ProviderUse>,
    apply_provider: Vec<ProviderUse>,
    /// Terraform's own CPU and kube-sim's during each apply.
    apply_terraform_cpu: Vec<Duration>,
    apply_sim_cpu: Vec<Duration>,
    requests: Vec<BTreeMap<String, u64>>,
    /// `terraform plan` right after the apply (a refresh, nothing to change), with
    /// field-level drift on (the default) and with the provider's `drift = "ignore"`,
    /// and the API requests each made.
    refresh: Sample,
    refresh_requests: Vec<u64>,
    refresh_no_drift: Sample,
    refresh_no_drift_requests: Vec<u64>,
}

fn verbs(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (key, n) in after {
        let made = n - before.get(key).copied().unwrap_or(0);
        let verb = key.split(' ').next().unwrap_or_default().to_uppercase();
        *out.entry(verb).or_insert(0) += made;
    }
    out.retain(|_, n| *n > 0);
    out
}

fn run_scenario(rt: &tokio::runtime::Runtime, scenario: &Scenario, runs: usize) -> Measured {
    let mut m = Measured::default();
    for _ in 0..runs {
        let sim = rt
            .block_on(KubeSim::start(SimConfig {
                ready_delay: Duration::ZERO,
                ..SimConfig::default()
            }))
            .expect("start kube-sim");
        // kafka's TLS Pipe task reads these from its pod.
        for path in ["/tmp/tls.key", "/tmp/tls.crt"] {
            sim.add_exec_file(ExecFile {
                namespace: "default".into(),
                pod: None,
                selector: None,
                path: path.into(),
                content: String::new(),
            });
        }
        let root = tempfile::tempdir().expect("temp dir");
        let kubeconfig = root.path().join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        let mut ws = Workspace::new(
            root.path(),
            &terraform_path(),
            &provider_binary(),
            &kubeconfig,
        );
        ws.set_env("TF_VAR_namespace", "default");
        ws.write_config(&scenario.config);

        let plan = ws.plan();
        m.plan.push(plan.wall);
        m.plan_provider.push(plan.provider);
        let before = sim.request_counts();
        let apply = ws.apply(scenario.parallelism);
        if std::env::var_os("KUDO_BENCH_REQUESTS").is_some() {
            // Every request of the apply by verb and path: which ones a change saves.
            for (key, n) in sim.request_counts() {
                let made = n - before.get(&key).copied().unwrap_or(0);
                if made > 0 {
                    eprintln!("[bench]   {made:4} {key}");
                }
            }
        }
        m.requests.push(verbs(&before, &sim.request_counts()));
        m.apply.push(apply.wall);
        m.apply_provider.push(apply.provider);
        m.apply_terraform_cpu.push(apply.terraform_cpu);
        m.apply_sim_cpu.push(apply.sim_cpu);
        let count =
            |before: &BTreeMap<String, u64>| verbs(before, &sim.request_counts()).values().sum();
        let before = sim.request_counts();
        m.refresh.push(ws.plan().wall);
        m.refresh_requests.push(count(&before));
        ws.write_config(&scenario.config.replace(
            "provider \"kudo\" {",
            "provider \"kudo\" {\n  drift = \"ignore\"\n",
        ));
        let before = sim.request_counts();
        m.refresh_no_drift.push(ws.plan().wall);
        m.refresh_no_drift_requests.push(count(&before));
        ws.write_config(&scenario.config);
        m.destroy.push(ws.destroy().wall);
        eprintln!(
            "[bench] {}: plan {}, apply {}",
            scenario.name,
            ms(plan.wall),
            ms(apply.wall)
        );
    }
    m
}

/// The run with the median apply time: its provider figures and requests go in the table.
fn median_index(s: &[Duration]) -> usize {
    let mut idx: Vec<usize> = (0..s.len()).collect();
    idx.sort_by_key(|&i| s[i]);
    idx.get(idx.len() / 2).copied().unwrap_or(0)
}

fn share(cpu: Duration, wall: Duration) -> String {
    format!(
        "{:.1}%",
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64().max(1e-9)
    )
}

fn print_table(rows: &[(&Scenario, Measured)]) {
    println!(
        "| configuration | instances | `terraform plan` | provider CPU (share) | `terraform apply` | provider CPU (share) | provider processes (plan/apply) | peak provider RSS | API requests per apply |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (s, m) in rows {
        let (i, apply) = median_apply(m);
        let (pp, ap) = (m.plan_provider[i], m.apply_provider[i]);
        let requests = &m.requests[i];
        let total: u64 = requests.values().sum();
        let detail: Vec<String> = requests.iter().map(|(v, n)| format!("{v} {n}")).collect();
        let rss = pp.peak_rss_kib.max(ap.peak_rss_kib);
        println!(
            "| {} | {} | {} | {} ({}) | {} | {} ({}) | {}/{} | {:.1} MiB | {} ({}) |",
            s.name,
            s.instances,
            m.plan,
            ms(pp.cpu),
            share(pp.cpu, m.plan.median()),
            m.apply,
            ms(ap.cpu),
            share(ap.cpu, apply),
            pp.processes,
            ap.processes,
            rss as f64 / 1024.0,
            total,
            detail.join(", ")
        );
    }
}

/// Where the CPU of each `terraform apply` goes (the run with the median apply), and
/// the shortest the apply could take if that CPU were spread perfectly over the cores.
fn print_cpu_table(rows: &[(&Scenario, Measured)], cores: usize) {
    println!(
        "\n| configuration | `terraform apply` | Terraform CPU | provider CPU | kube-sim CPU | all CPU / ({cores} cores x wall) | CPU-bound floor (all CPU / {cores}) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (s, m) in rows {
        let (i, apply) = median_apply(m);
        let (tf, provider, sim) = (
            m.apply_terraform_cpu[i],
            m.apply_provider[i].cpu,
            m.apply_sim_cpu[i],
        );
        let all = tf + provider + sim;
        println!(
            "| {} | {} | {} | {} | {} | {:.0}% | {} |",
            s.name,
            ms(apply),
            ms(tf),
            ms(provider),
            ms(sim),
            100.0 * all.as_secs_f64() / (cores as f64 * apply.as_secs_f64()).max(1e-9),
            ms(all / cores as u32),
        );
    }
}

/// The median apply of scenario `names.1` over that of `names.0`, when both ran.
fn print_ratio(rows: &[(&Scenario, Measured)], names: (&str, &str), label: &str) {
    let find = |name: &str| rows.iter().find(|(s, _)| s.name == name).map(|(_, m)| m);
    if let (Some(one), Some(many)) = (find(names.0), find(names.1)) {
        println!(
            "{label}: {:.2}x",
            many.apply.median().as_secs_f64() / one.apply.median().as_secs_f64().max(1e-9)
        );
    }
}

/// What a refresh costs with field-level drift on and off.
fn print_refresh_table(rows: &[(&Scenario, Measured)]) {
    println!(
        "\n| configuration | refresh plan, drift on | API requests | refresh plan, `drift = \"ignore\"` | API requests |"
    );
    println!("|---|---|---|---|---|");
    let median = |v: &[u64]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    };
    for (s, m) in rows {
        println!(
            "| {} | {} | {} | {} | {} |",
            s.name,
            m.refresh,
            median(&m.refresh_requests),
            m.refresh_no_drift,
            median(&m.refresh_no_drift_requests)
        );
    }
}

/// The run with the median apply (its index and wall time): the run whose figures the
/// tables show.
fn median_apply(m: &Measured) -> (usize, Duration) {
    let applies: Vec<Duration> = (0..m.requests.len()).map(|i| m.apply.nth(i)).collect();
    let i = median_index(&applies);
    (i, applies.get(i).copied().unwrap_or_default())
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
    let o = options();
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
    let rows: Vec<(&Scenario, Measured)> = scenarios
        .iter()
        .map(|s| (s, run_scenario(&rt, s, o.runs)))
        .collect();
    if !rows.is_empty() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        print_table(&rows);
        print_cpu_table(&rows, cores);
        print_refresh_table(&rows);
    }
    print_ratio(
        &rows,
        ("1 web app", "50 web apps"),
        "\n50 instances with -parallelism=10 / one instance (`terraform apply`)",
    );
    print_ratio(
        &rows,
        ("1 terraform_data", "50 terraform_data"),
        "50 terraform_data with -parallelism=10 / one (`terraform apply`, Terraform alone)",
    );
}
