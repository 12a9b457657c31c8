//! `data "kudo_dependencies"` through `ReadDataSource`: the install order and state of
//! a dependency tree, a cycle's error, and deferral while overrides are unknown. No
//! cluster.

use std::path::{Path, PathBuf};

use tfplugin::{AttributePath, Diagnostic, Provider, Value};

use crate::harness::repo_root;
use crate::harness::rpc::{block_on, configured, provider_block, schemas, text, value_of};

fn deps_fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/deps").join(name)
}

/// `ReadDataSource` of `kudo_dependencies` for `package` with `overrides`, the
/// provider's one repository being `repository` if given.
fn read(package: &Path, overrides: Value, repository: Option<&Path>) -> (Value, Vec<Diagnostic>) {
    let block = match repository {
        None => provider_block(Vec::<(String, Value)>::new()),
        Some(dir) => provider_block([(
            "repository",
            Value::list([Value::object([
                ("name", Value::string("fixtures")),
                ("url", Value::string(dir.display().to_string())),
                ("priority", Value::int(0)),
            ])]),
        )]),
    };
    let provider = configured(block);
    let config = value_of(
        "kudo_dependencies",
        [
            ("package", Value::string(package.display().to_string())),
            ("dependency_overrides", overrides),
        ],
    );
    block_on(provider.read_data_source("kudo_dependencies", config))
}

#[test]
fn kep29_install_order_and_state_shape() {
    let repo = deps_fixture("kep29");
    let (state, diags) = read(&repo.join("aa"), Value::Null, Some(&repo));
    assert!(diags.is_empty(), "{}", text(&diags));
    let order = state
        .get("install_order")
        .to_string_list()
        .ok()
        .flatten()
        .unwrap_or_default();
    assert_eq!(
        order,
        ["ee-0.1.0", "gg-0.1.0", "bb-0.1.0", "cc-0.1.0", "aa-0.1.0"]
    );
    // Encoding fails when an attribute is missing or has the wrong shape.
    state
        .to_msgpack(&schemas().data_sources["kudo_dependencies"].value_type())
        .unwrap_or_else(|e| panic!("state does not fit the schema: {e}"));
}

#[test]
fn a_cycle_is_an_error_on_package_with_its_path() {
    let (_, diags) = read(&deps_fixture("cycle").join("a"), Value::Null, None);
    assert_eq!(diags.len(), 1, "{}", text(&diags));
    assert!(diags[0].is_error());
    assert_eq!(
        diags[0].attribute,
        Some(AttributePath::attribute("package"))
    );
    assert!(
        diags[0].detail.contains("a -> b -> c -> a"),
        "{}",
        diags[0].detail
    );
}

#[test]
fn unknown_overrides_defer() {
    let (state, diags) = read(&deps_fixture("cycle").join("a"), Value::Unknown, None);
    assert!(diags.is_empty(), "{}", text(&diags));
    assert_eq!(state.get("install_order"), &Value::Unknown);
}
