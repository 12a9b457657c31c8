//! A provider whose connection settings are known only after apply (the cluster is
//! created by the same apply): what calls that need the cluster get meanwhile.

use tfplugin::{Diagnostic, PlanRequest, PlanResponse, ReadRequest, ReadResponse, Value};

/// The settings in `unknown`, as a sentence fragment: "`host` and `token`".
pub(super) fn setting_names(unknown: &[&str]) -> String {
    let names: Vec<String> = unknown.iter().map(|n| format!("`{n}`")).collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// What a call that needs the cluster gets while the connection is not known.
pub(super) fn error(unknown: &[&str]) -> Diagnostic {
    Diagnostic::error(
        "Kubernetes connection not known yet",
        format!(
            "The provider settings {} depend on values Terraform knows only after apply (for example the outputs of the resource that creates the cluster), so the provider cannot reach the cluster now. Plans are made without the cluster and `terraform apply` connects once the values are known; see the guide \"Cluster and operators in one apply\".",
            setting_names(unknown)
        ),
    )
}

/// The refresh of a resource while offline: its state stays as it was, and the
/// warning says that drift is not seen by this plan.
pub(super) fn not_refreshed(unknown: &[&str], req: ReadRequest) -> ReadResponse {
    let id = req
        .current_state
        .get("id")
        .as_str()
        .unwrap_or("")
        .to_string();
    let what = match id.is_empty() {
        true => req.type_name.clone(),
        false => format!("{} {id}", req.type_name),
    };
    ReadResponse {
        diagnostics: vec![Diagnostic::warning(
            "Not refreshed: cluster connection known only after apply",
            format!(
                "{what} was not read from the cluster because the provider settings {} are known only after apply. The plan compares the configuration with the last known state; changes made in the cluster since then are not shown, and the next plan with a known connection sees them.",
                setting_names(unknown)
            ),
        )],
        new_state: req.current_state,
        private: req.private,
    }
}

/// A plan made while the connection is unknown: what it could not check, said once.
/// The plan is made from the configuration and the last state alone, so a reviewer must
/// know what was not verified: the apply checks it against the cluster before writing.
pub(super) struct Unchecked {
    what: String,
    prior: Value,
    settings: String,
}

impl Unchecked {
    pub(super) fn of(req: &PlanRequest, unknown: &[&str]) -> Unchecked {
        Unchecked {
            what: req.type_name.clone(),
            prior: req.prior_state.clone(),
            settings: setting_names(unknown),
        }
    }

    /// Adds the warning to a plan that changes something (a plan without changes
    /// leaves nothing for the apply to check; its refresh has its own warning).
    pub(super) fn warn(self, resp: &mut PlanResponse) {
        let changes = resp.planned_state != self.prior && !resp.planned_state.is_null();
        let refused = resp.diagnostics.iter().any(Diagnostic::is_error);
        if !changes || refused {
            return;
        }
        resp.diagnostics.push(Diagnostic::warning(
            // One summary for every resource, so Terraform shows it once ("and N more
            // similar warnings").
            "Planned without the cluster: checked only at apply",
            format!(
                "The provider settings {} are known only after apply, so this plan of {} was made without asking the cluster. It has not checked what the API server would refuse (invalid objects, APIs the cluster does not serve, admission webhooks, permissions), objects already held by another owner or field manager, that the namespace exists, or drift.{} The apply checks all of this before it writes and stops at the first refusal.",
                self.settings,
                self.what,
                match self.what.as_str() {
                    "kudo_instance" => " `preview`, `objects` and `manifests` are unknown for that reason.",
                    _ => "",
                }
            ),
        ));
    }
}
