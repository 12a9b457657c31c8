//! Errors of the desired state: every one of them is KUDO's FATAL_ERROR (the package or
//! the parameters must change), and each says where in the plan it arises, so that the
//! plan and the apply report it with the same words.

use crate::Location;

/// Something in the package or its parameters that makes a plan impossible, found
/// without a cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.located())]
pub struct PlanError {
    pub plan: Option<String>,
    pub phase: Option<String>,
    pub step: Option<String>,
    pub task: Option<String>,
    /// The package file (`templates/<file>`) at fault, when one is.
    pub template: Option<String>,
    /// The parameter at fault, when the value of one is the problem (a Toggle or
    /// `enablingParameter` value): the user's to fix, not the package author's.
    pub parameter: Option<String>,
    pub message: String,
}

impl PlanError {
    pub fn new(message: impl Into<String>) -> PlanError {
        PlanError {
            plan: None,
            phase: None,
            step: None,
            task: None,
            template: None,
            parameter: None,
            message: message.into(),
        }
    }

    pub fn with_plan(mut self, plan: &str) -> PlanError {
        self.plan.get_or_insert_with(|| plan.to_string());
        self
    }

    pub fn at(mut self, loc: &Location) -> PlanError {
        self.plan.get_or_insert_with(|| loc.plan.clone());
        self.phase.get_or_insert_with(|| loc.phase.clone());
        self.step.get_or_insert_with(|| loc.step.clone());
        self
    }

    pub fn with_task(mut self, task: &str) -> PlanError {
        self.task.get_or_insert_with(|| task.to_string());
        self
    }

    pub fn with_template(mut self, template: impl Into<String>) -> PlanError {
        self.template.get_or_insert_with(|| template.into());
        self
    }

    pub fn for_parameter(mut self, parameter: &str) -> PlanError {
        self.parameter.get_or_insert_with(|| parameter.to_string());
        self
    }

    /// What went wrong for operator `operator`, in a few words: a switch parameter's
    /// value (a Toggle or `enablingParameter` that is not a boolean) is the user's to
    /// fix; everything else the walk rejects is rendering.
    pub fn summary(&self, operator: &str) -> String {
        match self.parameter.is_some() {
            true => format!("Operator {operator} cannot run with these parameters"),
            false => format!("Operator {operator} does not render"),
        }
    }

    /// What to change, after the error's text: the parameter, or the template it names.
    pub fn advice(&self) -> &'static str {
        match self.parameter.is_some() {
            true => "Set the parameter named above to true or false",
            false => {
                "Fix the template named above in the operator package, or the parameter value it uses"
            }
        }
    }

    /// `plan "deploy", phase "main", step "s", task "t": message`.
    pub fn located(&self) -> String {
        let what = self.template.as_ref().map(|t| format!("template {t}"));
        located_text(
            [&self.plan, &self.phase, &self.step, &self.task],
            what,
            &self.message,
        )
    }
}

/// `plan "deploy", phase "main", step "s", task "t", <what>: message`: where something
/// went wrong in a plan, as every error of the walk and the engine says it.
pub fn located_text(
    [plan, phase, step, task]: [&Option<String>; 4],
    what: Option<String>,
    message: &str,
) -> String {
    let mut place: Vec<String> = [
        ("plan", plan),
        ("phase", phase),
        ("step", step),
        ("task", task),
    ]
    .into_iter()
    .filter_map(|(label, value)| value.as_ref().map(|v| format!("{label} {v:?}")))
    .collect();
    place.extend(what);
    if place.is_empty() {
        message.to_string()
    } else {
        format!("{}: {message}", place.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_value_is_the_users_to_fix_and_the_rest_the_packages() {
        let rendering = PlanError::new("bad template").with_template("templates/a.yaml");
        assert_eq!(rendering.summary("zk"), "Operator zk does not render");
        assert!(
            rendering
                .advice()
                .starts_with("Fix the template named above")
        );
        let switch = PlanError::new("not a boolean").for_parameter("ENABLED");
        assert_eq!(
            switch.summary("zk"),
            "Operator zk cannot run with these parameters"
        );
        assert_eq!(
            switch.advice(),
            "Set the parameter named above to true or false"
        );
    }
}
