//! Finding the KUDO Instances and OperatorVersions in a cluster, whoever made them
//! (`terraform query` lists them so `kubectl kudo` users can adopt them): the top-level
//! ones, since a dependency comes with the instance or operator that installs it, unless
//! the filter asks for dependencies too (an operator's identity names any of its versions).

use std::collections::{BTreeMap, BTreeSet};

use kudo_package::Package;
use serde_json::Value;

use super::error::EngineError;
use super::import::{ImportRequest, Imported, import_instance};
use super::instance_object::InstanceReadError;
use super::operator::{load_operator, operator_version_ref};
use super::ownership::parent_instance;
use crate::cluster::{Cluster, ClusterError, KUDO_API_VERSION};

/// Which objects to list, and what to read of each; `None` selects all.
#[derive(Clone, Copy, Default)]
pub struct ListFilter<'a> {
    pub namespace: Option<&'a str>,
    /// The operator's name (`spec.operator.name` of the OperatorVersion).
    pub operator: Option<&'a str>,
    /// The operator's version (`spec.version` of the OperatorVersion): OperatorVersions
    /// only.
    pub version: Option<&'a str>,
    pub label_selector: Option<&'a str>,
    /// Dependencies too: Instances another Instance's KudoOperator task made, and
    /// OperatorVersions another one in their namespace installs.
    pub dependencies: bool,
    /// At most this many, the first in order; `None`: all.
    pub limit: Option<usize>,
    /// Each one listed with what its import reads, all read side by side: an Instance
    /// with [`import_instance`]'s answer under these settings, an OperatorVersion with
    /// its package (these settings are an Instance's only).
    pub import: Option<ImportRequest<'a>>,
}

/// A top-level Instance.
#[derive(Debug)]
pub struct ListedInstance {
    pub namespace: String,
    pub name: String,
    /// `spec.operatorVersion.name` (empty when the object has none).
    pub operator_version: String,
    /// With [`ListFilter::import`]: what its import reads (`Ok(None)`: it went away
    /// after the listing).
    pub imported: Option<Result<Option<Imported>, InstanceReadError>>,
}

/// An OperatorVersion no other one in its namespace installs.
#[derive(Debug)]
pub struct ListedOperator {
    pub namespace: String,
    /// The OperatorVersion's name.
    pub name: String,
    pub operator: String,
    /// `spec.version` (empty when the object has none).
    pub version: String,
    /// With [`ListFilter::import`]: its package as an import reads it (`Ok(None)`: it
    /// went away after the listing).
    pub package: Option<Result<Option<Package>, EngineError>>,
}

/// One Instance as listed.
struct FoundInstance {
    listed: ListedInstance,
    /// From the `kudo.dev/operator` label, which every KUDO client sets; None when
    /// missing (then read from the OperatorVersion).
    operator: Option<String>,
    /// Created by another Instance's KudoOperator task.
    dependency: bool,
}

fn text(o: &Value, pointer: &str) -> Option<String> {
    o.pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn found_instance(o: &Value) -> Option<FoundInstance> {
    Some(FoundInstance {
        listed: ListedInstance {
            namespace: text(o, "/metadata/namespace")?,
            name: text(o, "/metadata/name")?,
            operator_version: text(o, "/spec/operatorVersion/name").unwrap_or_default(),
            imported: None,
        },
        operator: text(o, "/metadata/labels/kudo.dev~1operator"),
        dependency: parent_instance(o).is_some(),
    })
}

/// The Instances `filter` selects (no other Instance's dependency unless it asks for
/// dependencies), sorted by namespace and name, each with its import's answer when the
/// filter asks. Instances the listing cannot read are left out.
pub async fn list_instances(
    cluster: &Cluster,
    filter: &ListFilter<'_>,
) -> Result<Vec<ListedInstance>, ClusterError> {
    let found = cluster
        .list_selected_map(
            KUDO_API_VERSION,
            "Instance",
            filter.namespace,
            filter.label_selector,
            |o| found_instance(&o),
        )
        .await?;
    let mut operators: BTreeMap<(String, String), Option<String>> = BTreeMap::new();
    let mut out = Vec::new();
    for f in found
        .into_iter()
        .flatten()
        .filter(|f| filter.dependencies || !f.dependency)
    {
        if let Some(wanted) = filter.operator {
            let operator = match f.operator {
                Some(o) => Some(o),
                None => {
                    let key = (
                        f.listed.namespace.clone(),
                        f.listed.operator_version.clone(),
                    );
                    if !operators.contains_key(&key) {
                        let name = operator_of(cluster, &key.0, &key.1).await;
                        operators.insert(key.clone(), name);
                    }
                    operators.get(&key).cloned().flatten()
                }
            };
            if operator.as_deref() != Some(wanted) {
                continue;
            }
        }
        out.push(f.listed);
    }
    out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    out.truncate(filter.limit.unwrap_or(usize::MAX));
    if let Some(import) = &filter.import {
        let reads = out
            .iter()
            .map(|l| import_instance(cluster, &l.namespace, &l.name, import));
        let read = futures::future::join_all(reads).await;
        for (listed, imported) in out.iter_mut().zip(read) {
            listed.imported = Some(imported);
        }
    }
    Ok(out)
}

/// The operator an OperatorVersion belongs to (`spec.operator.name`); None when it
/// cannot be read.
async fn operator_of(cluster: &Cluster, namespace: &str, operator_version: &str) -> Option<String> {
    let ov = cluster
        .get(&operator_version_ref(namespace, operator_version))
        .await
        .ok()??;
    text(&ov, "/spec/operator/name")
}

/// One OperatorVersion as listed.
struct FoundOperator {
    listed: ListedOperator,
    /// Operators its KudoOperator tasks and `dependencies:` install.
    installs: Vec<String>,
}

fn found_operator(o: &Value) -> Option<FoundOperator> {
    Some(FoundOperator {
        listed: ListedOperator {
            namespace: text(o, "/metadata/namespace")?,
            name: text(o, "/metadata/name")?,
            operator: text(o, "/spec/operator/name")?,
            version: text(o, "/spec/version").unwrap_or_default(),
            package: None,
        },
        installs: installed_operators(o),
    })
}

/// The operators an OperatorVersion object installs with itself: the packages of its
/// KudoOperator tasks, then its `dependencies:` entries.
pub fn installed_operators(operator_version: &Value) -> Vec<String> {
    let items = |p: &str| {
        operator_version
            .pointer(p)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let tasks = items("/spec/tasks")
        .iter()
        .filter(|t| t["kind"] == "KudoOperator")
        .filter_map(|t| t.pointer("/spec/package").and_then(Value::as_str));
    let listed = items("/spec/dependencies")
        .iter()
        .filter_map(|d| d["name"].as_str());
    tasks.chain(listed).map(str::to_string).collect()
}

/// The OperatorVersions `filter` selects whose operator no other OperatorVersion in
/// the namespace installs (any, when it asks for dependencies), sorted by namespace and
/// name, each with its package when the filter asks. Those the listing cannot read are
/// left out.
pub async fn list_operators(
    cluster: &Cluster,
    filter: &ListFilter<'_>,
) -> Result<Vec<ListedOperator>, ClusterError> {
    let found: Vec<FoundOperator> = cluster
        .list_selected_map(
            KUDO_API_VERSION,
            "OperatorVersion",
            filter.namespace,
            filter.label_selector,
            |o| found_operator(&o),
        )
        .await?
        .into_iter()
        .flatten()
        .collect();
    // An operator another one in its namespace installs comes with that one.
    let dependencies: BTreeSet<(&str, &str)> = found
        .iter()
        .flat_map(|f| {
            f.installs
                .iter()
                .map(|d| (f.listed.namespace.as_str(), d.as_str()))
        })
        .collect();
    let wanted: Vec<bool> = found
        .iter()
        .map(|f| {
            let key = (f.listed.namespace.as_str(), f.listed.operator.as_str());
            (filter.dependencies || !dependencies.contains(&key))
                && filter.operator.is_none_or(|o| o == f.listed.operator)
                && filter.version.is_none_or(|v| v == f.listed.version)
        })
        .collect();
    let mut selected: Vec<ListedOperator> = found
        .into_iter()
        .zip(wanted)
        .filter_map(|(f, wanted)| wanted.then_some(f.listed))
        .collect();
    selected.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    selected.truncate(filter.limit.unwrap_or(usize::MAX));
    if filter.import.is_some() {
        // The state names the Operator: it is read beside its OperatorVersion.
        let reads = selected
            .iter()
            .map(|l| load_operator(cluster, &l.namespace, &l.name, Some(&l.operator)));
        let read = futures::future::join_all(reads).await;
        for (listed, package) in selected.iter_mut().zip(read) {
            listed.package = Some(package);
        }
    }
    Ok(selected)
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
        assert_eq!(found.listed.operator, "kafka");
        assert_eq!(found.listed.version, "1.3.3");
        assert_eq!(found.installs, ["zookeeper", "cert-manager"]);
        assert!(found_operator(&json!({"metadata": {"name": "x"}})).is_none());
    }

    #[test]
    fn an_instance_with_an_instance_owner_is_a_dependency() {
        let child = json!({"metadata": {"namespace": "b", "name": "zk", "ownerReferences": [
            {"apiVersion": KUDO_API_VERSION, "kind": "Instance", "name": "kafka", "uid": "1"}
        ]}, "spec": {"operatorVersion": {"name": "zookeeper-0.3.3"}}});
        let found = found_instance(&child).expect("an Instance");
        assert!(found.dependency);
        assert_eq!(found.listed.operator_version, "zookeeper-0.3.3");
        let top = json!({"metadata": {"namespace": "b", "name": "kafka",
            "labels": {"kudo.dev/operator": "kafka"}}});
        let found = found_instance(&top).expect("an Instance");
        assert!(!found.dependency);
        assert_eq!(found.operator.as_deref(), Some("kafka"));
    }
}
