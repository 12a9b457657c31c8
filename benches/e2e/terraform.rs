//! Running Terraform against the provider under test, and what the provider processes
//! Terraform started used: each runs under this binary's wrapper mode
//! ([`crate::wrap`]), which appends one line per process to a file when it exits.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// CPU time and memory of every provider process one Terraform command started.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProviderUse {
    pub processes: usize,
    /// user + system time, summed over the processes.
    pub cpu: Duration,
    /// The largest peak resident set of any one process, in KiB.
    pub peak_rss_kib: u64,
}

/// One finished command.
pub struct Run {
    pub wall: Duration,
    pub provider: ProviderUse,
    /// CPU time of Terraform itself: every process the command started and waited for
    /// (Terraform, the provider wrappers, the providers), less the providers.
    pub terraform_cpu: Duration,
    /// CPU time of this benchmark process while the command ran: kube-sim serving the
    /// requests (the benchmark itself only waits meanwhile).
    pub sim_cpu: Duration,
}

/// User + system time of `who` (`RUSAGE_SELF` or `RUSAGE_CHILDREN`) so far.
pub fn cpu_of(who: libc::c_int) -> Duration {
    // SAFETY: getrusage only writes the struct we pass; zeroed is a valid rusage.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        if libc::getrusage(who, &mut u) != 0 {
            return Duration::ZERO;
        }
        u
    };
    let d = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    d(usage.ru_utime) + d(usage.ru_stime)
}

/// A working directory whose Terraform uses the provider binary through a wrapper.
pub struct Workspace {
    pub dir: PathBuf,
    terraform: PathBuf,
    cli_config: PathBuf,
    rusage: PathBuf,
    env: Vec<(String, String)>,
}

impl Workspace {
    /// `root` holds the work dir, the CLI config and the wrapper; `provider` is the
    /// release binary under test.
    pub fn new(root: &Path, terraform: &Path, provider: &Path, kubeconfig: &Path) -> Workspace {
        let dir = root.join("work");
        let plugins = root.join("plugins");
        std::fs::create_dir_all(&dir).expect("work dir");
        std::fs::create_dir_all(&plugins).expect("plugin dir");
        let rusage = root.join("provider-rusage.txt");
        let wrapper = plugins.join("terraform-provider-kudo");
        let this = std::env::current_exe().expect("path of the benchmark binary");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nexec {this:?} {flag} {rusage:?} {provider:?} \"$@\"\n",
                this = this.display().to_string(),
                flag = crate::wrap::FLAG,
                rusage = rusage.display().to_string(),
                provider = provider.display().to_string(),
            ),
        )
        .expect("wrapper");
        make_executable(&wrapper);
        let cli_config = root.join("terraformrc");
        std::fs::write(
            &cli_config,
            format!(
                "provider_installation {{\n  dev_overrides {{\n    \"kudo/kudo\" = {:?}\n  }}\n  direct {{}}\n}}\n",
                plugins.display().to_string()
            ),
        )
        .expect("CLI config");
        Workspace {
            dir,
            terraform: terraform.to_path_buf(),
            cli_config,
            rusage,
            env: vec![(
                "KUBE_CONFIG_PATH".to_string(),
                kubeconfig.display().to_string(),
            )],
        }
    }

    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.push((key.to_string(), value.to_string()));
    }

    pub fn write_config(&self, text: &str) {
        std::fs::write(self.dir.join("main.tf"), text).expect("main.tf");
    }

    /// `terraform <args>`; panics with Terraform's output when it fails.
    pub fn run(&self, args: &[&str]) -> Run {
        let _ = std::fs::remove_file(&self.rusage);
        let mut cmd = Command::new(&self.terraform);
        cmd.args(args)
            .current_dir(&self.dir)
            .env("TF_CLI_CONFIG_FILE", &self.cli_config)
            .env("CHECKPOINT_DISABLE", "1")
            .env("TF_IN_AUTOMATION", "1")
            .env("TF_INPUT", "0")
            .env_remove("KUBECONFIG")
            .env_remove("TF_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let (children, this) = (cpu_of(libc::RUSAGE_CHILDREN), cpu_of(libc::RUSAGE_SELF));
        let started = Instant::now();
        let out = cmd.output().expect("run terraform");
        let wall = started.elapsed();
        let children = cpu_of(libc::RUSAGE_CHILDREN).saturating_sub(children);
        let sim_cpu = cpu_of(libc::RUSAGE_SELF).saturating_sub(this);
        assert!(
            out.status.success(),
            "terraform {} failed:\n{}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let provider = self.provider_use();
        let terraform_cpu = children.saturating_sub(provider.cpu);
        if std::env::var_os("KUDO_BENCH_PROCESSES").is_some() {
            // Whose CPU a command's wall time is: Terraform's, the providers' or
            // kube-sim's (this process); what none of them used was waiting.
            eprintln!(
                "[bench]   terraform {}: wall {}, Terraform CPU {}, provider CPU {}, this process (kube-sim) CPU {}",
                args[0],
                crate::stats::ms(wall),
                crate::stats::ms(terraform_cpu),
                crate::stats::ms(provider.cpu),
                crate::stats::ms(sim_cpu)
            );
        }
        Run {
            wall,
            provider,
            terraform_cpu,
            sim_cpu,
        }
    }

    fn provider_use(&self) -> ProviderUse {
        let text = std::fs::read_to_string(&self.rusage).unwrap_or_default();
        let mut used = ProviderUse::default();
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let [user, system, rss] = f[..] else {
                continue;
            };
            let secs = |s: &str| s.parse::<f64>().unwrap_or(0.0);
            if std::env::var_os("KUDO_BENCH_PROCESSES").is_some() {
                // One line per provider process: which of Terraform's starts costs what.
                eprintln!(
                    "[bench]   provider process: user {user} s, system {system} s, peak RSS {rss} KiB"
                );
            }
            used.processes += 1;
            used.cpu += Duration::from_secs_f64(secs(user) + secs(system));
            used.peak_rss_kib = used.peak_rss_kib.max(rss.parse().unwrap_or(0));
        }
        used
    }

    pub fn plan(&self) -> Run {
        self.run(&["plan", "-input=false", "-no-color"])
    }

    pub fn apply(&self, parallelism: Option<usize>) -> Run {
        let p = parallelism.map(|n| format!("-parallelism={n}"));
        let mut args = vec!["apply", "-input=false", "-no-color", "-auto-approve"];
        if let Some(p) = &p {
            args.push(p);
        }
        self.run(&args)
    }

    pub fn destroy(&self) -> Run {
        self.run(&["destroy", "-input=false", "-no-color", "-auto-approve"])
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut perm = std::fs::metadata(path)
        .expect("wrapper metadata")
        .permissions();
    perm.set_mode(0o755);
    std::fs::set_permissions(path, perm).expect("chmod wrapper");
}
