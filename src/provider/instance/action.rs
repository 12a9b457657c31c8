//! `action "kudo_plan"` (Terraform 1.14+): runs a named plan of an existing instance,
//! reporting each phase and step as Terraform action progress. Its plan is one
//! [`engine::prepare_action`] (the run's outline), its invoke one [`engine::run_action`]
//! (which decide what may run: see their module); this file reads the action's
//! configuration and turns the engine's answers into diagnostics.
//!
//! The instance's render seed lives in `kudo_instance`'s private state, which an action
//! cannot read: a plan that depends on it runs only when this provider process saw the
//! seed (the same apply applied or refreshed the instance, as `action_trigger` does).

use std::collections::BTreeMap;
use std::time::Duration;

use tfplugin::{ActionProgress, AttributePath, Diagnostic, Value};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::Cluster;
use kudo_engine::engine::{self, ActionRefusal, ActionRequest, PreparedAction, Progress};

use kudo_package::LoadContext;
use kudo_resolve::PlanCache;

use crate::provider::{Session, packages, sensitive, timeouts};

use super::deadline::{Deadline, engine_diagnostic};

/// The action's configuration, every value known.
#[derive(Debug, Clone, PartialEq)]
struct Config {
    namespace: String,
    name: String,
    plan: String,
    parameters: BTreeMap<String, String>,
    timeout: Duration,
}

/// Reads the configuration; `Ok(None)` while a value is still unknown (Terraform plans
/// actions whose instance an earlier resource of the same apply makes).
fn config(value: &Value) -> Result<Option<Config>, Vec<Diagnostic>> {
    if !value.is_fully_known() {
        return Ok(None);
    }
    let mut problems = Vec::new();
    let instance = value.get("instance").as_str().unwrap_or_default();
    let (namespace, name) = match instance.split_once('/') {
        Some((ns, name)) => (ns, name),
        None => (crate::provider::DEFAULT_NAMESPACE, instance),
    };
    for part in [namespace, name] {
        if let Err(reason) = kudo_resolve::naming::check_instance_name(part) {
            problems.push(
                Diagnostic::error(
                    "Invalid instance",
                    format!("{instance:?} is not `<namespace>/<name>` of an Instance: {part:?} is not a valid Kubernetes name ({reason}). Use a kudo_instance's `id`."),
                )
                .with_attribute(AttributePath::attribute("instance")),
            );
        }
    }
    let plan = value.get("plan").as_str().unwrap_or_default();
    if plan.is_empty() {
        problems.push(
            Diagnostic::error(
                "Invalid plan",
                "`plan` is empty: name a plan of the operator (operator.yaml, `plans:`).",
            )
            .with_attribute(AttributePath::attribute("plan")),
        );
    }
    let timeout = match value.get("timeout").as_str() {
        None => timeouts::DEFAULT_UPDATE,
        Some(text) => match timeouts::parse_duration(text).filter(|d| !d.is_zero()) {
            Some(d) => d,
            None => {
                problems.push(
                    Diagnostic::error(
                        "Invalid timeout",
                        format!("`timeout` = {text:?} is not a duration: write a positive one like `30s`, `10m` or `1h30m`."),
                    )
                    .with_attribute(AttributePath::attribute("timeout")),
                );
                Duration::ZERO
            }
        },
    };
    let parameters = value
        .get("parameters")
        .to_string_map()
        .ok()
        .flatten()
        .unwrap_or_default();
    match problems.is_empty() {
        true => Ok(Some(Config {
            namespace: namespace.to_string(),
            name: name.to_string(),
            plan: plan.to_string(),
            parameters,
            timeout,
        })),
        false => Err(problems),
    }
}

/// `ValidateActionConfig`: the configuration's own form.
pub(in crate::provider) fn validate(value: &Value) -> Vec<Diagnostic> {
    config(value).err().unwrap_or_default()
}

/// `PlanAction`: everything the run would refuse, when the instance exists already. An
/// instance this apply creates (or a cluster the plan cannot reach) is checked when
/// the action runs.
pub(in crate::provider) async fn plan(session: &Session, value: &Value) -> Vec<Diagnostic> {
    let cfg = match config(value) {
        Ok(Some(cfg)) => cfg,
        Ok(None) => return Vec::new(),
        Err(d) => return d,
    };
    if session.config.offline() {
        return Vec::new();
    }
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return vec![d],
    };
    let seed = session.render_seed_of(&cfg.namespace, &cfg.name);
    let packages = packages_of(session);
    let req = request(session, &cfg, seed.as_deref(), None, &packages);
    outline(session, &cluster, &cfg, &req).await
}

/// The run the configuration asks for, with the provider's settings.
fn request<'a>(
    session: &'a Session,
    cfg: &'a Config,
    seed: Option<&'a str>,
    progress: Option<&'a Progress>,
    packages: &'a (PlanCache, LoadContext),
) -> ActionRequest<'a> {
    ActionRequest {
        namespace: &cfg.namespace,
        name: &cfg.name,
        plan: &cfg.plan,
        parameters: &cfg.parameters,
        seed,
        health: &session.config.health,
        crd_safety: session.config.crd_upgrade_safety,
        progress,
        copies: &packages.0,
        sources: &packages.1,
    }
}

/// What the action will run, shown in its plan: the plan's phases and steps in order.
fn steps(cfg: &Config, req: &ActionRequest<'_>, prepared: &PreparedAction) -> Option<Diagnostic> {
    let outline = prepared.outline(req)?;
    Some(Diagnostic::warning(
        format!(
            "kudo_plan runs plan {} of instance {}/{}",
            cfg.plan, cfg.namespace, cfg.name
        ),
        outline.to_string(),
    ))
}

/// `InvokeAction`: runs the plan until it completes, fails, times out or Terraform is
/// interrupted (`cancel`).
pub(in crate::provider) async fn invoke(
    session: &Session,
    value: &Value,
    progress: ActionProgress,
    cancel: &CancellationToken,
) -> Vec<Diagnostic> {
    let cfg = match config(value) {
        Ok(Some(cfg)) => cfg,
        Ok(None) => {
            return vec![Diagnostic::error(
                "Action configuration not known",
                "Terraform invoked kudo_plan with values still unknown; this is a bug in Terraform.",
            )];
        }
        Err(d) => return d,
    };
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => return vec![d],
    };
    // Nothing more is reported once Terraform asked the provider to stop: Terraform
    // 1.14-1.15 stops reading progress when interrupted, and an event arriving after
    // that crashes it ("range function continued iteration", InvokeAction in
    // internal/plugin6/grpc_provider.go); the completion still tells what happened.
    let reporter = progress.clone();
    let stopped = cancel.clone();
    let sink = Progress::new(move |event| {
        if !stopped.is_cancelled() {
            reporter.report(event.to_string());
        }
    });
    let seed = session.render_seed_of(&cfg.namespace, &cfg.name);
    let packages = packages_of(session);
    let req = request(session, &cfg, seed.as_deref(), Some(&sink), &packages);
    progress.report(format!(
        "instance {} plan {}: starting (namespace {})",
        cfg.name, cfg.plan, cfg.namespace
    ));
    let deadline = Deadline::new(cancel, cfg.timeout);
    let mut refusals = match engine::run_action(&cluster, &req, &deadline.token).await {
        Ok(()) => return Vec::new(),
        Err(refusals) => refusals,
    };
    // The run failed (it comes alone), or it could not start: every reason why not.
    let Some(ActionRefusal::Failed {
        error,
        status,
        sensitive,
    }) = refusals.pop_if(|r| matches!(r, ActionRefusal::Failed { .. }))
    else {
        return refusals.into_iter().map(|r| refusal(session, r)).collect();
    };
    let what = format!(
        "plan {:?} of instance {}/{}",
        cfg.plan, cfg.namespace, cfg.name
    );
    let mut result: Result<(), _> = Err(*error);
    deadline.explain_limit(cancel, &what, "`timeout`", &mut result);
    let Err(e) = result else {
        return Vec::new();
    };
    let mut d = engine_diagnostic(
        session,
        &format!("Plan {} of instance {} failed", cfg.plan, cfg.name),
        &e,
    );
    if let Some(tree) = status {
        d.detail = format!("{}\n\nPlan status:\n{tree}", d.detail);
    }
    d.detail = sensitive::redact(&d.detail, &sensitive);
    vec![d]
}

/// Where the action's packages come from: the plan-time copies (the dependency tree
/// `kudo_operator` recorded) and the provider's repositories.
fn packages_of(session: &Session) -> (PlanCache, LoadContext) {
    (
        packages::plan_cache(),
        packages::load_context(&session.config.repositories),
    )
}

/// Reads the instance and checks the run `req` (with the seed this process saw): the
/// run's outline, nothing when the instance is missing (an earlier resource of the same
/// apply may create it: the run checks again), or every reason it may not run.
async fn outline(
    session: &Session,
    cluster: &Cluster,
    cfg: &Config,
    req: &ActionRequest<'_>,
) -> Vec<Diagnostic> {
    match engine::prepare_action(cluster, req).await {
        Ok(prepared) => steps(cfg, req, &prepared).into_iter().collect(),
        Err(refusals)
            if refusals
                .iter()
                .any(|r| matches!(r, ActionRefusal::Missing { .. })) =>
        {
            Vec::new()
        }
        Err(refusals) => refusals.into_iter().map(|r| refusal(session, r)).collect(),
    }
}

/// The engine's refusal, on the attribute it concerns (a parameter the action may not
/// set: its entry, saying where to set it instead).
fn refusal(session: &Session, e: ActionRefusal) -> Diagnostic {
    let on = |attr: &str| AttributePath::attribute(attr);
    let entry = |k: &str| AttributePath::attribute("parameters").key(k.to_string());
    match e {
        e @ ActionRefusal::Missing { .. } => Diagnostic::error(
            "No such instance",
            format!("{e}: create it first (a kudo_instance resource), or correct `instance`."),
        )
        .with_attribute(on("instance")),
        ActionRefusal::Running(e) => crate::provider::running::error(session, &e),
        e @ ActionRefusal::NoPlan { .. } => {
            Diagnostic::error("No such plan", e.to_string()).with_attribute(on("plan"))
        }
        ActionRefusal::Undeclared { ref parameter, .. } => {
            Diagnostic::error("Undeclared parameter", e.to_string()).with_attribute(entry(parameter))
        }
        ActionRefusal::NotAnInput { ref parameter, .. } => Diagnostic::error(
            "Parameter not an input of this plan",
            format!("{e} Set it in the kudo_instance's `parameters` instead, where a change runs the plan it triggers."),
        )
        .with_attribute(entry(parameter)),
        e @ ActionRefusal::NeedsSeed { .. } => Diagnostic::error(
            "This plan needs the instance's random seed",
            format!("{e} The instance's seed is kept in the kudo_instance's Terraform state, which `terraform apply -invoke` does not read, and running the plan with another seed would replace the values it generated. Trigger the action from the kudo_instance's `lifecycle {{ action_trigger {{ ... }} }}`, whose apply hands the seed over, or run the plan with the kudo_instance's `plan_triggers`."),
        )
        .with_attribute(on("plan")),
        ActionRefusal::Failed {
            error, sensitive, ..
        } => {
            let mut d = engine_diagnostic(session, "The plan failed", &error);
            d.detail = sensitive::redact(&d.detail, &sensitive);
            d
        }
    }
}

/// `action "kudo_plan"`.
pub(in crate::provider) struct PlanAction;

#[async_trait::async_trait]
impl tfplugin::Action<crate::provider::Call> for PlanAction {
    fn name(&self) -> &'static str {
        crate::provider::schema::PLAN_ACTION
    }

    fn schema(&self) -> tfplugin::Schema {
        crate::provider::schema::plan_action()
    }

    async fn validate(&self, config: Value) -> Vec<Diagnostic> {
        validate(&config)
    }

    async fn plan(&self, call: &crate::provider::Call, config: Value) -> Vec<Diagnostic> {
        plan(&call.session, &config).await
    }

    async fn invoke(
        &self,
        call: &crate::provider::Call,
        config: Value,
        progress: ActionProgress,
    ) -> Vec<Diagnostic> {
        invoke(&call.session, &config, progress, &call.cancel).await
    }
}
