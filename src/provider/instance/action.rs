//! `action "kudo_plan"` (Terraform 1.14+): runs a named plan of an existing instance,
//! as `kubectl kudo plan trigger` does (KUDO 0.19: `planTrigger` in
//! pkg/kudoctl/cmd/plan/plan_trigger.go sets `spec.planExecution.planName` and KUDO's
//! controller runs it). Here the provider runs it, reporting each phase and step as
//! Terraform action progress.
//!
//! Decisions where KUDO and the issue are silent:
//! - `parameters` may only name parameters whose `trigger` is the plan: the others
//!   configure the instance, which `kudo_instance` owns. `kubectl kudo update -p` of a
//!   parameter runs its trigger plan the same way (`select_plan`).
//! - The run prunes nothing (no previous inventory): KUDO never prunes, and what the
//!   instance owns is `kudo_instance`'s to tidy on its next apply or destroy.
//! - The instance's render seed lives in `kudo_instance`'s private state, which an
//!   action cannot read. A plan whose objects do not depend on the seed runs with none;
//!   one that does runs only when this provider process saw the seed (the same apply
//!   applied or refreshed the instance, as `action_trigger` does), and is otherwise
//!   refused: running it with another seed would replace generated passwords and keys.

use std::collections::BTreeMap;
use std::time::Duration;

use tfplugin::{ActionProgress, AttributePath, Diagnostic, Value};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::Cluster;
use kudo_engine::engine::{self, Progress, RunRequest};
use kudo_package::Package;
use kudo_plan::{Desired, Inputs};

use crate::provider::{Session, health, running, sensitive, timeouts};

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
    match prepare(session, &cluster, &cfg).await {
        Ok(_) | Err(Refusal::Missing(_)) => Vec::new(),
        Err(Refusal::Diagnostics(d)) => d,
    }
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
    let run = match prepare(session, &cluster, &cfg).await {
        Ok(run) => run,
        Err(Refusal::Missing(d)) => return vec![d],
        Err(Refusal::Diagnostics(d)) => return d,
    };
    let tree = match super::lookup::resolution(session, &run.operator_id, &run.package, false).await
    {
        Ok(Some(r)) => match kudo_plan::change::tree_of(
            &r,
            &run.package,
            &cfg.name,
            &cfg.namespace,
            &run.all,
            run.seed.as_deref(),
            None,
        ) {
            Ok(t) => t,
            Err(e) => {
                return vec![
                    Diagnostic::error("Cannot work out the instance's dependencies", e.to_string())
                        .with_attribute(AttributePath::attribute("instance")),
                ];
            }
        },
        Ok(None) => kudo_plan::Tree::default(),
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
    progress.report(format!(
        "instance {} plan {}: starting (namespace {})",
        cfg.name, cfg.plan, cfg.namespace
    ));
    let health = health::HealthSettings::default().policy(&session.config.health);
    let deadline = Deadline::new(cancel, cfg.timeout);
    let request = RunRequest {
        package: &run.package,
        instance: &cfg.name,
        namespace: &cfg.namespace,
        parameters: &run.public,
        plan: &cfg.plan,
        previous_inventory: &[],
        render_seed: run.seed.as_deref(),
        dependencies: Some(&tree.packages),
        crd_deletion: engine::CrdDeletion::default(),
        crd_safety: session.config.crd_upgrade_safety,
        health: &health,
        progress: Some(&sink),
        tree: Default::default(),
    };
    let mut result = match run.secret_changed {
        true => {
            engine::run_plan_with_sensitive(&cluster, request, &run.secret, &deadline.token).await
        }
        false => engine::run_plan(&cluster, request, &deadline.token).await,
    };
    let what = format!(
        "plan {:?} of instance {}/{}",
        cfg.plan, cfg.namespace, cfg.name
    );
    deadline.explain_limit(cancel, &what, "`timeout`", &mut result);
    match result {
        Ok(_) => Vec::new(),
        Err(e) => {
            let mut d = engine_diagnostic(
                session,
                &format!("Plan {} of instance {} failed", cfg.plan, cfg.name),
                &e,
            );
            if let Some(tree) = status_tree(&cluster, &cfg).await {
                d.detail = format!("{}\n\nPlan status:\n{tree}", d.detail);
            }
            d.detail = sensitive::redact(&d.detail, &run.secret);
            vec![d]
        }
    }
}

/// Why an action cannot run: the instance is missing (which a plan tolerates, since an
/// earlier resource may create it), or anything else.
enum Refusal {
    Missing(Diagnostic),
    Diagnostics(Vec<Diagnostic>),
}

impl From<Diagnostic> for Refusal {
    fn from(d: Diagnostic) -> Refusal {
        Refusal::Diagnostics(vec![d])
    }
}

/// What a run needs, read from the cluster and checked.
struct Prepared {
    package: Package,
    /// `<namespace>/<name>` of the OperatorVersion the instance runs.
    operator_id: String,
    /// `spec.parameters` with the action's public values over them.
    public: BTreeMap<String, String>,
    /// The `<name>-kudo-sensitive` values, with the action's values for those keys.
    secret: BTreeMap<String, String>,
    /// Both, as templates see them.
    all: BTreeMap<String, String>,
    secret_changed: bool,
    seed: Option<String>,
}

async fn prepare(session: &Session, cluster: &Cluster, cfg: &Config) -> Result<Prepared, Refusal> {
    let (namespace, name) = (cfg.namespace.as_str(), cfg.name.as_str());
    let running = running::read(session, cluster, namespace, name)
        .await?
        .ok_or_else(|| {
            Refusal::Missing(
                Diagnostic::error(
                    "No such instance",
                    format!("There is no Instance {name} in namespace {namespace}: create it first (a kudo_instance resource), or correct `instance`."),
                )
                .with_attribute(AttributePath::attribute("instance")),
            )
        })?;
    let running::Running {
        record,
        package,
        operator_version: (ov_namespace, ov_name),
        sensitive: mut secret,
    } = running;
    if !package.operator.plans.contains_key(&cfg.plan) {
        let plans: Vec<&str> = package.operator.plans.keys().map(String::as_str).collect();
        return Err(Diagnostic::error(
            "No such plan",
            format!(
                "Operator {} has no plan {:?}; its plans are {}.",
                package.operator.name,
                cfg.plan,
                plans.join(", ")
            ),
        )
        .with_attribute(AttributePath::attribute("plan"))
        .into());
    }
    check_parameters(&package, cfg)?;
    let mut public = record.parameters();
    let mut secret_changed = false;
    for (k, v) in &cfg.parameters {
        match secret.get_mut(k) {
            Some(kept) => {
                secret_changed |= kept != v;
                kept.clone_from(v);
            }
            None => {
                public.insert(k.clone(), v.clone());
            }
        }
    }
    let mut all = public.clone();
    all.extend(secret.clone());
    let seed = match session.render_seed_of(namespace, name) {
        Some(seed) => Some(seed),
        None => {
            seed_free(&package, cfg, &all)?;
            None
        }
    };
    Ok(Prepared {
        package,
        operator_id: format!("{ov_namespace}/{ov_name}"),
        public,
        all,
        secret,
        secret_changed,
        seed,
    })
}

/// Parameters the action may set: declared ones whose `trigger` is the plan it runs.
fn check_parameters(package: &Package, cfg: &Config) -> Result<(), Refusal> {
    let problems: Vec<Diagnostic> = cfg
        .parameters
        .keys()
        .filter_map(|k| {
            let at = AttributePath::attribute("parameters").key(k.clone());
            let Some(p) = package.parameter(k) else {
                return Some(
                    Diagnostic::error(
                        "Undeclared parameter",
                        format!("Operator {} declares no parameter {k:?} (params.yaml).", package.operator.name),
                    )
                    .with_attribute(at),
                );
            };
            let trigger = p.trigger.as_deref().filter(|t| !t.is_empty());
            (trigger != Some(cfg.plan.as_str())).then(|| {
                let runs = match trigger {
                    Some(t) => format!("its trigger is plan {t:?}"),
                    None => "it has no `trigger`, so it configures the instance".to_string(),
                };
                Diagnostic::error(
                    "Parameter not an input of this plan",
                    format!("An action running plan {:?} may only set parameters whose trigger is that plan, and {k:?} is not one: {runs}. Set it in the kudo_instance's `parameters` instead, where a change runs the plan it triggers.", cfg.plan),
                )
                .with_attribute(at)
            })
        })
        .collect();
    match problems.is_empty() {
        true => Ok(()),
        false => Err(Refusal::Diagnostics(problems)),
    }
}

/// Refuses a plan whose objects depend on the render seed: rendered with two different
/// seeds, every task must do the same.
fn seed_free(
    package: &Package,
    cfg: &Config,
    parameters: &BTreeMap<String, String>,
) -> Result<(), Refusal> {
    let render = |seed: &'static str| {
        Desired::new(Inputs {
            package,
            instance: &cfg.name,
            namespace: &cfg.namespace,
            parameters,
            seed: Some(seed),
            dependencies: None,
        })
        .ok()
    };
    let (a, b) = match (render("kudo-plan-action-a"), render("kudo-plan-action-b")) {
        (Some(a), Some(b)) => (a, b),
        // The run reports a package that does not render, with its own words.
        _ => return Ok(()),
    };
    let (Ok(a), Ok(b)) = (a.plan(&cfg.plan), b.plan(&cfg.plan)) else {
        return Ok(());
    };
    match a.first_differing_task(b) {
        None => Ok(()),
        Some(task) => Err(Diagnostic::error(
            "This plan needs the instance's random seed",
            format!("Task {task:?} of plan {:?} renders differently for each seed of the template random functions (randAlphaNum, genPrivateKey, ...). The instance's seed is kept in the kudo_instance's Terraform state, which `terraform apply -invoke` does not read, and running the plan with another seed would replace the values it generated. Trigger the action from the kudo_instance's `lifecycle {{ action_trigger {{ ... }} }}`, whose apply hands the seed over, or run the plan with the kudo_instance's `plan_triggers`.", cfg.plan),
        )
        .with_attribute(AttributePath::attribute("plan"))
        .into()),
    }
}

/// The plan's status tree as the Instance records it, one line per phase and step.
async fn status_tree(cluster: &Cluster, cfg: &Config) -> Option<String> {
    let instance = cluster
        .get(&engine::instance_ref(&cfg.namespace, &cfg.name))
        .await
        .ok()??;
    let tree = engine::plan_status_of(&instance, &cfg.plan)?;
    Some(super::plan_status::describe(&tree))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(instance: &str, plan: &str, timeout: Option<&str>) -> Value {
        Value::object([
            ("instance", Value::string(instance)),
            ("plan", Value::string(plan)),
            ("parameters", Value::Null),
            ("timeout", Value::opt_string(timeout)),
        ])
    }

    #[test]
    fn the_instance_is_namespace_and_name_or_a_name_in_default() {
        let cfg = config(&value("data/db", "backup", None))
            .expect("valid")
            .expect("known");
        assert_eq!((cfg.namespace.as_str(), cfg.name.as_str()), ("data", "db"));
        assert_eq!(cfg.timeout, timeouts::DEFAULT_UPDATE);
        let cfg = config(&value("db", "backup", Some("90s")))
            .expect("valid")
            .expect("known");
        assert_eq!(cfg.namespace, "default");
        assert_eq!(cfg.timeout, Duration::from_secs(90));
    }

    #[test]
    fn bad_values_name_their_attribute() {
        let problems = validate(&value("Bad_NS!/db", "", Some("-1s")));
        let attributes: Vec<String> = problems
            .iter()
            .map(|d| format!("{:?}", d.attribute))
            .collect();
        assert_eq!(problems.len(), 3, "{problems:?}");
        for name in ["instance", "plan", "timeout"] {
            assert!(
                attributes.iter().any(|a| a.contains(name)),
                "{name}: {attributes:?}"
            );
        }
    }

    #[test]
    fn unknown_values_wait_for_the_apply() {
        let v = value("x", "backup", None).with("instance", Value::Unknown);
        assert_eq!(config(&v).expect("no error"), None);
    }
}
