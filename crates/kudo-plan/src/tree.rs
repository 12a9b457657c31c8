//! The dependency instances (KudoOperator tasks, KEP-29/36) one instance creates, and the
//! packages its runs take them from, worked out from a resolved dependency tree.
//!
//! The resolver (kudo-resolve) names its tree after the operator. Here the tree is
//! re-rooted at the real instance name, and each parent is walked ([`Desired`]) with its
//! own final values, so every child gets the name, seed, enabling and parameters the
//! apply's runs give it. The provider's `children` attribute and the engine's runs both
//! read the result, which is why a plan shows what the apply creates.

use std::collections::{BTreeMap, BTreeSet};

use kudo_package::{Package, ParamError, TaskSpec};
use kudo_resolve::naming::check_instance_name;
use kudo_resolve::{Resolution, ResolvedInstance};

use crate::{Action, ChildPlan, DependencyPackages, Desired, Inputs, PlanError};

/// One dependency instance of the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Child {
    pub name: String,
    pub operator: String,
    pub operator_version: String,
    /// False when an `enablingParameter` switches it (or a parent) off.
    pub enabled: bool,
    /// From the task's `parameterFile`; empty when the child is off.
    pub parameters: BTreeMap<String, String>,
    /// The instance whose task creates it.
    pub parent: String,
}

/// The children of one instance, parents before their children, and the packages its
/// run needs for its KudoOperator tasks.
#[derive(Debug, Default)]
pub struct Tree {
    pub children: Vec<Child>,
    pub packages: DependencyPackages,
}

/// Why the tree cannot be built. Each one means the package, the parameters or the
/// recorded tree must change; the texts are the ones users see.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TreeError {
    /// The recorded tree belongs to another version of the operator (a stale plan
    /// directory).
    #[error(
        "The recorded dependency tree is for {recorded}, but the instance runs {running}. Run `terraform plan` again."
    )]
    Stale { recorded: String, running: String },
    #[error(
        "The recorded dependency tree has no package for {instance} ({operator_version_name})."
    )]
    MissingPackage {
        instance: String,
        operator_version_name: String,
    },
    /// A parent's values fail its own parameter checks.
    #[error("Instance {instance} ({operator_version_name}) has invalid parameters: {error}")]
    InvalidParameters {
        instance: String,
        operator_version_name: String,
        error: PlanError,
    },
    /// No plan of the parent can be walked to the task that creates this child.
    #[error("Dependency {package} of {parent}: {error}")]
    Dependency {
        package: String,
        parent: String,
        error: PlanError,
    },
    /// The walk could not load the child's package.
    #[error(transparent)]
    ChildPackage(PlanError),
    #[error(
        "Dependency instance name {name:?} is not valid: {reason}. Choose a shorter instance name, or set `instanceName` on the KudoOperator task."
    )]
    InvalidName { name: String, reason: String },
    #[error(
        "Two instances of the dependency tree would both be named {name:?}; set distinct `instanceName`s on the KudoOperator tasks."
    )]
    DuplicateName { name: String },
    /// The parameters a parent's `parameterFile` hands an enabled child fail the child's checks.
    #[error(
        "Dependency instance {name} ({operator_version_name}) would get invalid parameters: {}",
        joined(.errors)
    )]
    ChildParameters {
        name: String,
        operator_version_name: String,
        errors: Vec<ParamError>,
    },
}

fn joined(errors: &[ParamError]) -> String {
    let list: Vec<String> = errors.iter().map(ToString::to_string).collect();
    list.join("; ")
}

/// Whether `pkg` has KudoOperator tasks at all: without them an instance has no
/// children, and no resolved tree is needed to say so.
pub fn has_dependency_tasks(pkg: &Package) -> bool {
    pkg.operator
        .tasks
        .iter()
        .any(|t| matches!(t.spec, TaskSpec::KudoOperator { .. }))
}

/// The dependency tree of `pkg` without resolving: an empty one without KudoOperator
/// tasks, else the one `recorded` answers (the tree `kudo_operator` recorded, when there
/// is one).
pub fn known_tree(
    pkg: &Package,
    recorded: impl FnOnce() -> Option<Resolution>,
) -> Option<Resolution> {
    match has_dependency_tasks(pkg) {
        false => Some(Resolution::default()),
        true => recorded(),
    }
}

/// What the walk of a node's parent decided for it.
struct Placed {
    name: String,
    on: bool,
    parameters: BTreeMap<String, String>,
    seed: Option<String>,
}

/// The children of instance `root_name` in `namespace`, the root of `resolution`, run
/// with `root_parameters` (the user's values, sensitive ones included) and render
/// `seed`: the same names, seeds, enabling and parameters the apply's runs use.
/// `resolution.packages` must hold the packages the runs will use (the root's included).
/// Parents come before their children in the resolution, so each parent is walked with
/// its own final values. `walked`: the caller's own walk of the root instance, whose
/// renders the root's walk shares when it has the same values.
pub fn build_tree(
    resolution: &Resolution,
    root_name: &str,
    namespace: &str,
    root_parameters: &BTreeMap<String, String>,
    seed: Option<&str>,
    walked: Option<&Desired<'_>>,
) -> Result<Tree, TreeError> {
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
    for node in &resolution.nodes {
        let Some(parent) = placed.get(&node.instance).filter(|p| p.on) else {
            continue;
        };
        let pkg =
            resolution
                .package_of(&node.instance)
                .ok_or_else(|| TreeError::MissingPackage {
                    instance: node.instance.clone(),
                    operator_version_name: node.operator_version_name.clone(),
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
            .map_err(|error| TreeError::InvalidParameters {
                instance: parent.name.clone(),
                operator_version_name: node.operator_version_name.clone(),
                error,
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
            let decided = child_plan(&desired, task).map_err(|error| TreeError::Dependency {
                package: child_node.package.clone(),
                parent: parent.name.clone(),
                error,
            })?;
            let target = decided
                .target
                .as_ref()
                .map_err(|e| TreeError::ChildPackage(e.clone()))?;
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
    let mut seen = BTreeSet::new();
    for node in resolution.nodes.iter().skip(1) {
        // Below a disabled instance nothing is walked: the subtree is off, as in the run.
        let (name, on, parameters) = match placed.get(&node.instance) {
            Some(p) => (p.name.clone(), p.on, p.parameters.clone()),
            None => (off_name(resolution, &placed, node), false, BTreeMap::new()),
        };
        // The resolver checked names for an instance named after the operator; this
        // instance's name makes other ones, which must be valid and distinct too.
        check_instance_name(&name).map_err(|reason| TreeError::InvalidName {
            name: name.clone(),
            reason,
        })?;
        if !seen.insert(name.clone()) {
            return Err(TreeError::DuplicateName { name });
        }
        if on
            && let Some(pkg) = resolution.package_of(&node.instance)
            && let Err(errors) = pkg.effective_params(&parameters)
        {
            return Err(TreeError::ChildParameters {
                name,
                operator_version_name: node.operator_version_name.clone(),
                errors,
            });
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
) -> Result<&'d ChildPlan<'p>, PlanError> {
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
        for t in desired.plan(plan)?.tasks() {
            if t.name == task
                && let Action::Child(child) = &t.action
            {
                return Ok(child);
            }
        }
    }
    Err(PlanError::new(format!(
        "no plan of {} runs task {task:?}",
        pkg.operator.name
    )))
}

/// The name of an instance below a disabled one, which no walk reaches: the one naming
/// rule applied to its parent's name, so the tree still lists it.
fn off_name(
    resolution: &Resolution,
    placed: &BTreeMap<String, Placed>,
    node: &ResolvedInstance,
) -> String {
    let parent_name = match node.parent.as_deref() {
        None => return String::new(),
        Some(p) => match (placed.get(p), resolution.node(p)) {
            (Some(placed), _) => placed.name.clone(),
            (None, Some(parent)) => off_name(resolution, placed, parent),
            (None, None) => String::new(),
        },
    };
    crate::child_instance_name(&parent_name, explicit_name(resolution, node), &node.package)
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

    /// The dependency fixtures at the repository root.
    fn fixtures(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/deps")
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
    fn packages_without_kudo_operator_tasks_have_no_dependencies() {
        let (pkg, _) = resolve("kep29", "aa");
        assert!(has_dependency_tasks(&pkg));
        let leaf = Package::load_dir(&fixtures("kep29").join("cc")).expect("cc");
        assert!(!has_dependency_tasks(&leaf));
    }

    #[test]
    fn the_tree_is_renamed_for_the_instance_and_keys_packages_by_parent_and_task() {
        let (pkg, resolution) = resolve("kep29", "aa");
        let tree =
            build_tree(&resolution, "mine", "ns", &BTreeMap::new(), None, None).expect("tree");
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
        let off =
            build_tree(&resolution, "p", "ns", &BTreeMap::new(), None, None).expect("default off");
        assert_eq!(off.children.len(), 1);
        assert!(!off.children[0].enabled);
        let on = build_tree(
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
        let bad = build_tree(
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
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/operators");
        if !dir.join("flink-demo").is_dir() {
            eprintln!("SKIPPED: {} is absent", dir.display());
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
        let tree =
            build_tree(&resolution, "demo", "ns", &BTreeMap::new(), None, None).expect("tree");
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
            build_tree(&resolution, "demo", "ns", &same, None, Some(&walked)).expect("reused tree");
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
        build_tree(&resolution, "demo", "ns", &same, None, Some(&other)).expect("tree");
        assert_eq!(
            other.rendered_files(),
            0,
            "a walk with other values is not used"
        );
    }
}
