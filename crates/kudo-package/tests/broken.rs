//! The broken-input corpus in tests/fixtures/broken: every case must fail with an error
//! containing each line of its expected.txt (file name, what is wrong, what to fix), and
//! must not panic.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::common::{Entry, Server, file, raw_tgz};
use kudo_package::{LoadContext, Package, Repository, load};

fn case_dir(name: &str) -> PathBuf {
    common::repo_fixtures().join("broken").join(name)
}

fn expect(name: &str, message: &str) {
    let expected = std::fs::read_to_string(case_dir(name).join("expected.txt"))
        .unwrap_or_else(|e| panic!("{name}: expected.txt: {e}"));
    for line in expected.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            message.contains(line),
            "case {name}: error does not contain {line:?}\n--- error ---\n{message}"
        );
    }
}

/// Folder cases: loading fails, or (with values.yaml) the parameter values are rejected.
fn dir_case(name: &str) {
    let dir = case_dir(name);
    let ctx = LoadContext::default();
    let source = dir.display().to_string();
    let values_file = dir.join("values.yaml");
    let message = if values_file.is_file() {
        let pkg =
            load(&source, &ctx).unwrap_or_else(|e| panic!("{name}: package should load: {e}"));
        let text = std::fs::read_to_string(&values_file).unwrap();
        let json = kudo_yaml::to_json(&text).unwrap();
        let values: BTreeMap<String, String> = json
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_str().map_or_else(|| v.to_string(), str::to_string),
                )
            })
            .collect();
        let errors = pkg
            .effective_params(&values)
            .expect_err("values must be rejected");
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        match load(&source, &ctx) {
            Ok(_) => panic!("{name}: expected an error"),
            Err(e) => e.to_string(),
        }
    };
    expect(name, &message);
}

/// Archive cases: write the generated archive into a temp dir and load it.
fn tgz_case(name: &str, archive_name: &str, bytes: Vec<u8>) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(archive_name);
    std::fs::write(&path, bytes).unwrap();
    let err = load(&path.display().to_string(), &LoadContext::default())
        .expect_err("archive must be rejected");
    let message = err.to_string();
    assert!(
        message.contains(archive_name),
        "{name}: error must name the archive: {message}"
    );
    expect(name, &message);
}

macro_rules! dir_cases {
    ($($fn_name:ident => $case:literal),* $(,)?) => {
        $( #[test] fn $fn_name() { dir_case($case) } )*
    };
}

dir_cases! {
    bad_yaml_operator => "bad-yaml-operator",
    bad_yaml_params => "bad-yaml-params",
    missing_operator_yaml => "missing-operator-yaml",
    undefined_param_in_template => "undefined-param-in-template",
    wrong_type_integer => "wrong-type-integer",
    wrong_type_boolean => "wrong-type-boolean",
    enum_violation => "enum-violation",
    unknown_parameter_value => "unknown-parameter-value",
    missing_required_parameter => "missing-required-parameter",
    default_wrong_type => "default-wrong-type",
    unknown_task_kind => "unknown-task-kind",
    task_referenced_but_missing => "task-referenced-but-missing",
    plan_trigger_unknown => "plan-trigger-unknown",
    bad_api_version => "bad-api-version",
    bad_api_version_params => "bad-api-version-params",
    misspelled_strategy => "misspelled-strategy",
    missing_deploy_plan => "missing-deploy-plan",
    non_semver_operator_version => "non-semver-operator-version",
    missing_operator_version => "missing-operator-version",
    missing_template_file => "missing-template-file",
    duplicate_task_names => "duplicate-task-names",
    duplicate_parameter => "duplicate-parameter",
    unknown_parameter_type => "unknown-parameter-type",
    toggle_parameter_undeclared => "toggle-parameter-undeclared",
    parameters_not_a_list => "parameters-not-a-list",
    required_not_boolean => "required-not-boolean",
    several_documents => "several-documents",
    pipe_bad_kind => "pipe-bad-kind",
    extends_unknown_base => "extends-unknown-base",
    missing_task_name => "missing-task-name",
    immutable_without_default => "immutable-without-default",
    group_not_defined => "group-not-defined",
    namespace_kind_in_template => "namespace-kind-in-template",
}

fn ok_files() -> Vec<(&'static str, &'static [u8])> {
    vec![
        ("operator.yaml", common::OPERATOR.as_bytes()),
        ("templates/cm.yaml", common::TEMPLATE.as_bytes()),
    ]
}

fn with_ok<'a>(extra: Entry<'a>) -> Vec<Entry<'a>> {
    let mut v: Vec<Entry<'a>> = ok_files().into_iter().map(|(n, d)| file(n, d)).collect();
    v.push(extra);
    v
}

#[test]
fn tgz_dotdot() {
    tgz_case(
        "tgz-dotdot",
        "dotdot.tgz",
        raw_tgz(&with_ok(file("../evil.yaml", b"x"))),
    );
}

#[test]
fn tgz_absolute() {
    tgz_case(
        "tgz-absolute",
        "absolute.tgz",
        raw_tgz(&with_ok(file("/etc/operator.yaml", b"x"))),
    );
}

#[test]
fn tgz_symlink() {
    let link = Entry {
        name: "templates/link.yaml",
        kind: tar::EntryType::Symlink,
        data: b"",
        link: Some("/etc/passwd"),
        claimed_size: None,
    };
    tgz_case("tgz-symlink", "symlink.tgz", raw_tgz(&with_ok(link)));
}

#[test]
fn tgz_hardlink() {
    let link = Entry {
        name: "templates/hard.yaml",
        kind: tar::EntryType::Link,
        data: b"",
        link: Some("operator.yaml"),
        claimed_size: None,
    };
    tgz_case("tgz-hardlink", "hardlink.tgz", raw_tgz(&with_ok(link)));
}

#[test]
fn tgz_device() {
    let dev = Entry {
        name: "dev",
        kind: tar::EntryType::Char,
        data: b"",
        link: None,
        claimed_size: None,
    };
    tgz_case("tgz-device", "device.tgz", raw_tgz(&with_ok(dev)));
}

#[test]
fn tgz_huge_file() {
    // The header claims 100 GB; the reader must refuse before reading it.
    let huge = Entry {
        name: "templates/huge.yaml",
        kind: tar::EntryType::Regular,
        data: b"",
        link: None,
        claimed_size: Some(100_000_000_000),
    };
    tgz_case("tgz-huge-file", "huge.tgz", raw_tgz(&with_ok(huge)));
}

#[test]
fn tgz_not_gzip() {
    tgz_case(
        "tgz-not-gzip",
        "not-gzip.tgz",
        b"this is not an archive".to_vec(),
    );
}

#[test]
fn tgz_empty() {
    // A zero-byte file (an interrupted download or copy) says so, not "no operator.yaml".
    tgz_case("tgz-empty", "empty.tgz", Vec::new());
}

#[test]
fn tgz_no_files() {
    tgz_case("tgz-no-files", "no-files.tgz", raw_tgz(&[]));
}

#[test]
fn tgz_no_operator() {
    tgz_case(
        "tgz-no-operator",
        "no-operator.tgz",
        raw_tgz(&[file("templates/cm.yaml", common::TEMPLATE.as_bytes())]),
    );
}

#[test]
fn digest_mismatch() {
    let server = Server::start();
    let tgz = raw_tgz(
        &ok_files()
            .into_iter()
            .map(|(n, d)| file(n, d))
            .collect::<Vec<_>>(),
    );
    server.put("/demo-0.1.0.tgz", tgz);
    let index = "apiVersion: v1\nentries:\n  demo:\n  - name: demo\n    operatorVersion: 0.1.0\n    urls: [demo-0.1.0.tgz]\n    digest: 0000000000000000000000000000000000000000000000000000000000000000\n";
    server.put("/index.yaml", index.as_bytes().to_vec());
    let ctx = LoadContext {
        repositories: vec![Repository {
            name: "broken-repo".into(),
            url: server.base.clone(),
            priority: 0,
        }],
        ..LoadContext::default()
    };
    let err = load("demo", &ctx).expect_err("digest mismatch must fail");
    expect("digest-mismatch", &err.to_string());
}

#[test]
fn every_case_folder_has_a_test() {
    let this = include_str!("broken.rs");
    let dir = common::repo_fixtures().join("broken");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            this.contains(&format!("\"{name}\"")),
            "case {name} has no test"
        );
        count += 1;
    }
    assert!(count >= 25, "only {count} cases");
}

#[test]
fn loading_a_broken_package_never_panics_on_truncation() {
    // Every prefix of a valid operator.yaml either loads or errors; none panics.
    let text = common::OPERATOR;
    for cut in 0..text.len() {
        let mut files = kudo_package::Files::new();
        files.insert("operator.yaml".into(), text.as_bytes()[..cut].to_vec());
        let _ = Package::from_files(&files, "cut/", kudo_package::Origin::Memory);
    }
}
