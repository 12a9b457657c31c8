//! The benchmark's command line (see the options list in `main.rs`).

use std::path::PathBuf;

/// Parts `--only` names besides `configmaps<N>`; all of them run when no `--only` is given.
const PARTS: &[&str] = &[
    "startup",
    "render",
    "zookeeper",
    "kafka",
    "graph",
    "parallel",
    "baseline",
];

/// Prefix of the `--only configmaps<N>` scenarios, which never run unless named.
const CONFIGMAPS: &str = "configmaps";

pub struct Options {
    pub runs: usize,
    pub startup_runs: usize,
    only: Vec<String>,
    /// Every `--latency` given, in order; empty runs latency 0 without the latency table.
    latencies: Vec<u64>,
    /// `N` of each configmaps scenario asked for, by `--only configmaps<N>` or `--objects N`.
    pub configmaps: Vec<usize>,
    /// A real cluster to run against instead of kube-sim.
    pub kubeconfig: Option<PathBuf>,
    /// `kubectl` is timed beside configmaps scenarios of at most this many objects
    /// (`--kubectl-up-to N`; all of them when not given): at 10,000 objects kubectl's
    /// own apply takes minutes.
    pub kubectl_up_to: Option<usize>,
}

pub fn parse() -> Options {
    let mut o = Options {
        runs: 3,
        startup_runs: 30,
        only: Vec::new(),
        latencies: Vec::new(),
        configmaps: Vec::new(),
        kubeconfig: None,
        kubectl_up_to: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| -> String {
            args.next()
                .unwrap_or_else(|| panic!("{name} needs a value"))
        };
        match a.as_str() {
            "--runs" => o.runs = number("--runs", value("--runs")),
            "--startup-runs" => o.startup_runs = number("--startup-runs", value("--startup-runs")),
            "--only" => {
                let part = value("--only");
                match part.strip_prefix(CONFIGMAPS) {
                    Some(n) => o
                        .configmaps
                        .push(number("--only configmaps<N>", n.to_string())),
                    None if PARTS.contains(&part.as_str()) => o.only.push(part),
                    None => panic!(
                        "unknown part {part:?} for --only (one of {}, configmaps<N>)",
                        PARTS.join(", ")
                    ),
                }
            }
            "--objects" => o.configmaps.push(number("--objects", value("--objects"))),
            "--latency" => o.latencies.push(number("--latency", value("--latency"))),
            "--kubeconfig" => o.kubeconfig = Some(PathBuf::from(value("--kubeconfig"))),
            "--kubectl-up-to" => {
                o.kubectl_up_to = Some(number("--kubectl-up-to", value("--kubectl-up-to")))
            }
            // cargo bench passes --bench to every bench binary.
            "--bench" => {}
            other => panic!("unknown argument {other:?}"),
        }
    }
    // Asked twice (`--only configmaps100 --objects 100`) is still one scenario.
    let mut seen = std::collections::HashSet::new();
    o.configmaps.retain(|n| seen.insert(*n));
    if o.kubeconfig.is_some() {
        assert!(
            o.latencies.is_empty(),
            "--latency delays kube-sim's answers; it cannot be added to a real cluster"
        );
        assert!(
            !o.configmaps.is_empty() || !o.only.is_empty(),
            "--kubeconfig runs only the scenarios named: add --only configmaps<N> or --objects N"
        );
    }
    o
}

impl Options {
    /// Whether kubectl is timed beside a configmaps scenario of `count` objects.
    pub fn compares_kubectl(&self, count: usize) -> bool {
        self.kubectl_up_to.is_none_or(|limit| count <= limit)
    }
}

fn number<T: std::str::FromStr>(name: &str, v: String) -> T {
    v.parse()
        .unwrap_or_else(|_| panic!("{name} needs a number, not {v:?}"))
}

impl Options {
    /// Whether a part of the default set runs: every part when nothing is named (except
    /// against a real cluster, where only what is named runs).
    pub fn wants(&self, part: &str) -> bool {
        (self.only.is_empty() && self.configmaps.is_empty() && self.kubeconfig.is_none())
            || self.only.iter().any(|o| o == part)
    }

    /// The kube-sim latencies each Terraform scenario runs at, in milliseconds.
    pub fn latencies(&self) -> Vec<u64> {
        if self.latencies.is_empty() {
            vec![0]
        } else {
            self.latencies.clone()
        }
    }

    /// Whether `--latency` was given, so the latency table is printed.
    pub fn latency_table(&self) -> bool {
        !self.latencies.is_empty()
    }
}
