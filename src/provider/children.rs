//! `kudo_instance.children`: the dependency instances (KudoOperator tasks, KEP-29/36)
//! an instance creates, and the resolved packages the engine runs them from.
//!
//! `kudo_operator` resolves the tree once (repositories, ranges, overrides) and keeps it
//! with its plan-time package copy (see `packages::PlanCache`). This module finds that
//! tree (or resolves it again at apply), lets `kudo_plan::build_tree` decide the
//! children, and turns the answer into the `children` value and diagnostics. Which
//! children exist, their names and their parameters are kudo-plan's decisions, so the
//! plan shows what the apply's runs will create.

use std::collections::BTreeMap;

use tfplugin::{AttributePath, Diagnostic, Value};

use kudo_engine::engine;
use kudo_package::Package;
use kudo_plan::{Desired, Tree, TreeError};
use kudo_resolve::Resolution;

use super::Session;
use super::packages::{self, PlanCache, parse_operator_id};

/// What `children[*].parameters` shows for a value derived from a secret one.
pub const REDACTED: &str = "(sensitive value)";

/// The `children` attribute of `tree`. A parameter value that carries a value of
/// `secret` (`sensitive_parameters`, `parameters_wo`) passed on by a parameter file is
/// shown as [`REDACTED`]: the attribute is stored in the state, which those values
/// never reach.
pub fn children_value(tree: &Tree, secret: &BTreeMap<String, String>) -> Value {
    let hides = |v: &str| {
        secret
            .values()
            .any(|s| !s.is_empty() && v.contains(s.as_str()))
    };
    Value::list(tree.children.iter().map(|c| {
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

fn tree_error(detail: String) -> Diagnostic {
    Diagnostic::error("Cannot work out the instance's dependencies", detail)
        .with_attribute(AttributePath::attribute("operator"))
}

/// A tree kudo-plan could not build, as the same diagnostic as the provider's own
/// failures to find one: the user fixes both in the same place.
fn build_error(e: TreeError) -> Diagnostic {
    tree_error(e.to_string())
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
    if !kudo_plan::has_dependency_tasks(pkg) {
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
    kudo_plan::build_tree(&resolution, name, namespace, parameters, seed, walked)
        .map(Some)
        .map_err(build_error)
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

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_plan::{Child, DependencyPackages};

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
        let shown = children_value(&tree, &params(&[("PASSWORD", "hunter2"), ("EMPTY", "")]));
        let text = format!("{shown:?}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains(REDACTED) && text.contains('3'), "{text}");
    }

    #[test]
    fn a_tree_error_is_reported_on_the_operator_attribute_in_its_own_words() {
        let d = build_error(TreeError::DuplicateName { name: "x".into() });
        assert_eq!(d.summary, "Cannot work out the instance's dependencies");
        assert_eq!(
            d.detail,
            "Two instances of the dependency tree would both be named \"x\"; set distinct `instanceName`s on the KudoOperator tasks."
        );
        assert_eq!(d.attribute, Some(AttributePath::attribute("operator")));
    }

    #[test]
    fn only_a_known_change_of_children_counts() {
        let before = Value::list([Value::string("a")]);
        let after = Value::list([Value::string("b")]);
        assert!(children_changed(Some(&before), &after));
        assert!(!children_changed(Some(&before), &before));
        assert!(!children_changed(None, &after));
        assert!(!children_changed(Some(&Value::Null), &after));
        assert!(!children_changed(Some(&before), &Value::Unknown));
    }
}
