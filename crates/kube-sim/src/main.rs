//! `kube-sim --kubeconfig-out PATH [--port N] [--ready-delay-ms N] [--faults FILE]
//! [--kubernetes-version 1.N]`

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use kube_sim::{FaultRule, KubeSim, Release, SimConfig};

struct Args {
    kubeconfig_out: PathBuf,
    port: u16,
    ready_delay_ms: Option<u64>,
    faults: Option<PathBuf>,
    kubernetes_version: Option<Release>,
}

const USAGE: &str = "usage: kube-sim --kubeconfig-out PATH [--port N] [--ready-delay-ms N] [--faults FILE] [--kubernetes-version 1.N]";

fn parse_args() -> anyhow::Result<Args> {
    let mut it = std::env::args().skip(1);
    let (mut out, mut port, mut delay, mut faults, mut release) = (None, 0u16, None, None, None);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value"));
        match a.as_str() {
            "--kubeconfig-out" => out = Some(PathBuf::from(value("--kubeconfig-out")?)),
            "--port" => {
                port = value("--port")?
                    .parse()
                    .context("--port must be a number")?
            }
            "--ready-delay-ms" => {
                delay = Some(
                    value("--ready-delay-ms")?
                        .parse()
                        .context("--ready-delay-ms must be a number")?,
                )
            }
            "--faults" => faults = Some(PathBuf::from(value("--faults")?)),
            "--kubernetes-version" => {
                let r: Release = value("--kubernetes-version")?.parse()?;
                let (oldest, current) = (kube_sim::OLDEST, kube_sim::CURRENT);
                if r < oldest || r > current {
                    bail!(
                        "--kubernetes-version {r}: kube-sim emulates Kubernetes {oldest} to {current}"
                    );
                }
                release = Some(r);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (see --help)"),
        }
    }
    Ok(Args {
        kubeconfig_out: out.context("--kubeconfig-out PATH is required")?,
        port,
        ready_delay_ms: delay,
        faults,
        kubernetes_version: release,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Logs go to stderr so stdout carries only the ready line.
    let level = std::env::var("KUBE_SIM_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::WARN);
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .init();
    let args = parse_args()?;
    let mut cfg = SimConfig::default();
    cfg.bind.set_port(args.port);
    if let Some(ms) = args.ready_delay_ms {
        cfg.ready_delay = Duration::from_millis(ms);
    }
    if let Some(r) = args.kubernetes_version {
        cfg.kubernetes_version = r;
    }
    if let Some(path) = &args.faults {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        cfg.faults = serde_json::from_str::<Vec<FaultRule>>(&text)
            .with_context(|| format!("parsing fault rules in {}", path.display()))?;
    }
    let sim = KubeSim::start(cfg).await?;
    sim.write_kubeconfig(&args.kubeconfig_out)
        .with_context(|| format!("writing {}", args.kubeconfig_out.display()))?;
    println!("kube-sim ready at {}", sim.url());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("SIGTERM handler")?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    drop(sim);
    Ok(())
}
