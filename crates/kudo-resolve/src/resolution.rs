//! The result of a resolution: every instance to install, with its package version,
//! where it came from and why, the install order, and a text rendering for plans.

use std::collections::BTreeMap;

use kudo_package::{Package, parse_bool};
use serde::{Deserialize, Serialize};

use crate::error::ResolveError;

/// One instance of the dependency tree (the root is the first node).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedInstance {
    pub instance: String,
    pub package: String,
    pub operator_version: String,
    pub app_version: Option<String>,
    /// `<name>-<appVersion>-<operatorVersion>` (the OperatorVersion object's name).
    pub operator_version_name: String,
    /// `root`, `repository <name>`, or the folder / archive / URL it was read from.
    pub source: String,
    /// Repository name, for versions chosen from a repository.
    pub repository: Option<String>,
    /// Where the package was read from (path or URL).
    pub location: String,
    pub parent: Option<String>,
    /// The parent's KudoOperator task that installs this instance.
    pub task: Option<String>,
    /// The task's `package` value as written.
    pub reference: Option<String>,
    /// What the task (or a user override) asked for, in words.
    pub constraint: Option<String>,
    pub parameter_file: Option<String>,
    /// Parent parameter that switches this subtree on and off (KEP-36).
    pub enabling_parameter: Option<String>,
    /// Whether the subtree is on for the parameter values known at resolution time
    /// (root values given to the resolver, defaults elsewhere); see [`Resolution::enabled`].
    pub enabled: bool,
    pub depth: usize,
    /// Child instance names in plan order.
    pub children: Vec<String>,
}

/// One dependency as users see it: an entry of `kudo_operator.dependencies`, of the
/// `kudo_dependencies` data source and of `resolve --json`. One type for all three so
/// that a CI job comparing them compares like with like.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    pub package: String,
    pub operator_version: String,
    pub app_version: Option<String>,
    pub operator_version_name: String,
    pub source: String,
    /// Package name of the parent instance (not its instance name: instance names
    /// depend on what the root instance is called, package names do not).
    pub required_by: String,
    pub constraint: Option<String>,
    pub enabled: bool,
}

/// A package installed as an operator only (its Operator and OperatorVersion, no
/// instance): an operator.yaml `dependencies:` entry (OLM's "required operators"), or
/// a KudoOperator task of a package that is itself installed this way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequiredOperator {
    pub package: String,
    pub operator_version: String,
    pub app_version: Option<String>,
    pub operator_version_name: String,
    pub source: String,
    /// Package name of the package that requires it.
    pub required_by: String,
    /// Where it is asked: `dependencies[0]` or `task "zk"`.
    pub reference: String,
    /// What was asked, in words: `operatorVersion >=0.3.0 <0.4.0`,
    /// `provides kafka.example.com/v1 Broker`, `any version`.
    pub constraint: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Resolution {
    pub root_instance: String,
    /// Depth-first, parents before children, children in plan order.
    pub nodes: Vec<ResolvedInstance>,
    /// Children before parents, siblings in plan order (KEP-29's order). Instances
    /// only: see [`Resolution::install_order_versions`] for operators.
    pub install_order: Vec<String>,
    /// Packages installed without an instance, by requiring package name, then in
    /// file order. Their versions are in `packages`; they are not `nodes`.
    #[serde(default)]
    pub operators: Vec<RequiredOperator>,
    /// Override keys that named no package of the tree.
    pub unused_overrides: Vec<String>,
    /// The chosen package of every package name (not serialised).
    #[serde(skip)]
    pub packages: BTreeMap<String, Package>,
}

impl Resolution {
    pub fn node(&self, instance: &str) -> Option<&ResolvedInstance> {
        self.nodes.iter().find(|n| n.instance == instance)
    }

    /// The package an instance runs.
    pub fn package_of(&self, instance: &str) -> Option<&Package> {
        self.node(instance)
            .and_then(|n| self.packages.get(&n.package))
    }

    /// Every instance but the root, parents before children, then every operator
    /// installed without an instance ([`Resolution::operators`]), as [`Dependency`].
    pub fn dependencies(&self) -> Vec<Dependency> {
        let package_of = |instance: &str| {
            self.node(instance)
                .map(|n| n.package.clone())
                .unwrap_or_default()
        };
        self.nodes
            .iter()
            .filter(|n| n.parent.is_some())
            .map(|n| Dependency {
                package: n.package.clone(),
                operator_version: n.operator_version.clone(),
                app_version: n.app_version.clone(),
                operator_version_name: n.operator_version_name.clone(),
                source: n.source.clone(),
                required_by: n.parent.as_deref().map(package_of).unwrap_or_default(),
                constraint: n.constraint.clone(),
                enabled: n.enabled,
            })
            .chain(self.operators.iter().map(|o| Dependency {
                package: o.package.clone(),
                operator_version: o.operator_version.clone(),
                app_version: o.app_version.clone(),
                operator_version_name: o.operator_version_name.clone(),
                source: o.source.clone(),
                required_by: o.required_by.clone(),
                constraint: Some(o.constraint.clone()),
                // Installing an operator has no switch: it is always installed.
                enabled: true,
            }))
            .collect()
    }

    /// OperatorVersion names in install order, the root last. Each name appears once:
    /// two instances of one package version share its OperatorVersion, which is
    /// installed before the first of them. The operators a package requires
    /// ([`Resolution::operators`]) come right before it.
    pub fn install_order_versions(&self) -> Vec<String> {
        let mut order: Vec<String> = Vec::new();
        let mut expanded: Vec<&str> = Vec::new();
        for instance in &self.install_order {
            if let Some(n) = self.node(instance) {
                self.push_required(&n.package, &mut expanded, &mut order);
                if !order.contains(&n.operator_version_name) {
                    order.push(n.operator_version_name.clone());
                }
            }
        }
        order
    }

    /// Push the operators `package` requires, theirs first. Each package is expanded
    /// once, which also ends loops between required operators (both are installed,
    /// in some order, which is harmless: no instance runs between them).
    fn push_required<'s>(
        &'s self,
        package: &'s str,
        expanded: &mut Vec<&'s str>,
        order: &mut Vec<String>,
    ) {
        if expanded.contains(&package) {
            return;
        }
        expanded.push(package);
        for o in self.operators.iter().filter(|o| o.required_by == package) {
            self.push_required(&o.package, expanded, order);
            if !order.contains(&o.operator_version_name) {
                order.push(o.operator_version_name.clone());
            }
        }
    }

    pub fn instance_names(&self) -> Vec<&str> {
        self.nodes.iter().map(|n| n.instance.as_str()).collect()
    }

    /// Which instances are on, given each instance's effective parameter values
    /// (`params[instance][parameter]`; a missing instance or parameter falls back to the
    /// parameter's default). An instance is on when its parent is on and its enabling
    /// parameter, if any, is true by Go's `strconv.ParseBool`.
    pub fn enabled(
        &self,
        params: &BTreeMap<String, BTreeMap<String, String>>,
    ) -> Result<BTreeMap<String, bool>, ResolveError> {
        let mut out: BTreeMap<String, bool> = BTreeMap::new();
        for node in &self.nodes {
            let on = match &node.parent {
                None => true,
                Some(parent) => {
                    let parent_on = out.get(parent).copied().unwrap_or(false);
                    parent_on
                        && match &node.enabling_parameter {
                            None => true,
                            Some(param) => {
                                let value = params
                                    .get(parent)
                                    .and_then(|p| p.get(param))
                                    .cloned()
                                    .or_else(|| self.default_of(parent, param));
                                enabling_value(parent, param, value.as_deref())?
                            }
                        }
                }
            };
            out.insert(node.instance.clone(), on);
        }
        Ok(out)
    }

    fn default_of(&self, instance: &str, param: &str) -> Option<String> {
        self.package_of(instance)
            .and_then(|p| p.parameter(param))
            .and_then(|p| p.default.clone())
    }

    /// The tree as text, for plan output and the `resolve` command.
    pub fn render_tree(&self) -> String {
        let mut out = String::new();
        if let Some(root) = self.nodes.first() {
            out.push_str(&format!(
                "{} {}  [instance {}]  ({})\n",
                root.package,
                version_text(root),
                root.instance,
                root.location
            ));
            self.render_children(root, "", &mut out);
        }
        if !self.operators.is_empty() {
            out.push_str("operators installed without an instance:\n");
            for o in &self.operators {
                out.push_str(&format!(
                    "  {} {} from {}; {} {} asks {}\n",
                    o.package,
                    match &o.app_version {
                        Some(a) => format!("{} (app {a})", o.operator_version),
                        None => o.operator_version.clone(),
                    },
                    o.source,
                    o.required_by,
                    o.reference,
                    o.constraint
                ));
            }
        }
        out.push_str(&format!(
            "install order: {}\n",
            self.install_order.join(", ")
        ));
        if !self.unused_overrides.is_empty() {
            out.push_str(&format!(
                "unused overrides (no such dependency): {}\n",
                self.unused_overrides.join(", ")
            ));
        }
        out
    }

    fn render_children(&self, node: &ResolvedInstance, prefix: &str, out: &mut String) {
        let n = node.children.len();
        for (i, child) in node.children.iter().enumerate() {
            let Some(c) = self.node(child) else { continue };
            let last = i + 1 == n;
            let mut line = format!(
                "{prefix}{} {}: {} {} from {}",
                if last { "└─" } else { "├─" },
                c.instance,
                c.package,
                version_text(c),
                c.source
            );
            if let (Some(task), Some(constraint)) = (&c.task, &c.constraint) {
                line.push_str(&format!("; task {task:?} asks {constraint}"));
            }
            if let Some(p) = &c.enabling_parameter {
                let state = if c.enabled { "on" } else { "off" };
                line.push_str(&format!("; enabled by {p} ({state} by default)"));
            }
            out.push_str(&line);
            out.push('\n');
            let deeper = format!("{prefix}{}", if last { "   " } else { "│  " });
            self.render_children(c, &deeper, out);
        }
    }
}

fn version_text(n: &ResolvedInstance) -> String {
    match &n.app_version {
        Some(a) => format!("{} (app {a})", n.operator_version),
        None => n.operator_version.clone(),
    }
}

pub(crate) fn enabling_value(
    instance: &str,
    param: &str,
    value: Option<&str>,
) -> Result<bool, ResolveError> {
    match value {
        // No value and no default: the subtree stays off until someone turns it on.
        None => Ok(false),
        Some(v) => parse_bool(v).ok_or_else(|| ResolveError::EnablingValue {
            instance: instance.to_string(),
            parameter: param.to_string(),
            value: v.to_string(),
        }),
    }
}
