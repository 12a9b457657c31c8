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
use kudo_plan::{Desired, Inputs};
use kudo_resolve::naming::check_instance_name;
use kudo_resolve::{Resolution, ResolvedInstance};

use super::Session;
use super::packages::{self, PlanCache, parse_operator_id};

/// What `children[*].parameters` shows for a value derived from a secret one.
pub const REDACTED: &str = "(sensitive value)";

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
    /// The `children` attribute. A parameter value that carries a value of `secret`
    /// (`sensitive_parameters`, `parameters_wo`) passed on by a parameter file is shown
    /// as [`REDACTED`]: the attribute is stored in the state, which those values never
    /// reach.
    pub fn value(&self, secret: &BTreeMap<String, String>) -> Value {
        let hides = |v: &str| {
            secret
                .values()
                .any(|s| !s.is_empty() && v.contains(s.as_str()))
        };
        Value::list(self.children.iter().map(|c| {
            Value::object([
                ("name", Value::string(&c.name)),
                ("operator", Value::string(&c.operator)),
                ("operator_version", Value::string(&c.operator_version)),
                ("enabled", Value::bool(c.enabled)),
                (
                    "parameters",
                    Value::string_map(c.parameters.iter().map(|(k, v)| {
                        let shown = if hides(v) { REDACTED } else { v.as_str() };
                        (k.clone(), shown.to_string())
                    })),
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
    // The apply is connected: the same cluster filter as kudo_operator's plan.
    let version = match session.cluster().await {
        Ok(c) => super::resolve::cluster_of(&c).map(|c| c.version),
        Err(_) => None,
    };
    let work = tokio::task::spawn_blocking(move || {
        packages::resolve(&root, &repositories, BTreeMap::new(), version)
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
/// `walked`: the caller's own walk of the same instance (the plan's preview), whose
/// renders the root's walk reuses when it has the same values.
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
    walked: Option<&Desired<'_>>,
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
    build(&resolution, name, namespace, parameters, seed, walked).map(Some)
}

/// Whether the dependency tree differs from the one the last run used: another
/// dependency version (a changed `dependency_overrides` or repository) leaves the
/// instance's own package and parameters as they were, so nothing else would run a plan
/// (`kudo_plan::decide` then runs `deploy`, as after any package change).
/// `before` is the prior state's `children`, `None` on create.
pub fn children_changed(before: Option<&Value>, after: &Value) -> bool {
    before.is_some_and(|before| {
        before.is_known() && !before.is_null() && after.is_known() && before != after
    })
}

/// What the walk of a node's parent decided for it.
struct Placed {
    name: String,
    on: bool,
    parameters: BTreeMap<String, String>,
    seed: Option<String>,
}

impl Named for Placed {
    fn name(&self) -> &str {
        &self.name
    }
}

/// The children as the walk of each parent decides them (kudo-plan): the same names,
/// seeds, enabling and parameters the apply's runs use. Parents come before their
/// children in the resolution, so each parent is walked with its own final values.
/// The root's walk shares the renders of `walked` when that is the same instance with
/// the same values.
fn build(
    resolution: &Resolution,
    root_name: &str,
    namespace: &str,
    root_parameters: &BTreeMap<String, String>,
    seed: Option<&str>,
    walked: Option<&Desired<'_>>,
) -> Result<Tree, Diagnostic> {
    let mut tree = Tree::default();
    // The packages every KudoOperator task runs, keyed as the engine looks them up.
    for node in resolution.nodes.iter().skip(1) {
        if let (Some(parent), Some(task)) = (&node.parent, &node.task)
            && let (Some(parent_node), Some(pkg)) = (
                resolution.node(parent),
                resolution.packages.get(&node.package),
            )
        {
            tree.packages
                .insert(&parent_node.operator_version_name, task, pkg.clone());
        }
    }
    let mut placed: BTreeMap<String, Placed> = BTreeMap::new();
    if let Some(root) = resolution.nodes.first() {
        placed.insert(
            root.instance.clone(),
            Placed {
                name: root_name.to_string(),
                on: true,
                parameters: root_parameters.clone(),
                seed: seed.map(str::to_string),
            },
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for node in &resolution.nodes {
        let Some(parent) = placed.get(&node.instance).filter(|p| p.on) else {
            continue;
        };
        let pkg = resolution.package_of(&node.instance).ok_or_else(|| {
            tree_error(format!(
                "The recorded dependency tree has no package for {} ({}).",
                node.instance, node.operator_version_name
            ))
        })?;
        if node.children.is_empty() {
            continue;
        }
        let reusable = walked.filter(|w| {
            node.parent.is_none()
                && w.inputs.package.operator_version_name() == node.operator_version_name
                && w.inputs.instance == parent.name
                && w.inputs.namespace == namespace
                && w.inputs.parameters == &parent.parameters
                && w.inputs.seed == parent.seed.as_deref()
        });
        let desired = match reusable {
            Some(w) => w.with_dependencies(&tree.packages),
            None => Desired::new(Inputs {
                package: pkg,
                instance: &parent.name,
                namespace,
                parameters: &parent.parameters,
                seed: parent.seed.as_deref(),
                dependencies: Some(&tree.packages),
            })
            .map_err(|e| {
                tree_error(format!(
                    "Instance {} ({}) has invalid parameters: {e}",
                    parent.name, node.operator_version_name
                ))
            })?,
        };
        let mut found = Vec::new();
        for child in &node.children {
            let Some(child_node) = resolution.node(child) else {
                continue;
            };
            let Some(task) = child_node.task.as_deref() else {
                continue;
            };
            let decided = child_plan(&desired, task).map_err(|e| {
                tree_error(format!(
                    "Dependency {} of {}: {e}",
                    child_node.package, parent.name
                ))
            })?;
            let target = decided
                .target
                .as_ref()
                .map_err(|e| tree_error(e.to_string()))?;
            found.push((
                child.clone(),
                Placed {
                    name: target.instance.clone(),
                    on: decided.enabled,
                    parameters: decided.parameters.clone(),
                    seed: target.seed.clone(),
                },
            ));
        }
        placed.extend(found);
    }
    for node in resolution.nodes.iter().skip(1) {
        // Below a disabled instance nothing is walked: the subtree is off, as in the run.
        let (name, on, parameters) = match placed.get(&node.instance) {
            Some(p) => (p.name.clone(), p.on, p.parameters.clone()),
            None => (off_name(resolution, &placed, node), false, BTreeMap::new()),
        };
        // The resolver checked names for an instance named after the operator; this
        // instance's name makes other ones, which must be valid and distinct too.
        check_instance_name(&name).map_err(|reason| {
            tree_error(format!(
                "Dependency instance name {name:?} is not valid: {reason}. Choose a shorter instance name, or set `instanceName` on the KudoOperator task."
            ))
        })?;
        if !seen.insert(name.clone()) {
            return Err(tree_error(format!(
                "Two instances of the dependency tree would both be named {name:?}; set distinct `instanceName`s on the KudoOperator tasks."
            )));
        }
        if on
            && let Some(pkg) = resolution.package_of(&node.instance)
            && let Err(errs) = pkg.effective_params(&parameters)
        {
            let list: Vec<String> = errs.iter().map(ToString::to_string).collect();
            return Err(tree_error(format!(
                "Dependency instance {name} ({}) would get invalid parameters: {}",
                node.operator_version_name,
                list.join("; ")
            )));
        }
        let parent = node
            .parent
            .as_ref()
            .map(|p| match placed.get(p) {
                Some(placed) => placed.name.clone(),
                None => off_name(resolution, &placed, resolution.node(p).unwrap_or(node)),
            })
            .unwrap_or_default();
        tree.children.push(Child {
            name,
            operator: node.package.clone(),
            operator_version: node.operator_version.clone(),
            enabled: on,
            parameters,
            parent,
        });
    }
    Ok(tree)
}

/// The walk's decision for KudoOperator task `task`: from the deploy plan, which
/// creates the children, else the first plan that runs the task.
fn child_plan<'d, 'p>(
    desired: &'d Desired<'p>,
    task: &str,
) -> Result<&'d kudo_plan::ChildPlan<'p>, String> {
    let pkg = desired.inputs.package;
    let plans = std::iter::once("deploy").chain(
        pkg.operator
            .plans
            .keys()
            .map(String::as_str)
            .filter(|p| *p != "deploy"),
    );
    for plan in plans {
        if !pkg.operator.plans.contains_key(plan) {
            continue;
        }
        let walk = desired.plan(plan).map_err(|e| e.to_string())?;
        for t in walk.tasks() {
            if t.name == task
                && let kudo_plan::Action::Child(child) = &t.action
            {
                return Ok(child);
            }
        }
    }
    Err(format!(
        "no plan of {} runs task {task:?}",
        pkg.operator.name
    ))
}

/// The name of an instance below a disabled one, which no walk reaches: the one naming
/// rule applied to its parent's name, so the attribute still lists it.
fn off_name<P: Named>(
    resolution: &Resolution,
    placed: &BTreeMap<String, P>,
    node: &ResolvedInstance,
) -> String {
    let parent_name = match node.parent.as_deref() {
        None => return String::new(),
        Some(p) => match (placed.get(p), resolution.node(p)) {
            (Some(placed), _) => placed.name().to_string(),
            (None, Some(parent)) => off_name(resolution, placed, parent),
            (None, None) => String::new(),
        },
    };
    kudo_plan::child_instance_name(&parent_name, explicit_name(resolution, node), &node.package)
}

/// Something with an instance name.
trait Named {
    fn name(&self) -> &str;
}

/// The `instanceName` the parent's task sets, if any.
fn explicit_name<'r>(resolution: &'r Resolution, node: &ResolvedInstance) -> Option<&'r str> {
    let parent = resolution.package_of(node.parent.as_deref()?)?;
    match &parent.task(node.task.as_deref()?)?.spec {
        TaskSpec::KudoOperator { instance_name, .. } => instance_name.as_deref(),
        _ => None,
    }
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
    fn values_carrying_a_secret_are_not_shown() {
        let tree = Tree {
            children: vec![Child {
                name: "c".into(),
                operator: "op".into(),
                operator_version: "1.0.0".into(),
                enabled: true,
                parameters: params(&[("URL", "https://u:hunter2@db"), ("N", "3")]),
                parent: "p".into(),
            }],
            packages: DependencyPackages::default(),
        };
        let shown = tree.value(&params(&[("PASSWORD", "hunter2"), ("EMPTY", "")]));
        let text = format!("{shown:?}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains(REDACTED) && text.contains('3'), "{text}");
    }

    #[test]
    fn the_tree_is_renamed_for_the_instance_and_keys_packages_by_parent_and_task() {
        let (pkg, resolution) = resolve("kep29", "aa");
        let tree = build(&resolution, "mine", "ns", &BTreeMap::new(), None, None).expect("tree");
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
        let off = build(&resolution, "p", "ns", &BTreeMap::new(), None, None).expect("default off");
        assert_eq!(off.children.len(), 1);
        assert!(!off.children[0].enabled);
        let on = build(
            &resolution,
            "p",
            "ns",
            &params(&[("MONITORING_ENABLED", "true")]),
            None,
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
        let tree = build(&resolution, "demo", "ns", &BTreeMap::new(), None, None).expect("tree");
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

        // The plan's own walk of the instance is reused (its render cache fills) and
        // decides the same tree; a walk with other values is left alone.
        let walk_of = |parameters| {
            Desired::new(Inputs {
                package: &root,
                instance: "demo",
                namespace: "ns",
                parameters,
                seed: None,
                dependencies: None,
            })
            .expect("valid parameters")
        };
        let same = BTreeMap::new();
        let walked = walk_of(&same);
        assert_eq!(walked.rendered_files(), 0);
        let reused =
            build(&resolution, "demo", "ns", &same, None, Some(&walked)).expect("reused tree");
        assert!(
            walked.rendered_files() > 0,
            "the children walk shared its renders"
        );
        assert_eq!(
            format!("{:?}", reused.children),
            format!("{:?}", tree.children)
        );
        let other_values = params(&[("download_url", "https://example.com/other.jar")]);
        let other = walk_of(&other_values);
        build(&resolution, "demo", "ns", &same, None, Some(&other)).expect("tree");
        assert_eq!(
            other.rendered_files(),
            0,
            "a walk with other values is not used"
        );
    }
}
