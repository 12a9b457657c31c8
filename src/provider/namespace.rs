//! `create_namespace` on both resources, and the check that their namespace exists: the
//! engine's actions check, create and release the namespace themselves
//! ([`engine::PlanRefusal::Namespace`], [`engine::OperatorFailure::Namespace`],
//! [`engine::Destroyed::namespace`]); this module words their answers as diagnostics.

use tfplugin::{AttributePath, Diagnostic};

use kudo_engine::engine::{EngineError, NamespaceProblem, Released};

use super::Session;

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
