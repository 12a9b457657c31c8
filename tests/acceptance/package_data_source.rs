//! `data "kudo_package"` through `ReadDataSource`: what a package declares, as the
//! state Terraform stores, and the errors of a package that cannot be read. No cluster.

use std::path::Path;

use tfplugin::{AttributePath, Diagnostic, Provider, Value};

use crate::harness::fixture_operator;
use crate::harness::rpc::{block_on, configured, provider_block, schemas, text, value_of};
use crate::skip;

/// `ReadDataSource` of `kudo_package` with `source`, the provider configured with
/// `repositories` (`repository` blocks).
fn read(source: Value, repositories: Vec<Value>) -> (Value, Vec<Diagnostic>) {
    let block = match repositories.is_empty() {
        true => provider_block(Vec::<(String, Value)>::new()),
        false => provider_block([("repository", Value::list(repositories))]),
    };
    let provider = configured(block);
    let config = value_of("kudo_package", [("source", source)]);
    block_on(provider.read_data_source("kudo_package", config))
}

fn read_path(dir: &Path) -> (Value, Vec<Diagnostic>) {
    read(Value::string(dir.display().to_string()), Vec::new())
}

fn find<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_slice()
        .and_then(|items| items.iter().find(|i| i.get("name").as_str() == Some(name)))
        .unwrap_or(&Value::Null)
}

#[test]
fn zookeeper_parameters_and_plans() {
    let Some(dir) = fixture_operator("zookeeper") else {
        skip!("../shared/fixtures/operators/zookeeper not found (clone without ../shared)");
    };
    let (state, diags) = read_path(&dir);
    assert!(diags.is_empty(), "{}", text(&diags));
    assert_eq!(state.get("name").as_str(), Some("zookeeper"));
    assert_eq!(state.get("operator_version").as_str(), Some("0.3.3"));
    assert_eq!(
        state.get("operator_version_name").as_str(),
        Some("zookeeper-3.6.2-0.3.3")
    );
    let node_count = find(state.get("parameters"), "NODE_COUNT");
    assert_eq!(node_count.get("default").as_str(), Some("3"));
    assert_eq!(node_count.get("required").as_bool(), Some(true));
    let deploy = find(state.get("plans"), "deploy");
    assert_eq!(deploy.get("strategy").as_str(), Some("serial"));
    let first_phase = &deploy.get("phases").as_slice().expect("phases")[0];
    assert_eq!(first_phase.get("name").as_str(), Some("zookeeper"));
    let step = &first_phase.get("steps").as_slice().expect("steps")[0];
    assert_eq!(
        step.get("tasks").to_string_list().expect("tasks"),
        Some(vec!["infra".to_string(), "app".to_string()])
    );
    assert_eq!(
        find(state.get("tasks"), "app").get("kind").as_str(),
        Some("Apply")
    );
}

#[test]
fn state_matches_the_schema_type() {
    let ty = schemas().data_sources["kudo_package"].value_type();
    for name in ["zookeeper", "mysql", "kafka", "cowsay"] {
        let Some(dir) = fixture_operator(name) else {
            skip!("../shared/fixtures/operators/{name} not found (clone without ../shared)");
        };
        let (state, diags) = read_path(&dir);
        assert!(diags.is_empty(), "{name}: {}", text(&diags));
        // Encoding fails when an attribute is missing or has the wrong shape.
        state
            .to_msgpack(&ty)
            .unwrap_or_else(|e| panic!("{name}: state does not fit the schema: {e}"));
    }
}

#[test]
fn mysql_app_version_is_text() {
    let Some(dir) = fixture_operator("mysql") else {
        skip!("../shared/fixtures/operators/mysql not found (clone without ../shared)");
    };
    let (state, diags) = read_path(&dir);
    assert!(diags.is_empty(), "{}", text(&diags));
    assert_eq!(state.get("app_version").as_str(), Some("5.7"));
}

#[test]
fn repository_reference() {
    let Some(dir) = fixture_operator("zookeeper") else {
        skip!("../shared/fixtures/operators/zookeeper not found (clone without ../shared)");
    };
    let repo = tempfile::tempdir().expect("temp dir");
    let bytes = kudo_package::create_tgz(&dir).expect("package tgz");
    std::fs::write(repo.path().join("zookeeper-3.6.2_0.3.3.tgz"), bytes).expect("write tgz");
    let index = kudo_package::index_dir(repo.path(), None).expect("index");
    std::fs::write(repo.path().join("index.yaml"), index).expect("write index");
    let repositories = || {
        vec![Value::object([
            ("name", Value::string("local")),
            ("url", Value::string(repo.path().display().to_string())),
            ("priority", Value::int(0)),
        ])]
    };
    let (state, diags) = read(Value::string("zookeeper@0.3.3"), repositories());
    assert!(diags.is_empty(), "{}", text(&diags));
    assert_eq!(state.get("app_version").as_str(), Some("3.6.2"));
    assert_eq!(state.get("source").as_str(), Some("zookeeper@0.3.3"));

    let (_, diags) = read(Value::string("zookeeper@9.9.9"), repositories());
    assert_eq!(diags.len(), 1, "{}", text(&diags));
    assert!(diags[0].detail.contains("zookeeper"), "{}", diags[0].detail);
}

#[test]
fn missing_package_is_an_error_on_source() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, diags) = read_path(&dir.path().join("nope"));
    assert_eq!(diags.len(), 1, "{}", text(&diags));
    assert!(diags[0].is_error());
    assert_eq!(diags[0].attribute, Some(AttributePath::attribute("source")));
    assert!(diags[0].detail.contains("nope"), "{}", diags[0].detail);
}

#[test]
fn unknown_source_defers() {
    let (state, diags) = read(Value::Unknown, Vec::new());
    assert!(diags.is_empty(), "{}", text(&diags));
    assert_eq!(state.get("parameters"), &Value::Unknown);
}
