//! Configuration checks that need neither the package nor the cluster.

use tfplugin::{AttributePath, Diagnostic};

use kudo_engine::engine::{self};

use super::InstanceModel;
use crate::provider::diag::invalid_choice;
use crate::provider::packages::parse_operator_id;
use crate::provider::timeouts::{self, Operation};

pub fn validate(config: &InstanceModel) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    if let Some(v) = config.crd_deletion.as_deref()
        && engine::CrdDeletion::parse(v).is_none()
    {
        diags.push(invalid_choice(
            "crd_deletion",
            v,
            &engine::CrdDeletion::VALUES,
            "when-unused",
        ));
    }
    if let Some(v) = config.crd_upgrade_safety.as_deref()
        && engine::CrdSafety::parse(v).is_none()
    {
        diags.push(invalid_choice(
            "crd_upgrade_safety",
            v,
            &engine::CrdSafety::VALUES,
            "the provider's setting (default \"enforce\")",
        ));
    }
    if let Some(id) = config.operator.as_deref()
        && parse_operator_id(id).is_none()
    {
        diags.push(
            Diagnostic::error(
                "Invalid operator reference",
                format!("{id:?} is not a kudo_operator id (`<namespace>/<operatorversion-name>`); set `operator = kudo_operator.<name>.id`."),
            )
            .with_attribute(AttributePath::attribute("operator")),
        );
    }
    // Kubernetes' own naming rule (an RFC 1123 label, as for namespaces and the
    // `kudo.dev/instance` label value), refused before anything is planned.
    let names = [
        ("name", config.name.as_deref()),
        ("namespace", config.namespace.as_deref()),
    ];
    for (attribute, value) in names {
        if let Some(v) = value.filter(|v| !v.is_empty() || attribute == "name")
            && let Err(reason) = kudo_resolve::naming::check_instance_name(v)
        {
            diags.push(
                Diagnostic::error(
                    format!("Invalid {attribute}"),
                    format!(
                        "{v:?} is not a valid Kubernetes name: {reason}. Names are at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit."
                    ),
                )
                .with_attribute(AttributePath::attribute(attribute)),
            );
        }
    }
    if let Err(d) = crate::provider::health::parse(&config.health, &config.health_rule) {
        diags.extend(d);
    }
    if let Err(d) = crate::provider::drift::parse(&config.drift, &config.drift_ignore) {
        diags.extend(d);
    }
    if let Some(t) = config.timeouts.known() {
        for op in Operation::ALL {
            if let Some(text) = t.text(op)
                && timeouts::parse_duration(text).is_none()
            {
                diags.push(timeouts::invalid(text, op));
            }
        }
    }
    diags
}
