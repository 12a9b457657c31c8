//! How a `kudo_instance` names its operator (`operator`, a `kudo_operator`'s id
//! `<namespace>/<operatorversion-name>`) and how a `kudo_operator` names an
//! OperatorVersion already in the cluster (`package = "cluster:<namespace>/<name>"`),
//! checked through `ValidateResourceConfig` and `PlanResourceChange`.

use tfplugin::{AttributePath, PlanRequest, Provider, Value};

use crate::harness::rpc::{KudoProvider, block_on, configured, provider_block, text, value_of};

#[test]
fn an_operator_reference_is_namespace_and_operatorversion_name() {
    let provider = KudoProvider::new();
    let validate = |operator: &str| {
        let config = value_of(
            "kudo_instance",
            [
                ("name", Value::string("zk")),
                ("operator", Value::string(operator)),
            ],
        );
        block_on(provider.validate_resource_config(
            "kudo_instance",
            config,
            tfplugin::ClientCapabilities {
                deferral_allowed: false,
                write_only_attributes_allowed: true,
                store_planned_private: false,
            },
        ))
    };
    let diags = validate("ns/zk-3.4-0.3");
    assert!(diags.is_empty(), "{}", text(&diags));
    for bad in ["nope", "a/b/c", "/b", "ns/"] {
        let diags = validate(bad);
        assert!(
            diags
                .iter()
                .any(|d| d.summary == "Invalid operator reference"
                    && d.attribute == Some(AttributePath::attribute("operator"))),
            "{bad}: {}",
            text(&diags)
        );
    }
}

/// Offline (the cluster is created by the same apply) a `cluster:` package is read at
/// apply; anything else after `cluster:` is not such a reference and is looked for as a
/// package source.
#[test]
fn a_cluster_package_is_namespace_and_operatorversion_name() {
    let provider = configured(provider_block([("host", Value::Unknown)]));
    let plan = |package: &str| {
        let config = value_of(
            "kudo_operator",
            [
                ("package", Value::string(package)),
                ("namespace", Value::string("ns")),
            ],
        );
        block_on(provider.plan_resource_change(PlanRequest {
            type_name: "kudo_operator".into(),
            prior_state: Value::Null,
            proposed_new_state: config.clone(),
            config,
            prior_private: Vec::new(),
            planned_private: Vec::new(),
        }))
    };
    let planned = plan("cluster:ns/zk-0.3");
    // Only the offline plan's one warning (#48): what the apply checks that it could not.
    assert!(
        planned.diagnostics.iter().all(|d| d.summary
            == "Planned without the cluster: checked only at apply"
            && !d.is_error()),
        "{}",
        text(&planned.diagnostics)
    );
    assert_eq!(
        planned.planned_state.get("package").as_str(),
        Some("cluster:ns/zk-0.3")
    );
    let refused = plan("cluster:zk-0.3");
    assert!(
        refused.diagnostics.iter().any(|d| d.is_error()),
        "{:?}",
        refused.planned_state
    );
}
