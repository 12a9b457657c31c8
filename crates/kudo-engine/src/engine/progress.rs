//! Where a run reports its phases and steps as they start and finish, for a caller
//! that shows progress while it waits (a Terraform action). The Instance's
//! `status.planStatus` carries the same facts for everyone else.

use std::fmt;

/// One change of a phase or step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgressEvent {
    /// The instance whose plan moved (a dependency instance's, for KudoOperator tasks).
    pub instance: String,
    pub plan: String,
    pub phase: String,
    /// `None` for the phase itself.
    pub step: Option<String>,
    pub change: ProgressChange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgressChange {
    Started,
    Complete,
    /// With the error as the plan status records it.
    Failed(String),
}

impl fmt::Display for ProgressEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "instance {} plan {}: ", self.instance, self.plan)?;
        match &self.step {
            Some(step) => write!(f, "step {}/{step}", self.phase)?,
            None => write!(f, "phase {}", self.phase)?,
        }
        match &self.change {
            ProgressChange::Started => write!(f, " started"),
            ProgressChange::Complete => write!(f, " complete"),
            ProgressChange::Failed(e) => write!(f, " failed: {e}"),
        }
    }
}

/// A receiver of progress events; runs of dependency instances report to their
/// parent's.
pub struct Progress(Box<dyn Fn(ProgressEvent) + Send + Sync>);

impl Progress {
    pub fn new(report: impl Fn(ProgressEvent) + Send + Sync + 'static) -> Progress {
        Progress(Box::new(report))
    }

    pub(crate) fn report(&self, event: ProgressEvent) {
        (self.0)(event)
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Progress")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_as_plan_phase_and_step() {
        let mut event = ProgressEvent {
            instance: "db".into(),
            plan: "backup".into(),
            phase: "backup".into(),
            step: Some("pv".into()),
            change: ProgressChange::Started,
        };
        assert_eq!(
            event.to_string(),
            "instance db plan backup: step backup/pv started"
        );
        event.step = None;
        event.change = ProgressChange::Failed("boom".into());
        assert_eq!(
            event.to_string(),
            "instance db plan backup: phase backup failed: boom"
        );
    }
}
