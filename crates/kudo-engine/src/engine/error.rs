use std::error::Error;
use std::fmt;
use std::sync::Arc;

use crate::cluster::{ClusterError, Failure, ObjectRef, Trouble};

/// A failed plan (or operator install / uninstall). Says where it happened and whether
/// retrying can help: `fatal` = KUDO's FATAL_ERROR (fix the package or parameters);
/// otherwise an ERROR that may pass on a later apply (timeout, cluster trouble).
///
/// `message` is this level's own text; what it wraps (a cluster error, a dependency
/// instance's failure, a package that does not read back) is its `source`, so callers
/// can walk the chain. `Display` writes the whole chain as one text, because Terraform
/// shows a diagnostic, not a chain.
#[derive(Debug, Clone)]
pub struct EngineError {
    pub plan: Option<String>,
    pub phase: Option<String>,
    pub step: Option<String>,
    pub task: Option<String>,
    pub object: Option<ObjectRef>,
    /// The package file (`templates/<file>`) that rendered `object`, when known.
    pub template: Option<String>,
    pub message: String,
    pub fatal: bool,
    /// What kind of trouble, so the caller can say what to do about it.
    pub trouble: Trouble,
    /// Set by `run_plan` when a plan fails: the objects known to exist afterwards
    /// (previous inventory plus what the run applied, minus what it deleted), so the
    /// caller keeps track of them (cluster-scoped ones carry no owner reference).
    pub inventory: Option<Vec<ObjectRef>>,
    source: Option<Arc<dyn Error + Send + Sync + 'static>>,
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Error for EngineError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

impl EngineError {
    fn describe(&self) -> String {
        let verdict = if self.fatal && self.trouble == Trouble::Namespace {
            "FATAL_ERROR: will not pass by retrying until the namespace exists"
        } else if self.fatal && self.trouble == Trouble::Denied {
            "FATAL_ERROR: will not pass by retrying until the credentials are accepted and allowed this"
        } else if self.fatal {
            "FATAL_ERROR: will not pass by retrying; fix the package or parameters"
        } else {
            "ERROR: may pass when run again"
        };
        format!("{} [{verdict}]", self.located())
    }

    /// Where and what, without the verdict: for wrapping in an outer error (a
    /// dependency's failure inside its parent's plan) that states the verdict once.
    pub(crate) fn located(&self) -> String {
        let what = match (&self.object, &self.template) {
            (Some(o), Some(t)) => Some(format!("object {o} (rendered from {t})")),
            (Some(o), None) => Some(format!("object {o}")),
            (None, Some(t)) => Some(format!("template {t}")),
            (None, None) => None,
        };
        kudo_plan::located_text(
            [&self.plan, &self.phase, &self.step, &self.task],
            what,
            &self.message_chain(),
        )
    }

    /// This level's message followed by its causes'. A cause that failed in the same
    /// place adds its message only; one from elsewhere (a dependency instance's plan)
    /// says where.
    fn message_chain(&self) -> String {
        let Some(source) = &self.source else {
            return self.message.clone();
        };
        let cause = match source.downcast_ref::<EngineError>() {
            Some(inner) if inner.place() == self.place() => inner.message_chain(),
            Some(inner) => inner.located(),
            None => source.to_string(),
        };
        match self.message.is_empty() {
            true => cause,
            false => format!("{}: {cause}", self.message),
        }
    }

    /// Where the error happened, as compared between a wrapper and its cause.
    #[allow(clippy::type_complexity)]
    fn place(
        &self,
    ) -> (
        &Option<String>,
        &Option<String>,
        &Option<String>,
        &Option<String>,
        &Option<ObjectRef>,
        &Option<String>,
    ) {
        (
            &self.plan,
            &self.phase,
            &self.step,
            &self.task,
            &self.object,
            &self.template,
        )
    }
}

impl EngineError {
    pub fn new(message: impl Into<String>, fatal: bool) -> Self {
        EngineError {
            plan: None,
            phase: None,
            step: None,
            task: None,
            object: None,
            template: None,
            message: message.into(),
            fatal,
            trouble: Trouble::default(),
            inventory: None,
            source: None,
        }
    }

    /// An error `message` caused by `cause` (which keeps its own place and text).
    pub fn caused_by(mut self, cause: impl Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(cause));
        self
    }

    /// The same failure, explained by `message`: place, fatality, trouble and inventory
    /// carry over, and this error becomes the source.
    pub fn context(self, message: impl Into<String>) -> Self {
        EngineError {
            plan: self.plan.clone(),
            phase: self.phase.clone(),
            step: self.step.clone(),
            task: self.task.clone(),
            object: self.object.clone(),
            template: self.template.clone(),
            message: message.into(),
            fatal: self.fatal,
            trouble: self.trouble,
            inventory: self.inventory.clone(),
            source: None,
        }
        .caused_by(self)
    }

    pub fn fatal(message: impl Into<String>) -> Self {
        Self::new(message, true)
    }

    pub fn transient(message: impl Into<String>) -> Self {
        Self::new(message, false)
    }

    pub fn with_plan(mut self, plan: &str) -> Self {
        self.plan.get_or_insert_with(|| plan.to_string());
        self
    }

    pub fn at(mut self, loc: &Location) -> Self {
        self.plan.get_or_insert_with(|| loc.plan.clone());
        self.phase.get_or_insert_with(|| loc.phase.clone());
        self.step.get_or_insert_with(|| loc.step.clone());
        self
    }

    pub fn with_task(mut self, task: &str) -> Self {
        self.task.get_or_insert_with(|| task.to_string());
        self
    }

    pub fn with_object(mut self, object: &ObjectRef) -> Self {
        self.object.get_or_insert_with(|| object.clone());
        self
    }

    /// Names the package file (`templates/<file>`) the failing object came from.
    pub fn with_template(mut self, template: impl Into<String>) -> Self {
        self.template.get_or_insert_with(|| template.into());
        self
    }

    /// Records the objects that exist after a failed plan (the innermost run's
    /// record is replaced by the outer one, which includes it).
    pub fn with_inventory(mut self, inventory: Vec<ObjectRef>) -> Self {
        self.inventory = Some(inventory);
        self
    }

    /// An object's API version is not served and translation is off or cannot help.
    pub fn is_translation(&self) -> bool {
        self.trouble == Trouble::ApiVersion
    }

    /// The cluster error this one wraps, at any depth of the chain within this
    /// instance's run (not through a dependency's failure).
    pub fn cluster_cause(&self) -> Option<&ClusterError> {
        let mut cause = self.source.as_deref()?;
        loop {
            if let Some(c) = cause.downcast_ref::<ClusterError>() {
                return Some(c);
            }
            cause = cause.downcast_ref::<EngineError>()?.source.as_deref()?;
        }
    }

    /// What went wrong (see [`Failure`]): the trouble, with the template and object this
    /// error names, and FATAL telling a package's fault from the cluster's.
    pub fn failure(&self) -> Failure<'_> {
        Failure::of(
            self.trouble,
            self.fatal,
            self.template.as_deref(),
            self.object.as_ref(),
            &self.to_string(),
        )
    }

    /// Whether the run was stopped by cancellation (Terraform timeout / interrupt),
    /// also while a pod waited for a node ([`Trouble::Unschedulable`]).
    pub fn is_cancelled(&self) -> bool {
        matches!(self.trouble, Trouble::Cancelled | Trouble::Unschedulable)
    }

    /// Cancelled while a pod could not be scheduled: not fatal (the cluster may get a
    /// node it fits on), and classified so the advice is about the cluster.
    pub(crate) fn unschedulable(message: impl Into<String>) -> Self {
        let mut e = EngineError::transient(message);
        e.trouble = Trouble::Unschedulable;
        e
    }

    /// The engine stopped on its own because the run was cancelled (not a cluster call).
    pub(crate) fn cancelled(message: impl Into<String>) -> Self {
        let mut e = EngineError::transient(message);
        e.trouble = Trouble::Cancelled;
        e
    }
}

/// Where in a plan we are; carried into logs, errors and object annotations.
pub use kudo_plan::Location;

/// Everything the desired state rejects is KUDO's FATAL_ERROR: the package or the
/// parameters must change. The text is the one the plan showed.
impl From<kudo_plan::PlanError> for EngineError {
    fn from(e: kudo_plan::PlanError) -> Self {
        let mut out = EngineError::fatal(e.message);
        out.plan = e.plan;
        out.phase = e.phase;
        out.step = e.step;
        out.task = e.task;
        out.template = e.template;
        out
    }
}

/// Maps cluster errors onto KUDO's ERROR / FATAL_ERROR: problems with what we send
/// (unknown kind, invalid object, 4xx) are fatal; an unreachable or failing server and
/// cancellation are not.
impl From<ClusterError> for EngineError {
    fn from(e: ClusterError) -> Self {
        let fatal = match &e {
            ClusterError::UnknownKind { .. }
            | ClusterError::InvalidObject { .. }
            | ClusterError::Translate(_) => true,
            // Another manager keeps the fields until someone acts; retrying cannot help.
            ClusterError::FieldConflict { .. } => true,
            ClusterError::Api { code, message, .. } => {
                ((400..500).contains(code) && *code != 409 && *code != 429)
                    || (*code >= 500 && crate::cluster::rejects_content(message))
            }
            ClusterError::Settings { .. }
            | ClusterError::CredentialPlugin { .. }
            | ClusterError::CredentialRefused { .. }
            | ClusterError::Certificate { .. }
            | ClusterError::NotKubernetes { .. }
            // A namespace that is missing or being deleted does not come back by itself:
            // someone has to create it (or `create_namespace` does), so running again
            // unchanged cannot help (issue #51).
            | ClusterError::NamespaceGone { .. } => true,
            ClusterError::Unreachable { .. }
            | ClusterError::ConnectionLost { .. }
            | ClusterError::Other { .. }
            | ClusterError::Cancelled { .. } => false,
        };
        // The cluster error is the whole story; this level adds no text of its own.
        let mut out = EngineError::new("", fatal);
        out.trouble = e.trouble();
        out.caused_by(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_run_says_whose_fault_it_is() {
        // A rejected object of a template: the package's to fix, at that template.
        let rejected: EngineError = ClusterError::Api {
            verb: "apply",
            object: "ConfigMap ns/Bad".into(),
            code: 422,
            reason: "Invalid".into(),
            message: "metadata.name: Invalid value".into(),
        }
        .into();
        let r = ObjectRef::new("v1", "ConfigMap", Some("ns"), "Bad");
        let rejected = rejected.with_object(&r).with_template("templates/cm.yaml");
        assert!(rejected.fatal);
        assert_eq!(
            rejected.failure(),
            Failure::Package {
                template: Some("templates/cm.yaml")
            }
        );
        // A dropped connection and a namespace deleted under the run: not FATAL, and
        // not the package's fault.
        let lost = EngineError::from(ClusterError::ConnectionLost {
            url: "https://10.0.0.1:6443".into(),
            verb: "read",
            object: "ConfigMap ns/c".into(),
            message: "connection closed before message completed".into(),
        });
        assert!(!lost.fatal);
        assert_eq!(lost.failure(), Failure::Transient);
        let gone = EngineError::from(ClusterError::NamespaceGone {
            verb: "apply",
            object: "ConfigMap team-a/c".into(),
            namespace: "team-a".into(),
            code: 404,
            message: "namespaces \"team-a\" not found".into(),
        });
        assert!(gone.fatal);
        assert_eq!(gone.failure(), Failure::Namespace);
        assert!(
            gone.to_string()
                .ends_with("[FATAL_ERROR: will not pass by retrying until the namespace exists]"),
            "{gone}"
        );
        // The object a failure names goes with it; a bare one names none.
        let bare = EngineError::transient("the plan stopped");
        assert_eq!(bare.failure(), Failure::Cluster { object: None });
        let stuck = EngineError::cancelled("waiting").with_object(&r);
        assert_eq!(stuck.failure(), Failure::Cancelled { object: Some(&r) });
        // An RBAC refusal anywhere in the chain names the permission.
        let denied = EngineError::from(ClusterError::Api {
            verb: "get",
            object: "ConfigMap ns/c".into(),
            code: 403,
            reason: "Forbidden".into(),
            message: "configmaps \"c\" is forbidden: User \"bob\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"ns\"".into(),
        })
        .context("reading the instance");
        assert!(
            matches!(denied.failure(), Failure::Denied(Some(f)) if f.user == "bob"),
            "{:?}",
            denied.failure()
        );
    }

    #[test]
    fn display_names_every_place_and_fatality() {
        let loc = Location {
            plan: "deploy".into(),
            phase: "main".into(),
            step: "everything".into(),
        };
        let e = EngineError::fatal("job failed: BackoffLimitExceeded")
            .at(&loc)
            .with_task("app")
            .with_object(&ObjectRef::new("batch/v1", "Job", Some("ns"), "j"));
        let s = e.to_string();
        for part in [
            "plan \"deploy\"",
            "phase \"main\"",
            "step \"everything\"",
            "task \"app\"",
            "Job ns/j",
            "FATAL_ERROR",
        ] {
            assert!(s.contains(part), "{s} lacks {part}");
        }
        let s = EngineError::fatal("rejected")
            .with_object(&ObjectRef::new("v1", "ConfigMap", Some("ns"), "c"))
            .with_template("templates/cm.yaml")
            .to_string();
        for part in ["ConfigMap ns/c", "rendered from templates/cm.yaml"] {
            assert!(s.contains(part), "{s} lacks {part}");
        }
    }

    #[test]
    fn cluster_errors_map_to_fatality() {
        let e: EngineError = ClusterError::Api {
            verb: "apply",
            object: "x".into(),
            code: 422,
            reason: "Invalid".into(),
            message: "bad".into(),
        }
        .into();
        assert!(e.fatal);
        let e: EngineError = ClusterError::Unreachable {
            url: "https://x".into(),
            message: "refused".into(),
        }
        .into();
        assert!(!e.fatal);
        let e: EngineError = ClusterError::Cancelled {
            what: "waiting".into(),
        }
        .into();
        assert!(!e.fatal && e.is_cancelled());
    }

    /// Wrapping keeps the cause reachable through `source()` and its text in the
    /// message: once when it failed in the same place, with its own place when it
    /// failed elsewhere (a dependency instance's plan).
    #[test]
    fn causes_are_a_chain_and_read_as_one_text() {
        let cluster: EngineError = ClusterError::Unreachable {
            url: "https://x".into(),
            message: "refused".into(),
        }
        .into();
        let source = Error::source(&cluster).and_then(|s| s.downcast_ref::<ClusterError>());
        assert!(matches!(source, Some(ClusterError::Unreachable { .. })));
        assert!(cluster.to_string().contains("refused"), "{cluster}");

        let child_loc = Location {
            plan: "deploy".into(),
            phase: "inner".into(),
            step: "s".into(),
        };
        let child = EngineError::fatal("job failed").at(&child_loc);
        let parent = EngineError::new("dependency instance c", child.fatal)
            .with_task("dep")
            .caused_by(child);
        let text = parent.to_string();
        assert!(
            text.contains("task \"dep\": dependency instance c: plan \"deploy\", phase \"inner\", step \"s\": job failed"),
            "{text}"
        );
        let inner = Error::source(&parent).and_then(|s| s.downcast_ref::<EngineError>());
        assert_eq!(inner.map(|e| e.message.as_str()), Some("job failed"));

        let timed_out = EngineError::from(ClusterError::Cancelled {
            what: "waiting".into(),
        })
        .at(&child_loc)
        .context("deploy did not finish within 5s");
        let text = timed_out.to_string();
        assert!(timed_out.is_cancelled());
        assert_eq!(text.matches("phase \"inner\"").count(), 1, "{text}");
        assert!(
            text.contains("deploy did not finish within 5s: cancelled while waiting"),
            "{text}"
        );
    }
}
