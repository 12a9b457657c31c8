//! Configuration checks that need neither the package nor the cluster.

use tfplugin::{AttributePath, Diagnostic, Value};

use kudo_engine::engine::{self};

use crate::provider::packages::parse_operator_id;
use crate::provider::timeouts::{self};

pub fn validate(config: &Value) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    if let Some(v) = config.get("crd_deletion").as_str()
        && engine::CrdDeletion::parse(v).is_none()
    {
        diags.push(
            Diagnostic::error(
                "Invalid crd_deletion",
                format!(
                    "{v:?} is not a choice; set `crd_deletion` to one of {}, or leave it unset for \"when-unused\".",
                    engine::CrdDeletion::VALUES
                        .iter()
                        .map(|c| format!("{c:?}"))
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            )
            .with_attribute(AttributePath::attribute("crd_deletion")),
        );
    }
    if let Some(id) = config.get("operator").as_str()
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
    if let Some(t) = config.get("timeouts").as_map() {
        for (op, v) in t {
            if let Some(text) = v.as_str()
                && timeouts::parse_duration(text).is_none()
            {
                diags.push(
                    Diagnostic::error(
                        "Invalid timeout",
                        format!(
                            "{text:?} is not a duration; write it like `30s`, `10m` or `1h30m`."
                        ),
                    )
                    .with_attribute(AttributePath::attribute("timeouts").attr(op)),
                );
            }
        }
    }
    diags
}
