//! `create_namespace` on both resources, and the check that their namespace exists:
//! Terraform values into the engine's namespace calls of `kudo_instance`
//! ([`engine::plan_namespace`], [`engine::ensure_namespace`], and the destroy action's
//! [`engine::Destroyed::namespace`]) and the answers of both resources' actions (the
//! `kudo_operator` actions check, create and release its namespace themselves) into
//! diagnostics. The decisions are the engine's.

use tfplugin::{Attr, AttributePath, Diagnostic};

use kudo_engine::cluster::Cluster;
use kudo_engine::engine::{
    self, EngineError, NamespacePlan, NamespaceProblem, NamespaceUser, Released,
};

use super::Session;

/// The user to create the namespace for, when `create_namespace` is true.
pub fn user_for(
    create: &Attr<bool>,
    user: impl FnOnce() -> NamespaceUser,
) -> Option<NamespaceUser> {
    (create.known() == Some(&true)).then(user)
}

/// The same diagnostic at plan and at apply, on `namespace` (or `create_namespace`
/// when creating it is what fails).
pub fn diagnostic(session: &Session, namespace: &str, problem: &NamespaceProblem) -> Diagnostic {
    match problem {
        NamespaceProblem::Missing { .. } => Diagnostic::error(
            "Namespace does not exist",
            format!("Namespace {namespace} does not exist. {}", problem.advice()),
        )
        .with_attribute(AttributePath::attribute("namespace")),
        NamespaceProblem::Terminating { .. } => Diagnostic::error(
            "Namespace is being deleted",
            format!(
                "Namespace {namespace} is being deleted. {}",
                problem.advice()
            ),
        )
        .with_attribute(AttributePath::attribute("namespace")),
        NamespaceProblem::Cluster(e) => session
            .engine_error(&format!("Cannot create namespace {namespace}"), e)
            .with_attribute(AttributePath::attribute("create_namespace")),
    }
}

/// The plan's check of a known namespace.
pub async fn plan(
    session: &Session,
    cluster: &Cluster,
    namespace: &str,
    create: Option<&NamespaceUser>,
) -> Result<NamespacePlan, Diagnostic> {
    engine::plan_namespace(cluster, namespace, create)
        .await
        .map_err(|p| diagnostic(session, namespace, &p))
}

/// The apply's check, before anything is written; creates the namespace for `create`.
pub async fn ensure(
    session: &Session,
    cluster: &Cluster,
    namespace: &str,
    create: Option<&NamespaceUser>,
) -> Result<(), Diagnostic> {
    engine::ensure_namespace(cluster, namespace, create)
        .await
        .map(|_| ())
        .map_err(|p| diagnostic(session, namespace, &p))
}

/// What releasing the namespace came to, as diagnostics. The resource is gone either
/// way, so what stops the namespace's removal is a warning, never a failed destroy.
pub fn released(namespace: &str, answer: &Result<Released, EngineError>) -> Vec<Diagnostic> {
    match answer {
        Ok(Released::Deleted) => Vec::new(),
        Ok(Released::Kept(kept)) => vec![Diagnostic::warning(
            format!("Namespace {} kept", kept.namespace()),
            kept.to_string(),
        )],
        Err(e) => vec![Diagnostic::warning(
            format!("Namespace {namespace} not removed"),
            format!(
                "The resource was destroyed, but removing namespace {namespace}, which `create_namespace` created, failed: {e}. Delete it yourself (`kubectl delete namespace {namespace}`) once nothing in it is needed."
            ),
        )],
    }
}
