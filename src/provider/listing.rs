//! `terraform query` (Terraform 1.14+): `list "kudo_instance"` and `list "kudo_operator"`
//! find the KUDO Instances and OperatorVersions in a cluster, whoever made them, so that
//! users of `kubectl kudo` can adopt them with generated configuration instead of
//! writing it from `kubectl get instance -o yaml`.

use std::collections::BTreeMap;

use serde_json::Value as Json;
use tfplugin::{Diagnostic, ListRequest, Listed, Value};

use kudo_engine::cluster::{Cluster, KUDO_API_VERSION};

use super::instance;
use super::{Session, packages};

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

/// The KUDO objects of `kind` that `config`'s namespace and label selector select, as
/// `read` reads them (those it cannot read are left out), with the cluster listed.
async fn list_kudo<T>(
    session: &Session,
    config: &ListConfig,
    kind: &str,
    read: fn(&Json) -> Option<T>,
) -> Result<(Cluster, Vec<T>), Diagnostic> {
    let cluster = session.cluster().await?;
    let listed = cluster
        .list_selected_map(
            KUDO_API_VERSION,
            kind,
            config.namespace.as_deref(),
            config.label_selector.as_deref(),
            |o| read(&o),
        )
        .await
        .map_err(|e| session.cluster_error(&format!("Cannot list the KUDO {kind}s"), &e))?;
    Ok((cluster, listed.into_iter().flatten().collect()))
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
    let (cluster, listed) = match list_kudo(session, &config, "Instance", found).await {
        Ok(l) => l,
        Err(d) => return (Vec::new(), vec![d]),
    };
    let mut instances: Vec<Found> = listed.into_iter().filter(|f| !f.dependency).collect();
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

/// One OperatorVersion as listed.
struct FoundOperator {
    namespace: String,
    /// The OperatorVersion's name.
    name: String,
    operator: String,
    version: String,
    /// Operators its KudoOperator tasks and `dependencies:` install.
    depends_on: Vec<String>,
}

fn found_operator(o: &Json) -> Option<FoundOperator> {
    let text = |p: &str| o.pointer(p).and_then(Json::as_str).map(str::to_string);
    let items = |p: &str| {
        o.pointer(p)
            .and_then(Json::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let tasks = items("/spec/tasks")
        .iter()
        .filter(|t| t["kind"] == "KudoOperator")
        .filter_map(|t| t.pointer("/spec/package").and_then(Json::as_str));
    let listed = items("/spec/dependencies")
        .iter()
        .filter_map(|d| d["name"].as_str());
    Some(FoundOperator {
        namespace: text("/metadata/namespace")?,
        name: text("/metadata/name")?,
        operator: text("/spec/operator/name")?,
        version: text("/spec/version").unwrap_or_default(),
        depends_on: tasks.chain(listed).map(str::to_string).collect(),
    })
}

/// The operators (OperatorVersions) `req.config` selects, sorted by namespace and
/// name, at most `req.limit`; with `include_resource_object`, each with the state an
/// import builds and `package` naming the OperatorVersion in the cluster.
pub async fn operators(session: &Session, req: &ListRequest) -> (Vec<Listed>, Vec<Diagnostic>) {
    let config = ListConfig::from_value(&req.config);
    let found = match list_kudo(session, &config, "OperatorVersion", found_operator).await {
        Ok((_, found)) => found,
        Err(d) => return (Vec::new(), vec![d]),
    };
    // An operator another one in its namespace installs comes with that one.
    let dependencies: std::collections::BTreeSet<(&str, &str)> = found
        .iter()
        .flat_map(|f| {
            f.depends_on
                .iter()
                .map(|d| (f.namespace.as_str(), d.as_str()))
        })
        .collect();
    let mut selected: Vec<&FoundOperator> = found
        .iter()
        .filter(|f| !dependencies.contains(&(f.namespace.as_str(), f.operator.as_str())))
        .filter(|f| config.operator.as_ref().is_none_or(|o| *o == f.operator))
        .collect();
    selected.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    if req.limit > 0 {
        selected.truncate(usize::try_from(req.limit).unwrap_or(usize::MAX));
    }
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for f in selected {
        let id = format!("{}/{}", f.namespace, f.name);
        let state = match req.include_resource_object {
            false => None,
            true => {
                let mut answer = super::operator::import(session, &id).await;
                match answer.imported.pop() {
                    Some(imported) if !tfplugin::has_errors(&answer.diagnostics) => {
                        Some(imported.state.with(
                            "package",
                            Value::string(format!("{}{id}", packages::CLUSTER_SOURCE)),
                        ))
                    }
                    _ => {
                        diags.extend(answer.diagnostics);
                        continue;
                    }
                }
            }
        };
        out.push(Listed {
            display_name: id,
            identity: Value::object([
                ("namespace", Value::string(&f.namespace)),
                ("name", Value::string(&f.operator)),
                ("version", Value::string(&f.version)),
            ]),
            state,
        });
    }
    (out, diags)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_operator_version_names_the_operators_it_installs() {
        let ov = json!({
            "metadata": {"namespace": "data", "name": "kafka-2.5.1-1.3.3"},
            "spec": {
                "operator": {"name": "kafka"},
                "version": "1.3.3",
                "tasks": [
                    {"name": "zk", "kind": "KudoOperator", "spec": {"package": "zookeeper"}},
                    {"name": "app", "kind": "Apply", "spec": {"resources": ["a.yaml"]}},
                ],
                "dependencies": [{"name": "cert-manager"}],
            },
        });
        let found = found_operator(&ov).expect("an OperatorVersion");
        assert_eq!(found.operator, "kafka");
        assert_eq!(found.version, "1.3.3");
        assert_eq!(found.depends_on, ["zookeeper", "cert-manager"]);
        assert!(found_operator(&json!({"metadata": {"name": "x"}})).is_none());
    }
}
