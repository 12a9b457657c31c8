//! From chosen versions to the instance tree: cycle check on the package graph
//! (petgraph), then KEP-29 expansion — every KudoOperator task of an instance's package
//! is a child instance, children in plan order; the install order is the tree's
//! post-order (children before parents), e.g. KEP-29's (EE, GG, BB, CC, AA).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

use petgraph::algo::{tarjan_scc, toposort};
use petgraph::graph::{DiGraph, NodeIndex};

use crate::error::ResolveError;
use crate::naming::{check_instance_name, child_instance_name};
use crate::resolution::{RequiredOperator, Resolution, ResolvedInstance, enabling_value};
use crate::solve::{Ask, PackageVersion, Provider, Source};

/// Upper bound on instances in one tree: shared dependencies are installed once per
/// parent (KEP-29), so diamonds multiply; past this the tree is surely a mistake.
pub const MAX_INSTANCES: usize = 10_000;

pub(crate) fn build(
    provider: &Provider<'_>,
    selection: &BTreeMap<String, PackageVersion>,
    root_instance: &str,
    root_params: &BTreeMap<String, String>,
) -> Result<Resolution, ResolveError> {
    check_cycles(provider, selection)?;
    let mut b = Builder {
        provider,
        selection,
        root_params,
        nodes: Vec::new(),
        order: Vec::new(),
        names: HashMap::new(),
    };
    let root = provider.root_name.clone();
    b.expand(&root, root_instance, None, 0, true)?;
    let mut packages = BTreeMap::new();
    for (name, v) in selection {
        packages.insert(name.clone(), (*provider.package(name, v)?).clone());
    }
    let operators = operators(provider, selection, &b.nodes)?;
    Ok(Resolution {
        root_instance: root_instance.to_string(),
        nodes: b.nodes,
        install_order: b.order,
        operators,
        unused_overrides: Vec::new(),
        packages,
    })
}

/// The KudoOperator asks of a selected package (empty for an unselected one).
/// `dependencies:` entries are left out: they install no instance, so a loop through
/// them only means that both OperatorVersions are installed.
/// (The provider's shared list: callers skip the listed asks, `Ask::listed`, rather
/// than every call copying the others.)
fn asks_of(
    provider: &Provider<'_>,
    selection: &BTreeMap<String, PackageVersion>,
    name: &str,
) -> Result<Rc<Vec<Ask>>, ResolveError> {
    match selection.get(name) {
        Some(v) => provider.asks(name, v),
        None => Ok(Rc::default()),
    }
}

/// Where a chosen version comes from: (source text, repository, location).
fn origin_of(
    provider: &Provider<'_>,
    package: &str,
    version: &PackageVersion,
    pkg: &kudo_package::Package,
) -> (String, Option<String>, String) {
    match provider.source_of(package, version) {
        Some(Source::Root) | None => ("root".to_string(), None, pkg.origin.label()),
        Some(Source::Catalog(e)) => (
            format!("repository {}", e.repository),
            Some(e.repository.clone()),
            e.location.clone(),
        ),
        Some(Source::Path(label)) => (label.clone(), None, label),
    }
}

/// Operators installed without an instance: every `dependencies:` entry, and every
/// KudoOperator task of a package that is itself installed only as an operator (so
/// that an instance created of it later finds its own dependencies installed).
fn operators(
    provider: &Provider<'_>,
    selection: &BTreeMap<String, PackageVersion>,
    nodes: &[ResolvedInstance],
) -> Result<Vec<RequiredOperator>, ResolveError> {
    let instances: BTreeSet<&str> = nodes.iter().map(|n| n.package.as_str()).collect();
    let mut out = Vec::new();
    for (name, v) in selection {
        let operator_only = !instances.contains(name.as_str());
        for ask in provider.asks(name, v)?.iter() {
            // A package requiring itself is already installed.
            if (ask.listed.is_none() && !operator_only) || ask.dep == *name {
                continue;
            }
            let Some(version) = selection.get(&ask.dep) else {
                return Err(ResolveError::Catalog(format!(
                    "{}: no version was chosen (internal error; please report)",
                    ask.dep
                )));
            };
            let pkg = provider.package(&ask.dep, version)?;
            let (source, _, _) = origin_of(provider, &ask.dep, version, &pkg);
            out.push(RequiredOperator {
                package: ask.dep.clone(),
                operator_version: pkg.operator.operator_version.clone(),
                app_version: pkg.operator.app_version.clone(),
                operator_version_name: pkg.operator_version_name(),
                source,
                required_by: name.clone(),
                reference: ask.origin(),
                constraint: ask.describe(),
            });
        }
    }
    Ok(out)
}

/// Fail when packages install each other in a loop, naming the loop as a path from the
/// root (`a -> b -> c -> a`).
fn check_cycles(
    provider: &Provider<'_>,
    selection: &BTreeMap<String, PackageVersion>,
) -> Result<(), ResolveError> {
    let mut g: DiGraph<String, ()> = DiGraph::new();
    let mut index: BTreeMap<String, NodeIndex> = BTreeMap::new();
    for name in selection.keys() {
        index.insert(name.clone(), g.add_node(name.clone()));
    }
    for name in selection.keys() {
        for ask in asks_of(provider, selection, name)?
            .iter()
            .filter(|a| a.listed.is_none())
        {
            if let (Some(&a), Some(&b)) = (index.get(name), index.get(&ask.dep)) {
                g.add_edge(a, b, ());
            }
        }
    }
    if toposort(&g, None).is_ok() {
        return Ok(());
    }
    // A path from the root reads best; walk depth-first in plan order until an edge
    // goes back onto the current path.
    let mut path = Vec::new();
    let mut done = BTreeSet::new();
    if let Some(cycle) = find_cycle(
        provider,
        selection,
        &provider.root_name,
        &mut path,
        &mut done,
    )? {
        return Err(ResolveError::Cycle { path: cycle });
    }
    // Not reachable from the root in plan order (should not happen): name the members.
    let members = tarjan_scc(&g)
        .into_iter()
        .find(|scc| scc.len() > 1 || scc.iter().any(|&n| g.contains_edge(n, n)))
        .unwrap_or_default();
    let mut path: Vec<String> = members.iter().map(|&n| g[n].clone()).collect();
    path.sort();
    if let Some(first) = path.first().cloned() {
        path.push(first);
    }
    Err(ResolveError::Cycle { path })
}

fn find_cycle(
    provider: &Provider<'_>,
    selection: &BTreeMap<String, PackageVersion>,
    name: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Result<Option<Vec<String>>, ResolveError> {
    if let Some(pos) = path.iter().position(|p| p == name) {
        let mut cycle = path[pos..].to_vec();
        cycle.push(name.to_string());
        return Ok(Some(cycle));
    }
    // A package fully explored without finding a loop cannot be on one from here.
    if done.contains(name) {
        return Ok(None);
    }
    path.push(name.to_string());
    for ask in asks_of(provider, selection, name)?
        .iter()
        .filter(|a| a.listed.is_none())
    {
        if let Some(c) = find_cycle(provider, selection, &ask.dep, path, done)? {
            return Ok(Some(c));
        }
    }
    path.pop();
    done.insert(name.to_string());
    Ok(None)
}

struct Builder<'p, 'a> {
    provider: &'p Provider<'a>,
    selection: &'p BTreeMap<String, PackageVersion>,
    root_params: &'p BTreeMap<String, String>,
    nodes: Vec<ResolvedInstance>,
    order: Vec<String>,
    /// instance name -> how it was reached (for collision messages)
    names: HashMap<String, String>,
}

impl Builder<'_, '_> {
    fn expand(
        &mut self,
        package: &str,
        instance: &str,
        via: Option<(&str, &Ask)>,
        depth: usize,
        enabled: bool,
    ) -> Result<(), ResolveError> {
        if self.nodes.len() >= MAX_INSTANCES {
            return Err(ResolveError::TooManyInstances {
                limit: MAX_INSTANCES,
            });
        }
        let Some(version) = self.selection.get(package).cloned() else {
            return Err(ResolveError::Catalog(format!(
                "{package}: no version was chosen (internal error; please report)"
            )));
        };
        if let Some((parent, ask)) = via
            && ask.pinned.is_none()
            && !ask.matches(&version)
        {
            return Err(ResolveError::Catalog(format!(
                "{package} {version} was chosen, but task {:?} of instance {parent} asks {}; please report this as a resolver bug",
                ask.task,
                ask.describe()
            )));
        }
        let pkg = self.provider.package(package, &version)?;
        let reached = match via {
            None => format!("the root {package}"),
            Some((parent, ask)) => format!("task {:?} of instance {parent}", ask.task),
        };
        if via.is_some() {
            check_instance_name(instance).map_err(|reason| ResolveError::InvalidInstanceName {
                name: instance.to_string(),
                path: reached.clone(),
                reason,
            })?;
        }
        if let Some(first) = self.names.insert(instance.to_string(), reached.clone()) {
            return Err(ResolveError::NameCollision {
                name: instance.to_string(),
                first,
                second: reached,
            });
        }
        let (source, repository, location) = origin_of(self.provider, package, &version, &pkg);
        let index = self.nodes.len();
        self.nodes.push(ResolvedInstance {
            instance: instance.to_string(),
            package: package.to_string(),
            operator_version: pkg.operator.operator_version.clone(),
            app_version: pkg.operator.app_version.clone(),
            operator_version_name: pkg.operator_version_name(),
            source,
            repository,
            location,
            parent: via.map(|(p, _)| p.to_string()),
            task: via.map(|(_, a)| a.task.clone()),
            reference: via.map(|(_, a)| a.reference.clone()),
            constraint: via.map(|(_, a)| a.describe()),
            parameter_file: via.and_then(|(_, a)| a.parameter_file.clone()),
            enabling_parameter: via.and_then(|(_, a)| a.enabling_parameter.clone()),
            enabled,
            depth,
            children: Vec::new(),
        });
        let asks = self.provider.asks(package, &version)?;
        for ask in asks.iter().filter(|a| a.listed.is_none()) {
            let child = child_instance_name(instance, &ask.dep, ask.instance_name.as_deref());
            let child_on = enabled
                && match &ask.enabling_parameter {
                    None => true,
                    Some(param) => {
                        // Known values: the caller's root parameters, else defaults.
                        let value = if depth == 0 {
                            self.root_params.get(param).cloned()
                        } else {
                            None
                        }
                        .or_else(|| pkg.parameter(param).and_then(|p| p.default.clone()));
                        enabling_value(instance, param, value.as_deref())?
                    }
                };
            self.nodes[index].children.push(child.clone());
            self.expand(&ask.dep, &child, Some((instance, ask)), depth + 1, child_on)?;
        }
        self.order.push(instance.to_string());
        Ok(())
    }
}
