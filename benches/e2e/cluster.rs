//! What one run's Terraform talks to: a fresh kube-sim (optionally answering every
//! request after a fixed delay), or a fresh namespace of a real cluster.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kube_sim::{ExecFile, FaultRule, KubeSim, SimConfig};

use crate::kubectl;

/// Where the runs of a scenario go.
#[derive(Debug, Clone)]
pub enum Target {
    /// kube-sim, delaying every request (discovery included) by this many milliseconds.
    Sim { latency_ms: u64 },
    /// The cluster of this kubeconfig, a new namespace per run.
    Real { kubeconfig: PathBuf },
}

impl Target {
    /// The delay added per request: only kube-sim's is known.
    pub fn latency_ms(&self) -> u64 {
        match self {
            Target::Sim { latency_ms } => *latency_ms,
            Target::Real { .. } => 0,
        }
    }
}

/// One run's cluster; a real cluster's namespace is deleted when this is dropped.
pub struct Cluster {
    sim: Option<KubeSim>,
    kubeconfig: PathBuf,
    namespace: String,
}

impl Cluster {
    /// Starts kube-sim (writing its kubeconfig into `dir`) or creates a namespace.
    pub fn start(rt: &tokio::runtime::Runtime, target: &Target, dir: &Path) -> Cluster {
        match target {
            Target::Sim { latency_ms } => {
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
                // No rule at all at latency 0: the run is then exactly the one without
                // `--latency`. Without `count` the rule never expires.
                if *latency_ms > 0 {
                    sim.add_faults([FaultRule {
                        latency_ms: Some(*latency_ms),
                        ..Default::default()
                    }]);
                }
                let kubeconfig = dir.join("kubeconfig");
                sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
                Cluster {
                    sim: Some(sim),
                    kubeconfig,
                    namespace: "default".into(),
                }
            }
            Target::Real { kubeconfig } => Cluster {
                sim: None,
                namespace: kubectl::create_namespace(kubeconfig, "kudo-bench-tf"),
                kubeconfig: kubeconfig.clone(),
            },
        }
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Whether this is a real cluster (Terraform then names it in the provider block).
    pub fn is_real(&self) -> bool {
        self.sim.is_none()
    }

    /// kube-sim's requests so far by `"<verb> <resource>"`; a real cluster's are unknown.
    pub fn request_counts(&self) -> Option<BTreeMap<String, u64>> {
        self.sim.as_ref().map(KubeSim::request_counts)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.sim.is_none() {
            kubectl::delete_namespace(&self.kubeconfig, &self.namespace);
        }
    }
}
