//! `kind: Webhook` tasks in operator.yaml: parsed, checked, and kept through the
//! OperatorVersion object.

use std::time::Duration;

use kudo_package::{Files, Origin, Package, TaskSpec, crd, verify};

fn operator(spec: &str) -> String {
    format!(
        "name: hooked\noperatorVersion: 0.1.0\ntasks:\n- name: fetch\n  kind: Webhook\n  spec:\n{spec}plans:\n  deploy:\n    strategy: serial\n    phases:\n    - name: main\n      strategy: serial\n      steps:\n      - name: s\n        tasks: [fetch]\n"
    )
}

fn load(spec: &str) -> Result<Package, kudo_package::PackageError> {
    let mut files = Files::new();
    files.insert("operator.yaml".into(), operator(spec).into_bytes());
    files.insert(
        "params.yaml".into(),
        b"parameters:\n- name: URL\n  default: https://h.example.com\n".to_vec(),
    );
    Package::from_files(&files, "hooked/", Origin::Memory)
}

#[test]
fn a_webhook_task_is_read_and_survives_the_operator_version_object() {
    let pkg = load("    url: \"{{ .Params.URL }}/x\"\n    timeout: 1500ms\n    caBundle: |\n      -----BEGIN CERTIFICATE-----\n      AAAA\n      -----END CERTIFICATE-----\n    headers:\n    - name: Authorization\n      secretKeyRef: {name: hook-token, key: token}\n").expect("loads");
    let TaskSpec::Webhook(w) = &pkg.operator.tasks[0].spec else {
        panic!("not a webhook: {:?}", pkg.operator.tasks[0]);
    };
    assert_eq!(w.url, "{{ .Params.URL }}/x");
    assert_eq!(w.timeout, Duration::from_millis(1500));
    assert_eq!(w.headers[0].name, "Authorization");
    assert_eq!(
        (
            w.headers[0].secret_name.as_str(),
            w.headers[0].secret_key.as_str()
        ),
        ("hook-token", "token")
    );
    assert!(
        w.ca_bundle
            .as_deref()
            .is_some_and(|c| c.contains("BEGIN CERTIFICATE"))
    );
    // The parameter used only by the URL counts as used; nothing else to say.
    let findings = verify(&pkg);
    assert!(findings.is_empty(), "{findings:?}");
    let ov = serde_json::json!({"metadata": {"name": pkg.operator_version_name()}, "spec": crd::operator_version_spec(&pkg)});
    let back = crd::package_from_operator_version(None, &ov).expect("round trip");
    assert_eq!(back.operator.tasks, pkg.operator.tasks);
}

#[test]
fn the_timeout_defaults_to_30s_and_may_not_be_longer() {
    let pkg = load("    url: https://h.example.com\n").expect("loads");
    let TaskSpec::Webhook(w) = &pkg.operator.tasks[0].spec else {
        panic!("not a webhook");
    };
    assert_eq!(w.timeout, Duration::from_secs(30));
    assert!(load("    url: https://h.example.com\n    timeout: 30s\n").is_ok());
    for (timeout, want) in [
        ("31s", "longer than the 30s"),
        ("1m", "longer than the 30s"),
        ("0s", "is zero"),
        ("soon", "not a duration"),
        ("10h", "unit \"h\""),
    ] {
        let e = load(&format!(
            "    url: https://h.example.com\n    timeout: {timeout}\n"
        ))
        .expect_err(timeout)
        .to_string();
        assert!(
            e.contains("operator.yaml") && e.contains("spec.timeout"),
            "{e}"
        );
        assert!(e.contains(want), "{timeout}: {e}");
    }
}

#[test]
fn broken_webhook_specs_name_the_field() {
    for (spec, field, want) in [
        ("    timeout: 5s\n", "spec.url", "needs `url:`"),
        (
            "    url: https://h\n    headers:\n    - name: X-Token\n",
            "headers[0].secretKeyRef",
            "comes from a Secret",
        ),
        (
            "    url: https://h\n    headers:\n    - name: Bad Header\n      secretKeyRef: {name: s, key: k}\n",
            "headers[0].name",
            "not an HTTP header name",
        ),
        (
            "    url: https://h\n    headers:\n    - name: Content-Type\n      secretKeyRef: {name: s, key: k}\n",
            "headers[0].name",
            "set by the provider",
        ),
        (
            "    url: https://h\n    headers:\n    - name: X-A\n      secretKeyRef: {name: s}\n",
            "headers[0].secretKeyRef",
            "both `name`",
        ),
    ] {
        let e = load(spec).expect_err(spec).to_string();
        assert!(e.contains(field) && e.contains(want), "{spec}: {e}");
    }
}

#[test]
fn verify_refuses_a_written_url_that_is_not_http() {
    let pkg = load("    url: ftp://h.example.com/x\n").expect("loads");
    let findings: Vec<String> = verify(&pkg).iter().map(ToString::to_string).collect();
    assert!(
        findings.iter().any(|f| f.contains("not an http(s):// URL")),
        "{findings:?}"
    );
}
