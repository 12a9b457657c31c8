//! The author tools, run as a user runs them: the built binary, its exit code, what it
//! prints and the files it writes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_terraform-provider-kudo");

fn operators() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/operators");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: {} is absent (a clone without ../shared)",
            dir.display()
        );
        None
    }
}

/// Every fixture package folder.
fn packages(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixtures folder is readable")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("operator.yaml").is_file())
        .collect();
    out.sort();
    assert!(
        out.len() >= 5,
        "expected the fixture packages in {}",
        dir.display()
    );
    out
}

/// Runs the binary the way a person does: without Terraform's magic cookie.
fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("TF_PLUGIN_MAGIC_COOKIE")
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    )
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

/// A package that loads but breaks KUDO's rules: the deploy plan runs a missing task.
fn write_broken_package(dir: &Path) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("operator.yaml"),
        "apiVersion: kudo.dev/v1beta1\nname: broken\noperatorVersion: 0.1.0\ntasks:\n  - name: app\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\nplans:\n  deploy:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n          - name: one\n            tasks: [app, ghost-task]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    )
    .unwrap();
}

#[test]
fn no_arguments_is_the_plugin_message() {
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("Terraform provider plugin"),
        "{}",
        describe(&out)
    );
}

#[test]
fn help_version_and_unknown_command() {
    let out = run(&["help"]);
    assert!(out.status.success(), "{}", describe(&out));
    for command in [
        "package verify",
        "render",
        "package create",
        "repo index",
        "resolve",
    ] {
        assert!(text(&out.stdout).contains(command), "usage lacks {command}");
    }
    let out = run(&["version"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
    let out = run(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(text(&out.stderr).contains("unknown command \"frobnicate\""));
    assert!(text(&out.stderr).contains("package verify"));
    let out = run(&["render", "x", "--bogus"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(text(&out.stderr).contains("unknown flag --bogus"));
}

#[test]
fn every_fixture_verifies() {
    let Some(dir) = operators() else { return };
    for pkg in packages(&dir) {
        let out = run(&["package", "verify", path_str(&pkg)]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            pkg.display(),
            describe(&out)
        );
        assert!(!text(&out.stdout).contains("error:"), "{}", describe(&out));
        assert!(
            text(&out.stderr).contains("package is valid"),
            "{}",
            describe(&out)
        );
    }
}

#[test]
fn broken_package_fails_verify_and_render() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("broken");
    write_broken_package(&pkg);
    let out = run(&["package", "verify", path_str(&pkg)]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let stdout = text(&out.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("error: operator.yaml:") && l.contains("ghost-task")),
        "{}",
        describe(&out)
    );
    assert!(text(&out.stderr).contains("1 package verification error"));

    let out = run(&["render", path_str(&pkg)]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("ghost-task"),
        "{}",
        describe(&out)
    );

    let out = run(&[
        "package",
        "create",
        path_str(&pkg),
        "-o",
        path_str(tmp.path()),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(!tmp.path().join("broken-0.1.0.tgz").exists());
}

#[test]
fn verify_a_folder_that_is_not_a_package() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(&["package", "verify", path_str(tmp.path())]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("operator.yaml"),
        "{}",
        describe(&out)
    );
}

#[test]
fn every_fixture_renders_parseable_manifests() {
    let Some(dir) = operators() else { return };
    for pkg in packages(&dir) {
        let out = run(&[
            "render",
            path_str(&pkg),
            "--name",
            "demo",
            "--namespace",
            "ns1",
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            pkg.display(),
            describe(&out)
        );
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains("# Source: templates/"),
            "{}",
            describe(&out)
        );
        let docs = kudo_yaml::to_json_documents(&stdout)
            .unwrap_or_else(|e| panic!("{}: output is not YAML: {e}", pkg.display()));
        let objects = docs.iter().filter(|d| d.get("kind").is_some()).count();
        assert!(objects > 0, "{}: no manifests", pkg.display());
        assert!(
            docs.iter().all(|d| d.is_null() || d.is_object()),
            "{}: a document is not an object",
            pkg.display()
        );
    }
}

#[test]
fn render_uses_parameters() {
    let Some(dir) = operators() else { return };
    let zk = dir.join("zookeeper");
    let out = run(&["render", path_str(&zk), "-p", "NODE_COUNT=5"]);
    assert!(out.status.success(), "{}", describe(&out));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("replicas: 5"), "{stdout}");
    assert!(stdout.contains("# Source: templates/statefulset.yaml"));
    // The default instance name is KUDO's `<operator>-instance`.
    assert!(stdout.contains("zookeeper-instance"), "{stdout}");

    let out = run(&["render", path_str(&zk)]);
    assert!(text(&out.stdout).contains("replicas: 3"));
}

#[test]
fn render_rejects_bad_parameters() {
    let Some(dir) = operators() else { return };
    let zk = dir.join("zookeeper");
    let out = run(&["render", path_str(&zk), "-p", "NO_SUCH_PARAM=1"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("parameter NO_SUCH_PARAM"),
        "{}",
        describe(&out)
    );
    assert!(out.stdout.is_empty());

    let out = run(&["render", path_str(&zk), "-p", "NODE_COUNT"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("KEY=VALUE"),
        "{}",
        describe(&out)
    );

    let out = run(&["render", path_str(&zk), "--plan", "nope"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("plan \"nope\""),
        "{}",
        describe(&out)
    );
}

#[test]
fn render_reports_failing_templates() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("pkg");
    write_broken_package(&pkg);
    // Make it valid, then break one template's YAML and another's template syntax.
    let op = std::fs::read_to_string(pkg.join("operator.yaml")).unwrap();
    std::fs::write(pkg.join("operator.yaml"), op.replace(", ghost-task", "")).unwrap();
    std::fs::write(
        pkg.join("templates/bad-yaml.yaml"),
        "kind: ConfigMap\nmetadata: [\n",
    )
    .unwrap();
    std::fs::write(pkg.join("templates/bad-tmpl.yaml"), "kind: {{ .Nope }\n").unwrap();
    let out_dir = tmp.path().join("out");
    let out = run(&["render", path_str(&pkg), "--output-dir", path_str(&out_dir)]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("error: templates/bad-tmpl.yaml"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: templates/bad-yaml.yaml: document 1"),
        "{stderr}"
    );
    // Templates that rendered are written, raw; the one that failed is not.
    assert!(out_dir.join("templates/cm.yaml").is_file());
    assert!(out_dir.join("templates/bad-yaml.yaml").is_file());
    assert!(!out_dir.join("templates/bad-tmpl.yaml").exists());
}

#[test]
fn render_output_dir_writes_raw_templates() {
    let Some(dir) = operators() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let zk = dir.join("zookeeper");
    let out = run(&[
        "render",
        path_str(&zk),
        "-p",
        "NODE_COUNT=5",
        "--output-dir",
        path_str(tmp.path()),
    ]);
    assert!(out.status.success(), "{}", describe(&out));
    let written = std::fs::read_to_string(tmp.path().join("templates/statefulset.yaml"))
        .expect("statefulset.yaml written");
    assert!(written.contains("replicas: 5"));
    let templates = std::fs::read_dir(zk.join("templates")).unwrap().count();
    let files = std::fs::read_dir(tmp.path().join("templates"))
        .unwrap()
        .count();
    assert_eq!(files, templates);
    assert!(text(&out.stdout).contains("wrote "));
}

#[test]
fn render_fills_pipes_like_kudo() {
    let Some(dir) = operators() else { return };
    let out = run(&["render", path_str(&dir.join("cowsay")), "--name", "demo"]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("demo.deploy.main.genfiles.genwww.indexhtml"),
        "{}",
        describe(&out)
    );
}

#[test]
fn package_create_is_reproducible_and_indexed() {
    let Some(dir) = operators() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let zk = dir.join("zookeeper");
    let first = tmp.path().join("a");
    let second = tmp.path().join("b");
    for out_dir in [&first, &second] {
        let out = run(&["package", "create", path_str(&zk), "-o", path_str(out_dir)]);
        assert!(out.status.success(), "{}", describe(&out));
        assert!(text(&out.stdout).contains("zookeeper-3.6.2_0.3.3.tgz"));
    }
    let name = "zookeeper-3.6.2_0.3.3.tgz";
    let a = std::fs::read(first.join(name)).expect("archive written");
    let b = std::fs::read(second.join(name)).expect("archive written");
    assert_eq!(a, b, "two archives of the same folder differ");

    // A second create into the same place needs --overwrite.
    let out = run(&["package", "create", path_str(&zk), "-o", path_str(&first)]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(text(&out.stderr).contains("--overwrite"));

    let out = run(&[
        "repo",
        "index",
        path_str(&first),
        "--url",
        "https://example.test/repo/",
    ]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("(1 package)"),
        "{}",
        describe(&out)
    );
    let index_text = std::fs::read_to_string(first.join("index.yaml")).expect("index written");
    let index = kudo_package::parse_index(&index_text, "index.yaml").expect("index parses");
    let entry = &index.entries["zookeeper"][0];
    assert_eq!(entry.operator_version, "0.3.3");
    assert_eq!(
        entry.digest.as_deref(),
        Some(kudo_package::sha256_hex(&a).as_str())
    );
    assert_eq!(entry.urls, [format!("https://example.test/repo/{name}")]);

    // The archive is a package: verify and render read it too.
    let tgz = first.join(name);
    let out = run(&["package", "verify", path_str(&tgz)]);
    assert!(out.status.success(), "{}", describe(&out));
}

#[test]
fn resolve_explains_missing_versions_and_resolves_with_overrides() {
    let Some(dir) = operators() else { return };
    let demo = dir.join("flink-demo");
    let repo = format!("fixtures={}", dir.display());
    let demo_arg = demo.to_str().expect("utf-8 path");

    // As written, flink-demo asks for versions the fixtures do not hold.
    let out = run(&["resolve", demo_arg, "--repo", &repo]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    for expected in ["kafka", "1.3.1", "zookeeper", "0.3.1", "1.3.2", "0.3.3"] {
        assert!(
            err.contains(expected),
            "missing {expected:?}: {}",
            describe(&out)
        );
    }

    // Overrides with ranges pick the newest available versions, children first.
    let out = run(&[
        "resolve",
        demo_arg,
        "--repo",
        &repo,
        "--override",
        "kafka=1.3.x",
        "--override",
        "zookeeper=>=0.3.0 <0.4.0",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let tree = text(&out.stdout);
    assert!(tree.contains("1.3.2") && tree.contains("0.3.3"), "{tree}");
    let orders: Vec<_> = tree
        .lines()
        .filter_map(|l| l.strip_prefix("install order: "))
        .collect();
    let [order] = orders[..] else {
        panic!("one install order line expected: {tree}");
    };
    assert!(order.ends_with("flink-demo"), "root goes last: {order}");
}

/// `package verify --kubernetes-version`: what a release no longer serves, with the
/// conversion that will apply; nothing to report where the release still serves it.
#[test]
fn verify_lists_versions_a_release_no_longer_serves() {
    let legacy = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/operators/legacy-apis");
    let out = run(&[
        "package",
        "verify",
        path_str(&legacy),
        "--kubernetes-version",
        "1.36",
    ]);
    assert!(out.status.success(), "{}", describe(&out));
    let stdout = text(&out.stdout);
    for needle in [
        "warning: templates/pdb.yaml: PodDisruptionBudget",
        "uses policy/v1beta1, which Kubernetes 1.36 does not serve (removed in 1.25); it will be applied as policy/v1",
        "warning: templates/crd.yaml: CustomResourceDefinition \"gadgets.legacy.kudo.dev\" uses apiextensions.k8s.io/v1beta1",
        "warning: templates/ingress.yaml: Ingress",
        "warning: templates/cronjob.yaml: CronJob",
        "warning: templates/role.yaml: RoleBinding",
    ] {
        assert!(
            stdout.contains(needle),
            "lacks {needle:?}:\n{}",
            describe(&out)
        );
    }
    // 1.24 still serves policy/v1beta1, batch/v1beta1 and autoscaling/v2beta1.
    let out = run(&[
        "package",
        "verify",
        path_str(&legacy),
        "--kubernetes-version",
        "1.24",
    ]);
    let stdout = text(&out.stdout);
    assert!(!stdout.contains("templates/pdb.yaml"), "{}", describe(&out));
    assert!(stdout.contains("templates/role.yaml"), "{}", describe(&out));

    let out = run(&[
        "package",
        "verify",
        path_str(&legacy),
        "--kubernetes-version",
        "2.0",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--kubernetes-version"),
        "{}",
        describe(&out)
    );
}

/// `render --kubernetes-version`: the manifests as such a cluster gets them.
#[test]
fn render_shows_manifests_as_a_release_gets_them() {
    let Some(dir) = operators() else { return };
    let zk = dir.join("zookeeper");
    let out = run(&["render", path_str(&zk), "--kubernetes-version", "1.36"]);
    assert!(out.status.success(), "{}", describe(&out));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("apiVersion: policy/v1\nkind: PodDisruptionBudget"),
        "{}",
        describe(&out)
    );
    assert!(!stdout.contains("policy/v1beta1"), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("warning: templates/pdb.yaml: PodDisruptionBudget"),
        "{}",
        describe(&out)
    );
    // Without the flag the package is printed as written.
    let out = run(&["render", path_str(&zk)]);
    assert!(
        text(&out.stdout).contains("apiVersion: policy/v1beta1"),
        "{}",
        describe(&out)
    );
}

// ---- `package verify` says everything a plan would refuse (issue #30). Each package
// below was accepted by verify before, while the plan refused it or did the wrong thing.

/// A valid package: one Apply task of `cm.yaml` (a ConfigMap) and `other.yaml` (a
/// Secret), both named after the instance.
const VALID_OPERATOR: &str = "apiVersion: kudo.dev/v1beta1
name: demo
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [cm.yaml, other.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: app
            tasks: [app]
";
const VALID_CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n";
const VALID_SECRET: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name }}\n";

/// The valid package in `dir`, with `files` (path in the package, content) written
/// over it.
fn package_with(dir: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    let base = [
        ("operator.yaml", VALID_OPERATOR),
        ("templates/cm.yaml", VALID_CM),
        ("templates/other.yaml", VALID_SECRET),
    ];
    for (rel, content) in base.iter().chain(files) {
        std::fs::write(dir.join(rel), content).unwrap();
    }
}

/// `package verify` of a package that must fail: its stdout, checked to hold every
/// expected line start (file and line) with its text, and the error count on stderr.
fn verify_fails(pkg: &Path, expected: &[(&str, &str)], errors: usize) -> String {
    let out = run(&["package", "verify", path_str(pkg)]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let stdout = text(&out.stdout);
    for (start, says) in expected {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(start) && l.contains(says)),
            "no line starting {start:?} saying {says:?}\n{}",
            describe(&out)
        );
    }
    let count = format!(
        "found {errors} package verification error{}",
        if errors == 1 { "" } else { "s" }
    );
    assert!(text(&out.stderr).contains(&count), "{}", describe(&out));
    stdout
}

#[test]
fn verify_accepts_the_valid_package() {
    let tmp = tempfile::tempdir().unwrap();
    package_with(tmp.path(), &[]);
    let out = run(&["package", "verify", path_str(tmp.path())]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(text(&out.stderr).contains("package is valid (0 warnings)"));
}

#[test]
fn verify_reports_template_parse_errors_and_unknown_functions() {
    let tmp = tempfile::tempdir().unwrap();
    package_with(
        tmp.path(),
        &[
            (
                "templates/cm.yaml",
                &format!("{VALID_CM}{{{{ if .Name }}}}\ndata: {{}}\n"),
            ),
            (
                "templates/other.yaml",
                &format!("{VALID_SECRET}stringData:\n  a: {{{{ nosuchfunc }}}}\n"),
            ),
        ],
    );
    verify_fails(
        tmp.path(),
        &[
            ("error: templates/cm.yaml:5:", "unexpected EOF"),
            (
                "error: templates/other.yaml:6:9:",
                "function \"nosuchfunc\" not defined",
            ),
        ],
        2,
    );
}

#[test]
fn verify_refuses_a_key_written_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let op = tmp.path().join("op");
    package_with(
        &op,
        &[(
            "operator.yaml",
            &VALID_OPERATOR.replace(
                "operatorVersion: 0.1.0\n",
                "operatorVersion: 0.1.0\nname: other\n",
            ),
        )],
    );
    let at = format!("error: {}/operator.yaml:4:1:", op.display());
    verify_fails(
        &op,
        &[(
            &at,
            "key \"name\" is written twice in this mapping (first on line 2)",
        )],
        1,
    );

    let params = tmp.path().join("params");
    package_with(
        &params,
        &[(
            "params.yaml",
            "parameters:\n  - name: A\n    default: x\n    default: y\n",
        )],
    );
    let at = format!("error: {}/params.yaml:4:5:", params.display());
    verify_fails(&params, &[(&at, "key \"default\" is written twice")], 1);
    // The plan's loader is the same: `render` refuses it too.
    let out = run(&["render", path_str(&params)]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("is written twice"),
        "{}",
        describe(&out)
    );
}

#[test]
fn verify_checks_the_names_of_rendered_objects() {
    let tmp = tempfile::tempdir().unwrap();
    package_with(
        tmp.path(),
        &[(
            "templates/other.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name }}_Secret\n",
        )],
    );
    verify_fails(
        tmp.path(),
        &[(
            "error: templates/other.yaml: plan \"deploy\", phase \"main\", step \"app\", task \"app\": ",
            "Secret \"demo-instance_Secret\" (document 1): metadata.name is not a valid name: a lowercase RFC 1123 subdomain",
        )],
        1,
    );
}

#[test]
fn verify_checks_kubernetes_version_and_version_ranges() {
    let tmp = tempfile::tempdir().unwrap();
    let op = VALID_OPERATOR
        .replace(
            "operatorVersion: 0.1.0\n",
            "operatorVersion: 0.1.0\nkubernetesVersion: one point sixteen\ndependencies:\n  - name: cache\n    appVersion: \"1.x.2\"\n",
        )
        .replace("tasks: [app]", "tasks: [app, zk]")
        .replace(
            "plans:",
            "  - name: zk\n    kind: KudoOperator\n    spec:\n      package: zookeeper\n      operatorVersion: \">=1.0 <<2\"\nplans:",
        );
    package_with(tmp.path(), &[("operator.yaml", &op)]);
    verify_fails(
        tmp.path(),
        &[
            (
                "error: operator.yaml: kubernetesVersion:",
                "\"one point sixteen\" is not a Kubernetes version",
            ),
            (
                "error: operator.yaml: demo 0.1.0 (task \"zk\"): operatorVersion:",
                "invalid version range \">=1.0 <<2\"",
            ),
            (
                "error: operator.yaml: demo 0.1.0: operator.yaml dependencies[0].appVersion:",
                "invalid version range \"1.x.2\"",
            ),
        ],
        3,
    );
}

#[test]
fn verify_refuses_links_out_of_the_package_special_files_and_empty_archives() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside.yaml");
    std::fs::write(&outside, VALID_SECRET).unwrap();

    let linked = tmp.path().join("linked");
    package_with(&linked, &[]);
    std::fs::remove_file(linked.join("templates/other.yaml")).unwrap();
    std::os::unix::fs::symlink(&outside, linked.join("templates/other.yaml")).unwrap();
    let at = format!("error: {}/templates/other.yaml:", linked.display());
    verify_fails(&linked, &[(&at, "outside the package folder")], 1);

    let fifo = tmp.path().join("fifo");
    package_with(&fifo, &[]);
    let status = Command::new("mkfifo")
        .arg(fifo.join("templates/pipe.yaml"))
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    let at = format!("error: {}/templates/pipe.yaml:", fifo.display());
    verify_fails(
        &fifo,
        &[(
            &at,
            "templates/pipe.yaml is a named pipe, not a regular file",
        )],
        1,
    );

    let empty = tmp.path().join("empty.tgz");
    std::fs::write(&empty, b"").unwrap();
    let at = format!("error: {}:", empty.display());
    verify_fails(&empty, &[(&at, "the archive is empty (0 bytes)")], 1);
}

#[test]
fn verify_names_both_templates_that_render_one_object() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("two-templates");
    package_with(&pkg, &[("templates/other.yaml", VALID_CM)]);
    verify_fails(
        &pkg,
        &[(
            "error: templates/cm.yaml: plan \"deploy\", phase \"main\", step \"app\", task \"app\": ",
            "templates/cm.yaml (document 1) and templates/other.yaml (document 1) both render ConfigMap \"demo-instance\" in namespace \"default\"",
        )],
        1,
    );
    let pkg = tmp.path().join("two-documents");
    package_with(
        &pkg,
        &[("templates/cm.yaml", &format!("{VALID_CM}---\n{VALID_CM}"))],
    );
    verify_fails(
        &pkg,
        &[(
            "error: templates/cm.yaml:",
            "templates/cm.yaml renders ConfigMap \"demo-instance\" in namespace \"default\" twice (documents 1 and 2)",
        )],
        1,
    );
    // `render` walks the same plan and refuses it the same way.
    let out = run(&["render", path_str(&pkg)]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("twice (documents 1 and 2)"),
        "{}",
        describe(&out)
    );
}

/// Documents that are not one named object (no `kind`, no `metadata.name`, a `List`)
/// are named by template and document in `package verify` and `render`.
#[test]
fn verify_and_render_name_documents_that_are_not_one_named_object() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, other, says) in [
        (
            "no-kind",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n---\napiVersion: v1\nmetadata:\n  name: x\n",
            "document 2: the object has no `kind`",
        ),
        (
            "no-name",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  generateName: s-\n",
            "document 1: Secret has no `metadata.name` (`generateName` is not enough",
        ),
        (
            "list",
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: s\n",
            "document 1: a List of 1 objects cannot be applied",
        ),
    ] {
        let pkg = tmp.path().join(name);
        package_with(&pkg, &[("templates/other.yaml", other)]);
        verify_fails(
            &pkg,
            &[(
                "error: templates/other.yaml: plan \"deploy\", phase \"main\", step \"app\", task \"app\": ",
                says,
            )],
            1,
        );
        let out = run(&["render", path_str(&pkg)]);
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        let err = text(&out.stderr);
        assert!(
            err.contains("template templates/other.yaml: ") && err.contains(says),
            "{name}: {}",
            describe(&out)
        );
    }
}

/// An operator name Kubernetes cannot take is reported on operator.yaml's `name` line.
#[test]
fn verify_and_render_name_an_invalid_operator_name_in_operator_yaml() {
    let tmp = tempfile::tempdir().unwrap();
    package_with(
        tmp.path(),
        &[(
            "operator.yaml",
            &VALID_OPERATOR.replace("name: demo\n", "name: Bad_Operator!\n"),
        )],
    );
    let at = format!("{}/operator.yaml:2:7: field `name`", tmp.path().display());
    for command in [&["package", "verify"][..], &["render"][..]] {
        let mut args = command.to_vec();
        args.push(path_str(tmp.path()));
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(
            all.contains(&at) && all.contains("\"Bad_Operator!\" is not a valid operator name"),
            "{}",
            describe(&out)
        );
    }
}
