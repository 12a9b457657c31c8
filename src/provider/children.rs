//! `kudo_instance.children`: the dependency instances (KudoOperator tasks, KEP-29/36)
//! an instance creates, and the resolved packages the engine runs them from.
//!
//! `kudo_operator` resolves the tree once (repositories, ranges, overrides) and keeps it
//! with its plan-time package copy (see `packages::PlanCache`). That tree is rooted at
//! an instance named after the operator; here it is re-rooted at the real instance
//! name, and each child's parameters are rendered from its `parameterFile` with the
//! parent's values, so plan output shows what the apply will create.

use std::collections::BTreeMap;

use tfplugin::{AttributePath, Diagnostic, Value};

use kudo_engine::engine::{self, DependencyPackages};
use kudo_package::{Package, TaskSpec};
use kudo_resolve::naming::{check_instance_name, child_instance_name};
use kudo_resolve::{Resolution, ResolvedInstance};

use super::Session;
use super::packages::{self, PlanCache, parse_operator_id};

/// One child instance as the `children` attribute shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Child {
    pub name: String,
    pub operator: String,
    pub operator_version: String,
    pub enabled: bool,
    pub parameters: BTreeMap<String, String>,
    pub parent: String,
}

/// The children of one instance and the packages its run needs.
#[derive(Debug, Default)]
pub struct Tree {
    pub children: Vec<Child>,
    pub packages: DependencyPackages,
}

impl Tree {
    pub fn value(&self) -> Value {
        Value::list(self.children.iter().map(|c| {
            Value::object([
                ("name", Value::string(&c.name)),
                ("operator", Value::string(&c.operator)),
                ("operator_version", Value::string(&c.operator_version)),
                ("enabled", Value::bool(c.enabled)),
                (
                    "parameters",
                    Value::string_map(c.parameters.iter().map(|(k, v)| (k.clone(), v.clone()))),
                ),
                ("parent", Value::string(&c.parent)),
            ])
        }))
    }
}

fn has_dependencies(pkg: &Package) -> bool {
    pkg.operator
        .tasks
        .iter()
        .any(|t| matches!(t.spec, TaskSpec::KudoOperator { .. }))
}

fn tree_error(detail: String) -> Diagnostic {
    Diagnostic::error("Cannot work out the instance's dependencies", detail)
        .with_attribute(AttributePath::attribute("operator"))
}

/// The dependency tree of `pkg` as `kudo_operator` resolved it. While planning, only
/// the plan-time copy counts (`None` without it: the attribute stays unknown). An apply
/// without the copy (state made elsewhere) resolves again from the provider's
/// repositories, which works for repository and URL dependencies.
async fn resolution(
    session: &Session,
    operator_id: &str,
    pkg: &Package,
    planning: bool,
) -> Result<Option<Resolution>, Diagnostic> {
    let cached = parse_operator_id(operator_id)
        .and_then(|(ns, ov)| PlanCache::from_env().load_resolution(ns, ov));
    if let Some(r) = cached {
        return Ok(Some(r));
    }
    if planning {
        return Ok(None);
    }
    tracing::info!(operator = %operator_id, "no plan-time dependency tree; resolving again");
    let repositories = session.config.repositories.clone();
    let root = pkg.clone();
    let work = tokio::task::spawn_blocking(move || {
        packages::resolve(&root, &repositories, BTreeMap::new())
    });
    match work.await {
        Ok(Ok(r)) => Ok(Some(r)),
        Ok(Err(e)) => Err(tree_error(format!(
            "{e}\n\nRun `terraform plan` again so that the kudo_operator resource records its dependency tree."
        ))),
        Err(e) => Err(tree_error(e.to_string())),
    }
}

/// The children of instance `name` running `pkg` with the user's `parameters`, its
/// parameter files rendered with the instance's render `seed` as the run renders them.
/// `Ok(None)`: not known yet (planning without the operator's tree).
#[allow(clippy::too_many_arguments)]
pub async fn tree(
    session: &Session,
    operator_id: &str,
    pkg: &Package,
    name: &str,
    namespace: &str,
    parameters: &BTreeMap<String, String>,
    seed: Option<&str>,
    planning: bool,
) -> Result<Option<Tree>, Diagnostic> {
    if !has_dependencies(pkg) {
        return Ok(Some(Tree::default()));
    }
    let Some(mut resolution) = resolution(session, operator_id, pkg, planning).await? else {
        return Ok(None);
    };
    if let Some(root) = resolution.nodes.first()
        && root.operator_version_name != pkg.operator_version_name()
    {
        // The copy belongs to another version of the operator (a stale plan directory).
        return Err(tree_error(format!(
            "The recorded dependency tree is for {}, but the instance runs {}. Run `terraform plan` again.",
            root.operator_version_name,
            pkg.operator_version_name()
        )));
    }
    // Apply runs what the cluster has installed (kudo_operator put it there), like the
    // instance's own package does.
    let operator_namespace = parse_operator_id(operator_id).map_or(namespace, |(ns, _)| ns);
    if !planning && let Ok(cluster) = session.cluster().await {
        for node in resolution.nodes.iter().skip(1) {
            match engine::load_operator(&cluster, operator_namespace, &node.operator_version_name)
                .await
            {
                Ok(Some(installed)) => {
                    resolution.packages.insert(node.package.clone(), installed);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(error = %e, ov = %node.operator_version_name, "using the plan-time copy")
                }
            }
        }
    }
    if let Some(root) = resolution.nodes.first() {
        resolution
            .packages
            .insert(root.package.clone(), pkg.clone());
    }
    build(&resolution, name, namespace, parameters, seed).map(Some)
}

/// Another dependency version (a changed `dependency_overrides` or repository) leaves
/// the instance's own package and parameters as they were, so nothing else would run a
/// plan; `deploy` applies the new children, as it does after any package change.
pub fn plan_for_changed_children(
    prior: &Value,
    planned: &Value,
    plan_to_run: Option<Value>,
) -> Option<Value> {
    let (before, after) = (prior.get("children"), planned.get("children"));
    let changed = !prior.is_null()
        && before.is_known()
        && !before.is_null()
        && after.is_known()
        && before != after;
    match plan_to_run {
        None if changed => Some(Value::string("deploy")),
        other => other,
    }
}

/// The instance's own name for each node, parents before children.
fn names(resolution: &Resolution, root_name: &str) -> BTreeMap<String, String> {
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for node in &resolution.nodes {
        let name = match &node.parent {
            None => root_name.to_string(),
            Some(parent) => {
                let parent_name = names.get(parent).cloned().unwrap_or_default();
                child_instance_name(&parent_name, &node.package, explicit_name(resolution, node))
            }
        };
        names.insert(node.instance.clone(), name);
    }
    names
}

/// The `instanceName` the parent's task sets, if any.
fn explicit_name<'r>(resolution: &'r Resolution, node: &ResolvedInstance) -> Option<&'r str> {
    let parent = resolution.package_of(node.parent.as_deref()?)?;
    match &parent.task(node.task.as_deref()?)?.spec {
        TaskSpec::KudoOperator { instance_name, .. } => instance_name.as_deref(),
        _ => None,
    }
}

fn build(
    resolution: &Resolution,
    root_name: &str,
    namespace: &str,
    root_parameters: &BTreeMap<String, String>,
    seed: Option<&str>,
) -> Result<Tree, Diagnostic> {
    let names = names(resolution, root_name);
    // The resolver checked names for an instance named after the operator; this
    // instance's name makes other ones, which must be valid and distinct too.
    let mut seen = std::collections::BTreeSet::new();
    for name in names.values() {
        check_instance_name(name).map_err(|reason| {
            tree_error(format!(
                "Dependency instance name {name:?} is not valid: {reason}. Choose a shorter instance name, or set `instanceName` on the KudoOperator task."
            ))
        })?;
        if !seen.insert(name) {
            return Err(tree_error(format!(
                "Two instances of the dependency tree would both be named {name:?}; set distinct `instanceName`s on the KudoOperator tasks."
            )));
        }
    }
    let name_of = |instance: &str| names.get(instance).cloned().unwrap_or_default();
    // User-set values and effective values per node (keyed by the resolution's names).
    let mut values: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut effective: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut tree = Tree::default();
    // Each instance's render seed, derived down the tree as the engine's runs derive
    // them (`<parent seed>/<child instance>`).
    let mut seeds: BTreeMap<String, Option<String>> = BTreeMap::new();
    for node in &resolution.nodes {
        let own_seed = match &node.parent {
            None => seed.map(str::to_string),
            Some(parent) => seeds
                .get(parent)
                .cloned()
                .flatten()
                .map(|s| format!("{s}/{}", name_of(&node.instance))),
        };
        seeds.insert(node.instance.clone(), own_seed);
    }
    for node in &resolution.nodes {
        let pkg = resolution.package_of(&node.instance).ok_or_else(|| {
            tree_error(format!(
                "The recorded dependency tree has no package for {} ({}).",
                node.instance, node.operator_version_name
            ))
        })?;
        let own = match (&node.parent, &node.parameter_file) {
            (None, _) => root_parameters.clone(),
            (Some(parent), Some(file)) => {
                let parent_pkg = resolution.package_of(parent).ok_or_else(|| {
                    tree_error(format!(
                        "The recorded dependency tree has no package for {parent}."
                    ))
                })?;
                let parent_values = values.get(parent).cloned().unwrap_or_default();
                match engine::dependency_parameters(
                    parent_pkg,
                    &name_of(parent),
                    namespace,
                    &parent_values,
                    file,
                    seeds.get(parent).cloned().flatten().as_deref(),
                ) {
                    Ok(v) => v,
                    // A subtree that is off is not rendered by the apply either.
                    Err(e) if !node.enabled => {
                        tracing::debug!(error = %e, instance = %node.instance, "parameters of a disabled dependency");
                        BTreeMap::new()
                    }
                    Err(e) => {
                        return Err(tree_error(format!(
                            "Parameter file {file} of {} (for dependency instance {}): {e}",
                            parent_pkg.operator_version_name(),
                            name_of(&node.instance)
                        )));
                    }
                }
            }
            (Some(_), None) => BTreeMap::new(),
        };
        // Invalid values are reported below, for enabled children only; meanwhile the
        // values as given decide enabling parameters (so a non-boolean one is an error
        // rather than a silent fall-back to its default).
        let values_seen = pkg.effective_params(&own).unwrap_or_else(|_| own.clone());
        effective.insert(node.instance.clone(), values_seen);
        values.insert(node.instance.clone(), own);
    }
    let enabled = resolution
        .enabled(&effective)
        .map_err(|e| tree_error(e.to_string()))?;
    for node in resolution.nodes.iter().skip(1) {
        let on = enabled.get(&node.instance).copied().unwrap_or(false);
        let own = values.get(&node.instance).cloned().unwrap_or_default();
        if on
            && let Some(pkg) = resolution.package_of(&node.instance)
            && let Err(errs) = pkg.effective_params(&own)
        {
            let list: Vec<String> = errs.iter().map(ToString::to_string).collect();
            return Err(tree_error(format!(
                "Dependency instance {} ({}) would get invalid parameters: {}",
                name_of(&node.instance),
                node.operator_version_name,
                list.join("; ")
            )));
        }
        if let (Some(parent), Some(task)) = (&node.parent, &node.task)
            && let (Some(parent_node), Some(pkg)) = (
                resolution.node(parent),
                resolution.packages.get(&node.package),
            )
        {
            tree.packages
                .insert(&parent_node.operator_version_name, task, pkg.clone());
        }
        tree.children.push(Child {
            name: name_of(&node.instance),
            operator: node.package.clone(),
            operator_version: node.operator_version.clone(),
            enabled: on,
            parameters: own,
            parent: node.parent.as_deref().map(name_of).unwrap_or_default(),
        });
    }
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_resolve::{RepositoryCatalog, Resolver};
    use std::path::{Path, PathBuf};

    fn fixtures(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/deps")
            .join(name)
    }

    fn resolve(set: &str, root: &str) -> (Package, Resolution) {
        let dir = fixtures(set);
        let pkg = Package::load_dir(&dir.join(root)).expect("root package");
        let catalog = RepositoryCatalog::folder("fixtures", &dir);
        let resolution = Resolver::new(&catalog)
            .resolve(&pkg, &pkg.operator.name)
            .expect("resolves");
        (pkg, resolution)
    }

    fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_tree_is_renamed_for_the_instance_and_keys_packages_by_parent_and_task() {
        let (pkg, resolution) = resolve("kep29", "aa");
        let tree = build(&resolution, "mine", "ns", &BTreeMap::new(), None).expect("tree");
        let names: Vec<(&str, &str)> = tree
            .children
            .iter()
            .map(|c| (c.name.as_str(), c.parent.as_str()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("mine-bb", "mine"),
                ("mine-bb-ee", "mine-bb"),
                ("mine-bb-gg", "mine-bb"),
                ("mine-cc", "mine"),
            ]
        );
        let bb = tree
            .packages
            .get(&pkg.operator_version_name(), "bb")
            .expect("aa's task bb");
        assert_eq!(bb.operator.name, "bb");
        assert!(
            tree.packages
                .get(&bb.operator_version_name(), "ee")
                .is_some()
        );
    }

    #[test]
    fn the_enabling_parameter_follows_the_instance_values() {
        let (_, resolution) = resolve("enabling", "parent");
        let off = build(&resolution, "p", "ns", &BTreeMap::new(), None).expect("default off");
        assert_eq!(off.children.len(), 1);
        assert!(!off.children[0].enabled);
        let on = build(
            &resolution,
            "p",
            "ns",
            &params(&[("MONITORING_ENABLED", "true")]),
            None,
        )
        .expect("on");
        assert!(on.children[0].enabled);
        assert_eq!(on.children[0].name, "p-monitor");
        let bad = build(
            &resolution,
            "p",
            "ns",
            &params(&[("MONITORING_ENABLED", "maybe")]),
            None,
        );
        assert!(bad.is_err());
    }

    #[test]
    fn explicit_instance_names_and_parameter_files_come_from_the_task() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/operators");
        if !dir.join("flink-demo").is_dir() {
            eprintln!("skipping: {} is absent", dir.display());
            return;
        }
        let mut catalog = kudo_resolve::MemoryCatalog::new();
        for name in ["kafka", "zookeeper", "flink"] {
            let pkg = Package::load_dir(&dir.join(name)).expect(name);
            catalog.add(pkg, "fixtures", 0);
        }
        let root = Package::load_dir(&dir.join("flink-demo")).expect("flink-demo");
        let overrides = [
            ("kafka".to_string(), "1.x".to_string()),
            ("zookeeper".to_string(), "0.x".to_string()),
        ]
        .into();
        let resolution = Resolver::new(&catalog)
            .with_overrides(overrides)
            .resolve(&root, "flink-demo")
            .expect("resolves with overrides");
        let tree = build(&resolution, "demo", "ns", &BTreeMap::new(), None).expect("tree");
        let kafka = tree
            .children
            .iter()
            .find(|c| c.operator == "kafka")
            .expect("kafka child");
        assert_eq!(kafka.name, "kafka", "instanceName is used as written");
        assert_eq!(kafka.parent, "demo");
        assert_eq!(
            kafka.parameters.get("ZOOKEEPER_PATH").map(String::as_str),
            Some("/flink-demo-kafka")
        );
    }
}
