//! The real operator packages from ../shared/fixtures must load and round-trip.

use std::collections::BTreeMap;
use std::path::PathBuf;

use kudo_package::{Package, ParamType, Strategy, TaskSpec, crd};

const NAMES: [&str; 8] = [
    "cowsay",
    "first-operator",
    "flink",
    "flink-demo",
    "kafka",
    "mysql",
    "redis",
    "zookeeper",
];

fn fixtures() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/fixtures/operators"
    ));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("SKIPPED: shared fixtures not found at {}", dir.display());
        None
    }
}

fn load(name: &str) -> Option<Package> {
    let dir = fixtures()?;
    Some(Package::load_dir(&dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}")))
}

#[test]
fn all_fixture_packages_load() {
    let Some(dir) = fixtures() else { return };
    for name in NAMES {
        let pkg = Package::load_dir(&dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(pkg.operator.name, name);
        assert!(pkg.operator.plans.contains_key("deploy"), "{name}");
        assert!(!pkg.templates.is_empty() || name == "flink-demo", "{name}");
        for t in &pkg.operator.tasks {
            for f in t.spec.template_files() {
                assert!(
                    pkg.templates.contains_key(f),
                    "{name}: task {} file {f}",
                    t.name
                );
            }
        }
    }
}

#[test]
fn mysql_app_version_float_reads_literally() {
    let Some(pkg) = load("mysql") else { return };
    assert_eq!(pkg.operator.app_version.as_deref(), Some("5.7"));
    assert_eq!(pkg.operator_version_name(), "mysql-5.7-0.3.0");
}

#[test]
fn cowsay_model() {
    let Some(pkg) = load("cowsay") else { return };
    assert_eq!(pkg.operator_version_name(), "cowsay-0.2.0");
    assert_eq!(pkg.operator.kubernetes_version, "1.13.0");
    let deploy = &pkg.operator.plans["deploy"];
    assert_eq!(deploy.strategy, Strategy::Serial);
    assert_eq!(deploy.phases[0].steps.len(), 2);
    match &pkg.task("genwww").map(|t| &t.spec) {
        Some(TaskSpec::Pipe { pod, pipe }) => {
            assert_eq!(pod, "pipe-pod.yaml");
            assert_eq!(pipe[0].key, "indexHtml");
            assert_eq!(pipe[0].kind, "ConfigMap");
        }
        other => panic!("unexpected {other:?}"),
    }
    let replicas = pkg.parameter("replicas").map(|p| p.default.clone());
    assert_eq!(replicas, Some(Some("1".to_string())));
}

#[test]
fn kafka_parameters() {
    let Some(pkg) = load("kafka") else { return };
    assert!(pkg.parameters.len() > 50);
    assert!(
        pkg.parameters
            .iter()
            .all(|p| p.value_type == ParamType::String)
    );
    let eff = pkg
        .effective_params(&BTreeMap::new())
        .expect("defaults suffice");
    let tp = pkg.template_params(&eff).expect("template params");
    assert!(tp.len() >= eff.len());
    let mut bad = BTreeMap::new();
    bad.insert("NO_SUCH_PARAM".to_string(), "1".to_string());
    let errs = pkg.effective_params(&bad).unwrap_err();
    assert_eq!(errs[0].parameter, "NO_SUCH_PARAM");
}

#[test]
fn crd_round_trip_for_every_fixture() {
    let Some(dir) = fixtures() else { return };
    for name in NAMES {
        let pkg = Package::load_dir(&dir.join(name)).expect("loads");
        let op = crd::operator_spec(&pkg);
        let ov = crd::operator_version_spec(&pkg);
        let back = crd::package_from_operator_version(Some(&op), &ov)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(back.operator.tasks, pkg.operator.tasks, "{name}");
        assert_eq!(back.operator.plans, pkg.operator.plans, "{name}");
        assert_eq!(back.parameters.len(), pkg.parameters.len(), "{name}");
        for (a, b) in back.parameters.iter().zip(&pkg.parameters) {
            assert_eq!(a.default_value(), b.default_value(), "{name} {}", a.name);
            assert_eq!(a.required, b.required, "{name} {}", a.name);
        }
        assert_eq!(back.templates, pkg.templates, "{name}");
        assert_eq!(
            back.operator.maintainers, pkg.operator.maintainers,
            "{name}"
        );
        assert_eq!(back.operator_version_name(), pkg.operator_version_name());
    }
}

#[test]
fn crd_uses_value_type_spelling() {
    let Some(pkg) = load("zookeeper") else { return };
    let ov = crd::operator_version_spec(&pkg);
    let first = &ov["parameters"][0];
    assert!(first.get("value-type").is_some(), "{first}");
    assert!(first.get("type").is_none());
    assert_eq!(ov["operator"]["kind"], "Operator");
}

#[test]
fn every_fixture_verifies_without_errors() {
    let Some(dir) = fixtures() else { return };
    for name in NAMES {
        let pkg = Package::load_dir(&dir.join(name)).expect("loads");
        let findings = kudo_package::verify(&pkg);
        for f in &findings {
            eprintln!("{name}: {f}");
        }
        let errors: Vec<_> = findings
            .iter()
            .filter(|f| f.severity == kudo_package::Severity::Error)
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
    }
}

/// Our `null-collections` package: array/map parameters without a default load,
/// verify, default to `null` and reach templates as JSON null (docs/parameters.md).
#[test]
fn null_collections_default_to_null() {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/operators/null-collections"
    ));
    let pkg = kudo_package::load(
        &dir.display().to_string(),
        &kudo_package::LoadContext::default(),
    )
    .expect("loads and verifies");
    let eff = pkg
        .effective_params(&BTreeMap::new())
        .expect("defaults suffice");
    for name in ["TOLERATIONS", "EXTRA_ENV", "POD_LABELS"] {
        assert_eq!(eff[name], "null", "{name}");
    }
    let tp = pkg.template_params(&eff).expect("template params");
    assert!(tp.values().all(serde_json::Value::is_null), "{tp:?}");
    let ov = crd::operator_version_spec(&pkg);
    assert_eq!(ov["parameters"][0]["default"], "null", "{ov:#}");
}
