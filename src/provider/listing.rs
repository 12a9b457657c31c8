//! `terraform query` (Terraform 1.14+): `list "kudo_instance"` finds the KUDO Instances
//! in a cluster, whoever made them, so that users of `kubectl kudo` can adopt them with
//! generated configuration instead of writing it from `kubectl get instance -o yaml`.

use std::collections::BTreeMap;

use serde_json::Value as Json;
use tfplugin::{Diagnostic, ListRequest, Listed, Value};

use kudo_engine::cluster::KUDO_API_VERSION;

use super::Session;
use super::instance;

/// The `config` block, as the schema (`schema::instance_list`) declares it.
struct ListConfig {
    namespace: Option<String>,
    operator: Option<String>,
    label_selector: Option<String>,
}

impl ListConfig {
    fn from_value(config: &Value) -> ListConfig {
        let text = |name: &str| {
            config
                .get(name)
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        ListConfig {
            namespace: text("namespace"),
            operator: text("operator"),
            label_selector: text("label_selector"),
        }
    }
}

/// One Instance as listed.
struct Found {
    namespace: String,
    name: String,
    operator_version: String,
    /// From the `kudo.dev/operator` label, which every KUDO client sets; None when
    /// missing (then read from the OperatorVersion).
    operator: Option<String>,
    /// Created by another Instance's KudoOperator task.
    dependency: bool,
}

fn found(o: &Json) -> Option<Found> {
    let text = |p: &str| o.pointer(p).and_then(Json::as_str).map(str::to_string);
    let dependency = o
        .pointer("/metadata/ownerReferences")
        .and_then(Json::as_array)
        .is_some_and(|refs| refs.iter().any(|r| r["kind"] == "Instance"));
    Some(Found {
        namespace: text("/metadata/namespace")?,
        name: text("/metadata/name")?,
        operator_version: text("/spec/operatorVersion/name").unwrap_or_default(),
        operator: text("/metadata/labels/kudo.dev~1operator"),
        dependency,
    })
}

/// The Instances `req.config` selects, sorted by namespace and name, at most
/// `req.limit`; with `include_resource_object`, each with the state an import builds.
pub async fn instances(session: &Session, req: &ListRequest) -> (Vec<Listed>, Vec<Diagnostic>) {
    let config = ListConfig::from_value(&req.config);
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return (Vec::new(), vec![d]),
    };
    let listed = cluster
        .list_selected_map(
            KUDO_API_VERSION,
            "Instance",
            config.namespace.as_deref(),
            config.label_selector.as_deref(),
            |o| found(&o),
        )
        .await;
    let mut instances: Vec<Found> = match listed {
        Ok(l) => l.into_iter().flatten().filter(|f| !f.dependency).collect(),
        Err(e) => {
            return (
                Vec::new(),
                vec![session.cluster_error("Cannot list the KUDO Instances", &e)],
            );
        }
    };
    instances.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));

    let mut operators: BTreeMap<(String, String), Option<String>> = BTreeMap::new();
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for f in instances {
        if req.limit > 0 && out.len() as i64 >= req.limit {
            break;
        }
        if let Some(wanted) = &config.operator {
            let operator = match &f.operator {
                Some(o) => Some(o.clone()),
                None => {
                    let key = (f.namespace.clone(), f.operator_version.clone());
                    if !operators.contains_key(&key) {
                        let name = operator_of(&cluster, &f.namespace, &f.operator_version).await;
                        operators.insert(key.clone(), name);
                    }
                    operators.get(&key).cloned().flatten()
                }
            };
            if operator.as_ref() != Some(wanted) {
                continue;
            }
        }
        let state = if req.include_resource_object {
            match instance::imported_state(session, &f.namespace, &f.name).await {
                Ok(state) => Some(state),
                Err(d) => {
                    diags.extend(d);
                    continue;
                }
            }
        } else {
            None
        };
        out.push(Listed {
            display_name: format!("{}/{} ({})", f.namespace, f.name, f.operator_version),
            identity: Value::object([
                ("namespace", Value::string(&f.namespace)),
                ("name", Value::string(&f.name)),
            ]),
            state,
        });
    }
    (out, diags)
}

/// The operator an OperatorVersion belongs to (`spec.operator.name`); None when it
/// cannot be read.
async fn operator_of(
    cluster: &kudo_engine::cluster::Cluster,
    namespace: &str,
    operator_version: &str,
) -> Option<String> {
    let r = kudo_engine::engine::operator_version_ref(namespace, operator_version);
    let ov = cluster.get(&r).await.ok()??;
    ov.pointer("/spec/operator/name")
        .and_then(Json::as_str)
        .map(str::to_string)
}
