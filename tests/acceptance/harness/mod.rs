//! Acceptance-test harness: a real Terraform CLI drives the provider binary against
//! kube-sim (default) or a real cluster (`KUDO_TEST_KUBECONFIG`).
//!
//! ```ignore
//! let ctx = TestContext::new("quickstart");
//! ctx.use_example("quickstart");
//! ctx.tf.apply(&[]).assert_success();
//! let state = ctx.tf.state();
//! ctx.kube().instance(&ctx.namespace, "web");
//! ```
//!
//! Every test gets its own temp folder (CLI config, kubeconfig, Terraform working
//! folder), its own namespace (exported to Terraform as `TF_VAR_namespace`) and, with
//! kube-sim, its own API server.

// A toolbox for all tests: not every helper is used by every test binary build.
#![allow(dead_code, unused_imports)]

pub mod cluster;
pub mod connection;
pub mod http;
pub mod plugin;
pub mod rpc;
pub mod terraform;

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

pub use cluster::{Kube, ObjRef, TestCluster};
pub use connection::Connection;
pub use http::{FileServer, tool};
pub use terraform::{
    Client, ClientKind, Feature, State, Terraform, TfRun, client, flat, is_opentofu, lacks,
    terraform_path, terraform_version,
};

/// Skips the rest of a test with a message (Rust's test runner has no skip status,
/// so the reason goes to the captured output, visible with `--nocapture`).
#[macro_export]
macro_rules! skip {
    ($($arg:tt)*) => {{
        eprintln!("SKIPPED: {}", format!($($arg)*));
        return;
    }};
}

/// The repository root (the root package's manifest folder).
/// The entries of a `kudo_instance`'s `objects` (a map), in key order. Checks that
/// each is keyed as the documentation says: `Kind namespace/name`, the kind qualified
/// by its group outside the core group, the namespace left out when cluster-scoped.
#[track_caller]
pub fn managed_objects(instance: &serde_json::Value) -> Vec<&serde_json::Value> {
    let map = instance["objects"]
        .as_object()
        .unwrap_or_else(|| panic!("objects is not a map: {instance:#}"));
    for (key, o) in map {
        let text = |name: &str| o[name].as_str().unwrap_or_default();
        let group = text("api_version").rsplit_once('/').map(|(g, _)| g);
        let kind = match group {
            Some(g) => format!("{}.{g}", text("kind")),
            None => text("kind").to_string(),
        };
        let expected = match text("namespace") {
            "" => format!("{kind} {}", text("name")),
            ns => format!("{kind} {ns}/{}", text("name")),
        };
        assert_eq!(key, &expected, "objects key of {o:#}");
    }
    map.values().collect()
}

pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The provider binary Cargo built for this test run.
pub fn provider_binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_terraform-provider-kudo"))
}

/// `../shared/fixtures/operators/<name>` next to the repository, if present.
pub fn fixture_operator(name: &str) -> Option<PathBuf> {
    let p = repo_root().join("../shared/fixtures/operators").join(name);
    p.join("operator.yaml")
        .is_file()
        .then(|| p.canonicalize().expect("canonical fixture path"))
}

/// `tests/fixtures/operators/<name>`: the packages written for this repository.
pub fn own_operator(name: &str) -> PathBuf {
    let p = repo_root().join("tests/fixtures/operators").join(name);
    assert!(
        p.join("operator.yaml").is_file(),
        "no package at {}",
        p.display()
    );
    p
}

/// The opening every test configuration shares: the provider requirement, the
/// `namespace` variable the harness sets and the provider block.
pub const PREAMBLE: &str = r#"terraform {
  required_providers {
    kudo = {
      source = "kudo/kudo"
    }
  }
}

variable "namespace" {
  type = string
}

provider "kudo" {}
"#;

/// [`PREAMBLE`] and `kudo_operator.this` installing the package at `package`. Tests
/// append their `kudo_instance` blocks.
pub fn operator_config(package: &Path) -> String {
    format!(
        r#"{PREAMBLE}
resource "kudo_operator" "this" {{
  package   = {:?}
  namespace = var.namespace
}}
"#,
        package.display().to_string()
    )
}

/// A root module installing `package` as `kudo_operator.this` and
/// `kudo_instance.<label>` named `instance`, with `params` as its `parameters`.
pub fn package_config(
    package: &Path,
    label: &str,
    instance: &str,
    params: &[(&str, &str)],
) -> String {
    let params: String = params
        .iter()
        .map(|(k, v)| format!("    {k} = {v:?}\n"))
        .collect();
    format!(
        r#"{PREAMBLE}
resource "kudo_operator" "this" {{
  package   = {package:?}
  namespace = var.namespace
}}

resource "kudo_instance" {label:?} {{
  name      = {instance:?}
  namespace = var.namespace
  operator  = kudo_operator.this.id
  parameters = {{
{params}  }}
}}
"#,
        package = package.display().to_string(),
    )
}

/// The `operator.yaml` of package `name` at `version` whose `deploy` plan applies each
/// of `templates` (`templates/<t>.yaml`) in a step of its own, in order.
pub fn serial_operator_yaml(name: &str, version: &str, templates: &[&str]) -> String {
    let tasks: String = templates
        .iter()
        .map(|t| {
            format!(
                "  - name: {t}\n    kind: Apply\n    spec:\n      resources:\n        - {t}.yaml\n"
            )
        })
        .collect();
    let steps: String = templates
        .iter()
        .map(|t| format!("          - name: {t}\n            tasks:\n              - {t}\n"))
        .collect();
    operator_yaml(name, version, &tasks, &steps)
}

/// The `operator.yaml` of package `name` at `version` whose `deploy` plan has one step
/// with one Apply task, `task`, writing every one of `templates` (`templates/<t>.yaml`).
pub fn one_task_operator_yaml(name: &str, version: &str, task: &str, templates: &[&str]) -> String {
    let resources: String = templates
        .iter()
        .map(|t| format!("        - {t}.yaml\n"))
        .collect();
    let tasks =
        format!("  - name: {task}\n    kind: Apply\n    spec:\n      resources:\n{resources}");
    let steps = format!("          - name: {task}\n            tasks:\n              - {task}\n");
    operator_yaml(name, version, &tasks, &steps)
}

/// operator.yaml with the `tasks` and the steps of `deploy`'s one phase (YAML lines).
fn operator_yaml(name: &str, version: &str, tasks: &str, steps: &str) -> String {
    format!(
        r#"apiVersion: kudo.dev/v1beta1
name: {name}
operatorVersion: {version}
kudoVersion: 0.19.0
kubernetesVersion: 1.20.0
maintainers:
  - name: tests
    email: tests@example.com
url: https://example.com
tasks:
{tasks}plans:
  deploy:
    strategy: serial
    phases:
      - name: deploy
        strategy: serial
        steps:
{steps}"#
    )
}

/// [`PREAMBLE`], `kudo_operator.op` installing the package in the working folder's
/// `operator/`, and `kudo_instance.<name>` of it with `settings` (HCL lines).
pub fn local_instance_config(name: &str, settings: &str) -> String {
    format!(
        r#"{PREAMBLE}
resource "kudo_operator" "op" {{
  package   = "${{path.module}}/operator"
  namespace = var.namespace
}}

resource "kudo_instance" {name:?} {{
  name      = {name:?}
  namespace = var.namespace
  operator  = kudo_operator.op.id
  {settings}
}}
"#
    )
}

/// One test's world. Dropping it destroys what Terraform still manages (real clusters
/// only) and deletes the namespace.
pub struct TestContext {
    pub namespace: String,
    pub cluster: TestCluster,
    /// Terraform bound to [`TestContext::workdir`] with the test's environment.
    pub tf: Terraform,
    pub workdir: PathBuf,
    tmp: Option<tempfile::TempDir>,
    /// Set by tests that destroyed everything themselves, so Drop does not repeat it.
    cleaned: Cell<bool>,
}

impl TestContext {
    /// A fresh cluster (or the real one), namespace and Terraform set-up.
    #[track_caller]
    pub fn new(test_name: &str) -> TestContext {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("kudo-acc-{test_name}-"))
            .tempdir()
            .expect("temp dir");
        let workdir = tmp.path().join("work");
        std::fs::create_dir_all(&workdir).expect("work dir");

        let cluster = TestCluster::start(tmp.path());
        let namespace = unique_namespace(test_name);
        cluster.kube.create_namespace(&namespace);

        let cli_config = tmp.path().join("terraformrc");
        std::fs::write(&cli_config, cli_config_text()).expect("write CLI config");

        let mut tf = Terraform::new(workdir.clone());
        tf.set_env("TF_CLI_CONFIG_FILE", &cli_config);
        tf.set_env("KUBE_CONFIG_PATH", &cluster.kubeconfig);
        tf.set_env("TF_VAR_namespace", &namespace);

        eprintln!(
            "[acceptance] {test_name}: namespace {namespace}, work dir {}, cluster {}",
            workdir.display(),
            if cluster.is_real() {
                "KUDO_TEST_KUBECONFIG"
            } else {
                "kube-sim"
            }
        );
        TestContext {
            namespace,
            cluster,
            tf,
            workdir,
            tmp: Some(tmp),
            cleaned: Cell::new(false),
        }
    }

    /// A context whose kube-sim serves Kubernetes `release` (`"1.24"`) instead of the
    /// suite's profile; `None` on a real cluster, whose version a test cannot choose.
    /// Nothing but the test namespace exists yet when the profile is switched, so this
    /// is the same as starting kube-sim on that release.
    #[track_caller]
    pub fn on_kubernetes(test_name: &str, release: &str) -> Option<TestContext> {
        if cluster::real_kubeconfig().is_some() {
            return None;
        }
        let ctx = TestContext::new(test_name);
        ctx.upgrade_cluster(release);
        Some(ctx)
    }

    /// kube-sim starts serving `release` with every stored object kept: the API server
    /// upgraded (or downgraded) over the same storage. kube-sim only.
    #[track_caller]
    pub fn upgrade_cluster(&self, release: &str) {
        let release = release
            .parse()
            .unwrap_or_else(|e| panic!("release {release:?}: {e}"));
        self.cluster.upgrade_to(release);
    }

    pub fn kube(&self) -> &Kube {
        &self.cluster.kube
    }

    /// kube-sim of this test, or `None` (skip) on a real cluster.
    pub fn sim(&self) -> Option<&kube_sim::KubeSim> {
        match &self.cluster.backend {
            cluster::Backend::Sim(sim) => Some(sim),
            cluster::Backend::Real => None,
        }
    }

    /// The cluster's connection as provider settings (from the harness's kubeconfig).
    pub fn connection(&self) -> Connection {
        Connection::from_kubeconfig(&self.cluster.kubeconfig)
    }

    /// Whether pods really run here (kube-sim simulates them; a real cluster needs a
    /// node): tests of Pipe tasks and pod logs cannot run without one.
    pub fn runs_pods(&self) -> bool {
        !self.is_real_cluster() || self.kube().has_nodes()
    }

    pub fn is_real_cluster(&self) -> bool {
        self.cluster.is_real()
    }

    /// Copies `examples/terraform/<name>` into the working folder.
    pub fn use_example(&self, name: &str) {
        let src = repo_root().join("examples/terraform").join(name);
        copy_dir(&src, &self.workdir);
    }

    /// Writes a file (e.g. `main.tf`, or a template of an inline package) relative to
    /// the working folder, creating parent folders.
    pub fn write(&self, rel: &str, content: &str) {
        let path = self.workdir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent dir");
        }
        std::fs::write(&path, content).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// Copies a folder (e.g. an operator package) into the working folder at `rel`.
    pub fn copy_in(&self, src: &Path, rel: &str) {
        copy_dir(src, &self.workdir.join(rel));
    }

    /// Objects in the test namespace labelled as belonging to KUDO instance `name`.
    pub fn instance_objects(&self, name: &str) -> std::collections::BTreeSet<ObjRef> {
        self.kube()
            .list_namespace(&self.namespace, Some(&format!("kudo.dev/instance={name}")))
    }

    /// Objects labelled with instance `name` that a destroy left, except the volume
    /// claims the destroy (`destroy_output`) said it kept: StatefulSets' claims stay
    /// unless `delete_volumes_on_destroy` is set, and the warning names each one.
    pub fn left_after_destroy(
        &self,
        name: &str,
        destroy_output: &str,
    ) -> std::collections::BTreeSet<ObjRef> {
        let out = flat(destroy_output);
        // A dependency's claims are named in the warning of the instance destroyed.
        let _ = name;
        let warned = out.contains("Volumes of instance ");
        self.instance_objects(name)
            .into_iter()
            .filter(|o| {
                !(warned
                    && o.kind == "PersistentVolumeClaim"
                    && out.contains(&format!(" {}", o.name)))
            })
            .collect()
    }

    /// Records that the test destroyed its resources itself.
    pub fn mark_cleaned(&self) {
        self.cleaned.set(true);
    }
}

impl Drop for TestContext {
    fn drop(&mut self) {
        // With kube-sim everything disappears with the server; a real cluster keeps
        // what a failed test left behind unless we destroy it.
        if self.is_real_cluster()
            && !self.cleaned.get()
            && self.workdir.join("terraform.tfstate").exists()
        {
            let run = self.tf.destroy(&[]);
            if !run.success() {
                eprintln!("[acceptance] cleanup destroy failed:\n{run}");
            }
        }
        self.cluster.kube.delete_namespace(&self.namespace);
        if std::env::var_os("KUDO_TEST_KEEP").is_some()
            && let Some(tmp) = self.tmp.take()
        {
            eprintln!("[acceptance] kept {}", tmp.keep().display());
        }
    }
}

/// The CLI configuration that makes Terraform use our freshly built binary for
/// `kudo/kudo` without `terraform init` or a registry.
fn cli_config_text() -> String {
    let dir = provider_binary()
        .parent()
        .expect("provider binary has a parent folder");
    format!(
        "provider_installation {{\n  dev_overrides {{\n    \"kudo/kudo\" = {dir:?}\n  }}\n  direct {{}}\n}}\n",
        dir = dir.display().to_string()
    )
}

/// `kudo-acc-<test>-<suffix>`: a valid DNS label, unique across processes and runs
/// (tests against a shared real cluster must not collide).
fn unique_namespace(test_name: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let suffix = format!(
        "{:x}{:x}{:x}",
        std::process::id() & 0xffff,
        nanos & 0xfffff,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let mut base: String = test_name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    base.truncate(63 - "kudo-acc--".len() - suffix.len());
    format!("kudo-acc-{}-{suffix}", base.trim_matches('-'))
}

pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap_or_else(|e| panic!("mkdir {}: {e}", dst.display()));
    let entries = std::fs::read_dir(src).unwrap_or_else(|e| panic!("read {}: {e}", src.display()));
    for entry in entries {
        let entry = entry.expect("dir entry");
        let name = entry.file_name();
        // Local Terraform leftovers of someone who ran the example by hand.
        if name == ".terraform" || name.to_string_lossy().starts_with("terraform.tfstate") {
            continue;
        }
        let from = entry.path();
        let to = dst.join(&name);
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&from, &to);
        } else {
            std::fs::copy(&from, &to)
                .unwrap_or_else(|e| panic!("copy {} -> {}: {e}", from.display(), to.display()));
        }
    }
}

/// The objects of the test namespace a configuration could have written: KUDO's
/// Operators, OperatorVersions and Instances, and objects whose name starts with
/// `prefix` (the instance's name).
pub fn written(ctx: &TestContext, prefix: &str) -> Vec<String> {
    ctx.kube()
        .list_namespace(&ctx.namespace, None)
        .into_iter()
        .filter(|o| {
            matches!(o.kind.as_str(), "Operator" | "OperatorVersion" | "Instance")
                || o.name.starts_with(prefix)
        })
        .map(|o| format!("{} {}", o.kind, o.name))
        .collect()
}

/// `terraform plan` and `terraform apply` both fail saying every one of `expected` (a
/// certain refusal, never called transient), and nothing the configuration could have
/// written (see [`written`]) is in the cluster afterwards.
#[track_caller]
pub fn refused_writing_nothing(ctx: &TestContext, prefix: &str, expected: &[&str]) {
    for command in ["plan", "apply"] {
        let run = match command {
            "plan" => ctx.tf.plan(&[]),
            _ => ctx.tf.apply(&[]),
        };
        let run = run.assert_clean_error();
        let out = flat(&run.output());
        for text in expected {
            // Both sides flattened: Terraform wraps long lines, and an expected text
            // may span lines (an RBAC rule).
            assert!(
                out.contains(&flat(text)),
                "terraform {command} does not say {text:?}:\n{run}"
            );
        }
        assert!(
            !out.contains("transient"),
            "terraform {command} calls a certain refusal transient:\n{run}"
        );
        assert_eq!(
            written(ctx, prefix),
            Vec::<String>::new(),
            "terraform {command} wrote objects although the plan refused:\n{run}"
        );
    }
    ctx.mark_cleaned();
}
