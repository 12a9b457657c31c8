//! KUDO's plan status (`Instance.status.planStatus`) and the Ready condition: the
//! shapes KUDO's controller wrote, which the engine's run writes and the provider shows.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// KUDO's execution states, spelled as in the Instance status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExecutionStatus {
    NeverRun,
    Pending,
    InProgress,
    Complete,
    Error,
    FatalError,
}

impl ExecutionStatus {
    /// The spelling KUDO writes in the Instance (`IN_PROGRESS`, `FATAL_ERROR`, ...), as
    /// serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionStatus::NeverRun => "NEVER_RUN",
            ExecutionStatus::Pending => "PENDING",
            ExecutionStatus::InProgress => "IN_PROGRESS",
            ExecutionStatus::Complete => "COMPLETE",
            ExecutionStatus::Error => "ERROR",
            ExecutionStatus::FatalError => "FATAL_ERROR",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ExecutionStatus::Complete | ExecutionStatus::FatalError
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepStatus {
    pub name: String,
    pub status: ExecutionStatus,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PhaseStatus {
    pub name: String,
    pub status: ExecutionStatus,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default)]
    pub steps: Vec<StepStatus>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanStatus {
    pub name: String,
    pub status: ExecutionStatus,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(default)]
    pub phases: Vec<PhaseStatus>,
}

/// The tree as `kubectl kudo plan status` lays it out: the plan, then each phase and
/// its steps indented below it, each with its status and message (failures only).
impl std::fmt::Display for PlanStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let line = |f: &mut std::fmt::Formatter<'_>,
                    (indent, kind): (&str, &str),
                    name: &str,
                    status: ExecutionStatus,
                    message: &str| {
            let status = status.as_str();
            match message.is_empty() {
                true => write!(f, "{indent}{kind} {name} [{status}]"),
                false => write!(f, "{indent}{kind} {name} [{status}]: {message}"),
            }
        };
        line(f, ("", "Plan"), &self.name, self.status, &self.message)?;
        for phase in &self.phases {
            f.write_str("\n")?;
            line(
                f,
                ("  ", "Phase"),
                &phase.name,
                phase.status,
                &phase.message,
            )?;
            for step in &phase.steps {
                f.write_str("\n")?;
                line(f, ("    ", "Step"), &step.name, step.status, &step.message)?;
            }
        }
        Ok(())
    }
}

impl PlanStatus {
    /// Whether any level of the tree carries a message (only failures do), which may
    /// quote a sensitive value.
    pub fn has_messages(&self) -> bool {
        !self.message.is_empty()
            || self.phases.iter().any(|ph| {
                !ph.message.is_empty() || ph.steps.iter().any(|st| !st.message.is_empty())
            })
    }

    /// A plan that has not run: every phase and step NEVER_RUN.
    pub fn never_run(name: &str, plan: &kudo_package::Plan) -> Self {
        PlanStatus {
            name: name.to_string(),
            status: ExecutionStatus::NeverRun,
            message: String::new(),
            last_updated_timestamp: None,
            uid: String::new(),
            phases: plan
                .phases
                .iter()
                .map(|ph| PhaseStatus {
                    name: ph.name.clone(),
                    status: ExecutionStatus::NeverRun,
                    message: String::new(),
                    steps: ph
                        .steps
                        .iter()
                        .map(|st| StepStatus {
                            name: st.name.clone(),
                            status: ExecutionStatus::NeverRun,
                            message: String::new(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// The status a successful run of `plan` leaves (the run's [`PlanStatus::starting`]
    /// with every phase and step set COMPLETE without a message, and the plan too),
    /// without its timestamp and uid, which only the run knows. A plan shows it before
    /// the apply: Terraform holds the apply to every value planned.
    pub fn completed(name: &str, plan: &kudo_package::Plan) -> Self {
        let mut s = Self::never_run(name, plan);
        s.status = ExecutionStatus::Complete;
        for ph in &mut s.phases {
            ph.status = ExecutionStatus::Complete;
            for st in &mut ph.steps {
                st.status = ExecutionStatus::Complete;
            }
        }
        s
    }

    /// The same plan about to run: everything PENDING, a fresh uid.
    pub fn starting(name: &str, plan: &kudo_package::Plan, uid: &str) -> Self {
        let mut s = Self::never_run(name, plan);
        s.status = ExecutionStatus::Pending;
        s.uid = uid.to_string();
        for ph in &mut s.phases {
            ph.status = ExecutionStatus::Pending;
            for st in &mut ph.steps {
                st.status = ExecutionStatus::Pending;
            }
        }
        s.touch();
        s
    }

    pub fn touch(&mut self) {
        self.last_updated_timestamp = Some(now_rfc3339());
    }

    pub fn phase_mut(&mut self, phase: &str) -> Option<&mut PhaseStatus> {
        self.phases.iter_mut().find(|p| p.name == phase)
    }

    pub fn set_step(&mut self, phase: &str, step: &str, status: ExecutionStatus, message: &str) {
        if let Some(st) = self
            .phase_mut(phase)
            .and_then(|p| p.steps.iter_mut().find(|s| s.name == step))
        {
            st.status = status;
            st.message = message.to_string();
        }
        self.touch();
    }

    pub fn set_phase(&mut self, phase: &str, status: ExecutionStatus, message: &str) {
        if let Some(p) = self.phase_mut(phase) {
            p.status = status;
            p.message = message.to_string();
        }
        self.touch();
    }

    pub fn set_plan(&mut self, status: ExecutionStatus, message: &str) {
        self.status = status;
        self.message = message.to_string();
        self.touch();
    }
}

/// The status tree of plan `plan` in an Instance object (`status.planStatus.<plan>`),
/// when it has one that reads as KUDO's shape.
pub fn plan_status_of(instance: &Value, plan: &str) -> Option<PlanStatus> {
    let entry = instance.get("status")?.get("planStatus")?.get(plan)?;
    serde_json::from_value(entry.clone()).ok()
}

/// Now, as `metav1.Time` serialises (seconds precision).
fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// KUDO's Ready condition for a plan state.
pub fn ready_condition(status: ExecutionStatus, message: &str) -> Value {
    let (s, reason) = match status {
        ExecutionStatus::Complete => ("True", "ResourcesReady"),
        ExecutionStatus::FatalError => ("Unknown", "PlanInFatalError"),
        ExecutionStatus::InProgress | ExecutionStatus::Pending => ("Unknown", "PlanInProgress"),
        ExecutionStatus::Error | ExecutionStatus::NeverRun => ("False", "ResourceNotReady"),
    };
    json!({
        "type": "Ready",
        "status": s,
        "reason": reason,
        "message": message,
        "lastTransitionTime": now_rfc3339(),
    })
}

/// All plans of the operator: previous statuses kept, plans never seen as NEVER_RUN.
pub fn merged_plan_status(
    pkg: &kudo_package::Package,
    existing: Option<&Value>,
) -> BTreeMap<String, PlanStatus> {
    let mut out = BTreeMap::new();
    for (name, plan) in &pkg.operator.plans {
        let previous = existing
            .and_then(|e| e.get(name))
            .and_then(|v| serde_json::from_value::<PlanStatus>(v.clone()).ok());
        out.insert(
            name.clone(),
            previous.unwrap_or_else(|| PlanStatus::never_run(name, plan)),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_in_kudo_shape() {
        let s = PlanStatus {
            name: "deploy".into(),
            status: ExecutionStatus::InProgress,
            message: String::new(),
            last_updated_timestamp: Some("2026-01-01T00:00:00Z".into()),
            uid: "u".into(),
            phases: vec![PhaseStatus {
                name: "main".into(),
                status: ExecutionStatus::FatalError,
                message: "boom".into(),
                steps: vec![StepStatus {
                    name: "s".into(),
                    status: ExecutionStatus::NeverRun,
                    message: String::new(),
                }],
            }],
        };
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v,
            json!({"name": "deploy", "status": "IN_PROGRESS", "lastUpdatedTimestamp": "2026-01-01T00:00:00Z",
                   "uid": "u", "phases": [{"name": "main", "status": "FATAL_ERROR", "message": "boom",
                   "steps": [{"name": "s", "status": "NEVER_RUN"}]}]})
        );
        assert_eq!(serde_json::from_value::<PlanStatus>(v).unwrap(), s);
    }

    #[test]
    fn statuses_are_spelled_as_serde_writes_them() {
        use ExecutionStatus::*;
        for s in [NeverRun, Pending, InProgress, Complete, Error, FatalError] {
            assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
        }
    }

    #[test]
    fn a_status_tree_reads_as_kubectl_kudo_plan_status_lays_it_out() {
        let step = |name: &str, status, message: &str| StepStatus {
            name: name.into(),
            status,
            message: message.into(),
        };
        let mut s = PlanStatus {
            name: "deploy".into(),
            status: ExecutionStatus::FatalError,
            message: String::new(),
            last_updated_timestamp: None,
            uid: String::new(),
            phases: vec![PhaseStatus {
                name: "main".into(),
                status: ExecutionStatus::FatalError,
                message: String::new(),
                steps: vec![
                    step("a", ExecutionStatus::Complete, ""),
                    step("b", ExecutionStatus::NeverRun, ""),
                ],
            }],
        };
        assert!(!s.has_messages());
        assert_eq!(
            s.to_string(),
            "Plan deploy [FATAL_ERROR]\n  Phase main [FATAL_ERROR]\n    Step a [COMPLETE]\n    Step b [NEVER_RUN]"
        );
        s.phases[0].steps[1] = step("b", ExecutionStatus::FatalError, "boom");
        assert!(s.has_messages());
        assert!(
            s.to_string().ends_with("    Step b [FATAL_ERROR]: boom"),
            "{s}"
        );
    }

    #[test]
    fn timestamp_format() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.ends_with('Z'));
    }
}
