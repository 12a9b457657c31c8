//! `outputs:` in operator.yaml: parsed, and kept through the OperatorVersion object.

use kudo_package::{Package, crd};

fn package_with_outputs(dir: &std::path::Path) {
    std::fs::create_dir_all(dir.join("templates")).expect("mkdir");
    std::fs::write(
        dir.join("operator.yaml"),
        "apiVersion: kudo.dev/v1beta1\nname: zk\noperatorVersion: 0.1.0\ntasks:\n  - name: app\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\nplans:\n  deploy:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n          - name: app\n            tasks: [app]\noutputs:\n  CONNECTION: \"{{ .Name }}-cs.{{ .Namespace }}:2181\"\n  SIZE: \"{{ .Params.SIZE }}\"\n",
    )
    .expect("write operator.yaml");
    std::fs::write(
        dir.join("params.yaml"),
        "apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: SIZE\n    default: \"3\"\n",
    )
    .expect("write params");
    std::fs::write(
        dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\ndata:\n  size: \"{{ .Params.SIZE }}\"\n",
    )
    .expect("write template");
}

#[test]
fn outputs_are_read_and_survive_the_operator_version_object() {
    let tmp = tempfile::tempdir().expect("tempdir");
    package_with_outputs(tmp.path());
    let pkg = Package::load_dir(tmp.path()).expect("loads");
    assert_eq!(
        pkg.operator.outputs.get("CONNECTION").map(String::as_str),
        Some("{{ .Name }}-cs.{{ .Namespace }}:2181")
    );
    let ov = serde_json::json!({"metadata": {"name": pkg.operator_version_name()}, "spec": crd::operator_version_spec(&pkg)});
    let back = crd::package_from_operator_version(None, &ov).expect("round trip");
    assert_eq!(back.operator.outputs, pkg.operator.outputs);
}

#[test]
fn an_output_that_is_not_text_names_the_field() {
    let tmp = tempfile::tempdir().expect("tempdir");
    package_with_outputs(tmp.path());
    let path = tmp.path().join("operator.yaml");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(
        &path,
        text.replace("  SIZE: \"{{ .Params.SIZE }}\"", "  SIZE:\n    nested: 1"),
    )
    .expect("write");
    let err = Package::load_dir(tmp.path())
        .expect_err("must fail")
        .to_string();
    assert!(
        err.contains("operator.yaml") && err.contains("outputs.SIZE"),
        "{err}"
    );
}

/// Rebuilding from the same object again gives the same package (the process keeps the
/// first rebuild); an object whose spec changed since is rebuilt, never served stale.
#[test]
fn a_changed_operator_version_is_rebuilt_not_served_from_the_first_read() {
    let tmp = tempfile::tempdir().expect("tempdir");
    package_with_outputs(tmp.path());
    let pkg = Package::load_dir(tmp.path()).expect("loads");
    let mut ov = serde_json::json!({"metadata": {"name": pkg.operator_version_name()}, "spec": crd::operator_version_spec(&pkg)});
    let first = crd::package_from_operator_version(None, &ov).expect("first read");
    let again = crd::package_from_operator_version(None, &ov).expect("second read");
    assert_eq!(first.templates, again.templates);
    assert_eq!(first.operator.outputs, again.operator.outputs);

    let changed = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-changed\n";
    ov["spec"]["templates"]["cm.yaml"] = serde_json::Value::from(changed);
    ov["metadata"]["resourceVersion"] = serde_json::Value::from("2");
    let rebuilt = crd::package_from_operator_version(None, &ov).expect("changed object");
    assert_eq!(
        rebuilt.templates.get("cm.yaml").map(String::as_str),
        Some(changed)
    );
}
