//! operator.yaml `dependencies:` (OLM-style required operators): parsed, checked, kept
//! through the OperatorVersion object; and the APIs a package provides.

use std::path::{Path, PathBuf};

use kudo_package::{Gvk, OperatorDependency, Package, crd};

fn olm(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/deps/olm")
        .join(rel)
}

fn broker(version: &str) -> Gvk {
    Gvk {
        group: "kafka.example.com".into(),
        version: version.into(),
        kind: "Broker".into(),
    }
}

#[test]
fn the_list_is_read_and_survives_the_operator_version_object() {
    let pkg = Package::load_dir(&olm("shop")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        pkg.operator.dependencies,
        [
            OperatorDependency::Package {
                name: "zookeeper".into(),
                operator_version: Some(">=0.3.0 <0.4.0".into()),
                app_version: None,
            },
            OperatorDependency::Api(broker("v1")),
        ]
    );
    let ov = serde_json::json!({"metadata": {"name": pkg.operator_version_name()}, "spec": crd::operator_version_spec(&pkg)});
    let back = crd::package_from_operator_version(None, &ov).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back.operator.dependencies, pkg.operator.dependencies);
}

#[test]
fn provided_apis_read_crd_templates_in_both_spellings() {
    let v1 = Package::load_dir(&olm("kafka-1.1.0")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v1.provided_apis(), [broker("v1")]);
    let legacy = Package::load_dir(&olm("kafka-2.0.0")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(legacy.provided_apis(), [broker("v2")]);
    // Templated ConfigMaps are skipped, not errors.
    let zk = Package::load_dir(&olm("zookeeper-0.3.0")).unwrap_or_else(|e| panic!("{e}"));
    assert!(zk.provided_apis().is_empty());
}

/// The shop package with its `dependencies:` block replaced.
fn shop_with(block: &str) -> String {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("shop");
    std::fs::create_dir_all(dir.join("templates")).expect("mkdir");
    for f in ["params.yaml", "templates/cm.yaml"] {
        std::fs::copy(olm("shop").join(f), dir.join(f)).expect("copy");
    }
    let text = std::fs::read_to_string(olm("shop/operator.yaml")).expect("read");
    let start = text.find("dependencies:").expect("has a list");
    let end = text.find("tasks:").expect("has tasks");
    let text = format!("{}{block}{}", &text[..start], &text[end..]);
    std::fs::write(dir.join("operator.yaml"), text).expect("write");
    match Package::load_dir(&dir) {
        Ok(_) => panic!("{block} must be refused"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn an_entry_without_package_or_api_names_file_and_field() {
    let err = shop_with("dependencies:\n  - name: zookeeper\n  - operatorVersion: \"1.x\"\n");
    assert!(
        err.contains("operator.yaml")
            && err.contains("dependencies[1]")
            && err.contains("neither a package nor an API"),
        "{err}"
    );
}

#[test]
fn an_incomplete_api_says_what_is_missing() {
    let err = shop_with("dependencies:\n  - group: kafka.example.com\n    kind: Broker\n");
    assert!(
        err.contains("dependencies[0]") && err.contains("missing version"),
        "{err}"
    );
}

#[test]
fn an_entry_with_both_package_and_api_is_refused() {
    let err = shop_with(
        "dependencies:\n  - name: kafka\n    group: kafka.example.com\n    version: v1\n    kind: Broker\n",
    );
    assert!(
        err.contains("dependencies[0]") && err.contains("either a package or an API"),
        "{err}"
    );
}
