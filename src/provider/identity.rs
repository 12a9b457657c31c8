//! Resource identity (Terraform 1.12+): what names a `kudo_instance` and a
//! `kudo_operator` in a cluster, and importing them from an `import` block's
//! `identity = {...}` instead of an id string.
//!
//! The identities are copies of state attributes (see `tfplugin::IdentitySchema`), so
//! state written before identities existed gets one on its next refresh, without a
//! change to plan.

use tfplugin::{Diagnostic, IdentityAttribute, IdentitySchema, Value};

use kudo_engine::engine::{self, ListFilter};
use kudo_package::Package;

use super::instance::import_request;
use super::{Session, namespace_in};

/// `kudo_instance`: the Instance object's namespace and name.
pub fn instance() -> IdentitySchema {
    IdentitySchema::new(
        0,
        vec![
            IdentityAttribute::string(
                "namespace",
                "Namespace of the Instance object. Default `default`.",
            )
            .optional_for_import(),
            IdentityAttribute::string("name", "Name of the Instance object."),
        ],
    )
}

/// `kudo_operator`: the namespace, the operator's name and its `operatorVersion`, which
/// together name one OperatorVersion object.
pub fn operator() -> IdentitySchema {
    IdentitySchema::new(
        0,
        vec![
            IdentityAttribute::string(
                "namespace",
                "Namespace of the Operator and OperatorVersion objects. Default `default`.",
            )
            .optional_for_import(),
            IdentityAttribute::string("name", "The operator's name (`name` in operator.yaml)."),
            IdentityAttribute::string(
                "version",
                "The operator's version (`operatorVersion` in operator.yaml).",
            )
            .from_state_attribute("operator_version"),
        ],
    )
}

/// The import id (`<namespace>/<name>`) an instance identity stands for.
pub fn instance_import_id(identity: &Value) -> Result<String, Diagnostic> {
    let namespace = namespace_in(identity);
    let name = required(identity, "name", "kudo_instance")?;
    Ok(format!("{namespace}/{name}"))
}

/// The OperatorVersion an operator identity names (its namespace and package), found
/// among the namespace's OperatorVersions and read in the same engine call (the
/// object's name also holds the appVersion, which the identity leaves out).
pub async fn operator_by_identity(
    session: &Session,
    identity: &Value,
) -> Result<(String, Package), Diagnostic> {
    let namespace = namespace_in(identity);
    let name = required(identity, "name", "kudo_operator")?;
    let version = required(identity, "version", "kudo_operator")?;
    let cluster = session.cluster().await?;
    // Any version of the operator, one another installs included.
    let filter = ListFilter {
        namespace: Some(namespace),
        operator: Some(name),
        version: Some(version),
        dependencies: true,
        import: Some(import_request(session)),
        ..ListFilter::default()
    };
    let mut listed = engine::list_operators(&cluster, &filter)
        .await
        .map_err(|e| session.cluster_error("Cannot list the OperatorVersions", &e))?;
    let missing = || {
        Diagnostic::error(
            "Nothing to import",
            format!(
                "There is no OperatorVersion of operator {name:?} at version {version:?} in namespace {namespace}."
            ),
        )
    };
    match listed.len() {
        0 => Err(missing()),
        1 => match listed.pop().and_then(|l| l.package) {
            Some(Ok(Some(pkg))) => Ok((namespace.to_string(), pkg)),
            Some(Err(e)) => Err(session.engine_error("Cannot read the operator", &e)),
            // Gone since it was listed.
            Some(Ok(None)) | None => Err(missing()),
        },
        _ => {
            let several: Vec<&str> = listed.iter().map(|l| l.name.as_str()).collect();
            Err(Diagnostic::error(
                "Ambiguous identity",
                format!(
                    "Several OperatorVersions of operator {name:?} at version {version:?} are in namespace {namespace} (different appVersions): {}. Import one of them by id: `<namespace>/<operatorversion-name>`.",
                    several.join(", ")
                ),
            ))
        }
    }
}

fn required<'a>(identity: &'a Value, attr: &str, type_name: &str) -> Result<&'a str, Diagnostic> {
    identity
        .get(attr)
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            Diagnostic::error(
                "Incomplete identity",
                format!("The identity of a {type_name} to import must set `{attr}`."),
            )
        })
}
