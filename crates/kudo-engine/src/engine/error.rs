use crate::cluster::{ClusterError, ObjectRef, Trouble};

/// A failed plan (or operator install / uninstall). Says where it happened and whether
/// retrying can help: `fatal` = KUDO's FATAL_ERROR (fix the package or parameters);
/// otherwise an ERROR that may pass on a later apply (timeout, cluster trouble).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
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
}

impl EngineError {
    fn describe(&self) -> String {
        let verdict = if self.fatal {
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
            &self.message,
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
        }
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

    /// Whether the run was stopped by cancellation (Terraform timeout / interrupt).
    pub fn is_cancelled(&self) -> bool {
        self.trouble == Trouble::Cancelled || self.message.starts_with(CANCELLED_PREFIX)
    }
}

pub(crate) const CANCELLED_PREFIX: &str = "cancelled";

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
            ClusterError::Api { code, .. } => {
                (400..500).contains(code) && *code != 409 && *code != 429
            }
            ClusterError::Settings { .. } => true,
            ClusterError::Unreachable { .. }
            | ClusterError::ConnectionLost { .. }
            // Not the package's fault: the namespace can be created again.
            | ClusterError::NamespaceGone { .. }
            | ClusterError::Other { .. }
            | ClusterError::Cancelled { .. } => false,
        };
        let message = match &e {
            ClusterError::Cancelled { what } => format!("{CANCELLED_PREFIX} while {what}"),
            other => other.to_string(),
        };
        let mut out = EngineError::new(message, fatal);
        out.trouble = e.trouble();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
